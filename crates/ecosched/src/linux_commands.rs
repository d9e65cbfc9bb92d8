//! The subcommands that act on this machine: `run` (manage a command under
//! a policy), `restore` (undo what a killed run left) and `bench observe`.
//! Wiring only: the platform is `ecosched-linux`'s, the loop the engine's.

use crate::cli::{ObserveBenchArgs, RestoreArgs, RunArgs};
use crate::outcome::Outcome;
use crate::outcome::UsageError;
use crate::output;
use crate::power_model;
use crate::run_summary;
use crate::settings::RunSettings;
use crate::table::{count, num, opt, opt_count, Align, Table};
use anyhow::{Context, Result};
use ecosched_engine::report::{RunContext, RunReport};
use ecosched_linux::journal::RestoreOutcome;
use ecosched_linux::perf::SystemPerf;
use ecosched_linux::platform::LinuxPlatform;
use ecosched_linux::spawn;
use ecosched_linux::FsRoot;
use ecosched_model::trace::TraceSink;
use ecosched_model::{Calibration, Platform};
use ecosched_policy::Retimed;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;

/// `ecosched run`.
pub fn run(args: &RunArgs) -> Result<Outcome> {
    let s = RunSettings::from_args(args).map_err(with_pstates)?;
    let mut policy =
        ecosched_policy::build(&s.policy, &s.params).map_err(|e| with_pstates(e.into()))?;
    // The command is found before anything on the machine changes: a
    // missing one exits 127, one that cannot be executed 126.
    let Some((program, command_args)) = s.command.split_first() else {
        return Err(UsageError("a command to run is needed after `--`".into()).into());
    };
    let program_path = spawn::resolve(program, std::env::var("PATH").ok().as_deref())?;
    if let Some(interval) = s.interval {
        policy = Box::new(Retimed::new(policy, interval));
    }
    // A bad calibration file stops the run before anything is touched.
    let calibration = args
        .calibration
        .as_deref()
        .map(load_calibration)
        .transpose()?;
    let power_choice = power_model::load(&args.power_model)?;
    // Where each counter kind comes from on this machine; a wrong
    // `[events]` entry stops the run here, before anything starts.
    let signals = ecosched_linux::signals::resolve_live(&FsRoot::live(), &s.events)
        .map_err(|e| UsageError(format!("{e}; nothing was run")))?;
    let mut platform = LinuxPlatform::builder(FsRoot::live())
        .options(&s.options)
        .signals(signals)
        .build()
        .map_err(|e| explain_privilege(e, &s.options.state_dir))
        .context("preparing this machine")?;
    if let (Some(calibration), Some(path)) = (calibration, &args.calibration) {
        platform.set_calibration(calibration).map_err(|e| {
            UsageError(format!(
                "{}: key `partition`: {e} (checked against this machine)",
                path.display()
            ))
        })?;
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let identity = power_model::identity(&platform.machine_name(), &cpuinfo, &platform.topology());
    let power_params = power_choice.resolve(&identity, &platform.topology());
    let power_model = format!(
        "{} (an ESTIMATE where power is not measured)",
        power_params.model
    );
    platform
        .set_power_model(power_params)
        .context("opening the power meter with the chosen model")?;
    // Open what the policy reads, and refuse before the command starts,
    // not after.
    let requirements = policy.requirements();
    platform.open_counters(&requirements);
    let verdict = requirements.verdict(&platform.capabilities());
    if let Some(refusal) = verdict.refusal(&s.policy) {
        return Err(UsageError(refusal).into());
    }
    if let ecosched_model::Verdict::Degraded { .. } = verdict {
        tracing::warn!(
            "policy {} runs degraded here: {}",
            s.policy,
            verdict.reasons()
        );
    }
    // The first plan, checked against this machine before anything
    // starts. It comes from a second instance of the policy so that the
    // loop's own instance starts fresh.
    let mut probe = ecosched_policy::build(&s.policy, &s.params)?;
    let initial = probe
        .init(&platform.topology())
        .map_err(|e| UsageError(format!("policy {}: {e}; nothing was run", s.policy)))?;
    platform.check_initial(&initial).map_err(|e| {
        UsageError(format!(
            "policy {}: its first plan cannot be carried out on this machine: {e}; nothing was run",
            s.policy
        ))
    })?;
    for notice in platform.notices() {
        tracing::warn!("{notice}");
    }
    let mut sink = crate::run_outputs::Outputs::open(
        s.trace.as_deref(),
        args.trace_format,
        args.timeseries.as_deref(),
        args.report.as_deref(),
    )?;
    // Created now, so that a path that cannot be written stops the run
    // before the command starts.
    let json_file = args
        .json_file
        .as_deref()
        .map(|path| {
            ecosched_model::user_file::create_output(path)
                .map(|file| (path, file))
                .with_context(|| format!("cannot create the JSON file {}", path.display()))
        })
        .transpose()?;
    if s.json {
        platform.command_stdout_to_stderr();
    }
    // Context switches are followed from the command's first instant.
    if sink.wants_schedule() {
        platform.record_schedule();
    }
    let label = s.command.join(" ");
    platform
        .launch(&program_path, command_args, initial.managed_cpus.as_ref())
        .map_err(|e| explain_privilege(e, &s.options.state_dir))
        .with_context(|| format!("starting {label:?}"))?;
    let result = ecosched_control::run(
        &mut platform,
        policy.as_mut(),
        &label,
        None,
        &mut sink,
        &mut |_| {},
    );
    let power_description = platform.power_description();
    let frequency_control = platform.frequency_description();
    let mut notices = platform.notices().to_vec();
    if platform.notices_dropped() > 0 {
        notices.push(format!(
            "{} further notices were not kept (a run keeps at most {})",
            platform.notices_dropped(),
            ecosched_linux::platform::MAX_NOTICES
        ));
    }
    let unobserved_tasks = platform.unobserved_tasks();
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            // Nothing stays half-applied, and the command does not go on
            // unmanaged behind the user's back.
            match platform.finish(true) {
                Ok(end) if end.restore.failed.is_empty() => tracing::info!(
                    "the machine was restored ({} changes undone) and the command stopped",
                    end.restore.undone
                ),
                Ok(end) => tracing::error!(
                    "could not undo everything; run `ecosched restore` (journal {})",
                    end.restore.journal.display()
                ),
                Err(f) => tracing::error!("stopping the command: {f}"),
            }
            return Err(anyhow::Error::new(e).context(format!("managing {label:?}")));
        }
    };
    let end = platform.finish(false).context("finishing the run")?;
    for failure in &end.restore.failed {
        tracing::error!(
            "could not restore: {failure} (the journal {} is kept; run `ecosched restore`)",
            end.restore.journal.display()
        );
    }
    if let (false, Some(sig)) = (end.survivors.is_empty(), end.interrupted_by) {
        tracing::warn!(
            "{} processes of the run survived signal {sig} and go on, released from every change the run made: {:?}",
            end.survivors.len(),
            end.survivors
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
            policy_stats: policy.stats(),
        },
    );
    let mut summary = run_summary::RunSummary::new(report, &end);
    summary.unobserved_tasks = unobserved_tasks;
    if summary.report.energy_source == Some(ecosched_model::PowerSource::Estimated) {
        summary.power_model = Some(power_model);
    }
    crate::run_record::keep(&summary, &s.options.state_dir);
    let table = render_run(&summary);
    crate::report_commands::run_report(args, &summary.report, &table, sink.into_series())?;
    if let Some((path, mut file)) = json_file {
        use std::io::Write;
        file.write_all(output::json(&summary)?.as_bytes())
            .and_then(|()| file.sync_all())
            .with_context(|| format!("writing the JSON summary to {}", path.display()))?;
    }
    let stdout = if s.json {
        output::json(&summary)?
    } else {
        table
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
    let text =
        ecosched_model::user_file::read_text(path, ecosched_model::user_file::TEXT_MAX_BYTES)
            .map_err(|e| {
                UsageError(format!(
                    "--calibration {}: cannot read it: {}",
                    path.display(),
                    e.reason()
                ))
            })?;
    ecosched_sim::scenario::parse_toml::<Calibration>(&path.display().to_string(), &text)
        .map_err(|e| UsageError(format!("calibration file {e}")).into())
}

