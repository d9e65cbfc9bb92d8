//! Machine descriptions: the TOML form (presets in `machines/*.toml`, or a
//! user's own file) and the built [`Machine`] the simulator runs.
//!
//! A machine is a topology (packages → dies → cores → hardware threads,
//! caches by scope) plus the handful of physical parameters the simulator's
//! models need: P-states with voltages, DVFS latency, memory latency and
//! saturation bandwidth, and the power model's coefficients
//! (`docs/design/simulator.md`; every key in
//! `docs/researchers/machine-files.md`). Each preset documents where every
//! number comes from.

pub use crate::coretypes::PStateSpec;
use crate::coretypes::{check_pstates, CoreType, CoreTypeSpec, Layout, Shape};
use crate::error::SimError;
use ecosched_model::topology::{
    CacheDomain, CacheKind, Cpu, FreqDomain, IdleState, NumaNode, PState, VoltageDomain,
};
use ecosched_model::{Calibration, CpuId, CpuSet, FreqDomainId, PmuSpec, Topology};
use serde::Deserialize;

/// Which level of the hierarchy a cache, frequency domain, voltage domain
/// or memory controller belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// One per core.
    Core,
    /// One per die (chip).
    Die,
    /// One per package (socket).
    Package,
    /// One for the whole machine.
    Machine,
}

/// A cache level.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    /// Level.
    pub level: u8,
    /// Size in KiB of one instance.
    pub size_kib: u64,
    /// Which CPUs share one instance.
    pub scope: Scope,
}

/// DVFS.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrequencySpec {
    /// Scope of a frequency domain.
    pub domain: Scope,
    /// Scope of a voltage domain (≥ the frequency domain's).
    pub voltage_domain: Scope,
    /// P-states, ascending.
    pub pstates: Vec<PStateSpec>,
    /// Frequency transition latency, µs.
    pub transition_latency_us: u32,
    /// Whether the domain's cores stop executing during a transition.
    #[serde(default)]
    pub stall_on_transition: bool,
    /// Base (guaranteed) frequency, MHz, one of the P-states: those above
    /// it are boost states that `power.package_limit_w` may withhold.
    /// `None`: the lowest P-state.
    #[serde(default)]
    pub base_mhz: Option<u64>,
}

/// Memory system.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    /// `machine` for a shared front-side bus, `package` for integrated controllers.
    pub domain: Scope,
    /// Unloaded memory latency `L0`, ns.
    pub latency_ns: f64,
    /// Saturation bandwidth `B_sat` of one memory domain, GB/s (10⁹ B/s).
    pub bandwidth_gbs: f64,
    /// Cache line size, bytes.
    #[serde(default = "default_line")]
    pub line_bytes: u32,
    /// Highest utilisation fed into the queueing formula; past it the hard
    /// bandwidth cap governs. A front-side bus saturates abruptly (low
    /// value), an integrated controller queues more gradually.
    #[serde(default = "default_rho_max")]
    pub rho_max: f64,
}

fn default_line() -> u32 {
    64
}

fn default_rho_max() -> f64 {
    0.95
}

/// An idle state.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleSpec {
    /// Name.
    pub name: String,
    /// Exit latency, µs.
    pub exit_latency_us: u32,
    /// Idle time after which the state is entered, µs.
    pub target_residency_us: u32,
    /// Power of one idle core in this state at the highest P-state's
    /// voltage, W (scaled linearly with voltage, like leakage).
    pub power_w: f64,
}

