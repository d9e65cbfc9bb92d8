//! Merkel et al. §3 on the Q6600: how co-running instances slow each
//! other (Fig. 1) and what 1.6 GHz costs and saves against 2.4 GHz
//! (Tables 1 and 2).
//!
//! | Figure | Quantity | Paper | Row |
//! |---|---|---|---|
//! | Fig. 1, §3.1 | aluadd, 4 instances vs alone: run-time ratio | 1.0 | calibrated |
//! | Fig. 1, §3.1 | stream-fit2, 2 instances sharing an L2 vs alone | 1.05 (at most slight) | calibrated |
//! | Fig. 1, §3.1 | stream-fit1, 2 instances sharing an L2 vs alone | 2.0 ("increases considerably") | calibrated |
//! | Fig. 1, §3.1 | stream-fit1, 2 instances on different L2s vs alone | 1.05 (little) | calibrated |
//! | Fig. 1, §3.3 | stream, 4 instances vs alone | 3.9 | calibrated |
//! | Table 1, §3.2 | 4 aluadd, 1.6 vs 2.4 GHz: time ratio | 1.49 | predicted |
//! | Table 1, §3.2 | 4 aluadd: energy, EDP ratio | 1.16, 1.68 | calibrated |
//! | Table 1, §3.2 | 4 stream: time ratio | 1.04 | predicted |
//! | Table 1, §3.2 | 4 stream: energy, EDP ratio | 0.80, 0.83 | calibrated |
//! | Table 1, §3.2 | 1 stream + 3 aluadd: stream time, stream energy, aluadd time, aluadd energy ratio | 1.13, 0.83, 1.49, 1.08 | predicted |
//! | Table 1, §3.2 | 2 stream + 2 aluadd: the same four columns | 1.07, 0.77, 1.49, 1.10 | predicted |
//! | Table 1, §3.2 | 3 stream + 1 aluadd: the same four columns | 1.09, 0.85, 1.49, 1.13 | predicted |
//! | Table 1, §3.2 | each mix's average EDP ratio (1 + 3, 2 + 2, 3 + 1) | 1.45, 1.23, 1.13 | predicted |
//! | Table 2, §3.2 | mixed at 2.4 GHz vs like-with-like at each type's best frequency: average EDP ratio | 13.3 / 16.8 | calibrated |
//! | Table 2, §3.2 | mixed at 2.4 vs mixed at 1.6 GHz: average EDP ratio | 13.3 / 17.1 | calibrated |
//! | Table 2, §3.2 | soplex, 4 together at 1.6 vs 2 with hmmer at 2.4 GHz: run-time ratio | 1310 / 837 | calibrated |
//! | Table 2, §3.2 | hmmer, mixed at 1.6 vs 2.4 GHz: run-time ratio | 1420 / 952 | calibrated |
//! | Table 2, §3.2 | soplex, mixed at 1.6 vs 2.4 GHz: run-time ratio | 911 / 837 | calibrated |
//! | Table 2, §3.2 | hmmer, 4 together vs 2 with soplex at 2.4 GHz: run-time ratio | 923 / 952 | predicted |
//! | Table 2, §3.2 | energy per instance pair: like-with-like > mixed at 2.4 > mixed at 1.6 GHz | 30.7 > 29.5 > 27.9 kJ | predicted |
//! | Table 2, §3.2 | energy per instance, hmmer 4 together at 2.4 GHz | 17.0 kJ | calibrated |
//! | Table 2, §3.2 | energy per instance, the other five runs | 13.7, 15.7, 13.8, 17.0, 10.9 kJ | predicted |

use crate::validate::check::{missed_if, Check, MAX_REL_TOLERANCE};
use crate::validate::runs::{at_mhz, mean, mean_edp, mean_energy, mean_runtime, run};
use crate::EngineError;
use ecosched_model::RunMetrics;
use ecosched_policy::Params;
use ecosched_sim::Observe;

const FIG1: &str = "Merkel et al. EuroSys'10 §3.1, Fig. 1";
const TAB1: &str = "Merkel et al. EuroSys'10 §3.2, Table 1";
const TAB2: &str = "Merkel et al. EuroSys'10 §3.2, Table 2";

