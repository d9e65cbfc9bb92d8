//! cpuset cgroups: the CPUs every managed task may use, including tasks
//! that appear later (children inherit their parent's cgroup).
//!
//! ```text
//! <cpuset mount>/<ecosched's own cgroup>/        (found in /proc/self/cgroup)
//!     └─ <name>-<pid>/                           this run, e.g. "ecosched-4242";
//!                                                managed tasks live here
//! ```
//!
//! One flat cgroup per run, with no parent shared between runs: concurrent
//! runs then never race over creating or removing a common directory, and
//! each run's undo removes exactly what it made.
//!
//! Both hierarchies are supported: cgroup v1's `cpuset` hierarchy (files
//! `cpuset.cpus`, `cpuset.mems`, members in `tasks`, per thread; or
//! `cpus`/`mems` when mounted with `noprefix`) and cgroup v2 with the
//! `cpuset` controller (members in `cgroup.procs`, per process; the
//! controller is enabled in `cgroup.subtree_control` of each new parent).
//! Which one is used comes from the mount table ([`crate::mounts`]): a v1
//! `cpuset` mount wins,
//! since on a hybrid machine the controller is bound to it.
//!
//! Every creation, write and move is journalled first, so the machine can be
//! put back. cgroups need root.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::journal::{Change, Journal};
use crate::mounts::MountTable;
use ecosched_model::{CpuSet, TaskId};

const NEEDS: &str = "root (cgroup cpusets)";

/// Which cgroup interface holds the cpuset controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// The v1 `cpuset` hierarchy; `prefix` is false when mounted `noprefix`.
    V1 {
        /// Whether files carry the `cpuset.` prefix.
        prefix: bool,
    },
    /// The unified v2 hierarchy.
    V2,
}

/// Where the cpuset controller is mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpusetMount {
    /// v1 or v2.
    pub version: Version,
    /// Mount point, relative to the root.
    pub mount: String,
}

impl CpusetMount {
    /// The cpuset controller in the mount table `mounts` of `root` (a
    /// cgroup2 tree offers it when its `cgroup.controllers` under `root`
    /// names it).
    pub fn find(mounts: &MountTable, root: &FsRoot) -> Result<Self, LinuxError> {
        Self::in_table(mounts, root).ok_or_else(|| LinuxError::Absent {
            path: root.path("proc/mounts"),
            what: "a cgroup v1 cpuset mount or a cgroup2 mount offering the cpuset controller"
                .into(),
        })
    }

    fn in_table(mounts: &MountTable, root: &FsRoot) -> Option<Self> {
        if let Some(v1) = mounts.cgroup_v1("cpuset") {
            return Some(CpusetMount {
                version: Version::V1 {
                    prefix: !v1.has_option("noprefix"),
                },
                mount: v1.rel().to_string(),
            });
        }
        mounts
            .cgroup2()
            .map(|m| m.rel().to_string())
            .find(|dir| {
                root.read_opt(&format!("{dir}/cgroup.controllers"))
                    .ok()
                    .flatten()
                    .is_some_and(|c| c.split_whitespace().any(|w| w == "cpuset"))
            })
            .map(|mount| CpusetMount {
                version: Version::V2,
                mount,
            })
    }

    /// The name of a cpuset file (`cpus` → `cpuset.cpus` unless `noprefix`).
    pub fn file(&self, name: &str) -> String {
        match self.version {
            Version::V1 { prefix: false } => name.to_string(),
            _ => format!("cpuset.{name}"),
        }
    }

    /// The membership file: `tasks` (threads) on v1, `cgroup.procs` on v2.
    pub fn members(&self) -> &'static str {
        match self.version {
            Version::V1 { .. } => "tasks",
            Version::V2 => "cgroup.procs",
        }
    }

    /// The directory (relative to the root) of the cpuset cgroup task `pid`
    /// belongs to (`self` for this process), from `/proc/<pid>/cgroup`.
    pub fn cgroup_of(&self, root: &FsRoot, pid: &str) -> Result<String, LinuxError> {
        let rel = format!("proc/{pid}/cgroup");
        let text = root.read(&rel, "cgroup membership")?;
        let controller = match self.version {
            Version::V1 { .. } => Some("cpuset"),
            Version::V2 => None,
        };
        membership_dir(root, &rel, &text, controller, &self.mount)
    }
}

/// The directory (relative to the root) a `/proc/<pid>/cgroup` text puts a
/// task in: on the v1 hierarchy of `controller`, or on the v2 tree when
/// `controller` is `None`, under that hierarchy's `mount`.
pub(crate) fn membership_dir(
    root: &FsRoot,
    rel: &str,
    text: &str,
    controller: Option<&str>,
    mount: &str,
) -> Result<String, LinuxError> {
    let path = text
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            Some((parts.next()?, parts.next()?, parts.next()?))
        })
        .find(|(_, controllers, _)| match controller {
            Some(c) => controllers.split(',').any(|x| x == c),
            None => controllers.is_empty(),
        })
        .map(|(_, _, path)| path.trim_matches('/').to_string())
        .ok_or_else(|| {
            let what = format!("no line for the {} hierarchy", controller.unwrap_or("v2"));
            LinuxError::parse(&root.path(rel), text, what)
        })?;
    Ok(if path.is_empty() {
        mount.to_string()
    } else {
        format!("{mount}/{path}")
    })
}

