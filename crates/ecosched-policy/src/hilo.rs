//! High/low core sets with a spare core — Richling, Schönherr, Mühl and
//! Werner (PIK 32(2), 2009, §IV; `docs/design/papers.md`, "High/low sets").
//!
//! A polling governor raises a core's frequency only after it has seen load
//! there, and the kernel puts new work on the idlest — slowest — core
//! (§II, Problems A and B): short compile jobs finish before the governor
//! reacts. Instead, keep two sets:
//!
//! ```text
//!   H (high set): highest P-state, the only CPUs managed work may use
//!   L (low set):  lowest P-state, idle
//!   |H| = parallelism + spare, clamped to [1, online CPUs]
//! ```
//!
//! - **Set control** (§IV-B "on-demand with spare"): parallelism is the
//!   number of runnable managed tasks, measured every `interval_ms`
//!   (default 20 ms, the 10–50 ms the spec asks for) — the larger of the
//!   average number of managed tasks that wanted a CPU over the interval
//!   (on-CPU plus run-queue time, which also sees tasks that came and went
//!   between two observations) and the runnable count at the observation.
//!   That count leaves out tasks older than a second that wanted a CPU for
//!   less than half the interval: a mostly idle service caught awake at
//!   the observation is demand for its share of the time, not for a CPU of
//!   its own, and many of them would otherwise grow H far beyond the work
//!   (H keeps the peak of its hold window).
//!   H grows at once; it shrinks only after a lower demand has lasted
//!   `hold_ms` (default 200 ms), to the highest demand seen in that window:
//!   growing is urgent for response time, shrinking only for energy.
//! - **Application hint** (§IV-B "support by application"): when the
//!   snapshot carries `parallelism_hint` (from `ecosched run --parallelism
//!   N`, the hint file, or a scenario), H is sized from the hint instead and
//!   the spare becomes `spare_with_hint`. Its default keeps the spare (1):
//!   §V-B/C measured that `-jN` alone under-counts (make and the processes a
//!   compiler pipes into also want CPUs), and only H = N + 1 reached the
//!   performance governor's times. Set it to 0 to drop the spare, as §IV-B
//!   envisages for an exact hint.
//! - **Which CPUs** (§IV-B, §V-F): deterministic. CPUs are ordered by last
//!   level cache domain (lowest-numbered CPU first inside one), and H is a
//!   prefix of that order. On a hybrid machine the biggest cores come
//!   first (domains with bigger cores first, bigger cores first inside a
//!   domain), and H is sized in capacity, not CPUs: parallelism + spare
//!   biggest-core equivalents (Linux's `cpu_capacity`, 1024 each), so a
//!   demand that spills onto smaller cores takes as many as it needs. The
//!   prefix fills so a cache domain (and its package's voltage
//!   plane) fills before the next opens; `spread=true` takes one CPU from
//!   each cache domain in turn instead, so packages alternate (memory-bound
//!   work, NUMA: §V-F). `rotate_s` (off by default)
//!   shifts the order by one cache domain every so many seconds, the
//!   long-term fairness §IV-A suggests for even heating.
//! - **Frequency** (§IV-A): a frequency domain runs at its highest P-state
//!   when any of its CPUs is in H; set directly, not through a governor.
//!   The paper's system owns the machine and holds every other domain at
//!   its lowest P-state (`own_machine=true`). By default those domains are
//!   left as found, under their governor: managed work never runs there,
//!   but whatever else the machine runs does (services, cron jobs, other
//!   users), and held at the lowest P-state it would run at a fraction of
//!   its speed without anything saying so. An idle domain under a
//!   load-following governor drops to its lowest P-state by itself. On a
//!   machine without frequency control (no frequency domains in the
//!   topology, e.g. a VM without cpufreq) the policy only confines managed
//!   work to H — it then saves nothing by itself but still concentrates
//!   the work.
//! - **Green set** (§IV-C, opt-in `green=true`): managed tasks whose
//!   shared-cache misses per thousand instructions reach `green_mpki`
//!   (default 10; they leave below half of it) are memory-bound: they lose
//!   little at a low frequency (Merkel Table 1), so they get a set G of
//!   their own at `green_mhz` (default the lowest P-state, the most
//!   efficient one for a machine that stays on — §IV-C), taken from the far
//!   end of the CPU order and spread over the cache domains (and so the
//!   memory controllers). H is then sized for the other tasks. This needs the
//!   instruction and shared-cache-miss counters; without `green` the policy
//!   reads no counters at all.
//!
//! Variants for comparison (§V): `hilo` = C (H/L with a spare),
//! `hilo-nospare` = B (H/L, |H| = parallelism), `hilo-ondemand` = A (H by
//! affinity only, every domain left to the ondemand governor, no spare).

