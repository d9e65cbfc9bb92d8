//! Repeated comparisons over several seeds (`ecosched compare --seeds N`):
//! the same scenario run N times with seeds `s, s+1, …`, each policy's
//! figures reported as a mean and a standard deviation. This is how Dhiman
//! et al. report predictability (ISLPED'10, §5.2, Table 2): migrations per
//! second and the standard deviation of run time over 10 runs. In the
//! simulator a seed changes what is random in a run (when the background
//! kernel threads wake, sleep lengths), as repeating a run on a real
//! machine does.
//!
//! Run-time standard deviation, per task name: the sample standard
//! deviation of its mean run time across seeds, divided by the mean across
//! seeds (Table 2 normalises by the best schedule's run time; the mean is
//! the figure every policy has), then averaged over the task names, in %.

use crate::compare::compare;
use crate::experiment::SimOptions;
use crate::EngineError;
use ecosched_policy::Params;
use ecosched_sim::{Observe, Scenario};
use serde::Serialize;
use std::collections::BTreeMap;

/// A mean, a sample standard deviation and the range (the report's error
/// bars span the range: with a handful of seeds it is every value seen,
/// where a confidence interval would rest on a normality assumption).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Mean over the seeds.
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for one seed.
    pub std: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Spread {
    /// Of `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let std = if values.len() > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Spread {
            mean,
            std,
            min,
            max,
        })
    }
}

/// One policy over every seed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicySpread {
    /// Policy name.
    pub policy: String,
    /// Makespan, s.
    pub makespan_s: Option<Spread>,
    /// Average power, W.
    pub avg_power_w: Option<Spread>,
    /// Energy, J.
    pub energy_j: Option<Spread>,
    /// Managed migrations per second.
    pub migrations_per_s: Option<Spread>,
    /// AW perf/W against the baseline of the same seed (Dhiman eq. 2).
    pub aw_perf_per_w: Option<Spread>,
    /// Per task name, its run time across seeds, s.
    pub task_runtime_s: BTreeMap<String, Spread>,
    /// Mean over task names of (run-time std-dev / run-time mean), %.
    pub runtime_std_pct: Option<f64>,
}

/// `ecosched compare --seeds N --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeedsReport {
    /// Scenario name.
    pub scenario: String,
    /// Baseline policy.
    pub baseline: String,
    /// What the policies were shown.
    pub observe: Observe,
    /// The seeds run, in order.
    pub seeds: Vec<u64>,
    /// One entry per policy, in the order given.
    pub policies: Vec<PolicySpread>,
}

/// Compare `policies` on `scenario` once per seed, from the options' seed
/// (or the scenario's) upwards, and summarise each policy.
pub fn compare_seeds(
    scenario: &Scenario,
    policies: &[(String, Params)],
    baseline: &str,
    options: &SimOptions,
    seeds: u32,
    progress: &mut (dyn FnMut(u64, usize, f64) + Send),
) -> Result<SeedsReport, EngineError> {
    let first = options.seed.unwrap_or(scenario.spec.seed);
    let seed_list: Vec<u64> = (0..u64::from(seeds.max(1)))
        .map(|k| first.wrapping_add(k))
        .collect();
    // The seeds' comparisons are independent: they run side by side
    // ([`crate::parallel`]) and come back in the seeds' order.
    let progress = std::sync::Mutex::new(progress);
    let reports = crate::parallel::map(&seed_list, |&seed| {
        let opts = SimOptions {
            seed: Some(seed),
            ..options.clone()
        };
        compare(scenario, policies, baseline, &opts, &mut |i, t| {
            if let Ok(mut progress) = progress.try_lock() {
                progress(seed, i, t);
            }
        })
    })?;
    let summary = policies
        .iter()
        .map(|(name, _)| {
            let runs: Vec<_> = reports
                .iter()
                .filter_map(|r| r.results.iter().find(|x| &x.policy == name))
                .collect();
            let collect = |f: &dyn Fn(&crate::report::SimReport) -> Option<f64>| {
                Spread::of(&runs.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
            };
            let aw: Vec<f64> = reports
                .iter()
                .filter_map(|r| r.ratios.get(name).and_then(|c| c.aw_perf_per_w))
                .collect();
            let mut per_task: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for r in &runs {
                for t in &r.tasks {
                    per_task
                        .entry(t.name.clone())
                        .or_default()
                        .push(t.runtime_s);
                }
            }
            let task_runtime_s: BTreeMap<String, Spread> = per_task
                .iter()
                .filter_map(|(n, v)| Spread::of(v).map(|s| (n.clone(), s)))
                .collect();
            let cvs: Vec<f64> = task_runtime_s
                .values()
                .filter(|s| s.mean > 0.0)
                .map(|s| 100.0 * s.std / s.mean)
                .collect();
            PolicySpread {
                policy: name.clone(),
                makespan_s: collect(&|r| Some(r.makespan_s)),
                avg_power_w: collect(&|r| r.avg_power_w),
                energy_j: collect(&|r| r.energy_j),
                migrations_per_s: collect(&|r| r.migrations_per_s),
                aw_perf_per_w: Spread::of(&aw),
                task_runtime_s,
                runtime_std_pct: Spread::of(&cvs).map(|s| s.mean),
            }
        })
        .collect();
    Ok(SeedsReport {
        scenario: scenario.spec.name.clone(),
        baseline: baseline.to_string(),
        observe: options.observe,
        seeds: seed_list,
        policies: summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_the_sample_standard_deviation() {
        let s = Spread::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert!((s.mean - 5.0).abs() < 1e-12);
        assert!((s.std - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        assert_eq!(Spread::of(&[3.0]).unwrap().std, 0.0);
        assert!(Spread::of(&[]).is_none());
    }
}
