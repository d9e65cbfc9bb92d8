//! Task life: creating tasks (scenario instances, build jobs, transient
//! threads), completing and restarting them (restart-until-k-completions),
//! starting `after` dependants once a task is done, ending tasks, and the
//! `make -jN` build's bookkeeping: `make` works for a short burst per job
//! it starts and blocks in between; each finished job wakes it.

use super::counters::{Acc, SchedCounts};
use super::{Build, Instance, Life, Role, SimPlatform, Task};
use crate::jobgraph::{JobGraph, JobGraphSpec, JobKind};
use crate::kernel::{Ns, Sched};
use crate::observation::MuxAcc;
use crate::profile::{Profile, SleepSpec};
use ecosched_model::{CpuId, TaskId};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::sync::Arc;

impl SimPlatform {
    /// Create the `make` process of a `[jobgraph]`; it starts with a burst
    /// that launches the first job.
    pub(super) fn start_build(&mut self, spec: &JobGraphSpec, seed: u64) {
        let mut phase = self.scenario.profiles[&spec.profile].phases[0].clone();
        phase.sleep = None;
        phase.instructions = None;
        let instr_per_ms = 1e6 / self.alone_tpi_ns(&phase);
        let profile = |phase: crate::profile::Phase, description: &str| {
            Arc::new(Profile {
                description: description.into(),
                source: "jobgraph.rs".into(),
                phases: vec![phase],
            })
        };
        let helper = (spec.helper_share > 0.0).then(|| {
            let mut p = phase.clone();
            p.sleep = Some(SleepSpec {
                run_ms: spec.helper_burst_ms,
                sleep_ms: spec.helper_burst_ms * (1.0 / spec.helper_share - 1.0),
                random: true,
            });
            profile(p, "assembler beside a compile job (gcc -pipe)")
        });
        let work = profile(phase, "build job or make");
        let phase_id = self
            .phase_keys
            .get(&(spec.profile.clone(), 0))
            .copied()
            .unwrap_or(0);
        let mut graph = JobGraph::generate(spec, seed);
        let first = graph.take_next();
        let make = self.push_task(
            "make".into(),
            None,
            true,
            0,
            work.clone(),
            vec![phase_id],
            spec.make_ms * instr_per_ms,
            0,
        );
        self.tasks[make].role = Role::Make { starting: first };
        self.build = Some(Build {
            graph,
            make,
            instr_per_ms,
            make_ms: spec.make_ms,
            work,
            helper,
            phase_id,
        });
    }

    /// `make` finished a burst on CPU `c`: the job it was starting begins,
    /// and it either starts the next one, blocks until a job ends, or exits
    /// once the build is done.
    pub(super) fn make_burst_done(&mut self, t: usize, c: usize) {
        let Some(b) = self.build.as_mut() else {
            return;
        };
        let Role::Make { starting } = self.tasks[t].role else {
            return;
        };
        let next = b.graph.take_next();
        let (done, burst) = (b.graph.all_done(), b.make_ms * b.instr_per_ms);
        if let Some(j) = starting {
            self.start_job(j);
        }
        self.tasks[t].role = Role::Make { starting: next };
        if next.is_some() {
            self.tasks[t].remaining = burst;
        } else if done {
            self.complete(t, c);
        } else {
            self.tasks[t].life = Life::Sleeping { until: Ns::MAX };
            self.switch_out(t, c);
        }
    }

    /// Start build job `j` (and its assembler) now.
    fn start_job(&mut self, j: usize) {
        let Some(b) = self.build.as_ref() else {
            return;
        };
        let job = &b.graph.jobs()[j];
        let (kind, instr) = (job.kind, job.work_ms * b.instr_per_ms);
        let (work, helper, id) = (b.work.clone(), b.helper.clone(), b.phase_id);
        let make = b.make;
        let now = self.now;
        let task = self.push_task(
            kind.name().into(),
            None,
            true,
            0,
            work,
            vec![id],
            instr,
            now,
        );
        self.sched[task].spawned_by = Some(make);
        let helper = match (kind, helper) {
            (JobKind::Compile, Some(p)) => {
                let h = self.push_task("as".into(), None, true, 0, p, vec![id], f64::INFINITY, now);
                self.sched[h].spawned_by = Some(task);
                self.tasks[h].role = Role::Helper;
                Some(h)
            }
            _ => None,
        };
        self.tasks[task].role = Role::Job { job: j, helper };
    }

