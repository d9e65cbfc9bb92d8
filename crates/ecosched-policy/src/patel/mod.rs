//! Heterogeneous cpusets — Patel's four feedback-driven CPU schedulers
//! (R. Patel, PhD thesis, UNLV 2012, chapters 5–8), with the resolutions
//! A1–A9 of `docs/design/papers.md` ("Patel") where the thesis is open.
//!
//! The machine is split once into cpusets of different *fixed* frequencies,
//! sized inversely to frequency (the thesis's Opteron 6134: 8 cores →
//! 4 @ 0.8, 2 @ 1.4, 2 @ 2.3 GHz, set with the userspace governor). The
//! policy then only moves processes between cpusets by affinity, from
//! runtime feedback:
//!
//! ```text
//!            up-moves: CPU-intensive and slowed (performance index),
//!            or lightly loaded; empty-queue fill, fastest cpuset first
//!   ┌──────────────┐  ──▶  ┌──────────────┐  ──▶  ┌──────────────┐
//!   │ 4 CPUs @ 0.8 │       │ 2 CPUs @ 1.4 │       │ 2 CPUs @ 2.3 │
//!   └──────────────┘  ◀──  └──────────────┘  ◀──  └──────────────┘
//!            down-moves: not CPU-intensive on a loaded machine
//!            (least throughput_estimate_b)
//! ```
//!
//! - `patel1` (§5, Algorithm 1 *CPU Scheduler*): a new process goes to the
//!   cpuset with the least `throughput_estimate_a` (§5.2 step 2); every
//!   decision window (A4) a CPU-intensive process with its performance index
//!   true goes to the least-`a` cpuset (step 5a), a non-CPU-intensive one to
//!   the least-`b` cpuset when the load average exceeds the CPU count, or
//!   to the least-`a` one when it is below and the index is true (5b); a
//!   process that did not run at all in its window goes to the least-`a`
//!   cpuset (step 6); and a cpuset with an empty run queue receives the
//!   most CPU-intensive process that can use it (step 7).
//! - `patel2` (§6, *Priority CPU Scheduler*): the same with the nice-value
//!   guards of §6.2, and the empty-queue fill ranked by the
//!   `CPU_intensity_priority_index` of A5.
//! - `patel3` (§7, *Cache Miss Priority CPU Scheduler*): `patel2`, and no
//!   step-8 up-move while misses/references exceeds 0.0014 (§7.2 steps 7–8).
//! - `patel4` (§8, *Context Switch Priority CPU Scheduler*): `patel2`, and
//!   no step-8 up-move while ½·switches + ½·migrations per CPU second
//!   exceeds 17 (§8.2 steps 7–8).
//!
//! An *up-move* is a move to a faster cpuset: higher frequency, or on a
//! hybrid machine, whose cpusets are its core types (P and E cores, by
//! capacity) rather than frequencies, bigger cores.
//!
//! Signals (§5.1) are per process, the mean over its threads, over the
//! process's current decision window:
//! - IPC = instructions / cycles;
//! - `fraction_wait` = 1 − on-CPU time / time alive (A2: wall-clock, so it
//!   counts run-queue waits and blocking);
//! - `CPU_intensity` = the mean utilisation of the CPU the thread was last
//!   seen on, at each observation (the thesis: "average CPU utilization of
//!   all cores upon which P_i is executing");
//! - cache misses / cache references (perf's generic events, which on the
//!   Opteron count L2 requests and misses);
//! - (context switches + migrations) / 2 per second of CPU time.
//!
//! Two resolutions beyond A1–A6, both to stop moves that undo themselves,
//! which the thesis does not discuss:
//! - **A7** Scores are evaluated *as if the process had moved*: the target
//!   cpuset's run-queue average counts the mover's own demand, its current
//!   cpuset's does not change. A process therefore never moves to a cpuset
//!   that would be worse for it than the one it is in.
//! - **A8** The empty-queue fill (step 7) only takes a process that is
//!   waiting for a CPU (its cpuset holds more than one runnable thread per
//!   CPU) or that runs on a slower cpuset, and only if the target stays at
//!   no more than one runnable thread per CPU after the move.
//!
//! And one reading of algorithms 3 and 4, narrower than gating every
//! up-move:
//! - **A9** The cache-miss and context-switch indices gate only the
//!   up-moves of the periodic rules (§7.2 and §8.2 step 8(a) and the
//!   least-`a` branch of 8(b)), as the thesis's text and its Algorithm 3
//!   pseudocode do; the waiting rule (step 9) and the empty-queue fill
//!   (step 11) stay as in algorithm 2. Gating those too would backfire on
//!   `patel-task4-dyn`: nearly every process there exceeds 17 switches
//!   and migrations per CPU second (the non-CPU-intensive program ~60–70,
//!   because it blocks after a short burst), so vetoed fills and
//!   waiting-moves would pile processes into the four-CPU 0.8 GHz cpuset,
//!   where every wake-up of a blocking program finds another idle CPU to
//!   migrate to, and `patel4` would migrate more than `patel2`. A process
//!   that switches often because it blocks is not what the index guards
//!   against (§4: the overhead of moving a process too often).

