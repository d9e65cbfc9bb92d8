//! Turning benchmark measurements into activity-vector calibration (Merkel,
//! Stoess and Bellosa, EuroSys'10, §4.1): one derivation for every place that
//! measures, the simulator (`ecosched-engine`) and a live Linux machine
//! (`ecosched-linux`), so both store the same figures for the same counters.
//!
//! The paper calibrates translation vectors "by running a set of
//! representative benchmarks at each processor frequency while
//! simultaneously monitoring resource utilization". From the counters of
//! those runs (instructions, cycles, LLC references and misses, on-CPU
//! time):
//!
//! - peak memory-bus rate: LLC misses per second of on-CPU time of as many
//!   streaming instances as the machine has CPUs, at the highest P-state,
//!   summed (the bus saturated);
//! - peak cache rate: the architectural one the paper names for the Core 2
//!   (one L2 request per four cycles, §4.1), a constant of the hardware
//!   rather than something a benchmark could exceed;
//! - a benchmark's vector at P-state f: (LLC misses/s ÷ peak, LLC
//!   references per cycle ÷ peak, IPC capped at 1);
//! - translation vector at f: per component, the mean over the benchmarks
//!   that use it (component ≥ [`MIN_COMPONENT`] at both P-states) of its
//!   value at the highest P-state divided by its value at f; 1 where no
//!   benchmark uses the component.

use crate::calibration::{ActivityCalibration, TranslationVector};
use crate::sample::Counters;
use serde::Serialize;

/// Peak shared-cache requests per cycle (Merkel §4.1: one per four cycles).
pub const PEAK_CACHE_PER_CYCLE: f64 = 0.25;

/// A component smaller than this is not used for its translation factor
/// (a ratio of two near-zero rates is noise).
pub const MIN_COMPONENT: f64 = 0.01;

/// One benchmark run alone at one P-state.
#[derive(Debug, Clone)]
pub struct BenchRun {
    /// The benchmark (or built-in kernel).
    pub benchmark: String,
    /// The P-state it ran at, kHz.
    pub freq_khz: u64,
    /// What it counted.
    pub counters: Counters,
}

/// One benchmark's vector at one P-state.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    /// The benchmark.
    pub benchmark: String,
    /// The P-state, kHz.
    pub freq_khz: u64,
    /// (bus, cache, core) as sampled at that P-state.
    pub vector: [f64; 3],
}

/// The calibration and the measurements it came from.
#[derive(Debug, Clone, Serialize)]
pub struct AvCalibrationRun {
    /// The machine: a preset, a file, or the live machine's name.
    pub machine: String,
    /// Where the figures were measured (`simulated`, `this machine`).
    pub measured_on: String,
    /// The result.
    pub activity: ActivityCalibration,
    /// Every measurement.
    pub measured: Vec<Measured>,
}

/// Why the measurements give no calibration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AvCalibrationError {
    /// No run at any P-state.
    #[error("{machine}: no benchmark run at any P-state, so there is nothing to calibrate translation vectors from")]
    NoRuns {
        /// The machine.
        machine: String,
    },
    /// The peak runs counted no LLC misses.
    #[error("{machine}: the streaming runs counted no LLC misses, so the memory-bus peak cannot be measured")]
    NoBusPeak {
        /// The machine.
        machine: String,
    },
}

fn on_cpu_s(c: &Counters) -> Option<f64> {
    c.on_cpu_ns.filter(|&n| n > 0).map(|n| n as f64 * 1e-9)
}

/// The memory-bus peak: LLC misses per on-CPU second of concurrent
/// streaming runs, summed over them.
pub fn peak_mem_per_s(streams: &[Counters]) -> f64 {
    streams
        .iter()
        .filter_map(|c| Some(c.llc_misses? as f64 / on_cpu_s(c)?))
        .sum()
}

/// The same peak in memory transactions, when every streaming run
/// counted them.
pub fn peak_mem_transactions_per_s(streams: &[Counters]) -> Option<f64> {
    let rates: Option<Vec<f64>> = streams
        .iter()
        .map(|c| Some(c.mem_transactions? as f64 / on_cpu_s(c)?))
        .collect();
    rates
        .map(|r| r.iter().sum::<f64>())
        .filter(|p| p.is_finite() && *p > 0.0)
}

/// A run's activity vector before translation, given the bus peak.
pub fn vector_of(c: &Counters, peak_mem_per_s: f64) -> Option<[f64; 3]> {
    let cycles = c.cycles.filter(|&x| x > 0)? as f64;
    Some([
        c.llc_misses? as f64 / on_cpu_s(c)? / peak_mem_per_s,
        c.llc_references? as f64 / cycles / PEAK_CACHE_PER_CYCLE,
        (c.instructions? as f64 / cycles).min(1.0),
    ])
}

