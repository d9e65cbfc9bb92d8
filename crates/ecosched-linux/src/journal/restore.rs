//! `ecosched restore`: undo the journals of runs that are no longer
//! running, after checking that each can be trusted
//! ([`crate::journal::trust`]), and tell a later run about such journals.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::identity::same_task;
use crate::journal::compaction::still_in_place;
use crate::journal::file::{io_err, parse, Header};
use crate::journal::ownership::RunCgroups;
use crate::journal::trust::{self, AllowedPaths};
use crate::journal::undo::{undo_changes, UndoReport};
use crate::mounts::MountTable;
use serde::Serialize;
use std::path::{Path, PathBuf};

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
/// remove the hint files such runs left. Refused whole when `state_dir` is
/// not this user's alone (see [`trust::check_restore_dir`]); within a
/// journal, every record that is valid and the run's own is undone and
/// every other one reported with its line and why.
pub fn restore(state_dir: &Path, root: &FsRoot) -> Result<Vec<RestoreOutcome>, LinuxError> {
    trust::check_restore_dir(state_dir)?;
    let allowed = AllowedPaths::from_mounts(&MountTable::read(root)?);
    let mut out = Vec::new();
    for path in journal_paths(state_dir)? {
        let text = match trust::read_trusted(&path) {
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
        let mut valid = Vec::new();
        for (n, change) in parsed.changes {
            match allowed.check(&change) {
                Ok(()) => valid.push((n, change)),
                Err(why) => warnings.push(format!("line {n}: record refused: {why}")),
            }
        }
        let run = RunCgroups::of(header.owner_pid, valid.iter().map(|(_, c)| c));
        let mut changes = Vec::new();
        for (n, change) in valid {
            match run.check(root, &allowed, &change) {
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
        let Ok(text) = trust::read_trusted(&path) else {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::affinity;
    use crate::identity::start_ticks;
    use crate::journal::file::Change;
    use crate::journal::testing::{fixture, GOV};
    use crate::journal::Journal;
    use ecosched_model::CpuSet;

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
    fn a_line_that_is_not_utf8_is_skipped_and_every_good_record_restored() {
        let (dir, root) = fixture();
        let state = tempfile::tempdir().unwrap();
        let govs: Vec<String> = (0..3)
            .map(|i| format!("sys/devices/system/cpu/cpufreq/policy{i}/scaling_governor"))
            .collect();
        let mut text = b"{\"version\":1,\"owner_pid\":4194311,\"owner_start_ticks\":5}\n".to_vec();
        for (i, gov) in govs.iter().enumerate() {
            std::fs::create_dir_all(dir.path().join(gov).parent().unwrap()).unwrap();
            std::fs::write(dir.path().join(gov), "performance\n").unwrap();
            text.extend(
                format!("{{\"kind\":\"file\",\"path\":\"{gov}\",\"before\":\"ondemand\"}}\n")
                    .bytes(),
            );
            if i == 0 {
                text.extend(b"{\"kind\":\"file\",\"path\":\"x\xff\xfe\"}\n");
            }
        }
        std::fs::write(state.path().join("journal-4194311.jsonl"), text).unwrap();
        let outcomes = restore(state.path(), &root).unwrap();
        let [RestoreOutcome::Restored(r)] = &outcomes[..] else {
            panic!("{outcomes:?}")
        };
        assert_eq!((r.undone, r.failed.len()), (3, 0), "{r:?}");
        assert!(
            r.warnings.len() == 1
                && r.warnings[0].contains("line 3")
                && r.warnings[0].contains("not UTF-8"),
            "{r:?}"
        );
        for gov in &govs {
            assert_eq!(root.read(gov, "").unwrap(), "ondemand", "{gov}");
        }
    }

    #[test]
    fn a_planted_record_naming_an_unrelated_cgroup_is_refused_with_its_reason() {
        let (dir, root) = fixture();
        let state = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(
            dir.path().join("proc/mounts"),
            "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n",
        )
        .unwrap();
        let victim = dir.path().join("sys/fs/cgroup/system.slice/db.service");
        std::fs::create_dir_all(&victim).unwrap();
        std::fs::write(victim.join("cgroup.freeze"), "0\n").unwrap();
        std::fs::write(victim.join("cgroup.procs"), "4100\n").unwrap();
        let text = "{\"version\":1,\"owner_pid\":4194311,\"owner_start_ticks\":5}\n\
             {\"kind\":\"cgroup_created\",\"dir\":\"sys/fs/cgroup/system.slice/db.service\",\"parent\":\"sys/fs/cgroup\",\"members\":\"cgroup.procs\"}\n\
             {\"kind\":\"file\",\"path\":\"sys/fs/cgroup/system.slice/db.service/cgroup.freeze\",\"before\":\"1\"}\n\
             {\"kind\":\"cgroup_moved\",\"tid\":1,\"start_ticks\":0,\"back_to\":\"sys/fs/cgroup/cgroup.procs\"}\n";
        std::fs::write(state.path().join("journal-4194311.jsonl"), text).unwrap();
        let outcomes = restore(state.path(), &root).unwrap();
        let [RestoreOutcome::Restored(r)] = &outcomes[..] else {
            panic!("{outcomes:?}")
        };
        assert_eq!((r.undone, r.failed.len()), (0, 0), "{r:?}");
        assert_eq!(r.warnings.len(), 3, "{r:?}");
        assert!(
            r.warnings[0].starts_with("line 2: record refused")
                && r.warnings[0].contains("db.service"),
            "{r:?}"
        );
        assert!(r.warnings[1].starts_with("line 3: record refused"), "{r:?}");
        assert!(
            r.warnings[2].starts_with("line 4: record refused") && r.warnings[2].contains("task 1"),
            "{r:?}"
        );
        assert_eq!(
            std::fs::read_to_string(victim.join("cgroup.freeze")).unwrap(),
            "0\n",
            "not frozen"
        );
        assert!(victim.exists(), "not removed");
    }

    #[test]
    fn a_state_dir_others_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let (_d, root) = fixture();
        let state = tempfile::tempdir().unwrap();
        std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        let err = restore(state.path(), &root).unwrap_err().to_string();
        assert!(err.contains("writable by group or others"), "{err}");
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
}