/// Power model coefficients (`docs/design/simulator.md`, "Power and energy").
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerSpec {
    /// Effective switched capacitance of one core: dynamic power is
    /// `activity · ceff · V² · f` with f in GHz, so the unit is W/(V²·GHz).
    pub ceff: f64,
    /// Switched capacitance of an idle (halted) core whose clock keeps
    /// running, same unit as `ceff`; 0 when idle cores gate their clock.
    #[serde(default)]
    pub idle_ceff: f64,
    /// Leakage of one active core per volt, W/V.
    pub leak_w_per_v: f64,
    /// Activity factor of a core that is stalled on memory the whole time
    /// (1.0 = stalls burn as much as computing).
    pub stall_activity: f64,
    /// Per-package uncore power (shared cache, bus interface), W.
    pub uncore_w: f64,
    /// Rest of the system (board, disks, fans, PSU loss), W.
    pub base_w: f64,
    /// Memory idle power, W.
    pub mem_idle_w: f64,
    /// Memory dynamic energy per byte transferred, nJ.
    pub mem_nj_per_byte: f64,
    /// Idle states, shallowest first.
    pub idle_states: Vec<IdleSpec>,
    /// Package power limit, W (Intel PL1, AMD PPT): boost P-states (above
    /// `frequency.base_mhz`) are granted only while the modelled package
    /// power stays under it (`docs/design/simulator.md`, "Boost within a
    /// power limit"). `None`: every P-state is always granted.
    #[serde(default)]
    pub package_limit_w: Option<f64>,
    /// How often the package's boost ceiling is re-derived, ms.
    #[serde(default = "default_limit_period")]
    pub limit_period_ms: f64,
    /// Uncore energy per byte its package's tasks move to or from memory,
    /// nJ (memory controllers and fabric: the EPYC I/O die); charged to
    /// the package meter on top of `uncore_w`.
    #[serde(default)]
    pub uncore_nj_per_byte: f64,
    /// Uncore power while every core of the package is idle (package C6),
    /// W, in place of `uncore_w`. `None`: the uncore draws `uncore_w`
    /// whatever its cores do.
    #[serde(default)]
    pub package_idle_w: Option<f64>,
}

fn default_limit_period() -> f64 {
    10.0
}

/// Baseline kernel scheduler tunables (`docs/design/simulator.md`, "The
/// kernel scheduler"); Linux CFS defaults.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedSpec {
    /// Targeted preemption latency, ms (`sched_latency_ns`).
    pub latency_ms: f64,
    /// Minimum timeslice, ms (`sched_min_granularity_ns`).
    pub min_granularity_ms: f64,
    /// Period of count-based load balancing, ms.
    pub balance_interval_ms: f64,
    /// How many times longer a busy CPU waits between its own balancing
    /// passes (`sd->busy_factor`: `rebalance_domains` multiplies a domain's
    /// `balance_interval` by it unless the CPU is idle). 64 in Linux 2.6's
    /// `SD_CPU_INIT`/`SD_MC_INIT` (include/linux/topology.h), the kernels
    /// of every paper here; 32 in `sd_init` from 3.x, 16 from 5.10.
    pub busy_factor: f64,
    /// A domain's `balance_interval` after a pass that pulled work, ms
    /// (`sd->min_interval`: 1 in 2.6's `SD_CPU_INIT`/`SD_MC_INIT`).
    pub sd_min_interval_ms: f64,
    /// The most it doubles to while passes find nothing to pull, ms
    /// (`sd->max_interval`: 4 in 2.6's `SD_CPU_INIT`/`SD_MC_INIT`). A busy
    /// CPU thus balances every 64–256 ms in 2.6.
    pub sd_max_interval_ms: f64,
    /// CPI multiplier for a hardware thread whose SMT sibling is busy.
    pub smt_cpi_factor: f64,
    /// What periodic balancing compares between groups of CPUs.
    pub balance_by: BalanceBy,
    /// How much busier (per cent) the busiest group must be than the
    /// local one before a weighted pass moves anything
    /// (`sd->imbalance_pct`: 125 in 2.6's `SD_CPU_INIT`/`SD_MC_INIT`).
    pub imbalance_pct: f64,
    /// Where a task that slept wakes up.
    pub wake_target: WakeTarget,
    /// Where a task a parent process starts (a build job) is first queued.
    pub new_task_target: NewTaskTarget,
    /// Weighted balancing pushes a running task away only after this many
    /// passes plus two have failed to move anything (`sd->cache_nice_tries`:
    /// 1 in 2.6's `SD_CPU_INIT`/`SD_MC_INIT`; `load_balance`).
    pub cache_nice_tries: u32,
    /// Whether a group of CPUs counts as full with one task
    /// (`SD_PREFER_SIBLING`, from 2.6.32: tasks spread over packages and
    /// dies before doubling up) or with one task per CPU (before 2.6.32:
    /// two tasks may share a package while another idles).
    pub prefer_sibling: bool,
    /// A task that left a CPU less than this long ago is cache-hot, and an
    /// idle CPU does not pull it, ms (`sysctl_sched_migration_cost`: 0.5).
    pub migration_cost_ms: f64,
}

