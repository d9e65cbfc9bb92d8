//! WCA — the workload-characteristics-aware load balancer of Dhiman,
//! Kontorinis, Tullsen, Rosing, Saxe and Chew (ISLPED'10), as a
//! meta-scheduler: instead of patching the kernel's balancer it decides where
//! each thread belongs and pins it there, so the kernel's count-only balancer
//! has nothing left to flip.
//!
//! ```text
//!  every interval, per managed thread (§4.1, §4.2, eq. 1):
//!    on-CPU share over window_ms  < t_on_tr      → transient: unpinned, ignored
//!    IPC    ← a·IPC_cur    + (1−a)·IPC           (instructions / cycles)
//!    LLCRPI ← a·LLCRPI_cur + (1−a)·LLCRPI        (LLC references / instructions)
//!    CW = 2 if LLCRPI > llcrpi_high, else 1 if IPC > ipc_high, else 0
//!  balance (Table 1), at every level, outermost first:
//!      machine ─ packages ─ last-level caches ─ CPUs
//!    T on N1, sibling N2 with an idle CPU:
//!      1. (count(N1) − 1) > count(N2)     → move T to N2
//!      2. (CW(N1) − CW(T)) > CW(N2)       → move T to N2
//!      3. (IPC(N1) − IPC(T)) > IPC(N2)·(1 + ipc_margin) → move T to N2
//!  pin every non-transient thread to its CPU
//! ```
//!
//! Choices where the paper leaves room (`docs/design/papers.md`, "WCA"):
//! - The paper updates the averages each time a thread leaves a CPU; a
//!   meta-scheduler sees counter deltas once per interval (`interval_ms`,
//!   default 100 ms), so each interval is one "run". An interval in which a
//!   thread retired no instructions leaves its averages unchanged.
//! - The history window for transience is not given in the paper (§4.1 says
//!   only "a runtime history"); `window_ms` defaults to 1 s, ten intervals,
//!   long enough to see a daemon that wakes a few times a second.
//!   A thread observed for less than one interval is not yet characterised
//!   and is treated like a transient one (left alone).
//! - "Migrate T to an idle CPU in N2": the idle CPU is the lowest-numbered
//!   CPU of N2 with no non-transient thread placed on it. Of several
//!   siblings the least loaded (by count, then CW, then IPC) is tried first.
//! - Stage 3 compares two measured sums, which tie whenever both nodes hold
//!   the same kind of thread (two instances of one benchmark, one on each
//!   cache): read literally, the thread then moves on every flip of the
//!   measurement noise, more often than the kernel's balancer moved it. A
//!   move needs the IPC left behind to exceed the other node's by
//!   `ipc_margin` (default 5 %, about the interval-to-interval spread of
//!   a steady thread's measured IPC); 0 gives the paper's strict form.
//! - Each thread moves at most once per decision, which bounds a decision's
//!   work; Table 1's strict "after removing T" form already rules out
//!   ping-pong between two nodes.
//! - On Linux transient threads are the managed command's own mostly
//!   sleeping threads (on-CPU time from `/proc/<pid>/task/*/schedstat`).
//!   Work ecosched does not manage (the kernel's threads of §4.1, other
//!   programs) is seen per CPU: a CPU's busy time (`/proc/stat`) less the
//!   managed threads' on-CPU time there, over the same window. A CPU on
//!   which it takes at least half the window is not idle, so a managed
//!   thread is never pinned onto a busy program it cannot move; its cache
//!   weight and IPC are unknown, so stages 2 and 3 leave its node alone.
//!   It is not added to Table 1's thread counts: with no cache weight to
//!   weigh it by, counting it kept two cache-hungry threads on one cache
//!   beside a compute-bound program alone on the other (a third of their
//!   throughput lost). Below `t_on_tr` it is transient and ignored, as the
//!   paper ignores kernel threads' short bursts.

use crate::{Policy, PolicyError};
use ecosched_model::{
    CounterKind, CpuId, CpuSet, Plan, PolicyStats, Requirements, Snapshot, TaskId, TaskState,
    Topology, TypedStats,
};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

