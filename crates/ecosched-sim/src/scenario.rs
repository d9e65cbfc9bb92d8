//! Scenarios: a machine, a workload and a stop condition, written in TOML
//! (`docs/researchers/scenario-files.md`). Built-in ones live in
//! `scenarios/*.toml` and are parsed by the same code as a user's file, so
//! every built-in is also a parser test.
//!
//! ```toml
//! name = "merkel-4stream"
//! description = "four stream instances, one per core"
//! machine = "q6600"          # a preset, or a path to a machine TOML file
//! meter = "package"          # energy meter the metrics use: package | system
//! governor = "performance"   # kernel governor before any policy acts
//! seed = 1
//! tick_ms = 1.0
//! # duration_s = 600         # stop here even if tasks remain
//!
//! [[tasks]]
//! profile = "stream"         # built-in, or one defined under [profiles.NAME]
//! count = 4                  # instances are named stream#0 … stream#3
//! length_s = 60              # seconds alone at the highest frequency
//! # instructions = 1.2e11    # … or an instruction count
//! # start_s, stagger_s, completions (restart until k done), nice, after = "other-task"
//! # renice = { after_completions = 3, nice = -6 }   # nice of the later runs
//!
//! # A `make -jN` build instead of (or beside) [[tasks]]; see `jobgraph.rs`.
//! # [jobgraph]
//! # jobs = 400, parallelism = 2, work_ms = [50, 300], stage_width = [4, 40]
//! # parallelism_hint = 2     # what the application declares (Snapshot::parallelism_hint)
//! ```

use crate::bounds::TaskLoad;
use crate::error::{Location, SimError};
use crate::jobgraph::JobGraphSpec;
use crate::machine::{Machine, MachineSpec};
use crate::profile::Profile;
use ecosched_model::user_file::{read_text, TEXT_MAX_BYTES};
use ecosched_model::{Governor, Meter};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One line of the workload.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Name (default: the profile's); instances get `#i` suffixes when `count > 1`.
    #[serde(default)]
    pub name: Option<String>,
    /// Profile name.
    pub profile: String,
    /// Number of instances.
    #[serde(default = "one")]
    pub count: u32,
    /// Length as seconds alone at the highest frequency on this machine.
    #[serde(default)]
    pub length_s: Option<f64>,
    /// Length as instructions.
    #[serde(default)]
    pub instructions: Option<f64>,
    /// Arrival time of the first instance, s.
    #[serde(default)]
    pub start_s: f64,
    /// Delay between successive instances' arrivals, s.
    #[serde(default)]
    pub stagger_s: f64,
    /// Restart each instance until it has completed this many times (Patel).
    #[serde(default = "one")]
    pub completions: u32,
    /// Nice value.
    #[serde(default)]
    pub nice: i32,
    /// A nice value that replaces `nice` once an instance has completed a
    /// number of times (Patel's dynamic priorities, §9.2.2: the first
    /// priority for three runs, another for the last two).
    #[serde(default)]
    pub renice: Option<ReniceSpec>,
    /// Start only once every instance of the named task has finished.
    #[serde(default)]
    pub after: Option<String>,
    /// Whether ecosched manages it (unmanaged tasks are background load).
    #[serde(default = "yes")]
    pub managed: bool,
}

/// A change of nice value between an instance's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReniceSpec {
    /// Runs completed before the new nice value applies (the run after
    /// this many completions starts with it).
    pub after_completions: u32,
    /// The new nice value, −20..19.
    pub nice: i32,
}

impl TaskSpec {
    /// The nice value of an instance's run that starts after `completed`
    /// completions.
    pub fn nice_after(&self, completed: u32) -> i32 {
        match self.renice {
            Some(r) if completed >= r.after_completions => r.nice,
            _ => self.nice,
        }
    }
}

fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}

