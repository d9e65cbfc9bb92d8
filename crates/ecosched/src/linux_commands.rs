//! The subcommands that act on this machine: `run` (manage a command under
//! a policy), `restore` (undo what a killed run left) and `bench observe`.
//! Wiring only: the platform is `ecosched-linux`'s, the loop the engine's.

use crate::cli::{ObserveBenchArgs, RestoreArgs, RunArgs};
use crate::commands::Outcome;
use crate::output;
use crate::settings::{RunSettings, UsageError};
use crate::table::{count, num, opt, opt_count, Align, Table};
use crate::trace_file;
use anyhow::{Context, Result};
use ecosched_engine::report::{RunContext, RunReport};
use ecosched_linux::journal::RestoreOutcome;
use ecosched_linux::perf::SystemPerf;
use ecosched_linux::platform::LinuxPlatform;
use ecosched_linux::FsRoot;
use ecosched_model::{Calibration, Platform, PmuSpec};
use ecosched_policy::Retimed;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;

/// `ecosched run`.
pub fn run(args: &RunArgs) -> Result<Outcome> {
    let s = RunSettings::from_args(args)?;
    let mut policy = ecosched_policy::build(&s.policy, &s.params)?;
    if let Some(interval) = s.interval {
        policy = Box::new(Retimed::new(policy, interval));
    }
    // A bad calibration file stops the run before anything is touched.
    let calibration = args
        .calibration
        .as_deref()
        .map(load_calibration)
        .transpose()?;
    let pmu = matching_pmu();
    let mut platform =
        LinuxPlatform::prepare_with_pmu(&s.options, Box::new(SystemPerf), pmu.as_ref())
            .context("preparing this machine")?;
    if let (Some(calibration), Some(path)) = (calibration, &args.calibration) {
        platform.set_calibration(calibration).map_err(|e| {
            UsageError(format!(
                "{}: key `partition`: {e} (checked against this machine)",
                path.display()
            ))
        })?;
    }
    // Open what the policy reads, and refuse before the command starts,
    // not after.
    let requirements = policy.requirements();
    platform.open_counters(&requirements);
    let missing = requirements.missing(&platform.capabilities());
    if !missing.is_empty() {
        return Err(UsageError(format!(
            "policy {} cannot run on this machine: it needs {}",
            s.policy,
            missing.join("; ")
        ))
        .into());
    }
    for notice in platform.notices() {
        eprintln!("ecosched: {notice}");
    }
    let mut sink = trace_file::open(s.trace.as_deref())?;
    let label = s.command.join(" ");
    platform
        .start(&s.command)
        .with_context(|| format!("starting {label:?}"))?;
    let result = ecosched_control::run(
        &mut platform,
        policy.as_mut(),
        &label,
        None,
        sink.as_mut(),
        &mut |_| {},
    );
    let power_description = platform.power_description();
    let frequency_control = platform.frequency_description();
    let notices = platform.notices().to_vec();
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            // Nothing stays half-applied, and the command does not go on
            // unmanaged behind the user's back.
            match platform.finish(true) {
                Ok(end) if end.restore.failed.is_empty() => eprintln!(
                    "ecosched: the machine was restored ({} changes undone) and the command stopped",
                    end.restore.undone
                ),
                Ok(end) => eprintln!(
                    "ecosched: could not undo everything; run `ecosched restore` (journal {})",
                    end.restore.journal.display()
                ),
                Err(f) => eprintln!("ecosched: stopping the command: {f}"),
            }
            return Err(anyhow::Error::new(e).context(format!("managing {label:?}")));
        }
    };
    let end = platform.finish(false).context("finishing the run")?;
    for failure in &end.restore.failed {
        eprintln!(
            "ecosched: could not restore: {failure} (the journal {} is kept; run `ecosched restore`)",
            end.restore.journal.display()
        );
    }
    let report = RunReport::new(
        &outcome,
        RunContext {
            command: s.command.clone(),
            exit_code: end.status.code(),
            exit_signal: end.status.signal(),
            power_description,
            frequency_control,
            notices,
        },
    );
    let stdout = if s.json {
        output::json(&report)?
    } else {
        render_run(&report)
    };
    // The shell's convention: 128 + signal for a command a signal ended.
    let code = match (end.status.code(), end.status.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        (None, None) => 1,
    };
    Ok(Outcome {
        stdout,
        failed: code != 0,
        exit_code: Some(u8::try_from(code & 0xff).unwrap_or(1)),
    })
}

/// Read a calibration file: typed TOML, unknown keys refused, errors
/// located by file, line and key.
fn load_calibration(path: &Path) -> Result<Calibration> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        UsageError(format!(
            "--calibration {}: cannot read it: {e}",
            path.display()
        ))
    })?;
    ecosched_sim::scenario::parse_toml::<Calibration>(&path.display().to_string(), &text)
        .map_err(|e| UsageError(format!("calibration file {e}")).into())
}

