//! The oracle's side in the policy crate (`docs/design/papers.md`, "Baselines
//! and the oracle"): its parameter (the objective the search minimises) and
//! [`FixedConfig`], the static configuration one candidate of the search is —
//! each named task pinned to one CPU (or all managed work confined to a CPU
//! set) and each frequency domain held at one P-state. The search itself runs
//! the simulator, so it lives in `ecosched-engine` (`oracle.rs`); a policy
//! never knows which world it runs in.

use crate::params::{Params, TypedParams};
use crate::{Policy, PolicyError};
use ecosched_model::{
    CpuId, CpuSet, FreqDomainId, FreqSetting, Plan, Requirements, Snapshot, TaskId, Topology,
};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

crate::typed_params! {
    /// Parameters of `oracle`.
    pub struct OracleParams {
        /// What the search minimises: energy per unit of work, energy,
        /// energy × makespan, or makespan.
        objective: String = choice(&Objective::NAMES).default("work_energy"),
        /// The most throughput the chosen configuration may give up
        /// against the fastest one the search tried, as a fraction
        /// (0.03: at most 3 % less work per second). Without it the
        /// search may pick a configuration that saves energy by doing
        /// the work much more slowly.
        slowdown: Option<f64> = real().at_least(0.0).below(1.0).unset("no limit"),
    }
}

ecosched_model::policy_stats! {
    /// What the oracle's search found.
    pub struct OracleStats {
        /// The best configuration: placement and frequency per domain.
        choice: String => info,
        /// Configurations simulated (one per symmetry class).
        evaluated: u64 => counter,
        /// Configurations before symmetry pruning.
        configurations: u64 => counter,
    }
}

/// What the oracle's search minimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Joules per unit of work (per run when all work finishes; per
    /// instance or 10⁹ instructions when a fixed duration cuts it off).
    WorkEnergy,
    /// Total energy.
    Energy,
    /// Energy × makespan.
    Edp,
    /// Makespan.
    Makespan,
}

impl Objective {
    /// Every objective's parameter value.
    pub const NAMES: [&'static str; 4] = ["work_energy", "energy", "edp", "makespan"];

    /// The parameter value naming it.
    pub fn name(self) -> &'static str {
        match self {
            Objective::WorkEnergy => "work_energy",
            Objective::Energy => "energy",
            Objective::Edp => "edp",
            Objective::Makespan => "makespan",
        }
    }

    /// From `--param objective=…`, checked against [`OracleParams`].
    pub fn from_params(params: &Params) -> Result<Self, PolicyError> {
        Ok(SearchGoal::from_params(params)?.objective)
    }
}

/// What the search minimises and under which throughput limit.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SearchGoal {
    /// The objective.
    pub objective: Objective,
    /// The most throughput the choice may give up against the fastest
    /// configuration tried (a fraction); `None`: no limit.
    pub slowdown: Option<f64>,
}

impl SearchGoal {
    /// From `--param objective=… --param slowdown=…`, checked against
    /// [`OracleParams`].
    pub fn from_params(params: &Params) -> Result<Self, PolicyError> {
        let typed = OracleParams::from_resolved(&params.resolve(
            "oracle",
            OracleParams::SPEC,
            &[],
            &[],
        )?)?;
        let objective = match typed.objective.as_str() {
            "energy" => Objective::Energy,
            "edp" => Objective::Edp,
            "makespan" => Objective::Makespan,
            _ => Objective::WorkEnergy,
        };
        Ok(SearchGoal {
            objective,
            slowdown: typed.slowdown,
        })
    }
}

/// One static configuration: pinned tasks (or a confining CPU set) and a
/// fixed frequency per domain.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedConfig {
    /// Task name → its CPU.
    pub task_cpu: BTreeMap<String, CpuId>,
    /// CPUs all managed work is confined to (for work that is not a fixed
    /// set of named tasks, such as a `make -jN` job graph).
    pub cpus: Option<CpuSet>,
    /// Frequency domain → kHz.
    pub freq_khz: BTreeMap<FreqDomainId, u64>,
    /// Tasks already pinned (a task is pinned once; a restart is a new task).
    pinned: BTreeSet<TaskId>,
}

/// How often new tasks are looked for and pinned: short, so a task runs
/// unpinned for at most this long.
const PIN_INTERVAL: Duration = Duration::from_millis(20);

impl FixedConfig {
    /// A configuration.
    pub fn new(
        task_cpu: BTreeMap<String, CpuId>,
        cpus: Option<CpuSet>,
        freq_khz: BTreeMap<FreqDomainId, u64>,
    ) -> Self {
        FixedConfig {
            task_cpu,
            cpus,
            freq_khz,
            pinned: BTreeSet::new(),
        }
    }
}

impl Policy for FixedConfig {
    fn name(&self) -> &str {
        "oracle"
    }
    fn requirements(&self) -> Requirements {
        Requirements {
            affinity: true,
            frequency: !self.freq_khz.is_empty(),
            ..Requirements::default()
        }
    }
    fn interval(&self) -> Duration {
        PIN_INTERVAL
    }
    fn init(&mut self, topology: &Topology) -> Result<Plan, PolicyError> {
        let mut plan = Plan::default();
        for (&dom, &khz) in &self.freq_khz {
            let ok = topology
                .freq_domain(dom)
                .is_some_and(|d| d.pstate(khz).is_some());
            if !ok {
                return Err(PolicyError::Incompatible(format!(
                    "oracle: {} kHz is not a P-state of frequency domain {}",
                    khz,
                    dom.index()
                )));
            }
            plan.frequency
                .insert(dom, FreqSetting::Fixed { freq_khz: khz });
        }
        plan.managed_cpus.clone_from(&self.cpus);
        self.pinned.clear();
        Ok(plan)
    }
    fn decide(&mut self, snapshot: &Snapshot) -> Plan {
        crate::placed::pin_new_tasks(&self.task_cpu, &mut self.pinned, snapshot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objective_parses_and_refuses_unknown() {
        assert_eq!(
            Objective::from_params(&Params::default()).unwrap(),
            Objective::WorkEnergy
        );
        assert_eq!(
            Objective::from_params(&Params::default().with("objective", "edp")).unwrap(),
            Objective::Edp
        );
        let err = Objective::from_params(&Params::default().with("objective", "speed"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("objective") && err.contains("work_energy"),
            "{err}"
        );
    }

    #[test]
    fn the_catalogue_entry_points_to_compare() {
        let err = crate::build("oracle", &Params::default())
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("ecosched compare")));
    }
}
