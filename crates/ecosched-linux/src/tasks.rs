//! The tasks ecosched manages and what they did: discovery of a command's
//! process tree (every process it spawned, and all their threads) and one
//! reading per thread per interval — state, CPU, allowed CPUs, nice, and
//! counter deltas from `/proc/<tgid>/task/<tid>/{stat,schedstat,status}` and
//! per-thread perf groups ([`crate::perf`]).
//!
//! Identity is [`TaskId`] = thread ID + start time (`stat` field 22). A
//! thread whose start time is not the expected one is another task that
//! got a recycled PID and is reported [`LinuxError::Gone`], never read or
//! acted on. Once a task has been verified its `schedstat` and `stat` are
//! kept open: an open `/proc` file stays bound to the task it was opened
//! for (reads fail with `ESRCH` after it exits), so later reads cannot
//! drift to a new task with the same PID — and re-reading an open file with
//! `pread` costs a fraction of opening it again (see the `observe`
//! benchmark). `status`, read only where nothing cheaper gives its
//! answer (see [`Tracked::sample`]), is opened, read and closed, right
//! after the held `schedstat` proved the task still there: a thread costs
//! two `/proc` descriptors and its perf events, not three and its events.
//!
//! Threads are read under `/proc/<tgid>/task/<tid>/`, not `/proc/<tid>/`:
//! the latter is the thread-group view, whose `stat` sums over every thread
//! of the process (O(threads) per read, and the wrong numbers for a thread).

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::perf::{
    availability_from, probe_events_with, scaled_delta, CounterAvailability, Event, EventProbe,
    GroupReading, PerfBackend, PerfGroup,
};
use crate::procfs::{self, LoadAvg, SchedStat, Stat, Status};
use ecosched_model::{CounterKind, Counters, CpuId, CpuSet, PmuSpec, ProcessId, TaskId, TaskState};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// Facts about the host that turn kernel units into seconds; detected once
/// and injected, so parsers and recorded machines do not depend on the
/// machine running the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostFacts {
    /// Clock ticks per second (`sysconf(_SC_CLK_TCK)`), the unit of `stat`
    /// times.
    pub ticks_per_s: u64,
    /// Boot time, seconds since the Unix epoch (`btime` in `/proc/stat`).
    pub boot_time_s: u64,
}

impl HostFacts {
    /// Ticks per second from `sysconf` and boot time from `proc/stat` under
    /// `root`.
    pub fn detect(root: &FsRoot) -> Result<HostFacts, LinuxError> {
        let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .and_then(|t| u64::try_from(t).ok())
            .filter(|&t| t > 0)
            .ok_or_else(|| LinuxError::Absent {
                path: PathBuf::from("sysconf(_SC_CLK_TCK)"),
                what: "clock ticks per second".into(),
            })?;
        let rel = "proc/stat";
        let text = root.read(rel, "boot time (btime)")?;
        let boot_time_s = procfs::parse_btime(&text)
            .map_err(|e| LinuxError::parse(&root.path(rel), &text, e.reason))?;
        Ok(HostFacts {
            ticks_per_s: ticks,
            boot_time_s,
        })
    }

    /// A tick count (e.g. a start time) in seconds.
    pub fn ticks_to_s(&self, ticks: u64) -> f64 {
        ticks as f64 / self.ticks_per_s.max(1) as f64
    }

    /// When a task that started `start_ticks` after boot started, in seconds
    /// since the Unix epoch.
    pub fn start_epoch_s(&self, start_ticks: u64) -> f64 {
        self.boot_time_s as f64 + self.ticks_to_s(start_ticks)
    }
}

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

/// A `/proc` file re-read from offset 0: kept open, or (`file` `None`)
/// opened for each read and closed after it, to spare a descriptor.
struct ProcFile {
    path: PathBuf,
    file: Option<File>,
}

/// Bytes read onto the stack before falling back to the heap: enough for
/// the files read at every observation (a `stat` line is about 300 bytes,
/// `schedstat` 30), not for `status` (about 1.5 KiB, read on a task's
/// first reading only, and then twice). A buffer per file (two per
/// thread) spread thousands of buffers over memory, each read into a
/// cold one; this one stays in the cache, and is small to clear.
const STACK_READ: usize = 1024;

impl ProcFile {
    fn open(root: &FsRoot, rel: &str, pid: u32) -> Result<ProcFile, LinuxError> {
        let path = root.path(rel);
        match File::open(&path) {
            Ok(file) => Ok(ProcFile {
                path,
                file: Some(file),
            }),
            Err(e) => Err(io_error(path, e, pid)),
        }
    }

    /// A file opened only while it is read.
    fn transient(root: &FsRoot, rel: &str) -> ProcFile {
        ProcFile {
            path: root.path(rel),
            file: None,
        }
    }

    /// Re-read the whole file and parse it; a parse failure names the file.
    /// A short read is the end: `/proc` files are generated whole on each
    /// read from offset 0 (seq_file), so no second `pread` is needed to
    /// see end-of-file. A file that fills the buffer is read again from
    /// the start into one twice as large, never continued at an offset,
    /// which could join two generations of its text.
    fn parse<T>(
        &mut self,
        pid: u32,
        parse: impl Fn(&str) -> Result<T, procfs::ProcParseError>,
    ) -> Result<T, LinuxError> {
        let opened;
        let file = match &self.file {
            Some(f) => f,
            None => {
                opened = File::open(&self.path).map_err(|e| io_error(self.path.clone(), e, pid))?;
                &opened
            }
        };
        let mut stack = [0u8; STACK_READ];
        let n = self.read_start(file, &mut stack, pid)?;
        if n < stack.len() {
            return self.parse_bytes(&stack[..n], parse);
        }
        let mut heap = vec![0u8; 2 * STACK_READ];
        loop {
            let n = self.read_start(file, &mut heap, pid)?;
            if n < heap.len() {
                return self.parse_bytes(&heap[..n], parse);
            }
            heap.resize(2 * heap.len(), 0);
        }
    }

