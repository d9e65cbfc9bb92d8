//! Work-normalised comparisons: a policy that does less work in
//! a fixed-duration scenario uses less energy, and a plain energy ratio
//! would call that a gain. When any compared run stopped at the scenario's
//! duration with work left, every headline figure is per unit of work
//! instead:
//!
//! - joules per completed instance, when every instance is the same
//!   program of the same length (a completion is then the same work
//!   whatever the policy);
//! - joules per 10⁹ instructions otherwise (instances differ, so a
//!   completed `hmmer` is not a completed `soplex`; instructions are the
//!   work done, counted in every run, partial instances included);
//!
//! with the EDP per unit (energy per unit × time per unit) and the
//! throughput (units per second). When every run finished all its work the
//! totals are already comparable and are used as they are.

use crate::report::SimReport;
use ecosched_sim::Scenario;
use serde::Serialize;
use std::collections::BTreeMap;

/// Which unit of work a comparison's headline figures are per.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Normalisation {
    /// Every run did all its work: totals (energy, EDP, makespan) compare.
    Total,
    /// Fixed duration, identical instances: per completed instance.
    PerInstance,
    /// Fixed duration, different instances: per 10⁹ instructions.
    PerGigaInstruction,
}

impl Normalisation {
    /// The unit's name in table headers ("instance", "1e9 ins").
    pub fn unit(self) -> &'static str {
        match self {
            Normalisation::Total => "run",
            Normalisation::PerInstance => "instance",
            Normalisation::PerGigaInstruction => "1e9 ins",
        }
    }

    /// One sentence for the header of a comparison.
    pub fn describe(self) -> &'static str {
        match self {
            Normalisation::Total => {
                "every run finished its work: totals compare (energy, EDP, makespan)"
            }
            Normalisation::PerInstance => {
                "fixed duration with work left: figures per completed instance (all instances alike)"
            }
            Normalisation::PerGigaInstruction => {
                "fixed duration with work left: figures per 10^9 instructions (instances differ)"
            }
        }
    }
}

/// One run's figures per unit of work.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkFigures {
    /// Units of work done (runs, completed instances, or 10⁹ instructions).
    pub units: f64,
    /// Units per second of simulated time.
    pub throughput_per_s: Option<f64>,
    /// Joules per unit.
    pub energy_per_unit_j: Option<f64>,
    /// Energy per unit × time per unit, J·s.
    pub edp_per_unit_js: Option<f64>,
}

/// One run's work figures against the baseline's (ratio = run / baseline).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkRatios {
    /// × throughput (> 1: more work per second).
    pub throughput: Option<f64>,
    /// × joules per unit (< 1: less energy for the same work).
    pub energy_per_unit: Option<f64>,
    /// × EDP per unit.
    pub edp_per_unit: Option<f64>,
}

/// Whether every instance in `scenario` is the same work: one program of
/// one length, and no generated job graph.
fn instances_alike(scenario: &Scenario) -> bool {
    let managed: Vec<_> = scenario.spec.tasks.iter().filter(|t| t.managed).collect();
    scenario.spec.jobgraph.is_none()
        && managed.windows(2).all(|w| {
            w[0].profile == w[1].profile
                && w[0].length_s == w[1].length_s
                && w[0].instructions == w[1].instructions
        })
}

/// The normalisation `runs` of `scenario` need.
pub fn normalisation(scenario: &Scenario, runs: &[&SimReport]) -> Normalisation {
    let unfinished = runs.iter().any(|r| r.unfinished_tasks > 0);
    if !unfinished {
        Normalisation::Total
    } else if instances_alike(scenario)
        && runs
            .iter()
            .all(|r| r.tasks.iter().map(|t| t.completions).sum::<u32>() > 0)
    {
        Normalisation::PerInstance
    } else if runs.iter().all(|r| r.instructions.is_some_and(|i| i > 0)) {
        Normalisation::PerGigaInstruction
    } else {
        // Without instructions the only unit left is the instance.
        Normalisation::PerInstance
    }
}

