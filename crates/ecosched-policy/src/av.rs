//! Resource-conscious scheduling with activity vectors — Merkel et al.,
//! EuroSys'10, §4–6 (`docs/design/papers.md`, "Activity vectors").
//!
//! ```text
//!  counters ──▶ activity vector (bus, cache, core) ∈ [0,1]³, as if at f_max
//!                  │ §4.1, translated by the P-state's translation vector
//!                  ▼
//!  run queues ◀── vector balancing: moves that raise min(varsum_a, varsum_b)
//!                  │ §5.1, eqs. 1–3; load moves may never lower it
//!                  ▼
//!  gang cycle ◀── sorted co-scheduling: even CPUs descending, odd ascending
//!                  │ §5.3, epoch = timeslice × m, next pair shifted ½ epoch
//!                  ▼
//!  frequency  ◀── heuristic: mean EDP_factor(x) of the tasks that run in
//!                  the next slot < 1 → lowest P-state, else highest (§6, eq. 5)
//! ```
//!
//! - **Activity vector** (§4.1): per task, from what `--observe linux`
//!   gives. Memory bus = memory transactions per second on the CPU (cache
//!   lines moved to or from memory: the paper's bus transactions, the
//!   CPU's memory-traffic events, or resctrl's bandwidth monitoring) over
//!   the machine's peak in them, where the machine counts them and its
//!   calibration has that peak; otherwise LLC misses per second over the
//!   peak in misses, which leaves out prefetched lines (the `bus_from`
//!   statistic says which, and why). `bus_event` forces either; cache = LLC references per cycle over
//!   the peak (paper: one per four cycles); core = IPC capped at 1. A
//!   sample taken below the highest P-state is multiplied component-wise by
//!   that P-state's translation vector, so every vector reads as if at the
//!   highest frequency. Peaks and translation vectors come from
//!   `Topology.calibration.activity` (`ecosched calibrate av`); without
//!   them the policy refuses to start and says how to get them. Samples
//!   are smoothed (exponential, weight `smoothing`).
//! - **Run queues** are the policy's own: each managed task is pinned to
//!   one CPU (affinity), so the kernel's queue on that CPU is the paper's
//!   run queue. New tasks join the shortest queue. Load balancing (queue
//!   lengths differing by two or more) moves the task whose move keeps
//!   min(varsum) highest and refuses any move that would lower it (§7:
//!   "the varsum metric of the runqueues … does not increase" is the
//!   paper's wording for *lower*; the goal stated in §5.1 is to raise it).
//! - **Varsum balancing** (§5.1): every `balance_ms`, when the largest and
//!   smallest varsum differ by more than `varsum_threshold` (or the
//!   smallest is below it: like-with-like queues have no spread), the single
//!   migration or exchange between two queues that raises min(varsum) of
//!   the pair most is made, repeatedly, while it gains more than
//!   `min_gain`. A migration must not unbalance queue lengths. The paper
//!   balances between the highest- and lowest-varsum queue of each level
//!   of the kernel's hierarchy; a user-level balancer sees the whole
//!   machine at once and so searches every pair.
//! - **Sorted co-scheduling** (§5.3), when some CPU has more than one
//!   task: each queue is sorted by the critical component (`critical`,
//!   default the memory bus), descending on even CPUs and ascending on odd
//!   ones (position within the chip); epoch = `timeslice_ms` × m, m the
//!   longest queue; a task of a queue with n tasks runs m/n timeslices; the
//!   second pair of CPUs starts half an epoch later (every further pair
//!   alternates). The cycle is handed to the platform as a timed gang
//!   schedule with one group per (CPU, queue position), so on Linux each
//!   CPU's group is frozen and thawed by the cgroup freezer. Slot
//!   boundaries are rounded to half a timeslice, the policy's decision
//!   period, so that the frequency heuristic sees every switch. One epoch
//!   serves the whole machine (m is the longest queue on any chip).
//! - **Tasks that block** (§5.3: sorting "does not make sense" for I/O
//!   bound tasks): a task observed sleeping in more than `block_ratio` of
//!   its observations is left out of the gang cycle (never frozen) and
//!   only balanced; its statistics name it.
//! - **Frequency heuristic** (§6, eq. 5), in `av` only: at every slot
//!   start the policy knows exactly which tasks run next, so "no sibling
//!   switch imminent" always holds; it averages `EDP_factor(x)` over them
//!   (coefficients from `Topology.calibration.edp_factor`, Q6600: 1.6 −
//!   0.8·x) and runs the chip at the lowest P-state when the mean is below
//!   1, at the highest otherwise. x is the task's memory-bus use relative
//!   to one core's share of the bus, capped at 1: eq. 4's corner "memory
//!   utilisation 100 %" is Table 1's stream, measured with one to four
//!   instances sharing the bus, so a task that uses at least its share is
//!   at 100 %.
//! - `av-sort` is `av` without the heuristic (Fig. 6); `balance=false`,
//!   `sort=false` and `freq=false` switch each part off.

pub use crate::membus::{bus_reading, BusEvent, BusSource};
use crate::{Policy, PolicyError};
use ecosched_model::calibration::{ActivityCalibration, EdpFactor};
use ecosched_model::{
    CounterKind, CpuId, CpuSet, FreqDomainId, FreqSetting, GangGroup, GangSchedule, GangSlot, Plan,
    PolicyStats, Requirements, Snapshot, TaskId, TaskSample, TaskState, Topology, TypedStats,
};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

