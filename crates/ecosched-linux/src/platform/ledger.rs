//! The bookkeeping of the managed tasks between observations: which are
//! known, their names and processes, the counters read since the last
//! observation, the latest reading of each, and which exited. An
//! observation turns it into the snapshot's task samples and forgets the
//! tasks whose exit it reports, so every map follows the tasks alive, not
//! the run's length. A task that cannot be read (out of descriptors, say)
//! is noted once and not taken on again while it lives: taking it on at
//! every read would repeat its notice for as long as the run lasts.
//!
//! Between two observations in which no task ran, was taken on or left,
//! the second reports exactly what the first did: those samples are kept
//! and copied, so a quiet interval costs one copy of the samples instead
//! of rebuilding each from the per-task maps (with thousands of sleeping
//! threads at a 20 ms interval the rebuild was most of ecosched's CPU).

use crate::fsroot::FsRoot;
use crate::identity::same_task;
use crate::tasks::{HostFacts, Observation, TaskReading};
use ecosched_model::{CounterKind, Counters, CpuSet, ProcessId, TaskId, TaskSample, TaskState};
use std::collections::{BTreeMap, BTreeSet};

/// What is kept about the managed tasks.
#[derive(Debug, Default)]
pub(super) struct TaskLedger {
    tasks: Vec<TaskId>,
    known: BTreeSet<TaskId>,
    names: BTreeMap<TaskId, String>,
    /// The process of each known task, kept until its exit is reported.
    processes: BTreeMap<TaskId, ProcessId>,
    /// Counter deltas of each task read since the last observation.
    pending: BTreeMap<TaskId, Counters>,
    /// The latest reading of every task, kept until its exit is reported:
    /// what an observation shows of a task that has not run since.
    latest: BTreeMap<TaskId, TaskReading>,
    exited: BTreeSet<TaskId>,
    /// Tasks read as zombies ('Z'/'X') whose exit an observation has
    /// already reported: a zombie stays in `/proc` until reaped, and its
    /// exit must be reported once, not again when it vanishes.
    exit_reported: BTreeSet<TaskId>,
    /// Tasks alive that could not be read, noted once and not taken on
    /// again; each leaves the set when discovery no longer finds it.
    unobserved: BTreeSet<TaskId>,
    /// How many tasks could not be read over the whole run.
    unobserved_total: u64,
    /// The samples of the last observation, when the next one reports the
    /// same unless something happens in between (see `changed`): no
    /// counters pending, no exit, no sample ending.
    quiet: Option<Vec<TaskSample>>,
    /// Something happened since the last observation that its samples
    /// do not show: a task taken on, a reading, an exit or an error.
    changed: bool,
}

/// What a task that has not run since its last reading reports: zero for
/// every counter that reading measured, absent for the others.
fn idle_counters(measured: &Counters) -> Counters {
    let mut idle = Counters::default();
    for kind in CounterKind::ALL {
        if measured.get(kind).is_some() {
            idle.set(kind, Some(0));
        }
    }
    idle
}

impl TaskLedger {
    /// Take on task `id` of `process`; `false` when it is known already.
    pub(super) fn admit(&mut self, id: TaskId, process: Option<ProcessId>) -> bool {
        if self.unobserved.contains(&id) || !self.known.insert(id) {
            return false;
        }
        self.changed = true;
        self.tasks.push(id);
        if let Some(p) = process {
            self.processes.insert(id, p);
        }
        true
    }

    /// Forget the unreadable tasks that `found` (every task discovery
    /// finds now, sorted) no longer lists: they exited.
    pub(super) fn keep_unobserved_in(&mut self, found: &[TaskId]) {
        self.unobserved.retain(|id| found.binary_search(id).is_ok());
    }

    /// How many tasks could not be read over the run, each counted once.
    pub(super) fn unobserved_total(&self) -> u64 {
        self.unobserved_total
    }

    /// The tasks alive, in the order they were found.
    pub(super) fn tasks(&self) -> &[TaskId] {
        &self.tasks
    }

