//! The run's own accounting cgroup: every process of a run, from the
//! command's first instruction to its last descendant, and the CPU time
//! they used — exited ones included.
//!
//! ```text
//! <cpuacct mount>/<ecosched's own cgroup>/<name>-<pid>/   v1: cpuacct.usage{,_user,_sys}
//! <cgroup2 mount>/<ecosched's own cgroup>/<name>-<pid>/   v2: cpu.stat (usage_usec, …)
//! ```
//!
//! Why a cgroup and not per-task counters: a task's counters can only be
//! read while it exists, so the work of a short-lived process (a compiler
//! job of `make -jN`, a `python3 -c` in a loop) is lost unless a read lands
//! in its lifetime. The kernel charges every task's time to its cgroup as it
//! runs and keeps the total when the task exits, so reading the cgroup once
//! at the end counts everything.
//!
//! The same directory is the run's membership list: children inherit their
//! parent's cgroup and nothing else moves tasks within this hierarchy (the
//! cpuset and freezer live on their own v1 hierarchies; on cgroup v2 the
//! run cgroup *is* the cpuset cgroup and gang groups are its children), so
//! signalling every process listed in it and its children reaches every
//! process of the run, however deep or orphaned.
//!
//! A v1 `cpuacct` mount wins over cgroup v2, as for the cpuset: on a hybrid
//! machine the controller is bound to v1. The directory is created through
//! the journal, so `ecosched restore` removes it after a crash.

use crate::cgroup::membership_dir;
use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::journal::{Change, Journal};
use crate::mounts::MountTable;

const NEEDS: &str = "root (to create the run's accounting cgroup)";

/// Which interface accounts CPU time per cgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcctVersion {
    /// The v1 `cpuacct` hierarchy.
    V1,
    /// The unified v2 hierarchy (`cpu.stat` exists in every cgroup).
    V2,
}

/// Where per-cgroup CPU accounting is mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcctMount {
    /// v1 or v2.
    pub version: AcctVersion,
    /// Mount point, relative to the root.
    pub mount: String,
}

impl AcctMount {
    /// Per-cgroup CPU accounting in the mount table `mounts`; `None` when
    /// neither hierarchy is mounted.
    pub fn find(mounts: &MountTable) -> Option<Self> {
        if let Some(v1) = mounts.cgroup_v1("cpuacct") {
            return Some(AcctMount {
                version: AcctVersion::V1,
                mount: v1.rel().to_string(),
            });
        }
        mounts.cgroup2().next().map(|m| AcctMount {
            version: AcctVersion::V2,
            mount: m.rel().to_string(),
        })
    }

    /// The directory (relative to the root) of the accounting cgroup of
    /// task `pid` (`self` for this process).
    pub fn cgroup_of(&self, root: &FsRoot, pid: &str) -> Result<String, LinuxError> {
        let rel = format!("proc/{pid}/cgroup");
        let text = root.read(&rel, "cgroup membership")?;
        let controller = match self.version {
            AcctVersion::V1 => Some("cpuacct"),
            AcctVersion::V2 => None,
        };
        membership_dir(root, &rel, &text, controller, &self.mount)
    }
}

/// CPU time charged to a cgroup, in nanoseconds. `user_ns` and `system_ns`
/// are absent where the kernel does not split them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct CgroupCpu {
    /// User plus system time.
    pub usage_ns: u64,
    /// User time.
    pub user_ns: Option<u64>,
    /// System time.
    pub system_ns: Option<u64>,
}

/// Parse v2 `cpu.stat` (`usage_usec N` lines; other keys ignored).
pub fn parse_cpu_stat(text: &str) -> Result<CgroupCpu, String> {
    let mut usage = None;
    let mut user = None;
    let mut system = None;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(key), Some(value)) = (f.next(), f.next()) else {
            continue;
        };
        let slot = match key {
            "usage_usec" => &mut usage,
            "user_usec" => &mut user,
            "system_usec" => &mut system,
            _ => continue,
        };
        let us: u64 = value
            .parse()
            .map_err(|_| format!("{key}: expected microseconds, found {value:?}"))?;
        *slot = Some(us.saturating_mul(1000));
    }
    let usage_ns = usage.ok_or("no usage_usec line")?;
    Ok(CgroupCpu {
        usage_ns,
        user_ns: user,
        system_ns: system,
    })
}