use crate::{Policy, PolicyError};
use ecosched_model::topology::FULL_CAPACITY;
use ecosched_model::{
    CounterKind, CpuId, CpuSet, FreqDomainId, FreqSetting, Governor, Plan, PolicyStats,
    Requirements, Snapshot, TaskId, TaskSample, TaskState, Topology, TypedStats,
};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

crate::typed_params! {
    /// Parameters of the `hilo` family.
    pub struct HiloParams {
        /// CPUs in H beyond the measured parallelism.
        spare: usize = int(0, 4096).default("1").source("§IV-B"),
        /// Spare when the application declares its parallelism (0 drops it).
        spare_with_hint: Option<usize> = int(0, 4096).unset("same as spare").source("§IV-B"),
        /// How long a lower demand must last before H shrinks, ms.
        hold_ms: f64 = real().at_least(0.0).default("200"),
        /// Parallelism-tracking period, ms (10–50 recommended).
        interval_ms: u64 = int(1, 10_000).default("20").source("§IV-B"),
        /// Take CPUs for H from alternate packages instead of filling one
        /// cache domain first.
        spread: bool = flag().default("false").source("§V-F"),
        /// Shift H by one cache domain every so many seconds (0 = never).
        rotate_s: f64 = real().at_least(0.0).default("0").source("§IV-A"),
        /// Memory-bound tasks get a green set at green_mhz (needs counters).
        green: bool = flag().default("false").source("§IV-C"),
        /// Shared-cache misses per 1000 instructions from which a task is
        /// memory-bound.
        green_mpki: f64 = real().above(0.0).default("10").source("§IV-C"),
        /// Frequency of the green set, MHz: the lowest P-state at or above it.
        green_mhz: Option<u64> = int_from(1).unset("the lowest P-state").source("§IV-C"),
        /// Hold every domain with no CPU in H (or G) at its lowest P-state,
        /// as the paper's system does; false leaves them under their
        /// governor for the work ecosched does not manage.
        own_machine: bool = flag().default("false").source("§IV-A"),
    }
}

ecosched_model::policy_stats! {
    /// What a `hilo` policy has done.
    pub struct HiloStats {
        /// CPUs in the high set H now.
        high_cpus: usize => gauge,
        /// CPUs in the green set now.
        green_cpus: usize => gauge,
        /// Managed tasks classified memory-bound now.
        memory_bound_tasks: usize => gauge,
        /// Times H grew.
        grows: u64 => counter,
        /// Times H shrank after the hold time.
        shrinks: u64 => counter,
        /// Frequency settings sent.
        frequency_changes: u64 => counter,
    }
}

/// Settings of the green set (§IV-C).
#[derive(Debug, Clone, PartialEq)]
pub struct GreenConfig {
    /// Misses per thousand instructions from which a task is memory-bound.
    pub mpki: f64,
    /// Requested frequency, MHz (`None`: the lowest P-state).
    pub mhz: Option<u64>,
}

/// How frequencies are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreqMode {
    /// H at the highest P-state, L at the lowest (variants B and C).
    HighLow,
    /// Every domain left to the ondemand governor (variant A).
    Ondemand,
}

/// Settings of one `hilo` policy.
#[derive(Debug, Clone, PartialEq)]
pub struct HiloConfig {
    /// Spare CPUs without a hint.
    pub spare: usize,
    /// Spare CPUs with a hint.
    pub spare_with_hint: usize,
    /// Shrink hold time, s.
    pub hold_s: f64,
    /// Decision period.
    pub interval: Duration,
    /// Interleave packages instead of filling cache domains.
    pub spread: bool,
    /// Rotation period, s (`None` = never).
    pub rotate_s: Option<f64>,
    /// Frequency handling.
    pub mode: FreqMode,
    /// The green set, if enabled.
    pub green: Option<GreenConfig>,
    /// Hold domains outside H and G at the lowest P-state (else leave them
    /// as found).
    pub own_machine: bool,
}

impl HiloConfig {
    /// The settings of a variant: its typed parameters and how it handles
    /// frequencies.
    pub fn new(params: HiloParams, mode: FreqMode) -> Result<Self, PolicyError> {
        let green = params.green.then_some(GreenConfig {
            mpki: params.green_mpki,
            mhz: params.green_mhz,
        });
        if green.is_some() && mode == FreqMode::Ondemand {
            return Err(PolicyError::BadParam {
                key: "green".into(),
                value: "true".into(),
                reason: "the ondemand variant does not set frequencies, so it has no green set"
                    .into(),
            });
        }
        if params.own_machine && mode == FreqMode::Ondemand {
            return Err(PolicyError::BadParam {
                key: "own_machine".into(),
                value: "true".into(),
                reason: "the ondemand variant leaves every domain to ondemand".into(),
            });
        }
        Ok(HiloConfig {
            green,
            spare: params.spare,
            spare_with_hint: params.spare_with_hint.unwrap_or(params.spare),
            hold_s: params.hold_ms / 1000.0,
            interval: Duration::from_millis(params.interval_ms),
            spread: params.spread,
            rotate_s: (params.rotate_s > 0.0).then_some(params.rotate_s),
            mode,
            own_machine: params.own_machine,
        })
    }
}

