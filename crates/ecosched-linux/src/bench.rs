//! The cost of observing tasks (issue 3, item 8): how long one
//! [`TaskReader::read`] of N live threads takes, with `/proc` and the perf
//! software counters, and what share of one core that is when done once a
//! second. The target is under 1 % for 1000 tasks. Shared by the criterion
//! bench (`benches/observe.rs`) and `ecosched bench observe`.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::perf::SystemPerf;
use crate::procfs;
use crate::tasks::{HostFacts, TaskReader};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Instant;

/// N threads of this process that sleep until dropped: real tasks to observe.
pub struct SleepingThreads {
    stop: Arc<AtomicBool>,
    handles: Vec<JoinHandle<()>>,
    tids: BTreeSet<u32>,
}

impl SleepingThreads {
    /// Start `n` parked threads (64 KiB stacks, so thousands are cheap).
    pub fn spawn(n: usize) -> std::io::Result<SleepingThreads> {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let mut handles = Vec::with_capacity(n);
        for i in 0..n {
            let stop = Arc::clone(&stop);
            let tx = tx.clone();
            let handle = std::thread::Builder::new()
                .name(format!("observed-{i}"))
                .stack_size(64 * 1024)
                .spawn(move || {
                    let tid = u32::try_from(nix::unistd::gettid().as_raw()).unwrap_or(0);
                    // The receiver outlives every sender in `spawn`.
                    let _ = tx.send(tid);
                    while !stop.load(Ordering::Acquire) {
                        std::thread::park();
                    }
                })?;
            handles.push(handle);
        }
        drop(tx);
        let tids = rx.iter().collect();
        Ok(SleepingThreads {
            stop,
            handles,
            tids,
        })
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObserveCost {
    /// Tasks observed per read.
    pub tasks: usize,
    /// Readings returned per read (equal to `tasks` unless some failed).
    pub tasks_read: usize,
    /// Wall time of one read, ms (mean over `rounds`).
    pub observe_ms: f64,
    /// CPU time of one read, ms (the observing thread's on-CPU time from
    /// its own schedstat, mean over `rounds`).
    pub cpu_ms: f64,
    /// Share of one core spent observing once a second, %.
    pub cpu_percent_at_1hz: f64,
    /// Wall time of one discovery of the process's threads, ms.
    pub discover_ms: f64,
    /// Reads averaged.
    pub rounds: u32,
    /// Whether the perf software counters were open (they are part of the cost).
    pub software_counters: bool,
}

/// On-CPU nanoseconds of the calling thread.
fn thread_cpu_ns(root: &FsRoot) -> Result<u64, LinuxError> {
    let rel = "proc/thread-self/schedstat";
    let text = root.read(rel, "own schedstat")?;
    procfs::schedstat::parse(&text)
        .map(|s| s.on_cpu_ns)
        .map_err(|e| LinuxError::parse(&PathBuf::from(rel), &text, e.reason))
}

/// Spawn `n` sleeping threads, then time `rounds` reads of all of them
/// after a first read that opens their files and perf groups.
pub fn observe_cost(n: usize, rounds: u32) -> Result<ObserveCost, LinuxError> {
    let root = FsRoot::live();
    let host = HostFacts::detect(&root)?;
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
    let rounds = rounds.max(1);
    let mut tasks_read = usize::MAX;
    let cpu_before = thread_cpu_ns(&root)?;
    let started = Instant::now();
    for _ in 0..rounds {
        tasks_read = tasks_read.min(reader.read(&ids).tasks.len());
    }
    let wall_s = started.elapsed().as_secs_f64();
    let cpu_ns = thread_cpu_ns(&root)?.saturating_sub(cpu_before);
    let cpu_ms = cpu_ns as f64 / 1e6 / f64::from(rounds);
    Ok(ObserveCost {
        tasks: ids.len(),
        tasks_read,
        observe_ms: wall_s * 1e3 / f64::from(rounds),
        cpu_ms,
        cpu_percent_at_1hz: cpu_ms / 1000.0 * 100.0,
        discover_ms,
        rounds,
        software_counters,
    })
}
