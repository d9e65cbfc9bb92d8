//! A group's CPU time, exited processes included.
//!
//! Summing the on-CPU time of the tasks seen at each read misses every
//! process that is born and reaped between two reads: `stress-ng --fork 2`
//! forks a child that exits at once, thousands of times a second, and half
//! of its work never shows up in a task read. The kernel keeps that time in
//! two places, and a group's CPU time is read from them:
//!
//! - **its cgroup**, for a group defined by one: v2 `cpu.stat`
//!   (`usage_usec`) or v1 `cpuacct.usage`, charged as tasks run and kept
//!   when they exit. A v1 cpuset-only directory (a Slurm job's) is looked
//!   up at the same path on the `cpuacct` hierarchy. The count is the
//!   cgroup's whole count since it was made (a Slurm job's cgroup is made
//!   for the job; its `slurmstepd` is charged to it too). A cgroup no
//!   hierarchy accounts is counted from its processes, as below.
//! - **its processes**, for a group defined by a match rule: a process's
//!   own time (`stat` fields 14–15) grows while it runs, and its parent's
//!   children time (fields 16–17) takes the whole of it, and of its reaped
//!   descendants, when the parent waits for it. The count grows by both,
//!   less what was already counted of a member reaped within the group
//!   (by its parent, or with its parent by an ancestor). A member reaped
//!   by a process outside the group (the group's roots, orphans) loses at
//!   most what it ran since the last read.

use ecosched_linux::mounts::MountTable;
use ecosched_linux::procfs;
use ecosched_linux::runcgroup::RunCgroup;
use ecosched_linux::FsRoot;
use ecosched_model::ProcessId;
use std::collections::BTreeMap;
use std::path::Path;

/// Where one group's CPU time is read.
#[derive(Debug)]
pub enum GroupCpu {
    /// The group's cgroup accounts it.
    Cgroup(CgroupCount),
    /// The group's processes, with their reaped children.
    Processes(ProcessCount),
}

impl GroupCpu {
    /// The count of the group of cgroup `dir` (absolute), or `None` when
    /// no hierarchy accounts CPU time for it.
    pub fn of_cgroup(root: &FsRoot, dir: &Path) -> Option<Self> {
        CgroupCount::find(root, dir).map(GroupCpu::Cgroup)
    }

    /// The count of a group defined by its processes.
    pub fn of_processes(root: &FsRoot, ticks_per_s: u64) -> Self {
        GroupCpu::Processes(ProcessCount::new(root.clone(), ticks_per_s))
    }

    /// CPU seconds the group used since the last call (the whole count so
    /// far at the first call of a cgroup count); `members` are the group's
    /// processes now (used by the process count only). `None` when the
    /// count could not be read this time.
    pub fn advance(&mut self, members: &[ProcessId]) -> Option<f64> {
        match self {
            GroupCpu::Cgroup(c) => c.advance(),
            GroupCpu::Processes(p) => Some(p.advance(members)),
        }
    }

    /// Where the count comes from, in a few words (for the history).
    pub fn describe(&self) -> String {
        match self {
            GroupCpu::Cgroup(c) => format!("cgroup {}", c.acct.dir()),
            GroupCpu::Processes(_) => "processes and their reaped children".into(),
        }
    }
}

/// A cgroup's own CPU count.
#[derive(Debug)]
pub struct CgroupCount {
    root: FsRoot,
    acct: RunCgroup,
    counted_ns: u64,
}

impl CgroupCount {
    /// The accounting directory of cgroup `dir`: itself when it accounts
    /// CPU time, else the same path on the v1 `cpuacct` hierarchy.
    pub fn find(root: &FsRoot, dir: &Path) -> Option<Self> {
        let rel = dir.to_string_lossy().trim_start_matches('/').to_string();
        let acct = RunCgroup::accounting(root, &rel).or_else(|| {
            let mounts = MountTable::read(root).ok()?;
            let cpuacct = mounts.cgroup_v1("cpuacct")?;
            let within = mounts
                .mounts()
                .iter()
                .filter(|m| m.fstype == "cgroup")
                .find_map(|m| rel.strip_prefix(m.rel())?.strip_prefix('/'))?;
            RunCgroup::accounting(root, &format!("{}/{within}", cpuacct.rel()))
        })?;
        Some(CgroupCount {
            root: root.clone(),
            acct,
            counted_ns: 0,
        })
    }

