//! The cost of observing tasks: how long one [`TaskReader::read`] of N
//! live threads takes, with `/proc` and the perf software counters, and
//! what share of one core that is at the rate `run` and the daemon really
//! read: a full read at each observation (the
//! policy's interval) and between them as the duty allows
//! ([`full_reads_per_interval`]) when tasks ran, and only the activity
//! cgroup's CPU time, every [`SUBSAMPLE`], when none did. The target is
//! under 1 % of one core for 1000 threads that all ran. Shared by the
//! criterion bench (`benches/observe.rs`) and `ecosched bench observe`.
//!
//! At most [`MAX_TASKS`] threads: each spawned thread takes about four
//! memory mappings (stack, guard page, signal stack and its guard), and
//! 20,000 of them exceed the kernel's default `vm.max_map_count` (65,530),
//! where thread creation fails deep inside the runtime.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::mounts::MountTable;
use crate::perf::SystemPerf;
use crate::platform::{full_reads_per_interval, SUBSAMPLE};
use crate::runcgroup::{AcctMount, RunCgroup};
use crate::tasks::{HostFacts, TaskReader};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most threads `bench observe` spawns (see the module docs).
pub const MAX_TASKS: usize = 10_000;

/// Why `n` tasks cannot be benchmarked here, if they cannot: more than
/// [`MAX_TASKS`], or more descriptors than the open-file limit allows
/// (two `/proc` files and at most the three perf software events of each
/// thread — one where `schedstat` counts the rest — after raising the
/// soft limit to the hard one).
pub fn check_tasks(n: usize) -> Result<(), String> {
    if n == 0 {
        return Err("--tasks must be at least 1".into());
    }
    if n > MAX_TASKS {
        return Err(format!(
            "--tasks {n} is above the limit of {MAX_TASKS}: each thread takes about four memory mappings and the kernel's default vm.max_map_count (65,530) would be exceeded"
        ));
    }
    let limit = crate::limits::raise_nofile().map_err(|e| e.to_string())?;
    let per_task = 2 + crate::perf::Event::SOFTWARE.len() as u64;
    let needed = n as u64 * per_task + 64;
    if needed > limit.now {
        return Err(format!(
            "--tasks {n} needs up to {needed} open files ({per_task} per thread) but the hard limit (ulimit -Hn) is {}; raise it or observe at most {} tasks",
            limit.now,
            limit.now.saturating_sub(64) / per_task
        ));
    }
    Ok(())
}

/// N threads of this process that sleep until dropped: real tasks to observe.
/// [`SleepingThreads::wake_all`] makes each run briefly, so the next read
/// sees every task changed (the reader's most expensive path).
pub struct SleepingThreads {
    stop: Arc<AtomicBool>,
    wakeups: Arc<AtomicUsize>,
    handles: Vec<JoinHandle<()>>,
    tids: BTreeSet<u32>,
}

impl SleepingThreads {
    /// Start `n` parked threads (64 KiB stacks, so thousands are cheap).
    pub fn spawn(n: usize) -> std::io::Result<SleepingThreads> {
        let stop = Arc::new(AtomicBool::new(false));
        let wakeups = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let mut handles = Vec::with_capacity(n);
        for i in 0..n {
            let stop = Arc::clone(&stop);
            let woken = Arc::clone(&wakeups);
            let tx = tx.clone();
            let handle = std::thread::Builder::new()
                .name(format!("observed-{i}"))
                .stack_size(64 * 1024)
                .spawn(move || {
                    let tid = u32::try_from(nix::unistd::gettid().as_raw()).unwrap_or(0);
                    // The receiver outlives every sender in `spawn`.
                    let _ = tx.send(tid);
                    drop(tx);
                    while !stop.load(Ordering::Acquire) {
                        std::thread::park();
                        woken.fetch_add(1, Ordering::AcqRel);
                    }
                })?;
            handles.push(handle);
        }
        drop(tx);
        let tids = rx.iter().take(n).collect();
        Ok(SleepingThreads {
            stop,
            wakeups,
            handles,
            tids,
        })
    }

    /// Wake every thread once and wait until each has run and gone back
    /// to sleep-bound work.
    pub fn wake_all(&self) {
        let target = self.wakeups.load(Ordering::Acquire) + self.handles.len();
        for handle in &self.handles {
            handle.thread().unpark();
        }
        while self.wakeups.load(Ordering::Acquire) < target {
            std::thread::yield_now();
        }
    }

    /// Their thread IDs.
    pub fn tids(&self) -> &BTreeSet<u32> {
        &self.tids
    }
}

impl Drop for SleepingThreads {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        for handle in self.handles.drain(..) {
            handle.thread().unpark();
            // A thread that panicked has nothing left to clean up.
            let _ = handle.join();
        }
    }
}

