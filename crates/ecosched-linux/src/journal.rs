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

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::identity::{same_task, start_ticks};
use crate::{affinity, gang};
use ecosched_model::CpuSet;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The directory journals live in by default: a tmpfs that survives the
/// process but not a reboot — which resets everything ecosched changes.
pub const DEFAULT_STATE_DIR: &str = "/run/ecosched";

const VERSION: u32 = 1;

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

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    version: u32,
    owner_pid: u32,
    owner_start_ticks: u64,
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
}

/// An open journal owned by this process.
#[derive(Debug)]
pub struct Journal {
    root: FsRoot,
    path: PathBuf,
    file: Option<File>,
    changes: Vec<Change>,
    seen: HashSet<String>,
}

fn io_err(path: &Path, e: std::io::Error) -> LinuxError {
    LinuxError::from_io(path, e, "root (to write the restore journal)")
}

impl Journal {
    /// Start a journal for this process in `state_dir`.
    pub fn create(state_dir: &Path, root: FsRoot) -> Result<Self, LinuxError> {
        std::fs::create_dir_all(state_dir).map_err(|e| io_err(state_dir, e))?;
        let pid = std::process::id();
        let path = state_dir.join(format!("journal-{pid}.jsonl"));
        let header = Header {
            version: VERSION,
            owner_pid: pid,
            // The owner is always this live process, whatever root the
            // changes are made under.
            owner_start_ticks: start_ticks(&FsRoot::live(), pid)?,
        };
        let mut file = File::create(&path).map_err(|e| io_err(&path, e))?;
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
        if !self.seen.insert(change.key()) {
            return Ok(());
        }
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
        self.changes.push(change);
        Ok(())
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
        let report = undo_changes(&self.root, &self.path, &changes);
        self.file = None;
        if report.failed.is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
        report
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
            let left = root.read(&format!("{dir}/{members}"), "cgroup members")?;
            for tid in left.lines().map(str::trim).filter(|l| !l.is_empty()) {
                // A task may exit between listing and moving: that is fine.
                match root.write(&format!("{parent}/{members}"), tid, "root") {
                    Ok(()) => {}
                    Err(LinuxError::Io { .. }) if !root.exists(&format!("proc/{tid}")) => {}
                    Err(e) => return Err(e),
                }
            }
            root.remove_dir(dir, "root")?;
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
}

/// Undo every journal in `state_dir` whose owner is no longer running.
pub fn restore(state_dir: &Path, root: &FsRoot) -> Result<Vec<RestoreOutcome>, LinuxError> {
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
    let mut out = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|e| io_err(&path, e))?;
        let mut lines = text.lines().enumerate();
        let header: Header = match lines.next() {
            Some((_, l)) => serde_json::from_str(l)
                .map_err(|e| LinuxError::parse(&path, l, format!("journal header: {e}")))?,
            None => {
                // Created but never written: nothing was changed.
                let _ = std::fs::remove_file(&path);
                continue;
            }
        };
        if header.owner_pid != std::process::id()
            && same_task(&FsRoot::live(), header.owner_pid, header.owner_start_ticks)
        {
            out.push(RestoreOutcome::OwnerRunning {
                journal: path,
                pid: header.owner_pid,
            });
            continue;
        }
        let mut changes = Vec::new();
        for (n, line) in lines {
            match serde_json::from_str::<Change>(line) {
                Ok(c) => changes.push(c),
                // A torn last line (killed mid-write) was never acted on.
                Err(_) if n + 1 == text.lines().count() => {}
                Err(e) => {
                    return Err(LinuxError::parse(
                        &path,
                        line,
                        format!("journal line {}: {e}", n + 1),
                    ))
                }
            }
        }
        let report = undo_changes(root, &path, &changes);
        if report.failed.is_empty() {
            std::fs::remove_file(&path).map_err(|e| io_err(&path, e))?;
            // The dead run's hint file (see `crate::hints`) is of no use
            // to anyone now.
            let _ = std::fs::remove_file(state_dir.join(format!("hint-{}", header.owner_pid)));
        }
        out.push(RestoreOutcome::Restored(report));
    }
    Ok(out)
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
             {{\"kind\":\"affinity\",\"tid\":4194312,\"start_ticks\":9,\"before\":\"0\"}}\n\
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
    fn a_corrupt_journal_is_refused_with_its_line() {
        let (_d, root) = fixture();
        let state = tempfile::tempdir().unwrap();
        let text = "{\"version\":1,\"owner_pid\":4194311,\"owner_start_ticks\":5}\nnot json\n{}\n";
        std::fs::write(state.path().join("journal-4194311.jsonl"), text).unwrap();
        let err = restore(state.path(), &root).unwrap_err().to_string();
        assert!(err.contains("journal line 2"), "{err}");
    }
}
