//! The `compare` table of a fixed-duration scenario in which some run stopped
//! with work left: every headline figure per unit of work, so that a policy
//! doing less work never reads as saving energy. Which unit is chosen, and
//! why, is `ecosched_engine::normalise`'s.

use crate::table::{num, opt, ratio, Align, Table};
use ecosched_engine::compare::CompareReport;
use ecosched_engine::normalise::Normalisation;

/// The headline table per unit of work. `label` names a policy's row.
pub fn table(r: &CompareReport, label: &dyn Fn(usize) -> String) -> String {
    let any_aw = r.ratios.values().any(|x| x.aw_perf_per_w.is_some());
    let unit = r.normalisation.unit();
    let work_col = format!("work ({unit})");
    let tput_col = format!("throughput ({unit}/s)");
    let energy_col = format!("J/{unit}");
    let edp_col = format!("EDP/{unit} (J·s)");
    let x_energy = format!("× J/{unit}");
    let x_edp = format!("× EDP/{unit}");
    let mut header: Vec<&str> = vec![
        "policy",
        &work_col,
        &tput_col,
        &energy_col,
        &edp_col,
        "avg power (W)",
        "× throughput",
        &x_energy,
        &x_edp,
        "× avg power",
        "speedup (geomean)",
    ];
    if any_aw {
        header.push("AW perf/W");
    }
    let mut align = vec![Align::Left];
    align.resize(header.len(), Align::Right);
    let mut t = Table::new(&header, &align);
    for (i, run) in r.results.iter().enumerate() {
        let w = r.work.get(&run.policy);
        let wr = r.work_ratios.get(&run.policy);
        let rat = r.ratios.get(&run.policy);
        let mut row = vec![
            label(i),
            w.map_or_else(|| "-".to_string(), |w| num(w.units)),
            opt(w.and_then(|w| w.throughput_per_s)),
            opt(w.and_then(|w| w.energy_per_unit_j)),
            opt(w.and_then(|w| w.edp_per_unit_js)),
            opt(run.avg_power_w),
            ratio(wr.and_then(|x| x.throughput)),
            ratio(wr.and_then(|x| x.energy_per_unit)),
            ratio(wr.and_then(|x| x.edp_per_unit)),
            ratio(rat.and_then(|x| x.avg_power)),
            ratio(rat.and_then(|x| x.speedup_geomean)),
        ];
        if any_aw {
            row.push(ratio(rat.and_then(|x| x.aw_perf_per_w)));
        }
        t.row(row);
    }
    t.render()
}

/// Every policy as a ratio to the oracle (the best static configuration),
/// and what the oracle chose; empty when no oracle was compared.
pub fn oracle_table(r: &CompareReport) -> String {
    let Some(found) = &r.oracle else {
        return String::new();
    };
    let per_unit = r.normalisation != Normalisation::Total;
    let unit = r.normalisation.unit();
    let (e_col, edp_col, t_col) = if per_unit {
        (
            format!("× J/{unit}"),
            format!("× EDP/{unit}"),
            "× throughput".to_string(),
        )
    } else {
        (
            "× energy".to_string(),
            "× EDP".to_string(),
            "× makespan".to_string(),
        )
    };
    let header = ["policy", &e_col, &edp_col, &t_col, "× avg power"];
    let mut align = vec![Align::Left];
    align.resize(header.len(), Align::Right);
    let mut t = Table::new(&header, &align);
    for run in &r.results {
        let c = r.ratios_to_oracle.get(&run.policy);
        let w = r.work_ratios_to_oracle.get(&run.policy);
        let row = if per_unit {
            [
                run.policy.clone(),
                ratio(w.and_then(|x| x.energy_per_unit)),
                ratio(w.and_then(|x| x.edp_per_unit)),
                ratio(w.and_then(|x| x.throughput)),
                ratio(c.and_then(|x| x.avg_power)),
            ]
        } else {
            [
                run.policy.clone(),
                ratio(c.and_then(|x| x.energy)),
                ratio(c.and_then(|x| x.edp)),
                ratio(c.map(|x| x.makespan)),
                ratio(c.and_then(|x| x.avg_power)),
            ]
        };
        t.row(row);
    }
    format!(
        "\nratios to the oracle (best static configuration{}, objective {}{}; {} of {} configurations simulated in {:.1} s): {}\n\n{}",
        match found.method {
            ecosched_engine::oracle::SearchMethod::Exhaustive => "",
            ecosched_engine::oracle::SearchMethod::Confined => {
                " of work confined to whole caches or cores at one P-state rank (the scenario is too large to search exhaustively)"
            }
        },
        found.objective.name(),
        found
            .slowdown
            .map(|s| format!(" within {:.0} % of the fastest", s * 100.0))
            .unwrap_or_default(),
        found.evaluated,
        found.raw_configurations,
        found.search_s,
        found.choice.label(),
        t.render()
    )
}
