//! `ecosched doctor [--root DIR] [--json]`: what this machine offers
//! ecosched and what that means for each policy. It reads, never changes:
//! the topology, where each counter kind comes from (the signal resolver)
//! and whether it opens, the power meters (or the estimate `run` uses
//! instead), cpufreq, resctrl, cgroups, other managers of the same knobs;
//! then every missing feature with its path and what it costs, and each
//! policy's verdict — runs, degraded, refused — from
//! [`ecosched_model::Requirements::verdict`], the judgement `run` and the
//! daemon make before they start.
//!
//! On a recorded machine (`--root`) the counters its signal resolution
//! finds are taken to open (its kernel cannot be asked), and the verdicts
//! are those of a run as root on that machine.

use crate::cli::DoctorArgs;
use crate::outcome::{Outcome, UsageError};
use crate::output;
use crate::table::{Align, Table};
use anyhow::{Context, Result};
use ecosched_linux::features::{self, Access, CgroupProbe, CpufreqProbe, PowerProbe, ResctrlProbe};
use ecosched_linux::managers::{self, Manager};
use ecosched_linux::mounts::MountTable;
use ecosched_linux::perf::{Event, FakePerf, PerfBackend, SystemPerf};
use ecosched_linux::signals::{EventOverrides, Resolved};
use ecosched_linux::FsRoot;
use ecosched_model::{CounterKind, Need, Verdict};
use ecosched_policy::{catalogue, PolicyKind};
use serde::Serialize;
use std::collections::BTreeSet;

/// Everything `doctor` reports; `--json` prints it as is (see
/// docs/operators/doctor.md for the shape).
#[derive(Debug, Serialize)]
pub struct Report {
    /// The machine looked at: `/` or the recorded directory.
    pub root: String,
    /// Its shape.
    pub machine: MachineSummary,
    /// Each counter kind: its source and whether it is had.
    pub counters: Vec<CounterLine>,
    /// The resolver's notes (sources passed over and why).
    pub counter_notes: Vec<String>,
    /// Power meters.
    pub power: PowerSection,
    /// cpufreq.
    pub cpufreq: CpufreqProbe,
    /// resctrl monitoring.
    pub resctrl: ResctrlProbe,
    /// cgroup hierarchies.
    pub cgroups: CgroupProbe,
    /// Other managers of the same knobs.
    pub managers: Vec<Manager>,
    /// Every missing feature: its path and what it costs.
    pub missing: Vec<MissingFeature>,
    /// Every policy's verdict here.
    pub policies: Vec<PolicyVerdict>,
}

/// The machine's shape.
#[derive(Debug, Serialize)]
pub struct MachineSummary {
    /// Its name (CPU model and counts).
    pub name: String,
    /// Packages (sockets).
    pub packages: usize,
    /// Physical cores.
    pub cores: usize,
    /// Logical CPUs.
    pub cpus: usize,
    /// Hardware threads per core (1: no SMT).
    pub threads_per_core: usize,
    /// Last-level caches.
    pub llcs: usize,
    /// NUMA nodes.
    pub numa_nodes: usize,
}

/// One counter kind.
#[derive(Debug, Serialize)]
pub struct CounterLine {
    /// Its key (`lines_in`).
    pub kind: CounterKind,
    /// Where it comes from, or why it is missing, in words.
    pub source: String,
    /// Whether a task's reading has it here.
    pub available: bool,
    /// Why not, when it is not.
    pub why: Option<String>,
}

/// The power meters and what `run` uses.
#[derive(Debug, Serialize)]
pub struct PowerSection {
    /// RAPL zones and hwmon sensors, each readable or not.
    pub meters: Vec<features::MeterProbe>,
    /// What is absent, with its path.
    pub absent: Vec<String>,
    /// Whether energy is measured (a meter reads).
    pub measured: bool,
    /// The estimate `run` uses where nothing is measured: its model and
    /// basis (a matched preset or the generic model).
    pub estimate: Option<String>,
}

/// A feature this machine lacks.
#[derive(Debug, Serialize)]
pub struct MissingFeature {
    /// What it is (`cpufreq`).
    pub feature: String,
    /// The path that shows it missing.
    pub path: String,
    /// What its absence costs, naming the policies it refuses or degrades.
    pub consequence: String,
}