/// `run`'s figures per unit of `norm`.
pub fn work_figures(run: &SimReport, norm: Normalisation) -> WorkFigures {
    let (units, time_s) = match norm {
        Normalisation::Total => (1.0, run.makespan_s),
        Normalisation::PerInstance => (
            f64::from(run.tasks.iter().map(|t| t.completions).sum::<u32>()),
            run.simulated_s,
        ),
        Normalisation::PerGigaInstruction => (
            run.instructions.map_or(0.0, |i| i as f64 / 1e9),
            run.simulated_s,
        ),
    };
    let per = |x: f64| (units > 0.0).then(|| x / units);
    let energy_per_unit_j = run.energy_j.and_then(per);
    let time_per_unit = per(time_s);
    WorkFigures {
        units,
        throughput_per_s: (time_s > 0.0).then(|| units / time_s),
        energy_per_unit_j,
        edp_per_unit_js: match (energy_per_unit_j, time_per_unit) {
            (Some(e), Some(t)) => Some(e * t),
            _ => None,
        },
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// `run` against `base`.
pub fn work_ratios(run: &WorkFigures, base: &WorkFigures) -> WorkRatios {
    WorkRatios {
        throughput: ratio(run.throughput_per_s, base.throughput_per_s),
        energy_per_unit: ratio(run.energy_per_unit_j, base.energy_per_unit_j),
        edp_per_unit: ratio(run.edp_per_unit_js, base.edp_per_unit_js),
    }
}

/// Every run's work figures, keyed by policy name.
pub fn all_work_figures(runs: &[&SimReport], norm: Normalisation) -> BTreeMap<String, WorkFigures> {
    runs.iter()
        .map(|r| (r.policy.clone(), work_figures(r, norm)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecosched_model::{Meter, PatelMetrics, TaskMetrics};

    fn report(energy: f64, completions: u32, instructions: u64, unfinished: u32) -> SimReport {
        SimReport {
            scenario: "s".into(),
            policy: "p".into(),
            machine: "m".into(),
            seed: 0,
            observe: None,
            simulated_s: 100.0,
            makespan_s: 100.0,
            energy_j: Some(energy),
            avg_power_w: Some(energy / 100.0),
            edp_js: Some(energy * 100.0),
            instructions: Some(instructions),
            migrations: None,
            migrations_per_s: None,
            migrations_by_cause: None,
            energy_meter: Meter::System,
            instructions_per_s_per_w: None,
            mean_task_edp_js: None,
            tasks: vec![TaskMetrics {
                name: "a".into(),
                runtime_s: 10.0,
                completions,
                instructions: Some(instructions),
                migrations: None,
                energy_j: None,
                edp_js: None,
                energy_true_j: None,
                energy_cpu_share_j: None,
                energy_activity_j: None,
            }],
            unfinished_tasks: unfinished,
            patel: PatelMetrics::default(),
            policy_stats: ecosched_model::PolicyStats::default(),
            attribution: None,
        }
    }

    #[test]
    fn less_work_for_less_energy_is_no_gain() {
        // Half the work for 80 % of the energy: 1.6× the energy per unit.
        let base = report(1000.0, 10, 10_000_000_000, 1);
        let slow = report(800.0, 5, 5_000_000_000, 1);
        for norm in [
            Normalisation::PerInstance,
            Normalisation::PerGigaInstruction,
        ] {
            let r = work_ratios(&work_figures(&slow, norm), &work_figures(&base, norm));
            let e = r.energy_per_unit.unwrap();
            assert!((e - 1.6).abs() < 1e-9, "{norm:?}: {e}");
            assert!((r.throughput.unwrap() - 0.5).abs() < 1e-9);
            // EDP per unit: 1.6 × 2 (twice the time per unit).
            assert!((r.edp_per_unit.unwrap() - 3.2).abs() < 1e-9);
        }
    }

    #[test]
    fn per_giga_instruction_units() {
        let w = work_figures(
            &report(1000.0, 3, 4_000_000_000, 1),
            Normalisation::PerGigaInstruction,
        );
        assert_eq!(w.units, 4.0);
        assert_eq!(w.energy_per_unit_j, Some(250.0));
        assert_eq!(w.throughput_per_s, Some(0.04));
    }

    #[test]
    fn finished_runs_compare_totals() {
        let scenario = Scenario::load("merkel-2hmmer-2soplex").unwrap();
        let done = report(1000.0, 4, 1, 0);
        assert_eq!(normalisation(&scenario, &[&done]), Normalisation::Total);
        let cut = report(1000.0, 4, 1, 2);
        assert_eq!(
            normalisation(&scenario, &[&done, &cut]),
            Normalisation::PerGigaInstruction
        );
        let alike = Scenario::load("merkel-4hmmer").unwrap();
        assert_eq!(
            normalisation(&alike, &[&done, &cut]),
            Normalisation::PerInstance
        );
    }
}
