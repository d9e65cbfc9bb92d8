//! The report's bar and line charts as inline SVG. Every chart keeps its
//! legend to the right of the plotting area (never over the data), leaves
//! each tick label the width it needs, switches a value axis to a log scale
//! when the values span two decades, and bounds what it draws: a line
//! keeps at most [`COLUMNS`] points, each column's minimum and maximum
//! drawn as a shaded envelope so that a spike survives the thinning.

use super::axis::Scale;
use super::svg::{colour, dash, fit, text_width, Anchor, Svg, LABEL, SMALL, TITLE};
use std::fmt::Write as _;

/// Width of every chart, px.
pub const WIDTH: f64 = 900.0;
/// Top of the plotting area (below the title), px.
const TOP: f64 = 38.0;
/// Points kept per line: about one per 3 px of a full-width chart.
pub const COLUMNS: usize = 240;
/// Categories drawn in one bar chart; the summary tables list them all.
pub const MAX_CATEGORIES: usize = 40;
/// Widest legend text, px.
const LEGEND_TEXT: f64 = 220.0;
/// Widest category label, px.
const CATEGORY_TEXT: f64 = 220.0;

/// A legend swatch.
pub enum Swatch {
    /// A filled box of this colour.
    Fill(String),
    /// A line of this colour and dash pattern.
    Line(&'static str, &'static str),
}

/// The legend's width for `entries`, 0 when there is none.
pub fn legend_width(entries: &[(Swatch, String)]) -> f64 {
    entries
        .iter()
        .map(|(_, t)| text_width(&fit(t, SMALL, LEGEND_TEXT), SMALL))
        .fold(0.0, f64::max)
        .max(if entries.is_empty() { 0.0 } else { 1.0 })
        + if entries.is_empty() { 0.0 } else { 34.0 }
}

/// Draw the legend with its top-left corner at (`x`, `y`); its bottom.
pub fn legend(svg: &mut Svg, x: f64, y: f64, entries: &[(Swatch, String)]) -> f64 {
    if entries.is_empty() {
        return y;
    }
    svg.raw("<g class=\"legend\">\n");
    let row = SMALL * 1.5;
    for (i, (swatch, text)) in entries.iter().enumerate() {
        let cy = y + row * i as f64 + row / 2.0;
        match swatch {
            Swatch::Fill(c) => {
                svg.rect(x, cy - 5.0, 14.0, 10.0, "swatch", &format!("fill=\"{c}\""))
            }
            Swatch::Line(c, d) => svg.line(
                (x, cy),
                (x + 20.0, cy),
                &format!("stroke=\"{c}\" stroke-width=\"2\" stroke-dasharray=\"{d}\""),
            ),
        }
        svg.text(
            x + 26.0,
            cy + SMALL * 0.35,
            Anchor::Start,
            SMALL,
            "legend-text",
            &fit(text, SMALL, LEGEND_TEXT),
        );
    }
    svg.raw("</g>\n");
    y + row * entries.len() as f64
}

/// The chart's title, shortened to fit.
pub fn title(svg: &mut Svg, s: &str) {
    svg.text(
        10.0,
        22.0,
        Anchor::Start,
        TITLE,
        "title",
        &fit(s, TITLE, WIDTH - 20.0),
    );
}

/// The plotting area's outline, the element the legend must stay clear of.
pub fn plot_area(svg: &mut Svg, left: f64, top: f64, right: f64, bottom: f64) {
    svg.rect(
        left,
        top,
        right - left,
        bottom - top,
        "plot-area",
        "fill=\"none\" stroke=\"#888\"",
    );
}

/// Ticks of `scale` along a horizontal axis from `left` to `right` at
/// `bottom`, as many as fit side by side, with grid lines up to `top`.
pub fn x_axis(svg: &mut Svg, scale: &Scale, (left, right): (f64, f64), (top, bottom): (f64, f64)) {
    let widest = scale
        .ticks(20)
        .iter()
        .map(|(_, t)| text_width(t, SMALL))
        .fold(0.0, f64::max);
    let fits = ((right - left) / (widest + 16.0)).floor() as usize;
    svg.raw("<g class=\"ticks\">\n");
    for (v, t) in scale.ticks(fits.clamp(2, 12)) {
        let x = left + scale.frac(v) * (right - left);
        svg.line((x, top), (x, bottom), "stroke=\"#e4e4e4\"");
        svg.text(x, bottom + 8.0 + SMALL, Anchor::Middle, SMALL, "tick", &t);
    }
    svg.raw("</g>\n");
}