/// What observing N tasks costs (`ecosched bench observe --json`), per
/// read and as a share of one core at the rate `run` and the daemon really
/// read (see [`crate::platform::full_reads_per_interval`]).
///
/// Three cases bracket a real workload: `busy` (every task ran since the
/// previous read: each is re-read in full), `idle` (none ran, and an
/// activity cgroup says so — `run`'s own cgroup, a daemon group's cgroup —
/// so only that cgroup's CPU time is read) and `idle_unwatched` (none ran,
/// no activity cgroup: every task's `schedstat` is still read). The
/// headline is `busy_cpu_percent`, the worst case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObserveCost {
    /// Tasks observed per read.
    pub tasks: usize,
    /// Tasks read per read, with a new reading or found unchanged (equal
    /// to `tasks` unless some failed).
    pub tasks_read: usize,
    /// Wall time of one read when every task ran since the last, ms.
    pub observe_ms: f64,
    /// CPU time of that read, ms (the observing thread's CPU clock).
    pub cpu_ms: f64,
    /// CPU time of finding the tasks again, threads already known, ms,
    /// as a run does it: from its processes (which its cgroup's
    /// `cgroup.procs` lists; here this one process). Every full read
    /// starts with it.
    pub rediscover_cpu_ms: f64,
    /// The same by a walk of `/proc`, ms: a run without a cgroup (no root)
    /// and a daemon group found by a match rule. It grows with every
    /// process of the machine, not just the observed ones.
    pub rediscover_walk_cpu_ms: f64,
    /// Wall time of one read when no task ran since the last, ms.
    pub idle_observe_ms: f64,
    /// CPU time of that read, ms.
    pub idle_cpu_ms: f64,
    /// CPU time of one look at an activity cgroup's CPU time, ms.
    pub look_cpu_ms: f64,
    /// The policy interval the shares are for, ms.
    pub interval_ms: f64,
    /// Full reads per interval when every task keeps running: the
    /// observation and the reads between that the duty allows.
    pub busy_reads_per_interval: u64,
    /// Share of one core when every task runs in every interval, %:
    /// (read + rediscovery) × reads per interval.
    pub busy_cpu_percent: f64,
    /// The same with rediscovery by a walk of `/proc`, %.
    pub busy_walk_cpu_percent: f64,
    /// Share of one core when no task runs, watched through an activity
    /// cgroup: one look per [`crate::platform::SUBSAMPLE`], %.
    pub idle_cpu_percent: f64,
    /// Share of one core when no task runs and no cgroup says so (a daemon
    /// group found by a match rule), %.
    pub idle_unwatched_cpu_percent: f64,
    /// Wall time of the first discovery of the process's threads, ms.
    pub discover_ms: f64,
    /// Reads averaged per case.
    pub rounds: u32,
    /// Whether the perf software counters were open (they are part of the cost).
    pub software_counters: bool,
}

/// CPU time of the calling thread, ns (`CLOCK_THREAD_CPUTIME_ID`, exact
/// to the call, unlike the tick-granular `schedstat` of a running thread).
fn thread_cpu_ns() -> Result<u64, LinuxError> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).map_err(|e| {
        LinuxError::Io {
            path: PathBuf::from("clock_gettime(CLOCK_THREAD_CPUTIME_ID)"),
            source: e.into(),
        }
    })?;
    let ns = i128::from(t.tv_sec()) * 1_000_000_000 + i128::from(t.tv_nsec());
    Ok(u64::try_from(ns).unwrap_or(0))
}

/// CPU time of `f` on this thread, ns, and its result.
fn cpu_of<T>(f: impl FnOnce() -> T) -> Result<(u64, T), LinuxError> {
    let before = thread_cpu_ns()?;
    let out = f();
    Ok((thread_cpu_ns()?.saturating_sub(before), out))
}

/// The cgroup an activity look reads here: this process's own accounting
/// cgroup (any such file costs the same to read; no privilege needed).
fn own_accounting_cgroup(root: &FsRoot) -> Result<RunCgroup, LinuxError> {
    let absent = || LinuxError::Absent {
        path: root.path("proc/mounts"),
        what: "a cpuacct or cgroup2 mount (the activity look reads one)".into(),
    };
    let mount = AcctMount::find(&MountTable::read(root)?).ok_or_else(absent)?;
    let dir = mount.cgroup_of(root, "self")?;
    RunCgroup::accounting(root, &dir).ok_or_else(absent)
}

