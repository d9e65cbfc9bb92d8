//! One reading of one thread, made as cheaply as its answer allows: what
//! is kept about a task between reads (its open files, baselines, perf
//! groups) and how a new reading is taken from them.

use crate::error::LinuxError;
use crate::perf::{Event, PerfGroup};
use crate::procfs::{self, SchedStat, Stat, Status};
use crate::tasks::perf_groups::OpenGroup;
use crate::tasks::proc_file::ProcFile;
use ecosched_model::{Counters, CpuId, CpuSet, ProcessId, TaskId, TaskState};

/// One thread at one observation.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskReading {
    /// Identity.
    pub id: TaskId,
    /// The process it belongs to.
    pub tgid: u32,
    /// The same process, identified by its leader's start time (not this
    /// thread's), so all threads of one process share it.
    pub process: ProcessId,
    /// Parent process.
    pub ppid: u32,
    /// Command name (`comm`, the thread's own name).
    pub comm: String,
    /// Scheduler state; the kernel's `R` (on a run queue) is `Running`.
    pub state: TaskState,
    /// CPU it last ran on.
    pub cpu: CpuId,
    /// CPUs it may run on (`Cpus_allowed_list`).
    pub allowed: CpuSet,
    /// Nice value.
    pub nice: i32,
    /// User plus system time since the task started, in clock ticks.
    pub cpu_time_ticks: u64,
    /// Deltas since the previous reading of this task. On the first reading
    /// the `/proc` counters cover the task's whole life (its start is the
    /// baseline) and the perf counters are `None`: they only start counting
    /// when the task is first read.
    pub counters: Counters,
    /// Task-clock delta (ns on a CPU, from perf), when the software group is
    /// open and has a baseline; a cross-check of `counters.on_cpu_ns`.
    pub task_clock_ns: Option<u64>,
}

/// What a read of one task may skip and how it asks for allowed CPUs:
/// the reader's settings at the time of the read.
#[derive(Debug, Clone, Copy)]
pub(super) struct HowToRead {
    /// The root is this machine's `/`, so `sched_getaffinity` answers for it.
    pub(super) live_affinity: bool,
    /// The reader's affinity epoch
    /// ([`TaskReader::affinity_changed`](crate::tasks::TaskReader::affinity_changed)).
    pub(super) affinity_epoch: u64,
    /// CPU numbers an affinity mask can use here.
    pub(super) cpu_bits: usize,
    /// A task whose `schedstat` has not moved gets no new reading.
    pub(super) skip_unchanged: bool,
}

/// Everything kept about a task between reads.
pub(super) struct Tracked {
    tgid: u32,
    /// The thread group leader's start time, read once.
    process_start: u64,
    stat: ProcFile,
    schedstat: Option<ProcFile>,
    status: ProcFile,
    prev_sched: Option<SchedStat>,
    prev_switches: Option<u64>,
    /// The last `stat` read, reused while the task does not run.
    last_stat: Option<Stat>,
    /// The last allowed CPUs read and the reader's affinity epoch then,
    /// reused while the task does not run and nothing was re-pinned.
    last_allowed: Option<(CpuSet, u64)>,
    /// Readings since the allowed CPUs were last asked for.
    allowed_age: u32,
    /// No reading has been returned yet.
    first: bool,
    /// The reader's read count when it was last asked for.
    pub(super) asked: u64,
    groups: Vec<OpenGroup>,
}

/// Readings of a task that ran, on a CPU of the set it was allowed, that
/// reuse that set before it is asked for again.
pub const AFFINITY_RECHECK: u32 = 4;

/// The CPUs thread `tid` may run on, from `sched_getaffinity(2)`, looking
/// at the first `cpu_bits` CPUs only (those the kernel can have: testing
/// all 1024 bits of the mask would cost a fifth of a busy thread's read).
fn affinity(tid: u32, cpu_bits: usize) -> Result<CpuSet, LinuxError> {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(tid).unwrap_or(i32::MAX));
    let mask = nix::sched::sched_getaffinity(pid).map_err(|e| match e {
        nix::errno::Errno::ESRCH => LinuxError::Gone { pid: tid },
        e => LinuxError::from_io(
            std::path::Path::new("sched_getaffinity"),
            e.into(),
            "CAP_SYS_NICE",
        ),
    })?;
    let mut set = CpuSet::new();
    for cpu in 0..cpu_bits.min(nix::sched::CpuSet::count()) {
        if mask.is_set(cpu).unwrap_or(false) {
            set.insert(CpuId(u32::try_from(cpu).unwrap_or(u32::MAX)));
        }
    }
    Ok(set)
}