crate::typed_params! {
    /// Parameters of `av` and `av-sort`.
    pub struct AvParams {
        /// Timeslice of sorted co-scheduling, ms; epoch = timeslice × longest
        /// queue (Linux 2.6.22's default slice; half a timeslice is a gang
        /// slot, and slots must be ≥ 10 ms).
        timeslice_ms: u64 = int(20, 3_600_000).default("100").source("§5.3"),
        /// Vector balancing by varsum.
        balance: bool = flag().default("true").source("§5.1"),
        /// Sorted co-scheduling when a CPU has more than one task.
        sort: bool = flag().default("true").source("§5.3"),
        /// The frequency heuristic.
        freq: bool = flag().default("true").source("§6"),
        /// The component run queues are sorted by.
        critical: String = choice(&["bus", "cache", "core"]).default("bus").source("§5.3"),
        /// Memory-bus counter: auto (memory transactions where counted and
        /// calibrated, else LLC misses), llc_misses, or mem_transactions.
        bus_event: String = choice(&["auto", "llc_misses", "mem_transactions"]).default("auto").source("§4.1"),
        /// Period of varsum balancing and re-sorting, ms.
        balance_ms: u64 = int(1, 3_600_000).default("1000"),
        /// Largest minus smallest varsum from which a balancing pass starts.
        varsum_threshold: f64 = real().at_least(0.0).default("0.01"),
        /// Smallest rise of min(varsum) a migration must bring.
        min_gain: f64 = real().at_least(0.0).default("0.01"),
        /// Weight of a new sample in a task's vector.
        smoothing: f64 = real().above(0.0).at_most(1.0).default("0.5"),
        /// Fraction of observations asleep above which a task is left out of
        /// the gang cycle.
        block_ratio: f64 = real().at_least(0.0).at_most(1.0).default("0.2").source("§5.3"),
    }
}

ecosched_model::policy_stats! {
    /// What an activity-vector policy has done.
    pub struct AvStats {
        /// Tasks moved between run queues (an exchange moves two).
        migrations: u64 => counter,
        /// Load-balancing moves refused because they would lower min(varsum).
        load_moves_refused_for_varsum: u64 => counter,
        /// Gang cycles handed to the platform.
        gang_schedules: u64 => counter,
        /// Share of gang slots run at the lowest frequency (0 without the
        /// heuristic).
        low_frequency_share: f64 => gauge,
        /// Tasks that block too often to be gang-scheduled, only balanced.
        balanced_only_blocking_tasks: String => info,
        /// Each task's activity vector (bus, cache, core).
        activity_vectors: String => info,
        /// What the memory-bus component was read from at the last
        /// sample: mem_transactions, or llc_misses and why.
        bus_from: String => info,
    }
}

/// Number of activity-vector components.
const DIMS: usize = 3;
/// How far out of order (in the critical component) a queue may drift
/// before it is re-sorted.
const SORT_MARGIN: f64 = 0.02;
/// Balancing periods a task moved by varsum balancing stays put: its
/// vector was measured beside its old co-runners and needs new samples
/// before it can justify another move (without this, moves that only chase
/// contention-dependent noise undo each other).
const COOLDOWN_PERIODS: f64 = 10.0;
/// Observations before a task's blocking ratio is trusted.
const MIN_OBSERVATIONS_FOR_BLOCKING: u32 = 5;

/// An activity vector: memory bus, shared cache, rest of the core (§4.1).
pub type Vector = [f64; DIMS];

/// Which vector component a queue is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// Memory bus (index 0).
    Bus = 0,
    /// Shared cache (index 1).
    Cache = 1,
    /// Rest of the core: IPC (index 2).
    Core = 2,
}

/// Settings of one `av` policy.
#[derive(Debug, Clone, PartialEq)]
pub struct AvConfig {
    /// Timeslice of sorted co-scheduling, µs.
    pub timeslice_us: u64,
    /// Vector balancing on.
    pub balance: bool,
    /// Sorted co-scheduling on.
    pub sort: bool,
    /// Frequency heuristic on.
    pub freq: bool,
    /// Sorting component.
    pub critical: Component,
    /// Counter read as the memory bus.
    pub bus_event: BusEvent,
    /// Balancing period, µs.
    pub balance_us: u64,
    /// Varsum spread that starts a pass.
    pub varsum_threshold: f64,
    /// Smallest accepted gain.
    pub min_gain: f64,
    /// EWMA weight of a new sample.
    pub smoothing: f64,
    /// Sleeping ratio above which a task is not gang-scheduled.
    pub block_ratio: f64,
}

impl AvConfig {
    /// The configuration from checked parameters.
    pub fn new(p: AvParams) -> Self {
        AvConfig {
            timeslice_us: p.timeslice_ms * 1000,
            balance: p.balance,
            sort: p.sort,
            freq: p.freq,
            critical: match p.critical.as_str() {
                "cache" => Component::Cache,
                "core" => Component::Core,
                _ => Component::Bus,
            },
            bus_event: match p.bus_event.as_str() {
                "mem_transactions" => BusEvent::MemTransactions,
                "llc_misses" => BusEvent::LlcMisses,
                _ => BusEvent::Auto,
            },
            balance_us: p.balance_ms * 1000,
            varsum_threshold: p.varsum_threshold,
            min_gain: p.min_gain,
            smoothing: p.smoothing,
            block_ratio: p.block_ratio,
        }
    }

    /// The decision period: half a timeslice, the gang grid.
    fn grid_us(&self) -> u64 {
        self.timeslice_us / 2
    }
}

