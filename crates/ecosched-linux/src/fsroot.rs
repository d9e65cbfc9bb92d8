//! Every sysfs/procfs access goes through an [`FsRoot`]: the live machine
//! (`/`) or a recorded tree (a directory holding `sys/` and `proc/`), as
//! hwloc's Linux backend does. Readers take a root, never a global, so the
//! whole crate can be tested against recorded machines; a recorded root
//! refuses writes ("not from this system").

use crate::error::LinuxError;
use ecosched_model::CpuSet;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Where `sys/` and `proc/` are, and whether this is the running machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsRoot {
    dir: PathBuf,
    live: bool,
}

impl FsRoot {
    /// The running machine.
    pub fn live() -> Self {
        FsRoot {
            dir: PathBuf::from("/"),
            live: true,
        }
    }

    /// A recorded machine; read-only.
    pub fn recorded(dir: impl Into<PathBuf>) -> Self {
        FsRoot {
            dir: dir.into(),
            live: false,
        }
    }

    /// A writable tree that stands in for the live machine in tests of
    /// actuation (cpufreq, cgroups) on hand-made fixtures.
    pub fn writable_fixture(dir: impl Into<PathBuf>) -> Self {
        FsRoot {
            dir: dir.into(),
            live: true,
        }
    }

    /// Whether this root is the running machine (or a writable stand-in).
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// The root directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The full path of `rel` (e.g. `sys/devices/system/cpu/online`).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel.trim_start_matches('/'))
    }

    /// Whether `rel` exists.
    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// The contents of `rel`, trimmed. A missing file is
    /// [`LinuxError::Absent`] naming `what` it would have told.
    pub fn read(&self, rel: &str, what: &str) -> Result<String, LinuxError> {
        let path = self.path(rel);
        match std::fs::read_to_string(&path) {
            Ok(s) => Ok(s.trim().to_string()),
            Err(e) if e.kind() == ErrorKind::NotFound => Err(LinuxError::Absent {
                path,
                what: what.to_string(),
            }),
            Err(e) => Err(LinuxError::from_io(&path, e, "root")),
        }
    }

    /// Like [`FsRoot::read`], but a missing file is `None`.
    pub fn read_opt(&self, rel: &str) -> Result<Option<String>, LinuxError> {
        match self.read(rel, "") {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.is_absent() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A file holding one unsigned integer, if present.
    pub fn read_u64_opt(&self, rel: &str) -> Result<Option<u64>, LinuxError> {
        match self.read_opt(rel)? {
            None => Ok(None),
            Some(s) => s.parse().map(Some).map_err(|_| {
                LinuxError::parse(&self.path(rel), &s, "expected an unsigned integer")
            }),
        }
    }

    /// A file holding a Linux cpulist (`0-3,8`), if present. An empty file
    /// is an empty set.
    pub fn read_cpulist_opt(&self, rel: &str) -> Result<Option<CpuSet>, LinuxError> {
        match self.read_opt(rel)? {
            None => Ok(None),
            Some(s) => CpuSet::parse_list(&s)
                .map(Some)
                .map_err(|e| LinuxError::parse(&self.path(rel), &s, e.to_string())),
        }
    }

    /// Names in directory `rel`, sorted; empty when it does not exist.
    pub fn list(&self, rel: &str) -> Result<Vec<String>, LinuxError> {
        let path = self.path(rel);
        let entries = match std::fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(LinuxError::from_io(&path, e, "root")),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| LinuxError::from_io(&path, e, "root"))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    /// Write `value` to `rel`; `capability` is what a refusal needs. Fails on
    /// a recorded root.
    pub fn write(&self, rel: &str, value: &str, capability: &str) -> Result<(), LinuxError> {
        self.writable()?;
        let path = self.path(rel);
        std::fs::write(&path, value).map_err(|e| match e.kind() {
            ErrorKind::NotFound => LinuxError::Absent {
                path: path.clone(),
                what: "kernel interface".into(),
            },
            _ => LinuxError::from_io(&path, e, capability),
        })
    }
}

impl FsRoot {
    /// Create directory `rel` (a cgroup); fails if it exists.
    pub fn create_dir(&self, rel: &str, capability: &str) -> Result<(), LinuxError> {
        self.writable()?;
        let path = self.path(rel);
        std::fs::create_dir(&path).map_err(|e| LinuxError::from_io(&path, e, capability))
    }

    /// Remove the empty directory `rel` (a cgroup).
    pub fn remove_dir(&self, rel: &str, capability: &str) -> Result<(), LinuxError> {
        self.writable()?;
        let path = self.path(rel);
        std::fs::remove_dir(&path).map_err(|e| LinuxError::from_io(&path, e, capability))
    }

    fn writable(&self) -> Result<(), LinuxError> {
        if self.live {
            Ok(())
        } else {
            Err(LinuxError::ReadOnly {
                root: self.dir.clone(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_trimmed_and_reports_absence_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sys/x")).unwrap();
        std::fs::write(dir.path().join("sys/x/online"), "0-3,8\n").unwrap();
        std::fs::write(dir.path().join("sys/x/n"), "42\n").unwrap();
        std::fs::write(dir.path().join("sys/x/bad"), "4x2\n").unwrap();
        let root = FsRoot::recorded(dir.path());
        assert_eq!(
            root.read_cpulist_opt("sys/x/online")
                .unwrap()
                .unwrap()
                .to_list(),
            "0-3,8"
        );
        assert_eq!(root.read_u64_opt("/sys/x/n").unwrap(), Some(42));
        assert_eq!(root.read_u64_opt("sys/x/missing").unwrap(), None);
        let err = root.read_u64_opt("sys/x/bad").unwrap_err().to_string();
        assert!(err.contains("sys/x/bad") && err.contains("4x2"), "{err}");
        let err = root.read("sys/x/none", "cpufreq").unwrap_err();
        assert!(err.is_absent() && err.to_string().contains("cpufreq"));
        assert_eq!(root.list("sys/x").unwrap(), vec!["bad", "n", "online"]);
        assert!(root.list("sys/nothing").unwrap().is_empty());
    }

    #[test]
    fn a_recorded_root_refuses_writes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "1").unwrap();
        let err = FsRoot::recorded(dir.path())
            .write("f", "2", "root")
            .unwrap_err();
        assert!(matches!(err, LinuxError::ReadOnly { .. }));
        FsRoot::writable_fixture(dir.path())
            .write("f", "2", "root")
            .unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("f")).unwrap(), "2");
    }
}
