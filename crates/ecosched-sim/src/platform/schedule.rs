//! The exact schedule for a trace (`Platform::record_schedule`): the
//! kernel model lists every CPU whose running task changed
//! (`Kernel::take_switched`, read by warmup.rs's `note_switches` at the
//! instant of the switch), so each stretch of a managed task on a CPU is
//! known to the nanosecond. Recorded only when a trace asks; memory holds
//! one open stretch per CPU and the step's finished ones, at most
//! `MAX_SLICES_PER_S` a second.

use super::SimPlatform;
use crate::kernel::Ns;
use ecosched_model::schedule::{RunSlice, SliceBudget};

/// A managed task on a CPU since `start`.
#[derive(Debug, Clone)]
struct OnCpu {
    pid: u32,
    name: String,
    start: Ns,
}

/// What is recorded between two observations.
#[derive(Debug, Clone)]
pub(super) struct ScheduleLog {
    /// Per CPU, the managed task running there.
    open: Vec<Option<OnCpu>>,
    done: Vec<RunSlice>,
    budget: SliceBudget,
}

/// Nanoseconds to seconds.
fn secs(ns: Ns) -> f64 {
    ns as f64 / 1e9
}

impl ScheduleLog {
    fn close(&mut self, c: usize, at: Ns) {
        if let Some(o) = self.open[c].take() {
            self.emit(c, o, at);
        }
    }

    fn emit(&mut self, c: usize, o: OnCpu, end: Ns) {
        if end > o.start && self.budget.admit(secs(o.start)) {
            self.done.push(RunSlice {
                cpu: c as u32,
                pid: o.pid,
                tid: o.pid,
                name: o.name,
                start_s: secs(o.start),
                end_s: secs(end),
            });
        }
    }
}

impl SimPlatform {
    /// Start recording (see the module's doc): what runs now opens the
    /// first stretches.
    pub(super) fn start_schedule(&mut self) {
        let open = (0..self.kernel.rqs.len())
            .map(|c| self.on_cpu(self.kernel.rqs[c].current))
            .collect();
        self.schedule = Some(ScheduleLog {
            open,
            done: Vec::new(),
            budget: SliceBudget::default(),
        });
    }

    /// Task slot `t` (if a managed task) as a stretch starting now.
    fn on_cpu(&self, t: Option<usize>) -> Option<OnCpu> {
        let task = &self.tasks[t?];
        task.managed.then(|| OnCpu {
            pid: task.id.pid,
            name: task.name.clone(),
            start: self.now,
        })
    }

    /// CPU `c` switched to `now_on` at this instant.
    pub(super) fn note_schedule(&mut self, c: usize, now_on: Option<usize>) {
        if self.schedule.is_none() {
            return;
        }
        let next = self.on_cpu(now_on);
        let now = self.now;
        if let Some(log) = &mut self.schedule {
            log.close(c, now);
            log.open[c] = next;
        }
    }

    /// The stretches so far into `out`, those still going on cut now;
    /// returns how many were dropped over the cap.
    pub(super) fn drain_schedule(&mut self, out: &mut Vec<RunSlice>) -> u64 {
        let now = self.now;
        let Some(log) = &mut self.schedule else {
            return 0;
        };
        for c in 0..log.open.len() {
            if let Some(o) = &mut log.open[c] {
                let cut = OnCpu {
                    pid: o.pid,
                    name: o.name.clone(),
                    start: o.start,
                };
                o.start = now;
                log.emit(c, cut, now);
            }
        }
        out.append(&mut log.done);
        log.budget.take_dropped()
    }
}
