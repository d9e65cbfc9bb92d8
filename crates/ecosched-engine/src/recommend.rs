//! Which policy to use for a workload on a machine (`ecosched recommend`,
//! `docs/operators/recommend.md`): every candidate (each local policy the
//! suite runs, plus a few values of a policy's one obvious knob) simulated
//! on the workload over several seeds under what Linux could read, each
//! figure against the default an operator has anyway — the better of
//! `performance` and `schedutil`, as [`crate::suite`] defines it — with
//! its median and its range across the seeds.
//!
//! A candidate is recommended only when its saving holds on every seed:
//! at least [`MIN_SAVING`] less energy per unit of work on the worst seed,
//! at no more than [`SLOWDOWN`] lower throughput on the worst seed. Of
//! those, the lowest median energy wins. When none qualifies the answer is
//! to run fast, and the reason is the measured one: what the closest
//! candidates saved and what they cost. When the machine is a real host's,
//! a candidate the host cannot serve (no hardware counters, no cpufreq) is
//! refused before it is simulated, as `ecosched run` would refuse it there.

use crate::experiment::{is_search, seed_shift, simulate, with_seed_shift, SimOptions, SimRun};
use crate::normalise::{self, Normalisation, WorkFigures};
use crate::suite::{self, BASELINES, MIN_SAVING, SLOWDOWN};
use crate::EngineError;
use ecosched_model::Capabilities;
use ecosched_policy::{Params, PolicyError};
use ecosched_sim::Scenario;
use rayon::prelude::*;
use serde::Serialize;

/// Parameter values tried beside a policy's defaults, where the policy
/// has one knob that trades speed for energy: hilo's spare CPUs in H, its
/// green set for memory-bound tasks and its hold on the CPUs outside H
/// (the class's workload is all the machine runs), PAM's energy goal.
const KNOBS: &[(&str, &str)] = &[
    ("hilo", "spare=2"),
    ("hilo", "green=true"),
    ("hilo", "own_machine=true"),
    ("pam", "goal=energy"),
];

/// Most seeds a recommendation runs: each seed is a full set of runs.
pub const MAX_SEEDS: u32 = 20;

/// One policy with its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// Policy name.
    pub policy: String,
    /// `key=value` parameters beyond the policy's defaults.
    pub params: Vec<String>,
}

impl Candidate {
    /// `policy key=value …`, as the table shows it.
    pub fn label(&self) -> String {
        std::iter::once(self.policy.as_str())
            .chain(self.params.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Every candidate: the suite's policies at their defaults, then each
/// knob's value after its policy.
pub fn candidates() -> Vec<Candidate> {
    let mut out = Vec::new();
    for name in suite::policies() {
        if is_search(name).unwrap_or(true) {
            continue;
        }
        out.push(Candidate {
            policy: name.to_string(),
            params: Vec::new(),
        });
        for (_, value) in KNOBS.iter().filter(|(p, _)| *p == name) {
            out.push(Candidate {
                policy: name.to_string(),
                params: vec![value.to_string()],
            });
        }
    }
    out
}

/// The median and the range of a figure across seeds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Range {
    /// Median (the mean of the middle two for an even count).
    pub median: f64,
    /// Lowest.
    pub min: f64,
    /// Highest.
    pub max: f64,
}

impl Range {
    /// Of `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Range> {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let (first, last) = (*v.first()?, *v.last()?);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Range {
            median,
            min: first,
            max: last,
        })
    }
}

/// One candidate's figures against the default, across the seeds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateFigure {
    /// The candidate.
    #[serde(flatten)]
    pub candidate: Candidate,
    /// Its energy per unit of work / the default's, per seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy: Option<Range>,
    /// Its throughput / the default's, per seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Range>,
    /// Whether it saves at least [`MIN_SAVING`] within [`SLOWDOWN`] on
    /// every seed.
    pub qualifies: bool,
    /// Why it did not run (its refusal, given before starting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// The scenario simulated.
    pub scenario: String,
    /// The machine it ran on.
    pub machine: String,
    /// The seeds, in order.
    pub seeds: Vec<u64>,
    /// Which unit of work the figures are per.
    pub normalisation: Normalisation,
    /// The default on each seed: the better of `performance` and
    /// `schedutil` (lower energy per unit of work).
    pub default: Vec<String>,
    /// The candidate to use; `None` when nothing beats running fast.
    pub recommended: Option<CandidateFigure>,
    /// Why nothing beats running fast, measured; `None` when a candidate
    /// is recommended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_fast_because: Option<String>,
    /// Every candidate, in catalogue order.
    pub candidates: Vec<CandidateFigure>,
}