/// `varsum` of a run queue (eq. 3): the sum over components of the
/// variance of that component over the queue's tasks. Zero for an empty
/// or one-task queue.
pub fn varsum<'a>(vectors: impl IntoIterator<Item = &'a Vector>) -> f64 {
    let mut sum = [0.0; DIMS];
    let mut sq = [0.0; DIMS];
    let mut m = 0usize;
    for v in vectors {
        for i in 0..DIMS {
            sum[i] += v[i];
            sq[i] += v[i] * v[i];
        }
        m += 1;
    }
    if m == 0 {
        return 0.0;
    }
    let m = m as f64;
    (0..DIMS)
        .map(|i| (sq[i] / m - (sum[i] / m).powi(2)).max(0.0))
        .sum()
}

/// Task `t`'s activity vector from one interval's counters, translated to
/// the highest frequency `max_khz` (§4.1) when it ran at `freq_khz` below
/// it; `None` when it did not run or a counter is missing. `bus_event`
/// says which counter is read as memory-bus transactions
/// ([`bus_reading`]).
pub fn activity_vector(
    t: &TaskSample,
    freq_khz: Option<u64>,
    max_khz: u64,
    act: &ActivityCalibration,
    bus_event: BusEvent,
) -> Option<Vector> {
    let c = &t.counters;
    let cycles = c.cycles.filter(|&x| x > 0)? as f64;
    let instr = c.instructions? as f64;
    let refs = c.llc_references? as f64;
    let (bus, peak_bus_per_s, _) = bus_reading(c, act, bus_event)?;
    let on_cpu_s = match c.on_cpu_ns {
        Some(ns) if ns > 0 => ns as f64 * 1e-9,
        _ => cycles / (freq_khz.unwrap_or(max_khz).max(1) as f64 * 1e3),
    };
    let mut v = [
        (bus / on_cpu_s / peak_bus_per_s).min(1.0),
        (refs / cycles / act.peak_cache_per_cycle).min(1.0),
        (instr / cycles).min(1.0),
    ];
    if let Some(f) = freq_khz.filter(|&f| f < max_khz) {
        if let Some(tv) = act.translation_at(f) {
            v[0] = (v[0] * tv.bus).min(1.0);
            v[1] = (v[1] * tv.cache).min(1.0);
            v[2] = (v[2] * tv.core).min(1.0);
        }
    }
    Some(v)
}

/// What the policy knows about one task.
#[derive(Debug, Clone, Default)]
struct TaskInfo {
    /// Smoothed vector, as if at the highest frequency; `None` before the
    /// first sample with counters.
    vector: Option<Vector>,
    /// Observations, and how many found it asleep.
    seen: u32,
    asleep: u32,
    /// Its name, for notes.
    name: String,
    /// When varsum balancing last moved it, s.
    moved_s: Option<f64>,
}

impl TaskInfo {
    fn vec(&self) -> Vector {
        self.vector.unwrap_or([0.0; DIMS])
    }
}

/// The gang cycle in force and when it started.
#[derive(Debug, Clone)]
struct Cycle {
    /// Units (half timeslices) per cycle.
    units: u64,
    /// For each task in the cycle, the units (of the cycle) it runs in.
    runs: BTreeMap<TaskId, Vec<bool>>,
    /// When the platform started it, s.
    start_s: f64,
    /// Queues it was built from, to detect a change.
    queues: Vec<Vec<TaskId>>,
}

/// The activity-vector policy (`av`, `av-sort`).
pub struct Av {
    name: &'static str,
    config: AvConfig,
    cpus: Vec<CpuId>,
    /// Position of each entry of `cpus` within its chip (package): even
    /// positions sort descending, odd ascending, and positions 2k, 2k+1
    /// form pair k.
    chip_pos: Vec<usize>,
    activity: Option<ActivityCalibration>,
    edp: Option<EdpFactor>,
    max_khz: u64,
    min_khz: u64,
    domains: Vec<FreqDomainId>,
    /// CPUs sharing the memory bus a task's x is relative to (the chip).
    bus_sharers: f64,
    tasks: BTreeMap<TaskId, TaskInfo>,
    /// Run queue of each CPU (index into `cpus`).
    queues: Vec<Vec<TaskId>>,
    pinned: BTreeMap<TaskId, CpuId>,
    cycle: Option<Cycle>,
    last_balance_s: f64,
    freq_now: Option<u64>,
    // Statistics for the notes.
    migrations: u64,
    load_moves_refused: u64,
    schedules: u64,
    low_units: u64,
    units: u64,
    /// Where the last sample's bus component came from.
    bus_from: Option<BusSource>,
}

impl Av {
    /// A policy named `name` from its checked parameters.
    pub fn new(name: &'static str, params: AvParams) -> Result<Self, PolicyError> {
        Ok(Av::with_config(name, AvConfig::new(params)))
    }

    /// A policy named `name` with `config`.
    pub fn with_config(name: &'static str, config: AvConfig) -> Self {
        Av {
            name,
            config,
            cpus: Vec::new(),
            chip_pos: Vec::new(),
            activity: None,
            edp: None,
            max_khz: 0,
            min_khz: 0,
            domains: Vec::new(),
            bus_sharers: 1.0,
            tasks: BTreeMap::new(),
            queues: Vec::new(),
            pinned: BTreeMap::new(),
            cycle: None,
            last_balance_s: f64::NEG_INFINITY,
            freq_now: None,
            migrations: 0,
            load_moves_refused: 0,
            schedules: 0,
            low_units: 0,
            units: 0,
            bus_from: None,
        }
    }