/// Parse v1 `cpuacct.usage` (nanoseconds); `user` and `sys` are
/// `cpuacct.usage_user` and `cpuacct.usage_sys` where the kernel has them
/// (4.7 and later).
pub fn parse_cpuacct(
    usage: &str,
    user: Option<&str>,
    sys: Option<&str>,
) -> Result<CgroupCpu, String> {
    let ns = |what: &str, text: &str| {
        text.trim()
            .parse::<u64>()
            .map_err(|_| format!("{what}: expected nanoseconds, found {:?}", text.trim()))
    };
    Ok(CgroupCpu {
        usage_ns: ns("cpuacct.usage", usage)?,
        user_ns: user.map(|t| ns("cpuacct.usage_user", t)).transpose()?,
        system_ns: sys.map(|t| ns("cpuacct.usage_sys", t)).transpose()?,
    })
}

/// Process IDs listed in a `cgroup.procs` text; anything else is refused.
pub fn parse_procs(text: &str) -> Result<Vec<u32>, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.parse()
                .map_err(|_| format!("expected a PID, found {l:?}"))
        })
        .collect()
}

/// This run's accounting cgroup.
#[derive(Debug, Clone)]
pub struct RunCgroup {
    version: AcctVersion,
    dir: String,
}

impl RunCgroup {
    /// Create `<own cgroup>/<name>-<pid>` on `mount`, journalled first.
    pub fn create(
        journal: &mut Journal,
        mount: &AcctMount,
        name: &str,
    ) -> Result<Self, LinuxError> {
        let root = journal.root().clone();
        let own = mount.cgroup_of(&root, "self")?;
        let dir = format!("{own}/{name}-{}", std::process::id());
        if root.exists(&dir) {
            return Err(LinuxError::Parse {
                path: root.path(&dir),
                content: String::new(),
                reason: "a cgroup of an earlier run with this PID is still there; run `ecosched restore`".into(),
            });
        }
        journal.record(Change::CgroupCreated {
            dir: dir.clone(),
            parent: own,
            members: "cgroup.procs".into(),
        })?;
        root.create_dir(&dir, NEEDS)?;
        Ok(RunCgroup {
            version: mount.version,
            dir,
        })
    }

    /// An existing cgroup made for this run elsewhere (the v2 cpuset
    /// cgroup, which must also be the accounting one: a process is in one
    /// v2 cgroup only).
    pub fn adopt(version: AcctVersion, dir: &str) -> Self {
        RunCgroup {
            version,
            dir: dir.to_string(),
        }
    }

    /// The directory, relative to the root.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// The file a process writes its PID to in order to join.
    pub fn join_file(&self) -> String {
        format!("{}/cgroup.procs", self.dir)
    }

    /// CPU time charged so far to every process that has been in it.
    pub fn usage(&self, root: &FsRoot) -> Result<CgroupCpu, LinuxError> {
        match self.version {
            AcctVersion::V2 => {
                let rel = format!("{}/cpu.stat", self.dir);
                let text = root.read(&rel, "cgroup v2 CPU accounting")?;
                parse_cpu_stat(&text).map_err(|e| LinuxError::parse(&root.path(&rel), &text, e))
            }
            AcctVersion::V1 => {
                let rel = format!("{}/cpuacct.usage", self.dir);
                let usage = root.read(&rel, "cgroup v1 cpuacct")?;
                let user = root.read_opt(&format!("{}/cpuacct.usage_user", self.dir))?;
                let sys = root.read_opt(&format!("{}/cpuacct.usage_sys", self.dir))?;
                parse_cpuacct(&usage, user.as_deref(), sys.as_deref())
                    .map_err(|e| LinuxError::parse(&root.path(&rel), &usage, e))
            }
        }
    }