impl Recommendation {
    /// The default's name: one policy, or which one on which seeds when
    /// the seeds differ.
    pub fn default_name(&self) -> String {
        let mut names: Vec<&str> = self.default.iter().map(String::as_str).collect();
        names.sort_unstable();
        names.dedup();
        if let [one] = names.as_slice() {
            return one.to_string();
        }
        let per_seed: Vec<String> = names
            .iter()
            .map(|n| {
                let seeds: Vec<String> = self
                    .seeds
                    .iter()
                    .zip(&self.default)
                    .filter(|(_, d)| d == n)
                    .map(|(s, _)| s.to_string())
                    .collect();
                format!("{n} on seed {}", seeds.join(", "))
            })
            .collect();
        format!("{} ({})", names.join(" or "), per_seed.join("; "))
    }
}

/// What the real host lets a policy use, when the machine simulated is a
/// host's: a candidate it cannot serve is refused before simulating, as
/// `ecosched run` would refuse it there, though the simulated machine
/// (which declares the CPU's PMU and P-states) could serve it.
#[derive(Debug, Clone, PartialEq)]
pub struct HostLimits {
    /// What the host provides.
    pub capabilities: Capabilities,
    /// Why it has no hardware counters, when it has none (perf's error).
    pub no_counters_because: Option<String>,
    /// Why it has no frequency control, when it has none.
    pub no_frequency_because: Option<String>,
}

impl HostLimits {
    /// Why the host refuses `policy` with `params`, if it does.
    fn refuses(&self, policy: &str, params: &Params) -> Result<Option<String>, EngineError> {
        let needs = ecosched_policy::build(policy, params)?.requirements();
        let missing = needs.missing(&self.capabilities);
        if missing.is_empty() {
            return Ok(None);
        }
        let mut why = format!("this host lacks {}", missing.join("; "));
        let counters = !needs.counters.is_subset(&self.capabilities.counters);
        let frequency = needs.frequency && !self.capabilities.frequency;
        for (lacks, because) in [
            (counters, &self.no_counters_because),
            (frequency, &self.no_frequency_because),
        ] {
            if let (true, Some(b)) = (lacks, because) {
                why.push_str(&format!(" ({b})"));
            }
        }
        Ok(Some(why))
    }
}

/// Whether an error is a policy's refusal to run on this machine (given
/// before anything starts), as opposed to a failure.
fn refusal(e: &EngineError) -> Option<String> {
    use ecosched_control::ControlError;
    match e {
        EngineError::Control(ControlError::Incapable { missing, .. }) => Some(missing.join("; ")),
        EngineError::Control(ControlError::Policy(PolicyError::Incompatible(m))) => Some(m.clone()),
        _ => None,
    }
}

