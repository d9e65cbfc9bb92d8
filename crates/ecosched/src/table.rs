//! A small aligned-column text table for the human-readable output, and
//! the number formatting the tables use (a few significant digits, `-` for
//! a figure that is not available).

use std::fmt::Write as _;

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

/// Rows of cells printed with every column padded to its widest cell.
#[derive(Debug, Clone)]
pub struct Table {
    header: Option<Vec<String>>,
    align: Vec<Align>,
    rows: Vec<Row>,
}

/// The gap between columns.
const GAP: &str = "  ";

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

    /// The table as text, every line ending in `\n`, trailing spaces trimmed.
    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = Vec::new();
        let cells = self
            .header
            .iter()
            .chain(self.rows.iter().filter_map(|r| match r {
                Row::Cells(c) => Some(c),
                Row::Section(_) => None,
            }));
        for row in cells {
            for (i, cell) in row.iter().enumerate() {
                let w = cell.chars().count();
                match widths.get_mut(i) {
                    Some(x) => *x = (*x).max(w),
                    None => widths.push(w),
                }
            }
        }
        let mut out = String::new();
        if let Some(h) = &self.header {
            self.line(&mut out, h, &widths);
            let total = widths.iter().sum::<usize>() + GAP.len() * widths.len().saturating_sub(1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
        for row in &self.rows {
            match row {
                Row::Cells(c) => self.line(&mut out, c, &widths),
                Row::Section(s) => {
                    out.push_str(s);
                    out.push('\n');
                }
            }
        }
        out
    }

    fn line(&self, out: &mut String, cells: &[String], widths: &[usize]) {
        let mut line = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                line.push_str(GAP);
            }
            let pad = widths
                .get(i)
                .copied()
                .unwrap_or(0)
                .saturating_sub(cell.chars().count());
            match self.align.get(i).copied().unwrap_or(Align::Left) {
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

    #[test]
    fn counts_unicode_by_chars() {
        let mut t = Table::plain(&[Align::Left, Align::Left]);
        t.row(["EDP (J·s)", "x"]);
        t.row(["ab", "y"]);
        assert_eq!(t.render(), "EDP (J·s)  x\nab         y\n");
    }
}
