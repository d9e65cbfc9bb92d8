//! `--report out.html` on `compare`, `sim` and `run`: one self-contained HTML
//! file — inline SVG charts, inline CSS, no scripts, fonts or requests — that
//! a researcher or an operator can open anywhere.
//!
//! It shows the scenario, machine and parameters; energy, time and EDP of
//! each policy against the baseline (and the oracle), per unit of work when
//! the scenario needs it; per-task speedups; power over time; and for each
//! policy which task ran on which CPU and at what frequency, over time.

mod plots;

use anyhow::{Context, Result};
use ecosched_engine::compare::CompareReport;
use ecosched_engine::normalise::Normalisation;
use ecosched_engine::report::{RunReport, SimReport};
use ecosched_engine::series::Series;
use plots::BarGroup;
use std::collections::BTreeSet;
use std::path::Path;

/// Points kept per run's time series: enough for a 900 px chart.
pub const POINTS: usize = 300;

/// Escape text for HTML.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page: a title, a key/value context table, a preformatted summary
/// (the same text the terminal shows), then the charts with headings.
fn page(
    title: &str,
    context: &[(String, String)],
    summary: &str,
    charts: &[(String, String)],
) -> String {
    let mut html = String::new();
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    html.push_str(&format!("<title>{}</title>\n", esc(title)));
    html.push_str(
        "<style>body{font-family:sans-serif;margin:2em;max-width:1000px}\
         table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}\
         pre{font-size:12px;overflow-x:auto;background:#f6f6f6;padding:1em}\
         figure{margin:1em 0}svg{display:block}</style>\n</head>\n<body>\n",
    );
    html.push_str(&format!("<h1>{}</h1>\n<table>\n", esc(title)));
    for (k, v) in context {
        html.push_str(&format!(
            "<tr><th>{}</th><td>{}</td></tr>\n",
            esc(k),
            esc(v)
        ));
    }
    html.push_str("</table>\n<h2>Summary</h2>\n");
    html.push_str(&format!("<pre>{}</pre>\n", esc(summary)));
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
fn power_chart(series: &[Series]) -> Result<String> {
    let lines: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|s| {
            (
                s.policy.clone(),
                s.points
                    .iter()
                    .filter_map(|p| p.power_w.map(|w| (p.end_s, w)))
                    .collect(),
            )
        })
        .collect();
    let meter = series.first().map_or("", |s| match s.meter {
        ecosched_model::Meter::Package => "package",
        ecosched_model::Meter::System => "system",
    });
    plots::lines(
        &format!("power over time ({meter} meter)"),
        "time (s)",
        "W",
        &lines,
    )
}

/// Placement lanes and frequencies for each run.
fn per_run_charts(series: &[Series], charts: &mut Vec<(String, String)>) -> Result<()> {
    for s in series {
        charts.push((
            format!("{}: task placement over time", s.policy),
            plots::lanes(&format!("{}: managed task on each CPU", s.policy), s)?,
        ));
        charts.push((
            format!("{}: frequency over time", s.policy),
            plots::frequencies(&format!("{}: per-CPU frequency", s.policy), s)?,
        ));
    }
    Ok(())
}

