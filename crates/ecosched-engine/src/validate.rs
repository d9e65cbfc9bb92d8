//! The simulator checked against the papers' published figures
//! (SIMULATOR.md §6). Each check runs built-in scenarios, derives the
//! figure the paper reports, and compares it with the paper's value within
//! a stated tolerance. The tests and `ecosched validate` call the same code.
//!
//! Merkel et al. measure *processor* energy (§3: a probe on the CPU
//! supply), so their scenarios use the package meter, and attribute a
//! task's energy by its share of the running time (Table 2).
//!
//! Richling et al. time a Linux kernel build (`make -jN`) at the wall; the
//! `richling-*` scenarios build a generated job graph with the system
//! meter. Their §V experiments size the high set from the known N, so the
//! variants run with N declared as the application's parallelism hint;
//! `hilo` is also checked with its own 20 ms parallelism measurement.

use crate::engine::EngineError;
use crate::experiment::simulate;
use ecosched_model::{RunMetrics, TaskMetrics};
use ecosched_policy::Params;
use ecosched_sim::Scenario;
use serde::Serialize;

/// One published figure next to the simulated one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// What is compared.
    pub name: String,
    /// Paper and place.
    pub source: String,
    /// The paper's value.
    pub paper: f64,
    /// The simulator's value.
    pub simulated: f64,
    /// Accepted absolute difference.
    pub tolerance: f64,
    /// Whether |simulated − paper| ≤ tolerance.
    pub pass: bool,
    /// How the figure is derived, and why the tolerance is what it is.
    pub note: String,
}

impl Check {
    fn new(
        name: &str,
        source: &str,
        paper: f64,
        simulated: f64,
        tolerance: f64,
        note: &str,
    ) -> Self {
        Check {
            name: name.to_string(),
            source: source.to_string(),
            paper,
            simulated,
            tolerance,
            pass: (simulated - paper).abs() <= tolerance,
            note: note.to_string(),
        }
    }
}

fn run(scenario: &str, policy: &str, params: Params) -> Result<RunMetrics, EngineError> {
    let s = Scenario::load(scenario)?;
    Ok(simulate(&s, policy, &params, None, &mut |_| {})?.metrics)
}

/// `policy` on `scenario` with the application declaring `hint` as its
/// parallelism (`None`: no hint, the policy measures it).
fn run_hinted(
    scenario: &str,
    policy: &str,
    params: Params,
    hint: Option<u32>,
) -> Result<RunMetrics, EngineError> {
    let mut s = Scenario::load(scenario)?;
    s.spec.parallelism_hint = hint;
    Ok(simulate(&s, policy, &params, None, &mut |_| {})?.metrics)
}

fn at_mhz(scenario: &str, mhz: u64) -> Result<RunMetrics, EngineError> {
    run(scenario, "fixed", Params::default().with("freq_mhz", mhz))
}

/// Mean of one per-task figure over the tasks whose name starts with `prefix`.
fn mean_of(m: &RunMetrics, prefix: &str, figure: fn(&TaskMetrics) -> Option<f64>) -> f64 {
    mean(
        m.tasks
            .iter()
            .filter(|t| t.name.starts_with(prefix))
            .filter_map(figure),
    )
}

fn mean_runtime(m: &RunMetrics, prefix: &str) -> f64 {
    mean_of(m, prefix, |t| Some(t.runtime_s))
}

fn mean_energy(m: &RunMetrics, prefix: &str) -> f64 {
    mean_of(m, prefix, |t| t.energy_j)
}

fn mean_edp(m: &RunMetrics, prefix: &str) -> f64 {
    mean_of(m, prefix, |t| t.edp_js)
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        s / n as f64
    }
}

const FIG1: &str = "Merkel et al. EuroSys'10 §3.1, Fig. 1";
const TAB1: &str = "Merkel et al. EuroSys'10 §3.2, Table 1";
const TAB2: &str = "Merkel et al. EuroSys'10 §3.2, Table 2";

