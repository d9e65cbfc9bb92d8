//! Parameters of Patel's schedulers: every threshold of the thesis is a
//! named, overridable parameter, with the thesis's value as its default
//! and the section it comes from (or the resolution of
//! `docs/design/papers.md` it follows).

use crate::PolicyError;
use ecosched_model::calibration::Partition;

/// Which of the four algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Algorithm {
    /// Algorithm 1, *CPU Scheduler* (§5): no priorities.
    CpuScheduler,
    /// Algorithm 2, *Priority CPU Scheduler* (§6): nice-value guards.
    Priority,
    /// Algorithm 3, *Cache Miss Priority CPU Scheduler* (§7).
    CacheMiss,
    /// Algorithm 4, *Context Switch Priority CPU Scheduler* (§8).
    ContextSwitch,
}

crate::typed_params! {
    /// Parameters of Patel's four schedulers. `patel1` takes the first
    /// nine; `patel2`–`patel4` add the priority guards; `patel3` and
    /// `patel4` each add their veto threshold.
    pub struct PatelParams {
        /// Cpusets as COUNT@MHz,….
        partition: Option<String> = text("COUNT@MHz,…").unset("the machine's calibration, else on a hybrid machine its core types by capacity, else derived from its P-states: sizes inversely proportional to frequency"),
        /// Only confine processes to the cpusets, set no frequency (for
        /// machines without cpufreq, which are refused otherwise).
        confine_only: bool = flag().default("false"),
        /// Performance index: IPC below this.
        ipc_threshold: f64 = real().above(0.0).default("1.7").source("§5.2 step 4"),
        /// Performance index: fraction_wait above this.
        wait_threshold: f64 = real().at_least(0.0).at_most(1.0).default("0.5").source("§5.2 step 4"),
        /// How the two performance-index tests combine.
        perf_rule: String = choice(&["or", "and"]).default("or").source("resolution A1"),
        /// CPU-intensive above this mean CPU utilisation, 0–1.
        intensity_threshold: f64 = real().at_least(0.0).at_most(1.0).default("0.5").source("§5.2 step 5a"),
        /// Decision window as a fraction of the process's elapsed run time.
        window_fraction: f64 = real().above(0.0).default("0.2").source("resolution A4"),
        /// Shortest decision window, s (at least 0.01); also the policy's period.
        window_min_s: f64 = real().above(0.0).default("0.5").source("resolution A4"),
        /// Longest decision window, s (at least window_min_s).
        window_max_s: f64 = real().above(0.0).default("10").source("resolution A4"),
        /// Up-move of a CPU-intensive process needs nice below this.
        nice_up_max: i32 = int(-20, 20).default("9").source("§6.2"),
        /// Down-move needs load > CPUs when nice is above this, load >
        /// heavy_load_factor·CPUs otherwise.
        nice_down_split: i32 = int(-20, 20).default("-1").source("§6.2"),
        /// See nice_down_split.
        heavy_load_factor: f64 = real().above(0.0).default("2").source("§6.2"),
        /// Up-move of a non-CPU-intensive process: nice ≤ this and load ≤
        /// CPUs, or nice above it and load < light_load_factor·CPUs.
        nice_up_noncpu: i32 = int(-20, 20).default("-11").source("§6.2"),
        /// See nice_up_noncpu.
        light_load_factor: f64 = real().above(0.0).default("0.15").source("§6.2"),
        /// A waiting process moves when fraction_wait exceeds this.
        wait_move_fraction: f64 = real().at_least(0.0).at_most(1.0).default("0.9").source("§6.2"),
        /// … or reaches this with nice below wait_move_nice.
        wait_move_nice_fraction: f64 = real().at_least(0.0).at_most(1.0).default("0.7").source("§6.2"),
        /// See wait_move_nice_fraction.
        wait_move_nice: i32 = int(-20, 20).default("-1").source("§6.2"),
        /// Algorithm 3: no up-move while cache misses / references exceed this.
        cache_miss_threshold: f64 = real().at_least(0.0).at_most(1.0).default("0.0014").source("§7.1 step 7"),
        /// Algorithm 4: no up-move while ½·switches + ½·migrations per CPU
        /// second exceed this.
        cs_mig_threshold: f64 = real().above(0.0).default("17.0").source("§8.1 step 7"),
    }
}