/// The high/low-set policy.
#[derive(Debug, Clone)]
pub struct Hilo {
    name: &'static str,
    config: HiloConfig,
    /// CPUs grouped by last-level cache domain, in filling order.
    groups: Vec<Vec<CpuId>>,
    /// Domains' CPUs as sets (index = frequency domain).
    domains: Vec<CpuSet>,
    /// Current size of H.
    size: usize,
    /// A lower demand seen since this time, with the highest demand since.
    shrink: Option<(f64, usize)>,
    /// Rotation offset in cache domains.
    offset: usize,
    /// What was last applied.
    applied_cpus: Option<CpuSet>,
    applied_freq: BTreeMap<usize, FreqSetting>,
    /// Highest, lowest and green P-state per domain, kHz.
    limits_khz: Vec<(u64, u64, u64)>,
    /// Each online CPU's capacity (1024 = the biggest core).
    capacity: BTreeMap<CpuId, u32>,
    /// CPUs in H as last planned.
    high_cpus: usize,
    /// Live managed tasks classified memory-bound (green set).
    memory_bound: BTreeSet<TaskId>,
    /// Size of the green set.
    green_size: usize,
    /// Per-task sets last applied (green set only).
    applied_tasks: BTreeMap<TaskId, CpuSet>,
    /// What it has done.
    stats: HiloStats,
}

impl Hilo {
    /// A policy of the family under registry name `name`.
    pub fn new(
        name: &'static str,
        params: HiloParams,
        mode: FreqMode,
    ) -> Result<Self, PolicyError> {
        Ok(Hilo::with_config(name, HiloConfig::new(params, mode)?))
    }

    /// A policy with settings already checked.
    pub fn with_config(name: &'static str, config: HiloConfig) -> Self {
        Hilo {
            name,
            config,
            groups: Vec::new(),
            domains: Vec::new(),
            size: 1,
            shrink: None,
            offset: 0,
            applied_cpus: None,
            applied_freq: BTreeMap::new(),
            limits_khz: Vec::new(),
            capacity: BTreeMap::new(),
            high_cpus: 0,
            memory_bound: BTreeSet::new(),
            green_size: 0,
            applied_tasks: BTreeMap::new(),
            stats: HiloStats::default(),
        }
    }

    /// The order CPUs enter H (after rotation).
    fn order(&self) -> Vec<CpuId> {
        self.ordered(self.config.spread)
    }

    /// CPUs cache domain by cache domain (`spread`: one from each in turn).
    fn ordered(&self, spread: bool) -> Vec<CpuId> {
        let n = self.groups.len().max(1);
        let groups: Vec<&Vec<CpuId>> = (0..self.groups.len())
            .map(|i| &self.groups[(i + self.offset) % n])
            .collect();
        if !spread {
            return groups.into_iter().flatten().copied().collect();
        }
        // Round-robin over cache domains: one CPU from each in turn.
        let longest = groups.iter().map(|g| g.len()).max().unwrap_or(0);
        (0..longest)
            .flat_map(|k| groups.iter().filter_map(move |g| g.get(k).copied()))
            .collect()
    }

    /// The shortest prefix of the current order outside the green set
    /// whose capacity is `k` biggest cores' (`k` CPUs on a homogeneous
    /// machine); one CPU at least.
    fn high_set(&self, k: usize, green: &CpuSet) -> CpuSet {
        let want = k as u64 * u64::from(FULL_CAPACITY);
        let mut have = 0u64;
        self.order()
            .into_iter()
            .filter(|c| !green.contains(*c))
            .take_while(|c| {
                let more = have == 0 || have < want;
                have += u64::from(self.capacity.get(c).copied().unwrap_or(FULL_CAPACITY));
                more
            })
            .collect()
    }

    /// The green set: `k` CPUs from the far end of the order, one cache
    /// domain after another, so memory-bound tasks spread over the memory
    /// controllers (§V-F) instead of crowding one.
    fn green_set(&self, k: usize) -> CpuSet {
        self.ordered(true).into_iter().rev().take(k).collect()
    }