/// Ticks of `scale` along a vertical axis from `bottom` up to `top` at
/// `left`, with grid lines to `right`.
pub fn y_axis(svg: &mut Svg, scale: &Scale, (left, right): (f64, f64), (top, bottom): (f64, f64)) {
    let fits = ((bottom - top) / (SMALL * 2.0)).floor() as usize;
    svg.raw("<g class=\"ticks\">\n");
    for (v, t) in scale.ticks(fits.clamp(2, 10)) {
        let y = bottom - scale.frac(v) * (bottom - top);
        svg.line((left, y), (right, y), "stroke=\"#e4e4e4\"");
        svg.text(left - 6.0, y + SMALL * 0.35, Anchor::End, SMALL, "tick", &t);
    }
    svg.raw("</g>\n");
}

/// The widest tick label `scale` can draw.
pub fn widest_tick(scale: &Scale) -> f64 {
    scale
        .ticks(20)
        .iter()
        .map(|(_, t)| text_width(t, SMALL))
        .fold(0.0, f64::max)
}

/// The axis description under a horizontal axis, centred; the chart's
/// bottom below it.
pub fn x_label(svg: &mut Svg, text: &str, (left, right): (f64, f64), bottom: f64) -> f64 {
    let y = bottom + 8.0 + SMALL + 8.0 + LABEL;
    let label = if text.is_empty() {
        String::new()
    } else {
        fit(text, LABEL, right - left)
    };
    svg.text(
        (left + right) / 2.0,
        y,
        Anchor::Middle,
        LABEL,
        "axis-label",
        &label,
    );
    y + 8.0
}

/// One named group of bars (one per category), e.g. a policy.
pub struct BarGroup {
    /// Legend name.
    pub name: String,
    /// One value per category; `None` draws nothing.
    pub values: Vec<Option<f64>>,
    /// Per category, the low and high end of an error bar (empty: none).
    pub ranges: Vec<Option<(f64, f64)>>,
}

/// Horizontal grouped bars: one row per category (labels on the left,
/// never crowded whatever their number), one bar per group in it, a dashed
/// line at `reference` (1 for ratios) and error bars where a group has
/// ranges. At most [`MAX_CATEGORIES`] rows, the first ones given.
pub fn bars(
    title_text: &str,
    value_label: &str,
    categories: &[String],
    groups: &[BarGroup],
    reference: Option<f64>,
) -> String {
    let shown = categories.len().min(MAX_CATEGORIES);
    let title_text = if shown < categories.len() {
        format!("{title_text} (first {shown} of {})", categories.len())
    } else {
        title_text.to_string()
    };
    let values: Vec<f64> = groups
        .iter()
        .flat_map(|g| {
            let v = g.values.iter().take(shown).flatten().copied();
            let r = g
                .ranges
                .iter()
                .take(shown)
                .flatten()
                .flat_map(|&(a, b)| [a, b]);
            v.chain(r).collect::<Vec<_>>()
        })
        .collect();
    let scale = Scale::fit(&values, reference, true, true);
    let labels: Vec<String> = categories[..shown]
        .iter()
        .map(|c| fit(c, SMALL, CATEGORY_TEXT))
        .collect();
    let entries: Vec<(Swatch, String)> = if groups.len() > 1 {
        groups
            .iter()
            .enumerate()
            .map(|(i, g)| (Swatch::Fill(colour(i).to_string()), g.name.clone()))
            .collect()
    } else {
        Vec::new()
    };
    let left = 10.0
        + labels
            .iter()
            .map(|l| text_width(l, SMALL))
            .fold(0.0, f64::max)
        + 8.0;
    let lw = legend_width(&entries);
    // Half the widest tick label may hang past the plot's right edge.
    let right = WIDTH - 10.0 - widest_tick(&scale) / 2.0 - if lw > 0.0 { lw + 16.0 } else { 0.0 };
    let k = groups.len().max(1) as f64;
    let thick = (360.0 / (k * shown.max(1) as f64)).clamp(3.0, 14.0);
    let band = (k * thick + 8.0).max(SMALL * 1.6);
    let bottom = TOP + band * shown.max(1) as f64;
    let mut svg = Svg::new(WIDTH, bottom + 60.0);
    title(&mut svg, &title_text);
    x_axis(&mut svg, &scale, (left, right), (TOP, bottom));
    let x = |v: f64| left + scale.frac(v) * (right - left);
    let mut data = String::from("<g class=\"data\">\n");
    let mut whiskers = String::new();
    for (gi, g) in groups.iter().enumerate() {
        for ci in 0..shown {
            let y0 = TOP + band * ci as f64 + (band - k * thick) / 2.0 + thick * gi as f64;
            if let Some(v) = g.values.get(ci).copied().flatten() {
                if !(scale.is_log() && v <= 0.0) {
                    let (a, b) = (x(scale.low()), x(v));
                    let _ = writeln!(
                        data,
                        r#"<rect class="bar" x="{:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {v:.4}</title></rect>"#,
                        a.min(b),
                        (b - a).abs().max(1.0),
                        thick * 0.85,
                        colour(gi),
                        super::svg::esc(&g.name)
                    );
                }
            }
            if let Some((lo, hi)) = g.ranges.get(ci).copied().flatten() {
                let cy = y0 + thick * 0.425;
                let (a, b) = (x(lo), x(hi));
                let h = (thick * 0.3).max(2.0);
                let _ = writeln!(
                    whiskers,
                    r##"<path class="errorbar" d="M{a:.1} {:.1}v{:.1}M{a:.1} {cy:.1}H{b:.1}M{b:.1} {:.1}v{:.1}" stroke="#222" stroke-width="1.2" fill="none"/>"##,
                    cy - h,
                    2.0 * h,
                    cy - h,
                    2.0 * h
                );
            }
        }
    }
    data.push_str(&whiskers);
    data.push_str("</g>\n");
    svg.raw(&data);
    if let Some(r) = reference {
        let rx = x(r);
        svg.line(
            (rx, TOP),
            (rx, bottom),
            "class=\"reference\" stroke=\"#000\" stroke-dasharray=\"5 4\"",
        );
    }
    plot_area(&mut svg, left, TOP, right, bottom);
    svg.raw("<g class=\"ticks\">\n");
    for (ci, l) in labels.iter().enumerate() {
        let cy = TOP + band * (ci as f64 + 0.5);
        svg.text(left - 6.0, cy + SMALL * 0.35, Anchor::End, SMALL, "tick", l);
    }
    svg.raw("</g>\n");
    let label = if scale.is_log() {
        format!("{value_label} (log scale)")
    } else {
        value_label.to_string()
    };
    let end = x_label(&mut svg, &label, (left, right), bottom);
    let legend_bottom = legend(&mut svg, WIDTH - 10.0 - lw, TOP, &entries);
    svg.at_least(end.max(legend_bottom + 10.0));
    svg.finish(&title_text)
}

