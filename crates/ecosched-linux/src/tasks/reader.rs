//! [`TaskReader`]: the tasks of a run, read at every look. It finds them
//! (`discovery`), keeps each one's files and perf groups open between
//! reads (`sample`) within the open-file limit, and forgets those that
//! exited.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::perf::{
    availability_from, probe_events_with, CounterAvailability, Event, EventProbe, PerfBackend,
};
use crate::tasks::discovery::TaskDiscovery;
use crate::tasks::host::HostFacts;
use crate::tasks::perf_groups::hardware_groups;
use crate::tasks::proc_file::ProcFile;
use crate::tasks::sample::{HowToRead, TaskReading, Tracked};
use ecosched_model::{CounterKind, CpuSet, PmuSpec, ProcessId, TaskId};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

/// The result of one [`TaskReader::read`].
#[derive(Debug, Default)]
pub struct Observation {
    /// Readings of the tasks still there, in the order asked for.
    pub tasks: Vec<TaskReading>,
    /// Tasks that exited (or whose PID now names another task) since the
    /// previous read; their perf groups are closed.
    pub gone: Vec<TaskId>,
    /// Tasks that could not be read for another reason (permission, a file
    /// that did not parse); they are kept and retried on the next read.
    pub errors: Vec<(TaskId, LinuxError)>,
    /// Tasks whose `schedstat` has not moved at all since their previous
    /// reading, and whose allowed CPUs ecosched has not changed: no
    /// reading is made for them ([`TaskReader::read_changed`] only).
    pub unchanged: Vec<TaskId>,
}

/// Open files kept for everything but tracked tasks (the journal, cgroup
/// and `/proc` files read in passing, a task's `status`, sockets): a
/// program with more threads than the limit covers leaves some of them
/// unobserved, never ecosched unable to read `/proc/stat`.
pub const FD_RESERVE: u64 = 64;

/// Discovers a command's tasks and reads them, keeping per-task baselines
/// and perf groups between reads.
pub struct TaskReader {
    root: FsRoot,
    backend: Box<dyn PerfBackend>,
    host: HostFacts,
    events: EventProbe,
    /// Model-specific events from a matching machine preset.
    raw: Vec<Event>,
    /// The matching preset's PMU (counters, fixed events), when known.
    pmu: Option<PmuSpec>,
    /// The hardware groups each task gets: events that fit the PMU
    /// together; the kernel rotates the groups when they do not all fit.
    hardware_groups: Vec<Vec<Event>>,
    availability: CounterAvailability,
    has_schedstat: bool,
    /// The software events each task's perf group counts: those `/proc`
    /// does not already give. With `schedstat`, its on-CPU time is the
    /// task clock and its timeslice count the context switches (each
    /// switch out is followed by one in), so only the migrations are left;
    /// every event dropped is a third less of a busy thread's group read.
    software: Vec<Event>,
    /// The root is this machine's `/`, so `sched_getaffinity` answers for it.
    live_affinity: bool,
    /// How many CPU numbers an affinity mask can use here (the highest
    /// `possible` CPU + 1).
    cpu_bits: usize,
    /// Bumped whenever ecosched changes affinities or cpusets, so that no
    /// allowed set read before is reused.
    affinity_epoch: u64,
    tracked: HashMap<TaskId, Tracked>,
    /// Counts reads; each tracked task keeps the count of the last read
    /// that asked for it.
    generation: u64,
    /// Which tasks there are, and the process of each.
    discovery: TaskDiscovery,
    /// Descriptors the tracked tasks may hold: the open-file limit less
    /// [`FD_RESERVE`].
    fd_budget: u64,
    /// Descriptors the tracked tasks hold.
    fds_held: u64,
}

/// Which counters a task's reading has on the machine at `root`, given
/// which perf events open there; and whether `/proc/<pid>/schedstat`
/// exists. What [`TaskReader::availability`] reports, and what
/// `ecosched doctor` reports without reading any task.
pub fn availability_here(root: &FsRoot, events: &EventProbe) -> (CounterAvailability, bool) {
    let mut availability = availability_from(events);
    let has_schedstat = root.exists("proc/self/schedstat") || root.exists("proc/1/schedstat");
    for kind in [CounterKind::OnCpuTime, CounterKind::RunqueueWait] {
        if has_schedstat {
            availability.add(kind);
        } else {
            availability.unavailable.retain(|(k, _)| *k != kind);
            availability.unavailable.push((
                kind,
                "no /proc/<pid>/schedstat (kernel built without CONFIG_SCHED_INFO)".into(),
            ));
        }
    }
    // `status` always has the voluntary/involuntary switch counts.
    availability.add(CounterKind::ContextSwitches);
    (availability, has_schedstat)
}