    /// A build job ended: end its assembler, update the graph, and wake a
    /// blocked `make` if there is a job to start or the build is done.
    fn job_done(&mut self, job: usize, helper: Option<usize>) {
        if let Some(h) = helper {
            self.kill(h);
        }
        let Some(b) = self.build.as_mut() else {
            return;
        };
        b.graph.finish(job);
        let make = b.make;
        let blocked = matches!(self.tasks[make].life, Life::Sleeping { until: Ns::MAX });
        if !blocked {
            return;
        }
        let next = b.graph.take_next();
        if next.is_some() || b.graph.all_done() {
            self.tasks[make].role = Role::Make { starting: next };
            self.tasks[make].remaining = b.make_ms * b.instr_per_ms;
            self.wake(make, false);
        }
    }

    /// Mark task `t` exited now (it is off every run queue already or is
    /// taken off by the caller).
    pub(super) fn exit(&mut self, t: usize) {
        self.tasks[t].finished = Some(self.now);
        self.tasks[t].life = Life::Exited;
        self.tasks[t].frozen = false;
        if self.tasks[t].managed {
            self.live_managed -= 1;
        }
    }

    /// End task `t` now, wherever it is (an assembler whose job finished).
    fn kill(&mut self, t: usize) {
        if self.tasks[t].life == Life::Exited {
            return;
        }
        self.exit(t);
        self.leave_cpu(t);
    }

    /// Take task `t` off the CPU it is queued or running on, if any.
    pub(super) fn leave_cpu(&mut self, t: usize) {
        if let Some(c) = self.sched[t].cpu {
            self.touch(c);
            if self.kernel.dequeue(&mut self.sched, t, c, self.now) {
                self.sched[t].switches += 1;
                self.schedule(c);
            }
        }
    }

    /// Create an instance of a task spec, arriving at `at`; returns its slot.
    pub(super) fn spawn(&mut self, instance: Instance, at: Ns) -> usize {
        let t = &self.scenario.spec.tasks[instance.spec];
        let profile = self.scenario.profiles[&t.profile].clone();
        let ids = (0..profile.phases.len())
            .map(|k| {
                self.phase_keys
                    .get(&(t.profile.clone(), k))
                    .copied()
                    .unwrap_or(0)
            })
            .collect();
        let name = self.scenario.instance_name(instance.spec, instance.k);
        let owed = self.owed.get(&(instance.spec, instance.k)).copied();
        let completed = owed.map_or(0, |o| t.completions.saturating_sub(o));
        let nice = t.nice_after(completed);
        let (managed, length) = (t.managed, self.lengths[instance.spec]);
        self.push_task(
            name,
            Some(instance),
            managed,
            nice,
            profile,
            ids,
            length,
            at,
        )
    }

