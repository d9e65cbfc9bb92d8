//! `bench oracle` (how long the oracle's exhaustive search takes) and the
//! `--report` pages of `compare` and `sim`: commands that render or time
//! whole comparisons, kept apart from `commands.rs` so that file only
//! calls in.

use crate::cli::{BenchOracleArgs, SimArgs};
use crate::outcome::Outcome;
use crate::outcome::UsageError;
use crate::output;
use crate::report;
use anyhow::{Context, Result};
use ecosched_engine::compare::CompareReport;
use ecosched_engine::experiment::SimOptions;
use ecosched_engine::oracle::{self, OracleChoice};
use ecosched_engine::report::SimReport;
use ecosched_engine::series::Series;
use ecosched_engine::EngineError;
use ecosched_policy::oracle::{Objective, SearchGoal};
use ecosched_policy::Params;
use ecosched_sim::Scenario;
use serde::Serialize;
use std::path::Path;

/// `bench oracle --json`.
#[derive(Debug, Serialize)]
struct OracleBench {
    scenario: String,
    objective: Objective,
    raw_configurations: u64,
    evaluated: usize,
    search_s: f64,
    per_candidate_ms: f64,
    choice: OracleChoice,
    score: f64,
}

/// Time one oracle search.
pub fn bench_oracle(args: &BenchOracleArgs) -> Result<Outcome> {
    let objective = Objective::from_params(&Params::default().with("objective", &args.objective))
        .context("--objective")?;
    let scenario = Scenario::load(&args.scenario)
        .with_context(|| format!("cannot load scenario {:?}", args.scenario))?;
    let goal = SearchGoal {
        objective,
        slowdown: None,
    };
    let (_, found) = oracle::search(&scenario, goal, &SimOptions::default(), &mut |_, _| {})
        .with_context(|| format!("searching {} for the oracle", scenario.spec.name))?;
    let report = OracleBench {
        scenario: scenario.spec.name.clone(),
        objective,
        raw_configurations: found.raw_configurations,
        evaluated: found.evaluated,
        search_s: found.search_s,
        per_candidate_ms: found.search_s * 1e3 / found.evaluated.max(1) as f64,
        choice: found.choice,
        score: found.score,
    };
    Ok(Outcome::ok(if args.json {
        output::json(&report)?
    } else {
        format!(
            "oracle search on {} ({}): {} of {} configurations simulated in {:.2} s ({:.1} ms each); best: {} (score {:.4})\n",
            report.scenario,
            objective.name(),
            report.evaluated,
            report.raw_configurations,
            report.search_s,
            report.per_candidate_ms,
            report.choice.label(),
            report.score
        )
    }))
}

/// `compare`, keeping each policy's series when a report is wanted.
pub fn compare(
    report: Option<&Path>,
    scenario: &Scenario,
    policies: &[(String, Params)],
    baseline: &str,
    options: &SimOptions,
    progress: &mut (dyn FnMut(usize, f64) + Send),
) -> Result<(CompareReport, Vec<Series>), EngineError> {
    match report {
        Some(_) => ecosched_engine::compare::compare_with_series(
            scenario,
            policies,
            baseline,
            options,
            report::POINTS,
            progress,
        ),
        None => Ok((
            ecosched_engine::compare::compare(scenario, policies, baseline, options, progress)?,
            Vec::new(),
        )),
    }
}

/// `compare --report FILE`: write the page.
pub fn compare_report(
    path: Option<&Path>,
    r: &CompareReport,
    summary: &str,
    series: &[Series],
) -> Result<()> {
    let Some(path) = path else {
        return Ok(());
    };
    report::write(path, &report::compare_html(r, summary, series))
}

/// `compare --seeds N --report FILE`: write the page (bars with error
/// bars over the seeds).
pub fn seeds_report(
    path: Option<&Path>,
    r: &ecosched_engine::seeds::SeedsReport,
    summary: &str,
) -> Result<()> {
    let Some(path) = path else {
        return Ok(());
    };
    report::write(path, &report::seeds_html(r, summary))
}

