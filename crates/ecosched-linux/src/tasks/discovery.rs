//! Which tasks belong to a run: a command's process tree (every process it
//! spawned, followed through the `ppid` links of `/proc`, and kept after
//! it is re-parented), or exactly the processes a cgroup lists; and the
//! threads of each. Known processes are not listed again while their
//! thread count stays the same.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::procfs::{self, Stat};
use crate::tasks::proc_file::{gone_if_exited, read_task_file};
use ecosched_model::{ProcessId, TaskId};
use std::collections::{BTreeMap, HashMap};

/// What discovery remembers between looks.
#[derive(Debug)]
pub struct TaskDiscovery {
    root: FsRoot,
    /// Processes found by earlier discoveries (pid → start ticks): they stay
    /// members after their parent exits and they are re-parented away.
    members: BTreeMap<u32, u64>,
    /// Thread group of each task seen by the last discovery.
    tgids: HashMap<TaskId, u32>,
    /// The same, by (thread group, thread ID), so a discovery does not
    /// re-read the start time of threads it already knows.
    threads: HashMap<(u32, u32), TaskId>,
}

impl TaskDiscovery {
    /// Discovery under `root`, knowing nothing yet.
    pub fn new(root: FsRoot) -> TaskDiscovery {
        TaskDiscovery {
            root,
            members: BTreeMap::new(),
            tgids: HashMap::new(),
            threads: HashMap::new(),
        }
    }

    /// The process that forked process `pid` (its `ppid`, with that
    /// process's start time), or `None` when either is gone.
    pub fn parent_of(&self, pid: u32) -> Option<TaskId> {
        let ppid = self.process_stat(pid).ok()?.ppid;
        let start_ticks = self.process_stat(ppid).ok()?.start_ticks;
        Some(TaskId {
            pid: ppid,
            start_ticks,
        })
    }

    /// `stat` of process `pid`'s leader thread (its ppid and start time are
    /// the process's), or `Gone`. Read as `/proc/<pid>/task/<pid>/stat`:
    /// the thread-group view `/proc/<pid>/stat` sums CPU times over every
    /// thread in the kernel, so for a 2000-thread program each discovery
    /// would pay 2000 threads' worth; the process view is the fallback.
    fn process_stat(&self, pid: u32) -> Result<Stat, LinuxError> {
        let mut rel = format!("proc/{pid}/task/{pid}/stat");
        let text = match self.root.read(&rel, "process") {
            Ok(t) => t,
            Err(LinuxError::Absent { .. }) => {
                rel = format!("proc/{pid}/stat");
                read_task_file(&self.root, &rel, "process", pid)?
            }
            Err(e) => return Err(gone_if_exited(e, pid)),
        };
        procfs::stat::parse(&text)
            .map_err(|e| LinuxError::parse(&self.root.path(&rel), &text, e.reason))
    }

    /// Every thread of `root_pid`'s process and of all its descendants, as
    /// found through the `ppid` links of `/proc/*/stat`.
    ///
    /// Processes found once stay members while they live, even after their
    /// parent exits and they are re-parented to init: a daemonising child of
    /// the command is still the command's work. A member whose PID now has a
    /// different start time is a new task and is dropped. `Gone` when
    /// neither `root_pid` nor any earlier member is alive.
    pub fn discover(&mut self, root_pid: u32) -> Result<Vec<TaskId>, LinuxError> {
        self.discover_roots(&[root_pid])
    }