/// Merkel Fig. 1: slowdown of co-running instances relative to one alone.
pub fn merkel_fig1() -> Result<Vec<Check>, EngineError> {
    // "shared" scenarios are confined to the two cores of one die; the
    // default scheduler spreads the others across both L2s.
    let perf = |s: &str| {
        if s.ends_with("-shared") {
            run(s, "static", Params::default().with("cpus", "0-1"))
        } else {
            run(s, "performance", Params::default())
        }
    };
    let slowdown = |many: &str, one: &str, prefix: &str| -> Result<f64, EngineError> {
        Ok(mean_runtime(&perf(many)?, prefix) / mean_runtime(&perf(one)?, prefix))
    };
    Ok(vec![
        Check::new(
            "aluadd: 4 instances vs alone (runtime ratio)",
            FIG1,
            1.0,
            slowdown("merkel-4-aluadd", "merkel-1-aluadd", "aluadd")?,
            0.02,
            "compute-only task is unaffected by co-runners",
        ),
        Check::new(
            "stream-fit2: 2 instances sharing an L2 vs alone",
            FIG1,
            1.05,
            slowdown("merkel-2-stream-fit2-shared", "merkel-1-stream-fit2", "stream-fit2")?,
            0.05,
            "fits the L2 twice: at most a slight slowdown (Fig. 1 is not in the text; 1.00–1.10 accepted)",
        ),
        Check::new(
            "stream-fit1: 2 instances sharing an L2 vs alone",
            FIG1,
            2.0,
            slowdown("merkel-2-stream-fit1-shared", "merkel-1-stream-fit1", "stream-fit1")?,
            0.7,
            "fits the L2 once: slows markedly when sharing it (\"considerably\"; 1.3–2.7 accepted)",
        ),
        Check::new(
            "stream-fit1: 2 instances on different L2s vs alone",
            FIG1,
            1.05,
            slowdown("merkel-2-stream-fit1-apart", "merkel-1-stream-fit1", "stream-fit1")?,
            0.05,
            "separate caches: little interference (1.00–1.10 accepted)",
        ),
        Check::new(
            "stream: 4 instances vs alone",
            FIG1,
            3.9,
            slowdown("merkel-4-stream", "merkel-1-stream", "stream")?,
            0.3,
            "the front-side bus saturates (§3.3 gives the 3.9 figure)",
        ),
    ])
}

/// Merkel Table 1: 1.6 GHz relative to 2.4 GHz for the microbenchmark mixes.
pub fn merkel_table1() -> Result<Vec<Check>, EngineError> {
    let mut checks = Vec::new();
    let ratio = |scenario: &str| -> Result<(RunMetrics, RunMetrics), EngineError> {
        Ok((at_mhz(scenario, 1600)?, at_mhz(scenario, 2400)?))
    };
    let (lo, hi) = ratio("merkel-4-aluadd")?;
    let t = mean_runtime(&lo, "aluadd") / mean_runtime(&hi, "aluadd");
    let e = mean_energy(&lo, "aluadd") / mean_energy(&hi, "aluadd");
    let note = "4 × aluadd, processor energy, 1.6 vs 2.4 GHz";
    checks.push(Check::new(
        "4 aluadd: time ratio",
        TAB1,
        1.49,
        t,
        0.03,
        note,
    ));
    checks.push(Check::new(
        "4 aluadd: energy ratio",
        TAB1,
        1.16,
        e,
        0.06,
        note,
    ));
    checks.push(Check::new(
        "4 aluadd: EDP ratio",
        TAB1,
        1.68,
        mean_edp(&lo, "aluadd") / mean_edp(&hi, "aluadd"),
        0.10,
        "the paper's 1.68 is below its own time × energy (1.73); the tolerance covers both",
    ));
    let (lo, hi) = ratio("merkel-4-stream")?;
    let note = "4 × stream, processor energy, 1.6 vs 2.4 GHz";
    checks.push(Check::new(
        "4 stream: time ratio",
        TAB1,
        1.04,
        mean_runtime(&lo, "stream") / mean_runtime(&hi, "stream"),
        0.05,
        note,
    ));
    checks.push(Check::new(
        "4 stream: energy ratio",
        TAB1,
        0.80,
        mean_energy(&lo, "stream") / mean_energy(&hi, "stream"),
        0.06,
        note,
    ));
    checks.push(Check::new(
        "4 stream: EDP ratio",
        TAB1,
        0.83,
        mean_edp(&lo, "stream") / mean_edp(&hi, "stream"),
        0.08,
        note,
    ));
    for (scenario, paper, label) in [
        ("merkel-1stream-3alu", 1.45, "1 stream + 3 aluadd"),
        ("merkel-2stream-2alu", 1.23, "2 stream + 2 aluadd"),
        ("merkel-3stream-1alu", 1.13, "3 stream + 1 aluadd"),
    ] {
        let (lo, hi) = ratio(scenario)?;
        let per_task: Vec<f64> = hi
            .tasks
            .iter()
            .filter_map(|h| {
                let l = lo.task(&h.name)?;
                Some(l.edp_js? / h.edp_js?)
            })
            .collect();
        checks.push(Check::new(
            &format!("{label}: average EDP ratio"),
            TAB1,
            paper,
            mean(per_task.into_iter()),
            0.15,
            "mean over the four tasks of each task's EDP ratio; mixes lie between 4 × stream and 4 × aluadd",
        ));
    }
    Ok(checks)
}

