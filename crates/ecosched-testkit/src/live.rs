//! Reading this machine's processes for live tests: what `/proc` says of a
//! task's CPUs, parent, children, state and freezer cgroup; waiting for a
//! condition; and killing the busy processes a test started, however it
//! ends.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// `Cpus_allowed_list` of task `pid`, `None` once it is gone.
pub fn allowed_list(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

/// Wait up to `timeout` for `ok`, panicking with `what` when it never holds.
pub fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The fields of `/proc/<pid>/stat` after the command name, which is in
/// parentheses and may itself hold spaces and parentheses: the state is
/// field 0, the parent field 1, the nice value field 16.
pub fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// The parent of `pid`, `None` once it is gone.
pub fn ppid_of(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

/// Every process on the machine with its parent.
fn parent_links() -> Vec<(u32, u32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter_map(|p| Some((p, ppid_of(p)?)))
        .collect()
}

/// The direct children of `pid`, in ascending order.
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out: Vec<u32> = parent_links()
        .into_iter()
        .filter(|&(_, parent)| parent == pid)
        .map(|(p, _)| p)
        .collect();
    out.sort_unstable();
    out
}

/// Every descendant of `pid` (children, their children, …), found by
/// following the parent links of all processes.
pub fn descendants(pid: u32) -> Vec<u32> {
    let links = parent_links();
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for &(child, parent) in &links {
            if parent == p {
                out.push(child);
                frontier.push(child);
            }
        }
    }
    out
}

/// Whether `pid` has exited: gone, or a zombie. This machine's PID 1 may
/// not reap orphans, so a killed orphan can stay a zombie for good.
pub fn has_exited(pid: u32) -> bool {
    match stat_fields(pid) {
        Some(fields) => fields.first().is_some_and(|s| s == "Z" || s == "X"),
        None => true,
    }
}

/// Nanoseconds `pid` has spent on a CPU (`/proc/<pid>/schedstat`).
pub fn on_cpu_ns(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// The freezer cgroup of `pid` as a directory under the freezer's mount,
/// and the name of that directory's state file: cgroup v1's `freezer`
/// hierarchy when `pid` is in one, else cgroup v2 (mounted at
/// `/sys/fs/cgroup/unified` on hybrid machines).
pub fn freezer_cgroup(pid: u32) -> Option<(PathBuf, &'static str)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    if let Some(path) = text.lines().find_map(|l| {
        let mut p = l.splitn(3, ':');
        let (_, ctl, path) = (p.next()?, p.next()?, p.next()?);
        ctl.split(',')
            .any(|c| c == "freezer")
            .then(|| path.to_string())
    }) {
        let dir = Path::new("/sys/fs/cgroup/freezer").join(path.trim_start_matches('/'));
        return Some((dir, "freezer.state"));
    }
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mount = if Path::new("/sys/fs/cgroup/unified").exists() {
        "/sys/fs/cgroup/unified"
    } else {
        "/sys/fs/cgroup"
    };
    Some((
        Path::new(mount).join(path.trim_start_matches('/')),
        "cgroup.freeze",
    ))
}

/// Whether the freezer group `dir` (state file `file`) is frozen or being
/// frozen: v1 goes through `FREEZING`, which is not yet `FROZEN` but no
/// longer `THAWED`. `None` when the group is gone.
pub fn is_frozen(dir: &Path, file: &str) -> Option<bool> {
    let state = std::fs::read_to_string(dir.join(file)).ok()?;
    Some(!matches!(state.trim(), "THAWED" | "0"))
}

/// SIGKILL to every pid in `pids` but 0 and 1 (a pid read as 0 or 1 by
/// mistake must never take the machine down); errors are ignored.
pub fn kill(pids: &[u32]) {
    let pids: Vec<String> = pids
        .iter()
        .filter(|&&p| p > 1)
        .map(u32::to_string)
        .collect();
    if !pids.is_empty() {
        let _ = std::process::Command::new("kill")
            .arg("-KILL")
            .args(&pids)
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// Kills the processes a test started however the test ends, a failed
/// assertion included. A task in a frozen group does not die of SIGKILL
/// until it is thawed, so each one's freezer group is thawed first.
#[derive(Debug, Default)]
pub struct Reap(pub Vec<u32>);

impl Drop for Reap {
    fn drop(&mut self) {
        for &p in &self.0 {
            if let Some((dir, file)) = freezer_cgroup(p) {
                if is_frozen(&dir, file) == Some(true) {
                    let thawed = if file == "freezer.state" {
                        "THAWED"
                    } else {
                        "0"
                    };
                    let _ = std::fs::write(dir.join(file), thawed);
                }
            }
        }
        kill(&self.0);
    }
}

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A turn for a test that keeps every CPU busy: the machines tests run on
/// have few CPUs, and two such tests at once would starve each other's
/// processes of the CPU time their assertions count on. Hold the guard
/// for the whole test.
pub fn busy_turn() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}
