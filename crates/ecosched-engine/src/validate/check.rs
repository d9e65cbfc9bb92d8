//! One validation row ([`Check`]) and the rules its band keeps: a paper
//! figure is reproduced within 15 % of it at most, and a row stating an
//! effect fails when the effect vanishes. The paper modules build rows with
//! these constructors; the tests and `validate` read the verdicts.

use serde::Serialize;

/// Whether a row could have come out otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RowKind {
    /// A model parameter was set so that this row holds: it shows the
    /// calibration worked, not that the model predicts.
    Calibrated,
    /// Nothing was set from this row: the model predicted it.
    Predicted,
}

/// One published figure next to the simulated one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// Calibrated or predicted. Rows are `calibrated` unless shown
    /// otherwise: claiming a prediction needs a reason.
    pub kind: RowKind,
    /// What is compared.
    pub name: String,
    /// Paper and place.
    pub source: String,
    /// The paper's value.
    pub paper: f64,
    /// The simulator's value.
    pub simulated: f64,
    /// Accepted absolute difference.
    pub tolerance: f64,
    /// Whether |simulated − paper| ≤ tolerance.
    pub pass: bool,
    /// How the figure is derived, and why the tolerance is what it is.
    pub note: String,
    /// A figure the model is known not to reach (see [`Check::known_miss`]).
    pub known_miss: bool,
    /// |simulated − paper| / |paper|; absent when the paper's figure is 0
    /// (an absolute bound) or the row states an ordering (1 = holds).
    pub rel_error: Option<f64>,
}

/// The widest tolerance a row with a paper number may have, relative to
/// that number: beyond it a row stops being a reproduction.
pub const MAX_REL_TOLERANCE: f64 = 0.15;

impl Check {
    /// A calibrated row (see [`Check::predicted`]).
    pub fn new(
        name: &str,
        source: &str,
        paper: f64,
        simulated: f64,
        tolerance: f64,
        note: &str,
    ) -> Self {
        Check {
            kind: RowKind::Calibrated,
            name: name.to_string(),
            source: source.to_string(),
            paper,
            simulated,
            tolerance,
            pass: (simulated - paper).abs() <= tolerance,
            note: note.to_string(),
            known_miss: false,
            rel_error: (paper != 0.0).then(|| (simulated - paper).abs() / paper.abs()),
        }
    }

    /// A row stating an ordering or a direction: 1 when it holds, 0 when
    /// it reverses (or vanishes); no tolerance and no relative error.
    pub fn ordering(name: &str, source: &str, holds: bool, note: &str) -> Self {
        Check {
            rel_error: None,
            ..Check::new(name, source, 1.0, if holds { 1.0 } else { 0.0 }, 0.0, note)
        }
    }

    /// Why this row's tolerance is too wide, if it is: a row with a paper
    /// number passes within [`MAX_REL_TOLERANCE`] of it at most. Rows
    /// comparing with 0 are absolute bounds and exempt.
    pub fn tolerance_problem(&self) -> Option<String> {
        (self.paper != 0.0 && self.tolerance > MAX_REL_TOLERANCE * self.paper.abs() + 1e-12).then(
            || {
                format!(
                    "{} ({}): tolerance ±{} is wider than {:.0} % of the paper's {}",
                    self.name,
                    self.source,
                    self.tolerance,
                    MAX_REL_TOLERANCE * 100.0,
                    self.paper
                )
            },
        )
    }

    /// Why this row would pass with no effect at all, if it would: a row
    /// stating an effect must fail when the effect vanishes. The figure of
    /// no effect is read from the row's name: 1 for a ratio, 0 for a
    /// per-cent figure, a difference, a gain, a cut, a reduction or a
    /// saving; other rows (watts, counts) have none. Not a problem: a row
    /// whose paper figure is that one (it claims no effect), and one whose
    /// band only ends there (it claims at most a slight effect, like
    /// Fig. 1's "little interference", 1.00–1.10). A problem: Table 1's
    /// 4 % stream slowdown accepted within ±0.05 (0.99–1.09 holds 1).
    pub fn no_effect_problem(&self) -> Option<String> {
        let name = self.name.as_str();
        let none = if name.contains("ratio") {
            1.0
        } else if ["(%)", "minus", "gain", " cut", "reduction", "saves"]
            .iter()
            .any(|w| name.contains(w))
        {
            0.0
        } else {
            return None;
        };
        let (lo, hi) = (self.paper - self.tolerance, self.paper + self.tolerance);
        let claims_an_effect = (self.paper - none).abs() > 1e-9;
        (self.rel_error.is_some() && claims_an_effect && lo + 1e-9 < none && none < hi - 1e-9).then(
            || {
                format!(
                    "{} ({}): {lo}–{hi} accepts {none}, no effect",
                    self.name, self.source
                )
            },
        )
    }

    /// Mark the row as a figure the model is known not to reach: it is
    /// still shown (as a miss, with its honest tolerance) but does not fail
    /// `ecosched validate`; its test fails once the row passes, so that it
    /// is promoted rather than forgotten.
    pub fn known_miss(mut self) -> Self {
        self.known_miss = true;
        self
    }

    /// Mark the row as predicted: no parameter was set from it.
    pub fn predicted(mut self) -> Self {
        self.kind = RowKind::Predicted;
        self
    }
}

/// `row`, a known miss with `why` added to its note when `why` is given.
pub(super) fn missed_if(row: Check, why: Option<&str>) -> Check {
    match why {
        Some(why) => Check {
            note: format!("{}. A known miss: {why}", row.note),
            ..row
        }
        .known_miss(),
        None => row,
    }
}

#[cfg(test)]
mod tests {
    use super::Check;

    #[test]
    fn a_band_holding_no_effect_inside_is_a_problem() {
        let row = |name: &str, paper: f64, tolerance: f64| {
            Check::new(name, "test", paper, paper, tolerance, "").no_effect_problem()
        };
        // Table 1's 4 % stream slowdown: ±0.05 holds 1, ±0.03 does not.
        assert!(row("4 stream: time ratio", 1.04, 0.05).is_some());
        assert!(row("4 stream: time ratio", 1.04, 0.03).is_none());
        // A per-cent effect whose band reaches past 0, and one that does not.
        assert!(row(
            "Task 2: algorithm 1 saves power against control (loaded, %)",
            1.0,
            1.5
        )
        .is_some());
        assert!(row(
            "Task 2: algorithm 1 saves power against control (loaded, %)",
            8.28,
            1.242
        )
        .is_none());
        // Claims of no effect, and of at most a slight one.
        assert!(row(
            "-j1 high/low + spare vs performance (run time ratio)",
            1.0,
            0.02
        )
        .is_none());
        assert!(row(
            "stream-fit2: 2 instances sharing an L2 vs alone (ratio)",
            1.05,
            0.05
        )
        .is_none());
        // Watts have no figure of no effect.
        assert!(row("-j1 all cores low: average power (W)", 79.0, 100.0).is_none());
        // An ordering has no band.
        assert!(Check::ordering("a ratio holds", "test", true, "")
            .no_effect_problem()
            .is_none());
    }
}
