//! Patel's Task 4 (24 programs on 8 CPUs) with priorities: the completion
//! order under algorithm 2 with static priorities (Table 8, §9.2.2), and
//! algorithms 2–4 with dynamic priorities (`patel-task4-dyn`): cache
//! misses (Table 21, §9.2.3), power and performance (Table 24, §9.2.4),
//! context switches and migrations (Table 25, §9.2.4). Every figure is a
//! mean over seeds 1..=[`SEEDS`].
//!
//! | Figure | Quantity | Paper | Row |
//! |---|---|---|---|
//! | Table 25 | algorithm 4, algorithm 2 cut migrations against control | 24.15, 2.02 % | predicted |
//! | Table 25 | algorithm 4 switches context less than algorithm 2 | 25.82 % | predicted |
//! | Table 24 | algorithm 4 vs control: power saved (loaded), performance per watt, performance | 20.88, 33.02, 15.34 % | predicted |
//! | Table 21 | algorithm 3 lowers the cache miss/reference ratio against algorithm 2 | holds (3.45 %) | predicted |
//! | Table 8 | both priority orders, control and algorithm 2: group 1 finishes before group 2 | holds | predicted |

use super::seeded::{measurement, over_seeds, reduction_pct, seed_runs, SEEDS};
use crate::experiment::{SimOptions, SimRun};
use crate::validate::check::Check;
use crate::validate::runs::{holds, mean};
use crate::EngineError;
use ecosched_model::RunMetrics;
use ecosched_policy::Params;
use ecosched_sim::{MigrationCauses, Scenario};
use std::collections::BTreeMap;

const PATEL_T8: &str = "Patel, PhD thesis (UNLV 2012) §9.2.2, Table 8";
const PATEL_T21: &str = "Patel, PhD thesis (UNLV 2012) §9.2.3, Table 21";
const PATEL_T24: &str = "Patel, PhD thesis (UNLV 2012) §9.2.4, Table 24";
const PATEL_T25: &str = "Patel, PhD thesis (UNLV 2012) §9.2.4, Table 25";

/// Patel Tables 24 and 25 (Task 4 with dynamic priorities; one set of
/// runs serves both): algorithm 4's power and performance against control
/// (Table 24), and the context switches and migrations of algorithms 4
/// and 2 against control and of 4 against 2 (Table 25). Each figure is a
/// mean over seeds 1..=[`SEEDS`].
pub fn tables24_25() -> Result<Vec<Check>, EngineError> {
    let scenario = "patel-task4-dyn";
    let cs = |m: &RunMetrics| m.patel.context_switches.map(|x| x as f64);
    let mig = |m: &RunMetrics| m.patel.migrations.map(|x| x as f64);
    // Per seed: control, algorithm 2, algorithm 4.
    let runs = seed_runs(scenario, &["ondemand", "patel2", "patel4"])?;
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
                 CPUs; 20.5–27.8 % accepted (15 %). Mean over seeds 1–{SEEDS} (sd {:.1} %; \
                 a cut on {mig4_up} of them). The Opteron 6134 preset follows 2.6.35's scheduler: \
                 weighted balancing, wake-ups on the previous CPU or an \
                 idle one sharing its L3, idle pulls of tasks that are not cache-hot. Where \
                 control's migrations come from (`sim --json`, `migrations_by_cause`, simulator \
                 truth, means over the seeds): {:.0} balancing moves, {:.0} idle pulls and {:.0} \
                 wake-ups of {:.0}; algorithm 2 makes {:.0}, of them {:.0} idle pulls and {:.0} cpuset moves. \
                 The cut is confinement's, not algorithm 4's index: algorithm 2 cuts {mig2:.1} % \
                 (thesis 2.02 %) and algorithm 4 against algorithm 2 {mig42:.1} % (thesis \
                 22.59 %). Control's ondemand follows the same kernel (95 % up-threshold, \
                 3-point down-differential, 100 ms). A known miss above the band (standard error \
                 {:.1} %): the mean moves across its upper edge with the seed set (`validate \
                 --reseed`) and with the profile knobs and the balance interval (`validate \
                 --perturb 10`)",
                mig4s.std,
                moved(0, |m| m.balance),
                moved(0, |m| m.idle_pull),
                moved(0, |m| m.wake_up),
                total(0),
                total(1),
                moved(1, |m| m.idle_pull),
                moved(1, |m| m.affinity),
                mig4s.std / (SEEDS as f64).sqrt(),
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
                "simulated {mig2:.1} % (mean over seeds 1–{SEEDS}, sd {:.1} %, a cut on \
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
                "simulated {cs42:.1} % fewer (mean over seeds 1–{SEEDS}, sd {:.1} %, fewer \
                 on {cs42_up} of them), thesis 25.82 %; 21.95–29.69 % accepted (15 %). A known \
                 miss, because the index vetoes keep more programs in the crowded 0.8 GHz cpuset: \
                 the index (17 switches and migrations per CPU second) vetoes up-moves algorithm \
                 2 would make (`sim --json`, policy_notes: `vetoed_by_cs_mig_index`; algorithm 4 \
                 against 2 on migrations: simulated {mig42:.1} %, thesis 22.59 %). \
                 Against control the model also misses: algorithm 4 {cs4:.1} % and algorithm 2 \
                 {cs2:.1} % (thesis 52.19 / 35.55 %), because crowding 24 programs into the faster \
                 cpusets shortens CFS slices there",
                cs42s.std
            ),
        )
        .predicted()
        .known_miss(),
    ];
    checks.extend(table24(&runs));
    Ok(checks)
}