    /// Total CPU time charged so far, ns, from the one file that has it
    /// (`cpuacct.usage`, or `cpu.stat`'s `usage_usec`): the cheap question
    /// "did anything in the cgroup run since?" asked between reads of its
    /// tasks ([`crate::platform`]).
    pub fn usage_ns(&self, root: &FsRoot) -> Result<u64, LinuxError> {
        let (rel, what) = match self.version {
            AcctVersion::V1 => (format!("{}/cpuacct.usage", self.dir), "cgroup v1 cpuacct"),
            AcctVersion::V2 => (format!("{}/cpu.stat", self.dir), "cgroup v2 CPU accounting"),
        };
        let text = root.read(&rel, what)?;
        let parsed = match self.version {
            AcctVersion::V1 => parse_cpuacct(&text, None, None).map(|c| c.usage_ns),
            AcctVersion::V2 => parse_cpu_stat(&text).map(|c| c.usage_ns),
        };
        parsed.map_err(|e| LinuxError::parse(&root.path(&rel), &text, e))
    }

    /// An existing cgroup `dir` (relative to the root) that accounts CPU
    /// time — a v1 `cpuacct` directory or a v2 one — or `None` when it
    /// does not (a v1 `cpuset` or `freezer` directory, say). The daemon
    /// watches its cgroup groups with it.
    pub fn accounting(root: &FsRoot, dir: &str) -> Option<Self> {
        [AcctVersion::V1, AcctVersion::V2]
            .into_iter()
            .map(|version| RunCgroup::adopt(version, dir))
            .find(|cg| cg.usage_ns(root).is_ok())
    }

    /// Every process in the cgroup and its children (gang groups on v2).
    pub fn processes(&self, root: &FsRoot) -> Result<Vec<u32>, LinuxError> {
        let mut pids = Vec::new();
        let mut dirs = vec![self.dir.clone()];
        while let Some(dir) = dirs.pop() {
            let rel = format!("{dir}/cgroup.procs");
            let Some(text) = root.read_opt(&rel)? else {
                continue;
            };
            pids.extend(
                parse_procs(&text).map_err(|e| LinuxError::parse(&root.path(&rel), &text, e))?,
            );
            for name in root.list(&dir)? {
                let child = format!("{dir}/{name}");
                if root.path(&child).is_dir() {
                    dirs.push(child);
                }
            }
        }
        Ok(pids)
    }

    /// Every process of the run now, each with its start time so that a
    /// later signal never reaches a PID the kernel has reused.
    pub fn members(&self, root: &FsRoot) -> Result<Vec<Member>, LinuxError> {
        Ok(self
            .processes(root)?
            .into_iter()
            .filter_map(|pid| {
                crate::identity::start_ticks(root, pid)
                    .ok()
                    .map(|start_ticks| Member { pid, start_ticks })
            })
            .collect())
    }
}

/// A process of the run: PID and start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// PID.
    pub pid: u32,
    /// Start time, clock ticks since boot.
    pub start_ticks: u64,
}

