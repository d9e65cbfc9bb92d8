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
//! the state directory is made 0700, and restore refuses one others may
//! write to; a journal not owned by root (or the user restoring), writable
//! by group or others, or over 64 MiB is refused whole; every record must
//! name a file under a cgroup mount or in cpufreq sysfs, with a known file
//! name, and a task by PID and start time, and (see [`ownership`]) act
//! only within the cgroups the journal's own run created, or that record
//! alone is skipped with a warning. A corrupt record in the middle (bad
//! JSON or not UTF-8) is skipped with a warning naming its line and the
//! rest restored; a torn last line (killed mid-write) was never acted on
//! and is reported as such.
//!
//! ```text
//! file        the record format and the file: create, append, rewrite
//! recorder    Journal: record before changing, index, undo at the end
//! compaction  which records a long-running journal drops, and when
//! undo        putting changes back, newest first
//! restore     `ecosched restore`: dead runs' journals, hint files
//! trust       what makes a journal safe to act on as root
//! ownership   which cgroups a dead run's journal may act on: its own
//! ```

mod compaction;
mod file;
pub mod ownership;
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