/// Short, frequent kernel/daemon threads (`docs/design/simulator.md`, "The
/// kernel scheduler").
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransientSpec {
    /// How many such threads.
    pub count: u32,
    /// Mean time between wake-ups of each, ms.
    pub period_ms: f64,
    /// Run time per wake-up, ms.
    pub run_ms: f64,
    /// Nice value (default 0). Kernel threads that pre-empt user work at
    /// once (Dhiman §3, §4.1: "they have high priority") are −20.
    #[serde(default)]
    pub nice: i32,
    /// Bind thread `k` to CPU `k mod CPUs`, as the kernel's per-CPU
    /// workers are (default false: free to run anywhere). A bound thread
    /// wakes on its own CPU and pre-empts whatever runs there, which is
    /// what lets the count-based balancer see a passing imbalance (Dhiman
    /// §4.1, Fig. 3b).
    #[serde(default)]
    pub per_cpu: bool,
}

/// A scenario as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// Name.
    pub name: String,
    /// One line.
    pub description: String,
    /// The paper experiment it reproduces, if any.
    #[serde(default)]
    pub source: Option<String>,
    /// Machine preset name or machine file path.
    pub machine: String,
    /// RNG seed.
    #[serde(default)]
    pub seed: u64,
    /// Scheduler tick, ms.
    #[serde(default = "default_tick")]
    pub tick_ms: f64,
    /// Energy meter for metrics.
    #[serde(default = "default_meter")]
    pub meter: Meter,
    /// Kernel governor in force before a policy acts.
    #[serde(default = "default_governor")]
    pub governor: Governor,
    /// Stop after this many simulated seconds.
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// Extra profiles.
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
    /// The workload.
    #[serde(default)]
    pub tasks: Vec<TaskSpec>,
    /// Background transient threads.
    #[serde(default)]
    pub transients: Option<TransientSpec>,
    /// A `make -jN` build (managed), generated from the seed.
    #[serde(default)]
    pub jobgraph: Option<JobGraphSpec>,
    /// The parallelism the application declares to ecosched, reported in
    /// every snapshot (Richling §IV-B "support by application"); the
    /// simulator's stand-in for `ecosched run --parallelism N`.
    #[serde(default)]
    pub parallelism_hint: Option<u32>,
}

pub(crate) fn default_tick() -> f64 {
    1.0
}
pub(crate) fn default_meter() -> Meter {
    Meter::System
}
pub(crate) fn default_governor() -> Governor {
    Governor::Performance
}

/// Longest time a scenario may name (a duration, a task's length, an
/// arrival), s: about three years. Simulated time is kept in 64-bit
/// nanoseconds (584 years), and sums of these stay far below that.
pub const MAX_SECONDS: f64 = 1e8;

/// Most instructions a task may be given: per-task counters are 64-bit,
/// and this leaves room for restarts.
pub const MAX_INSTRUCTIONS: f64 = 1e18;

fn too_long(s: f64) -> String {
    format!("{s:e} s is longer than the simulator represents (at most {MAX_SECONDS:e} s)")
}

/// A scenario ready to simulate.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// As written.
    pub spec: ScenarioSpec,
    /// The file it came from, or `built-in scenario NAME`.
    pub origin: String,
    /// The machine.
    pub machine: Arc<Machine>,
    /// Every profile the tasks use, by name.
    pub profiles: BTreeMap<String, Arc<Profile>>,
}

macro_rules! builtin_files {
    ($dir:literal: $($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!($dir, "/", $name, ".toml")))),*]
    };
}

/// Built-in machine presets: (name, TOML).
pub const PRESETS: &[(&str, &str)] = builtin_files!("../machines":
    "q6600", "xeon-e5345", "opteron-2352", "phenom-9750", "xeon-e5430", "opteron-6134",
    "core-i7-940", "phenom-ii-940", "bench-64c",
    "epyc-9654-2s", "xeon-8480-2s", "core-i9-13900k", "altra-q80-30",
);

