//! A small SVG writer for the report's charts: text whose width is
//! estimated (so layouts can leave room for it before a browser measures
//! it), shapes, and the classes the browser test looks for (`chart`,
//! `plot-area`, `legend`, `tick`, `data`). Text is drawn in the generic
//! `sans-serif` family: no font file is read or referenced.

use std::fmt::Write as _;

/// Font size of tick labels and legend entries, px.
pub const SMALL: f64 = 12.0;
/// Font size of axis descriptions, px.
pub const LABEL: f64 = 13.0;
/// Font size of a chart's title, px.
pub const TITLE: f64 = 15.0;

/// Escape text for SVG and HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An upper estimate of the width of `s` at `size` px in a sans-serif
/// font (DejaVu Sans and Liberation Sans, the usual Linux defaults, stay
/// below it): layouts reserve this much so that no label is clipped.
pub fn text_width(s: &str, size: f64) -> f64 {
    let em: f64 = s
        .chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | ' ' | '(' | ')' => 0.4,
            'm' | 'w' | 'M' | 'W' | '@' | '%' | '—' => 1.0,
            c if c.is_ascii_uppercase() => 0.8,
            _ => 0.66,
        })
        .sum();
    em * size
}

/// `s` shortened with "…" so that it fits in `max` px at `size`.
pub fn fit(s: &str, size: f64, max: f64) -> String {
    if text_width(s, size) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    for c in s.chars() {
        let next = format!("{out}{c}…");
        if text_width(&next, size) > max {
            break;
        }
        out.push(c);
    }
    out.push('…');
    out
}

/// Horizontal anchoring of a text.
#[derive(Debug, Clone, Copy)]
pub enum Anchor {
    /// `x` is the text's left edge.
    Start,
    /// `x` is the text's centre.
    Middle,
    /// `x` is the text's right edge.
    End,
}

impl Anchor {
    fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// A colour-blind-safe categorical palette (Okabe and Ito's eight, with
/// black last), cycled.
pub fn colour(i: usize) -> &'static str {
    const P: [&str; 8] = [
        "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000",
    ];
    P[i % P.len()]
}

/// A dash pattern per series index, so that lines that coincide stay
/// distinguishable.
pub fn dash(i: usize) -> &'static str {
    const D: [&str; 5] = ["", "7 4", "2 3", "10 3 2 3", "4 2 1 2"];
    D[i % D.len()]
}

/// One chart's SVG, built element by element.
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
}

impl Svg {
    /// An empty chart of `width` × `height` px.
    pub fn new(width: f64, height: f64) -> Svg {
        Svg {
            width,
            height,
            body: String::new(),
        }
    }

    /// Grow the chart to `height` px when its content needs more.
    pub fn at_least(&mut self, height: f64) {
        self.height = self.height.max(height);
    }

    /// Append raw SVG (elements built by the caller).
    pub fn raw(&mut self, s: &str) {
        self.body.push_str(s);
    }

    /// A text with its baseline at `y`.
    pub fn text(&mut self, x: f64, y: f64, anchor: Anchor, size: f64, class: &str, s: &str) {
        let _ = writeln!(
            self.body,
            r#"<text class="{class}" x="{x:.1}" y="{y:.1}" font-size="{size}" text-anchor="{}">{}</text>"#,
            anchor.name(),
            esc(s)
        );
    }

    /// A text turned a quarter left, centred on (`x`, `y`) (a y-axis
    /// description).
    pub fn vertical_text(&mut self, x: f64, y: f64, size: f64, s: &str) {
        let _ = writeln!(
            self.body,
            r#"<text class="axis-label" x="{x:.1}" y="{y:.1}" font-size="{size}" text-anchor="middle" transform="rotate(-90 {x:.1} {y:.1})">{}</text>"#,
            esc(s)
        );
    }

    /// A line segment.
    pub fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), style: &str) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" {style}/>"#
        );
    }

    /// A rectangle.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, class: &str, style: &str) {
        let _ = writeln!(
            self.body,
            r#"<rect class="{class}" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" {style}/>"#
        );
    }

    /// The finished element: scales down with the page (`max-width`),
    /// never up, and is described by `title` for screen readers.
    pub fn finish(self, title: &str) -> String {
        format!(
            "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" role=\"img\" aria-label=\"{t}\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n{body}</svg>",
            w = self.width,
            h = self.height,
            t = esc(title),
            body = self.body
        )
    }
}
