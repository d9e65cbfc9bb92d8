//! Simulator speed: simulated seconds per wall second on the built-in
//! `bench-8c24t` scenario (8 cores, 24 tasks, 1 ms tick). Shared by
//! `ecosched bench sim` and the criterion benchmark so both measure the
//! same thing.

use crate::engine::EngineError;
use crate::experiment::simulate;
use ecosched_policy::Params;
use ecosched_sim::Scenario;
use serde::Serialize;
use std::time::Instant;

/// The scenario the benchmark runs.
pub const BENCH_SCENARIO: &str = "bench-8c24t";
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
}

/// Run the benchmark scenario once and time it.
pub fn bench_sim() -> Result<BenchReport, EngineError> {
    let scenario = Scenario::load(BENCH_SCENARIO)?;
    let start = Instant::now();
    let run = simulate(
        &scenario,
        BENCH_POLICY,
        &Params::default(),
        None,
        &mut |_| {},
    )?;
    let wall_s = start.elapsed().as_secs_f64();
    Ok(BenchReport {
        scenario: BENCH_SCENARIO.to_string(),
        simulated_s: run.metrics.duration_s,
        wall_s,
        realtime_factor: run.metrics.duration_s / wall_s.max(1e-9),
        tick_ms: scenario.spec.tick_ms,
    })
}