mod config;
mod partition;
#[cfg(test)]
mod tests;

pub use config::{Algorithm, PatelConfig, PatelParams};
pub use partition::{core_type_sets, cpusets, derive_partition, HeteroSet};

use crate::{Policy, PolicyError};
use ecosched_model::{
    CounterKind, CpuSet, FreqSetting, Plan, PolicyStats, ProcessId, Requirements, Snapshot, TaskId,
    TaskState, Topology, TypedStats,
};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// One thread's counters over its process's current decision window.
#[derive(Debug, Clone, Default)]
struct ThreadWindow {
    alive_s: f64,
    on_cpu_ns: u64,
    on_cpu_known: bool,
    instructions: Option<u64>,
    cycles: Option<u64>,
    references: Option<u64>,
    misses: Option<u64>,
    switches: Option<u64>,
    migrations: Option<u64>,
    util_sum: f64,
    util_n: u32,
}

fn add(total: &mut Option<u64>, x: Option<u64>) {
    if let Some(x) = x {
        *total = Some(total.unwrap_or(0) + x);
    }
}

/// What a policy knows about one managed process.
#[derive(Debug, Clone)]
struct Process {
    /// Index of its cpuset.
    set: usize,
    /// When it was first seen, s.
    first_seen_s: f64,
    /// When its current window started, s.
    window_start_s: f64,
    /// Its threads' windows.
    threads: BTreeMap<TaskId, ThreadWindow>,
    /// Its nice value (the leader's, or the lowest of its threads').
    nice: i32,
    /// Threads wanting a CPU over the last interval (on-CPU + run-queue
    /// time / interval, or runnable threads when those are not measured).
    demand: f64,
    /// The signals of its last closed window: step 7 ranks by them, since
    /// the window just reopened has no samples yet.
    last: Option<Signals>,
}

/// The per-process signals of §5.1, means over threads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Signals {
    /// Instructions per cycle, when counted.
    pub ipc: Option<f64>,
    /// `1 − cpu_time / elapsed` (A2).
    pub fraction_wait: f64,
    /// Mean utilisation of the CPUs it ran on, in [0, 1].
    pub cpu_intensity: f64,
    /// Cache misses / references, when counted.
    pub miss_ratio: Option<f64>,
    /// ½·switches/s + ½·migrations/s of CPU time, when counted.
    pub cs_mig_per_cpu_s: Option<f64>,
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| s / f64::from(n))
}

impl Process {
    /// End the current window at `time_s`, keeping its signals.
    fn close_window(&mut self, time_s: f64) {
        if !self.threads.is_empty() {
            self.last = Some(self.signals());
        }
        self.window_start_s = time_s;
        self.threads.clear();
    }

    /// The signals to rank it by: its last whole window's, or the current
    /// one's before any window has closed.
    fn settled_signals(&self) -> Signals {
        self.last.unwrap_or_else(|| self.signals())
    }