    /// Re-classify the live managed tasks (green set only), with
    /// hysteresis: in at `mpki`, out below half of it.
    fn classify(&mut self, snapshot: &Snapshot) {
        let Some(green) = &self.config.green else {
            return;
        };
        let live: BTreeSet<TaskId> = snapshot.live_managed().map(|t| t.id).collect();
        self.memory_bound.retain(|id| live.contains(id));
        for t in snapshot.live_managed() {
            let (Some(instr), Some(misses)) = (t.counters.instructions, t.counters.llc_misses)
            else {
                continue;
            };
            if instr == 0 {
                continue;
            }
            let mpki = misses as f64 * 1000.0 / instr as f64;
            if mpki >= green.mpki {
                self.memory_bound.insert(t.id);
            } else if mpki < green.mpki / 2.0 {
                self.memory_bound.remove(&t.id);
            }
        }
        // One CPU at least stays for H.
        self.green_size = self.memory_bound.len().min(self.total().saturating_sub(1));
    }

    fn total(&self) -> usize {
        self.groups.iter().map(Vec::len).sum()
    }

    /// The demand on H (parallelism + spare, less the green set's tasks)
    /// this snapshot shows, clamped to the CPUs the green set leaves.
    fn demand(&self, snapshot: &Snapshot) -> usize {
        let (parallelism, spare) = match snapshot.parallelism_hint {
            Some(n) => (n as usize, self.config.spare_with_hint),
            None => (measured_parallelism(snapshot), self.config.spare),
        };
        let green_runnable = snapshot
            .live_managed()
            .filter(|t| matches!(t.state, TaskState::Running | TaskState::Runnable))
            .filter(|t| self.memory_bound.contains(&t.id))
            .count();
        (parallelism.saturating_sub(green_runnable) + spare)
            .clamp(1, (self.total() - self.green_size).max(1))
    }

    /// Grow at once; shrink after the hold time to the peak of the window.
    fn resize(&mut self, demand: usize, now_s: f64) {
        if demand >= self.size {
            if demand > self.size {
                self.stats.grows += 1;
            }
            self.size = demand;
            self.shrink = None;
            return;
        }
        let (since, peak) = match self.shrink {
            Some((since, peak)) => (since, peak.max(demand)),
            None => (now_s, demand),
        };
        if now_s - since >= self.config.hold_s {
            if peak < self.size {
                self.stats.shrinks += 1;
            }
            self.size = peak;
            self.shrink = None;
        } else {
            self.shrink = Some((since, peak));
        }
    }

    /// The plan for the current size: only what changed. `snapshot` names
    /// the live tasks to place when there is a green set.
    fn plan(&mut self, snapshot: Option<&Snapshot>) -> Plan {
        let green = self.green_set(self.green_size);
        let high = self.high_set(self.size, &green);
        self.high_cpus = high.len();
        let usable = high.union(&green);
        let mut plan = Plan::unchanged();
        if self.applied_cpus.as_ref() != Some(&usable) {
            plan.managed_cpus = Some(usable.clone());
            self.applied_cpus = Some(usable);
        }
        if let (Some(snapshot), Some(_)) = (snapshot, &self.config.green) {
            let live: BTreeSet<TaskId> = snapshot.live_managed().map(|t| t.id).collect();
            self.applied_tasks.retain(|id, _| live.contains(id));
            for id in live {
                let set = if self.memory_bound.contains(&id) && !green.is_empty() {
                    &green
                } else {
                    &high
                };
                if self.applied_tasks.get(&id) != Some(set) {
                    plan.task_cpus.insert(id, set.clone());
                    self.applied_tasks.insert(id, set.clone());
                }
            }
        }
        if self.config.mode == FreqMode::HighLow {
            for (d, cpus) in self.domains.iter().enumerate() {
                let (max, min, green_khz) = self.limits_khz[d];
                let setting = if cpus.intersects(&high) {
                    FreqSetting::Fixed { freq_khz: max }
                } else if cpus.intersects(&green) {
                    FreqSetting::Fixed {
                        freq_khz: green_khz,
                    }
                } else if self.config.own_machine {
                    FreqSetting::Fixed { freq_khz: min }
                } else {
                    FreqSetting::AsFound
                };
                // A domain never set is as found already.
                let before = self.applied_freq.get(&d).copied();
                if before.unwrap_or(FreqSetting::AsFound) != setting {
                    plan.frequency.insert(FreqDomainId(d), setting);
                    self.applied_freq.insert(d, setting);
                    self.stats.frequency_changes += 1;
                }
            }
        }
        plan
    }
}

/// Share of the interval a task wanted a CPU for, below which being
/// runnable at the observation does not make a settled task a CPU's
/// worth of demand.
const BUSY_SHARE: f64 = 0.5;