    /// Whether `id` is managed (known, its exit not reported yet).
    pub(super) fn is_managed(&self, id: &TaskId) -> bool {
        self.known.contains(id)
    }

    /// The process of a known task.
    pub(super) fn process_of(&self, id: TaskId) -> Option<ProcessId> {
        self.processes.get(&id).copied()
    }

    /// Fold a read of the tasks into what the next observation reports: a
    /// task that ran adds to its pending counters and becomes its latest
    /// reading; one that exited, or can no longer be read (said through
    /// `notice`), is no longer followed. Returns the tasks that left.
    pub(super) fn fold(
        &mut self,
        observation: Observation,
        notice: &mut dyn FnMut(String),
    ) -> BTreeSet<TaskId> {
        if !(observation.tasks.is_empty()
            && observation.gone.is_empty()
            && observation.errors.is_empty())
        {
            self.changed = true;
        }
        for r in observation.tasks {
            // A forked child execs: its name follows its program (a shell's
            // child first reads as `sh`, then as what it ran).
            let renamed = self
                .names
                .get(&r.id)
                .is_none_or(|n| n.rsplit_once(':').map(|(comm, _)| comm) != Some(r.comm.as_str()));
            if renamed {
                self.names.insert(r.id, format!("{}:{}", r.comm, r.id.pid));
            }
            self.pending
                .entry(r.id)
                .or_default()
                .accumulate(&r.counters);
            self.latest.insert(r.id, r);
        }
        let mut gone: BTreeSet<TaskId> = observation.gone.into_iter().collect();
        for (id, e) in observation.errors {
            // Not gone, but unreadable (permissions, a malformed file, out
            // of descriptors): say so once and stop following it.
            if self.unobserved.insert(id) {
                self.unobserved_total += 1;
                notice(format!("task {id} is no longer observed: {e}"));
            }
            gone.insert(id);
        }
        self.tasks.retain(|t| !gone.contains(t));
        self.exited.extend(gone.iter().copied());
        gone
    }

    /// Whether a task last read as a zombie has since been reaped. Its
    /// reaping need not show in the activity cgroup's CPU time (a parent
    /// outside it, or time booked before the last read), and until a read
    /// finds it gone it stays listed. Zombies are few and short-lived, so
    /// this costs a `stat` or two.
    pub(super) fn a_zombie_vanished(&self, root: &FsRoot) -> bool {
        self.exit_reported
            .iter()
            .any(|id| !same_task(root, id.pid, id.start_ticks))
    }

    /// The samples of an observation at `time_s` into the run (which
    /// started at `run_start_epoch_s`): every task read since the last
    /// one, every task alive that did not run since (its latest reading,
    /// counting nothing), and every exit. Exits are reported now, so
    /// nothing is kept about those tasks afterwards. `host` and
    /// `run_start_epoch_s` are the same at every call.
    pub(super) fn report(
        &mut self,
        time_s: f64,
        host: &HostFacts,
        run_start_epoch_s: f64,
    ) -> Vec<TaskSample> {
        let changed = std::mem::take(&mut self.changed);
        if let (false, Some(quiet)) = (changed, &self.quiet) {
            return quiet.clone();
        }
        let samples = self.build_report(time_s, host, run_start_epoch_s);
        // The next observation reports the same if nothing happens before
        // it: nothing was pending or exited here (both would report
        // differently next time) and no sample ends (`time_s`, which
        // differs, appears only in an ending sample).
        let settled = samples
            .iter()
            .all(|s| s.finished_s.is_none() && s.counters == idle_counters(&s.counters));
        self.quiet = settled.then(|| samples.clone());
        samples
    }

