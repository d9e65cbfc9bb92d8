//! One managed group at work: a thread that attaches a `LinuxPlatform` to
//! the group's processes, runs the engine's control loop with the group's
//! policy until told to stop, and then undoes the group's journal — the
//! same platform, loop, journal and restore as `ecosched run`.
//!
//! A group's tasks stay in the cpuset they are in: a task in ecosched's
//! own cpuset joins the group's cpuset beside it, a task in any other (a
//! Slurm job's, a systemd slice's, a container's) is confined by affinity
//! within that cpuset's CPUs and never moved out of it
//! (`LinuxOptions::stay_in_cpusets`).
//!
//! Stopping is how every change of a group is made: pausing, changing its
//! policy, its cgroup vanishing, and the daemon's own `SIGTERM` all stop
//! the worker (which restores what it changed); resuming or a new policy
//! starts a fresh one.

use crate::config::{PolicyChoice, Source};
use crate::membership::Lookup;
use crate::metrics::{GroupSink, Metrics};
use crate::totals::SharedTotals;
use ecosched_control::Session;
use ecosched_linux::platform::{LinuxOptions, LinuxPlatform};
use ecosched_linux::FsRoot;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What every worker needs from the daemon.
#[derive(Debug, Clone)]
pub struct WorkerContext {
    /// Where journals go.
    pub state_dir: PathBuf,
    /// How often a group's membership is looked up.
    pub scan_interval: Duration,
    /// The series to report to.
    pub metrics: Metrics,
    /// The energy `source` label.
    pub source: &'static str,
    /// Where each counter kind comes from on this machine (the
    /// configuration's `[events]` applied), resolved when the
    /// configuration is loaded.
    pub signals: ecosched_linux::signals::Resolution,
}

/// How a worker is doing.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerState {
    /// Preparing the platform and applying the policy's first plan.
    Starting,
    /// Managing: the first plan was applied.
    Running,
    /// It stopped on an error (the group's changes were undone).
    Failed(String),
}

/// A running group worker.
#[derive(Debug)]
pub struct Worker {
    stop: Arc<AtomicBool>,
    state: Arc<Mutex<WorkerState>>,
    /// Its thread, which ends with what it could not undo.
    thread: Option<JoinHandle<Vec<String>>>,
}

/// Turn a group name into a file and cgroup name part (`slurm/job_7` →
/// `slurm-job_7`).
pub fn tag_of(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

impl Worker {
    /// Start managing group `name` (processes from `source`) with `policy`,
    /// adding to the group's `totals`.
    pub fn start(
        name: &str,
        source: &Source,
        policy: &PolicyChoice,
        ctx: &WorkerContext,
        totals: SharedTotals,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let state = Arc::new(Mutex::new(WorkerState::Starting));
        let (name, source, policy, ctx) = (
            name.to_string(),
            source.clone(),
            policy.clone(),
            ctx.clone(),
        );
        let (stop_w, state_w) = (Arc::clone(&stop), Arc::clone(&state));
        let metrics = ctx.metrics.clone();
        let thread = std::thread::Builder::new()
            .name(format!("group {name}"))
            .spawn(move || {
                let mut unrestored = Vec::new();
                let result = manage(
                    &name,
                    source,
                    &policy,
                    &ctx,
                    totals,
                    Link {
                        stop: stop_w,
                        state: &state_w,
                    },
                    &mut unrestored,
                );
                if let Err((cause, e)) = result {
                    tracing::error!(group = %name, "group {name}: {e}");
                    if let Ok(mut s) = state_w.lock() {
                        let stage = match *s {
                            WorkerState::Starting => "start",
                            _ => "run",
                        };
                        ctx.metrics.count_failure(stage, cause);
                        *s = WorkerState::Failed(e);
                    }
                }
                unrestored
            });
        let thread = match thread {
            Ok(t) => Some(t),
            Err(e) => {
                metrics.count_failure("start", "daemon");
                if let Ok(mut s) = state.lock() {
                    *s = WorkerState::Failed(format!("cannot start its thread: {e}"));
                }
                None
            }
        };
        Worker {
            stop,
            state,
            thread,
        }
    }

    /// How it is doing.
    pub fn state(&self) -> WorkerState {
        match self.state.lock() {
            Ok(s) => s.clone(),
            Err(_) => WorkerState::Failed("its thread panicked".into()),
        }
    }

    /// Stop managing and wait until its changes are undone; what could
    /// not be undone (its journal is kept), one line per change.
    pub fn stop(mut self) -> Vec<String> {
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(unrestored)) => unrestored,
            Some(Err(_)) => vec!["its thread panicked; its journal is kept".into()],
            None => Vec::new(),
        }
    }
}

