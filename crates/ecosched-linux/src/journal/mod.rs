//! The restore journal: how ecosched leaves a machine as it found it.
//!
//! Every change to the machine (a thread's affinity, a sysfs/cgroup file
//! such as a freezer state, a created cgroup, a task moved between cgroups,
//! a stopped task) is appended to a JSON-lines file and flushed to disk
//! (`fdatasync`) *before* the change is made, recording what to put back.
//! A normal exit, `SIGINT`, `SIGTERM` or a panic undoes the journal in
//! reverse order; after `SIGKILL` the file stays behind and `ecosched
//! restore` undoes it.
//!
//! ```text
//! /run/ecosched/journal-<pid>.jsonl
//!   {"version":1,"owner_pid":4242,"owner_start_ticks":91234}   header
//!   {"kind":"file","path":"sys/…/scaling_governor","before":"ondemand"}
//!   {"kind":"affinity","tid":4250,"start_ticks":91300,"before":"0-7"}
//! ```
//!
//! Only the first change of each thing is kept: that holds the original
//! value. Undoing skips tasks that have exited (or whose PID now names a
//! different task), which is normal, not a failure.
//!
//! A daemon changes the affinity of every task it adopts, and over weeks
//! most of those exit, so the records of exited tasks are dropped as the
//! records grow (`compaction`): the kept ones are written to a new file,
//! synced, and renamed over the old, so a kill at any point leaves one
//! whole journal.
//!
//! `ecosched restore` usually runs as root, so a journal is untrusted input
//! that could turn into a root file write. Hence (see [`trust`]):
//! the state directory is made 0700 and refused when others may write to
//! it; a journal not owned by root (or the user restoring) or writable by
//! group or others is refused whole; every record must name a file under a
//! cgroup mount or in cpufreq sysfs, with a known file name, and a task by
//! PID and start time, or that record alone is skipped with a warning. A
//! corrupt record in the middle is skipped with a warning and the rest
//! restored; a torn last line (killed mid-write) was never acted on and is
//! reported as such.
//!
//! ```text
//! file        the record format and the file: create, append, rewrite
//! recorder    Journal: record before changing, index, undo at the end
//! compaction  which records a long-running journal drops, and when
//! undo        putting changes back, newest first
//! restore     `ecosched restore`: dead runs' journals, hint files
//! trust       what makes a journal safe to act on as root
//! ```

mod compaction;
mod file;
mod recorder;
mod restore;
#[cfg(test)]
mod testing;
pub mod trust;
mod undo;

pub use compaction::COMPACT_AT_LEAST;
pub use file::{parse, Change, Header, ParsedJournal};
pub use recorder::{Journal, DEFAULT_STATE_DIR};
pub use restore::{restore, stale_notices, RestoreOutcome};
pub use undo::UndoReport;
