//! Richling, Schönherr, Mühl, Werner: *Towards Energy-Aware Multi-Core
//! Scheduling* (PIK 32(2), 2009). The paper times a Linux kernel build
//! (`make -jN`) at the wall; the `richling-*` scenarios build a generated
//! job graph with the system meter. Its §V experiments size the high set
//! from the known N, so the high/low variants run with N declared as the
//! application's parallelism hint; `hilo` is also checked with its own
//! 20 ms parallelism measurement. Figs. 1–2 are on the dual Opteron 2352,
//! Table I on the Phenom 9750, and §II / §V-E add the Core i7 940 and the
//! Phenom II 940.
//!
//! The paper's system owns the machine: every core outside H sits at the
//! lowest P-state (§IV-A). Its rows run the high/low variants so
//! ([`paper_params`]); by default `hilo` leaves those cores to their
//! governor.
//!
//! Neither figure's values are in the text, so their rows check what the
//! text says of them; "clearly" and "significantly" need more than
//! [`CLEAR`].
//!
//! | Figure | Quantity | Paper | Row |
//! |---|---|---|---|
//! | Fig. 1, §II | make -j1 … -j7: ondemand clearly slower than performance | holds | predicted |
//! | Fig. 2, §V-C | make -j1 … -j8: high/low + spare (\|H\| = N + 1) vs performance, run-time ratio | 1.0 (within 5 %) | calibrated |
//! | Fig. 2, §IV-B | make -j1 … -j8: high/low + spare, parallelism measured, run-time ratio | 1.0 (within 5 %) | calibrated |
//! | Fig. 2, §V-A | make -j2: variant A clearly faster than plain ondemand | holds | predicted |
//! | Fig. 1, §II | ondemand's slowdown at -j1 larger than at -j7 | holds | predicted |
//! | Fig. 2, §V-A | make -j6 and -j7: variant A slower than plain ondemand | holds | predicted |
//! | Fig. 2, §V-C | -j2 … -j6: variant C (spare) clearly faster than B (no spare) | holds | predicted |
//! | Fig. 1, §II | ondemand's slowdown does not grow from -j2 to -j12 | holds | predicted |
//! | Fig. 1 | ondemand slower than performance at every -j2 … -j12 | holds | predicted |
//! | Fig. 1, §II | ondemand's slowdown at -j2 exceeds -j12's | holds | predicted |
//! | Table I, §V-D | make -j1 average power: performance, high/low, high/low + spare | 136, 121, 126 W | calibrated |
//! | Table I, §V-D | run-time ratio to performance: high/low, high/low + spare, ondemand, all cores low | 6:11, 6:04, 7:44, 11:47 over 6:04 | calibrated |
//! | Table I, §V-D | energy ratio to performance: high/low, high/low + spare | 12.55, 12.80 over 13.77 Wh | calibrated |
//! | Table I, §V-D | energy order high/low < + spare < performance < ondemand < all low | holds | calibrated |
//! | Table I, §V-D | average power: ondemand, all cores low | 113, 79 W | predicted |
//! | Table I, §V-D | energy ratio to performance: ondemand, all cores low | 14.64, 15.57 over 13.77 Wh | predicted |
//! | §V-E | Core i7 940 -j1: ondemand slower than performance | 12 % | predicted |
//! | §II | Phenom II 940 -j1: ondemand slower than performance | 34 % | predicted |
//! | §II | the Core i7 (one clock domain) loses least of the three quad-cores | holds | predicted |
//! | §II | the Phenom II loses more than the Phenom 9750 | holds | predicted |
//! | §V-E | Core i7 940 -j1: high/low (\|H\| = 1) vs performance, run-time ratio | 1.0 ("similar") | predicted |
//! | §V-E | Core i7 940 -j1: high/low + spare faster than performance | 0.75 % ("around 0.5-1%") | predicted |

