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

use crate::experiment::{compare, simulate, simulate_traced, SimOptions, SimRun};
use crate::EngineError;
use ecosched_model::{RunMetrics, TaskMetrics, Trace};
use ecosched_policy::pam::model::CpiModel;
use ecosched_policy::Params;
use ecosched_sim::Scenario;
use ecosched_sim::{MigrationCauses, Observe};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Whether a row could have come out otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RowKind {
    /// A model parameter was set so that this row holds: it shows the
    /// calibration worked, not that the model predicts.
    Calibrated,
    /// Nothing was set from this row: the model predicted it.
    Predicted,
}

/// One published figure next to the simulated one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// Calibrated or predicted. Rows are `calibrated` unless shown
    /// otherwise: claiming a prediction needs a reason.
    pub kind: RowKind,
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
    /// A figure the model is known not to reach (see [`Check::known_miss`]).
    pub known_miss: bool,
    /// |simulated − paper| / |paper|; absent when the paper's figure is 0
    /// (an absolute bound) or the row states an ordering (1 = holds).
    pub rel_error: Option<f64>,
}

/// The widest tolerance a row with a paper number may have, relative to
/// that number (issue #17): beyond it a row stops being a reproduction.
pub const MAX_REL_TOLERANCE: f64 = 0.15;

impl Check {
    /// A calibrated row (see [`Check::predicted`]).
    pub fn new(
        name: &str,
        source: &str,
        paper: f64,
        simulated: f64,
        tolerance: f64,
        note: &str,
    ) -> Self {
        Check {
            kind: RowKind::Calibrated,
            name: name.to_string(),
            source: source.to_string(),
            paper,
            simulated,
            tolerance,
            pass: (simulated - paper).abs() <= tolerance,
            note: note.to_string(),
            known_miss: false,
            rel_error: (paper != 0.0).then(|| (simulated - paper).abs() / paper.abs()),
        }
    }

    /// A row stating an ordering or a direction: 1 when it holds, 0 when
    /// it reverses (or vanishes); no tolerance and no relative error.
    pub fn ordering(name: &str, source: &str, holds: bool, note: &str) -> Self {
        Check {
            rel_error: None,
            ..Check::new(name, source, 1.0, if holds { 1.0 } else { 0.0 }, 0.0, note)
        }
    }

    /// Why this row's tolerance breaks the rules of issue #17, if it does:
    /// a row with a paper number passes within [`MAX_REL_TOLERANCE`] of it
    /// at most. Rows comparing with 0 are absolute bounds and exempt.
    pub fn tolerance_problem(&self) -> Option<String> {
        (self.paper != 0.0 && self.tolerance > MAX_REL_TOLERANCE * self.paper.abs() + 1e-12).then(
            || {
                format!(
                    "{} ({}): tolerance ±{} is wider than {:.0} % of the paper's {}",
                    self.name,
                    self.source,
                    self.tolerance,
                    MAX_REL_TOLERANCE * 100.0,
                    self.paper
                )
            },
        )
    }

    /// Why this row would pass with no effect at all, if it would: a row
    /// stating an effect must fail when the effect vanishes (issue #17).
    /// The figure of no effect is read from the row's name: 1 for a ratio,
    /// 0 for a per-cent figure, a difference, a gain, a cut, a reduction
    /// or a saving; other rows (watts, counts) have none. Not a problem: a
    /// row whose paper figure is that one (it claims no effect), and one
    /// whose band only ends there (it claims at most a slight effect, like
    /// Fig. 1's "little interference", 1.00–1.10). One that held it inside
    /// was '4 stream: time ratio' (0.99–1.09, until 2026-11-25).
    pub fn no_effect_problem(&self) -> Option<String> {
        let name = self.name.as_str();
        let none = if name.contains("ratio") {
            1.0
        } else if ["(%)", "minus", "gain", " cut", "reduction", "saves"]
            .iter()
            .any(|w| name.contains(w))
        {
            0.0
        } else {
            return None;
        };
        let (lo, hi) = (self.paper - self.tolerance, self.paper + self.tolerance);
        let claims_an_effect = (self.paper - none).abs() > 1e-9;
        (self.rel_error.is_some() && claims_an_effect && lo + 1e-9 < none && none < hi - 1e-9).then(
            || {
                format!(
                    "{} ({}): {lo}–{hi} accepts {none}, no effect",
                    self.name, self.source
                )
            },
        )
    }

    /// Mark the row as a figure the model is known not to reach: it is
    /// still shown (as a miss, with its honest tolerance) but does not fail
    /// `ecosched validate`; its test fails once the row passes, so that it
    /// is promoted rather than forgotten.
    pub fn known_miss(mut self) -> Self {
        self.known_miss = true;
        self
    }

    /// Mark the row as predicted: no parameter was set from it.
    pub fn predicted(mut self) -> Self {
        self.kind = RowKind::Predicted;
        self
    }
}

fn run(
    o: Observe,
    scenario: &str,
    policy: &str,
    params: Params,
) -> Result<RunMetrics, EngineError> {
    let s = Scenario::load(scenario)?;
    Ok(simulate(&s, policy, &params, &SimOptions::observing(o), &mut |_| {})?.metrics)
}

/// `policy` on `scenario` with the application declaring `hint` as its
/// parallelism (`None`: no hint, the policy measures it).
fn run_hinted(
    o: Observe,
    scenario: &str,
    policy: &str,
    params: Params,
    hint: Option<u32>,
) -> Result<RunMetrics, EngineError> {
    let mut s = Scenario::load(scenario)?;
    s.spec.parallelism_hint = hint;
    Ok(simulate(&s, policy, &params, &SimOptions::observing(o), &mut |_| {})?.metrics)
}

