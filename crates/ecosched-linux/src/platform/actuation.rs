//! Carrying out plans on the machine: threads' affinity, the run's cpuset
//! cgroup (or, for tasks inside another manager's cpuset, affinity within
//! that cpuset), cpufreq settings, stopping and continuing processes, and the
//! run's accounting cgroup. Every change is journalled before it is made
//! ([`crate::journal`]) and undone at the end. On a recorded root nothing
//! is changed: every change is refused ([`LinuxError::ReadOnly`]).

use crate::cgroup::{CpusetMount, ManagedCpuset, Version};
use crate::cpufreq::{self, CpufreqPolicy};
use crate::error::LinuxError;
use crate::freezer::{FreezerMount, FreezerVersion, GangContext, GangRunner};
use crate::fsroot::FsRoot;
use crate::identity::same_task;
use crate::journal::{Change, Journal, UndoReport};
use crate::mounts::MountTable;
use crate::runcgroup::{AcctMount, AcctVersion, RunCgroup};
use crate::{affinity, gang};
use ecosched_model::{CpuSet, FreqDomainId, FreqSetting, GangAction, ProcessId, TaskId};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What the actuator changed that a read of the tasks would show; taken
/// by the next read ([`Actuator::take_touched`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Touched {
    /// Affinities or cpusets: allowed CPUs read before are stale.
    pub(super) affinity: bool,
    /// Anything (affinity, cpusets, stopped tasks).
    pub(super) any: bool,
}

/// The journal and everything changed through it.
#[derive(Debug)]
pub(super) struct Actuator {
    root: FsRoot,
    journal: Journal,
    mounts: MountTable,
    /// Name of the cgroups made for this run (`<name>-<pid>`).
    cgroup_name: String,
    cpuset: Option<ManagedCpuset>,
    /// Whether tasks stay in the cpuset they are in (attached tasks, which
    /// another manager may have put there): see [`Actuator::set_cpus_in_place`].
    stay: bool,
    /// ecosched's own cpuset cgroup (relative to the root), once looked up.
    own: Option<String>,
    /// The last managed CPUs, which tasks in another cpuset get as their
    /// affinity cut to that cpuset's CPUs; applied to new tasks too.
    confined_cpus: Option<CpuSet>,
    /// Whether a task was found in another manager's cpuset.
    foreign: bool,
    touched: Touched,
}

impl Actuator {
    /// Changes under `root` (read-only unless it is live), journalled in
    /// `journal`; cgroups are found in `mounts` and named after
    /// `cgroup_name`; `stay` keeps every task within the cpuset it is in.
    pub(super) fn new(
        root: FsRoot,
        journal: Journal,
        mounts: MountTable,
        cgroup_name: String,
        stay: bool,
    ) -> Self {
        Actuator {
            root,
            journal,
            mounts,
            cgroup_name,
            cpuset: None,
            stay,
            own: None,
            confined_cpus: None,
            foreign: false,
            touched: Touched::default(),
        }
    }

    /// Whether changes can be made (the root is live, not recorded).
    pub(super) fn writable(&self) -> bool {
        self.root.is_live()
    }

    /// [`LinuxError::ReadOnly`] on a recorded root.
    pub(super) fn check_writable(&self) -> Result<(), LinuxError> {
        if self.writable() {
            Ok(())
        } else {
            Err(LinuxError::ReadOnly {
                root: self.root.dir().to_path_buf(),
            })
        }
    }

    /// Whether some task belongs to another manager's cpuset.
    pub(super) fn confined(&self) -> bool {
        self.foreign
    }

    /// Records the journal holds.
    pub(super) fn journal_len(&self) -> usize {
        self.journal.len()
    }

    /// Undo everything journalled.
    pub(super) fn undo(&mut self) -> UndoReport {
        self.journal.undo()
    }

    /// What changed since the last call.
    pub(super) fn take_touched(&mut self) -> Touched {
        std::mem::take(&mut self.touched)
    }

    /// Set task `task`'s affinity to `cpus`, journalling the old one.
    pub(super) fn set_affinity(&mut self, task: TaskId, cpus: &CpuSet) -> Result<(), LinuxError> {
        self.check_writable()?;
        if !same_task(&self.root, task.pid, task.start_ticks) {
            return Err(LinuxError::Gone { pid: task.pid });
        }
        let before = affinity::get(task.pid)?;
        if &before == cpus {
            return Ok(());
        }
        self.journal.record(Change::Affinity {
            tid: task.pid,
            start_ticks: task.start_ticks,
            before,
        })?;
        self.touched = Touched {
            affinity: true,
            any: true,
        };
        affinity::set(task.pid, cpus)
    }