    /// A task's vector from one interval's counters (§4.1); `None` when
    /// it did not run.
    fn sample(&self, t: &TaskSample, freq_khz: Option<u64>) -> Option<Vector> {
        activity_vector(
            t,
            freq_khz,
            self.max_khz,
            self.activity.as_ref()?,
            self.config.bus_event,
        )
    }

    fn vectors_of<'a>(&'a self, q: &'a [TaskId]) -> impl Iterator<Item = Vector> + 'a {
        q.iter()
            .map(|t| self.tasks.get(t).map(TaskInfo::vec).unwrap_or([0.0; DIMS]))
    }

    fn queue_varsum(&self, q: &[TaskId]) -> f64 {
        let v: Vec<Vector> = self.vectors_of(q).collect();
        varsum(v.iter())
    }

    /// Whether a task blocks too often to be gang-scheduled.
    fn blocks(&self, t: &TaskId) -> bool {
        self.tasks.get(t).is_some_and(|s| {
            s.seen >= MIN_OBSERVATIONS_FOR_BLOCKING
                && f64::from(s.asleep) > self.config.block_ratio * f64::from(s.seen)
        })
    }

    /// Update vectors and queues from one snapshot.
    fn observe(&mut self, snap: &Snapshot) {
        let freq_of = |cpu: Option<CpuId>| {
            cpu.and_then(|c| snap.cpus.iter().find(|s| s.id == c))
                .and_then(|s| s.freq_khz)
        };
        let live: BTreeSet<TaskId> = snap.live_managed().map(|t| t.id).collect();
        // A task the cycle froze may look asleep (Linux shows a frozen task
        // as `D`): only count sleeps where the cycle let it run on both
        // sides of the observation.
        let scheduled: BTreeSet<TaskId> = live
            .iter()
            .filter(|t| self.scheduled_around(t, snap.time_s))
            .copied()
            .collect();
        for t in snap.live_managed() {
            let sample = self.sample(t, freq_of(t.cpu));
            if sample.is_some() {
                if let Some(act) = &self.activity {
                    self.bus_from = bus_reading(&t.counters, act, self.config.bus_event)
                        .map(|(_, _, from)| from);
                }
            }
            let a = self.config.smoothing;
            let e = self.tasks.entry(t.id).or_default();
            e.name.clone_from(&t.name);
            e.seen += 1;
            if t.state == TaskState::Sleeping && scheduled.contains(&t.id) {
                e.asleep += 1;
            }
            if let Some(v) = sample {
                e.vector = Some(match e.vector {
                    Some(old) => [0, 1, 2].map(|i| old[i] + a * (v[i] - old[i])),
                    None => v,
                });
            }
        }
        self.tasks.retain(|id, _| live.contains(id));
        self.pinned.retain(|id, _| live.contains(id));
        for q in &mut self.queues {
            q.retain(|id| live.contains(id));
        }
        let queued: BTreeSet<TaskId> = self.queues.iter().flatten().copied().collect();
        for id in live.difference(&queued) {
            if let Some(i) = (0..self.queues.len()).min_by_key(|&i| (self.queues[i].len(), i)) {
                self.queues[i].push(*id);
            }
        }
    }

    /// Even out queue lengths without lowering min(varsum) (§7).
    fn load_balance(&mut self) {
        loop {
            let Some(hi) =
                (0..self.queues.len()).max_by_key(|&i| (self.queues[i].len(), usize::MAX - i))
            else {
                return;
            };
            let Some(lo) = (0..self.queues.len()).min_by_key(|&i| (self.queues[i].len(), i)) else {
                return;
            };
            if self.queues[hi].len() < self.queues[lo].len() + 2 {
                return;
            }
            let before = self
                .queue_varsum(&self.queues[hi])
                .min(self.queue_varsum(&self.queues[lo]));
            let mut best: Option<(usize, f64)> = None;
            for k in 0..self.queues[hi].len() {
                let (a, b) = self.moved(hi, lo, k, None);
                let after = self.queue_varsum(&a).min(self.queue_varsum(&b));
                let keeps = !self.config.balance || after >= before - 1e-12;
                if keeps && best.is_none_or(|(_, s)| after > s) {
                    best = Some((k, after));
                }
            }
            match best {
                Some((k, _)) => {
                    let t = self.queues[hi].remove(k);
                    self.queues[lo].push(t);
                    self.migrations += 1;
                }
                None => {
                    self.load_moves_refused += 1;
                    return;
                }
            }
        }
    }

    /// Queues `a` and `b` after moving `a[k]` to `b` and, if given, `b[j]`
    /// to `a`.
    fn moved(&self, a: usize, b: usize, k: usize, j: Option<usize>) -> (Vec<TaskId>, Vec<TaskId>) {
        let mut qa = self.queues[a].clone();
        let mut qb = self.queues[b].clone();
        let t = qa.remove(k);
        if let Some(j) = j {
            let u = qb.remove(j);
            qa.push(u);
        }
        qb.push(t);
        (qa, qb)
    }

