//! The cost of observing tasks (issue 3, item 8; issue 16): how long one
//! [`TaskReader::read`] of N live threads takes, with `/proc` and the perf
//! software counters, and what share of one core that is at the rate `run`
//! reads ([`READ_PERIOD_MS`], every 100 ms) — and, for comparison with
//! older figures, once a second. The target is under 1 % of one core for
//! 1000 threads that all ran, at the real rate. Shared by the criterion
//! bench (`benches/observe.rs`) and `ecosched bench observe`.
//!
//! At most [`MAX_TASKS`] threads: each spawned thread takes about four
//! memory mappings (stack, guard page, signal stack and its guard), and
//! 20,000 of them exceed the kernel's default `vm.max_map_count` (65,530),
//! where thread creation fails deep inside the runtime.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::perf::SystemPerf;
use crate::tasks::{HostFacts, TaskReader};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Instant;

/// How often `ecosched run` reads every task's counters (the platform's
/// `SUBSAMPLE`), ms.
pub const READ_PERIOD_MS: f64 = 100.0;

/// The most threads `bench observe` spawns (see the module docs).
pub const MAX_TASKS: usize = 10_000;

/// Why `n` tasks cannot be benchmarked here, if they cannot: more than
/// [`MAX_TASKS`], or more descriptors than the open-file limit allows
/// (two `/proc` files and the perf events of each thread, after raising
/// the soft limit to the hard one).
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
            "--tasks {n} needs about {needed} open files ({per_task} per thread) but the hard limit (ulimit -Hn) is {}; raise it or observe at most {} tasks",
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

/// What one observation of N tasks costs (`ecosched bench observe --json`).
///
/// Two cases bracket a real workload: `idle` (no task ran since the
/// previous read — the reader re-reads only `schedstat`) and `busy` (every
/// task ran — `stat` is re-read for each). The headline `observe_ms` and
/// `cpu_percent_at_read_rate` are the busy, worst, case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObserveCost {
    /// Tasks observed per read.
    pub tasks: usize,
    /// Readings returned per read (equal to `tasks` unless some failed).
    pub tasks_read: usize,
    /// Wall time of one read when every task ran since the last, ms.
    pub observe_ms: f64,
    /// CPU time of that read, ms (the observing thread's CPU clock).
    pub cpu_ms: f64,
    /// Share of one core spent observing once a second, %, from `cpu_ms`.
    pub cpu_percent_at_1hz: f64,
    /// How often `run` reads, ms ([`READ_PERIOD_MS`]).
    pub read_period_ms: f64,
    /// Share of one core spent observing at that rate, %: the real cost.
    pub cpu_percent_at_read_rate: f64,
    /// The same in the idle case, %.
    pub idle_cpu_percent_at_read_rate: f64,
    /// Wall time of one read when no task ran since the last, ms.
    pub idle_observe_ms: f64,
    /// Share of one core at 1 Hz in that idle case, %.
    pub idle_cpu_percent_at_1hz: f64,
    /// Wall time of one discovery of the process's threads, ms.
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

/// Spawn `n` sleeping threads, then time `rounds` reads of all of them in
/// each case, after a first read that opens their files and perf groups.
pub fn observe_cost(n: usize, rounds: u32) -> Result<ObserveCost, LinuxError> {
    check_tasks(n).map_err(|e| LinuxError::Io {
        path: PathBuf::from("ecosched bench observe"),
        source: std::io::Error::other(e),
    })?;
    let root = FsRoot::live();
    let host = HostFacts::detect(&root)?;
    let threads = SleepingThreads::spawn(n).map_err(|source| LinuxError::Io {
        path: PathBuf::from("(spawning observed threads)"),
        source,
    })?;
    let mut reader = TaskReader::new(root, Box::new(SystemPerf), host);
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
    for _ in 0..rounds {
        // Every thread runs, then two reads: the first finds them all
        // changed, the second finds none.
        threads.wake_all();
        for case in [&mut busy, &mut idle] {
            let cpu_before = thread_cpu_ns()?;
            let started = Instant::now();
            tasks_read = tasks_read.min(reader.read(&ids).tasks.len());
            case.0 += started.elapsed().as_secs_f64();
            case.1 += thread_cpu_ns()?.saturating_sub(cpu_before);
        }
    }
    let per_read_ms = |s: f64| s * 1e3 / f64::from(rounds);
    let cpu_ms = |ns: u64| ns as f64 / 1e6 / f64::from(rounds);
    // At one read a second, x ms of CPU is x / 1000 of a core.
    let percent_at_1hz = |ms: f64| ms / 1000.0 * 100.0;
    let percent_at_read_rate = |ms: f64| ms / READ_PERIOD_MS * 100.0;
    Ok(ObserveCost {
        tasks: ids.len(),
        tasks_read,
        observe_ms: per_read_ms(busy.0),
        cpu_ms: cpu_ms(busy.1),
        cpu_percent_at_1hz: percent_at_1hz(cpu_ms(busy.1)),
        read_period_ms: READ_PERIOD_MS,
        cpu_percent_at_read_rate: percent_at_read_rate(cpu_ms(busy.1)),
        idle_cpu_percent_at_read_rate: percent_at_read_rate(cpu_ms(idle.1)),
        idle_observe_ms: per_read_ms(idle.0),
        idle_cpu_percent_at_1hz: percent_at_1hz(cpu_ms(idle.1)),
        discover_ms,
        rounds,
        software_counters,
    })
}