    fn build_report(
        &mut self,
        time_s: f64,
        host: &HostFacts,
        run_start_epoch_s: f64,
    ) -> Vec<TaskSample> {
        let started_s =
            |id: &TaskId| (host.start_epoch_s(id.start_ticks) - run_start_epoch_s).max(0.0);
        let name = |names: &BTreeMap<TaskId, String>, id: &TaskId| {
            names.get(id).cloned().unwrap_or_else(|| id.pid.to_string())
        };
        let exited = std::mem::take(&mut self.exited);
        // Exited without a reading since the last observation.
        let unread: Vec<TaskId> = exited
            .iter()
            .filter(|id| !self.pending.contains_key(id) && !self.exit_reported.contains(id))
            .copied()
            .collect();
        let mut pending = std::mem::take(&mut self.pending);
        // Read since the last observation, or alive and not run since
        // their last reading (not read again: see `ReadPacer::begin_look`),
        // which they report unchanged, counting nothing.
        let reported: BTreeSet<TaskId> = pending
            .keys()
            .chain(self.tasks.iter().filter(|t| self.latest.contains_key(t)))
            .filter(|t| !self.exit_reported.contains(t))
            .copied()
            .collect();
        let mut samples = Vec::with_capacity(reported.len() + unread.len());
        for id in reported {
            let Some(latest) = self.latest.get(&id) else {
                continue;
            };
            // A zombie's reading is its last sample: reported once, and
            // forgotten only when it vanishes.
            let gone = exited.contains(&id);
            let ends = gone || latest.state == TaskState::Exited;
            if ends && !gone {
                self.exit_reported.insert(id);
            }
            samples.push(TaskSample {
                id,
                process: latest.process,
                name: name(&self.names, &id),
                managed: true,
                state: if ends {
                    TaskState::Exited
                } else {
                    latest.state
                },
                cpu: Some(latest.cpu),
                allowed: latest.allowed.clone(),
                nice: latest.nice,
                started_s: started_s(&id),
                finished_s: ends.then_some(time_s),
                counters: pending
                    .remove(&id)
                    .unwrap_or_else(|| idle_counters(&latest.counters)),
            });
        }
        for id in unread {
            samples.push(TaskSample {
                id,
                process: self
                    .processes
                    .get(&id)
                    .copied()
                    .unwrap_or_else(|| id.as_process()),
                name: name(&self.names, &id),
                managed: true,
                state: TaskState::Exited,
                cpu: None,
                allowed: CpuSet::new(),
                nice: 0,
                started_s: started_s(&id),
                finished_s: Some(time_s),
                counters: Counters::default(),
            });
        }
        for id in &exited {
            self.exit_reported.remove(id);
            self.known.remove(id);
            self.names.remove(id);
            self.processes.remove(id);
            self.latest.remove(id);
        }
        samples
    }