/// One column of a thinned line: mean x, and the minimum, mean and
/// maximum y of the points in it.
type Column = (f64, f64, f64, f64);

/// A column being filled: sum of x, minimum y, sum of y, maximum y, count.
type Partial = (f64, f64, f64, f64, u32);

/// `points` thinned to at most [`COLUMNS`] columns over `lo..hi`.
pub fn thin(points: &[(f64, f64)], lo: f64, hi: f64) -> Vec<Column> {
    let mut cols: Vec<Option<Partial>> = vec![None; COLUMNS];
    let span = (hi - lo).max(1e-12);
    for &(x, y) in points {
        if !x.is_finite() || !y.is_finite() {
            continue;
        }
        let i = (((x - lo) / span) * COLUMNS as f64).floor() as usize;
        let c = &mut cols[i.min(COLUMNS - 1)];
        *c = Some(match *c {
            None => (x, y, y, y, 1),
            Some((sx, mn, sy, mx, n)) => (sx + x, mn.min(y), sy + y, mx.max(y), n + 1),
        });
    }
    cols.into_iter()
        .flatten()
        .map(|(sx, mn, sy, mx, n)| (sx / f64::from(n), mn, sy / f64::from(n), mx))
        .collect()
}

/// Whether two thinned lines would be drawn on top of each other: the
/// same columns, every mean within 0.2 % of the axis' span.
fn same_line(a: &[Column], b: &[Column], scale: &Scale) -> bool {
    !a.is_empty()
        && a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(p, q)| (scale.frac(p.2) - scale.frac(q.2)).abs() < 0.002)
}

