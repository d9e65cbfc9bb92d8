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
//! most of those exit. So that neither the journal nor its file grows with
//! the run's length, the records of exited tasks are dropped whenever the
//! records have doubled since the last such pass (at least
//! [`COMPACT_AT_LEAST`]): the kept ones are written to a new file, synced,
//! and renamed over the old, so a kill at any point leaves one whole
//! journal. Memory and file follow the tasks alive, amortised O(1) a record.
//!
//! `ecosched restore` usually runs as root, so a journal is untrusted input
//! that could turn into a root file write. Hence (see [`crate::journal_safety`]):
//! the state directory is made 0700 and refused when others may write to
//! it; a journal not owned by root (or the user restoring) or writable by
//! group or others is refused whole; every record must name a file under a
//! cgroup mount or in cpufreq sysfs, with a known file name, and a task by
//! PID and start time, or that record alone is skipped with a warning. A
//! corrupt record in the middle is skipped with a warning and the rest
//! restored; a torn last line (killed mid-write) was never acted on and is
//! reported as such.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::identity::{same_task, start_ticks};
use crate::journal_safety::{self, AllowedPaths};
use crate::{affinity, gang};
use ecosched_model::CpuSet;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The directory journals live in by default: a tmpfs that survives the
/// process but not a reboot — which resets everything ecosched changes.
pub const DEFAULT_STATE_DIR: &str = "/run/ecosched";

const VERSION: u32 = 1;

/// The fewest records a journal holds before it drops exited tasks'.
pub const COMPACT_AT_LEAST: usize = 64;

/// One change, with what undoes it. Paths are relative to the root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A thread's affinity was changed from `before`.
    Affinity {
        /// Thread id.
        tid: u32,
        /// Its start time, so a reused PID is never touched.
        start_ticks: u64,
        /// The original CPU set.
        before: CpuSet,
    },
    /// A kernel file (cpufreq, cgroup) was overwritten.
    File {
        /// The file.
        path: String,
        /// Its original contents.
        before: String,
    },
    /// A cgroup directory was created; undo moves what is left in it to
    /// `parent` (the cgroup its tasks would otherwise be in) and removes it.
    CgroupCreated {
        /// The new cgroup.
        dir: String,
        /// Where leftover tasks go.
        parent: String,
        /// The membership file (`tasks` on v1, `cgroup.procs` on v2).
        members: String,
    },
    /// A task was moved out of a cgroup; undo moves it back.
    CgroupMoved {
        /// Thread (v1) or process (v2) id.
        tid: u32,
        /// Its start time.
        start_ticks: u64,
        /// The membership file of the cgroup it came from.
        back_to: String,
    },
    /// A task was moved between freezer cgroups for a gang schedule (a
    /// hierarchy of its own on v1, so kept apart from the cpuset moves of
    /// the same task); undo moves it back.
    GangMoved {
        /// Thread (v1) or process (v2) id.
        tid: u32,
        /// Its start time.
        start_ticks: u64,
        /// The membership file of the cgroup it came from.
        back_to: String,
    },
    /// A process was stopped for gang control; undo continues it.
    Stopped {
        /// Process id.
        pid: u32,
        /// Its start time.
        start_ticks: u64,
    },
}

impl Change {
    /// What identifies "the same thing" for deduplication.
    fn key(&self) -> String {
        match self {
            Change::Affinity {
                tid, start_ticks, ..
            } => format!("affinity {tid}@{start_ticks}"),
            Change::File { path, .. } => format!("file {path}"),
            Change::CgroupCreated { dir, .. } => format!("cgroup {dir}"),
            Change::CgroupMoved {
                tid, start_ticks, ..
            } => format!("moved {tid}@{start_ticks}"),
            Change::GangMoved {
                tid, start_ticks, ..
            } => format!("gang-moved {tid}@{start_ticks}"),
            Change::Stopped { pid, start_ticks } => format!("stopped {pid}@{start_ticks}"),
        }
    }
}

/// The first line of a journal: which ecosched wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Format version.
    pub version: u32,
    /// The ecosched that wrote it.
    pub owner_pid: u32,
    /// Its start time, so a reused PID is not taken for it.
    pub owner_start_ticks: u64,
}

/// A journal's text, read back: the header, the records that parsed (with
/// their 1-based line numbers) and a warning for every line that did not.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedJournal {
    /// The header, `None` when the file is empty or holds only a torn
    /// header (killed while creating it: nothing was changed yet).
    pub header: Option<Header>,
    /// The records, oldest first.
    pub changes: Vec<(usize, Change)>,
    /// One line per skipped record.
    pub warnings: Vec<String>,
}

