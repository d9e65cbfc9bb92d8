//! Tables for cluster runs (`sim` and `compare` on a scenario with
//! `[[nodes]]`): the cluster's totals, then one row per node, then the
//! swaps and the tasks.

use crate::output::{observe_label, sim as sim_table};
use crate::table::{num, opt, ratio, Align, Table};
use ecosched_engine::cluster::{ClusterCompareReport, ClusterReport};

/// `sim` on a cluster: the totals (as for one machine), the nodes, the swaps.
pub fn sim(r: &ClusterReport) -> String {
    format!(
        "{}\n{}\n{}",
        sim_table(&r.totals),
        nodes_table(std::slice::from_ref(r)),
        swaps_table(std::slice::from_ref(r)),
    )
}

fn nodes_table(runs: &[ClusterReport]) -> String {
    let mut t = Table::new(
        &[
            "policy",
            "node",
            "machine",
            "energy (J)",
            "avg power (W)",
            "completions",
            "moved in/out",
            "tasks at the end",
        ],
        &[
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Left,
        ],
    );
    for r in runs {
        for n in &r.nodes {
            t.row([
                r.totals.policy.clone(),
                n.name.clone(),
                n.machine.clone(),
                opt(n.energy_j),
                opt(n.avg_power_w),
                n.completions.to_string(),
                format!("{}/{}", n.moved_in, n.moved_out),
                n.tasks_at_end.join(" "),
            ]);
        }
    }
    t.render()
}

fn swaps_table(runs: &[ClusterReport]) -> String {
    let mut out = String::new();
    for r in runs {
        out.push_str(&format!(
            "{}: {} swap(s); a move costs {} s of downtime and {} J ({} J in all)\n",
            r.totals.policy,
            r.swaps.len(),
            num(r.migration.downtime_s),
            num(r.migration.energy_j),
            num(r.migration_energy_j),
        ));
        for s in &r.swaps {
            out.push_str(&format!(
                "  at {} s: {} ({}) <-> {} ({}), min(varsum) {:.4} -> {:.4}\n",
                num(s.time_s),
                s.task_a,
                s.node_a,
                s.task_b,
                s.node_b,
                s.varsum_before,
                s.varsum_after
            ));
        }
    }
    out
}

/// `compare` on a cluster: totals per policy with ratios to the baseline
/// and the mean of the per-task ratios (Merkel Fig. 8), the nodes, the
/// swaps, and each task's run-time and EDP ratio.
pub fn compare(r: &ClusterCompareReport) -> String {
    let mut totals = Table::new(
        &[
            "policy",
            "energy (J)",
            "avg power (W)",
            "energy ×",
            "power ×",
            "mean task runtime ×",
            "mean task EDP ×",
            "swaps",
        ],
        &[
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
        ],
    );
    for run in &r.results {
        let p = &run.totals.policy;
        let c = r.ratios.get(p);
        let t = r.task_ratios.get(p);
        let star = if *p == r.baseline { " *" } else { "" };
        totals.row([
            format!("{p}{star}"),
            opt(run.totals.energy_j),
            opt(run.totals.avg_power_w),
            ratio(c.and_then(|c| c.energy)),
            ratio(c.and_then(|c| c.avg_power)),
            ratio(t.and_then(|t| t.mean_runtime)),
            ratio(t.and_then(|t| t.mean_edp)),
            run.swaps.len().to_string(),
        ]);
    }
    let mut header = vec!["task".to_string()];
    for run in &r.results {
        header.push(format!("{} runtime (s)", run.totals.policy));
    }
    for run in r.results.iter().filter(|x| x.totals.policy != r.baseline) {
        header.push(format!("{} runtime ×", run.totals.policy));
        header.push(format!("{} EDP ×", run.totals.policy));
    }
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut align = vec![Align::Right; refs.len()];
    align[0] = Align::Left;
    let mut tasks = Table::new(&refs, &align);
    let names: Vec<String> = r
        .results
        .first()
        .map(|x| x.totals.tasks.iter().map(|t| t.name.clone()).collect())
        .unwrap_or_default();
    for name in names {
        let mut row = vec![name.clone()];
        for run in &r.results {
            row.push(
                run.totals
                    .tasks
                    .iter()
                    .find(|t| t.name == name)
                    .map_or("-".into(), |t| num(t.runtime_s)),
            );
        }
        for run in r.results.iter().filter(|x| x.totals.policy != r.baseline) {
            let t = r.task_ratios.get(&run.totals.policy);
            row.push(ratio(t.and_then(|t| t.runtime.get(&name).copied())));
            row.push(ratio(t.and_then(|t| t.edp.get(&name).copied())));
        }
        tasks.row(row);
    }
    let meter = r
        .results
        .first()
        .map_or("", |x| crate::output::meter_name(x.totals.energy_meter));
    format!(
        "cluster scenario {}, baseline {} (*); energy from the {meter} meter of every node, plus migrations; × = ratio to the baseline\nobserved: {}\n\n{}\n{}\n{}\n{}",
        r.scenario,
        r.baseline,
        observe_label(r.observe),
        totals.render(),
        nodes_table(&r.results),
        swaps_table(&r.results),
        tasks.render(),
    )
}
