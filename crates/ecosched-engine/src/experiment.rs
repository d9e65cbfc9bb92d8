//! Simulated experiments: one policy on one scenario (`ecosched sim`), and
//! several policies against a baseline (`ecosched compare`), with alone
//! runs for the figures that need them.

use crate::report::{CompareReport, SimReport};
use crate::EngineError;
use ecosched_control::run;
use ecosched_model::trace::{MemorySink, NullSink, TraceSink};
use ecosched_model::{Comparison, CounterKind, RunMetrics, Trace};
use ecosched_policy::{build, Params};
use ecosched_sim::{Observe, Scenario, SimPlatform};
use std::collections::{BTreeMap, BTreeSet};

/// How a simulated run is set up beyond its scenario and policy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimOptions {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// What the policy is shown (default: what Linux could read).
    pub observe: Observe,
    /// Counters opened beside the policy's own, for measurements an
    /// experiment takes (as `perf stat -e` beside a run); under `linux`
    /// they share the PMU with the policy's and are multiplexed with them.
    pub extra_counters: BTreeSet<CounterKind>,
}

impl SimOptions {
    /// Options with only a seed override.
    pub fn seeded(seed: Option<u64>) -> Self {
        SimOptions {
            seed,
            ..SimOptions::default()
        }
    }

    /// Options with only an observation model.
    pub fn observing(observe: Observe) -> Self {
        SimOptions {
            observe,
            ..SimOptions::default()
        }
    }
}

/// One finished simulated run. Its steps went to the sink it ran with.
#[derive(Debug, Clone)]
pub struct SimRun {
    /// Metrics of the run.
    pub metrics: RunMetrics,
    /// The report in the command-line contract's shape.
    pub report: SimReport,
}

/// Run `policy` (with `params`) on `scenario`, streaming every step to `sink`.
pub fn simulate_into(
    scenario: &Scenario,
    policy: &str,
    params: &Params,
    options: &SimOptions,
    sink: &mut dyn TraceSink,
    progress: &mut dyn FnMut(f64),
) -> Result<SimRun, EngineError> {
    let mut policy = build(policy, params)?;
    let seed = options.seed.unwrap_or(scenario.spec.seed);
    let mut platform = SimPlatform::new(scenario, seed)?;
    platform.observe_as(options.observe, &options.extra_counters);
    let outcome = run(
        &mut platform,
        policy.as_mut(),
        &scenario.spec.name,
        Some(seed),
        sink,
        progress,
    )?;
    let mut report = SimReport::new(&scenario.spec.name, &outcome.header, &outcome.metrics, seed);
    report.observe = Some(options.observe);
    report.policy_notes = policy.notes();
    Ok(SimRun {
        metrics: outcome.metrics,
        report,
    })
}

/// Run `policy` on `scenario` keeping nothing but the figures.
pub fn simulate(
    scenario: &Scenario,
    policy: &str,
    params: &Params,
    options: &SimOptions,
    progress: &mut dyn FnMut(f64),
) -> Result<SimRun, EngineError> {
    simulate_into(scenario, policy, params, options, &mut NullSink, progress)
}

/// Run `policy` on `scenario` and keep every step in memory, for checks
/// that read the steps afterwards (validation rows, tests). Memory grows
/// with the run: not for long runs.
pub fn simulate_traced(
    scenario: &Scenario,
    policy: &str,
    params: &Params,
    options: &SimOptions,
) -> Result<(SimRun, Trace), EngineError> {
    let mut sink = MemorySink::default();
    let run = simulate_into(scenario, policy, params, options, &mut sink, &mut |_| {})?;
    let trace = sink.trace.ok_or_else(|| {
        EngineError::Control(ecosched_control::ControlError::Sink(std::io::Error::other(
            "the run recorded no trace",
        )))
    })?;
    Ok((run, trace))
}

/// Each managed instance's run time alone on the machine under `policy`.
pub fn alone_times(
    scenario: &Scenario,
    policy: &str,
    params: &Params,
    options: &SimOptions,
) -> Result<BTreeMap<String, f64>, EngineError> {
    let mut out = BTreeMap::new();
    for name in scenario.instance_names() {
        let Some(alone) = scenario.alone(&name) else {
            continue;
        };
        let run = simulate(&alone, policy, params, options, &mut |_| {})?;
        if let Some(t) = run.metrics.task(&name) {
            out.insert(name, t.runtime_s);
        }
    }
    Ok(out)
}

/// Run every policy and compare each with the baseline (ratio = policy /
/// baseline). `policies` pairs names with their parameters; the baseline
/// must be one of them.
pub fn compare(
    scenario: &Scenario,
    policies: &[(String, Params)],
    baseline: &str,
    options: &SimOptions,
    progress: &mut dyn FnMut(usize, f64),
) -> Result<CompareReport, EngineError> {
    let Some((_, base_params)) = policies.iter().find(|(n, _)| n == baseline) else {
        return Err(EngineError::from(
            ecosched_policy::PolicyError::Incompatible(format!(
                "the baseline {baseline:?} must be one of the compared policies ({})",
                policies
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        ));
    };
    let mut runs = Vec::new();
    for (i, (name, params)) in policies.iter().enumerate() {
        runs.push(simulate(scenario, name, params, options, &mut |t| {
            progress(i, t)
        })?);
    }
    let alone = alone_times(scenario, baseline, base_params, options)?;
    let base_idx = policies
        .iter()
        .position(|(n, _)| n == baseline)
        .unwrap_or(0);
    let base = runs[base_idx].metrics.clone();
    let ratios = policies
        .iter()
        .zip(&runs)
        .map(|((name, _), run)| (name.clone(), Comparison::new(&run.metrics, &base, &alone)))
        .collect();
    Ok(CompareReport {
        scenario: scenario.spec.name.clone(),
        baseline: baseline.to_string(),
        observe: options.observe,
        results: runs.into_iter().map(|r| r.report).collect(),
        ratios,
        alone_s: alone,
    })
}