/// Merkel Fig. 1: slowdown of co-running instances relative to one alone.
pub fn fig1(o: Observe) -> Result<Vec<Check>, EngineError> {
    // "shared" scenarios are confined to the two cores of one die; the
    // default scheduler spreads the others across both L2s.
    let perf = |s: &str| {
        if s.ends_with("-shared") {
            run(o, s, "static", Params::default().with("cpus", "0-1"))
        } else {
            run(o, s, "performance", Params::default())
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
            0.3,
            "fits the L2 once: slows markedly when sharing it (§3.1: \"increases considerably\"). Fig. 1's bar is not \
             in the text, so 2.0 stands for 'considerably', not for a reading of the bar; 1.7–2.3 accepted. \
             Calibrated: set by the miss curve, not the bus. Sharing, each instance keeps 2 MiB of its \
             3.5 MiB working set, and the curve's steepness below it (α = 4, profiles.toml) was set from this row: \
             at a 2 MiB share the curve misses 0.17 of its references. The paper gives neither the array size nor \
             the L2's replacement; for scale, under random replacement two cyclic sweeps of W in a cache of C hit \
             h = exp(−(1 − h)·2W/C), which gives m ≈ 0.17 for W ≈ 2.2 MiB and m ≈ 0.7 for 3.5 MiB arrays",
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
pub fn table1(o: Observe) -> Result<Vec<Check>, EngineError> {
    let mut checks = Vec::new();
    let ratio = |scenario: &str| -> Result<(RunMetrics, RunMetrics), EngineError> {
        Ok((at_mhz(o, scenario, 1600)?, at_mhz(o, scenario, 2400)?))
    };
    let (lo, hi) = ratio("merkel-4-aluadd")?;
    let t = mean_runtime(&lo, "aluadd") / mean_runtime(&hi, "aluadd");
    let e = mean_energy(&lo, "aluadd") / mean_energy(&hi, "aluadd");
    let note = "4 × aluadd, processor energy, 1.6 vs 2.4 GHz";
    // Nothing was set from either time ratio: aluadd runs at the clock's
    // ratio whatever its profile, and stream's at its bus.
    checks.push(
        Check::new(
            "4 aluadd: time ratio",
            TAB1,
            1.49,
            t,
            0.03,
            "4 × aluadd, processor energy, 1.6 vs 2.4 GHz. Predicted: a task that only computes runs at the clock's ratio, 1.5",
        )
        .predicted(),
    );
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
    // Power at 1.6 over power at 2.4 GHz, like with like: for the causes
    // of the mixes' misses.
    let alu_power = e / t;
    let stream_power = (mean_energy(&lo, "stream") / mean_energy(&hi, "stream"))
        / (mean_runtime(&lo, "stream") / mean_runtime(&hi, "stream"));
    checks.push(
        Check::new(
            "4 stream: time ratio",
            TAB1,
            1.04,
            mean_runtime(&lo, "stream") / mean_runtime(&hi, "stream"),
            0.03,
            "4 × stream, processor energy, 1.6 vs 2.4 GHz; 1.01–1.07 accepted (three quarters of the 4 % effect, as for the mixes, so no slowdown fails). \
             A known miss: the model gives exactly 1. Four instances ask the front-side bus for more than it carries at either clock, and past \
             rho_max the model's bus is a wall (q6600.toml: bandwidth_gbs and rho_max, both set on 'stream: 4 instances vs alone', which one instance \
             alone nearly fills): the memory latency rises until their traffic is exactly the bus's, whatever the clock. The paper's 4 % needs a \
             bus that saturates gradually, so that a slower clock asks less of it and gets less. Predicted: nothing was set from it",
        )
        .predicted()
        .known_miss(),
    );
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
        ("merkel-1stream-3alu", 1.45, MIX13),
        ("merkel-2stream-2alu", 1.23, MIX22),
        ("merkel-3stream-1alu", 1.13, MIX31),
    ] {
        let (lo, hi) = ratio(scenario)?;
        for &(_, who, figure, paper, miss) in TAB1_COLUMNS.iter().filter(|c| c.0 == label) {
            let of = |m: &RunMetrics| match figure {
                "time" => mean_runtime(m, who),
                _ => mean_energy(m, who),
            };
            let why = miss.map(|m| match m {
                ColumnMiss::BusWall => BUS_WALL.to_string(),
                ColumnMiss::MixPower => {
                    let power = (mean_energy(&lo, who) / mean_energy(&hi, who))
                        / (mean_runtime(&lo, who) / mean_runtime(&hi, who));
                    mix_power(power, alu_power, stream_power)
                }
            });
            let row = mixed_column(label, who, figure, paper, of(&lo) / of(&hi), why.as_deref());
            checks.push(row);
        }
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
            (0.15f64).min(0.75 * (paper - 1.0)),
            "mean over the four tasks of each task's EDP ratio; mixes lie between 4 × stream and 4 × aluadd; \
             tolerance 0.15 at most and three quarters of the effect (paper − 1), so equal EDP fails. \
             Predicted: the Q6600's power and the two profiles were set from the 4 × rows only",
        )
        .predicted());
    }
    Ok(checks)
}