/// Patel Table 24 from the Task 4 dynamic-priority runs (per seed:
/// control, algorithm 2, algorithm 4): algorithm 4 against control.
/// Power is the loaded power, as in Table 4's rows.
fn table24(runs: &[Vec<SimRun>]) -> Vec<Check> {
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
                "simulated {:.1} % (mean over seeds 1–{SEEDS}, sd {:.1} %), thesis 20.88 % \
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
                "simulated {ppw:.1} % (mean over seeds 1–{SEEDS}), thesis 33.02 %; \
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
                 {:.1} % (mean over seeds 1–{SEEDS}, sd {:.1} %, a gain on {perf_up} of \
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
/// row holds when the mean margin over seeds 1..=[`SEEDS`] is
/// positive and the order held on most of them.
pub fn table8() -> Result<Vec<Check>, EngineError> {
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
            let seeds: Vec<u64> = (1..=SEEDS).collect();
            let margins = crate::parallel::map(&seeds, |&seed| {
                let o = SimOptions {
                    seed: Some(seed),
                    ..measurement()
                };
                Ok(order_margin(
                    &last_completions(&s, policy, &o)?,
                    first,
                    second,
                ))
            })?;
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
                     programs: mean margin {mean:.1} s over seeds 1–{SEEDS}, held on {held}",
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
/// Mean over seeds 1..=[`SEEDS`]; the direction holds only if the
/// mean lies more than two standard errors above zero (an effect, not
/// noise).
pub fn table21() -> Result<Vec<Check>, EngineError> {
    let runs = seed_runs("patel-task4-dyn", &["patel2", "patel3"])?;
    let (rs, lower) = over_seeds(&runs, |r| {
        reduction_pct(
            r[1].metrics.patel.cache_miss_ratio,
            r[0].metrics.patel.cache_miss_ratio,
        )
    });
    let r = rs.mean;
    let stderr = rs.std / (SEEDS as f64).sqrt();
    Ok(vec![Check::new(
        "Task 4 dyn: algorithm 3 lowers the cache miss/reference ratio against algorithm 2 (1 = holds)",
        PATEL_T21,
        1.0,
        holds(r > 2.0 * stderr),
        0.0,
        &format!(
            "simulated {r:.2} % lower (mean over seeds 1–{SEEDS}, sd {:.2} %, lower on \
             {lower} of them; holds above two standard errors, {:.2} %), thesis 3.45 %. A known \
             miss: no effect left. A task's \
             miss ratio depends on its cache share and, after a move to the other die's L3 (or its \
             first run), on the lines it has brought back in (cache warm-up, contention::warming), \
             not on frequency. What effect algorithm 3 can have rests on how steeply a \
             program's misses rise as its share shrinks: the compute-bound class curves follow \
             the √2 rule down from their floor at the working set, without a step there \
             (profiles.toml), so sjeng at a quarter of the 5 MiB L3 misses 1.8× its alone \
             ratio, too little for the placement to lower the mean ratio beyond the noise",
            rs.std,
            2.0 * stderr
        ),
    )
    .predicted()
    .known_miss()])
}