fn at_mhz(o: Observe, scenario: &str, mhz: u64) -> Result<RunMetrics, EngineError> {
    run(
        o,
        scenario,
        "fixed",
        Params::default().with("freq_mhz", mhz),
    )
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
pub fn merkel_fig1(o: Observe) -> Result<Vec<Check>, EngineError> {
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
            "fits the L2 once: slows markedly when sharing it (§3.1: \"increases considerably\"; Fig. 1's bar is not \
             in the text, and 2.0 is not a reading of it but the midpoint of the 1.3–2.7 this row was first written \
             with, commit c913a66); 1.7–2.3 accepted. \
             Calibrated: set by the miss curve, not the bus. Sharing, each instance keeps 2 MiB of its \
             3.5 MiB working set; the curve's steepness below it (α) was set from this row: α = 3 / 3.5 / 4 / 6 \
             give 1.48× / 1.63× / 1.99× / 5.80×, and α = 4 is used (a known miss at 1.48 until issue #17's last \
             pass). A sweep thrashing its share completely (m = 1, strict LRU) gives 11.6×; under random \
             replacement two cyclic sweeps of W in C hit h = exp(−(1 − h)·2W/C), i.e. m ≈ 0.7 for 3.5 MiB \
             arrays and the calibrated m ≈ 0.17 for ≈ 2.2 MiB: the paper gives neither the size nor the bar's value",
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
pub fn merkel_table1(o: Observe) -> Result<Vec<Check>, EngineError> {
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
    checks.push(
        Check::new(
            "4 stream: time ratio",
            TAB1,
            1.04,
            mean_runtime(&lo, "stream") / mean_runtime(&hi, "stream"),
            0.03,
            "4 × stream, processor energy, 1.6 vs 2.4 GHz; 1.01–1.07 accepted (three quarters of the 4 % effect, as for the mixes, so no slowdown fails; it was ±0.05, which passed 1.00). \
             A known miss: the model gives exactly 1. Four instances ask the front-side bus for more than it carries at either clock, and past \
             rho_max the model's bus is a wall (q6600.toml: bandwidth_gbs and rho_max, both set on 'stream: 4 instances vs alone', where one instance \
             alone fills 98 % of it): the memory latency rises until their traffic is exactly the bus's, whatever the clock. The paper's 4 % needs a \
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
            let row = mixed_column(label, who, figure, paper, of(&lo) / of(&hi), miss);
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
     model's bus is a wall (q6600.toml: bandwidth_gbs and rho_max, both set on 'stream: 4 instances vs alone', where one instance alone fills \
     98 % of it): the memory latency rises until their traffic is exactly the bus's, whatever the clock, so the model gives exactly 1. A \
     bus that saturates gradually would not do: one stream alone takes 3.9/4 ≈ 97 % of what four get (Fig. 1's 3.9×) and at 1.6 GHz \
     still 1/1.13 of its own 2.4 GHz rate (1 stream + 3 aluadd, a pass), so two or more at 1.6 GHz still ask more than any bus of \
     fixed capacity carries (a closed queue solved exactly, its compute time and memory parallelism fitted to those two figures, gives \
     1.000 for two to four streams). The paper's 1.04–1.09 need a bus that carries less when the cores run slower, about 4 % at \
     1.6 GHz, and no source we hold says the Q6600's front-side bus does";

/// Why the model misses an aluadd energy column: power adds over cores.
const MIX_POWER: &str = "the paper's figures for this mix put the processor's power at 1.6 GHz at ×0.72–0.74 of 2.4 GHz's (energy over \
     time, from either benchmark's column), below both like-with-like rows (4 aluadd ×0.778, 4 stream ×0.769). Every core runs at one clock and \
     voltage and power adds over cores and the uncore, so if each benchmark's cores fall as in its like-with-like row a mix falls between \
     the two (a weighted mediant); the model's mixes do (×0.781–0.793 against its ×0.776 and ×0.799), and nothing in the paper says why \
     a mix would fall further";

/// Table 1's per-benchmark columns of the mixed rows, at 1.6 against
/// 2.4 GHz: (mix, benchmark, figure, paper, why the model misses it if it
/// does). The EDP columns are the product of these two to within 3 %
/// (aluadd's 1.63, 1.60 and 1.73 against 1.61, 1.64 and 1.68) and the
/// mix's average EDP is a row of its own, so they add no row.
const TAB1_COLUMNS: [(&str, &str, &str, f64, Option<&str>); 12] = [
    (MIX13, "stream", "time", 1.13, None),
    (MIX13, "stream", "energy", 0.83, None),
    (MIX13, "aluadd", "time", 1.49, None),
    (MIX13, "aluadd", "energy", 1.08, Some(MIX_POWER)),
    (MIX22, "stream", "time", 1.07, Some(BUS_WALL)),
    (MIX22, "stream", "energy", 0.77, None),
    (MIX22, "aluadd", "time", 1.49, None),
    (MIX22, "aluadd", "energy", 1.10, Some(MIX_POWER)),
    (MIX31, "stream", "time", 1.09, Some(BUS_WALL)),
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

/// `row`, a known miss with `why` added to its note when `why` is given.
fn missed_if(row: Check, why: Option<&str>) -> Check {
    match why {
        Some(why) => Check {
            note: format!("{}. A known miss: {why}", row.note),
            ..row
        }
        .known_miss(),
        None => row,
    }
}

/// Why the model misses soplex's energy at 1.6 GHz in Table 2.
const SOPLEX_POWER: &str = "a memory-bound core's power is set by stall_activity (q6600.toml: a stalled core burns 0.8 of a \
     busy one's dynamic power), calibrated on Table 1's '4 stream: energy ratio', which needs stalled cores to burn nearly as much as busy \
     ones; at the paper's 1.13 V and the model's uncore and leakage, Table 2's four soplex at 1.6 GHz (41.8 W) leave each core about \
     0.8 W of dynamic power, a sixth of a busy one's (4.7 W). The two tables disagree under a power that adds over cores (the energy-order row)";

/// Merkel Table 2: hmmer and soplex, like-with-like at each type's best
/// frequency vs mixed at 2.4 GHz vs mixed at 1.6 GHz.
pub fn merkel_table2(o: Observe) -> Result<Vec<Check>, EngineError> {
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

const RFIG: &str = "Richling et al. §II Fig. 1, §V Fig. 2";
const RTAB1: &str = "Richling et al. §V-D, Table I";
const RSEC2: &str = "Richling et al. §II, §V-E";

/// How far apart two run times must be for Richling's words "clearly",
/// "significantly" and "a significant improvement" to hold, as a fraction:
/// §V-C calls the 5 % that experiment C leaves "the gap to the optimum"
/// while counting C as a success, so a difference the text stresses must
/// be larger than that.
pub const RICHLING_CLEAR: f64 = 0.05;

/// Richling Fig. 1–2: `make -jN` on the dual Opteron 2352 under the
/// performance and ondemand governors and the high/low variants.
///
/// Neither figure's values are in the text, so only what the text says
/// of them is checked: ondemand "clearly" slower for N < 8 (§II), its loss
/// largest at small N (§II), variant A "significantly better" than
/// ondemand at small N (§V-A), C's "significant improvement" over B for
/// N = 2 … 6 (§V-C), and C within 5 % of performance (§V-C). Until
/// 2026-11-26 the first, third and fourth were compared with 1.54, 0.725
/// and 1.06, and the second with a -j1 − -j7 gap of 0.5: the midpoints of
/// the bands the rows were first written with (1.08–2.0, 0.5–0.95,
/// 1.00–1.12 and 0.05–0.95, commit 7013fcb), which issue #17 then read as
/// published figures.
///
/// The direction rows are predicted: nothing in `opteron-2352.toml` or the
/// `richling-make-j*` builds was set from Fig. 1 or 2 (the preset's one
/// calibrated parameter, `idle_ceff`, and the builds' `helper_share` come
/// from Table I), and the governor follows the paper's 2.6.25 kernel. The
/// 5 % rows of experiment C keep the label they had.
pub fn richling_fig2(o: Observe) -> Result<Vec<Check>, EngineError> {
    let mut checks = Vec::new();
    let mut ondemand_slowdown = Vec::new();
    let mut b_over_c = Vec::new();
    // Variant A's run time over plain ondemand's, at the N §V-A speaks of.
    let mut a_over_ondemand = BTreeMap::new();
    for n in 1..=8u32 {
        let scenario = format!("richling-make-j{n}");
        let time = |policy: &str, hint: Option<u32>| -> Result<f64, EngineError> {
            Ok(run_hinted(o, &scenario, policy, Params::default(), hint)?.makespan_s)
        };
        let perf = time("performance", None)?;
        let ondemand = time("ondemand", None)? / perf;
        ondemand_slowdown.push(ondemand);
        if n < 8 {
            checks.push(
                Check::ordering(
                    &format!("make -j{n}: ondemand clearly slower than performance (1 = holds)"),
                    RFIG,
                    ondemand > 1.0 + RICHLING_CLEAR,
                    &format!(
                        "§II: Fig. 1 (its values are not in the text) 'clearly shows the \
                         performance degrading effect' for N < 8; held when ondemand's run \
                         time exceeds performance's by more than {:.0} %; simulated \
                         {ondemand:.3}×",
                        RICHLING_CLEAR * 100.0
                    ),
                )
                .predicted(),
            );
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
        if matches!(n, 2 | 6 | 7) {
            a_over_ondemand.insert(n, time("hilo-ondemand", Some(n))? / perf / ondemand);
        }
    }
    let a_at = |n: u32| a_over_ondemand.get(&n).copied().unwrap_or(f64::NAN);
    checks.push(
        Check::ordering(
            "make -j2: variant A (H by affinity, ondemand) clearly faster than plain ondemand (1 = holds)",
            RFIG,
            a_at(2) < 1.0 - RICHLING_CLEAR,
            &format!(
                "§V-A: 'significantly better than the original on-demand approach for small \
                 parallelisms' (Fig. 2's values are not in the text); held when A's run time is \
                 more than {:.0} % below ondemand's; simulated {:.3}×",
                RICHLING_CLEAR * 100.0,
                a_at(2)
            ),
        )
        .predicted(),
    );
    checks.push(
        Check::ordering(
            "ondemand's slowdown at -j1 larger than at -j7 (1 = holds)",
            RFIG,
            ondemand_slowdown[0] > ondemand_slowdown[6],
            &format!(
                "§II: the effect is 'more pronounced if there is a large distance between the \
                 number of available cores and the parallelism' (no figure); simulated -j1 \
                 {:.3}×, -j7 {:.3}×",
                ondemand_slowdown[0], ondemand_slowdown[6]
            ),
        )
        .predicted(),
    );
    checks.push(
        Check::ordering(
            "make -j6 and -j7: variant A slower than plain ondemand (1 = holds)",
            RFIG,
            a_at(6) > 1.0 && a_at(7) > 1.0,
            &format!(
                "§V-A: 'For parallelisms between 6 and 7, it is a little worse than the on-demand \
                 approach without core restrictions', which the paper puts down to make competing \
                 with the jobs in too small an H; simulated A/ondemand -j6 {:.3}, -j7 {:.3}. A \
                 known miss with the cause of the B-against-C row: what competes with the jobs \
                 for H in the model is the helpers' 2 % (helper_share, pinned by Table I), less \
                 than the cold starts on idle cores that A avoids. Measured on -j6 (seed 5, \
                 `compare` on a copy of the scenario): make_ms 3.3 → 10 ms leaves A/ondemand at \
                 0.952, and helper_share 0.06 gives 0.979",
                a_at(6),
                a_at(7)
            ),
        )
        .predicted()
        .known_miss(),
    );
    let b_over_c_mean = mean(b_over_c.iter().copied());
    let b_over_c_list = (2..=6)
        .zip(&b_over_c)
        .map(|(n, r)| format!("-j{n} {r:.3}"))
        .collect::<Vec<_>>()
        .join(", ");
    checks.push(
        Check::ordering(
            "-j2 … -j6: variant C (with spare) clearly faster than B (no spare) (1 = holds)",
            RFIG,
            b_over_c_mean > 1.0 + RICHLING_CLEAR,
            &format!(
                "§V-C: for N = 2 … 6 'a significant improvement is achieved' over experiments A \
                 and B (without the spare, make competes with the jobs for H); held when B's run \
                 time exceeds C's by more than {:.0} % on average; simulated B/C \
                 {b_over_c_mean:.3} ({b_over_c_list}). A known miss: without the spare what \
                 competes with the jobs for H is the helpers beside each compiler (gcc -pipe's \
                 assembler; helper_share 0.02, set from Table I's 1.9 % for high/low without a \
                 spare at -j1), so B loses about that at every N. Measured on -j4 (seed 5, \
                 `compare` on a copy of the scenario): make's own cost does not matter (make_ms \
                 3.3 → 10 ms: B/C 1.033 → 1.030); helper_share 0.06 gives 1.063, but Table I's \
                 high/low row then reads 1.058 against its 1.019 ± 0.015. Nothing in the model \
                 makes the missing spare cost more at -j2 … -j6 than at -j1. Until 2026-11-26 \
                 this row passed a 1.02–1.10 band around 1.06, which is not a figure of the paper",
                RICHLING_CLEAR * 100.0
            ),
        )
        .predicted()
        .known_miss(),
    );
    Ok(checks)
}

/// Richling Table I: `make -j1` on the Phenom 9750 under five policies.
pub fn richling_table1(o: Observe) -> Result<Vec<Check>, EngineError> {
    let scenario = "richling-phenom-j1";
    let run1 = |policy: &str, params: Params| run_hinted(o, scenario, policy, params, Some(1));
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
            0.015,
            "6:11 vs 6:04: make and the assembler share the single high core; 1.004–1.034 \
             accepted, narrower than the 1.9 % effect, so equal run times fail",
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
            0.19,
            "7:44 vs 6:04 (27 %); 1.09–1.47 accepted (15 %). Each job starts where 2.6.25's exec \
             balancing puts it (kernel.rs, `NewTaskTarget::ExecBalance`): beside `make` unless \
             another CPU looked idle at its last tick, which on a tickless machine is only the \
             idle load balancer (every other idle CPU keeps the load its last busy tick saw); \
             either is often a cold core at 1.2 GHz, as `make` itself wakes on the CPU idle \
             longest. With every new job on the CPU idle longest instead, the row was 1.503, a \
             known miss: a job waited on a cold core for its deferred sample and then the next \
             one on the 200 ms grid",
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
            "-j1 ondemand: average power (W)",
            RTAB1,
            113.0,
            w(&ondemand),
            11.5,
            "Table I: 113 W; 101.5–124.5 W accepted (15 %, at most half the 23 W it saves \
             against performance). Predicted: nothing was set from it",
        )
        .predicted(),
        Check::new(
            "-j1 all cores low: average power (W)",
            RTAB1,
            79.0,
            w(&low),
            11.8,
            "Table I: 79 W; 67.2–90.8 W accepted (15 %). A known miss: the model drops 136 → \
             121 W for three idle cores at 1.2 GHz (the row the idle ceff was set on) but only \
             to about 108 W with every core at 1.2 GHz and the plane at the estimated 1.05 V, \
             where the paper's machine lost 57 W. Neither leakage nor the plane's voltage can \
             close it: the preset's power that follows no core (base_w 68.6, set so that \
             performance draws 136 W, + uncore 12 + idle memory 5 = 85.6 W) is above 79 W \
             already. Under power.rs's law, 136 and 79 W together (121 W holds whatever the \
             split) need ceff ≈ 14.9, a busy core drawing about 56 W of dynamic power at the \
             wall at 2.4 GHz and 1.25 V, and base_w ≈ 24 W; the preset's ceff is 2.9 \
             ([estimate], the Opteron 2352's K10 core: 11 W), and one core of a 95 W \
             quad-core cannot draw 56 W even counting the supply's losses (a quarter of the \
             part is 24 W), so the row stays a miss (arithmetic of 2026-11-27)",
        )
        .predicted()
        .known_miss(),
        Check::new(
            "-j1 ondemand vs performance (energy ratio)",
            RTAB1,
            14.64 / 13.77,
            e(&ondemand),
            0.03,
            &format!(
                "14.64 vs 13.77 Wh; 1.033–1.093 accepted (half the 6.3 % effect, so equal energy \
                 fails). A known miss: it compounds two rows that each pass inside their own \
                 bands, both on the high side: the build runs {od_time:.3}× performance's time \
                 (paper 1.275×) at {od_w:.1} W (paper 113 W), and the ratio is {od_time:.3} × \
                 {od_w:.1} W / {:.1} W",
                w(&perf),
                od_time = t(&ondemand),
                od_w = w(&ondemand),
            ),
        )
        .predicted()
        .known_miss(),
        Check::new(
            "-j1 all cores low vs performance (energy ratio)",
            RTAB1,
            15.57 / 13.77,
            e(&low),
            0.065,
            "15.57 vs 13.77 Wh; 1.066–1.196 accepted (half the 13.1 % effect). A known miss: it \
             follows the all-low power row's",
        )
        .predicted()
        .known_miss(),
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

const PAM_MODEL: &str = "Banikazemi et al. (PAM) §IV-C, eq. 14";
const PAM_OCC: &str = "Banikazemi et al. (PAM) §IV-C";
const PAM_GAIN: &str = "Banikazemi et al. (PAM) §V-B/C, Figs. 4, 6, abstract";
const PAM_CAP: &str = "Banikazemi et al. (PAM) §V-G, Figs. 11–12";
const PAM_LIMIT: &str = "Banikazemi et al. (PAM) §V-B, Figs. 4–5";
const PAM_MIX: &str = "Banikazemi et al. (PAM) §V-E, Figs. 8–9";

/// One task over one interval, as PAM's counters see it.
#[derive(Debug, Clone, PartialEq)]
pub struct PamSample {
    /// Task name.
    pub name: String,
    /// L1D miss ratio.
    pub m1: f64,
    /// Shared-cache miss ratio.
    pub m2: f64,
    /// Cycles per instruction.
    pub cpi: f64,
    /// Lines brought into the shared cache.
    pub lines: f64,
}

/// Per-task samples of every interval of a trace (after the first, which
/// carries start-up), skipping intervals a task barely ran in.
pub fn pam_samples(trace: &Trace) -> Vec<Vec<PamSample>> {
    trace
        .steps
        .iter()
        .skip(1)
        .map(|step| {
            step.snapshot
                .live_managed()
                .filter_map(|t| {
                    let c = &t.counters;
                    let instructions = c.instructions.filter(|&i| i > 1_000_000)? as f64;
                    let ratio = |a: Option<u64>, b: Option<u64>| {
                        Some(a? as f64 / b.filter(|&b| b > 0)? as f64)
                    };
                    Some(PamSample {
                        name: t.name.clone(),
                        m1: ratio(c.l1d_misses, c.l1d_references)?,
                        m2: ratio(c.llc_misses, c.llc_references)?,
                        cpi: c.cycles? as f64 / instructions,
                        lines: c.lines_in? as f64,
                    })
                })
                .collect()
        })
        .collect()
}

fn trace_of(
    o: &SimOptions,
    scenario: &str,
    policy: &str,
    params: Params,
) -> Result<Trace, EngineError> {
    let s = Scenario::load(scenario)?;
    Ok(simulate_traced(&s, policy, &params, o)?.1)
}

/// The counters PAM's measurement rows read (eqs. 5–14), opened beside
/// whatever the run's policy needs, as an experimenter runs `perf stat -e`
/// beside a workload. Under `--observe linux` they are multiplexed.
pub fn pam_measurement(o: Observe) -> SimOptions {
    use ecosched_model::CounterKind as K;
    SimOptions {
        extra_counters: [
            K::Instructions,
            K::Cycles,
            K::LlcReferences,
            K::LlcMisses,
            K::L1dReferences,
            K::L1dMisses,
            K::LinesIn,
        ]
        .into(),
        ..SimOptions::observing(o)
    }
}

/// Mean relative error of eq. 14 on samples whose name starts with one of
/// `prefixes`.
pub fn eq14_error(samples: &[Vec<PamSample>], prefixes: &[&str]) -> f64 {
    let model = CpiModel::PAPER;
    mean(
        samples
            .iter()
            .flatten()
            .filter(|s| prefixes.iter().any(|p| s.name.starts_with(p)))
            .map(|s| (model.cpi(s.m1, s.m2) - s.cpi).abs() / s.cpi),
    )
}

/// PAM's rows of SIMULATOR.md §6: the CPI fit, the occupancies of bzip2
/// and libquantum sharing an L2, and the gain of separating
/// cache-sensitive from streaming tasks.
pub fn pam_checks(o: Observe) -> Result<Vec<Check>, EngineError> {
    // bzip2 and libquantum confined to the two CPUs of one L2.
    let measure = pam_measurement(o);
    let shared = pam_samples(&trace_of(
        &measure,
        "pam-bzip2-libq",
        "static",
        Params::default().with("cpus", "0-1"),
    )?);
    let occupancy = |who: &str| {
        // Only intervals in which both ran (one finishes before the other).
        mean(
            shared
                .iter()
                .filter(|step| step.len() == 2)
                .filter_map(|step| {
                    let total: f64 = step.iter().map(|s| s.lines).sum();
                    let mine = step.iter().find(|s| s.name.starts_with(who))?;
                    (total > 0.0).then(|| mine.lines / total)
                }),
        )
    };
    // The paper fitted eq. 14 on the two benchmarks' counters: here each
    // alone on the machine, and the two together in one L2.
    let mut fit = shared.clone();
    let pair = Scenario::load("pam-bzip2-libq")?;
    for name in ["bzip2", "libquantum"] {
        if let Some(alone) = pair.alone(name) {
            let (_, trace) = simulate_traced(&alone, "ondemand", &Params::default(), &measure)?;
            fit.extend(pam_samples(&trace));
        }
    }
    let fit_error = eq14_error(&fit, &["bzip2", "libquantum"]);
    // Separating xalancbmk from libquantum: PAM against the kernel's own
    // placement under ondemand.
    let scenario = Scenario::load("pam-libq-xalancbmk")?;
    let report = compare(
        &scenario,
        &[
            ("ondemand".into(), Params::default()),
            ("pam".into(), Params::default()),
        ],
        "ondemand",
        &SimOptions::observing(o),
        &mut |_, _| {},
    )?;
    let gain = report
        .ratios
        .get("pam")
        .and_then(|r| r.speedup_geomean)
        .unwrap_or(f64::NAN)
        - 1.0;
    let base = &report.results[0];
    let pam = &report.results[1];
    let moves =
        |m: &crate::report::SimReport| -> u64 { m.tasks.iter().filter_map(|t| t.migrations).sum() };
    let best_single = pam
        .tasks
        .iter()
        .filter_map(|t| {
            let b = base.tasks.iter().find(|b| b.name == t.name)?;
            Some(1.0 - t.runtime_s / b.runtime_s)
        })
        .fold(f64::NAN, f64::max);
    Ok(vec![
        Check::new(
            "eq. 14 CPI model on simulated bzip2 + libquantum counters: mean |relative error|",
            PAM_MODEL,
            0.0,
            fit_error,
            0.10,
            "CPI = 0.733 + 3.43·m1 + 110·m1·m2 evaluated on every per-interval sample of bzip2 and libquantum, each alone and the two together in one L2. Calibrated, true by construction: both profiles' cpi_core, api and memory term were derived from eq. 14 itself (profiles.toml), so the row checks that derivation, not a prediction",
        ),
        Check::new(
            "bzip2 occupancy beside libquantum in one L2",
            PAM_OCC,
            0.15,
            occupancy("bzip2"),
            0.0225,
            "O = lines in / lines in of the L2 (eq. 6), mean over intervals; both confined to CPUs 0-1. Calibrated: libquantum's prefetch coverage was set so that it holds ≈ 0.85 here",
        ),
        Check::new(
            "libquantum occupancy beside bzip2 in one L2",
            PAM_OCC,
            0.85,
            occupancy("libquantum"),
            0.05,
            "as above; libquantum streams and takes most of the cache (calibrated with the row above)",
        ),
        Check::new(
            "4 libquantum + 4 xalancbmk: system gain of PAM over Linux (geomean speedup − 1)",
            PAM_GAIN,
            0.125,
            gain,
            0.018,
            "SIMULATOR.md §6: 'roughly 10–15 %' (the paper's best system-wide figure is 14 %), read as 0.125; 0.107–0.143 accepted (15 %). \
             Calibrated with the row below: xalancbmk's and libquantum's miss curves were set from the two (profiles.toml)",
        ),
        Check::new(
            "4 libquantum + 4 xalancbmk: largest single-benchmark run-time reduction",
            PAM_GAIN,
            0.33,
            best_single,
            0.049,
            "the paper: 'as much as 33 % for individual threads'; 0.28–0.38 accepted (15 %). Calibrated with the row above: the two figures together say that libquantum loses when paired with itself ('Libq suffers a bit', §V-C; ≈ 15 % if both come from this mix), which the model gives by libquantum's miss curve",
        ),
        Check::ordering(
            "4 libquantum + 4 xalancbmk: PAM moves the processes more often than Linux (1 = holds)",
            PAM_GAIN,
            moves(pam) > moves(base),
            &format!(
                "§V-C, Fig. 6: without PAM a process, once placed, is rarely moved; with PAM there are more changes. \
                 CPU migrations over the run: Linux {}, PAM {}. Predicted: nothing was set from them",
                moves(base),
                moves(pam)
            ),
        )
        .predicted(),
    ])
}

/// PAM against the kernel's placement under ondemand on `scenario`, with
/// PAM's `params`: the system gain (geomean speedup − 1) and each
/// benchmark's mean run-time ratio PAM/Linux (instances grouped by the
/// profile their name starts with).
fn pam_vs_linux(
    o: Observe,
    scenario: &str,
    params: Params,
) -> Result<(f64, BTreeMap<String, f64>), EngineError> {
    let scenario = Scenario::load(scenario)?;
    let report = compare(
        &scenario,
        &[
            ("ondemand".into(), Params::default()),
            ("pam".into(), params),
        ],
        "ondemand",
        &SimOptions::observing(o),
        &mut |_, _| {},
    )?;
    let gain = report
        .ratios
        .get("pam")
        .and_then(|r| r.speedup_geomean)
        .unwrap_or(f64::NAN)
        - 1.0;
    let (base, pam) = (&report.results[0], &report.results[1]);
    let mut ratios: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for t in &pam.tasks {
        if let Some(b) = base.tasks.iter().find(|b| b.name == t.name) {
            let bench = t.name.split('#').next().unwrap_or(&t.name);
            ratios
                .entry(bench.to_string())
                .or_default()
                .push(t.runtime_s / b.runtime_s);
        }
    }
    let means = ratios
        .into_iter()
        .map(|(k, v)| (k, mean(v.into_iter())))
        .collect();
    Ok((gain, means))
}

/// The Fig. 4 mixes (4 libquantum beside 4 of one CINT2006 benchmark)
/// besides xalancbmk (calibrated) and mcf (its own rows).
const PAM_FIG4_OTHERS: [&str; 6] = ["bzip2", "gcc", "hmmer", "omnetpp", "perlbench", "sjeng"];

/// Predicted PAM rows (issue #17): effects the paper states in its text
/// for mixes nothing in the model was set from (the profiles of mcf,
/// omnetpp and the three-benchmark mixes are representative values; only
/// libquantum, bzip2 and xalancbmk were fitted, on the calibrated rows).
pub fn pam_predicted(o: Observe) -> Result<Vec<Check>, EngineError> {
    let (gain, ratio) = pam_vs_linux(o, "pam-libq-mcf", Params::default())?;
    let mut best_other = gain;
    let (gain95, ratio95) = pam_vs_linux(
        o,
        "pam-libq-mcf",
        Params::default().with("max_degradation", 0.95),
    )?;
    let mut others = Vec::new();
    for mix in PAM_FIG4_OTHERS {
        let (g, _) = pam_vs_linux(o, &format!("pam-libq-{mix}"), Params::default())?;
        others.push(format!("{mix} {g:.3}"));
        best_other = best_other.max(g);
    }
    let (gain323, _) = pam_vs_linux(o, "pam-mix-323", Params::default())?;
    let (gain333, _) = pam_vs_linux(o, "pam-mix-333", Params::default())?;
    let libq = |r: &BTreeMap<String, f64>| r.get("libquantum").copied().unwrap_or(f64::NAN);
    let mcf = ratio.get("mcf").copied().unwrap_or(f64::NAN);
    Ok(vec![
        Check::ordering(
            "4 libquantum + 4 mcf: PAM improves the system (1 = holds)",
            PAM_LIMIT,
            gain > 0.0,
            &format!("§V-B: 'even though the overall performance is improved'; simulated gain {gain:.3}"),
        )
        .predicted(),
        Check::ordering(
            "4 libquantum + 4 mcf: libquantum itself runs longer under PAM (1 = holds)",
            PAM_LIMIT,
            libq(&ratio) > 1.0,
            &format!(
                "§V-B: 'the performance of Libq itself degrades significantly'; run-time ratio PAM/Linux: libquantum {:.3}, mcf {mcf:.3} (Fig. 4's bars are not in the text)",
                libq(&ratio)
            ),
        )
        .predicted(),
        Check::ordering(
            "4 libquantum + 4 mcf: a 95 % degradation limit shrinks libquantum's loss (1 = holds)",
            PAM_LIMIT,
            libq(&ratio95) < libq(&ratio),
            &format!(
                "Fig. 5: 'when this limit is set to 95%, Libq degradation is reduced substantially'; libquantum's run-time ratio {:.3} with max_degradation 0.95, {:.3} with the default 0.10",
                libq(&ratio95),
                libq(&ratio)
            ),
        )
        .predicted(),
        Check::ordering(
            "4 libquantum + 4 mcf: a 95 % degradation limit shrinks the system gain (1 = holds)",
            PAM_LIMIT,
            gain95 < gain,
            &format!(
                "Fig. 5: '… and overall performance improvement decreases'; gain {gain95:.3} with the limit, {gain:.3} without"
            ),
        )
        .predicted(),
        Check::ordering(
            "Fig. 4's other libquantum mixes: none gains more than the paper's best system-wide figure, 14 % (1 = holds)",
            PAM_GAIN,
            best_other <= 0.14,
            &format!(
                "abstract: 'the overall system performance can be improved by as much as 14%'; PAM's system gain over Linux with 4 libquantum beside 4 of each: mcf {gain:.3}, {}",
                others.join(", ")
            ),
        )
        .predicted(),
        Check::ordering(
            "3 + 2 + 3 and 3 + 3 + 3 mixes: PAM improves the system in both (1 = holds)",
            PAM_MIX,
            gain323 > 0.0 && gain333 > 0.0,
            &format!(
                "§V-E: 'in most cases using PAM leads to a better performance', also with more threads than CPUs; the figures' benchmarks are not in the text (stand-ins, see the scenarios); simulated gain {gain323:.3} (3 + 2 + 3), {gain333:.3} (3 + 3 + 3)"
            ),
        )
        .predicted(),
    ])
}

/// The power cap of §V-G: the CINT2006-like suite under 260 W keeps 4–5
/// CPUs in use.
pub fn pam_power_cap(o: Observe) -> Result<Vec<Check>, EngineError> {
    let trace = trace_of(
        &SimOptions::observing(o),
        "pam-powercap",
        "pam",
        Params::default()
            .with("goal", "power-cap")
            .with("power_cap_w", 260),
    )?;
    let cap = cap_figures(&trace, 260.0);
    let intervals: usize = cap.intervals_by_cpus.iter().sum();
    let four_or_five = cap.intervals_by_cpus.iter().skip(4).take(2).sum::<usize>() as f64
        / intervals.max(1) as f64;
    let counts = cap
        .intervals_by_cpus
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k} CPUs: {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(vec![Check::ordering(
        "CINT2006-like suite under a 260 W cap: four or five CPUs in use in most intervals (1 = holds)",
        PAM_CAP,
        four_or_five > 0.5,
        &format!(
            "§V-G: 'in most cases four or five CPUs are used' (no mean is given; until 2026-11-26 \
             this row compared the mean with 4.5, the midpoint of the two counts); CPUs allowed by \
             the cap per interval: {counts} ({:.0} % with four or five; mean {:.2})",
            four_or_five * 100.0,
            cap.mean_cpus
        ),
    )])
}

/// How well a run held a power cap.
#[derive(Debug, Clone, PartialEq)]
pub struct CapFigures {
    /// Fraction of intervals whose mean power exceeded the cap.
    pub fraction_above: f64,
    /// Worst interval's power above the cap, W (0 if never above).
    pub worst_overshoot_w: f64,
    /// The same from the second interval on: the first one runs before the
    /// policy has measured anything, so nothing can hold it.
    pub worst_overshoot_after_first_w: f64,
    /// Mean power, W.
    pub mean_power_w: f64,
    /// Mean number of CPUs the managed tasks were allowed, over intervals.
    pub mean_cpus: f64,
    /// Intervals by the number of CPUs the managed tasks were allowed:
    /// `intervals_by_cpus[k]` counts the intervals with `k` CPUs.
    pub intervals_by_cpus: Vec<usize>,
}

/// Cap-holding figures from a trace (system meter, or package if absent).
pub fn cap_figures(trace: &Trace, cap_w: f64) -> CapFigures {
    let all = trace.header.topology.online_cpus().len() as f64;
    let mut allowed = trace
        .initial_plan
        .managed_cpus
        .as_ref()
        .map_or(all, |s| s.len() as f64);
    let (mut above, mut n, mut worst, mut power_sum, mut cpu_sum) =
        (0usize, 0usize, 0.0f64, 0.0, 0.0);
    let mut worst_later = 0.0f64;
    let mut intervals_by_cpus = vec![0; all as usize + 1];
    for step in &trace.steps {
        let p = &step.snapshot.power;
        if let Some(j) = p.system_j.or(p.package_j) {
            let w = j / step.snapshot.interval_s.max(1e-9);
            n += 1;
            power_sum += w;
            cpu_sum += allowed;
            intervals_by_cpus[(allowed as usize).min(all as usize)] += 1;
            if w > cap_w {
                above += 1;
                worst = worst.max(w - cap_w);
                if n > 1 {
                    worst_later = worst_later.max(w - cap_w);
                }
            }
        }
        if let Some(set) = &step.plan.managed_cpus {
            allowed = set.len() as f64;
        }
    }
    let n_f = n.max(1) as f64;
    CapFigures {
        fraction_above: above as f64 / n_f,
        worst_overshoot_w: worst,
        worst_overshoot_after_first_w: worst_later,
        mean_power_w: power_sum / n_f,
        mean_cpus: cpu_sum / n_f,
        intervals_by_cpus,
    }
}

/// The five source papers, so that `validate --paper` can run one
/// paper's rows alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paper {
    /// Merkel, Stoess, Bellosa (EuroSys'10): Figs. 1, 5, 6, 8, Tables 1–2.
    Merkel,
    /// Richling et al.: Figs. 1–2, Table I, §II's three quad-cores.
    Richling,
    /// Banikazemi et al. (PAM).
    Pam,
    /// Dhiman et al. (WCA).
    Dhiman,
    /// Patel's thesis: Tables 3–4, 21, 24–25.
    Patel,
}

impl Paper {
    /// Every paper, in the order `validate` reports them.
    pub const ALL: [Paper; 5] = [
        Paper::Merkel,
        Paper::Richling,
        Paper::Pam,
        Paper::Dhiman,
        Paper::Patel,
    ];

    /// The name `--paper` takes.
    pub fn name(self) -> &'static str {
        match self {
            Paper::Merkel => "merkel",
            Paper::Richling => "richling",
            Paper::Pam => "pam",
            Paper::Dhiman => "dhiman",
            Paper::Patel => "patel",
        }
    }
}

impl std::str::FromStr for Paper {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Paper::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let valid: Vec<&str> = Paper::ALL.iter().map(|p| p.name()).collect();
                format!("unknown paper {s:?}; valid: {}", valid.join(", "))
            })
    }
}

/// One group of rows and the paper it checks.
type RowGroup = (Paper, fn(Observe) -> Result<Vec<Check>, EngineError>);

/// Every group of rows, in the order `validate` prints them.
const GROUPS: [RowGroup; 18] = [
    (Paper::Merkel, merkel_fig1),
    (Paper::Merkel, merkel_table1),
    (Paper::Merkel, merkel_table2),
    (Paper::Richling, richling_fig2),
    (Paper::Richling, richling_table1),
    (Paper::Pam, pam_checks),
    (Paper::Pam, pam_predicted),
    (Paper::Pam, pam_power_cap),
    (Paper::Dhiman, |_| dhiman_checks()),
    (Paper::Merkel, merkel_fig5),
    (Paper::Merkel, merkel_fig6),
    (Paper::Patel, |_| patel_table4()),
    (Paper::Patel, |_| patel_tables24_25()),
    (Paper::Patel, |_| patel_table21()),
    (Paper::Patel, |_| patel_table8()),
    (Paper::Richling, richling_fig1_ordering),
    (Paper::Richling, richling_three_quads),
    (Paper::Merkel, merkel_xnode),
];

/// Every check.
pub fn all_checks(o: Observe) -> Result<Vec<Check>, EngineError> {
    checks_of(&Paper::ALL, o)
}

/// The checks of the named papers, in `all_checks`'s order.
pub fn checks_of(papers: &[Paper], o: Observe) -> Result<Vec<Check>, EngineError> {
    let mut out = Vec::new();
    for (paper, rows) in GROUPS {
        if papers.contains(&paper) {
            out.extend(rows(o)?);
        }
    }
    Ok(out)
}

const PATEL_T3: &str = "Patel, PhD thesis (UNLV 2012) §9.2.1, Table 3";
const PATEL_T4: &str = "Patel, PhD thesis (UNLV 2012) §9.2.1, Table 4";
const PATEL_T21: &str = "Patel, PhD thesis (UNLV 2012) §9.2.3, Table 21";
const PATEL_T24: &str = "Patel, PhD thesis (UNLV 2012) §9.2.4, Table 24";
const PATEL_T25: &str = "Patel, PhD thesis (UNLV 2012) §9.2.4, Table 25";
const PATEL_T8: &str = "Patel, PhD thesis (UNLV 2012) §9.2.2, Table 8";

/// What Patel measured beside every run with `perf` (§9.1): instructions
/// for the metrics, cache references and misses (Table 21), context
/// switches and migrations (Table 25). Always observed as Linux would see
/// it, because these rows are about the policies' gains.
fn patel_measurement() -> SimOptions {
    use ecosched_model::CounterKind as K;
    SimOptions {
        extra_counters: [
            K::Instructions,
            K::LlcReferences,
            K::LlcMisses,
            K::ContextSwitches,
            K::Migrations,
        ]
        .into(),
        ..SimOptions::observing(Observe::Linux)
    }
}

/// Seeds 1..=N every Patel row averages over. One run's counts swing with
/// the seed by as much as the differences the thesis reports (algorithm
/// 4's migration cut against algorithm 2: −62 % to +36 % over seeds 1–12;
/// Task 1's performance +5.2 to +7.5 %), so one seed cannot decide a row,
/// and twelve left Table 25's migration cut passing on some seed sets and
/// failing on others (`validate --reseed 5`); 36 shrink the standard
/// error by √3.
pub const PATEL_SEEDS: u64 = 36;

/// The runs of `policies` on `scenario` (in that order), once per seed
/// 1..=[`PATEL_SEEDS`].
fn patel_seed_runs(scenario: &str, policies: &[&str]) -> Result<Vec<Vec<SimRun>>, EngineError> {
    let s = Scenario::load(scenario)?;
    (1..=PATEL_SEEDS)
        .map(|seed| {
            let o = SimOptions {
                seed: Some(seed),
                ..patel_measurement()
            };
            policies
                .iter()
                .map(|p| simulate(&s, p, &Params::default(), &o, &mut |_| {}))
                .collect()
        })
        .collect()
}

/// The spread of `figure` over the seeds' runs, and on how many seeds it
/// was above 0.
fn over_seeds(
    runs: &[Vec<SimRun>],
    figure: impl Fn(&[SimRun]) -> f64,
) -> (crate::seeds::Spread, usize) {
    let values: Vec<f64> = runs.iter().map(|r| figure(r)).collect();
    let above = values.iter().filter(|v| **v > 0.0).count();
    let nan = crate::seeds::Spread {
        mean: f64::NAN,
        std: f64::NAN,
    };
    (crate::seeds::Spread::of(&values).unwrap_or(nan), above)
}

/// `(1 − x / base) × 100`, a reduction in percent.
fn reduction_pct(x: Option<f64>, base: Option<f64>) -> f64 {
    match (x, base) {
        (Some(x), Some(b)) if b > 0.0 => (1.0 - x / b) * 100.0,
        _ => f64::NAN,
    }
}

/// Patel Table 3: per task, instructions/s (billions) and instructions/s
/// per watt (millions) of algorithm 1 and of the control group. Their
/// quotient is the wall power the thesis measured (a KillAWatt, §9.1):
/// `(task, test ips, test ips/W, control ips, control ips/W)`.
const PATEL_TABLE3: [(u32, f64, f64, f64, f64); 4] = [
    (1, 1.518, 11.411, 1.441, 10.004),
    (2, 1.233, 8.560, 1.313, 8.361),
    (3, 0.966, 6.569, 1.507, 8.237),
    (4, 0.520, 3.541, 0.744, 4.067),
];

/// The wall power of one Table 3 entry, W.
fn patel_watts(ips_g: f64, ips_per_w_m: f64) -> f64 {
    ips_g * 1e3 / ips_per_w_m
}

/// Mean instructions/s (billions) of the tasks whose name starts with
/// `prefix`, as the thesis's Table 2 gives it per process.
fn mean_task_ips_g(m: &RunMetrics, prefix: &str) -> f64 {
    let ips: Vec<f64> = m
        .tasks
        .iter()
        .filter(|t| t.name.starts_with(prefix))
        .filter_map(|t| t.instructions_per_s())
        .collect();
    ips.iter().sum::<f64>() / ips.len() as f64 / 1e9
}

/// One Patel task run under control and algorithm 1, every figure a mean
/// over seeds 1..=[`PATEL_SEEDS`] (one run of the four-task table swings
/// with the seed: Task 1's performance from +5.2 to +7.5 %).
struct PatelTaskMeans {
    /// Loaded wall power, W: control, algorithm 1.
    watts: (f64, f64),
    /// Mean over processes of ins/s: control, algorithm 1.
    ips: (f64, f64),
    /// Control's non-CPU-intensive programs' ins/s (billions).
    control_noncpu_ips_g: f64,
    /// Algorithm 1 against control, %: loaded power saved, power saved
    /// over the run, performance, performance per watt.
    saved_loaded: f64,
    saved_average: f64,
    perf: f64,
    ppw: f64,
}

fn patel_task_means(task: u32) -> Result<PatelTaskMeans, EngineError> {
    let runs = patel_seed_runs(&format!("patel-task{task}"), &["ondemand", "patel1"])?;
    let mean = |f: &dyn Fn(&[SimRun]) -> Option<f64>| {
        over_seeds(&runs, |r| f(r).unwrap_or(f64::NAN)).0.mean
    };
    let vs = |f: fn(&ecosched_model::PatelComparison) -> Option<f64>| {
        mean(&|r| {
            f(&ecosched_model::PatelComparison::new(
                &r[1].metrics,
                &r[0].metrics,
            ))
        })
    };
    Ok(PatelTaskMeans {
        watts: (
            mean(&|r| r[0].metrics.patel.loaded_power_w),
            mean(&|r| r[1].metrics.patel.loaded_power_w),
        ),
        ips: (
            mean(&|r| r[0].metrics.patel.mean_ips),
            mean(&|r| r[1].metrics.patel.mean_ips),
        ),
        control_noncpu_ips_g: mean(&|r| Some(mean_task_ips_g(&r[0].metrics, "non-cpuintensive"))),
        saved_loaded: vs(|c| c.loaded_power_savings_pct),
        saved_average: vs(|c| c.power_savings_pct),
        perf: vs(|c| c.performance_improvement_pct),
        ppw: vs(|c| c.perf_per_w_improvement_pct),
    })
}

/// Patel Tables 3 and 4: algorithm 1 (`patel1`) against the control group
/// (default scheduler + ondemand) on Tasks 1–4, each figure a mean over
/// seeds 1..=[`PATEL_SEEDS`]. The wall power of every task and group
/// (Table 3) is a numeric row; so is each figure of Table 4 (each note
/// says whether at least the direction holds), and the growth of the
/// savings with load an ordering row.
///
/// Calibrated: the Opteron 6134 preset's `base_w` was set from Task 4's
/// control power (183 W), so that row and Task 4's power saving (which
/// divides by it) are calibrated. Everything else is predicted.
///
/// Power is the *loaded* power (while every program still runs): the
/// thesis's Tasks 3 and 4 save exactly the same 36 W, which is what two
/// steady full-load readings of the wall meter give, not two run averages
/// with different tails.
pub fn patel_table4() -> Result<Vec<Check>, EngineError> {
    let mut checks = Vec::new();
    let paper = [
        (1, 7.64, 5.08, 12.33),
        (2, 8.28, -6.10, 2.32),
        (3, 19.67, -35.94, -20.26),
        (4, 19.67, -30.06, -12.93),
    ];
    let band = |p: f64| MAX_REL_TOLERANCE * p.abs();
    // Per task of Table 3 (Tasks 1–4 in order, as `paper`): the model's
    // means and the thesis's control and algorithm 1 watts.
    let mut means = Vec::new();
    for (task, t_ips, t_ipsw, c_ips, c_ipsw) in PATEL_TABLE3 {
        let m = patel_task_means(task)?;
        let paper_w = (patel_watts(c_ips, c_ipsw), patel_watts(t_ips, t_ipsw));
        // Task 4's control power set the preset's base_w.
        for (group, simulated, watts, calibrated) in [
            ("control (ondemand)", m.watts.0, paper_w.0, task == 4),
            ("algorithm 1", m.watts.1, paper_w.1, false),
        ] {
            let row = Check::new(
                &format!("Task {task} {group}: loaded wall power (W)"),
                PATEL_T3,
                watts,
                simulated,
                band(watts),
                &format!(
                    "the thesis's ins/s over ins/s per watt ({:.0} W); simulated {simulated:.1} W \
                     at the system meter while every program runs, mean over seeds \
                     1–{PATEL_SEEDS} (15 %){}",
                    watts,
                    if calibrated {
                        "; the Opteron 6134 preset's base_w was set from this row"
                    } else {
                        ""
                    }
                ),
            );
            checks.push(if calibrated { row } else { row.predicted() });
        }
        means.push((m, paper_w));
    }
    let mut savings = std::collections::BTreeMap::new();
    for ((task, p_power, p_perf, p_ppw), (m, (p_control_w, p_test_w))) in
        paper.into_iter().zip(&means)
    {
        let (loaded, average, perf, ppw) = (m.saved_loaded, m.saved_average, m.perf, m.ppw);
        savings.insert(task, loaded);
        let sign = |x: f64, p: f64| {
            if x.signum() == p.signum() {
                "the direction holds"
            } else {
                "the direction is reversed"
            }
        };
        let power_cause = match task {
            1 => format!(
                "control draws {:.1} W (thesis {:.0} W): a run starts at the lowest P-state, \
                 where ondemand leaves an idle machine, and a CPU Task 1's three programs never wake \
                 stays there under the deferrable sample; started at 2.3 GHz they drew 155.6 W and the \
                 saving was 11.7 %, a miss",
                m.watts.0, p_control_w
            ),
            2 => format!(
                "a saving of {:.0} W in {:.0} W, the difference of two wall readings the model \
                 gives as {:.1} and {:.1} W (Table 3's rows), so each per cent of either moves \
                 the saving by about a point",
                p_control_w - p_test_w,
                p_control_w,
                m.watts.0,
                m.watts.1
            ),
            3 => format!(
                "the model's control group draws less than the thesis's 183 W (Task 4's, a \
                 fully loaded machine): its four non-CPU-intensive programs, which block for \
                 60 % of their time (a profile shape chosen from 'under 50 % CPU', a doubtful \
                 reading: profiles.toml), run {:.2} G ins/s \
                 under control against the thesis's 1.49 (Table 2), so ondemand lowers their \
                 CPUs where the thesis's stayed busy",
                m.control_noncpu_ips_g
            ),
            _ => String::new(),
        };
        let power_row = Check::new(
            &format!("Task {task}: algorithm 1 saves power against control (loaded, %)"),
            PATEL_T4,
            p_power,
            loaded,
            band(p_power),
            &format!(
                "simulated {loaded:.1} % loaded, {average:.1} % over the whole run; thesis \
                 {p_power:.2} % (15 %){}",
                match task {
                    4 => "; calibrated: its control power set the preset's base_w".to_string(),
                    1 => format!("; {power_cause}"),
                    _ => format!(". A known miss ({}): {power_cause}", sign(loaded, p_power)),
                }
            ),
        );
        checks.push(match task {
            4 => power_row,
            1 => power_row.predicted(),
            _ => power_row.predicted().known_miss(),
        });
        let perf_cause = match task {
            1 => "the non-CPU-intensive program gains most (on the 2.3 GHz cpuset instead of a \
                  CPU its blocking keeps low under ondemand), and by how much rests on that \
                  program's doubtful blocking shape (profiles.toml)"
                .to_string(),
            2 => "four CPU-bound programs get at most 2×2.3 + 2×1.4 GHz here against 4×2.3 GHz \
                  under ondemand, a physical loss of ~20 % for them that the non-CPU-intensive \
                  program's gain cannot offset; the thesis's −6 % (and its gcc running faster at \
                  lower frequencies, Table 2) may be within its testbed's noise, but the model \
                  keeps its physics"
                .to_string(),
            3 => format!(
                "control's mean is {:.3} G ins/s against the thesis's 1.507 (Table 3) and \
                 algorithm 1's {:.3} against 0.966, so control runs slower and algorithm 1 \
                 faster than in the thesis; control's non-CPU-intensive programs run {:.2} G \
                 ins/s against 1.49 (Table 2), as in the power row",
                m.ips.0 / 1e9,
                m.ips.1 / 1e9,
                m.control_noncpu_ips_g
            ),
            _ => "10.6 GHz of cpusets against 18.4 GHz under ondemand on a fully loaded machine"
                .to_string(),
        };
        checks.push(
            Check::new(
                &format!("Task {task}: algorithm 1 against control, performance (%)"),
                PATEL_T4,
                p_perf,
                perf,
                band(p_perf),
                &format!(
                    "the mean over processes of instructions over completion time (§9.2), its \
                     change over the larger of the two as the thesis computes Table 4 \
                     (PatelComparison); simulated {perf:.1} %, thesis {p_perf:.2} % (15 %). A \
                     known miss ({}): {perf_cause}",
                    sign(perf, p_perf)
                ),
            )
            .predicted()
            .known_miss(),
        );
        let ppw_miss = format!(
            "{}; it compounds the two rows above (performance {perf:.1} %, thesis \
             {p_perf:+.2} %; power saved {average:.1} % over the run, thesis {p_power:.2} %)",
            sign(ppw, p_ppw)
        );
        checks.push(missed_if(
            Check::new(
                &format!("Task {task}: algorithm 1 against control, performance per watt (%)"),
                PATEL_T4,
                p_ppw,
                ppw,
                band(p_ppw),
                &format!(
                    "(ins/s per run-average watt) against control's, over the larger of the two \
                     as the thesis computes Table 4 (PatelComparison); simulated {ppw:.1} %, \
                     thesis {p_ppw:+.2} % (15 %){}",
                    if task == 1 {
                        "; a known miss at 15.8 % until 2026-11-26, when the figure was taken \
                         over control's"
                    } else {
                        ""
                    }
                ),
            )
            .predicted(),
            (task != 1).then_some(ppw_miss.as_str()),
        ));
    }
    let saving = |task: u32| savings.get(&task).copied().unwrap_or(f64::NAN);
    let reversed: Vec<String> = [3, 4]
        .into_iter()
        .filter(|&t| saving(t).is_nan() || saving(t) <= saving(2))
        .map(|t| format!("Task {t}"))
        .collect();
    checks.push(
        Check::new(
            "power savings grow with load: Task 2 < Task 3 and Task 2 < Task 4 (1 = holds)",
            PATEL_T4,
            1.0,
            holds(reversed.is_empty()),
            0.0,
            &format!(
                "loaded savings {:.1} / {:.1} / {:.1} % (thesis 8.28 / 19.67 / 19.67 %): more \
                 programs than fast CPUs push work onto the 0.8 GHz cpuset instead of \
                 ondemand's 2.3 GHz. A known miss: {} saves no more than Task 2; Task 3's \
                 control group is not loaded like the thesis's (its power row)",
                saving(2),
                saving(3),
                saving(4),
                if reversed.is_empty() {
                    "no task".to_string()
                } else {
                    reversed.join(" and ")
                }
            ),
        )
        .predicted()
        .known_miss(),
    );
    Ok(checks)
}

/// Patel Tables 24 and 25 (Task 4 with dynamic priorities; one set of
/// runs serves both): algorithm 4's power and performance against control
/// (Table 24), and the context switches and migrations of algorithms 4
/// and 2 against control and of 4 against 2 (Table 25). Each figure is a
/// mean over seeds 1..=[`PATEL_SEEDS`].
pub fn patel_tables24_25() -> Result<Vec<Check>, EngineError> {
    let scenario = "patel-task4-dyn";
    let cs = |m: &RunMetrics| m.patel.context_switches.map(|x| x as f64);
    let mig = |m: &RunMetrics| m.patel.migrations.map(|x| x as f64);
    // Per seed: control, algorithm 2, algorithm 4.
    let runs = patel_seed_runs(scenario, &["ondemand", "patel2", "patel4"])?;
    // A reduction of `count` from run `from` to run `to`, over the seeds.
    let cut = |count: &dyn Fn(&RunMetrics) -> Option<f64>, to: usize, from: usize| {
        over_seeds(&runs, |r| {
            reduction_pct(count(&r[to].metrics), count(&r[from].metrics))
        })
    };
    let (mig4s, mig4_up) = cut(&mig, 2, 0);
    let (mig2s, mig2_up) = cut(&mig, 1, 0);
    let (cs42s, cs42_up) = cut(&cs, 2, 1);
    let (mig4, mig2, cs42) = (mig4s.mean, mig2s.mean, cs42s.mean);
    let cs4 = cut(&cs, 2, 0).0.mean;
    let cs2 = cut(&cs, 1, 0).0.mean;
    let mig42 = cut(&mig, 2, 1).0.mean;
    // What moved the tasks (simulator truth), per policy: the mean over
    // the seeds of every cause's count.
    let moved = |i: usize, cause: fn(&MigrationCauses) -> u64| {
        let total: u64 = runs
            .iter()
            .filter_map(|r| r[i].report.migrations_by_cause.as_ref().map(cause))
            .sum();
        total as f64 / runs.len() as f64
    };
    let total = |i: usize| moved(i, |m| m.wake_up + m.balance + m.idle_pull + m.affinity);
    let mut checks = vec![
        Check::new(
            "Task 4 dyn: algorithm 4 cuts migrations against control (%)",
            PATEL_T25,
            24.15,
            mig4,
            3.6,
            &format!(
                "processes stay in their cpuset instead of following the balancer over all eight \
                 CPUs; 20.5–27.8 % accepted (15 %). Mean over seeds 1–{PATEL_SEEDS} (sd {:.1} %; \
                 a cut on {mig4_up} of them). The Opteron 6134 preset follows 2.6.35's scheduler \
                 (issue #17, 2026-11-24): weighted balancing, wake-ups on the previous CPU or an \
                 idle one sharing its L3, idle pulls of tasks that are not cache-hot. Where \
                 control's migrations come from (`sim --json`, `migrations_by_cause`, simulator \
                 truth, means over the seeds): {:.0} balancing moves, {:.0} idle pulls and {:.0} \
                 wake-ups of {:.0}; algorithm 2 makes {:.0}, of them {:.0} idle pulls and {:.0} cpuset moves. \
                 The cut is confinement's, not algorithm 4's index: algorithm 2 cuts {mig2:.1} % \
                 (thesis 2.02 %) and algorithm 4 against algorithm 2 {mig42:.1} % (thesis \
                 22.59 %). Under the count-based balancer with wake-ups on the least loaded CPU \
                 this mean was 51.7 % (sd 6.4 %), a known miss. Control's ondemand follows the \
                 same kernel (95 % up-threshold, 3-point down-differential, 100 ms). A known miss \
                 at the band's upper edge (standard error {:.1} %): over seeds 1–12, the set this \
                 row had before the solver became fast enough for 36, it was 24.8 %, a pass, but \
                 29.1–31.5 % on three of five other 12-seed sets (`validate --reseed 5`), and \
                 `--perturb 10` moved it out with five of the six profile knobs and the balance \
                 interval",
                mig4s.std,
                moved(0, |m| m.balance),
                moved(0, |m| m.idle_pull),
                moved(0, |m| m.wake_up),
                total(0),
                total(1),
                moved(1, |m| m.idle_pull),
                moved(1, |m| m.affinity),
                mig4s.std / (PATEL_SEEDS as f64).sqrt(),
            ),
        )
        .predicted()
        .known_miss(),
        Check::new(
            "Task 4 dyn: algorithm 2 cuts migrations against control (%)",
            PATEL_T25,
            2.02,
            mig2,
            0.3,
            &format!(
                "simulated {mig2:.1} % (mean over seeds 1–{PATEL_SEEDS}, sd {:.1} %, a cut on \
                 {mig2_up} of them), thesis 2.02 %; 1.72–2.32 % accepted (15 %). A known miss \
                 (the direction holds): confinement to the cpusets alone cuts more here",
                mig2s.std
            ),
        )
        .predicted()
        .known_miss(),
        Check::new(
            "Task 4 dyn: algorithm 4 switches context less than algorithm 2 (%)",
            PATEL_T25,
            25.82,
            cs42,
            3.87,
            &format!(
                "simulated {cs42:.1} % fewer (mean over seeds 1–{PATEL_SEEDS}, sd {:.1} %, fewer \
                 on {cs42_up} of them), thesis 25.82 %; 21.95–29.69 % accepted (15 %). A known \
                 miss, because the index vetoes keep more programs in the crowded 0.8 GHz cpuset: \
                 the index (17 switches and migrations per CPU second) vetoes up-moves algorithm \
                 2 would make (`sim --json`, policy_stats: `vetoed_by_cs_mig_index`; algorithm 4 \
                 against 2 on migrations: simulated {mig42:.1} %, thesis 22.59 %). \
                 Against control the model also misses: algorithm 4 {cs4:.1} % and algorithm 2 \
                 {cs2:.1} % (thesis 52.19 / 35.55 %), because crowding 24 programs into the faster \
                 cpusets shortens CFS slices there (−41.7 / −36.9 % while bursts were a fixed \
                 on-CPU time, before issue #17 made them work)",
                cs42s.std
            ),
        )
        .predicted()
        .known_miss(),
    ];
    checks.extend(patel_table24(&runs));
    Ok(checks)
}

/// Patel Table 24 from the Task 4 dynamic-priority runs (per seed:
/// control, algorithm 2, algorithm 4): algorithm 4 against control.
/// Power is the loaded power, as in Table 4's rows.
fn patel_table24(runs: &[Vec<SimRun>]) -> Vec<Check> {
    let vs_control = |figure: fn(&ecosched_model::PatelComparison) -> Option<f64>| {
        over_seeds(runs, |r| {
            let c = ecosched_model::PatelComparison::new(&r[2].metrics, &r[0].metrics);
            figure(&c).unwrap_or(f64::NAN)
        })
    };
    let (power, _) = vs_control(|c| c.loaded_power_savings_pct);
    let (perf, perf_up) = vs_control(|c| c.performance_improvement_pct);
    let ppw = vs_control(|c| c.perf_per_w_improvement_pct).0.mean;
    let time_w = vs_control(|c| c.time_w_improvement_pct).0.mean;
    vec![
        Check::new(
            "Task 4 dyn: algorithm 4 saves power against control (loaded, %)",
            PATEL_T24,
            20.88,
            power.mean,
            3.1,
            &format!(
                "simulated {:.1} % (mean over seeds 1–{PATEL_SEEDS}, sd {:.1} %), thesis 20.88 % \
                 (38 W); 17.7–24.0 % accepted (15 %)",
                power.mean, power.std
            ),
        )
        .predicted(),
        Check::new(
            "Task 4 dyn: algorithm 4 against control, performance per watt (%)",
            PATEL_T24,
            33.02,
            ppw,
            4.9,
            &format!(
                "simulated {ppw:.1} % (mean over seeds 1–{PATEL_SEEDS}), thesis 33.02 %; \
                 28.1–38.0 % accepted (15 %). A known miss (the direction is reversed): the \
                 performance row's loss, as the power saving itself holds"
            ),
        )
        .predicted()
        .known_miss(),
        Check::new(
            "Task 4 dyn: algorithm 4 improves performance against control (%)",
            PATEL_T24,
            15.34,
            perf.mean,
            2.3,
            &format!(
                "the mean over processes of instructions over completion time (§9.2); simulated \
                 {:.1} % (mean over seeds 1–{PATEL_SEEDS}, sd {:.1} %, a gain on {perf_up} of \
                 them), thesis 15.34 %; 13.0–17.6 % accepted (15 %). Perf/W simulated {ppw:.1} % \
                 (thesis 33.02 %), execution time · watt {time_w:.1} % (thesis 24.56 %). A known \
                 miss the model's physics cannot close: the cpusets offer 4 × 0.8 + 2 × 1.4 + \
                 2 × 2.3 = 10.6 GHz against ondemand's 8 × 2.3 = 18.4 GHz to 24 programs that \
                 keep every CPU busy, and the thesis's own Table 4 has algorithm 1, on the same \
                 cpusets and Task 4, 30.06 % slower than control. Algorithm 4 moves programs \
                 between the cpusets but adds no cycles",
                perf.mean, perf.std
            ),
        )
        .predicted()
        .known_miss(),
    ]
}

/// Per program (task name without `#i`): when its last run ended, s.
/// Streamed from the steps, so it keeps one figure a program.
#[derive(Debug, Default)]
struct LastCompletions(BTreeMap<String, f64>);

impl ecosched_model::trace::TraceSink for LastCompletions {
    fn begin(
        &mut self,
        _: &ecosched_model::TraceHeader,
        _: &ecosched_model::Plan,
    ) -> std::io::Result<()> {
        Ok(())
    }

    fn step(&mut self, step: &ecosched_model::Step) -> std::io::Result<()> {
        for t in step.snapshot.tasks.iter().filter(|t| t.managed) {
            if let Some(end) = t.finished_s {
                let program = t.name.split('#').next().unwrap_or(&t.name);
                let e = self.0.entry(program.to_string()).or_insert(0.0);
                *e = e.max(end);
            }
        }
        Ok(())
    }
}

/// Per program of `scenario` run under `policy`: when its last run ended, s.
pub fn last_completions(
    scenario: &Scenario,
    policy: &str,
    options: &SimOptions,
) -> Result<BTreeMap<String, f64>, EngineError> {
    let mut sink = LastCompletions::default();
    crate::experiment::simulate_into(
        scenario,
        policy,
        &Params::default(),
        options,
        &mut sink,
        &mut |_| {},
    )?;
    Ok(sink.0)
}

/// Table 8's criterion: every program of `first` finished all its runs
/// before any program of `second` did. The margin, s: positive when the
/// order holds.
pub fn order_margin(last: &BTreeMap<String, f64>, first: &[&str], second: &[&str]) -> f64 {
    let end = |p: &&str| last.get(*p).copied().unwrap_or(f64::NAN);
    let end_first = first.iter().map(end).fold(0.0, f64::max);
    let end_second = second.iter().map(end).fold(f64::INFINITY, f64::min);
    end_second - end_first
}

/// Patel Table 8: in Task 4 (24 programs on 8 CPUs) all of group 1
/// finished before any of group 2, under control and algorithm 2 alike,
/// with static priorities either way round (§9.2.2: "this algorithm does
/// not affect the completion order of processes that have different
/// priorities"). One run's margin swings with the seed by seconds, so a
/// row holds when the mean margin over seeds 1..=[`PATEL_SEEDS`] is
/// positive and the order held on most of them.
pub fn patel_table8() -> Result<Vec<Check>, EngineError> {
    const CASES: [(&str, &str, &[&str], &[&str]); 2] = [
        (
            "patel-task4-hi",
            "non-CPU-intensive highest",
            &["non-cpuintensive", "mcf", "gcc"],
            &["bzip2", "sjeng"],
        ),
        (
            "patel-task4-lo",
            "non-CPU-intensive lowest",
            &["gcc", "bzip2", "mcf"],
            &["non-cpuintensive", "sjeng"],
        ),
    ];
    let mut rows = Vec::new();
    for (scenario, label, first, second) in CASES {
        let s = Scenario::load(scenario)?;
        for (policy, who) in [("ondemand", "control"), ("patel2", "algorithm 2")] {
            let margins = (1..=PATEL_SEEDS)
                .map(|seed| {
                    let o = SimOptions {
                        seed: Some(seed),
                        ..patel_measurement()
                    };
                    Ok(order_margin(
                        &last_completions(&s, policy, &o)?,
                        first,
                        second,
                    ))
                })
                .collect::<Result<Vec<f64>, EngineError>>()?;
            let mean = mean(margins.iter().copied());
            let held = margins.iter().filter(|m| **m > 0.0).count();
            let row = Check::new(
                &format!("Task 4, {label}: {who} finishes group 1 before group 2 (1 = holds)"),
                PATEL_T8,
                1.0,
                holds(mean > 0.0 && 2 * held > margins.len()),
                0.0,
                &format!(
                    "group 1 {}, group 2 {}; the last run of group 1 against the first end of group 2's \
                     programs: mean margin {mean:.1} s over seeds 1–{PATEL_SEEDS}, held on {held}",
                    first.join(", "),
                    second.join(", ")
                ),
            )
            .predicted();
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Patel Table 21: algorithm 3 lowers the mean cache miss/reference ratio
/// against algorithm 2 (Task 4, dynamic priorities).
/// Mean over seeds 1..=[`PATEL_SEEDS`]; the direction holds only if the
/// mean lies more than two standard errors above zero (an effect, not
/// noise).
pub fn patel_table21() -> Result<Vec<Check>, EngineError> {
    let runs = patel_seed_runs("patel-task4-dyn", &["patel2", "patel3"])?;
    let (rs, lower) = over_seeds(&runs, |r| {
        reduction_pct(
            r[1].metrics.patel.cache_miss_ratio,
            r[0].metrics.patel.cache_miss_ratio,
        )
    });
    let r = rs.mean;
    let stderr = rs.std / (PATEL_SEEDS as f64).sqrt();
    Ok(vec![Check::new(
        "Task 4 dyn: algorithm 3 lowers the cache miss/reference ratio against algorithm 2 (1 = holds)",
        PATEL_T21,
        1.0,
        holds(r > 2.0 * stderr),
        0.0,
        &format!(
            "simulated {r:.2} % lower (mean over seeds 1–{PATEL_SEEDS}, sd {:.2} %, lower on \
             {lower} of them; holds above two standard errors, {:.2} %), thesis 3.45 %. A known \
             miss: no effect left. A task's \
             miss ratio depends on its cache share and, after a move to the other die's L3 (or its \
             first run), on the lines it has brought back in (cache warm-up, contention::warming), \
             not on frequency. The effect went with sjeng's curve: since the compute-bound class \
             curves are continuous at their working set (profiles.toml), sjeng misses 1.8× its \
             alone ratio at a quarter of the 5 MiB L3 instead of 2.5×; with sjeng's old curve \
             (and every other change kept) seeds 1–12 gave +0.88 % (sd 1.26 %; lower on 10 of \
             12), the weak pass this row had before",
            rs.std,
            2.0 * stderr
        ),
    )
    .predicted()
    .known_miss()])
}

const FIG5: &str = "Merkel et al. EuroSys'10 §8.1, Fig. 5";
const FIG6: &str = "Merkel et al. EuroSys'10 §8.2, Fig. 6";

/// One run of `policy` with its statistics.
fn run_noted(
    o: Observe,
    scenario: &str,
    policy: &str,
) -> Result<(RunMetrics, ecosched_model::PolicyStats), EngineError> {
    let s = Scenario::load(scenario)?;
    // The memory-bus component from the Q6600's bus-transaction event, as
    // the paper counted it (§4: "bus transactions"); perf's generic LLC
    // misses leave out prefetched lines.
    let params = if policy.starts_with("av") {
        Params::default().with("bus_event", "mem_transactions")
    } else {
        Params::default()
    };
    let run = simulate(&s, policy, &params, &SimOptions::observing(o), &mut |_| {})?;
    Ok((run.metrics, run.report.policy_stats))
}

/// "Average EDP relative to Linux" (Fig. 6) as Table 1 averages EDP: the
/// mean over the benchmarks of each one's EDP ratio (Table 1's 1.45 for
/// 1 stream + 3 aluadd is (0.93 + 3 × 1.63) / 4), so that a long benchmark
/// does not outweigh the others.
fn avg_edp_ratio(m: &RunMetrics, linux: &RunMetrics) -> f64 {
    mean(m.tasks.iter().filter_map(|t| {
        let base = linux.task(&t.name)?.edp_js?;
        Some(t.edp_js? / base)
    }))
}

fn holds(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// Merkel Fig. 5: sorted co-scheduling (`av-sort`) against standard Linux
/// (`performance`) on 4 compute-bound + 4 memory-bound benchmarks.
pub fn merkel_fig5(o: Observe) -> Result<Vec<Check>, EngineError> {
    let scenario = "merkel-sort-8";
    let (linux, _) = run_noted(o, scenario, "performance")?;
    let (sorted, _) = run_noted(o, scenario, "av-sort")?;
    let ratio = |name: &str, f: fn(&TaskMetrics) -> Option<f64>| -> f64 {
        match (sorted.task(name).and_then(f), linux.task(name).and_then(f)) {
            (Some(a), Some(b)) => a / b,
            _ => f64::NAN,
        }
    };
    let memory = ["lbm", "libquantum", "mcf", "soplex"];
    let compute = ["games", "gromacs", "hmmer", "namd"];
    let t = |n: &str| ratio(n, |m| Some(m.runtime_s));
    let e = |n: &str| ratio(n, |m| m.edp_js);
    let list = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("{n} {:.3}", t(n)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mem_shorter = memory.iter().all(|n| t(n) < 1.0);
    let libq_least = memory
        .iter()
        .filter(|n| **n != "libquantum")
        .all(|n| t(n) < t("libquantum"));
    let compute_mean = mean(compute.iter().map(|n| t(n)));
    let power = sorted.avg_power_w.unwrap_or(f64::NAN) / linux.avg_power_w.unwrap_or(f64::NAN);
    let edp_vs_t2 = mean(
        memory
            .iter()
            .chain(compute.iter())
            .map(|n| (e(n) - t(n).powi(2)).abs()),
    );
    Ok(vec![
        Check::new(
            "sorted vs Linux: every memory-bound task runs shorter (1 = holds)",
            FIG5,
            1.0,
            holds(mem_shorter),
            0.0,
            &format!("run-time ratios sorted/Linux: {}", list(&memory)),
        )
        .predicted(),
        Check::new(
            "sorted vs Linux: libquantum gains least of the memory-bound tasks (1 = holds)",
            FIG5,
            1.0,
            holds(libq_least),
            0.0,
            &format!(
                "§8.1: even sorted, two memory-bound tasks share the bus at a time, and the paper blames bandwidth distributed unfairly to libquantum's cost [20]. A known miss: the model shares bandwidth by demand, without that unfairness, so libquantum's gain is close to the others' and not reliably the least ({})",
                list(&memory)
            ),
        )
        .predicted()
        .known_miss(),
        Check::new(
            "sorted vs Linux: compute-bound tasks, mean run-time ratio",
            FIG5,
            1.0,
            compute_mean,
            0.05,
            &format!(
                "'hardly change' (a few percent): {}. Set by the compute-bound curves, not the bus: sorted, each compute-bound task always shares its L2 with a memory-bound one, whose insertion rate leaves it ≈ 0.4 of 4 MiB. The class curves follow the √2 rule down from their floor at the working set (profiles.toml), so hmmer beside soplex (361 KiB) misses ≈ 2.4× its alone ratio; before the curves were made continuous there, a 3.5× step at the working set gave ≈ 8× and this row 1.060, a known miss",
                list(&compute)
            ),
        )
        .predicted(),
        Check::new(
            "sorted vs Linux: average processor power ratio",
            FIG5,
            1.0,
            power,
            0.02,
            "§8.1: power is almost the same (two compute-bound tasks always run, so frequency scaling is never engaged)",
        )
        .predicted(),
        Check::new(
            "sorted vs Linux: EDP follows run time squared (mean |EDP ratio - time ratio^2|)",
            FIG5,
            0.0,
            edp_vs_t2,
            0.02,
            "§8.1: with power unchanged, EDP is determined by run time, quadratically; fails if sorting changed power",
        )
        .predicted(),
    ])
}

/// Two average EDPs closer than this share are equal in Merkel Fig. 6's
/// rows: its values are not in the text, and a 1 % difference is within
/// what one calibrated parameter moved by 10 % shifts.
const EDP_EQUAL: f64 = 0.01;

/// Merkel Fig. 6 (Table 3's scenarios): average EDP of `av-sort` and `av`
/// relative to Linux, and how often the heuristic lowers the frequency.
pub fn merkel_fig6(o: Observe) -> Result<Vec<Check>, EngineError> {
    let mut rel = Vec::new();
    let mut low = Vec::new();
    for s in 1..=4 {
        let scenario = format!("merkel-freq-s{s}");
        let (linux, _) = run_noted(o, &scenario, "performance")?;
        let (sorted, _) = run_noted(o, &scenario, "av-sort")?;
        let (av, notes) = run_noted(o, &scenario, "av")?;
        rel.push((avg_edp_ratio(&sorted, &linux), avg_edp_ratio(&av, &linux)));
        // The share as the report prints it, to three decimals.
        low.push(
            notes
                .get("low_frequency_share")
                .and_then(ecosched_model::StatValue::as_f64)
                .map_or(f64::NAN, |v| (v * 1000.0).round() / 1000.0),
        );
    }
    let fig = |i: usize| {
        format!(
            "average EDP relative to Linux: av-sort {:.3}, av {:.3}",
            rel[i].0, rel[i].1
        )
    };
    let same = |i: usize| rel[i].1 / rel[i].0;
    // Two average EDPs within EDP_EQUAL are equal (the s1/s2 rows), so one
    // beats another only by more than that.
    let beats = |a: f64, b: f64| a < b * (1.0 - EDP_EQUAL);
    let av_wins = |i: usize| beats(rel[i].1, rel[i].0) && beats(rel[i].1, 1.0);
    let s3_note = ". A known miss: av is within the 1 % the s1/s2 rows count as equal. Sorting \
                   alone hurts here (paper: 'not beneficial'): a latency-bound task (mcf, milc) \
                   then always runs beside two bus-heavy ones, and the heuristic's 1.6 GHz in half \
                   the slots only wins that loss back. Before this row asked for more than 1 % \
                   it held by 0.1 %, and `validate --perturb 10` flipped it with five of the nine \
                   parameters";
    let heuristic_note = "share of slot starts at which av chose 1.6 GHz; the bus component counts bus transactions (with perf's LLC misses, prefetch-heavy libquantum looks half as memory-bound and s3 never engages: this choice of event was made after seeing that, so these rows are calibrated)";
    let mut out = Vec::new();
    for (i, label) in [(0usize, "s1"), (1, "s2")] {
        out.push(
            Check::new(
                &format!("{label}: av vs av-sort average EDP (heuristic idle)"),
                FIG6,
                1.0,
                same(i),
                EDP_EQUAL,
                &format!(
                    "§8.2: the heuristic never lowers the frequency here; {}",
                    fig(i)
                ),
            )
            .predicted(),
        );
    }
    out.push(
        Check::new(
            "s2: av-sort beats Linux (1 = holds)",
            FIG6,
            1.0,
            holds(beats(rel[1].0, 1.0)),
            0.0,
            &format!(
                "§8.2: sorting reduces contention (by more than 1 %); {}",
                fig(1)
            ),
        )
        .predicted(),
    );
    for (i, label) in [(2usize, "s3"), (3, "s4")] {
        let row = Check::new(
            &format!("{label}: av beats av-sort and Linux (1 = holds)"),
            FIG6,
            1.0,
            holds(av_wins(i)),
            0.0,
            &format!(
                "§8.2: contention cannot be avoided, the heuristic saves (by more than 1 %); {}{}",
                fig(i),
                if i == 2 { s3_note } else { "" }
            ),
        )
        .predicted();
        out.push(if i == 2 { row.known_miss() } else { row });
    }
    out.push(
        Check::new(
            "s4's gain from av is larger than s3's (1 = holds)",
            FIG6,
            1.0,
            holds(1.0 - rel[3].1 > 1.0 - rel[2].1),
            0.0,
            &format!(
                "§8.2: without compute-bound tasks the frequency is low all the time; av/Linux s3 {:.3}, s4 {:.3}",
                rel[2].1, rel[3].1
            ),
        )
        .predicted(),
    );
    for (i, paper, text) in [
        (0usize, 0.0, "s1: never (all compute-bound)"),
        (1, 0.0, "s2: never (two compute-bound tasks always run)"),
        (
            2,
            0.5,
            "s3: whenever hmmer is not running, every other timeslice",
        ),
        (3, 1.0, "s4: all the time"),
    ] {
        out.push(Check::new(
            &format!("{}: share of slots at low frequency", &text[..2]),
            FIG6,
            paper,
            low[i],
            0.05,
            &format!("§8.2, {text}; {heuristic_note}"),
        ));
    }
    Ok(out)
}

const DHIMAN_T2: &str = "Dhiman et al. (WCA) §5.2, Table 2";
const DHIMAN_F2: &str = "Dhiman et al. (WCA) §3, Fig. 2a";
const DHIMAN_F5: &str = "Dhiman et al. (WCA) §5.2, Fig. 5a";

/// The eight 3-thread mixes of Table 2 with the paper's figures: default
/// migrations/s and run-time std-dev (%), then WCA's.
pub const DHIMAN_TABLE2: [(&str, f64, f64, f64, f64); 8] = [
    ("art-equake-equake", 1.01, 86.0, 0.14, 2.0),
    ("mcf-applu-applu", 1.46, 21.0, 0.06, 1.0),
    ("bzip2-lucas-lucas", 1.22, 22.0, 0.04, 1.0),
    ("vortex-swim-swim", 1.28, 15.0, 0.10, 2.0),
    ("gcc-wupwise-wupwise", 1.67, 12.0, 0.14, 3.0),
    ("art-mcf-mcf", 1.42, 38.0, 0.17, 4.0),
    ("mcf-bzip2-bzip2", 1.42, 4.0, 0.17, 1.0),
    ("vortex-equake-equake", 1.14, 44.0, 0.05, 3.0),
];

/// Seeds each Table 2 mix is repeated over (the paper's 10 runs).
pub const DHIMAN_SEEDS: u32 = 10;

/// One Table 2 mix: default (`performance`) against `wca` over
/// [`DHIMAN_SEEDS`] seeds, and the best and worst hand-made placements.
#[derive(Debug, Clone, PartialEq)]
pub struct DhimanMix {
    /// The mix (`art-equake-equake`).
    pub mix: String,
    /// Default and WCA over the seeds.
    pub default: crate::seeds::PolicySpread,
    /// WCA over the seeds.
    pub wca: crate::seeds::PolicySpread,
    /// The best placement (bench1 alone on one L2) over the same seeds.
    pub best: crate::seeds::PolicySpread,
    /// AW perf/W (eq. 2) of the best placement, against the default of
    /// each seed, mean over the seeds.
    pub best_aw: f64,
    /// AW perf/W of the worst placement (bench1 beside a bench2).
    pub worst_aw: f64,
}

impl DhimanMix {
    /// Table 2's "standard deviation of runtime normalized to best
    /// schedule" for `runs` (the default's or WCA's spread over the
    /// seeds): per task, the std-dev of its run time over the seeds as a
    /// per cent of its mean run time in the best placement, then the mean
    /// over the tasks.
    pub fn std_pct_of_best(&self, runs: &crate::seeds::PolicySpread) -> f64 {
        mean(runs.task_runtime_s.iter().filter_map(|(task, spread)| {
            let best = self.best.task_runtime_s.get(task)?.mean;
            (best > 0.0).then(|| 100.0 * spread.std / best)
        }))
    }
}

/// Run one Table 2 mix under `--observe linux`.
pub fn dhiman_mix(mix: &str) -> Result<DhimanMix, EngineError> {
    let scenario = Scenario::load(&format!("dhiman-{mix}"))?;
    let options = SimOptions::observing(Observe::Linux);
    let policies = vec![
        ("performance".to_string(), Params::default()),
        ("wca".to_string(), Params::default()),
    ];
    let report = crate::seeds::compare_seeds(
        &scenario,
        &policies,
        "performance",
        &options,
        DHIMAN_SEEDS,
        &mut |_, _, _| {},
    )?;
    let mut it = report.policies.into_iter();
    let (Some(default), Some(wca)) = (it.next(), it.next()) else {
        return Err(EngineError::from(
            ecosched_policy::PolicyError::Incompatible(
                "the seeded comparison returned fewer policies than it ran".into(),
            ),
        ));
    };
    let mut parts = mix.split('-');
    let (a, b) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    // Over the same seeds as WCA: AW perf/W is against each seed's default.
    let placed = |map: String| -> Result<crate::seeds::PolicySpread, EngineError> {
        let r = crate::seeds::compare_seeds(
            &scenario,
            &[
                ("performance".to_string(), Params::default()),
                ("placed".to_string(), Params::default().with("map", map)),
            ],
            "performance",
            &options,
            DHIMAN_SEEDS,
            &mut |_, _, _| {},
        )?;
        r.policies
            .into_iter()
            .find(|p| p.policy == "placed")
            .ok_or_else(|| {
                EngineError::from(ecosched_policy::PolicyError::Incompatible(
                    "the seeded comparison lost the placed run".into(),
                ))
            })
    };
    let aw = |p: &crate::seeds::PolicySpread| p.aw_perf_per_w.map_or(f64::NAN, |a| a.mean);
    // Cores 0,1 share one L2 and 2,3 the other (Fig. 1a).
    let best = placed(format!("{a}@0,{b}#0@2,{b}#1@3"))?;
    let worst = placed(format!("{a}@0,{b}#0@1,{b}#1@3"))?;
    Ok(DhimanMix {
        mix: mix.to_string(),
        default,
        wca,
        best_aw: aw(&best),
        worst_aw: aw(&worst),
        best,
    })
}

/// Dhiman et al.: Table 2 (migrations and run-time std-dev, default →
/// WCA), Fig. 2a (best vs worst placement) and Fig. 5a (WCA gains, equal
/// to the best placement). Always under `--observe linux`: these rows are
/// about a policy's gain.
///
/// Calibrated: the background kernel threads' wake-up period (400 ms, the
/// same in every mix) was set from Table 2's average default migration
/// rate, and art's memory-level parallelism from Fig. 2a. Everything else
/// is predicted.
/// Not reached: the default's run-time std-dev (paper 30 % on average;
/// the simulator's flips are frequent and short, so run times average
/// them out and vary by a few %); the rows check its direction and the
/// size of WCA's cut instead.
pub fn dhiman_checks() -> Result<Vec<Check>, EngineError> {
    let mixes: Vec<DhimanMix> = DHIMAN_TABLE2
        .iter()
        .map(|(m, ..)| dhiman_mix(m))
        .collect::<Result<_, _>>()?;
    let n = mixes.len() as f64;
    let mean = |f: &dyn Fn(&DhimanMix) -> f64| mixes.iter().map(f).sum::<f64>() / n;
    let mig = |s: &crate::seeds::PolicySpread| s.migrations_per_s.map_or(f64::NAN, |x| x.mean);
    let def_mig = mean(&|m| mig(&m.default));
    let wca_mig = mean(&|m| mig(&m.wca));
    let def_sd = mean(&|m| m.std_pct_of_best(&m.default));
    let wca_sd = mean(&|m| m.std_pct_of_best(&m.wca));
    // Table 2's "Reduction (%)" columns are per mix, and its Average row
    // averages them (the paper's std-dev cuts average 89 %, where
    // 1 − 2 / 30 of its averaged std-devs would be 93 %).
    let mig_cut = mean(&|m| 1.0 - mig(&m.wca) / mig(&m.default));
    let sd_cut = mean(&|m| 1.0 - m.std_pct_of_best(&m.wca) / m.std_pct_of_best(&m.default));
    let per_mix: Vec<String> = mixes
        .iter()
        .map(|m| {
            format!(
                "{}: {:.2}/s {:.1}% → {:.2}/s {:.2}%",
                m.mix,
                mig(&m.default),
                m.std_pct_of_best(&m.default),
                mig(&m.wca),
                m.std_pct_of_best(&m.wca)
            )
        })
        .collect();
    let gains = mixes
        .iter()
        .filter(|m| m.wca.aw_perf_per_w.is_some_and(|a| a.mean > 0.0))
        .count() as f64;
    let at_best = mixes
        .iter()
        .filter(|m| {
            m.wca
                .aw_perf_per_w
                .is_some_and(|a| (a.mean - m.best_aw).abs() <= 0.02)
        })
        .count() as f64;
    let aee = &mixes[0];
    let worst_vs_best = 1.0 - (1.0 + aee.worst_aw) / (1.0 + aee.best_aw);
    let default_position = -aee.worst_aw / (aee.best_aw - aee.worst_aw);
    Ok(vec![
        Check::new(
            "Table 2 mixes: default migrations/s, mean of 8",
            DHIMAN_T2,
            1.33,
            def_mig,
            0.195,
            "per-CPU high-priority kernel threads waking every 400 ms (one setting for all mixes) pre-empt a benchmark; the count-based balancer moves it; calibrated from this row",
        ),
        Check::new(
            "Table 2 mixes: WCA migrations/s, mean of 8",
            DHIMAN_T2,
            0.11,
            wca_mig,
            0.016,
            &format!("WCA pins the three threads; the rest are its own initial moves (15 %; a known miss: fewer initial moves than the paper's). The figure is moves per restart over the scenarios' shortened runs (each benchmark 20 s alone), not a rate the paper's runs fix: on art-equake-equake (seeds 1–3) 10, 20 and 40 s runs give 0.10–0.14, 0.05 and 0.02–0.03 per s while the default's ≈ 1.2 per s stays; the paper gives no run length. Per mix (default → WCA, mig/s and run-time std-dev): {}", per_mix.join("; ")),
        )
        .predicted()
        .known_miss(),
        Check::new(
            "Table 2 mixes: migrations cut default → WCA",
            DHIMAN_T2,
            0.91,
            mig_cut,
            0.09,
            "1 − WCA / default per mix, then the mean of the 8, as Table 2's Average row; fails below 0.82 (the issue asks ≥ 0.80)",
        )
        .predicted(),
        Check::new(
            "Table 2 mixes: run-time std-dev cut default → WCA",
            DHIMAN_T2,
            0.89,
            sd_cut,
            0.11,
            &format!("1 − WCA / default of the run-time std-dev (next row) per mix, then the mean of the 8, as Table 2's Average row (until 2026-11-26 the row took 1 − mean WCA / mean default, which on the paper's own columns gives 0.93, not its 0.89); fails below 0.78 or if WCA varies more. The magnitudes are the next two rows: default {def_sd:.1} % (paper 30 %), WCA {wca_sd:.2} % (paper 2 %)"),
        )
        .predicted(),
        Check::new(
            "Table 2 mixes: default run-time std-dev (%), mean of 8",
            DHIMAN_T2,
            30.0,
            def_sd,
            4.5,
            &format!(
                "Table 2's 'standard deviation of runtime normalized to best schedule': per task, \
                 the std-dev of its run time over 10 seeds as a per cent of its mean run time in \
                 the best placement (until 2026-11-26: of its own mean), averaged over the tasks, \
                 then the mean of the 8 mixes; simulated {def_sd:.1} %, paper 30 % (art-equake-equake 86 %); 25.5–34.5 % \
                 accepted (15 %). A known miss: in the model the default flips a placement about \
                 once a second and each seed's figure averages a 600 s run's completions, so a \
                 run sees hundreds of placements; spreads like the paper's need placements that \
                 last for much of a run"
            ),
        )
        .predicted()
        .known_miss(),
        Check::new(
            "Table 2 mixes: WCA run-time std-dev (%), mean of 8",
            DHIMAN_T2,
            2.0,
            wca_sd,
            0.3,
            &format!(
                "as the row before, under WCA; simulated {wca_sd:.2} %, paper 2 % (1–4 % per mix); \
                 1.7–2.3 % accepted (15 %). A known miss: WCA pins the three threads, and the model \
                 has no other run-to-run variation of that size (the paper's testbed had its disk, \
                 daemons and DTrace)"
            ),
        )
        .predicted()
        .known_miss(),
        Check::new(
            "Fig. 5a: Table 2 mixes where WCA gains AW perf/W",
            DHIMAN_F5,
            8.0,
            gains,
            0.0,
            "count of mixes with mean AW perf/W (eq. 2, vs the default, 10 seeds) > 0",
        )
        .predicted(),
        Check::new(
            "§5.2: Table 2 mixes where WCA equals the best placement",
            DHIMAN_F5,
            8.0,
            at_best,
            0.0,
            "count of mixes with WCA's AW perf/W within 0.02 of the best hand-made placement's ('equal to the best possible')",
        )
        .predicted(),
        Check::new(
            "art-equake-equake: worst vs best placement perf/W loss",
            DHIMAN_F2,
            0.70,
            worst_vs_best,
            0.105,
            "1 − perf/W(worst) / perf/W(best), perf/W from eq. 2 against the default; 0.595–0.805 accepted (15 %). Calibrated: art's memory-level parallelism (1.5) was set from this row. Its working set, calibrated here before, does not move it: beside an equake art thrashes its share completely (miss ratio 1) whatever the curve. Until issue #17's last pass the row was a known miss at 0.561 because the 120 s runs cut art off (≈ 125 s an instance there, read as its 120 s alive); the mixes now run 600 s",
        ),
        Check::new(
            "art-equake-equake: default between best and worst",
            DHIMAN_F2,
            0.5,
            default_position,
            0.075,
            "(perf/W default − worst) / (best − worst); 'the default scheduler falls roughly in the middle', read as 0.5; 0.425–0.575 accepted (15 %)",
        )
        .predicted(),
    ])
}

/// `policy`'s run time over performance's on `scenario`, per seed
/// 1..=[`RICHLING_SEEDS`], with the parallelism `hint` declared to both.
fn per_seed_over_performance(
    o: Observe,
    scenario: &str,
    policy: &str,
    hint: Option<u32>,
) -> Result<Vec<f64>, EngineError> {
    let mut s = Scenario::load(scenario)?;
    s.spec.parallelism_hint = hint;
    per_seed_ratio(o, &s, policy)
}

/// [`per_seed_over_performance`] of a scenario already loaded (and perhaps
/// changed).
fn per_seed_ratio(o: Observe, s: &Scenario, policy: &str) -> Result<Vec<f64>, EngineError> {
    (1..=RICHLING_SEEDS)
        .map(|seed| {
            let opts = SimOptions {
                seed: Some(seed),
                ..SimOptions::observing(o)
            };
            let time = |policy: &str| -> Result<f64, EngineError> {
                let run = simulate(s, policy, &Params::default(), &opts, &mut |_| {})?;
                Ok(run.metrics.makespan_s)
            };
            Ok(time(policy)? / time("performance")?)
        })
        .collect()
}

/// The mean of [`per_seed_over_performance`].
fn over_performance(
    o: Observe,
    scenario: &str,
    policy: &str,
    hint: Option<u32>,
) -> Result<f64, EngineError> {
    Ok(mean(
        per_seed_over_performance(o, scenario, policy, hint)?.into_iter(),
    ))
}

/// Predicted rows for the three single-socket quad-cores of Richling §II
/// and §V-E: a -j1 kernel build under ondemand is 12 % slower than under
/// performance on a Core i7 940 (one clock domain: Problem B alone), 27 %
/// on the Phenom 9750 and 34 % on the Phenom II 940 (per-core clocks:
/// Problems A and B; the paper puts the Phenom II's larger loss down to
/// its wider 3 GHz / 800 MHz span). Neither new preset has a parameter set
/// from a row, so the slowdowns and their order are the model's
/// prediction. Each figure is a mean over seeds 1..=[`RICHLING_SEEDS`].
pub fn richling_three_quads(o: Observe) -> Result<Vec<Check>, EngineError> {
    let slowdown_pct = |scenario: &str| -> Result<f64, EngineError> {
        Ok((over_performance(o, scenario, "ondemand", None)? - 1.0) * 100.0)
    };
    let i7 = slowdown_pct("richling-i7-j1")?;
    // The same at 200 ms, the period §II gives for 2.6.25 on Intel's Core 2
    // (see the preset): measured here so the note cannot go stale.
    let i7_200ms = {
        let mut s = Scenario::load("richling-i7-j1")?;
        let mut machine = (*s.machine).clone();
        machine.spec.governor.sampling_ms = 200.0;
        s.machine = Arc::new(machine);
        (mean(per_seed_ratio(o, &s, "ondemand")?.into_iter()) - 1.0) * 100.0
    };
    let phenom = slowdown_pct("richling-phenom-j1")?;
    let phenom2 = slowdown_pct("richling-phenom2-j1")?;
    let all = format!(
        "means over seeds 1–{RICHLING_SEEDS}: Core i7 {i7:.1} %, Phenom 9750 {phenom:.1} %, \
         Phenom II {phenom2:.1} % (paper 12, 27, 34 %)"
    );
    // §V-E's high/low variants on the Core i7, as Table I runs them on the
    // Phenom: one core in H, then two (the spare), -j1 declared.
    let i7_hilo = over_performance(o, "richling-i7-j1", "hilo-nospare", Some(1))?;
    let i7_spare = over_performance(o, "richling-i7-j1", "hilo", Some(1))?;
    let i7_spare_gain = (1.0 - i7_spare) * 100.0;
    Ok(vec![
        Check::new(
            "Core i7 940 -j1: ondemand slower than performance (%)",
            RSEC2,
            12.0,
            i7,
            1.8,
            &format!(
                "§V-E: 12 % (Turbo Boost and Hyper-Threading off); 10.2–13.8 % accepted (15 %). \
                 A known miss: with one clock domain a new job never lands on a slow core, and \
                 ondemand, which takes the busiest core's load, lowers the chip only when a job \
                 ends inside a sample; 2.6's sample is deferrable work on the policy's first \
                 CPU, so it waits while CPU 0 idles however busy the others are. At the \
                 preset's 80 ms ([estimate]: 2.6.2x's floor of 20 jiffies at HZ 250, as EIST \
                 reports 10 µs) that costs {i7:.1} %. With 200 ms, the paper's default for \
                 'many Intel Core 2 processors' (§II) and the same floor at HZ 100, it is \
                 {i7_200ms:.1} %: the preset keeps the 80 ms chosen before this row was run \
                 (the paper's Core i7 runs were 'initial tests', as its Phenom II's at 80 ms \
                 were 'first tests'), since a period picked because it matches would be a knob. The build is the Phenom 9750's, its work scaled by \
                 2.4 / 2.93; {all}"
            ),
        )
        .predicted()
        .known_miss(),
        Check::new(
            "Phenom II 940 -j1: ondemand slower than performance (%)",
            RSEC2,
            34.0,
            phenom2,
            5.1,
            &format!(
                "§II: 34 % at 3 GHz / 800 MHz and the 80 ms default sampling; 28.9–39.1 % \
                 accepted (15 %). The build is the Phenom 9750's, its work scaled by the clock \
                 ratio 2.4 / 3.0 (the same instructions); left at the Phenom's milliseconds, \
                 each job 25 % longer, the slowdown is 25.0 %; {all}"
            ),
        )
        .predicted(),
        Check::ordering(
            "-j1 ondemand slowdown: the Core i7 (one clock domain) loses least of the three quad-cores (1 = holds)",
            RSEC2,
            i7 < phenom && i7 < phenom2,
            &format!("§II: Problem B alone on the Core i7, A and B together on the K10s; {all}"),
        )
        .predicted(),
        Check::ordering(
            "-j1 ondemand slowdown: the Phenom II loses more than the Phenom 9750 (1 = holds)",
            RSEC2,
            phenom2 > phenom,
            &format!(
                "§II: 'the problem even increases to 34 % due to a higher distance between high \
                 and low frequency'. A known miss: the model's Phenom 9750 loses too much (Table \
                 I's row), because in the model a cold start costs in proportion to the \
                 sampling period (a job waits at the lowest P-state for the next sample: 200 \
                 against 80 ms here), which outweighs the Phenom II's wider span; {all}"
            ),
        )
        .predicted()
        .known_miss(),
        Check::new(
            "Core i7 940 -j1: high/low (|H| = 1) vs performance (run time ratio)",
            RSEC2,
            1.0,
            i7_hilo,
            0.04,
            &format!(
                "§V-E: 'performs similar to the performance governor' (no figure). The same \
                 paper calls Table I's equal times 'equal' and shows this variant 1.9 % slower \
                 on the Phenom 9750, so 'similar' is read as 1.0 with 0.96–1.04 accepted: a \
                 third of the 12 % ondemand loss it is set against fails. Simulated \
                 {i7_hilo:.4} (mean over seeds 1–{RICHLING_SEEDS}): make and the assembler \
                 share the one core in H"
            ),
        )
        .predicted(),
        Check::new(
            "Core i7 940 -j1: high/low + spare faster than performance (%)",
            RSEC2,
            0.75,
            i7_spare_gain,
            0.11,
            &format!(
                "§V-E: 'even slightly better (around 0.5-1%)' with Turbo Boost off, read as \
                 0.75 %; 0.64–0.86 % accepted (15 %). A known miss: simulated {i7_spare_gain:.2} % \
                 (run time ratio {i7_spare:.4}, mean over seeds 1–{RICHLING_SEEDS}). With one \
                 clock domain at its top P-state in both runs, the model differs only in which \
                 cores run the jobs, and the paper names no cause for the gain (the preset's \
                 deepest idle state, C6, costs 0.2 ms to leave, 0.14 % of a 0.14 s job)"
            ),
        )
        .predicted()
        .known_miss(),
    ])
}

/// Seeds 1..=N that the Fig. 1 ordering rows average over. One build's
/// ondemand/performance ratio moves by ±0.02–0.03 with the seed, as much as
/// the 2 % step the "does not grow" row allows, so on one seed that row
/// held or failed by chance (at fbec7eb -j3 rose above -j2 by more than
/// 2 % on seeds 3, 4 and 6 of 1–6, not on the scenarios' seed 5).
pub const RICHLING_SEEDS: u64 = 6;

/// Predicted rows for Richling Fig. 1 (issue #17): the ordering of
/// ondemand's slowdown over `make -j2` … `-j12`. Nothing in the model was
/// set from it: the governor follows the paper's 2.6.25 kernel (200 ms,
/// up-threshold 80, down-differential 10) and the job graph the paper's
/// build, so the shape is the model's own.
/// Each point is a mean over seeds 1..=[`RICHLING_SEEDS`].
pub fn richling_fig1_ordering(o: Observe) -> Result<Vec<Check>, EngineError> {
    // Per -jN, the ondemand/performance ratio on each seed.
    let mut per_seed: Vec<(u32, Vec<f64>)> = Vec::new();
    for n in 2..=12u32 {
        per_seed.push((
            n,
            per_seed_over_performance(o, &format!("richling-make-j{n}"), "ondemand", None)?,
        ));
    }
    let slowdown: Vec<(u32, f64)> = per_seed
        .iter()
        .map(|(n, r)| (*n, r.iter().sum::<f64>() / r.len() as f64))
        .collect();
    let list = slowdown
        .iter()
        .map(|(n, s)| format!("-j{n} {s:.3}"))
        .collect::<Vec<_>>()
        .join(", ");
    // A step may rise by at most 2 %: a rise below one build's run-to-run
    // noise could not show in Fig. 1 (three runs per point).
    let holds = |s: &[f64]| s.windows(2).all(|w| w[1] <= w[0] + 0.02);
    let means: Vec<f64> = slowdown.iter().map(|(_, s)| *s).collect();
    let falls = holds(&means);
    let seeds_holding = (0..RICHLING_SEEDS as usize)
        .filter(|&k| holds(&per_seed.iter().map(|(_, r)| r[k]).collect::<Vec<f64>>()))
        .count();
    let steepest = slowdown
        .windows(2)
        .map(|w| (w[1].0, w[1].1 - w[0].1))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((0, f64::NAN));
    let at = |n: u32| {
        slowdown
            .iter()
            .find(|(m, _)| *m == n)
            .map_or(f64::NAN, |(_, s)| *s)
    };
    Ok(vec![
        Check::ordering(
            "ondemand's slowdown does not grow from -j2 to -j12 (1 = holds)",
            RFIG,
            falls,
            &format!(
                "§II: the effect is more pronounced the larger the distance between cores and \
                 parallelism; a step may rise by 2 % at most. Ondemand/performance run time, mean \
                 over seeds 1–{RICHLING_SEEDS}: {list}; the largest rise is to -j{} (+{:.3}), and \
                 the steps hold on {seeds_holding} of the {RICHLING_SEEDS} seeds alone. A known \
                 miss: the model's -j3 is slower than its -j2 on every seed. With every new job \
                 on the CPU idle longest the rise was +0.020 (1.471 to 1.491), inside the step; \
                 2.6.25's exec balancing, which brought Table I's -j1 row to the paper, shortens \
                 -j2 more than -j3 (1.423 and 1.469 at its commit)",
                steepest.0, steepest.1
            ),
        )
        .predicted()
        .known_miss(),
        Check::ordering(
            "ondemand is slower than performance at every -j2 … -j12 (1 = holds)",
            RFIG,
            slowdown.iter().all(|(_, s)| *s > 1.0),
            &format!("Fig. 1: ondemand never beats performance, even at -j8 … -j12 where phases of low parallelism remain (§V-A); means over seeds 1–{RICHLING_SEEDS}: {list}"),
        )
        .predicted(),
        Check::ordering(
            "ondemand's slowdown at -j2 exceeds -j12's (1 = holds)",
            RFIG,
            at(2) > at(12),
            &format!(
                "§II; simulated -j2 {:.3}, -j12 {:.3} (means over seeds 1–{RICHLING_SEEDS})",
                at(2),
                at(12)
            ),
        )
        .predicted(),
    ])
}

const FIG8: &str = "Merkel et al. EuroSys'10 §8.4, Fig. 8";

/// `av` and `av-xnode` on a built-in cluster, the bus read from the
/// Q6600's bus-transaction event as in Figs. 5–6.
fn xnode_runs(
    o: Observe,
    cluster: &str,
) -> Result<(crate::cluster::TaskRatios, crate::cluster::ClusterRun), EngineError> {
    use crate::cluster::{simulate_cluster, TaskRatios};
    use ecosched_sim::cluster::Workload;
    let Workload::Cluster(c) = Workload::load(cluster)? else {
        return Err(EngineError::from(
            ecosched_policy::PolicyError::Incompatible(format!(
                "{cluster} is not a cluster scenario"
            )),
        ));
    };
    let params = Params::default().with("bus_event", "mem_transactions");
    let options = SimOptions::observing(o);
    let base = simulate_cluster(&c, "av", &params, &options, &mut |_| {})?;
    let xnode = simulate_cluster(&c, "av-xnode", &params, &options, &mut |_| {})?;
    Ok((TaskRatios::new(&xnode.metrics, &base.metrics), xnode))
}

/// Merkel §8.4, Fig. 8: cross-node swaps (`av-xnode`) against no
/// migration (`av` on each node) from the worst start (all compute-bound
/// VMs on one node, all memory-bound on the other) and from a mixed one.
/// Nothing in the model was set from these rows; the migration cost is
/// an assumption (`[migration]`, ecosched-sim cluster.rs).
pub fn merkel_xnode(o: Observe) -> Result<Vec<Check>, EngineError> {
    let (worst, run) = xnode_runs(o, "merkel-xnode-worst")?;
    let (mixed, _) = xnode_runs(o, "merkel-xnode-mixed")?;
    let memory = ["lbm", "libquantum", "mcf", "soplex"];
    let compute = ["games", "sjeng", "hmmer", "namd"];
    let ratio_in =
        |r: &crate::cluster::TaskRatios, n: &str| r.runtime.get(n).copied().unwrap_or(f64::NAN);
    let t = |n: &str| ratio_in(&worst, n);
    // "name ratio, …" for `names` in one start's run-time ratios.
    let listed = |r: &crate::cluster::TaskRatios, names: &[&str]| {
        names
            .iter()
            .map(|n| format!("{n} {:.3}", ratio_in(r, n)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let list = |names: &[&str]| listed(&worst, names);
    let sjeng_most = compute
        .iter()
        .filter(|n| **n != "sjeng")
        .all(|n| t(n) < t("sjeng"));
    let swapped: Vec<String> = run
        .report
        .swaps
        .iter()
        .map(|s| format!("{} <-> {} at {:.0} s", s.task_a, s.task_b, s.time_s))
        .collect();
    let mixed_list = || listed(&mixed, &[memory, compute].concat());
    let cause = "the compute-bound class curves made continuous at their working set (before, the compute-bound tasks lost ≈ 8× their misses beside memory-bound ones: see Fig. 5's compute-bound row), and libquantum's and xalancbmk's curves recalibrated on PAM's figures (profiles.toml)";
    Ok(vec![
        Check::new(
            "worst start: av-xnode vs no migration, mean run-time ratio",
            FIG8,
            0.85,
            worst.mean_runtime.unwrap_or(f64::NAN),
            0.05,
            &format!("mean over the eight benchmarks of run time (av-xnode) / run time (av), 80 min with two swap periods spent reaching the mix; fails if the gain falls below 10 % (memory-bound: {}; compute-bound: {})", list(&memory), list(&compute)),
        )
        .predicted(),
        Check::new(
            "worst start: av-xnode vs no migration, mean EDP ratio",
            FIG8,
            0.79,
            worst.mean_edp.unwrap_or(f64::NAN),
            0.05,
            &format!("mean over the benchmarks of per-task EDP ratios. A known miss at 0.869 (0.872 after the PAM recalibration alone) until {cause}"),
        )
        .predicted(),
        Check::ordering(
            "worst start: every memory-bound benchmark runs shorter with swaps",
            FIG8,
            memory.iter().all(|n| t(n) < 1.0),
            &format!("run-time ratios {}", list(&memory)),
        )
        .predicted(),
        Check::ordering(
            "worst start: compute-bound benchmarks gain nothing (each ratio ≥ 0.98)",
            FIG8,
            compute.iter().all(|n| t(n) >= 0.98),
            &format!("'only moderately increased': {}", list(&compute)),
        )
        .predicted(),
        Check::ordering(
            "worst start: sjeng slows down most of the compute-bound benchmarks",
            FIG8,
            sjeng_most,
            &format!("run-time ratios {}: the sjeng profile carries only its class (compute-bound); of the four its floor miss ratio (0.05) and working set (4 MiB) are the largest, so it loses most once beside memory-bound VMs. Was a known miss while the class curves stepped up 3.5× below the working set (hmmer then lost most)", list(&compute)),
        )
        .predicted(),
        Check::new(
            "worst start: swaps made (two memory-bound and two compute-bound moved)",
            FIG8,
            2.0,
            run.report.swaps.len() as f64,
            0.0,
            &format!("one swap per 10-min period while it raises min(varsum) by more than swap_gain: {}", swapped.join(", ")),
        )
        .predicted(),
        Check::new(
            "mixed start: av-xnode vs no migration, mean run-time ratio",
            FIG8,
            0.96,
            mixed.mean_runtime.unwrap_or(f64::NAN),
            0.03,
            &format!("'4 % reduction in both runtime and EDP'; run-time ratios {}. The one swap (a memory-bound task for a compute-bound one at 600 s) puts a second memory-bound task beside soplex, alone of its kind on its node before, so soplex loses while the others gain. A known miss at 1.011 / 1.030 (0.995 / 1.002 after the PAM recalibration alone) until {cause}", mixed_list()),
        )
        .predicted(),
        Check::new(
            "mixed start: av-xnode vs no migration, mean EDP ratio",
            FIG8,
            0.96,
            mixed.mean_edp.unwrap_or(f64::NAN),
            0.03,
            "as the run-time row",
        )
        .predicted(),
        Check::ordering(
            "a mixed start gains less than the worst start (mean run-time ratio)",
            FIG8,
            mixed.mean_runtime.unwrap_or(f64::NAN) > worst.mean_runtime.unwrap_or(f64::NAN),
            &format!(
                "worst {:.3}, mixed {:.3}",
                worst.mean_runtime.unwrap_or(f64::NAN),
                mixed.mean_runtime.unwrap_or(f64::NAN)
            ),
        )
        .predicted(),
    ])
}

#[cfg(test)]
mod tests {
    use super::Check;

    #[test]
    fn a_band_holding_no_effect_inside_is_a_problem() {
        let row = |name: &str, paper: f64, tolerance: f64| {
            Check::new(name, "test", paper, paper, tolerance, "").no_effect_problem()
        };
        // Table 1's stream row as it was, and as it is.
        assert!(row("4 stream: time ratio", 1.04, 0.05).is_some());
        assert!(row("4 stream: time ratio", 1.04, 0.03).is_none());
        // A per-cent effect whose band reaches past 0, and one that does not.
        assert!(row(
            "Task 2: algorithm 1 saves power against control (loaded, %)",
            1.0,
            1.5
        )
        .is_some());
        assert!(row(
            "Task 2: algorithm 1 saves power against control (loaded, %)",
            8.28,
            1.242
        )
        .is_none());
        // Claims of no effect, and of at most a slight one.
        assert!(row(
            "-j1 high/low + spare vs performance (run time ratio)",
            1.0,
            0.02
        )
        .is_none());
        assert!(row(
            "stream-fit2: 2 instances sharing an L2 vs alone (ratio)",
            1.05,
            0.05
        )
        .is_none());
        // Watts have no figure of no effect.
        assert!(row("-j1 all cores low: average power (W)", 79.0, 100.0).is_none());
        // An ordering has no band.
        assert!(Check::ordering("a ratio holds", "test", true, "")
            .no_effect_problem()
            .is_none());
    }
}
