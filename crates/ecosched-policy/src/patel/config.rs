//! Parameters of Patel's schedulers: every threshold of the thesis is a
//! named, overridable parameter (POLICIES.md §5), with the thesis's value
//! as its default and the section it comes from.

use crate::params::{ParamSpec, Params};
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

macro_rules! common_params {
    ($($extra:expr),* $(,)?) => {
        &[
            ParamSpec { key: "partition", help: "cpusets as COUNT@MHz,… (default: the machine's calibration, else derived from its P-states: sizes inversely proportional to frequency)" },
            ParamSpec { key: "confine_only", help: "true: only confine processes to the cpusets, set no frequency (for machines without cpufreq; default false: refuse there)" },
            ParamSpec { key: "ipc_threshold", help: "performance index: IPC below this (default 1.7, §5.2 step 4)" },
            ParamSpec { key: "wait_threshold", help: "performance index: fraction_wait above this (default 0.5, §5.2 step 4)" },
            ParamSpec { key: "perf_rule", help: "or | and: how the two performance-index tests combine (default or, resolution A1)" },
            ParamSpec { key: "intensity_threshold", help: "CPU-intensive above this mean CPU utilisation, 0–1 (default 0.5, §5.2 step 5a)" },
            ParamSpec { key: "window_fraction", help: "decision window as a fraction of the process's elapsed run time (default 0.2, A4)" },
            ParamSpec { key: "window_min_s", help: "shortest decision window, s; also the policy's period (default 0.5, A4)" },
            ParamSpec { key: "window_max_s", help: "longest decision window, s (default 10, A4)" },
            $($extra,)*
        ]
    };
}

macro_rules! priority_params {
    ($($extra:expr),* $(,)?) => {
        common_params![
            ParamSpec { key: "nice_up_max", help: "up-move of a CPU-intensive process needs nice below this (default 9, §6.2)" },
            ParamSpec { key: "nice_down_split", help: "down-move needs load > CPUs when nice is above this, load > heavy_load_factor·CPUs otherwise (default −1, §6.2)" },
            ParamSpec { key: "heavy_load_factor", help: "see nice_down_split (default 2)" },
            ParamSpec { key: "nice_up_noncpu", help: "up-move of a non-CPU-intensive process: nice ≤ this and load ≤ CPUs, or nice above it and load < light_load_factor·CPUs (default −11, §6.2)" },
            ParamSpec { key: "light_load_factor", help: "see nice_up_noncpu (default 0.15)" },
            ParamSpec { key: "wait_move_fraction", help: "a waiting process moves when fraction_wait exceeds this (default 0.9, §6.2)" },
            ParamSpec { key: "wait_move_nice_fraction", help: "… or reaches this with nice below wait_move_nice (default 0.7, §6.2)" },
            ParamSpec { key: "wait_move_nice", help: "see wait_move_nice_fraction (default −1)" },
            $($extra,)*
        ]
    };
}

/// Parameters of `patel1`.
pub const PATEL1_PARAMS: &[ParamSpec] = common_params![];
/// Parameters of `patel2`.
pub const PATEL2_PARAMS: &[ParamSpec] = priority_params![];
/// Parameters of `patel3`.
pub const PATEL3_PARAMS: &[ParamSpec] = priority_params![ParamSpec {
    key: "cache_miss_threshold",
    help: "no up-move while cache misses / references exceed this (default 0.0014, §7.1 step 7)",
}];
/// Parameters of `patel4`.
pub const PATEL4_PARAMS: &[ParamSpec] = priority_params![ParamSpec {
    key: "cs_mig_threshold",
    help: "no up-move while ½·switches + ½·migrations per CPU second exceed this (default 17.0, §8.1 step 7)",
}];

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

impl Algorithm {
    /// The parameters it accepts.
    pub fn params(self) -> &'static [ParamSpec] {
        match self {
            Algorithm::CpuScheduler => PATEL1_PARAMS,
            Algorithm::Priority => PATEL2_PARAMS,
            Algorithm::CacheMiss => PATEL3_PARAMS,
            Algorithm::ContextSwitch => PATEL4_PARAMS,
        }
    }
}