/// Age from which a task is settled, s: a build's jobs and the processes
/// that start them are younger, or busy; a service that has run this long
/// and wants a CPU for a small share of the time is not parallel work.
const SETTLED_S: f64 = 1.0;

/// Managed tasks that want a CPU: the larger of the interval's average
/// (on-CPU + run-queue time over the interval, rounded to the nearest
/// whole task) and those runnable at the observation that are younger
/// than a second or wanted a CPU for at least half the interval (a mostly
/// idle service caught awake counts only through the average).
pub fn measured_parallelism(snapshot: &Snapshot) -> usize {
    let interval_ns = snapshot.interval_s * 1e9;
    let wanted_ns = |t: &TaskSample| {
        t.counters.on_cpu_ns.unwrap_or(0) + t.counters.runqueue_wait_ns.unwrap_or(0)
    };
    let young = |t: &TaskSample| snapshot.time_s - t.started_s < SETTLED_S;
    let now = snapshot
        .live_managed()
        .filter(|t| matches!(t.state, TaskState::Running | TaskState::Runnable))
        .filter(|t| {
            interval_ns <= 0.0
                || young(t)
                || t.counters.on_cpu_ns.is_none()
                || wanted_ns(t) as f64 >= BUSY_SHARE * interval_ns
        })
        .count();
    if interval_ns <= 0.0 {
        return now;
    }
    let total_ns: u64 = snapshot
        .tasks
        .iter()
        .filter(|t| t.managed)
        .map(wanted_ns)
        .sum();
    let average = (total_ns as f64 / interval_ns).round() as usize;
    now.max(average)
}