/// One policy's verdict.
#[derive(Debug, Serialize)]
pub struct PolicyVerdict {
    /// Its name (`--policy NAME`).
    pub name: String,
    /// Its family.
    pub family: String,
    /// `runs`, `degraded` or `refused`.
    pub verdict: &'static str,
    /// How it is degraded, or why it is refused.
    pub reasons: Vec<String>,
    #[serde(skip)]
    needs: BTreeSet<Need>,
    #[serde(skip)]
    counters: BTreeSet<CounterKind>,
}

/// Run `ecosched doctor`.
pub fn run(args: &DoctorArgs) -> Result<Outcome> {
    let root = match &args.root {
        None => FsRoot::live(),
        Some(dir) if dir.join("sys").is_dir() => FsRoot::recorded(dir),
        Some(dir) => {
            return Err(UsageError(format!(
                "--root {}: not a Linux root (no sys/ inside)",
                dir.display()
            ))
            .into())
        }
    };
    let report = examine(&root)?;
    Ok(Outcome::ok(if args.json {
        output::json(&report)?
    } else {
        render(&report)
    }))
}

/// Look at the machine at `root`.
fn examine(root: &FsRoot) -> Result<Report> {
    let found = ecosched_linux::topology::discover(root).with_context(|| {
        format!(
            "cannot discover the topology under {}",
            root.dir().display()
        )
    })?;
    let topo = &found.topology;
    let resolution = ecosched_linux::signals::resolve_live(root, &EventOverrides::default())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let power = features::probe_power(root).context("looking at the power meters")?;
    let recorded = recorded_perf(root, &resolution);
    let perf: &dyn PerfBackend = if root.is_live() {
        &SystemPerf
    } else {
        &recorded
    };
    // A meter only root may read measures for the run as root the
    // verdicts are about.
    let measured_as_root = power
        .meters
        .iter()
        .any(|m| matches!(m.access, Access::Readable | Access::PermissionDenied));
    let offer = ecosched_linux::offer::offered(root, perf, &resolution, &found, measured_as_root);
    let cpuinfo = root
        .read_opt("proc/cpuinfo")
        .ok()
        .flatten()
        .unwrap_or_default();
    let identity = crate::power_model::identity(&found.machine_name, &cpuinfo, topo);
    let estimate = (!power.measures()).then(|| {
        crate::power_model::Choice::Auto
            .resolve(&identity, topo)
            .model
    });
    let counters = CounterKind::ALL
        .into_iter()
        .map(|kind| {
            let source = match resolution.kinds.get(&kind) {
                Some(Resolved::Encoded { name, .. }) => format!("{name} (model-specific)"),
                Some(Resolved::Generic { name }) => format!("perf generic {name}"),
                Some(Resolved::Resctrl { feature }) => format!("resctrl {feature}"),
                Some(Resolved::Missing { why }) => format!("none: {why}"),
                None => software_source(kind).to_string(),
            };
            let why = offer
                .counters
                .unavailable
                .iter()
                .find(|(k, _)| *k == kind)
                .map(|(_, w)| w.clone());
            CounterLine {
                kind,
                source,
                available: offer.capabilities.counters.contains(&kind),
                why,
            }
        })
        .collect();
    let mounts = MountTable::read(root).context("reading the mount table")?;
    let policies = verdicts(&offer.capabilities);
    let cpufreq = features::probe_cpufreq(root, &found.cpufreq, &found.pstate);
    let resctrl = features::probe_resctrl(root);
    let mut report = Report {
        root: root.dir().display().to_string(),
        machine: MachineSummary {
            name: found.machine_name.clone(),
            packages: topo.package_count(),
            cores: topo
                .cpus
                .iter()
                .map(|c| c.core)
                .collect::<BTreeSet<_>>()
                .len(),
            cpus: topo.cpus.len(),
            threads_per_core: found
                .smt_siblings
                .iter()
                .map(|s| s.len())
                .max()
                .unwrap_or(1),
            llcs: topo.last_level_caches().len(),
            numa_nodes: topo.numa_nodes.len().max(1),
        },
        counters,
        counter_notes: resolution.notes.clone(),
        power: PowerSection {
            measured: power.measures(),
            meters: power.meters.clone(),
            absent: power.absent.clone(),
            estimate,
        },
        cpufreq,
        resctrl,
        cgroups: features::probe_cgroups(root, &mounts),
        managers: managers::detect(root),
        missing: Vec::new(),
        policies,
    };
    report.missing = missing_features(root, &report, &power);
    Ok(report)
}