crate::typed_params! {
    /// Parameters of `wca`.
    pub struct WcaParams {
        /// EWMA weight a of the current interval's IPC and LLCRPI.
        alpha: f64 = real().above(0.0).at_most(1.0).default("0.5").source("eq. 1"),
        /// Transient below this on-CPU share of the history window (0.01 = 1 %).
        t_on_tr: f64 = real().at_least(0.0).below(1.0).default("0.01").source("§4.1"),
        /// History window of the transience test, ms (at least interval_ms).
        window_ms: u64 = int(1, 86_400_000).default("1000"),
        /// Cache weight 2 above this many LLC requests per instruction.
        llcrpi_high: f64 = real().at_least(0.0).default("0.1").source("§4.2"),
        /// Cache weight 1 above this IPC when LLCRPI is not high.
        ipc_high: f64 = real().at_least(0.0).default("1.0").source("§4.2"),
        /// Stage 3 moves a thread only when the IPC it leaves behind
        /// exceeds the other node's by this share (0 = Table 1 verbatim).
        ipc_margin: f64 = real().at_least(0.0).below(1.0).default("0.05"),
        /// Sampling and balancing interval, ms.
        interval_ms: u64 = int(1, 3_600_000).default("100"),
    }
}

/// Everything that configures WCA.
#[derive(Debug, Clone, PartialEq)]
pub struct WcaConfig {
    /// EWMA weight of the newest value (eq. 1's α).
    pub alpha: f64,
    /// Transience threshold `T_On_tr`: on-CPU time / total time.
    pub t_on_tr: f64,
    /// History window of the transience test.
    pub window: Duration,
    /// LLC requests per instruction above which CW = 2.
    pub llcrpi_high: f64,
    /// IPC above which CW = 1 (when LLCRPI is not high).
    pub ipc_high: f64,
    /// Stage 3's relative margin.
    pub ipc_margin: f64,
    /// Control interval.
    pub interval: Duration,
}

impl WcaConfig {
    /// The configuration from checked parameters.
    pub fn new(p: WcaParams) -> Result<Self, PolicyError> {
        if p.window_ms < p.interval_ms {
            return Err(PolicyError::BadParam {
                key: "window_ms".into(),
                value: p.window_ms.to_string(),
                reason: "must be at least interval_ms and at most a day".into(),
            });
        }
        Ok(WcaConfig {
            alpha: p.alpha,
            t_on_tr: p.t_on_tr,
            window: Duration::from_millis(p.window_ms),
            llcrpi_high: p.llcrpi_high,
            ipc_high: p.ipc_high,
            ipc_margin: p.ipc_margin,
            interval: Duration::from_millis(p.interval_ms),
        })
    }
}

/// What WCA knows about one thread.
#[derive(Debug, Clone, Default)]
struct Thread {
    /// Averaged instructions per cycle, once it has run.
    ipc: Option<f64>,
    /// Averaged LLC requests per instruction, once it has run.
    llcrpi: Option<f64>,
    /// (interval ns, on-CPU ns) per observed interval, oldest first,
    /// covering at most the window.
    history: VecDeque<(u64, u64)>,
}

impl Thread {
    /// On-CPU share over the history, `None` before the first interval.
    fn on_share(&self) -> Option<f64> {
        share(&self.history)
    }
}

ecosched_model::policy_stats! {
    /// Moves made by each stage of Table 1, and other run statistics.
    pub struct WcaStats {
        /// Decisions taken.
        decisions: u64 => counter,
        /// Threads transient (or not yet characterised) at the last decision.
        transient_threads: usize => gauge,
        /// Most threads transient at once.
        transient_threads_max: usize => gauge,
        /// Threads placed (non-transient) at the last decision.
        placed_threads: usize => gauge,
        /// Moves by stage 1 (thread count).
        moves_stage1_count: u64 => counter,
        /// Moves by stage 2 (cache weight).
        moves_stage2_cache_weight: u64 => counter,
        /// Moves by stage 3 (IPC).
        moves_stage3_ipc: u64 => counter,
        /// Affinity changes sent (pins and unpins).
        affinity_changes: u64 => counter,
        /// CPUs that work ecosched does not manage keeps busy (at least
        /// half the window): never idle.
        unmanaged_busy_cpus: usize => gauge,
        /// CPUs with unmanaged work below t_on_tr of the window: transient
        /// (kernel threads' bursts), ignored.
        unmanaged_transient_cpus: usize => gauge,
    }
}