    fn advance(&mut self) -> Option<f64> {
        let now = self.acct.usage_ns(&self.root).ok()?;
        let delta = now.saturating_sub(self.counted_ns);
        self.counted_ns = self.counted_ns.max(now);
        Some(delta as f64 / 1e9)
    }
}

/// What was last read of one member process, in clock ticks.
#[derive(Debug, Clone, Copy)]
struct Seen {
    start_ticks: u64,
    ppid: u32,
    own: u64,
    children: u64,
}

/// The CPU count of a group defined by its processes.
#[derive(Debug)]
pub struct ProcessCount {
    root: FsRoot,
    ticks_per_s: u64,
    /// Members at the last read, by PID; `None` before the first read.
    seen: Option<BTreeMap<u32, Seen>>,
    /// Ticks counted, which may dip for a moment (a parent read before it
    /// reaped a child read as gone); only what exceeds `published` is
    /// reported.
    counted: i128,
    published: i128,
}

impl ProcessCount {
    /// A count of processes under `root` (`stat` times in `ticks_per_s`).
    pub fn new(root: FsRoot, ticks_per_s: u64) -> Self {
        ProcessCount {
            root,
            ticks_per_s: ticks_per_s.max(1),
            seen: None,
            counted: 0,
            published: 0,
        }
    }

    fn read(&self, p: ProcessId) -> Option<Seen> {
        let text = self
            .root
            .read_opt(&format!("proc/{}/stat", p.tgid))
            .ok()??;
        let s = procfs::stat::parse(&text).ok()?;
        (s.start_ticks == p.start_ticks).then_some(Seen {
            start_ticks: s.start_ticks,
            ppid: s.ppid,
            own: s.utime_ticks.saturating_add(s.stime_ticks),
            children: s.children_ticks,
        })
    }

    fn advance(&mut self, members: &[ProcessId]) -> f64 {
        let now: BTreeMap<u32, Seen> = members
            .iter()
            .filter_map(|&p| self.read(p).map(|s| (p.tgid, s)))
            .collect();
        let Some(before) = self.seen.replace(now.clone()) else {
            // What the first members ran before the group was managed is
            // not the group's.
            return 0.0;
        };
        let total = |s: &Seen| i128::from(s.own) + i128::from(s.children);
        let mut delta: i128 = 0;
        for (pid, cur) in &now {
            match before.get(pid).filter(|b| b.start_ticks == cur.start_ticks) {
                Some(prev) => delta += total(cur) - total(prev),
                // Born in the group: all of its time is the group's.
                None if now.contains_key(&cur.ppid) || before.contains_key(&cur.ppid) => {
                    delta += total(cur);
                }
                // A new root: its time counts from now on.
                None => {}
            }
        }
        // A member still here takes all of a gone member's time into its
        // children time — its parent, or the nearest ancestor still here
        // when the parent went too — part of which was counted already.
        let reaped_in_group = |mut ppid: u32| {
            for _ in 0..=before.len() {
                if now.contains_key(&ppid) {
                    return true;
                }
                match before.get(&ppid) {
                    Some(parent) => ppid = parent.ppid,
                    None => return false,
                }
            }
            false
        };
        for (pid, prev) in &before {
            let gone = now
                .get(pid)
                .is_none_or(|c| c.start_ticks != prev.start_ticks);
            if gone && reaped_in_group(prev.ppid) {
                delta -= total(prev);
            }
        }
        self.counted += delta;
        let grown = (self.counted - self.published).max(0);
        self.published += grown;
        grown as f64 / self.ticks_per_s as f64
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A `stat` line of process `pid` (parent `ppid`, started at tick
    /// 100 + pid) with `own` and `children` ticks.
    fn stat(dir: &Path, pid: u32, ppid: u32, own: u64, children: u64) {
        let d = dir.join(format!("proc/{pid}"));
        std::fs::create_dir_all(&d).unwrap();
        let line = format!(
            "{pid} (w) R {ppid} 1 1 0 -1 0 0 0 0 0 {own} 0 {children} 0 20 0 1 0 {} 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0\n",
            100 + pid
        );
        std::fs::write(d.join("stat"), line).unwrap();
    }

    fn id(pid: u32) -> ProcessId {
        ProcessId {
            tgid: pid,
            start_ticks: u64::from(100 + pid),
        }
    }

    #[test]
    fn reaped_children_count_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = FsRoot::recorded(dir.path());
        let mut c = ProcessCount::new(root, 100);
        // The root has run 5 s before the group is managed: not counted.
        stat(dir.path(), 10, 1, 500, 0);
        assert_eq!(c.advance(&[id(10)]), 0.0);
        // It runs 1 s, and a child born since runs 2 s.
        stat(dir.path(), 10, 1, 600, 0);
        stat(dir.path(), 11, 10, 200, 0);
        assert_eq!(c.advance(&[id(10), id(11)]), 3.0);
        // The child runs 1 s more and is reaped (3 s into the parent's
        // children time), with a grandchild never seen (0.5 s).
        std::fs::remove_dir_all(dir.path().join("proc/11")).unwrap();
        stat(dir.path(), 10, 1, 600, 350);
        assert_eq!(c.advance(&[id(10), id(11)]), 1.5);
        // The root ends, reaped outside the group: nothing more.
        std::fs::remove_dir_all(dir.path().join("proc/10")).unwrap();
        assert_eq!(c.advance(&[id(10)]), 0.0);
    }

    #[test]
    fn a_child_and_its_parent_reaped_together_count_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ProcessCount::new(FsRoot::recorded(dir.path()), 100);
        // shell 10 → stress-ng 11 → worker 12.
        stat(dir.path(), 10, 1, 0, 0);
        stat(dir.path(), 11, 10, 0, 0);
        stat(dir.path(), 12, 11, 0, 0);
        c.advance(&[id(10), id(11), id(12)]);
        stat(dir.path(), 11, 10, 10, 0);
        stat(dir.path(), 12, 11, 200, 300);
        assert_eq!(c.advance(&[id(10), id(11), id(12)]), 5.1);
        // Both end within one interval: the worker ran 1 s more, the
        // shell's children time takes all 6.1 s.
        std::fs::remove_dir_all(dir.path().join("proc/11")).unwrap();
        std::fs::remove_dir_all(dir.path().join("proc/12")).unwrap();
        stat(dir.path(), 10, 1, 0, 610);
        assert_eq!(c.advance(&[id(10), id(11), id(12)]), 1.0);
    }

