//! CPU × time heat maps: one row per CPU, one column per slice of the run,
//! coloured by the CPU's frequency (eight steps between the lowest and the
//! highest seen) or by the managed task on it. A machine of hundreds of
//! CPUs reads at a glance where one line per CPU would be a tangle, and the
//! size is bounded: at most [`MAX_CELLS`] cells, and neighbouring cells of
//! one colour in a row are drawn as one rectangle of a single path per
//! colour.

use super::axis::Scale;
use super::charts::{legend, legend_width, plot_area, title, widest_tick, x_axis, x_label};
use super::charts::{Swatch, WIDTH};
use super::svg::{colour, fit, text_width, Anchor, Svg, SMALL};
use ecosched_engine::series::Series;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Cells drawn at most per heat map (rows × columns).
pub const MAX_CELLS: usize = 12_000;
/// Columns at most, about one per 3 px.
const MAX_COLUMNS: usize = 220;
/// Top of the map, px.
const TOP: f64 = 38.0;
/// Frequency steps (viridis, light for high).
const RAMP: [&str; 8] = [
    "#440154", "#46327e", "#365c8d", "#277f8e", "#1fa187", "#4ac16d", "#a0da39", "#fde725",
];
/// Tasks listed in the placement legend at most.
const LEGEND_TASKS: usize = 20;

/// The columns of `s`: the index of the column each point falls in.
fn columns(s: &Series) -> (usize, Vec<usize>) {
    let rows = s.cpus.len().max(1);
    let k = s.points.len().min(MAX_COLUMNS).min(MAX_CELLS / rows).max(1);
    let (t0, t1) = match (s.points.first(), s.points.last()) {
        (Some(a), Some(b)) => (a.start_s, b.end_s),
        _ => (0.0, 1.0),
    };
    let span = (t1 - t0).max(1e-12);
    let of = s
        .points
        .iter()
        .map(|p| {
            let mid = (p.start_s + p.end_s) / 2.0;
            (((mid - t0) / span * k as f64).floor() as usize).min(k - 1)
        })
        .collect();
    (k, of)
}

