//! Each subcommand: check its settings, call the engine, and render the
//! result as JSON or as a human-readable table. Returns the text for
//! stdout; printing and exit codes are `main`'s.

use crate::cli::{
    BenchCommand, BenchPamArgs, BenchSimArgs, CalibrateAvArgs, CalibrateCommand, Cli, Command,
    CompareArgs, ListArgs, PoliciesArgs, SimArgs, ValidateArgs,
};
use crate::linux_commands;
use crate::outcome::Outcome;
use crate::output::{self, ScenarioEntry, ValidateReport};
use crate::policy_list;
use crate::progress::{self, Progress};
use crate::settings::{CompareSettings, SimSettings};
use crate::topology_view;
use anyhow::{Context, Result};
use ecosched_engine::{bench, calibrate, experiment, validate};
use ecosched_sim::cluster::{Cluster, Workload};

/// Run the command line.
pub fn run(cli: &Cli) -> Result<Outcome> {
    match &cli.command {
        Command::Scenarios(a) => scenarios(a),
        Command::Policies(a) => policies(a),
        Command::Sim(a) => sim(a),
        Command::Compare(a) => compare(a),
        Command::Validate(a) => run_validate(a),
        Command::Suite(a) => crate::suite_commands::suite(a),
        Command::Recommend(a) => crate::recommend::recommend(a),
        Command::Bench(BenchCommand::Sim(a)) => bench_sim(a),
        Command::Bench(BenchCommand::Observe(a)) => linux_commands::bench_observe(a),
        Command::Run(a) => linux_commands::run(a),
        Command::Ab(a) => crate::ab::ab(a),
        Command::Restore(a) => linux_commands::restore(a),
        Command::Topology(a) => topology_view::run(a),
        Command::Doctor(a) => crate::doctor::run(a),
        Command::Bench(BenchCommand::Pam(a)) => bench_pam(a),
        Command::Calibrate(CalibrateCommand::Av(a)) => calibrate_av(a),
        Command::Bench(BenchCommand::Oracle(a)) => crate::report_commands::bench_oracle(a),
        Command::Bench(BenchCommand::Attribution(a)) => crate::attribution_bench::run(a),
        Command::Sweep(a) => crate::report_commands::sweep(a),
        Command::Daemon(a) => crate::service_commands::daemon(a),
        Command::Ctl(a) => crate::service_commands::ctl(a),
        Command::Slurm(c) => crate::slurm_commands::slurm(c),
        Command::Completions(a) => crate::shell_docs::completions(a.shell),
        Command::Man => crate::shell_docs::man_page(),
    }
}

fn scenarios(args: &ListArgs) -> Result<Outcome> {
    let list: Vec<ScenarioEntry> = ecosched_sim::scenario::builtin_scenarios()
        .into_iter()
        .chain(ecosched_sim::cluster::builtin_clusters())
        .map(|(name, description)| ScenarioEntry { name, description })
        .collect();
    Ok(Outcome::ok(if args.json {
        output::json(&list)?
    } else {
        output::scenarios(&list)
    }))
}

fn policies(args: &PoliciesArgs) -> Result<Outcome> {
    let family = match &args.name {
        Some(name) => {
            let Some(family) = policy_list::family_named(name) else {
                // Not a family's name either: the error lists the policies.
                ecosched_policy::find(name)?;
                anyhow::bail!("no policy family is called {name:?}");
            };
            Some(family)
        }
        None => None,
    };
    Ok(Outcome::ok(if args.markdown {
        policy_list::markdown()
    } else if args.json {
        output::json(&policy_list::entries(family))?
    } else {
        policy_list::text(family)
    }))
}

/// The activity model's fit for `scenario`'s machine when the JSON task
/// rows are wanted (they carry each task's true and attributed energy,
/// `docs/researchers/attribution.md`).
fn attribution_fit(
    json: bool,
    scenario: &ecosched_sim::Scenario,
) -> Result<Option<std::sync::Arc<ecosched_model::attribution::EnergyFit>>> {
    if !json {
        return Ok(None);
    }
    let fit = ecosched_engine::attribution_check::fit_machine(scenario)
        .with_context(|| format!("fitting the activity model on {}", scenario.spec.machine))?;
    Ok(Some(std::sync::Arc::new(fit)))
}