/// Spawn `n` sleeping threads, then time `rounds` reads of all of them in
/// each case, after a first read that opens their files and perf groups;
/// the shares are for a policy interval of `interval`.
pub fn observe_cost(n: usize, rounds: u32, interval: Duration) -> Result<ObserveCost, LinuxError> {
    check_tasks(n).map_err(|e| LinuxError::Io {
        path: PathBuf::from("ecosched bench observe"),
        source: std::io::Error::other(e),
    })?;
    if interval.is_zero() {
        return Err(LinuxError::Io {
            path: PathBuf::from("ecosched bench observe"),
            source: std::io::Error::other("--interval-ms must be at least 1"),
        });
    }
    let root = FsRoot::live();
    let host = HostFacts::detect(&root)?;
    let activity = own_accounting_cgroup(&root)?;
    let threads = SleepingThreads::spawn(n).map_err(|source| LinuxError::Io {
        path: PathBuf::from("(spawning observed threads)"),
        source,
    })?;
    let mut reader = TaskReader::new(root.clone(), Box::new(SystemPerf), host);
    let software_counters = reader
        .availability()
        .has(ecosched_model::CounterKind::Migrations);
    let started = Instant::now();
    let all = reader.discover(std::process::id())?;
    let discover_ms = started.elapsed().as_secs_f64() * 1e3;
    let ids: Vec<_> = all
        .into_iter()
        .filter(|id| threads.tids().contains(&id.pid))
        .collect();
    reader.read(&ids);
    reader.read(&ids);
    let rounds = rounds.max(1);
    let mut tasks_read = usize::MAX;
    // (wall s, cpu ns) per case.
    let mut busy = (0.0, 0u64);
    let mut idle = (0.0, 0u64);
    let mut rediscover_ns = 0u64;
    let mut walk_ns = 0u64;
    let mut look_ns = 0u64;
    for _ in 0..rounds {
        // Every thread runs, then two reads: the first finds them all
        // changed, the second finds none.
        threads.wake_all();
        for case in [&mut busy, &mut idle] {
            let started = Instant::now();
            // As the platform reads: a task that did not move is not
            // made a new reading.
            let (ns, read) = cpu_of(|| reader.read_changed(&ids))?;
            case.0 += started.elapsed().as_secs_f64();
            case.1 += ns;
            tasks_read = tasks_read.min(read.tasks.len() + read.unchanged.len());
        }
        let (ns, found) = cpu_of(|| reader.discover_processes(&[std::process::id()]))?;
        found?;
        rediscover_ns += ns;
        let (ns, found) = cpu_of(|| reader.discover(std::process::id()))?;
        found?;
        walk_ns += ns;
        let (ns, usage) = cpu_of(|| activity.usage_ns(&root))?;
        usage?;
        look_ns += ns;
    }
    let per_read_ms = |s: f64| s * 1e3 / f64::from(rounds);
    let cpu_ms = |ns: u64| ns as f64 / 1e6 / f64::from(rounds);
    let interval_ms = interval.as_secs_f64() * 1e3;
    // `reads` reads of `ms` each per interval, as a share of one core.
    let percent = |ms: f64, reads: u64| ms * reads as f64 / interval_ms * 100.0;
    let busy_read_ms = cpu_ms(busy.1) + cpu_ms(rediscover_ns);
    let reads_at = |ms: f64| full_reads_per_interval(Duration::from_secs_f64(ms / 1e3), interval);
    let busy_reads_per_interval = reads_at(busy_read_ms);
    let busy_walk_ms = cpu_ms(busy.1) + cpu_ms(walk_ns);
    // Unwatched groups are found by a match rule: a walk of `/proc`.
    let idle_read_ms = cpu_ms(idle.1) + cpu_ms(walk_ns);
    let looks =
        u64::try_from(interval.as_nanos().div_ceil(SUBSAMPLE.as_nanos())).unwrap_or(u64::MAX);
    Ok(ObserveCost {
        tasks: ids.len(),
        tasks_read,
        observe_ms: per_read_ms(busy.0),
        cpu_ms: cpu_ms(busy.1),
        rediscover_cpu_ms: cpu_ms(rediscover_ns),
        rediscover_walk_cpu_ms: cpu_ms(walk_ns),
        idle_observe_ms: per_read_ms(idle.0),
        idle_cpu_ms: cpu_ms(idle.1),
        look_cpu_ms: cpu_ms(look_ns),
        interval_ms,
        busy_reads_per_interval,
        busy_cpu_percent: percent(busy_read_ms, busy_reads_per_interval),
        busy_walk_cpu_percent: percent(busy_walk_ms, reads_at(busy_walk_ms)),
        idle_cpu_percent: percent(cpu_ms(look_ns), looks),
        idle_unwatched_cpu_percent: percent(idle_read_ms, reads_at(idle_read_ms)),
        discover_ms,
        rounds,
        software_counters,
    })
}