/// Draw a grid of `keys[row][col]` (an index into `swatches`, or none).
fn draw(
    title_text: &str,
    s: &Series,
    k: usize,
    keys: &[Vec<Option<usize>>],
    swatches: &[String],
    entries: &[(Swatch, String)],
) -> String {
    let n = s.cpus.len().max(1);
    let row_h = (300.0 / n as f64).clamp(1.5, 16.0);
    let every = (SMALL * 1.4 / row_h).ceil().max(1.0) as usize;
    let labels: Vec<(usize, String)> = s
        .cpus
        .iter()
        .enumerate()
        .filter(|(i, _)| i % every == 0)
        .map(|(i, c)| (i, format!("CPU {c}")))
        .collect();
    let (t0, t1) = match (s.points.first(), s.points.last()) {
        (Some(a), Some(b)) => (a.start_s, b.end_s),
        _ => (0.0, 1.0),
    };
    let xscale = Scale::exact(t0.min(0.0), t1);
    let lw = legend_width(entries);
    let left = 10.0
        + labels
            .iter()
            .map(|(_, l)| text_width(l, SMALL))
            .fold(0.0, f64::max)
        + 8.0;
    let right = WIDTH - 10.0 - widest_tick(&xscale) / 2.0 - lw - 16.0;
    let bottom = TOP + row_h * n as f64;
    let mut svg = Svg::new(WIDTH, bottom + 60.0);
    title(&mut svg, title_text);
    x_axis(&mut svg, &xscale, (left, right), (TOP, bottom));
    let px = |t: f64| left + xscale.frac(t) * (right - left);
    let (x0, x1) = (px(t0), px(t1));
    let cw = (x1 - x0) / k as f64;
    let mut paths: BTreeMap<usize, String> = BTreeMap::new();
    for (r, row) in keys.iter().enumerate() {
        let y = TOP + row_h * r as f64;
        let mut c = 0;
        while c < row.len() {
            let Some(key) = row[c] else {
                c += 1;
                continue;
            };
            let start = c;
            while c < row.len() && row[c] == Some(key) {
                c += 1;
            }
            let w = cw * (c - start) as f64;
            let _ = write!(
                paths.entry(key).or_default(),
                "M{:.1} {y:.1}h{w:.1}v{row_h:.1}h-{w:.1}z",
                x0 + cw * start as f64
            );
        }
    }
    let mut data = String::from("<g class=\"data\">\n");
    for (key, d) in &paths {
        let fill = swatches.get(*key).map_or("#999", String::as_str);
        let _ = writeln!(data, r#"<path d="{d}" fill="{fill}"/>"#);
    }
    data.push_str("</g>\n");
    svg.raw(&data);
    plot_area(&mut svg, left, TOP, right, bottom);
    svg.raw("<g class=\"ticks\">\n");
    for (i, l) in &labels {
        let cy = TOP + row_h * (*i as f64 + 0.5);
        svg.text(left - 6.0, cy + SMALL * 0.35, Anchor::End, SMALL, "tick", l);
    }
    svg.raw("</g>\n");
    let end = x_label(&mut svg, "time (s)", (left, right), bottom);
    let legend_bottom = legend(&mut svg, WIDTH - 10.0 - lw, TOP, entries);
    svg.at_least(end.max(legend_bottom + 10.0));
    svg.finish(title_text)
}

/// Each CPU's frequency over time, in eight colour steps.
pub fn frequency(title_text: &str, s: &Series) -> String {
    let (k, col_of) = columns(s);
    let n = s.cpus.len();
    let mut sums = vec![vec![(0.0f64, 0u32); k]; n];
    for (p, &c) in s.points.iter().zip(&col_of) {
        for (r, mhz) in p.cpu_mhz.iter().enumerate().take(n) {
            if let Some(m) = mhz {
                sums[r][c].0 += m;
                sums[r][c].1 += 1;
            }
        }
    }
    let means: Vec<Vec<Option<f64>>> = sums
        .iter()
        .map(|row| {
            row.iter()
                .map(|&(s, n)| (n > 0).then(|| s / f64::from(n)))
                .collect()
        })
        .collect();
    let all = means.iter().flatten().flatten().copied();
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if !lo.is_finite() {
        let entries = vec![(Swatch::Fill("#fff".into()), "no frequency reading".into())];
        return draw(title_text, s, k, &vec![vec![None; k]; n], &[], &entries);
    }
    let steps = if hi - lo < 0.5 { 1 } else { RAMP.len() };
    let width = (hi - lo) / steps as f64;
    let level = |v: f64| {
        if steps == 1 {
            0
        } else {
            (((v - lo) / width).floor() as usize).min(steps - 1)
        }
    };
    let keys: Vec<Vec<Option<usize>>> = means
        .iter()
        .map(|row| row.iter().map(|m| m.map(level)).collect())
        .collect();
    let ramp: Vec<String> = if steps == 1 {
        vec![RAMP[RAMP.len() - 1].to_string()]
    } else {
        RAMP.iter().map(|c| c.to_string()).collect()
    };
    let mut entries: Vec<(Swatch, String)> = (0..steps)
        .rev()
        .map(|i| {
            let text = if steps == 1 {
                format!("{lo:.0} MHz")
            } else {
                format!(
                    "{:.0}–{:.0} MHz",
                    lo + width * i as f64,
                    lo + width * (i + 1) as f64
                )
            };
            (Swatch::Fill(ramp[i].clone()), text)
        })
        .collect();
    if keys.iter().flatten().any(Option::is_none) {
        entries.push((Swatch::Fill("#fff".into()), "no reading".into()));
    }
    draw(title_text, s, k, &keys, &ramp, &entries)
}

/// The managed task on each CPU over time (the task seen last in each
/// column), one colour per task; white where none ran.
pub fn placement(title_text: &str, s: &Series) -> String {
    let (k, col_of) = columns(s);
    let n = s.cpus.len();
    let mut tasks: BTreeMap<&str, usize> = BTreeMap::new();
    let mut cells: Vec<Vec<Option<&str>>> = vec![vec![None; k]; n];
    for (p, &c) in s.points.iter().zip(&col_of) {
        for (r, t) in p.cpu_task.iter().enumerate().take(n) {
            cells[r][c] = t.as_deref();
            if let Some(t) = t {
                let next = tasks.len();
                tasks.entry(t).or_insert(next);
            }
        }
    }
    let palette = 8;
    let keys: Vec<Vec<Option<usize>>> = cells
        .iter()
        .map(|row| {
            row.iter()
                .map(|t| t.and_then(|t| tasks.get(t)).map(|i| i % palette))
                .collect()
        })
        .collect();
    let swatches: Vec<String> = (0..palette).map(|i| colour(i).to_string()).collect();
    let mut named: Vec<(&str, usize)> = tasks.iter().map(|(t, i)| (*t, *i)).collect();
    named.sort_by_key(|x| x.1);
    let mut entries: Vec<(Swatch, String)> = named
        .iter()
        .take(LEGEND_TASKS)
        .map(|(t, i)| (Swatch::Fill(colour(*i).to_string()), t.to_string()))
        .collect();
    if named.len() > LEGEND_TASKS {
        entries.push((
            Swatch::Fill("#fff".into()),
            fit(
                &format!("and {} more (colours repeat)", named.len() - LEGEND_TASKS),
                SMALL,
                220.0,
            ),
        ));
    }
    draw(title_text, s, k, &keys, &swatches, &entries)
}