/// What the periodic balancer equalises (`docs/design/simulator.md`, "The
/// kernel scheduler").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BalanceBy {
    /// The summed CFS weights of each CPU's runnable tasks, as Linux 2.6
    /// does (`find_busiest_group` in kernel/sched_fair.c): nice values
    /// move load, and one task over an even spread still moves.
    Weight,
    /// Runnable task counts only, moving when two groups differ by two:
    /// the count-based balancer Dhiman et al. describe (§3, Fig. 1b) for
    /// OpenSolaris, and the stand-in for Linux 2.6.2x (the default).
    Count,
}

/// Where a woken (not newly created) task is queued
/// (`docs/design/simulator.md`, "The kernel scheduler").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeTarget {
    /// Its previous CPU if idle, else the first idle CPU (in CPU order)
    /// sharing that CPU's last level cache, else its previous CPU: Linux
    /// 2.6's `select_task_rq_fair` with `select_idle_sibling` for a wake-up
    /// whose waker runs on (or beside) the sleeper's CPU, as a timer's does.
    Previous,
    /// The allowed CPU idle longest, else the least loaded one, as for a
    /// new task (Richling §II: "the core with the longest idle time"); the
    /// default.
    IdleLongest,
}

/// Where a task started by another (a build job `make` forks and execs)
/// is first queued (`docs/design/simulator.md`, "The kernel scheduler").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NewTaskTarget {
    /// The allowed CPU idle longest, else the least loaded one (Richling
    /// §II: "the core with the longest idle time"); the default.
    IdleLongest,
    /// Linux 2.6.2x's exec balancing (`sched_exec` → `sched_balance_self`,
    /// kernel/sched.c): from the parent's CPU, domain by domain from the
    /// outermost, the group with the least load as each CPU's last tick
    /// saw it (`forkexec_idx` 1, `cpu_load[0]`) unless the parent's own
    /// group is within half of `imbalance_pct` of it, then that group's
    /// CPU with the least load now. A tickless idle CPU does not tick, so
    /// its last tick's load stays; only the idle CPU that balances for
    /// the others (NO_HZ's idle load balancer) keeps ticking and looks
    /// idle ([`crate::kernel::Kernel`]).
    ExecBalance,
}

impl Default for SchedSpec {
    fn default() -> Self {
        SchedSpec {
            latency_ms: 24.0,
            min_granularity_ms: 3.0,
            balance_interval_ms: 8.0,
            busy_factor: 64.0,
            sd_min_interval_ms: 1.0,
            sd_max_interval_ms: 4.0,
            smt_cpi_factor: 1.6,
            balance_by: BalanceBy::Count,
            imbalance_pct: 125.0,
            wake_target: WakeTarget::IdleLongest,
            new_task_target: NewTaskTarget::IdleLongest,
            cache_nice_tries: 1,
            prefer_sibling: true,
            migration_cost_ms: 0.5,
        }
    }
}

/// Governor tunables (`docs/design/simulator.md`, "Governors"). Defaults
/// are the papers' machines'.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GovernorSpec {
    /// ondemand/conservative sampling period, ms.
    pub sampling_ms: f64,
    /// Load above which ondemand jumps to the maximum (and conservative steps up).
    pub up_threshold: f64,
    /// Load below which conservative steps down.
    pub down_threshold: f64,
    /// conservative's step, as a fraction of the maximum frequency.
    pub freq_step: f64,
    /// schedutil's utilisation half-life (PELT), ms.
    pub util_half_life_ms: f64,
    /// schedutil's minimum time between changes, ms.
    pub rate_limit_ms: f64,
    /// Which kernel's ondemand decides below the up-threshold (the
    /// papers' machines ran 2.6 kernels; see [`OndemandKernel`]).
    pub ondemand_kernel: OndemandKernel,
    /// ondemand 2.6: points under `up_threshold` at which it steps down
    /// (`DEF_FREQUENCY_DOWN_DIFFERENTIAL`, 10 in 2.6.25).
    pub down_differential: f64,
    /// ondemand's `powersave_bias`, per mille: the request is lowered by
    /// this share (0 in every kernel's default).
    pub powersave_bias: f64,
    /// How often hardware-chosen frequency (HWP, CPPC autonomous mode)
    /// re-decides, ms.
    pub hwp_period_ms: f64,
}

