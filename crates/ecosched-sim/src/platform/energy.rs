//! Integrating one span `[now, to)` of constant state: every running
//! task's counters (through `counters::Acc`), its remaining work and
//! virtual runtime, each package's and the system's energy, and the load
//! the governors see.
//!
//! This is where the truth accrues; an observation model that must see
//! per-span detail (e.g. which events a multiplexed PMU was counting)
//! hooks in here, next to `Acc::run`.

use super::{SimPlatform, NS_PER_S};
use crate::kernel::Ns;
use crate::power;

impl SimPlatform {
    /// Frequency (GHz) a CPU runs at now; zero while its domain stalls in a transition.
    pub(super) fn cpu_ghz(&self, c: usize) -> f64 {
        let d = &self.domains[self.cpu_facts[c].domain];
        if self.now < d.stall_until {
            0.0
        } else {
            d.cur_khz as f64 / 1e6
        }
    }

    /// Integrate counters, energy and governor load over `[now, to)`.
    pub(super) fn integrate(&mut self, to: Ns) {
        let dt = to - self.now;
        if dt == 0 {
            return;
        }
        self.stats.spans += 1;
        let dtf = dt as f64;
        let p = &self.machine.spec.power;
        let governor = &self.machine.spec.governor;
        self.package_w.iter_mut().for_each(|w| *w = p.uncore_w);
        self.package_idle_j.iter_mut().for_each(|j| *j = 0.0);
        let mut bytes = 0.0;
        for c in 0..self.machine.cpus() {
            let facts = &self.cpu_facts[c];
            let (fd, pkg, local) = (facts.domain, facts.package, facts.local);
            let volts = self.volts[facts.voltage_domain];
            let dom = &self.domains[fd];
            let (cur, max_khz) = (dom.cur_khz, facts.max_khz);
            let ghz = if self.now < dom.stall_until {
                0.0
            } else {
                cur as f64 / 1e6
            };
            let rq = &self.kernel.rqs[c];
            match (rq.current, self.rates.by_cpu[c]) {
                (Some(t), Some(o)) => {
                    let rate = if ghz > 0.0 { 1.0 / o.tpi_ns } else { 0.0 };
                    let task = &mut self.tasks[t];
                    let instr = (rate * dtf).min(task.remaining);
                    let increments =
                        task.acc
                            .run(&task.profile.phases[task.phase], &o, instr, ghz, dtf);
                    self.observer
                        .account(&mut task.mux, self.now, to, &increments);
                    task.remaining -= instr;
                    task.phase_left -= instr;
                    if task.burst_left_ns.is_finite() && ghz > 0.0 {
                        task.burst_left_ns -= dtf;
                    }
                    self.sched[t].vruntime += dtf * 1024.0 / self.sched[t].weight;
                    if ghz > 0.0 {
                        bytes += o.bytes_per_ns * dtf;
                    }
                    self.package_w[pkg] += power::active_w(p, volts, ghz, o.compute_fraction);
                    self.busy_ns[c] += dtf;
                    self.domains[fd]
                        .governor
                        .account(governor, local, dt, true, cur, max_khz);
                }
                _ => {
                    self.package_idle_j[pkg] +=
                        power::idle_j(p, volts, self.v_max, ghz, rq.idle_since, (self.now, to));
                    self.domains[fd]
                        .governor
                        .account(governor, local, dt, false, cur, max_khz);
                }
            }
        }
        let secs = dtf / NS_PER_S;
        let package_j: f64 =
            self.package_w.iter().sum::<f64>() * secs + self.package_idle_j.iter().sum::<f64>();
        self.package_j += package_j;
        self.system_j +=
            package_j + (p.base_w + p.mem_idle_w) * secs + p.mem_nj_per_byte * 1e-9 * bytes;
        self.now = to;
    }
}
