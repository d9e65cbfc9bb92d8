//! The command a run manages: started inside the run's cgroups, watched
//! for its exit (through a pidfd, so that waiting for it is one sleeping
//! `poll`, not a wake-up every few milliseconds), and at the end waited for (or, interrupted, ended with
//! every process of the run) with its CPU time read from the run's
//! accounting cgroup.

use super::halt::{self, KILL_GRACE};
use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::gang;
use crate::hints::HINT_ENV;
use crate::journal::UndoReport;
use crate::runcgroup::{self, CgroupCpu, RunCgroup};
use crate::spawn;
use crate::tasks::HostFacts;
use nix::sys::signal::Signal;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::Duration;

/// What a finished run leaves: how the command ended and what undoing the
/// journal did.
#[derive(Debug)]
pub struct RunEnd {
    /// The command's exit status; a command that survived the signal
    /// passed on (see `survivors`) reads as ended by that signal.
    pub status: ExitStatus,
    /// Processes of the run that survived the signal passed on (a
    /// `nohup`'d one after `SIGHUP`): they go on, released from every
    /// change the run made.
    pub survivors: Vec<u32>,
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
    /// A pidfd of the command while it runs: readable once it has exited.
    /// `None` where the kernel has no `pidfd_open` (before Linux 5.3) or
    /// once the exit is seen.
    exit_fd: Option<OwnedFd>,
    accounting: Accounting,
    /// Machine busy ticks when the command started.
    busy_ticks_start: Option<u64>,
}

impl ManagedCommand {
    /// Start `program` with `args` after it joins the cgroups whose
    /// membership files are `join`, with the hint file `hint` in its
    /// environment; the run is accounted by `accounting`. With
    /// `stdout_to_stderr` its standard output is ecosched's standard error,
    /// so that ecosched's own stdout (a JSON summary) holds nothing else.
    pub(super) fn start(
        root: &FsRoot,
        program: &Path,
        args: &[String],
        join: &[PathBuf],
        hint: &Path,
        accounting: Accounting,
        stdout_to_stderr: bool,
    ) -> Result<Self, LinuxError> {
        let busy_ticks_start = runcgroup::machine_busy_ticks(root).ok();
        let mut command = spawn::command_in(program, args, join);
        command.env(HINT_ENV, hint);
        if stdout_to_stderr {
            let stderr = std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .map_err(|source| LinuxError::Io {
                    path: PathBuf::from("/dev/stderr"),
                    source,
                })?;
            command.stdout(std::process::Stdio::from(stderr));
        }
        let child = command.spawn().map_err(|e| LinuxError::Io {
            path: program.to_path_buf(),
            source: std::io::Error::new(e.kind(), format!("cannot start the command: {e}")),
        })?;
        // The child is not reaped before `poll` sees its exit, so its PID
        // names it until then.
        let exit_fd = rustix::process::pidfd_open(
            rustix::process::Pid::from_child(&child),
            rustix::process::PidfdFlags::empty(),
        )
        .ok();
        Ok(ManagedCommand {
            child,
            status: None,
            exit_fd,
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
                // Readable for good now: waiting on it would not sleep.
                self.exit_fd = None;
                true
            }
            _ => false,
        }
    }

    /// Whether [`ManagedCommand::sleep_until_exit`] wakes at the command's
    /// exit.
    pub(super) fn exit_wakes(&self) -> bool {
        self.exit_fd.is_some()
    }

    /// Sleep for `timeout`, or until the command exits or a signal
    /// arrives, whichever is first; without a pidfd, for `timeout`.
    pub(super) fn sleep_until_exit(&mut self, timeout: Duration) {
        let Some(fd) = &self.exit_fd else {
            std::thread::sleep(timeout);
            return;
        };
        let Ok(limit) = rustix::event::Timespec::try_from(timeout) else {
            std::thread::sleep(timeout);
            return;
        };
        let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
        match rustix::event::poll(&mut fds, Some(&limit)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            // A pidfd that cannot be polled: sleep from now on.
            Err(_) => {
                self.exit_fd = None;
                std::thread::sleep(timeout);
            }
        }
    }

    /// Whether the command has exited.
    pub(super) fn exited(&self) -> bool {
        self.status.is_some()
    }

    /// End the run: with no signal to pass on, wait for the command; with
    /// one, pass it on to every process of the run at once (see
    /// [`halt`]); then read the run's CPU time from its cgroup, undo every
    /// change (`undo`) and say how the command ended.
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
        // Every process of the run, not only the command: a shell's
        // background jobs would otherwise outlive it. Those that survive
        // are halted through the undo, so none forks while the cgroups go.
        let survivors = match (pass_on, self.run_cgroup()) {
            (Some(signal), Some(cg)) => halt::end_run(root, cg, signal),
            (Some(signal), None) => {
                self.end_command_alone(signal);
                Vec::new()
            }
            (None, _) => Vec::new(),
        };
        // Read before the undo removes the cgroup; after the run's end
        // this holds every process's time, exited descendants included.
        let cgroup_cpu = self.run_cgroup().map(|cg| cg.usage(root));
        let busy_end = runcgroup::machine_busy_ticks(root).ok();
        let restore = undo();
        halt::send(root, &survivors, Signal::SIGCONT);
        if self.status.is_none() {
            self.status = self
                .child
                .try_wait()
                .map_err(|e| child_io(&self.child, e))?;
        }
        let status = match (self.status, pass_on) {
            (Some(s), _) => s,
            // Still running: it survived the signal and goes on.
            (None, Some(signal)) => ExitStatus::from_raw(signal as i32),
            (None, None) => self.child.wait().map_err(|e| child_io(&self.child, e))?,
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
            survivors: survivors.iter().map(|m| m.pid).collect(),
            interrupted_by,
            restore,
            cgroup_cpu,
            cpu_source,
            machine_busy_s,
        })
    }

    /// Without the run's cgroup (no root) only the command is known: pass
    /// `signal` on to it and, when the signal ends the work, kill it after
    /// [`KILL_GRACE`].
    fn end_command_alone(&mut self, signal: Signal) {
        if self.poll() || self.exited() {
            return;
        }
        let _ = gang::signal(self.child.id(), signal);
        let deadline = std::time::Instant::now() + KILL_GRACE;
        while std::time::Instant::now() < deadline {
            if self.poll() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if halt::ends_the_work(signal) {
            let _ = gang::signal(self.child.id(), Signal::SIGKILL);
        }
    }
}