    /// Confine `tasks` (and every task found later) to `cpus`: the run's
    /// cpuset cgroup, made the first time, or, when tasks stay where they
    /// are, see [`Actuator::set_cpus_in_place`].
    pub(super) fn set_managed_cpus(
        &mut self,
        cpus: &CpuSet,
        tasks: &[TaskId],
    ) -> Result<(), LinuxError> {
        self.check_writable()?;
        if self.stay {
            return self.set_cpus_in_place(cpus, tasks);
        }
        self.set_run_cpuset(cpus, tasks)
    }

    /// The run's cpuset cgroup (made the first time) on `cpus`, with
    /// `tasks` moved in.
    fn set_run_cpuset(&mut self, cpus: &CpuSet, tasks: &[TaskId]) -> Result<(), LinuxError> {
        if self.cpuset.is_none() {
            let mount = CpusetMount::find(&self.mounts, &self.root)?;
            self.cpuset = Some(ManagedCpuset::create(
                &mut self.journal,
                mount,
                &self.cgroup_name,
            )?);
        }
        let Some(cpuset) = &self.cpuset else {
            return Ok(());
        };
        cpuset.set_cpus(&mut self.journal, cpus)?;
        self.touched = Touched {
            affinity: true,
            any: true,
        };
        self.attach_all(tasks)
    }

    /// Managed CPUs for tasks that stay in their cpuset (a daemon's
    /// groups: a Slurm job's, a systemd slice's or a container's tasks).
    /// A task in ecosched's own cpuset moves into the run's cpuset, a
    /// child of it, as in a run. A task in any other cpuset is never moved
    /// out of it — another manager's limits (and, on cgroup v2, its memory
    /// and I/O limits too) hold it there — and its affinity becomes `cpus`
    /// cut to that cpuset's effective CPUs, or all of those when the two
    /// do not meet (the policy sees the whole machine, the job only its
    /// share). Its CPUs are never widened beyond its cpuset, and the
    /// affinity is journalled like any other.
    fn set_cpus_in_place(&mut self, cpus: &CpuSet, tasks: &[TaskId]) -> Result<(), LinuxError> {
        let mut home = Vec::new();
        for &task in tasks {
            match self.cpuset_of(task)? {
                None => {}
                Some(Place::Own) => home.push(task),
                Some(Place::Other(dir)) => match self.confine_within(task, &dir, cpus) {
                    Ok(()) | Err(LinuxError::Gone { .. }) => {}
                    Err(e) => return Err(e),
                },
            }
        }
        self.confined_cpus = Some(cpus.clone());
        if home.is_empty() && self.cpuset.is_none() {
            return Ok(());
        }
        self.set_run_cpuset(cpus, &home)
    }

    /// Set `task`'s affinity to `cpus` cut to the CPUs of cpuset `dir`
    /// (relative to the root), where it stays.
    fn confine_within(&mut self, task: TaskId, dir: &str, cpus: &CpuSet) -> Result<(), LinuxError> {
        let owned = cpuset_cpus(&self.root, dir)?;
        let cut = cpus.intersection(&owned);
        let target = if cut.is_empty() { owned } else { cut };
        self.set_affinity(task, &target)
    }

