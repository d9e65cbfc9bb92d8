//! The mount table (`/proc/mounts`), parsed in one place. The cpuset,
//! accounting and freezer cgroups, the allowed CPUs of a recorded machine
//! and the paths a restore journal may name are all found through it, so
//! a platform or a command reads it once when it starts
//! ([`MountTable::read`]) and hands the table to whoever needs a mount
//! point.
//!
//! ```text
//! cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,relatime,cpuset 0 0
//! └ source └ mount point        └ type └ options                └ dump, pass (ignored)
//! ```
//!
//! A line with fewer than the four fields read is skipped: the rest of the
//! table is still good, and a kernel file is not refused whole for one
//! line.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;

/// One mounted file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Where it is mounted, as the table gives it (absolute).
    pub point: String,
    /// Its type (`cgroup`, `cgroup2`, `cpuset`, `sysfs` …).
    pub fstype: String,
    /// Its mount options, in order (`rw`, `cpuset`, `noprefix` …).
    pub options: Vec<String>,
}

impl Mount {
    /// The mount point relative to the root (no leading `/`), as an
    /// [`FsRoot`] path.
    pub fn rel(&self) -> &str {
        self.point.trim_start_matches('/')
    }

    /// Whether `option` is one of its mount options (a cgroup v1
    /// hierarchy's controllers are options: `cpuset`, `freezer` …).
    pub fn has_option(&self, option: &str) -> bool {
        self.options.iter().any(|o| o == option)
    }

    /// Whether it is a cgroup v1 hierarchy carrying `controller`.
    pub fn is_cgroup_v1_with(&self, controller: &str) -> bool {
        self.fstype == "cgroup" && self.has_option(controller)
    }

    /// Whether it is a cgroup (v1 or v2) hierarchy.
    pub fn is_cgroup(&self) -> bool {
        self.fstype == "cgroup" || self.fstype == "cgroup2"
    }
}

/// The mounted file systems, in the table's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MountTable {
    mounts: Vec<Mount>,
}

impl MountTable {
    /// Parse the text of `/proc/mounts`. Never fails: a malformed line is
    /// skipped (see the module doc).
    pub fn parse(text: &str) -> MountTable {
        let mounts = text
            .lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                let _source = fields.next()?;
                let point = fields.next()?;
                let fstype = fields.next()?;
                let options = fields.next()?;
                Some(Mount {
                    point: point.to_string(),
                    fstype: fstype.to_string(),
                    options: options.split(',').map(str::to_string).collect(),
                })
            })
            .collect();
        MountTable { mounts }
    }

    /// The mount table of `root` (`proc/mounts`); empty when the root has
    /// none (a recorded machine that did not record it).
    pub fn read(root: &FsRoot) -> Result<MountTable, LinuxError> {
        Ok(Self::parse(
            &root.read_opt("proc/mounts")?.unwrap_or_default(),
        ))
    }

    /// Every mount, in the table's order.
    pub fn mounts(&self) -> &[Mount] {
        &self.mounts
    }

    /// The first cgroup v1 hierarchy that carries `controller`.
    pub fn cgroup_v1(&self, controller: &str) -> Option<&Mount> {
        self.mounts.iter().find(|m| m.is_cgroup_v1_with(controller))
    }

    /// The cgroup2 mounts, in the table's order.
    pub fn cgroup2(&self) -> impl Iterator<Item = &Mount> {
        self.mounts.iter().filter(|m| m.fstype == "cgroup2")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A hybrid machine: cgroup v1 controllers beside a cgroup2 tree.
    const HYBRID: &str = "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n\
        proc /proc proc rw,relatime 0 0\n\
        cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,relatime,cpuset 0 0\n\
        cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,relatime,cpu,cpuacct 0 0\n\
        cgroup /sys/fs/cgroup/freezer cgroup rw,relatime,freezer 0 0\n\
        cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nsdelegate 0 0\n";

    #[test]
    fn a_hybrid_table_gives_each_controller_its_hierarchy() {
        let t = MountTable::parse(HYBRID);
        assert_eq!(t.mounts().len(), 6);
        let cpuset = t.cgroup_v1("cpuset").unwrap();
        assert_eq!(cpuset.rel(), "sys/fs/cgroup/cpuset");
        assert!(cpuset.has_option("relatime") && cpuset.is_cgroup());
        assert_eq!(
            t.cgroup_v1("cpuacct").unwrap().point,
            "/sys/fs/cgroup/cpu,cpuacct"
        );
        assert_eq!(t.cgroup_v1("memory"), None);
        let v2: Vec<&str> = t.cgroup2().map(Mount::rel).collect();
        assert_eq!(v2, ["sys/fs/cgroup/unified"]);
        assert!(!t.mounts()[0].is_cgroup());
    }

    #[test]
    fn a_controller_is_an_option_not_part_of_one() {
        // `cpuset` is not `cpuset_extra`, and a type is not an option.
        let t = MountTable::parse(
            "x /a cgroup rw,cpuset_extra 0 0\ncpuset /dev/cpuset cpuset rw 0 0\n",
        );
        assert_eq!(t.cgroup_v1("cpuset"), None);
        assert_eq!(t.mounts()[1].fstype, "cpuset");
        assert_eq!(t.mounts()[1].options, ["rw"]);
    }

    #[test]
    fn malformed_lines_are_skipped_and_the_rest_kept() {
        let t = MountTable::parse(
            "\n   \ngarbage\ncgroup /only/three cgroup\n\
             cgroup\t/sys/fs/cgroup/freezer\tcgroup\trw,freezer\n\
             cgroup2 /sys/fs/cgroup cgroup2 rw 0 0 trailing fields\n",
        );
        assert_eq!(t.mounts().len(), 2, "{t:?}");
        assert_eq!(
            t.cgroup_v1("freezer").unwrap().point,
            "/sys/fs/cgroup/freezer"
        );
        assert_eq!(t.cgroup2().next().unwrap().rel(), "sys/fs/cgroup");
        assert_eq!(MountTable::parse(""), MountTable::default());
    }

    #[test]
    fn a_root_without_a_table_has_an_empty_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = FsRoot::recorded(dir.path());
        assert_eq!(MountTable::read(&root).unwrap(), MountTable::default());
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        std::fs::write(dir.path().join("proc/mounts"), HYBRID).unwrap();
        assert_eq!(MountTable::read(&root).unwrap(), MountTable::parse(HYBRID));
    }
}
