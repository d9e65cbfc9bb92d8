//! Compaction: a daemon changes the affinity of every task it adopts, and
//! over weeks most of those exit. So that neither the journal nor its file
//! grows with the run's length, the records of exited tasks are dropped
//! whenever the records have doubled since the last compaction (at least
//! [`COMPACT_AT_LEAST`]). Memory and file follow the tasks alive,
//! amortised O(1) a record.

use crate::fsroot::FsRoot;
use crate::identity::same_task;
use crate::journal::file::Change;

/// The fewest records a journal holds before it drops exited tasks'.
pub const COMPACT_AT_LEAST: usize = 64;

/// Keep only the records whose change is still there to undo; a created
/// cgroup is always kept (undo removes it, and what is left in it).
pub(super) fn keep_in_place(root: &FsRoot, changes: &mut Vec<Change>) {
    changes.retain(|c| matches!(c, Change::CgroupCreated { .. }) || still_in_place(root, c));
}

/// How many records trigger the compaction after one that kept `kept`.
pub(super) fn next_threshold(kept: usize) -> usize {
    COMPACT_AT_LEAST.max(2 * kept)
}

/// Whether what `change` did is still there to undo (its task alive, its
/// cgroup present); a file change always counts.
pub(super) fn still_in_place(root: &FsRoot, change: &Change) -> bool {
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
    use crate::affinity;
    use crate::identity::start_ticks;
    use crate::journal::file::parse;
    use crate::journal::testing::{fixture, GOV};
    use crate::journal::Journal;
    use ecosched_model::CpuSet;

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
        let parsed = parse(&std::fs::read(j.path()).unwrap()).unwrap();
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
}
