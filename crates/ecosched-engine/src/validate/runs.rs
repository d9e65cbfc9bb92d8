//! What several papers' rows share: one simulated run of a built-in
//! scenario reduced to its metrics, and the means over tasks that the
//! papers report.

use crate::experiment::{simulate, SimOptions};
use crate::EngineError;
use ecosched_model::{RunMetrics, TaskMetrics};
use ecosched_policy::Params;
use ecosched_sim::{Observe, Scenario};

/// `policy` with `params` on the built-in `scenario`, its metrics only.
pub(super) fn run(
    o: Observe,
    scenario: &str,
    policy: &str,
    params: Params,
) -> Result<RunMetrics, EngineError> {
    let s = Scenario::load(scenario)?;
    Ok(simulate(&s, policy, &params, &SimOptions::observing(o), &mut |_| {})?.metrics)
}

/// `policy` on `scenario` with the application declaring `hint` as its
/// parallelism (`None`: no hint, the policy measures it).
pub(super) fn run_hinted(
    o: Observe,
    scenario: &str,
    policy: &str,
    params: Params,
    hint: Option<u32>,
) -> Result<RunMetrics, EngineError> {
    let mut s = Scenario::load(scenario)?;
    s.spec.parallelism_hint = hint;
    Ok(simulate(&s, policy, &params, &SimOptions::observing(o), &mut |_| {})?.metrics)
}

/// `scenario` with every core held at `mhz` (`fixed`), as the papers
/// compare one clock against another.
pub(super) fn at_mhz(o: Observe, scenario: &str, mhz: u64) -> Result<RunMetrics, EngineError> {
    run(
        o,
        scenario,
        "fixed",
        Params::default().with("freq_mhz", mhz),
    )
}

/// Mean of one per-task figure over the tasks whose name starts with `prefix`.
fn mean_of(m: &RunMetrics, prefix: &str, figure: fn(&TaskMetrics) -> Option<f64>) -> f64 {
    mean(
        m.tasks
            .iter()
            .filter(|t| t.name.starts_with(prefix))
            .filter_map(figure),
    )
}

/// Mean run time, s, of the tasks whose name starts with `prefix`.
pub(super) fn mean_runtime(m: &RunMetrics, prefix: &str) -> f64 {
    mean_of(m, prefix, |t| Some(t.runtime_s))
}

/// Mean attributed energy, J, of the tasks whose name starts with `prefix`.
pub(super) fn mean_energy(m: &RunMetrics, prefix: &str) -> f64 {
    mean_of(m, prefix, |t| t.energy_j)
}

/// Mean EDP, J·s, of the tasks whose name starts with `prefix`.
pub(super) fn mean_edp(m: &RunMetrics, prefix: &str) -> f64 {
    mean_of(m, prefix, |t| t.edp_js)
}

/// The mean of `v`; NaN when it is empty, so that a row with nothing to
/// average fails rather than passes.
pub(super) fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        s / n as f64
    }
}

/// An ordering row's figure: 1 when it holds, 0 when it does not.
pub(super) fn holds(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}