    fn signals(&self) -> Signals {
        let threads: Vec<&ThreadWindow> = self.threads.values().collect();
        let ipc = mean(
            threads
                .iter()
                .filter_map(|t| match (t.instructions, t.cycles) {
                    (Some(i), Some(c)) if c > 0 => Some(i as f64 / c as f64),
                    _ => None,
                }),
        );
        let fraction_wait = mean(
            threads
                .iter()
                .filter(|t| t.on_cpu_known && t.alive_s > 0.0)
                .map(|t| (1.0 - t.on_cpu_ns as f64 / 1e9 / t.alive_s).clamp(0.0, 1.0)),
        )
        .unwrap_or(0.0);
        let cpu_intensity = mean(
            threads
                .iter()
                .filter(|t| t.util_n > 0)
                .map(|t| t.util_sum / f64::from(t.util_n)),
        )
        .unwrap_or(0.0);
        let miss_ratio = mean(
            threads
                .iter()
                .filter_map(|t| match (t.misses, t.references) {
                    (Some(m), Some(r)) if r > 0 => Some(m as f64 / r as f64),
                    _ => None,
                }),
        );
        let cs_mig_per_cpu_s = mean(threads.iter().filter_map(|t| {
            let cpu_s = t.on_cpu_ns as f64 / 1e9;
            match (t.switches, t.migrations) {
                (Some(cs), Some(m)) if cpu_s > 0.0 => {
                    Some(0.5 * cs as f64 / cpu_s + 0.5 * m as f64 / cpu_s)
                }
                _ => None,
            }
        }));
        Signals {
            ipc,
            fraction_wait,
            cpu_intensity,
            miss_ratio,
            cs_mig_per_cpu_s,
        }
    }
}

ecosched_model::policy_stats! {
    /// What one of Patel's schedulers has done.
    pub struct PatelStats {
        /// The cpusets: CPUs @ MHz (CPU list).
        cpusets: String => info,
        /// Whether frequencies are set, or processes only confined.
        confine_only: String => info,
        /// Processes placed on arrival.
        processes_placed: u64 => counter,
        /// Decision windows closed.
        window_decisions: u64 => counter,
        /// Moves to a faster cpuset.
        up_moves: u64 => counter,
        /// Moves to a slower cpuset.
        down_moves: u64 => counter,
        /// Empty run queues filled.
        empty_queue_fills: u64 => counter,
        /// Up-moves vetoed by the nice-value guards (algorithms 2–4).
        vetoed_by_nice: u64 => counter,
        /// Up-moves vetoed by the cache-miss index (algorithm 3).
        vetoed_by_cache_miss_index: u64 => counter,
        /// Up-moves vetoed by the context-switch/migration index (algorithm 4).
        vetoed_by_cs_mig_index: u64 => counter,
    }
}

/// What the policy has done, counted as it decides.
#[derive(Debug, Clone, Default)]
struct Stats {
    decisions: u64,
    placed: u64,
    up: u64,
    down: u64,
    fills: u64,
    vetoed_by_cache: u64,
    vetoed_by_cs: u64,
    vetoed_by_nice: u64,
}

/// One of Patel's four schedulers.
#[derive(Debug, Clone)]
pub struct Patel {
    name: &'static str,
    config: PatelConfig,
    sets: Vec<HeteroSet>,
    online: CpuSet,
    num_cpus: f64,
    procs: BTreeMap<ProcessId, Process>,
    applied: BTreeMap<TaskId, usize>,
    stats: Stats,
}

/// Why a move is considered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Score {
    /// `throughput_estimate_a`: fast and lightly loaded first.
    A,
    /// `throughput_estimate_b`: slow and lightly loaded first (A3).
    B,
}

impl Patel {
    /// A scheduler under registry name `name`.
    pub fn new(
        name: &'static str,
        algorithm: Algorithm,
        params: PatelParams,
    ) -> Result<Self, PolicyError> {
        Ok(Patel::with_config(
            name,
            PatelConfig::new(algorithm, params)?,
        ))
    }

