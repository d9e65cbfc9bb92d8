//! The shapes `ecosched sim --json` and `ecosched compare --json` print.
//! Other tools parse these: field names are a contract (issue #2,
//! "Command-line contract"); add fields, never rename them.

use ecosched_model::{Comparison, Meter, RunMetrics, TaskMetrics, Trace};
use serde::Serialize;
use std::collections::BTreeMap;

/// One run (`ecosched sim --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimReport {
    /// Scenario name.
    pub scenario: String,
    /// Policy name.
    pub policy: String,
    /// Machine name.
    pub machine: String,
    /// Seed.
    pub seed: u64,
    /// Simulated seconds.
    pub simulated_s: f64,
    /// Makespan, s.
    pub makespan_s: f64,
    /// Energy, J (from `energy_meter`).
    pub energy_j: Option<f64>,
    /// Average power, W.
    pub avg_power_w: Option<f64>,
    /// Energy × makespan, J·s.
    pub edp_js: Option<f64>,
    /// Managed instructions.
    pub instructions: Option<u64>,
    /// Managed migrations.
    pub migrations: Option<u64>,
    /// Migrations per second.
    pub migrations_per_s: Option<f64>,
    /// Which meter the energy figures come from.
    pub energy_meter: Meter,
    /// Instructions per joule.
    pub instructions_per_s_per_w: Option<f64>,
    /// Mean per-task EDP, J·s (Merkel Table 2's average).
    pub mean_task_edp_js: Option<f64>,
    /// Per task.
    pub tasks: Vec<TaskMetrics>,
    /// What the policy reported about its run (e.g. PAM's search kind);
    /// omitted when it reports nothing.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub policy_notes: BTreeMap<String, String>,
}

impl SimReport {
    /// Build from a trace and its metrics.
    pub fn new(scenario: &str, trace: &Trace, m: &RunMetrics, seed: u64) -> Self {
        SimReport {
            scenario: scenario.to_string(),
            policy: trace.header.policy.clone(),
            machine: trace.header.machine.clone(),
            seed,
            simulated_s: m.duration_s,
            makespan_s: m.makespan_s,
            energy_j: m.energy_j,
            avg_power_w: m.avg_power_w,
            edp_js: m.edp_js,
            instructions: m.instructions,
            migrations: m.migrations,
            migrations_per_s: m.migrations_per_s,
            energy_meter: trace.header.meter,
            instructions_per_s_per_w: m.instructions_per_s_per_w,
            mean_task_edp_js: m.mean_task_edp_js,
            tasks: m.tasks.clone(),
            policy_notes: BTreeMap::new(),
        }
    }
}

/// `ecosched compare --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareReport {
    /// Scenario name.
    pub scenario: String,
    /// Baseline policy.
    pub baseline: String,
    /// One report per policy, in the order given.
    pub results: Vec<SimReport>,
    /// Per policy, ratios to the baseline.
    pub ratios: BTreeMap<String, Comparison>,
    /// Each task's run time alone on the machine under the baseline, s.
    pub alone_s: BTreeMap<String, f64>,
}
