//! Where the cgroup freezer is: a v1 `freezer` hierarchy or a cgroup2
//! tree, found in the mount table, and the files each one uses.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::mounts::MountTable;

/// Which cgroup interface freezes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreezerVersion {
    /// The v1 `freezer` hierarchy (`freezer.state`, members in `tasks`).
    V1,
    /// cgroup v2 (`cgroup.freeze`, members in `cgroup.procs`).
    V2,
}

/// Where the freezer is mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreezerMount {
    /// v1 or v2.
    pub version: FreezerVersion,
    /// The mount point, relative to the root.
    pub mount: String,
}

impl FreezerMount {
    /// The freezer in the mount table `mounts`: a v1 `freezer` mount
    /// wins; else the cgroup2 mount (whether `cgroup.freeze` exists is only
    /// known once a child cgroup is made, see
    /// [`FreezerRun::create`](crate::freezer::FreezerRun::create)). `None`
    /// when neither is mounted.
    pub fn find(mounts: &MountTable) -> Option<Self> {
        let v1 = mounts.cgroup_v1("freezer").map(|m| FreezerMount {
            version: FreezerVersion::V1,
            mount: m.rel().to_string(),
        });
        v1.or_else(|| {
            mounts.cgroup2().next().map(|m| FreezerMount {
                version: FreezerVersion::V2,
                mount: m.rel().to_string(),
            })
        })
    }

    /// The membership file: threads on v1, processes on v2.
    pub fn members(&self) -> &'static str {
        match self.version {
            FreezerVersion::V1 => "tasks",
            FreezerVersion::V2 => "cgroup.procs",
        }
    }

    /// The state file.
    pub fn state_file(&self) -> &'static str {
        match self.version {
            FreezerVersion::V1 => "freezer.state",
            FreezerVersion::V2 => "cgroup.freeze",
        }
    }

    /// What the state file takes to freeze or thaw.
    pub fn state_value(&self, frozen: bool) -> &'static str {
        match (self.version, frozen) {
            (FreezerVersion::V1, true) => "FROZEN",
            (FreezerVersion::V1, false) => "THAWED",
            (FreezerVersion::V2, true) => "1",
            (FreezerVersion::V2, false) => "0",
        }
    }

    /// The freezer cgroup of task `pid` (`self` for this process),
    /// relative to the root, from `/proc/<pid>/cgroup`.
    pub fn cgroup_of(&self, root: &FsRoot, pid: &str) -> Result<String, LinuxError> {
        let rel = format!("proc/{pid}/cgroup");
        let text = match root.read(&rel, "cgroup membership") {
            Ok(t) => t,
            Err(LinuxError::Absent { .. }) if pid != "self" => {
                return Err(LinuxError::Gone {
                    pid: pid.parse().unwrap_or(0),
                })
            }
            Err(e) => return Err(e),
        };
        let controller = match self.version {
            FreezerVersion::V1 => Some("freezer"),
            FreezerVersion::V2 => None,
        };
        crate::cgroup::membership_dir(root, &rel, &text, controller, &self.mount)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_v1_freezer_wins_and_v2_is_the_fallback() {
        // /proc/mounts of the Debian VM this project is developed on.
        let hybrid = "cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n\
                      cgroup /sys/fs/cgroup/freezer cgroup rw,relatime,freezer 0 0\n\
                      cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        let m = FreezerMount::find(&MountTable::parse(hybrid)).unwrap();
        assert_eq!(m.version, FreezerVersion::V1);
        assert_eq!(m.mount, "sys/fs/cgroup/freezer");
        assert_eq!(
            (m.state_file(), m.state_value(true)),
            ("freezer.state", "FROZEN")
        );
        let v2 = FreezerMount::find(&MountTable::parse(
            "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n",
        ))
        .unwrap();
        assert_eq!(v2.version, FreezerVersion::V2);
        assert_eq!((v2.members(), v2.state_value(false)), ("cgroup.procs", "0"));
        assert!(FreezerMount::find(&MountTable::parse("proc /proc proc rw 0 0\n")).is_none());
    }
}