/// The PMU description of the built-in machine preset whose CPU is this
/// one (same pmu-events CPU id), so its model-specific events are counted.
fn matching_pmu() -> Option<PmuSpec> {
    let id = ecosched_linux::pmu::cpuid(&FsRoot::live()).ok()?;
    ecosched_sim::scenario::PRESETS
        .iter()
        .filter_map(|(name, _)| ecosched_sim::scenario::preset(name)?.ok())
        .filter_map(|m| m.spec.pmu)
        .find(|p| p.cpuid.as_deref() == Some(id.as_str()))
}

fn render_run(r: &RunReport) -> String {
    let mut t = Table::plain(&[Align::Left, Align::Left]);
    let exit = match (r.exit_code, r.exit_signal) {
        (Some(c), _) => c.to_string(),
        (None, Some(s)) => format!("killed by signal {s}"),
        (None, None) => "-".into(),
    };
    let source = match r.energy_source {
        Some(ecosched_model::PowerSource::Measured) => "measured",
        Some(ecosched_model::PowerSource::Estimated) => "ESTIMATED",
        None => "unavailable",
    };
    let rows: [(&str, String); 12] = [
        ("command", r.command.join(" ")),
        ("policy", r.policy.clone()),
        ("machine", r.machine.clone()),
        ("exit status", exit),
        ("wall time (s)", num(r.wall_s)),
        ("CPU time (s)", opt(r.cpu_s)),
        ("energy (J)", format!("{} ({source})", opt(r.energy_j))),
        (
            "avg power (W)",
            format!("{} ({source})", opt(r.avg_power_w)),
        ),
        ("power from", r.power_description.clone()),
        ("frequency control", r.frequency_control.clone()),
        ("instructions", opt_count(r.instructions)),
        ("migrations", opt_count(r.migrations)),
    ];
    for (k, v) in rows {
        t.row([k.to_string(), v]);
    }
    let header = [
        "task",
        "CPU (s)",
        "run-queue wait (s)",
        "switches",
        "migrations",
        "instructions",
        "cycles",
        "LLC misses",
    ];
    let mut align = vec![Align::Right; header.len()];
    align[0] = Align::Left;
    let mut tasks = Table::new(&header, &align);
    let secs = |ns: Option<u64>| opt(ns.map(|n| n as f64 / 1e9));
    for tc in &r.task_counters {
        let c = &tc.counters;
        tasks.row([
            tc.name.clone(),
            secs(c.on_cpu_ns),
            secs(c.runqueue_wait_ns),
            opt_count(c.context_switches),
            opt_count(c.migrations),
            opt_count(c.instructions),
            opt_count(c.cycles),
            opt_count(c.llc_misses),
        ]);
    }
    // The notices went to stderr when the run started.
    format!("{}\n{}", t.render(), tasks.render())
}

/// `ecosched restore`.
pub fn restore(args: &RestoreArgs) -> Result<Outcome> {
    let outcomes = ecosched_linux::journal::restore(&args.state_dir, &FsRoot::live())
        .with_context(|| format!("restoring from {}", args.state_dir.display()))?;
    let failed = outcomes
        .iter()
        .any(|o| matches!(o, RestoreOutcome::Restored(r) if !r.failed.is_empty()));
    let stdout = if args.json {
        output::json(&outcomes)?
    } else if outcomes.is_empty() {
        format!("nothing to restore in {}\n", args.state_dir.display())
    } else {
        let mut text = String::new();
        for o in &outcomes {
            match o {
                RestoreOutcome::Restored(r) => {
                    text.push_str(&format!(
                        "{}: {} changes undone, {} about tasks that have exited\n",
                        r.journal.display(),
                        count(r.undone as u64),
                        count(r.skipped_gone as u64)
                    ));
                    for f in &r.failed {
                        text.push_str(&format!("  could not undo: {f}\n"));
                    }
                }
                RestoreOutcome::OwnerRunning { journal, pid } => text.push_str(&format!(
                    "{}: left alone, ecosched {pid} is still running and will undo it itself\n",
                    journal.display()
                )),
            }
        }
        text
    };
    Ok(Outcome {
        stdout,
        failed,
        exit_code: None,
    })
}

/// `ecosched bench observe`.
pub fn bench_observe(args: &ObserveBenchArgs) -> Result<Outcome> {
    if args.tasks == 0 {
        return Err(UsageError("--tasks must be at least 1".into()).into());
    }
    let cost = ecosched_linux::bench::observe_cost(args.tasks, args.rounds)
        .context("measuring the observation cost")?;
    let stdout = if args.json {
        output::json(&cost)?
    } else {
        let mut t = Table::plain(&[Align::Left, Align::Right]);
        t.row(["tasks observed".to_string(), count(cost.tasks as u64)]);
        t.row([
            "one observation, wall (ms)".to_string(),
            num(cost.observe_ms),
        ]);
        t.row(["one observation, CPU (ms)".to_string(), num(cost.cpu_ms)]);
        t.row([
            "share of one core at 1 Hz (%)".to_string(),
            num(cost.cpu_percent_at_1hz),
        ]);
        t.row([
            "perf software counters".to_string(),
            cost.software_counters.to_string(),
        ]);
        t.render()
    };
    Ok(Outcome::ok(stdout))
}
