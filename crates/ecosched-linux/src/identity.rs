//! Task identity on a live machine: a PID together with its start time
//! (`/proc/<pid>/stat` field 22, clock ticks since boot). Every actuation
//! and every undo re-checks it, so a PID the kernel has handed to a new
//! task is never touched.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;

/// The start time of task `pid` (any thread id works: `/proc/<tid>` exists
/// for every thread), or [`LinuxError::Gone`] when it does not exist.
pub fn start_ticks(root: &FsRoot, pid: u32) -> Result<u64, LinuxError> {
    let rel = format!("proc/{pid}/stat");
    let text = match root.read(&rel, "process") {
        Ok(t) => t,
        Err(LinuxError::Absent { .. }) => return Err(LinuxError::Gone { pid }),
        Err(e) => return Err(e),
    };
    crate::procfs::stat::parse(&text)
        .map(|s| s.start_ticks)
        .map_err(|e| LinuxError::parse(&root.path(&rel), &text, e.to_string()))
}

/// Whether `pid` still names the task that started at `start_ticks`.
pub fn same_task(root: &FsRoot, pid: u32, expected_ticks: u64) -> bool {
    start_ticks(root, pid).is_ok_and(|t| t == expected_ticks)
}
