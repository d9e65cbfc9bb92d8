//! What `ecosched run` itself costs under a policy, measured for real:
//! the whole control loop at the policy's own interval (observation,
//! snapshot, decision, metrics, the waits between), not one part of it.
//! `ecosched bench observe` starts `ecosched run --policy P -- ecosched
//! bench observe --hold-threads N` (N sleeping threads, see
//! [`hold_threads`]), lets it settle, and reads the CPU time of the
//! `run` process's threads (`/proc/<pid>/task/*/schedstat`, ns) over a
//! window: the share of one core that watching N sleeping threads costs.

use crate::bench::SleepingThreads;
use crate::error::LinuxError;
use serde::Serialize;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One policy's row of `ecosched bench observe`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyCost {
    /// The policy.
    pub policy: String,
    /// Parameters given to it (`key=value`), beyond its defaults.
    pub params: Vec<String>,
    /// Its interval, ms (its own default).
    pub interval_ms: f64,
    /// Sleeping threads the run watched.
    pub threads: usize,
    /// Length of the measured window, s.
    pub seconds: f64,
    /// ecosched's CPU time over the window as a share of one core, %;
    /// `None` when the policy cannot run here (see `refused`).
    pub cpu_percent: Option<f64>,
    /// Why the run ended before the window did (the first line of its
    /// error), when it did.
    pub refused: Option<String>,
}

/// How long the run settles before the window opens: starting, taking on
/// every thread and its first reads are a one-off cost.
const SETTLE: Duration = Duration::from_secs(3);

/// CPU time of every thread of process `pid` so far, ns (the first
/// field of each thread's `schedstat`); `None` once it has exited.
fn process_cpu_ns(pid: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0u64;
    for task in tasks.flatten() {
        // A thread that exits while it is listed counts nothing.
        if let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) {
            let ns = text.split_whitespace().next().and_then(|f| f.parse().ok());
            total += ns.unwrap_or(0);
        }
    }
    Some(total)
}

/// Wait `span` unless `child` exits first; `false` when it did.
fn wait_running(child: &mut Child, span: Duration) -> bool {
    let until = Instant::now() + span;
    while Instant::now() < until {
        if !matches!(child.try_wait(), Ok(None)) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// Run `exe run --policy <policy> [--param P]... --state-dir <state> --
/// exe bench observe --hold-threads <threads> --hold-s ...` and measure
/// the `run` process's CPU over `window` after it settled; the run is
/// then ended with `SIGTERM` (passed on to the threads, its changes
/// undone). A run that ends early (the policy cannot run here) gives a
/// row with `refused`.
pub fn policy_cost(
    exe: &Path,
    policy: &str,
    params: &[String],
    interval: Duration,
    threads: usize,
    window: Duration,
    state_dir: &Path,
) -> Result<PolicyCost, LinuxError> {
    let hold_s = (SETTLE + window).as_secs() + 30;
    let mut command = Command::new(exe);
    command.args(["run", "--policy", policy]);
    for p in params {
        command.args(["--param", p]);
    }
    command
        .arg("--state-dir")
        .arg(state_dir)
        .arg("--")
        .arg(exe)
        .args(["bench", "observe", "--hold-threads"])
        .arg(threads.to_string())
        .args(["--hold-s", &hold_s.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|source| LinuxError::Io {
        path: exe.to_path_buf(),
        source,
    })?;
    // Drained by a thread, so that the run never blocks on a full pipe.
    let stderr = child.stderr.take().map(|mut pipe| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    });
    let pid = child.id();
    let mut measured = None;
    if wait_running(&mut child, SETTLE) {
        let (start, cpu_start) = (Instant::now(), process_cpu_ns(pid));
        let ran = wait_running(&mut child, window);
        if let (true, Some(a), Some(b)) = (ran, cpu_start, process_cpu_ns(pid)) {
            let s = start.elapsed().as_secs_f64();
            measured = Some(b.saturating_sub(a) as f64 / 1e9 / s * 100.0);
        }
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX));
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let _ = child.wait();
    let errors = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    let refused = measured.is_none().then(|| {
        errors
            .lines()
            .find(|l| l.starts_with("error"))
            .or_else(|| errors.lines().last())
            .unwrap_or("the run ended before the window did")
            .to_string()
    });
    Ok(PolicyCost {
        policy: policy.to_string(),
        params: params.to_vec(),
        interval_ms: interval.as_secs_f64() * 1e3,
        threads,
        seconds: window.as_secs_f64(),
        cpu_percent: measured,
        refused,
    })
}

/// `ecosched bench observe --hold-threads N`: the process a measured run
/// watches, `n` threads asleep for `span`.
pub fn hold_threads(n: usize, span: Duration) -> Result<(), LinuxError> {
    crate::bench::check_tasks(n).map_err(|e| LinuxError::Io {
        path: PathBuf::from("--hold-threads"),
        source: std::io::Error::other(e),
    })?;
    let threads = SleepingThreads::spawn(n).map_err(|source| LinuxError::Io {
        path: PathBuf::from("(spawning sleeping threads)"),
        source,
    })?;
    std::thread::sleep(span);
    drop(threads);
    Ok(())
}