/// Parse a journal's text. Never panics, whatever the text. A corrupt line
/// in the middle is skipped with a warning (the records around it are
/// still good, and each was written whole before its change was made); a
/// last line without its newline was torn by a kill mid-write, so its
/// change was never made, and it is reported as such. Only an unreadable
/// header followed by records is an error: without it the owner cannot be
/// checked.
pub fn parse(text: &str) -> Result<ParsedJournal, String> {
    let ends_whole = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let last = lines.len();
    let mut out = ParsedJournal {
        header: None,
        changes: Vec::new(),
        warnings: Vec::new(),
    };
    let Some((first, rest)) = lines.split_first() else {
        return Ok(out);
    };
    match serde_json::from_str::<Header>(first) {
        Ok(h) if h.version == VERSION => out.header = Some(h),
        Ok(h) => {
            return Err(format!(
                "line 1: journal format version {} (this ecosched reads {VERSION})",
                h.version
            ))
        }
        Err(_) if last == 1 && !ends_whole => {
            out.warnings.push(
                "line 1: torn header (killed while creating the journal; nothing was changed)"
                    .into(),
            );
            return Ok(out);
        }
        Err(e) => return Err(format!("line 1: not a journal header: {e}")),
    }
    for (i, line) in rest.iter().enumerate() {
        let n = i + 2;
        match serde_json::from_str::<Change>(line) {
            Ok(c) => out.changes.push((n, c)),
            Err(_) if n == last && !ends_whole => out.warnings.push(format!(
                "line {n}: torn last record (killed while writing it; that change was never made)"
            )),
            Err(e) => out.warnings.push(format!(
                "line {n}: corrupt record skipped ({e}); the others are restored"
            )),
        }
    }
    Ok(out)
}

/// What undoing a journal did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UndoReport {
    /// The journal file.
    pub journal: PathBuf,
    /// Changes put back.
    pub undone: usize,
    /// Changes about tasks that no longer exist (nothing to put back).
    pub skipped_gone: usize,
    /// Changes that could not be undone, with the reason.
    pub failed: Vec<String>,
    /// Records skipped when reading the journal back (corrupt, torn or
    /// naming something ecosched never changes), with the reason.
    pub warnings: Vec<String>,
}

/// An open journal owned by this process.
#[derive(Debug)]
pub struct Journal {
    root: FsRoot,
    path: PathBuf,
    file: Option<File>,
    changes: Vec<Change>,
    seen: HashSet<String>,
    /// Each thread's journalled original affinity, by (tid, start ticks).
    affinity: HashMap<(u32, u64), CpuSet>,
    /// The header line, written again when the file is compacted.
    header: String,
    /// How many records trigger the next compaction.
    compact_at: usize,
}

fn io_err(path: &Path, e: std::io::Error) -> LinuxError {
    LinuxError::from_io(path, e, "root (to write the restore journal)")
}

impl Journal {
    /// Start a journal for this process in `state_dir` (made 0700 if
    /// missing; refused when others may write to it).
    pub fn create(state_dir: &Path, root: FsRoot) -> Result<Self, LinuxError> {
        Self::create_tagged(state_dir, root, None)
    }

