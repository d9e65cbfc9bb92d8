//! `ecosched recommend`: which policy and parameters to use for a workload
//! on a machine, and the saving to expect with its spread
//! (`docs/operators/recommend.md`). The machine is a preset, a machine
//! file, or this host: its preset when one describes its CPU (as `run`'s
//! power estimate matches it), else a machine built from it in memory as
//! `topology --emit-machine` writes it. The workload is a scenario or a
//! class generated for the machine. Picking is
//! `ecosched_engine::recommend`'s; this module finds the inputs and
//! renders the answer.

use crate::cli::RecommendArgs;
use crate::outcome::{usage, Outcome, UsageError};
use crate::output;
use crate::table::{Align, Table};
use anyhow::{Context, Result};
use ecosched_engine::experiment::SimOptions;
use ecosched_engine::recommend::{
    self, CandidateFigure, HostLimits, Range, Recommendation, MAX_SEEDS,
};
use ecosched_engine::suite::{MIN_SAVING, SLOWDOWN};
use ecosched_engine::workload_class::WorkloadClass;
use ecosched_linux::{perf, topology, FsRoot};
use ecosched_model::{Capabilities, CounterKind, PowerSource};
use ecosched_sim::machine::{Machine, MachineSpec};
use ecosched_sim::scenario::{parse_toml, preset, SCENARIOS};
use ecosched_sim::Scenario;
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The machine the recommendation is for, and how it was found.
struct ChosenMachine {
    machine: Machine,
    /// What a scenario's `machine` key says: a preset's name or a file's
    /// absolute path (or, for a host described in memory, its name).
    label: String,
    /// Where it comes from, one sentence.
    source: String,
    /// What the host lets policies use, when the machine is a host's.
    host: Option<HostLimits>,
}

/// The answer with where its inputs came from, for `--json`.
#[derive(Debug, Serialize)]
struct RecommendJson<'a> {
    /// Where the machine comes from.
    machine_source: &'a str,
    /// What the workload is.
    workload: &'a str,
    #[serde(flatten)]
    recommendation: &'a Recommendation,
}

/// `ecosched recommend`.
pub fn recommend(args: &RecommendArgs) -> Result<Outcome> {
    if !(1..=MAX_SEEDS).contains(&args.seeds) {
        return Err(usage(format!(
            "--seeds {}: must be 1–{MAX_SEEDS}",
            args.seeds
        )));
    }
    let chosen = choose_machine(args.machine.as_deref(), args.root.as_deref())?;
    let (scenario, workload) = match (&args.workload, &args.class) {
        (Some(w), None) => (
            workload_on(w, &chosen)?,
            format!("the workload of scenario {w}"),
        ),
        (None, Some(c)) => {
            let class: WorkloadClass =
                c.parse()
                    .map_err(|e: ecosched_engine::workload_class::ClassError| {
                        usage(format!("--class {}", e.0))
                    })?;
            let s = class
                .scenario(&chosen.machine, &chosen.label)
                .with_context(|| format!("generating workload class {class}"))?;
            let what = format!("class {class}: {}", s.spec.description);
            (s, what)
        }
        _ => {
            return Err(usage(
                "give --workload SCENARIO or --class CLASS (one of them)",
            ))
        }
    };
    let mut progress =
        crate::progress::Progress::spinner(crate::progress::wanted(args.json), "recommend");
    let found = recommend::recommend(
        &scenario,
        args.seeds,
        &SimOptions::default(),
        chosen.host.as_ref(),
        &mut |c| progress.stage(c),
    )
    .with_context(|| format!("simulating the candidates on {}", scenario.spec.name))?;
    let stdout = if args.json {
        output::json(&RecommendJson {
            machine_source: &chosen.source,
            workload: &workload,
            recommendation: &found,
        })?
    } else {
        render(&found, &chosen.source, &workload)
    };
    Ok(Outcome::ok(stdout))
}

