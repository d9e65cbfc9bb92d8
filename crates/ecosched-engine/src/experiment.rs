//! Simulated runs: one policy on one scenario (`ecosched sim`), each
//! instance alone on the machine, and the ratios of runs to a reference.
//! Comparing several policies against a baseline (`ecosched compare`),
//! which may search the oracle, builds on these in [`crate::compare`].

use crate::report::SimReport;
use crate::EngineError;
use ecosched_control::run;
use ecosched_model::attribution::EnergyFit;
use ecosched_model::trace::{MemorySink, NullSink, TraceSink};
use ecosched_model::{Comparison, CounterKind, RunMetrics, Trace};
use ecosched_policy::{build, Params};
use ecosched_sim::{Observe, Scenario, SimPlatform};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

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
    /// Attribute each task's energy by CPU time and by this fitted
    /// activity model, and record its true energy ([`crate::attribution`]).
    pub attribution: Option<Arc<EnergyFit>>,
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

pub(crate) use crate::seed_shift::run_seed;
pub use crate::seed_shift::{seed_shift, with_seed_shift};

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
    let policy = build(policy, params)?;
    simulate_policy_into(scenario, policy, options, sink, progress)
}

/// Run an already built `policy` on `scenario` (the oracle's candidates,
/// which are not in the catalogue), streaming every step to `sink`.
pub fn simulate_policy_into(
    scenario: &Scenario,
    mut policy: Box<dyn ecosched_policy::Policy>,
    options: &SimOptions,
    sink: &mut dyn TraceSink,
    progress: &mut dyn FnMut(f64),
) -> Result<SimRun, EngineError> {
    let seed = run_seed(options.seed, scenario.spec.seed);
    let mut platform = SimPlatform::new(scenario, seed)?;
    platform.observe_as(options.observe, &options.extra_counters);
    let name = &scenario.spec.name;
    let (outcome, notes) = match options.attribution.as_deref() {
        Some(fit) => {
            let mut attributing = crate::attribution::AttributionSink::new(sink, fit);
            let outcome = run(
                &mut platform,
                policy.as_mut(),
                name,
                Some(seed),
                &mut attributing,
                progress,
            )?;
            (outcome, Some(attributing))
        }
        None => (
            run(
                &mut platform,
                policy.as_mut(),
                name,
                Some(seed),
                sink,
                progress,
            )?,
            None,
        ),
    };
    let mut report = SimReport::new(name, &outcome.header, &outcome.metrics, seed);
    if let Some(a) = notes {
        report.attribution = Some(a.annotate(&mut report.tasks, &mut platform));
    }
    report.observe = Some(options.observe);
    report.migrations_by_cause = Some(platform.stats().migrations);
    report.policy_stats = policy.stats();
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

/// Each policy's figures as ratios to those of the policy named
/// `reference` (the baseline, or the oracle), `None` when it was not run.
/// `metrics` are the runs in the order of `policies`.
pub(crate) fn comparisons(
    policies: &[(String, Params)],
    metrics: &[&RunMetrics],
    reference: &str,
    alone: &BTreeMap<String, f64>,
) -> Option<BTreeMap<String, Comparison>> {
    let base = metrics[policies.iter().position(|(n, _)| n == reference)?];
    Some(
        policies
            .iter()
            .zip(metrics)
            .map(|((name, _), m)| (name.clone(), Comparison::new(m, base, alone)))
            .collect(),
    )
}

/// Each managed instance's run time alone on the machine under `policy`;
/// the runs alone go side by side ([`crate::parallel`]).
pub fn alone_times(
    scenario: &Scenario,
    policy: &str,
    params: &Params,
    options: &SimOptions,
) -> Result<BTreeMap<String, f64>, EngineError> {
    let names = scenario.instance_names();
    let alone = crate::parallel::map(&names, |name| {
        let Some(alone) = scenario.alone(name) else {
            return Ok(None);
        };
        let run = simulate(&alone, policy, params, options, &mut |_| {})?;
        Ok(run.metrics.task(name).map(|t| (name.clone(), t.runtime_s)))
    })?;
    Ok(alone.into_iter().flatten().collect())
}

/// Whether `policy` is a search over the simulator (the oracle) rather than
/// a policy that decides from snapshots.
pub fn is_search(policy: &str) -> Result<bool, EngineError> {
    Ok(ecosched_policy::find(policy)?.0.kind == ecosched_policy::PolicyKind::Search)
}