impl Policy for Hilo {
    fn name(&self) -> &str {
        self.name
    }
    fn requirements(&self) -> Requirements {
        // Frequency control is used when the topology has frequency
        // domains; without them the policy degrades to affinity only.
        let counters = if self.config.green.is_some() {
            [CounterKind::Instructions, CounterKind::LlcMisses].into()
        } else {
            BTreeSet::new()
        };
        Requirements {
            affinity: true,
            frequency_wanted: true,
            counters,
            ..Requirements::default()
        }
    }
    fn interval(&self) -> Duration {
        self.config.interval
    }
    fn init(&mut self, topology: &Topology) -> Result<Plan, PolicyError> {
        let online = topology.online_cpus();
        if online.is_empty() {
            return Err(PolicyError::Incompatible(
                "the machine has no online CPUs".into(),
            ));
        }
        let mut groups: Vec<Vec<CpuId>> = Vec::new();
        let mut seen = CpuSet::new();
        for cache in topology.last_level_caches() {
            let g: Vec<CpuId> = cache
                .cpus
                .intersection(&online)
                .iter()
                .filter(|c| !seen.contains(*c))
                .collect();
            g.iter().for_each(|c| seen.insert(*c));
            if !g.is_empty() {
                groups.push(g);
            }
        }
        // CPUs no cache lists (a sparse topology) form one group per package.
        let mut rest: BTreeMap<u32, Vec<CpuId>> = BTreeMap::new();
        for cpu in topology.cpus.iter().filter(|c| c.online) {
            if !seen.contains(cpu.id) {
                rest.entry(cpu.package).or_default().push(cpu.id);
            }
        }
        groups.extend(rest.into_values());
        self.capacity = topology
            .cpus
            .iter()
            .filter(|c| c.online)
            .map(|c| (c.id, c.capacity))
            .collect();
        // Biggest cores first: inside a domain, and domains by their
        // biggest core; then by CPU number.
        let cap = |c: &CpuId| self.capacity.get(c).copied().unwrap_or(FULL_CAPACITY);
        for g in &mut groups {
            g.sort_by_key(|c| (std::cmp::Reverse(cap(c)), *c));
        }
        groups.sort_by_key(|g| {
            let biggest = g.iter().map(cap).max().unwrap_or(FULL_CAPACITY);
            (std::cmp::Reverse(biggest), g.iter().min().copied())
        });
        self.groups = groups;
        self.domains = topology
            .freq_domains
            .iter()
            .map(|d| d.cpus.clone())
            .collect();
        let green_mhz = self.config.green.as_ref().and_then(|g| g.mhz);
        self.limits_khz = topology
            .freq_domains
            .iter()
            .map(|d| {
                let green = green_mhz.map_or(d.min_khz(), |mhz| d.at_least(mhz as f64 * 1000.0));
                (d.max_khz(), d.min_khz(), green)
            })
            .collect();
        self.memory_bound.clear();
        self.green_size = 0;
        self.applied_tasks.clear();
        self.size = (1 + self.config.spare).clamp(1, self.total());
        self.shrink = None;
        self.offset = 0;
        self.applied_cpus = None;
        self.applied_freq.clear();
        let mut plan = self.plan(None);
        if self.config.mode == FreqMode::Ondemand {
            plan.frequency = (0..self.domains.len())
                .map(|d| (FreqDomainId(d), FreqSetting::Governor(Governor::Ondemand)))
                .collect();
        }
        Ok(plan)
    }
    fn decide(&mut self, snapshot: &Snapshot) -> Plan {
        if let Some(period) = self.config.rotate_s {
            let offset = (snapshot.time_s / period) as usize % self.groups.len().max(1);
            self.offset = offset;
        }
        self.classify(snapshot);
        let demand = self.demand(snapshot);
        self.resize(demand, snapshot.time_s);
        // The green set may have taken CPUs H held.
        self.size = self.size.min((self.total() - self.green_size).max(1));
        self.plan(Some(snapshot))
    }
    fn stats(&self) -> PolicyStats {
        HiloStats {
            high_cpus: self.high_cpus,
            green_cpus: self.green_size,
            memory_bound_tasks: self.memory_bound.len(),
            ..self.stats.clone()
        }
        .to_stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Params;
    use ecosched_testkit::machines::opteron_2352;
    use ecosched_testkit::snapshots::{self, snapshot};
    use std::sync::Arc;

    fn task(pid: u32, state: TaskState, on_cpu_ms: u64) -> snapshots::TaskBuilder {
        snapshots::task(pid)
            .name(format!("cc{pid}"))
            .state(state)
            .on_cpu_ns(on_cpu_ms * 1_000_000)
            .runqueue_wait_ns(0)
    }

    /// A 20 ms snapshot at `time_s` with `running` busy tasks and `sleeping` idle ones.
    fn snap(time_s: f64, running: u32, sleeping: u32, hint: Option<u32>) -> Snapshot {
        snapshot(opteron_2352(), time_s, 0.02)
            .tasks((0..running).map(|i| task(i, TaskState::Running, 20)))
            .tasks((0..sleeping).map(|i| task(100 + i, TaskState::Sleeping, 0)))
            .parallelism_hint(hint)
            .build()
    }

    fn hilo(params: Params) -> Hilo {
        let (_, variant) = crate::find("hilo").unwrap();
        Hilo::new("hilo", variant.typed(&params).unwrap(), FreqMode::HighLow).unwrap()
    }

    fn high_count(plan_freq: &BTreeMap<FreqDomainId, FreqSetting>) -> usize {
        plan_freq
            .values()
            .filter(|s| {
                **s == FreqSetting::Fixed {
                    freq_khz: 2_100_000,
                }
            })
            .count()
    }

    /// H starts at one CPU and the spare. The other domains are left as
    /// found; owning the machine, as the paper's system does, holds them at
    /// the lowest P-state.
    #[test]
    fn starts_with_one_plus_spare_and_leaves_the_rest_unless_it_owns_the_machine() {
        let mut p = hilo(Params::default());
        let plan = p.init(&opteron_2352()).unwrap();
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-1");
        assert_eq!(plan.frequency.len(), 2);
        assert_eq!(high_count(&plan.frequency), 2);
        let mut owner = hilo(Params::default().with("own_machine", true));
        let plan = owner.init(&opteron_2352()).unwrap();
        assert_eq!(plan.frequency.len(), 8);
        assert_eq!(high_count(&plan.frequency), 2);
        assert_eq!(
            plan.frequency[&FreqDomainId(5)],
            FreqSetting::Fixed {
                freq_khz: 1_050_000
            }
        );
    }

    #[test]
    fn grows_at_once_and_shrinks_only_after_the_hold_time() {
        let mut p = hilo(Params::default().with("own_machine", true));
        p.init(&opteron_2352()).unwrap();
        let plan = p.decide(&snap(0.02, 3, 1, None));
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-3");
        assert_eq!(high_count(&plan.frequency), 2, "only CPUs 2 and 3 change");
        // Demand falls to 1 (+1 spare): H holds for 200 ms …
        let mut t = 0.04;
        while t < 0.23 {
            assert!(p.decide(&snap(t, 1, 3, None)).is_empty(), "changed at {t}");
            t += 0.02;
        }
        // … then shrinks to the peak of the window.
        let plan = p.decide(&snap(0.26, 1, 3, None));
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-1");
        assert_eq!(
            plan.frequency.values().copied().collect::<Vec<_>>(),
            vec![
                FreqSetting::Fixed {
                    freq_khz: 1_050_000
                };
                2
            ]
        );
    }

    /// A domain that leaves H goes back to how it was found.
    #[test]
    fn a_domain_leaving_h_is_handed_back() {
        let mut p = hilo(Params::default());
        p.init(&opteron_2352()).unwrap();
        p.decide(&snap(0.02, 3, 1, None));
        let mut t = 0.04;
        let plan = loop {
            let plan = p.decide(&snap(t, 1, 3, None));
            if !plan.is_empty() {
                break plan;
            }
            t += 0.02;
        };
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-1");
        let back: Vec<(usize, FreqSetting)> = plan
            .frequency
            .into_iter()
            .map(|(d, s)| (d.index(), s))
            .collect();
        assert_eq!(
            back,
            vec![(2, FreqSetting::AsFound), (3, FreqSetting::AsFound)]
        );
    }

    #[test]
    fn a_brief_rise_during_the_hold_restarts_it() {
        let mut p = hilo(Params::default());
        p.init(&opteron_2352()).unwrap();
        p.decide(&snap(0.02, 5, 0, None));
        p.decide(&snap(0.04, 1, 0, None));
        p.decide(&snap(0.10, 5, 0, None));
        // The hold started again at 0.26, not at 0.04.
        assert!(p.decide(&snap(0.26, 1, 0, None)).is_empty());
        assert!(p.decide(&snap(0.40, 1, 0, None)).is_empty());
        let plan = p.decide(&snap(0.47, 1, 0, None));
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-1");
    }

    #[test]
    fn fills_a_cache_domain_first_or_spreads_across_packages() {
        let mut fill = hilo(Params::default());
        fill.init(&opteron_2352()).unwrap();
        let plan = fill.decide(&snap(0.02, 4, 0, None));
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-4");
        let mut spread = hilo(Params::default().with("spread", true));
        spread.init(&opteron_2352()).unwrap();
        let plan = spread.decide(&snap(0.02, 3, 0, None));
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-1,4-5");
    }

    #[test]
    fn hint_replaces_measurement_and_may_drop_the_spare() {
        let mut p = hilo(Params::default().with("spare_with_hint", 0));
        p.init(&opteron_2352()).unwrap();
        let plan = p.decide(&snap(0.02, 1, 0, Some(6)));
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-5");
        let mut keep = hilo(Params::default());
        keep.init(&opteron_2352()).unwrap();
        let plan = keep.decide(&snap(0.02, 1, 0, Some(6)));
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-6");
        // Demand never exceeds the machine.
        let plan = keep.decide(&snap(0.04, 1, 0, Some(40)));
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-7");
    }

    #[test]
    fn counts_tasks_that_came_and_went_within_the_interval() {
        let mut s = snap(0.02, 0, 0, None);
        // Three tasks each busy for the whole 20 ms but exited by now.
        s.tasks = (0..3)
            .map(|i| task(i, TaskState::Exited, 20).build(&s.topology))
            .collect();
        assert_eq!(measured_parallelism(&s), 3);
        let s = snap(0.02, 2, 5, None);
        assert_eq!(measured_parallelism(&s), 2);
    }

    #[test]
    fn mostly_idle_services_count_by_their_share_not_as_cpus() {
        // Two busy tasks and forty services, running for a minute, each on
        // a CPU 1 ms of 20 ms, six of them caught awake at the
        // observation: 2 + 40 × 0.05.
        let mut s = snap(60.0, 2, 0, None);
        let topology = s.topology.clone();
        s.tasks.extend((0..40).map(|i| {
            let state = if i < 6 {
                TaskState::Running
            } else {
                TaskState::Sleeping
            };
            task(200 + i, state, 1).build(&topology)
        }));
        assert_eq!(measured_parallelism(&s), 4);
        let mut p = hilo(Params::default());
        p.init(&opteron_2352()).unwrap();
        let plan = p.decide(&s);
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-4");
        // A task younger than a second (a build's job), or one busy most
        // of the interval, still counts as a CPU's worth at once.
        let mut s = snap(60.0, 2, 0, None);
        s.tasks.push(
            task(300, TaskState::Runnable, 1)
                .started(59.5)
                .build(&topology),
        );
        s.tasks
            .push(task(301, TaskState::Running, 12).build(&topology));
        assert_eq!(measured_parallelism(&s), 4);
    }

    #[test]
    fn on_a_hybrid_machine_h_takes_big_cores_first_and_is_sized_in_capacity() {
        use ecosched_testkit::machines::Synthetic;
        // CPUs 0-3 are small cores (half a big one), 4-7 big.
        let hybrid = Synthetic::new(1, 1, 8)
            .llc(3, 36 * 1024)
            .capacity(0..4, 512)
            .build();
        let at = |busy: u32| {
            let mut p = hilo(Params::default());
            p.init(&hybrid).unwrap();
            let s = snapshot(hybrid.clone(), 0.02, 0.02)
                .tasks((0..busy).map(|i| task(i, TaskState::Running, 20)))
                .build();
            let cpus = p.decide(&s).managed_cpus.unwrap().to_list();
            (cpus, p.stats().get("high_cpus").map(|v| v.to_string()))
        };
        // 2 tasks + spare: three big cores.
        assert_eq!(at(2), ("4-6".into(), Some("3".into())));
        // 4 + spare = 5 big cores' worth: the four big and two small ones.
        assert_eq!(at(4).0, "0-1,4-7");
        // 6 + spare = 7: more than the machine's 6, so all of it.
        assert_eq!(at(6).0, "0-7");
    }

    #[test]
    fn rotation_moves_h_to_the_next_cache_domain() {
        let mut p = hilo(Params::default().with("rotate_s", 60));
        p.init(&opteron_2352()).unwrap();
        assert!(p.decide(&snap(10.0, 1, 0, None)).is_empty());
        let plan = p.decide(&snap(61.0, 1, 0, None));
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "4-5");
        assert_eq!(high_count(&plan.frequency), 2);
    }

