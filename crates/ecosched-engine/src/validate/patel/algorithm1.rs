//! Patel's Tables 3 and 4 (§9.2.1): algorithm 1 (`patel1`, programs in
//! fixed-frequency cpusets) against the control group on Tasks 1–4, each
//! figure a mean over seeds 1..=[`SEEDS`]. Power is the *loaded* wall
//! power, while every program still runs.
//!
//! | Figure | Quantity | Paper | Row |
//! |---|---|---|---|
//! | Table 3 | loaded wall power, Task 4 control | 183 W | calibrated |
//! | Table 3 | loaded wall power, Tasks 1–3 control; Tasks 1–4 algorithm 1 | 144, 157, 183; 133, 144, 147, 147 W | predicted |
//! | Table 4 | algorithm 1 vs control, power saved (loaded), Task 4 | 19.67 % | calibrated |
//! | Table 4 | the same, Tasks 1–3 | 7.64, 8.28, 19.67 % | predicted |
//! | Table 4 | algorithm 1 vs control, performance, Tasks 1–4 | 5.08, −6.10, −35.94, −30.06 % | predicted |
//! | Table 4 | algorithm 1 vs control, performance per watt, Tasks 1–4 | 12.33, 2.32, −20.26, −12.93 % | predicted |
//! | Table 4 | power savings grow with load (Task 2 < Tasks 3, 4) | holds | predicted |

use super::seeded::{over_seeds, seed_runs, SEEDS};
use crate::experiment::SimRun;
use crate::validate::check::{missed_if, Check, MAX_REL_TOLERANCE};
use crate::validate::runs::holds;
use crate::EngineError;
use ecosched_model::RunMetrics;

const PATEL_T3: &str = "Patel, PhD thesis (UNLV 2012) §9.2.1, Table 3";
const PATEL_T4: &str = "Patel, PhD thesis (UNLV 2012) §9.2.1, Table 4";

/// Patel Table 3: per task, instructions/s (billions) and instructions/s
/// per watt (millions) of algorithm 1 and of the control group. Their
/// quotient is the wall power the thesis measured (a KillAWatt, §9.1):
/// `(task, test ips, test ips/W, control ips, control ips/W)`.
const TABLE3: [(u32, f64, f64, f64, f64); 4] = [
    (1, 1.518, 11.411, 1.441, 10.004),
    (2, 1.233, 8.560, 1.313, 8.361),
    (3, 0.966, 6.569, 1.507, 8.237),
    (4, 0.520, 3.541, 0.744, 4.067),
];

/// The wall power of one Table 3 entry, W.
fn watts(ips_g: f64, ips_per_w_m: f64) -> f64 {
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
/// over seeds 1..=[`SEEDS`] (one run of the four-task table swings with
/// the seed).
struct TaskMeans {
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

fn task_means(task: u32) -> Result<TaskMeans, EngineError> {
    let runs = seed_runs(&format!("patel-task{task}"), &["ondemand", "patel1"])?;
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
    Ok(TaskMeans {
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
/// seeds 1..=[`SEEDS`]. The wall power of every task and group
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
pub fn table4() -> Result<Vec<Check>, EngineError> {
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
    for (task, t_ips, t_ipsw, c_ips, c_ipsw) in TABLE3 {
        let m = task_means(task)?;
        let paper_w = (watts(c_ips, c_ipsw), watts(t_ips, t_ipsw));
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
                     1–{SEEDS} (15 %){}",
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
                 stays there under the deferrable sample (started at 2.3 GHz, control would draw more \
                 and the saving would overshoot the thesis's)",
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
                     thesis {p_ppw:+.2} % (15 %)"
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