    /// A scheduler with settings already checked.
    pub fn with_config(name: &'static str, config: PatelConfig) -> Self {
        Patel {
            name,
            config,
            sets: Vec::new(),
            online: CpuSet::new(),
            num_cpus: 1.0,
            procs: BTreeMap::new(),
            applied: BTreeMap::new(),
            stats: Stats::default(),
        }
    }

    /// The cpusets in force (after `init`).
    pub fn sets(&self) -> &[HeteroSet] {
        &self.sets
    }

    /// Runnable threads per CPU in each cpuset (`avg_rq_threads`, A6).
    fn occupancy(&self) -> Vec<f64> {
        let mut demand = vec![0.0; self.sets.len()];
        for p in self.procs.values() {
            demand[p.set] += p.demand;
        }
        demand
            .iter()
            .zip(&self.sets)
            .map(|(d, s)| d / s.cpus.len().max(1) as f64)
            .collect()
    }

    /// The best cpuset for a process of `demand` now in `from`, by `score`,
    /// evaluated as if it had moved (A7). Ties go to fewer queued threads,
    /// then to the current cpuset.
    fn best(&self, occ: &[f64], from: usize, demand: f64, score: Score) -> usize {
        let mut best = from;
        let mut best_key = (f64::INFINITY, f64::INFINITY);
        for (i, set) in self.sets.iter().enumerate() {
            let rq = if i == from {
                occ[i]
            } else {
                occ[i] + demand / set.cpus.len().max(1) as f64
            };
            let ghz = set.speed as f64 / 1e6;
            let value = match score {
                Score::A => rq.max(1.0) / ghz,
                Score::B => rq.max(1.0) * ghz,
            };
            let key = (value, rq);
            let better = key.0 < best_key.0 - 1e-12
                || ((key.0 - best_key.0).abs() <= 1e-12
                    && (key.1 < best_key.1 - 1e-12
                        || ((key.1 - best_key.1).abs() <= 1e-12 && i == from)));
            if better {
                best = i;
                best_key = key;
            }
        }
        best
    }

    fn load(&self, snapshot: &Snapshot) -> f64 {
        snapshot.load_avg.map_or_else(
            || {
                snapshot
                    .live_managed()
                    .filter(|t| matches!(t.state, TaskState::Running | TaskState::Runnable))
                    .count() as f64
            },
            |l| l.one,
        )
    }

    /// Whether an up-move of a process with these signals is allowed by
    /// algorithm 3's or 4's extra index; counts vetoes.
    fn index_allows_up(&mut self, s: &Signals) -> bool {
        let c = &self.config;
        match c.algorithm {
            Algorithm::CacheMiss => {
                let vetoed = s.miss_ratio.is_some_and(|r| r > c.cache_miss_threshold);
                if vetoed {
                    self.stats.vetoed_by_cache += 1;
                }
                !vetoed
            }
            Algorithm::ContextSwitch => {
                let vetoed = s.cs_mig_per_cpu_s.is_some_and(|x| x > c.cs_mig_threshold);
                if vetoed {
                    self.stats.vetoed_by_cs += 1;
                }
                !vetoed
            }
            Algorithm::CpuScheduler | Algorithm::Priority => true,
        }
    }