    #[test]
    fn without_frequency_domains_only_affinity_is_set() {
        let mut topo = opteron_2352();
        topo.freq_domains.clear();
        let mut p = hilo(Params::default());
        let plan = p.init(&topo).unwrap();
        assert!(plan.frequency.is_empty());
        let mut s = snap(0.02, 3, 0, None);
        s.topology = Arc::new(topo);
        let plan = p.decide(&s);
        assert!(plan.frequency.is_empty());
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-3");
        assert!(!p.requirements().frequency);
    }

    #[test]
    fn variant_a_hands_frequency_to_ondemand() {
        let (_, variant) = crate::find("hilo-ondemand").unwrap();
        let params = variant.typed(&Params::default()).unwrap();
        let mut p = Hilo::new("hilo-ondemand", params, FreqMode::Ondemand).unwrap();
        let plan = p.init(&opteron_2352()).unwrap();
        assert!(plan
            .frequency
            .values()
            .all(|s| *s == FreqSetting::Governor(Governor::Ondemand)));
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0");
        let plan = p.decide(&snap(0.02, 3, 0, None));
        assert!(plan.frequency.is_empty());
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-2");
    }

    #[test]
    fn green_set_takes_memory_bound_tasks_to_the_far_end_at_low_frequency() {
        let mut p = hilo(Params::default().with("green", true));
        assert!(p.requirements().counters.contains(&CounterKind::LlcMisses));
        p.init(&opteron_2352()).unwrap();
        let mut s = snap(0.02, 3, 0, None);
        for (i, t) in s.tasks.iter_mut().enumerate() {
            t.counters.instructions = Some(1_000_000);
            // Task 0 misses 20 times per 1000 instructions, the others once.
            t.counters.llc_misses = Some(if i == 0 { 20_000 } else { 1_000 });
        }
        let plan = p.decide(&s);
        assert_eq!(plan.task_cpus[&s.tasks[0].id].to_list(), "7");
        // Two others + a spare on H: CPU 2 joins H; CPU 7, found under
        // its governor, goes to the lowest P-state as the green set.
        assert_eq!(plan.task_cpus[&s.tasks[1].id].to_list(), "0-2");
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-2,7");
        assert_eq!(
            plan.frequency.into_iter().collect::<Vec<_>>(),
            vec![
                (
                    FreqDomainId(2),
                    FreqSetting::Fixed {
                        freq_khz: 2_100_000
                    }
                ),
                (
                    FreqDomainId(7),
                    FreqSetting::Fixed {
                        freq_khz: 1_050_000
                    }
                )
            ]
        );
        // Hysteresis: at 8 per 1000 (under 10, over 5) it stays green.
        s.tasks[0].counters.llc_misses = Some(8_000);
        s.time_s = 0.04;
        assert!(p.decide(&s).task_cpus.is_empty());
        s.tasks[0].counters.llc_misses = Some(4_000);
        s.time_s = 0.06;
        let plan = p.decide(&s);
        assert_eq!(plan.task_cpus[&s.tasks[0].id].to_list(), "0-3");
    }

    #[test]
    fn rejects_bad_params() {
        let bad = |k: &str, v: &str| crate::build("hilo", &Params::default().with(k, v)).is_err();
        assert!(bad("interval_ms", "0"));
        assert!(bad("hold_ms", "-1"));
        assert!(bad("spare", "-1"));
        assert!(bad("spread", "maybe"));
        assert!(bad("green", "1"));
        assert!(bad("green_mpki", "0"));
        assert!(crate::build("hilo-ondemand", &Params::default().with("green", true)).is_err());
    }
}
