//! A small aligned-column text table for the human-readable output, and
//! the number formatting the tables use (a few significant digits, `-` for
//! a figure that is not available).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

#[derive(Debug, Clone)]
enum Row {
    Cells(Vec<String>),
    /// A line of its own (a heading inside the table), not aligned.
    Section(String),
}

/// Rows of cells printed with every column padded to its widest cell, and
/// fitted to [`WIDTH`] unless `--wide` was given ([`set_wide`]).
#[derive(Debug, Clone)]
pub struct Table {
    header: Option<Vec<String>>,
    align: Vec<Align>,
    rows: Vec<Row>,
}

/// The gap between columns.
const GAP: usize = 2;

/// How wide the human-readable output may be by default: an ordinary
/// terminal, a review diff, a slide.
pub const WIDTH: usize = 100;

/// Narrowest a text column is wrapped to before columns are left out
/// (a longer word is never cut).
const TEXT_FLOOR: usize = 14;

/// `--wide`: every table at its natural width, nothing wrapped or left out.
/// Process-wide, like the log level: the flag is global on the command line
/// and every command's tables obey it.
static WIDE: AtomicBool = AtomicBool::new(false);

/// Print every table at its natural width from now on (`--wide`).
pub fn set_wide(wide: bool) {
    WIDE.store(wide, Ordering::Relaxed);
}

/// The width tables and notes are fitted to: [`WIDTH`], or none under
/// `--wide`.
pub fn limit() -> Option<usize> {
    (!WIDE.load(Ordering::Relaxed)).then_some(WIDTH)
}

/// How each column is laid out once fitted.
struct Layout {
    /// Kept columns, in order, with their widths.
    columns: Vec<(usize, usize)>,
    /// Headers of the columns left out.
    dropped: Vec<String>,
}

impl Table {
    /// A table with a header row; `align` gives each column's alignment
    /// (missing entries are left-aligned).
    pub fn new(header: &[&str], align: &[Align]) -> Table {
        Table {
            header: Some(header.iter().map(|s| s.to_string()).collect()),
            align: align.to_vec(),
            rows: Vec::new(),
        }
    }