/// Built-in scenarios: (name, TOML).
pub const SCENARIOS: &[(&str, &str)] = builtin_files!("../scenarios":
    "merkel-1-aluadd", "merkel-1-stream", "merkel-1-stream-fit1", "merkel-1-stream-fit2",
    "merkel-2-aluadd-shared", "merkel-2-stream-fit1-shared", "merkel-2-stream-fit1-apart",
    "merkel-2-stream-fit2-shared", "merkel-2-stream-apart",
    "merkel-4-aluadd", "merkel-4-stream",
    "merkel-1stream-3alu", "merkel-2stream-2alu", "merkel-3stream-1alu",
    "merkel-4hmmer", "merkel-4soplex", "merkel-2hmmer-2soplex",
    "merkel-sort-8", "merkel-freq-s1", "merkel-freq-s2", "merkel-freq-s3", "merkel-freq-s4",
    "bench-8c24t", "bench-8c24t-short", "bench-64c512t", "bench-192c1000t", "bench-10k-tasks",
    "richling-make-j1", "richling-make-j2", "richling-make-j3", "richling-make-j4",
    "richling-make-j5", "richling-make-j6", "richling-make-j7", "richling-make-j8",
    "richling-make-j9", "richling-make-j10", "richling-make-j11", "richling-make-j12",
    "richling-phenom-j1", "richling-i7-j1", "richling-phenom2-j1", "hilo-unmanaged",
    "pam-libq-xalancbmk", "pam-libq-mcf", "pam-libq-bzip2", "pam-libq-gcc", "pam-libq-sjeng",
    "pam-libq-hmmer", "pam-libq-omnetpp", "pam-libq-perlbench",
    "pam-mix-323", "pam-mix-333", "pam-powercap", "pam-bzip2-libq",
    "dhiman-art-equake-equake", "dhiman-mcf-applu-applu", "dhiman-bzip2-lucas-lucas", "dhiman-vortex-swim-swim", "dhiman-gcc-wupwise-wupwise", "dhiman-art-mcf-mcf", "dhiman-mcf-bzip2-bzip2", "dhiman-vortex-equake-equake", "dhiman-vortex-gzip-gzip",
    "suite-epyc-batch", "suite-epyc-build", "suite-epyc-services-low", "suite-epyc-services-high", "suite-epyc-batch-services",
    "suite-xeon-batch", "suite-xeon-build", "suite-xeon-services-low", "suite-xeon-services-high", "suite-xeon-batch-services",
    "suite-i9-batch", "suite-i9-build", "suite-i9-services-low", "suite-i9-services-high", "suite-i9-batch-services",
    "suite-altra-batch", "suite-altra-build", "suite-altra-services-low", "suite-altra-services-high", "suite-altra-batch-services",
    "patel-task1", "patel-task1-hi", "patel-task1-lo", "patel-task1-dyn", "patel-task2", "patel-task2-hi", "patel-task2-lo", "patel-task2-dyn", "patel-task3", "patel-task3-hi", "patel-task3-lo", "patel-task3-dyn", "patel-task4", "patel-task4-hi", "patel-task4-lo", "patel-task4-dyn",
);

const PROFILES_TOML: &str = include_str!("../profiles.toml");

/// Built-in profiles (moved by the thread's perturbation, if any).
pub fn builtin_profiles() -> Result<BTreeMap<String, Profile>, SimError> {
    let mut profiles: BTreeMap<String, Profile> =
        parse_toml("built-in profiles.toml", PROFILES_TOML)?;
    profiles
        .values_mut()
        .for_each(crate::perturb::apply_to_profile);
    Ok(profiles)
}

/// Parse TOML into `T`, turning errors into file:line:column with the key.
pub fn parse_toml<T: for<'de> Deserialize<'de>>(file: &str, text: &str) -> Result<T, SimError> {
    toml::from_str(text).map_err(|e| {
        let (line, column, key) = match e.span() {
            Some(span) => locate(text, span.start),
            None => (None, None, None),
        };
        SimError::Input {
            location: Location {
                file: file.to_string(),
                line,
                column,
                key,
            },
            message: e.message().trim().to_string(),
        }
    })
}

