//! Timed gang schedules carried out between decisions: a cycle of slots in
//! which only some groups of tasks may run (Merkel et al. §4.3, sorted
//! co-scheduling). A control loop that wakes every few hundred
//! milliseconds cannot switch gangs every time slice, so the platform
//! wakes at each slot boundary by itself ([`GangRunner::due`]) and freezes
//! and thaws whole groups.
//!
//! ```text
//! v1: <freezer mount>/<ecosched's own freezer cgroup>/
//!        └─ <name>-<pid>/            this run; grouped tasks' home base,
//!             ├─ <group a>/          never frozen (tasks taken out of a
//!             └─ <group b>/          group wait here), one directory per
//!                                    group, freezer.state FROZEN/THAWED
//! v2: <the run's cgroup>/<group>/    cgroup.freeze 1/0
//! ```
//!
//! Mechanisms, best first:
//! - the cgroup v1 `freezer` hierarchy. It is a hierarchy of its own, apart
//!   from the `cpuset` one, so moving a thread into a freezer group does not
//!   change which CPUs it may use. Threads move one by one (`tasks`).
//! - cgroup v2 `cgroup.freeze` (Linux 5.2) in child cgroups of the run's
//!   cgroup. On a pure v2 machine that is the run's cpuset cgroup and no
//!   controller is enabled below it, so a group inherits the run's CPUs.
//!   Processes move whole (`cgroup.procs`): the threads of one process
//!   cannot be in two groups.
//! - `SIGSTOP`/`SIGCONT` ([`crate::gang`]) when no freezer is mounted. A
//!   stop signal stops a whole process, so this too works per process.
//!
//! Every directory created, task moved and state written is journalled
//! before it is made ([`crate::journal`]); undoing thaws each group (the
//! state write comes later in the journal than the directory, so it is
//! undone first), moves each task back, then removes the directories. A
//! task forked by a grouped task is born in its group and moved to the run
//! directory when discovered, so a task that no group names is never frozen
//! for longer than one discovery.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::gang;
use crate::identity::same_task;
use crate::journal::{Change, Journal};
use ecosched_model::{GangSchedule, ProcessId, TaskId};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

const NEEDS: &str = "root (cgroup freezer)";