impl TaskReader {
    /// A reader over `root` counting with `backend`. Probes once which perf
    /// events open here ([`TaskReader::availability`]).
    pub fn new(root: FsRoot, backend: Box<dyn PerfBackend>, host: HostFacts) -> TaskReader {
        Self::with_raw_events(root, backend, host, Vec::new())
    }

    /// [`TaskReader::new`] that also counts `raw` model-specific events
    /// ([`Event::Raw`], from a machine preset that matches this CPU, see
    /// [`crate::pmu`]), each probed like the generic ones.
    pub fn with_raw_events(
        root: FsRoot,
        backend: Box<dyn PerfBackend>,
        host: HostFacts,
        raw: Vec<Event>,
    ) -> TaskReader {
        Self::with_pmu(root, backend, host, raw, None)
    }

    /// [`TaskReader::with_raw_events`] on a CPU that `pmu` describes: the
    /// hardware events are grouped to fit its counters
    /// ([`PmuSpec::multiplex_groups`]).
    pub fn with_pmu(
        root: FsRoot,
        backend: Box<dyn PerfBackend>,
        host: HostFacts,
        raw: Vec<Event>,
        pmu: Option<PmuSpec>,
    ) -> TaskReader {
        let events = probe_events_with(backend.as_ref(), &raw);
        let (availability, has_schedstat) = availability_here(&root, &events);
        let live_affinity = root.is_live() && root.dir() == std::path::Path::new("/");
        let cpu_bits = root
            .read("sys/devices/system/cpu/possible", "possible CPUs")
            .ok()
            .and_then(|text| CpuSet::parse_list(text.trim()).ok())
            .and_then(|set| set.iter().last())
            .map_or(nix::sched::CpuSet::count(), |last| last.0 as usize + 1);
        let hardware_groups = hardware_groups(&events, &raw, pmu.as_ref(), None);
        let software = events
            .usable(&Event::SOFTWARE)
            .into_iter()
            .filter(|e| !has_schedstat || !matches!(e, Event::TaskClock | Event::ContextSwitches))
            .collect();
        let discovery = TaskDiscovery::new(root.clone());
        TaskReader {
            root,
            backend,
            host,
            events,
            raw,
            pmu,
            hardware_groups,
            availability,
            has_schedstat,
            software,
            live_affinity,
            cpu_bits,
            affinity_epoch: 0,
            tracked: HashMap::new(),
            generation: 0,
            discovery,
            fd_budget: nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                .map_or(u64::MAX, |(soft, _)| soft.saturating_sub(FD_RESERVE)),
            fds_held: 0,
        }
    }

    /// Open only the hardware events of `kinds` (plus instructions and
    /// cycles, which every run reports) for tasks tracked from now on: a
    /// PMU counts few events at once, and every extra group is one more
    /// to multiplex.
    pub fn open_only(&mut self, kinds: &BTreeSet<CounterKind>) {
        self.hardware_groups =
            hardware_groups(&self.events, &self.raw, self.pmu.as_ref(), Some(kinds));
    }

    /// The hardware groups tasks get (for tests and the start-up notice).
    pub fn hardware_groups(&self) -> &[Vec<Event>] {
        &self.hardware_groups
    }

    /// Which counters will be measured and why the others will not (to be
    /// reported once at start).
    pub fn availability(&self) -> &CounterAvailability {
        &self.availability
    }

    /// The host facts this reader was given.
    pub fn host(&self) -> &HostFacts {
        &self.host
    }

    /// ecosched changed affinities or cpusets: read every task's allowed
    /// CPUs afresh at the next read, sleeping or not.
    pub fn affinity_changed(&mut self) {
        self.affinity_epoch = self.affinity_epoch.wrapping_add(1);
    }

    /// Tasks currently tracked (with open files and perf groups).
    pub fn tracked(&self) -> usize {
        self.tracked.len()
    }

    /// The process that forked process `pid` (its `ppid`, with that
    /// process's start time), or `None` when either is gone.
    pub fn parent_of(&self, pid: u32) -> Option<TaskId> {
        self.discovery.parent_of(pid)
    }

    /// Every thread of `root_pid`'s process and of all its descendants, as
    /// found through the `ppid` links of `/proc/*/stat`.
    ///
    /// Processes found once stay members while they live, even after their
    /// parent exits and they are re-parented to init: a daemonising child of
    /// the command is still the command's work. A member whose PID now has a
    /// different start time is a new task and is dropped. `Gone` when
    /// neither `root_pid` nor any earlier member is alive.
    pub fn discover(&mut self, root_pid: u32) -> Result<Vec<TaskId>, LinuxError> {
        self.discovery.discover(root_pid)
    }