/// Why the model misses a stream time column: the bus wall.
const BUS_WALL: &str = "two or more stream instances ask the front-side bus for more than it carries at either clock, and past rho_max the \
     model's bus is a wall (q6600.toml: bandwidth_gbs and rho_max, both set on 'stream: 4 instances vs alone', which one instance alone \
     nearly fills): the memory latency rises until their traffic is exactly the bus's, whatever the clock, so the model gives exactly 1. A \
     bus that saturates gradually would not do: one stream alone takes 3.9/4 ≈ 97 % of what four get (Fig. 1's 3.9×) and at 1.6 GHz \
     still 1/1.13 of its own 2.4 GHz rate (Table 1's 1 stream + 3 aluadd), so two or more at 1.6 GHz still ask more than any bus of \
     fixed capacity carries (a closed queue solved exactly, its compute time and memory parallelism fitted to those two figures, gives \
     no slowdown for two to four streams). The paper's 1.04–1.09 need a bus that carries less when the cores run slower, about 4 % at \
     1.6 GHz, and no source we hold says the Q6600's front-side bus does";

/// Why the model misses an aluadd energy column: power adds over cores.
/// `mix`, `alu` and `stream` are the model's power at 1.6 GHz over its
/// power at 2.4 GHz (a benchmark's energy ratio over its time ratio) in
/// the mix, with 4 aluadd and with 4 stream.
fn mix_power(mix: f64, alu: f64, stream: f64) -> String {
    format!(
        "the paper's figures for this mix put the processor's power at 1.6 GHz at ×0.72–0.74 of 2.4 GHz's (energy over \
         time, from either benchmark's column), below both like-with-like rows (4 aluadd ×0.778, 4 stream ×0.769). Every core runs at one \
         clock and voltage and power adds over cores and the uncore, so if each benchmark's cores fall as in its like-with-like row a mix \
         falls between the two (a weighted mediant), and nothing in the paper says why a mix would fall further. In the model aluadd's \
         columns give ×{mix:.3} for this mix, against ×{alu:.3} for 4 aluadd and ×{stream:.3} for 4 stream"
    )
}

/// Why the model misses one of Table 1's mixed columns.
#[derive(Debug, Clone, Copy)]
enum ColumnMiss {
    /// A stream time column: the bus is a wall ([`BUS_WALL`]).
    BusWall,
    /// An aluadd energy column: power adds over cores ([`mix_power`]).
    MixPower,
}

/// Table 1's per-benchmark columns of the mixed rows, at 1.6 against
/// 2.4 GHz: (mix, benchmark, figure, paper, why the model misses it if it
/// does). The EDP columns are the product of these two to within 3 %
/// (aluadd's 1.63, 1.60 and 1.73 against 1.61, 1.64 and 1.68) and the
/// mix's average EDP is a row of its own, so they add no row.
const TAB1_COLUMNS: [(&str, &str, &str, f64, Option<ColumnMiss>); 12] = [
    (MIX13, "stream", "time", 1.13, None),
    (MIX13, "stream", "energy", 0.83, None),
    (MIX13, "aluadd", "time", 1.49, None),
    (MIX13, "aluadd", "energy", 1.08, Some(ColumnMiss::MixPower)),
    (MIX22, "stream", "time", 1.07, Some(ColumnMiss::BusWall)),
    (MIX22, "stream", "energy", 0.77, None),
    (MIX22, "aluadd", "time", 1.49, None),
    (MIX22, "aluadd", "energy", 1.10, Some(ColumnMiss::MixPower)),
    (MIX31, "stream", "time", 1.09, Some(ColumnMiss::BusWall)),
    (MIX31, "stream", "energy", 0.85, None),
    (MIX31, "aluadd", "time", 1.49, None),
    (MIX31, "aluadd", "energy", 1.13, None),
];
const MIX13: &str = "1 stream + 3 aluadd";
const MIX22: &str = "2 stream + 2 aluadd";
const MIX31: &str = "3 stream + 1 aluadd";

