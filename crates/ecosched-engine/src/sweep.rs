//! `ecosched sweep`: one policy on one scenario at every value
//! of one parameter (`KEY=A..B:STEP`), each run's figures per unit of work
//! where the scenario needs it (`normalise.rs`), so that the metric can be
//! plotted against the parameter.

use crate::experiment::{simulate, SimOptions};
use crate::normalise::{self, Normalisation, WorkFigures};
use crate::report::SimReport;
use crate::EngineError;
use ecosched_model::CounterKind;
use ecosched_policy::{Params, PolicyError};
use ecosched_sim::Scenario;
use serde::Serialize;

/// Most values one sweep runs.
pub const MAX_VALUES: usize = 1000;

/// A parsed `KEY=A..B:STEP`.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    /// The parameter.
    pub key: String,
    /// The values, in order, as the policy is given them.
    pub values: Vec<String>,
}

impl Range {
    /// Parse `KEY=A..B:STEP` (numbers; integers stay integers).
    pub fn parse(text: &str) -> Result<Range, String> {
        let bad = |why: &str| {
            format!(
                "--param {text:?}: {why} (expected KEY=A..B:STEP, e.g. freq_mhz=1600..2400:800)"
            )
        };
        let (key, range) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
        let (span, step) = range.split_once(':').ok_or_else(|| bad("no ':STEP'"))?;
        let (a, b) = span.split_once("..").ok_or_else(|| bad("no 'A..B'"))?;
        if key.is_empty() {
            return Err(bad("no key"));
        }
        let num = |s: &str, what: &str| -> Result<f64, String> {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| bad(&format!("{what} {s:?} is not a number")))
        };
        let (a_v, b_v, step_v) = (num(a, "start")?, num(b, "end")?, num(step, "step")?);
        if step_v <= 0.0 {
            return Err(bad("the step must be positive"));
        }
        if b_v < a_v {
            return Err(bad("the end is below the start"));
        }
        let n = ((b_v - a_v) / step_v + 1e-9).floor() as usize + 1;
        if n > MAX_VALUES {
            return Err(bad(&format!("{n} values; at most {MAX_VALUES}")));
        }
        let ints = [a, b, step].iter().all(|s| s.trim().parse::<i64>().is_ok());
        let values = (0..n)
            .map(|i| {
                let v = a_v + step_v * i as f64;
                if ints {
                    format!("{}", v.round() as i64)
                } else {
                    format!("{v}")
                }
            })
            .collect();
        Ok(Range {
            key: key.to_string(),
            values,
        })
    }
}

/// One value's run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPoint {
    /// The parameter's value.
    pub value: String,
    /// The run.
    pub report: SimReport,
    /// Its figures per unit of work.
    pub work: WorkFigures,
}

/// `ecosched sweep --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepReport {
    /// Scenario name.
    pub scenario: String,
    /// Policy name.
    pub policy: String,
    /// The swept parameter.
    pub key: String,
    /// Which unit of work the figures are per.
    pub normalisation: Normalisation,
    /// One per value, in order.
    pub points: Vec<SweepPoint>,
}

/// Run `policy` with `fixed` params plus each value of `range`.
pub fn sweep(
    scenario: &Scenario,
    policy: &str,
    fixed: &Params,
    range: &Range,
    options: &SimOptions,
    progress: &mut (dyn FnMut(usize, f64) + Send),
) -> Result<SweepReport, EngineError> {
    if crate::experiment::is_search(policy)? {
        return Err(EngineError::from(PolicyError::Incompatible(
            "the oracle has no parameter to sweep but its objective: compare it instead".into(),
        )));
    }
    let mut options = options.clone();
    options.extra_counters.insert(CounterKind::Instructions);
    // The points are independent runs: they go side by side
    // ([`crate::parallel`]) and come back in the range's order.
    let progress = std::sync::Mutex::new(progress);
    let indexed: Vec<(usize, &String)> = range.values.iter().enumerate().collect();
    let reports = crate::parallel::map(&indexed, |&(i, v)| {
        let params = fixed.clone().with(&range.key, v);
        let run = simulate(scenario, policy, &params, &options, &mut |t| {
            if let Ok(mut progress) = progress.try_lock() {
                progress(i, t);
            }
        })?;
        Ok(run.report)
    })?;
    let refs: Vec<&SimReport> = reports.iter().collect();
    let norm = normalise::normalisation(scenario, &refs);
    let points = range
        .values
        .iter()
        .zip(reports)
        .map(|(v, report)| SweepPoint {
            value: v.clone(),
            work: normalise::work_figures(&report, norm),
            report,
        })
        .collect();
    Ok(SweepReport {
        scenario: scenario.spec.name.clone(),
        policy: policy.to_string(),
        key: range.key.clone(),
        normalisation: norm,
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_bad_ones_say_why() {
        let r = Range::parse("freq_mhz=1600..2400:400").unwrap();
        assert_eq!(r.key, "freq_mhz");
        assert_eq!(r.values, ["1600", "2000", "2400"]);
        let r = Range::parse("x=0.5..1:0.25").unwrap();
        assert_eq!(r.values, ["0.5", "0.75", "1"]);
        for (bad, why) in [
            ("x=1..2", "STEP"),
            ("x=2..1:1", "below the start"),
            ("x=1..2:0", "positive"),
            ("x=a..2:1", "not a number"),
            ("x=0..1e6:1", "at most"),
            ("=1..2:1", "no key"),
        ] {
            let e = Range::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