/// How ondemand picks a frequency when the load is below `up_threshold`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum OndemandKernel {
    /// Linux 2.6.x (`cpufreq_ondemand.c` up to 3.10): stay put unless the
    /// load is below `up_threshold − down_differential`, then go to the
    /// lowest P-state that keeps the load just under that
    /// (`cur · load / (up − down)`, `CPUFREQ_RELATION_L`). The hysteresis
    /// means a half-loaded core keeps whatever frequency it had. Its
    /// sample is one deferrable work item per policy, on `policy->cpu`.
    #[serde(rename = "2.6")]
    Linux2_6,
    /// Linux 3.11 and later: proportional, `min + load · (max − min)`,
    /// closest P-state (`CPUFREQ_RELATION_C`); the sample's work is queued
    /// on every CPU of the policy (`gov_queue_work` with `all_cpus`), so
    /// any of them that is awake takes it.
    #[serde(rename = "3.11")]
    Linux3_11,
}

impl OndemandKernel {
    /// Whether only the policy's first CPU runs the governor's sample
    /// (2.6), rather than whichever of its CPUs is awake (3.11).
    pub fn samples_on_policy_cpu(self) -> bool {
        self == OndemandKernel::Linux2_6
    }
}

impl Default for GovernorSpec {
    fn default() -> Self {
        GovernorSpec {
            sampling_ms: 200.0,
            up_threshold: 0.80,
            down_threshold: 0.20,
            freq_step: 0.05,
            util_half_life_ms: 32.0,
            rate_limit_ms: 10.0,
            ondemand_kernel: OndemandKernel::Linux2_6,
            down_differential: 0.10,
            powersave_bias: 0.0,
            hwp_period_ms: 4.0,
        }
    }
}

/// A machine as written in TOML.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    /// Short name.
    pub name: String,
    /// One line.
    pub description: String,
    /// Sockets.
    pub packages: u32,
    /// Dies (chips) per package.
    pub dies_per_package: u32,
    /// Cores per die.
    pub cores_per_die: u32,
    /// Hardware threads per core.
    #[serde(default = "one")]
    pub threads_per_core: u32,
    /// Core types of a hybrid machine, per die, in CPU-numbering order;
    /// empty: every core is alike (`cores_per_die`, `threads_per_core`).
    #[serde(default)]
    pub core_types: Vec<CoreTypeSpec>,
    /// Caches.
    pub caches: Vec<CacheSpec>,
    /// DVFS.
    pub frequency: FrequencySpec,
    /// Memory.
    pub memory: MemorySpec,
    /// Power.
    pub power: PowerSpec,
    /// Scheduler tunables.
    #[serde(default)]
    pub scheduler: SchedSpec,
    /// Governor tunables.
    #[serde(default)]
    pub governor: GovernorSpec,
    /// The PMU as perf would see it on the real machine: what `--observe
    /// linux` shows a policy. Written as the name of one of
    /// ecosched-model's PMU tables (`pmu = "core2"`), which `ecosched run`
    /// also reads, or inline for a machine no table describes. `None`: no
    /// hardware counters.
    #[serde(default, deserialize_with = "ecosched_model::pmu::named_or_inline")]
    pub pmu: Option<PmuSpec>,
    /// Calibration data for policies (translation vectors, EDP factor,
    /// cpuset partition), each entry with its source.
    #[serde(default)]
    pub calibration: Calibration,
}

fn one() -> u32 {
    1
}

/// Index of a CPU in the simulator's dense arrays (CPU ids are `0..n`).
pub type CpuIdx = usize;

/// CPUs that balance against each other at one level of the hierarchy,
/// split into the groups whose task counts are compared.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedDomain {
    /// The groups (each a list of CPUs).
    pub groups: Vec<Vec<CpuIdx>>,
}

