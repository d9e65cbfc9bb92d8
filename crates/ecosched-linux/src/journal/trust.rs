//! Why a journal can be trusted: `ecosched restore` runs as root and writes
//! what a journal names, so a journal someone else could write would be a
//! root file write for them. Three guards, each checked here:
//!
//! ```text
//! state dir   made 0700; refused if owned by another user or writable by
//!             group/others (anyone could plant or replace a journal)
//! journal     opened without following symlinks; refused unless a regular
//!             file owned by root (or the user restoring) and not writable
//!             by group/others
//! record      a file only under a cgroup mount (the mount table) or in
//!             cpufreq sysfs, with a file name ecosched writes; a task only
//!             by PID (1..=PID_MAX_LIMIT) and start time
//! ```
//!
//! A refused record is skipped with a warning; the rest is restored.

use crate::error::LinuxError;
use crate::journal::file::Change;
use crate::mounts::MountTable;
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The kernel's largest possible PID (`PID_MAX_LIMIT` on 64-bit).
const PID_MAX_LIMIT: u32 = 4_194_304;

/// The cgroup files ecosched writes (cpuset limits, freezer states, v2
/// controller enabling).
const CGROUP_FILES: &[&str] = &[
    "cpuset.cpus",
    "cpuset.mems",
    "cpus",
    "mems",
    "freezer.state",
    "cgroup.freeze",
    "cgroup.subtree_control",
];

/// The cgroup membership files tasks are moved through.
const MEMBER_FILES: &[&str] = &["tasks", "cgroup.procs"];

/// The cpufreq files ecosched writes (see `crate::cpufreq::writes_for`).
const CPUFREQ_FILES: &[&str] = &[
    "scaling_governor",
    "scaling_setspeed",
    "scaling_min_freq",
    "scaling_max_freq",
    "energy_performance_preference",
];

const CPU_SYSFS: &str = "sys/devices/system/cpu/";

fn unsafe_dir(dir: &Path, why: String) -> LinuxError {
    LinuxError::Io {
        path: dir.to_path_buf(),
        source: std::io::Error::other(why),
    }
}

/// Make `dir` (mode 0700) if missing; refuse it when it is not a
/// directory, belongs to another user, or group or others may write to it.
pub fn secure_state_dir(dir: &Path) -> Result<(), LinuxError> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| LinuxError::from_io(dir, e, "root (to write the restore journal)"))?;
            // The umask may have taken bits away, never added: set it exactly.
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| LinuxError::from_io(dir, e, "root (to write the restore journal)"))
        }
        Err(e) => Err(LinuxError::from_io(
            dir,
            e,
            "root (to write the restore journal)",
        )),
        Ok(meta) => check_state_dir(dir, &meta),
    }
}