    /// Where one process should go at the end of its window (§5.2 steps
    /// 5–6 and their algorithm-2 guards), or `None` to stay.
    fn decide_process(&mut self, id: ProcessId, occ: &[f64], load: f64) -> Option<usize> {
        let p = self.procs.get(&id)?;
        let s = p.signals();
        let (from, demand, nice) = (p.set, p.demand, p.nice);
        let c = self.config.clone();
        let n = self.num_cpus;
        let prio = c.algorithm != Algorithm::CpuScheduler;
        let slowed_ipc = s.ipc.is_some_and(|ipc| ipc < c.ipc_threshold);
        let slowed_wait = s.fraction_wait > c.wait_threshold;
        let perf_index = if c.perf_and {
            slowed_ipc && slowed_wait
        } else {
            slowed_ipc || slowed_wait
        };
        let intensive = s.cpu_intensity > c.intensity_threshold;
        // Step 6: a process that waited the whole window.
        let waiting = if prio {
            (s.fraction_wait >= c.wait_move_nice_fraction && nice < c.wait_move_nice)
                || s.fraction_wait > c.wait_move_fraction
        } else {
            s.fraction_wait >= 1.0
        };
        let target = if intensive && perf_index {
            if prio && nice >= c.nice_up_max {
                self.stats.vetoed_by_nice += 1;
                None
            } else {
                Some(self.best(occ, from, demand, Score::A))
            }
        } else if !intensive {
            let down = if prio {
                (nice > c.nice_down_split && load > n)
                    || (nice <= c.nice_down_split && load > c.heavy_load_factor * n)
            } else {
                load > n
            };
            let up = perf_index
                && if prio {
                    (nice <= c.nice_up_noncpu && load <= n)
                        || (nice > c.nice_up_noncpu && load < c.light_load_factor * n)
                } else {
                    load < n
                };
            if down {
                Some(self.best(occ, from, demand, Score::B))
            } else if up {
                Some(self.best(occ, from, demand, Score::A))
            } else {
                None
            }
        } else {
            None
        };
        // Algorithms 3 and 4 gate step 8's up-moves only (A9).
        let target = target.filter(|&to| {
            to == from || self.sets[to].speed <= self.sets[from].speed || self.index_allows_up(&s)
        });
        let target = target.or_else(|| waiting.then(|| self.best(occ, from, demand, Score::A)));
        target.filter(|&to| to != from)
    }

    /// Step 7: fill cpusets with an empty run queue, fastest first (A8).
    fn fill(&mut self, occ: &mut [f64]) {
        let mut order: Vec<usize> = (0..self.sets.len()).collect();
        order.sort_by(|a, b| self.sets[*b].speed.cmp(&self.sets[*a].speed));
        let mut moved: BTreeSet<ProcessId> = BTreeSet::new();
        for to in order {
            let width = self.sets[to].cpus.len().max(1) as f64;
            if occ[to] >= 1.0 {
                continue;
            }
            let prio = self.config.algorithm != Algorithm::CpuScheduler;
            let mut candidates: Vec<(f64, ProcessId)> = self
                .procs
                .iter()
                .filter(|(id, p)| {
                    !moved.contains(id)
                        && p.set != to
                        && p.demand > 0.0
                        && (occ[p.set] > 1.0 || self.sets[p.set].speed < self.sets[to].speed)
                        && occ[to] + p.demand / width <= 1.0 + 1e-9
                })
                .map(|(id, p)| {
                    let s = p.settled_signals();
                    let rank = if prio {
                        0.5 * s.cpu_intensity + 0.5 * f64::from(19 - p.nice) / 39.0
                    } else {
                        s.cpu_intensity
                    };
                    (rank, *id)
                })
                .collect();
            candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            if let Some(&(_, id)) = candidates.first() {
                self.move_process(id, to, occ);
                self.stats.fills += 1;
                moved.insert(id);
            }
        }
    }

    fn move_process(&mut self, id: ProcessId, to: usize, occ: &mut [f64]) {
        let Some(p) = self.procs.get_mut(&id) else {
            return;
        };
        let from = p.set;
        occ[from] -= p.demand / self.sets[from].cpus.len().max(1) as f64;
        occ[to] += p.demand / self.sets[to].cpus.len().max(1) as f64;
        p.set = to;
    }

