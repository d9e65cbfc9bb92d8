//! `ecosched ab`: the same command run repeatedly under a baseline and a
//! policy on this machine, and what the policy changed, with error bars.
//!
//! One warm-up run (under the policy, so that a policy this machine cannot
//! run is refused before anything counts; not counted), then `--runs`
//! pairs in ABBA order ([`schedule`]), each run after the machine is seen
//! idle and made as `ecosched run` makes it ([`runner`]), its energy read
//! from the power meter around it ([`meter`]). The ratios policy/baseline
//! of energy, wall time, CPU time and EDP come with bootstrap 95 %
//! intervals paired by pair ([`stats`]). A run that fails, changes its
//! exit status against the warm-up's, or starts on a busy machine is
//! shown and left out of the ratios with its pair. Without a measured
//! meter, energy is not compared: an estimate from utilisation would
//! only restate the CPU time.

mod meter;
mod report;
mod runner;
mod schedule;
mod stats;

use crate::cli::AbArgs;
use crate::outcome::{usage, Outcome};
use crate::table::{num, opt, Align, Table};
use anyhow::{Context, Result};
use ecosched_linux::FsRoot;
use meter::MeterInfo;
use runner::{RunRecord, Slot};
use schedule::Arm;
use serde::Serialize;
use std::time::Duration;

/// Most pairs `ab` makes: its records stay small, and more pairs than
/// this narrow an interval by little.
const MAX_PAIRS: usize = 200;

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
    /// The warm-up run (not counted).
    pub warm_up: RunRecord,
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

const METRICS: [Metric; 4] = [
    ("energy_j", "energy (J)", |r| r.energy.energy_j),
    ("wall_s", "wall time (s)", |r| Some(r.wall_s)),
    ("cpu_s", "CPU time (s)", |r| r.cpu_s),
    ("edp_js", "EDP (J·s)", RunRecord::edp),
];

/// `ecosched ab`.
pub fn ab(args: &AbArgs) -> Result<Outcome> {
    if !(2..=MAX_PAIRS).contains(&args.runs) {
        return Err(usage(format!(
            "--runs {}: give 2 to {MAX_PAIRS} pairs (an interval needs at least 2)",
            args.runs
        )));
    }
    if !(0.0..=100.0).contains(&args.idle_below) {
        return Err(usage(format!(
            "--idle-below {}: a share of the machine, 0 to 100 (%)",
            args.idle_below
        )));
    }
    if let Some(path) = &args.report {
        crate::report::check_writable(path)?;
    }
    let topology = ecosched_linux::topology::discover(&FsRoot::live())
        .context("reading this machine's topology")?
        .topology;
    let meter_root = match &args.meter_root {
        Some(dir) if !dir.is_dir() => {
            return Err(usage(format!(
                "--meter-root {}: not a directory",
                dir.display()
            )))
        }
        Some(dir) => FsRoot::recorded(dir),
        None => FsRoot::live(),
    };
    let meter = MeterInfo::open(meter_root, topology)?;
    let idle = args.idle_below / 100.0;
    let wait = Duration::from_secs_f64(args.idle_wait.max(0.0));
    let settle = || schedule::wait_for_idle(idle, wait).context("reading /proc/stat");

    let warm_slot = Slot {
        run: 0,
        arm: "warm-up",
        pair: None,
        policy: &args.policy,
    };
    eprintln!("ecosched ab: warm-up run under {}", args.policy);
    let warm_up = runner::run_once(args, &warm_slot, &meter, settle()?)?;
    let mut result = AbResult {
        command: args.command.clone(),
        policy: args.policy.clone(),
        baseline: args.baseline.clone(),
        pairs: args.runs,
        pairs_used: 0,
        seed: args.seed,
        resamples: stats::RESAMPLES,
        meter: meter.description.clone(),
        energy_measured: meter.measured(),
        warm_up,
        runs: Vec::new(),
        ratios: Vec::new(),
        notes: Vec::new(),
    };
    if !meter.measured() {
        result.notes.push(
            "energy cannot be compared here: no meter measures it (see `power`); \
             an estimate is not a measurement, so only time and CPU are compared"
                .to_string(),
        );
    }
    if result.warm_up.exit_code != Some(0) {
        result.notes.push(format!(
            "the warm-up run failed (exit status {}); nothing was compared",
            result.warm_up.status()
        ));
        return finish(args, result);
    }
    for (pair, arms) in schedule::abba(args.runs).into_iter().enumerate() {
        for arm in arms {
            let slot = Slot {
                run: result.runs.len() + 1,
                arm: arm.name(),
                pair: Some(pair + 1),
                policy: match arm {
                    Arm::Baseline => &args.baseline,
                    Arm::Policy => &args.policy,
                },
            };
            let before = settle()?;
            eprintln!(
                "ecosched ab: run {} of {} (pair {}, {} under {})",
                slot.run,
                2 * args.runs,
                pair + 1,
                slot.arm,
                slot.policy
            );
            let mut record = runner::run_once(args, &slot, &meter, before)?;
            record.excluded = exclusion(&record);
            result.runs.push(record);
        }
    }
    analyse(&mut result);
    finish(args, result)
}

