//! `--report out.html` on `compare` (one seed or `--seeds N`), `sim`,
//! `run` and `sweep`: one self-contained HTML file — inline SVG charts,
//! inline CSS, no scripts, fonts or requests — that a researcher or an
//! operator can open anywhere, print, or put in front of others.
//!
//! It shows the scenario, machine and parameters; the figures as HTML
//! tables (the terminal's text kept below them, folded); energy, time and
//! EDP of each policy against the baseline (and the oracle), per unit of
//! work when the scenario needs it, with error bars over seeds; per-task
//! speedups; power over time; and for each policy CPU × time heat maps of
//! the task placed on each CPU and of its frequency.

mod axis;
mod charts;
mod heat;
mod svg;
mod tables;

use anyhow::{Context, Result};
use charts::BarGroup;
use ecosched_engine::compare::CompareReport;
use ecosched_engine::normalise::Normalisation;
use ecosched_engine::report::{RunReport, SimReport};
use ecosched_engine::seeds::SeedsReport;
use ecosched_engine::series::Series;
use std::collections::BTreeSet;
use std::path::Path;
pub(crate) use svg::esc;

/// Points kept per run's time series (the charts thin them further).
pub const POINTS: usize = 300;

/// The page's style: the width follows the window (charts scale down,
/// wide tables scroll sideways), numbers are right-aligned.
const STYLE: &str = "<style>\
body{font-family:sans-serif;margin:1.5em auto;padding:0 1em;max-width:960px}\
table{border-collapse:collapse;margin:0.5em 0}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\
thead th{background:#f2f2f2}\
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
caption{text-align:left;font-weight:bold;padding:4px 0}\
.scroll{overflow-x:auto;max-width:100%}\
pre{font-size:12px;overflow-x:auto;background:#f6f6f6;padding:1em}\
figure{margin:1em 0}svg{display:block;max-width:100%;height:auto}\
</style>\n";

/// The page: a title, a key/value context table, the summary tables, the
/// terminal's text folded, then the charts with headings.
fn page(
    title: &str,
    context: &[(String, String)],
    tables: &str,
    terminal: &str,
    charts: &[(String, String)],
) -> String {
    let mut html = String::new();
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    html.push_str(&format!("<title>{}</title>\n", esc(title)));
    html.push_str(STYLE);
    html.push_str("</head>\n<body>\n");
    html.push_str(&format!("<h1>{}</h1>\n<table>\n", esc(title)));
    for (k, v) in context {
        html.push_str(&format!(
            "<tr><th scope=\"row\">{}</th><td>{}</td></tr>\n",
            esc(k),
            esc(v)
        ));
    }
    html.push_str("</table>\n<h2>Summary</h2>\n");
    html.push_str(tables);
    html.push_str(&format!(
        "<details><summary>The same as the terminal shows</summary>\n<pre>{}</pre></details>\n",
        esc(terminal)
    ));
    for (heading, svg) in charts {
        html.push_str(&format!(
            "<h2>{}</h2>\n<figure>\n{svg}\n</figure>\n",
            esc(heading)
        ));
    }
    html.push_str("</body>\n</html>\n");
    html
}

/// Power over time, one line per run.
fn power_chart(series: &[Series]) -> String {
    let lines: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|s| {
            (
                s.policy.clone(),
                s.points
                    .iter()
                    .filter_map(|p| p.power_w.map(|w| ((p.start_s + p.end_s) / 2.0, w)))
                    .collect(),
            )
        })
        .collect();
    let meter = series.first().map_or("", |s| match s.meter {
        ecosched_model::Meter::Package => "package",
        ecosched_model::Meter::System => "system",
    });
    charts::lines(
        &format!("power over time ({meter} meter; shaded: min–max within each column)"),
        "time (s)",
        "power (W)",
        &lines,
        true,
    )
}

/// Placement and frequency heat maps for each run.
fn per_run_charts(series: &[Series], out: &mut Vec<(String, String)>) {
    for s in series {
        out.push((
            format!("{}: task placement over time", s.policy),
            heat::placement(&format!("{}: managed task on each CPU", s.policy), s),
        ));
        out.push((
            format!("{}: frequency over time", s.policy),
            heat::frequency(&format!("{}: frequency of each CPU", s.policy), s),
        ));
    }
}

/// The ratio chart's categories.
fn ratio_categories(r: &CompareReport) -> Vec<String> {
    let unit = r.normalisation.unit();
    if r.normalisation != Normalisation::Total {
        vec![
            format!("× J/{unit}"),
            format!("× EDP/{unit}"),
            format!("× s/{unit}"),
        ]
    } else {
        vec!["× energy".into(), "× EDP".into(), "× makespan".into()]
    }
}