/// The cgroup this run's managed tasks live in.
#[derive(Debug)]
pub struct ManagedCpuset {
    mount: CpusetMount,
    dir: String,
}

impl ManagedCpuset {
    /// Create `<own cgroup>/<name>-<pid>`, journalled, with the CPUs and
    /// memory nodes of its parent.
    pub fn create(
        journal: &mut Journal,
        mount: CpusetMount,
        name: &str,
    ) -> Result<Self, LinuxError> {
        let root = journal.root().clone();
        let own = mount.cgroup_of(&root, "self")?;
        let run = format!("{own}/{name}-{}", std::process::id());
        if root.exists(&run) {
            return Err(LinuxError::Parse {
                path: root.path(&run),
                content: String::new(),
                reason: "a cgroup of an earlier run with this PID is still there; run `ecosched restore`".into(),
            });
        }
        make_child(journal, &mount, &own, &run)?;
        Ok(ManagedCpuset { mount, dir: run })
    }

    /// The cgroup directory, relative to the root.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// The hierarchy it is on.
    pub fn mount(&self) -> &CpusetMount {
        &self.mount
    }

    /// Restrict every member to `cpus`.
    pub fn set_cpus(&self, journal: &mut Journal, cpus: &CpuSet) -> Result<(), LinuxError> {
        let rel = format!("{}/{}", self.dir, self.mount.file("cpus"));
        // Inside a cgroup we created, so removing the cgroup undoes it.
        journal.root().write(&rel, &cpus.to_list(), NEEDS)
    }

    /// Move task `task` (a thread on v1, a process on v2) into the cgroup,
    /// journalling where it came from.
    pub fn attach(&self, journal: &mut Journal, task: TaskId) -> Result<(), LinuxError> {
        let root = journal.root().clone();
        let from = match self.mount.cgroup_of(&root, &task.pid.to_string()) {
            Ok(f) => f,
            Err(LinuxError::Absent { .. }) => return Err(LinuxError::Gone { pid: task.pid }),
            Err(e) => return Err(e),
        };
        // A task in a child (a gang group on cgroup v2) is already confined.
        if from == self.dir || from.starts_with(&format!("{}/", self.dir)) {
            return Ok(());
        }
        journal.record(Change::CgroupMoved {
            tid: task.pid,
            start_ticks: task.start_ticks,
            back_to: format!("{from}/{}", self.mount.members()),
        })?;
        let members = format!("{}/{}", self.dir, self.mount.members());
        match root.write(&members, &task.pid.to_string(), NEEDS) {
            // The kernel answers ESRCH for a task that has just exited.
            Err(LinuxError::Io { source, .. }) if source.raw_os_error() == Some(3) => {
                Err(LinuxError::Gone { pid: task.pid })
            }
            other => other,
        }
    }
}

