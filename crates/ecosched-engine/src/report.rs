//! The shapes `ecosched sim --json` and `ecosched run --json` print (the
//! comparison's, which holds these, is [`crate::compare::CompareReport`]).
//! Other tools parse these: field names are a contract; add fields, never
//! rename them.

use crate::attribution::AttributionNotes;
use ecosched_control::RunOutcome;
use ecosched_model::{
    Counters, Meter, PatelMetrics, PolicyStats, PowerSource, RunMetrics, TaskMetrics, TraceHeader,
};
use ecosched_sim::{MigrationCauses, Observe};
use serde::Serialize;

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
    /// What the policy was shown: `linux` (what a Linux machine could
    /// read) or `full` (simulator truth; never evidence of a gain).
    pub observe: Option<Observe>,
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
    /// SIMULATOR TRUTH, not something a machine measures: the managed
    /// migrations split by what moved the tasks (wake-up placement, load
    /// balancing, idle pulls, affinity or cpuset changes); they add up to
    /// `migrations`. Omitted where no single simulation stands behind the
    /// report (a cluster's totals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub migrations_by_cause: Option<MigrationCauses>,
    /// Which meter the energy figures come from.
    pub energy_meter: Meter,
    /// Instructions per joule.
    pub instructions_per_s_per_w: Option<f64>,
    /// Mean per-task EDP, J·s (Merkel Table 2's average).
    pub mean_task_edp_js: Option<f64>,
    /// Per task.
    pub tasks: Vec<TaskMetrics>,
    /// Managed instances still running when the run ended (a fixed
    /// duration cut them off).
    pub unfinished_tasks: u32,
    /// Patel's ch. 9 figures (thesis §5.2 step 9).
    pub patel: PatelMetrics,
    /// The policy's statistics at the end of the run (its family's typed
    /// statistics); omitted when it keeps none. The JSON key is the one
    /// tools have always read.
    #[serde(rename = "policy_notes", skip_serializing_if = "PolicyStats::is_empty")]
    pub policy_stats: PolicyStats,
    /// How the task rows' `energy_cpu_share_j` and `energy_activity_j`
    /// were attributed (the fitted model, how many intervals each way),
    /// when the run checked attribution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribution: Option<AttributionNotes>,
}

impl SimReport {
    /// Build from a run's header and metrics.
    pub fn new(scenario: &str, header: &TraceHeader, m: &RunMetrics, seed: u64) -> Self {
        SimReport {
            scenario: scenario.to_string(),
            policy: header.policy.clone(),
            machine: header.machine.clone(),
            seed,
            observe: None,
            simulated_s: m.duration_s,
            makespan_s: m.makespan_s,
            energy_j: m.energy_j,
            avg_power_w: m.avg_power_w,
            edp_js: m.edp_js,
            instructions: m.instructions,
            migrations: m.migrations,
            migrations_per_s: m.migrations_per_s,
            migrations_by_cause: None,
            energy_meter: header.meter,
            instructions_per_s_per_w: m.instructions_per_s_per_w,
            mean_task_edp_js: m.mean_task_edp_js,
            tasks: m.tasks.clone(),
            unfinished_tasks: m.unfinished_tasks,
            patel: m.patel.clone(),
            policy_stats: PolicyStats::default(),
            attribution: None,
        }
    }
}

/// Counter totals of one task over a run (only the counters the platform
/// had; absent ones stay `null`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskCounters {
    /// Task name (as in `tasks`).
    pub name: String,
    /// The totals.
    #[serde(flatten)]
    pub counters: Counters,
}

/// A managed run on a real machine (`ecosched run --json`). Fields shared
/// with [`SimReport`] have the same names and meaning.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// The command run.
    pub command: Vec<String>,
    /// Policy name.
    pub policy: String,
    /// Machine name.
    pub machine: String,
    /// Platform kind (`linux`).
    pub platform: String,
    /// The command's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended the command, when one did.
    pub exit_signal: Option<i32>,
    /// Wall-clock seconds under management.
    pub wall_s: f64,
    /// CPU seconds used by the command and its descendants (sum of on-CPU
    /// time), when measured.
    pub cpu_s: Option<f64>,
    /// Makespan, s.
    pub makespan_s: f64,
    /// Energy, J (from `energy_meter`).
    pub energy_j: Option<f64>,
    /// Whether the energy was measured or estimated.
    pub energy_source: Option<PowerSource>,
    /// How power was obtained, in words.
    pub power_description: String,
    /// Whether frequency could be controlled, in words.
    pub frequency_control: String,
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
    /// Per task.
    pub tasks: Vec<TaskMetrics>,
    /// Per task, every counter's total.
    pub task_counters: Vec<TaskCounters>,
    /// What the machine lacked (counters, frequency control, power meter).
    pub notices: Vec<String>,
    /// The policy's statistics at the end of the run (`Policy::stats`):
    /// e.g. the tasks `av` only balances because they block, or that
    /// `patel*` under `confine_only` set no frequency. The JSON key is the
    /// one tools have always read.
    #[serde(rename = "policy_notes")]
    pub policy_stats: PolicyStats,
}

/// The parts of a [`RunReport`] that come from outside the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct RunContext {
    /// The command run.
    pub command: Vec<String>,
    /// Its exit code, if it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if any.
    pub exit_signal: Option<i32>,
    /// How power was obtained.
    pub power_description: String,
    /// Whether frequency could be controlled.
    pub frequency_control: String,
    /// What the machine lacked.
    pub notices: Vec<String>,
    /// The policy's statistics at the end of the run.
    pub policy_stats: PolicyStats,
}

impl RunReport {
    /// Build from the outcome of a real run.
    pub fn new(outcome: &RunOutcome, context: RunContext) -> Self {
        let m = outcome.metrics.clone();
        let header = &outcome.header;
        let task_counters: Vec<TaskCounters> = outcome
            .counter_totals
            .iter()
            .map(|(name, counters)| TaskCounters {
                name: name.clone(),
                counters: counters.clone(),
            })
            .collect();
        let cpu_ns = task_counters
            .iter()
            .filter_map(|t| t.counters.on_cpu_ns)
            .reduce(|a, b| a + b);
        RunReport {
            command: context.command,
            policy: header.policy.clone(),
            machine: header.machine.clone(),
            platform: header.platform.clone(),
            exit_code: context.exit_code,
            exit_signal: context.exit_signal,
            wall_s: m.duration_s,
            cpu_s: cpu_ns.map(|ns| ns as f64 / 1e9),
            makespan_s: m.makespan_s,
            energy_j: m.energy_j,
            energy_source: m.energy_source,
            power_description: context.power_description,
            frequency_control: context.frequency_control,
            avg_power_w: m.avg_power_w,
            edp_js: m.edp_js,
            instructions: m.instructions,
            migrations: m.migrations,
            migrations_per_s: m.migrations_per_s,
            energy_meter: header.meter,
            tasks: m.tasks,
            task_counters,
            notices: context.notices,
            policy_stats: context.policy_stats,
        }
    }
}