impl PatelConfig {
    /// The thesis's defaults for `algorithm`.
    pub fn defaults(algorithm: Algorithm) -> Self {
        PatelConfig {
            algorithm,
            partition: None,
            confine_only: false,
            ipc_threshold: 1.7,
            wait_threshold: 0.5,
            perf_and: false,
            intensity_threshold: 0.5,
            window_fraction: 0.2,
            window_min_s: 0.5,
            window_max_s: 10.0,
            nice_up_max: 9,
            nice_down_split: -1,
            heavy_load_factor: 2.0,
            nice_up_noncpu: -11,
            light_load_factor: 0.15,
            wait_move_fraction: 0.9,
            wait_move_nice_fraction: 0.7,
            wait_move_nice: -1,
            cache_miss_threshold: 0.0014,
            cs_mig_threshold: 17.0,
        }
    }

    /// Read `params` over the defaults, refusing unknown keys and values
    /// out of range with the key named.
    pub fn from_params(
        name: &str,
        algorithm: Algorithm,
        params: &Params,
    ) -> Result<Self, PolicyError> {
        params.check_keys(name, algorithm.params())?;
        let mut c = PatelConfig::defaults(algorithm);
        let bad = |key: &str, value: String, reason: &str| PolicyError::BadParam {
            key: key.into(),
            value,
            reason: reason.into(),
        };
        if let Some(text) = params.get::<String>("partition")? {
            c.partition = Some(
                text.parse::<Partition>()
                    .map_err(|e| bad("partition", text.clone(), &e.to_string()))?,
            );
        }
        c.confine_only = params.get::<bool>("confine_only")?.unwrap_or(false);
        let positive = |key: &str, default: f64| -> Result<f64, PolicyError> {
            let v = params.get::<f64>(key)?.unwrap_or(default);
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(bad(key, v.to_string(), "must be a positive number"))
            }
        };
        let fraction = |key: &str, default: f64| -> Result<f64, PolicyError> {
            let v = params.get::<f64>(key)?.unwrap_or(default);
            if (0.0..=1.0).contains(&v) {
                Ok(v)
            } else {
                Err(bad(key, v.to_string(), "must be between 0 and 1"))
            }
        };
        let nice = |key: &str, default: i32| -> Result<i32, PolicyError> {
            let v = params.get::<i32>(key)?.unwrap_or(default);
            if (-20..=20).contains(&v) {
                Ok(v)
            } else {
                Err(bad(key, v.to_string(), "must be a nice value, −20..20"))
            }
        };
        c.ipc_threshold = positive("ipc_threshold", c.ipc_threshold)?;
        c.wait_threshold = fraction("wait_threshold", c.wait_threshold)?;
        c.perf_and = match params.get::<String>("perf_rule")?.as_deref() {
            None | Some("or") => false,
            Some("and") => true,
            Some(other) => return Err(bad("perf_rule", other.into(), "must be `or` or `and`")),
        };
        c.intensity_threshold = fraction("intensity_threshold", c.intensity_threshold)?;
        c.window_fraction = positive("window_fraction", c.window_fraction)?;
        c.window_min_s = positive("window_min_s", c.window_min_s)?;
        c.window_max_s = positive("window_max_s", c.window_max_s)?;
        if c.window_min_s < 0.01 || c.window_max_s < c.window_min_s {
            return Err(bad(
                "window_max_s",
                c.window_max_s.to_string(),
                &format!(
                    "the window must satisfy 0.01 ≤ window_min_s ({}) ≤ window_max_s",
                    c.window_min_s
                ),
            ));
        }
        if algorithm >= Algorithm::Priority {
            c.nice_up_max = nice("nice_up_max", c.nice_up_max)?;
            c.nice_down_split = nice("nice_down_split", c.nice_down_split)?;
            c.heavy_load_factor = positive("heavy_load_factor", c.heavy_load_factor)?;
            c.nice_up_noncpu = nice("nice_up_noncpu", c.nice_up_noncpu)?;
            c.light_load_factor = positive("light_load_factor", c.light_load_factor)?;
            c.wait_move_fraction = fraction("wait_move_fraction", c.wait_move_fraction)?;
            c.wait_move_nice_fraction =
                fraction("wait_move_nice_fraction", c.wait_move_nice_fraction)?;
            c.wait_move_nice = nice("wait_move_nice", c.wait_move_nice)?;
        }
        if algorithm == Algorithm::CacheMiss {
            c.cache_miss_threshold = fraction("cache_miss_threshold", c.cache_miss_threshold)?;
        }
        if algorithm == Algorithm::ContextSwitch {
            c.cs_mig_threshold = positive("cs_mig_threshold", c.cs_mig_threshold)?;
        }
        Ok(c)
    }
}