/// A worker thread's link to its [`Worker`]: the flag that stops it and
/// the state it reports.
struct Link<'a> {
    stop: Arc<AtomicBool>,
    state: &'a Mutex<WorkerState>,
}

/// Why a worker stopped: what failed (`policy`, `platform` or `daemon`,
/// the `cause` of `ecosched_group_failures_total`) and the message.
type Failure = (&'static str, String);

/// Manage the group until told to stop, adding to `unrestored` what its
/// undo could not put back.
fn manage(
    name: &str,
    source: Source,
    choice: &PolicyChoice,
    ctx: &WorkerContext,
    totals: SharedTotals,
    link: Link<'_>,
    unrestored: &mut Vec<String>,
) -> Result<(), Failure> {
    let Link { stop, state } = link;
    let mut policy = choice.build().map_err(|e| ("policy", e.to_string()))?;
    let tag = tag_of(name);
    // A cgroup group is its cgroup's processes, whose CPU time (where the
    // cgroup accounts it) tells when none of its tasks ran, so that their
    // files are not read for nothing (see `LinuxPlatform::follow_cgroup`).
    let cgroup = match &source {
        Source::Cgroup(dir) => Some(dir.clone()),
        _ => None,
    };
    let mut lookup = Lookup::new(source, ctx.scan_interval);
    let options = LinuxOptions {
        state_dir: ctx.state_dir.clone(),
        cgroup_name: format!("ecosched-{tag}"),
        parallelism: None,
        stay_in_cpusets: true,
    };
    let mut platform = LinuxPlatform::builder(FsRoot::live())
        .options(&options)
        .attach(&tag, Box::new(move || lookup.roots()), stop)
        .signals(ctx.signals.clone())
        .build()
        .map_err(|e| ("platform", format!("preparing the platform: {e}")))?;
    if let Some(dir) = cgroup {
        platform.follow_cgroup(&dir);
    }
    let mut sink = GroupSink::new(ctx.metrics.clone(), name, &choice.name, ctx.source, totals);
    let result = run_loop(&mut platform, policy.as_mut(), name, &mut sink, state);
    let undo = platform.release();
    ctx.metrics
        .restore_failures
        .inc_by(u64::try_from(undo.failed.len()).unwrap_or(u64::MAX));
    for f in &undo.failed {
        tracing::error!(
            group = %name,
            journal = %undo.journal.display(),
            "group {name}: could not restore: {f} (journal kept; run `ecosched restore`)"
        );
        unrestored.push(format!("{f} (journal {})", undo.journal.display()));
    }
    tracing::info!(
        group = %name,
        "group {name}: stopped managing, {} changes undone",
        undo.undone
    );
    result.map_err(|e| {
        use ecosched_control::ControlError;
        let cause = match e {
            ControlError::Policy(_) | ControlError::Incapable { .. } => "policy",
            ControlError::Platform(_) => "platform",
            ControlError::Sink(_) => "daemon",
        };
        (cause, e.to_string())
    })
}

/// The control loop, the worker marked running once the policy's first
/// plan is applied (what `ctl` waits for before it answers).
fn run_loop(
    platform: &mut LinuxPlatform,
    policy: &mut dyn ecosched_policy::Policy,
    name: &str,
    sink: &mut GroupSink,
    state: &Mutex<WorkerState>,
) -> Result<(), ecosched_control::ControlError> {
    let mut session = Session::start(platform, policy, name, None, sink)?;
    if let Ok(mut s) = state.lock() {
        *s = WorkerState::Running;
    }
    while !session.is_finished() {
        session.step(platform, policy, sink)?;
    }
    session.finish(sink).map(|_| ())
}
