//! What `ab` found: every run, the ratios policy/baseline with their
//! intervals, and the notes a reader needs; and the cells of the runs and
//! ratios tables that the terminal and the HTML report both show.

use super::runner::RunRecord;
use super::schedule::Arm;
use super::stats;
use crate::table::{num, opt};
use serde::Serialize;

/// `ab --json`'s object (see docs/operators/ab.md).
#[derive(Debug, Clone, Serialize)]
pub struct AbResult {
    /// The command, as given after `--`.
    pub command: Vec<String>,
    /// The policy under test.
    pub policy: String,
    /// The reference policy.
    pub baseline: String,
    /// Pairs asked for.
    pub pairs: usize,
    /// Pairs whose two runs both count.
    pub pairs_used: usize,
    /// The bootstrap's seed and resamples.
    pub seed: u64,
    /// Resamples per interval.
    pub resamples: usize,
    /// The power meter, in words.
    pub meter: String,
    /// Whether energy is measured, and so compared.
    pub energy_measured: bool,
    /// The warm-up runs, one under each arm (not counted).
    pub warm_ups: Vec<RunRecord>,
    /// Every counted run, in run order.
    pub runs: Vec<RunRecord>,
    /// One ratio per figure compared.
    pub ratios: Vec<Ratio>,
    /// What the reader should know: runs left out, energy not compared.
    pub notes: Vec<String>,
}

/// One figure's ratio policy/baseline.
#[derive(Debug, Clone, Serialize)]
pub struct Ratio {
    /// `energy_j`, `wall_s`, `cpu_s` or `edp_js`.
    pub metric: &'static str,
    /// Mean over the used pairs' baseline runs.
    pub baseline_mean: Option<f64>,
    /// Mean over the used pairs' policy runs.
    pub policy_mean: Option<f64>,
    /// The ratio and its interval, when there is one.
    pub interval: Option<stats::Interval>,
    /// `lower`, `higher`, `no significant difference`, or why there is
    /// no interval.
    pub verdict: String,
}

/// The figures compared: JSON key, label, how to read it from a run.
type Metric = (&'static str, &'static str, fn(&RunRecord) -> Option<f64>);

pub const METRICS: [Metric; 4] = [
    ("energy_j", "energy (J)", |r| r.energy.energy_j),
    ("wall_s", "wall time (s)", |r| Some(r.wall_s)),
    ("cpu_s", "CPU time (s)", |r| r.cpu_s),
    ("edp_js", "EDP (J·s)", RunRecord::edp),
];

/// Why a counted run is left out, if it is: the warm-up succeeded, so any
/// other status is a change; a busy machine measures other work too.
pub fn exclusion(r: &RunRecord) -> Option<String> {
    if r.exit_code != Some(0) {
        Some(format!("exit status {}, the warm-ups' was 0", r.status()))
    } else if !r.before.settled {
        Some(format!(
            "the machine was {:.0} % busy before it (waited {:.0} s)",
            r.before.busy * 100.0,
            r.before.waited_s
        ))
    } else {
        None
    }
}

/// The used pairs as (baseline run, policy run): both runs counted.
fn used_pairs(runs: &[RunRecord]) -> Vec<(&RunRecord, &RunRecord)> {
    let mut pairs = Vec::new();
    for chunk in runs.chunks(2) {
        let [a, b] = chunk else { continue };
        let (base, pol) = if a.arm == Arm::Baseline.name() {
            (a, b)
        } else {
            (b, a)
        };
        if base.excluded.is_none() && pol.excluded.is_none() {
            pairs.push((base, pol));
        }
    }
    pairs
}

/// The ratios, and notes on the pairs left out.
pub fn analyse(result: &mut AbResult) {
    let dropped: Vec<String> = result
        .runs
        .chunks(2)
        .filter(|c| c.iter().any(|r| r.excluded.is_some()))
        .filter_map(|c| c[0].pair.map(|p| p.to_string()))
        .collect();
    if !dropped.is_empty() {
        result.notes.push(format!(
            "left out of the ratios: pair(s) {} (a run failed, changed its exit status or started on a busy machine; see the runs)",
            dropped.join(", ")
        ));
    }
    let pairs = used_pairs(&result.runs);
    result.pairs_used = pairs.len();
    let mut ratios = Vec::new();
    for (key, _, get) in METRICS {
        if matches!(key, "energy_j" | "edp_js") && !result.energy_measured {
            continue;
        }
        let values: Option<Vec<(f64, f64)>> = pairs
            .iter()
            .map(|(b, p)| Some((get(b)?, get(p)?)))
            .collect();
        let Some(values) = values.filter(|v| !v.is_empty()) else {
            let verdict = if pairs.is_empty() {
                "no interval: no pair counts"
            } else {
                "no interval: not measured in every pair"
            };
            ratios.push(Ratio {
                metric: key,
                baseline_mean: None,
                policy_mean: None,
                interval: None,
                verdict: verdict.into(),
            });
            continue;
        };
        let n = values.len() as f64;
        let interval = stats::ratio_interval(&values, result.seed);
        let verdict = match &interval {
            Ok(i) if !i.significant() => "no significant difference".to_string(),
            Ok(i) if i.ratio < 1.0 => "lower under the policy".to_string(),
            Ok(_) => "higher under the policy".to_string(),
            Err(why) => format!("no interval: {why}"),
        };
        ratios.push(Ratio {
            metric: key,
            baseline_mean: Some(values.iter().map(|v| v.0).sum::<f64>() / n),
            policy_mean: Some(values.iter().map(|v| v.1).sum::<f64>() / n),
            interval: interval.ok(),
            verdict,
        });
    }
    result.ratios = ratios;
}