    /// [`Journal::create`] for one of several journals a process keeps at
    /// once (the daemon keeps one per managed group, so that a group can be
    /// undone on its own): `journal-<pid>-<tag>.jsonl`. `ecosched restore`
    /// finds it like any other, by its header's owner.
    pub fn create_tagged(
        state_dir: &Path,
        root: FsRoot,
        tag: Option<&str>,
    ) -> Result<Self, LinuxError> {
        journal_safety::secure_state_dir(state_dir)?;
        let pid = std::process::id();
        let path = match tag {
            None => state_dir.join(format!("journal-{pid}.jsonl")),
            Some(tag) => state_dir.join(format!("journal-{pid}-{tag}.jsonl")),
        };
        let header = Header {
            version: VERSION,
            owner_pid: pid,
            // The owner is always this live process, whatever root the
            // changes are made under.
            owner_start_ticks: start_ticks(&FsRoot::live(), pid)?,
        };
        // Never truncate: a journal with this PID is a killed run's (the
        // PID was reused) and still holds what to put back.
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => io_err(
                    &path,
                    std::io::Error::other(
                        "a journal of an earlier run with this PID is still there; run `ecosched restore` first",
                    ),
                ),
                _ => io_err(&path, e),
            })?;
        let line = serde_json::to_string(&header).map_err(|e| io_err(&path, e.into()))?;
        writeln!(file, "{line}").map_err(|e| io_err(&path, e))?;
        file.sync_all().map_err(|e| io_err(&path, e))?;
        // Make the new directory entry durable too.
        File::open(state_dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_err(state_dir, e))?;
        Ok(Journal {
            root,
            path,
            file: Some(file),
            changes: Vec::new(),
            seen: HashSet::new(),
            affinity: HashMap::new(),
            header: line,
            compact_at: COMPACT_AT_LEAST,
        })
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root changes are made under.
    pub fn root(&self) -> &FsRoot {
        &self.root
    }

    /// Durably record `change` before it is made. A change to something
    /// already recorded is not written again: the first record holds the
    /// original value.
    pub fn record(&mut self, change: Change) -> Result<(), LinuxError> {
        if self.seen.contains(&change.key()) {
            return Ok(());
        }
        if self.changes.len() >= self.compact_at {
            self.compact()?;
        }
        self.seen.insert(change.key());
        let path = self.path.clone();
        let Some(file) = self.file.as_mut() else {
            return Err(io_err(
                &path,
                std::io::Error::other("journal already closed"),
            ));
        };
        let line = serde_json::to_string(&change).map_err(|e| io_err(&path, e.into()))?;
        writeln!(file, "{line}").map_err(|e| io_err(&path, e))?;
        file.sync_data().map_err(|e| io_err(&path, e))?;
        if let Some((task, before)) = affinity_of(&change) {
            self.affinity.insert(task, before);
        }
        self.changes.push(change);
        Ok(())
    }

    /// How many records the journal holds (in memory and on disk).
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    /// Whether the journal holds no record.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Drop the records of tasks that have exited (nothing is left to undo
    /// for them) and rewrite the file with the rest. The new file is
    /// complete and synced before it replaces the old one, so `ecosched
    /// restore` after a kill finds one or the other, never a part. Its name
    /// starts with a dot, which restore does not read.
    fn compact(&mut self) -> Result<(), LinuxError> {
        let root = &self.root;
        self.changes
            .retain(|c| matches!(c, Change::CgroupCreated { .. }) || still_in_place(root, c));
        self.seen = self.changes.iter().map(Change::key).collect();
        self.affinity = self.changes.iter().filter_map(affinity_of).collect();
        self.compact_at = COMPACT_AT_LEAST.max(2 * self.changes.len());
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("journal");
        let tmp = dir.join(format!(".{name}.compacting"));
        let _ = std::fs::remove_file(&tmp);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| io_err(&tmp, e))?;
        let mut text = format!("{}\n", self.header);
        for change in &self.changes {
            let line = serde_json::to_string(change).map_err(|e| io_err(&tmp, e.into()))?;
            text.push_str(&line);
            text.push('\n');
        }
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| io_err(&tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| io_err(&self.path, e))?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_err(dir, e))?;
        self.file = Some(file);
        Ok(())
    }

    /// The original affinity journalled for thread `tid` started at
    /// `start_ticks`, if ecosched has changed it.
    pub fn affinity_before(&self, tid: u32, start_ticks: u64) -> Option<&CpuSet> {
        self.affinity.get(&(tid, start_ticks))
    }

    /// Whether ecosched has changed any thread's affinity.
    pub fn changed_affinity(&self) -> bool {
        !self.affinity.is_empty()
    }

    /// Write `value` to the kernel file `rel`, journalling its old contents.
    pub fn write_file(
        &mut self,
        rel: &str,
        value: &str,
        capability: &str,
    ) -> Result<(), LinuxError> {
        let before = self.root.read(rel, "kernel file")?;
        self.record(Change::File {
            path: rel.to_string(),
            before,
        })?;
        self.root.write(rel, value, capability)
    }

    /// Undo everything, newest first, and remove the journal when all of it
    /// was put back. Idempotent: a second call does nothing.
    pub fn undo(&mut self) -> UndoReport {
        if self.file.is_none() {
            // Already undone; anything that failed then stays on disk for
            // `ecosched restore`.
            return UndoReport {
                journal: self.path.clone(),
                ..UndoReport::default()
            };
        }
        let changes = std::mem::take(&mut self.changes);
        self.affinity.clear();
        let report = undo_changes(&self.root, &self.path, &changes);
        self.file = None;
        if report.failed.is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
        report
    }
}

/// The thread and original CPUs of an affinity change, for the index
/// [`Journal::affinity_before`] reads.
fn affinity_of(change: &Change) -> Option<((u32, u64), CpuSet)> {
    match change {
        Change::Affinity {
            tid,
            start_ticks,
            before,
        } => Some(((*tid, *start_ticks), before.clone())),
        _ => None,
    }
}

fn undo_changes(root: &FsRoot, journal: &Path, changes: &[Change]) -> UndoReport {
    let mut report = UndoReport {
        journal: journal.to_path_buf(),
        ..UndoReport::default()
    };
    for change in changes.iter().rev() {
        match undo_one(root, change) {
            Ok(true) => report.undone += 1,
            Ok(false) => report.skipped_gone += 1,
            Err(LinuxError::Gone { .. }) => report.skipped_gone += 1,
            Err(e) => report.failed.push(e.to_string()),
        }
    }
    report
}