/// The WCA policy.
pub struct Wca {
    config: WcaConfig,
    /// Sibling sets, outermost level first: each entry is the children of
    /// one node of the topology tree.
    levels: Vec<Vec<CpuSet>>,
    online: CpuSet,
    threads: BTreeMap<TaskId, Thread>,
    /// CPU of every non-transient thread.
    placed: BTreeMap<TaskId, CpuId>,
    /// The affinity last sent per task.
    applied: BTreeMap<TaskId, CpuSet>,
    /// Per CPU, (interval ns, busy ns of unmanaged work) per observed
    /// interval, oldest first, covering at most the window.
    unmanaged: BTreeMap<CpuId, VecDeque<(u64, u64)>>,
    /// CPUs unmanaged work keeps busy, as of the last decision.
    busy: CpuSet,
    stats: WcaStats,
}

/// Share of the window from which a CPU's unmanaged work makes it busy:
/// it rounds to one CPU's worth.
const UNMANAGED_BUSY_SHARE: f64 = 0.5;

/// Drop the oldest entries of `history` beyond `window_ns` (keeping one).
fn trim(history: &mut VecDeque<(u64, u64)>, window_ns: u64) {
    while history.iter().map(|h| h.0).sum::<u64>() > window_ns && history.len() > 1 {
        history.pop_front();
    }
}

/// Busy share of a history, `None` before the first interval.
fn share(history: &VecDeque<(u64, u64)>) -> Option<f64> {
    let total: u64 = history.iter().map(|h| h.0).sum();
    let on: u64 = history.iter().map(|h| h.1).sum();
    (total > 0).then(|| on as f64 / total as f64)
}

/// Node totals of Table 1's 3-tuple (Fig. 4).
#[derive(Debug, Clone, Copy, Default)]
struct Tuple {
    count: u32,
    cw: u32,
    ipc: f64,
}

impl Wca {
    /// WCA from its checked parameters.
    pub fn new(params: WcaParams) -> Result<Self, PolicyError> {
        Ok(Wca::with_config(WcaConfig::new(params)?))
    }

    /// WCA with `config`.
    pub fn with_config(config: WcaConfig) -> Self {
        Wca {
            config,
            levels: Vec::new(),
            online: CpuSet::new(),
            threads: BTreeMap::new(),
            placed: BTreeMap::new(),
            applied: BTreeMap::new(),
            unmanaged: BTreeMap::new(),
            busy: CpuSet::new(),
            stats: WcaStats::default(),
        }
    }

    /// A thread's cache weight (§4.2).
    fn cache_weight(&self, t: &Thread) -> u32 {
        match (t.llcrpi, t.ipc) {
            (Some(l), _) if l > self.config.llcrpi_high => 2,
            (_, Some(i)) if i > self.config.ipc_high => 1,
            _ => 0,
        }
    }

    /// Fold one interval into the thread's history and averages.
    fn characterise(&mut self, snapshot: &Snapshot) {
        let interval_ns = (snapshot.interval_s * 1e9).round().max(0.0) as u64;
        let window_ns = self.config.window.as_nanos() as u64;
        let alpha = self.config.alpha;
        let live: Vec<TaskId> = snapshot.live_managed().map(|t| t.id).collect();
        self.threads.retain(|id, _| live.contains(id));
        self.placed.retain(|id, _| live.contains(id));
        self.applied.retain(|id, _| live.contains(id));
        for task in snapshot.live_managed() {
            let th = self.threads.entry(task.id).or_default();
            let c = &task.counters;
            th.history
                .push_back((interval_ns, c.on_cpu_ns.unwrap_or(0).min(interval_ns)));
            trim(&mut th.history, window_ns);
            if let (Some(i), Some(cy)) = (c.instructions, c.cycles) {
                if i > 0 && cy > 0 {
                    let ipc = i as f64 / cy as f64;
                    th.ipc = Some(th.ipc.map_or(ipc, |p| alpha * ipc + (1.0 - alpha) * p));
                    if let Some(r) = c.llc_references {
                        let rpi = r as f64 / i as f64;
                        th.llcrpi =
                            Some(th.llcrpi.map_or(rpi, |p| alpha * rpi + (1.0 - alpha) * p));
                    }
                }
            }
        }
    }

