//! The truth `Snapshot`: per-task counter deltas since the last
//! observation (from `counters::Acc` and the kernel's counts), task states,
//! per-CPU frequency and utilisation, energy, and `/proc/loadavg`.
//!
//! A task's `Exited` sample is reported once; its slot is freed right
//! after, so the simulator's memory follows the live task count however
//! many tasks a run creates. The observer (observation.rs) decides what of
//! it a policy sees: under `--observe linux` only managed tasks, perf's
//! multiplexed estimates of the preset's PMU events (resctrl's only for
//! tasks holding a monitoring ID), `/proc/stat`
//! utilisation and no per-CPU run-queue lengths.

use super::counters::SchedCounts;
use super::{Life, SimPlatform, NS_PER_S};
use ecosched_model::{CpuId, CpuSample, PowerSample, PowerSource, Snapshot, TaskSample, TaskState};

impl SimPlatform {
    /// Observe the machine, and free the slots of exits now reported.
    pub(super) fn snapshot(&mut self) -> Snapshot {
        let interval = (self.now - self.last_observe).max(1) as f64;
        let now_s = self.now as f64 / NS_PER_S;
        let mut tasks = Vec::with_capacity(self.order.len());
        let mut exited = Vec::new();
        for &i in &self.order {
            let task = &mut self.tasks[i];
            if matches!(task.life, Life::Pending) {
                continue;
            }
            let s = &self.sched[i];
            let sched = SchedCounts {
                wait_ns: s.wait_at(self.now),
                switches: s.switches,
                migrations: s.migrations,
            };
            if task.managed && !task.monitored {
                task.monitored = self.observer.monitor();
            }
            let mut counters = task.acc.delta(&task.reported, sched, task.reported_sched);
            self.observer.hardware_counters(
                &mut counters,
                &task.mux,
                &task.mux_reported,
                task.monitored,
            );
            task.reported = task.acc.clone();
            task.reported_sched = sched;
            task.mux_reported = task.mux;
            let cpu = s.cpu;
            let running = cpu.is_some_and(|c| self.kernel.rqs[c].current == Some(i));
            if task.life == Life::Exited {
                exited.push(i);
            }
            if !self.observer.shows_task(task.managed) {
                continue;
            }
            let state = match task.life {
                Life::Exited => TaskState::Exited,
                Life::Stopped => TaskState::Stopped,
                _ if task.frozen => TaskState::Stopped,
                Life::Sleeping { .. } => TaskState::Sleeping,
                _ if running => TaskState::Running,
                _ => TaskState::Runnable,
            };
            tasks.push(TaskSample {
                id: task.id,
                process: task.id.as_process(),
                name: task.name.clone(),
                managed: task.managed,
                state,
                cpu: cpu.map(|c| CpuId(c as u32)),
                allowed: s
                    .allowed
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| **a)
                    .map(|(c, _)| CpuId(c as u32))
                    .collect(),
                nice: task.nice,
                started_s: task.started as f64 / NS_PER_S,
                finished_s: task.finished.map(|f| f as f64 / NS_PER_S),
                counters,
            });
        }
        self.prune(&exited);
        let cpus = (0..self.machine.cpus())
            .map(|c| CpuSample {
                id: CpuId(c as u32),
                freq_khz: Some(self.domains[self.cpu_facts[c].domain].cur_khz),
                utilisation: self.observer.utilisation(c, self.busy_ns[c], interval),
                nr_running: self.observer.nr_running(self.kernel.rqs[c].nr() as u32),
            })
            .collect();
        self.busy_ns.iter_mut().for_each(|b| *b = 0.0);
        let power = PowerSample {
            package_j: Some(self.package_j - self.reported_package_j),
            system_j: Some(self.system_j - self.reported_system_j),
            source: Some(PowerSource::Measured),
        };
        self.reported_package_j = self.package_j;
        self.reported_system_j = self.system_j;
        let total = self
            .order
            .iter()
            .filter(|&&t| !matches!(self.tasks[t].life, Life::Pending | Life::Exited))
            .count();
        let load_avg = Some(self.load.read(&self.kernel, total));
        self.last_observe = self.now;
        Snapshot {
            time_s: now_s,
            interval_s: interval / NS_PER_S,
            topology: self.topology.clone(),
            tasks,
            cpus,
            power,
            parallelism_hint: self.scenario.spec.parallelism_hint,
            load_avg,
        }
    }

    /// Free the slots of tasks whose exit has been reported.
    fn prune(&mut self, exited: &[usize]) {
        if exited.is_empty() {
            return;
        }
        // Every exited task still listed was reported by this snapshot.
        let tasks = &self.tasks;
        self.order.retain(|&t| tasks[t].life != Life::Exited);
        for &t in exited {
            self.retire_true_energy(t);
            if std::mem::replace(&mut self.tasks[t].monitored, false) {
                self.observer.release();
            }
            // Drop the task's heap data now; the slot is overwritten on reuse.
            self.tasks[t].name = String::new();
            self.tasks[t].phase_ids = Vec::new();
            self.tasks[t].own_cpus = None;
            self.sched[t].allowed = Vec::new();
            self.sched[t].seq = u64::MAX;
            self.warmup.forget(t, &self.machine);
            self.free.push(t);
        }
    }
}