fn task_state(state: char) -> TaskState {
    match state {
        'R' => TaskState::Running,
        'T' | 't' => TaskState::Stopped,
        'Z' | 'X' | 'x' => TaskState::Exited,
        _ => TaskState::Sleeping,
    }
}

impl Tracked {
    /// A task of process `tgid` (whose leader started at `process_start`)
    /// read through its open `stat`, `schedstat` (where the kernel has it)
    /// and `status` files; no perf group yet.
    pub(super) fn new(
        tgid: u32,
        process_start: u64,
        stat: ProcFile,
        schedstat: Option<ProcFile>,
        status: ProcFile,
    ) -> Tracked {
        Tracked {
            tgid,
            process_start,
            stat,
            schedstat,
            status,
            prev_sched: None,
            prev_switches: None,
            last_stat: None,
            last_allowed: None,
            allowed_age: 0,
            first: true,
            asked: 0,
            groups: Vec::new(),
        }
    }

    /// Count `events` with the open `group` from now on.
    pub(super) fn add_group(&mut self, events: Vec<Event>, group: Box<dyn PerfGroup>) {
        self.groups.push(OpenGroup {
            events,
            group,
            prev: None,
        });
    }

    /// File descriptors it holds: its `/proc` files and perf events.
    pub(super) fn descriptors(&self) -> u64 {
        let events: usize = self.groups.iter().map(|g| g.events.len()).sum();
        1 + u64::from(self.schedstat.is_some()) + events as u64
    }

    pub(super) fn stat(&mut self, id: TaskId) -> Result<Stat, LinuxError> {
        let stat = self.stat.parse(id.pid, procfs::stat::parse)?;
        if stat.start_ticks != id.start_ticks {
            return Err(LinuxError::Gone { pid: id.pid });
        }
        Ok(stat)
    }