/// A built machine: the topology plus per-CPU lookups the simulator needs.
#[derive(Debug, Clone)]
pub struct Machine {
    /// Where it came from.
    pub spec: MachineSpec,
    /// Its topology.
    pub topology: Topology,
    /// Last-level shared cache instance of each CPU (index into `llc`).
    pub llc_of: Vec<usize>,
    /// Last-level shared caches: (size KiB, CPUs).
    pub llc: Vec<(f64, Vec<CpuIdx>)>,
    /// Memory domain of each CPU.
    pub mem_of: Vec<usize>,
    /// Number of memory domains.
    pub mem_domains: usize,
    /// Package of each CPU.
    pub package_of: Vec<usize>,
    /// Core of each CPU (SMT siblings share it).
    pub core_of: Vec<usize>,
    /// The hardware threads of each core, by core index.
    pub core_cpus: Vec<Vec<CpuIdx>>,
    /// Core type of each CPU (index into `core_types`).
    pub type_of: Vec<usize>,
    /// The core types (one on a machine that lists none).
    pub core_types: Vec<CoreType>,
    /// Frequency domain (index into the topology's) of each CPU.
    pub domain_of: Vec<usize>,
    /// Scheduling domains for balancing, innermost level first.
    pub sched_levels: Vec<Vec<SchedDomain>>,
}

impl Machine {
    /// Number of CPUs.
    pub fn cpus(&self) -> usize {
        self.topology.cpus.len()
    }