/// Lines of (x, y) points, one per named series. A series identical to an
/// earlier one is named "(same as …)" in the legend and drawn dashed over
/// it; each series has its own dash pattern.
pub fn lines(
    title_text: &str,
    x_text: &str,
    y_text: &str,
    series: &[(String, Vec<(f64, f64)>)],
    x_from_zero: bool,
) -> String {
    let xs = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let (xlo, xhi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let (xlo, xhi) = if xlo.is_finite() {
        (if x_from_zero { xlo.min(0.0) } else { xlo }, xhi)
    } else {
        (0.0, 1.0)
    };
    let thinned: Vec<Vec<Column>> = series.iter().map(|(_, p)| thin(p, xlo, xhi)).collect();
    let ys: Vec<f64> = thinned.iter().flatten().flat_map(|c| [c.1, c.3]).collect();
    let yscale = Scale::fit(&ys, None, true, true);
    let xscale = Scale::exact(xlo, xhi);
    let entries: Vec<(Swatch, String)> = series
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            let same = (0..i).find(|&j| same_line(&thinned[j], &thinned[i], &yscale));
            let text = match same {
                Some(j) => format!("{name} (same as {})", series[j].0),
                None => name.clone(),
            };
            (Swatch::Line(colour(i), dash(i)), text)
        })
        .collect();
    let lw = legend_width(&entries);
    let left = 10.0 + LABEL * 1.4 + widest_tick(&yscale) + 8.0;
    let right = WIDTH - 10.0 - widest_tick(&xscale) / 2.0 - lw - 16.0;
    let bottom = TOP + 260.0;
    let mut svg = Svg::new(WIDTH, bottom + 60.0);
    title(&mut svg, title_text);
    x_axis(&mut svg, &xscale, (left, right), (TOP, bottom));
    y_axis(&mut svg, &yscale, (left, right), (TOP, bottom));
    let px = |x: f64| left + xscale.frac(x) * (right - left);
    let py = |y: f64| bottom - yscale.frac(y) * (bottom - TOP);
    let mut data = String::from("<g class=\"data\">\n");
    for (i, cols) in thinned.iter().enumerate() {
        if cols.is_empty() {
            continue;
        }
        if cols.iter().any(|c| c.3 > c.1) {
            let mut d = String::new();
            for c in cols {
                let _ = write!(d, "{:.1},{:.1} ", px(c.0), py(c.3));
            }
            for c in cols.iter().rev() {
                let _ = write!(d, "{:.1},{:.1} ", px(c.0), py(c.1));
            }
            let _ = writeln!(
                data,
                r#"<polygon class="envelope" points="{}" fill="{}" fill-opacity="0.18"/>"#,
                d.trim_end(),
                colour(i)
            );
        }
        let mut d = String::new();
        for c in cols {
            let _ = write!(d, "{:.1},{:.1} ", px(c.0), py(c.2));
        }
        let _ = writeln!(
            data,
            r#"<polyline class="line" points="{}" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="{}"/>"#,
            d.trim_end(),
            colour(i),
            dash(i)
        );
    }
    data.push_str("</g>\n");
    svg.raw(&data);
    plot_area(&mut svg, left, TOP, right, bottom);
    let y_label = if yscale.is_log() {
        format!("{y_text} (log scale)")
    } else {
        y_text.to_string()
    };
    svg.vertical_text(
        10.0 + LABEL,
        (TOP + bottom) / 2.0,
        LABEL,
        &fit(&y_label, LABEL, bottom - TOP),
    );
    let end = x_label(&mut svg, x_text, (left, right), bottom);
    let legend_bottom = legend(&mut svg, WIDTH - 10.0 - lw, TOP, &entries);
    svg.at_least(end.max(legend_bottom + 10.0));
    svg.finish(title_text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_is_bounded_and_keeps_spikes() {
        let mut pts: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, 1.0)).collect();
        pts[5000].1 = 50.0;
        let cols = thin(&pts, 0.0, 9999.0);
        assert!(cols.len() <= COLUMNS);
        assert_eq!(cols.iter().map(|c| c.3).fold(0.0, f64::max), 50.0);
    }

    #[test]
    fn a_series_equal_to_another_is_named_so() {
        let p = vec![(0.0, 1.0), (1.0, 2.0)];
        let svg = lines(
            "t",
            "x",
            "y",
            &[("a".into(), p.clone()), ("b".into(), p)],
            true,
        );
        assert!(svg.contains("b (same as a)"));
        assert!(svg.contains("stroke-dasharray=\"7 4\""));
    }

    #[test]
    fn durations_over_decades_get_a_log_axis_and_error_bars_draw() {
        let svg = bars(
            "run time",
            "s",
            &["short".into(), "long".into()],
            &[BarGroup {
                name: "p".into(),
                values: vec![Some(0.17), Some(30.0)],
                ranges: vec![Some((0.15, 0.2)), Some((29.0, 31.0))],
            }],
            None,
        );
        assert!(svg.contains("s (log scale)"));
        assert_eq!(svg.matches("class=\"errorbar\"").count(), 2);
        assert!(
            !svg.contains("class=\"legend\""),
            "one group needs no legend"
        );
    }
}