/// Simulate every candidate on `scenario` for `seeds` seeds (the
/// scenario's seed and the next ones) and pick one. `progress(label)`
/// before each candidate's runs.
pub fn recommend(
    scenario: &Scenario,
    seeds: u32,
    options: &SimOptions,
    host: Option<&HostLimits>,
    progress: &mut dyn FnMut(&str),
) -> Result<Recommendation, EngineError> {
    let seeds: Vec<u64> = (0..u64::from(seeds.clamp(1, MAX_SEEDS)))
        .map(|i| options.seed.unwrap_or(scenario.spec.seed).wrapping_add(i))
        .collect();
    let list = candidates();
    let mut params = Vec::with_capacity(list.len());
    let mut host_refused = Vec::with_capacity(list.len());
    for c in &list {
        let p = Params::parse(c.params.iter().map(String::as_str))?;
        // The baselines stand for the machine as it is run (on a host
        // without cpufreq its one P-state), so they are simulated as the
        // reference even where the host refuses them as policies.
        let reference = BASELINES.contains(&c.policy.as_str()) && c.params.is_empty();
        host_refused.push(match host {
            Some(h) if !reference => h.refuses(&c.policy, &p)?,
            _ => None,
        });
        params.push(p);
        progress(&c.label());
    }
    let jobs: Vec<(usize, usize)> = (0..list.len())
        .filter(|&c| host_refused[c].is_none())
        .flat_map(|c| (0..seeds.len()).map(move |s| (c, s)))
        .collect();
    // Independent simulations: one per core, each seeded as this thread.
    let shift = seed_shift();
    let outcomes: Vec<Result<SimRun, EngineError>> = jobs
        .par_iter()
        .map(|&(c, s)| {
            let opts = SimOptions {
                seed: Some(seeds[s]),
                ..options.clone()
            };
            with_seed_shift(shift, || {
                simulate(scenario, &list[c].policy, &params[c], &opts, &mut |_| {})
            })
        })
        .collect();
    // runs[candidate][seed], or the candidate's refusal.
    let mut runs: Vec<Result<Vec<SimRun>, String>> = host_refused
        .into_iter()
        .map(|r| r.map_or(Ok(Vec::new()), Err))
        .collect();
    for (&(c, _), outcome) in jobs.iter().zip(outcomes) {
        match outcome {
            Ok(run) => {
                if let Ok(v) = &mut runs[c] {
                    v.push(run);
                }
            }
            Err(e) => match refusal(&e) {
                Some(why) => runs[c] = Err(why),
                None => return Err(e),
            },
        }
    }
    let reports: Vec<&crate::report::SimReport> = runs
        .iter()
        .flatten()
        .flat_map(|v| v.iter().map(|r| &r.report))
        .collect();
    let norm = normalise::normalisation(scenario, &reports);
    let figures: Vec<Option<Vec<WorkFigures>>> = runs
        .iter()
        .map(|r| {
            r.as_ref().ok().map(|v| {
                v.iter()
                    .map(|run| normalise::work_figures(&run.report, norm))
                    .collect()
            })
        })
        .collect();
    let energy = |w: &WorkFigures| w.energy_per_unit_j.unwrap_or(f64::INFINITY);
    let throughput = |w: &WorkFigures| w.throughput_per_s.unwrap_or(0.0);
    let baseline = |name: &str| {
        list.iter()
            .position(|c| c.policy == name && c.params.is_empty())
            .and_then(|i| figures[i].as_ref())
    };
    // The default of each seed: its better baseline.
    let mut default = Vec::with_capacity(seeds.len());
    let mut reference = Vec::with_capacity(seeds.len());
    for s in 0..seeds.len() {
        let best = BASELINES
            .iter()
            .filter_map(|b| baseline(b).map(|f| (*b, f[s].clone())))
            .min_by(|a, b| energy(&a.1).total_cmp(&energy(&b.1)))
            .ok_or_else(|| {
                EngineError::from(PolicyError::Incompatible(format!(
                    "recommend: neither performance nor schedutil ran on {}",
                    scenario.spec.name
                )))
            })?;
        default.push(best.0.to_string());
        reference.push(best.1);
    }
    let table: Vec<CandidateFigure> = list
        .iter()
        .zip(&figures)
        .zip(&runs)
        .map(|((c, f), r)| {
            let ratios = |pick: &dyn Fn(&WorkFigures) -> f64| {
                f.as_ref().and_then(|f| {
                    Range::of(
                        &f.iter()
                            .zip(&reference)
                            .map(|(w, r)| pick(w) / pick(r))
                            .collect::<Vec<_>>(),
                    )
                })
            };
            let (e, t) = (ratios(&energy), ratios(&throughput));
            let is_baseline = c.params.is_empty() && BASELINES.contains(&c.policy.as_str());
            CandidateFigure {
                candidate: c.clone(),
                energy: e,
                throughput: t,
                qualifies: !is_baseline && saves(e, t),
                refused: r.as_ref().err().cloned(),
            }
        })
        .collect();
    let recommended = table
        .iter()
        .filter(|c| c.qualifies)
        .min_by(|a, b| median(a.energy).total_cmp(&median(b.energy)))
        .cloned();
    let run_fast_because = match recommended {
        Some(_) => None,
        None => Some(why_run_fast(&table, scenario)),
    };
    Ok(Recommendation {
        scenario: scenario.spec.name.clone(),
        machine: scenario.machine.spec.name.clone(),
        seeds,
        normalisation: norm,
        default,
        recommended,
        run_fast_because,
        candidates: table,
    })
}

fn median(r: Option<Range>) -> f64 {
    r.map_or(f64::INFINITY, |r| r.median)
}

/// Whether a candidate saves on every seed within the slowdown.
fn saves(energy: Option<Range>, throughput: Option<Range>) -> bool {
    match (energy, throughput) {
        (Some(e), Some(t)) => e.max <= 1.0 - MIN_SAVING && t.min >= 1.0 - SLOWDOWN,
        _ => false,
    }
}

/// The candidate of `set` with the lowest median energy per unit of work.
fn lowest<'a>(set: impl Iterator<Item = &'a CandidateFigure>) -> Option<&'a CandidateFigure> {
    set.min_by(|a, b| median(a.energy).total_cmp(&median(b.energy)))
}