/// Line, column and the dotted key at a byte offset of a TOML text.
fn locate(text: &str, offset: usize) -> (Option<usize>, Option<usize>, Option<String>) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    let this_line = text[line_start..].lines().next().unwrap_or("");
    let table = before[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    let local = this_line
        .split_once('=')
        .map(|(k, _)| k.trim().to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('#') && !k.starts_with('['));
    let key = match (table, local) {
        (Some(t), Some(k)) => Some(format!("{t}.{k}")),
        (None, Some(k)) => Some(k),
        (Some(t), None) => Some(t),
        (None, None) => None,
    };
    (Some(line), Some(column), key)
}

/// A built-in machine preset by name.
pub fn preset(name: &str) -> Option<Result<Machine, SimError>> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(n, text)| {
        let spec: MachineSpec = parse_toml(&format!("built-in machine {n}"), text)?;
        Machine::build(crate::perturb::apply(spec))
    })
}

/// Names and descriptions of the built-in scenarios.
pub fn builtin_scenarios() -> Vec<(String, String)> {
    SCENARIOS
        .iter()
        .map(|(name, text)| {
            let description = parse_toml::<ScenarioSpec>(name, text)
                .map_or_else(|e| format!("(broken: {e})"), |s| s.description);
            (name.to_string(), description)
        })
        .collect()
}

impl Scenario {
    /// Load a built-in scenario by name, or a scenario file by path.
    pub fn load(name_or_path: &str) -> Result<Scenario, SimError> {
        if let Some((name, text)) = SCENARIOS.iter().find(|(n, _)| *n == name_or_path) {
            let origin = format!("built-in scenario {name}");
            let mut spec: ScenarioSpec = parse_toml(&origin, text)?;
            if let Some(graph) = &mut spec.jobgraph {
                crate::perturb::apply_to_jobgraph(graph);
            }
            return Scenario::checked_text(&origin, spec, text, None);
        }
        let path = Path::new(name_or_path);
        if path.extension().is_some_and(|e| e == "toml") || path.exists() {
            let text = read_text(path, TEXT_MAX_BYTES)?;
            return Scenario::from_toml(name_or_path, &text, path.parent());
        }
        Err(SimError::UnknownScenario {
            name: name_or_path.to_string(),
            valid: SCENARIOS.iter().map(|(n, _)| n.to_string()).collect(),
        })
    }

    /// Parse and validate a scenario text. `dir` resolves relative machine paths.
    pub fn from_toml(origin: &str, text: &str, dir: Option<&Path>) -> Result<Scenario, SimError> {
        let spec: ScenarioSpec = parse_toml(origin, text)?;
        Scenario::checked_text(origin, spec, text, dir)
    }

    /// [`Scenario::checked`] with errors located in `text`, the TOML
    /// `spec` was parsed from.
    fn checked_text(
        origin: &str,
        spec: ScenarioSpec,
        text: &str,
        dir: Option<&Path>,
    ) -> Result<Scenario, SimError> {
        let at = |key: String, message: String| {
            let line = find_key_line(text, &key);
            input_error(origin, text, line, key, message)
        };
        Scenario::checked(origin, spec, dir, &at)
    }

    /// Validate a scenario built in code (a workload generated for a
    /// machine) on a machine already built (one described from a host in
    /// memory, say) instead of the one its `machine` key names; the key is
    /// kept as the machine's label. A scenario pins nothing to CPU
    /// numbers, so no check depends on which machine it runs on. Errors
    /// name the key, as there is no text to locate them in.
    pub fn from_spec_on(
        origin: &str,
        spec: ScenarioSpec,
        machine: Machine,
    ) -> Result<Scenario, SimError> {
        let at = |key: String, message: String| input_error(origin, "", None, key, message);
        Scenario::checked_on(origin, spec, machine, &at)
    }

    /// Check a parsed scenario and load its machine and profiles; `at`
    /// turns a dotted key and a message into an error located in the
    /// text it was written in.
    pub(crate) fn checked(
        origin: &str,
        spec: ScenarioSpec,
        dir: Option<&Path>,
        at: &dyn Fn(String, String) -> SimError,
    ) -> Result<Scenario, SimError> {
        let machine = Scenario::machine_of(&spec, dir, at)?;
        Scenario::checked_on(origin, spec, machine, at)
    }

