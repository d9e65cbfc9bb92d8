//! Dhiman, Rosing, Kontorinis, Saxe, Tullsen, Chew: *Dynamic Workload
//! Characterization for Power Efficient Scheduling on CMP Systems*
//! (ISLPED'10): WCA against the default scheduler on the eight 3-thread
//! mixes of Table 2, each over [`SEEDS`] seeds, and the best and worst
//! hand-made placements of Fig. 2a. Always under `--observe linux`: these
//! rows are about a policy's gain.
//!
//! | Figure | Quantity | Paper | Row |
//! |---|---|---|---|
//! | Table 2, §5.2 | default migrations/s, mean of the 8 mixes | 1.33 | calibrated |
//! | Table 2, §5.2 | WCA migrations/s, mean of 8 | 0.11 | predicted |
//! | Table 2, §5.2 | migrations cut default → WCA | 0.91 | predicted |
//! | Table 2, §5.2 | run-time std-dev cut default → WCA | 0.89 | predicted |
//! | Table 2, §5.2 | default, WCA run-time std-dev (% of the best placement's run time), mean of 8 | 30, 2 | predicted |
//! | Fig. 5a, §5.2 | mixes where WCA gains AW perf/W | 8 of 8 | predicted |
//! | §5.2 | mixes where WCA equals the best placement | 8 of 8 | predicted |
//! | Fig. 2a, §3 | art-equake-equake: worst vs best placement perf/W loss | 0.70 | calibrated |
//! | Fig. 2a, §3 | art-equake-equake: the default between best and worst | 0.5 ("roughly in the middle") | predicted |

use crate::experiment::SimOptions;
use crate::validate::check::Check;
use crate::validate::runs::mean;
use crate::EngineError;
use ecosched_policy::Params;
use ecosched_sim::{Observe, Scenario};

const DHIMAN_T2: &str = "Dhiman et al. (WCA) §5.2, Table 2";
const DHIMAN_F2: &str = "Dhiman et al. (WCA) §3, Fig. 2a";
const DHIMAN_F5: &str = "Dhiman et al. (WCA) §5.2, Fig. 5a";

/// The eight 3-thread mixes of Table 2 with the paper's figures: default
/// migrations/s and run-time std-dev (%), then WCA's.
pub const TABLE2: [(&str, f64, f64, f64, f64); 8] = [
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
pub const SEEDS: u32 = 10;

/// One Table 2 mix: default (`performance`) against `wca` over
/// [`SEEDS`] seeds, and the best and worst hand-made placements.
#[derive(Debug, Clone, PartialEq)]
pub struct Mix {
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

impl Mix {
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
pub fn mix(mix: &str) -> Result<Mix, EngineError> {
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
        SEEDS,
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
            SEEDS,
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
    Ok(Mix {
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
pub fn checks() -> Result<Vec<Check>, EngineError> {
    let mixes: Vec<Mix> = TABLE2
        .iter()
        .map(|(m, ..)| mix(m))
        .collect::<Result<_, _>>()?;
    let n = mixes.len() as f64;
    let mean = |f: &dyn Fn(&Mix) -> f64| mixes.iter().map(f).sum::<f64>() / n;
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
            &format!("WCA pins the three threads; the rest are its own initial moves (15 %; a known miss: fewer initial moves than the paper's). The figure is moves per restart over the scenarios' shortened runs (each benchmark 20 s alone), not a rate the paper's runs fix: it falls as the runs grow longer while the default's rate stays, and the paper gives no run length. Per mix (default → WCA, mig/s and run-time std-dev): {}", per_mix.join("; ")),
        )
        .predicted()
        .known_miss(),
        Check::new(
            "Table 2 mixes: migrations cut default → WCA",
            DHIMAN_T2,
            0.91,
            mig_cut,
            0.09,
            "1 − WCA / default per mix, then the mean of the 8, as Table 2's Average row; fails below 0.82",
        )
        .predicted(),
        Check::new(
            "Table 2 mixes: run-time std-dev cut default → WCA",
            DHIMAN_T2,
            0.89,
            sd_cut,
            0.11,
            &format!("1 − WCA / default of the run-time std-dev (next row) per mix, then the mean of the 8, as Table 2's Average row (1 − mean WCA / mean default gives 0.93 on the paper's own columns, not its 0.89); fails below 0.78 or if WCA varies more. The magnitudes are the next two rows: default {def_sd:.1} % (paper 30 %), WCA {wca_sd:.2} % (paper 2 %)"),
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
                 the best placement, averaged over the tasks, \
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
            "1 − perf/W(worst) / perf/W(best), perf/W from eq. 2 against the default; 0.595–0.805 accepted (15 %). Calibrated: art's memory-level parallelism (1.5) was set from this row. Its working set does not move it: beside an equake art thrashes its share completely (miss ratio 1) whatever the curve. The mixes run 600 s, so that no run cuts an art instance off and counts it at the time it was alive",
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