/// How long a cgroup may stay busy with exiting tasks before its removal
/// is reported as failed.
const BUSY_RETRIES: u32 = 25;
const BUSY_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

/// Move every task of cgroup `dir` to `parent` and remove `dir`. A task
/// that has exited but is not yet reaped (a zombie: its parent, often not
/// ecosched, reaps it a moment later) cannot be moved and keeps the cgroup
/// busy (`EBUSY`), so the removal is retried for up to half a second.
fn remove_cgroup(root: &FsRoot, dir: &str, parent: &str, members: &str) -> Result<(), LinuxError> {
    let mut attempt = 0;
    loop {
        let left = root.read(&format!("{dir}/{members}"), "cgroup members")?;
        let mut stuck = None;
        for tid in left.lines().map(str::trim).filter(|l| !l.is_empty()) {
            // A task may exit between listing and moving: that is fine.
            match root.write(&format!("{parent}/{members}"), tid, "root") {
                Ok(()) => {}
                Err(LinuxError::Io { .. }) if !root.exists(&format!("proc/{tid}")) => {}
                Err(e) => stuck = Some(e),
            }
        }
        let result = match stuck {
            Some(e) => Err(e),
            None => root.remove_dir(dir, "root"),
        };
        match result {
            Err(LinuxError::Io { .. }) if attempt < BUSY_RETRIES && root.exists(dir) => {
                attempt += 1;
                std::thread::sleep(BUSY_PAUSE);
            }
            other => return other,
        }
    }
}

/// Put one change back; `Ok(false)` when the task it concerns is gone.
fn undo_one(root: &FsRoot, change: &Change) -> Result<bool, LinuxError> {
    match change {
        Change::Affinity {
            tid,
            start_ticks,
            before,
        } => {
            if !same_task(root, *tid, *start_ticks) {
                return Ok(false);
            }
            affinity::set(*tid, before)?;
        }
        Change::File { path, before } => root.write(path, before, "root")?,
        Change::CgroupCreated {
            dir,
            parent,
            members,
        } => {
            if !root.exists(dir) {
                return Ok(false);
            }
            remove_cgroup(root, dir, parent, members)?;
        }
        Change::CgroupMoved {
            tid,
            start_ticks,
            back_to,
        }
        | Change::GangMoved {
            tid,
            start_ticks,
            back_to,
        } => {
            if !same_task(root, *tid, *start_ticks) {
                return Ok(false);
            }
            root.write(back_to, &tid.to_string(), "root")?;
        }
        Change::Stopped { pid, start_ticks } => {
            if !same_task(root, *pid, *start_ticks) {
                return Ok(false);
            }
            gang::resume(*pid)?;
        }
    }
    Ok(true)
}

/// What `ecosched restore` found for one journal.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RestoreOutcome {
    /// Undone (see the report for anything that could not be).
    Restored(UndoReport),
    /// Left alone: its owner is still running and will undo it itself.
    OwnerRunning {
        /// The journal.
        journal: PathBuf,
        /// The running ecosched.
        pid: u32,
    },
    /// Not acted on at all: it is not safe to trust (owner, permissions)
    /// or cannot be read; the reason says which.
    Refused {
        /// The journal.
        journal: PathBuf,
        /// Why.
        reason: String,
    },
}

fn journal_paths(state_dir: &Path) -> Result<Vec<PathBuf>, LinuxError> {
    let entries = match std::fs::read_dir(state_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(state_dir, e)),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("journal-") && n.ends_with(".jsonl"))
        })
        .collect();
    paths.sort();
    Ok(paths)
}

/// Whether the ecosched of `header` is still running (and is not us).
fn owner_running(header: &Header) -> bool {
    header.owner_pid != std::process::id()
        && same_task(&FsRoot::live(), header.owner_pid, header.owner_start_ticks)
}

