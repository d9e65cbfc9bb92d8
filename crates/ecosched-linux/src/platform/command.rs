//! The command a run manages: started inside the run's cgroups, watched
//! for its exit, and at the end waited for (or, interrupted, ended with
//! every process of the run) with its CPU time read from the run's
//! accounting cgroup.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::gang;
use crate::hints::HINT_ENV;
use crate::journal::UndoReport;
use crate::runcgroup::{self, CgroupCpu, RunCgroup};
use crate::spawn;
use crate::tasks::HostFacts;
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::Duration;

/// How long the processes of an interrupted run have to end after the
/// signal is passed on before they are killed: a shell's background jobs
/// ignore SIGINT, and the run must not leave them behind.
const KILL_GRACE: Duration = Duration::from_secs(1);

/// What a finished run leaves: how the command ended and what undoing the
/// journal did.
#[derive(Debug)]
pub struct RunEnd {
    /// The command's exit status.
    pub status: ExitStatus,
    /// The signal that interrupted ecosched, if one did (it was passed on).
    pub interrupted_by: Option<i32>,
    /// Undoing the journal.
    pub restore: UndoReport,
    /// CPU time of every process of the run, exited ones included, from
    /// the run's own cgroup; `None` without one (see `cpu_source`).
    pub cgroup_cpu: Option<CgroupCpu>,
    /// Where the run's CPU time comes from, in words.
    pub cpu_source: String,
    /// Busy CPU seconds of the whole machine over the run (`/proc/stat`),
    /// what the run's CPU time is a share of.
    pub machine_busy_s: Option<f64>,
}

/// The run's accounting cgroup, or why there is none.
pub(super) type Accounting = Result<RunCgroup, String>;

/// A started command and what its run is measured with.
#[derive(Debug)]
pub(super) struct ManagedCommand {
    child: Child,
    status: Option<ExitStatus>,
    accounting: Accounting,
    /// Machine busy ticks when the command started.
    busy_ticks_start: Option<u64>,
}

impl ManagedCommand {
    /// Start `program` with `args` after it joins the cgroups whose
    /// membership files are `join`, with the hint file `hint` in its
    /// environment; the run is accounted by `accounting`.
    pub(super) fn start(
        root: &FsRoot,
        program: &Path,
        args: &[String],
        join: &[PathBuf],
        hint: &Path,
        accounting: Accounting,
    ) -> Result<Self, LinuxError> {
        let busy_ticks_start = runcgroup::machine_busy_ticks(root).ok();
        let child = spawn::command_in(program, args, join)
            .env(HINT_ENV, hint)
            .spawn()
            .map_err(|e| LinuxError::Io {
                path: program.to_path_buf(),
                source: std::io::Error::new(e.kind(), format!("cannot start the command: {e}")),
            })?;
        Ok(ManagedCommand {
            child,
            status: None,
            accounting,
            busy_ticks_start,
        })
    }

    /// The command's PID.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The run's accounting cgroup, when there is one.
    pub(super) fn run_cgroup(&self) -> Option<&RunCgroup> {
        self.accounting.as_ref().ok()
    }

    /// Whether the command has exited; `true` the first time it is seen.
    pub(super) fn poll(&mut self) -> bool {
        if self.status.is_some() {
            return false;
        }
        match self.child.try_wait() {
            Ok(Some(status)) => {
                self.status = Some(status);
                true
            }
            _ => false,
        }
    }

    /// Whether the command has exited.
    pub(super) fn exited(&self) -> bool {
        self.status.is_some()
    }

    /// Read the run's CPU time from its cgroup, undo every change (`undo`),
    /// pass on `pass_on` to every process of the run (SIGKILL after
    /// [`KILL_GRACE`] for those that ignore it), wait for the command and
    /// say how it ended.
    pub(super) fn finish(
        mut self,
        root: &FsRoot,
        host: &HostFacts,
        interrupted_by: Option<i32>,
        pass_on: Option<Signal>,
        undo: impl FnOnce() -> UndoReport,
    ) -> Result<RunEnd, LinuxError> {
        let child_io = |child: &Child, e: std::io::Error| LinuxError::Io {
            path: PathBuf::from(format!("/proc/{}", child.id())),
            source: e,
        };
        // With no signal to pass on the command ends by itself: wait for it
        // before the undo. It stays confined to its end, and no unreaped
        // zombie holds the run's cgroup (rmdir would fail with EBUSY, and a
        // zombie cannot be moved out).
        if pass_on.is_none() && self.status.is_none() {
            self.status = Some(self.child.wait().map_err(|e| child_io(&self.child, e))?);
        }
        // Read before the undo removes the cgroup; after a normal exit
        // this holds every process's time, exited descendants included.
        let cgroup_cpu = self.run_cgroup().map(|cg| cg.usage(root));
        let busy_end = runcgroup::machine_busy_ticks(root).ok();
        // Every process of the run, not only the command: a shell's
        // background jobs would otherwise outlive it. Listed now, signalled
        // once the undo has thawed them and taken them out of the cgroups.
        let members = match (pass_on, self.run_cgroup()) {
            (Some(_), Some(cg)) => cg.members(root).unwrap_or_else(|e| {
                eprintln!("ecosched: could not list every process of the run: {e}");
                Vec::new()
            }),
            _ => Vec::new(),
        };
        let restore = undo();
        if let Some(signal) = pass_on {
            if self.status.is_none() {
                let _ = gang::signal(self.child.id(), signal);
            }
            runcgroup::end_all(root, &members, signal, KILL_GRACE);
        }
        let status = match self.status {
            Some(s) => s,
            None => self.child.wait().map_err(|e| child_io(&self.child, e))?,
        };
        let (cgroup_cpu, cpu_source) = match (cgroup_cpu, &self.accounting) {
            (Some(Ok(c)), Ok(cg)) => (
                Some(c),
                format!(
                    "the run's cgroup {} (every process, exited ones included)",
                    root.path(cg.dir()).display()
                ),
            ),
            (Some(Err(e)), _) => (
                None,
                format!("per-task counters (the run's cgroup could not be read: {e}); processes that exited between reads are missing"),
            ),
            (_, accounting) => (
                None,
                format!(
                    "per-task counters (no accounting cgroup: {}); processes that exited between reads are missing",
                    accounting.as_ref().err().map_or("not started", String::as_str)
                ),
            ),
        };
        let machine_busy_s = match (self.busy_ticks_start, busy_end) {
            (Some(a), Some(b)) => Some(host.ticks_to_s(b.saturating_sub(a))),
            _ => None,
        };
        Ok(RunEnd {
            status,
            interrupted_by,
            restore,
            cgroup_cpu,
            cpu_source,
            machine_busy_s,
        })
    }
}