    /// Fold one interval of each CPU's unmanaged work into its history:
    /// the CPU's busy time less the managed threads' on-CPU time there.
    fn characterise_unmanaged(&mut self, snapshot: &Snapshot) {
        let interval_ns = (snapshot.interval_s * 1e9).round().max(0.0) as u64;
        let window_ns = self.config.window.as_nanos() as u64;
        let mut managed: BTreeMap<CpuId, u64> = BTreeMap::new();
        for task in snapshot.live_managed() {
            if let (Some(cpu), Some(on)) = (task.cpu, task.counters.on_cpu_ns) {
                *managed.entry(cpu).or_default() += on.min(interval_ns);
            }
        }
        let (mut busy, mut transient) = (CpuSet::new(), 0);
        for c in &snapshot.cpus {
            let on = (c.utilisation.clamp(0.0, 1.0) * interval_ns as f64) as u64;
            let other = on.saturating_sub(managed.get(&c.id).copied().unwrap_or(0));
            let history = self.unmanaged.entry(c.id).or_default();
            history.push_back((interval_ns, other));
            trim(history, window_ns);
            match share(history) {
                Some(s) if s >= UNMANAGED_BUSY_SHARE => busy.insert(c.id),
                Some(s) if s > 0.0 && s < self.config.t_on_tr => transient += 1,
                _ => {}
            }
        }
        self.stats.unmanaged_busy_cpus = busy.len();
        self.stats.unmanaged_transient_cpus = transient;
        self.busy = busy;
    }

    fn tuple(&self, node: &CpuSet, without: Option<TaskId>) -> Tuple {
        let mut t = Tuple::default();
        for (id, cpu) in &self.placed {
            if Some(*id) == without || !node.contains(*cpu) {
                continue;
            }
            let th = &self.threads[id];
            t.count += 1;
            t.cw += self.cache_weight(th);
            t.ipc += th.ipc.unwrap_or(0.0);
        }
        t
    }

    fn idle_cpu(&self, node: &CpuSet, allowed: &CpuSet) -> Option<CpuId> {
        node.iter()
            .filter(|c| allowed.contains(*c) && !self.busy.contains(*c))
            .find(|c| !self.placed.values().any(|p| p == c))
    }

    /// Table 1 for thread `id` against sibling `n2`: the stage that moves
    /// it, if any.
    ///
    /// A later stage acts only where the earlier ones stay balanced (§4.2:
    /// stage 3 runs when "both the number of threads and cache weight is
    /// balanced"): a move must not leave an imbalance that an earlier
    /// stage would undo by moving the thread straight back. Read literally,
    /// Table 1 lets stage 3 move a high-IPC thread next to a CW-2 thread
    /// and stage 2 move it back at the next invocation.
    fn stage(&self, id: TaskId, n1: &CpuSet, n2: &CpuSet) -> Option<u8> {
        let a = self.tuple(n1, None);
        let b = self.tuple(n2, None);
        let without = self.tuple(n1, Some(id));
        if a.count.saturating_sub(1) > b.count {
            return Some(1);
        }
        // After the move N2 holds b.count + 1; stage 1 would move it back
        // if b.count > a.count − 1.
        if b.count + 1 > a.count {
            return None;
        }
        // Unmanaged work has no counters here: the cache weight and IPC
        // sums of a node it keeps busy are unknown, so stages 2 and 3 do
        // not compare such a node.
        if n1.intersects(&self.busy) || n2.intersects(&self.busy) {
            return None;
        }
        if without.cw > b.cw {
            return Some(2);
        }
        // Stage 2 would move it back if CW(N2) > CW(N1) − CW(T).
        if b.cw > without.cw {
            return None;
        }
        if without.ipc > b.ipc * (1.0 + self.config.ipc_margin) {
            return Some(3);
        }
        None
    }

    /// One balancing pass over every level, each thread moving at most once.
    fn balance(&mut self, allowed: &BTreeMap<TaskId, CpuSet>) {
        let mut moved: Vec<TaskId> = Vec::new();
        let levels = self.levels.clone();
        loop {
            let mut any = false;
            for siblings in &levels {
                let ids: Vec<TaskId> = self.placed.keys().copied().collect();
                for id in ids {
                    if moved.contains(&id) {
                        continue;
                    }
                    let cpu = self.placed[&id];
                    let Some(n1) = siblings.iter().position(|s| s.contains(cpu)) else {
                        continue;
                    };
                    let mask = allowed
                        .get(&id)
                        .cloned()
                        .unwrap_or_else(|| self.online.clone());
                    let mut others: Vec<(Tuple, usize, CpuId)> = siblings
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != n1)
                        .filter_map(|(i, s)| {
                            self.idle_cpu(s, &mask).map(|c| (self.tuple(s, None), i, c))
                        })
                        .collect();
                    others.sort_by(|x, y| {
                        (x.0.count, x.0.cw)
                            .cmp(&(y.0.count, y.0.cw))
                            .then(x.0.ipc.total_cmp(&y.0.ipc))
                            .then(x.1.cmp(&y.1))
                    });
                    let hit = others.iter().find_map(|(_, i, c)| {
                        self.stage(id, &siblings[n1], &siblings[*i])
                            .map(|s| (s, *c))
                    });
                    if let Some((stage, to)) = hit {
                        self.placed.insert(id, to);
                        moved.push(id);
                        any = true;
                        match stage {
                            1 => self.stats.moves_stage1_count += 1,
                            2 => self.stats.moves_stage2_cache_weight += 1,
                            _ => self.stats.moves_stage3_ipc += 1,
                        }
                    }
                }
            }
            if !any {
                break;
            }
        }
    }
}