/// The perf events of a recorded machine: every one opens, unless its
/// PMU list shows no core PMU, where no hardware event does (`ENOENT`,
/// what the kernel answers there).
fn recorded_perf(root: &FsRoot, resolution: &ecosched_linux::signals::Resolution) -> FakePerf {
    let perf = FakePerf::new();
    if let Ok(None) = features::core_pmu(root) {
        for event in Event::HARDWARE.into_iter().chain(resolution.perf_events()) {
            perf.set_unavailable(event, nix::libc::ENOENT);
        }
    }
    perf
}

/// Where a kind the resolver does not cover (software counters) comes
/// from.
fn software_source(kind: CounterKind) -> &'static str {
    match kind {
        CounterKind::OnCpuTime => "/proc/<pid>/schedstat, else perf task-clock",
        CounterKind::RunqueueWait => "/proc/<pid>/schedstat",
        CounterKind::ContextSwitches => "/proc/<pid>/status",
        CounterKind::Migrations => "perf software event cpu-migrations",
        _ => "perf",
    }
}

/// Each policy of the catalogue judged against `caps`.
fn verdicts(caps: &ecosched_model::Capabilities) -> Vec<PolicyVerdict> {
    catalogue::variants()
        .map(|(family, variant)| {
            let refused = |reason: &str| PolicyVerdict {
                name: variant.name.to_string(),
                family: family.name.to_string(),
                verdict: "refused",
                reasons: vec![reason.to_string()],
                needs: BTreeSet::new(),
                counters: BTreeSet::new(),
            };
            let needs = match catalogue::needs(variant.name) {
                Ok(n) => n,
                Err(e) => return refused(&e.to_string()),
            };
            let requirements = match (needs.kind, needs.requirements) {
                (PolicyKind::Local, Some(r)) => r,
                (PolicyKind::Cluster, _) => {
                    return refused("it balances a cluster: simulator only (a cluster scenario)")
                }
                _ => return refused("it searches in the simulator: `ecosched compare` only"),
            };
            let verdict = requirements.verdict(caps);
            let shortfalls = verdict.shortfalls();
            PolicyVerdict {
                name: variant.name.to_string(),
                family: family.name.to_string(),
                verdict: match verdict {
                    Verdict::Runs => "runs",
                    Verdict::Degraded { .. } => "degraded",
                    Verdict::Refused { .. } => "refused",
                },
                reasons: shortfalls.iter().map(|s| s.text.clone()).collect(),
                needs: shortfalls.iter().map(|s| s.need).collect(),
                counters: shortfalls.iter().flat_map(|s| s.counters.clone()).collect(),
            }
        })
        .collect()
}

/// The policies refused and degraded by shortfalls that `hit` picks, in
/// words.
fn cost(policies: &[PolicyVerdict], hit: impl Fn(&PolicyVerdict) -> bool) -> String {
    let names = |verdict: &str| -> Vec<&str> {
        policies
            .iter()
            .filter(|p| p.verdict == verdict && hit(p))
            .map(|p| p.name.as_str())
            .collect()
    };
    let mut parts = Vec::new();
    let refused = names("refused");
    if !refused.is_empty() {
        parts.push(format!("refused: {}", refused.join(", ")));
    }
    let degraded = names("degraded");
    if !degraded.is_empty() {
        parts.push(format!("degraded: {}", degraded.join(", ")));
    }
    if parts.is_empty() {
        "no policy is affected".into()
    } else {
        parts.join("; ")
    }
}

