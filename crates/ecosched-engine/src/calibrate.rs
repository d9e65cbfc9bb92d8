//! `ecosched calibrate av --machine M`: activity-vector calibration of a
//! simulated machine (Merkel et al. §4.1, seed 004).
//!
//! The paper calibrates translation vectors "by running a set of
//! representative benchmarks at each processor frequency while
//! simultaneously monitoring resource utilization". Here each benchmark
//! runs alone in the simulator, held at each P-state by the `fixed`
//! policy, and is measured only through what `--observe linux` gives
//! (perf's instructions, cycles, LLC references and misses of the preset's
//! PMU; on-CPU time from schedstat), as the policy will see it:
//!
//! - peak memory-bus rate: LLC misses per second of as many stream
//!   instances as the machine has CPUs, at the highest P-state, summed (the
//!   bus saturated);
//! - peak cache rate: the architectural one the paper names for the Core 2
//!   (one L2 request per four cycles, §4.1), a constant of the hardware
//!   rather than something a benchmark could exceed;
//! - translation vector at P-state f: per component, the mean over the
//!   benchmarks that use it (component ≥ [`MIN_COMPONENT`]) of its value at
//!   the highest P-state divided by its value at f.
//!
//! The result is the `activity` part of a machine's `[calibration]` table.

use crate::experiment::{simulate_traced, SimOptions};
use crate::EngineError;
use ecosched_model::calibration::{ActivityCalibration, TranslationVector};
use ecosched_model::{CounterKind, Counters};
use ecosched_policy::Params;
use ecosched_sim::{Observe, Scenario};
use serde::Serialize;

/// The representative benchmarks: compute-only, streaming, cache-resident
/// streaming, and SPEC-like compute- and memory-bound profiles.
pub const BENCHMARKS: &[&str] = &["aluadd", "stream", "stream-fit2", "hmmer", "soplex", "lbm"];

/// Peak shared-cache requests per cycle (Merkel §4.1: one per four cycles).
pub const PEAK_CACHE_PER_CYCLE: f64 = 0.25;

/// A component smaller than this is not used for its translation factor
/// (a ratio of two near-zero rates is noise).
pub const MIN_COMPONENT: f64 = 0.01;

/// Simulated seconds each measurement runs.
const RUN_S: f64 = 20.0;

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
    /// The machine preset or file.
    pub machine: String,
    /// The result.
    pub activity: ActivityCalibration,
    /// Every measurement.
    pub measured: Vec<Measured>,
}

const COUNTERS: [CounterKind; 5] = [
    CounterKind::Instructions,
    CounterKind::Cycles,
    CounterKind::LlcReferences,
    CounterKind::LlcMisses,
    CounterKind::OnCpuTime,
];

fn scenario(machine: &str, profile: &str, count: usize) -> Result<Scenario, EngineError> {
    let text = format!(
        "name = \"calibrate-av-{profile}\"\ndescription = \"{profile} x {count} for activity-vector calibration\"\nsource = \"Merkel et al. §4.1\"\nmachine = {machine:?}\nduration_s = {RUN_S}\n\
         [[tasks]]\nprofile = {profile:?}\ncount = {count}\nlength_s = {}\n",
        RUN_S * 100.0
    );
    Ok(Scenario::from_toml(
        &format!("calibration run of {profile} on {machine}"),
        &text,
        None,
    )?)
}

/// Each managed task's counters summed over a run of `profile` × `count`
/// at `freq_khz`.
fn measure(
    machine: &str,
    profile: &str,
    count: usize,
    freq_khz: u64,
) -> Result<Vec<Counters>, EngineError> {
    let s = scenario(machine, profile, count)?;
    let options = SimOptions {
        observe: Observe::Linux,
        extra_counters: COUNTERS.into_iter().collect(),
        ..SimOptions::default()
    };
    let params = Params::default().with("freq_mhz", freq_khz / 1000);
    let (_, trace) = simulate_traced(&s, "fixed", &params, &options)?;
    let mut per_task: std::collections::BTreeMap<String, Counters> = Default::default();
    for step in &trace.steps {
        for t in step.snapshot.tasks.iter().filter(|t| t.managed) {
            per_task
                .entry(t.name.clone())
                .or_default()
                .accumulate(&t.counters);
        }
    }
    Ok(per_task.into_values().collect())
}

