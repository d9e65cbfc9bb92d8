//! The summary of `ecosched run`: the engine's [`RunReport`] plus what only
//! a real run knows — where its CPU time was counted, and how much of the
//! machine-wide energy is this run's.
//!
//! Why energy is split by CPU time: a package or wall meter (or the
//! estimate from `/proc/stat`) sees the whole machine, so two concurrent
//! runs would each report the same joules. The run's share is its CPU time
//! (from its own cgroup) over the machine's busy CPU time during the run;
//! the machine-wide figure stays beside it, labelled as such.
//!
//! Why user and system time are scaled: the total (`cpuacct.usage`, v2
//! `usage_usec`) is the scheduler's exact runtime, while the kernel's
//! split (`cpuacct.usage_user`/`_sys`, v2 `user_usec`/`system_usec`) is
//! sampled at ticks on most kernels and drifts from it by a few per cent.
//! The split gives the proportion, the total the sum, so `cpu_user_s +
//! cpu_system_s` is `cpu_s`.

use ecosched_engine::report::RunReport;
use ecosched_linux::platform::RunEnd;
use ecosched_linux::runcgroup::CgroupCpu;
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
    /// User CPU seconds (cgroup), when the kernel splits them: `cpu_s`
    /// times the kernel's user share, so user + system is `cpu_s`.
    pub cpu_user_s: Option<f64>,
    /// System CPU seconds (cgroup), when the kernel splits them: `cpu_s`
    /// less `cpu_user_s`.
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
    /// Tasks of the run that could not be read (out of descriptors,
    /// permissions), each counted once; the notices name the first ones.
    pub unobserved_tasks: u64,
}

impl RunSummary {
    /// Combine the report with what the run's end measured.
    pub fn new(mut report: RunReport, end: &RunEnd) -> Self {
        let secs = |ns: u64| ns as f64 / 1e9;
        if let Some(c) = &end.cgroup_cpu {
            report.cpu_s = Some(secs(c.usage_ns));
        }
        let share = share_of_machine(report.cpu_s, end.machine_busy_s);
        let (cpu_user_s, cpu_system_s) = end.cgroup_cpu.as_ref().map_or((None, None), split);
        RunSummary {
            cpu_source: end.cpu_source.clone(),
            cpu_user_s,
            cpu_system_s,
            energy_scope: "machine-wide",
            cpu_share_of_machine: share,
            energy_attributed_j: report.energy_j.zip(share).map(|(j, s)| j * s),
            power_model: None,
            unobserved_tasks: 0,
            report,
        }
    }
}

/// User and system seconds that add up to the cgroup's total: the
/// kernel's split gives the proportion (see the module's doc); `None`
/// where the kernel does not split the time.
fn split(c: &CgroupCpu) -> (Option<f64>, Option<f64>) {
    let (Some(user), Some(system)) = (c.user_ns, c.system_ns) else {
        return (None, None);
    };
    let total_s = c.usage_ns as f64 / 1e9;
    let sampled = user.saturating_add(system);
    let user_s = if sampled == 0 {
        0.0
    } else {
        total_s * user as f64 / sampled as f64
    };
    (Some(user_s), Some(total_s - user_s))
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

    #[test]
    fn user_and_system_add_up_to_the_total() {
        // cpuacct of a 2,000-thread run on this project's VM (6.18): the
        // tick-sampled split sums to 14.009 s, the runtime to 14.548 s.
        let c = CgroupCpu {
            usage_ns: 14_548_015_959,
            user_ns: Some(2_548_524_238),
            system_ns: Some(11_460_717_188),
        };
        let (user, system) = split(&c);
        let (user, system) = (user.unwrap_or(f64::NAN), system.unwrap_or(f64::NAN));
        assert!(
            (user + system - 14.548_015_959).abs() < 1e-9,
            "{user} + {system}"
        );
        assert!((user / (user + system) - 2.548_524_238 / 14.009_241_426).abs() < 1e-9);
        let none = CgroupCpu {
            usage_ns: 5,
            user_ns: Some(0),
            system_ns: Some(0),
        };
        assert_eq!(split(&none), (Some(0.0), Some(5e-9)));
        let unsplit = CgroupCpu {
            usage_ns: 5,
            user_ns: None,
            system_ns: Some(1),
        };
        assert_eq!(split(&unsplit), (None, None));
    }
}