/// `--machine` (a preset or a file), else this host under `root`.
fn choose_machine(asked: Option<&str>, root: Option<&Path>) -> Result<ChosenMachine> {
    let Some(name) = asked else {
        return host_machine(root);
    };
    if let Some(m) = preset(name) {
        return Ok(ChosenMachine {
            machine: m.with_context(|| format!("--machine {name}"))?,
            label: name.to_string(),
            source: format!("built-in preset {name}"),
            host: None,
        });
    }
    let path = PathBuf::from(name);
    if !path.is_file() {
        return Err(usage(format!(
            "--machine {name}: neither a built-in machine preset nor a file; presets: {}",
            ecosched_sim::scenario::PRESETS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let text =
        ecosched_model::user_file::read_text(&path, ecosched_model::user_file::TEXT_MAX_BYTES)
            .with_context(|| format!("--machine {name}: cannot read {}", path.display()))?;
    let spec: MachineSpec = parse_toml(name, &text)?;
    let machine = Machine::build(spec)?;
    let label = std::path::absolute(&path)
        .with_context(|| format!("--machine {name}"))?
        .display()
        .to_string();
    Ok(ChosenMachine {
        source: format!("machine file {name} ({})", machine.spec.name),
        machine,
        label,
        host: None,
    })
}

/// This host: the preset that describes its CPU, else a machine built
/// from what sysfs and procfs say, with the generic power model's figures
/// for what they do not.
fn host_machine(root: Option<&Path>) -> Result<ChosenMachine> {
    let root = match root {
        None => FsRoot::live(),
        Some(dir) if dir.join("sys/devices/system/cpu").is_dir() => FsRoot::recorded(dir),
        Some(dir) => {
            return Err(UsageError(format!(
                "--root {}: not a Linux root (no sys/devices/system/cpu inside)",
                dir.display()
            ))
            .into())
        }
    };
    let found = topology::discover(&root).with_context(|| {
        format!(
            "cannot discover this host's topology under {} (give --machine NAME|FILE instead)",
            root.dir().display()
        )
    })?;
    let host = Some(host_limits(&root, &found));
    let cpuinfo = root
        .read_opt("proc/cpuinfo")
        .ok()
        .flatten()
        .unwrap_or_default();
    let identity = crate::power_model::identity(&found.machine_name, &cpuinfo, &found.topology);
    if let Some(name) = crate::power_model::matching_preset(&identity) {
        if let Some(m) = preset(name) {
            return Ok(ChosenMachine {
                machine: m.with_context(|| format!("preset {name}"))?,
                label: name.to_string(),
                source: format!(
                    "this host ({}) is built-in preset {name}, matched by its CPU",
                    found.machine_name
                ),
                host,
            });
        }
    }
    let text = crate::machine_emit::emit(&found, &root, "this-host");
    let origin = format!("the machine built from {}", root.dir().display());
    let spec: MachineSpec = parse_toml(&origin, &text)?;
    let to_fill = text.matches("TO FILL IN").count();
    Ok(ChosenMachine {
        machine: Machine::build(spec).with_context(|| origin.clone())?,
        label: "this-host".into(),
        source: format!(
            "this host ({}) matches no built-in preset: a machine built from it in memory as \
             `ecosched topology --emit-machine` writes it; the {to_fill} figures Linux does not \
             report (power, voltages, memory bandwidth and latency) are placeholders, the power \
             figures the generic model's, so the savings below are as good as those figures; \
             emit the file, fill them in and pass it with --machine",
            found.machine_name
        ),
        host,
    })
}

/// What this host lets a policy use, as `run` would find it: frequency
/// control where cpufreq is there, and on the live host, when perf cannot
/// count instructions (a VM without a virtual PMU), no hardware counter at
/// all. Where it can, every counter is taken as available: which of the
/// rest this CPU's PMU serves is the signal resolver's question at `run`.
fn host_limits(root: &FsRoot, found: &topology::LinuxTopology) -> HostLimits {
    let frequency = !found.cpufreq.is_empty();
    let mut counters: BTreeSet<CounterKind> = CounterKind::ALL.into_iter().collect();
    let mut no_counters_because = None;
    if root.is_live() {
        let probe = perf::probe(&perf::SystemPerf);
        if let Some((_, why)) = probe
            .unavailable
            .iter()
            .find(|(k, _)| *k == CounterKind::Instructions)
        {
            counters.retain(|k| !CounterKind::PERF_HARDWARE.contains(k));
            no_counters_because = Some(format!("no hardware counters: {why}"));
        }
    }
    HostLimits {
        capabilities: Capabilities {
            counters,
            power: Some(PowerSource::Estimated),
            affinity: true,
            frequency,
            gang: true,
        },
        no_counters_because,
        no_frequency_because: (!frequency).then(|| "no cpufreq policy in sysfs".to_string()),
    }
}

/// A scenario's workload on the chosen machine.
fn workload_on(workload: &str, chosen: &ChosenMachine) -> Result<Scenario> {
    let (origin, text) = match SCENARIOS.iter().find(|(n, _)| *n == workload) {
        Some((name, text)) => (format!("built-in scenario {name}"), text.to_string()),
        None => {
            let path = Path::new(workload);
            if !path.is_file() {
                return Err(usage(format!(
                    "--workload {workload}: neither a built-in scenario (`ecosched scenarios` lists them) nor a file"
                )));
            }
            let text = ecosched_model::user_file::read_text(
                path,
                ecosched_model::user_file::TEXT_MAX_BYTES,
            )
            .with_context(|| format!("--workload {workload}: cannot read it"))?;
            (workload.to_string(), text)
        }
    };
    let mut spec: ecosched_sim::scenario::ScenarioSpec = parse_toml(&origin, &text)?;
    spec.machine = chosen.label.clone();
    Scenario::from_spec_on(
        &format!("{origin} on {}", chosen.label),
        spec,
        chosen.machine.clone(),
    )
    .with_context(|| format!("--workload {workload} on {}", chosen.label))
}

fn range(r: Option<Range>) -> String {
    match r {
        Some(r) if (r.max - r.min).abs() < 5e-4 => format!("{:.3}", r.median),
        Some(r) => format!("{:.3} [{:.3}–{:.3}]", r.median, r.min, r.max),
        None => "—".into(),
    }
}

fn render(r: &Recommendation, machine_source: &str, workload: &str) -> String {
    let seeds: Vec<String> = r.seeds.iter().map(u64::to_string).collect();
    let default = r.default_name();
    let mut out = format!(
        "machine:  {machine_source}\nworkload: {workload}\nseeds:    {} (figures per {})\ndefault:  {default}, the better of performance and schedutil on each seed\n\n",
        seeds.join(", "),
        r.normalisation.unit()
    );
    match (&r.recommended, &r.run_fast_because) {
        (Some(c), _) => {
            let e = c.energy.map_or(1.0, |e| e.median);
            out.push_str(&format!(
                "recommended: {}\n  energy per unit of work ×{} against the default: a saving of {:.1} % (median over {} seeds)\n  throughput ×{}\n  run it: ecosched run --policy {}{} -- COMMAND\n\n",
                c.candidate.label(),
                range(c.energy),
                (1.0 - e) * 100.0,
                r.seeds.len(),
                range(c.throughput),
                c.candidate.policy,
                c.candidate
                    .params
                    .iter()
                    .map(|p| format!(" --param {p}"))
                    .collect::<String>()
            ));
        }
        (None, why) => {
            out.push_str(&format!(
                "nothing beats running fast here ({default} in the simulator): run the work without an ecosched policy.\n  why: {}\n\n",
                why.as_deref().unwrap_or("no candidate qualifies")
            ));
        }
    }
    out.push_str(&table(&r.candidates, r.seeds.len()));
    crate::table::fit_lines(&out)
}

fn table(candidates: &[CandidateFigure], seeds: usize) -> String {
    let mut t = Table::new(
        &["candidate", "× energy/work", "× throughput", "saves"],
        &[Align::Left, Align::Right, Align::Right, Align::Left],
    );
    let mut refused = Vec::new();
    for c in candidates {
        if let Some(why) = &c.refused {
            refused.push(format!("  {}: {why}\n", c.candidate.label()));
            continue;
        }
        t.row([
            c.candidate.label(),
            range(c.energy),
            range(c.throughput),
            if c.qualifies { "yes" } else { "" }.to_string(),
        ]);
    }
    let mut out = format!(
        "candidates (× = against the default on the same seed; median [lowest–highest] over {seeds} seeds; a candidate saves when it uses at least {:.0} % less energy per unit of work on every seed at no more than {:.0} % lower throughput on any):\n{}",
        MIN_SAVING * 100.0,
        SLOWDOWN * 100.0,
        t.render()
    );
    if !refused.is_empty() {
        out.push_str(
            "\nrefused (by the simulated machine under --observe linux, or by this host as `ecosched run` would refuse them):\n",
        );
        out.extend(refused);
    }
    out
}
