//! Ending a run by a signal, atomically: every process of the run's
//! cgroup is stopped first, so none forks past the moment the signal is
//! passed on, then all of them get it at once.
//!
//! ```text
//! halt        SIGSTOP each listed process; list again; until a listing
//!             finds no new process and every one has stopped
//! signal      the signal to every halted process (pending while stopped;
//!             a default-fatal one ends the process at once)
//! resume      SIGCONT: handlers run, ignored signals change nothing
//! grace       wait for the run's cgroup to hold no live process
//! kill        (ending signals only) halt again, SIGKILL every process
//! ```
//!
//! Why SIGSTOP rather than a freezer cgroup: the run's own cgroup lists
//! every process of the run on every layout (a v1 `cpuacct` hierarchy, a
//! v2 tree, gang groups below it), but it is not always a freezer (v1's
//! freezer is a hierarchy of its own); SIGSTOP cannot be caught or
//! ignored, and a `fork` in progress when it arrives is restarted, so a
//! stopped process has no child the next listing misses. A run's gang
//! schedule ends (every group thawed) before it is halted, since a frozen
//! task takes no signal.

use crate::fsroot::FsRoot;
use crate::gang;
use crate::runcgroup::{Member, RunCgroup};
use nix::sys::signal::Signal;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// How long halting may take before the processes not seen stopped are
/// taken as halted (a gang's frozen tasks never show as stopped).
const HALT_LIMIT: Duration = Duration::from_secs(2);

/// How long the processes of a run have to end after an ending signal
/// before they are killed: a shell's background jobs ignore SIGINT, and
/// the run must not leave them behind.
pub(super) const KILL_GRACE: Duration = Duration::from_secs(1);

/// How long killed processes have to leave the run's cgroup.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// The signals whose intent is to end the work: a process of the run that
/// survives one of them is killed after [`KILL_GRACE`]. A process that
/// survives another (a `nohup`'d one after `SIGHUP`) goes on, released
/// from every change the run made.
pub(super) fn ends_the_work(signal: Signal) -> bool {
    matches!(signal, Signal::SIGTERM | Signal::SIGINT | Signal::SIGQUIT)
}

/// The state letter of `pid` (`/proc/<pid>/stat` field 3); `None` once it
/// is gone.
fn state(root: &FsRoot, pid: u32) -> Option<char> {
    root.read_opt(&format!("proc/{pid}/stat"))
        .ok()
        .flatten()
        .and_then(|t| crate::procfs::stat::parse(&t).ok())
        .map(|s| s.state)
}

/// Whether `m` is still the process it was and has not exited (an orphan
/// under a PID 1 that does not reap stays a zombie: it counts as dead).
fn alive(root: &FsRoot, m: &Member) -> bool {
    crate::identity::same_task(root, m.pid, m.start_ticks)
        && !matches!(state(root, m.pid), Some('Z' | 'X') | None)
}

/// The live processes of the run now.
pub(super) fn live(root: &FsRoot, cg: &RunCgroup) -> Vec<Member> {
    cg.members(root)
        .unwrap_or_default()
        .into_iter()
        .filter(|m| alive(root, m))
        .collect()
}

/// Stop every process of `cg`, re-listing it until a listing finds no new
/// process and every one listed has stopped (or [`HALT_LIMIT`] passed).
/// Returns the processes halted.
pub(super) fn halt(root: &FsRoot, cg: &RunCgroup) -> Vec<Member> {
    let deadline = Instant::now() + HALT_LIMIT;
    let mut sent: BTreeSet<(u32, u64)> = BTreeSet::new();
    let mut halted = Vec::new();
    loop {
        let listed = live(root, cg);
        let mut new = false;
        for m in &listed {
            if sent.insert((m.pid, m.start_ticks)) {
                new = true;
                halted.push(*m);
                let _ = gang::signal(m.pid, Signal::SIGSTOP);
            }
        }
        let all_stopped = listed
            .iter()
            .all(|m| matches!(state(root, m.pid), Some('T' | 't' | 'Z' | 'X') | None));
        if (!new && all_stopped) || Instant::now() >= deadline {
            return halted;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Send `signal` to each of `members` still alive.
pub(super) fn send(root: &FsRoot, members: &[Member], signal: Signal) {
    for m in members.iter().filter(|m| alive(root, m)) {
        let _ = gang::signal(m.pid, signal);
    }
}

/// Wait up to `limit` for `cg` to hold no live process; whether it does.
fn emptied(root: &FsRoot, cg: &RunCgroup, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if live(root, cg).is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Pass `signal` on to every process of the run in `cg` at once (see the
/// module's doc), give them [`KILL_GRACE`] to end, and kill those left
/// when the signal [ends the work](ends_the_work). Returns the processes
/// that go on, halted again so that none forks while the undo takes the
/// cgroups away; the caller resumes them after it.
pub(super) fn end_run(root: &FsRoot, cg: &RunCgroup, signal: Signal) -> Vec<Member> {
    let members = halt(root, cg);
    send(root, &members, signal);
    send(root, &members, Signal::SIGCONT);
    if emptied(root, cg, KILL_GRACE) {
        return Vec::new();
    }
    if ends_the_work(signal) {
        // A bounded number of rounds: each kills every process halted, so
        // a second is needed only for one born of a fork the first
        // listing just missed.
        for _ in 0..3 {
            let left = halt(root, cg);
            send(root, &left, Signal::SIGKILL);
            if emptied(root, cg, KILL_WAIT) {
                return Vec::new();
            }
        }
    }
    halt(root, cg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_signals_that_end_the_work_are_followed_by_a_kill() {
        for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGQUIT] {
            assert!(ends_the_work(s), "{s}");
        }
        for s in [
            Signal::SIGHUP,
            Signal::SIGUSR1,
            Signal::SIGUSR2,
            Signal::SIGALRM,
            Signal::SIGXCPU,
            Signal::SIGXFSZ,
            Signal::SIGVTALRM,
            Signal::SIGPROF,
        ] {
            assert!(!ends_the_work(s), "{s}");
        }
    }
}
