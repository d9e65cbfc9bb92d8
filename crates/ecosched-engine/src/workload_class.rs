//! Workload classes (`ecosched recommend --class`): the workload suite's
//! kinds of work (`docs/researchers/workload-suite.md`) generated for any
//! machine, sized by its cores *K* and hardware threads *C* by the suite's
//! rules, so that a recommendation for a 2-CPU VM or an emitted machine
//! file asks the same question the suite asks of its presets. On the
//! suite's four presets the generated scenario is the suite's own (a test
//! checks it), so the figures agree with `ecosched suite`.
//!
//! Services run at any busy share: `services:PCT` is a request-serving
//! thread busy PCT % of a 10 ms cycle (the suite's `service` profile at 10
//! and `service-busy` at 70, the same thread with another split).

use ecosched_sim::machine::Machine;
use ecosched_sim::profile::SleepSpec;
use ecosched_sim::scenario::{builtin_profiles, parse_toml, ScenarioSpec};
use ecosched_sim::{Scenario, SimError};
use std::fmt;
use std::str::FromStr;

/// The seed every generated scenario starts from: the suite's.
const SUITE_SEED: u64 = 11;
/// How long the batch and service workloads run, s: the suite's.
const DURATION_S: f64 = 8.0;
/// The request cycle of a service thread, ms (burst plus wait).
const SERVICE_CYCLE_MS: f64 = 10.0;
/// Where the class names are documented, for errors.
const CLASSES: &str = "build, batch (or batch-mixed), services:PCT (PCT 1–99), services-low \
                       (= services:10), services-high (= services:70), batch-services";

/// A kind of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadClass {
    /// *K*/2 batch tasks, memory-bound beside compute-bound.
    Batch,
    /// `make -j`*K* of 10·*K* compile jobs.
    Build,
    /// *C* request-serving threads, each busy `percent` %.
    Services {
        /// Busy share of each thread, 1–99 %.
        percent: u32,
    },
    /// *K*/8 mcf and *K*/8 hmmer beside *C*/2 services at 10 %.
    BatchServices,
}

/// A class name that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClassError(pub String);

impl FromStr for WorkloadClass {
    type Err = ClassError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "batch" | "batch-mixed" => Ok(WorkloadClass::Batch),
            "build" => Ok(WorkloadClass::Build),
            "services-low" => Ok(WorkloadClass::Services { percent: 10 }),
            "services-high" => Ok(WorkloadClass::Services { percent: 70 }),
            "batch-services" => Ok(WorkloadClass::BatchServices),
            _ => match s.split_once(':') {
                Some(("services", pct)) => {
                    let percent = pct
                        .trim()
                        .trim_end_matches('%')
                        .parse::<u32>()
                        .ok()
                        .filter(|p| (1..=99).contains(p))
                        .ok_or_else(|| {
                            ClassError(format!(
                                "{s:?}: the load after `services:` must be a whole percentage \
                                 from 1 to 99 (a thread busy that share of each {SERVICE_CYCLE_MS} ms)"
                            ))
                        })?;
                    Ok(WorkloadClass::Services { percent })
                }
                _ => Err(ClassError(format!(
                    "{s:?} is not a workload class; classes: {CLASSES}"
                ))),
            },
        }
    }
}

impl fmt::Display for WorkloadClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadClass::Batch => f.write_str("batch"),
            WorkloadClass::Build => f.write_str("build"),
            WorkloadClass::Services { percent } => write!(f, "services:{percent}"),
            WorkloadClass::BatchServices => f.write_str("batch-services"),
        }
    }
}

/// The profile of a service thread busy `percent` %: the built-in one
/// where the suite has it, else one made from `service` with that split.
fn service_profile(percent: u32) -> String {
    match percent {
        10 => "service".into(),
        70 => "service-busy".into(),
        p => format!("service-{p}"),
    }
}

