//! The activity model's fit on a simulated machine and the check of both
//! attribution methods against the simulator's truth (`ecosched bench
//! attribution`, `docs/researchers/attribution.md`).
//!
//! - [`fit_machine`]: the activity model's coefficients for a machine,
//!   fitted as a user fits them on theirs: microbenchmarks (compute,
//!   streaming, cache-resident streaming, and a compute/streaming mix) on
//!   one, half and all of the CPUs (and, on a machine with core types, of
//!   each type's CPUs alone), under the `powersave` and the `performance`
//!   governor (the lowest and the highest P-states), each interval's
//!   metered energy regressed on what `--observe linux` shows of every
//!   task that ran (instructions, cycles, LLC misses, memory transactions
//!   from perf, per hybrid PMU where there are several; on-CPU time from
//!   schedstat). No task's truth enters the fit, and no
//!   scenario's tasks: the same runs for every scenario on the machine.
//! - [`bench_attribution`]: both methods' errors against truth on mixed
//!   compute/memory scenarios.

use crate::attribution::COUNTERS;
use crate::report::SimReport;
use ecosched_model::attribution::EnergyFit;
use ecosched_model::trace::TraceSink;
use ecosched_model::{Counters, CpuSet, Meter, Plan, Step, TraceHeader};
use ecosched_policy::Params;
use ecosched_sim::{Observe, Scenario};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The calibration microbenchmarks: (profile, share of the CPUs it gets
/// in a mix; 1 alone).
const CALIBRATION: &[&[(&str, f64)]] = &[
    &[("aluadd", 1.0)],
    &[("stream", 1.0)],
    &[("stream-fit2", 1.0)],
    &[("aluadd", 0.5), ("stream", 0.5)],
];

/// Simulated seconds of each calibration run.
const CALIBRATION_S: f64 = 3.0;

/// A sink that feeds each interval into a fit.
struct FitSink<'a> {
    fit: &'a mut EnergyFit,
    meter: Meter,
}

impl TraceSink for FitSink<'_> {
    fn begin(&mut self, header: &TraceHeader, _: &Plan) -> std::io::Result<()> {
        self.meter = header.meter;
        Ok(())
    }

    fn step(&mut self, step: &Step) -> std::io::Result<()> {
        let s = &step.snapshot;
        let ran: Vec<&Counters> = s
            .tasks
            .iter()
            .map(|t| &t.counters)
            .filter(|c| c.on_cpu_ns.is_some_and(|n| n > 0))
            .collect();
        if let Some(e) = s.power.energy_j(self.meter) {
            self.fit.observe(e, s.interval_s, &ran);
        }
        Ok(())
    }
}

/// One calibration scenario: `mix` on `cpus` CPUs of `base`'s machine,
/// metered as `base` is.
fn calibration_scenario(
    base: &Scenario,
    mix: &[(&str, f64)],
    cpus: usize,
) -> Result<Scenario, crate::EngineError> {
    let mut text = format!(
        "name = \"attribution-fit\"\ndescription = \"activity-model calibration\"\nmachine = {:?}\nduration_s = {CALIBRATION_S}\n",
        base.spec.machine
    );
    for (profile, share) in mix {
        let count = ((cpus as f64 * share).round() as usize).max(1);
        text.push_str(&format!(
            "[[tasks]]\nprofile = {profile:?}\ncount = {count}\nlength_s = {}\n",
            CALIBRATION_S * 100.0
        ));
    }
    let mut spec: ecosched_sim::scenario::ScenarioSpec =
        ecosched_sim::scenario::parse_toml("attribution calibration", &text)?;
    spec.meter = base.spec.meter;
    spec.tick_ms = base.spec.tick_ms;
    let profiles = ecosched_sim::scenario::builtin_profiles()?
        .into_iter()
        .map(|(name, p)| (name, std::sync::Arc::new(p)))
        .collect();
    Ok(Scenario {
        spec,
        origin: format!("activity-model calibration on {}", base.spec.machine),
        machine: base.machine.clone(),
        profiles,
    })
}

