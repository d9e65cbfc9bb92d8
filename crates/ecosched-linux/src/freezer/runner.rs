//! The gang schedule in force, carried out slot by slot: which groups
//! run now, when the next boundary is, and the mechanism that holds the
//! others still (a freezer or stop signals).

use crate::error::LinuxError;
use crate::freezer::groups::FreezerRun;
use crate::freezer::mount::{FreezerMount, FreezerVersion};
use crate::gang;
use crate::identity::same_task;
use crate::journal::{Change, Journal};
use crate::mounts::MountTable;
use ecosched_model::{GangSchedule, ProcessId, TaskId};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// The shortest slot the platform accepts: a user-space timer switching
/// groups through cgroup files cannot honour less with any precision.
pub const MIN_SLOT_US: u64 = 10_000;

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
    /// The mount table, where the freezer is found.
    pub mounts: &'a MountTable,
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
                match f.mount().version {
                    FreezerVersion::V1 => "v1 freezer.state",
                    FreezerVersion::V2 => "v2 cgroup.freeze",
                },
                f.base()
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
                let base = run.base().to_string();
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
        let found = match forced {
            Some(ForcedMechanism::Freezer(m)) => Some(m),
            Some(ForcedMechanism::Signals) => None,
            None => FreezerMount::find(ctx.mounts),
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
                let names = run.group_names();
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
        if run.mount().version == FreezerVersion::V2 && process.is_none_or(|p| p.tgid != task.pid) {
            return Ok(());
        }
        let root = journal.root().clone();
        let now = run.mount().cgroup_of(&root, &task.pid.to_string())?;
        if now.starts_with(&format!("{}/", run.base())) {
            run.put(journal, task, run.base())?;
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
}