    /// Vector balancing (§5.1): make the best min(varsum)-raising
    /// migration or exchange while one gains more than `min_gain`.
    fn varsum_balance(&mut self, now_s: f64) {
        let rest_s = COOLDOWN_PERIODS * self.config.balance_us as f64 * 1e-6;
        let resting = |s: &Self, t: &TaskId| {
            s.tasks
                .get(t)
                .and_then(|i| i.moved_s)
                .is_some_and(|m| now_s - m < rest_s)
        };
        let n = self.queues.len();
        let limit = self.tasks.len().max(1) * 2;
        for _ in 0..limit {
            let vs: Vec<f64> = self.queues.iter().map(|q| self.queue_varsum(q)).collect();
            let spread = vs.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
                - vs.iter().cloned().fold(f64::INFINITY, f64::min);
            // The paper starts a pass when the spread is large; queues that
            // are all alike (every varsum near 0, e.g. memory-bound tasks
            // together) have no spread but the most to gain.
            let lowest = vs.iter().cloned().fold(f64::INFINITY, f64::min);
            let worth =
                spread > self.config.varsum_threshold || lowest < self.config.varsum_threshold;
            if !worth {
                return;
            }
            let mut best: Option<(f64, usize, usize, usize, Option<usize>)> = None;
            for a in 0..n {
                for b in 0..n {
                    if a == b {
                        continue;
                    }
                    let before = vs[a].min(vs[b]);
                    let (la, lb) = (self.queues[a].len(), self.queues[b].len());
                    for k in 0..la {
                        if resting(self, &self.queues[a][k]) {
                            continue;
                        }
                        // A plain migration must keep lengths balanced.
                        let mut options: Vec<Option<usize>> = (0..lb).map(Some).collect();
                        if la > lb {
                            options.push(None);
                        }
                        for j in options {
                            if j.is_some() && a > b {
                                continue; // each exchange once
                            }
                            if j.is_some_and(|j| resting(self, &self.queues[b][j])) {
                                continue;
                            }
                            let (qa, qb) = self.moved(a, b, k, j);
                            let gain = self.queue_varsum(&qa).min(self.queue_varsum(&qb)) - before;
                            if gain > self.config.min_gain && best.is_none_or(|(g, ..)| gain > g) {
                                best = Some((gain, a, b, k, j));
                            }
                        }
                    }
                }
            }
            let Some((_, a, b, k, j)) = best else {
                return;
            };
            let mut moved = vec![self.queues[a][k]];
            moved.extend(j.map(|j| self.queues[b][j]));
            let (qa, qb) = self.moved(a, b, k, j);
            self.queues[a] = qa;
            self.queues[b] = qb;
            for t in moved {
                if let Some(info) = self.tasks.get_mut(&t) {
                    info.moved_s = Some(now_s);
                }
            }
            self.migrations += 1 + u64::from(j.is_some());
        }
    }

    /// The gang cycle for the current queues (§5.3), or `None` when no CPU
    /// has two gang-eligible tasks.
    fn build_cycle(&self, start_s: f64) -> Option<(Cycle, GangSchedule)> {
        let crit = self.config.critical as usize;
        let sorted: Vec<Vec<TaskId>> = self
            .queues
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let mut q: Vec<TaskId> = q.iter().filter(|t| !self.blocks(t)).copied().collect();
                let key = |t: &TaskId| self.tasks.get(t).map_or(0.0, |s| s.vec()[crit]);
                let ascending = self.chip_pos[i] % 2 == 1;
                // Keep the order in force while it is sorted within
                // `SORT_MARGIN`: vectors drift with noise and with the
                // frequency, and every new order restarts the cycle.
                let old: Vec<TaskId> = self
                    .cycle
                    .as_ref()
                    .and_then(|c| c.queues.get(i))
                    .map(|o| o.iter().filter(|t| q.contains(t)).copied().collect())
                    .unwrap_or_default();
                let sorted_enough = |o: &[TaskId]| {
                    o.windows(2).all(|w| {
                        let d = key(&w[0]) - key(&w[1]);
                        if ascending {
                            d <= SORT_MARGIN
                        } else {
                            d >= -SORT_MARGIN
                        }
                    })
                };
                if old.len() == q.len() && sorted_enough(&old) {
                    return old;
                }
                q.sort_by(|x, y| key(y).total_cmp(&key(x)).then(x.cmp(y)));
                if ascending {
                    q.reverse();
                }
                q
            })
            .collect();
        let m = sorted.iter().map(Vec::len).max().unwrap_or(0) as u64;
        if m < 2 {
            return None;
        }
        let units = 2 * m; // grid unit = half a timeslice
        let mut runs = BTreeMap::new();
        let mut groups = Vec::new();
        for (i, q) in sorted.iter().enumerate() {
            let n = q.len() as u64;
            let pair = self.chip_pos[i] / 2;
            let offset = if pair % 2 == 1 { m } else { 0 };
            for (j, t) in q.iter().enumerate() {
                let j = j as u64;
                // Task j of n runs m/n timeslices: units [b_j, b_{j+1}).
                let b0 = (j * units + n / 2) / n;
                let b1 = ((j + 1) * units + n / 2) / n;
                let mut mask = vec![false; units as usize];
                for u in b0..b1 {
                    mask[((u + offset) % units) as usize] = true;
                }
                runs.insert(*t, mask);
                groups.push(GangGroup {
                    name: format!("cpu{}-{}", self.cpus[i].0, j),
                    tasks: vec![*t],
                });
            }
        }
        let group_of: Vec<TaskId> = groups.iter().map(|g| g.tasks[0]).collect();
        let mut slots: Vec<GangSlot> = Vec::new();
        for u in 0..units as usize {
            let run: Vec<usize> = (0..group_of.len())
                .filter(|&g| runs.get(&group_of[g]).is_some_and(|m: &Vec<bool>| m[u]))
                .collect();
            match slots.last_mut() {
                Some(last) if last.run == run => last.duration_us += self.config.grid_us(),
                _ => slots.push(GangSlot {
                    duration_us: self.config.grid_us(),
                    run,
                }),
            }
        }
        let cycle = Cycle {
            units,
            runs,
            start_s,
            queues: sorted,
        };
        Some((cycle, GangSchedule { groups, slots }))
    }

    /// Tasks that run in the unit starting at `time_s`.
    fn running_next(&self, time_s: f64) -> Vec<TaskId> {
        let all = self.queues.iter().flatten();
        match &self.cycle {
            None => all.copied().collect(),
            Some(c) => {
                let u = self.unit_at(c, time_s);
                all.filter(|t| c.runs.get(t).is_none_or(|m| m[u]))
                    .copied()
                    .collect()
            }
        }
    }

    /// The cycle's unit in force from `time_s` on.
    fn unit_at(&self, c: &Cycle, time_s: f64) -> usize {
        let grid_s = self.config.grid_us() as f64 * 1e-6;
        (((time_s - c.start_s) / grid_s).round().max(0.0) as u64 % c.units) as usize
    }

    /// Whether the cycle lets `t` run both just before and just after
    /// `time_s` (always, for a task outside the cycle).
    fn scheduled_around(&self, t: &TaskId, time_s: f64) -> bool {
        let Some(c) = &self.cycle else {
            return true;
        };
        let Some(mask) = c.runs.get(t) else {
            return true;
        };
        let next = self.unit_at(c, time_s);
        let prev = (next + mask.len() - 1) % mask.len();
        mask[next] && mask[prev]
    }

    /// The frequency heuristic (§6, eq. 5) for the tasks about to run.
    fn heuristic(&mut self, time_s: f64) -> Option<u64> {
        let edp = self.edp?;
        let running = self.running_next(time_s);
        if running.is_empty() {
            return None;
        }
        let mean = running
            .iter()
            .map(|t| {
                let bus = self.tasks.get(t).map_or(0.0, |s| s.vec()[0]);
                edp.at((bus * self.bus_sharers).min(1.0))
            })
            .sum::<f64>()
            / running.len() as f64;
        Some(if mean < 1.0 {
            self.min_khz
        } else {
            self.max_khz
        })
    }
}