/// Each policy's ratios, to the baseline or to the oracle.
fn ratio_groups(r: &CompareReport, to_oracle: bool) -> Vec<BarGroup> {
    r.results
        .iter()
        .map(|run| {
            let p = &run.policy;
            let values = if r.normalisation != Normalisation::Total {
                let w = if to_oracle {
                    r.work_ratios_to_oracle.get(p)
                } else {
                    r.work_ratios.get(p)
                };
                vec![
                    w.and_then(|x| x.energy_per_unit),
                    w.and_then(|x| x.edp_per_unit),
                    w.and_then(|x| x.throughput)
                        .filter(|t| *t > 0.0)
                        .map(|t| 1.0 / t),
                ]
            } else {
                let c = if to_oracle {
                    r.ratios_to_oracle.get(p)
                } else {
                    r.ratios.get(p)
                };
                vec![
                    c.and_then(|x| x.energy),
                    c.and_then(|x| x.edp),
                    c.map(|x| x.makespan),
                ]
            };
            BarGroup {
                name: p.clone(),
                values,
                ranges: Vec::new(),
            }
        })
        .collect()
}

/// `compare --report`.
pub fn compare_html(r: &CompareReport, summary: &str, series: &[Series]) -> String {
    let policies: Vec<String> = r.results.iter().map(|x| x.policy.clone()).collect();
    let categories = ratio_categories(r);
    let mut charts = vec![(
        format!("Against the baseline ({})", r.baseline),
        charts::bars(
            &format!(
                "ratio to {} ({}; below 1 is better)",
                r.baseline,
                r.normalisation.describe()
            ),
            "ratio",
            &categories,
            &ratio_groups(r, false),
            Some(1.0),
        ),
    )];
    if r.oracle.is_some() {
        charts.push((
            "Against the oracle (best static configuration)".into(),
            charts::bars(
                "ratio to the oracle (below 1: better than the best static configuration)",
                "ratio",
                &categories,
                &ratio_groups(r, true),
                Some(1.0),
            ),
        ));
    }
    // Per-task speedups: baseline run time / run time.
    let base = r.results.iter().find(|x| x.policy == r.baseline);
    let tasks: Vec<String> = r
        .results
        .iter()
        .flat_map(|x| x.tasks.iter().map(|t| t.name.clone()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let speedups: Vec<BarGroup> = r
        .results
        .iter()
        .map(|run| BarGroup {
            name: run.policy.clone(),
            values: tasks
                .iter()
                .map(|name| {
                    let b = base?.tasks.iter().find(|t| &t.name == name)?;
                    let t = run.tasks.iter().find(|t| &t.name == name)?;
                    (t.runtime_s > 0.0).then(|| b.runtime_s / t.runtime_s)
                })
                .collect(),
            ranges: Vec::new(),
        })
        .collect();
    charts.push((
        "Per-task speedups".into(),
        charts::bars(
            &format!("speedup over {} (baseline run time / run time)", r.baseline),
            "speedup",
            &tasks,
            &speedups,
            Some(1.0),
        ),
    ));
    charts.push(("Power over time".into(), power_chart(series)));
    per_run_charts(series, &mut charts);
    let machine = r.results.first().map_or("", |x| x.machine.as_str());
    let seed = r.results.first().map_or(0, |x| x.seed);
    let context = vec![
        ("scenario".to_string(), r.scenario.clone()),
        ("machine".to_string(), machine.to_string()),
        ("seed".to_string(), seed.to_string()),
        ("baseline".to_string(), r.baseline.clone()),
        (
            "observed".to_string(),
            crate::output::observe_label(r.observe),
        ),
        (
            "normalisation".to_string(),
            r.normalisation.describe().to_string(),
        ),
        ("policies".to_string(), policies.join(", ")),
    ];
    page(
        &format!("ecosched compare: {}", r.scenario),
        &context,
        &tables::compare(r),
        summary,
        &charts,
    )
}

/// `compare --seeds N --report`: each bar is the mean over the seeds, its
/// error bar the smallest to the largest value seen.
pub fn seeds_html(r: &SeedsReport, summary: &str) -> String {
    let base = r.policies.iter().find(|p| p.policy == r.baseline);
    type Pick = fn(&ecosched_engine::seeds::PolicySpread) -> Option<ecosched_engine::seeds::Spread>;
    let metrics: [(&str, Pick); 3] = [
        ("× energy", |p| p.energy_j),
        ("× makespan", |p| p.makespan_s),
        ("× avg power", |p| p.avg_power_w),
    ];
    let categories: Vec<String> = metrics.iter().map(|m| m.0.to_string()).collect();
    let groups: Vec<BarGroup> = r
        .policies
        .iter()
        .map(|p| {
            let scaled: Vec<Option<(f64, f64, f64)>> = metrics
                .iter()
                .map(|(_, pick)| {
                    let b = base.and_then(pick)?.mean;
                    let s = pick(p)?;
                    (b > 0.0).then(|| (s.mean / b, s.min / b, s.max / b))
                })
                .collect();
            BarGroup {
                name: p.policy.clone(),
                values: scaled.iter().map(|x| x.map(|x| x.0)).collect(),
                ranges: scaled.iter().map(|x| x.map(|x| (x.1, x.2))).collect(),
            }
        })
        .collect();
    let n = r.seeds.len();
    let mut charts = vec![(
        format!("Against the baseline ({}), over {n} seeds", r.baseline),
        charts::bars(
            &format!(
                "mean over {n} seeds / the baseline's mean; error bars: min–max over the seeds"
            ),
            "ratio",
            &categories,
            &groups,
            Some(1.0),
        ),
    )];
    let tasks: Vec<String> = r
        .policies
        .iter()
        .flat_map(|p| p.task_runtime_s.keys().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let task_groups: Vec<BarGroup> = r
        .policies
        .iter()
        .map(|p| {
            let spreads: Vec<_> = tasks.iter().map(|t| p.task_runtime_s.get(t)).collect();
            BarGroup {
                name: p.policy.clone(),
                values: spreads.iter().map(|s| s.map(|s| s.mean)).collect(),
                ranges: spreads.iter().map(|s| s.map(|s| (s.min, s.max))).collect(),
            }
        })
        .collect();
    charts.push((
        "Task run times over the seeds".into(),
        charts::bars(
            "run time per task: mean over the seeds; error bars: min–max",
            "run time (s)",
            &tasks,
            &task_groups,
            None,
        ),
    ));
    let seeds: Vec<String> = r.seeds.iter().map(u64::to_string).collect();
    let context = vec![
        ("scenario".to_string(), r.scenario.clone()),
        ("seeds".to_string(), seeds.join(", ")),
        ("baseline".to_string(), r.baseline.clone()),
        (
            "observed".to_string(),
            crate::output::observe_label(r.observe),
        ),
        (
            "policies".to_string(),
            r.policies
                .iter()
                .map(|p| p.policy.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        ),
    ];
    page(
        &format!("ecosched compare: {} over {n} seeds", r.scenario),
        &context,
        &tables::seeds(r),
        summary,
        &charts,
    )
}

fn task_runtime_chart(tasks: &[ecosched_model::TaskMetrics]) -> String {
    let names: Vec<String> = tasks.iter().map(|t| t.name.clone()).collect();
    charts::bars(
        "run time per task (mean over completed instances)",
        "run time (s)",
        &names,
        &[BarGroup {
            name: "run time (s)".into(),
            values: tasks.iter().map(|t| Some(t.runtime_s)).collect(),
            ranges: Vec::new(),
        }],
        None,
    )
}

/// The headline figures of one run.
fn run_figures(
    makespan_s: f64,
    energy_j: Option<f64>,
    avg_power_w: Option<f64>,
    edp_js: Option<f64>,
    migrations_per_s: Option<f64>,
) -> String {
    tables::figures(&[
        ("makespan (s)", Some(makespan_s)),
        ("energy (J)", energy_j),
        ("avg power (W)", avg_power_w),
        ("EDP (J·s)", edp_js),
        ("migrations (/s)", migrations_per_s),
    ])
}

/// `sim --report`.
pub fn sim_html(r: &SimReport, params: &str, summary: &str, series: &Series) -> String {
    let mut charts = vec![
        ("Task run times".to_string(), task_runtime_chart(&r.tasks)),
        (
            "Power over time".to_string(),
            power_chart(std::slice::from_ref(series)),
        ),
    ];
    per_run_charts(std::slice::from_ref(series), &mut charts);
    let context = vec![
        ("scenario".to_string(), r.scenario.clone()),
        ("machine".to_string(), r.machine.clone()),
        ("policy".to_string(), r.policy.clone()),
        ("parameters".to_string(), params.to_string()),
        ("seed".to_string(), r.seed.to_string()),
        (
            "observed".to_string(),
            r.observe.map_or("-".into(), crate::output::observe_label),
        ),
    ];
    let tables = run_figures(
        r.makespan_s,
        r.energy_j,
        r.avg_power_w,
        r.edp_js,
        r.migrations_per_s,
    ) + &tables::tasks(&r.tasks);
    page(
        &format!("ecosched sim: {} under {}", r.scenario, r.policy),
        &context,
        &tables,
        summary,
        &charts,
    )
}

/// `run --report`.
pub fn run_html(r: &RunReport, params: &str, summary: &str, series: &Series) -> String {
    let mut charts = vec![
        ("Task run times".to_string(), task_runtime_chart(&r.tasks)),
        (
            "Power over time".to_string(),
            power_chart(std::slice::from_ref(series)),
        ),
    ];
    per_run_charts(std::slice::from_ref(series), &mut charts);
    let context = vec![
        ("command".to_string(), r.command.join(" ")),
        ("machine".to_string(), r.machine.clone()),
        ("policy".to_string(), r.policy.clone()),
        ("parameters".to_string(), params.to_string()),
        ("power".to_string(), r.power_description.clone()),
        ("frequency control".to_string(), r.frequency_control.clone()),
    ];
    let tables = run_figures(
        r.makespan_s,
        r.energy_j,
        r.avg_power_w,
        r.edp_js,
        r.migrations_per_s,
    ) + &tables::tasks(&r.tasks);
    page(
        &format!("ecosched run: {}", r.command.join(" ")),
        &context,
        &tables,
        summary,
        &charts,
    )
}

/// Check that `path` can be written before a long run starts.
pub fn check_writable(path: &Path) -> Result<()> {
    ecosched_model::user_file::create_output(path)
        .map(drop)
        .with_context(|| format!("cannot create the report file {}", path.display()))
}

/// Write the page and say where on stderr (stdout stays the command's
/// output: a table or JSON).
pub fn write(path: &Path, html: &str) -> Result<()> {
    ecosched_model::user_file::write_output(path, html)
        .with_context(|| format!("cannot write the report file {}", path.display()))?;
    eprintln!(
        "report written to {} ({} kB)",
        path.display(),
        html.len().div_ceil(1000)
    );
    Ok(())
}

/// `sweep --report`: the figures per unit of work against the parameter.
pub fn sweep_html(r: &ecosched_engine::sweep::SweepReport, summary: &str) -> String {
    let unit = r.normalisation.unit();
    let xs: Vec<Option<f64>> = r
        .points
        .iter()
        .map(|p| p.value.parse::<f64>().ok())
        .collect();
    let line = |f: &dyn Fn(&ecosched_engine::sweep::SweepPoint) -> Option<f64>| -> Vec<(f64, f64)> {
        r.points
            .iter()
            .zip(&xs)
            .filter_map(|(p, x)| Some(((*x)?, f(p)?)))
            .collect()
    };
    let chart = |title: String, y: String, name: String, pts: Vec<(f64, f64)>| {
        charts::lines(&title, &r.key, &y, &[(name, pts)], false)
    };
    let charts = vec![
        (
            format!("Energy per {unit} against {}", r.key),
            chart(
                format!("J/{unit} against {}", r.key),
                format!("J/{unit}"),
                format!("J/{unit}"),
                line(&|p| p.work.energy_per_unit_j),
            ),
        ),
        (
            format!("EDP per {unit} against {}", r.key),
            chart(
                format!("EDP/{unit} against {}", r.key),
                "J·s".into(),
                format!("EDP/{unit}"),
                line(&|p| p.work.edp_per_unit_js),
            ),
        ),
        (
            format!("Throughput against {}", r.key),
            chart(
                format!("throughput ({unit}/s) against {}", r.key),
                format!("{unit}/s"),
                "throughput".into(),
                line(&|p| p.work.throughput_per_s),
            ),
        ),
        (
            format!("Average power against {}", r.key),
            chart(
                format!("average power against {}", r.key),
                "W".into(),
                "avg power".into(),
                line(&|p| p.report.avg_power_w),
            ),
        ),
    ];
    let context = vec![
        ("scenario".to_string(), r.scenario.clone()),
        (
            "machine".to_string(),
            r.points
                .first()
                .map_or(String::new(), |p| p.report.machine.clone()),
        ),
        ("policy".to_string(), r.policy.clone()),
        ("swept parameter".to_string(), r.key.clone()),
        (
            "normalisation".to_string(),
            r.normalisation.describe().to_string(),
        ),
    ];
    page(
        &format!(
            "ecosched sweep: {} of {} on {}",
            r.key, r.policy, r.scenario
        ),
        &context,
        &tables::sweep(r),
        summary,
        &charts,
    )
}