    #[test]
    fn a_parent_read_before_it_reaps_never_counts_backwards() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ProcessCount::new(FsRoot::recorded(dir.path()), 100);
        stat(dir.path(), 10, 1, 0, 0);
        stat(dir.path(), 11, 10, 0, 0);
        c.advance(&[id(10), id(11)]);
        stat(dir.path(), 11, 10, 100, 0);
        assert_eq!(c.advance(&[id(10), id(11)]), 1.0);
        // The child is gone but its parent's children time is not yet
        // updated: the count waits instead of going back.
        std::fs::remove_dir_all(dir.path().join("proc/11")).unwrap();
        assert_eq!(c.advance(&[id(10)]), 0.0);
        stat(dir.path(), 10, 1, 0, 150);
        assert_eq!(c.advance(&[id(10)]), 0.5);
    }

    #[test]
    fn a_cpuset_only_cgroup_is_counted_on_the_cpuacct_hierarchy() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join("proc")).unwrap();
        std::fs::write(
            p.join("proc/mounts"),
            "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n\
             cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n",
        )
        .unwrap();
        std::fs::create_dir_all(p.join("sys/fs/cgroup/cpuset/slurm/job_7")).unwrap();
        let acct = p.join("sys/fs/cgroup/cpu,cpuacct/slurm/job_7");
        std::fs::create_dir_all(&acct).unwrap();
        std::fs::write(acct.join("cpuacct.usage"), "2500000000\n").unwrap();
        let root = FsRoot::recorded(p);
        let mut c =
            GroupCpu::of_cgroup(&root, Path::new("/sys/fs/cgroup/cpuset/slurm/job_7")).unwrap();
        assert_eq!(c.advance(&[]), Some(2.5));
        std::fs::write(acct.join("cpuacct.usage"), "3000000000\n").unwrap();
        assert_eq!(c.advance(&[]), Some(0.5));
        assert!(GroupCpu::of_cgroup(&root, Path::new("/sys/fs/cgroup/cpuset/other")).is_none());
    }
}