/// Derive the calibration of `machine` from the peak runs (streaming on
/// every CPU at the highest P-state) and one run per benchmark and
/// P-state.
pub fn derive(
    machine: &str,
    measured_on: &str,
    peak_runs: &[Counters],
    runs: &[BenchRun],
) -> Result<AvCalibrationRun, AvCalibrationError> {
    let mut freqs: Vec<u64> = runs.iter().map(|r| r.freq_khz).collect();
    freqs.sort_unstable();
    freqs.dedup();
    let Some(&fmax) = freqs.last() else {
        return Err(AvCalibrationError::NoRuns {
            machine: machine.to_string(),
        });
    };
    let peak = peak_mem_per_s(peak_runs);
    if peak.is_nan() || peak <= 0.0 {
        return Err(AvCalibrationError::NoBusPeak {
            machine: machine.to_string(),
        });
    }
    let measured: Vec<Measured> = runs
        .iter()
        .filter_map(|r| {
            Some(Measured {
                benchmark: r.benchmark.clone(),
                freq_khz: r.freq_khz,
                vector: vector_of(&r.counters, peak)?,
            })
        })
        .collect();
    let mut benchmarks: Vec<&str> = Vec::new();
    for m in &measured {
        if !benchmarks.contains(&m.benchmark.as_str()) {
            benchmarks.push(&m.benchmark);
        }
    }
    let at = |bench: &str, f: u64| {
        measured
            .iter()
            .find(|m| m.benchmark == bench && m.freq_khz == f)
            .map(|m| m.vector)
    };
    let translation = freqs
        .iter()
        .map(|&f| {
            let factor = |i: usize| {
                let ratios: Vec<f64> = benchmarks
                    .iter()
                    .filter_map(|b| {
                        let (hi, lo) = (at(b, fmax)?, at(b, f)?);
                        (hi[i] >= MIN_COMPONENT && lo[i] >= MIN_COMPONENT).then(|| hi[i] / lo[i])
                    })
                    .collect();
                if ratios.is_empty() {
                    1.0
                } else {
                    ratios.iter().sum::<f64>() / ratios.len() as f64
                }
            };
            TranslationVector {
                freq_khz: f,
                bus: round4(factor(0)),
                cache: round4(factor(1)),
                core: round4(factor(2)),
            }
        })
        .collect();
    Ok(AvCalibrationRun {
        machine: machine.to_string(),
        measured_on: measured_on.to_string(),
        activity: ActivityCalibration {
            peak_mem_per_s: peak.round(),
            peak_mem_transactions_per_s: peak_mem_transactions_per_s(peak_runs).map(f64::round),
            peak_cache_per_cycle: PEAK_CACHE_PER_CYCLE,
            translation,
        },
        measured,
    })
}

/// Four decimals: the stored figures are read by people and diffed.
fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn counters(
        instructions: u64,
        cycles: u64,
        refs: u64,
        misses: u64,
        on_cpu_ns: u64,
    ) -> Counters {
        Counters {
            instructions: Some(instructions),
            cycles: Some(cycles),
            llc_references: Some(refs),
            llc_misses: Some(misses),
            on_cpu_ns: Some(on_cpu_ns),
            ..Counters::default()
        }
    }

    fn run(b: &str, mhz: u64, c: Counters) -> BenchRun {
        BenchRun {
            benchmark: b.into(),
            freq_khz: mhz * 1000,
            counters: c,
        }
    }

    #[test]
    fn components_and_translation_follow_the_definitions() {
        // Two streams on a two-CPU machine: 1e8 misses/s each, peak 2e8/s.
        let peak = vec![counters(1, 1, 1, 100_000_000, 1_000_000_000); 2];
        let runs = [
            // Stream at 2 GHz: 1e8 misses/s (bus 0.5), 0.1 refs/cycle
            // (cache 0.4), IPC 0.5.
            run(
                "stream",
                2000,
                counters(1_000, 2_000, 200, 100_000_000, 1_000_000_000),
            ),
            // At 1 GHz: 0.5e8 misses/s (bus 0.25): factor 2.
            run(
                "stream",
                1000,
                counters(1_000, 1_250, 125, 50_000_000, 1_000_000_000),
            ),
            // Compute: no misses, IPC 0.8 at both: core factor from both
            // benchmarks is the mean of 0.625/0.8 … (stream 0.5/0.8) and 1.
            run("compute", 2000, counters(800, 1_000, 0, 0, 1_000_000_000)),
            run("compute", 1000, counters(800, 1_000, 0, 0, 1_000_000_000)),
        ];
        let r = derive("m", "test", &peak, &runs).unwrap();
        assert_eq!(r.activity.peak_mem_per_s, 2e8);
        let hi = r.activity.translation_at(2_000_000).unwrap();
        assert_eq!((hi.bus, hi.cache, hi.core), (1.0, 1.0, 1.0));
        let lo = r.activity.translation_at(1_000_000).unwrap();
        assert_eq!(lo.bus, 2.0);
        // Stream cache: 0.4 at 2 GHz, 0.4 at 1 GHz → 1.
        assert_eq!(lo.cache, 1.0);
        // Core: stream 0.5 / 0.8 = 0.625, compute 0.8 / 0.8 = 1 → mean.
        assert_eq!(lo.core, round4((0.625 + 1.0) / 2.0));
        assert_eq!(r.measured.len(), 4);
    }

    #[test]
    fn no_runs_or_no_misses_are_refused_by_name() {
        assert!(matches!(
            derive("m", "t", &[], &[]),
            Err(AvCalibrationError::NoRuns { .. })
        ));
        let runs = [run("s", 1000, counters(1, 1, 1, 0, 1))];
        let err = derive("m", "t", &[counters(1, 1, 1, 0, 1)], &runs).unwrap_err();
        assert!(err.to_string().contains("no LLC misses"), "{err}");
    }
}