/// Settings of one scheduler.
#[derive(Debug, Clone, PartialEq)]
pub struct PatelConfig {
    /// Which algorithm.
    pub algorithm: Algorithm,
    /// The partition given by `--param partition`, if any.
    pub partition: Option<Partition>,
    /// Confine only, set no frequencies.
    pub confine_only: bool,
    /// IPC threshold of the performance index.
    pub ipc_threshold: f64,
    /// fraction_wait threshold of the performance index.
    pub wait_threshold: f64,
    /// Whether the performance index needs both tests (A1: default or).
    pub perf_and: bool,
    /// CPU-intensity threshold, 0–1.
    pub intensity_threshold: f64,
    /// Window as a fraction of elapsed run time.
    pub window_fraction: f64,
    /// Shortest window, s.
    pub window_min_s: f64,
    /// Longest window, s.
    pub window_max_s: f64,
    /// Algorithm 2: nice bound of a CPU-intensive up-move.
    pub nice_up_max: i32,
    /// Algorithm 2: nice split of the down-move rule.
    pub nice_down_split: i32,
    /// Algorithm 2: load factor of the down-move rule for low nice values.
    pub heavy_load_factor: f64,
    /// Algorithm 2: nice split of the non-CPU-intensive up-move rule.
    pub nice_up_noncpu: i32,
    /// Algorithm 2: light-load factor of that rule.
    pub light_load_factor: f64,
    /// Algorithm 2: fraction_wait above which a waiting process moves.
    pub wait_move_fraction: f64,
    /// Algorithm 2: … or at which it moves with a low nice value.
    pub wait_move_nice_fraction: f64,
    /// Algorithm 2: that nice value bound.
    pub wait_move_nice: i32,
    /// Algorithm 3: cache miss / reference threshold.
    pub cache_miss_threshold: f64,
    /// Algorithm 4: context-switch/migration index threshold.
    pub cs_mig_threshold: f64,
}

impl PatelConfig {
    /// The settings of `algorithm` from checked parameters.
    pub fn new(algorithm: Algorithm, p: PatelParams) -> Result<Self, PolicyError> {
        let partition = match p.partition {
            Some(text) => Some(
                text.parse::<Partition>()
                    .map_err(|e| PolicyError::BadParam {
                        key: "partition".into(),
                        value: text.clone(),
                        reason: e.to_string(),
                    })?,
            ),
            None => None,
        };
        if p.window_min_s < 0.01 || p.window_max_s < p.window_min_s {
            return Err(PolicyError::BadParam {
                key: "window_max_s".into(),
                value: p.window_max_s.to_string(),
                reason: format!(
                    "the window must satisfy 0.01 ≤ window_min_s ({}) ≤ window_max_s",
                    p.window_min_s
                ),
            });
        }
        Ok(PatelConfig {
            algorithm,
            partition,
            confine_only: p.confine_only,
            ipc_threshold: p.ipc_threshold,
            wait_threshold: p.wait_threshold,
            perf_and: p.perf_rule == "and",
            intensity_threshold: p.intensity_threshold,
            window_fraction: p.window_fraction,
            window_min_s: p.window_min_s,
            window_max_s: p.window_max_s,
            nice_up_max: p.nice_up_max,
            nice_down_split: p.nice_down_split,
            heavy_load_factor: p.heavy_load_factor,
            nice_up_noncpu: p.nice_up_noncpu,
            light_load_factor: p.light_load_factor,
            wait_move_fraction: p.wait_move_fraction,
            wait_move_nice_fraction: p.wait_move_nice_fraction,
            wait_move_nice: p.wait_move_nice,
            cache_miss_threshold: p.cache_miss_threshold,
            cs_mig_threshold: p.cs_mig_threshold,
        })
    }
}