/// Every feature ecosched uses that `root` lacks.
fn missing_features(root: &FsRoot, r: &Report, power: &PowerProbe) -> Vec<MissingFeature> {
    let mut out = Vec::new();
    let p = &r.policies;
    if !r.cpufreq.present {
        out.push(MissingFeature {
            feature: "cpufreq".into(),
            path: format!("{} absent", r.cpufreq.path),
            consequence: format!(
                "no frequency control; {}",
                cost(p, |v| v.needs.contains(&Need::Frequency))
            ),
        });
    }
    if !power.measures() {
        let mut path = power.absent.join("; ");
        for m in &power.meters {
            let state = match &m.access {
                Access::Readable => continue,
                Access::PermissionDenied => "permission denied (root only)".to_string(),
                Access::Unreadable(why) => why.clone(),
            };
            path.push_str(&format!("; {}: {state}", m.path));
        }
        out.push(MissingFeature {
            feature: "power meter (RAPL, hwmon)".into(),
            path: path.trim_start_matches("; ").to_string(),
            consequence: format!(
                "energy is an ESTIMATE ({}); {}",
                r.power.estimate.as_deref().unwrap_or("no model"),
                cost(p, |v| v.needs.contains(&Need::Power))
            ),
        });
    }
    let hardware: BTreeSet<CounterKind> = CounterKind::ALL
        .into_iter()
        .filter(|k| is_pmu_kind(*k))
        .collect();
    let lacking: Vec<&CounterLine> = r
        .counters
        .iter()
        .filter(|c| !c.available && hardware.contains(&c.kind))
        .collect();
    if let Some(first) = lacking.first() {
        let names: Vec<String> = lacking.iter().map(|c| key(c.kind)).collect();
        out.push(MissingFeature {
            feature: "hardware counters".into(),
            path: match features::core_pmu(root) {
                Ok(None) => format!(
                    "{}/cpu absent (no core PMU: {})",
                    root.path(features::PMU_DIR).display(),
                    first.why.as_deref().unwrap_or("not opened")
                ),
                _ => format!(
                    "perf_event_open: {}",
                    first.why.as_deref().unwrap_or("not opened")
                ),
            },
            consequence: format!(
                "{} not counted; {}",
                names.join(", "),
                cost(p, |v| v.counters.iter().any(|k| hardware.contains(k)))
            ),
        });
    }
    if r.resctrl.absent.is_some() {
        out.push(MissingFeature {
            feature: "resctrl L3 monitoring (CMT, MBM)".into(),
            path: format!("{}/info/L3_MON absent", r.resctrl.path),
            consequence: format!(
                "no LLC occupancy from resctrl; {}",
                cost(p, |v| v.counters.contains(&CounterKind::LlcOccupancy))
            ),
        });
    }
    for kind in [CounterKind::OnCpuTime] {
        if let Some(c) = r.counters.iter().find(|c| c.kind == kind && !c.available) {
            out.push(MissingFeature {
                feature: "schedstat".into(),
                path: format!("{} absent", root.path("proc/<pid>/schedstat").display()),
                consequence: format!(
                    "{}; {}",
                    c.why
                        .as_deref()
                        .unwrap_or("no on-CPU time or run-queue wait"),
                    cost(p, |v| v.counters.contains(&kind))
                ),
            });
        }
    }
    let cg = &r.cgroups;
    if cg.version != "unknown" && cg.v1_cpuset.is_none() && !cg.v2_controllers.contains("cpuset") {
        out.push(MissingFeature {
            feature: "cpuset cgroup".into(),
            path: format!(
                "{} (no cpuset controller)",
                root.path("sys/fs/cgroup").display()
            ),
            consequence: "managed CPU sets are applied as each task's affinity only".into(),
        });
    }
    out
}

/// Whether `kind` is counted by a PMU (not resctrl, not software).
fn is_pmu_kind(kind: CounterKind) -> bool {
    !matches!(
        kind,
        CounterKind::OnCpuTime
            | CounterKind::RunqueueWait
            | CounterKind::ContextSwitches
            | CounterKind::Migrations
            | CounterKind::LlcOccupancy
    )
}