fn load_workload(name: &str) -> Result<Workload> {
    Workload::load(name).with_context(|| format!("cannot load scenario {name:?}"))
}

fn sim(args: &SimArgs) -> Result<Outcome> {
    let s = SimSettings::from_args(args)?;
    let scenario = match &args.machine {
        Some(machine) => crate::sim_machine::scenario_on(&s.scenario, machine)?,
        None => match load_workload(&s.scenario)? {
            Workload::Single(scenario) => *scenario,
            Workload::Cluster(cluster) => return sim_cluster(args, &s, &cluster),
        },
    };
    let mut sink = crate::run_outputs::Outputs::open(
        s.trace.as_deref(),
        args.trace_format,
        args.timeseries.as_deref(),
        args.report.as_deref(),
    )?;
    let options = experiment::SimOptions {
        seed: s.seed,
        observe: s.observe,
        attribution: attribution_fit(s.json, &scenario)?,
        ..Default::default()
    };
    let mut bar = Progress::simulation(progress::wanted(s.json), scenario.spec.duration_s);
    let run = experiment::simulate_into(
        &scenario,
        &s.policy,
        &s.params,
        &options,
        &mut sink,
        &mut |t| bar.update(t),
    )
    .with_context(|| {
        format!(
            "simulating {} under policy {}",
            scenario.spec.name, s.policy
        )
    })?;
    drop(bar);
    let summary = output::sim(&run.report);
    crate::report_commands::sim_report(args, &run.report, &summary, sink.into_series())?;
    Ok(Outcome::ok(if s.json {
        output::json(&run.report)?
    } else {
        summary
    }))
}

/// The usage error for `options` given with a cluster scenario.
fn one_machine_only(cluster: &Cluster, options: &str) -> anyhow::Error {
    crate::outcome::UsageError(format!(
        "{} is a cluster scenario: {options} are for one machine",
        cluster.spec.name
    ))
    .into()
}

/// `sim` on a cluster scenario.
fn sim_cluster(args: &SimArgs, s: &SimSettings, cluster: &Cluster) -> Result<Outcome> {
    if args.trace.is_some() || args.timeseries.is_some() || args.report.is_some() {
        return Err(one_machine_only(
            cluster,
            "--trace, --timeseries and --report",
        ));
    }
    let options = experiment::SimOptions {
        seed: s.seed,
        observe: s.observe,
        ..Default::default()
    };
    let mut bar = Progress::simulation(progress::wanted(s.json), cluster.spec.duration_s);
    let run = ecosched_engine::cluster::simulate_cluster(
        cluster,
        &s.policy,
        &s.params,
        &options,
        &mut |t| bar.update(t),
    )
    .with_context(|| {
        format!(
            "simulating cluster {} under policy {}",
            cluster.spec.name, s.policy
        )
    })?;
    drop(bar);
    Ok(Outcome::ok(if s.json {
        output::json(&run.report)?
    } else {
        crate::cluster_output::sim(&run.report)
    }))
}

/// `compare` on a cluster scenario.
fn compare_cluster(args: &CompareArgs, s: &CompareSettings, cluster: &Cluster) -> Result<Outcome> {
    if s.seeds.is_some() || args.report.is_some() {
        return Err(one_machine_only(cluster, "--seeds and --report"));
    }
    let options = experiment::SimOptions {
        seed: s.seed,
        observe: s.observe,
        extra_counters: [ecosched_model::CounterKind::Instructions].into(),
        attribution: None,
    };
    let mut bar = Progress::simulation(progress::wanted(s.json), cluster.spec.duration_s);
    let mut current = usize::MAX;
    let report = ecosched_engine::cluster::compare_cluster(
        cluster,
        &s.policies,
        &s.baseline,
        &options,
        &mut |i, t| {
            if i != current {
                current = i;
                let name = s.policies.get(i).map_or("", |(p, _)| p.as_str());
                bar.stage(&format!("[{}/{}] {name}", i + 1, s.policies.len()));
            }
            bar.update(t);
        },
    )
    .with_context(|| format!("comparing policies on cluster {}", cluster.spec.name))?;
    drop(bar);
    Ok(Outcome::ok(if s.json {
        output::json(&report)?
    } else {
        crate::cluster_output::compare(&report)
    }))
}

