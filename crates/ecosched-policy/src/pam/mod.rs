//! PAM — the performance/power aware meta-scheduler of Banikazemi, Poff and
//! Abali (SC '08; `docs/design/papers.md`, "PAM"). Every interval it reads
//! per-task counters, predicts with an algebraic shared-cache model how a
//! different mapping of processes to caches would run ([`model`]), searches
//! the mappings ([`search`]), and applies the best one through per-task CPU
//! sets — keeping it only while it measurably helps ([`state`]).
//!
//! ```text
//!  snapshot ──▶ slots (a CPU's task, or the group of tasks sharing it)
//!               L, m1, m2, CPI per slot; O = L ./ (C L)
//!            ──▶ Default: Algorithm 2 over assignments ──▶ pin ──▶ Good
//!                Good: goodness vs the last Default every M, at most N
//!  power-cap:  nested CPU sets shrink above the cap, grow back below it
//! ```
//!
//! Slots and groups: tasks that the kernel put on the same CPU form one
//! slot that moves as a whole (§V-E, more processes than CPUs). A slot is
//! pinned to one CPU of its chosen cache — the one it already has when it
//! stays — so the grouping the model assumed is the one that runs.
//!
//! Counters: instructions, cycles, LLC references and misses, and L1D
//! references and misses are required. Eqs. 5–7 (§IV-B) estimate each
//! slot's share of its cache, `O^h`, from the lines it brings in. Where
//! the platform measures that share directly (LLC occupancy, resctrl's
//! cache monitoring) the measurement is used; otherwise lines-in, which
//! counts demand and prefetch as the paper's `L` does; otherwise LLC
//! misses (prefetched lines are then missing from the estimate). The
//! `occupancy_from` statistic says which.
//!
//! With a measured occupancy the lines-in rate still drives Algorithm 1's
//! predictions, weighted per slot so that the measured shares are its
//! fixed point for the present mapping: a slot's lines stay in the cache
//! longer or shorter than its neighbours' (reuse, prefetch, eviction
//! order), and the measurement says by how much.
//!
//! PAM chooses which processes share a last-level cache. A machine with
//! one last-level cache, or with none shared by two CPUs, leaves it
//! nothing to choose, and it refuses to start there (`Policy::init`).

pub mod budget;
pub mod descent;
pub mod model;
pub mod pair;
pub mod search;
pub mod shares;
pub mod state;

use crate::params::{Params, TypedParams};
use crate::{Policy, PolicyError};
use ecosched_model::{
    CounterKind, CpuId, CpuSet, Plan, PolicyStats, Requirements, Snapshot, TaskId, TaskState,
    Topology, TypedStats,
};
use model::{occupancies, AlphaFit, CpiFit, CpiModel, CpiSample, SlotObs, DEFAULT_ALPHA};
use search::{decide, Decision, Layout, Problem, SearchConfig, SearchKind};
use shares::{nothing_to_choose, weigh_by_measured_occupancy, OccupancySource};
use state::{CapController, Goal, Leave, Machine, Measure, State};
use std::collections::BTreeMap;
use std::time::Duration;

