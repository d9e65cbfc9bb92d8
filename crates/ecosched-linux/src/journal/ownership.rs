//! Which cgroup records of a journal name what its own run made. A journal
//! that [`crate::journal::trust`] accepts (root's file, root's directory,
//! known file names) could still have been planted by anyone who can make
//! root write a file, and then freeze, move or remove any cgroup on the
//! machine. So a dead run's journal is acted on only within the cgroups it
//! made itself:
//!
//! ```text
//! created cgroup  its path holds a cgroup named ecosched…-<owner pid> (how
//!                 run and the daemon name theirs), and the cgroup its
//!                 leftover tasks go back to is the one that holds it
//! cgroup file     in a cgroup the journal created (a freezer state), or
//!                 the subtree_control of the cgroup holding one
//! task move       the task is, right now, in a cgroup the journal created:
//!                 a task elsewhere is not where the run put it
//! ```
//!
//! Anything else is refused with the reason, and the rest restored.

use crate::fsroot::FsRoot;
use crate::journal::file::Change;
use crate::journal::trust::AllowedPaths;

/// The cgroup file a run writes in the cgroup holding its own (cgroup v2
/// controller enabling).
const SUBTREE_CONTROL: &str = "cgroup.subtree_control";

/// What the cgroups of one journal's run are.
#[derive(Debug, Clone)]
pub struct RunCgroups {
    owner_pid: u32,
    /// The cgroups the journal records creating (that passed
    /// [`RunCgroups::created`]), with their membership file.
    created: Vec<(String, String)>,
}

/// `dir` without its last component, and that component.
fn split_last(dir: &str) -> (&str, &str) {
    dir.rsplit_once('/').unwrap_or(("", dir))
}