/// What the closest candidates measured, when none qualifies.
fn why_run_fast(table: &[CandidateFigure], scenario: &Scenario) -> String {
    let ran: Vec<&CandidateFigure> = table
        .iter()
        .filter(|c| {
            c.energy.is_some()
                && !(c.candidate.params.is_empty()
                    && BASELINES.contains(&c.candidate.policy.as_str()))
        })
        .collect();
    let Some(frugal) = lowest(ran.iter().copied()) else {
        return "no policy besides the baselines can run on this machine (each one's refusal is in the table)".into();
    };
    let fast = lowest(
        ran.iter()
            .copied()
            .filter(|c| c.throughput.is_some_and(|t| t.min >= 1.0 - SLOWDOWN)),
    );
    let pct = |x: f64| (1.0 - x) * 100.0;
    let mut why = match fast {
        Some(c) => {
            let (e, label) = (c.energy.map_or(1.0, |e| e.median), c.candidate.label());
            let worst = c.energy.map_or(1.0, |e| e.max);
            if e <= 1.0 - MIN_SAVING {
                format!(
                    "the best candidate within {:.0} % of the default's throughput, {label}, saves {:.1} % in the median but {:.1} % on its worst seed: a saving that does not reach {:.0} % on every seed is within what a seed changes",
                    SLOWDOWN * 100.0,
                    pct(e),
                    pct(worst),
                    MIN_SAVING * 100.0
                )
            } else {
                format!(
                    "the best candidate within {:.0} % of the default's throughput, {label}, uses ×{e:.3} the default's energy per unit of work: no saving of {:.0} % or more",
                    SLOWDOWN * 100.0,
                    MIN_SAVING * 100.0
                )
            }
        }
        None => format!(
            "no candidate stays within {:.0} % of the default's throughput on every seed",
            SLOWDOWN * 100.0
        ),
    };
    if fast.is_none_or(|f| f.candidate != frugal.candidate) && median(frugal.energy) < 1.0 {
        let t = frugal.throughput.map_or(0.0, |t| t.min);
        why.push_str(&format!(
            "; {} saves {:.1} % in the median but costs {:.1} % throughput on its worst seed, more than the {:.0} % allowed",
            frugal.candidate.label(),
            pct(median(frugal.energy)),
            pct(t),
            SLOWDOWN * 100.0
        ));
    }
    if scenario.machine.spec.frequency.pstates.len() < 2 {
        why.push_str(
            "; this machine has one P-state, so a policy can only place work, not trade its speed for energy",
        );
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_the_suites_policies_and_the_knobs() {
        let labels: Vec<String> = candidates().iter().map(Candidate::label).collect();
        for p in suite::policies() {
            if !is_search(p).unwrap_or(true) {
                assert!(labels.iter().any(|l| l == p), "{p}: {labels:?}");
            }
        }
        assert!(!labels.iter().any(|l| l == "oracle"));
        for (p, v) in KNOBS {
            assert!(labels.contains(&format!("{p} {v}")), "{labels:?}");
        }
        for c in candidates() {
            let params = Params::parse(c.params.iter().map(String::as_str)).unwrap();
            ecosched_policy::build(&c.policy, &params).unwrap();
        }
    }

    #[test]
    fn a_host_without_counters_or_cpufreq_refuses_what_needs_them() {
        let host = HostLimits {
            capabilities: Capabilities {
                counters: [ecosched_model::CounterKind::OnCpuTime]
                    .into_iter()
                    .collect(),
                power: None,
                affinity: true,
                frequency: false,
                gang: true,
            },
            no_counters_because: Some("no PMU".into()),
            no_frequency_because: Some("no cpufreq".into()),
        };
        let none = Params::default();
        // A governor needs cpufreq as a policy (recommend still simulates
        // it as the reference).
        assert!(host.refuses("performance", &none).unwrap().is_some());
        assert_eq!(host.refuses("hilo", &none).unwrap(), None);
        let wca = host.refuses("wca", &none).unwrap().unwrap();
        assert!(
            wca.starts_with("this host lacks counters instructions retired")
                && wca.ends_with("(no PMU)"),
            "{wca}"
        );
        let green = Params::parse(["green=true"]).unwrap();
        assert!(host.refuses("hilo", &green).unwrap().is_some());
        let patel = host.refuses("patel1", &none).unwrap().unwrap();
        assert!(patel.contains("(no PMU) (no cpufreq)"), "{patel}");
    }

    #[test]
    fn ranges_are_median_and_extremes() {
        let r = Range::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((r.median, r.min, r.max), (2.0, 1.0, 3.0));
        assert_eq!(Range::of(&[4.0, 1.0]).unwrap().median, 2.5);
        assert!(Range::of(&[]).is_none());
    }

    #[test]
    fn a_saving_counts_only_on_every_seed_and_within_the_slowdown() {
        let r = |min, max| {
            Some(Range {
                median: (min + max) / 2.0,
                min,
                max,
            })
        };
        assert!(saves(r(0.95, 0.98), r(0.99, 1.02)));
        assert!(!saves(r(0.95, 0.995), r(0.99, 1.02)));
        assert!(!saves(r(0.95, 0.98), r(0.96, 1.02)));
        assert!(!saves(None, None));
    }
}
