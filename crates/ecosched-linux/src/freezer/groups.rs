//! The freezer cgroups of one run: its base directory and one directory
//! per gang group, each made, filled and frozen through the journal.

use crate::error::LinuxError;
use crate::freezer::mount::{FreezerMount, FreezerVersion};
use crate::identity::same_task;
use crate::journal::{Change, Journal};
use ecosched_model::TaskId;
use std::collections::BTreeMap;

const NEEDS: &str = "root (cgroup freezer)";

/// One group's cgroup.
#[derive(Debug)]
struct GroupDir {
    dir: String,
    /// The state file's original value is journalled.
    journalled: bool,
    frozen: bool,
}

/// The freezer cgroups of one run.
#[derive(Debug)]
pub struct FreezerRun {
    mount: FreezerMount,
    /// The cgroup tasks come from (ecosched's own); leftovers go back here.
    home: String,
    /// The run's directory: grouped tasks taken out of their group wait
    /// here, never frozen.
    base: String,
    groups: BTreeMap<String, GroupDir>,
}

impl FreezerRun {
    /// Use `base` as the run's directory. `created` says whether it must be
    /// made (v1 and a hybrid machine's v2 tree) or exists already (the
    /// run's v2 cpuset cgroup, where the groups must live to keep its
    /// CPUs). Fails with `Absent` when the kernel has no `cgroup.freeze`.
    pub fn create(
        journal: &mut Journal,
        mount: FreezerMount,
        base_name: &str,
        existing_base: Option<String>,
    ) -> Result<Self, LinuxError> {
        let root = journal.root().clone();
        let home = mount.cgroup_of(&root, "self")?;
        let base = match existing_base {
            Some(b) => b,
            None => {
                let base = format!("{home}/{base_name}");
                if root.exists(&base) {
                    return Err(LinuxError::Parse {
                        path: root.path(&base),
                        content: String::new(),
                        reason: "a freezer cgroup of an earlier run with this PID is still there; run `ecosched restore`".into(),
                    });
                }
                journal.record(Change::CgroupCreated {
                    dir: base.clone(),
                    parent: home.clone(),
                    members: mount.members().to_string(),
                })?;
                root.create_dir(&base, NEEDS)?;
                base
            }
        };
        let run = FreezerRun {
            mount,
            home,
            base,
            groups: BTreeMap::new(),
        };
        // The base is never a tree's root (which has no cgroup.freeze), so
        // the file shows whether the kernel has the v2 freezer (5.2+).
        let probe = format!("{}/cgroup.freeze", run.base);
        if run.mount.version == FreezerVersion::V2 && !root.exists(&probe) {
            return Err(LinuxError::Absent {
                path: root.path(&probe),
                what: "the cgroup v2 freezer (Linux 5.2 or later)".into(),
            });
        }
        Ok(run)
    }

    /// The interface in use.
    pub fn mount(&self) -> &FreezerMount {
        &self.mount
    }

    /// The run's directory, relative to the root.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The groups made so far, by name.
    pub(super) fn group_names(&self) -> Vec<String> {
        self.groups.keys().cloned().collect()
    }

    /// Group `name`'s directory, made (journalled) the first time.
    pub(super) fn group_dir(
        &mut self,
        journal: &mut Journal,
        name: &str,
    ) -> Result<String, LinuxError> {
        if let Some(g) = self.groups.get(name) {
            return Ok(g.dir.clone());
        }
        let dir = format!("{}/{name}", self.base);
        let root = journal.root().clone();
        journal.record(Change::CgroupCreated {
            dir: dir.clone(),
            parent: self.home.clone(),
            members: self.mount.members().to_string(),
        })?;
        if !root.exists(&dir) {
            root.create_dir(&dir, NEEDS)?;
        }
        self.groups.insert(
            name.to_string(),
            GroupDir {
                dir: dir.clone(),
                journalled: false,
                frozen: false,
            },
        );
        Ok(dir)
    }

