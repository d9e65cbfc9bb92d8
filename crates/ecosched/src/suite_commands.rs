//! `ecosched suite`: the workload suite of current machines, as a table
//! (or Markdown for the README, or JSON). Wiring only: the evaluation and
//! the verdicts are `ecosched_engine::suite`'s.

use crate::cli::SuiteArgs;
use crate::outcome::{usage, Outcome};
use crate::output;
use crate::table::{Align, Table};
use anyhow::{Context, Result};
use ecosched_engine::experiment::SimOptions;
use ecosched_engine::suite::{self, SuiteRow, Verdict, MACHINES, WORKLOADS};
use ecosched_sim::Scenario;

/// `ecosched suite`.
pub fn suite(args: &SuiteArgs) -> Result<Outcome> {
    let machines = chosen_machines(&args.machine)?;
    let workloads = chosen_workloads(&args.workload)?;
    let mut rows = Vec::new();
    let mut progress = crate::progress::Progress::spinner(
        crate::progress::wanted(args.json || args.markdown),
        "workload suite",
    );
    for short in &machines {
        for workload in &workloads {
            let name = suite::scenario_name(short, workload);
            let scenario =
                Scenario::load(&name).with_context(|| format!("cannot load scenario {name}"))?;
            let row = suite::evaluate(&scenario, &SimOptions::default(), &mut |policy| {
                progress.stage(&format!("{name}: {policy}"));
            })
            .with_context(|| format!("evaluating {name}"))?;
            rows.push(row);
        }
    }
    let failed = rows.iter().any(|r| r.verdict == Verdict::Misses);
    let stdout = if args.json {
        output::json(&rows)?
    } else if args.markdown {
        suite::markdown(&rows)
    } else {
        table(&rows)
    };
    Ok(Outcome {
        stdout,
        failed,
        exit_code: None,
    })
}

fn chosen_machines(asked: &[String]) -> Result<Vec<&'static str>> {
    if asked.is_empty() {
        return Ok(MACHINES.iter().map(|(s, _)| *s).collect());
    }
    asked
        .iter()
        .map(|a| {
            MACHINES
                .iter()
                .find(|(s, p)| s == a || p == a)
                .map(|(s, _)| *s)
                .ok_or_else(|| {
                    usage(format!(
                        "--machine {a:?}: the suite's machines are {}",
                        MACHINES
                            .iter()
                            .map(|(s, p)| format!("{s} ({p})"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })
        })
        .collect()
}

fn chosen_workloads(asked: &[String]) -> Result<Vec<&'static str>> {
    if asked.is_empty() {
        return Ok(WORKLOADS.to_vec());
    }
    asked
        .iter()
        .map(|a| {
            WORKLOADS.iter().find(|w| *w == a).copied().ok_or_else(|| {
                usage(format!(
                    "--workload {a:?}: the suite's workloads are {}",
                    WORKLOADS.join(", ")
                ))
            })
        })
        .collect()
}

fn table(rows: &[SuiteRow]) -> String {
    let mut t = Table::new(
        &[
            "scenario",
            "better baseline",
            "best policy",
            "× energy/work",
            "× throughput",
            "× oracle",
            "verdict",
            "oracle's choice",
        ],
        &[
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Left,
            Align::Left,
        ],
    );
    for r in rows {
        t.row([
            r.scenario.clone(),
            r.reference.clone(),
            r.best.clone(),
            format!("{:.3}", r.best_energy),
            format!("{:.3}", r.best_throughput),
            format!("{:.3}", r.best_to_oracle),
            r.verdict.word().to_string(),
            r.oracle_choice.clone(),
        ]);
    }
    crate::table::fit_lines(&format!(
        "× = against the better of performance and schedutil (energy per unit of work); a saving counts at ≤ {:.0} % lower throughput; × oracle = best / the oracle within the same slowdown\n\n{}",
        suite::SLOWDOWN * 100.0,
        t.render()
    ))
}
