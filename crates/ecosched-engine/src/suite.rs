//! The workload suite of current machines (`ecosched suite`,
//! `docs/researchers/workload-suite.md`): for each modern preset and each
//! workload of today's kinds, every policy that can run against the better
//! of the two baselines an operator has anyway (`performance` and
//! `schedutil`) and against the oracle within the same slowdown.
//!
//! A row's verdict is one of three, each measured:
//! - **saves**: a policy uses at least [`MIN_SAVING`] less energy per unit
//!   of work than the better baseline at no more than [`SLOWDOWN`] lower
//!   throughput, and is within
//!   [`ORACLE_MARGIN`] of the oracle's energy per unit of work;
//! - **run fast**: no policy does, and neither does the oracle: the best
//!   static configuration within [`SLOWDOWN`] of the fastest uses no less
//!   energy per unit of work than running fast (within the margin), which
//!   is the measured reason nothing beats it;
//! - **misses**: the oracle shows a saving no policy reaches.

use crate::experiment::{is_search, simulate, SimOptions, SimRun};
use crate::normalise::{self, Normalisation, WorkFigures};
use crate::oracle::{self, SearchMethod};
use crate::EngineError;
use ecosched_control::ControlError;
use ecosched_policy::oracle::{Objective, SearchGoal};
use ecosched_policy::{Params, PolicyError, PolicyKind};
use ecosched_sim::Scenario;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// The throughput a saving may cost against the better baseline.
pub const SLOWDOWN: f64 = 0.03;
/// How far above the oracle's energy per unit of work the best policy may be.
pub const ORACLE_MARGIN: f64 = 0.05;
/// The least saving that counts: smaller differences are within what a
/// seed changes, and a verdict must not hang on them.
pub const MIN_SAVING: f64 = 0.01;
/// The baselines every row is measured against.
pub const BASELINES: [&str; 2] = ["performance", "schedutil"];

/// The modern presets the suite runs on: (short name in scenario names,
/// preset).
pub const MACHINES: [(&str, &str); 4] = [
    ("epyc", "epyc-9654-2s"),
    ("xeon", "xeon-8480-2s"),
    ("i9", "core-i9-13900k"),
    ("altra", "altra-q80-30"),
];

/// The workloads, as the suffix of each scenario's name.
pub const WORKLOADS: [&str; 5] = [
    "batch",
    "build",
    "services-low",
    "services-high",
    "batch-services",
];

/// The built-in scenario of one machine (short name) and workload.
pub fn scenario_name(machine: &str, workload: &str) -> String {
    format!("suite-{machine}-{workload}")
}

/// What happened to one policy on one workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyFigure {
    /// Policy name.
    pub policy: String,
    /// Energy per unit of work, J; `None` when refused.
    pub energy_per_unit_j: Option<f64>,
    /// Units of work per second; `None` when refused.
    pub throughput_per_s: Option<f64>,
    /// Why it did not run (the refusal it gave before starting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// A row's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A policy saves energy at the baseline's speed, near the oracle.
    Saves,
    /// Nothing beats running fast, the oracle included.
    RunFast,
    /// The oracle saves more than any policy reaches.
    Misses,
}

impl Verdict {
    /// The word the table shows.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Saves => "saves",
            Verdict::RunFast => "run fast",
            Verdict::Misses => "misses",
        }
    }
}

/// One workload on one machine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteRow {
    /// The scenario.
    pub scenario: String,
    /// The machine preset.
    pub machine: String,
    /// Which unit of work the figures are per.
    pub normalisation: Normalisation,
    /// The better baseline (lower energy per unit of work).
    pub reference: String,
    /// The best policy within the slowdown (the reference when none beats it).
    pub best: String,
    /// Best / reference energy per unit of work.
    pub best_energy: f64,
    /// Best / reference throughput.
    pub best_throughput: f64,
    /// Best / oracle energy per unit of work.
    pub best_to_oracle: f64,
    /// Oracle / reference energy per unit of work.
    pub oracle_energy: f64,
    /// The oracle's configuration.
    pub oracle_choice: String,
    /// Which search the oracle ran.
    pub oracle_method: SearchMethod,
    /// The verdict.
    pub verdict: Verdict,
    /// Every policy's figures, in catalogue order.
    pub policies: Vec<PolicyFigure>,
}

/// Every local policy that takes no required parameter: what the suite
/// runs besides the oracle.
pub fn policies() -> Vec<&'static str> {
    ecosched_policy::variants()
        .filter(|(f, v)| f.kind == PolicyKind::Local && v.example.is_empty())
        .map(|(_, v)| v.name)
        .collect()
}

/// Whether an error is a policy's refusal to run on this machine (given
/// before anything starts), as opposed to a failure.
fn refusal(e: &EngineError) -> Option<String> {
    match e {
        EngineError::Control(ControlError::Incapable { missing, .. }) => Some(missing.join("; ")),
        EngineError::Control(ControlError::Policy(PolicyError::Incompatible(m))) => Some(m.clone()),
        _ => None,
    }
}