use crate::experiment::{simulate, SimOptions};
use crate::validate::check::Check;
use crate::validate::runs::{mean, run_hinted};
use crate::EngineError;
use ecosched_model::RunMetrics;
use ecosched_policy::Params;
use ecosched_sim::{Observe, Scenario};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The parameters `policy` runs with in the paper: the high/low variants
/// that set frequencies hold every core outside H at the lowest P-state.
pub fn paper_params(policy: &str) -> Params {
    match policy {
        "hilo" | "hilo-nospare" => Params::default().with("own_machine", true),
        _ => Params::default(),
    }
}

const RFIG: &str = "Richling et al. §II Fig. 1, §V Fig. 2";
const RTAB1: &str = "Richling et al. §V-D, Table I";
const RSEC2: &str = "Richling et al. §II, §V-E";

/// How far apart two run times must be for Richling's words "clearly",
/// "significantly" and "a significant improvement" to hold, as a fraction:
/// §V-C calls the 5 % that experiment C leaves "the gap to the optimum"
/// while counting C as a success, so a difference the text stresses must
/// be larger than that.
pub const CLEAR: f64 = 0.05;

/// Richling Fig. 1–2: `make -jN` on the dual Opteron 2352 under the
/// performance and ondemand governors and the high/low variants.
///
/// Neither figure's values are in the text, so only what the text says
/// of them is checked: ondemand "clearly" slower for N < 8 (§II), its loss
/// largest at small N (§II), variant A "significantly better" than
/// ondemand at small N (§V-A), C's "significant improvement" over B for
/// N = 2 … 6 (§V-C), and C within 5 % of performance (§V-C). None of
/// them has a number to compare with: the paper gives none.
///
/// The direction rows are predicted: nothing in `opteron-2352.toml` or the
/// `richling-make-j*` builds was set from Fig. 1 or 2 (the preset's one
/// calibrated parameter, `idle_ceff`, and the builds' `helper_share` come
/// from Table I), and the governor follows the paper's 2.6.25 kernel. The
/// 5 % rows of experiment C carry the default label, calibrated: a row is
/// called predicted only with a reason (see [`Check::kind`]).
pub fn fig2(o: Observe) -> Result<Vec<Check>, EngineError> {
    let mut checks = Vec::new();
    let mut ondemand_slowdown = Vec::new();
    let mut b_over_c = Vec::new();
    // Variant A's run time over plain ondemand's, at the N §V-A speaks of.
    let mut a_over_ondemand = BTreeMap::new();
    for n in 1..=8u32 {
        let scenario = format!("richling-make-j{n}");
        let time = |policy: &str, hint: Option<u32>| -> Result<f64, EngineError> {
            Ok(run_hinted(o, &scenario, policy, paper_params(policy), hint)?.makespan_s)
        };
        let perf = time("performance", None)?;
        let ondemand = time("ondemand", None)? / perf;
        ondemand_slowdown.push(ondemand);
        if n < 8 {
            checks.push(
                Check::ordering(
                    &format!("make -j{n}: ondemand clearly slower than performance (1 = holds)"),
                    RFIG,
                    ondemand > 1.0 + CLEAR,
                    &format!(
                        "§II: Fig. 1 (its values are not in the text) 'clearly shows the \
                         performance degrading effect' for N < 8; held when ondemand's run \
                         time exceeds performance's by more than {:.0} %; simulated \
                         {ondemand:.3}×",
                        CLEAR * 100.0
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
            a_at(2) < 1.0 - CLEAR,
            &format!(
                "§V-A: 'significantly better than the original on-demand approach for small \
                 parallelisms' (Fig. 2's values are not in the text); held when A's run time is \
                 more than {:.0} % below ondemand's; simulated {:.3}×",
                CLEAR * 100.0,
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
                 than the cold starts on idle cores that A avoids; a dearer make (make_ms) or a \
                 larger helper share leaves A faster than ondemand at -j6 all the same",
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
            b_over_c_mean > 1.0 + CLEAR,
            &format!(
                "§V-C: for N = 2 … 6 'a significant improvement is achieved' over experiments A \
                 and B (without the spare, make competes with the jobs for H); held when B's run \
                 time exceeds C's by more than {:.0} % on average; simulated B/C \
                 {b_over_c_mean:.3} ({b_over_c_list}). A known miss: without the spare what \
                 competes with the jobs for H is the helpers beside each compiler (gcc -pipe's \
                 assembler; helper_share 0.02, set from Table I's 1.9 % for high/low without a \
                 spare at -j1), so B loses about that at every N. Make's own cost (make_ms) does \
                 not move it, and a helper share large enough to open the gap breaks Table I's \
                 high/low row, which pins the share. Nothing in the model makes the missing \
                 spare cost more at -j2 … -j6 than at -j1",
                CLEAR * 100.0
            ),
        )
        .predicted()
        .known_miss(),
    );
    Ok(checks)
}

/// Richling Table I: `make -j1` on the Phenom 9750 under five policies.
pub fn table1(o: Observe) -> Result<Vec<Check>, EngineError> {
    let scenario = "richling-phenom-j1";
    let run1 = |policy: &str, params: Params| run_hinted(o, scenario, policy, params, Some(1));
    let perf = run1("performance", Params::default())?;
    let hilo = run1("hilo-nospare", paper_params("hilo-nospare"))?;
    let spare = run1("hilo", paper_params("hilo"))?;
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
             longest. Where a job starts matters because a job on a cold core waits there for \
             its deferred sample and then for the next one on the 200 ms grid",
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
            &format!(
                "Table I: 79 W; 67.2–90.8 W accepted (15 %). A known miss: the model drops \
                 {:.0} → {:.0} W for three idle cores at 1.2 GHz (the row the idle ceff was set \
                 on) but only to {:.0} W with every core at 1.2 GHz and the plane at the \
                 estimated 1.05 V, where the paper's machine lost 57 W. Neither leakage nor the \
                 plane's voltage can close it: the preset's power that follows no core (base_w \
                 68.6, set so that performance draws 136 W, + uncore 12 + idle memory 5 = \
                 85.6 W) is above 79 W already. Under power.rs's law, 136 and 79 W together \
                 (121 W holds whatever the split) need ceff ≈ 14.9, a busy core drawing about \
                 56 W of dynamic power at the wall at 2.4 GHz and 1.25 V, and base_w ≈ 24 W; \
                 the preset's ceff is 2.9 ([estimate], the Opteron 2352's K10 core: 11 W), and \
                 one core of a 95 W quad-core cannot draw 56 W even counting the supply's \
                 losses (a quarter of the part is 24 W)",
                w(&perf),
                w(&hilo),
                w(&low)
            ),
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

/// `policy`'s run time over performance's on `scenario`, per seed
/// 1..=[`SEEDS`], with the parallelism `hint` declared to both.
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
/// changed); the seeds run side by side ([`crate::parallel`]).
fn per_seed_ratio(o: Observe, s: &Scenario, policy: &str) -> Result<Vec<f64>, EngineError> {
    let seeds: Vec<u64> = (1..=SEEDS).collect();
    crate::parallel::map(&seeds, |&seed| {
        let opts = SimOptions {
            seed: Some(seed),
            ..SimOptions::observing(o)
        };
        let time = |policy: &str| -> Result<f64, EngineError> {
            let run = simulate(s, policy, &paper_params(policy), &opts, &mut |_| {})?;
            Ok(run.metrics.makespan_s)
        };
        Ok(time(policy)? / time("performance")?)
    })
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
/// prediction. Each figure is a mean over seeds 1..=[`SEEDS`].
pub fn three_quads(o: Observe) -> Result<Vec<Check>, EngineError> {
    let slowdown_pct = |scenario: &str| -> Result<f64, EngineError> {
        Ok((over_performance(o, scenario, "ondemand", None)? - 1.0) * 100.0)
    };
    let i7 = slowdown_pct("richling-i7-j1")?;
    // The same at 200 ms, the period §II gives for 2.6.25 on Intel's Core 2
    // (see the preset): measured here, so that the note quotes the model.
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
        "means over seeds 1–{SEEDS}: Core i7 {i7:.1} %, Phenom 9750 {phenom:.1} %, \
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
                 {i7_200ms:.1} %. The preset keeps 80 ms, which was not set from this row (the \
                 paper's Core i7 runs were 'initial tests', as its Phenom II's at 80 ms were \
                 'first tests'): a period picked because it matches would be a knob. The build \
                 is the Phenom 9750's, its work scaled by 2.4 / 2.93; {all}"
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
                 ratio 2.4 / 3.0 (the same instructions: at the Phenom's milliseconds each job \
                 would run 25 % longer, and a longer job loses a smaller share to ondemand's \
                 cold starts); {all}"
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
                 {i7_hilo:.4} (mean over seeds 1–{SEEDS}): make and the assembler \
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
                 (run time ratio {i7_spare:.4}, mean over seeds 1–{SEEDS}). With one \
                 clock domain at its top P-state in both runs, the model differs only in which \
                 cores run the jobs, and the paper names no cause for the gain (the preset's \
                 deepest idle state, C6, costs 0.2 ms to leave, 0.14 % of a 0.14 s job)"
            ),
        )
        .predicted()
        .known_miss(),
    ])
}

/// Seeds 1..=N that the Fig. 1 ordering rows and the three quad-cores'
/// rows average over. One build's ondemand/performance ratio moves with
/// the seed by as much as the 2 % step the "does not grow" row allows, so
/// on one seed that row would hold or fail by chance.
pub const SEEDS: u64 = 6;

/// Predicted rows for Richling Fig. 1: the ordering of
/// ondemand's slowdown over `make -j2` … `-j12`. Nothing in the model was
/// set from it: the governor follows the paper's 2.6.25 kernel (200 ms,
/// up-threshold 80, down-differential 10) and the job graph the paper's
/// build, so the shape is the model's own.
/// Each point is a mean over seeds 1..=[`SEEDS`].
pub fn fig1_ordering(o: Observe) -> Result<Vec<Check>, EngineError> {
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
    let seeds_holding = (0..SEEDS as usize)
        .filter(|&k| holds(&per_seed.iter().map(|(_, r)| r[k]).collect::<Vec<f64>>()))
        .count();
    let steepest = slowdown
        .windows(2)
        .map(|w| (w[1].0, w[1].1 - w[0].1))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((0, f64::NAN));
    // On how many seeds -j3 runs slower than -j2 under ondemand.
    let j3_over_j2 = (0..SEEDS as usize)
        .filter(|&k| per_seed[1].1[k] > per_seed[0].1[k])
        .count();
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
                 over seeds 1–{SEEDS}: {list}; the largest rise is to -j{} (+{:.3}), and \
                 the steps hold on {seeds_holding} of the {SEEDS} seeds alone. A known \
                 miss: the model's -j3 is slower than its -j2 on {j3_over_j2} of the {SEEDS} \
                 seeds. 2.6.25's exec balancing (each job starts beside make unless another CPU \
                 looked idle at its last tick; Table I's ondemand row) shortens -j2 more than \
                 -j3",
                steepest.0, steepest.1
            ),
        )
        .predicted()
        .known_miss(),
        Check::ordering(
            "ondemand is slower than performance at every -j2 … -j12 (1 = holds)",
            RFIG,
            slowdown.iter().all(|(_, s)| *s > 1.0),
            &format!("Fig. 1: ondemand never beats performance, even at -j8 … -j12 where phases of low parallelism remain (§V-A); means over seeds 1–{SEEDS}: {list}"),
        )
        .predicted(),
        Check::ordering(
            "ondemand's slowdown at -j2 exceeds -j12's (1 = holds)",
            RFIG,
            at(2) > at(12),
            &format!(
                "§II; simulated -j2 {:.3}, -j12 {:.3} (means over seeds 1–{SEEDS})",
                at(2),
                at(12)
            ),
        )
        .predicted(),
    ])
}