/// One `[[tasks]]` line restarted for the whole run.
fn batch_task(profile: &str, count: usize) -> String {
    format!(
        "[[tasks]]\nprofile = {profile:?}\ncount = {count}\nlength_s = 2\ncompletions = 1000\n\n"
    )
}

/// Service threads that run for the whole run.
fn service_tasks(profile: &str, count: usize) -> String {
    format!("[[tasks]]\nprofile = {profile:?}\ncount = {count}\nlength_s = 1000\n\n")
}

impl WorkloadClass {
    /// This class's scenario on `machine`, labelled `machine_label` (a
    /// preset's name or a file's path).
    pub fn scenario(self, machine: &Machine, machine_label: &str) -> Result<Scenario, SimError> {
        let k = machine.core_cpus.len().max(1);
        let c = machine.cpus().max(1);
        let eighth = (k / 8).max(1);
        let host = &machine.spec.name;
        let (what, body) = match self {
            WorkloadClass::Batch => (
                format!(
                    "batch mix on {host}: {} tasks on {k} cores, memory-bound (libquantum, mcf) beside compute-bound (hmmer, namd)",
                    4 * eighth
                ),
                ["libquantum", "mcf", "hmmer", "namd"]
                    .iter()
                    .map(|p| batch_task(p, eighth))
                    .collect::<String>(),
            ),
            WorkloadClass::Build => (
                format!(
                    "parallel build on {host}: make -j{k}, {} compile jobs",
                    10 * k
                ),
                format!(
                    "[jobgraph]\njobs = {}\nparallelism = {k}\nwork_ms = [50, 300]\nstage_width = [{}, {}]\nlink_ms = [50, 150]\nmake_ms = 3.3\nhelper_share = 0.02\n",
                    10 * k,
                    (k / 2).max(1),
                    4 * k
                ),
            ),
            WorkloadClass::Services { percent } => (
                format!(
                    "request-serving services at about {percent} % on {host}: {c} threads, each {percent} % busy"
                ),
                service_tasks(&service_profile(percent), c),
            ),
            WorkloadClass::BatchServices => {
                let services = (c / 2).max(1);
                (
                    format!(
                        "batch next to services on {host}: {} batch tasks beside {services} service thread(s) at 10 %",
                        2 * eighth
                    ),
                    format!(
                        "{}{}{}",
                        batch_task("mcf", eighth),
                        batch_task("hmmer", eighth),
                        service_tasks("service", services)
                    ),
                )
            }
        };
        let duration = match self {
            WorkloadClass::Build => String::new(),
            _ => format!("duration_s = {DURATION_S}\n"),
        };
        let name = format!("{self} on {}", machine.spec.name);
        let text = format!(
            "name = {name:?}\ndescription = {what:?}\nsource = \"workload class {self}, sized as the workload suite's (docs/researchers/workload-suite.md)\"\nmachine = {machine_label:?}\nmeter = \"system\"\nseed = {SUITE_SEED}\ntick_ms = 1.0\n{duration}\n{body}"
        );
        let origin = format!("workload class {self} on {machine_label}");
        let mut spec: ScenarioSpec = parse_toml(&origin, &text)?;
        if let WorkloadClass::Services { percent } = self {
            if !matches!(percent, 10 | 70) {
                spec.profiles
                    .insert(service_profile(percent), busy_service(&origin, percent)?);
            }
        }
        Scenario::from_spec_on(&origin, spec, machine.clone())
    }
}