/// Why a counted run is left out, if it is: the warm-up succeeded, so any
/// other status is a change; a busy machine measures other work too.
fn exclusion(r: &RunRecord) -> Option<String> {
    if r.exit_code != Some(0) {
        Some(format!("exit status {}, the warm-up's was 0", r.status()))
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
fn analyse(result: &mut AbResult) {
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

/// Render, write the report, and say whether anything was compared.
fn finish(args: &AbArgs, result: AbResult) -> Result<Outcome> {
    let text = render(&result);
    if let Some(path) = &args.report {
        crate::report::write(path, &report::html(&result))?;
    }
    let stdout = if args.json {
        crate::output::json(&result)?
    } else {
        text
    };
    Ok(Outcome {
        stdout,
        failed: result.ratios.iter().all(|r| r.interval.is_none()),
        exit_code: None,
    })
}

/// The label of a metric's JSON key.
fn label(key: &str) -> &'static str {
    METRICS.iter().find(|m| m.0 == key).map_or("?", |m| m.1)
}

/// The columns of the runs table.
const RUN_HEADER: [&str; 11] = [
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
fn run_cells(result: &AbResult) -> Vec<[String; 11]> {
    std::iter::once(&result.warm_up)
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
const RATIO_HEADER: [&str; 6] = [
    "figure",
    "baseline mean",
    "policy mean",
    "ratio",
    "95 % interval",
    "verdict",
];

/// The ratios' cells.
fn ratio_cells(result: &AbResult) -> Vec<[String; 6]> {
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

/// A text table of `header` and `rows`, text columns (`left`) on the left.
fn table<const N: usize>(header: &[&str; N], rows: Vec<[String; N]>, left: &[usize]) -> String {
    let align: Vec<Align> = (0..N)
        .map(|i| {
            if left.contains(&i) {
                Align::Left
            } else {
                Align::Right
            }
        })
        .collect();
    let mut t = Table::new(header, &align);
    for row in rows {
        t.row(row);
    }
    t.render()
}

/// The terminal's text: what was compared, every run, the ratios, notes.
fn render(result: &AbResult) -> String {
    let mut out = format!(
        "policy {} against baseline {}: {} pair(s) in ABBA order after one warm-up run\n\
         command: {}\npower: {}\n\n",
        result.policy,
        result.baseline,
        result.pairs,
        result.command.join(" "),
        result.meter
    );
    out.push_str(&table(&RUN_HEADER, run_cells(result), &[1, 3, 10]));
    if !result.runs.is_empty() {
        out.push_str(&format!(
            "\nratio policy/baseline over {} pair(s), 95 % bootstrap interval \
             ({} resamples of whole pairs, seed {})\n",
            result.pairs_used, result.resamples, result.seed
        ));
        out.push_str(&table(&RATIO_HEADER, ratio_cells(result), &[0, 5]));
    }
    for note in &result.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}