impl Policy for Av {
    fn name(&self) -> &str {
        self.name
    }

    fn requirements(&self) -> Requirements {
        Requirements {
            counters: [
                CounterKind::Instructions,
                CounterKind::Cycles,
                CounterKind::LlcReferences,
                match self.config.bus_event {
                    BusEvent::MemTransactions => CounterKind::MemTransactions,
                    // LLC misses: read, or the fallback of auto.
                    BusEvent::LlcMisses | BusEvent::Auto => CounterKind::LlcMisses,
                },
                CounterKind::OnCpuTime,
            ]
            .into_iter()
            .collect(),
            wanted: match self.config.bus_event {
                BusEvent::Auto => [CounterKind::MemTransactions].into(),
                _ => BTreeSet::new(),
            },
            affinity: true,
            frequency: self.config.freq,
            gang: self.config.sort,
            ..Requirements::default()
        }
    }

    fn interval(&self) -> Duration {
        Duration::from_micros(self.config.grid_us())
    }

    fn init(&mut self, topology: &Topology) -> Result<Plan, PolicyError> {
        let cal = &topology.calibration;
        let Some(activity) = cal.activity.clone() else {
            return Err(PolicyError::Incompatible(format!(
                "{} needs this machine's activity-vector calibration (peaks and translation vectors, calibration.activity): \
                 run `ecosched calibrate av` and pass the file with --calibration",
                self.name
            )));
        };
        if activity.peak_mem_per_s.is_nan()
            || activity.peak_cache_per_cycle.is_nan()
            || activity.peak_mem_per_s <= 0.0
            || activity.peak_cache_per_cycle <= 0.0
        {
            return Err(PolicyError::Incompatible(
                "calibration.activity: peaks must be positive".into(),
            ));
        }
        if self.config.freq {
            if topology.freq_domains.is_empty() {
                return Err(PolicyError::Incompatible(format!(
                    "{}'s frequency heuristic needs frequency control (no cpufreq here); use av-sort or --param freq=false",
                    self.name
                )));
            }
            let Some(edp) = cal.edp_factor else {
                return Err(PolicyError::Incompatible(format!(
                    "{}'s frequency heuristic needs the EDP factor coefficients (calibration.edp_factor, e.g. intercept = 1.6, slope = -0.8)",
                    self.name
                )));
            };
            self.edp = Some(edp);
        }
        self.activity = Some(activity);
        let online = topology.online_cpus();
        self.cpus = online.iter().collect();
        let mut per_chip: BTreeMap<u32, usize> = BTreeMap::new();
        self.chip_pos = self
            .cpus
            .iter()
            .map(|c| {
                let pkg = topology.cpu(*c).map_or(0, |x| x.package);
                let pos = per_chip.entry(pkg).or_insert(0);
                *pos += 1;
                *pos - 1
            })
            .collect();
        self.bus_sharers = per_chip.values().copied().max().unwrap_or(1) as f64;
        self.queues = vec![Vec::new(); self.cpus.len()];
        self.domains = topology.freq_domain_ids().map(|(id, _)| id).collect();
        self.max_khz = topology
            .freq_domains
            .iter()
            .map(|d| d.max_khz())
            .max()
            .unwrap_or(0);
        self.min_khz = topology
            .freq_domains
            .iter()
            .map(|d| d.min_khz())
            .max()
            .unwrap_or(0);
        Ok(Plan {
            managed_cpus: Some(online),
            ..Plan::default()
        })
    }