/// `sim --report FILE`: write the page.
pub fn sim_report(
    args: &SimArgs,
    r: &SimReport,
    summary: &str,
    series: Option<Series>,
) -> Result<()> {
    let (Some(path), Some(series)) = (&args.report, series) else {
        return Ok(());
    };
    let params = if args.params.is_empty() {
        "-".to_string()
    } else {
        args.params.join(" ")
    };
    report::write(path, &report::sim_html(r, &params, summary, &series))
}

/// `run --report FILE`: write the page (after the machine is restored).
pub fn run_report(
    args: &crate::cli::RunArgs,
    r: &ecosched_engine::report::RunReport,
    summary: &str,
    series: Option<Series>,
) -> Result<()> {
    let (Some(path), Some(series)) = (&args.report, series) else {
        return Ok(());
    };
    let params = if args.params.is_empty() {
        "-".to_string()
    } else {
        args.params.join(" ")
    };
    report::write(path, &report::run_html(r, &params, summary, &series))
}

/// `ecosched sweep`.
pub fn sweep(args: &crate::cli::SweepArgs) -> Result<Outcome> {
    use ecosched_engine::sweep::{self, Range};
    let (ranged, fixed): (Vec<&String>, Vec<&String>) =
        args.params.iter().partition(|p| p.contains(".."));
    let [range] = ranged.as_slice() else {
        return Err(UsageError(format!(
            "give exactly one --param KEY=A..B:STEP to sweep (got {})",
            ranged.len()
        ))
        .into());
    };
    let range = Range::parse(range).map_err(UsageError)?;
    let fixed = Params::parse(fixed.iter().map(|s| s.as_str()))?;
    let scenario = Scenario::load(&args.scenario)
        .with_context(|| format!("cannot load scenario {:?}", args.scenario))?;
    let options = SimOptions {
        seed: args.seed,
        observe: args.observe,
        ..SimOptions::default()
    };
    if let Some(path) = &args.report {
        report::check_writable(path)?;
    }
    let r = sweep::sweep(
        &scenario,
        &args.policy,
        &fixed,
        &range,
        &options,
        &mut |_, _| {},
    )
    .with_context(|| {
        format!(
            "sweeping {} of policy {} on {}",
            range.key, args.policy, scenario.spec.name
        )
    })?;
    let table = sweep_table(&r);
    if let Some(path) = &args.report {
        report::write(path, &report::sweep_html(&r, &table))?;
    }
    Ok(Outcome::ok(if args.json {
        output::json(&r)?
    } else {
        table
    }))
}

fn sweep_table(r: &ecosched_engine::sweep::SweepReport) -> String {
    use crate::table::{num, opt, Align, Table};
    let unit = r.normalisation.unit();
    let header = [
        r.key.as_str(),
        "makespan (s)",
        "energy (J)",
        "avg power (W)",
        &format!("work ({unit})"),
        &format!("J/{unit}"),
        &format!("EDP/{unit} (J·s)"),
        &format!("throughput ({unit}/s)"),
    ];
    let mut align = vec![Align::Left];
    align.resize(header.len(), Align::Right);
    let mut t = Table::new(&header, &align);
    for p in &r.points {
        t.row([
            p.value.clone(),
            num(p.report.makespan_s),
            opt(p.report.energy_j),
            opt(p.report.avg_power_w),
            num(p.work.units),
            opt(p.work.energy_per_unit_j),
            opt(p.work.edp_per_unit_js),
            opt(p.work.throughput_per_s),
        ]);
    }
    format!(
        "scenario {}, policy {}, sweeping {}\nnormalisation: {}\n\n{}",
        r.scenario,
        r.policy,
        r.key,
        r.normalisation.describe(),
        t.render()
    )
}
