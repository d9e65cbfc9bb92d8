//! `ecosched ab`: the same command run repeatedly under a baseline and a
//! policy on this machine, and what the policy changed, with error bars.
//!
//! One warm-up run under each arm (so that a baseline or policy this
//! machine cannot run is refused before anything counts; not counted),
//! then `--runs`
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
mod result;
mod runner;
mod schedule;
mod stats;

use crate::cli::AbArgs;
use crate::outcome::{usage, Outcome};
use crate::table::{Align, Table};
use anyhow::{Context, Result};
use ecosched_linux::FsRoot;
use meter::MeterInfo;
use result::{AbResult, RATIO_HEADER, RUN_HEADER};
use runner::Slot;
use schedule::Arm;
use std::time::Duration;

/// Most pairs `ab` makes: its records stay small, and more pairs than
/// this narrow an interval by little.
const MAX_PAIRS: usize = 200;

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

    let mut warm_ups = Vec::new();
    for policy in [&args.baseline, &args.policy] {
        let warm_slot = Slot {
            run: 0,
            arm: "warm-up",
            pair: None,
            policy,
        };
        eprintln!("ecosched ab: warm-up run under {policy}");
        let warm_up = runner::run_once(args, &warm_slot, &meter, settle()?)?;
        stop_if_interrupted(&warm_up)?;
        warm_ups.push(warm_up);
    }
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
        warm_ups,
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
    if let Some(failed) = result.warm_ups.iter().find(|r| r.exit_code != Some(0)) {
        result.notes.push(format!(
            "the warm-up run under {} failed (exit status {}); nothing was compared",
            failed.policy,
            failed.status()
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
            stop_if_interrupted(&record)?;
            record.excluded = result::exclusion(&record);
            result.runs.push(record);
        }
    }
    result::analyse(&mut result);
    finish(args, result)
}

/// A run ends by SIGINT or SIGTERM when `ab` was interrupted (a run
/// hands the signal on to its command after undoing its changes): the
/// sequence stops there rather than go on without the user.
fn stop_if_interrupted(r: &runner::RunRecord) -> Result<()> {
    use nix::sys::signal::Signal;
    match r.exit_signal {
        Some(s) if s == Signal::SIGINT as i32 || s == Signal::SIGTERM as i32 => {
            anyhow::bail!(
                "run {} ({} under {}) ended by signal {s}: stopped, nothing was compared",
                r.run,
                r.arm,
                r.policy
            )
        }
        _ => Ok(()),
    }
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
        "policy {} against baseline {}: {} pair(s) in ABBA order after a warm-up run under each\n\
         command: {}\npower: {}\n\n",
        result.policy,
        result.baseline,
        result.pairs,
        result.command.join(" "),
        result.meter
    );
    out.push_str(&table(&RUN_HEADER, result::run_cells(result), &[1, 3, 10]));
    if !result.runs.is_empty() {
        out.push_str(&format!(
            "\nratio policy/baseline over {} pair(s), 95 % bootstrap interval \
             ({} resamples of whole pairs, seed {})\n",
            result.pairs_used, result.resamples, result.seed
        ));
        out.push_str(&table(&RATIO_HEADER, result::ratio_cells(result), &[0, 5]));
    }
    for note in &result.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    crate::table::fit_lines(&out)
}