fn check_state_dir(dir: &Path, meta: &std::fs::Metadata) -> Result<(), LinuxError> {
    if !meta.is_dir() {
        return Err(unsafe_dir(
            dir,
            "the state directory is not a directory (choose another --state-dir)".into(),
        ));
    }
    let euid = nix::unistd::geteuid().as_raw();
    if meta.uid() != euid {
        return Err(unsafe_dir(
            dir,
            format!(
                "the state directory belongs to uid {}, not to this user (uid {euid}); its journals could be planted; choose another --state-dir",
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(unsafe_dir(
            dir,
            format!(
                "the state directory is writable by group or others (mode {:o}); journals there could be planted; make it 0700 or choose another --state-dir",
                meta.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// The most a journal is read: a compacted journal holds one record per
/// change still in place (about 100 bytes each), so 64 MiB is far beyond
/// any real one and still bounds what `ecosched restore` holds in memory.
pub const JOURNAL_MAX_BYTES: u64 = 64 << 20;

/// The bytes of journal `path`, or why it is not to be trusted. The checks
/// are made on the opened file (no symlink followed, never blocking on a
/// FIFO), so the file read is the file checked; at most
/// [`JOURNAL_MAX_BYTES`] are read.
pub fn read_trusted(path: &Path) -> Result<Vec<u8>, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot open it without following links: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot inspect it: {e}"))?;
    check_journal_meta(meta.is_file(), meta.uid(), meta.mode())?;
    let mut bytes = Vec::new();
    file.take(JOURNAL_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > JOURNAL_MAX_BYTES {
        return Err(format!(
            "larger than the limit of {JOURNAL_MAX_BYTES} bytes for a journal: refused"
        ));
    }
    Ok(bytes)
}

/// Refuse to restore from `dir` unless it could only have been written by
/// this user: a directory owned by it that group and others cannot write
/// (the state directory `run` makes is 0700). A journal in a directory
/// someone else may write could have been planted or swapped.
pub fn check_restore_dir(dir: &Path) -> Result<(), LinuxError> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(LinuxError::from_io(
            dir,
            e,
            "root (to read the restore journal)",
        )),
        Ok(meta) => check_state_dir(dir, &meta),
    }
}

/// The ownership rule on its own, for tests: a regular file owned by root
/// or by the user restoring, not writable by group or others.
pub fn check_journal_meta(is_file: bool, uid: u32, mode: u32) -> Result<(), String> {
    let euid = nix::unistd::geteuid().as_raw();
    if !is_file {
        return Err("not a regular file; refused".into());
    }
    if uid != 0 && uid != euid {
        return Err(format!(
            "owned by uid {uid}, not by root: refused (a journal anyone else wrote could name any file)"
        ));
    }
    if mode & 0o022 != 0 {
        return Err(format!(
            "writable by group or others (mode {:o}): refused (anyone could have changed it)",
            mode & 0o7777
        ));
    }
    Ok(())
}

/// Where a journal record may point on this machine.
#[derive(Debug, Clone)]
pub struct AllowedPaths {
    /// cgroup (v1 and v2) mount points, relative to the root.
    cgroup_mounts: Vec<String>,
}

/// `rel` split into its components, refused unless every one is a plain
/// name (no `..`, `.`, empty part, or leading `/`).
fn components(rel: &str) -> Result<Vec<&str>, String> {
    if rel.is_empty() || rel.starts_with('/') {
        return Err(format!("{rel:?} is not a relative path"));
    }
    let parts: Vec<&str> = rel.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == ".." || p.contains('\0'))
    {
        return Err(format!("{rel:?} is not a plain path (`..`, `.` or `//`)"));
    }
    Ok(parts)
}

impl AllowedPaths {
    /// The cgroup (v1 and v2) mount points of the mount table `mounts`.
    pub fn from_mounts(mounts: &MountTable) -> Self {
        let cgroup_mounts = mounts
            .mounts()
            .iter()
            .filter(|m| m.is_cgroup())
            .map(|m| m.point.trim_matches('/').to_string())
            .filter(|p| !p.is_empty() && components(p).is_ok())
            .collect();
        AllowedPaths { cgroup_mounts }
    }

    /// The cgroup mount point `rel` lies in.
    pub fn mount_of(&self, rel: &str) -> Option<&str> {
        let parts = components(rel).ok()?;
        self.cgroup_mounts
            .iter()
            .find(|m| {
                let depth = m.split('/').count();
                parts.len() >= depth && parts[..depth].join("/") == **m
            })
            .map(String::as_str)
    }

    /// The cgroup mount `rel` lies in, and the components below it.
    fn in_cgroup<'a>(&self, rel: &'a str) -> Option<Vec<&'a str>> {
        let parts = components(rel).ok()?;
        self.cgroup_mounts.iter().find_map(|m| {
            let depth = m.split('/').count();
            (parts.len() >= depth && parts[..depth].join("/") == *m)
                .then(|| parts[depth..].to_vec())
        })
    }

    fn cgroup_file(&self, rel: &str, names: &[&str]) -> Result<(), String> {
        let below = self
            .in_cgroup(rel)
            .ok_or_else(|| format!("{rel:?} is not under a cgroup mount"))?;
        match below.last() {
            Some(name) if names.contains(name) => Ok(()),
            _ => Err(format!(
                "{rel:?} is not a cgroup file ecosched writes ({})",
                names.join(", ")
            )),
        }
    }

    fn cpufreq_file(rel: &str) -> Result<(), String> {
        let parts = components(rel)?;
        let ok = rel.starts_with(CPU_SYSFS)
            && parts.contains(&"cpufreq")
            && parts.last().is_some_and(|n| CPUFREQ_FILES.contains(n));
        if ok {
            Ok(())
        } else {
            Err(format!(
                "{rel:?} is neither under a cgroup mount nor a cpufreq file ecosched writes"
            ))
        }
    }

    fn cgroup_dir(&self, rel: &str) -> Result<(), String> {
        match self.in_cgroup(rel) {
            Some(below) if !below.is_empty() => Ok(()),
            Some(_) => Err(format!("{rel:?} is a cgroup mount's root")),
            None => Err(format!("{rel:?} is not under a cgroup mount")),
        }
    }

    fn task(id: u32) -> Result<(), String> {
        if (1..=PID_MAX_LIMIT).contains(&id) {
            Ok(())
        } else {
            Err(format!("{id} is not a task id (1..={PID_MAX_LIMIT})"))
        }
    }

    /// Whether `change` names only what ecosched changes, so undoing it
    /// cannot write anywhere else.
    pub fn check(&self, change: &Change) -> Result<(), String> {
        match change {
            Change::Affinity { tid, .. } => Self::task(*tid),
            Change::File { path, .. } => match self.in_cgroup(path) {
                Some(_) => self.cgroup_file(path, CGROUP_FILES),
                None => Self::cpufreq_file(path),
            },
            Change::CgroupCreated {
                dir,
                parent,
                members,
            } => {
                self.cgroup_dir(dir)?;
                if self.in_cgroup(parent).is_none() {
                    return Err(format!("{parent:?} is not under a cgroup mount"));
                }
                if !MEMBER_FILES.contains(&members.as_str()) {
                    return Err(format!("{members:?} is not a cgroup membership file"));
                }
                Ok(())
            }
            Change::CgroupMoved { tid, back_to, .. } | Change::GangMoved { tid, back_to, .. } => {
                Self::task(*tid)?;
                self.cgroup_file(back_to, MEMBER_FILES)
            }
            Change::Stopped { pid, .. } => Self::task(*pid),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const MOUNTS: &str = "sysfs /sys sysfs rw 0 0\n\
        cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n\
        cgroup /sys/fs/cgroup/freezer cgroup rw,relatime,freezer 0 0\n\
        cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";

    fn file(path: &str) -> Change {
        Change::File {
            path: path.into(),
            before: "x".into(),
        }
    }

    #[test]
    fn only_cgroup_and_cpufreq_files_ecosched_writes_are_accepted() {
        let a = AllowedPaths::from_mounts(&MountTable::parse(MOUNTS));
        for ok in [
            "sys/fs/cgroup/cpuset/ecosched-4/cpuset.cpus",
            "sys/fs/cgroup/freezer/ecosched-4/g0/freezer.state",
            "sys/fs/cgroup/unified/user.slice/cgroup.subtree_control",
            "sys/devices/system/cpu/cpufreq/policy0/scaling_governor",
            "sys/devices/system/cpu/cpu3/cpufreq/scaling_setspeed",
        ] {
            assert_eq!(a.check(&file(ok)), Ok(()), "{ok}");
        }
        for bad in [
            "etc/passwd",
            "/sys/fs/cgroup/cpuset/x/cpuset.cpus",
            "sys/fs/cgroup/cpuset/../../../etc/shadow",
            "sys/fs/cgroup/cpuset/x/release_agent",
            "sys/fs/cgroup/cpuset/x/notify_on_release",
            "sys/devices/system/cpu/cpufreq/policy0/../../../../../root/.bashrc",
            "sys/devices/system/cpu/cpu0/online",
            "sys/kernel/uevent_helper",
            "",
        ] {
            let err = a.check(&file(bad)).unwrap_err();
            assert!(err.contains(bad) || bad.is_empty(), "{bad}: {err}");
        }
    }

    #[test]
    fn tasks_need_a_real_pid_and_moves_a_membership_file() {
        let a = AllowedPaths::from_mounts(&MountTable::parse(MOUNTS));
        let moved = |tid, back_to: &str| Change::CgroupMoved {
            tid,
            start_ticks: 1,
            back_to: back_to.into(),
        };
        assert_eq!(a.check(&moved(42, "sys/fs/cgroup/cpuset/tasks")), Ok(()));
        assert!(a.check(&moved(0, "sys/fs/cgroup/cpuset/tasks")).is_err());
        assert!(a
            .check(&moved(42, "sys/fs/cgroup/cpuset/cpuset.cpus"))
            .is_err());
        assert!(a.check(&moved(42, "etc/cron.d/tasks")).is_err());
        for pid in [0, u32::MAX, PID_MAX_LIMIT + 1] {
            assert!(a
                .check(&Change::Stopped {
                    pid,
                    start_ticks: 1
                })
                .is_err());
        }
        let created = |dir: &str, members: &str| Change::CgroupCreated {
            dir: dir.into(),
            parent: "sys/fs/cgroup/cpuset".into(),
            members: members.into(),
        };
        assert_eq!(
            a.check(&created("sys/fs/cgroup/cpuset/ecosched-9", "tasks")),
            Ok(())
        );
        assert!(a.check(&created("sys/fs/cgroup/cpuset", "tasks")).is_err());
        assert!(a.check(&created("home/user", "tasks")).is_err());
        assert!(a
            .check(&created("sys/fs/cgroup/cpuset/e", "release_agent"))
            .is_err());
    }

    #[test]
    fn a_journal_others_could_write_is_refused() {
        let me = nix::unistd::geteuid().as_raw();
        assert_eq!(check_journal_meta(true, me, 0o600), Ok(()));
        assert_eq!(check_journal_meta(true, 0, 0o644), Ok(()));
        let other = if me == 1000 { 1001 } else { 1000 };
        assert!(check_journal_meta(true, other, 0o600)
            .unwrap_err()
            .contains("not by root"));
        assert!(check_journal_meta(true, me, 0o620)
            .unwrap_err()
            .contains("writable by group or others"));
        assert!(check_journal_meta(true, me, 0o602).is_err());
        assert!(check_journal_meta(false, me, 0o600).is_err());
    }

    #[test]
    fn the_state_dir_is_made_0700_and_an_open_one_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        secure_state_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o700);
        secure_state_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let err = secure_state_dir(&dir).unwrap_err().to_string();
        assert!(err.contains("writable by group or others"), "{err}");
        let f = tmp.path().join("file");
        std::fs::write(&f, "").unwrap();
        let err = secure_state_dir(&f).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
    }
}