/// Merkel Table 2: hmmer and soplex, like-with-like at each type's best
/// frequency vs mixed at 2.4 GHz vs mixed at 1.6 GHz.
pub fn merkel_table2() -> Result<Vec<Check>, EngineError> {
    // Scenario 1: 4 soplex at 1.6 GHz, then 4 hmmer at 2.4 GHz.
    let soplex = at_mhz("merkel-4soplex", 1600)?;
    let hmmer = at_mhz("merkel-4hmmer", 2400)?;
    let separate = (mean_edp(&soplex, "soplex") + mean_edp(&hmmer, "hmmer")) / 2.0;
    // Scenarios 2 and 3: 2 hmmer + 2 soplex together.
    let mixed_hi = at_mhz("merkel-2hmmer-2soplex", 2400)?;
    let mixed_lo = at_mhz("merkel-2hmmer-2soplex", 1600)?;
    let avg = |m: &RunMetrics| (mean_edp(m, "hmmer") + mean_edp(m, "soplex")) / 2.0;
    let note = "average per-instance EDP (energy attributed by running time × runtime)";
    Ok(vec![
        Check::new(
            "mixed @2.4 GHz vs like-with-like at best frequency: average EDP ratio",
            TAB2,
            13.3 / 16.8,
            avg(&mixed_hi) / separate,
            0.08,
            note,
        ),
        Check::new(
            "mixed @2.4 GHz vs mixed @1.6 GHz: average EDP ratio",
            TAB2,
            13.3 / 17.1,
            avg(&mixed_hi) / avg(&mixed_lo),
            0.08,
            note,
        ),
        Check::new(
            "soplex: 4 together @1.6 vs 2 with hmmer @2.4 (runtime ratio)",
            TAB2,
            1310.0 / 837.0,
            mean_runtime(&soplex, "soplex") / mean_runtime(&mixed_hi, "soplex"),
            0.2,
            "memory contention among four soplex instances outweighs the lower frequency",
        ),
        Check::new(
            "hmmer: mixed @1.6 vs mixed @2.4 (runtime ratio)",
            TAB2,
            1420.0 / 952.0,
            mean_runtime(&mixed_lo, "hmmer") / mean_runtime(&mixed_hi, "hmmer"),
            0.05,
            "compute-bound: runtime scales with frequency",
        ),
    ])
}

const RFIG: &str = "Richling et al. §II Fig. 1, §V Fig. 2";
const RTAB1: &str = "Richling et al. §V-D, Table I";

/// Richling Fig. 1–2: `make -jN` on the dual Opteron 2352 under the
/// performance and ondemand governors and the high/low variants.
pub fn richling_fig2() -> Result<Vec<Check>, EngineError> {
    let mut checks = Vec::new();
    let mut ondemand_slowdown = Vec::new();
    let mut b_over_c = Vec::new();
    for n in 1..=8u32 {
        let scenario = format!("richling-make-j{n}");
        let time = |policy: &str, hint: Option<u32>| -> Result<f64, EngineError> {
            Ok(run_hinted(&scenario, policy, Params::default(), hint)?.makespan_s)
        };
        let perf = time("performance", None)?;
        let ondemand = time("ondemand", None)? / perf;
        ondemand_slowdown.push(ondemand);
        if n < 8 {
            checks.push(Check::new(
                &format!("make -j{n}: ondemand vs performance (run time ratio)"),
                RFIG,
                1.54,
                ondemand,
                0.46,
                "Fig. 1 is not in the text: \"clearly slower\" for N < 8; 1.08–2.0 accepted (2.0 = every job at the lowest frequency)",
            ));
        }
        let spare = time("hilo", Some(n))?;
        checks.push(Check::new(
            &format!("make -j{n}: high/low + spare, |H| = N + 1 (run time ratio)"),
            RFIG,
            1.0,
            spare / perf,
            0.05,
            "experiment C: within 5 % of performance (§V-C)",
        ));
        checks.push(Check::new(
            &format!("make -j{n}: high/low + spare, parallelism measured (run time ratio)"),
            RFIG,
            1.0,
            time("hilo", None)? / perf,
            0.05,
            "§IV-B on-demand with spare: H sized from runnable tasks every 20 ms; same 5 % bound",
        ));
        if (2..=6).contains(&n) {
            b_over_c.push(time("hilo-nospare", Some(n))? / spare);
        }
        if n == 2 {
            checks.push(Check::new(
                "make -j2: variant A (H by affinity, ondemand) vs plain ondemand (run time ratio)",
                RFIG,
                0.725,
                time("hilo-ondemand", Some(n))? / perf / ondemand,
                0.225,
                "§V-A: \"significantly better than the original on-demand approach for small parallelisms\"; 0.5–0.95 accepted",
            ));
        }
    }
    checks.push(Check::new(
        "ondemand's slowdown at -j1 minus at -j7",
        RFIG,
        0.5,
        ondemand_slowdown[0] - ondemand_slowdown[6],
        0.45,
        "the gap is largest at small N (§II); 0.05–0.95 accepted",
    ));
    checks.push(Check::new(
        "-j2 … -j6: variant B (no spare) vs C (with spare), mean run time ratio",
        RFIG,
        1.06,
        mean(b_over_c.into_iter()),
        0.06,
        "§V-B/C: without the spare, make competes with the jobs for H; Fig. 2's values are not in the text, 1.00–1.12 accepted",
    ));
    Ok(checks)
}