crate::typed_params! {
    /// Parameters of `pam`.
    pub struct PamParams {
        /// What to optimise.
        goal: String = choice(&["performance", "power-cap", "energy"]).default("performance"),
        /// Whole-system power cap, W (required for goal=power-cap).
        power_cap_w: Option<f64> = real().above(0.0).unset("no cap").source("§V-G"),
        /// Hold the cap against the power estimate where nothing measures
        /// power (refused otherwise: an estimate caps nothing).
        cap_on_estimate: bool = flag().default("false"),
        /// Miss-ratio exponent (the cache rule of thumb).
        alpha: f64 = real().at_least(0.0).default("0.5").source("eq. 11"),
        /// Fit alpha per task online from two occupancies.
        alpha_fit: bool = flag().default("false"),
        /// CPI model constant t1.
        t1: f64 = real().default("0.733").source("eq. 14"),
        /// CPI model constant t2.
        t2: f64 = real().default("3.43").source("eq. 14"),
        /// CPI model constant t3 (misses cost time, so ≥ 0).
        t3: f64 = real().at_least(0.0).default("110").source("eq. 14"),
        /// Fit t1..t3 online by least squares over recent samples.
        fit_cpi: bool = flag().default("false"),
        /// Samples the online CPI fit keeps.
        fit_window: usize = int(6, 1_000_000).default("64"),
        /// Intervals between goodness checks in Good.
        m: u32 = int(1, 1_000_000).default("3").source("§III-B"),
        /// Longest stay in Good, intervals (at least m; the paper wants N ≫ M).
        n: Option<u32> = int(1, 1_000_000).unset("30, or m if larger").source("§III-B"),
        /// Algorithm 2's minimum predicted gain (0.001 = 0.1 %).
        delta: f64 = real().at_least(0.0).default("0.001").source("Algorithm 2"),
        /// Lowest predicted per-task speed against Default a plan may impose.
        max_degradation: f64 = real().at_least(0.0).at_most(1.0).default("0.10"),
        /// Largest CPU count searched exhaustively; above it, local search.
        exhaustive_max_cpus: usize = int(0, 1_000_000).default("10"),
        /// Random restarts of the local search.
        restarts: usize = int(0, 1_000_000).default("8"),
        /// Seed of the local search's restarts.
        seed: u64 = int(0, u64::MAX as i128).default("1592594339"),
        /// Modelled time one decision may search, ms: a fixed cost per cache
        /// evaluation and per Algorithm 1 iteration, not a clock, so runs
        /// stay deterministic; a search that reaches it keeps the best so
        /// far and says so in last_decision.
        search_budget_ms: f64 = real().above(0.0).at_most(3_600_000.0).default("20"),
        /// Control interval, ms (the paper's cycle is one second).
        interval_ms: u64 = int(1, 3_600_000).default("1000"),
        /// CPUs removed per power-cap level.
        cap_step_cpus: usize = int(1, 1_000_000).default("1"),
        /// Fraction of the cap kept free before growing back.
        cap_margin: f64 = real().at_least(0.0).below(1.0).default("0.02"),
        /// Calm intervals before growing back.
        cap_hold: u32 = int(1, 1_000_000).default("3"),
    }
}

/// N of the state machine when not given (raised to M when M is larger).
const DEFAULT_N: u32 = 30;

/// Everything that configures PAM.
#[derive(Debug, Clone, PartialEq)]
pub struct PamConfig {
    /// What to optimise.
    pub goal: Goal,
    /// Hold a power cap against an estimate (asked for explicitly).
    pub cap_on_estimate: bool,
    /// α of eq. 11 (the starting value when fitted).
    pub alpha: f64,
    /// Fit α per task online.
    pub alpha_fit: bool,
    /// CPI model (the starting value when fitted).
    pub model: CpiModel,
    /// Fit t1..t3 online.
    pub fit_cpi: bool,
    /// Samples the CPI fit keeps.
    pub fit_window: usize,
    /// M of the state machine.
    pub m: u32,
    /// N of the state machine.
    pub n: u32,
    /// Search tunables (δ, floor, exhaustive limit, restarts, seed).
    pub search: SearchConfig,
    /// Control interval.
    pub interval: Duration,
    /// CPUs removed per power-cap level.
    pub cap_step_cpus: usize,
    /// Fraction of the cap kept free before growing back.
    pub cap_margin: f64,
    /// Calm intervals before growing back.
    pub cap_hold: u32,
}

impl Default for PamConfig {
    /// The configuration every default parameter gives.
    fn default() -> Self {
        let resolved = Params::default().resolve("pam", PamParams::SPEC, &[], &[]);
        match resolved.and_then(|r| PamParams::from_resolved(&r)) {
            Ok(params) => match PamConfig::new(params) {
                Ok(config) => config,
                Err(e) => unreachable!("pam's defaults are valid: {e}"),
            },
            Err(e) => unreachable!("pam's defaults are valid: {e}"),
        }
    }
}

