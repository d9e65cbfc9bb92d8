//! Task identity. A PID is reused by the kernel, so a task is a PID together
//! with its start time (`/proc/<pid>/stat` field 22, in clock ticks since
//! boot). Platforms re-check both before every actuation.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A schedulable entity that cannot be confused with a later one reusing its PID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TaskId {
    /// Kernel PID (thread id for threads).
    pub pid: u32,
    /// Start time in clock ticks since boot (the simulator uses its own ticks).
    pub start_ticks: u64,
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.pid, self.start_ticks)
    }
}

/// A process (thread group): its leader's PID and start time. Every task
/// sample names its process, so policies that reason per program (Patel
/// §5.1 averages over a process's threads) can group threads, and a reused
/// TGID is never taken for the old process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ProcessId {
    /// Thread-group id (the leader's PID).
    pub tgid: u32,
    /// The leader's start time in clock ticks since boot.
    pub start_ticks: u64,
}

impl fmt::Display for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.tgid, self.start_ticks)
    }
}

impl TaskId {
    /// The process a task leads (for a single-threaded process, its own).
    pub fn as_process(self) -> ProcessId {
        ProcessId {
            tgid: self.pid,
            start_ticks: self.start_ticks,
        }
    }
}

/// Scheduler state of a task at observation time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    /// On a CPU right now.
    Running,
    /// Waiting in a run queue.
    Runnable,
    /// Blocked (I/O, sleep).
    Sleeping,
    /// Stopped by a gang-control signal.
    Stopped,
    /// Finished during the last interval; this is its last sample.
    Exited,
}