    /// One `pread` from offset 0; the bytes read.
    fn read_start(&self, file: &File, buf: &mut [u8], pid: u32) -> Result<usize, LinuxError> {
        loop {
            match file.read_at(buf, 0) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_error(self.path.clone(), e, pid)),
            }
        }
    }

    fn parse_bytes<T>(
        &self,
        bytes: &[u8],
        parse: impl Fn(&str) -> Result<T, procfs::ProcParseError>,
    ) -> Result<T, LinuxError> {
        // `from_utf8` first: `from_utf8_lossy` walks the text in chunks and
        // was a tenth of a busy thread's user-space cost; only a command
        // name can hold bytes that are not UTF-8.
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(bytes),
        };
        parse(&text).map_err(|e| LinuxError::parse(&self.path, &text, e.reason))
    }
}

/// A task's `/proc` file, read whole; the task is [`LinuxError::Gone`] when
/// the file is absent or the task exited between the open and the read.
fn read_task_file(root: &FsRoot, rel: &str, what: &str, pid: u32) -> Result<String, LinuxError> {
    root.read(rel, what).map_err(|e| match e {
        LinuxError::Absent { .. } => LinuxError::Gone { pid },
        e => gone_if_exited(e, pid),
    })
}

/// `ESRCH` reading a task's file: it exited after the file was opened
/// (seen in a walk of `/proc` while other processes exit).
fn gone_if_exited(e: LinuxError, pid: u32) -> LinuxError {
    match e {
        LinuxError::Io { source, .. } if source.raw_os_error() == Some(nix::libc::ESRCH) => {
            LinuxError::Gone { pid }
        }
        e => e,
    }
}

/// `ENOENT`/`ESRCH` on a task's file means the task went away.
fn io_error(path: PathBuf, e: std::io::Error, pid: u32) -> LinuxError {
    if e.kind() == ErrorKind::NotFound || e.raw_os_error() == Some(nix::libc::ESRCH) {
        LinuxError::Gone { pid }
    } else {
        LinuxError::from_io(&path, e, "root or CAP_SYS_PTRACE")
    }
}

/// A perf group on one task and its previous reading.
struct OpenGroup {
    events: Vec<Event>,
    group: Box<dyn PerfGroup>,
    prev: Option<GroupReading>,
}

impl OpenGroup {
    /// Read the group now (`None` when the read fails).
    fn read(&mut self) -> Option<GroupReading> {
        self.group.read().ok()
    }

    /// Hand `each` the scaled delta of every event from the previous
    /// reading to `now` (all `None` the first time or when the read
    /// failed), and keep `now` as the baseline. A callback, not a `Vec`:
    /// this runs for every thread that ran.
    fn deltas(&mut self, now: Option<GroupReading>, mut each: impl FnMut(Event, Option<u64>)) {
        for (i, e) in self.events.iter().enumerate() {
            let d = match (&self.prev, &now) {
                (Some(p), Some(n)) => scaled_delta(p, n, i),
                _ => None,
            };
            each(*e, d);
        }
        if now.is_some() {
            self.prev = now;
        }
    }
}

/// What a read of one task may skip and how it asks for allowed CPUs:
/// the reader's settings at the time of the read.
#[derive(Debug, Clone, Copy)]
struct HowToRead {
    /// The root is this machine's `/`, so `sched_getaffinity` answers for it.
    live_affinity: bool,
    /// The reader's affinity epoch ([`TaskReader::affinity_changed`]).
    affinity_epoch: u64,
    /// CPU numbers an affinity mask can use here.
    cpu_bits: usize,
    /// A task whose `schedstat` has not moved gets no new reading.
    skip_unchanged: bool,
}

/// Everything kept about a task between reads.
struct Tracked {
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
    /// The reader's [`TaskReader::generation`] when it was last asked for.
    asked: u64,
    groups: Vec<OpenGroup>,
}

/// Readings of a task that ran, on a CPU of the set it was allowed, that
/// reuse that set before it is asked for again ([`Tracked::sample`]).
pub const AFFINITY_RECHECK: u32 = 4;