/// One benchmark's column of one of Table 1's mixed rows: its time or its
/// energy (the processor's, attributed by running time) at 1.6 against
/// 2.4 GHz. Predicted: the Q6600's power and both profiles were set on the
/// 4 × rows and Fig. 1. The band is 15 % of the paper's figure at most and
/// three quarters of its effect (its distance from 1), as for the mixes'
/// average EDP, so that no effect fails.
fn mixed_column(
    mix: &str,
    who: &str,
    figure: &str,
    paper: f64,
    simulated: f64,
    miss: Option<&str>,
) -> Check {
    let tolerance = (MAX_REL_TOLERANCE * paper).min(0.75 * (paper - 1.0).abs());
    let (lo, hi) = (paper - tolerance, paper + tolerance);
    let row = Check::new(
        &format!("{mix}: {who} {figure} ratio"),
        TAB1,
        paper,
        simulated,
        tolerance,
        &format!(
            "{who}'s {figure} at 1.6 against 2.4 GHz in this mix; {lo:.3}–{hi:.3} accepted (15 % at most, and three quarters of the effect). \
             Predicted: the Q6600's power and the two profiles were set from the 4 × rows and Fig. 1 only"
        ),
    )
    .predicted();
    missed_if(row, miss)
}

/// Why the model misses soplex's energy at 1.6 GHz in Table 2.
const SOPLEX_POWER: &str = "a memory-bound core's power is set by stall_activity (q6600.toml: a stalled core burns 0.8 of a \
     busy one's dynamic power), calibrated on Table 1's '4 stream: energy ratio', which needs stalled cores to burn nearly as much as busy \
     ones; at the paper's 1.13 V and the model's uncore and leakage, Table 2's four soplex at 1.6 GHz (41.8 W) leave each core about \
     0.8 W of dynamic power, a sixth of a busy one's (4.7 W). The two tables disagree under a power that adds over cores (the energy-order row)";