    /// Read the task, as cheaply as the answer allows (the `observe` bench
    /// measures each file: `status` costs twice `stat`, which costs three
    /// times `schedstat`):
    ///
    /// - The first perf group first, where the task has one: the kernel
    ///   advances a task's counter's enabled time only while the task is
    ///   on a CPU, so an unchanged enabled time (one that has moved
    ///   before) means it has not run, and nothing else is read (a single
    ///   counter costs about half a `schedstat` read; most threads of most
    ///   programs sleep, and in a long-running daemon these reads are half
    ///   its CPU). Its one blind
    ///   spot, shared with the activity cgroup: run-queue wait the kernel
    ///   books without the task running (a queued task moved to another
    ///   CPU) shows when the task next runs.
    /// - Else `schedstat` first. When it is unchanged since the previous read
    ///   (same on-CPU time and timeslice count) the task has not run, so
    ///   `stat` is not re-read: its state, CPU and times cannot have moved,
    ///   since entering another state (stopped, exited) takes CPU time; nor
    ///   are its perf groups, which count only while it runs. A task last
    ///   read running is the exception, for both shortcuts: it may have
    ///   been in its exit path, past the CPU time either shows, so its
    ///   `stat` is read again. Only
    ///   an outside `renice` or rename of a task that stays asleep shows up
    ///   late, when it next runs.
    /// - With `live_affinity` (the root is this machine) the allowed CPUs
    ///   come from `sched_getaffinity(2)`, a tenth of `status`'s cost, and
    ///   only for a task that ran since the last read. The context
    ///   switches come from `schedstat`'s timeslices, or without it from
    ///   perf; `status` is read for them only where neither counts them
    ///   (and on the first read, before perf has a baseline).
    ///
    /// The held `schedstat`/`stat` file read first fails with `ESRCH` once
    /// the task is gone, so the TID still names this task for the reads
    /// by TID that follow.
    pub(super) fn sample(
        &mut self,
        id: TaskId,
        how: HowToRead,
    ) -> Result<Option<TaskReading>, LinuxError> {
        let HowToRead {
            live_affinity,
            affinity_epoch,
            cpu_bits,
            skip_unchanged,
        } = how;
        // A task last read running may have been reading in its exit path:
        // its perf counters stop (`perf_event_exit_task`) and its last
        // `schedstat` may be booked before it turns zombie, so neither
        // shortcut may stand in for a fresh `stat` (else a finished command
        // may never be seen to exit, its last reading `R`). A zombie never
        // runs again, so the shortcuts would hold its last reading even
        // after it is reaped: only `stat` finds it gone.
        let must_stat = self
            .last_stat
            .as_ref()
            .is_some_and(|s| matches!(s.state, 'R' | 'Z' | 'X'));
        let settled = skip_unchanged
            && !self.first
            && !must_stat
            && self.last_stat.is_some()
            && self
                .last_allowed
                .as_ref()
                .is_some_and(|(_, epoch)| *epoch == affinity_epoch);
        // The first perf group's reading, when it showed the task ran.
        let mut ran = None;
        if settled {
            if let Some(group) = self.groups.first_mut() {
                let now = group.read();
                match (&group.prev, now) {
                    // A counter whose enabled time never moved proves
                    // nothing (a backend that does not report it, a fake):
                    // `schedstat` decides then.
                    (Some(prev), Some(now))
                        if prev.time_enabled_ns > 0
                            && now.time_enabled_ns == prev.time_enabled_ns =>
                    {
                        return Ok(None)
                    }
                    (_, now) => ran = now,
                }
            }
        }
        let sched = match &mut self.schedstat {
            Some(f) => Some(f.parse(id.pid, procfs::schedstat::parse)?),
            None => None,
        };
        // Not run, not waited, not re-pinned: the previous reading still
        // holds, and making a new one (its name, its CPU set) would cost
        // more than the `schedstat` read itself.
        let unchanged = settled && sched.is_some() && sched == self.prev_sched;
        if unchanged {
            return Ok(None);
        }
        let idle = sched.is_some()
            && self.prev_sched.is_some_and(|p| {
                sched.is_some_and(|n| n.on_cpu_ns == p.on_cpu_ns && n.timeslices == p.timeslices)
            });
        let stat = match (&self.last_stat, idle && !must_stat) {
            (Some(last), true) => last.clone(),
            _ => {
                let stat = self.stat(id)?;
                self.last_stat = Some(stat.clone());
                stat
            }
        };
        // `status` only for what nothing cheaper gives: the allowed CPUs
        // off this machine (a recorded root), and the switch counts where
        // neither `schedstat` nor perf counts them (on the first read
        // too, where perf has no baseline yet).
        let status_switches = sched.is_none()
            && (self.first
                || !self
                    .groups
                    .iter()
                    .any(|g| g.prev.is_some() && g.events.contains(&Event::ContextSwitches)));
        let status: Option<Status> = if status_switches || !live_affinity {
            Some(self.status.parse(id.pid, procfs::status::parse)?)
        } else {
            None
        };
        let allowed = match status.as_ref().map(|s| s.cpus_allowed.clone()) {
            Some(Some(set)) => {
                self.allowed_age = 0;
                set
            }
            Some(None) => {
                return Err(LinuxError::parse(
                    &self.status.path,
                    "",
                    "no Cpus_allowed_list line",
                ))
            }
            // The set last read stands while ecosched has not re-pinned
            // anything since (`TaskReader::affinity_changed`) and the
            // task has not run (half of an idle task's cost), or has run
            // only on a CPU of that set and was asked within the last
            // [`AFFINITY_RECHECK`] readings (about 7 % of a busy one's).
            // So a change made by someone else shows at once when the
            // task runs outside its old set, else within that many
            // readings — or, for a task asleep, when it next runs.
            None => match &self.last_allowed {
                Some((last, epoch))
                    if *epoch == affinity_epoch
                        && (idle
                            || (self.allowed_age < AFFINITY_RECHECK
                                && last.contains(CpuId(stat.processor)))) =>
                {
                    self.allowed_age += 1;
                    last.clone()
                }
                _ => {
                    self.allowed_age = 0;
                    affinity(id.pid, cpu_bits)?
                }
            },
        };
        self.last_allowed = Some((allowed.clone(), affinity_epoch));

        let mut counters = Counters::default();
        if let Some(now) = sched {
            let base = self.prev_sched.unwrap_or(SchedStat {
                on_cpu_ns: 0,
                runqueue_wait_ns: 0,
                timeslices: 0,
            });
            counters.on_cpu_ns = now.on_cpu_ns.checked_sub(base.on_cpu_ns);
            counters.runqueue_wait_ns = now.runqueue_wait_ns.checked_sub(base.runqueue_wait_ns);
            // Every switch out of a task is followed by a switch in (a
            // timeslice), so the two counts differ by at most the one in
            // progress.
            counters.context_switches = now.timeslices.checked_sub(base.timeslices);
            self.prev_sched = Some(now);
        } else {
            // A status delta needs the previous read to have read status
            // too; the first read counts from the task's start.
            let switches = status.as_ref().and_then(Status::context_switches);
            counters.context_switches = match (switches, self.prev_switches) {
                (Some(now), Some(prev)) => now.checked_sub(prev),
                (Some(now), None) if self.first => Some(now),
                _ => None,
            };
            self.prev_switches = switches;
        }
        self.first = false;

        let mut task_clock_ns = None;
        let mut count = |event: Event, delta: Option<u64>| {
            let Some(delta) = delta else { return };
            match event {
                Event::TaskClock => task_clock_ns = Some(delta),
                Event::ContextSwitches => counters.context_switches = Some(delta),
                Event::CpuMigrations => counters.migrations = Some(delta),
                Event::Instructions => counters.instructions = Some(delta),
                Event::Cycles => counters.cycles = Some(delta),
                Event::LlcReferences => counters.llc_references = Some(delta),
                Event::LlcMisses => counters.llc_misses = Some(delta),
                Event::L1dReferences => counters.l1d_references = Some(delta),
                Event::L1dMisses => counters.l1d_misses = Some(delta),
                Event::Raw { kind, .. } => counters.set(kind, Some(delta)),
            }
        };
        for (i, group) in self.groups.iter_mut().enumerate() {
            let read_first = if i == 0 { ran.take() } else { None };
            // A task that has not run counted nothing: no need to read its
            // group (the baseline stays, so a migration at wake-up, before
            // it first runs, lands in the interval in which it runs).
            if idle && group.prev.is_some() && read_first.is_none() {
                for e in &group.events {
                    count(*e, Some(0));
                }
            } else {
                let now = read_first.or_else(|| group.read());
                group.deltas(now, &mut count);
            }
        }

        Ok(Some(TaskReading {
            id,
            tgid: self.tgid,
            process: ProcessId {
                tgid: self.tgid,
                start_ticks: self.process_start,
            },
            ppid: stat.ppid,
            comm: stat.comm,
            state: task_state(stat.state),
            cpu: CpuId(stat.processor),
            allowed,
            nice: stat.nice,
            cpu_time_ticks: stat.utime_ticks.saturating_add(stat.stime_ticks),
            counters,
            task_clock_ns,
        }))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::perf::FakePerf;
    use crate::tasks::testing::{fake_perf, fixture, reader_with};

    #[test]
    fn stat_is_reread_only_when_the_task_has_run() {
        let dir = fixture();
        let fake = FakePerf::new();
        let mut r = reader_with(&dir, &fake);
        let id = TaskId {
            pid: 100,
            start_ticks: 500,
        };
        assert_eq!(r.read(&[id]).tasks[0].state, TaskState::Sleeping);
        let task = dir.path().join("proc/100/task/100");
        let stat = std::fs::read_to_string(task.join("stat")).unwrap();
        std::fs::write(task.join("stat"), stat.replacen(") S ", ") T ", 1)).unwrap();
        // A wake-up migration before it runs again.
        fake.add(100, Event::CpuMigrations, 1);
        // Same on-CPU time and timeslices: it has not run, nothing to re-read.
        let t = r.read(&[id]).tasks.remove(0);
        assert_eq!(
            (t.state, t.counters.on_cpu_ns),
            (TaskState::Sleeping, Some(0))
        );
        assert_eq!(t.counters.migrations, Some(0));
        std::fs::write(task.join("schedstat"), "1500 200 4\n").unwrap();
        let t = r.read(&[id]).tasks.remove(0);
        assert_eq!(
            (t.state, t.counters.on_cpu_ns),
            (TaskState::Stopped, Some(500))
        );
        assert_eq!(t.counters.migrations, Some(1), "counted when it ran");
    }

    #[test]
    fn a_thread_whose_schedstat_did_not_move_gets_no_new_reading() {
        let dir = fixture();
        let no_perf = fake_perf(false);
        let mut r = reader_with(&dir, &no_perf);
        let id = TaskId {
            pid: 100,
            start_ticks: 500,
        };
        let first = r.read_changed(&[id]);
        assert_eq!((first.tasks.len(), first.unchanged.len()), (1, 0));
        let again = r.read_changed(&[id]);
        assert!(again.tasks.is_empty());
        assert_eq!(again.unchanged, vec![id]);
        // `read` still gives every task a reading.
        assert_eq!(r.read(&[id]).tasks.len(), 1);
        // Only waited on a run queue: that is news.
        let task = dir.path().join("proc/100/task/100");
        std::fs::write(task.join("schedstat"), "1000 300 3\n").unwrap();
        let waited = r.read_changed(&[id]);
        assert_eq!(waited.tasks[0].counters.runqueue_wait_ns, Some(100));
        assert_eq!(waited.tasks[0].counters.on_cpu_ns, Some(0));
        // Re-pinned by ecosched while asleep: read afresh.
        r.affinity_changed();
        assert_eq!(r.read_changed(&[id]).tasks.len(), 1);
        assert_eq!(r.read_changed(&[id]).unchanged, vec![id]);
    }

    /// A task read running may be in its exit path, past the CPU time its
    /// perf counter and `schedstat` show: read again, it shows its exit
    /// (zombie) though neither moved, with perf and without.
    #[test]
    fn a_task_last_read_running_is_read_again_though_nothing_moved() {
        for with_perf in [true, false] {
            let dir = fixture();
            let fake = fake_perf(with_perf);
            let mut r = reader_with(&dir, &fake);
            let id = TaskId {
                pid: 100,
                start_ticks: 500,
            };
            let task = dir.path().join("proc/100/task/100");
            let stat = std::fs::read_to_string(task.join("stat")).unwrap();
            assert_eq!(r.read_changed(&[id]).tasks.len(), 1);
            // It ran (the counter moved) and was read running.
            std::fs::write(task.join("schedstat"), "1400 200 4\n").unwrap();
            fake.advance(100, 400, 0);
            std::fs::write(task.join("stat"), stat.replacen(") S ", ") R ", 1)).unwrap();
            let t = r.read_changed(&[id]).tasks.remove(0);
            assert_eq!(t.state, TaskState::Running);
            // Now a zombie; neither its counter nor its schedstat moved.
            std::fs::write(task.join("stat"), stat.replacen(") S ", ") Z ", 1)).unwrap();
            let t = r.read_changed(&[id]).tasks.remove(0);
            assert_eq!(t.state, TaskState::Exited, "perf: {with_perf}");
        }
    }

    #[test]
    fn a_thread_whose_perf_time_did_not_move_is_not_read_further() {
        let dir = fixture();
        let fake = FakePerf::new().without_pmu();
        let mut r = reader_with(&dir, &fake);
        let id = TaskId {
            pid: 100,
            start_ticks: 500,
        };
        let task = dir.path().join("proc/100/task/100");
        assert_eq!(r.read_changed(&[id]).tasks.len(), 1);
        // A counter whose enabled time never moved proves nothing:
        // `schedstat` decides (its wait moved).
        std::fs::write(task.join("schedstat"), "1000 300 3\n").unwrap();
        let t = r.read_changed(&[id]).tasks.remove(0);
        assert_eq!(t.counters.runqueue_wait_ns, Some(100));
        // It ran: the counter's enabled time moved.
        std::fs::write(task.join("schedstat"), "1400 300 4\n").unwrap();
        fake.advance(100, 400, 0);
        assert_eq!(r.read_changed(&[id]).tasks.len(), 1);
        // Its wait moved (a queued task moved to another CPU books it), but
        // its counter was not enabled for a moment (it did not run):
        // nothing but the counter is read, so that shows when it runs.
        let stat = std::fs::read_to_string(task.join("stat")).unwrap();
        std::fs::write(task.join("stat"), stat.replacen(") S ", ") T ", 1)).unwrap();
        std::fs::write(task.join("schedstat"), "1400 400 4\n").unwrap();
        assert_eq!(r.read_changed(&[id]).unchanged, vec![id]);
        // It ran: everything is read, the wait booked meanwhile included.
        std::fs::write(task.join("schedstat"), "1900 400 5\n").unwrap();
        fake.add(100, Event::CpuMigrations, 1);
        fake.advance(100, 500, 0);
        let t = r.read_changed(&[id]).tasks.remove(0);
        assert_eq!(t.state, TaskState::Stopped);
        assert_eq!(
            (t.counters.on_cpu_ns, t.counters.runqueue_wait_ns),
            (Some(500), Some(100))
        );
        assert_eq!(t.counters.migrations, Some(1));
    }

    #[test]
    fn first_read_counts_from_task_start_then_deltas() {
        let dir = fixture();
        let fake = FakePerf::new().without_pmu();
        let mut r = reader_with(&dir, &fake);
        let id = TaskId {
            pid: 101,
            start_ticks: 510,
        };
        let obs = r.read(&[id]);
        assert!(
            obs.gone.is_empty() && obs.errors.is_empty(),
            "{:?}",
            obs.errors
        );
        let t = &obs.tasks[0];
        assert_eq!(
            (t.tgid, t.ppid, t.nice, t.cpu, t.cpu_time_ticks),
            (100, 1, -5, CpuId(1), 10)
        );
        assert_eq!(
            t.process,
            ProcessId {
                tgid: 100,
                start_ticks: 500
            },
            "a thread's process is named by its leader's start time, not its own (510)"
        );
        assert_eq!(t.state, TaskState::Sleeping);
        assert_eq!(t.allowed.to_list(), "0-3");
        assert_eq!(t.counters.on_cpu_ns, Some(1000));
        assert_eq!(t.counters.runqueue_wait_ns, Some(200));
        assert_eq!(
            t.counters.context_switches,
            Some(3),
            "schedstat's timeslices, not status's 11"
        );
        assert_eq!(t.counters.migrations, None, "perf has no baseline yet");
        assert_eq!(t.counters.instructions, None, "no PMU");

        std::fs::write(
            dir.path().join("proc/100/task/101/schedstat"),
            "4000 700 9\n",
        )
        .unwrap();
        fake.add(101, Event::CpuMigrations, 2);
        fake.add(101, Event::ContextSwitches, 5);
        fake.add(101, Event::TaskClock, 3000);
        fake.advance(101, 3000, 0);
        let t = r.read(&[id]).tasks.remove(0);
        assert_eq!(t.counters.on_cpu_ns, Some(3000));
        assert_eq!(t.counters.runqueue_wait_ns, Some(500));
        assert_eq!(t.counters.context_switches, Some(6), "timeslices 3 → 9");
        assert_eq!(t.counters.migrations, Some(2));
        assert_eq!(
            t.task_clock_ns, None,
            "schedstat's on-CPU time is the task clock: not opened"
        );
        assert_eq!(t.counters.cycles, None);
        assert_eq!(fake.open_groups(101), 1, "one group: the migrations");
    }

    #[test]
    fn without_schedstat_perf_counts_the_switches_and_the_task_clock() {
        let dir = fixture();
        for rel in [
            "proc/1/schedstat",
            "proc/100/task/100/schedstat",
            "proc/100/task/101/schedstat",
            "proc/200/task/200/schedstat",
        ] {
            std::fs::remove_file(dir.path().join(rel)).unwrap();
        }
        let fake = FakePerf::new().without_pmu();
        let mut r = reader_with(&dir, &fake);
        let id = TaskId {
            pid: 101,
            start_ticks: 510,
        };
        let t = r.read(&[id]).tasks.remove(0);
        assert_eq!(t.counters.on_cpu_ns, None);
        assert_eq!(
            t.counters.context_switches,
            Some(11),
            "status, from the task's start: perf has no baseline yet"
        );
        fake.add(101, Event::ContextSwitches, 5);
        fake.add(101, Event::TaskClock, 3000);
        fake.advance(101, 3000, 0);
        let t = r.read(&[id]).tasks.remove(0);
        assert_eq!(t.counters.context_switches, Some(5), "perf, not status");
        assert_eq!(t.task_clock_ns, Some(3000));
    }
}