    /// Sizes of every per-task map: they must follow the tasks alive, not
    /// the run's length.
    pub(super) fn sizes(&self) -> [(&'static str, usize); 9] {
        [
            ("tasks", self.tasks.len()),
            ("known", self.known.len()),
            ("names", self.names.len()),
            ("processes", self.processes.len()),
            ("pending", self.pending.len()),
            ("latest", self.latest.len()),
            ("exited", self.exited.len()),
            ("exit_reported", self.exit_reported.len()),
            ("unobserved", self.unobserved.len()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_that_did_not_run_counts_zero_of_what_it_measures() {
        let measured = Counters {
            on_cpu_ns: Some(5),
            migrations: Some(1),
            ..Counters::default()
        };
        let idle = idle_counters(&measured);
        assert_eq!(idle.on_cpu_ns, Some(0));
        assert_eq!(idle.migrations, Some(0));
        assert_eq!(idle.instructions, None);
    }

    fn reading(pid: u32, on_cpu_ns: u64, state: TaskState) -> TaskReading {
        TaskReading {
            id: TaskId {
                pid,
                start_ticks: 7,
            },
            tgid: 1,
            process: ProcessId {
                tgid: 1,
                start_ticks: 7,
            },
            ppid: 0,
            comm: "worker".into(),
            state,
            cpu: ecosched_model::CpuId(1),
            allowed: CpuSet::parse_list("0-3").unwrap_or_default(),
            nice: 0,
            cpu_time_ticks: 0,
            counters: Counters {
                on_cpu_ns: Some(on_cpu_ns),
                runqueue_wait_ns: Some(0),
                ..Counters::default()
            },
            task_clock_ns: None,
        }
    }

    /// The samples copied for a quiet interval are those a rebuild from
    /// the per-task maps gives, through readings, idle intervals, exits
    /// (a zombie, then gone) and newcomers.
    #[test]
    fn a_quiet_interval_reports_what_a_rebuild_reports() {
        let host = HostFacts {
            ticks_per_s: 100,
            boot_time_s: 0,
        };
        // `copied` takes the quiet path; `rebuilt` always rebuilds.
        let (mut copied, mut rebuilt) = (TaskLedger::default(), TaskLedger::default());
        let id = |pid| TaskId {
            pid,
            start_ticks: 7,
        };
        let mut steps: Vec<(Vec<u32>, Observation)> = Vec::new();
        let read = |tasks: Vec<TaskReading>| Observation {
            tasks,
            ..Observation::default()
        };
        steps.push((
            vec![1, 2, 3],
            read(
                (1..=3)
                    .map(|p| reading(p, 5, TaskState::Sleeping))
                    .collect(),
            ),
        ));
        for _ in 0..3 {
            steps.push((vec![], Observation::default()));
        }
        steps.push((vec![], read(vec![reading(2, 9, TaskState::Running)])));
        steps.push((vec![], Observation::default()));
        steps.push((vec![], Observation::default()));
        steps.push((
            vec![4],
            read(vec![
                reading(4, 1, TaskState::Sleeping),
                reading(3, 0, TaskState::Exited),
            ]),
        ));
        steps.push((vec![], Observation::default()));
        steps.push((
            vec![],
            Observation {
                gone: vec![id(3)],
                ..Observation::default()
            },
        ));
        steps.push((vec![], Observation::default()));
        steps.push((vec![], Observation::default()));
        let mut quiet = 0;
        for (round, (admit, observation)) in steps.into_iter().enumerate() {
            let again = Observation {
                tasks: observation.tasks.clone(),
                gone: observation.gone.clone(),
                ..Observation::default()
            };
            for (ledger, observation) in [(&mut copied, observation), (&mut rebuilt, again)] {
                for &pid in &admit {
                    ledger.admit(id(pid), None);
                }
                ledger.fold(observation, &mut |_| {});
            }
            let time_s = round as f64;
            quiet += usize::from(!copied.changed && copied.quiet.is_some());
            let samples = copied.report(time_s, &host, 0.0);
            assert_eq!(
                samples,
                rebuilt.build_report(time_s, &host, 0.0),
                "round {round}"
            );
            assert!(!samples.is_empty(), "round {round}");
        }
        assert!(quiet >= 5, "only {quiet} quiet rounds took the copy");
    }

    #[test]
    fn an_unreadable_task_is_noted_once_and_forgotten_when_it_exits() {
        let id = TaskId {
            pid: 42,
            start_ticks: 7,
        };
        let host = HostFacts {
            ticks_per_s: 100,
            boot_time_s: 0,
        };
        let mut ledger = TaskLedger::default();
        let mut notes = Vec::new();
        for round in 0..50 {
            // Discovery finds it at every read; only the first takes it on.
            assert_eq!(ledger.admit(id, None), round == 0, "round {round}");
            ledger.keep_unobserved_in(&[id]);
            let observation = Observation {
                errors: if round == 0 {
                    vec![(
                        id,
                        crate::LinuxError::Absent {
                            path: "RLIMIT_NOFILE".into(),
                            what: "a descriptor".into(),
                        },
                    )]
                } else {
                    Vec::new()
                },
                ..Observation::default()
            };
            ledger.fold(observation, &mut |n| notes.push(n));
            ledger.report(f64::from(round), &host, 0.0);
        }
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(ledger.unobserved_total(), 1);
        // Once it has exited discovery no longer finds it: nothing is kept.
        ledger.keep_unobserved_in(&[]);
        assert!(
            ledger.sizes().iter().all(|&(_, n)| n == 0),
            "{:?}",
            ledger.sizes()
        );
    }
}