    /// Move `task` into `dir` (a group, or the base), journalling where it
    /// came from the first time.
    pub(super) fn put(
        &self,
        journal: &mut Journal,
        task: TaskId,
        dir: &str,
    ) -> Result<(), LinuxError> {
        let root = journal.root().clone();
        if !same_task(&root, task.pid, task.start_ticks) {
            return Err(LinuxError::Gone { pid: task.pid });
        }
        let from = self.mount.cgroup_of(&root, &task.pid.to_string())?;
        if from == dir {
            return Ok(());
        }
        journal.record(Change::GangMoved {
            tid: task.pid,
            start_ticks: task.start_ticks,
            back_to: format!("{from}/{}", self.mount.members()),
        })?;
        match root.write(
            &format!("{dir}/{}", self.mount.members()),
            &task.pid.to_string(),
            NEEDS,
        ) {
            Err(LinuxError::Io { source, .. }) if source.raw_os_error() == Some(3) => {
                Err(LinuxError::Gone { pid: task.pid })
            }
            other => other,
        }
    }

    /// Freeze or thaw group `name`; nothing is written when it is already so.
    pub(super) fn set_frozen(
        &mut self,
        journal: &mut Journal,
        name: &str,
        frozen: bool,
    ) -> Result<(), LinuxError> {
        let (file, value) = (self.mount.state_file(), self.mount.state_value(frozen));
        let Some(g) = self.groups.get_mut(name) else {
            return Ok(());
        };
        if g.frozen == frozen && g.journalled {
            return Ok(());
        }
        let rel = format!("{}/{file}", g.dir);
        if g.journalled {
            journal.root().write(&rel, value, NEEDS)?;
        } else {
            // A new cgroup reads thawed: that is what undo writes back.
            journal.write_file(&rel, value, NEEDS)?;
            g.journalled = true;
        }
        g.frozen = frozen;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::fsroot::FsRoot;
    use crate::mounts::MountTable;

    #[test]
    fn a_v1_run_journals_each_step_and_freezes_only_on_change() {
        // A writable stand-in for the freezer hierarchy: the kernel's own
        // files are written by hand where a real mkdir would make them.
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let me = std::process::id();
        let live_ticks = crate::identity::start_ticks(&FsRoot::live(), me).unwrap();
        write(
            "proc/mounts",
            "cgroup /sys/fs/cgroup/freezer cgroup rw,freezer 0 0\n",
        );
        write("proc/self/cgroup", "6:freezer:/\n");
        write("sys/fs/cgroup/freezer/tasks", "1\n");
        write(&format!("proc/{me}/cgroup"), "6:freezer:/\n");
        let stat = std::fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
        write(&format!("proc/{me}/stat"), &stat);
        let root = FsRoot::writable_fixture(dir.path());
        let state = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(state.path(), root.clone()).unwrap();
        let mount = FreezerMount::find(&MountTable::read(&root).unwrap()).unwrap();
        let mut run = FreezerRun::create(&mut journal, mount, "ecosched-1", None).unwrap();
        assert_eq!(run.base(), "sys/fs/cgroup/freezer/ecosched-1");
        let g = run.group_dir(&mut journal, "a").unwrap();
        write(&format!("{g}/freezer.state"), "THAWED\n");
        run.put(
            &mut journal,
            TaskId {
                pid: me,
                start_ticks: live_ticks,
            },
            &g,
        )
        .unwrap();
        run.set_frozen(&mut journal, "a", true).unwrap();
        run.set_frozen(&mut journal, "a", true).unwrap();
        run.set_frozen(&mut journal, "a", false).unwrap();
        let read = |rel: &str| std::fs::read_to_string(dir.path().join(rel)).unwrap();
        assert_eq!(read(&format!("{g}/freezer.state")), "THAWED");
        assert_eq!(read(&format!("{g}/tasks")), me.to_string());
        let log = std::fs::read_to_string(journal.path()).unwrap();
        let kinds: Vec<&str> = log
            .lines()
            .skip(1)
            .map(|l| l.split('"').nth(3).unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["cgroup_created", "cgroup_created", "gang_moved", "file"],
            "{log}"
        );
        assert!(log.contains("\"before\":\"THAWED\""), "{log}");
    }
}
