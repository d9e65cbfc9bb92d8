//! Carrying out plans on the machine: threads' affinity, the run's cpuset
//! cgroup (or, for tasks another manager owns, affinity inside its
//! cgroup), cpufreq settings, stopping and continuing processes, and the
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
use std::path::{Path, PathBuf};

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
    /// The cgroup that owns the tasks, when they may not be moved.
    confine: Option<PathBuf>,
    /// The affinity confined tasks get (the last managed CPUs, cut to the
    /// owning cgroup's), applied to new tasks too.
    confined_cpus: Option<CpuSet>,
    touched: Touched,
}

impl Actuator {
    /// Changes under `root` (read-only unless it is live), journalled in
    /// `journal`; cgroups are found in `mounts` and named after
    /// `cgroup_name`; `confine` is the cgroup that owns the tasks, if
    /// another manager does.
    pub(super) fn new(
        root: FsRoot,
        journal: Journal,
        mounts: MountTable,
        cgroup_name: String,
        confine: Option<PathBuf>,
    ) -> Self {
        Actuator {
            root,
            journal,
            mounts,
            cgroup_name,
            cpuset: None,
            confine,
            confined_cpus: None,
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

    /// Whether the tasks belong to another manager's cgroup.
    pub(super) fn confined(&self) -> bool {
        self.confine.is_some()
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
    /// cpuset cgroup, made the first time, or affinity inside the owning
    /// cgroup for confined tasks.
    pub(super) fn set_managed_cpus(
        &mut self,
        cpus: &CpuSet,
        tasks: &[TaskId],
    ) -> Result<(), LinuxError> {
        self.check_writable()?;
        if let Some(dir) = self.confine.clone() {
            return self.set_confined_cpus(&dir, cpus, tasks);
        }
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

    /// Managed CPUs for tasks another manager owns: each task's affinity
    /// becomes `cpus` cut to the owning cgroup's CPUs, or all of those when
    /// the two do not meet (the policy sees the whole machine, the job has
    /// only its share). Affinity never leaves the cgroup's CPUs, so the
    /// job's allocation is never widened, and it is journalled like any
    /// affinity change.
    fn set_confined_cpus(
        &mut self,
        dir: &Path,
        cpus: &CpuSet,
        tasks: &[TaskId],
    ) -> Result<(), LinuxError> {
        let owned = confine_cpus(&self.root, dir)?;
        let cut = cpus.intersection(&owned);
        let target = if cut.is_empty() { owned } else { cut };
        for &task in tasks {
            match self.set_affinity(task, &target) {
                Ok(()) | Err(LinuxError::Gone { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        self.confined_cpus = Some(target);
        Ok(())
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
        if let Some(cpuset) = &self.cpuset {
            match cpuset.attach(&mut self.journal, id) {
                Ok(()) | Err(LinuxError::Gone { .. }) => {}
                Err(e) => notices.push(format!("task {id} could not join the managed cpuset: {e}")),
            }
        }
        if let Some(cpus) = self.confined_cpus.clone() {
            match self.set_affinity(id, &cpus) {
                Ok(()) | Err(LinuxError::Gone { .. }) => {}
                Err(e) => notices.push(format!(
                    "task {id} could not be confined to CPUs {cpus}: {e}"
                )),
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

/// The CPUs of the cpuset cgroup `dir` (absolute): v1's
/// `cpuset.effective_cpus` or `cpuset.cpus` (or `cpus` when mounted
/// `noprefix`), v2's `cpuset.cpus.effective`; the first that is set.
fn confine_cpus(root: &FsRoot, dir: &Path) -> Result<CpuSet, LinuxError> {
    let rel = dir.to_string_lossy().trim_start_matches('/').to_string();
    for file in [
        "cpuset.effective_cpus",
        "cpuset.cpus.effective",
        "cpuset.cpus",
        "cpus",
    ] {
        if let Some(set) = root.read_cpulist_opt(&format!("{rel}/{file}"))? {
            if !set.is_empty() {
                return Ok(set);
            }
        }
    }
    Err(LinuxError::Absent {
        path: dir.to_path_buf(),
        what: "the CPUs of the cpuset cgroup that owns the tasks".into(),
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
    fn a_confining_cgroups_cpus_are_read_from_its_cpuset() {
        let dir = tempfile::tempdir().unwrap();
        let job = dir.path().join("sys/fs/cgroup/cpuset/slurm_n1/uid_0/job_7");
        std::fs::create_dir_all(&job).unwrap();
        let root = FsRoot::recorded(dir.path());
        let at = Path::new("/sys/fs/cgroup/cpuset/slurm_n1/uid_0/job_7");
        // Not yet written by Slurm: a clear error naming the cgroup.
        let e = confine_cpus(&root, at).unwrap_err().to_string();
        assert!(e.contains("job_7"), "{e}");
        std::fs::write(job.join("cpuset.cpus"), "2-3\n").unwrap();
        assert_eq!(confine_cpus(&root, at).unwrap().to_list(), "2-3");
        // The effective CPUs win when the kernel offers them.
        std::fs::write(job.join("cpuset.effective_cpus"), "3\n").unwrap();
        assert_eq!(confine_cpus(&root, at).unwrap().to_list(), "3");
    }
}