    /// A table without a header (key/value listings).
    pub fn plain(align: &[Align]) -> Table {
        Table {
            header: None,
            align: align.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Add a row.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows
            .push(Row::Cells(cells.into_iter().map(Into::into).collect()));
    }

    /// Add a line that is printed as is, between rows.
    pub fn section(&mut self, text: impl Into<String>) {
        self.rows.push(Row::Section(text.into()));
    }

    /// The table as text, every line ending in `\n`, trailing spaces
    /// trimmed, fitted to [`limit`]: headers wrap first, then text cells,
    /// and only then are the rightmost columns left out, with a line saying
    /// which.
    pub fn render(&self) -> String {
        self.render_within(limit())
    }

    /// [`Table::render`] fitted to `limit` columns, or at natural width.
    fn render_within(&self, limit: Option<usize>) -> String {
        let layout = self.layout(limit);
        let mut out = String::new();
        if let Some(h) = &self.header {
            self.line(&mut out, h, &layout);
            let total = width_of(&layout.columns);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
        for row in &self.rows {
            match row {
                Row::Cells(c) => self.line(&mut out, c, &layout),
                Row::Section(s) => {
                    out.push_str(s);
                    out.push('\n');
                }
            }
        }
        if !layout.dropped.is_empty() {
            let _ = writeln!(
                out,
                "({} left out to fit {} columns; --wide shows every column)",
                layout.dropped.join(", "),
                limit.unwrap_or(WIDTH)
            );
        }
        out
    }

    fn cells(&self) -> impl Iterator<Item = &Vec<String>> {
        self.rows.iter().filter_map(|r| match r {
            Row::Cells(c) => Some(c),
            Row::Section(_) => None,
        })
    }

    fn align(&self, column: usize) -> Align {
        self.align.get(column).copied().unwrap_or(Align::Left)
    }

    /// Column widths: each column's widest cell and header; past `limit`,
    /// headers are wrapped down to their longest word, then text columns
    /// down to [`TEXT_FLOOR`] (words kept whole), then columns are left
    /// out from the right (never the first).
    fn layout(&self, limit: Option<usize>) -> Layout {
        let n = self
            .cells()
            .chain(self.header.iter())
            .map(Vec::len)
            .max()
            .unwrap_or(0);
        // Widest cell; widest header; and the narrowest each may wrap to.
        let mut cell_width = vec![0; n];
        let mut narrowest = vec![0; n];
        for row in self.cells() {
            for (i, cell) in row.iter().enumerate() {
                cell_width[i] = cell_width[i].max(chars(cell));
                // Numbers never wrap; text may, at spaces, down to the
                // floor or its longest word.
                narrowest[i] = narrowest[i].max(match self.align(i) {
                    Align::Right => chars(cell),
                    Align::Left => chars(cell).min(TEXT_FLOOR.max(longest_word(cell))),
                });
            }
        }
        let mut natural = cell_width.clone();
        if let Some(h) = &self.header {
            for (i, cell) in h.iter().enumerate() {
                natural[i] = natural[i].max(chars(cell));
                narrowest[i] = narrowest[i].max(longest_word(cell));
            }
        }
        let mut columns: Vec<(usize, usize)> = natural.iter().copied().enumerate().collect();
        let Some(limit) = limit else {
            return Layout {
                columns,
                dropped: Vec::new(),
            };
        };
        // Headers wrap first (their words kept whole), then text cells; the
        // widest column that can still give gives a character at a time.
        let headers_wrapped: Vec<usize> = (0..n).map(|i| cell_width[i].max(narrowest[i])).collect();
        for floor in [&headers_wrapped, &narrowest] {
            while width_of(&columns) > limit {
                let widest = columns
                    .iter_mut()
                    .filter(|(i, w)| *w > floor[*i])
                    .max_by_key(|(_, w)| *w);
                let Some((_, w)) = widest else { break };
                *w -= 1;
            }
        }
        let mut dropped = Vec::new();
        while width_of(&columns) > limit && columns.len() > 1 {
            if let Some((i, _)) = columns.pop() {
                let name = self.header.as_ref().and_then(|h| h.get(i));
                dropped
                    .push(name.map_or_else(|| format!("column {}", i + 1), |h| format!("\"{h}\"")));
            }
        }
        dropped.reverse();
        Layout { columns, dropped }
    }

    /// One row, its cells wrapped to their columns' widths: as many lines
    /// as its tallest cell.
    fn line(&self, out: &mut String, cells: &[String], layout: &Layout) {
        let wrapped: Vec<Vec<String>> = layout
            .columns
            .iter()
            .map(|&(i, w)| {
                let cell = cells.get(i).map_or("", String::as_str);
                if chars(cell) <= w {
                    vec![cell.to_string()]
                } else {
                    wrap(cell, w)
                }
            })
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        for k in 0..height {
            let mut line = String::new();
            for (j, (&(i, w), lines)) in layout.columns.iter().zip(&wrapped).enumerate() {
                if j > 0 {
                    line.push_str(&" ".repeat(GAP));
                }
                let cell = lines.get(k).map_or("", String::as_str);
                let pad = w.saturating_sub(chars(cell));
                match self.align(i) {
                    Align::Left => {
                        line.push_str(cell);
                        line.push_str(&" ".repeat(pad));
                    }
                    Align::Right => {
                        line.push_str(&" ".repeat(pad));
                        line.push_str(cell);
                    }
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
}

/// The width of the kept columns with their gaps.
fn width_of(columns: &[(usize, usize)]) -> usize {
    columns.iter().map(|(_, w)| w).sum::<usize>() + GAP * columns.len().saturating_sub(1)
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

fn longest_word(s: &str) -> usize {
    s.split_whitespace().map(chars).max().unwrap_or(0)
}

/// `text` broken at spaces into lines of at most `width` characters; a
/// word longer than the width is cut.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let last = lines.last().map_or(0, |l| chars(l));
            if last > 0 && last + 1 + word.len() > width {
                lines.push(String::new());
            }
            let Some(l) = lines.last_mut() else { break };
            if !l.is_empty() {
                l.push(' ');
            }
            let take = word.len().min(width);
            l.extend(word.drain(..take));
            if word.is_empty() {
                break;
            }
            lines.push(String::new());
        }
    }
    lines
}

/// `text` as a block: the first line after `lead`, the rest indented by
/// `indent`, wrapped to [`limit`] (one line per paragraph under `--wide`).
pub fn block(out: &mut String, lead: &str, indent: usize, text: &str) {
    let lines = match limit() {
        Some(limit) => wrap(text, limit.saturating_sub(indent).max(20)),
        None => vec![text.to_string()],
    };
    for (i, line) in lines.iter().enumerate() {
        if i == 0 {
            let _ = writeln!(out, "{lead:<indent$}{line}");
        } else {
            let _ = writeln!(out, "{:indent$}{line}", "");
        }
    }
}

/// Significant digits shown for measured quantities.
const SIG: i32 = 4;

/// `x` with about four significant digits: `1234`, `12.35`, `0.001235`;
/// very large or very small magnitudes in scientific notation.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".to_string();
    }
    let mag = x.abs().log10().floor() as i32;
    if !(-4..9).contains(&mag) {
        return format!("{:.*e}", (SIG - 1) as usize, x);
    }
    let decimals = (SIG - 1 - mag).max(0) as usize;
    format!("{x:.decimals$}")
}

/// [`num`] without trailing zeros (`0.02`, `1`), for figures that are
/// not in a column: tolerances, rates, settings.
pub fn short(x: f64) -> String {
    let s = num(x);
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// [`num`] for an optional figure; `-` when absent.
pub fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), num)
}

