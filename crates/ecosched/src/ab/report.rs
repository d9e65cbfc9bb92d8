//! `ab --report FILE.html`: one self-contained page (inline CSS and SVG,
//! no scripts, fonts or requests) with what was compared, the ratios and
//! their intervals as a table and as a forest plot, and every run.

use super::result::{label, ratio_cells, run_cells, AbResult, RATIO_HEADER, RUN_HEADER};
use crate::report::esc;

/// The forest plot's size in pixels: a label column, then the axis.
const WIDTH: f64 = 720.0;
const LABEL_W: f64 = 170.0;
const ROW_H: f64 = 44.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 46.0;

/// The page.
pub fn html(r: &AbResult) -> String {
    let title = format!("ecosched ab: {} against {}", r.policy, r.baseline);
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str(&format!("<title>{}</title>\n", esc(&title)));
    h.push_str(
        "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}\
         table{border-collapse:collapse;margin:1em 0}\
         td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}\
         tr.out td{color:#999}\
         svg{display:block}</style>\n</head>\n<body>\n",
    );
    h.push_str(&format!("<h1>{}</h1>\n<table>\n", esc(&title)));
    let context = [
        ("command", r.command.join(" ")),
        ("policy", r.policy.clone()),
        ("baseline", r.baseline.clone()),
        (
            "pairs",
            format!("{} asked, {} counted (ABBA order)", r.pairs, r.pairs_used),
        ),
        (
            "interval",
            format!(
                "95 % bootstrap, {} resamples of whole pairs, seed {}",
                r.resamples, r.seed
            ),
        ),
        ("power", r.meter.clone()),
    ];
    for (k, v) in context {
        h.push_str(&format!("<tr><th>{}</th><td>{}</td></tr>\n", k, esc(&v)));
    }
    h.push_str("</table>\n");
    for note in &r.notes {
        h.push_str(&format!("<p><strong>Note:</strong> {}</p>\n", esc(note)));
    }
    h.push_str("<h2>Ratios policy/baseline</h2>\n");
    h.push_str(&html_table(
        "ratios",
        &RATIO_HEADER,
        &ratio_cells(r),
        |_| false,
    ));
    if r.ratios.iter().any(|q| q.interval.is_some()) {
        h.push_str("<figure>\n");
        h.push_str(&forest(r));
        h.push_str("\n</figure>\n");
    }
    h.push_str("<h2>Runs</h2>\n");
    // Runs that do not count are greyed.
    h.push_str(&html_table("runs", &RUN_HEADER, &run_cells(r), |row| {
        row.last().is_some_and(|c| c != "yes")
    }));
    h.push_str("</body>\n</html>\n");
    h
}

/// An HTML table with id `id`; rows for which `out` holds are greyed.
fn html_table<const N: usize>(
    id: &str,
    header: &[&str; N],
    rows: &[[String; N]],
    out: impl Fn(&[String; N]) -> bool,
) -> String {
    let mut h = format!("<table id=\"{id}\">\n<tr>");
    for c in header {
        h.push_str(&format!("<th>{}</th>", esc(c)));
    }
    h.push_str("</tr>\n");
    for row in rows {
        h.push_str(if out(row) {
            "<tr class=\"out\">"
        } else {
            "<tr>"
        });
        for c in row {
            h.push_str(&format!("<td>{}</td>", esc(c)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    h
}

/// One row per ratio with an interval: the interval as a line, the ratio
/// as a dot, and a dashed line at 1 (no difference).
fn forest(r: &AbResult) -> String {
    let rows: Vec<(&str, &super::stats::Interval)> = r
        .ratios
        .iter()
        .filter_map(|q| q.interval.as_ref().map(|i| (label(q.metric), i)))
        .collect();
    let lo = rows.iter().map(|(_, i)| i.low).fold(1.0_f64, f64::min);
    let hi = rows.iter().map(|(_, i)| i.high).fold(1.0_f64, f64::max);
    let pad = ((hi - lo) * 0.1).max(0.01);
    let (lo, hi) = (lo - pad, hi + pad);
    let height = TOP + ROW_H * rows.len() as f64 + BOTTOM;
    let x = |v: f64| LABEL_W + (v - lo) / (hi - lo) * (WIDTH - LABEL_W - 20.0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"13\">\n\
         <title>ratio policy/baseline with 95 % intervals</title>\n"
    );
    let axis_y = TOP + ROW_H * rows.len() as f64;
    s.push_str(&format!(
        "<line x1=\"{:.1}\" y1=\"{TOP}\" x2=\"{:.1}\" y2=\"{axis_y}\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n",
        x(1.0),
        x(1.0)
    ));
    s.push_str(&format!(
        "<line x1=\"{LABEL_W}\" y1=\"{axis_y}\" x2=\"{:.1}\" y2=\"{axis_y}\" stroke=\"#333\"/>\n",
        WIDTH - 20.0
    ));
    for k in 0..=4 {
        let v = lo + (hi - lo) * f64::from(k) / 4.0;
        s.push_str(&format!(
            "<line x1=\"{0:.1}\" y1=\"{axis_y}\" x2=\"{0:.1}\" y2=\"{1}\" stroke=\"#333\"/>\
             <text x=\"{0:.1}\" y=\"{2}\" text-anchor=\"middle\">{3:.3}</text>\n",
            x(v),
            axis_y + 5.0,
            axis_y + 20.0,
            v
        ));
    }
    s.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">ratio policy/baseline (1 = no difference)</text>\n",
        LABEL_W + (WIDTH - LABEL_W - 20.0) / 2.0,
        axis_y + 40.0
    ));
    for (row, (name, i)) in rows.iter().enumerate() {
        let y = TOP + ROW_H * (row as f64 + 0.5);
        let colour = if i.significant() { "#1f5fa8" } else { "#777" };
        s.push_str(&format!(
            "<text x=\"8\" y=\"{:.1}\">{}</text>\n\
             <line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"3\"/>\n\
             <circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"6\" fill=\"{colour}\"/>\n",
            y + 4.0,
            esc(name),
            x(i.low),
            x(i.high),
            x(i.ratio)
        ));
    }
    s.push_str("</svg>");
    s
}