/// The topology as WCA balances it (Fig. 1b / Fig. 4): for every node of
/// the tree machine → packages → last-level caches → CPUs, the CPU sets of
/// its children; outermost first. Nodes with one child add nothing and are
/// left out.
pub fn sibling_levels(topology: &Topology) -> Vec<Vec<CpuSet>> {
    let online = topology.online_cpus();
    let mut packages: BTreeMap<u32, CpuSet> = BTreeMap::new();
    for cpu in topology.cpus.iter().filter(|c| c.online) {
        packages.entry(cpu.package).or_default().insert(cpu.id);
    }
    let mut levels = Vec::new();
    let pkg_sets: Vec<CpuSet> = packages.values().cloned().collect();
    if pkg_sets.len() > 1 {
        levels.push(pkg_sets.clone());
    }
    let caches: Vec<CpuSet> = topology
        .last_level_caches()
        .iter()
        .map(|c| c.cpus.intersection(&online))
        .filter(|c| !c.is_empty())
        .collect();
    let mut leaves: Vec<CpuSet> = Vec::new();
    for pkg in &pkg_sets {
        let mut children: Vec<CpuSet> = caches
            .iter()
            .filter(|c| c.is_subset(pkg))
            .cloned()
            .collect();
        let covered = children.iter().fold(CpuSet::new(), |acc, c| acc.union(c));
        // CPUs no cache lists are their own node.
        children.extend(
            pkg.iter()
                .filter(|c| !covered.contains(*c))
                .map(CpuSet::single),
        );
        children.sort();
        children.dedup();
        if children.len() > 1 {
            levels.push(children.clone());
        }
        leaves.extend(children);
    }
    let cpu_level: Vec<Vec<CpuSet>> = leaves
        .iter()
        .filter(|n| n.len() > 1)
        .map(|n| n.iter().map(CpuSet::single).collect())
        .collect();
    levels.extend(cpu_level);
    levels
}