    /// Fold one snapshot into the processes' windows; new processes are
    /// placed on the least-`a` cpuset (step 2).
    fn observe(&mut self, snapshot: &Snapshot) {
        let util: BTreeMap<_, _> = snapshot
            .cpus
            .iter()
            .map(|c| (c.id, c.utilisation))
            .collect();
        let interval_ns = snapshot.interval_s * 1e9;
        let mut demand: BTreeMap<ProcessId, f64> = BTreeMap::new();
        let mut seen: BTreeSet<ProcessId> = BTreeSet::new();
        let mut new: Vec<(ProcessId, i32)> = Vec::new();
        for t in snapshot.tasks.iter().filter(|t| t.managed) {
            if t.state == TaskState::Exited {
                if let Some(p) = self.procs.get_mut(&t.process) {
                    p.threads.remove(&t.id);
                }
                continue;
            }
            seen.insert(t.process);
            let wanted = match (t.counters.on_cpu_ns, t.counters.runqueue_wait_ns) {
                (Some(on), Some(wait)) if interval_ns > 0.0 => (on + wait) as f64 / interval_ns,
                _ => f64::from(u8::from(matches!(
                    t.state,
                    TaskState::Running | TaskState::Runnable
                ))),
            };
            *demand.entry(t.process).or_default() += wanted.min(1.0);
            let p = match self.procs.get_mut(&t.process) {
                Some(p) => p,
                None => {
                    new.push((t.process, t.nice));
                    continue;
                }
            };
            p.nice = if t.id.pid == t.process.tgid {
                t.nice
            } else {
                p.nice.min(t.nice)
            };
            let w = p.threads.entry(t.id).or_default();
            // Alive for the whole interval, or since it started within it.
            w.alive_s += snapshot
                .interval_s
                .min(snapshot.time_s - t.started_s)
                .max(0.0);
            if let Some(on) = t.counters.on_cpu_ns {
                w.on_cpu_ns += on;
                w.on_cpu_known = true;
            }
            add(&mut w.instructions, t.counters.instructions);
            add(&mut w.cycles, t.counters.cycles);
            add(&mut w.references, t.counters.llc_references);
            add(&mut w.misses, t.counters.llc_misses);
            add(&mut w.switches, t.counters.context_switches);
            add(&mut w.migrations, t.counters.migrations);
            if let Some(u) = t.cpu.and_then(|c| util.get(&c)) {
                w.util_sum += u;
                w.util_n += 1;
            }
        }
        self.procs.retain(|id, _| seen.contains(id));
        for (id, p) in self.procs.iter_mut() {
            p.demand = demand.get(id).copied().unwrap_or(0.0);
        }
        let mut occ = self.occupancy();
        new.sort();
        new.dedup_by_key(|(id, _)| *id);
        for (id, nice) in new {
            let d = demand.get(&id).copied().unwrap_or(1.0).max(0.0);
            // A newcomer is in no cpuset yet: score every cpuset with it added.
            let set = self.best(&occ, usize::MAX, d, Score::A);
            let set = if set == usize::MAX { 0 } else { set };
            occ[set] += d / self.sets[set].cpus.len().max(1) as f64;
            self.procs.insert(
                id,
                Process {
                    set,
                    first_seen_s: snapshot.time_s,
                    window_start_s: snapshot.time_s,
                    threads: BTreeMap::new(),
                    nice,
                    demand: d,
                    last: None,
                },
            );
            self.stats.placed += 1;
        }
    }

    /// The affinity changes that put every live managed thread in its
    /// process's cpuset.
    fn plan(&mut self, snapshot: &Snapshot) -> Plan {
        let mut plan = Plan::unchanged();
        let live: BTreeSet<TaskId> = snapshot.live_managed().map(|t| t.id).collect();
        self.applied.retain(|id, _| live.contains(id));
        for t in snapshot.live_managed() {
            let Some(p) = self.procs.get(&t.process) else {
                continue;
            };
            if self.applied.get(&t.id) != Some(&p.set) {
                plan.task_cpus.insert(t.id, self.sets[p.set].cpus.clone());
                self.applied.insert(t.id, p.set);
            }
        }
        plan
    }

    /// The window length for a process alive `elapsed_s` (A4).
    fn window_s(&self, elapsed_s: f64) -> f64 {
        (elapsed_s * self.config.window_fraction)
            .clamp(self.config.window_min_s, self.config.window_max_s)
    }
}

impl Policy for Patel {
    fn name(&self) -> &str {
        self.name
    }