/// `compare --report`.
pub fn compare_html(r: &CompareReport, summary: &str, series: &[Series]) -> Result<String> {
    let policies: Vec<String> = r.results.iter().map(|x| x.policy.clone()).collect();
    let per_unit = r.normalisation != Normalisation::Total;
    let unit = r.normalisation.unit();
    let categories: Vec<String> = if per_unit {
        vec![
            format!("× J/{unit}"),
            format!("× EDP/{unit}"),
            format!("× s/{unit}"),
        ]
    } else {
        vec!["× energy".into(), "× EDP".into(), "× makespan".into()]
    };
    let ratio_groups = |to_oracle: bool| -> Vec<BarGroup> {
        policies
            .iter()
            .map(|p| {
                let values = if per_unit {
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
                }
            })
            .collect()
    };
    let mut charts = vec![(
        format!("Against the baseline ({})", r.baseline),
        plots::bars(
            &format!(
                "ratio to {} ({}; below 1 is better)",
                r.baseline,
                r.normalisation.describe()
            ),
            "ratio",
            &categories,
            &ratio_groups(false),
            Some(1.0),
        )?,
    )];
    if r.oracle.is_some() {
        charts.push((
            "Against the oracle (best static configuration)".into(),
            plots::bars(
                "ratio to the oracle (below 1: better than the best static configuration)",
                "ratio",
                &categories,
                &ratio_groups(true),
                Some(1.0),
            )?,
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
        })
        .collect();
    charts.push((
        "Per-task speedups".into(),
        plots::bars(
            &format!("speedup over {} (baseline run time / run time)", r.baseline),
            "speedup",
            &tasks,
            &speedups,
            Some(1.0),
        )?,
    ));
    charts.push(("Power over time".into(), power_chart(series)?));
    per_run_charts(series, &mut charts)?;
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
    Ok(page(
        &format!("ecosched compare: {}", r.scenario),
        &context,
        summary,
        &charts,
    ))
}

fn task_runtime_chart(tasks: &[ecosched_model::TaskMetrics]) -> Result<String> {
    let names: Vec<String> = tasks.iter().map(|t| t.name.clone()).collect();
    plots::bars(
        "run time per task (mean over completed instances)",
        "s",
        &names,
        &[BarGroup {
            name: "run time (s)".into(),
            values: tasks.iter().map(|t| Some(t.runtime_s)).collect(),
        }],
        None,
    )
}

/// `sim --report`.
pub fn sim_html(r: &SimReport, params: &str, summary: &str, series: &Series) -> Result<String> {
    let mut charts = vec![
        ("Task run times".to_string(), task_runtime_chart(&r.tasks)?),
        (
            "Power over time".to_string(),
            power_chart(std::slice::from_ref(series))?,
        ),
    ];
    per_run_charts(std::slice::from_ref(series), &mut charts)?;
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
    Ok(page(
        &format!("ecosched sim: {} under {}", r.scenario, r.policy),
        &context,
        summary,
        &charts,
    ))
}

/// `run --report`.
pub fn run_html(r: &RunReport, params: &str, summary: &str, series: &Series) -> Result<String> {
    let mut charts = vec![
        ("Task run times".to_string(), task_runtime_chart(&r.tasks)?),
        (
            "Power over time".to_string(),
            power_chart(std::slice::from_ref(series))?,
        ),
    ];
    per_run_charts(std::slice::from_ref(series), &mut charts)?;
    let context = vec![
        ("command".to_string(), r.command.join(" ")),
        ("machine".to_string(), r.machine.clone()),
        ("policy".to_string(), r.policy.clone()),
        ("parameters".to_string(), params.to_string()),
        ("power".to_string(), r.power_description.clone()),
        ("frequency control".to_string(), r.frequency_control.clone()),
    ];
    Ok(page(
        &format!("ecosched run: {}", r.command.join(" ")),
        &context,
        summary,
        &charts,
    ))
}

/// Check that `path` can be written before a long run starts.
pub fn check_writable(path: &Path) -> Result<()> {
    ecosched_model::user_file::create_output(path)
        .map(drop)
        .with_context(|| format!("cannot create the report file {}", path.display()))
}

/// Write the page.
pub fn write(path: &Path, html: &str) -> Result<()> {
    ecosched_model::user_file::write_output(path, html)
        .with_context(|| format!("cannot write the report file {}", path.display()))
}

/// `sweep --report`: the figures per unit of work against the parameter.
pub fn sweep_html(r: &ecosched_engine::sweep::SweepReport, summary: &str) -> Result<String> {
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
    let charts = vec![
        (
            format!("Energy per {unit} against {}", r.key),
            plots::lines(
                &format!("J/{unit} against {}", r.key),
                &r.key,
                &format!("J/{unit}"),
                &[(format!("J/{unit}"), line(&|p| p.work.energy_per_unit_j))],
            )?,
        ),
        (
            format!("EDP per {unit} against {}", r.key),
            plots::lines(
                &format!("EDP/{unit} against {}", r.key),
                &r.key,
                "J·s",
                &[(format!("EDP/{unit}"), line(&|p| p.work.edp_per_unit_js))],
            )?,
        ),
        (
            format!("Throughput against {}", r.key),
            plots::lines(
                &format!("throughput ({unit}/s) against {}", r.key),
                &r.key,
                &format!("{unit}/s"),
                &[("throughput".to_string(), line(&|p| p.work.throughput_per_s))],
            )?,
        ),
        (
            format!("Average power against {}", r.key),
            plots::lines(
                &format!("average power against {}", r.key),
                &r.key,
                "W",
                &[("avg power".to_string(), line(&|p| p.report.avg_power_w))],
            )?,
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
    Ok(page(
        &format!(
            "ecosched sweep: {} of {} on {}",
            r.key, r.policy, r.scenario
        ),
        &context,
        summary,
        &charts,
    ))
}