    /// The machine `spec` names: a preset, or a machine file relative to `dir`.
    fn machine_of(
        spec: &ScenarioSpec,
        dir: Option<&Path>,
        at: &dyn Fn(String, String) -> SimError,
    ) -> Result<Machine, SimError> {
        Ok(match preset(&spec.machine) {
            Some(m) => m?,
            None => {
                let path: PathBuf =
                    dir.map_or_else(|| PathBuf::from(&spec.machine), |d| d.join(&spec.machine));
                if !path.exists() {
                    let valid: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
                    return Err(at(
                        "machine".into(),
                        format!(
                            "{:?} is neither a preset nor a file; presets: {}",
                            spec.machine,
                            valid.join(", ")
                        ),
                    ));
                }
                let mtext = read_text(&path, TEXT_MAX_BYTES)?;
                Machine::build(parse_toml(&path.display().to_string(), &mtext)?)?
            }
        })
    }

    /// Every check of `spec` but its machine's, on `machine`.
    fn checked_on(
        origin: &str,
        spec: ScenarioSpec,
        machine: Machine,
        at: &dyn Fn(String, String) -> SimError,
    ) -> Result<Scenario, SimError> {
        if !(spec.tick_ms >= 0.1 && spec.tick_ms <= 100.0) {
            return Err(at(
                "tick_ms".into(),
                format!("{} is outside 0.1–100 ms", spec.tick_ms),
            ));
        }
        if let Some(d) = spec.duration_s {
            if !(d.is_finite() && d > 0.0) {
                return Err(at(
                    "duration_s".into(),
                    "must be a positive number of seconds".into(),
                ));
            }
            if d > MAX_SECONDS {
                return Err(at("duration_s".into(), too_long(d)));
            }
        }
        let mut known = builtin_profiles()?;
        for (name, p) in &spec.profiles {
            p.check().map_err(|m| at(format!("profiles.{name}"), m))?;
            known.insert(name.clone(), p.clone());
        }
        if spec.tasks.is_empty() && spec.jobgraph.is_none() {
            return Err(at(
                "tasks".into(),
                "the scenario has no tasks and no [jobgraph]".into(),
            ));
        }
        let mut profiles = BTreeMap::new();
        if let Some(g) = &spec.jobgraph {
            g.check().map_err(|(k, m)| at(format!("jobgraph.{k}"), m))?;
            let Some(p) = known.get(&g.profile) else {
                let valid: Vec<&str> = known.keys().map(String::as_str).collect();
                return Err(at(
                    "jobgraph.profile".into(),
                    format!(
                        "unknown profile {:?}; known profiles: {}",
                        g.profile,
                        valid.join(", ")
                    ),
                ));
            };
            profiles.insert(g.profile.clone(), Arc::new(p.clone()));
        }
        if spec.parallelism_hint == Some(0) {
            return Err(at(
                "parallelism_hint".into(),
                "a declared parallelism must be at least 1".into(),
            ));
        }
        let mut names = Vec::new();
        for (i, t) in spec.tasks.iter().enumerate() {
            let key = |k: &str| format!("tasks[{i}].{k}");
            let Some(p) = known.get(&t.profile) else {
                let valid: Vec<&str> = known.keys().map(String::as_str).collect();
                return Err(at(
                    key("profile"),
                    format!(
                        "unknown profile {:?}; known profiles: {}",
                        t.profile,
                        valid.join(", ")
                    ),
                ));
            };
            profiles.insert(t.profile.clone(), Arc::new(p.clone()));
            if t.count == 0 || t.count > 10_000 {
                return Err(at(
                    key("count"),
                    format!("{} instances: must be 1–10000", t.count),
                ));
            }
            if t.completions == 0 {
                return Err(at(key("completions"), "must be at least 1".into()));
            }
            match (t.length_s, t.instructions) {
                (Some(v), None) if v.is_finite() && v > MAX_SECONDS => {
                    return Err(at(key("length_s"), too_long(v)))
                }
                (None, Some(v)) if v.is_finite() && v > MAX_INSTRUCTIONS => {
                    return Err(at(
                        key("instructions"),
                        format!(
                            "{v:e} instructions is more than the simulator represents \
                             ({MAX_INSTRUCTIONS:e}: counters are 64-bit)"
                        ),
                    ))
                }
                (Some(v), None) | (None, Some(v)) if v.is_finite() && v > 0.0 => {}
                (Some(_), Some(_)) => {
                    return Err(at(
                        key("length_s"),
                        "give length_s or instructions, not both".into(),
                    ))
                }
                (None, None) => {
                    return Err(at(
                        key("length_s"),
                        "every task needs length_s or instructions".into(),
                    ))
                }
                (None, Some(_)) => {
                    return Err(at(
                        key("instructions"),
                        "the length must be a positive, finite number".into(),
                    ))
                }
                _ => {
                    return Err(at(
                        key("length_s"),
                        "the length must be a positive, finite number".into(),
                    ))
                }
            }
            if !(t.start_s.is_finite()
                && t.start_s >= 0.0
                && t.stagger_s.is_finite()
                && t.stagger_s >= 0.0)
            {
                return Err(at(
                    key("start_s"),
                    "start_s and stagger_s must be ≥ 0".into(),
                ));
            }
            let last_start = t.start_s + t.stagger_s * f64::from(t.count.saturating_sub(1));
            if last_start > MAX_SECONDS {
                let k = if t.stagger_s > 0.0 {
                    "stagger_s"
                } else {
                    "start_s"
                };
                return Err(at(key(k), too_long(last_start)));
            }
            if !(-20..=19).contains(&t.nice) {
                return Err(at(key("nice"), format!("{} is outside −20..19", t.nice)));
            }
            if let Some(r) = t.renice {
                if !(-20..=19).contains(&r.nice) {
                    return Err(at(
                        key("renice"),
                        format!("renice.nice {} is outside −20..19", r.nice),
                    ));
                }
                if r.after_completions == 0 || r.after_completions >= t.completions {
                    return Err(at(
                        key("renice"),
                        format!(
                            "renice.after_completions {} must be 1–{} (fewer than completions = {})",
                            r.after_completions,
                            t.completions.saturating_sub(1),
                            t.completions
                        ),
                    ));
                }
            }
            let name = t.name.clone().unwrap_or_else(|| t.profile.clone());
            if names.contains(&name) {
                return Err(at(
                    key("name"),
                    format!("two tasks are named {name:?}; give one a `name`"),
                ));
            }
            names.push(name);
        }
        for (i, t) in spec.tasks.iter().enumerate() {
            if let Some(after) = &t.after {
                let pos = names.iter().position(|n| n == after);
                if pos.is_none_or(|p| p >= i) {
                    return Err(at(
                        format!("tasks[{i}].after"),
                        format!("{after:?} must name a task listed earlier"),
                    ));
                }
            }
        }
        if let Some(tr) = &spec.transients {
            if !(tr.period_ms > 0.0
                && tr.run_ms > 0.0
                && tr.run_ms < tr.period_ms
                && tr.count <= 1000
                && (-20..=19).contains(&tr.nice))
            {
                return Err(at(
                    "transients".into(),
                    "need 0 < run_ms < period_ms, count ≤ 1000 and nice in −20..19".into(),
                ));
            }
        }
        let loads: Vec<TaskLoad> = spec
            .tasks
            .iter()
            .map(|t| TaskLoad {
                count: t.count,
                completions: t.completions,
                length_s: t.length_s,
                instructions: t.instructions,
                start_s: t.start_s,
                stagger_s: t.stagger_s,
            })
            .collect();
        crate::bounds::check_scenario(
            spec.duration_s,
            &loads,
            spec.transients.as_ref().map(|t| (t.period_ms, t.run_ms)),
            spec.jobgraph.as_ref().map(JobGraphSpec::work_s),
        )
        .map_err(|(k, m)| at(k, m))?;
        Ok(Scenario {
            spec,
            origin: origin.to_string(),
            machine: Arc::new(machine),
            profiles,
        })
    }