impl RunCgroups {
    /// The cgroups of the run that wrote a journal owned by `owner_pid`,
    /// from its records (only the created ones that are the run's own).
    pub fn of<'a>(owner_pid: u32, changes: impl IntoIterator<Item = &'a Change>) -> Self {
        let mut run = RunCgroups {
            owner_pid,
            created: Vec::new(),
        };
        for change in changes {
            if let Change::CgroupCreated {
                dir,
                parent,
                members,
            } = change
            {
                if run.created(dir, parent).is_ok() {
                    run.created.push((dir.clone(), members.clone()));
                }
            }
        }
        run
    }

    /// Whether `name` is how ecosched names a cgroup of this run.
    fn is_run_name(&self, name: &str) -> bool {
        name.starts_with("ecosched")
            && name
                .strip_suffix(&self.owner_pid.to_string())
                .is_some_and(|n| n.ends_with('-'))
    }

    /// A created cgroup is the run's: a component of its path is the run's
    /// cgroup name, and `parent` is the cgroup holding that one.
    fn created(&self, dir: &str, parent: &str) -> Result<(), String> {
        let parts: Vec<&str> = dir.split('/').collect();
        let Some(at) = parts.iter().position(|p| self.is_run_name(p)) else {
            return Err(format!(
                "{dir:?} is not a cgroup of this journal's run (none of its names is ecosched…-{})",
                self.owner_pid
            ));
        };
        let holder = parts[..at].join("/");
        if parent.trim_end_matches('/') != holder {
            return Err(format!(
                "{parent:?} is not the cgroup holding the run's cgroup {:?}",
                parts[..=at].join("/")
            ));
        }
        Ok(())
    }

    fn is_created(&self, dir: &str) -> bool {
        self.created.iter().any(|(d, _)| d == dir)
    }

    /// Whether task `tid` is listed in a cgroup this run created on the
    /// same hierarchy as `back_to`.
    fn holds_task(&self, root: &FsRoot, allowed: &AllowedPaths, tid: u32, back_to: &str) -> bool {
        let (_, members) = split_last(back_to);
        let mount = allowed.mount_of(back_to);
        let tid = tid.to_string();
        self.created
            .iter()
            .filter(|(d, m)| m == members && allowed.mount_of(d) == mount)
            .any(|(d, m)| {
                root.read_opt(&format!("{d}/{m}"))
                    .ok()
                    .flatten()
                    .is_some_and(|list| list.lines().any(|l| l.trim() == tid))
            })
    }

    /// Whether undoing `change` stays within this run's cgroups. Records
    /// outside cgroups (cpufreq files, affinities, stopped tasks) are left
    /// to [`AllowedPaths::check`].
    pub fn check(
        &self,
        root: &FsRoot,
        allowed: &AllowedPaths,
        change: &Change,
    ) -> Result<(), String> {
        match change {
            Change::CgroupCreated { dir, parent, .. } => self.created(dir, parent),
            Change::File { path, .. } if allowed.mount_of(path).is_some() => {
                let (dir, name) = split_last(path);
                let holds_created = self.created.iter().any(|(d, _)| split_last(d).0 == dir);
                if self.is_created(dir) || (name == SUBTREE_CONTROL && holds_created) {
                    Ok(())
                } else {
                    Err(format!(
                        "{path:?} is not in a cgroup this journal's run created"
                    ))
                }
            }
            Change::CgroupMoved { tid, back_to, .. } | Change::GangMoved { tid, back_to, .. } => {
                if self.holds_task(root, allowed, *tid, back_to) {
                    Ok(())
                } else {
                    Err(format!(
                        "task {tid} is not in a cgroup this journal's run created, so the run did not put it where it is; left there"
                    ))
                }
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::mounts::MountTable;

    const MOUNTS: &str = "cgroup /sys/fs/cgroup/freezer cgroup rw,freezer 0 0\n\
        cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n";

    fn created(dir: &str, parent: &str) -> Change {
        Change::CgroupCreated {
            dir: dir.into(),
            parent: parent.into(),
            members: "cgroup.procs".into(),
        }
    }

    #[test]
    fn only_the_runs_own_cgroups_and_files_in_them_are_accepted() {
        let (dir, root) = {
            let d = tempfile::tempdir().unwrap();
            let r = FsRoot::writable_fixture(d.path());
            (d, r)
        };
        let allowed = AllowedPaths::from_mounts(&MountTable::parse(MOUNTS));
        let base = "sys/fs/cgroup/unified/user.slice/ecosched-77";
        let records = [
            created(base, "sys/fs/cgroup/unified/user.slice"),
            created(&format!("{base}/g0"), "sys/fs/cgroup/unified/user.slice"),
        ];
        let run = RunCgroups::of(77, &records);
        for r in &records {
            assert_eq!(run.check(&root, &allowed, r), Ok(()), "{r:?}");
        }
        let file = |path: &str| Change::File {
            path: path.into(),
            before: "0".into(),
        };
        for ok in [
            format!("{base}/g0/cgroup.freeze"),
            "sys/fs/cgroup/unified/user.slice/cgroup.subtree_control".into(),
        ] {
            assert_eq!(run.check(&root, &allowed, &file(&ok)), Ok(()), "{ok}");
        }
        for (bad, why) in [
            (
                file("sys/fs/cgroup/unified/victim/cgroup.freeze"),
                "not in a cgroup this journal's run created",
            ),
            (
                file("sys/fs/cgroup/unified/cgroup.subtree_control"),
                "not in a cgroup",
            ),
            (
                created("sys/fs/cgroup/unified/victim", "sys/fs/cgroup/unified"),
                "ecosched…-77",
            ),
            (
                created("sys/fs/cgroup/unified/ecosched-78", "sys/fs/cgroup/unified"),
                "ecosched…-77",
            ),
            (
                created(&format!("{base}/g1"), "sys/fs/cgroup/unified/elsewhere"),
                "not the cgroup holding",
            ),
        ] {
            let err = run.check(&root, &allowed, &bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        // A move is undone only for a task still in one of the run's cgroups.
        let moved = |tid| Change::CgroupMoved {
            tid,
            start_ticks: 1,
            back_to: "sys/fs/cgroup/unified/victim/cgroup.procs".into(),
        };
        std::fs::create_dir_all(dir.path().join(format!("{base}/g0"))).unwrap();
        std::fs::write(
            dir.path().join(format!("{base}/g0/cgroup.procs")),
            "41\n42\n",
        )
        .unwrap();
        assert_eq!(run.check(&root, &allowed, &moved(42)), Ok(()));
        let err = run.check(&root, &allowed, &moved(43)).unwrap_err();
        assert!(err.contains("task 43"), "{err}");
    }
}