/// The label of a metric's JSON key.
pub fn label(key: &str) -> &'static str {
    METRICS.iter().find(|m| m.0 == key).map_or("?", |m| m.1)
}

/// The columns of the runs table.
pub const RUN_HEADER: [&str; 11] = [
    "run",
    "arm",
    "pair",
    "policy",
    "exit",
    "wall (s)",
    "CPU (s)",
    "energy (J)",
    "EDP (J·s)",
    "busy before (%)",
    "counted",
];

/// The runs' cells (the warm-up first); the last says whether it counts.
pub fn run_cells(result: &AbResult) -> Vec<[String; 11]> {
    result
        .warm_ups
        .iter()
        .chain(&result.runs)
        .map(|r| {
            let counted = match (&r.excluded, r.pair) {
                (_, None) => "no (warm-up)".to_string(),
                (Some(why), _) => format!("no: {why}"),
                (None, _) => "yes".to_string(),
            };
            [
                r.run.to_string(),
                r.arm.to_string(),
                r.pair.map_or("-".into(), |p| p.to_string()),
                r.policy.clone(),
                r.status(),
                num(r.wall_s),
                opt(r.cpu_s),
                opt(r.energy.energy_j),
                opt(r.edp()),
                format!("{:.0}", r.before.busy * 100.0),
                counted,
            ]
        })
        .collect()
}

/// The columns of the ratios table.
pub const RATIO_HEADER: [&str; 6] = [
    "figure",
    "baseline mean",
    "policy mean",
    "ratio",
    "95 % interval",
    "verdict",
];

/// The ratios' cells.
pub fn ratio_cells(result: &AbResult) -> Vec<[String; 6]> {
    result
        .ratios
        .iter()
        .map(|r| {
            let (ratio, ci) = match &r.interval {
                Some(i) => (
                    format!("{:.3}", i.ratio),
                    format!("{:.3} – {:.3}", i.low, i.high),
                ),
                None => ("-".into(), "-".into()),
            };
            [
                label(r.metric).to_string(),
                opt(r.baseline_mean),
                opt(r.policy_mean),
                ratio,
                ci,
                r.verdict.clone(),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ab::meter::RunEnergy;
    use crate::ab::schedule::Settle;

    fn run(n: usize, arm: Arm, wall_s: f64, exit: i32, settled: bool) -> RunRecord {
        let mut r = RunRecord {
            run: n,
            arm: arm.name(),
            pair: Some(n.div_ceil(2)),
            policy: arm.name().into(),
            exit_code: Some(exit),
            exit_signal: None,
            wall_s,
            cpu_s: Some(wall_s / 2.0),
            energy: RunEnergy::default(),
            before: Settle {
                settled,
                busy: if settled { 0.02 } else { 0.5 },
                waited_s: 0.5,
            },
            excluded: None,
        };
        r.excluded = exclusion(&r);
        r
    }

    /// Four pairs in ABBA order; pair 2's policy run fails and pair 3's
    /// baseline starts on a busy machine: pairs 1 and 4 are compared.
    #[test]
    fn a_failed_or_unsettled_run_takes_its_pair_out() {
        use Arm::{Baseline as B, Policy as P};
        let runs = vec![
            run(1, B, 10.0, 0, true),
            run(2, P, 8.0, 0, true),
            run(3, P, 1.0, 2, true),
            run(4, B, 10.0, 0, true),
            run(5, B, 30.0, 0, false),
            run(6, P, 8.0, 0, true),
            run(7, P, 9.0, 0, true),
            run(8, B, 10.0, 0, true),
        ];
        assert_eq!(
            runs[2].excluded.as_deref(),
            Some("exit status 2, the warm-ups' was 0")
        );
        assert!(runs[4].excluded.as_deref().unwrap().contains("50 % busy"));
        let mut result = AbResult {
            command: vec!["x".into()],
            policy: "p".into(),
            baseline: "b".into(),
            pairs: 4,
            pairs_used: 0,
            seed: 1,
            resamples: stats::RESAMPLES,
            meter: "estimated".into(),
            energy_measured: false,
            warm_ups: vec![run(0, P, 9.0, 0, true)],
            runs,
            ratios: Vec::new(),
            notes: Vec::new(),
        };
        analyse(&mut result);
        assert_eq!(result.pairs_used, 2);
        assert!(
            result.notes[0].contains("pair(s) 2, 3"),
            "{:?}",
            result.notes
        );
        // No measured meter: time and CPU only.
        let metrics: Vec<&str> = result.ratios.iter().map(|r| r.metric).collect();
        assert_eq!(metrics, ["wall_s", "cpu_s"]);
        let wall = &result.ratios[0];
        assert_eq!(wall.baseline_mean, Some(10.0));
        assert_eq!(wall.policy_mean, Some(8.5));
        let i = wall.interval.unwrap();
        assert_eq!((i.low, i.high), (0.8, 0.9));
        assert_eq!(wall.verdict, "lower under the policy");
    }
}
