//! The tasks ecosched manages and what they did: discovery of a command's
//! process tree (every process it spawned, and all their threads) and one
//! reading per thread per interval — state, CPU, allowed CPUs, nice, and
//! counter deltas from `/proc/<tgid>/task/<tid>/{stat,schedstat,status}` and
//! per-thread perf groups ([`crate::perf`]).
//!
//! Identity is [`TaskId`](ecosched_model::TaskId) = thread ID + start
//! time (`stat` field 22). A thread whose start time is not the expected
//! one is another task that got a recycled PID and is reported
//! [`LinuxError::Gone`](crate::LinuxError::Gone), never read or acted on.
//! Once a task has been verified its `schedstat` and `stat` are kept open:
//! an open `/proc` file stays bound to the task it was opened for (reads
//! fail with `ESRCH` after it exits), so later reads cannot drift to a new
//! task with the same PID — and re-reading an open file with `pread` costs
//! a fraction of opening it again (see the `observe` benchmark). `status`,
//! read only where nothing cheaper gives its answer (see `sample`), is
//! opened, read and closed, right after the held `schedstat` proved the
//! task still there: a thread costs two `/proc` descriptors and its perf
//! events, not three and its events.
//!
//! Threads are read under `/proc/<tgid>/task/<tid>/`, not `/proc/<tid>/`:
//! the latter is the thread-group view, whose `stat` sums over every thread
//! of the process (O(threads) per read, and the wrong numbers for a thread).
//!
//! ```text
//! discovery    which tasks: a process tree or a cgroup's processes
//! reader       TaskReader: every task read at each look, files kept open
//! sample       one thread's reading, as cheap as its answer allows
//! perf_groups  how counters are grouped for the PMU, and their deltas
//! proc_file    pread of a task's /proc files; gone or not
//! host         clock ticks and boot time, to turn ticks into seconds
//! ```

mod discovery;
mod host;
mod perf_groups;
mod proc_file;
mod reader;
mod sample;
#[cfg(test)]
mod testing;

pub use host::HostFacts;
pub use perf_groups::hardware_groups;
pub use reader::{availability_here, Observation, TaskReader, FD_RESERVE};
pub use sample::{TaskReading, AFFINITY_RECHECK};