    fn decide(&mut self, snap: &Snapshot) -> Plan {
        let mut plan = Plan::default();
        self.observe(snap);
        let due_balance =
            snap.time_s - self.last_balance_s >= self.config.balance_us as f64 * 1e-6 - 1e-9;
        self.load_balance();
        if self.config.balance && due_balance {
            self.varsum_balance(snap.time_s);
        }
        // Pin every task to its queue's CPU.
        for (i, q) in self.queues.iter().enumerate() {
            for t in q {
                if self.pinned.get(t) != Some(&self.cpus[i]) {
                    self.pinned.insert(*t, self.cpus[i]);
                    plan.task_cpus.insert(*t, CpuSet::single(self.cpus[i]));
                }
            }
        }
        if self.config.sort {
            // Rebuild when the membership changed, or re-sort when due.
            let members_changed = self.cycle.as_ref().is_none_or(|c| {
                let now: BTreeSet<&TaskId> = self.queues.iter().flatten().collect();
                let was: BTreeSet<&TaskId> = c.queues.iter().flatten().collect();
                now != was || c.queues.iter().flatten().any(|t| self.blocks(t))
            });
            if members_changed || due_balance {
                let next = self.build_cycle(snap.time_s);
                let same = match (&next, &self.cycle) {
                    (Some((n, _)), Some(c)) => n.queues == c.queues,
                    (None, None) => true,
                    _ => false,
                };
                if !same {
                    match next {
                        Some((cycle, schedule)) => {
                            self.cycle = Some(cycle);
                            plan.gang_schedule = Some(schedule);
                            self.schedules += 1;
                        }
                        None => {
                            self.cycle = None;
                            plan.gang_schedule = Some(GangSchedule::end());
                        }
                    }
                }
            }
        }
        if due_balance {
            self.last_balance_s = snap.time_s;
        }
        if self.config.freq {
            if let Some(khz) = self.heuristic(snap.time_s) {
                self.units += 1;
                if khz < self.max_khz {
                    self.low_units += 1;
                }
                if self.freq_now != Some(khz) {
                    self.freq_now = Some(khz);
                    for d in &self.domains {
                        plan.frequency
                            .insert(*d, FreqSetting::Fixed { freq_khz: khz });
                    }
                }
            }
        }
        plan
    }