/// The built-in `service` thread busy `percent` % of each cycle.
fn busy_service(origin: &str, percent: u32) -> Result<ecosched_sim::profile::Profile, SimError> {
    let mut profile = builtin_profiles()?
        .remove("service")
        .ok_or_else(|| SimError::Input {
            location: ecosched_sim::error::Location {
                file: origin.to_string(),
                line: None,
                column: None,
                key: Some("tasks[0].profile".into()),
            },
            message: "the built-in profile `service` is missing".into(),
        })?;
    let run_ms = SERVICE_CYCLE_MS * f64::from(percent) / 100.0;
    for phase in &mut profile.phases {
        phase.sleep = Some(SleepSpec {
            run_ms,
            sleep_ms: SERVICE_CYCLE_MS - run_ms,
            random: true,
        });
    }
    profile.description = format!(
        "a request-serving thread at about {percent} % of a core: {run_ms} ms bursts, {} ms waits",
        SERVICE_CYCLE_MS - run_ms
    );
    profile.source =
        format!("the built-in `service` profile with its burst and wait split to {percent} % busy");
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::{scenario_name, MACHINES, WORKLOADS};

    fn class_of(workload: &str) -> WorkloadClass {
        workload.parse().unwrap()
    }

    #[test]
    fn on_the_suites_presets_a_class_is_the_suites_scenario() {
        for (short, preset) in MACHINES {
            let machine = ecosched_sim::scenario::preset(preset).unwrap().unwrap();
            for w in WORKLOADS {
                let suite = Scenario::load(&scenario_name(short, w)).unwrap();
                let generated = class_of(w).scenario(&machine, preset).unwrap();
                let (a, b) = (&suite.spec, &generated.spec);
                assert_eq!(a.tasks, b.tasks, "{short} {w}");
                assert_eq!(a.jobgraph, b.jobgraph, "{short} {w}");
                assert_eq!(
                    (a.seed, a.duration_s, a.tick_ms, a.meter, a.governor),
                    (b.seed, b.duration_s, b.tick_ms, b.meter, b.governor),
                    "{short} {w}"
                );
                assert_eq!(a.machine, b.machine);
            }
        }
    }

    #[test]
    fn a_two_cpu_machine_gets_at_least_one_of_everything() {
        let text = r#"
name = "two"
description = "2 cores"
packages = 1
dies_per_package = 1
cores_per_die = 2
threads_per_core = 1
[[caches]]
level = 2
size_kib = 1024
scope = "core"
[frequency]
domain = "core"
voltage_domain = "package"
transition_latency_us = 10
pstates = [{ mhz = 2600, mv = 1000 }]
[memory]
domain = "package"
latency_ns = 100.0
bandwidth_gbs = 20.0
[power]
ceff = 0.77
leak_w_per_v = 1.0
uncore_w = 3.0
stall_activity = 0.5
base_w = 0.0
mem_idle_w = 0.0
mem_nj_per_byte = 0.1
idle_states = [{ name = "halt", exit_latency_us = 1, target_residency_us = 1, power_w = 0.3 }]
"#;
        let machine = Machine::build(parse_toml("two.toml", text).unwrap()).unwrap();
        for class in ["batch", "build", "services:35", "batch-services"] {
            let s = class_of(class).scenario(&machine, "two.toml").unwrap();
            assert_eq!(s.machine.cpus(), 2);
            let threads: u32 = s.spec.tasks.iter().map(|t| t.count).sum();
            assert!(threads >= 1 || s.spec.jobgraph.is_some(), "{class}");
        }
        let s = class_of("services:35")
            .scenario(&machine, "two.toml")
            .unwrap();
        let sleep = s.profiles["service-35"].phases[0].sleep.clone().unwrap();
        assert_eq!((sleep.run_ms, sleep.sleep_ms), (3.5, 6.5));
    }

    #[test]
    fn bad_classes_say_what_is_allowed() {
        let e = "compile".parse::<WorkloadClass>().unwrap_err().0;
        assert!(e.contains("\"compile\" is not a workload class") && e.contains("services:PCT"));
        for bad in ["services:0", "services:100", "services:x", "services:"] {
            let e = bad.parse::<WorkloadClass>().unwrap_err().0;
            assert!(e.contains("from 1 to 99"), "{bad}: {e}");
        }
        assert_eq!(
            "services:35%".parse::<WorkloadClass>().unwrap(),
            WorkloadClass::Services { percent: 35 }
        );
        assert_eq!(
            "batch-mixed".parse::<WorkloadClass>().unwrap(),
            WorkloadClass::Batch
        );
    }
}