    /// [`TaskReader::discover`] from several roots at once, in one walk of
    /// `/proc` (the daemon's groups: every process of a cgroup, every
    /// process matching a rule). `Gone` names the first root when none of
    /// them, nor any earlier member, is alive.
    pub fn discover_roots(&mut self, roots: &[u32]) -> Result<Vec<TaskId>, LinuxError> {
        self.discovery.discover_roots(roots)
    }

    /// Every thread of exactly the processes `pids` (a cgroup's
    /// `cgroup.procs`: children are born in it, so no walk of `/proc` for
    /// descendants is needed, and a process that leaves the cgroup leaves
    /// the group). `Gone` names the first when none is alive.
    pub fn discover_processes(&mut self, pids: &[u32]) -> Result<Vec<TaskId>, LinuxError> {
        self.discovery.discover_processes(pids)
    }

    /// The process a discovered thread belongs to (leader's TID and start
    /// time), as the last discovery found it.
    pub fn process_of(&self, id: &TaskId) -> Option<ProcessId> {
        self.discovery.process_of(id)
    }

    /// Sizes of the reader's per-task maps (to check they stay bounded by
    /// the tasks alive, not the run's length).
    #[doc(hidden)]
    pub fn map_sizes(&self) -> [(&'static str, usize); 4] {
        let [members, tgids, threads] = self.discovery.map_sizes();
        [
            ("reader.tracked", self.tracked.len()),
            members,
            tgids,
            threads,
        ]
    }

    /// Open a task's files, check its identity, open its perf groups.
    fn track(&self, id: TaskId) -> Result<Tracked, LinuxError> {
        let tgid = self.discovery.tgid_of(id)?;
        let process_start = self.discovery.process_start(tgid, id)?;
        let dir = format!("proc/{tgid}/task/{}", id.pid);
        let stat = ProcFile::open(&self.root, &format!("{dir}/stat"), id.pid)?;
        let schedstat = if self.has_schedstat {
            Some(ProcFile::open(
                &self.root,
                &format!("{dir}/schedstat"),
                id.pid,
            )?)
        } else {
            None
        };
        let status = ProcFile::transient(&self.root, &format!("{dir}/status"));
        let mut tracked = Tracked::new(tgid, process_start, stat, schedstat, status);
        // Identity first: a reused PID is never counted.
        tracked.stat(id)?;
        for events in std::iter::once(&self.software).chain(&self.hardware_groups) {
            let events = events.clone();
            if events.is_empty() {
                continue;
            }
            match self.backend.open_group(id.pid, &events) {
                Ok(group) => tracked.add_group(events, group),
                Err(e) if e.is_gone() => return Err(LinuxError::Gone { pid: id.pid }),
                // Opened alone at start but not here (e.g. out of counters
                // or descriptors): this task's fields stay None.
                Err(_) => {}
            }
        }
        // The groups were opened by PID: the task must still be the one the
        // held `stat` file is bound to, or they may count a newcomer.
        tracked.stat(id)?;
        Ok(tracked)
    }

    /// Stop tracking a task, closing its files and perf events.
    fn untrack(&mut self, id: TaskId) -> Option<Tracked> {
        let t = self.tracked.remove(&id)?;
        self.fds_held = self.fds_held.saturating_sub(t.descriptors());
        Some(t)
    }

    /// Drop everything known about a task that exited or was replaced.
    fn forget(&mut self, id: TaskId) {
        self.untrack(id);
        self.discovery.forget(id);
    }

    fn read_one(
        &mut self,
        id: TaskId,
        skip_unchanged: bool,
    ) -> Result<Option<TaskReading>, LinuxError> {
        let how = HowToRead {
            live_affinity: self.live_affinity,
            affinity_epoch: self.affinity_epoch,
            cpu_bits: self.cpu_bits,
            skip_unchanged,
        };
        // One hash lookup for a tracked task (every task but new ones).
        if let Some(t) = self.tracked.get_mut(&id) {
            t.asked = self.generation;
            return t.sample(id, how);
        }
        let events: usize =
            self.hardware_groups.iter().map(Vec::len).sum::<usize>() + self.software.len();
        let need = 2 + events as u64;
        if self.fds_held + need > self.fd_budget {
            return Err(LinuxError::Io {
                path: PathBuf::from("RLIMIT_NOFILE"),
                source: std::io::Error::other(format!(
                    "out of file descriptors: {} held for {} observed threads, {FD_RESERVE} kept for the rest; raise the open-file limit (ulimit -Hn)",
                    self.fds_held,
                    self.tracked.len()
                )),
            });
        }
        let mut t = self.track(id)?;
        t.asked = self.generation;
        self.fds_held += t.descriptors();
        self.tracked.entry(id).or_insert(t).sample(id, how)
    }

    /// [`TaskReader::read`], but a task whose `schedstat` has not moved
    /// since its previous reading (and whose allowed CPUs ecosched has not
    /// changed) gets no new reading, only a place in
    /// [`Observation::unchanged`]: the caller keeps the previous one. Most
    /// threads of most programs sleep, and this is their whole cost.
    pub fn read_changed(&mut self, tasks: &[TaskId]) -> Observation {
        self.read_with(tasks, true)
    }

    /// Read `tasks`: one [`TaskReading`] per live task, with counter deltas
    /// since its previous read. Tasks that exited — asked for now, or
    /// tracked before and no longer asked for — are listed in `gone` and
    /// forgotten (perf groups closed); tracked tasks that are not asked for
    /// but still alive are forgotten silently.
    pub fn read(&mut self, tasks: &[TaskId]) -> Observation {
        self.read_with(tasks, false)
    }

    fn read_with(&mut self, tasks: &[TaskId], skip_unchanged: bool) -> Observation {
        let mut out = Observation::default();
        self.generation = self.generation.wrapping_add(1);
        for &id in tasks {
            match self.read_one(id, skip_unchanged) {
                Ok(Some(r)) => out.tasks.push(r),
                Ok(None) => out.unchanged.push(id),
                Err(LinuxError::Gone { .. }) => {
                    self.forget(id);
                    out.gone.push(id);
                }
                Err(e) => out.errors.push((id, e)),
            }
        }
        // Tracked tasks not asked for this time (their process left the
        // group, say) are found by the mark each read leaves, in one pass
        // with no lookups (building a set of the asked tasks and looking
        // every tracked one up in it costs a few percent of a read). Their
        // descriptors are freed only now, so at the open-file limit a
        // newcomer may wait one read for them.
        let generation = self.generation;
        let dropped: Vec<TaskId> = self
            .tracked
            .iter()
            .filter(|(_, t)| t.asked != generation)
            .map(|(id, _)| *id)
            .collect();
        for id in dropped {
            if let Some(mut t) = self.untrack(id) {
                if matches!(t.stat(id), Err(LinuxError::Gone { .. })) {
                    self.forget(id);
                    out.gone.push(id);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::perf::FakePerf;
    use crate::tasks::testing::{fixture, reader_with, recorded_reader};

    #[test]
    fn a_reused_pid_is_gone_and_gone_tasks_close_their_groups() {
        let dir = fixture();
        let fake = FakePerf::new();
        let mut r = reader_with(&dir, &fake);
        let stale = TaskId {
            pid: 101,
            start_ticks: 509,
        };
        let obs = r.read(&[stale]);
        assert_eq!(obs.gone, vec![stale]);
        assert!(obs.tasks.is_empty());
        assert_eq!(fake.open_groups(101), 0, "nothing opened on a reused PID");

        let id = TaskId {
            pid: 200,
            start_ticks: 900,
        };
        assert_eq!(r.read(&[id]).tasks.len(), 1);
        assert_eq!(
            fake.open_groups(200),
            4,
            "software and three hardware pairs"
        );
        // No longer asked for: forgotten, its groups closed.
        assert!(r.read(&[]).gone.is_empty());
        assert_eq!(fake.open_groups(200), 0);
        assert_eq!(r.tracked(), 0);
        std::fs::remove_dir_all(dir.path().join("proc/200")).unwrap();
        std::fs::remove_file(dir.path().join("proc/200/status")).ok();
        let obs = r.read(&[id]);
        assert_eq!(obs.gone, vec![id]);
    }

    #[test]
    fn a_task_that_exits_while_its_counters_open_is_gone() {
        let dir = fixture();
        let fake = FakePerf::new();
        let mut r = reader_with(&dir, &fake);
        fake.exit(200);
        let id = TaskId {
            pid: 200,
            start_ticks: 900,
        };
        let obs = r.read(&[id]);
        assert_eq!(obs.gone, vec![id]);
        assert!(obs.errors.is_empty() && obs.tasks.is_empty());
        assert_eq!((r.tracked(), fake.open_groups(200)), (0, 0));
    }

    #[test]
    fn unreadable_files_are_errors_not_gone() {
        let dir = fixture();
        std::fs::write(dir.path().join("proc/100/task/100/schedstat"), "garbage\n").unwrap();
        let mut r = recorded_reader(&dir);
        let obs = r.read(&[TaskId {
            pid: 100,
            start_ticks: 500,
        }]);
        assert!(obs.gone.is_empty());
        let (_, err) = &obs.errors[0];
        assert!(
            err.to_string().contains("proc/100/task/100/schedstat"),
            "{err}"
        );
    }
}
