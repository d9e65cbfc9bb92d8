//! Each task's true energy (`docs/researchers/attribution.md`): what the
//! machine spends because the task runs, against which attribution
//! estimates are checked. SIMULATOR TRUTH: no policy or estimator sees it.
//!
//! A running task is charged its core's power above what the core would
//! draw idle in its deepest state at the same voltage and frequency (its
//! SMT share of both), plus the uncore and memory energy of the bytes it
//! moves. Idle and static power (board, idle memory, uncore, idle cores)
//! goes to no task. One accumulator per live task; an exited task's
//! figures fold into one total per task name, so memory is bounded by the
//! names a scenario has, as the metrics' per-name rows are.

use super::SimPlatform;
use std::collections::BTreeMap;

/// True energy at both meters' scopes, J.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TrueEnergy {
    /// What the package meter sees: core and uncore.
    pub package_j: f64,
    /// What the system meter sees: also memory traffic.
    pub system_j: f64,
}

impl TrueEnergy {
    pub(super) fn add(&mut self, other: TrueEnergy) {
        self.package_j += other.package_j;
        self.system_j += other.system_j;
    }
}

impl SimPlatform {
    /// Each managed task name's true energy so far (every instance that
    /// carried the name, finished or running).
    pub fn true_energy(&mut self) -> BTreeMap<String, TrueEnergy> {
        self.integrate_all();
        let mut out = self.true_by_name.clone();
        for &t in &self.order {
            let task = &self.tasks[t];
            if task.managed && !task.name.is_empty() {
                out.entry(task.name.clone()).or_default().add(task.true_j);
            }
        }
        out
    }

    /// Fold an exited task's true energy into its name's total.
    pub(super) fn retire_true_energy(&mut self, t: usize) {
        let task = &mut self.tasks[t];
        let spent = std::mem::take(&mut task.true_j);
        if task.managed {
            self.true_by_name
                .entry(task.name.clone())
                .or_default()
                .add(spent);
        }
    }
}