    /// Where `task` is: in ecosched's own cpuset (or the run's), or in
    /// another; `None` once it is gone. A task in another cpuset marks
    /// the run as confined. Without a cpuset controller there is no
    /// cpuset to stay in: every task counts as in ecosched's own, and
    /// making the run's cpuset fails as in a run.
    fn cpuset_of(&mut self, task: TaskId) -> Result<Option<Place>, LinuxError> {
        let Ok(mount) = CpusetMount::find(&self.mounts, &self.root) else {
            return Ok(Some(Place::Own));
        };
        if self.own.is_none() {
            self.own = Some(mount.cgroup_of(&self.root, "self")?);
        }
        let dir = match mount.cgroup_of(&self.root, &task.pid.to_string()) {
            Ok(d) => d,
            Err(LinuxError::Absent { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let in_run = self
            .cpuset
            .as_ref()
            .is_some_and(|c| dir == c.dir() || dir.starts_with(&format!("{}/", c.dir())));
        if in_run || self.own.as_deref() == Some(dir.as_str()) {
            return Ok(Some(Place::Own));
        }
        self.foreign = true;
        Ok(Some(Place::Other(dir)))
    }

    fn attach_all(&mut self, tasks: &[TaskId]) -> Result<(), LinuxError> {
        let Some(cpuset) = &self.cpuset else {
            return Ok(());
        };
        for &task in tasks {
            match cpuset.attach(&mut self.journal, task) {
                Ok(()) | Err(LinuxError::Gone { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Take on a task just discovered, of `process`; `parent_of` names the
    /// process that forked a process. In order: its creator's journalled
    /// affinity becomes its own original, it leaves a gang group no group
    /// names, it joins the managed cpuset and it gets the confined CPUs.
    /// Most new tasks are born in the cpuset, but one forked before the
    /// cpuset existed (or while tasks were being moved in) would otherwise
    /// escape it. What fails is said in the returned notices.
    pub(super) fn adopt(
        &mut self,
        id: TaskId,
        process: Option<ProcessId>,
        parent_of: impl FnOnce(u32) -> Option<TaskId>,
        gang: &mut GangRunner,
    ) -> Vec<String> {
        let mut notices = Vec::new();
        if let Err(e) = self.journal_inherited_affinity(id, process, parent_of) {
            notices.push(format!("task {id} could not be journalled: {e}"));
        }
        if gang.active() {
            match gang.adopt(&mut self.journal, id, process) {
                Ok(()) | Err(LinuxError::Gone { .. }) => {}
                Err(e) => notices.push(format!("task {id} could not leave its gang's cgroup: {e}")),
            }
        }
        let place = if self.stay {
            match self.cpuset_of(id) {
                Ok(p) => p,
                Err(e) => {
                    notices.push(format!("task {id}: its cpuset cannot be read: {e}"));
                    return notices;
                }
            }
        } else {
            Some(Place::Own)
        };
        match place {
            None => {}
            Some(Place::Own) => {
                if let Some(cpuset) = &self.cpuset {
                    match cpuset.attach(&mut self.journal, id) {
                        Ok(()) | Err(LinuxError::Gone { .. }) => {}
                        Err(e) => notices
                            .push(format!("task {id} could not join the managed cpuset: {e}")),
                    }
                }
            }
            Some(Place::Other(dir)) => {
                if let Some(cpus) = self.confined_cpus.clone() {
                    match self.confine_within(id, &dir, &cpus) {
                        Ok(()) | Err(LinuxError::Gone { .. }) => {}
                        Err(e) => notices.push(format!(
                            "task {id} could not be confined to CPUs {cpus} within its cpuset {dir}: {e}"
                        )),
                    }
                }
            }
        }
        notices
    }

    /// A thread or process born of one whose affinity ecosched changed
    /// starts with the changed mask, and undoing only the changes ecosched
    /// made would leave it there (a Slurm job's worker forked after its
    /// parent was confined would keep the confined CPUs after `job-end`).
    /// So its creator's journalled original is journalled for it, before
    /// anything else is done to it: the creator is its process's leader for
    /// a thread, its parent for a process. A task that set its own affinity
    /// between birth and discovery gets its creator's original back too.
    fn journal_inherited_affinity(
        &mut self,
        id: TaskId,
        process: Option<ProcessId>,
        parent_of: impl FnOnce(u32) -> Option<TaskId>,
    ) -> Result<(), LinuxError> {
        if !self.journal.changed_affinity() {
            return Ok(());
        }
        let creator = match process {
            Some(p) if p.tgid != id.pid => Some(TaskId {
                pid: p.tgid,
                start_ticks: p.start_ticks,
            }),
            _ => parent_of(id.pid),
        };
        let Some(before) = creator
            .and_then(|c| self.journal.affinity_before(c.pid, c.start_ticks))
            .cloned()
        else {
            return Ok(());
        };
        self.journal.record(Change::Affinity {
            tid: id.pid,
            start_ticks: id.start_ticks,
            before,
        })
    }

    /// Stop or continue task `task`'s process (a plan's gang action),
    /// journalling a stop first.
    pub(super) fn gang_action(
        &mut self,
        task: TaskId,
        action: GangAction,
    ) -> Result<(), LinuxError> {
        self.check_writable()?;
        if !same_task(&self.root, task.pid, task.start_ticks) {
            return Err(LinuxError::Gone { pid: task.pid });
        }
        self.touched.any = true;
        match action {
            GangAction::Stop => {
                self.journal.record(Change::Stopped {
                    pid: task.pid,
                    start_ticks: task.start_ticks,
                })?;
                gang::stop(task.pid)
            }
            GangAction::Continue => gang::resume(task.pid),
        }
    }

    /// Carry out `frequency` through the cpufreq `policies`.
    pub(super) fn set_frequency(
        &mut self,
        policies: &[CpufreqPolicy],
        frequency: &BTreeMap<FreqDomainId, FreqSetting>,
    ) -> Result<(), LinuxError> {
        if frequency.is_empty() {
            return Ok(());
        }
        self.check_writable()?;
        apply_frequency(&mut self.journal, policies, frequency)
    }

    /// The run's accounting cgroup: on cgroup v2 the cpuset cgroup itself
    /// (made now if the plan did not ask for one: a process is in one v2
    /// cgroup only), else a new one on the v1 `cpuacct` hierarchy. `Err`
    /// says why there is none.
    pub(super) fn create_run_cgroup(&mut self) -> Result<RunCgroup, String> {
        let Some(mount) = AcctMount::find(&self.mounts) else {
            return Err("no cpuacct or cgroup2 mount in /proc/mounts".into());
        };
        if mount.version == AcctVersion::V2 {
            let cpuset_v2 =
                CpusetMount::find(&self.mounts, &self.root).is_ok_and(|m| m.version == Version::V2);
            if cpuset_v2 {
                if self.cpuset.is_none() {
                    let cpuset_mount =
                        CpusetMount::find(&self.mounts, &self.root).map_err(|e| e.to_string())?;
                    self.cpuset = Some(
                        ManagedCpuset::create(&mut self.journal, cpuset_mount, &self.cgroup_name)
                            .map_err(|e| e.to_string())?,
                    );
                }
                if let Some(cpuset) = &self.cpuset {
                    return Ok(RunCgroup::adopt(AcctVersion::V2, cpuset.dir()));
                }
            }
        }
        RunCgroup::create(&mut self.journal, &mount, &self.cgroup_name).map_err(|e| e.to_string())
    }

    /// The membership files a command joins before it starts: the run's
    /// accounting cgroup `run`, and the managed cpuset when it is another
    /// cgroup.
    pub(super) fn join_files(&self, run: Option<&RunCgroup>) -> Vec<PathBuf> {
        let mut join = Vec::new();
        if let Some(cg) = run {
            join.push(self.root.path(&cg.join_file()));
        }
        if let Some(cpuset) = &self.cpuset {
            let same = run.is_some_and(|cg| cg.dir() == cpuset.dir());
            if !same {
                join.push(self.root.path(&format!(
                    "{}/{}",
                    cpuset.dir(),
                    cpuset.mount().members()
                )));
            }
        }
        join
    }

    /// Before a gang schedule starts (`starting`) on a pure cgroup v2
    /// machine, make the run's cgroup (with its parent's CPUs) and move
    /// `tasks` in: the groups live inside it, and a later cpuset must not
    /// move the tasks out of their groups.
    pub(super) fn prepare_gangs(
        &mut self,
        starting: bool,
        tasks: &[TaskId],
    ) -> Result<(), LinuxError> {
        if !starting || self.cpuset.is_some() {
            return Ok(());
        }
        let Ok(mount) = CpusetMount::find(&self.mounts, &self.root) else {
            return Ok(());
        };
        let v2_freezer =
            FreezerMount::find(&self.mounts).is_some_and(|f| f.version == FreezerVersion::V2);
        if mount.version == Version::V2 && v2_freezer {
            self.cpuset = Some(ManagedCpuset::create(
                &mut self.journal,
                mount,
                &self.cgroup_name,
            )?);
            self.attach_all(tasks)?;
        }
        Ok(())
    }

    /// What the gang runner works with; `process_of` names each task's
    /// process.
    pub(super) fn gang_context<'a>(
        &'a mut self,
        process_of: Box<dyn Fn(TaskId) -> Option<ProcessId> + 'a>,
    ) -> GangContext<'a> {
        let v2_cpuset_dir = self
            .cpuset
            .as_ref()
            .and_then(|c| (c.mount().version == Version::V2).then(|| c.dir().to_string()));
        GangContext {
            journal: &mut self.journal,
            process_of,
            base_name: format!("{}-{}", self.cgroup_name, std::process::id()),
            v2_cpuset_dir,
            mounts: &self.mounts,
        }
    }
}

/// Where a task is, for a run whose tasks stay in their cpusets.
enum Place {
    /// In ecosched's own cpuset, or in the run's.
    Own,
    /// In another cpuset (relative to the root).
    Other(String),
}

/// The CPUs of the cpuset cgroup `dir` (relative to the root): v1's
/// `cpuset.effective_cpus` or `cpuset.cpus` (or `cpus` when mounted
/// `noprefix`), v2's `cpuset.cpus.effective`; the first that is set. A
/// v2 cgroup without the cpuset controller has none of these files and
/// has its nearest ancestor's CPUs.
fn cpuset_cpus(root: &FsRoot, dir: &str) -> Result<CpuSet, LinuxError> {
    let mut at = dir.trim_matches('/');
    loop {
        let mut present = false;
        for file in [
            "cpuset.effective_cpus",
            "cpuset.cpus.effective",
            "cpuset.cpus",
            "cpus",
        ] {
            if let Some(set) = root.read_cpulist_opt(&format!("{at}/{file}"))? {
                present = true;
                if !set.is_empty() {
                    return Ok(set);
                }
            }
        }
        match at.rsplit_once('/') {
            Some((parent, _)) if !present => at = parent,
            _ => break,
        }
    }
    Err(LinuxError::Absent {
        path: root.path(dir),
        what: "the CPUs of the cpuset cgroup that holds the tasks".into(),
    })
}

/// Carry out a plan's frequency settings through cpufreq, journalling every
/// file before it is written. `policies` are index-aligned with the
/// topology's frequency domains.
///
/// A file that already holds the value is not written: policies re-send
/// their settings every interval, and writing `scaling_governor` again
/// restarts the governor (ondemand and conservative lose their sampling
/// history and step back to their starting frequency), while writing a
/// min/max or setspeed file makes cpufreq re-evaluate the policy.
pub fn apply_frequency(
    journal: &mut Journal,
    policies: &[CpufreqPolicy],
    frequency: &BTreeMap<FreqDomainId, FreqSetting>,
) -> Result<(), LinuxError> {
    for (&domain, setting) in frequency {
        let Some(policy) = policies.get(domain.index()) else {
            return Err(LinuxError::Absent {
                path: PathBuf::from("sys/devices/system/cpu/cpufreq"),
                what: format!("a cpufreq policy for frequency domain {domain}"),
            });
        };
        for write in cpufreq::writes_for(policy, setting)? {
            let current = journal.root().read_opt(&write.path)?;
            if current.as_deref() == Some(write.value.trim()) {
                continue;
            }
            journal.write_file(&write.path, &write.value, "root (cpufreq)")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_cpusets_cpus_are_read_from_it_or_its_nearest_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let job = dir.path().join("sys/fs/cgroup/cpuset/slurm_n1/uid_0/job_7");
        std::fs::create_dir_all(&job).unwrap();
        let root = FsRoot::recorded(dir.path());
        let at = "sys/fs/cgroup/cpuset/slurm_n1/uid_0/job_7";
        // Nothing written anywhere: a clear error naming the cgroup.
        let e = cpuset_cpus(&root, at).unwrap_err().to_string();
        assert!(e.contains("job_7"), "{e}");
        // Written but empty (a v1 cpuset before Slurm fills it): never
        // its parent's wider CPUs.
        std::fs::write(job.join("cpuset.cpus"), "\n").unwrap();
        std::fs::write(job.join("../cpuset.cpus"), "0-7\n").unwrap();
        assert!(cpuset_cpus(&root, at).is_err());
        std::fs::write(job.join("cpuset.cpus"), "2-3\n").unwrap();
        assert_eq!(cpuset_cpus(&root, at).unwrap().to_list(), "2-3");
        // The effective CPUs win when the kernel offers them.
        std::fs::write(job.join("cpuset.effective_cpus"), "3\n").unwrap();
        assert_eq!(cpuset_cpus(&root, at).unwrap().to_list(), "3");
        // A v2 cgroup without the controller: its nearest ancestor's.
        let scope = dir.path().join("sys/fs/cgroup/user.slice/session-2.scope");
        std::fs::create_dir_all(&scope).unwrap();
        std::fs::write(
            dir.path().join("sys/fs/cgroup/cpuset.cpus.effective"),
            "0-3\n",
        )
        .unwrap();
        let at = "sys/fs/cgroup/user.slice/session-2.scope";
        assert_eq!(cpuset_cpus(&root, at).unwrap().to_list(), "0-3");
    }
}