fn bad(key: &str, value: impl ToString, reason: &str) -> PolicyError {
    PolicyError::BadParam {
        key: key.into(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

impl PamConfig {
    /// The configuration from checked parameters, with the checks that
    /// involve several of them.
    pub fn new(p: PamParams) -> Result<Self, PolicyError> {
        let goal = match p.goal.as_str() {
            "power-cap" => Goal::PowerCap {
                cap_w: p.power_cap_w.ok_or_else(|| PolicyError::MissingParam {
                    policy: "pam".into(),
                    key: "power_cap_w".into(),
                    help: crate::params::help_of(PamParams::SPEC, "power_cap_w").into(),
                })?,
            },
            "energy" => Goal::Energy,
            _ => Goal::Performance,
        };
        if p.cap_on_estimate && !matches!(goal, Goal::PowerCap { .. }) {
            return Err(bad(
                "cap_on_estimate",
                true,
                "only meaningful with goal=power-cap",
            ));
        }
        if let (Some(cap), false) = (p.power_cap_w, matches!(goal, Goal::PowerCap { .. })) {
            return Err(bad(
                "power_cap_w",
                cap,
                "only meaningful with goal=power-cap",
            ));
        }
        let n = p.n.unwrap_or(DEFAULT_N.max(p.m));
        if n < p.m {
            return Err(bad("n", n, "must be at least m (the paper wants N ≫ M)"));
        }
        Ok(PamConfig {
            goal,
            cap_on_estimate: p.cap_on_estimate,
            alpha: p.alpha,
            alpha_fit: p.alpha_fit,
            model: CpiModel {
                t1: p.t1,
                t2: p.t2,
                t3: p.t3,
            },
            fit_cpi: p.fit_cpi,
            fit_window: p.fit_window,
            m: p.m,
            n,
            search: SearchConfig {
                delta: p.delta,
                floor: p.max_degradation,
                exhaustive_max_cpus: p.exhaustive_max_cpus,
                restarts: p.restarts,
                seed: p.seed,
                budget_ms: p.search_budget_ms,
            },
            interval: Duration::from_millis(p.interval_ms),
            cap_step_cpus: p.cap_step_cpus,
            cap_margin: p.cap_margin,
            cap_hold: p.cap_hold,
        })
    }
}

ecosched_model::policy_stats! {
    /// What PAM has done.
    pub struct PamStats {
        /// What it optimises.
        goal: String => info,
        /// Intervals decided.
        intervals: u64 => counter,
        /// Intervals spent in Good (a plan applied and kept).
        good_intervals: u64 => counter,
        /// Plans applied (entries into Good).
        plans: u64 => counter,
        /// Good stays ended by a failed goodness check.
        plans_undone: u64 => counter,
        /// Algorithm 1 solves that did not converge.
        unconverged_solves: u64 => counter,
        /// Power-cap level changes.
        cap_changes: u64 => counter,
        /// CPUs the managed tasks may use now.
        cpus_allowed: usize => gauge,
        /// Searches run, by kind.
        searches: String => info,
        /// The last search's decision.
        last_decision: String => info,
        /// The CPI model in use (the online fit's when fit_cpi is on).
        cpi_model: String => info,
        /// What the cache shares (eqs. 5–7) came from at the last
        /// interval: llc_occupancy (measured), lines_in, or llc_misses.
        occupancy_from: String => info,
    }
}

/// What PAM did so far, decision by decision (for tests, benchmarks and
/// validation).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PamHistory {
    /// Intervals decided.
    pub intervals: u32,
    /// Intervals spent in Good.
    pub good_intervals: u32,
    /// Plans applied (entries into Good).
    pub plans: u32,
    /// Good stays ended by a failed goodness check.
    pub failed: u32,
    /// Searches run, by kind name.
    pub searches: BTreeMap<&'static str, u32>,
    /// Algorithm 1 solves that did not converge.
    pub unconverged: usize,
    /// The last search's decision.
    pub last: Option<Decision>,
    /// For every plan applied: the interval it was decided in and each
    /// task's predicted CPI under it.
    pub predictions: Vec<(u32, BTreeMap<TaskId, f64>)>,
    /// Power-cap level changes.
    pub cap_changes: u32,
    /// CPUs allowed after each interval (power-cap goal).
    pub cpus_allowed: Vec<usize>,
    /// What the cache shares came from at the last interval with tasks.
    pub occupancy_from: Option<OccupancySource>,
}

/// The PAM policy.
#[derive(Debug, Clone)]
pub struct Pam {
    config: PamConfig,
    machine: Machine,
    fit: CpiFit,
    model: CpiModel,
    alphas: BTreeMap<TaskId, AlphaFit>,
    allowed: CpuSet,
    cap: Option<CapController>,
    /// Each task's CPU in the last Default interval (restored after a failed plan).
    default_cpus: BTreeMap<TaskId, CpuId>,
    /// Whether the next interval's counters are disturbed by a change.
    unsettled: bool,
    /// Lift the restoring pins at the next interval.
    unpin_next: bool,
    /// Managed tasks alive at the previous interval.
    last_live: Vec<TaskId>,
    stats: PamHistory,
}

/// Instructions below which a task's interval says nothing reliable.
const MIN_INSTRUCTIONS: u64 = 1000;

/// One observed task.
#[derive(Debug, Clone)]
struct TaskObs {
    id: TaskId,
    cpu: CpuId,
    cycles: f64,
    instructions: f64,
    l1d_refs: f64,
    l1d_misses: f64,
    llc_refs: f64,
    llc_misses: f64,
    lines: f64,
    /// Bytes of the LLC it holds, where the platform measures it.
    occupancy: Option<f64>,
    /// The weakest source its shares can come from.
    source: OccupancySource,
    on_cpu_s: f64,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        (a / b).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

impl Pam {
    /// PAM from its checked parameters.
    pub fn new(params: PamParams) -> Result<Self, PolicyError> {
        Ok(Pam::with_config(PamConfig::new(params)?))
    }

    /// PAM with a configuration.
    pub fn with_config(config: PamConfig) -> Self {
        Pam {
            machine: Machine::new(config.m, config.n),
            fit: CpiFit::new(config.fit_window),
            model: config.model,
            alphas: BTreeMap::new(),
            allowed: CpuSet::default(),
            cap: None,
            default_cpus: BTreeMap::new(),
            unsettled: true,
            unpin_next: false,
            last_live: Vec::new(),
            stats: PamHistory::default(),
            config,
        }
    }

    /// What it did so far, decision by decision.
    pub fn history(&self) -> &PamHistory {
        &self.stats
    }

    /// The CPI model in use (the online fit's, when enabled and solvable).
    pub fn model(&self) -> CpiModel {
        self.model
    }

    fn observe(snapshot: &Snapshot) -> Vec<TaskObs> {
        let interval_s = snapshot.interval_s;
        let f = |v: Option<u64>| v.unwrap_or(0) as f64;
        snapshot
            .live_managed()
            .filter(|t| !matches!(t.state, TaskState::Stopped))
            .filter_map(|t| {
                let c = &t.counters;
                let instructions = c.instructions.filter(|&i| i >= MIN_INSTRUCTIONS)?;
                Some(TaskObs {
                    id: t.id,
                    cpu: t.cpu?,
                    cycles: f(c.cycles),
                    instructions: instructions as f64,
                    l1d_refs: f(c.l1d_references),
                    l1d_misses: f(c.l1d_misses),
                    llc_refs: f(c.llc_references),
                    llc_misses: f(c.llc_misses),
                    lines: c.lines_in.or(c.llc_misses).unwrap_or(0) as f64,
                    occupancy: c.llc_occupancy.map(|b| b as f64),
                    source: if c.llc_occupancy.is_some() {
                        OccupancySource::Measured
                    } else if c.lines_in.is_some() {
                        OccupancySource::LinesIn
                    } else {
                        OccupancySource::LlcMisses
                    },
                    on_cpu_s: c
                        .on_cpu_ns
                        .map_or(interval_s, |ns| ns as f64 * 1e-9)
                        .max(1e-9),
                })
            })
            .collect()
    }

    fn measure(snapshot: &Snapshot, tasks: &[TaskObs]) -> Measure {
        let busy: Vec<f64> = snapshot
            .cpus
            .iter()
            .filter(|c| c.utilisation > 0.5)
            .filter_map(|c| c.freq_khz)
            .map(|k| k as f64 / 1e6)
            .collect();
        Measure {
            tasks: tasks
                .iter()
                .map(|t| (t.id, (t.cycles, t.instructions)))
                .collect(),
            energy_j: snapshot.power.system_j.or(snapshot.power.package_j),
            seconds: snapshot.interval_s,
            ghz: (!busy.is_empty()).then(|| busy.iter().sum::<f64>() / busy.len() as f64),
        }
    }

    /// Slots: tasks grouped by the CPU they ran on, within the allowed CPUs.
    fn slots(
        &self,
        tasks: &[TaskObs],
        layout: &Layout,
    ) -> (Vec<SlotObs>, Vec<usize>, Vec<Vec<TaskId>>, Vec<CpuId>) {
        let mut by_cpu: BTreeMap<CpuId, Vec<&TaskObs>> = BTreeMap::new();
        for t in tasks {
            by_cpu.entry(t.cpu).or_default().push(t);
        }
        let mut slots = Vec::new();
        let mut current = Vec::new();
        let mut members = Vec::new();
        let mut cpus = Vec::new();
        let mut held: Vec<Option<f64>> = Vec::new();
        for (cpu, group) in by_cpu {
            let Some(cache) = layout.cache_of(cpu) else {
                continue;
            };
            let sum = |f: fn(&TaskObs) -> f64| group.iter().map(|t| f(t)).sum::<f64>();
            let alpha = group
                .iter()
                .map(|t| {
                    self.alphas
                        .get(&t.id)
                        .map_or(self.config.alpha, |a| a.alpha)
                })
                .sum::<f64>()
                / group.len() as f64;
            slots.push(SlotObs {
                // Per second on a CPU: a task that started (or slept) part
                // of the interval must not look like a light one.
                lines_per_s: sum(|t| t.lines) / sum(|t| t.on_cpu_s),
                occupancy: 0.0,
                m1: ratio(sum(|t| t.l1d_misses), sum(|t| t.l1d_refs)),
                m2: ratio(sum(|t| t.llc_misses), sum(|t| t.llc_refs)),
                cpi: sum(|t| t.cycles) / sum(|t| t.instructions),
                alpha: if self.config.alpha_fit {
                    alpha
                } else {
                    self.config.alpha
                },
            });
            current.push(cache);
            members.push(group.iter().map(|t| t.id).collect());
            held.push(group.iter().map(|t| t.occupancy).sum::<Option<f64>>());
            cpus.push(cpu);
        }
        weigh_by_measured_occupancy(&mut slots, &current, &held);
        occupancies(&mut slots, &current);
        (slots, current, members, cpus)
    }

    /// Feed the online fits with this interval's per-task samples.
    fn learn(&mut self, tasks: &[TaskObs], layout: &Layout) {
        if let Some(source) = tasks.iter().map(|t| t.source).max() {
            self.stats.occupancy_from = Some(source);
        }
        let measured = tasks.iter().all(|t| t.occupancy.is_some());
        // A task's share of its cache: measured, or its lines in over the
        // cache's (eq. 7).
        let share = |t: &TaskObs| match (measured, t.occupancy) {
            (true, Some(bytes)) => bytes,
            _ => t.lines,
        };
        let mut lines_per_cache: BTreeMap<usize, f64> = BTreeMap::new();
        for t in tasks {
            if let Some(c) = layout.cache_of(t.cpu) {
                *lines_per_cache.entry(c).or_default() += share(t);
            }
        }
        for t in tasks {
            let m1 = ratio(t.l1d_misses, t.l1d_refs);
            let m2 = ratio(t.llc_misses, t.llc_refs);
            if self.config.fit_cpi && t.cycles > 0.0 {
                self.fit.push(CpiSample {
                    m1,
                    m2,
                    cpi: t.cycles / t.instructions,
                });
            }
            if self.config.alpha_fit {
                let total = layout
                    .cache_of(t.cpu)
                    .and_then(|c| lines_per_cache.get(&c))
                    .copied()
                    .unwrap_or(0.0);
                if total > 0.0 {
                    self.alphas
                        .entry(t.id)
                        .or_insert_with(|| AlphaFit::new(self.config.alpha))
                        .push(share(t) / total, m2);
                }
            }
        }
        if self.config.fit_cpi {
            if let Some(m) = self.fit.solve() {
                self.model = m;
            }
        }
    }

    /// Every live managed task back to the whole allowed set.
    fn unpin_all(&self, snapshot: &Snapshot, plan: &mut Plan) {
        for t in snapshot.live_managed() {
            plan.task_cpus.insert(t.id, self.allowed.clone());
        }
    }

    /// Leave Good: restore the Default placement after a failed plan.
    fn leave_good(&mut self, why: Leave, snapshot: &Snapshot, plan: &mut Plan) {
        let hold = self.machine.hold_after(why);
        self.machine.enter_default(hold);
        self.unsettled = true;
        match why {
            Leave::Failed => {
                self.stats.failed += 1;
                for t in snapshot.live_managed() {
                    let set = match self.default_cpus.get(&t.id) {
                        Some(cpu) if self.allowed.contains(*cpu) => CpuSet::single(*cpu),
                        _ => self.allowed.clone(),
                    };
                    plan.task_cpus.insert(t.id, set);
                }
                self.unpin_next = true;
            }
            Leave::Expired => self.unpin_all(snapshot, plan),
        }
    }

    /// Run Algorithm 2 on this interval and, if it finds a plan, pin it.
    fn propose(&mut self, snapshot: &Snapshot, tasks: &[TaskObs], plan: &mut Plan) {
        let live: Vec<TaskId> = snapshot.live_managed().map(|t| t.id).collect();
        let layout = Layout::from_topology(&snapshot.topology, &self.allowed);
        let (slots, current, members, cpus) = self.slots(tasks, &layout);
        if slots.is_empty() {
            return;
        }
        let problem = Problem {
            layout: &layout,
            slots: &slots,
            current: &current,
            model: &self.model,
        };
        let decision = decide(&problem, &self.config.search);
        *self.stats.searches.entry(decision.kind.name()).or_insert(0) += 1;
        self.stats.unconverged += decision.unconverged;
        let moves = decision.moves;
        if moves > 0 {
            let seats = seat(&layout, &decision.assignment, &cpus);
            let mut predicted = BTreeMap::new();
            for (slot, cpu) in seats.iter().enumerate() {
                for id in &members[slot] {
                    plan.task_cpus.insert(*id, CpuSet::single(*cpu));
                    if let Some(cpi) = decision.predicted_cpi.get(slot) {
                        predicted.insert(*id, *cpi);
                    }
                }
            }
            self.stats
                .predictions
                .push((self.stats.intervals, predicted));
            self.machine.enter_good(live);
            self.stats.plans += 1;
            self.unsettled = true;
        }
        self.stats.last = Some(decision);
    }
}

/// A CPU for each slot: a slot that stays in its cache keeps its CPU, the
/// others take the cache's free CPUs in order.
fn seat(layout: &Layout, assignment: &[usize], cpus: &[CpuId]) -> Vec<CpuId> {
    let mut out: Vec<Option<CpuId>> = vec![None; assignment.len()];
    let mut taken: Vec<CpuId> = Vec::new();
    for (s, &c) in assignment.iter().enumerate() {
        if layout.caches[c].cpus.contains(&cpus[s]) && !taken.contains(&cpus[s]) {
            out[s] = Some(cpus[s]);
            taken.push(cpus[s]);
        }
    }
    for (s, &c) in assignment.iter().enumerate() {
        if out[s].is_none() {
            let free = layout.caches[c]
                .cpus
                .iter()
                .copied()
                .find(|cpu| !taken.contains(cpu))
                .unwrap_or(cpus[s]);
            taken.push(free);
            out[s] = Some(free);
        }
    }
    out.into_iter()
        .zip(cpus)
        .map(|(o, c)| o.unwrap_or(*c))
        .collect()
}

impl Policy for Pam {
    fn name(&self) -> &str {
        "pam"
    }

    fn requirements(&self) -> Requirements {
        Requirements {
            counters: [
                CounterKind::Instructions,
                CounterKind::Cycles,
                CounterKind::LlcReferences,
                CounterKind::LlcMisses,
                CounterKind::L1dReferences,
                CounterKind::L1dMisses,
            ]
            .into_iter()
            .collect(),
            // Measured occupancy is what eqs. 5–7 estimate; eq. 5's L
            // counts prefetched lines too; LLC misses stand in where the
            // machine has neither.
            wanted: [CounterKind::LinesIn, CounterKind::LlcOccupancy].into(),
            power: !matches!(self.config.goal, Goal::Performance),
            measured_power: matches!(self.config.goal, Goal::PowerCap { .. })
                && !self.config.cap_on_estimate,
            affinity: true,
            ..Requirements::default()
        }
    }

    fn interval(&self) -> Duration {
        self.config.interval
    }

    fn init(&mut self, topology: &Topology) -> Result<Plan, PolicyError> {
        self.allowed = topology.online_cpus();
        if self.allowed.is_empty() {
            return Err(PolicyError::Incompatible(
                "the machine has no online CPUs".into(),
            ));
        }
        nothing_to_choose(topology, &self.allowed).map_or(Ok(()), |why| {
            Err(PolicyError::Incompatible(format!(
                "PAM pairs tasks across last-level caches; {why}, so there is no mapping to choose"
            )))
        })?;
        if let Goal::PowerCap { cap_w } = self.config.goal {
            self.cap = Some(CapController::new(
                topology,
                &self.allowed,
                cap_w,
                self.config.cap_step_cpus,
                self.config.cap_margin,
                self.config.cap_hold,
            ));
        }
        Ok(Plan::unchanged())
    }

    fn stats(&self) -> PolicyStats {
        let s = &self.stats;
        let searches: Vec<String> = s
            .searches
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect();
        PamStats {
            goal: self.config.goal.name().into(),
            intervals: u64::from(s.intervals),
            good_intervals: u64::from(s.good_intervals),
            plans: u64::from(s.plans),
            plans_undone: u64::from(s.failed),
            unconverged_solves: s.unconverged as u64,
            cap_changes: u64::from(s.cap_changes),
            cpus_allowed: self.allowed.len(),
            searches: if searches.is_empty() {
                "none".into()
            } else {
                searches.join(", ")
            },
            last_decision: s.last.as_ref().map_or_else(String::new, |last| {
                let budget = self.config.search.budget_ms;
                let stop = match (last.stopped_early, last.kind) {
                    (false, _) => String::new(),
                    (true, SearchKind::Exhaustive) => {
                        format!(", stopped early at search_budget_ms={budget}")
                    }
                    (true, SearchKind::Local) => format!(
                        ", stopped early at search_budget_ms={budget} ({} of {} descents complete)",
                        last.descents,
                        self.config.search.restarts + 1
                    ),
                };
                format!(
                    "{} search, {} evaluated, predicted speedup {:.4}, {} moves{stop}",
                    last.kind.name(),
                    last.evaluated,
                    last.speedup,
                    last.moves
                )
            }),
            cpi_model: format!(
                "t1 {:.3}, t2 {:.3}, t3 {:.1}",
                self.model.t1, self.model.t2, self.model.t3
            ),
            occupancy_from: s
                .occupancy_from
                .map_or_else(|| "none yet".into(), |o| o.name().into()),
        }
        .to_stats()
    }
    fn decide(&mut self, snapshot: &Snapshot) -> Plan {
        self.stats.intervals += 1;
        let mut plan = Plan::unchanged();
        let tasks = Pam::observe(snapshot);
        let layout = Layout::from_topology(&snapshot.topology, &self.allowed);
        self.learn(&tasks, &layout);
        let now = Pam::measure(snapshot, &tasks);
        // An interval in which tasks arrived or left mixes two workloads:
        // it is neither a Default baseline nor a basis for a plan.
        let live: Vec<TaskId> = snapshot.live_managed().map(|t| t.id).collect();
        let same_tasks = live == self.last_live;
        // Forget the α estimates of tasks that are gone.
        self.alphas.retain(|id, _| live.contains(id));
        self.last_live = live;
        let settled = !std::mem::replace(&mut self.unsettled, false) && same_tasks;

        if let Some(cap) = self.cap.as_mut() {
            let energy = snapshot.power.system_j.or(snapshot.power.package_j);
            if let Some(j) = energy {
                if let Some(set) = cap.step(j / snapshot.interval_s.max(1e-9)) {
                    self.allowed = set.clone();
                    plan.managed_cpus = Some(set);
                    self.stats.cap_changes += 1;
                    self.machine.enter_default(0);
                    self.unpin_next = false;
                    self.unsettled = true;
                    self.unpin_all(snapshot, &mut plan);
                    self.stats.cpus_allowed.push(self.allowed.len());
                    return plan;
                }
            }
            self.stats.cpus_allowed.push(self.allowed.len());
        }

        if let State::Good { tasks: covered, .. } = &self.machine.state {
            self.stats.good_intervals += 1;
            let live: Vec<TaskId> = snapshot.live_managed().map(|t| t.id).collect();
            if covered.iter().any(|id| !live.contains(id))
                || live.iter().any(|id| !covered.contains(id))
            {
                // The workload changed under the plan: re-observe.
                self.leave_good(Leave::Expired, snapshot, &mut plan);
                return plan;
            }
            if let Some(why) = self.machine.good_step(&now, &self.config.goal) {
                self.leave_good(why, snapshot, &mut plan);
            }
            return plan;
        }

        if std::mem::replace(&mut self.unpin_next, false) {
            self.unpin_all(snapshot, &mut plan);
            self.unsettled = true;
        }
        if settled && !now.tasks.is_empty() {
            self.machine.baseline = Some(now);
            self.default_cpus = tasks.iter().map(|t| (t.id, t.cpu)).collect();
        }
        if let State::Default { hold } = &mut self.machine.state {
            if *hold > 0 {
                *hold -= 1;
                return plan;
            }
        }
        if settled && plan.task_cpus.is_empty() {
            self.propose(snapshot, &tasks, &mut plan);
        }
        plan
    }
}

/// Seed of the benchmark instance.
pub const BENCH_SEED: u64 = 2024;

/// Search once on a synthetic instance of `cpus` CPUs in two-CPU caches,
/// every CPU busy with a seeded random mix of streaming and cache-sensitive
/// tasks: the decision-time benchmark's workload (`ecosched bench pam` and
/// the criterion bench use the same instance).
pub fn bench_instance(cpus: usize, seed: u64) -> (Layout, Vec<SlotObs>, Vec<usize>) {
    let layout = Layout::uniform(cpus.div_ceil(2).max(1), 2);
    let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let n = layout.cpus();
    let mut slots: Vec<SlotObs> = (0..n)
        .map(|_| {
            let streaming = next() < 0.5;
            SlotObs {
                lines_per_s: if streaming {
                    4e7 + 2e7 * next()
                } else {
                    2e6 + 8e6 * next()
                },
                occupancy: 0.0,
                m1: 0.01 + 0.05 * next(),
                m2: if streaming {
                    0.85 + 0.1 * next()
                } else {
                    0.1 + 0.4 * next()
                },
                cpi: 0.8 + 2.0 * next(),
                alpha: DEFAULT_ALPHA,
            }
        })
        .collect();
    let current: Vec<usize> = (0..n).map(|i| i / 2).collect();
    occupancies(&mut slots, &current);
    (layout, slots, current)
}

/// One Algorithm 2 call on [`bench_instance`].
pub fn bench_decide(
    layout: &Layout,
    slots: &[SlotObs],
    current: &[usize],
    config: &SearchConfig,
) -> Decision {
    let model = CpiModel::PAPER;
    let problem = Problem {
        layout,
        slots,
        current,
        model: &model,
    };
    decide(&problem, config)
}

#[cfg(test)]
mod tests;
