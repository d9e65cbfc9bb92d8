//! Integrating spans of constant state: every running task's counters
//! (through `counters::Acc`), its remaining work and virtual runtime, the
//! package's and the system's energy, and the load the governors see.
//!
//! Each CPU is integrated lazily, up to its own `cpu_at`: only when
//! something its span depends on is about to change (its running task, its
//! frequency or voltage, its memory domain's contention outcome, its
//! governor) or something reads what it accrued (an observation, a
//! governor sample, the scheduler reading its task's virtual runtime).
//! An event then costs work for the CPUs it touches, not for every CPU.
//! The parts of the energy that do not depend on any CPU's state (uncore,
//! board, idle memory) accrue once per event span in `advance_clock`; a
//! package's uncore drops to `package_idle_w` over spans in which none of
//! its CPUs runs a task (package C6).
//!
//! This is where the truth accrues (each running task's true energy
//! too, `truth.rs`); an observation model that must see
//! per-span detail (e.g. which events a multiplexed PMU was counting)
//! hooks in here, next to `Acc::run`, which is called once per running
//! task and integrated span `[from, to)`.

use super::{SimPlatform, NS_PER_S};
use crate::kernel::Ns;
use crate::power;

impl SimPlatform {
    /// Frequency (GHz) CPU `c` runs at from time `at` on (as long as
    /// nothing changes); zero while its domain stalls in a transition or
    /// it is still leaving an idle state.
    pub(super) fn ghz_at(&self, c: usize, at: Ns) -> f64 {
        let d = &self.domains[self.cpu_facts[c].domain];
        if at < d.stall_until || at < self.wake_until[c] {
            0.0
        } else {
            d.cur_khz as f64 / 1e6
        }
    }

    /// Move the clock to `to`, accruing the energy no CPU's state changes.
    /// CPUs are integrated separately (`integrate_cpu`).
    pub(super) fn advance_clock(&mut self, to: Ns) {
        let dt = to - self.now;
        if dt == 0 {
            return;
        }
        self.stats.spans += 1;
        let p = &self.machine.spec.power;
        let secs = dt as f64 / NS_PER_S;
        let uncore_w = match p.package_idle_w {
            None => p.uncore_w * self.package_count as f64,
            Some(idle_w) => {
                let busy = self.busy_packages();
                p.uncore_w * busy as f64 + idle_w * (self.package_count - busy) as f64
            }
        };
        let uncore_j = uncore_w * secs;
        self.package_j += uncore_j;
        self.system_j += uncore_j + (p.base_w + p.mem_idle_w) * secs;
        self.now = to;
    }

    /// How many packages have a CPU running a task.
    /// Packages hold equal, contiguous ranges of CPUs (machine.rs).
    fn busy_packages(&self) -> usize {
        let per = self.kernel.rqs.len() / self.package_count.max(1);
        self.kernel
            .rqs
            .chunks(per.max(1))
            .filter(|cpus| cpus.iter().any(|rq| rq.current.is_some()))
            .count()
    }

    /// Integrate CPU `c` over `[cpu_at[c], now)`: its running task's
    /// counters, work and virtual runtime, its energy and governor load.
    pub(super) fn integrate_cpu(&mut self, c: usize) {
        let (from, to) = (self.cpu_at[c], self.now);
        if to <= from {
            return;
        }
        self.cpu_at[c] = to;
        let dt = to - from;
        let dtf = dt as f64;
        let p = &self.machine.spec.power;
        let governor = &self.machine.spec.governor;
        let facts = &self.cpu_facts[c];
        let (fd, local) = (facts.domain, facts.local);
        let volts = self.volts[facts.voltage_domain];
        let (cur, max_khz) = (self.domains[fd].cur_khz, facts.max_khz);
        let ghz = self.ghz_at(c, from);
        let rq = &self.kernel.rqs[c];
        let kind = &self.machine.core_types[self.machine.type_of[c]];
        // SMT siblings are one core (power.rs).
        let siblings = self.busy_siblings[c];
        let (energy_j, bytes) = match (rq.current, self.rates.by_cpu[c]) {
            (Some(t), Some(o)) => {
                let rate = if ghz > 0.0 { 1.0 / o.tpi_ns } else { 0.0 };
                let task = &mut self.tasks[t];
                let instr = (rate * dtf).min(task.remaining);
                let core_type = (self.machine.type_of[c], self.machine.core_types.len());
                let increments = task.acc.run(
                    &task.profile.phases[task.phase],
                    &o,
                    instr,
                    ghz,
                    dtf,
                    core_type,
                );
                self.observer.account(&mut task.mux, from, to, &increments);
                if self.warmup.cold[c] {
                    self.stats.warmup_extra_lines += super::warmup::grow(
                        &mut self.warmup.tasks[t],
                        task.profile.phases[task.phase].api,
                        &o,
                        self.rates.steady[c].as_ref(),
                        instr,
                        self.warmup.line_kib,
                    );
                }
                task.remaining -= instr;
                task.phase_left -= instr;
                task.burst_left -= instr;
                self.sched[t].vruntime += dtf * 1024.0 / self.sched[t].weight;
                self.busy_ns[c] += dtf;
                self.domains[fd]
                    .governor
                    .account(governor, local, dt, true, cur, max_khz);
                let bytes = if ghz > 0.0 { o.bytes_per_ns * dtf } else { 0.0 };
                let share = f64::from(1 + siblings);
                let w = power::active_w(p, kind, volts, ghz, o.compute_fraction) / share;
                let floor_w = power::idle_floor_w(p, volts, self.v_max, ghz) / share;
                let core_j = (w - floor_w).max(0.0) * dtf / NS_PER_S;
                let uncore_j = p.uncore_nj_per_byte * 1e-9 * bytes;
                task.true_j.add(super::TrueEnergy {
                    package_j: core_j + uncore_j,
                    system_j: core_j + uncore_j + p.mem_nj_per_byte * 1e-9 * bytes,
                });
                (w * dtf / NS_PER_S, bytes)
            }
            _ => {
                let j = if siblings > 0 {
                    0.0
                } else {
                    power::idle_j(p, volts, self.v_max, ghz, rq.idle_since, (from, to))
                        / kind.threads_per_core as f64
                };
                self.domains[fd]
                    .governor
                    .account(governor, local, dt, false, cur, max_khz);
                (j, 0.0)
            }
        };
        let uncore_j = p.uncore_nj_per_byte * 1e-9 * bytes;
        self.package_j += energy_j + uncore_j;
        self.system_j += energy_j + uncore_j + p.mem_nj_per_byte * 1e-9 * bytes;
    }

    /// Integrate every CPU up to now: before anything reads the totals
    /// or changes what every span depends on.
    pub(super) fn integrate_all(&mut self) {
        for c in 0..self.cpu_at.len() {
            self.integrate_cpu(c);
        }
    }
}
