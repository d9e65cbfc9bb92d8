//! Undoing changes, newest first: each put back as it was, unless the task
//! it concerns has exited (or its PID now names another task), which is
//! normal and counted apart from failures.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::identity::same_task;
use crate::journal::file::Change;
use crate::{affinity, gang};
use serde::Serialize;
use std::path::{Path, PathBuf};

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

/// Undo `changes` (of journal `journal`) newest first.
pub(super) fn undo_changes(root: &FsRoot, journal: &Path, changes: &[Change]) -> UndoReport {
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