/// A count: exact below a million, scientific (`1.234e11`) above.
pub fn count(n: u64) -> String {
    if n < 1_000_000 {
        n.to_string()
    } else {
        format!("{:.3e}", n as f64)
    }
}

/// [`count`] for an optional figure; `-` when absent.
pub fn opt_count(n: Option<u64>) -> String {
    n.map_or_else(|| "-".to_string(), count)
}

/// A ratio to the baseline, three decimals (`1.000`, `0.834`).
pub fn ratio(x: Option<f64>) -> String {
    match x {
        Some(x) if x.is_finite() => format!("{x:.3}"),
        Some(x) => format!("{x}"),
        None => "-".to_string(),
    }
}

/// Text whose lines longer than [`limit`] are wrapped: a line's
/// continuation keeps its indentation, two more for an indented line (a
/// note under a heading). Lines that fit, tables among them, are kept.
pub fn fit_lines(text: &str) -> String {
    let Some(limit) = limit() else {
        return text.to_string();
    };
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        if chars(body) <= limit {
            out.push_str(line);
            continue;
        }
        let lead = body.len() - body.trim_start().len();
        let indent = if lead > 0 { lead + 2 } else { 0 };
        for (i, part) in wrap(body, limit.saturating_sub(indent).max(20))
            .iter()
            .enumerate()
        {
            let pad = if i == 0 { lead } else { indent };
            let _ = writeln!(out, "{:pad$}{part}", "");
        }
        if !line.ends_with('\n') && out.ends_with('\n') {
            out.pop();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(num(1234.567), "1235");
        assert_eq!(num(12.3456), "12.35");
        assert_eq!(num(0.00123456), "0.001235");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(-2.5), "-2.500");
        assert_eq!(num(1.5e12), "1.500e12");
        assert_eq!(opt(None), "-");
        assert_eq!(short(0.02), "0.02");
        assert_eq!(short(1.0), "1");
        assert_eq!(short(1200.0), "1200");
        assert_eq!(short(0.3), "0.3");
        assert_eq!(count(42), "42");
        assert_eq!(count(123_456_789_000), "1.235e11");
        assert_eq!(ratio(Some(1.0)), "1.000");
    }

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(&["name", "value"], &[Align::Left, Align::Right]);
        t.row(["a", "1"]);
        t.section("-- section --");
        t.row(["longer", "100"]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "name    value");
        assert_eq!(lines[1], "-------------");
        assert_eq!(lines[2], "a           1");
        assert_eq!(lines[3], "-- section --");
        assert_eq!(lines[4], "longer    100");
    }

    /// A table wider than its limit: headers wrap at spaces, then text
    /// cells; numbers are never cut; only then do columns go, named.
    #[test]
    fn fits_its_limit() {
        let mut t = Table::new(
            &["policy", "speedup (geomean)", "× energy"],
            &[Align::Left, Align::Right, Align::Right],
        );
        t.row(["hilo (spare=1, threshold=0.5) *", "1.000", "0.834"]);
        let natural = t.render_within(None);
        assert_eq!(natural.lines().next().map(chars), Some(60));
        let fitted = t.render_within(Some(40));
        for line in fitted.lines() {
            assert!(
                chars(line) <= 40,
                "{} columns: {line}\n{fitted}",
                chars(line)
            );
        }
        // Every figure and every word is still there.
        for word in ["1.000", "0.834", "speedup", "(geomean)", "threshold=0.5)"] {
            assert!(fitted.contains(word), "{word} lost:\n{fitted}");
        }
        // The rightmost column goes first.
        let narrow = t.render_within(Some(28));
        assert!(
            narrow.contains("1.000") && !narrow.contains("0.834"),
            "{narrow}"
        );
        assert!(
            narrow.ends_with(
                "(\"× energy\" left out to fit 28 columns; --wide shows every column)\n"
            ),
            "{narrow}"
        );
    }

    #[test]
    fn wraps_long_words_and_text() {
        assert_eq!(wrap("a bb ccc", 4), ["a bb", "ccc"]);
        assert_eq!(wrap("abcdefgh", 3), ["abc", "def", "gh"]);
        assert_eq!(wrap("", 3), [""]);
    }

    #[test]
    fn counts_unicode_by_chars() {
        let mut t = Table::plain(&[Align::Left, Align::Left]);
        t.row(["EDP (J·s)", "x"]);
        t.row(["ab", "y"]);
        assert_eq!(t.render(), "EDP (J·s)  x\nab         y\n");
    }
}