/// A governor whose managed tasks are confined to a set of CPUs (a
/// cgroup cpuset, as `taskset` or a cpuset confines a calibration run on
/// a real machine).
struct Confined {
    inner: Box<dyn ecosched_policy::Policy>,
    cpus: CpuSet,
}

impl ecosched_policy::Policy for Confined {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn requirements(&self) -> ecosched_model::Requirements {
        self.inner.requirements()
    }
    fn interval(&self) -> std::time::Duration {
        self.inner.interval()
    }
    fn init(
        &mut self,
        topology: &ecosched_model::topology::Topology,
    ) -> Result<Plan, ecosched_policy::PolicyError> {
        let mut plan = self.inner.init(topology)?;
        plan.managed_cpus = Some(self.cpus.clone());
        Ok(plan)
    }
    fn decide(&mut self, snapshot: &ecosched_model::Snapshot) -> Plan {
        let mut plan = self.inner.decide(snapshot);
        plan.managed_cpus = Some(self.cpus.clone());
        plan
    }
}

/// The CPU sets the calibration runs on: every online CPU, and on a
/// machine with more than one core type each type's CPUs alone (Linux
/// lists them per hybrid PMU, `/sys/devices/cpu_core/cpus` and
/// `/sys/devices/cpu_atom/cpus`), so the fit sees each type's events
/// apart from the others'. `None`: no confinement.
fn calibration_cpu_sets(scenario: &Scenario) -> Vec<(Option<CpuSet>, usize)> {
    let online = scenario.machine.topology.online_cpus();
    let mut sets = vec![(None, online.len())];
    let machine = &scenario.machine;
    if machine.core_types.len() > 1 {
        for t in 0..machine.core_types.len() {
            let cpus: CpuSet = online
                .iter()
                .filter(|c| machine.type_of.get(c.0 as usize) == Some(&t))
                .collect();
            if !cpus.is_empty() {
                let n = cpus.len();
                sets.push((Some(cpus), n));
            }
        }
    }
    sets
}

/// Fit the activity model's coefficients on `scenario`'s machine (only
/// its machine and meter are used).
pub fn fit_machine(scenario: &Scenario) -> Result<EnergyFit, crate::EngineError> {
    let options = crate::experiment::SimOptions {
        observe: Observe::Linux,
        extra_counters: COUNTERS.into(),
        ..Default::default()
    };
    let mut fit = EnergyFit::default();
    for (confine, n) in calibration_cpu_sets(scenario) {
        let mut sizes: BTreeSet<usize> = [1, n / 2, n].into();
        sizes.remove(&0);
        for mix in CALIBRATION {
            for &cpus in &sizes {
                if mix.len() > 1 && cpus < 2 {
                    continue;
                }
                let s = calibration_scenario(scenario, mix, cpus)?;
                for governor in ["powersave", "performance"] {
                    let mut sink = FitSink {
                        fit: &mut fit,
                        meter: s.spec.meter,
                    };
                    let mut policy = ecosched_policy::build(governor, &Params::default())?;
                    if let Some(cpus) = &confine {
                        policy = Box::new(Confined {
                            inner: policy,
                            cpus: cpus.clone(),
                        });
                    }
                    crate::experiment::simulate_policy_into(
                        &s,
                        policy,
                        &options,
                        &mut sink,
                        &mut |_| {},
                    )?;
                }
            }
        }
    }
    Ok(fit)
}

/// The mixed compute/memory scenarios `ecosched bench attribution` runs:
/// memory-bound beside compute-bound tasks on five machines (Merkel's
/// Table 1 and 2 mixes and Table 3 scenario 2, a PAM pair mix, the
/// suite's batch mixes on the hybrid desktop, the two-socket Xeon and the
/// Arm server). Small, so the whole bench takes about a second.
pub const BENCH_SCENARIOS: &[&str] = &[
    "merkel-2stream-2alu",
    "merkel-2hmmer-2soplex",
    "merkel-freq-s2",
    "pam-libq-hmmer",
    "suite-i9-batch",
    "suite-xeon-batch",
    "suite-altra-batch",
];

