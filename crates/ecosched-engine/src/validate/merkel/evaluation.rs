//! Merkel et al. §8: the activity-vector scheduler against standard Linux
//! on the Q6600: sorted co-scheduling (`av-sort`, Fig. 5), sorting with
//! the frequency heuristic (`av`, Fig. 6, on Table 3's scenarios s1–s4),
//! and cross-node swaps between two machines (`av-xnode`, Fig. 8).
//!
//! | Figure | Quantity | Paper | Row |
//! |---|---|---|---|
//! | Fig. 5, §8.1 | sorted vs Linux: every memory-bound task runs shorter | holds | predicted |
//! | Fig. 5, §8.1 | sorted vs Linux: libquantum gains least of the memory-bound tasks | holds | predicted |
//! | Fig. 5, §8.1 | sorted vs Linux: compute-bound tasks' mean run-time ratio | 1.0 ("hardly change") | predicted |
//! | Fig. 5, §8.1 | sorted vs Linux: average processor power ratio | 1.0 | predicted |
//! | Fig. 5, §8.1 | EDP follows run time squared: mean \|EDP ratio − time ratio²\| | 0 | predicted |
//! | Fig. 6, §8.2 | s1, s2: av vs av-sort average EDP (heuristic idle) | 1.0 | predicted |
//! | Fig. 6, §8.2 | s2: av-sort beats Linux | holds | predicted |
//! | Fig. 6, §8.2 | s3, s4: av beats av-sort and Linux | holds | predicted |
//! | Fig. 6, §8.2 | s4's gain from av is larger than s3's | holds | predicted |
//! | Fig. 6, §8.2 | share of slots at low frequency, s1 … s4 | 0, 0, 0.5, 1 | calibrated |
//! | Fig. 8, §8.4 | worst start, av-xnode vs no migration: mean run-time, EDP ratio | 0.85, 0.79 | predicted |
//! | Fig. 8, §8.4 | worst start: every memory-bound benchmark runs shorter | holds | predicted |
//! | Fig. 8, §8.4 | worst start: compute-bound benchmarks gain nothing (each ratio ≥ 0.98) | holds | predicted |
//! | Fig. 8, §8.4 | worst start: sjeng slows down most of the compute-bound benchmarks | holds | predicted |
//! | Fig. 8, §8.4 | worst start: swaps made | 2 | predicted |
//! | Fig. 8, §8.4 | mixed start: mean run-time, EDP ratio | 0.96, 0.96 | predicted |
//! | Fig. 8, §8.4 | a mixed start gains less than the worst start | holds | predicted |

use crate::experiment::{simulate, SimOptions};
use crate::validate::check::Check;
use crate::validate::runs::{holds, mean};
use crate::EngineError;
use ecosched_model::{RunMetrics, TaskMetrics};
use ecosched_policy::Params;
use ecosched_sim::{Observe, Scenario};

const FIG5: &str = "Merkel et al. EuroSys'10 §8.1, Fig. 5";
const FIG6: &str = "Merkel et al. EuroSys'10 §8.2, Fig. 6";

/// One run of `policy` with its notes.
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

/// Merkel Fig. 5: sorted co-scheduling (`av-sort`) against standard Linux
/// (`performance`) on 4 compute-bound + 4 memory-bound benchmarks.
pub fn fig5(o: Observe) -> Result<Vec<Check>, EngineError> {
    let scenario = "merkel-sort-8";
    let ((linux, _), (sorted, _)) = crate::parallel::join(
        || run_noted(o, scenario, "performance"),
        || run_noted(o, scenario, "av-sort"),
    )?;
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
                "'hardly change' (a few percent): {}. Set by the compute-bound curves, not the bus: sorted, each compute-bound task always shares its L2 with a memory-bound one, whose insertion rate leaves it a small part of the 4 MiB. The class curves follow the √2 rule down from their floor at the working set, without a step there (profiles.toml), so such a share raises a compute-bound task's misses a few times over, which costs it a few per cent of its run time",
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
pub fn fig6(o: Observe) -> Result<Vec<Check>, EngineError> {
    // The twelve runs are independent: side by side ([`crate::parallel`]).
    let runs: Vec<(u32, &str)> = (1..=4)
        .flat_map(|s| ["performance", "av-sort", "av"].map(|policy| (s, policy)))
        .collect();
    let done = crate::parallel::map(&runs, |&(s, policy)| {
        run_noted(o, &format!("merkel-freq-s{s}"), policy)
    })?;
    let mut rel = Vec::new();
    let mut low = Vec::new();
    for scenario in done.chunks(3) {
        let [(linux, _), (sorted, _), (av, notes)] = scenario else {
            continue;
        };
        rel.push((avg_edp_ratio(sorted, linux), avg_edp_ratio(av, linux)));
        // The share as reports print it, to three decimals.
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
                   the slots only wins that loss back";
    let heuristic_note = "share of slot starts at which av chose 1.6 GHz; the bus component counts bus transactions, as the paper did (§4). Perf's LLC misses leave out prefetched lines, so with them prefetch-heavy libquantum looks far less memory-bound and s3 never engages; the event was chosen knowing that, so these rows are calibrated";
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
    let (base, xnode) = crate::parallel::join(
        || simulate_cluster(&c, "av", &params, &options, &mut |_| {}),
        || simulate_cluster(&c, "av-xnode", &params, &options, &mut |_| {}),
    )?;
    Ok((TaskRatios::new(&xnode.metrics, &base.metrics), xnode))
}

/// Merkel §8.4, Fig. 8: cross-node swaps (`av-xnode`) against no
/// migration (`av` on each node) from the worst start (all compute-bound
/// VMs on one node, all memory-bound on the other) and from a mixed one.
/// Nothing in the model was set from these rows; the migration cost is
/// an assumption (`[migration]`, ecosched-sim cluster.rs).
pub fn fig8(o: Observe) -> Result<Vec<Check>, EngineError> {
    let ((worst, run), (mixed, mixed_run)) = crate::parallel::join(
        || xnode_runs(o, "merkel-xnode-worst"),
        || xnode_runs(o, "merkel-xnode-mixed"),
    )?;
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
    let swaps = |run: &crate::cluster::ClusterRun| {
        run.report
            .swaps
            .iter()
            .map(|s| format!("{} <-> {} at {:.0} s", s.task_a, s.task_b, s.time_s))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mixed_list = || listed(&mixed, &[memory, compute].concat());
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
            "mean over the benchmarks of per-task EDP ratios",
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
            &format!("run-time ratios {}: the sjeng profile carries only its class (compute-bound); of the four its floor miss ratio (0.05) and working set (4 MiB) are the largest, so it loses most once beside memory-bound VMs", list(&compute)),
        )
        .predicted(),
        Check::new(
            "worst start: swaps made (two memory-bound and two compute-bound moved)",
            FIG8,
            2.0,
            run.report.swaps.len() as f64,
            0.0,
            &format!("one swap per 10-min period while it raises min(varsum) by more than swap_gain: {}", swaps(&run)),
        )
        .predicted(),
        Check::new(
            "mixed start: av-xnode vs no migration, mean run-time ratio",
            FIG8,
            0.96,
            mixed.mean_runtime.unwrap_or(f64::NAN),
            0.03,
            &format!("'4 % reduction in both runtime and EDP'; run-time ratios {}. The swap ({}) trades a memory-bound task for a compute-bound one and puts a second memory-bound task beside soplex, alone of its kind on its node at the start, so soplex loses while the other memory-bound tasks gain", mixed_list(), swaps(&mixed_run)),
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