/// Busy CPU time of the whole machine so far, in clock ticks: every CPU's
/// `/proc/stat` time except idle and iowait. The difference over a run is
/// what the run's CPU time is a share of when energy is attributed.
pub fn machine_busy_ticks(root: &FsRoot) -> Result<u64, LinuxError> {
    let rel = "proc/stat";
    let text = root.read(rel, "CPU times")?;
    let cpus =
        crate::cpustat::parse(&text).map_err(|e| LinuxError::parse(&root.path(rel), &text, e))?;
    Ok(cpus.values().map(|t| t.total.saturating_sub(t.idle)).sum())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn v1_cpuacct_wins_on_a_hybrid_machine_and_v2_is_the_fallback() {
        // /proc/mounts of the Debian VM this project is developed on.
        let hybrid = "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
                      cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0\n\
                      cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        let m = AcctMount::find(&MountTable::parse(hybrid)).unwrap();
        assert_eq!(m.version, AcctVersion::V1);
        assert_eq!(m.mount, "sys/fs/cgroup/cpuacct");
        let v2 = "cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n";
        let m = AcctMount::find(&MountTable::parse(v2)).unwrap();
        assert_eq!(m.version, AcctVersion::V2);
        assert_eq!(m.mount, "sys/fs/cgroup");
        assert_eq!(
            AcctMount::find(&MountTable::parse("proc /proc proc rw 0 0\n")),
            None
        );
    }

    #[test]
    fn only_a_directory_that_accounts_cpu_time_is_watched() {
        let dir = tempfile::tempdir().unwrap();
        let root = FsRoot::recorded(dir.path());
        let mk = |rel: &str, file: &str, text: &str| {
            std::fs::create_dir_all(dir.path().join(rel)).unwrap();
            std::fs::write(dir.path().join(rel).join(file), text).unwrap();
        };
        mk("cpuacct/job", "cpuacct.usage", "123456\n");
        mk("unified/job", "cpu.stat", "usage_usec 7\nuser_usec 5\n");
        // A v1 `cpu` directory's cpu.stat has no usage: not accounting.
        mk("cpu/job", "cpu.stat", "nr_periods 0\nnr_throttled 0\n");
        mk("cpuset/job", "cpuset.cpus", "0-1\n");
        let v1 = RunCgroup::accounting(&root, "cpuacct/job").unwrap();
        assert_eq!(v1.usage_ns(&root).unwrap(), 123_456);
        let v2 = RunCgroup::accounting(&root, "unified/job").unwrap();
        assert_eq!(v2.usage_ns(&root).unwrap(), 7_000);
        assert!(RunCgroup::accounting(&root, "cpu/job").is_none());
        assert!(RunCgroup::accounting(&root, "cpuset/job").is_none());
        assert!(RunCgroup::accounting(&root, "gone").is_none());
        // A corrupt counter is an error naming the file, not a zero.
        mk("cpuacct/bad", "cpuacct.usage", "many\n");
        let bad = RunCgroup::adopt(AcctVersion::V1, "cpuacct/bad");
        let e = bad.usage_ns(&root).unwrap_err().to_string();
        assert!(e.contains("cpuacct/bad/cpuacct.usage"), "{e}");
    }

    #[test]
    fn v2_cpu_stat_is_read_in_nanoseconds() {
        // cpu.stat of a systemd user slice on a 6.1 kernel.
        let text = "usage_usec 2671234\nuser_usec 2400000\nsystem_usec 271234\n\
                    nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n";
        let c = parse_cpu_stat(text).unwrap();
        assert_eq!(c.usage_ns, 2_671_234_000);
        assert_eq!(c.user_ns, Some(2_400_000_000));
        assert_eq!(c.system_ns, Some(271_234_000));
        assert!(parse_cpu_stat("user_usec 5\n").is_err());
        assert!(parse_cpu_stat("usage_usec -5\n")
            .unwrap_err()
            .contains("usage_usec"));
    }

    #[test]
    fn v1_cpuacct_files_are_read_and_malformed_ones_named() {
        let c = parse_cpuacct("2671234567\n", Some("2400000000\n"), None).unwrap();
        assert_eq!(c.usage_ns, 2_671_234_567);
        assert_eq!(c.user_ns, Some(2_400_000_000));
        assert_eq!(c.system_ns, None);
        let e = parse_cpuacct("12", Some("x"), None).unwrap_err();
        assert!(e.contains("cpuacct.usage_user"), "{e}");
    }

    #[test]
    fn a_v2_fixture_run_cgroup_gives_its_usage_and_every_process_below_it() {
        let dir = tempfile::tempdir().unwrap();
        let run = "sys/fs/cgroup/user.slice/ecosched-1";
        for (rel, text) in [
            (
                format!("{run}/cpu.stat"),
                "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n",
            ),
            (format!("{run}/cgroup.procs"), "10\n11\n"),
            (format!("{run}/a/cgroup.procs"), "12\n"),
        ] {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let root = FsRoot::recorded(dir.path());
        let cg = RunCgroup::adopt(AcctVersion::V2, run);
        assert_eq!(cg.usage(&root).unwrap().usage_ns, 1_500_000);
        let mut pids = cg.processes(&root).unwrap();
        pids.sort_unstable();
        assert_eq!(pids, [10, 11, 12]);
        assert_eq!(cg.join_file(), format!("{run}/cgroup.procs"));
    }

    proptest! {
        #[test]
        fn cgroup_file_parsers_never_panic(text in "\\PC{0,200}") {
            let _ = parse_cpu_stat(&text);
            let _ = parse_cpuacct(&text, Some(&text), Some(&text));
            let _ = parse_procs(&text);
        }

        #[test]
        fn cpu_stat_lines_round_trip(usage in 0u64..1 << 40, user in 0u64..1 << 40) {
            let text = format!("user_usec {user}\nusage_usec {usage}\n");
            let c = parse_cpu_stat(&text).unwrap();
            prop_assert_eq!(c.usage_ns, usage * 1000);
            prop_assert_eq!(c.user_ns, Some(user * 1000));
        }
    }
}