    /// The instance name of task `i`'s `k`-th instance.
    pub fn instance_name(&self, task: usize, k: u32) -> String {
        let t = &self.spec.tasks[task];
        let base = t.name.clone().unwrap_or_else(|| t.profile.clone());
        if t.count > 1 {
            format!("{base}#{k}")
        } else {
            base
        }
    }

    /// Every instance name, in order.
    pub fn instance_names(&self) -> Vec<String> {
        (0..self.spec.tasks.len())
            .flat_map(|i| (0..self.spec.tasks[i].count).map(move |k| (i, k)))
            .map(|(i, k)| self.instance_name(i, k))
            .collect()
    }

    /// The same machine running one instance alone, once: how the engine
    /// measures a task's alone run time (Dhiman eq. 2's `T_alone`).
    pub fn alone(&self, instance: &str) -> Option<Scenario> {
        let (i, _) = (0..self.spec.tasks.len())
            .flat_map(|i| (0..self.spec.tasks[i].count).map(move |k| (i, k)))
            .find(|&(i, k)| self.instance_name(i, k) == instance)?;
        let mut spec = self.spec.clone();
        let mut task = spec.tasks[i].clone();
        task.name = Some(instance.to_string());
        task.count = 1;
        task.start_s = 0.0;
        task.stagger_s = 0.0;
        task.completions = 1;
        task.after = None;
        spec.tasks = vec![task];
        spec.jobgraph = None;
        spec.duration_s = None;
        spec.name = format!("{}/alone:{instance}", spec.name);
        Some(Scenario {
            spec,
            origin: self.origin.clone(),
            machine: self.machine.clone(),
            profiles: self.profiles.clone(),
        })
    }
}