fn on_cpu_s(c: &Counters) -> Option<f64> {
    c.on_cpu_ns.filter(|&n| n > 0).map(|n| n as f64 * 1e-9)
}

/// Run the calibration on a simulated machine (a preset name or a file).
pub fn calibrate_av(machine: &str) -> Result<AvCalibrationRun, EngineError> {
    let probe = scenario(machine, "aluadd", 1)?;
    let topo = &probe.machine.topology;
    let cpus = topo.online_cpus().len();
    let mut freqs: Vec<u64> = topo
        .freq_domains
        .first()
        .map(|d| d.pstates.iter().map(|p| p.freq_khz).collect())
        .unwrap_or_default();
    freqs.sort_unstable();
    let Some(&fmax) = freqs.last() else {
        return Err(EngineError::from(
            ecosched_policy::PolicyError::Incompatible(format!(
                "machine {machine} has no P-states: nothing to calibrate translation vectors for"
            )),
        ));
    };
    // Peak bus rate: every CPU streaming at the highest P-state.
    let streams = measure(machine, "stream", cpus, fmax)?;
    let peak_mem_per_s: f64 = streams
        .iter()
        .filter_map(|c| Some(c.llc_misses? as f64 / on_cpu_s(c)?))
        .sum();
    if peak_mem_per_s.is_nan() || peak_mem_per_s <= 0.0 {
        return Err(EngineError::from(
            ecosched_policy::PolicyError::Incompatible(format!(
                "machine {machine}: its PMU gives no LLC misses, so the memory-bus peak cannot be measured"
            )),
        ));
    }
    let vector_of = |c: &Counters| -> Option<[f64; 3]> {
        let cycles = c.cycles.filter(|&x| x > 0)? as f64;
        Some([
            c.llc_misses? as f64 / on_cpu_s(c)? / peak_mem_per_s,
            c.llc_references? as f64 / cycles / PEAK_CACHE_PER_CYCLE,
            (c.instructions? as f64 / cycles).min(1.0),
        ])
    };
    let mut measured = Vec::new();
    for bench in BENCHMARKS {
        for &f in &freqs {
            let runs = measure(machine, bench, 1, f)?;
            if let Some(v) = runs.first().and_then(vector_of) {
                measured.push(Measured {
                    benchmark: bench.to_string(),
                    freq_khz: f,
                    vector: v,
                });
            }
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
                let ratios: Vec<f64> = BENCHMARKS
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
        activity: ActivityCalibration {
            peak_mem_per_s: peak_mem_per_s.round(),
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
    use super::*;

    #[test]
    fn q6600_translation_follows_the_physics() {
        let run = calibrate_av("q6600").unwrap();
        let a = &run.activity;
        let lo = a.translation_at(1_600_000).unwrap();
        let hi = a.translation_at(2_400_000).unwrap();
        // The highest P-state translates to itself.
        assert_eq!((hi.bus, hi.cache, hi.core), (1.0, 1.0, 1.0));
        // At a lower clock a core issues fewer bus requests per second
        // (§4.1), so the bus component must be scaled up …
        assert!(lo.bus > 1.0, "{lo:?}");
        // … and fewer stall cycles raise IPC, so the core component is
        // scaled down.
        assert!(lo.core < 1.0, "{lo:?}");
        assert!(a.peak_mem_per_s > 1e7, "{a:?}");
    }

    #[test]
    fn the_q6600_preset_stores_what_calibration_measures() {
        let run = calibrate_av("q6600").unwrap();
        let stored = Scenario::load("merkel-sort-8")
            .unwrap()
            .machine
            .topology
            .calibration
            .activity
            .clone()
            .expect("q6600 carries activity calibration");
        assert_eq!(
            stored, run.activity,
            "re-run `ecosched calibrate av --machine q6600` and update machines/q6600.toml"
        );
    }
}