fn compare(args: &CompareArgs) -> Result<Outcome> {
    let s = CompareSettings::from_args(args)?;
    let scenario = match load_workload(&s.scenario)? {
        Workload::Single(scenario) => *scenario,
        Workload::Cluster(cluster) => return compare_cluster(args, &s, &cluster),
    };
    if let Some(path) = &args.report {
        crate::report::check_writable(path)?;
    }
    let n = s.policies.len();
    let label = |i: usize| {
        let name = s.policies.get(i).map_or("", |(p, _)| p.as_str());
        format!("[{}/{n}] {name}", i + 1)
    };
    let mut bar = Progress::simulation(progress::wanted(s.json), scenario.spec.duration_s);
    bar.stage(&label(0));
    let mut current = 0;
    // Instructions are counted beside every policy, as `perf stat -e
    // instructions` would (Patel ch. 9 measured them for the control group
    // too): metric (a) needs them whatever the policy reads.
    let options = experiment::SimOptions {
        seed: s.seed,
        observe: s.observe,
        extra_counters: [ecosched_model::CounterKind::Instructions].into(),
        attribution: attribution_fit(s.json, &scenario)?,
    };
    if let Some(n) = s.seeds {
        let mut stage: Option<(u64, usize)> = None;
        let report = ecosched_engine::seeds::compare_seeds(
            &scenario,
            &s.policies,
            &s.baseline,
            &options,
            n,
            // The runs go side by side: the bar follows the latest one
            // started, so that it does not flicker between them.
            &mut |seed, i, t| {
                if stage.is_none_or(|latest| (seed, i) > latest) {
                    stage = Some((seed, i));
                    bar.stage(&format!("seed {seed}, {}", label(i)));
                }
                if stage == Some((seed, i)) {
                    bar.update(t);
                }
            },
        )
        .with_context(|| format!("comparing policies on {}", scenario.spec.name))?;
        drop(bar);
        let summary = output::compare_seeds(&report);
        crate::report_commands::seeds_report(args.report.as_deref(), &report, &summary)?;
        return Ok(Outcome::ok(if s.json {
            output::json(&report)?
        } else {
            summary
        }));
    }
    let (report, series) = crate::report_commands::compare(
        args.report.as_deref(),
        &scenario,
        &s.policies,
        &s.baseline,
        &options,
        // The policies run side by side: the bar follows the latest one
        // started, so that it does not flicker between them.
        &mut |i, t| {
            if i > current {
                current = i;
                bar.stage(&label(i));
            }
            if i == current {
                bar.update(t);
            }
        },
    )
    .with_context(|| format!("comparing policies on {}", scenario.spec.name))?;
    drop(bar);
    let summary = output::compare(&report, &s.policies);
    crate::report_commands::compare_report(args.report.as_deref(), &report, &summary, &series)?;
    Ok(Outcome::ok(if s.json {
        output::json(&report)?
    } else {
        summary
    }))
}

/// `validate --reseed`'s most passes: each is a whole validation run
/// (about 3 min on one core).
const MAX_RESEED: u32 = 20;