    /// Validate and build a machine from its description.
    pub fn build(spec: MachineSpec) -> Result<Machine, SimError> {
        let bad = |msg: String| SimError::InvalidMachine {
            machine: spec.name.clone(),
            reason: msg,
        };
        if spec.packages == 0
            || spec.dies_per_package == 0
            || spec.cores_per_die == 0
            || spec.threads_per_core == 0
        {
            return Err(bad("packages, dies_per_package, cores_per_die and threads_per_core must all be at least 1 (zero cores)".into()));
        }
        crate::bounds::check_cpus(
            spec.packages,
            spec.dies_per_package,
            spec.cores_per_die,
            spec.threads_per_core,
        )
        .map_err(bad)?;
        let f = &spec.frequency;
        check_pstates(&f.pstates).map_err(|e| bad(format!("frequency.{e}")))?;
        let layout = Layout::of(&Shape {
            packages: spec.packages,
            dies_per_package: spec.dies_per_package,
            cores_per_die: spec.cores_per_die,
            threads_per_core: spec.threads_per_core,
            core_types: &spec.core_types,
            ceff: spec.power.ceff,
            leak_w_per_v: spec.power.leak_w_per_v,
            pstates: &f.pstates,
            base_mhz: f.base_mhz,
            per_core_frequency: f.domain == Scope::Core,
        })
        .map_err(bad)?;
        let n = layout.core.len();
        if rank(f.voltage_domain) < rank(f.domain) {
            return Err(bad(
                "frequency.voltage_domain must be at least as wide as frequency.domain".into(),
            ));
        }
        let m = &spec.memory;
        if !(m.latency_ns > 0.0
            && m.latency_ns.is_finite()
            && m.bandwidth_gbs > 0.0
            && m.bandwidth_gbs.is_finite())
        {
            return Err(bad(
                "memory.latency_ns and memory.bandwidth_gbs must be positive".into(),
            ));
        }
        if !matches!(m.domain, Scope::Machine | Scope::Package) {
            return Err(bad("memory.domain must be `machine` (shared bus) or `package` (integrated controllers)".into()));
        }
        if !(m.rho_max > 0.0 && m.rho_max < 1.0) {
            return Err(bad(
                "memory.rho_max must lie strictly between 0 and 1".into()
            ));
        }
        if m.line_bytes == 0 {
            return Err(bad("memory.line_bytes must be positive".into()));
        }
        let p = &spec.power;
        let nonneg = [
            p.ceff,
            p.leak_w_per_v,
            p.uncore_w,
            p.base_w,
            p.mem_idle_w,
            p.mem_nj_per_byte,
        ];
        if nonneg.iter().any(|v| !(v.is_finite() && *v >= 0.0))
            || !(0.0..=1.0).contains(&p.stall_activity)
        {
            return Err(bad(
                "power coefficients must be finite and non-negative, stall_activity in [0, 1]"
                    .into(),
            ));
        }
        let limit_ok = p.package_limit_w.is_none_or(|w| w.is_finite() && w > 0.0)
            && p.limit_period_ms.is_finite()
            && p.limit_period_ms > 0.0
            && p.uncore_nj_per_byte.is_finite()
            && p.uncore_nj_per_byte >= 0.0
            && p.package_idle_w.is_none_or(|w| w.is_finite() && w >= 0.0);
        if !limit_ok {
            return Err(bad("power.package_limit_w and power.limit_period_ms must be positive, power.uncore_nj_per_byte and power.package_idle_w finite and non-negative".into()));
        }
        if p.idle_states
            .iter()
            .any(|s| !(s.power_w.is_finite() && s.power_w >= 0.0))
        {
            return Err(bad(
                "idle state power must be finite and non-negative".into()
            ));
        }
        let s = &spec.scheduler;
        if !(s.latency_ms > 0.0
            && s.min_granularity_ms > 0.0
            && s.balance_interval_ms > 0.0
            && s.busy_factor >= 1.0
            && s.sd_min_interval_ms > 0.0
            && s.sd_max_interval_ms >= s.sd_min_interval_ms
            && s.smt_cpi_factor >= 1.0)
        {
            return Err(bad(
                "scheduler tunables must be positive (smt_cpi_factor ≥ 1, busy_factor ≥ 1, sd_max_interval_ms ≥ sd_min_interval_ms)".into(),
            ));
        }
        let g = &spec.governor;
        if !(g.sampling_ms > 0.0
            && g.util_half_life_ms > 0.0
            && g.rate_limit_ms >= 0.0
            && g.freq_step > 0.0
            && g.freq_step <= 1.0)
            || !(0.0 < g.down_threshold
                && g.down_threshold < g.up_threshold
                && g.up_threshold <= 1.0)
        {
            return Err(bad("governor tunables out of range (0 < down_threshold < up_threshold ≤ 1, positive periods)".into()));
        }
        if !(g.hwp_period_ms.is_finite() && g.hwp_period_ms > 0.0) {
            return Err(bad("governor.hwp_period_ms must be positive".into()));
        }
        if !(0.0 < g.down_differential
            && g.down_differential < g.up_threshold
            && (0.0..1000.0).contains(&g.powersave_bias))
        {
            return Err(bad(
                "governor.down_differential must be in (0, up_threshold) and governor.powersave_bias in [0, 1000) per mille"
                    .into(),
            ));
        }
        if spec.caches.is_empty() {
            return Err(bad("a machine needs at least one cache".into()));
        }
        for c in &spec.caches {
            if c.size_kib == 0 || c.level == 0 {
                return Err(bad(format!(
                    "L{} cache: level and size must be positive",
                    c.level
                )));
            }
            if c.scope == Scope::Machine && spec.packages > 1 {
                return Err(bad(format!("L{} cache with scope `machine` would span {} packages; a cache cannot span packages", c.level, spec.packages)));
            }
        }

        // Dense numbering: package-major, then die, core type, core, thread.
        let group = |scope: Scope, i: usize| -> usize {
            match scope {
                Scope::Core => layout.core[i],
                Scope::Die => layout.die[i],
                Scope::Package => layout.package[i],
                Scope::Machine => 0,
            }
        };
        let count = |scope: Scope| (0..n).map(|i| group(scope, i)).max().map_or(0, |m| m + 1);
        let sets = |scope: Scope| -> Vec<CpuSet> {
            let mut v = vec![CpuSet::new(); count(scope)];
            for i in 0..n {
                v[group(scope, i)].insert(CpuId(i as u32));
            }
            v
        };
        let fdom_sets = sets(f.domain);
        let vdom_count = count(f.voltage_domain);
        let pstates_of = |kind: usize| -> Vec<PState> {
            layout.types[kind]
                .pstates
                .iter()
                .map(|p| PState {
                    freq_khz: p.mhz * 1000,
                    voltage_mv: Some(p.mv),
                })
                .collect()
        };
        let freq_domains: Vec<FreqDomain> = fdom_sets
            .iter()
            .map(|cpus| {
                let first = cpus.first().map_or(0, |c| c.0 as usize);
                FreqDomain {
                    cpus: cpus.clone(),
                    pstates: pstates_of(layout.kind[first]),
                    transition_latency_us: f.transition_latency_us,
                    voltage_domain: group(f.voltage_domain, first),
                }
            })
            .collect();
        let mut voltage_domains = vec![
            VoltageDomain {
                freq_domains: vec![]
            };
            vdom_count
        ];
        for (i, d) in freq_domains.iter().enumerate() {
            voltage_domains[d.voltage_domain]
                .freq_domains
                .push(FreqDomainId(i));
        }
        let numa_scope = if m.domain == Scope::Package {
            Scope::Package
        } else {
            Scope::Machine
        };
        let cpus: Vec<Cpu> = (0..n)
            .map(|i| Cpu {
                id: CpuId(i as u32),
                package: group(Scope::Package, i) as u32,
                die: group(Scope::Die, i) as u32,
                core: group(Scope::Core, i) as u32,
                numa_node: group(numa_scope, i) as u32,
                online: true,
                freq_domain: Some(FreqDomainId(group(f.domain, i))),
                capacity: layout.types[layout.kind[i]].capacity,
            })
            .collect();
        let mut caches = Vec::new();
        for c in &spec.caches {
            for set in sets(c.scope) {
                caches.push(CacheDomain {
                    level: c.level,
                    kind: CacheKind::Unified,
                    size_kib: c.size_kib,
                    cpus: set,
                });
            }
        }
        let numa_nodes = sets(numa_scope)
            .into_iter()
            .enumerate()
            .map(|(id, cpus)| NumaNode {
                id: id as u32,
                cpus,
            })
            .collect();
        let idle_states = p
            .idle_states
            .iter()
            .map(|s| IdleState {
                name: s.name.clone(),
                exit_latency_us: s.exit_latency_us,
                target_residency_us: s.target_residency_us,
            })
            .collect();
        let topology = Topology {
            cpus,
            caches,
            numa_nodes,
            freq_domains,
            voltage_domains,
            idle_states,
            calibration: spec.calibration.clone(),
        };
        topology.validate().map_err(|e| bad(e.to_string()))?;
        if let Some(partition) = &topology.calibration.partition {
            partition
                .validate(&topology)
                .map_err(|e| bad(format!("calibration: {e}")))?;
        }

        let llc_spec = spec
            .caches
            .iter()
            .max_by_key(|c| c.level)
            .ok_or_else(|| bad("no caches".into()))?;
        let llc_of: Vec<usize> = (0..n).map(|i| group(llc_spec.scope, i)).collect();
        let llc = sets(llc_spec.scope)
            .into_iter()
            .map(|s| {
                (
                    llc_spec.size_kib as f64,
                    s.iter().map(|c| c.0 as usize).collect(),
                )
            })
            .collect();
        let mem_of: Vec<usize> = (0..n).map(|i| group(m.domain, i)).collect();
        let mem_domains = count(m.domain);
        // Balancing hierarchy: at each level a domain (CPUs of one outer
        // scope) is split into groups (its inner-scope parts); levels run
        // from SMT siblings up to the whole machine, skipping trivial ones.
        let mut scopes = vec![
            Scope::Core,
            llc_spec.scope,
            Scope::Die,
            Scope::Package,
            Scope::Machine,
        ];
        scopes.dedup();
        let mut sched_levels = Vec::new();
        let cpus_of = |s: &CpuSet| -> Vec<CpuIdx> { s.iter().map(|c| c.0 as usize).collect() };
        let mut inner: Vec<CpuSet> = (0..n).map(|i| CpuSet::single(CpuId(i as u32))).collect();
        for scope in scopes {
            let outer = sets(scope);
            let level: Vec<SchedDomain> = outer
                .iter()
                .map(|o| SchedDomain {
                    groups: inner
                        .iter()
                        .filter(|g| g.is_subset(o))
                        .map(cpus_of)
                        .collect(),
                })
                .filter(|d| d.groups.len() > 1)
                .collect();
            if !level.is_empty() {
                sched_levels.push(level);
            }
            inner = outer;
        }
        let mut core_cpus = vec![Vec::new(); count(Scope::Core)];
        for i in 0..n {
            core_cpus[layout.core[i]].push(i);
        }
        Ok(Machine {
            package_of: (0..n).map(|i| group(Scope::Package, i)).collect(),
            core_of: (0..n).map(|i| group(Scope::Core, i)).collect(),
            core_cpus,
            type_of: layout.kind.clone(),
            core_types: layout.types.clone(),
            domain_of: (0..n).map(|i| group(f.domain, i)).collect(),
            spec,
            topology,
            llc_of,
            llc,
            mem_of,
            mem_domains,
            sched_levels,
        })
    }
}

fn rank(s: Scope) -> u8 {
    match s {
        Scope::Core => 0,
        Scope::Die => 1,
        Scope::Package => 2,
        Scope::Machine => 3,
    }
}