/// Create cgroup `child` under `parent`, journalled, and give it the
/// parent's CPUs and memory nodes (a v1 cpuset starts empty; v2 needs the
/// controller enabled in the parent). Undoing it moves whatever is left in
/// it — tasks born inside, which no move recorded — back to `parent`, the
/// cgroup the command would have been in without ecosched.
fn make_child(
    journal: &mut Journal,
    mount: &CpusetMount,
    parent: &str,
    child: &str,
) -> Result<(), LinuxError> {
    let root = journal.root().clone();
    if mount.version == Version::V2 {
        let control = format!("{parent}/cgroup.subtree_control");
        let enabled = root.read(&control, "cgroup v2 subtree control")?;
        if !enabled.split_whitespace().any(|c| c == "cpuset") {
            journal.write_file(&control, "+cpuset", NEEDS)?;
        }
    }
    journal.record(Change::CgroupCreated {
        dir: child.to_string(),
        parent: parent.to_string(),
        members: mount.members().to_string(),
    })?;
    root.create_dir(child, NEEDS)?;
    if let Version::V1 { .. } = mount.version {
        for name in ["cpus", "mems"] {
            let value = root.read(&format!("{parent}/{}", mount.file(name)), "parent cpuset")?;
            root.write(&format!("{child}/{}", mount.file(name)), &value, NEEDS)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn root_with(files: &[(&str, &str)]) -> (tempfile::TempDir, FsRoot) {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let root = FsRoot::recorded(dir.path());
        (dir, root)
    }

    #[test]
    fn a_v1_cpuset_mount_wins_on_a_hybrid_machine() {
        // /proc/mounts of the Debian 12 VM this project is developed on.
        let mounts = "cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n\
                      cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        let (_d, root) = root_with(&[("proc/mounts", mounts)]);
        let m = CpusetMount::find(&MountTable::read(&root).unwrap(), &root).unwrap();
        assert_eq!(m.version, Version::V1 { prefix: true });
        assert_eq!(m.mount, "sys/fs/cgroup/cpuset");
        assert_eq!(m.file("cpus"), "cpuset.cpus");
        assert_eq!(m.members(), "tasks");
    }

    #[test]
    fn noprefix_v1_and_v2_with_the_controller_are_recognised() {
        let (_d, root) = root_with(&[(
            "proc/mounts",
            "none /dev/cpuset cgroup rw,cpuset,noprefix 0 0\n",
        )]);
        let m = CpusetMount::find(&MountTable::read(&root).unwrap(), &root).unwrap();
        assert_eq!(m.file("mems"), "mems");
        let (_d, root) = root_with(&[
            (
                "proc/mounts",
                "cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n",
            ),
            (
                "sys/fs/cgroup/cgroup.controllers",
                "cpuset cpu io memory pids\n",
            ),
            ("proc/self/cgroup", "0::/user.slice/session-1.scope\n"),
        ]);
        let m = CpusetMount::find(&MountTable::read(&root).unwrap(), &root).unwrap();
        assert_eq!(m.version, Version::V2);
        assert_eq!(
            m.cgroup_of(&root, "self").unwrap(),
            "sys/fs/cgroup/user.slice/session-1.scope"
        );
    }

    #[test]
    fn v2_enables_the_controller_creates_the_run_and_journals_each_step() {
        // A systemd machine's unified hierarchy (cgroup v2 only), with the
        // kernel-made files a plain directory lacks written by hand.
        let (dir, _) = root_with(&[
            (
                "proc/mounts",
                "cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n",
            ),
            (
                "sys/fs/cgroup/cgroup.controllers",
                "cpuset cpu io memory pids\n",
            ),
            (
                "sys/fs/cgroup/user.slice/cgroup.subtree_control",
                "memory pids\n",
            ),
            ("proc/self/cgroup", "0::/user.slice\n"),
            ("proc/4242/cgroup", "0::/user.slice\n"),
        ]);
        let root = FsRoot::writable_fixture(dir.path());
        let state = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(state.path(), root.clone()).unwrap();
        let mount = CpusetMount::find(&MountTable::read(&root).unwrap(), &root).unwrap();
        let cpuset = ManagedCpuset::create(&mut journal, mount, "ecosched").unwrap();
        assert_eq!(
            cpuset.dir(),
            format!("sys/fs/cgroup/user.slice/ecosched-{}", std::process::id())
        );
        cpuset
            .set_cpus(&mut journal, &CpuSet::parse_list("2-3").unwrap())
            .unwrap();
        cpuset
            .attach(
                &mut journal,
                TaskId {
                    pid: 4242,
                    start_ticks: 77,
                },
            )
            .unwrap();
        let read = |rel: &str| std::fs::read_to_string(dir.path().join(rel)).unwrap();
        assert_eq!(
            read("sys/fs/cgroup/user.slice/cgroup.subtree_control"),
            "+cpuset"
        );
        assert_eq!(read(&format!("{}/cpuset.cpus", cpuset.dir())), "2-3");
        assert_eq!(read(&format!("{}/cgroup.procs", cpuset.dir())), "4242");
        let log = std::fs::read_to_string(journal.path()).unwrap();
        let kinds: Vec<&str> = log
            .lines()
            .skip(1)
            .map(|l| l.split('"').nth(3).unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["file", "cgroup_created", "cgroup_moved"],
            "each step journalled before it was made:\n{log}"
        );
        assert!(
            log.contains("\"back_to\":\"sys/fs/cgroup/user.slice/cgroup.procs\""),
            "{log}"
        );
        // A task in a child of the run (a gang group on v2) is confined
        // already: attaching it must not pull it out of its group.
        let group = format!("0::/user.slice/ecosched-{}/a\n", std::process::id());
        std::fs::create_dir_all(dir.path().join("proc/4243")).unwrap();
        std::fs::write(dir.path().join("proc/4243/cgroup"), group).unwrap();
        let in_group = TaskId {
            pid: 4243,
            start_ticks: 78,
        };
        cpuset.attach(&mut journal, in_group).unwrap();
        assert_eq!(read(&format!("{}/cgroup.procs", cpuset.dir())), "4242");
        assert_eq!(std::fs::read_to_string(journal.path()).unwrap(), log);
    }

    #[test]
    fn no_cpuset_controller_is_absent_and_says_what_was_looked_for() {
        let (_d, root) = root_with(&[
            ("proc/mounts", "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n"),
            ("sys/fs/cgroup/cgroup.controllers", "cpu io memory\n"),
        ]);
        let err = CpusetMount::find(&MountTable::read(&root).unwrap(), &root).unwrap_err();
        assert!(
            err.is_absent() && err.to_string().contains("cpuset"),
            "{err}"
        );
    }
}