/// Undo every journal in `state_dir` whose owner is no longer running, and
/// remove the hint files such runs left.
pub fn restore(state_dir: &Path, root: &FsRoot) -> Result<Vec<RestoreOutcome>, LinuxError> {
    let allowed = AllowedPaths::of(root)?;
    let mut out = Vec::new();
    for path in journal_paths(state_dir)? {
        let text = match journal_safety::read_trusted(&path) {
            Ok(t) => t,
            Err(reason) => {
                out.push(RestoreOutcome::Refused {
                    journal: path,
                    reason,
                });
                continue;
            }
        };
        let parsed = match parse(&text) {
            Ok(p) => p,
            Err(reason) => {
                out.push(RestoreOutcome::Refused {
                    journal: path,
                    reason,
                });
                continue;
            }
        };
        let Some(header) = parsed.header else {
            // Created but never (wholly) written: nothing was changed.
            std::fs::remove_file(&path).map_err(|e| io_err(&path, e))?;
            out.push(RestoreOutcome::Restored(UndoReport {
                journal: path,
                warnings: parsed.warnings,
                ..UndoReport::default()
            }));
            continue;
        };
        if owner_running(&header) {
            out.push(RestoreOutcome::OwnerRunning {
                journal: path,
                pid: header.owner_pid,
            });
            continue;
        }
        let mut warnings = parsed.warnings;
        let mut changes = Vec::new();
        for (n, change) in parsed.changes {
            match allowed.check(&change) {
                Ok(()) => changes.push(change),
                Err(why) => warnings.push(format!("line {n}: record refused: {why}")),
            }
        }
        // In line order, as someone inspecting the file reads it.
        warnings.sort_by_key(|w| {
            w.strip_prefix("line ")
                .and_then(|r| r.split(':').next())
                .and_then(|n| n.parse::<usize>().ok())
        });
        let mut report = undo_changes(root, &path, &changes);
        report.warnings = warnings;
        if report.failed.is_empty() {
            std::fs::remove_file(&path).map_err(|e| io_err(&path, e))?;
        }
        // The dead run's hint file (see `crate::hints`) is of no use to
        // anyone now, whatever could not be undone.
        remove_hint(state_dir, &hint_name(&path, header.owner_pid))?;
        out.push(RestoreOutcome::Restored(report));
    }
    remove_orphan_hints(state_dir)?;
    Ok(out)
}

/// The hint file beside a journal: `hint-<pid>`, or `hint-<pid>-<tag>`
/// for a tagged journal (a daemon group's).
fn hint_name(journal: &Path, pid: u32) -> String {
    journal
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("journal-"))
        .and_then(|n| n.strip_suffix(".jsonl"))
        .map_or_else(|| format!("hint-{pid}"), |n| format!("hint-{n}"))
}

fn remove_hint(state_dir: &Path, name: &str) -> Result<(), LinuxError> {
    let hint = state_dir.join(name);
    match std::fs::remove_file(&hint) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(&hint, e)),
    }
}

