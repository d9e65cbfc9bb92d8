//! The report's summary as HTML tables: one row per policy (or task, or
//! swept value), units in the headers, numbers right-aligned in tabular
//! figures, so that the page reads in any width and copies cleanly into a
//! spreadsheet or a paper.

use super::svg::esc;
use ecosched_engine::compare::CompareReport;
use ecosched_engine::normalise::Normalisation;
use ecosched_engine::seeds::{SeedsReport, Spread};
use ecosched_model::TaskMetrics;
use std::fmt::Write as _;

/// One HTML table: a caption, headers, and per column whether it holds
/// numbers (right-aligned).
pub struct HtmlTable {
    caption: String,
    header: Vec<String>,
    numeric: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl HtmlTable {
    /// A table whose first column is text and the others numbers.
    pub fn new(caption: &str, header: &[&str]) -> HtmlTable {
        HtmlTable {
            caption: caption.to_string(),
            header: header.iter().map(|h| h.to_string()).collect(),
            numeric: (0..header.len()).map(|i| i > 0).collect(),
            rows: Vec::new(),
        }
    }

    /// Add a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The `<table>` element, in a box that scrolls sideways on a narrow
    /// screen instead of cutting columns off.
    pub fn render(&self) -> String {
        let mut h = format!(
            "<div class=\"scroll\"><table class=\"summary\">\n<caption>{}</caption>\n<thead><tr>",
            esc(&self.caption)
        );
        for (i, c) in self.header.iter().enumerate() {
            let class = if self.numeric[i] {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(h, "<th scope=\"col\"{class}>{}</th>", esc(c));
        }
        h.push_str("</tr></thead>\n<tbody>\n");
        for row in &self.rows {
            h.push_str("<tr>");
            for (i, c) in row.iter().enumerate() {
                if i == 0 {
                    let _ = write!(h, "<th scope=\"row\">{}</th>", esc(c));
                } else {
                    let _ = write!(h, "<td class=\"num\">{}</td>", esc(c));
                }
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody></table></div>\n");
        h
    }
}

/// Tasks listed open; more are folded under a `<details>`.
const FOLD_TASKS: usize = 30;

/// `v` to four significant figures (integers above that), `-` when absent.
pub fn num(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if !v.is_finite() => "-".into(),
        Some(0.0) => "0".into(),
        Some(v) => {
            let digits = 3 - v.abs().log10().floor() as i32;
            let decimals = digits.clamp(0, 6) as usize;
            format!("{v:.decimals$}")
        }
    }
}

/// Per policy: totals and ratios to the baseline (per unit of work when
/// the runs did different amounts).
pub fn compare(r: &CompareReport) -> String {
    let unit = r.normalisation.unit();
    let per_unit = r.normalisation != Normalisation::Total;
    let mut header: Vec<String> = [
        "policy",
        "makespan (s)",
        "energy (J)",
        "avg power (W)",
        "EDP (J·s)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if per_unit {
        header.extend([
            format!("J/{unit}"),
            format!("{unit}/s"),
            format!("× J/{unit}"),
            format!("× EDP/{unit}"),
            "× throughput".into(),
        ]);
    } else {
        header.extend(["× makespan", "× energy", "× EDP", "× avg power"].map(String::from));
    }
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = HtmlTable::new(
        &format!("Each policy; × = ratio to the baseline ({})", r.baseline),
        &refs,
    );
    for run in &r.results {
        let mut row = vec![
            if run.policy == r.baseline {
                format!("{} (baseline)", run.policy)
            } else {
                run.policy.clone()
            },
            num(Some(run.makespan_s)),
            num(run.energy_j),
            num(run.avg_power_w),
            num(run.edp_js),
        ];
        if per_unit {
            let w = r.work.get(&run.policy);
            let x = r.work_ratios.get(&run.policy);
            row.extend([
                num(w.and_then(|w| w.energy_per_unit_j)),
                num(w.and_then(|w| w.throughput_per_s)),
                num(x.and_then(|x| x.energy_per_unit)),
                num(x.and_then(|x| x.edp_per_unit)),
                num(x.and_then(|x| x.throughput)),
            ]);
        } else {
            let x = r.ratios.get(&run.policy);
            row.extend([
                num(x.map(|x| x.makespan)),
                num(x.and_then(|x| x.energy)),
                num(x.and_then(|x| x.edp)),
                num(x.and_then(|x| x.avg_power)),
            ]);
        }
        t.row(row);
    }
    t.render()
}

/// One run's headline figures.
pub fn figures(rows: &[(&str, Option<f64>)]) -> String {
    let mut t = HtmlTable::new("The run", &["figure", "value"]);
    for (k, v) in rows {
        t.row(vec![k.to_string(), num(*v)]);
    }
    t.render()
}

/// Per task: run time, completions, migrations, energy.
pub fn tasks(tasks: &[TaskMetrics]) -> String {
    let mut t = HtmlTable::new(
        "Each task (run time: mean over completed instances)",
        &[
            "task",
            "run time (s)",
            "completions",
            "migrations",
            "energy (J)",
        ],
    );
    // A long list is folded: the charts come first on a page of hundreds.
    let fold = tasks.len() > FOLD_TASKS;
    for x in tasks {
        t.row(vec![
            x.name.clone(),
            num(Some(x.runtime_s)),
            x.completions.to_string(),
            x.migrations.map_or("-".into(), |m| m.to_string()),
            num(x.energy_j),
        ]);
    }
    if fold {
        format!(
            "<details><summary>Each task ({} tasks)</summary>\n{}</details>\n",
            tasks.len(),
            t.render()
        )
    } else {
        t.render()
    }
}

/// Per policy over the seeds: mean, standard deviation and range.
pub fn seeds(r: &SeedsReport) -> String {
    let mut t = HtmlTable::new(
        &format!(
            "Each policy over {} seeds: mean, sample standard deviation (sd), smallest and largest",
            r.seeds.len()
        ),
        &[
            "policy",
            "energy mean (J)",
            "energy sd (J)",
            "energy min (J)",
            "energy max (J)",
            "makespan mean (s)",
            "makespan sd (s)",
            "avg power mean (W)",
            "avg power sd (W)",
            "migrations mean (/s)",
            "run-time sd (%)",
        ],
    );
    let f = |s: Option<Spread>, g: fn(&Spread) -> f64| num(s.as_ref().map(g));
    for p in &r.policies {
        t.row(vec![
            p.policy.clone(),
            f(p.energy_j, |s| s.mean),
            f(p.energy_j, |s| s.std),
            f(p.energy_j, |s| s.min),
            f(p.energy_j, |s| s.max),
            f(p.makespan_s, |s| s.mean),
            f(p.makespan_s, |s| s.std),
            f(p.avg_power_w, |s| s.mean),
            f(p.avg_power_w, |s| s.std),
            f(p.migrations_per_s, |s| s.mean),
            num(p.runtime_std_pct),
        ]);
    }
    t.render()
}

/// `sweep`: one row per swept value.
pub fn sweep(r: &ecosched_engine::sweep::SweepReport) -> String {
    let unit = r.normalisation.unit();
    let header = [
        r.key.clone(),
        "makespan (s)".into(),
        "energy (J)".into(),
        "avg power (W)".into(),
        format!("work ({unit})"),
        format!("J/{unit}"),
        format!("EDP/{unit} (J·s)"),
        format!("throughput ({unit}/s)"),
    ];
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = HtmlTable::new(&format!("Each value of {}", r.key), &refs);
    for p in &r.points {
        t.row(vec![
            p.value.clone(),
            num(Some(p.report.makespan_s)),
            num(p.report.energy_j),
            num(p.report.avg_power_w),
            num(Some(p.work.units)),
            num(p.work.energy_per_unit_j),
            num(p.work.edp_per_unit_js),
            num(p.work.throughput_per_s),
        ]);
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_four_figures() {
        assert_eq!(num(Some(596_106.2)), "596106");
        assert_eq!(num(Some(993.54)), "993.5");
        assert_eq!(num(Some(0.17234)), "0.1723");
        assert_eq!(num(None), "-");
    }

    #[test]
    fn cells_are_escaped_and_numbers_right_aligned() {
        let mut t = HtmlTable::new("c", &["name", "x (s)"]);
        t.row(vec!["<a>".into(), "1".into()]);
        let h = t.render();
        assert!(h.contains("<th scope=\"row\">&lt;a&gt;</th><td class=\"num\">1</td>"));
        assert!(h.contains("<th scope=\"col\" class=\"num\">x (s)</th>"));
    }
}
