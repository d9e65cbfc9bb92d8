//! The summary of `ecosched run`: the engine's [`RunReport`] plus what only
//! a real run knows — where its CPU time was counted, and how much of the
//! machine-wide energy is this run's.
//!
//! Why energy is split by CPU time: a package or wall meter (or the
//! estimate from `/proc/stat`) sees the whole machine, so two concurrent
//! runs would each report the same joules. The run's share is its CPU time
//! (from its own cgroup) over the machine's busy CPU time during the run;
//! the machine-wide figure stays beside it, labelled as such.

use ecosched_engine::report::RunReport;
use ecosched_linux::platform::RunEnd;
use serde::Serialize;

/// `ecosched run`'s summary (`--json` prints it as one object: the
/// report's fields, then these).
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// The engine's report; `cpu_s` is the cgroup's figure when there is one.
    #[serde(flatten)]
    pub report: RunReport,
    /// Where `cpu_s` comes from, in words.
    pub cpu_source: String,
    /// User CPU seconds (cgroup), when the kernel splits them.
    pub cpu_user_s: Option<f64>,
    /// System CPU seconds (cgroup), when the kernel splits them.
    pub cpu_system_s: Option<f64>,
    /// What `energy_j` covers: always the whole machine.
    pub energy_scope: &'static str,
    /// This run's CPU time over the machine's busy CPU time during it (≤ 1).
    pub cpu_share_of_machine: Option<f64>,
    /// `energy_j` × `cpu_share_of_machine`: the energy attributed to this run.
    pub energy_attributed_j: Option<f64>,
    /// The power model the ESTIMATED figures come from (`--power-model`);
    /// `None` when power was measured.
    pub power_model: Option<String>,
}

impl RunSummary {
    /// Combine the report with what the run's end measured.
    pub fn new(mut report: RunReport, end: &RunEnd) -> Self {
        let secs = |ns: u64| ns as f64 / 1e9;
        if let Some(c) = &end.cgroup_cpu {
            report.cpu_s = Some(secs(c.usage_ns));
        }
        let share = share_of_machine(report.cpu_s, end.machine_busy_s);
        RunSummary {
            cpu_source: end.cpu_source.clone(),
            cpu_user_s: end.cgroup_cpu.and_then(|c| c.user_ns).map(secs),
            cpu_system_s: end.cgroup_cpu.and_then(|c| c.system_ns).map(secs),
            energy_scope: "machine-wide",
            cpu_share_of_machine: share,
            energy_attributed_j: report.energy_j.zip(share).map(|(j, s)| j * s),
            power_model: None,
            report,
        }
    }
}

/// The run's CPU seconds over the machine's busy CPU seconds, at most 1
/// (`/proc/stat` counts whole ticks, the cgroup nanoseconds); `None` when
/// either is unknown or the machine was not seen busy.
fn share_of_machine(run_cpu_s: Option<f64>, machine_busy_s: Option<f64>) -> Option<f64> {
    let (run, busy) = (run_cpu_s?, machine_busy_s?);
    (busy > 0.0).then(|| (run / busy).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_bounded_and_absent_when_unknown() {
        assert_eq!(share_of_machine(Some(1.0), Some(4.0)), Some(0.25));
        assert_eq!(share_of_machine(Some(4.02), Some(4.0)), Some(1.0));
        assert_eq!(share_of_machine(Some(1.0), Some(0.0)), None);
        assert_eq!(share_of_machine(None, Some(4.0)), None);
        assert_eq!(share_of_machine(Some(1.0), None), None);
    }
}