    fn requirements(&self) -> Requirements {
        let mut counters: BTreeSet<CounterKind> =
            [CounterKind::Instructions, CounterKind::Cycles].into();
        match self.config.algorithm {
            Algorithm::CacheMiss => {
                counters.extend([CounterKind::LlcReferences, CounterKind::LlcMisses]);
            }
            Algorithm::ContextSwitch => {
                counters.extend([CounterKind::ContextSwitches, CounterKind::Migrations]);
            }
            Algorithm::CpuScheduler | Algorithm::Priority => {}
        }
        Requirements {
            counters,
            wanted: [CounterKind::OnCpuTime, CounterKind::RunqueueWait].into(),
            affinity: true,
            frequency: !self.config.confine_only,
            ..Requirements::default()
        }
    }

    fn interval(&self) -> Duration {
        Duration::from_secs_f64(self.config.window_min_s)
    }

    fn init(&mut self, topology: &Topology) -> Result<Plan, PolicyError> {
        let given = self
            .config
            .partition
            .as_ref()
            .or(topology.calibration.partition.as_ref());
        self.sets = match (given, core_type_sets(topology)) {
            (None, Some(core_types)) => core_types,
            (Some(partition), _) => cpusets(topology, partition, self.config.confine_only)?,
            (None, None) => cpusets(
                topology,
                &derive_partition(topology)?,
                self.config.confine_only,
            )?,
        };
        self.online = topology.online_cpus();
        self.num_cpus = self.online.len().max(1) as f64;
        self.procs.clear();
        self.applied.clear();
        self.stats = Stats::default();
        let mut plan = Plan {
            managed_cpus: Some(self.online.clone()),
            ..Plan::default()
        };
        if !self.config.confine_only {
            for set in &self.sets {
                for d in &set.domains {
                    plan.frequency.insert(
                        *d,
                        FreqSetting::Fixed {
                            freq_khz: set.freq_khz,
                        },
                    );
                }
            }
        }
        Ok(plan)
    }

    fn decide(&mut self, snapshot: &Snapshot) -> Plan {
        self.observe(snapshot);
        let load = self.load(snapshot);
        let mut occ = self.occupancy();
        let due: Vec<ProcessId> = self
            .procs
            .iter()
            .filter(|(_, p)| {
                let window = self.window_s(snapshot.time_s - p.first_seen_s);
                snapshot.time_s - p.window_start_s >= window - 1e-9
            })
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.stats.decisions += 1;
            if let Some(to) = self.decide_process(id, &occ, load) {
                let from = self.procs.get(&id).map_or(to, |p| p.set);
                if self.sets[to].speed > self.sets[from].speed {
                    self.stats.up += 1;
                } else {
                    self.stats.down += 1;
                }
                self.move_process(id, to, &mut occ);
            }
            if let Some(p) = self.procs.get_mut(&id) {
                p.close_window(snapshot.time_s);
            }
        }
        self.fill(&mut occ);
        self.plan(snapshot)
    }

    fn stats(&self) -> PolicyStats {
        let sets: Vec<String> = self
            .sets
            .iter()
            .map(|s| match s.capacity {
                Some(c) => format!(
                    "{} cores of capacity {c} (CPUs {})",
                    s.cpus.len(),
                    s.cpus.to_list()
                ),
                None => format!(
                    "{}@{} MHz (CPUs {})",
                    s.cpus.len(),
                    s.freq_khz / 1000,
                    s.cpus.to_list()
                ),
            })
            .collect();
        let s = &self.stats;
        PatelStats {
            cpusets: sets.join(", "),
            confine_only: if self.config.confine_only {
                "true: processes are confined to the cpusets; frequencies are NOT set".into()
            } else {
                "false".into()
            },
            processes_placed: s.placed,
            window_decisions: s.decisions,
            up_moves: s.up,
            down_moves: s.down,
            empty_queue_fills: s.fills,
            vetoed_by_nice: s.vetoed_by_nice,
            vetoed_by_cache_miss_index: s.vetoed_by_cache,
            vetoed_by_cs_mig_index: s.vetoed_by_cs,
        }
        .to_stats()
    }
}
