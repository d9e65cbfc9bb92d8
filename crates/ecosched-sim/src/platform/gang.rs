//! Timed gang schedules (`Plan::gang_schedule`), carried out exactly: a
//! cycle of slots starts when the plan is applied, each slot boundary is
//! an event, and in each slot only the listed groups may run. A frozen
//! task leaves its run queue as a gang-stopped task does, is not runnable
//! (its snapshot state is `Stopped`) and re-enters at its group's slot.
//! Tasks in no group are never frozen; a task that exits, or restarts as
//! a new `TaskId`, drops out. `GangSchedule::end()` thaws everything.

use super::SimPlatform;
use crate::kernel::Ns;
use ecosched_model::{ApplyReport, GangSchedule, TaskId};
use std::collections::HashMap;

/// The schedule in force.
#[derive(Debug, Clone)]
pub(super) struct GangRun {
    schedule: GangSchedule,
    /// Members of each group: (slot, creation number), so a reused slot is
    /// never mistaken for the member.
    members: Vec<Vec<(usize, u64)>>,
    /// The slot in force.
    slot: usize,
    /// When it ends.
    pub(super) slot_end: Ns,
}

impl SimPlatform {
    /// Put a plan's gang schedule in force (or end the current one).
    pub(super) fn install_gang(
        &mut self,
        schedule: &GangSchedule,
        by_id: &HashMap<TaskId, usize>,
        report: &mut ApplyReport,
    ) {
        self.end_gang();
        if schedule.is_end() {
            return;
        }
        let mut members = vec![Vec::new(); schedule.groups.len()];
        for (g, group) in schedule.groups.iter().enumerate() {
            for id in &group.tasks {
                match by_id.get(id) {
                    Some(&t) => {
                        self.tasks[t].gang_group = Some(g);
                        members[g].push((t, self.sched[t].seq));
                    }
                    None => report.vanished.push(*id),
                }
            }
        }
        let first = schedule.slots[0].duration_us * 1000;
        self.gang = Some(GangRun {
            schedule: schedule.clone(),
            members,
            slot: 0,
            slot_end: self.now + first.max(1),
        });
        self.enforce_gang();
    }

    /// The current slot ended: move to the next one.
    pub(super) fn next_gang_slot(&mut self) {
        let Some(g) = self.gang.as_mut() else {
            return;
        };
        g.slot = (g.slot + 1) % g.schedule.slots.len();
        let len = g.schedule.slots[g.slot].duration_us * 1000;
        g.slot_end += len.max(1);
        self.enforce_gang();
    }

    /// Freeze the members of groups that may not run in the current slot,
    /// then thaw the others (freezing first frees their CPUs).
    fn enforce_gang(&mut self) {
        let Some(g) = self.gang.as_ref() else {
            return;
        };
        let mut freeze = Vec::new();
        let mut thaw = Vec::new();
        for (group, members) in g.members.iter().enumerate() {
            let runs = g.schedule.runs(g.slot, group);
            for &(t, seq) in members {
                if self.sched[t].seq != seq || self.tasks[t].gang_group != Some(group) {
                    continue;
                }
                if runs {
                    thaw.push(t);
                } else {
                    freeze.push(t);
                }
            }
        }
        for t in freeze {
            self.freeze(t);
        }
        for t in thaw {
            self.thaw(t);
        }
    }

    /// End the schedule in force, thawing every member.
    fn end_gang(&mut self) {
        let Some(g) = self.gang.take() else {
            return;
        };
        for (group, members) in g.members.iter().enumerate() {
            for &(t, seq) in members {
                if self.sched[t].seq == seq && self.tasks[t].gang_group == Some(group) {
                    self.tasks[t].gang_group = None;
                    self.thaw(t);
                }
            }
        }
    }

    fn freeze(&mut self, t: usize) {
        if self.tasks[t].frozen {
            return;
        }
        self.tasks[t].frozen = true;
        if self.tasks[t].life == super::Life::Runnable {
            if let Some(c) = self.sched[t].cpu {
                self.switch_out(t, c);
            }
        }
    }

    fn thaw(&mut self, t: usize) {
        if !self.tasks[t].frozen {
            return;
        }
        self.tasks[t].frozen = false;
        if self.tasks[t].life == super::Life::Runnable {
            self.wake(t, false);
        }
    }
}