    /// Create a task arriving at `at` in a free slot; returns the slot.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_task(
        &mut self,
        name: String,
        instance: Option<Instance>,
        managed: bool,
        nice: i32,
        profile: Arc<Profile>,
        phase_ids: Vec<u32>,
        instructions: f64,
        at: Ns,
    ) -> usize {
        let n = self.machine.cpus();
        let allowed: Vec<bool> = (0..n)
            .map(|c| !managed || self.managed_cpus.contains(CpuId(c as u32)))
            .collect();
        let phase_left = profile.phases[0].instructions.unwrap_or(f64::INFINITY);
        let pid = self.next_pid;
        self.next_pid += 1;
        let seq = self.next_seq;
        self.next_seq += 1;
        let task = Task {
            id: TaskId {
                pid,
                start_ticks: at / self.tick,
            },
            name,
            instance,
            role: Role::Plain,
            managed,
            nice,
            profile,
            phase_ids,
            phase: 0,
            phase_left,
            remaining: instructions,
            burst_left: f64::INFINITY,
            work_per_ms: None,
            life: Life::Pending,
            frozen: false,
            gang_group: None,
            arrival: at,
            started: at,
            carried_start: false,
            finished: None,
            own_cpus: None,
            acc: Acc::default(),
            reported: Acc::default(),
            mux: MuxAcc::default(),
            mux_reported: MuxAcc::default(),
            monitored: false,
            true_j: Default::default(),
            reported_sched: SchedCounts {
                wait_ns: 0,
                switches: 0,
                migrations: 0,
            },
        };
        let sched = Sched::new(nice, allowed, seq);
        let slot = match self.free.pop() {
            Some(slot) => {
                self.tasks[slot] = task;
                self.sched[slot] = sched;
                slot
            }
            None => {
                self.tasks.push(task);
                self.sched.push(sched);
                self.tasks.len() - 1
            }
        };
        self.tasks[slot].burst_left = self.burst(slot);
        self.warmup.new_task(slot);
        self.order.push(slot);
        if managed {
            self.live_managed += 1;
        }
        self.timers.push(Reverse((at, seq, slot)));
        slot
    }

    /// Instructions until task `t`'s next sleep (infinite if it never
    /// sleeps). A burst of `run_ms` is the work its phase does in that time
    /// alone at the highest frequency: a program blocks after finishing a
    /// piece of work (a buffer, a request), not after an amount of time, so
    /// at a lower frequency or beside a contending task its bursts last
    /// longer but it sleeps as often per run.
    pub(super) fn burst(&mut self, t: usize) -> f64 {
        let task = &self.tasks[t];
        let phase = &task.profile.phases[task.phase];
        let Some(sleep) = phase.sleep.as_ref() else {
            return f64::INFINITY;
        };
        let (run_ms, random) = (sleep.run_ms, sleep.random);
        let per_ms = match task.work_per_ms {
            Some((p, w)) if p == task.phase => w,
            _ => {
                // Once per phase, not per burst: a solve is the costly part.
                let w = 1e6 / self.alone_tpi_ns(phase);
                self.tasks[t].work_per_ms = Some((self.tasks[t].phase, w));
                w
            }
        };
        let ms = if random {
            exponential(&mut self.rng, run_ms)
        } else {
            run_ms
        };
        ms * per_ms
    }

    /// How long task `t` sleeps now, ns.
    pub(super) fn sleep_ns(&mut self, t: usize) -> Ns {
        match &self.tasks[t].profile.phases[self.tasks[t].phase].sleep {
            Some(s) if s.random => (exponential(&mut self.rng, s.sleep_ms) * 1e6) as Ns,
            Some(s) => (s.sleep_ms * 1e6) as Ns,
            None => 0,
        }
    }

    /// Task `t` finished its work on CPU `c`: it exits, its build job is
    /// done, and its instance restarts if it owes completions, or its
    /// `after` dependants start once every instance of its spec is done.
    pub(super) fn complete(&mut self, t: usize, c: usize) {
        let now = self.now;
        self.exit(t);
        self.switch_out(t, c);
        if let Role::Job { job, helper } = self.tasks[t].role {
            self.job_done(job, helper);
        }
        let Some(instance) = self.tasks[t].instance else {
            return;
        };
        let owed = self.owed.entry((instance.spec, instance.k)).or_insert(1);
        *owed = owed.saturating_sub(1);
        if *owed > 0 {
            let restarted = self.spawn(instance, now);
            self.tasks[restarted].started = now;
            return;
        }
        let spec = instance.spec;
        let finished_spec = (0..self.scenario.spec.tasks[spec].count)
            .all(|k| self.owed.get(&(spec, k)) == Some(&0));
        if finished_spec {
            let name = self.scenario.spec.tasks[spec]
                .name
                .clone()
                .unwrap_or_else(|| self.scenario.spec.tasks[spec].profile.clone());
            let ready: Vec<Instance> = self
                .waiting_after
                .iter()
                .copied()
                .filter(|w| {
                    self.scenario.spec.tasks[w.spec].after.as_deref() == Some(name.as_str())
                })
                .collect();
            self.waiting_after.retain(|w| !ready.contains(w));
            for instance in ready {
                self.spawn(instance, now);
            }
        }
    }
}

/// An exponentially distributed sample with the given mean.
fn exponential(rng: &mut ChaCha8Rng, mean: f64) -> f64 {
    let u: f64 = rng.random::<f64>();
    -mean * (1.0f64 - u).max(1e-12).ln()
}
