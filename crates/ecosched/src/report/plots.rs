//! The report's charts, drawn with plotters' SVG backend into strings so
//! they can be inlined in one HTML file: grouped bars (ratios, speedups),
//! lines (power, frequency) and placement lanes (which task ran on which
//! CPU over time). Text is drawn as SVG `<text>` in the generic
//! `sans-serif` family: no font file is read or referenced.

use anyhow::{anyhow, Result};
use ecosched_engine::series::Series;
use plotters::prelude::*;
use std::collections::BTreeMap;

/// Width and height of every chart, px.
const SIZE: (u32, u32) = (900, 360);

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing a chart: {e}")
}

/// One named group of bars (one per category), e.g. a policy.
pub struct BarGroup {
    /// Legend name.
    pub name: String,
    /// One value per category; `None` draws nothing.
    pub values: Vec<Option<f64>>,
}

/// Grouped bars: `categories` along x, one bar per group in each, and a
/// dashed reference line at `reference` (1 for ratios).
pub fn bars(
    title: &str,
    y_label: &str,
    categories: &[String],
    groups: &[BarGroup],
    reference: Option<f64>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let top = groups
            .iter()
            .flat_map(|g| g.values.iter().flatten())
            .copied()
            .chain(reference)
            .fold(0.0f64, f64::max)
            * 1.15;
        let top = if top > 0.0 { top } else { 1.0 };
        let n = categories.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..top)
            .map_err(err)?;
        let cats = categories.to_vec();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n + 1)
            .x_label_formatter(&|x| {
                // Categories sit at whole numbers.
                if (x - x.round()).abs() < 1e-6 && *x >= 0.0 {
                    cats.get(x.round() as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(y_label)
            .draw()
            .map_err(err)?;
        let k = groups.len().max(1) as f64;
        let width = 0.8 / k;
        for (gi, g) in groups.iter().enumerate() {
            let color = Palette99::pick(gi).to_rgba();
            let rects = g.values.iter().enumerate().filter_map(|(ci, v)| {
                v.map(|v| {
                    let x0 = ci as f64 - 0.4 + gi as f64 * width;
                    Rectangle::new([(x0, 0.0), (x0 + width * 0.9, v)], color.filled())
                })
            });
            chart
                .draw_series(rects)
                .map_err(err)?
                .label(g.name.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        if let Some(r) = reference {
            chart
                .draw_series(DashedLineSeries::new(
                    [(-0.5, r), (n as f64 - 0.5, r)],
                    5,
                    5,
                    BLACK.stroke_width(1),
                ))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Lines of (x, y) points, one per named series.
pub fn lines(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let pts = series.iter().flat_map(|(_, p)| p.iter());
        let (mut x1, mut y1) = (0.0f64, 0.0f64);
        for &(x, y) in pts {
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
        let x1 = if x1 > 0.0 { x1 } else { 1.0 };
        let y1 = if y1 > 0.0 { y1 * 1.1 } else { 1.0 };
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..x1, 0f64..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .draw()
            .map_err(err)?;
        for (i, (name, points)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(err)?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 15, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Which task ran on which CPU over time: one lane per CPU, one colour per
/// task (listed in the legend), white where no managed task ran.
pub fn lanes(title: &str, s: &Series) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let end = s.points.last().map_or(1.0, |p| p.end_s).max(1e-9);
        let n = s.cpus.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .right_y_label_area_size(10)
            .build_cartesian_2d(0f64..end, -0.5f64..n as f64 - 0.5)
            .map_err(err)?;
        let cpus = s.cpus.clone();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n + 1)
            .y_label_formatter(&|y| {
                // Lanes sit at whole numbers.
                if (y - y.round()).abs() < 1e-6 && *y >= 0.0 {
                    cpus.get(y.round() as usize)
                        .map(|c| format!("CPU {c}"))
                        .unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_desc("time (s)")
            .draw()
            .map_err(err)?;
        let mut colours: BTreeMap<&str, usize> = BTreeMap::new();
        for p in &s.points {
            for t in p.cpu_task.iter().flatten() {
                let next = colours.len();
                colours.entry(t.as_str()).or_insert(next);
            }
        }
        for (name, &ci) in &colours {
            let color = Palette99::pick(ci).to_rgba();
            let rects = s.points.iter().flat_map(|p| {
                p.cpu_task
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.as_deref() == Some(*name))
                    .map(move |(i, _)| {
                        Rectangle::new(
                            [(p.start_s, i as f64 - 0.4), (p.end_s, i as f64 + 0.4)],
                            color.filled(),
                        )
                    })
            });
            chart
                .draw_series(rects)
                .map_err(err)?
                .label(name.to_string())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        if !colours.is_empty() {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Each CPU's frequency over time.
pub fn frequencies(title: &str, s: &Series) -> Result<String> {
    let series: Vec<(String, Vec<(f64, f64)>)> = s
        .cpus
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let pts = s
                .points
                .iter()
                .filter_map(|p| p.cpu_mhz.get(i).copied().flatten().map(|m| (p.end_s, m)))
                .collect();
            (format!("CPU {c}"), pts)
        })
        .collect();
    lines(title, "time (s)", "MHz", &series)
}
