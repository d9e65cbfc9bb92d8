//! The largest inputs a simulation accepts, so that no accepted scenario
//! or machine file can make it run (or grow) without bound. The simulator
//! advances from event to event: its cost grows with the simulated time,
//! the number of task runs and how often threads wake, so each of those is
//! bounded where it is written, and a scenario without `duration_s` must
//! finish its work within [`MAX_SIMULATED_S`]. The values are documented in
//! `docs/researchers/scenario-files.md` and `machine-files.md`.

/// Longest simulated time, s: a `duration_s`, an arrival, and one run of a
/// task in a scenario without `duration_s` (one simulated day; the longest
/// built-in runs 6,000 s).
pub const MAX_SIMULATED_S: f64 = 86_400.0;

/// Most work of a scenario without `duration_s`, CPU-seconds at the highest
/// frequency, summed over every run (the built-ins without `duration_s`
/// hold at most 3,700; a full 384-CPU preset busy for a day holds 3.3e7).
pub const MAX_WORK_S: f64 = 1e7;

/// Most runs of one task line (`count × completions`; the built-ins use at
/// most 4,000).
pub const MAX_RUNS: u64 = 1_000_000;

/// Most completions of one instance.
pub const MAX_COMPLETIONS: u32 = 100_000;

/// Longest compile or link job, ms (an hour; real ones take "fractions of
/// a second").
pub const MAX_JOB_MS: f64 = 3_600_000.0;

/// Longest `make` work per job, ms.
pub const MAX_MAKE_MS: f64 = 60_000.0;

/// Shortest assembler burst and transient run, ms (10 µs: a thread waking
/// more often would cost the simulator more than the machine it models).
pub const MIN_BURST_MS: f64 = 0.01;

/// Shortest transient wake-up period, ms.
pub const MIN_PERIOD_MS: f64 = 1.0;

/// Instructions per second a task given in instructions is assumed to run
/// at when its work is added up: slower than any modelled CPU, so the
/// estimate of how long it runs errs long.
pub const MIN_INSTRUCTIONS_PER_S: f64 = 1e8;

/// Most CPUs of a machine (the kernel's largest `CONFIG_NR_CPUS` on x86 is
/// 8192; the largest preset has 384).
pub const MAX_CPUS: u64 = 8192;

/// A dotted key and what is wrong with it.
pub type Refusal = (String, String);

fn refuse(key: &str, message: String) -> Result<(), Refusal> {
    Err((key.to_string(), message))
}

/// What of a `[jobgraph]` its bounds concern, ms.
#[derive(Debug, Clone, Copy)]
pub struct JobTimes {
    /// The longest compile job.
    pub work_max_ms: f64,
    /// The longest link job.
    pub link_max_ms: f64,
    /// `make`'s work per job.
    pub make_ms: f64,
    /// The assembler's share of a CPU (0: none).
    pub helper_share: f64,
    /// One assembler burst.
    pub helper_burst_ms: f64,
}

/// The `[jobgraph]` keys' bounds (after `JobGraphSpec::check`'s own).
pub fn check_jobgraph(g: JobTimes) -> Result<(), Refusal> {
    for (key, max) in [("work_ms", g.work_max_ms), ("link_ms", g.link_max_ms)] {
        if max > MAX_JOB_MS {
            return refuse(
                key,
                format!("{max:e} ms per job is more than the {MAX_JOB_MS:e} ms allowed"),
            );
        }
    }
    if g.make_ms > MAX_MAKE_MS {
        return refuse(
            "make_ms",
            format!(
                "{:e} ms is more than the {MAX_MAKE_MS:e} ms allowed",
                g.make_ms
            ),
        );
    }
    if g.helper_share > 0.0 && g.helper_burst_ms < MIN_BURST_MS {
        return refuse(
            "helper_burst_ms",
            format!(
                "{:e} ms is shorter than the {MIN_BURST_MS} ms allowed",
                g.helper_burst_ms
            ),
        );
    }
    Ok(())
}