fn run_validate(args: &ValidateArgs) -> Result<Outcome> {
    if let Some(pct) = args.perturb {
        if !(pct > 0.0 && pct < 100.0) {
            anyhow::bail!("--perturb {pct}: the percentage must be between 0 and 100 (exclusive)");
        }
    }
    if let Some(n) = args.reseed {
        if !(1..=MAX_RESEED).contains(&n) {
            anyhow::bail!("--reseed {n}: the number of passes must be 1–{MAX_RESEED}");
        }
    }
    let papers = if args.paper.is_empty() {
        validate::Paper::ALL.to_vec()
    } else {
        args.paper.clone()
    };
    // Told from the worker threads as groups of rows and passes finish.
    let bar = std::sync::Mutex::new(Progress::spinner(
        progress::wanted(args.json),
        "running the validation scenarios",
    ));
    let say = |text: String| {
        if let Ok(mut bar) = bar.lock() {
            bar.say(&text);
        }
    };
    let checks = validate::checks_counted(&papers, args.observe, &|done, of| {
        say(format!("validation rows: {done} of {of} groups done"))
    })
    .context("running the validation checks")?;
    let perturbation = match args.perturb {
        Some(pct) => Some(
            ecosched_engine::fidelity::perturb(
                &checks,
                pct,
                || validate::checks_of(&papers, args.observe),
                &|done, of| say(format!("perturbed passes (±{pct} %): {done} of {of} done")),
            )
            .context("running the perturbed validation checks")?,
        ),
        None => None,
    };
    let reseeding = match args.reseed {
        Some(n) => Some(
            ecosched_engine::fidelity::reseed(
                &checks,
                n,
                || validate::checks_of(&papers, args.observe),
                &|done, of| say(format!("reseeded passes: {done} of {of} done")),
            )
            .context("running the reseeded validation checks")?,
        ),
        None => None,
    };
    drop(bar);
    let failed = checks.iter().any(|c| !c.pass && !c.known_miss);
    let stdout = if args.markdown {
        validate::markdown::document(args.observe, &checks)
    } else if args.json {
        output::json(&ValidateReport {
            observe: args.observe,
            checks: &checks,
            summary: ecosched_engine::fidelity::summarize(&checks),
            perturbation: perturbation.as_deref(),
            reseeding: reseeding.as_deref(),
        })?
    } else {
        let mut text = output::validate(args.observe, &checks);
        if let (Some(pct), Some(p)) = (args.perturb, &perturbation) {
            text.push_str(&output::perturbation(pct, p));
        }
        if let Some(r) = &reseeding {
            text.push_str(&output::reseeding(r, checks.len()));
        }
        text
    };
    Ok(Outcome {
        stdout,
        failed,
        exit_code: None,
    })
}

fn bench_sim(args: &BenchSimArgs) -> Result<Outcome> {
    let bar = Progress::spinner(
        progress::wanted(args.json),
        &format!("simulating {}", args.scenario),
    );
    let report = bench::bench_sim(&args.scenario).context("running the simulator benchmark")?;
    drop(bar);
    Ok(Outcome::ok(if args.json {
        output::json(&report)?
    } else {
        output::bench(&report)
    }))
}

fn bench_pam(args: &BenchPamArgs) -> Result<Outcome> {
    let report = bench::bench_pam(args.cpus, args.budget_ms).context("timing PAM's decision")?;
    Ok(Outcome::ok(if args.json {
        output::json(&report)?
    } else {
        format!(
            "pam decision at {} CPUs: {:.3} ms ({} search, modelled {:.3} ms of a {} ms budget{}), predicted speedup {:.4}\n",
            report.cpus,
            report.decision_ms,
            report.search,
            report.modelled_ms,
            report.budget_ms,
            if report.stopped_early {
                "; stopped early at the budget"
            } else {
                ""
            },
            report.speedup
        )
    }))
}

fn calibrate_av(args: &CalibrateAvArgs) -> Result<Outcome> {
    let run = match &args.machine {
        None => linux_commands::calibrate_av_here(args)?,
        Some(machine) => {
            let _bar = Progress::spinner(
                progress::wanted(args.json),
                &format!("calibrating activity vectors on {machine}"),
            );
            calibrate::calibrate_av(machine)
                .with_context(|| format!("calibrating activity vectors on {machine}"))?
        }
    };
    let mut stdout = if args.json {
        output::json(&run)?
    } else {
        output::calibrate_av(&run)
    };
    if let Some(path) = &args.output {
        linux_commands::store_activity(path, &run)?;
        if !args.json {
            stdout.push_str(&format!("\nwritten to {}\n", path.display()));
        }
    }
    Ok(Outcome::ok(stdout))
}
