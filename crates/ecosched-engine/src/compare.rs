//! Several policies on one scenario against a baseline (`ecosched
//! compare`): every policy's run, its ratios to the baseline (and to the
//! oracle when the oracle is compared), each figure per unit of work where
//! the scenario needs it, and what the oracle's search chose. Single runs
//! come from [`crate::experiment`]; the oracle's search from
//! [`crate::oracle`], which runs its candidates through the same.

use crate::experiment::{
    alone_times, comparisons, is_search, simulate, simulate_into, simulate_policy_into, SimOptions,
    SimRun,
};
use crate::normalise::{self, Normalisation, WorkFigures, WorkRatios};
use crate::oracle::{self, OracleSearch};
use crate::report::SimReport;
use crate::series::{Series, SeriesSink};
use crate::EngineError;
use ecosched_model::{Comparison, RunMetrics};
use ecosched_policy::Params;
use ecosched_sim::{Observe, Scenario};
use serde::Serialize;
use std::collections::BTreeMap;

/// `ecosched compare --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareReport {
    /// Scenario name.
    pub scenario: String,
    /// Baseline policy.
    pub baseline: String,
    /// What the policies were shown (see [`SimReport::observe`]).
    pub observe: Observe,
    /// One report per policy, in the order given.
    pub results: Vec<SimReport>,
    /// Per policy, ratios to the baseline.
    pub ratios: BTreeMap<String, Comparison>,
    /// Each task's run time alone on the machine under the baseline, s.
    pub alone_s: BTreeMap<String, f64>,
    /// Which unit of work the headline figures are per.
    pub normalisation: Normalisation,
    /// Per policy, its figures per unit of work.
    pub work: BTreeMap<String, WorkFigures>,
    /// Per policy, its work figures against the baseline's.
    pub work_ratios: BTreeMap<String, WorkRatios>,
    /// What the oracle's search did and chose, when `oracle` was compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oracle: Option<OracleSearch>,
    /// Per policy, ratios to the oracle (policy / oracle), when compared.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ratios_to_oracle: BTreeMap<String, Comparison>,
    /// Per policy, work figures against the oracle's, when compared.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub work_ratios_to_oracle: BTreeMap<String, WorkRatios>,
}

/// Run every policy and compare each with the baseline (ratio = policy /
/// baseline). The runs go side by side on every core ([`crate::parallel`]);
/// the report is the same whatever the thread count. `policies` pairs names with their parameters; the baseline
/// must be one of them.
pub fn compare(
    scenario: &Scenario,
    policies: &[(String, Params)],
    baseline: &str,
    options: &SimOptions,
    progress: &mut (dyn FnMut(usize, f64) + Send),
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
    progress: &mut (dyn FnMut(usize, f64) + Send),
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

/// One policy's run in a comparison: its run, its series when `points`
/// asks for one, and the oracle's search when the policy is the oracle.
type PolicyRun = (SimRun, Option<Series>, Option<OracleSearch>);

fn run_policy(
    scenario: &Scenario,
    name: &str,
    params: &Params,
    options: &SimOptions,
    points: Option<usize>,
    progress: &(dyn Fn(f64) + Sync),
) -> Result<PolicyRun, EngineError> {
    if is_search(name)? {
        let goal = ecosched_policy::oracle::SearchGoal::from_params(params)?;
        let (run, found) = oracle::search(scenario, goal, options, &mut |done, total| {
            progress(done as f64 / total.max(1) as f64 * scenario.spec.duration_s.unwrap_or(1.0))
        })?;
        let kept = match points {
            Some(points) => {
                // The search keeps no steps: run the chosen one again.
                let mut sink = SeriesSink::new(points);
                simulate_policy_into(
                    scenario,
                    Box::new(found.choice.policy()),
                    options,
                    &mut sink,
                    &mut |_| {},
                )?;
                let mut s = sink.into_series();
                s.policy = name.to_string();
                Some(s)
            }
            None => None,
        };
        return Ok((run, kept, Some(found)));
    }
    Ok(match points {
        Some(points) => {
            let mut sink = SeriesSink::new(points);
            let run = simulate_into(scenario, name, params, options, &mut sink, &mut |t| {
                progress(t)
            })?;
            (run, Some(sink.into_series()), None)
        }
        None => (
            simulate(scenario, name, params, options, &mut |t| progress(t))?,
            None,
            None,
        ),
    })
}

fn compare_impl(
    scenario: &Scenario,
    policies: &[(String, Params)],
    baseline: &str,
    options: &SimOptions,
    progress: &mut (dyn FnMut(usize, f64) + Send),
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
    // Every policy's run is independent of the others': they run side by
    // side, and come back in the order given. The progress indicator is
    // told by whichever run holds it; a run that finds it busy skips one
    // update.
    let points = series.as_ref().map(|(_, points)| *points);
    let progress = std::sync::Mutex::new(progress);
    let tell = |i: usize, t: f64| {
        if let Ok(mut progress) = progress.try_lock() {
            progress(i, t);
        }
    };
    let indexed: Vec<(usize, &(String, Params))> = policies.iter().enumerate().collect();
    let finished = crate::parallel::map(&indexed, |&(i, (name, params))| {
        run_policy(scenario, name, params, options, points, &|t| tell(i, t))
    })?;
    let mut runs = Vec::with_capacity(finished.len());
    let mut oracle_search = None;
    for (run, kept, found) in finished {
        runs.push(run);
        if let (Some((out, _)), Some(kept)) = (&mut series, kept) {
            out.push(kept);
        }
        if found.is_some() {
            oracle_search = found;
        }
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