    fn stats(&self) -> PolicyStats {
        let blocking: Vec<&str> = self
            .tasks
            .iter()
            .filter(|(id, _)| self.blocks(id))
            .map(|(_, s)| s.name.as_str())
            .collect();
        let vectors: Vec<String> = self
            .tasks
            .values()
            .filter_map(|s| {
                let v = s.vector?;
                Some(format!("{}=({:.2},{:.2},{:.2})", s.name, v[0], v[1], v[2]))
            })
            .collect();
        AvStats {
            migrations: self.migrations,
            load_moves_refused_for_varsum: self.load_moves_refused,
            gang_schedules: self.schedules,
            low_frequency_share: if self.units == 0 {
                0.0
            } else {
                self.low_units as f64 / self.units as f64
            },
            balanced_only_blocking_tasks: blocking.join(", "),
            activity_vectors: vectors.join(" "),
            bus_from: self
                .bus_from
                .map_or("no sample yet", BusSource::describe)
                .into(),
        }
        .to_stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Params;

    fn from_params(name: &'static str, params: &Params) -> Result<Av, PolicyError> {
        let (_, variant) = crate::find(name)?;
        Av::new(name, variant.typed(params)?)
    }

    fn task(pid: u32) -> TaskId {
        TaskId {
            pid,
            start_ticks: 1,
        }
    }

    fn policy_with(vectors: &[(u32, Vector, usize)], cpus: usize) -> Av {
        let mut av = from_params("av-sort", &Params::default()).unwrap();
        av.cpus = (0..cpus as u32).map(CpuId).collect();
        av.chip_pos = (0..cpus).collect();
        av.queues = vec![Vec::new(); cpus];
        for (pid, v, cpu) in vectors {
            av.tasks.insert(
                task(*pid),
                TaskInfo {
                    vector: Some(*v),
                    ..TaskInfo::default()
                },
            );
            av.queues[*cpu].push(task(*pid));
        }
        av
    }

    const MEM: Vector = [0.8, 0.1, 0.3];
    const CPU: Vector = [0.02, 0.02, 1.0];

    #[test]
    fn varsum_is_the_sum_of_component_variances() {
        assert_eq!(varsum([&MEM, &MEM]), 0.0);
        let v = varsum([&MEM, &CPU]);
        let expected = [0.78f64, 0.08, 0.7]
            .iter()
            .map(|d| (d / 2.0).powi(2))
            .sum::<f64>();
        assert!((v - expected).abs() < 1e-12, "{v} vs {expected}");
        assert_eq!(varsum(std::iter::empty()), 0.0);
    }

    #[test]
    fn balancing_mixes_like_with_like_queues() {
        // Two memory-bound tasks on CPU 0, two compute-bound on CPU 1:
        // both varsums are 0; one exchange makes both high.
        let mut av = policy_with(&[(1, MEM, 0), (2, MEM, 0), (3, CPU, 1), (4, CPU, 1)], 2);
        av.varsum_balance(0.0);
        for q in &av.queues {
            assert_eq!(q.len(), 2);
            assert!(av.queue_varsum(q) > 0.1, "{:?}", av.queues);
        }
        // Already mixed: nothing moves.
        let before = av.queues.clone();
        av.varsum_balance(100.0);
        assert_eq!(av.queues, before);
    }

    #[test]
    fn load_balancing_never_lowers_min_varsum() {
        // CPU 0 holds three tasks, CPU 1 one: moving the compute-bound task
        // would leave CPU 0 with two memory-bound tasks (varsum 0) — refused
        // in favour of moving a memory-bound one.
        let mut av = policy_with(&[(1, MEM, 0), (2, MEM, 0), (3, CPU, 0), (4, CPU, 1)], 2);
        av.load_balance();
        assert_eq!(av.queues[0].len(), 2);
        assert!(av.queues[0].contains(&task(3)), "{:?}", av.queues);
    }

    #[test]
    fn sorted_cycle_pairs_memory_with_compute_and_shifts_the_second_pair() {
        let mut av = policy_with(
            &[
                (1, MEM, 0),
                (2, CPU, 0),
                (3, MEM, 1),
                (4, CPU, 1),
                (5, MEM, 2),
                (6, CPU, 2),
                (7, MEM, 3),
                (8, CPU, 3),
            ],
            4,
        );
        let (cycle, schedule) = av.build_cycle(0.0).unwrap();
        assert_eq!(schedule.validate(), Ok(()));
        // Epoch = 2 timeslices = 4 half-slice units.
        assert_eq!(cycle.units, 4);
        assert_eq!(schedule.cycle_us(), 200_000);
        for u in 0..4 {
            let mem_running = [1, 3, 5, 7]
                .iter()
                .filter(|p| cycle.runs[&task(**p)][u])
                .count();
            // One memory-bound task per pair at every moment.
            assert_eq!(mem_running, 2, "unit {u}");
        }
        // CPU 0 (even) runs its memory task first, CPU 2 half an epoch later.
        assert!(cycle.runs[&task(1)][0] && !cycle.runs[&task(5)][0]);
        av.cycle = Some(cycle);
        assert_eq!(av.running_next(0.0).len(), 4);
    }

    /// §5.3's tasks that block: one seen asleep in more than `block_ratio`
    /// of at least five observations is left out of the gang cycle (so
    /// never frozen) but stays in its run queue and is balanced, and the
    /// statistics name it; one that sleeps rarely, or has not been seen
    /// five times yet, stays in the cycle.
    #[test]
    fn tasks_that_block_often_are_only_balanced_and_named() {
        let mut av = policy_with(
            &[
                (1, MEM, 0),
                (2, CPU, 0),
                (3, CPU, 0),
                (4, MEM, 1),
                (5, CPU, 1),
            ],
            2,
        );
        let mut mark = |pid: u32, name: &str, seen: u32, asleep: u32| {
            let t = av.tasks.get_mut(&task(pid)).unwrap();
            (t.name, t.seen, t.asleep) = (name.to_string(), seen, asleep);
        };
        mark(1, "lbm", 10, 1);
        mark(2, "hmmer", 10, 0);
        mark(3, "io-loop", 10, 5);
        mark(4, "mcf", 3, 3);
        mark(5, "namd", 10, 2);
        let (cycle, schedule) = av.build_cycle(0.0).unwrap();
        assert!(!cycle.runs.contains_key(&task(3)), "{:?}", cycle.runs);
        assert!(schedule.groups.iter().all(|g| g.tasks != [task(3)]));
        for pid in [1, 2, 4, 5] {
            assert!(cycle.runs.contains_key(&task(pid)), "task {pid}");
        }
        // Still in its run queue: balanced, pinned, just not gang-scheduled.
        assert!(av.queues[0].contains(&task(3)));
        assert_eq!(
            Policy::stats(&av).get("balanced_only_blocking_tasks"),
            Some(&ecosched_model::StatValue::Text("io-loop".into()))
        );
    }

    /// §6, eq. 5: the chip runs at the lowest P-state when the mean EDP
    /// factor (1.6 − 0.8·x, Q6600) of the tasks about to run is below 1,
    /// at the highest otherwise.
    #[test]
    fn the_heuristic_lowers_the_clock_only_for_memory_bound_slots() {
        let with = |vectors: &[(u32, Vector, usize)]| {
            let mut av = policy_with(vectors, 2);
            av.edp = Some(EdpFactor {
                intercept: 1.6,
                slope: -0.8,
            });
            (av.min_khz, av.max_khz) = (1_600_000, 2_400_000);
            av.heuristic(0.0)
        };
        assert_eq!(with(&[(1, MEM, 0), (2, MEM, 1)]), Some(1_600_000));
        assert_eq!(with(&[(1, CPU, 0), (2, CPU, 1)]), Some(2_400_000));
        // One of each: mean (0.96 + 1.58) / 2 ≥ 1, so the clock stays high.
        assert_eq!(with(&[(1, MEM, 0), (2, CPU, 1)]), Some(2_400_000));
        assert_eq!(with(&[]), None, "nothing runs: nothing to decide");
    }

    #[test]
    fn one_task_per_cpu_needs_no_cycle() {
        let av = policy_with(&[(1, MEM, 0), (2, CPU, 1)], 2);
        assert!(av.build_cycle(0.0).is_none());
    }

    #[test]
    fn bad_params_are_named() {
        for (k, v) in [
            ("timeslice_ms", "5"),
            ("critical", "l3"),
            ("bus_event", "x"),
            ("smoothing", "0"),
        ] {
            let err = from_params("av", &Params::default().with(k, v))
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains(k), "{k}: {err}");
        }
    }

    #[test]
    fn refuses_without_activity_calibration() {
        let mut av = from_params("av", &Params::default()).unwrap();
        let err = av.init(&Topology::default()).unwrap_err().to_string();
        assert!(err.contains("calibrate av"), "{err}");
    }
}
