//! The seam between the control loop and a world: the simulator or a real
//! Linux machine. A policy never sees a platform, only its snapshots.

use crate::capability::Capabilities;
use crate::cpuset::CpuSet;
use crate::plan::Plan;
use crate::sample::Meter;
use crate::schedule::RunSlice;
use crate::snapshot::Snapshot;
use crate::task::TaskId;
use crate::topology::Topology;
use std::sync::Arc;
use std::time::Duration;

/// Why a platform could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// A plan that cannot be carried out on this machine (a frequency not in
    /// the P-state table, a CPU set outside the online CPUs, …).
    #[error("invalid plan: {0}")]
    InvalidPlan(String),
    /// The platform lacks a feature; says which.
    #[error("not supported here: {0}")]
    Unsupported(String),
    /// Permission denied; names the capability needed and the path.
    #[error("permission denied for {path}: needs {capability}")]
    Permission {
        /// What was being touched.
        path: String,
        /// What is needed (e.g. `CAP_SYS_NICE`, `root`).
        capability: String,
    },
    /// Any other I/O failure, with the path.
    #[error("{path}: {source}")]
    Io {
        /// What was being touched.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

/// What an `apply` did not do because the world had moved on — normal
/// events, not errors.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApplyReport {
    /// Tasks named in the plan that had exited by the time it was applied.
    pub vanished: Vec<TaskId>,
}

/// A world the control loop can observe and steer.
pub trait Platform {
    /// `sim` or `linux`.
    fn kind(&self) -> &'static str;
    /// The machine's name.
    fn machine_name(&self) -> String;
    /// The machine.
    fn topology(&self) -> Arc<Topology>;
    /// What the platform measures and actuates.
    fn capabilities(&self) -> Capabilities;
    /// Open the counters a policy needs (`requirements.counters`) and would
    /// use (`requirements.wanted`). The control loop calls it once, before
    /// it checks capabilities: a PMU counts few events at once, so a
    /// platform opens what the policy reads rather than everything, and
    /// multiplexes only when it must. By default nothing needs opening.
    fn open_counters(&mut self, requirements: &crate::capability::Requirements) {
        let _ = requirements;
    }
    /// The energy meter reports should use.
    fn meter(&self) -> Meter;
    /// Carry out a plan.
    fn apply(&mut self, plan: &Plan) -> Result<ApplyReport, PlatformError>;
    /// Let `interval` pass (the simulator simulates it; Linux sleeps). May
    /// return early when the workload has finished.
    fn advance(&mut self, interval: Duration) -> Result<(), PlatformError>;
    /// Deltas since the previous observation.
    fn observe(&mut self) -> Result<Snapshot, PlatformError>;
    /// Whether every managed task has finished (or the scenario's time is up).
    fn finished(&self) -> bool;
    /// Start recording every stretch a managed task runs on a CPU, for a
    /// trace that shows the exact schedule; returns how it is recorded (a
    /// phrase the trace carries), or `None` where the platform cannot. The
    /// control loop calls it before the first step, only when a sink wants
    /// the schedule: recording costs nothing unless asked for. By default
    /// there is none.
    fn record_schedule(&mut self) -> Option<String> {
        None
    }
    /// Move the stretches recorded since the last call into `out` (a
    /// stretch still going on is cut at the present and goes on in the
    /// next call); returns how many were dropped over the cap
    /// ([`crate::schedule::MAX_SLICES_PER_S`]) or lost.
    fn take_schedule(&mut self, out: &mut Vec<RunSlice>) -> u64 {
        let _ = out;
        0
    }
}

/// Check a plan against a topology: every CPU set non-empty and within
/// `allowed`, every frequency domain index real and every fixed frequency a
/// P-state. Shared by every platform so they reject the same plans.
pub fn check_plan(plan: &Plan, topology: &Topology, allowed: &CpuSet) -> Result<(), PlatformError> {
    let check_set = |what: String, set: &CpuSet| {
        if set.is_empty() {
            return Err(PlatformError::InvalidPlan(format!("{what}: empty CPU set")));
        }
        if !set.is_subset(allowed) {
            return Err(PlatformError::InvalidPlan(format!(
                "{what}: CPUs {set} are not all within the usable CPUs {allowed}"
            )));
        }
        Ok(())
    };
    if let Some(set) = &plan.managed_cpus {
        check_set("managed cpuset".into(), set)?;
    }
    for (task, set) in &plan.task_cpus {
        check_set(format!("task {task}"), set)?;
    }
    if let Some(schedule) = &plan.gang_schedule {
        schedule.validate().map_err(PlatformError::InvalidPlan)?;
    }
    for (&domain, setting) in &plan.frequency {
        let Some(dom) = topology.freq_domain(domain) else {
            return Err(PlatformError::InvalidPlan(format!(
                "frequency domain {domain} does not exist (the machine has {})",
                topology.freq_domains.len()
            )));
        };
        if let crate::plan::FreqSetting::Fixed { freq_khz } = setting {
            if dom.pstate(*freq_khz).is_none() {
                let valid: Vec<String> = dom
                    .pstates
                    .iter()
                    .map(|p| format!("{}", p.freq_khz / 1000))
                    .collect();
                return Err(PlatformError::InvalidPlan(format!(
                    "{} MHz is not a P-state of frequency domain {domain}; valid: {} MHz",
                    *freq_khz as f64 / 1000.0,
                    valid.join(", ")
                )));
            }
        }
        if let crate::plan::FreqSetting::Hwp {
            min_khz, max_khz, ..
        } = setting
        {
            let (lo, hi) = (dom.min_khz(), dom.max_khz());
            let min = min_khz.unwrap_or(lo);
            let max = max_khz.unwrap_or(hi);
            if min > max || min < lo || max > hi {
                return Err(PlatformError::InvalidPlan(format!(
                    "HWP range {min}..={max} kHz of frequency domain {domain} must lie within \
                     its {lo}..={hi} kHz with min ≤ max"
                )));
            }
        }
    }
    Ok(())
}
