//! Simulated experiments: one policy on one scenario (`ecosched sim`), and
//! several policies against a baseline (`ecosched compare`), with alone
//! runs for the figures that need them.

use crate::normalise;
use crate::oracle;
use crate::report::{CompareReport, SimReport};
use crate::series::{Series, SeriesSink};
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

thread_local! {
    static SEED_SHIFT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Run `f` with the seed of every simulated run on this thread (the
/// explicit one or the scenario's) moved by `shift`: `validate --reseed`
/// re-runs the same rows on other seeds to show which verdicts are a seed's
/// luck. The shift ends with `f`, even on early return.
pub fn with_seed_shift<T>(shift: u64, f: impl FnOnce() -> T) -> T {
    struct Reset(u64);
    impl Drop for Reset {
        fn drop(&mut self) {
            SEED_SHIFT.with(|s| s.set(self.0));
        }
    }
    let _reset = Reset(SEED_SHIFT.with(|s| s.replace(shift)));
    f()
}

/// The seed a run uses: `explicit` if given, else the scenario's, moved
/// by the thread's [`with_seed_shift`].
pub(crate) fn run_seed(explicit: Option<u64>, scenario_seed: u64) -> u64 {
    explicit
        .unwrap_or(scenario_seed)
        .wrapping_add(SEED_SHIFT.with(std::cell::Cell::get))
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
    compare_impl(scenario, policies, baseline, options, progress, None)
}

/// [`compare`], also keeping each policy's time series (at most about
/// `2 × points` points each), in the order of `policies`, for plots.
pub fn compare_with_series(
    scenario: &Scenario,
    policies: &[(String, Params)],
    baseline: &str,
    options: &SimOptions,
    points: usize,
    progress: &mut dyn FnMut(usize, f64),
) -> Result<(CompareReport, Vec<Series>), EngineError> {
    let mut series = Vec::new();
    let report = compare_impl(
        scenario,
        policies,
        baseline,
        options,
        progress,
        Some((&mut series, points)),
    )?;
    Ok((report, series))
}

fn compare_impl(
    scenario: &Scenario,
    policies: &[(String, Params)],
    baseline: &str,
    options: &SimOptions,
    progress: &mut dyn FnMut(usize, f64),
    mut series: Option<(&mut Vec<Series>, usize)>,
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
    if is_search(baseline)? {
        return Err(EngineError::from(
            ecosched_policy::PolicyError::Incompatible(
                "the oracle cannot be the baseline: give another policy as --baseline; every policy is also reported as a ratio to the oracle".into(),
            ),
        ));
    }
    let mut runs = Vec::new();
    let mut oracle_search = None;
    for (i, (name, params)) in policies.iter().enumerate() {
        if is_search(name)? {
            let objective = ecosched_policy::oracle::Objective::from_params(params)?;
            let (run, found) = oracle::search(scenario, objective, options, &mut |done, total| {
                progress(
                    i,
                    done as f64 / total.max(1) as f64 * scenario.spec.duration_s.unwrap_or(1.0),
                )
            })?;
            if let Some((out, points)) = &mut series {
                // The search keeps no steps: run the chosen one again.
                let mut sink = SeriesSink::new(*points);
                simulate_policy_into(
                    scenario,
                    Box::new(found.choice.policy()),
                    options,
                    &mut sink,
                    &mut |_| {},
                )?;
                let mut s = sink.into_series();
                s.policy = name.clone();
                out.push(s);
            }
            oracle_search = Some(found);
            runs.push(run);
            continue;
        }
        let run = match &mut series {
            Some((out, points)) => {
                let mut sink = SeriesSink::new(*points);
                let run = simulate_into(scenario, name, params, options, &mut sink, &mut |t| {
                    progress(i, t)
                })?;
                out.push(sink.into_series());
                run
            }
            None => simulate(scenario, name, params, options, &mut |t| progress(i, t))?,
        };
        runs.push(run);
    }
    let alone = alone_times(scenario, baseline, base_params, options)?;
    let metrics: Vec<&RunMetrics> = runs.iter().map(|r| &r.metrics).collect();
    let ratios = comparisons(policies, &metrics, baseline, &alone).unwrap_or_default();
    let searched = oracle_search
        .as_ref()
        .and_then(|_| policies.iter().find(|(n, _)| is_search(n).unwrap_or(false)))
        .map(|(n, _)| n.as_str());
    let ratios_to_oracle = searched
        .and_then(|o| comparisons(policies, &metrics, o, &alone))
        .unwrap_or_default();
    let reports: Vec<SimReport> = runs.into_iter().map(|r| r.report).collect();
    let refs: Vec<&SimReport> = reports.iter().collect();
    let norm = normalise::normalisation(scenario, &refs);
    let work = normalise::all_work_figures(&refs, norm);
    let work_ratios = match work.get(baseline) {
        Some(base) => work
            .iter()
            .map(|(name, w)| (name.clone(), normalise::work_ratios(w, base)))
            .collect(),
        None => BTreeMap::new(),
    };
    let work_ratios_to_oracle = match searched
        .and_then(|o| work.get(o))
        .filter(|_| !ratios_to_oracle.is_empty())
    {
        Some(o) => work
            .iter()
            .map(|(name, w)| (name.clone(), normalise::work_ratios(w, o)))
            .collect(),
        None => BTreeMap::new(),
    };
    Ok(CompareReport {
        scenario: scenario.spec.name.clone(),
        baseline: baseline.to_string(),
        observe: options.observe,
        results: reports,
        ratios,
        alone_s: alone,
        normalisation: norm,
        work,
        work_ratios,
        oracle: oracle_search,
        ratios_to_oracle,
        work_ratios_to_oracle,
    })
}
/// Whether `policy` is a search over the simulator (the oracle) rather than
/// a policy that decides from snapshots.
pub fn is_search(policy: &str) -> Result<bool, EngineError> {
    Ok(ecosched_policy::find(policy)?.0.kind == ecosched_policy::PolicyKind::Search)
}