/// The shortest slot the platform accepts: a user-space timer switching
/// groups through cgroup files cannot honour less with any precision.
pub const MIN_SLOT_US: u64 = 10_000;

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
    /// The freezer from `proc/mounts`: a v1 `freezer` mount wins; else the
    /// cgroup2 mount (whether `cgroup.freeze` exists is only known once a
    /// child cgroup is made, see [`FreezerRun::create`]). `None` when
    /// neither is mounted.
    pub fn find(root: &FsRoot) -> Result<Option<Self>, LinuxError> {
        let mounts = root.read("proc/mounts", "mount table")?;
        Ok(Self::from_mounts(&mounts))
    }

    fn from_mounts(mounts: &str) -> Option<Self> {
        let entries = crate::cgroup::mount_entries(mounts);
        let v1 = entries
            .iter()
            .find(|(_, fs, opts)| *fs == "cgroup" && opts.split(',').any(|o| o == "freezer"))
            .map(|(dir, _, _)| FreezerMount {
                version: FreezerVersion::V1,
                mount: dir.trim_start_matches('/').to_string(),
            });
        v1.or_else(|| {
            entries
                .iter()
                .find(|(_, fs, _)| *fs == "cgroup2")
                .map(|(dir, _, _)| FreezerMount {
                    version: FreezerVersion::V2,
                    mount: dir.trim_start_matches('/').to_string(),
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

/// One group's cgroup.
#[derive(Debug)]
struct GroupDir {
    dir: String,
    /// The state file's original value is journalled.
    journalled: bool,
    frozen: bool,
}

/// The freezer cgroups of one run.
#[derive(Debug)]
pub struct FreezerRun {
    mount: FreezerMount,
    /// The cgroup tasks come from (ecosched's own); leftovers go back here.
    home: String,
    /// The run's directory: grouped tasks taken out of their group wait
    /// here, never frozen.
    base: String,
    groups: BTreeMap<String, GroupDir>,
}

impl FreezerRun {
    /// Use `base` as the run's directory. `created` says whether it must be
    /// made (v1 and a hybrid machine's v2 tree) or exists already (the
    /// run's v2 cpuset cgroup, where the groups must live to keep its
    /// CPUs). Fails with `Absent` when the kernel has no `cgroup.freeze`.
    pub fn create(
        journal: &mut Journal,
        mount: FreezerMount,
        base_name: &str,
        existing_base: Option<String>,
    ) -> Result<Self, LinuxError> {
        let root = journal.root().clone();
        let home = mount.cgroup_of(&root, "self")?;
        let base = match existing_base {
            Some(b) => b,
            None => {
                let base = format!("{home}/{base_name}");
                if root.exists(&base) {
                    return Err(LinuxError::Parse {
                        path: root.path(&base),
                        content: String::new(),
                        reason: "a freezer cgroup of an earlier run with this PID is still there; run `ecosched restore`".into(),
                    });
                }
                journal.record(Change::CgroupCreated {
                    dir: base.clone(),
                    parent: home.clone(),
                    members: mount.members().to_string(),
                })?;
                root.create_dir(&base, NEEDS)?;
                base
            }
        };
        let run = FreezerRun {
            mount,
            home,
            base,
            groups: BTreeMap::new(),
        };
        // The base is never a tree's root (which has no cgroup.freeze), so
        // the file shows whether the kernel has the v2 freezer (5.2+).
        let probe = format!("{}/cgroup.freeze", run.base);
        if run.mount.version == FreezerVersion::V2 && !root.exists(&probe) {
            return Err(LinuxError::Absent {
                path: root.path(&probe),
                what: "the cgroup v2 freezer (Linux 5.2 or later)".into(),
            });
        }
        Ok(run)
    }

    /// The interface in use.
    pub fn mount(&self) -> &FreezerMount {
        &self.mount
    }

    /// The run's directory, relative to the root.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Group `name`'s directory, made (journalled) the first time.
    fn group_dir(&mut self, journal: &mut Journal, name: &str) -> Result<String, LinuxError> {
        if let Some(g) = self.groups.get(name) {
            return Ok(g.dir.clone());
        }
        let dir = format!("{}/{name}", self.base);
        let root = journal.root().clone();
        journal.record(Change::CgroupCreated {
            dir: dir.clone(),
            parent: self.home.clone(),
            members: self.mount.members().to_string(),
        })?;
        if !root.exists(&dir) {
            root.create_dir(&dir, NEEDS)?;
        }
        self.groups.insert(
            name.to_string(),
            GroupDir {
                dir: dir.clone(),
                journalled: false,
                frozen: false,
            },
        );
        Ok(dir)
    }

    /// Move `task` into `dir` (a group, or the base), journalling where it
    /// came from the first time.
    fn put(&self, journal: &mut Journal, task: TaskId, dir: &str) -> Result<(), LinuxError> {
        let root = journal.root().clone();
        if !same_task(&root, task.pid, task.start_ticks) {
            return Err(LinuxError::Gone { pid: task.pid });
        }
        let from = self.mount.cgroup_of(&root, &task.pid.to_string())?;
        if from == dir {
            return Ok(());
        }
        journal.record(Change::GangMoved {
            tid: task.pid,
            start_ticks: task.start_ticks,
            back_to: format!("{from}/{}", self.mount.members()),
        })?;
        match root.write(
            &format!("{dir}/{}", self.mount.members()),
            &task.pid.to_string(),
            NEEDS,
        ) {
            Err(LinuxError::Io { source, .. }) if source.raw_os_error() == Some(3) => {
                Err(LinuxError::Gone { pid: task.pid })
            }
            other => other,
        }
    }

    /// Freeze or thaw group `name`; nothing is written when it is already so.
    fn set_frozen(
        &mut self,
        journal: &mut Journal,
        name: &str,
        frozen: bool,
    ) -> Result<(), LinuxError> {
        let (file, value) = (self.mount.state_file(), self.mount.state_value(frozen));
        let Some(g) = self.groups.get_mut(name) else {
            return Ok(());
        };
        if g.frozen == frozen && g.journalled {
            return Ok(());
        }
        let rel = format!("{}/{file}", g.dir);
        if g.journalled {
            journal.root().write(&rel, value, NEEDS)?;
        } else {
            // A new cgroup reads thawed: that is what undo writes back.
            journal.write_file(&rel, value, NEEDS)?;
            g.journalled = true;
        }
        g.frozen = frozen;
        Ok(())
    }
}

/// How groups are held still.
#[derive(Debug)]
enum Mechanism {
    /// Not decided yet (nothing has been frozen).
    Unset,
    Freezer(FreezerRun),
    Signals {
        /// Processes currently stopped.
        stopped: BTreeSet<ProcessId>,
    },
}

/// The gang schedule in force and the means to carry it out.
#[derive(Debug)]
pub struct GangRunner {
    schedule: GangSchedule,
    started: Instant,
    /// The slot in force, once one is.
    slot: Option<usize>,
    /// Each grouped task's group index.
    group_of: BTreeMap<TaskId, usize>,
    mechanism: Mechanism,
    /// A mechanism to use instead of the one found.
    forced: Option<ForcedMechanism>,
    /// How late each slot switch was, microseconds (for the precision the
    /// platform reports).
    lateness: SwitchStats,
}

/// How late slot switches were.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SwitchStats {
    /// Slot switches made.
    pub switches: u64,
    /// Mean delay after the planned boundary, µs.
    pub mean_late_us: f64,
    /// Largest delay, µs.
    pub max_late_us: u64,
}

impl SwitchStats {
    fn add(&mut self, late_us: u64) {
        self.switches += 1;
        self.mean_late_us += (late_us as f64 - self.mean_late_us) / self.switches as f64;
        self.max_late_us = self.max_late_us.max(late_us);
    }
}

impl Default for GangRunner {
    fn default() -> Self {
        GangRunner {
            schedule: GangSchedule::end(),
            started: Instant::now(),
            slot: None,
            group_of: BTreeMap::new(),
            mechanism: Mechanism::Unset,
            forced: None,
            lateness: SwitchStats::default(),
        }
    }
}

/// What the platform gives the runner to work with.
pub struct GangContext<'a> {
    /// The journal every change goes through.
    pub journal: &'a mut Journal,
    /// The process each managed task belongs to (for signals).
    pub process_of: Box<dyn Fn(TaskId) -> Option<ProcessId> + 'a>,
    /// The run's cgroup directory name (`<name>-<pid>`).
    pub base_name: String,
    /// The run's v2 cpuset cgroup, when the cpuset lives on cgroup v2:
    /// groups must be made inside it to keep its CPUs.
    pub v2_cpuset_dir: Option<String>,
}

/// A mechanism chosen by the caller instead of found (tests exercise each
/// one on a machine that has a better one).
#[doc(hidden)]
#[derive(Debug, Clone)]
pub enum ForcedMechanism {
    /// This freezer mount.
    Freezer(FreezerMount),
    /// Stop signals.
    Signals,
}

impl GangRunner {
    /// A runner that will use `forced` rather than the best mechanism found.
    #[doc(hidden)]
    pub fn forcing(forced: ForcedMechanism) -> Self {
        GangRunner {
            forced: Some(forced),
            ..GangRunner::default()
        }
    }

    /// Whether a schedule is in force.
    pub fn active(&self) -> bool {
        !self.schedule.is_end()
    }

    /// The mechanism in words, for notices.
    pub fn describe(&self) -> String {
        match &self.mechanism {
            Mechanism::Unset => "not used yet".into(),
            Mechanism::Freezer(f) => format!(
                "cgroup freezer ({}) under {}",
                match f.mount.version {
                    FreezerVersion::V1 => "v1 freezer.state",
                    FreezerVersion::V2 => "v2 cgroup.freeze",
                },
                f.base
            ),
            Mechanism::Signals { .. } => "SIGSTOP/SIGCONT (no cgroup freezer)".into(),
        }
    }

    /// How late slot switches have been so far.
    pub fn switch_stats(&self) -> SwitchStats {
        self.lateness
    }

    /// Grouped tasks known to the runner (for the bounded-state check).
    pub fn tracked(&self) -> usize {
        self.group_of.len()
    }

    /// When the next slot boundary is, if a schedule is in force.
    pub fn due(&self) -> Option<Instant> {
        if !self.active() {
            return None;
        }
        let elapsed = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let (_, left) = self.schedule.slot_at(elapsed)?;
        Some(Instant::now() + Duration::from_micros(left))
    }

    /// Replace the schedule (already validated, its tasks managed): move
    /// each task to its group, thaw what leaves, and start slot 0 now.
    /// Returns the tasks that had exited.
    pub fn replace(
        &mut self,
        ctx: &mut GangContext<'_>,
        schedule: GangSchedule,
    ) -> Result<Vec<TaskId>, LinuxError> {
        let mut vanished = Vec::new();
        let new_group_of: BTreeMap<TaskId, usize> = schedule
            .groups
            .iter()
            .enumerate()
            .flat_map(|(i, g)| g.tasks.iter().map(move |t| (*t, i)))
            .collect();
        if !schedule.is_end() && matches!(self.mechanism, Mechanism::Unset) {
            self.mechanism = Self::choose(ctx, self.forced.clone())?;
        }
        // Thaw everything first: tasks are about to change groups, and a
        // task in no group must never stay frozen.
        self.thaw_all(ctx)?;
        match &mut self.mechanism {
            Mechanism::Freezer(run) => {
                for g in &schedule.groups {
                    let dir = run.group_dir(ctx.journal, &g.name)?;
                    for &t in &g.tasks {
                        match run.put(ctx.journal, t, &dir) {
                            Ok(()) => {}
                            Err(LinuxError::Gone { .. }) => vanished.push(t),
                            Err(e) => return Err(e),
                        }
                    }
                }
                let base = run.base.clone();
                for &t in self.group_of.keys() {
                    if new_group_of.contains_key(&t) {
                        continue;
                    }
                    match run.put(ctx.journal, t, &base) {
                        Ok(()) | Err(LinuxError::Gone { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Mechanism::Signals { .. } | Mechanism::Unset => {}
        }
        self.group_of = new_group_of;
        self.schedule = schedule;
        self.started = Instant::now();
        self.slot = None;
        if self.active() {
            self.switch(ctx)?;
        }
        Ok(vanished)
    }

    fn choose(
        ctx: &mut GangContext<'_>,
        forced: Option<ForcedMechanism>,
    ) -> Result<Mechanism, LinuxError> {
        let root = ctx.journal.root().clone();
        let found = match forced {
            Some(ForcedMechanism::Freezer(m)) => Some(m),
            Some(ForcedMechanism::Signals) => None,
            None => FreezerMount::find(&root)?,
        };
        let Some(mount) = found else {
            return Ok(Mechanism::Signals {
                stopped: BTreeSet::new(),
            });
        };
        let existing = match mount.version {
            FreezerVersion::V2 => ctx.v2_cpuset_dir.clone(),
            FreezerVersion::V1 => None,
        };
        match FreezerRun::create(ctx.journal, mount, &ctx.base_name, existing) {
            Ok(run) => Ok(Mechanism::Freezer(run)),
            // No freezer in this kernel: signals still work.
            Err(e) if e.is_absent() => Ok(Mechanism::Signals {
                stopped: BTreeSet::new(),
            }),
            Err(e) => Err(e),
        }
    }

    /// Switch to the slot in force now if it is not the current one.
    /// Groups that must stop are frozen before the ones that may run are
    /// thawed. The kernel completes a freeze when each task reaches its
    /// freezing point, so on a saturated machine the stopping gang may
    /// still run for up to a timeslice into the next slot; waiting for it
    /// here would make every slot that late instead.
    pub fn tick(&mut self, ctx: &mut GangContext<'_>) -> Result<(), LinuxError> {
        if !self.active() {
            return Ok(());
        }
        self.switch(ctx)
    }

    fn switch(&mut self, ctx: &mut GangContext<'_>) -> Result<(), LinuxError> {
        let elapsed = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let Some((slot, left)) = self.schedule.slot_at(elapsed) else {
            return Ok(());
        };
        if self.slot == Some(slot) {
            return Ok(());
        }
        if self.slot.is_some() {
            let duration = self.schedule.slots.get(slot).map_or(0, |s| s.duration_us);
            self.lateness.add(duration.saturating_sub(left));
        }
        self.slot = Some(slot);
        let groups = self.schedule.groups.len();
        let order: Vec<usize> = (0..groups)
            .filter(|&g| !self.schedule.runs(slot, g))
            .chain((0..groups).filter(|&g| self.schedule.runs(slot, g)))
            .collect();
        for g in order {
            let frozen = !self.schedule.runs(slot, g);
            self.set_group(ctx, g, frozen)?;
        }
        Ok(())
    }

    fn set_group(
        &mut self,
        ctx: &mut GangContext<'_>,
        g: usize,
        frozen: bool,
    ) -> Result<(), LinuxError> {
        let Some(group) = self.schedule.groups.get(g) else {
            return Ok(());
        };
        match &mut self.mechanism {
            Mechanism::Unset => Ok(()),
            Mechanism::Freezer(run) => run.set_frozen(ctx.journal, &group.name, frozen),
            Mechanism::Signals { stopped } => {
                let processes: BTreeSet<ProcessId> = group
                    .tasks
                    .iter()
                    .filter_map(|t| (ctx.process_of)(*t))
                    .collect();
                for p in processes {
                    signal_process(ctx.journal, stopped, p, frozen)?;
                }
                Ok(())
            }
        }
    }

    /// Thaw every group (a schedule ends, or is replaced).
    fn thaw_all(&mut self, ctx: &mut GangContext<'_>) -> Result<(), LinuxError> {
        match &mut self.mechanism {
            Mechanism::Unset => Ok(()),
            Mechanism::Freezer(run) => {
                let names: Vec<String> = run.groups.keys().cloned().collect();
                for name in names {
                    run.set_frozen(ctx.journal, &name, false)?;
                }
                Ok(())
            }
            Mechanism::Signals { stopped } => {
                for p in std::mem::take(stopped) {
                    match gang::resume(p.tgid) {
                        Ok(()) | Err(LinuxError::Gone { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            }
        }
    }

    /// A task just discovered: if it was born in a group's cgroup (forked
    /// by a grouped task) but no group names it, move it to the run's
    /// directory so it is not frozen with a gang it is not part of. On v2
    /// only a new process moves: a new thread cannot leave its process's
    /// cgroup (writing it to `cgroup.procs` would take the whole process).
    pub fn adopt(
        &mut self,
        journal: &mut Journal,
        task: TaskId,
        process: Option<ProcessId>,
    ) -> Result<(), LinuxError> {
        if self.group_of.contains_key(&task) {
            return Ok(());
        }
        let Mechanism::Freezer(run) = &self.mechanism else {
            return Ok(());
        };
        if run.mount.version == FreezerVersion::V2 && process.is_none_or(|p| p.tgid != task.pid) {
            return Ok(());
        }
        let root = journal.root().clone();
        let now = run.mount.cgroup_of(&root, &task.pid.to_string())?;
        if now.starts_with(&format!("{}/", run.base)) {
            run.put(journal, task, &run.base)?;
        }
        Ok(())
    }

    /// Forget tasks that have exited.
    pub fn forget(&mut self, gone: &BTreeSet<TaskId>) {
        self.group_of.retain(|t, _| !gone.contains(t));
    }
}

/// Stop or continue process `p`, journalling a stop first.
fn signal_process(
    journal: &mut Journal,
    stopped: &mut BTreeSet<ProcessId>,
    p: ProcessId,
    stop: bool,
) -> Result<(), LinuxError> {
    if stop == stopped.contains(&p) {
        return Ok(());
    }
    if !same_task(journal.root(), p.tgid, p.start_ticks) {
        stopped.remove(&p);
        return Ok(());
    }
    let result = if stop {
        journal.record(Change::Stopped {
            pid: p.tgid,
            start_ticks: p.start_ticks,
        })?;
        stopped.insert(p);
        gang::stop(p.tgid)
    } else {
        stopped.remove(&p);
        gang::resume(p.tgid)
    };
    match result {
        Ok(()) | Err(LinuxError::Gone { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Check a schedule before anything is touched: its own consistency, slots
/// the platform can honour, and only tasks this run manages.
pub fn check_schedule(
    schedule: &GangSchedule,
    managed: &dyn Fn(&TaskId) -> bool,
) -> Result<(), String> {
    schedule.validate()?;
    if let Some((i, s)) = schedule
        .slots
        .iter()
        .enumerate()
        .find(|(_, s)| s.duration_us < MIN_SLOT_US)
    {
        return Err(format!(
            "gang slot {i} lasts {} µs; this platform switches groups from user space and needs at least {MIN_SLOT_US} µs",
            s.duration_us
        ));
    }
    let unknown: Vec<String> = schedule
        .groups
        .iter()
        .flat_map(|g| &g.tasks)
        .filter(|t| !managed(t))
        .map(|t| t.to_string())
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "gang schedule names tasks {} that this run does not manage",
            unknown.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ecosched_model::{GangGroup, GangSlot};

    #[test]
    fn a_v1_freezer_wins_and_v2_is_the_fallback() {
        // /proc/mounts of the Debian VM this project is developed on.
        let hybrid = "cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n\
                      cgroup /sys/fs/cgroup/freezer cgroup rw,relatime,freezer 0 0\n\
                      cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        let m = FreezerMount::from_mounts(hybrid).unwrap();
        assert_eq!(m.version, FreezerVersion::V1);
        assert_eq!(m.mount, "sys/fs/cgroup/freezer");
        assert_eq!(
            (m.state_file(), m.state_value(true)),
            ("freezer.state", "FROZEN")
        );
        let v2 = FreezerMount::from_mounts("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n").unwrap();
        assert_eq!(v2.version, FreezerVersion::V2);
        assert_eq!((v2.members(), v2.state_value(false)), ("cgroup.procs", "0"));
        assert!(FreezerMount::from_mounts("proc /proc proc rw 0 0\n").is_none());
    }

    fn task(pid: u32) -> TaskId {
        TaskId {
            pid,
            start_ticks: 7,
        }
    }

    #[test]
    fn schedules_are_checked_before_anything_is_touched() {
        let mut s = GangSchedule {
            groups: vec![GangGroup {
                name: "a".into(),
                tasks: vec![task(1)],
            }],
            slots: vec![GangSlot {
                duration_us: 20_000,
                run: vec![0],
            }],
        };
        assert_eq!(check_schedule(&s, &|_| true), Ok(()));
        let err = check_schedule(&s, &|_| false).unwrap_err();
        assert!(
            err.contains("does not manage") && err.contains('1'),
            "{err}"
        );
        s.slots[0].duration_us = 5_000;
        assert!(check_schedule(&s, &|_| true)
            .unwrap_err()
            .contains("at least"));
        s.groups[0].name = "a/b".into();
        assert!(check_schedule(&s, &|_| true).is_err());
    }

    #[test]
    fn a_v1_run_journals_each_step_and_freezes_only_on_change() {
        // A writable stand-in for the freezer hierarchy: the kernel's own
        // files are written by hand where a real mkdir would make them.
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let me = std::process::id();
        let live_ticks = crate::identity::start_ticks(&FsRoot::live(), me).unwrap();
        write(
            "proc/mounts",
            "cgroup /sys/fs/cgroup/freezer cgroup rw,freezer 0 0\n",
        );
        write("proc/self/cgroup", "6:freezer:/\n");
        write("sys/fs/cgroup/freezer/tasks", "1\n");
        write(&format!("proc/{me}/cgroup"), "6:freezer:/\n");
        let stat = std::fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
        write(&format!("proc/{me}/stat"), &stat);
        let root = FsRoot::writable_fixture(dir.path());
        let state = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(state.path(), root.clone()).unwrap();
        let mount = FreezerMount::find(&root).unwrap().unwrap();
        let mut run = FreezerRun::create(&mut journal, mount, "ecosched-1", None).unwrap();
        assert_eq!(run.base(), "sys/fs/cgroup/freezer/ecosched-1");
        let g = run.group_dir(&mut journal, "a").unwrap();
        write(&format!("{g}/freezer.state"), "THAWED\n");
        run.put(
            &mut journal,
            TaskId {
                pid: me,
                start_ticks: live_ticks,
            },
            &g,
        )
        .unwrap();
        run.set_frozen(&mut journal, "a", true).unwrap();
        run.set_frozen(&mut journal, "a", true).unwrap();
        run.set_frozen(&mut journal, "a", false).unwrap();
        let read = |rel: &str| std::fs::read_to_string(dir.path().join(rel)).unwrap();
        assert_eq!(read(&format!("{g}/freezer.state")), "THAWED");
        assert_eq!(read(&format!("{g}/tasks")), me.to_string());
        let log = std::fs::read_to_string(journal.path()).unwrap();
        let kinds: Vec<&str> = log
            .lines()
            .skip(1)
            .map(|l| l.split('"').nth(3).unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["cgroup_created", "cgroup_created", "gang_moved", "file"],
            "{log}"
        );
        assert!(log.contains("\"before\":\"THAWED\""), "{log}");
    }
}