/// What of a `[[tasks]]` line its bounds concern.
#[derive(Debug, Clone, Copy)]
pub struct TaskLoad {
    /// Instances.
    pub count: u32,
    /// Completions of each.
    pub completions: u32,
    /// One run's length in seconds, when given so.
    pub length_s: Option<f64>,
    /// One run's length in instructions, when given so.
    pub instructions: Option<f64>,
    /// Arrival of the first instance, s.
    pub start_s: f64,
    /// Delay between instances' arrivals, s.
    pub stagger_s: f64,
}

/// The bounds of the scenario as a whole: per-task runs, wake-up rates,
/// and the simulated time it can take. `transients` is their `(period_ms,
/// run_ms)`, `jobgraph_work_s` the serial work of a `[jobgraph]`.
pub fn check_scenario(
    duration_s: Option<f64>,
    tasks: &[TaskLoad],
    transients: Option<(f64, f64)>,
    jobgraph_work_s: Option<f64>,
) -> Result<(), Refusal> {
    if let Some(d) = duration_s {
        if d > MAX_SIMULATED_S {
            return refuse(
                "duration_s",
                format!("{d:e} s is more than the {MAX_SIMULATED_S:e} s a simulation may run"),
            );
        }
    }
    let mut work_s = 0.0;
    for (i, t) in tasks.iter().enumerate() {
        let key = |k: &str| format!("tasks[{i}].{k}");
        if t.completions > MAX_COMPLETIONS {
            return refuse(
                &key("completions"),
                format!(
                    "{} is more than the {MAX_COMPLETIONS} allowed",
                    t.completions
                ),
            );
        }
        let runs = u64::from(t.count) * u64::from(t.completions);
        if runs > MAX_RUNS {
            return refuse(
                &key("completions"),
                format!("count × completions = {runs} runs is more than the {MAX_RUNS} allowed"),
            );
        }
        let (length_key, run_s) = match (t.length_s, t.instructions) {
            (Some(s), _) => ("length_s", s),
            (None, Some(n)) => ("instructions", n / MIN_INSTRUCTIONS_PER_S),
            (None, None) => continue,
        };
        if duration_s.is_none() && run_s > MAX_SIMULATED_S {
            return refuse(
                &key(length_key),
                format!(
                    "one run takes about {run_s:e} s, more than the {MAX_SIMULATED_S:e} s a simulation may run (set duration_s to simulate part of it)"
                ),
            );
        }
        work_s += runs as f64 * run_s;
        let last_arrival = t.start_s + t.stagger_s * f64::from(t.count.saturating_sub(1));
        if last_arrival > MAX_SIMULATED_S {
            let k = if t.stagger_s > 0.0 {
                "stagger_s"
            } else {
                "start_s"
            };
            return refuse(
                &key(k),
                format!("the last instance arrives at {last_arrival:e} s, later than the {MAX_SIMULATED_S:e} s a simulation may run"),
            );
        }
    }
    if let Some((period_ms, run_ms)) = transients {
        if period_ms < MIN_PERIOD_MS || run_ms < MIN_BURST_MS {
            return refuse(
                "transients",
                format!(
                    "period_ms must be at least {MIN_PERIOD_MS} and run_ms at least {MIN_BURST_MS}"
                ),
            );
        }
    }
    let mut horizon_key = "tasks";
    if let Some(w) = jobgraph_work_s {
        work_s += w;
        horizon_key = "jobgraph";
    }
    if duration_s.is_none() && work_s > MAX_WORK_S {
        return refuse(
            horizon_key,
            format!(
                "the workload holds about {work_s:e} CPU-seconds of work, more than the {MAX_WORK_S:e} allowed without duration_s (set duration_s to simulate part of it)"
            ),
        );
    }
    Ok(())
}

/// A machine's CPU count, refused past [`MAX_CPUS`] (the product is taken
/// in 64 bits, so four large counts cannot overflow it).
pub fn check_cpus(
    packages: u32,
    dies_per_package: u32,
    cores_per_die: u32,
    threads_per_core: u32,
) -> Result<(), String> {
    let cpus = u64::from(packages)
        * u64::from(dies_per_package)
        * u64::from(cores_per_die)
        * u64::from(threads_per_core);
    if cpus > MAX_CPUS {
        return Err(format!(
            "packages × dies_per_package × cores_per_die × threads_per_core = {cpus} CPUs, more than the {MAX_CPUS} allowed"
        ));
    }
    Ok(())
}