/// Merkel Table 2: hmmer and soplex, like-with-like at each type's best
/// frequency vs mixed at 2.4 GHz vs mixed at 1.6 GHz.
pub fn table2(o: Observe) -> Result<Vec<Check>, EngineError> {
    // Scenario 1: 4 soplex at 1.6 GHz, then 4 hmmer at 2.4 GHz.
    let soplex = at_mhz(o, "merkel-4soplex", 1600)?;
    let hmmer = at_mhz(o, "merkel-4hmmer", 2400)?;
    let separate = (mean_edp(&soplex, "soplex") + mean_edp(&hmmer, "hmmer")) / 2.0;
    // Scenarios 2 and 3: 2 hmmer + 2 soplex together.
    let mixed_hi = at_mhz(o, "merkel-2hmmer-2soplex", 2400)?;
    let mixed_lo = at_mhz(o, "merkel-2hmmer-2soplex", 1600)?;
    let avg = |m: &RunMetrics| (mean_edp(m, "hmmer") + mean_edp(m, "soplex")) / 2.0;
    let note = "average per-instance EDP (energy attributed by running time × runtime)";
    // One hmmer instance's energy and one soplex instance's, as Table 2
    // lists them per scenario.
    let energy =
        |h: &RunMetrics, s: &RunMetrics| mean_energy(h, "hmmer") + mean_energy(s, "soplex");
    // The power attributed to one hmmer instance: every core runs one
    // instance throughout, so a quarter of the processor's.
    let power = |m: &RunMetrics| mean_energy(m, "hmmer") / mean_runtime(m, "hmmer");
    let mut checks = vec![
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
        Check::new(
            "soplex: mixed @1.6 vs mixed @2.4 (runtime ratio)",
            TAB2,
            911.0 / 837.0,
            mean_runtime(&mixed_lo, "soplex") / mean_runtime(&mixed_hi, "soplex"),
            0.066,
            "memory-bound beside hmmer: the lower clock costs little; 1.022–1.154 accepted (three quarters of the 8.8 % effect). \
             Calibrated: soplex's profile was set on this row and the 4-together one (profiles.toml)",
        ),
        Check::new(
            "hmmer: 4 together vs 2 with soplex, both @2.4 (runtime ratio)",
            TAB2,
            923.0 / 952.0,
            mean_runtime(&hmmer, "hmmer") / mean_runtime(&mixed_hi, "hmmer"),
            0.0229,
            "hmmer runs 3 % longer beside two soplex than beside three hmmer (their memory traffic reaches it through the shared L2 and \
             the bus); 0.947–0.992 accepted (three quarters of the effect, so no effect fails). Predicted: hmmer's profile was set on \
             its frequency scaling only",
        )
        .predicted(),
        Check::ordering(
            "energy per hmmer and soplex instance: like-with-like > mixed @2.4 GHz > mixed @1.6 GHz (1 = holds)",
            TAB2,
            energy(&hmmer, &soplex) > energy(&mixed_hi, &mixed_hi)
                && energy(&mixed_hi, &mixed_hi) > energy(&mixed_lo, &mixed_lo),
            &format!(
                "§3.2: scenario 1 spends the most energy (four soplex held up by contention), scenario 3 the least \
                 (paper 30.7 > 29.5 > 27.9 kJ; simulated {:.1}, {:.1}, {:.1} kJ). Predicted: nothing was set from the order. \
                 A known miss, in the last step: the paper's mixed pair draws ×0.726 at 1.6 GHz of its power at 2.4 GHz (either \
                 benchmark's energy over its time: 17.0/1420 against 15.7/952, 10.9/911 against 13.8/837), as Table 1's mixes \
                 (×0.72–0.74, their known misses), where like-with-like draws ×0.77–0.78; the model's mixed pair draws ×{:.3}, \
                 so hmmer's 49 % longer run costs more than soplex saves",
                energy(&hmmer, &soplex) / 1e3,
                energy(&mixed_hi, &mixed_hi) / 1e3,
                energy(&mixed_lo, &mixed_lo) / 1e3,
                power(&mixed_lo) / power(&mixed_hi),
            ),
        )
        .predicted()
        .known_miss(),
    ];
    // Table 2's energy per instance: the processor's, attributed by
    // running time (every core runs one instance throughout), with the
    // paper's run time for the power it implies; whether a parameter was
    // set on it, and why the model misses it if it does.
    for (label, m, who, paper, paper_s, calibrated, miss) in [
        // The Q6600's ceff and leakage were set on this one.
        (
            "hmmer, 4 together @2.4 GHz",
            &hmmer,
            "hmmer",
            17.0,
            923.0,
            true,
            None,
        ),
        (
            "soplex, 4 together @1.6 GHz",
            &soplex,
            "soplex",
            13.7,
            1310.0,
            false,
            Some(SOPLEX_POWER),
        ),
        (
            "hmmer, 2 with soplex @2.4 GHz",
            &mixed_hi,
            "hmmer",
            15.7,
            952.0,
            false,
            None,
        ),
        (
            "soplex, 2 with hmmer @2.4 GHz",
            &mixed_hi,
            "soplex",
            13.8,
            837.0,
            false,
            None,
        ),
        (
            "hmmer, 2 with soplex @1.6 GHz",
            &mixed_lo,
            "hmmer",
            17.0,
            1420.0,
            false,
            None,
        ),
        (
            "soplex, 2 with hmmer @1.6 GHz",
            &mixed_lo,
            "soplex",
            10.9,
            911.0,
            false,
            Some(SOPLEX_POWER),
        ),
    ] {
        let simulated = mean_energy(m, who) / 1e3;
        let row = Check::new(
            &format!("{label}: energy per instance (kJ)"),
            TAB2,
            paper,
            simulated,
            MAX_REL_TOLERANCE * paper,
            &format!(
                "{:.1}–{:.1} kJ accepted (15 %); the processor draws {:.1} W (paper: 4 × {paper} kJ / {paper_s} s = {:.1} W)",
                paper * (1.0 - MAX_REL_TOLERANCE),
                paper * (1.0 + MAX_REL_TOLERANCE),
                4e3 * simulated / mean_runtime(m, who),
                4e3 * paper / paper_s
            ),
        );
        checks.push(missed_if(
            if calibrated { row } else { row.predicted() },
            miss,
        ));
    }
    Ok(checks)
}