/// An input error at 1-based `line` of `text` (the column where the line's
/// key is written).
pub(crate) fn input_error(
    origin: &str,
    text: &str,
    line: Option<usize>,
    key: String,
    message: String,
) -> SimError {
    let column = line.and_then(|l| text.lines().nth(l - 1)).map(|l| {
        let indent = l.len() - l.trim_start().len();
        l[..indent].chars().count() + 1
    });
    SimError::Input {
        location: Location {
            file: origin.to_string(),
            line,
            column,
            key: Some(key),
        },
        message,
    }
}

/// The 1-based line where a dotted key (`tasks[2].profile`) is written, found
/// by walking the text; `None` when the key is absent (e.g. a missing field).
pub(crate) fn find_key_line(text: &str, key: &str) -> Option<usize> {
    let mut parts = key.split('.');
    let first = parts.next()?;
    let (table, index) = match first.split_once('[') {
        Some((t, rest)) => (t, rest.trim_end_matches(']').parse::<usize>().ok()),
        None => (first, None),
    };
    let leaf = parts.next_back();
    let mut seen = 0usize;
    let mut inside = index.is_none();
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.starts_with("[[") {
            let name = l.trim_matches(|c| c == '[' || c == ']').trim();
            inside = false;
            if name == table {
                if Some(seen) == index {
                    inside = true;
                    if leaf.is_none() {
                        return Some(n + 1);
                    }
                }
                seen += 1;
            }
            continue;
        }
        if l.starts_with('[') {
            let name = l.trim_matches(|c| c == '[' || c == ']').trim();
            inside = name == table || name.starts_with(&format!("{table}."));
            if inside && index.is_none() && leaf.is_none() {
                return Some(n + 1);
            }
            continue;
        }
        let want = if index.is_some() {
            leaf
        } else {
            leaf.or(Some(table))
        };
        if let (true, Some(k)) = (inside || index.is_none(), want) {
            if l.split_once('=').is_some_and(|(lk, _)| lk.trim() == k) {
                return Some(n + 1);
            }
        }
    }
    None
}
