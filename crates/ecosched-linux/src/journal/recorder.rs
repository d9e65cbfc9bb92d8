//! The journal a process keeps while it changes the machine: each change
//! recorded (once per thing changed, the first record holding the
//! original) and on disk before it is made, an index of the original
//! affinities, compaction as the records grow, and the undo at the end.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::identity::start_ticks;
use crate::journal::compaction::{self, COMPACT_AT_LEAST};
use crate::journal::file::{io_err, Change, Header, JournalFile, VERSION};
use crate::journal::trust;
use crate::journal::undo::{undo_changes, UndoReport};
use ecosched_model::CpuSet;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The directory journals live in by default: a tmpfs that survives the
/// process but not a reboot — which resets everything ecosched changes.
pub const DEFAULT_STATE_DIR: &str = "/run/ecosched";

/// An open journal owned by this process.
#[derive(Debug)]
pub struct Journal {
    root: FsRoot,
    path: PathBuf,
    /// `None` once undone.
    file: Option<JournalFile>,
    changes: Vec<Change>,
    seen: HashSet<String>,
    /// Each thread's journalled original affinity, by (tid, start ticks).
    affinity: HashMap<(u32, u64), CpuSet>,
    /// The header line, written again when the file is compacted.
    header: String,
    /// How many records trigger the next compaction.
    compact_at: usize,
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
        trust::secure_state_dir(state_dir)?;
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
        let (file, line) = JournalFile::create(&path, &header)?;
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
        let Some(file) = self.file.as_mut() else {
            return Err(io_err(
                &self.path,
                std::io::Error::other("journal already closed"),
            ));
        };
        file.append(&change)?;
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
    /// for them) and rewrite the file with the rest.
    fn compact(&mut self) -> Result<(), LinuxError> {
        compaction::keep_in_place(&self.root, &mut self.changes);
        self.seen = self.changes.iter().map(Change::key).collect();
        self.affinity = self.changes.iter().filter_map(affinity_of).collect();
        self.compact_at = compaction::next_threshold(self.changes.len());
        if let Some(file) = self.file.as_mut() {
            file.rewrite(&self.header, &self.changes)?;
        }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::affinity;
    use crate::journal::testing::{fixture, GOV};

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
}