/// Evaluate one scenario: every policy, the oracle within [`SLOWDOWN`],
/// and the verdict. `progress(policy)` before each run.
pub fn evaluate(
    scenario: &Scenario,
    options: &SimOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<SuiteRow, EngineError> {
    let names = policies();
    let local: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !is_search(n).unwrap_or(true))
        .collect();
    for name in &local {
        progress(name);
    }
    // Independent simulations: one per core, each seeded as this thread.
    let shift = crate::experiment::seed_shift();
    let outcomes: Vec<(String, Result<SimRun, EngineError>)> = local
        .par_iter()
        .map(|name| {
            let run = crate::experiment::with_seed_shift(shift, || {
                simulate(scenario, name, &Params::default(), options, &mut |_| {})
            });
            (name.to_string(), run)
        })
        .collect();
    let mut runs: Vec<(String, SimRun)> = Vec::new();
    let mut refused: BTreeMap<String, String> = BTreeMap::new();
    for (name, outcome) in outcomes {
        match outcome {
            Ok(run) => runs.push((name, run)),
            Err(e) => match refusal(&e) {
                Some(why) => {
                    refused.insert(name, why);
                }
                None => return Err(e),
            },
        }
    }
    progress("oracle");
    let goal = SearchGoal {
        objective: Objective::WorkEnergy,
        slowdown: Some(SLOWDOWN),
    };
    let (oracle_run, found) = oracle::search(scenario, goal, options, &mut |_, _| {})?;
    let mut reports: Vec<&crate::report::SimReport> = runs.iter().map(|(_, r)| &r.report).collect();
    reports.push(&oracle_run.report);
    let norm = normalise::normalisation(scenario, &reports);
    let figures: BTreeMap<String, WorkFigures> = runs
        .iter()
        .map(|(n, r)| (n.clone(), normalise::work_figures(&r.report, norm)))
        .collect();
    let oracle_fig = normalise::work_figures(&oracle_run.report, norm);
    let energy = |w: &WorkFigures| w.energy_per_unit_j.unwrap_or(f64::INFINITY);
    let throughput = |w: &WorkFigures| w.throughput_per_s.unwrap_or(0.0);
    let reference = BASELINES
        .iter()
        .filter_map(|b| figures.get(*b).map(|w| (*b, w)))
        .min_by(|a, b| energy(a.1).total_cmp(&energy(b.1)))
        .ok_or_else(|| {
            EngineError::from(PolicyError::Incompatible(format!(
                "suite: neither baseline ran on {}",
                scenario.spec.name
            )))
        })?;
    let (ref_name, ref_fig) = reference;
    let qualifying = figures
        .iter()
        .filter(|(_, w)| {
            throughput(w) >= throughput(ref_fig) * (1.0 - SLOWDOWN)
                && energy(w) <= energy(ref_fig) * (1.0 - MIN_SAVING)
        })
        .min_by(|a, b| energy(a.1).total_cmp(&energy(b.1)));
    let (best_name, best_fig) = qualifying.map_or((ref_name, ref_fig), |(n, w)| (n.as_str(), w));
    let best_to_oracle = energy(best_fig) / energy(&oracle_fig);
    let verdict = match (qualifying.is_some(), best_to_oracle <= 1.0 + ORACLE_MARGIN) {
        (true, true) => Verdict::Saves,
        (false, true) => Verdict::RunFast,
        (_, false) => Verdict::Misses,
    };
    let policies = local
        .iter()
        .map(|n| PolicyFigure {
            policy: n.to_string(),
            energy_per_unit_j: figures.get(*n).and_then(|w| w.energy_per_unit_j),
            throughput_per_s: figures.get(*n).and_then(|w| w.throughput_per_s),
            refused: refused.get(*n).cloned(),
        })
        .collect();
    Ok(SuiteRow {
        scenario: scenario.spec.name.clone(),
        machine: scenario.machine.spec.name.clone(),
        normalisation: norm,
        reference: ref_name.to_string(),
        best: best_name.to_string(),
        best_energy: energy(best_fig) / energy(ref_fig),
        best_throughput: throughput(best_fig) / throughput(ref_fig),
        best_to_oracle,
        oracle_energy: energy(&oracle_fig) / energy(ref_fig),
        oracle_choice: found.choice.label(),
        oracle_method: found.method,
        verdict,
        policies,
    })
}

/// The rows as a Markdown table, one line per workload.
pub fn markdown(rows: &[SuiteRow]) -> String {
    let mut out = String::from(
        "| machine | workload | better baseline | best policy | × energy/work | × throughput | × oracle | verdict |\n\
         |---|---|---|---|---:|---:|---:|---|\n",
    );
    for r in rows {
        let workload = r
            .scenario
            .rsplit_once(&format!("-{}-", short_of(&r.machine)))
            .map_or(r.scenario.as_str(), |(_, w)| w);
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {} |\n",
            r.machine,
            workload,
            r.reference,
            r.best,
            r.best_energy,
            r.best_throughput,
            r.best_to_oracle,
            r.verdict.word()
        ));
    }
    out
}

fn short_of(preset: &str) -> &str {
    MACHINES
        .iter()
        .find(|(_, p)| *p == preset)
        .map_or(preset, |(s, _)| s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_runs_every_local_policy_without_required_parameters() {
        let p = policies();
        for name in ["performance", "schedutil", "hilo", "pam", "wca", "patel1"] {
            assert!(p.contains(&name), "{p:?}");
        }
        for name in ["fixed", "static", "placed", "av-xnode", "oracle"] {
            assert!(!p.contains(&name), "{p:?}");
        }
    }

    #[test]
    fn every_machine_and_workload_has_its_scenario() {
        for (short, preset) in MACHINES {
            for w in WORKLOADS {
                let s = Scenario::load(&scenario_name(short, w)).unwrap();
                assert_eq!(s.machine.spec.name, preset);
            }
        }
    }
}