impl Policy for Wca {
    fn name(&self) -> &str {
        "wca"
    }
    fn requirements(&self) -> Requirements {
        Requirements {
            counters: [
                CounterKind::Instructions,
                CounterKind::Cycles,
                CounterKind::LlcReferences,
                CounterKind::OnCpuTime,
            ]
            .into(),
            affinity: true,
            ..Requirements::default()
        }
    }
    fn interval(&self) -> Duration {
        self.config.interval
    }
    fn init(&mut self, topology: &Topology) -> Result<Plan, PolicyError> {
        self.online = topology.online_cpus();
        if self.online.is_empty() {
            return Err(PolicyError::Incompatible(
                "the machine has no online CPUs".into(),
            ));
        }
        self.levels = sibling_levels(topology);
        self.threads.clear();
        self.placed.clear();
        self.applied.clear();
        self.unmanaged.clear();
        self.busy = CpuSet::new();
        self.stats = WcaStats::default();
        Ok(Plan::default())
    }
    fn decide(&mut self, snapshot: &Snapshot) -> Plan {
        self.stats.decisions += 1;
        self.characterise(snapshot);
        self.characterise_unmanaged(snapshot);
        let mut allowed: BTreeMap<TaskId, CpuSet> = BTreeMap::new();
        let mut transient = 0usize;
        for task in snapshot.live_managed() {
            let th = &self.threads[&task.id];
            let steady = th
                .on_share()
                .is_some_and(|s| s >= self.config.t_on_tr && task.state != TaskState::Stopped);
            // What the thread may use apart from our own pin: the CPUs
            // the machine has online.
            allowed.insert(task.id, self.online.clone());
            if !steady {
                transient += 1;
                self.placed.remove(&task.id);
                continue;
            }
            if !self.placed.contains_key(&task.id) {
                let at = task
                    .cpu
                    .filter(|c| self.online.contains(*c))
                    .or_else(|| self.online.first());
                if let Some(cpu) = at {
                    self.placed.insert(task.id, cpu);
                }
            }
        }
        self.stats.transient_threads = transient;
        self.stats.transient_threads_max = self.stats.transient_threads_max.max(transient);
        self.balance(&allowed);
        self.stats.placed_threads = self.placed.len();
        let mut plan = Plan::default();
        for task in snapshot.live_managed() {
            let want = match self.placed.get(&task.id) {
                Some(cpu) => CpuSet::single(*cpu),
                // Transient: unpinned, but only undone if we pinned it.
                None if self.applied.contains_key(&task.id) => self.online.clone(),
                None => continue,
            };
            if self.applied.get(&task.id) != Some(&want) {
                self.stats.affinity_changes += 1;
                if want == self.online {
                    self.applied.remove(&task.id);
                } else {
                    self.applied.insert(task.id, want.clone());
                }
                plan.task_cpus.insert(task.id, want);
            }
        }
        plan
    }
    fn stats(&self) -> PolicyStats {
        self.stats.to_stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Params;
    use ecosched_model::TaskSample;
    use ecosched_testkit::machines::xeon_e5430;
    use ecosched_testkit::snapshots::{self, snapshot, task_id};

    fn wca_from(params: &Params) -> Result<Wca, PolicyError> {
        let (_, variant) = crate::find("wca")?;
        Wca::new(variant.typed(params)?)
    }

    /// A thread that ran `on_ms` of a 100 ms interval on `cpu` with this
    /// IPC and LLC requests per instruction.
    fn task(pid: u32, cpu: u32, on_ms: u64, ipc: f64, llcrpi: f64) -> TaskSample {
        let cycles = on_ms * 2_000_000;
        let instructions = (cycles as f64 * ipc) as u64;
        snapshots::task(pid)
            .cpu(cpu)
            .instructions(instructions)
            .cycles(cycles)
            .llc_references((instructions as f64 * llcrpi) as u64)
            .on_cpu_ns(on_ms * 1_000_000)
            .build(&xeon_e5430())
    }

    /// A 100 ms snapshot whose CPUs are busy exactly for the tasks' on-CPU
    /// time there: nothing else runs.
    fn snap(time_s: f64, tasks: Vec<TaskSample>) -> Snapshot {
        let mut s = Snapshot {
            tasks,
            ..snapshot(xeon_e5430(), time_s, 0.1).build()
        };
        for c in &mut s.cpus {
            let on: u64 = s
                .tasks
                .iter()
                .filter(|t| t.cpu == Some(c.id))
                .filter_map(|t| t.counters.on_cpu_ns)
                .sum();
            c.utilisation = (on as f64 / 1e8).min(1.0);
        }
        s
    }

    fn wca() -> Wca {
        let mut w = wca_from(&Params::default()).unwrap();
        w.init(&xeon_e5430()).unwrap();
        w
    }

    fn pins(plan: &Plan) -> BTreeMap<u32, String> {
        plan.task_cpus
            .iter()
            .map(|(t, s)| (t.pid, s.to_list()))
            .collect()
    }

    #[test]
    fn topology_levels_are_caches_then_cores() {
        let levels = sibling_levels(&xeon_e5430());
        let text: Vec<Vec<String>> = levels
            .iter()
            .map(|l| l.iter().map(CpuSet::to_list).collect())
            .collect();
        assert_eq!(
            text,
            vec![
                vec!["0-1".to_string(), "2-3".to_string()],
                vec!["0".to_string(), "1".to_string()],
                vec!["2".to_string(), "3".to_string()],
            ]
        );
    }

    #[test]
    fn cache_weight_follows_llcrpi_then_ipc() {
        let w = wca();
        let t = |ipc, llcrpi| Thread {
            ipc: Some(ipc),
            llcrpi: Some(llcrpi),
            history: VecDeque::new(),
        };
        assert_eq!(w.cache_weight(&t(0.5, 0.2)), 2);
        assert_eq!(w.cache_weight(&t(1.5, 0.05)), 1);
        assert_eq!(w.cache_weight(&t(0.5, 0.05)), 0);
        // The thresholds are strict (§4.2: "LLCRPI > 0.1", "IPC > 1").
        assert_eq!(w.cache_weight(&t(1.0, 0.1)), 0);
    }

    #[test]
    fn ewma_halves_towards_the_new_value() {
        let mut w = wca();
        w.decide(&snap(0.1, vec![task(1, 0, 100, 2.0, 0.0)]));
        w.decide(&snap(0.2, vec![task(1, 0, 100, 1.0, 0.0)]));
        let ipc = w.threads[&task_id(1)].ipc.unwrap();
        assert!((ipc - 1.5).abs() < 1e-3, "{ipc}");
        let mut slow = wca_from(&Params::default().with("alpha", 0.25)).unwrap();
        slow.init(&xeon_e5430()).unwrap();
        slow.decide(&snap(0.1, vec![task(1, 0, 100, 2.0, 0.0)]));
        slow.decide(&snap(0.2, vec![task(1, 0, 100, 1.0, 0.0)]));
        let ipc = slow.threads[&task_id(1)].ipc.unwrap();
        assert!((ipc - 1.75).abs() < 1e-3, "{ipc}");
    }

    /// §3's art-equake-equake: the kernel put art next to an equake.
    /// Equal cache weights, so stage 3 (IPC) moves the lower-IPC equake
    /// to the idle core beside the other equake; art ends up alone, and
    /// the next decision changes nothing (no ping-pong).
    #[test]
    fn art_is_left_alone_on_its_cache_and_the_placement_holds() {
        let mut w = wca();
        let mix = || {
            vec![
                task(1, 0, 100, 0.9, 0.2),  // art
                task(2, 1, 100, 0.5, 0.15), // equake next to art
                task(3, 2, 100, 0.5, 0.15), // equake
            ]
        };
        let plan = w.decide(&snap(0.1, mix()));
        let p = pins(&plan);
        assert_eq!(p[&1], "0");
        assert_eq!(p[&2], "3");
        assert_eq!(p[&3], "2");
        assert_eq!(w.stats.moves_stage3_ipc, 1);
        let mut moved = mix();
        moved[1].cpu = Some(CpuId(3));
        let again = w.decide(&snap(0.2, moved));
        assert!(again.task_cpus.is_empty(), "{:?}", again.task_cpus);
        assert_eq!(w.stats.moves_stage3_ipc, 1);
    }

    /// Stage 2: two cache-heavy threads share a cache while a light one
    /// has the other; one heavy thread moves to the light one's idle
    /// sibling core.
    #[test]
    fn cache_weight_imbalance_moves_a_heavy_thread() {
        let mut w = wca();
        let plan = w.decide(&snap(
            0.1,
            vec![
                task(1, 0, 100, 0.5, 0.3),
                task(2, 1, 100, 0.5, 0.3),
                task(3, 2, 100, 0.5, 0.01),
            ],
        ));
        assert_eq!(w.stats.moves_stage2_cache_weight, 1);
        let p = pins(&plan);
        let on_second_cache = [&p[&1], &p[&2]].iter().filter(|c| **c == "3").count();
        assert_eq!(on_second_cache, 1, "{p:?}");
    }

    /// mcf (CW 2, low IPC) alone, two bzip2 (CW 1, high IPC) together:
    /// stage 3 would move a bzip2 next to mcf and stage 2 straight back;
    /// the placement must hold instead.
    #[test]
    fn stage_three_never_undoes_stage_two() {
        let mut w = wca();
        let mix = vec![
            task(1, 0, 100, 0.15, 0.15), // mcf
            task(2, 2, 100, 1.5, 0.01),  // bzip2
            task(3, 3, 100, 1.5, 0.01),  // bzip2
        ];
        for k in 1..=5 {
            let plan = w.decide(&snap(0.1 * k as f64, mix.clone()));
            if k > 1 {
                assert!(plan.task_cpus.is_empty(), "{:?}", plan.task_cpus);
            }
        }
        let s = &w.stats;
        assert_eq!(s.moves_stage2_cache_weight + s.moves_stage3_ipc, 0, "{s:?}");
    }

    /// vortex beside one gzip, the other gzip alone: whichever cache holds
    /// vortex, the gzips' IPC sums tie up to noise. Within the margin
    /// nothing moves; Table 1 verbatim (margin 0) moves vortex on a
    /// 0.6 % difference.
    #[test]
    fn stage_three_holds_a_tie_within_the_margin() {
        let mix = vec![
            task(1, 0, 100, 1.2, 0.02),  // vortex
            task(2, 1, 100, 1.61, 0.01), // gzip beside it
            task(3, 2, 100, 1.6, 0.01),  // gzip alone
        ];
        let mut w = wca();
        assert!(w.decide(&snap(0.1, mix.clone())).task_cpus.len() == 3);
        assert_eq!(w.stats.moves_stage3_ipc, 0);
        let mut literal = wca_from(&Params::default().with("ipc_margin", 0)).unwrap();
        literal.init(&xeon_e5430()).unwrap();
        let p = pins(&literal.decide(&snap(0.1, mix)));
        assert_eq!(literal.stats.moves_stage3_ipc, 1);
        assert_eq!(p[&1], "3", "{p:?}");
    }

    /// A program ecosched does not manage keeps CPU 2 busy: of two managed
    /// threads sharing the first cache one spreads to the second, onto CPU
    /// 3, not onto the busy program it could not move. Kernel threads'
    /// bursts (a fraction of a per cent) are transient and change nothing:
    /// then CPU 2 is idle and taken.
    #[test]
    fn unmanaged_work_is_never_shared() {
        let mix = || vec![task(1, 0, 100, 0.5, 0.0), task(2, 1, 100, 0.5, 0.0)];
        let with_other = |time_s: f64, other: f64| {
            let mut s = snap(time_s, mix());
            s.cpus[2].utilisation = other;
            s.cpus[3].utilisation = other.min(0.001);
            s
        };
        let mut w = wca();
        let p = pins(&w.decide(&with_other(0.1, 1.0)));
        assert_eq!(w.stats.unmanaged_busy_cpus, 1);
        assert_eq!(w.stats.moves_stage1_count, 1);
        assert_eq!((p[&1].as_str(), p[&2].as_str()), ("3", "1"), "{p:?}");
        let mut bursts = wca();
        let p = pins(&bursts.decide(&with_other(0.1, 0.001)));
        assert_eq!(bursts.stats.unmanaged_busy_cpus, 0);
        assert_eq!(bursts.stats.unmanaged_transient_cpus, 2);
        assert_eq!(p[&1], "2", "{p:?}");
    }

    /// Stage 1: two threads on one CPU spread to an idle one.
    #[test]
    fn count_imbalance_spreads_threads() {
        let mut w = wca();
        let plan = w.decide(&snap(
            0.1,
            vec![task(1, 0, 50, 0.5, 0.0), task(2, 0, 50, 0.5, 0.0)],
        ));
        assert!(w.stats.moves_stage1_count >= 1);
        let p = pins(&plan);
        assert_ne!(p[&1], p[&2]);
    }

    /// A thread on a CPU under 1 % of the window is transient: never
    /// pinned, not counted, and unpinned when it becomes so.
    #[test]
    fn transient_threads_are_left_unpinned() {
        let mut w = wca();
        let plan = w.decide(&snap(
            0.1,
            vec![task(1, 0, 100, 0.5, 0.0), task(9, 0, 0, 1.0, 0.0)],
        ));
        let p = pins(&plan);
        assert_eq!(p.get(&1).map(String::as_str), Some("0"));
        assert!(!p.contains_key(&9));
        assert_eq!(w.stats.transient_threads, 1);
        assert_eq!(w.stats.moves_stage1_count, 0);
        // Thread 1 goes quiet: after a window of idleness it is unpinned.
        let mut last = Plan::default();
        for k in 2..=12 {
            last = w.decide(&snap(0.1 * k as f64, vec![task(1, 0, 0, 0.5, 0.0)]));
            if !last.task_cpus.is_empty() {
                break;
            }
        }
        assert_eq!(pins(&last)[&1], "0-3");
        assert_eq!(
            Policy::stats(&w).get("transient_threads"),
            Some(&ecosched_model::StatValue::Count(1))
        );
    }

    #[test]
    fn rejects_bad_params() {
        for (k, v) in [
            ("alpha", "0"),
            ("alpha", "1.5"),
            ("t_on_tr", "1"),
            ("window_ms", "10"),
            ("interval_ms", "0"),
            ("llcrpi_high", "-1"),
            ("ipc_high", "x"),
            ("ipc_margin", "1"),
            ("ipc_margin", "-0.1"),
        ] {
            let err = wca_from(&Params::default().with(k, v)).err();
            assert!(
                err.as_ref().is_some_and(|e| e.to_string().contains(k)),
                "{k}={v}: {err:?}"
            );
        }
        assert!(wca_from(&Params::default().with("nope", 1)).is_err());
    }

    #[test]
    fn needs_instruction_cycle_and_llc_counters() {
        let r = wca().requirements();
        for k in [
            CounterKind::Instructions,
            CounterKind::Cycles,
            CounterKind::LlcReferences,
        ] {
            assert!(r.counters.contains(&k));
        }
        assert!(r.affinity);
    }
}