    /// [`TaskDiscovery::discover`] from several roots at once, in one walk of
    /// `/proc` (the daemon's groups: every process of a cgroup, every
    /// process matching a rule). `Gone` names the first root when none of
    /// them, nor any earlier member, is alive.
    pub fn discover_roots(&mut self, roots: &[u32]) -> Result<Vec<TaskId>, LinuxError> {
        let root_pid = roots.first().copied().unwrap_or(0);
        let mut start_of = BTreeMap::new();
        let mut threads_of = BTreeMap::new();
        let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for name in self.root.list("proc")? {
            let Ok(pid) = name.parse::<u32>() else {
                continue;
            };
            match self.process_stat(pid) {
                Ok(s) => {
                    start_of.insert(pid, s.start_ticks);
                    threads_of.insert(pid, s.num_threads);
                    children.entry(s.ppid).or_default().push(pid);
                }
                Err(LinuxError::Gone { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let mut queue: Vec<u32> = self
            .members
            .iter()
            .filter(|(pid, start)| start_of.get(pid) == Some(start))
            .map(|(pid, _)| *pid)
            .collect();
        queue.extend(roots.iter().filter(|r| start_of.contains_key(r)).copied());
        if queue.is_empty() {
            return Err(LinuxError::Gone { pid: root_pid });
        }
        let mut members = BTreeMap::new();
        while let Some(pid) = queue.pop() {
            let Some(&start) = start_of.get(&pid) else {
                continue;
            };
            if members.insert(pid, start).is_some() {
                continue;
            }
            queue.extend(children.get(&pid).into_iter().flatten().copied());
        }
        self.threads_of(members, &threads_of)
    }

    /// Every thread of exactly the processes `pids` (a cgroup's
    /// `cgroup.procs`: children are born in it, so no walk of `/proc` for
    /// descendants is needed, and a process that leaves the cgroup leaves
    /// the group). `Gone` names the first when none is alive.
    pub fn discover_processes(&mut self, pids: &[u32]) -> Result<Vec<TaskId>, LinuxError> {
        let mut members = BTreeMap::new();
        let mut threads_of = BTreeMap::new();
        for &pid in pids {
            match self.process_stat(pid) {
                Ok(s) => {
                    members.insert(pid, s.start_ticks);
                    threads_of.insert(pid, s.num_threads);
                }
                Err(LinuxError::Gone { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        if members.is_empty() {
            return Err(LinuxError::Gone {
                pid: pids.first().copied().unwrap_or(0),
            });
        }
        self.threads_of(members, &threads_of)
    }

    /// The threads of `members` (pid → start ticks), whose processes have
    /// `threads_of` threads each now; they become the members.
    fn threads_of(
        &mut self,
        members: BTreeMap<u32, u64>,
        threads_of: &BTreeMap<u32, u32>,
    ) -> Result<Vec<TaskId>, LinuxError> {
        // The threads each process had at the last discovery: a process
        // that is the same one (start time) with as many threads now is
        // not listed again — a 2000-thread program's `task/` directory is
        // most of a discovery. A thread that replaced one that exited is
        // found one read late: the read finds the old one gone and forgets
        // it, and the next discovery sees the count differ.
        let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
        for &(tgid, _) in self.threads.keys() {
            *counts.entry(tgid).or_default() += 1;
        }
        let same = |pid: &u32, start: &u64| {
            self.members.get(pid) == Some(start)
                && counts.get(pid).copied() == threads_of.get(pid).map(|&n| n as usize)
        };
        if members == self.members && members.iter().all(|(p, s)| same(p, s)) {
            // Nothing to list and nothing to rebuild (the usual case).
            let mut tasks: Vec<TaskId> = self.threads.values().copied().collect();
            tasks.sort();
            return Ok(tasks);
        }
        let mut known: BTreeMap<u32, Vec<TaskId>> = BTreeMap::new();
        for (&(tgid, _), &id) in &self.threads {
            known.entry(tgid).or_default().push(id);
        }
        let mut tasks = Vec::with_capacity(self.threads.len());
        let mut tgids = HashMap::with_capacity(self.threads.len());
        let mut threads = HashMap::with_capacity(self.threads.len());
        for (&pid, &start) in &members {
            if let (true, Some(ids)) = (same(&pid, &start), known.get(&pid)) {
                for &id in ids {
                    tgids.insert(id, pid);
                    threads.insert((pid, id.pid), id);
                    tasks.push(id);
                }
                continue;
            }
            for name in self.root.list(&format!("proc/{pid}/task"))? {
                let Ok(tid) = name.parse::<u32>() else {
                    continue;
                };
                // A thread already known keeps its start time; a recycled TID
                // is caught by the start-time check when it is read, which
                // forgets it, so the next discovery reads it afresh.
                let id = match self.threads.get(&(pid, tid)).copied() {
                    Some(id) => id,
                    None => match self.thread_start(pid, tid) {
                        Ok(start_ticks) => TaskId {
                            pid: tid,
                            start_ticks,
                        },
                        Err(LinuxError::Gone { .. }) => continue,
                        Err(e) => return Err(e),
                    },
                };
                tgids.insert(id, pid);
                threads.insert((pid, tid), id);
                tasks.push(id);
            }
        }
        self.members = members;
        self.tgids = tgids;
        self.threads = threads;
        tasks.sort();
        Ok(tasks)
    }

    fn thread_start(&self, tgid: u32, tid: u32) -> Result<u64, LinuxError> {
        let rel = format!("proc/{tgid}/task/{tid}/stat");
        let text = read_task_file(&self.root, &rel, "thread", tid)?;
        procfs::stat::parse(&text)
            .map(|s| s.start_ticks)
            .map_err(|e| LinuxError::parse(&self.root.path(&rel), &text, e.reason))
    }

    /// The start time of process `tgid`'s leader, which `thread` belongs
    /// to: from the last discovery, which read every member process's
    /// `stat` anyway, else from `/proc/<tgid>/stat` (the leader's line,
    /// present while any thread of the process lives).
    pub(super) fn process_start(&self, tgid: u32, thread: TaskId) -> Result<u64, LinuxError> {
        if thread.pid == tgid {
            return Ok(thread.start_ticks);
        }
        if let Some(&start) = self.members.get(&tgid) {
            return Ok(start);
        }
        match self.process_stat(tgid) {
            Ok(s) => Ok(s.start_ticks),
            Err(LinuxError::Gone { .. }) => Err(LinuxError::Gone { pid: thread.pid }),
            Err(e) => Err(e),
        }
    }

    /// The process a discovered thread belongs to (leader's TID and start
    /// time), as the last discovery found it.
    pub fn process_of(&self, id: &TaskId) -> Option<ProcessId> {
        let tgid = *self.tgids.get(id)?;
        let start_ticks = if tgid == id.pid {
            id.start_ticks
        } else {
            *self.members.get(&tgid)?
        };
        Some(ProcessId { tgid, start_ticks })
    }

    /// Sizes of its per-task maps.
    pub(super) fn map_sizes(&self) -> [(&'static str, usize); 3] {
        [
            ("reader.members", self.members.len()),
            ("reader.tgids", self.tgids.len()),
            ("reader.threads", self.threads.len()),
        ]
    }

    /// Forget a task that exited or was replaced.
    pub(super) fn forget(&mut self, id: TaskId) {
        if let Some(tgid) = self.tgids.remove(&id) {
            self.threads.remove(&(tgid, id.pid));
        }
    }

    /// The process a thread belongs to, from its `status`.
    pub(super) fn tgid_of(&self, id: TaskId) -> Result<u32, LinuxError> {
        if let Some(&tgid) = self.tgids.get(&id) {
            return Ok(tgid);
        }
        let rel = format!("proc/{}/status", id.pid);
        let text = match self.root.read(&rel, "task") {
            Ok(t) => t,
            Err(LinuxError::Absent { .. }) => return Err(LinuxError::Gone { pid: id.pid }),
            Err(e) => return Err(e),
        };
        procfs::status::parse(&text)
            .map(|s| s.tgid)
            .map_err(|e| LinuxError::parse(&self.root.path(&rel), &text, e.reason))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tasks::testing::{fixture, host, recorded_reader};
    use crate::tasks::HostFacts;

    #[test]
    fn discovers_the_tree_with_its_threads() {
        let dir = fixture();
        let mut r = recorded_reader(&dir);
        let ids = r.discover(100).unwrap();
        let pids: Vec<_> = ids.iter().map(|t| (t.pid, t.start_ticks)).collect();
        assert_eq!(pids, vec![(100, 500), (101, 510), (200, 900)]);
        let procs: Vec<_> = ids
            .iter()
            .map(|t| r.process_of(t).map(|p| (p.tgid, p.start_ticks)))
            .collect();
        assert_eq!(
            procs,
            vec![Some((100, 500)), Some((100, 500)), Some((200, 900))]
        );
        let fresh = || recorded_reader(&dir);
        assert_eq!(fresh().discover(200).unwrap().len(), 1);
        assert!(matches!(
            fresh().discover(4242),
            Err(LinuxError::Gone { pid: 4242 })
        ));
        assert_eq!(
            HostFacts::detect(&FsRoot::recorded(dir.path()))
                .unwrap()
                .boot_time_s,
            1_700_000_000
        );
        assert_eq!(host().start_epoch_s(500), 1_700_000_005.0);
    }

    #[test]
    fn orphans_stay_members_until_their_pid_is_reused() {
        let dir = fixture();
        let mut r = recorded_reader(&dir);
        assert_eq!(r.discover(100).unwrap().len(), 3);
        // The command exits; its child is re-parented to init.
        std::fs::remove_dir_all(dir.path().join("proc/100")).unwrap();
        // The kernel shows it in the process's and its leader thread's stat.
        let stat = dir.path().join("proc/200/stat");
        let leader = dir.path().join("proc/200/task/200/stat");
        let text = std::fs::read_to_string(&stat)
            .unwrap()
            .replacen(" S 100 ", " S 1 ", 1);
        std::fs::write(&stat, &text).unwrap();
        std::fs::write(&leader, &text).unwrap();
        let ids = r.discover(100).unwrap();
        assert_eq!(
            ids,
            vec![TaskId {
                pid: 200,
                start_ticks: 900
            }]
        );
        // PID 200 now names a newer process: not ours.
        std::fs::write(&stat, text.replacen(" 900 ", " 950 ", 1)).unwrap();
        std::fs::write(&leader, text.replacen(" 900 ", " 950 ", 1)).unwrap();
        assert!(matches!(
            r.discover(100),
            Err(LinuxError::Gone { pid: 100 })
        ));
    }

    #[test]
    fn a_recycled_thread_id_is_rediscovered_with_its_new_start() {
        let dir = fixture();
        let mut r = recorded_reader(&dir);
        let old = TaskId {
            pid: 101,
            start_ticks: 510,
        };
        assert!(r.discover(100).unwrap().contains(&old));
        let stat = dir.path().join("proc/100/task/101/stat");
        let text = std::fs::read_to_string(&stat).unwrap();
        std::fs::write(&stat, text.replacen(" 510 ", " 520 ", 1)).unwrap();
        assert!(
            r.discover(100).unwrap().contains(&old),
            "known threads are not re-read"
        );
        assert_eq!(r.read(&[old]).gone, vec![old]);
        let ids = r.discover(100).unwrap();
        assert!(
            ids.contains(&TaskId {
                pid: 101,
                start_ticks: 520
            }),
            "{ids:?}"
        );
        assert!(!ids.contains(&old));
    }

    #[test]
    fn a_process_is_listed_again_only_when_its_thread_count_changes() {
        let dir = fixture();
        let mut r = recorded_reader(&dir);
        let tids = |ids: Vec<TaskId>| ids.iter().map(|t| t.pid).collect::<Vec<_>>();
        assert_eq!(tids(r.discover(100).unwrap()), vec![100, 101, 200]);
        // A thread the count does not announce is not looked for...
        let write = |rel: &str, text: String| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let t102 = "102 (t) S 1 100 100 0 -1 4194304 98 0 0 0 7 3 0 0 20 -5 2 0 520 5767168 256 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 1 1 1 1 1 1 1 0\n";
        write("proc/100/task/102/stat", t102.to_string());
        assert_eq!(tids(r.discover(100).unwrap()), vec![100, 101, 200]);
        // ... and is found as soon as the process says it has three.
        let leader = dir.path().join("proc/100/task/100/stat");
        let text = std::fs::read_to_string(&leader).unwrap();
        std::fs::write(&leader, text.replacen(" -5 2 0 ", " -5 3 0 ", 1)).unwrap();
        assert_eq!(tids(r.discover(100).unwrap()), vec![100, 101, 102, 200]);
        // Exactly a cgroup's processes: no descendants.
        assert_eq!(tids(r.discover_processes(&[200]).unwrap()), vec![200]);
        assert!(matches!(
            r.discover_processes(&[999]),
            Err(LinuxError::Gone { pid: 999 })
        ));
    }
}