/// Richling Table I: `make -j1` on the Phenom 9750 under five policies.
pub fn richling_table1() -> Result<Vec<Check>, EngineError> {
    let scenario = "richling-phenom-j1";
    let run1 = |policy: &str, params: Params| run_hinted(scenario, policy, params, Some(1));
    let perf = run1("performance", Params::default())?;
    let hilo = run1("hilo-nospare", Params::default())?;
    let spare = run1("hilo", Params::default())?;
    let ondemand = run1("ondemand", Params::default())?;
    let low = run1("fixed", Params::default().with("freq_mhz", 1200))?;
    let t = |m: &RunMetrics| m.makespan_s / perf.makespan_s;
    let e = |m: &RunMetrics| m.energy_j.unwrap_or(f64::NAN) / perf.energy_j.unwrap_or(f64::NAN);
    let w = |m: &RunMetrics| m.avg_power_w.unwrap_or(f64::NAN);
    let energies = [&hilo, &spare, &perf, &ondemand, &low].map(|m| m.energy_j.unwrap_or(f64::NAN));
    let ordered = energies.windows(2).all(|p| p[0] < p[1]);
    Ok(vec![
        Check::new(
            "-j1 performance: average power (W)",
            RTAB1,
            136.0,
            w(&perf),
            3.0,
            "calibration target of the preset's base_w",
        ),
        Check::new(
            "-j1 high/low (|H| = 1): average power (W)",
            RTAB1,
            121.0,
            w(&hilo),
            4.0,
            "three idle cores at 1.2 instead of 2.4 GHz (the preset's idle_ceff comes from this row)",
        ),
        Check::new(
            "-j1 high/low + spare (|H| = 2): average power (W)",
            RTAB1,
            126.0,
            w(&spare),
            4.0,
            "one more idle core at 2.4 GHz than high/low",
        ),
        Check::new(
            "-j1 high/low vs performance (run time ratio)",
            RTAB1,
            371.0 / 364.0,
            t(&hilo),
            0.02,
            "6:11 vs 6:04: make and the assembler share the single high core",
        ),
        Check::new(
            "-j1 high/low + spare vs performance (run time ratio)",
            RTAB1,
            1.0,
            t(&spare),
            0.02,
            "6:04 both",
        ),
        Check::new(
            "-j1 ondemand vs performance (run time ratio)",
            RTAB1,
            464.0 / 364.0,
            t(&ondemand),
            0.3,
            "7:44 vs 6:04 (27 %); the simulated kernel puts every new job on the CPU idle longest (SIMULATOR.md §3), always a cold one, so the model errs high",
        ),
        Check::new(
            "-j1 all cores low vs performance (run time ratio)",
            RTAB1,
            707.0 / 364.0,
            t(&low),
            0.1,
            "11:47 vs 6:04: the build is almost entirely frequency-bound",
        ),
        Check::new(
            "-j1 high/low vs performance (energy ratio)",
            RTAB1,
            12.55 / 13.77,
            e(&hilo),
            0.03,
            "lowest energy of the five",
        ),
        Check::new(
            "-j1 high/low + spare vs performance (energy ratio)",
            RTAB1,
            12.80 / 13.77,
            e(&spare),
            0.03,
            "performance's time with less energy",
        ),
        Check::new(
            "-j1 energy order high/low < +spare < performance < ondemand < all low (1 = holds)",
            RTAB1,
            1.0,
            if ordered { 1.0 } else { 0.0 },
            0.0,
            &format!(
                "simulated ondemand {:.2}× and all-low {:.2}× performance's energy (paper 1.06×, 1.13×): the ordering holds, the margins are wider because all-low draws {:.0} W here against the paper's 79 W",
                e(&ondemand),
                e(&low),
                w(&low)
            ),
        ),
    ])
}

/// Every check, in a stable order.
pub fn all_checks() -> Result<Vec<Check>, EngineError> {
    let mut out = merkel_fig1()?;
    out.extend(merkel_table1()?);
    out.extend(merkel_table2()?);
    out.extend(richling_fig2()?);
    out.extend(richling_table1()?);
    Ok(out)
}