/// Hint files with no journal beside them and no process of their PID:
/// left by a run killed after its journal was undone or removed.
fn remove_orphan_hints(state_dir: &Path) -> Result<(), LinuxError> {
    let Ok(entries) = std::fs::read_dir(state_dir) else {
        return Ok(());
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("hint-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let journal = state_dir.join(format!("journal-{pid}.jsonl"));
        if !journal.exists() && !Path::new(&format!("/proc/{pid}")).exists() {
            remove_hint(state_dir, &format!("hint-{pid}"))?;
        }
    }
    Ok(())
}

/// One line per journal in `state_dir` left by an ecosched that is no
/// longer running, saying what it still holds and naming `ecosched
/// restore`. `run` prints these when it starts: otherwise the dead run's
/// tasks stay confined (or frozen) without anyone saying so.
pub fn stale_notices(state_dir: &Path, root: &FsRoot) -> Vec<String> {
    let Ok(paths) = journal_paths(state_dir) else {
        return Vec::new();
    };
    let mut notices = Vec::new();
    for path in paths {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let parsed = match parse(&text) {
            Ok(p) => p,
            Err(e) => {
                notices.push(format!(
                    "{} is unreadable ({e}); inspect it, then remove it or run `ecosched restore --state-dir {}`",
                    path.display(),
                    state_dir.display()
                ));
                continue;
            }
        };
        let Some(header) = parsed.header else {
            continue;
        };
        if owner_running(&header) || header.owner_pid == std::process::id() {
            continue;
        }
        let in_place = parsed
            .changes
            .iter()
            .filter(|(_, c)| still_in_place(root, c))
            .count();
        notices.push(format!(
            "ecosched {} ended without undoing its changes ({} journalled, {in_place} still in place: tasks confined, frozen or cgroups left); run `ecosched restore --state-dir {}` (journal {})",
            header.owner_pid,
            parsed.changes.len(),
            state_dir.display(),
            path.display()
        ));
    }
    notices
}

/// Whether what `change` did is still there to undo (its task alive, its
/// cgroup present); a file change always counts.
fn still_in_place(root: &FsRoot, change: &Change) -> bool {
    match change {
        Change::Affinity {
            tid, start_ticks, ..
        }
        | Change::CgroupMoved {
            tid, start_ticks, ..
        }
        | Change::GangMoved {
            tid, start_ticks, ..
        } => same_task(root, *tid, *start_ticks),
        Change::Stopped { pid, start_ticks } => same_task(root, *pid, *start_ticks),
        Change::CgroupCreated { dir, .. } => root.exists(dir),
        Change::File { .. } => true,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn fixture() -> (tempfile::TempDir, FsRoot) {
        let dir = tempfile::tempdir().unwrap();
        let gov = dir.path().join("sys/devices/system/cpu/cpufreq/policy0");
        std::fs::create_dir_all(&gov).unwrap();
        std::fs::write(gov.join("scaling_governor"), "ondemand\n").unwrap();
        let root = FsRoot::writable_fixture(dir.path());
        (dir, root)
    }

    const GOV: &str = "sys/devices/system/cpu/cpufreq/policy0/scaling_governor";

    #[test]
    fn a_change_is_on_disk_before_it_is_made_and_undone_in_reverse() {
        let (_d, root) = fixture();
        let state = tempfile::tempdir().unwrap();
        let mut j = Journal::create(state.path(), root.clone()).unwrap();
        j.write_file(GOV, "performance", "root").unwrap();
        j.write_file(GOV, "powersave", "root").unwrap();
        let on_disk = std::fs::read_to_string(j.path()).unwrap();
        assert_eq!(
            on_disk.lines().count(),
            2,
            "header + the first change only:\n{on_disk}"
        );
        assert!(on_disk.contains("\"before\":\"ondemand\""), "{on_disk}");
        assert_eq!(root.read(GOV, "").unwrap(), "powersave");
        let report = j.undo();
        assert_eq!((report.undone, report.failed.len()), (1, 0));
        assert_eq!(root.read(GOV, "").unwrap(), "ondemand");
        assert!(!j.path().exists(), "a fully undone journal is removed");
        assert_eq!(j.undo().undone, 0, "undo is idempotent");
    }

    #[test]
    fn exited_tasks_records_are_dropped_so_the_journal_follows_the_tasks_alive() {
        let (dir, root) = fixture();
        // This process is the one live task of the fixture.
        let pid = std::process::id();
        let proc_dir = dir.path().join(format!("proc/{pid}"));
        std::fs::create_dir_all(&proc_dir).unwrap();
        std::fs::copy("/proc/self/stat", proc_dir.join("stat")).unwrap();
        let before = affinity::get(pid).unwrap();
        let state = tempfile::tempdir().unwrap();
        let mut j = Journal::create(state.path(), root.clone()).unwrap();
        j.write_file(GOV, "performance", "root").unwrap();
        j.record(Change::Affinity {
            tid: pid,
            start_ticks: start_ticks(&root, pid).unwrap(),
            before: before.clone(),
        })
        .unwrap();
        let exited = 10 * COMPACT_AT_LEAST as u32;
        for tid in 0..exited {
            j.record(Change::Affinity {
                tid: 4_000_000 + tid,
                start_ticks: 1,
                before: CpuSet::single(ecosched_model::CpuId(0)),
            })
            .unwrap();
            assert!(j.len() <= COMPACT_AT_LEAST, "{} records", j.len());
        }
        let parsed = parse(&std::fs::read_to_string(j.path()).unwrap()).unwrap();
        assert_eq!(parsed.changes.len(), j.len(), "the file is the journal");
        assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
        assert!(
            parsed.changes.len() < COMPACT_AT_LEAST,
            "{} of {exited} exited tasks' records kept",
            parsed.changes.len()
        );
        // The file change and the live task's record survive every pass.
        assert!(matches!(parsed.changes[0].1, Change::File { .. }));
        assert!(j
            .affinity_before(pid, start_ticks(&root, pid).unwrap())
            .is_some());
        assert!(state.path().read_dir().unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with('.')));
        let report = j.undo();
        assert_eq!(report.failed, Vec::<String>::new());
        assert_eq!(report.undone, 2, "{report:?}");
        assert_eq!(root.read(GOV, "").unwrap(), "ondemand");
        assert_eq!(affinity::get(pid).unwrap(), before);
    }

    #[test]
    fn a_live_threads_affinity_is_put_back() {
        let state = tempfile::tempdir().unwrap();
        let live = FsRoot::live();
        let mut j = Journal::create(state.path(), live.clone()).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
            done_rx.recv().unwrap();
        });
        let tid = rx.recv().unwrap();
        let before = affinity::get(tid).unwrap();
        j.record(Change::Affinity {
            tid,
            start_ticks: start_ticks(&live, tid).unwrap(),
            before: before.clone(),
        })
        .unwrap();
        affinity::set(tid, &CpuSet::single(before.first().unwrap())).unwrap();
        let report = j.undo();
        assert_eq!((report.undone, report.skipped_gone), (1, 0), "{report:?}");
        assert_eq!(affinity::get(tid).unwrap(), before);
        done_tx.send(()).unwrap();
        t.join().unwrap();
    }

    #[test]
    fn restore_undoes_a_dead_owners_journal_and_skips_a_running_one() {
        let (_d, root) = fixture();
        let state = tempfile::tempdir().unwrap();
        root.write(GOV, "performance", "root").unwrap();
        // A journal left by a killed ecosched (no such process), with a
        // torn last line from the moment it was killed.
        let dead = format!(
            "{{\"version\":1,\"owner_pid\":4194311,\"owner_start_ticks\":5}}\n\
             {{\"kind\":\"file\",\"path\":\"{GOV}\",\"before\":\"ondemand\"}}\n\
             {{\"kind\":\"affinity\",\"tid\":4194303,\"start_ticks\":9,\"before\":\"0\"}}\n\
             {{\"kind\":\"file\",\"pa"
        );
        std::fs::write(state.path().join("journal-4194311.jsonl"), dead).unwrap();
        // One whose owner (init) is alive.
        let init = start_ticks(&FsRoot::live(), 1).unwrap();
        let running = format!("{{\"version\":1,\"owner_pid\":1,\"owner_start_ticks\":{init}}}\n");
        std::fs::write(state.path().join("journal-1.jsonl"), running).unwrap();

        let outcomes = restore(state.path(), &root).unwrap();
        assert_eq!(outcomes.len(), 2, "{outcomes:?}");
        assert!(matches!(
            outcomes[0],
            RestoreOutcome::OwnerRunning { pid: 1, .. }
        ));
        let RestoreOutcome::Restored(r) = &outcomes[1] else {
            panic!("{outcomes:?}")
        };
        assert_eq!(
            (r.undone, r.skipped_gone, r.failed.len()),
            (1, 1, 0),
            "{r:?}"
        );
        assert_eq!(root.read(GOV, "").unwrap(), "ondemand");
        assert!(!state.path().join("journal-4194311.jsonl").exists());
        assert!(state.path().join("journal-1.jsonl").exists());
    }

    #[test]
    fn restore_puts_a_live_process_affinity_back_from_a_killed_owners_journal() {
        let live = FsRoot::live();
        let mut sleeper = std::process::Command::new("sleep")
            .arg("10")
            .spawn()
            .unwrap();
        let pid = sleeper.id();
        let before = affinity::get(pid).unwrap();
        let ticks = start_ticks(&live, pid).unwrap();
        affinity::set(pid, &CpuSet::single(before.first().unwrap())).unwrap();
        let state = tempfile::tempdir().unwrap();
        let change = Change::Affinity {
            tid: pid,
            start_ticks: ticks,
            before: before.clone(),
        };
        let text = format!(
            "{{\"version\":1,\"owner_pid\":4194311,\"owner_start_ticks\":5}}\n{}\n",
            serde_json::to_string(&change).unwrap()
        );
        std::fs::write(state.path().join("journal-4194311.jsonl"), text).unwrap();
        let outcomes = restore(state.path(), &live).unwrap();
        assert!(
            matches!(&outcomes[..], [RestoreOutcome::Restored(r)] if r.undone == 1),
            "{outcomes:?}"
        );
        assert_eq!(affinity::get(pid).unwrap(), before);
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }

    #[test]
    fn a_corrupt_middle_record_is_skipped_with_a_warning_and_the_rest_restored() {
        let (_d, root) = fixture();
        let state = tempfile::tempdir().unwrap();
        root.write(GOV, "performance", "root").unwrap();
        let text = format!(
            "{{\"version\":1,\"owner_pid\":4194311,\"owner_start_ticks\":5}}\n\
             not json\n\
             {{\"kind\":\"file\",\"path\":\"{GOV}\",\"before\":\"ondemand\"}}\n\
             {{\"kind\":\"file\",\"path\":\"etc/passwd\",\"before\":\"planted\"}}\n"
        );
        std::fs::write(state.path().join("journal-4194311.jsonl"), text).unwrap();
        std::fs::write(state.path().join("hint-4194311"), "2\n").unwrap();
        let outcomes = restore(state.path(), &root).unwrap();
        let [RestoreOutcome::Restored(r)] = &outcomes[..] else {
            panic!("{outcomes:?}")
        };
        assert_eq!((r.undone, r.failed.len()), (1, 0), "{r:?}");
        assert_eq!(r.warnings.len(), 2, "{r:?}");
        assert!(
            r.warnings[0].contains("line 2: corrupt record skipped"),
            "{r:?}"
        );
        assert!(
            r.warnings[1].contains("line 4: record refused")
                && r.warnings[1].contains("etc/passwd"),
            "{r:?}"
        );
        assert_eq!(root.read(GOV, "").unwrap(), "ondemand");
        assert!(
            !root.exists("etc/passwd"),
            "the planted record wrote nothing"
        );
        assert!(!state.path().join("hint-4194311").exists(), "hint removed");
    }

    #[test]
    fn a_torn_last_line_or_header_is_reported_not_refused() {
        let p = parse("{\"version\":1,\"owner_pid\":7,\"owner_start_ticks\":5}\n{\"kind\":\"fi")
            .unwrap();
        assert_eq!(p.changes.len(), 0);
        assert!(p.warnings[0].contains("torn last record"), "{p:?}");
        let p = parse("{\"version\":1,\"own").unwrap();
        assert_eq!(p.header, None);
        assert!(p.warnings[0].contains("torn header"), "{p:?}");
        assert!(parse("garbage\n{}\n").unwrap_err().contains("line 1"));
        assert!(
            parse("{\"version\":9,\"owner_pid\":7,\"owner_start_ticks\":5}\n")
                .unwrap_err()
                .contains("version 9")
        );
    }

    #[test]
    fn a_journal_others_may_write_is_refused_whole() {
        use std::os::unix::fs::PermissionsExt;
        let (_d, root) = fixture();
        let state = tempfile::tempdir().unwrap();
        root.write(GOV, "performance", "root").unwrap();
        let path = state.path().join("journal-4194311.jsonl");
        let text = format!(
            "{{\"version\":1,\"owner_pid\":4194311,\"owner_start_ticks\":5}}\n\
             {{\"kind\":\"file\",\"path\":\"{GOV}\",\"before\":\"ondemand\"}}\n"
        );
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let outcomes = restore(state.path(), &root).unwrap();
        assert!(
            matches!(&outcomes[..], [RestoreOutcome::Refused { reason, .. }] if reason.contains("writable by group or others")),
            "{outcomes:?}"
        );
        assert_eq!(
            root.read(GOV, "").unwrap(),
            "performance",
            "nothing applied"
        );
        assert!(path.exists(), "kept for inspection");
        // A symlink planted as a journal is not followed.
        std::fs::remove_file(&path).unwrap();
        let target = state.path().join("elsewhere");
        std::fs::write(&target, "").unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let outcomes = restore(state.path(), &root).unwrap();
        assert!(
            matches!(&outcomes[..], [RestoreOutcome::Refused { .. }]),
            "{outcomes:?}"
        );
    }

    #[test]
    fn a_later_run_is_told_about_a_dead_runs_journal() {
        let (_d, root) = fixture();
        let state = tempfile::tempdir().unwrap();
        assert!(stale_notices(state.path(), &root).is_empty());
        let text = format!(
            "{{\"version\":1,\"owner_pid\":4194311,\"owner_start_ticks\":5}}\n\
             {{\"kind\":\"file\",\"path\":\"{GOV}\",\"before\":\"ondemand\"}}\n"
        );
        std::fs::write(state.path().join("journal-4194311.jsonl"), text).unwrap();
        let mine = Journal::create(state.path(), root.clone()).unwrap();
        let notices = stale_notices(state.path(), &root);
        assert_eq!(
            notices.len(),
            1,
            "only the dead run's, not ours: {notices:?}"
        );
        assert!(
            notices[0].contains("ecosched 4194311") && notices[0].contains("ecosched restore"),
            "{notices:?}"
        );
        drop(mine);
    }

    #[test]
    fn a_journal_with_this_pid_is_never_truncated() {
        let (_d, root) = fixture();
        let state = tempfile::tempdir().unwrap();
        let path = state
            .path()
            .join(format!("journal-{}.jsonl", std::process::id()));
        std::fs::write(&path, "left by a killed run\n").unwrap();
        let err = Journal::create(state.path(), root).unwrap_err().to_string();
        assert!(err.contains("ecosched restore"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "left by a killed run\n"
        );
    }

    proptest::proptest! {
        #[test]
        fn parsing_random_text_never_panics(text in "\\PC{0,400}") {
            let _ = parse(&text);
        }

        #[test]
        fn parsing_damaged_journals_never_panics(cut in 0usize..400, noise in proptest::collection::vec(proptest::num::u8::ANY, 0..40)) {
            let good = "{\"version\":1,\"owner_pid\":7,\"owner_start_ticks\":5}\n\
                {\"kind\":\"affinity\",\"tid\":9,\"start_ticks\":3,\"before\":\"0-3\"}\n\
                {\"kind\":\"stopped\",\"pid\":9,\"start_ticks\":3}\n";
            let mut bytes = good.as_bytes()[..cut.min(good.len())].to_vec();
            bytes.extend(noise);
            let text = String::from_utf8_lossy(&bytes);
            if let Ok(p) = parse(&text) {
                let mounts = AllowedPaths::from_mounts("cgroup /sys/fs/cgroup/cpuset cgroup rw 0 0\n");
                for (_, c) in &p.changes {
                    let _ = mounts.check(c);
                }
            }
        }
    }
}