/// The CPUs thread `tid` may run on, from `sched_getaffinity(2)`, looking
/// at the first `cpu_bits` CPUs only (those the kernel can have: testing
/// all 1024 bits of the mask was a fifth of a busy thread's read).
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
    /// File descriptors it holds: its `/proc` files and perf events.
    fn descriptors(&self) -> u64 {
        let events: usize = self.groups.iter().map(|g| g.events.len()).sum();
        1 + u64::from(self.schedstat.is_some()) + events as u64
    }

    fn stat(&mut self, id: TaskId) -> Result<Stat, LinuxError> {
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
    ///   before) means it has not run, and nothing else is read (a single counter costs about half a
    ///   `schedstat` read; most threads of most programs sleep, and in
    ///   the daemon's soak these reads were half its CPU). Its one blind
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
    fn sample(&mut self, id: TaskId, how: HowToRead) -> Result<Option<TaskReading>, LinuxError> {
        let HowToRead {
            live_affinity,
            affinity_epoch,
            cpu_bits,
            skip_unchanged,
        } = how;
        // A task last read running may have been reading in its exit path:
        // its perf counters stop (`perf_event_exit_task`) and its last
        // `schedstat` may be booked before it turns zombie, so neither
        // shortcut may stand in for a fresh `stat` (CI once never saw a
        // finished command exit, its last reading `R`). A zombie never
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
            // anything since ([`TaskReader::affinity_changed`]) and the
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

/// How a task's hardware events are split into perf groups. A group is
/// scheduled onto the PMU all or nothing, and the kernel refuses one that
/// could never fit (EINVAL), so events go in groups the PMU can count at
/// once, and the kernel rotates the groups:
/// - on a CPU a machine preset describes, its fixed-counter events ride in
///   every group and the others fill its general-purpose counters, each
///   cache's references beside its misses ([`PmuSpec::multiplex_groups`]);
/// - elsewhere, pairs that policies read as ratios share a group
///   (instructions with cycles, each cache's references with its misses),
///   which fits any PMU with two counters.
///
/// `only` narrows the events to those kinds (instructions and cycles are
/// always kept); `None` opens every usable one.
pub fn hardware_groups(
    probe: &EventProbe,
    raw: &[Event],
    pmu: Option<&PmuSpec>,
    only: Option<&BTreeSet<CounterKind>>,
) -> Vec<Vec<Event>> {
    let keep = |e: &Event| {
        let k = e.counter_kind();
        let asked = match only {
            None => true,
            Some(o) => o.contains(&k),
        };
        asked || matches!(k, CounterKind::Instructions | CounterKind::Cycles)
    };
    let generic: Vec<Event> = probe
        .usable(&Event::HARDWARE)
        .into_iter()
        .filter(keep)
        .collect();
    let raw: Vec<Event> = probe.usable(raw).into_iter().filter(keep).collect();
    let event_of = |k: CounterKind| {
        generic
            .iter()
            .chain(&raw)
            .copied()
            .find(|e| e.counter_kind() == k)
    };
    if let Some(pmu) = pmu {
        let kinds: Vec<CounterKind> = generic
            .iter()
            .chain(&raw)
            .map(|e| e.counter_kind())
            .collect();
        return pmu
            .multiplex_groups(&kinds)
            .into_iter()
            .map(|g| g.into_iter().filter_map(event_of).collect::<Vec<Event>>())
            .filter(|g| !g.is_empty())
            .collect();
    }
    let pairs = [
        [CounterKind::Instructions, CounterKind::Cycles],
        [CounterKind::LlcReferences, CounterKind::LlcMisses],
        [CounterKind::L1dReferences, CounterKind::L1dMisses],
    ];
    let mut groups: Vec<Vec<Event>> = pairs
        .iter()
        .map(|pair| {
            pair.iter()
                .filter_map(|&k| event_of(k))
                .collect::<Vec<Event>>()
        })
        .filter(|g| !g.is_empty())
        .collect();
    groups.extend(raw.iter().map(|&e| vec![e]));
    groups
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
    /// Processes found by earlier discoveries (pid → start ticks): they stay
    /// members after their parent exits and they are re-parented away.
    members: BTreeMap<u32, u64>,
    /// Thread group of each task seen by the last discovery.
    tgids: HashMap<TaskId, u32>,
    /// Descriptors the tracked tasks may hold: the open-file limit less
    /// [`FD_RESERVE`].
    fd_budget: u64,
    /// Descriptors the tracked tasks hold.
    fds_held: u64,
    /// The same, by (thread group, thread ID), so a discovery does not
    /// re-read the start time of threads it already knows.
    threads: HashMap<(u32, u32), TaskId>,
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
        let mut availability = availability_from(&events);
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
        let live_affinity = root.is_live() && root.dir() == std::path::Path::new("/");
        let cpu_bits = root
            .read("sys/devices/system/cpu/possible", "possible CPUs")
            .ok()
            .and_then(|text| CpuSet::parse_list(text.trim()).ok())
            .and_then(|set| set.iter().last())
            .map_or(nix::sched::CpuSet::count(), |last| last.0 as usize + 1);
        // `status` always has the voluntary/involuntary switch counts.
        availability.add(CounterKind::ContextSwitches);
        let hardware_groups = hardware_groups(&events, &raw, pmu.as_ref(), None);
        let software = events
            .usable(&Event::SOFTWARE)
            .into_iter()
            .filter(|e| !has_schedstat || !matches!(e, Event::TaskClock | Event::ContextSwitches))
            .collect();
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
            members: BTreeMap::new(),
            tgids: HashMap::new(),
            threads: HashMap::new(),
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

    /// The system load average.
    pub fn loadavg(&self) -> Result<LoadAvg, LinuxError> {
        let rel = "proc/loadavg";
        let text = self.root.read(rel, "load average")?;
        procfs::loadavg::parse(&text)
            .map_err(|e| LinuxError::parse(&self.root.path(rel), &text, e.reason))
    }

    /// The process that forked process `pid` (its `ppid`, with that
    /// process's start time), or `None` when either is gone.
    pub fn parent_of(&self, pid: u32) -> Option<TaskId> {
        let ppid = self.process_stat(pid).ok()?.ppid;
        let start_ticks = self.process_stat(ppid).ok()?.start_ticks;
        Some(TaskId {
            pid: ppid,
            start_ticks,
        })
    }

    /// `stat` of process `pid`'s leader thread (its ppid and start time are
    /// the process's), or `Gone`. Read as `/proc/<pid>/task/<pid>/stat`:
    /// the thread-group view `/proc/<pid>/stat` sums CPU times over every
    /// thread in the kernel, so for a 2000-thread program each discovery
    /// paid 2000 threads' worth; the process view is the fallback.
    fn process_stat(&self, pid: u32) -> Result<Stat, LinuxError> {
        let mut rel = format!("proc/{pid}/task/{pid}/stat");
        let text = match self.root.read(&rel, "process") {
            Ok(t) => t,
            Err(LinuxError::Absent { .. }) => {
                rel = format!("proc/{pid}/stat");
                read_task_file(&self.root, &rel, "process", pid)?
            }
            Err(e) => return Err(gone_if_exited(e, pid)),
        };
        procfs::stat::parse(&text)
            .map_err(|e| LinuxError::parse(&self.root.path(&rel), &text, e.reason))
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
        self.discover_roots(&[root_pid])
    }

    /// [`TaskReader::discover`] from several roots at once, in one walk of
    /// `/proc` (the daemon's groups: every process of a cgroup, every
    /// process matching a rule). `Gone` names the first root when none of
    /// them, nor any earlier member, is alive.
    pub fn discover_roots(&mut self, roots: &[u32]) -> Result<Vec<TaskId>, LinuxError> {
        let root_pid = roots.first().copied().unwrap_or(0);
        let mut start_of = BTreeMap::new();
        let mut threads_of = BTreeMap::new();
        let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for name in self.root.list("proc")? {
            let Ok(pid) = name.parse::<u32>() else {
                continue;
            };
            match self.process_stat(pid) {
                Ok(s) => {
                    start_of.insert(pid, s.start_ticks);
                    threads_of.insert(pid, s.num_threads);
                    children.entry(s.ppid).or_default().push(pid);
                }
                Err(LinuxError::Gone { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let mut queue: Vec<u32> = self
            .members
            .iter()
            .filter(|(pid, start)| start_of.get(pid) == Some(start))
            .map(|(pid, _)| *pid)
            .collect();
        queue.extend(roots.iter().filter(|r| start_of.contains_key(r)).copied());
        if queue.is_empty() {
            return Err(LinuxError::Gone { pid: root_pid });
        }
        let mut members = BTreeMap::new();
        while let Some(pid) = queue.pop() {
            let Some(&start) = start_of.get(&pid) else {
                continue;
            };
            if members.insert(pid, start).is_some() {
                continue;
            }
            queue.extend(children.get(&pid).into_iter().flatten().copied());
        }
        self.threads_of(members, &threads_of)
    }

    /// Every thread of exactly the processes `pids` (a cgroup's
    /// `cgroup.procs`: children are born in it, so no walk of `/proc` for
    /// descendants is needed, and a process that leaves the cgroup leaves
    /// the group). `Gone` names the first when none is alive.
    pub fn discover_processes(&mut self, pids: &[u32]) -> Result<Vec<TaskId>, LinuxError> {
        let mut members = BTreeMap::new();
        let mut threads_of = BTreeMap::new();
        for &pid in pids {
            match self.process_stat(pid) {
                Ok(s) => {
                    members.insert(pid, s.start_ticks);
                    threads_of.insert(pid, s.num_threads);
                }
                Err(LinuxError::Gone { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        if members.is_empty() {
            return Err(LinuxError::Gone {
                pid: pids.first().copied().unwrap_or(0),
            });
        }
        self.threads_of(members, &threads_of)
    }

    /// The threads of `members` (pid → start ticks), whose processes have
    /// `threads_of` threads each now; they become the members.
    fn threads_of(
        &mut self,
        members: BTreeMap<u32, u64>,
        threads_of: &BTreeMap<u32, u32>,
    ) -> Result<Vec<TaskId>, LinuxError> {
        // The threads each process had at the last discovery: a process
        // that is the same one (start time) with as many threads now is
        // not listed again — a 2000-thread program's `task/` directory is
        // most of a discovery. A thread that replaced one that exited is
        // found one read late: the read finds the old one gone and forgets
        // it, and the next discovery sees the count differ.
        let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
        for &(tgid, _) in self.threads.keys() {
            *counts.entry(tgid).or_default() += 1;
        }
        let same = |pid: &u32, start: &u64| {
            self.members.get(pid) == Some(start)
                && counts.get(pid).copied() == threads_of.get(pid).map(|&n| n as usize)
        };
        if members == self.members && members.iter().all(|(p, s)| same(p, s)) {
            // Nothing to list and nothing to rebuild (the usual case).
            let mut tasks: Vec<TaskId> = self.threads.values().copied().collect();
            tasks.sort();
            return Ok(tasks);
        }
        let mut known: BTreeMap<u32, Vec<TaskId>> = BTreeMap::new();
        for (&(tgid, _), &id) in &self.threads {
            known.entry(tgid).or_default().push(id);
        }
        let mut tasks = Vec::with_capacity(self.threads.len());
        let mut tgids = HashMap::with_capacity(self.threads.len());
        let mut threads = HashMap::with_capacity(self.threads.len());
        for (&pid, &start) in &members {
            if let (true, Some(ids)) = (same(&pid, &start), known.get(&pid)) {
                for &id in ids {
                    tgids.insert(id, pid);
                    threads.insert((pid, id.pid), id);
                    tasks.push(id);
                }
                continue;
            }
            for name in self.root.list(&format!("proc/{pid}/task"))? {
                let Ok(tid) = name.parse::<u32>() else {
                    continue;
                };
                // A thread already known keeps its start time; a recycled TID
                // is caught by the start-time check when it is read, which
                // forgets it, so the next discovery reads it afresh.
                let id = match self.threads.get(&(pid, tid)).copied() {
                    Some(id) => id,
                    None => match self.thread_start(pid, tid) {
                        Ok(start_ticks) => TaskId {
                            pid: tid,
                            start_ticks,
                        },
                        Err(LinuxError::Gone { .. }) => continue,
                        Err(e) => return Err(e),
                    },
                };
                tgids.insert(id, pid);
                threads.insert((pid, tid), id);
                tasks.push(id);
            }
        }
        self.members = members;
        self.tgids = tgids;
        self.threads = threads;
        tasks.sort();
        Ok(tasks)
    }

    fn thread_start(&self, tgid: u32, tid: u32) -> Result<u64, LinuxError> {
        let rel = format!("proc/{tgid}/task/{tid}/stat");
        let text = read_task_file(&self.root, &rel, "thread", tid)?;
        procfs::stat::parse(&text)
            .map(|s| s.start_ticks)
            .map_err(|e| LinuxError::parse(&self.root.path(&rel), &text, e.reason))
    }

    /// The start time of process `tgid`'s leader, which `thread` belongs
    /// to: from the last discovery, which read every member process's
    /// `stat` anyway, else from `/proc/<tgid>/stat` (the leader's line,
    /// present while any thread of the process lives).
    fn process_start(&self, tgid: u32, thread: TaskId) -> Result<u64, LinuxError> {
        if thread.pid == tgid {
            return Ok(thread.start_ticks);
        }
        if let Some(&start) = self.members.get(&tgid) {
            return Ok(start);
        }
        match self.process_stat(tgid) {
            Ok(s) => Ok(s.start_ticks),
            Err(LinuxError::Gone { .. }) => Err(LinuxError::Gone { pid: thread.pid }),
            Err(e) => Err(e),
        }
    }

    /// The process a discovered thread belongs to (leader's TID and start
    /// time), as the last discovery found it.
    pub fn process_of(&self, id: &TaskId) -> Option<ProcessId> {
        let tgid = *self.tgids.get(id)?;
        let start_ticks = if tgid == id.pid {
            id.start_ticks
        } else {
            *self.members.get(&tgid)?
        };
        Some(ProcessId { tgid, start_ticks })
    }

    /// Sizes of the reader's per-task maps (to check they stay bounded by
    /// the tasks alive, not the run's length).
    #[doc(hidden)]
    pub fn map_sizes(&self) -> [(&'static str, usize); 4] {
        [
            ("reader.tracked", self.tracked.len()),
            ("reader.members", self.members.len()),
            ("reader.tgids", self.tgids.len()),
            ("reader.threads", self.threads.len()),
        ]
    }

    /// The process a thread belongs to, from its `status`.
    fn tgid_of(&self, id: TaskId) -> Result<u32, LinuxError> {
        if let Some(&tgid) = self.tgids.get(&id) {
            return Ok(tgid);
        }
        let rel = format!("proc/{}/status", id.pid);
        let text = match self.root.read(&rel, "task") {
            Ok(t) => t,
            Err(LinuxError::Absent { .. }) => return Err(LinuxError::Gone { pid: id.pid }),
            Err(e) => return Err(e),
        };
        procfs::status::parse(&text)
            .map(|s| s.tgid)
            .map_err(|e| LinuxError::parse(&self.root.path(&rel), &text, e.reason))
    }

    /// Open a task's files, check its identity, open its perf groups.
    fn track(&self, id: TaskId) -> Result<Tracked, LinuxError> {
        let tgid = self.tgid_of(id)?;
        let process_start = self.process_start(tgid, id)?;
        let dir = format!("proc/{tgid}/task/{}", id.pid);
        let mut tracked = Tracked {
            tgid,
            process_start,
            stat: ProcFile::open(&self.root, &format!("{dir}/stat"), id.pid)?,
            schedstat: if self.has_schedstat {
                Some(ProcFile::open(
                    &self.root,
                    &format!("{dir}/schedstat"),
                    id.pid,
                )?)
            } else {
                None
            },
            status: ProcFile::transient(&self.root, &format!("{dir}/status")),
            prev_sched: None,
            prev_switches: None,
            last_stat: None,
            last_allowed: None,
            allowed_age: 0,
            first: true,
            asked: 0,
            groups: Vec::new(),
        };
        // Identity first: a reused PID is never counted.
        tracked.stat(id)?;
        for events in std::iter::once(&self.software).chain(&self.hardware_groups) {
            let events = events.clone();
            if events.is_empty() {
                continue;
            }
            match self.backend.open_group(id.pid, &events) {
                Ok(group) => tracked.groups.push(OpenGroup {
                    events,
                    group,
                    prev: None,
                }),
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
        if let Some(tgid) = self.tgids.remove(&id) {
            self.threads.remove(&(tgid, id.pid));
        }
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
        // every tracked one up in it was a few percent of a read). Their
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

    /// A recorded `/proc` with one process 100 (start 500) with threads 100
    /// and 101, and its child 200 (start 900).
    fn fixture() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let line = |pid: u32, comm: &str, ppid: u32, start: u64, cpu: u32| {
            format!("{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194304 98 0 0 0 7 3 0 0 20 -5 2 0 {start} 5767168 256 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 {cpu} 0 0 0 0 0 1 1 1 1 1 1 1 0\n")
        };
        let status = |tgid: u32, ppid: u32, v: u64| {
            format!("Name:\tx\nTgid:\t{tgid}\nPPid:\t{ppid}\nCpus_allowed_list:\t0-3\nvoluntary_ctxt_switches:\t{v}\nnonvoluntary_ctxt_switches:\t1\n")
        };
        let write = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write("proc/stat", "cpu 1 2 3\nbtime 1700000000\n");
        write("proc/loadavg", "0.50 0.25 0.10 2/80 300\n");
        write("proc/1/schedstat", "1 2 3\n");
        write("proc/1/stat", &line(1, "init", 0, 1, 0));
        write("proc/100/stat", &line(100, "my app", 1, 500, 2));
        write("proc/200/stat", &line(200, "child (x)", 100, 900, 3));
        for (tgid, tid, start, ppid) in
            [(100, 100, 500, 1), (100, 101, 510, 1), (200, 200, 900, 100)]
        {
            let d = format!("proc/{tgid}/task/{tid}");
            write(&format!("{d}/stat"), &line(tid, "t", ppid, start, 1));
            write(&format!("{d}/schedstat"), "1000 200 3\n");
            write(&format!("{d}/status"), &status(tgid, ppid, 10));
            write(&format!("proc/{tid}/status"), &status(tgid, ppid, 10));
        }
        write("proc/1/task/1/stat", &line(1, "init", 0, 1, 0));
        dir
    }

    fn host() -> HostFacts {
        HostFacts {
            ticks_per_s: 100,
            boot_time_s: 1_700_000_000,
        }
    }

    /// A reader of the recorded tree in `dir`, counting with `perf`.
    fn reader_with(dir: &tempfile::TempDir, perf: &FakePerf) -> TaskReader {
        TaskReader::new(FsRoot::recorded(dir.path()), Box::new(perf.clone()), host())
    }

    /// A reader of the recorded tree in `dir`, with no perf counts.
    fn recorded_reader(dir: &tempfile::TempDir) -> TaskReader {
        reader_with(dir, &FakePerf::new())
    }

    #[test]
    fn discovers_the_tree_with_its_threads() {
        let dir = fixture();
        let mut r = recorded_reader(&dir);
        let ids = r.discover(100).unwrap();
        let pids: Vec<_> = ids.iter().map(|t| (t.pid, t.start_ticks)).collect();
        assert_eq!(pids, vec![(100, 500), (101, 510), (200, 900)]);
        let procs: Vec<_> = ids
            .iter()
            .map(|t| r.process_of(t).map(|p| (p.tgid, p.start_ticks)))
            .collect();
        assert_eq!(
            procs,
            vec![Some((100, 500)), Some((100, 500)), Some((200, 900))]
        );
        let fresh = || recorded_reader(&dir);
        assert_eq!(fresh().discover(200).unwrap().len(), 1);
        assert!(matches!(
            fresh().discover(4242),
            Err(LinuxError::Gone { pid: 4242 })
        ));
        let load = r.loadavg().unwrap();
        assert_eq!((load.runnable, load.total), (2, 80));
        assert_eq!(
            HostFacts::detect(&FsRoot::recorded(dir.path()))
                .unwrap()
                .boot_time_s,
            1_700_000_000
        );
        assert_eq!(host().start_epoch_s(500), 1_700_000_005.0);
    }

    #[test]
    fn orphans_stay_members_until_their_pid_is_reused() {
        let dir = fixture();
        let mut r = recorded_reader(&dir);
        assert_eq!(r.discover(100).unwrap().len(), 3);
        // The command exits; its child is re-parented to init.
        std::fs::remove_dir_all(dir.path().join("proc/100")).unwrap();
        // The kernel shows it in the process's and its leader thread's stat.
        let stat = dir.path().join("proc/200/stat");
        let leader = dir.path().join("proc/200/task/200/stat");
        let text = std::fs::read_to_string(&stat)
            .unwrap()
            .replacen(" S 100 ", " S 1 ", 1);
        std::fs::write(&stat, &text).unwrap();
        std::fs::write(&leader, &text).unwrap();
        let ids = r.discover(100).unwrap();
        assert_eq!(
            ids,
            vec![TaskId {
                pid: 200,
                start_ticks: 900
            }]
        );
        // PID 200 now names a newer process: not ours.
        std::fs::write(&stat, text.replacen(" 900 ", " 950 ", 1)).unwrap();
        std::fs::write(&leader, text.replacen(" 900 ", " 950 ", 1)).unwrap();
        assert!(matches!(
            r.discover(100),
            Err(LinuxError::Gone { pid: 100 })
        ));
    }

    #[test]
    fn a_recycled_thread_id_is_rediscovered_with_its_new_start() {
        let dir = fixture();
        let mut r = recorded_reader(&dir);
        let old = TaskId {
            pid: 101,
            start_ticks: 510,
        };
        assert!(r.discover(100).unwrap().contains(&old));
        let stat = dir.path().join("proc/100/task/101/stat");
        let text = std::fs::read_to_string(&stat).unwrap();
        std::fs::write(&stat, text.replacen(" 510 ", " 520 ", 1)).unwrap();
        assert!(
            r.discover(100).unwrap().contains(&old),
            "known threads are not re-read"
        );
        assert_eq!(r.read(&[old]).gone, vec![old]);
        let ids = r.discover(100).unwrap();
        assert!(
            ids.contains(&TaskId {
                pid: 101,
                start_ticks: 520
            }),
            "{ids:?}"
        );
        assert!(!ids.contains(&old));
    }

    #[test]
    fn a_file_larger_than_the_stack_buffer_is_read_whole() {
        let dir = fixture();
        let status = dir.path().join("proc/100/task/101/status");
        let text = std::fs::read_to_string(&status).unwrap();
        // Past the stack buffer and past the first heap buffer, with the
        // line the reading needs at the end.
        let padding = format!("Padding:\t{}\n", "x".repeat(3 * STACK_READ));
        let long = text.replacen("Cpus_allowed_list:\t0-3\n", "", 1)
            + &padding
            + "Cpus_allowed_list:\t1-2\n";
        std::fs::write(&status, long).unwrap();
        let mut r = recorded_reader(&dir);
        let id = TaskId {
            pid: 101,
            start_ticks: 510,
        };
        let obs = r.read(&[id]);
        assert!(obs.errors.is_empty(), "{:?}", obs.errors);
        assert_eq!(obs.tasks[0].allowed.to_list(), "1-2");
    }

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

    /// Fake perf without a PMU, and without software events unless
    /// `software`.
    fn fake_perf(software: bool) -> FakePerf {
        let fake = FakePerf::new().without_pmu();
        if !software {
            for event in Event::SOFTWARE {
                fake.set_unavailable(event, nix::libc::ENOENT);
            }
        }
        fake
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
    fn a_process_is_listed_again_only_when_its_thread_count_changes() {
        let dir = fixture();
        let mut r = recorded_reader(&dir);
        let tids = |ids: Vec<TaskId>| ids.iter().map(|t| t.pid).collect::<Vec<_>>();
        assert_eq!(tids(r.discover(100).unwrap()), vec![100, 101, 200]);
        // A thread the count does not announce is not looked for...
        let write = |rel: &str, text: String| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let t102 = "102 (t) S 1 100 100 0 -1 4194304 98 0 0 0 7 3 0 0 20 -5 2 0 520 5767168 256 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 1 1 1 1 1 1 1 0\n";
        write("proc/100/task/102/stat", t102.to_string());
        assert_eq!(tids(r.discover(100).unwrap()), vec![100, 101, 200]);
        // ... and is found as soon as the process says it has three.
        let leader = dir.path().join("proc/100/task/100/stat");
        let text = std::fs::read_to_string(&leader).unwrap();
        std::fs::write(&leader, text.replacen(" -5 2 0 ", " -5 3 0 ", 1)).unwrap();
        assert_eq!(tids(r.discover(100).unwrap()), vec![100, 101, 102, 200]);
        // Exactly a cgroup's processes: no descendants.
        assert_eq!(tids(r.discover_processes(&[200]).unwrap()), vec![200]);
        assert!(matches!(
            r.discover_processes(&[999]),
            Err(LinuxError::Gone { pid: 999 })
        ));
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

    #[test]
    fn hardware_counters_are_scaled_for_multiplexing() {
        let dir = fixture();
        let fake = FakePerf::new();
        let mut r = reader_with(&dir, &fake);
        assert!(r.availability().has(CounterKind::Instructions));
        let id = TaskId {
            pid: 100,
            start_ticks: 500,
        };
        assert_eq!(r.read(&[id]).tasks[0].counters.instructions, None);
        assert_eq!(
            fake.open_groups(100),
            4,
            "a software group and three hardware pairs"
        );
        fake.add(100, Event::Instructions, 1_000);
        fake.add(100, Event::Cycles, 2_000);
        fake.add(100, Event::LlcMisses, 10);
        fake.advance(100, 4_000, 1_000);
        // The task ran: its schedstat moved.
        let schedstat = dir.path().join("proc/100/task/100/schedstat");
        std::fs::write(&schedstat, "5000 200 4\n").unwrap();
        let c = r.read(&[id]).tasks.remove(0).counters;
        assert_eq!(c.instructions, Some(4_000));
        assert_eq!(c.cycles, Some(8_000));
        assert_eq!(c.llc_misses, Some(40));
        assert_eq!(c.llc_references, Some(0));
        assert_eq!(c.cpi(), Some(2.0));
        // Enabled but never on the PMU: no estimate rather than zero.
        fake.advance(100, 1_000, 0);
        std::fs::write(&schedstat, "6000 200 5\n").unwrap();
        let c = r.read(&[id]).tasks.remove(0).counters;
        assert_eq!((c.instructions, c.migrations), (None, Some(0)));
    }

    /// The simulator's `q6600` preset's PMU, as far as this test needs it.
    fn core2_pmu() -> ecosched_model::PmuSpec {
        ecosched_model::PmuSpec {
            cpuid: Some("GenuineIntel-6-0F".into()),
            counters: 2,
            fixed: vec![CounterKind::Instructions, CounterKind::Cycles],
            events: vec![
                ecosched_model::PmuEvent {
                    kind: CounterKind::Instructions,
                    name: "instructions".into(),
                    raw: None,
                },
                ecosched_model::PmuEvent {
                    kind: CounterKind::LinesIn,
                    name: "L2_LINES_IN.SELF.ANY".into(),
                    raw: Some(0x7024),
                },
            ],
        }
    }

    fn raw_for(cpuinfo_root: &std::path::Path) -> Vec<Event> {
        let id = crate::pmu::cpuid(&FsRoot::recorded(cpuinfo_root)).unwrap();
        match crate::pmu::raw_events(&core2_pmu(), &id) {
            crate::pmu::RawEvents::Matched(e) => e,
            crate::pmu::RawEvents::NotOpened(_) => Vec::new(),
        }
    }

    #[test]
    fn hardware_events_are_grouped_to_fit_the_pmu() {
        let lines_in = Event::Raw {
            kind: CounterKind::LinesIn,
            config: 0x7024,
        };
        let fake = FakePerf::new();
        let probe = probe_events_with(&fake, &[lines_in]);
        // Core 2: instructions and cycles on fixed counters ride in every
        // group; two general-purpose counters take the rest in turns, each
        // cache's references beside its misses.
        let groups = hardware_groups(&probe, &[lines_in], Some(&core2_pmu()), None);
        assert_eq!(groups.len(), 3, "{groups:?}");
        for g in &groups {
            assert!(
                g.starts_with(&[Event::Instructions, Event::Cycles]),
                "{g:?}"
            );
            assert!(g.len() <= 4, "{g:?}");
        }
        assert_eq!(
            groups[0][2..],
            [Event::LlcReferences, Event::LlcMisses],
            "{groups:?}"
        );
        // Only what a policy reads: LLC misses alone need one group.
        let only: BTreeSet<CounterKind> = [CounterKind::LlcMisses].into();
        let groups = hardware_groups(&probe, &[lines_in], Some(&core2_pmu()), Some(&only));
        assert_eq!(
            groups,
            vec![vec![Event::Instructions, Event::Cycles, Event::LlcMisses]]
        );
        // No preset for this CPU: pairs, which fit any two-counter PMU.
        let groups = hardware_groups(&probe, &[], None, None);
        assert_eq!(groups.len(), 3);
        assert!(groups.iter().all(|g| g.len() == 2), "{groups:?}");
    }

    #[test]
    fn on_a_matching_cpu_raw_events_are_opened_with_their_config_and_fill_counters() {
        let dir = fixture();
        let q6600 =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cpuinfo-core2-q6600");
        let raw = raw_for(&q6600);
        let lines_in = Event::Raw {
            kind: CounterKind::LinesIn,
            config: 0x7024,
        };
        assert_eq!(raw, vec![lines_in]);
        let fake = FakePerf::new();
        let mut r = TaskReader::with_raw_events(
            FsRoot::recorded(dir.path()),
            Box::new(fake.clone()),
            host(),
            raw,
        );
        assert!(r.availability().has(CounterKind::LinesIn));
        assert!(!r.availability().has(CounterKind::MemTransactions));
        let id = TaskId {
            pid: 100,
            start_ticks: 500,
        };
        assert_eq!(
            r.read(&[id]).tasks[0].counters.lines_in,
            None,
            "no baseline"
        );
        assert!(fake.opened(100, lines_in), "opened as PERF_TYPE_RAW 0x7024");
        assert_eq!(
            fake.open_groups(100),
            5,
            "software, three hardware pairs and the raw group"
        );
        fake.add(100, lines_in, 1234);
        fake.advance(100, 2_000, 2_000);
        std::fs::write(
            dir.path().join("proc/100/task/100/schedstat"),
            "5000 200 4\n",
        )
        .unwrap();
        let c = r.read(&[id]).tasks.remove(0).counters;
        assert_eq!(c.lines_in, Some(1234));
        assert_eq!(c.mem_transactions, None);
    }

    #[test]
    fn on_another_cpu_raw_events_are_not_opened_and_the_counter_stays_missing() {
        let dir = fixture();
        // This development VM's CPU (family 6, model 0xA7).
        let vm = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(vm.path().join("proc")).unwrap();
        std::fs::write(
            vm.path().join("proc/cpuinfo"),
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 167\n",
        )
        .unwrap();
        let raw = raw_for(vm.path());
        assert!(raw.is_empty());
        let fake = FakePerf::new();
        let mut r = TaskReader::with_raw_events(
            FsRoot::recorded(dir.path()),
            Box::new(fake.clone()),
            host(),
            raw,
        );
        r.read(&[TaskId {
            pid: 100,
            start_ticks: 500,
        }]);
        assert_eq!(fake.open_groups(100), 4, "no raw group");
        assert!(!r.availability().has(CounterKind::LinesIn));
        let needs = ecosched_model::Requirements {
            counters: [CounterKind::LinesIn].into(),
            ..Default::default()
        };
        let caps = ecosched_model::Capabilities {
            counters: r.availability().available.clone(),
            power: None,
            affinity: true,
            frequency: false,
            gang: true,
        };
        assert!(needs.missing(&caps).join(";").contains("LinesIn"));
        let why: Vec<_> = r
            .availability()
            .unavailable
            .iter()
            .filter(|(k, _)| *k == CounterKind::LinesIn)
            .collect();
        assert!(why[0].1.contains("raw event"), "{why:?}");
    }

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
    fn a_task_that_exits_between_open_and_read_is_gone() {
        // What a walk of `/proc` meets while other processes exit: the
        // file opened, then the read answered ESRCH.
        let exited = LinuxError::Io {
            path: PathBuf::from("/proc/7/task/7/stat"),
            source: std::io::Error::from_raw_os_error(nix::libc::ESRCH),
        };
        assert!(matches!(
            gone_if_exited(exited, 7),
            LinuxError::Gone { pid: 7 }
        ));
        let other = LinuxError::Io {
            path: PathBuf::from("/proc/7/task/7/stat"),
            source: std::io::Error::from_raw_os_error(nix::libc::EIO),
        };
        assert!(matches!(gone_if_exited(other, 7), LinuxError::Io { .. }));
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
