//! Simulator speed: simulated seconds per wall second on a built-in
//! scenario — `bench-8c24t` (8 cores, 24 tasks, 1 ms tick) by default,
//! `bench-64c512t` (64 cores, 512 tasks) and `bench-192c1000t` (2 x EPYC
//! 9654, 384 CPUs, 1,000 tasks) for large machines — with the
//! simulator's own work counters (events, contention solves, memo hit
//! rate) so a slowdown can be traced to its cause. Shared by
//! `ecosched bench sim` and the criterion benchmark so both measure the
//! same thing. Also PAM's decision time (`ecosched bench pam`), on the
//! same synthetic instance as the policy crate's criterion benchmark.

use crate::EngineError;
use ecosched_control::run;
use ecosched_model::trace::NullSink;
use ecosched_policy::pam::{bench_decide, bench_instance, BENCH_SEED};
use ecosched_policy::{build, Params, PolicyError};
use ecosched_sim::{Scenario, SimPlatform};
use serde::Serialize;
use std::time::Instant;

/// The scenario the benchmark runs by default.
pub const BENCH_SCENARIO: &str = "bench-8c24t";
/// The large-machine scenario.
pub const BENCH_SCENARIO_LARGE: &str = "bench-64c512t";
/// The policy it runs under (exercises the governor model as well).
pub const BENCH_POLICY: &str = "ondemand";

/// `ecosched bench sim --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    /// Scenario.
    pub scenario: String,
    /// Simulated seconds.
    pub simulated_s: f64,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// simulated_s / wall_s.
    pub realtime_factor: f64,
    /// Scheduler tick, ms.
    pub tick_ms: f64,
    /// Events the simulator handled (spans integrated).
    pub events: u64,
    /// Contention solves computed (memo misses).
    pub solves: u64,
    /// Share of contention look-ups answered by the memo.
    pub memo_hit_rate: f64,
    /// Cache warm-ups begun (moves across last-level caches, first runs).
    pub cold_starts: u64,
}

/// Run a benchmark scenario (`bench-8c24t`, `bench-64c512t`,
/// `bench-192c1000t` or any other)
/// once under [`BENCH_POLICY`] and time it, engine and trace included.
pub fn bench_sim(scenario: &str) -> Result<BenchReport, EngineError> {
    let scenario = Scenario::load(scenario)?;
    let mut policy = build(BENCH_POLICY, &Params::default())?;
    let start = Instant::now();
    let mut platform = SimPlatform::new(&scenario, scenario.spec.seed)?;
    run(
        &mut platform,
        policy.as_mut(),
        &scenario.spec.name,
        Some(scenario.spec.seed),
        &mut NullSink,
        &mut |_| {},
    )?;
    let wall_s = start.elapsed().as_secs_f64();
    let stats = platform.stats();
    let simulated_s = platform.now_s();
    Ok(BenchReport {
        scenario: scenario.spec.name.clone(),
        simulated_s,
        wall_s,
        realtime_factor: simulated_s / wall_s.max(1e-9),
        tick_ms: scenario.spec.tick_ms,
        events: stats.spans,
        solves: stats.solves,
        memo_hit_rate: stats.memo_hit_rate(),
        cold_starts: stats.cold_starts,
    })
}

/// `ecosched bench pam --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PamBenchReport {
    /// CPUs of the synthetic machine (two-CPU caches, every CPU busy).
    pub cpus: usize,
    /// Which search ran: `exhaustive` or `local`.
    pub search: String,
    /// The decision budget, ms of modelled time (`search_budget_ms`).
    pub budget_ms: f64,
    /// Mean wall time of one Algorithm 2 call, ms.
    pub decision_ms: f64,
    /// The search's own estimate of its time, ms (the budget's work
    /// model): compare with `decision_ms` to see how far the model is from
    /// this machine.
    pub modelled_ms: f64,
    /// Whether the search stopped at the budget before it was complete.
    pub stopped_early: bool,
    /// Predicted system speedup (eq. 1) of the assignment chosen.
    pub speedup: f64,
}

/// Largest machine `bench pam` accepts: the synthetic instance is built in
/// memory, and past this a single decision takes seconds.
pub const BENCH_PAM_MAX_CPUS: usize = 4096;
/// Wall time over which decisions are repeated and averaged.
const BENCH_PAM_BUDGET_S: f64 = 0.5;

/// Time PAM's decision (one Algorithm 2 call, default search settings but
/// for `budget_ms` when given) on a synthetic machine of `cpus` CPUs.
pub fn bench_pam(cpus: usize, budget_ms: Option<f64>) -> Result<PamBenchReport, EngineError> {
    if cpus == 0 || cpus > BENCH_PAM_MAX_CPUS {
        return Err(EngineError::from(PolicyError::BadParam {
            key: "cpus".into(),
            value: cpus.to_string(),
            reason: format!("must lie between 1 and {BENCH_PAM_MAX_CPUS}"),
        }));
    }
    let mut config = ecosched_policy::pam::PamConfig::default().search;
    if let Some(ms) = budget_ms {
        if !(ms.is_finite() && ms > 0.0) {
            return Err(EngineError::from(PolicyError::BadParam {
                key: "budget-ms".into(),
                value: ms.to_string(),
                reason: "must be a positive number of milliseconds".into(),
            }));
        }
        config.budget_ms = ms;
    }
    let (layout, slots, current) = bench_instance(cpus, BENCH_SEED);
    // One untimed call warms caches and tells what the search does.
    let decision = bench_decide(&layout, &slots, &current, &config);
    let start = Instant::now();
    let mut runs = 0u32;
    while runs < 3 || (start.elapsed().as_secs_f64() < BENCH_PAM_BUDGET_S && runs < 10_000) {
        bench_decide(&layout, &slots, &current, &config);
        runs += 1;
    }
    Ok(PamBenchReport {
        cpus: layout.cpus(),
        search: decision.kind.name().to_string(),
        budget_ms: config.budget_ms,
        decision_ms: start.elapsed().as_secs_f64() * 1e3 / f64::from(runs),
        modelled_ms: decision.work_ms,
        stopped_early: decision.stopped_early,
        speedup: decision.speedup,
    })
}