/// The report as short aligned sections.
fn render(r: &Report) -> String {
    let mut out = String::new();
    let m = &r.machine;
    let section = |out: &mut String, title: &str, rows: Vec<(String, String)>| {
        out.push_str(title);
        out.push('\n');
        let mut t = Table::plain(&[Align::Left, Align::Left]);
        for (k, v) in rows {
            t.row([format!("  {k}"), v]);
        }
        out.push_str(&t.render());
        out.push('\n');
    };
    section(
        &mut out,
        "machine",
        vec![
            ("name".into(), m.name.clone()),
            ("root".into(), r.root.clone()),
            (
                "shape".into(),
                format!(
                    "{} package(s), {} core(s), {} CPU(s), {} thread(s) per core, {} LLC(s), {} NUMA node(s)",
                    m.packages, m.cores, m.cpus, m.threads_per_core, m.llcs, m.numa_nodes
                ),
            ),
        ],
    );
    let mut rows: Vec<(String, String)> = r
        .counters
        .iter()
        .map(|c| {
            let key = key(c.kind);
            let state = match (&c.available, &c.why) {
                (true, _) => "yes".to_string(),
                (false, Some(why)) => format!("NO ({why})"),
                (false, None) => "NO".to_string(),
            };
            (key, format!("{state}; {}", c.source))
        })
        .collect();
    rows.extend(
        r.counter_notes
            .iter()
            .map(|n| ("note".to_string(), n.clone())),
    );
    section(&mut out, "counters", rows);
    let mut rows: Vec<(String, String)> = r
        .power
        .meters
        .iter()
        .map(|mtr| {
            let state = match &mtr.access {
                Access::Readable => "readable".to_string(),
                Access::PermissionDenied => "permission denied".to_string(),
                Access::Unreadable(why) => format!("unreadable: {why}"),
            };
            (
                format!("{} {}", mtr.kind, mtr.name),
                format!("{state} ({})", mtr.path),
            )
        })
        .collect();
    rows.extend(
        r.power
            .absent
            .iter()
            .map(|a| ("absent".to_string(), a.clone())),
    );
    rows.push((
        "run uses".into(),
        match &r.power.estimate {
            None => "the meters above (measured)".into(),
            Some(model) => format!("an ESTIMATE: {model}"),
        },
    ));
    section(&mut out, "power", rows);
    let f = &r.cpufreq;
    let rows = if f.present {
        vec![
            ("driver".into(), f.drivers.join(", ")),
            ("governors".into(), f.governors.join(" ")),
            (
                "EPP".into(),
                match &f.epp {
                    Some(e) => format!("{e} (offered: {})", f.epp_offered.join(" ")),
                    None => "none".into(),
                },
            ),
            (
                "boost".into(),
                match f.boost {
                    Some(true) => "on".into(),
                    Some(false) => "off".into(),
                    None => "unknown".into(),
                },
            ),
            (
                "pstate driver".into(),
                f.pstate_driver.clone().unwrap_or_else(|| "none".into()),
            ),
        ]
    } else {
        vec![("absent".into(), f.path.clone())]
    };
    section(&mut out, "cpufreq", rows);
    let rc = &r.resctrl;
    section(
        &mut out,
        "resctrl",
        vec![
            (
                "mounted".into(),
                format!("{} ({})", if rc.mounted { "yes" } else { "no" }, rc.path),
            ),
            (
                "monitoring".into(),
                match &rc.absent {
                    Some(why) => why.clone(),
                    None => format!(
                        "CMT {}, MBM {}, {} RMIDs",
                        yes(rc.cmt),
                        yes(rc.mbm),
                        rc.num_rmids.unwrap_or(0)
                    ),
                },
            ),
        ],
    );
    let cg = &r.cgroups;
    let v2 = match &cg.v2_mount {
        Some(p) => {
            let c: Vec<&str> = cg.v2_controllers.iter().map(String::as_str).collect();
            format!("{p}: {}", c.join(" "))
        }
        None => "not mounted".into(),
    };
    section(
        &mut out,
        "cgroups",
        vec![
            ("version".into(), cg.version.to_string()),
            (
                "v1 cpuset".into(),
                cg.v1_cpuset.clone().unwrap_or_else(|| "no".into()),
            ),
            (
                "v1 freezer".into(),
                cg.v1_freezer.clone().unwrap_or_else(|| "no".into()),
            ),
            ("v2".into(), v2),
        ],
    );
    let rows = if r.managers.is_empty() {
        vec![(
            "none".into(),
            "no other manager of governors, EPP or placement found".into(),
        )]
    } else {
        r.managers
            .iter()
            .map(|mg| {
                let mut how = Vec::new();
                if mg.running {
                    how.push(match mg.pid {
                        Some(pid) => format!("running (PID {pid})"),
                        None => "loaded".into(),
                    });
                }
                if let Some(link) = &mg.enabled_by {
                    how.push(format!("enabled ({link})"));
                }
                (
                    mg.name.clone(),
                    format!("{}; fights over {}", how.join(", "), mg.conflicts_over),
                )
            })
            .collect()
    };
    section(&mut out, "other managers", rows);
    let rows = if r.missing.is_empty() {
        vec![("none".into(), "every feature ecosched uses is here".into())]
    } else {
        r.missing
            .iter()
            .map(|mf| {
                (
                    mf.feature.clone(),
                    format!("{}: {}", mf.path, mf.consequence),
                )
            })
            .collect()
    };
    section(&mut out, "missing", rows);
    let rows = r
        .policies
        .iter()
        .map(|pv| {
            let text = if pv.reasons.is_empty() {
                pv.verdict.to_string()
            } else {
                format!("{}: {}", pv.verdict, pv.reasons.join("; "))
            };
            (pv.name.clone(), text)
        })
        .collect();
    section(&mut out, "policies", rows);
    out
}

/// A counter kind's key, as `--json` and machine files name it.
fn key(kind: CounterKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}