fn render_run(summary: &run_summary::RunSummary) -> String {
    let r = &summary.report;
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
    let rows: [(&str, String); 15] = [
        ("command", r.command.join(" ")),
        ("policy", r.policy.clone()),
        ("machine", r.machine.clone()),
        ("exit status", exit),
        ("wall time (s)", num(r.wall_s)),
        ("CPU time (s)", opt(r.cpu_s)),
        ("CPU time from", summary.cpu_source.clone()),
        (
            "energy (J)",
            format!("{} ({source}, machine-wide)", opt(r.energy_j)),
        ),
        (
            "run's energy (J)",
            match (summary.energy_attributed_j, summary.cpu_share_of_machine) {
                (Some(j), Some(share)) => format!(
                    "{} ({source}; {:.1} % of the machine's busy CPU time)",
                    num(j),
                    share * 100.0
                ),
                _ => "-".into(),
            },
        ),
        (
            "avg power (W)",
            format!("{} ({source})", opt(r.avg_power_w)),
        ),
        ("power from", r.power_description.clone()),
        (
            "power model",
            summary
                .power_model
                .clone()
                .unwrap_or_else(|| "none (power is measured)".into()),
        ),
        ("frequency control", r.frequency_control.clone()),
        ("instructions", opt_count(r.instructions)),
        ("migrations", opt_count(r.migrations)),
    ];
    for (k, v) in rows {
        t.row([k.to_string(), v]);
    }
    t.row([
        "unobserved tasks".to_string(),
        unobserved(summary.unobserved_tasks, &r.notices),
    ]);
    for (k, v) in r.policy_stats.iter() {
        t.row([format!("policy: {k}"), v.to_string()]);
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

/// How many tasks could not be observed (not gone, but unreadable: out of
/// file descriptors, permissions), with the first reason: the platform
/// counts each task once and notes the first ones (the list of notices is
/// bounded).
fn unobserved(tasks: u64, notices: &[String]) -> String {
    let first = notices.iter().find(|n| n.contains("is no longer observed"));
    match (tasks, first) {
        (0, _) => "0".into(),
        (n, Some(first)) => format!("{} (first: {first})", count(n)),
        (n, None) => count(n),
    }
}

/// `ecosched restore`.
pub fn restore(args: &RestoreArgs) -> Result<Outcome> {
    let outcomes = ecosched_linux::journal::restore(&args.state_dir, &FsRoot::live())
        .with_context(|| format!("restoring from {}", args.state_dir.display()))?;
    let failed = outcomes.iter().any(|o| match o {
        RestoreOutcome::Restored(r) => !r.failed.is_empty(),
        RestoreOutcome::Refused { .. } => true,
        RestoreOutcome::OwnerRunning { .. } => false,
    });
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
                    for w in &r.warnings {
                        text.push_str(&format!("  warning: {w}\n"));
                    }
                }
                RestoreOutcome::Refused { journal, reason } => {
                    text.push_str(&format!("{}: not restored: {reason}\n", journal.display()))
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
    ecosched_linux::bench::check_tasks(args.tasks).map_err(UsageError)?;
    if args.interval_ms == 0 {
        return Err(UsageError("--interval-ms must be at least 1".into()).into());
    }
    if let Some(n) = args.hold_threads {
        ecosched_linux::run_cost::hold_threads(n, std::time::Duration::from_secs(args.hold_s))?;
        return Ok(Outcome::ok(String::new()));
    }
    let interval = std::time::Duration::from_millis(args.interval_ms);
    let cost = ecosched_linux::bench::observe_cost(args.tasks, args.rounds, interval)
        .context("measuring the observation cost")?;
    let policies = policy_costs(args)?;
    let stdout = if args.json {
        output::json(&serde_json::json!({ "reads": cost, "policies": policies }))?
    } else {
        let mut t = Table::plain(&[Align::Left, Align::Right]);
        t.row(["tasks observed".to_string(), count(cost.tasks as u64)]);
        t.row([
            "one read when every task ran, wall (ms)".to_string(),
            num(cost.observe_ms),
        ]);
        t.row([
            "  CPU (ms), + finding the tasks again from the run's processes (ms)".to_string(),
            format!("{} + {}", num(cost.cpu_ms), num(cost.rediscover_cpu_ms)),
        ]);
        t.row([
            "  finding them by a walk of /proc instead (ms)".to_string(),
            num(cost.rediscover_walk_cpu_ms),
        ]);
        t.row([
            format!(
                "share of one core, every task running, {} read(s) per {} ms interval (%)",
                cost.busy_reads_per_interval, cost.interval_ms
            ),
            num(cost.busy_cpu_percent),
        ]);
        t.row([
            "  the same, found by a walk of /proc (no cgroup, match rules) (%)".to_string(),
            num(cost.busy_walk_cpu_percent),
        ]);
        t.row([
            "share of one core, no task running, activity cgroup watched (%)".to_string(),
            num(cost.idle_cpu_percent),
        ]);
        t.row([
            "share of one core, no task running, no activity cgroup (%)".to_string(),
            num(cost.idle_unwatched_cpu_percent),
        ]);
        t.row([
            "perf software counters".to_string(),
            cost.software_counters.to_string(),
        ]);
        let mut out = t.render();
        if !policies.is_empty() {
            let mut p = Table::plain(&[Align::Left, Align::Right, Align::Right]);
            p.row([
                format!(
                    "`ecosched run` watching {} sleeping threads, {} s",
                    args.tasks, args.seconds
                ),
                "interval (ms)".to_string(),
                "share of one core (%)".to_string(),
            ]);
            let mut refusals = String::new();
            for row in &policies {
                let share = match (&row.cpu_percent, &row.refused) {
                    (Some(pct), _) => format!("{pct:.3}"),
                    (None, why) => {
                        refusals.push_str(&format!(
                            "{}: cannot run here: {}\n",
                            row.policy,
                            why.as_deref().unwrap_or("?")
                        ));
                        "-".to_string()
                    }
                };
                let name = std::iter::once(row.policy.clone())
                    .chain(row.params.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(" ");
                p.row([name, num(row.interval_ms), share]);
            }
            out.push('\n');
            out.push_str(&p.render());
            out.push_str(&refusals);
        }
        out
    };
    Ok(Outcome::ok(stdout))
}

/// The rows of `bench observe --policies`: each policy's whole run
/// measured at its own interval.
fn policy_costs(args: &ObserveBenchArgs) -> Result<Vec<ecosched_linux::run_cost::PolicyCost>> {
    let names: Vec<&String> = args.policies.iter().filter(|p| *p != "none").collect();
    if names.is_empty() {
        return Ok(Vec::new());
    }
    if args.seconds == 0 {
        return Err(UsageError("--seconds must be at least 1".into()).into());
    }
    let exe = std::env::current_exe().context("finding this program to run it")?;
    let online = FsRoot::live()
        .read("sys/devices/system/cpu/online", "online CPUs")
        .context("reading the online CPUs for `static`")?;
    let state = std::env::temp_dir().join(format!("ecosched-bench-observe-{}", std::process::id()));
    let mut rows = Vec::new();
    for name in names {
        let params: Vec<String> = if name == "static" {
            vec![format!("cpus={online}")]
        } else {
            Vec::new()
        };
        let parsed = ecosched_policy::Params::parse(params.iter().map(String::as_str))?;
        let interval = ecosched_policy::catalogue::build(name, &parsed)
            .map_err(|e| UsageError(format!("--policies: {e}")))?
            .interval();
        let row = ecosched_linux::run_cost::policy_cost(
            &exe,
            name,
            &params,
            interval,
            args.tasks,
            std::time::Duration::from_secs(args.seconds),
            &state,
        )
        .with_context(|| format!("measuring `ecosched run --policy {name}`"))?;
        rows.push(row);
    }
    let _ = std::fs::remove_dir_all(&state);
    Ok(rows)
}

/// `ecosched calibrate av` without `--machine`: this machine, measured
/// by `ecosched_linux::avcal` (built-in kernels at each P-state, cpufreq
/// journalled and put back). Where cpufreq or a hardware event is missing
/// the refusal names it and nothing is changed (exit 2).
pub fn calibrate_av_here(
    args: &crate::cli::CalibrateAvArgs,
) -> Result<ecosched_model::avcal::AvCalibrationRun> {
    use ecosched_linux::avcal::{calibrate, LiveAvError, LiveAvOptions};
    let options = LiveAvOptions {
        run: std::time::Duration::from_millis(args.run_ms.max(1)),
        stream_bytes: None,
        state_dir: args.state_dir.clone(),
    };
    calibrate(&FsRoot::live(), &SystemPerf, &options).map_err(|e| match e {
        LiveAvError::Refused { .. } => anyhow::Error::new(UsageError(format!(
            "{e}; calibrate a simulated machine with --machine PRESET instead"
        ))),
        other => anyhow::Error::new(other).context("calibrating activity vectors on this machine"),
    })
}

/// Put a calibration's `activity` part into the calibration file `path`
/// (what `run --calibration` reads), keeping the file's other parts.
pub fn store_activity(path: &Path, run: &ecosched_model::avcal::AvCalibrationRun) -> Result<()> {
    let mut calibration = if path.exists() {
        load_calibration(path)?
    } else {
        Calibration::default()
    };
    calibration.activity = Some(run.activity.clone());
    calibration.source = Some(format!(
        "ecosched calibrate av: {} ({})",
        run.machine, run.measured_on
    ));
    let text = toml::to_string(&calibration).context("serialising the calibration")?;
    ecosched_model::user_file::write_output(path, text)
        .with_context(|| format!("--output {}: cannot write it", path.display()))
}

/// A policy parameter that is not a number gets this machine's P-states
/// named when it is a frequency: the valid values are those.
fn with_pstates(e: anyhow::Error) -> anyhow::Error {
    let bad = e
        .chain()
        .find_map(|c| c.downcast_ref::<ecosched_policy::PolicyError>());
    if let Some(ecosched_policy::PolicyError::BadParam { key, value, reason }) = bad {
        if key == "freq_mhz" {
            let valid = match ecosched_linux::topology::discover(&FsRoot::live()) {
                Ok(m) if m.cpufreq.is_empty() => {
                    "none here: this machine has no cpufreq, so no frequency can be set".to_string()
                }
                Ok(m) => {
                    let mut mhz: Vec<u64> = m
                        .topology
                        .freq_domains
                        .iter()
                        .flat_map(|d| d.pstates.iter().map(|p| p.freq_khz / 1000))
                        .collect();
                    mhz.sort_unstable();
                    mhz.dedup();
                    let list: Vec<String> = mhz.iter().map(u64::to_string).collect();
                    format!("this machine's P-states, {} MHz", list.join(", "))
                }
                Err(_) => "a P-state of this machine, in MHz".to_string(),
            };
            return UsageError(format!(
                "--param freq_mhz={value}: {reason} (expected a frequency in MHz); valid values: {valid}"
            ))
            .into();
        }
    }
    e
}

/// Without root, a permission failure names what needs it and, for the
/// restore journal, suggests a state directory this user can write.
fn explain_privilege(e: ecosched_linux::LinuxError, state_dir: &Path) -> anyhow::Error {
    use ecosched_linux::LinuxError;
    let is_root = nix::unistd::geteuid().is_root();
    match &e {
        LinuxError::Permission { path, capability } if !is_root => {
            let hint = if path.starts_with(state_dir) {
                format!(
                    "; run as root, or give a state directory you can write (--state-dir DIR, e.g. --state-dir /tmp/ecosched-{}); cgroup cpusets and cpufreq still need root",
                    nix::unistd::geteuid()
                )
            } else {
                "; run as root".to_string()
            };
            anyhow::anyhow!(
                "{}: permission denied: this needs {capability}, and ecosched runs as user {} without it{hint}",
                path.display(),
                nix::unistd::geteuid()
            )
        }
        _ => e.into(),
    }
}