/// The policy the bench runs under: a governor that moves the frequency,
/// so the model must follow it.
pub const BENCH_POLICY: &str = "ondemand";

/// One scenario's attribution errors against truth.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScenarioErrors {
    /// Scenario.
    pub scenario: String,
    /// Its machine.
    pub machine: String,
    /// Task rows compared (those with true energy above zero).
    pub tasks: usize,
    /// Mean over tasks of |CPU-time share − truth| / truth.
    pub cpu_share_mae: f64,
    /// Mean over tasks of |activity model − truth| / truth.
    pub activity_mae: f64,
    /// The run's task rows (with `energy_true_j`, `energy_cpu_share_j`,
    /// `energy_activity_j`) and how the energy was attributed.
    pub report: SimReport,
}

/// `ecosched bench attribution --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttributionBench {
    /// The policy every scenario ran under.
    pub policy: String,
    /// Per scenario.
    pub scenarios: Vec<ScenarioErrors>,
    /// Mean over every task row of every scenario, CPU-time share.
    pub cpu_share_mae: f64,
    /// The same, activity model.
    pub activity_mae: f64,
    /// `activity_mae / cpu_share_mae`: below 1 the model attributes better.
    pub ratio: f64,
}

/// Mean relative absolute error of `estimate` against `energy_true_j`
/// over the rows with true energy; (rows, sum of errors).
fn errors(
    report: &SimReport,
    estimate: impl Fn(&ecosched_model::TaskMetrics) -> Option<f64>,
) -> (usize, f64) {
    report
        .tasks
        .iter()
        .filter_map(|t| {
            let truth = t.energy_true_j.filter(|&j| j > 0.0)?;
            Some((estimate(t)? - truth).abs() / truth)
        })
        .fold((0, 0.0), |(n, s), e| (n + 1, s + e))
}

/// Run each scenario under [`BENCH_POLICY`] with both estimators, each
/// machine's model fitted once by [`fit_machine`], and compare with truth.
pub fn bench_attribution(scenarios: &[&str]) -> Result<AttributionBench, crate::EngineError> {
    let mut fits: BTreeMap<String, std::sync::Arc<EnergyFit>> = BTreeMap::new();
    let mut rows = Vec::new();
    let (mut n_all, mut cpu_all, mut act_all) = (0, 0.0, 0.0);
    for name in scenarios {
        let scenario = Scenario::load(name)?;
        let fit = match fits.get(&scenario.spec.machine) {
            Some(f) => f.clone(),
            None => {
                let f = std::sync::Arc::new(fit_machine(&scenario)?);
                fits.insert(scenario.spec.machine.clone(), f.clone());
                f
            }
        };
        let options = crate::experiment::SimOptions {
            observe: Observe::Linux,
            extra_counters: COUNTERS.into(),
            attribution: Some(fit),
            ..Default::default()
        };
        let run = crate::experiment::simulate(
            &scenario,
            BENCH_POLICY,
            &Params::default(),
            &options,
            &mut |_| {},
        )?;
        let (n, cpu) = errors(&run.report, |t| t.energy_cpu_share_j);
        let (_, act) = errors(&run.report, |t| t.energy_activity_j);
        n_all += n;
        cpu_all += cpu;
        act_all += act;
        let per = |s: f64| if n > 0 { s / n as f64 } else { 0.0 };
        rows.push(ScenarioErrors {
            scenario: name.to_string(),
            machine: scenario.spec.machine.clone(),
            tasks: n,
            cpu_share_mae: per(cpu),
            activity_mae: per(act),
            report: run.report,
        });
    }
    let per = |s: f64| if n_all > 0 { s / n_all as f64 } else { 0.0 };
    let (cpu_share_mae, activity_mae) = (per(cpu_all), per(act_all));
    Ok(AttributionBench {
        policy: BENCH_POLICY.to_string(),
        scenarios: rows,
        cpu_share_mae,
        activity_mae,
        ratio: if cpu_share_mae > 0.0 {
            activity_mae / cpu_share_mae
        } else {
            f64::NAN
        },
    })
}
