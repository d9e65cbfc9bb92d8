//! How far the simulator can be trusted, per paper: the
//! validation rows of [`crate::validate`] summed up as rows, predicted
//! rows and worst relative error, so that a reviewer sees at a glance how
//! much of the agreement was set by calibration and how much the model
//! predicted.

use crate::validate::{Check, RowKind};
use serde::Serialize;

/// One paper's rows, summed up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaperSummary {
    /// The paper (a check's source up to its section mark).
    pub paper: String,
    /// Rows from this paper.
    pub rows: usize,
    /// Of which predicted (nothing was set from them).
    pub predicted: usize,
    /// Rows that pass.
    pub passed: usize,
    /// Rows reported as known misses.
    pub known_misses: usize,
    /// Rows that fail and are not known misses.
    pub failed: usize,
    /// The largest relative error among the rows with a paper number
    /// (ordering rows and absolute bounds have none).
    pub worst_rel_error: Option<f64>,
    /// The row with that error.
    pub worst_row: Option<String>,
}

/// The paper a check's source names: the text before its first section
/// mark (`Merkel et al. EuroSys'10 §3.1, Fig. 1` → `Merkel et al. EuroSys'10`).
pub fn paper_of(source: &str) -> &str {
    source.split(" §").next().unwrap_or(source).trim()
}

/// Per-paper summaries in the order the papers first appear, then one
/// `all` line over every row.
pub fn summarize(checks: &[Check]) -> Vec<PaperSummary> {
    let mut papers: Vec<&str> = Vec::new();
    for c in checks {
        let p = paper_of(&c.source);
        if !papers.contains(&p) {
            papers.push(p);
        }
    }
    let mut out: Vec<PaperSummary> = papers
        .iter()
        .map(|p| summary_of(p, checks.iter().filter(|c| paper_of(&c.source) == *p)))
        .collect();
    out.push(summary_of("all", checks.iter()));
    out
}

fn summary_of<'a>(paper: &str, rows: impl Iterator<Item = &'a Check>) -> PaperSummary {
    let mut s = PaperSummary {
        paper: paper.to_string(),
        rows: 0,
        predicted: 0,
        passed: 0,
        known_misses: 0,
        failed: 0,
        worst_rel_error: None,
        worst_row: None,
    };
    for c in rows {
        s.rows += 1;
        if c.kind == RowKind::Predicted {
            s.predicted += 1;
        }
        match (c.pass, c.known_miss) {
            (true, _) => s.passed += 1,
            (false, true) => s.known_misses += 1,
            (false, false) => s.failed += 1,
        }
        if let Some(e) = c.rel_error {
            let worse = match s.worst_rel_error {
                Some(w) => e > w || e.is_nan(),
                None => true,
            };
            if worse {
                s.worst_rel_error = Some(e);
                s.worst_row = Some(c.name.clone());
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn papers_are_cut_at_the_section_mark() {
        assert_eq!(
            paper_of("Merkel et al. EuroSys'10 §3.1, Fig. 1"),
            "Merkel et al. EuroSys'10"
        );
        assert_eq!(
            paper_of("Patel, PhD thesis (UNLV 2012) §9.2.1, Table 4"),
            "Patel, PhD thesis (UNLV 2012)"
        );
        assert_eq!(paper_of("no section"), "no section");
    }

    #[test]
    fn summary_counts_kinds_and_finds_the_worst_row() {
        let checks = [
            Check::new("a", "P §1", 2.0, 2.2, 0.3, ""),
            Check::new("b", "P §2", 1.0, 1.05, 0.1, "").predicted(),
            Check::ordering("c", "Q §1", false, "").known_miss(),
            Check::new("d", "Q §1", 0.0, 0.5, 0.1, ""),
        ];
        let s = summarize(&checks);
        assert_eq!(s.len(), 3);
        assert_eq!(
            (s[0].paper.as_str(), s[0].rows, s[0].predicted),
            ("P", 2, 1)
        );
        assert_eq!(s[0].worst_row.as_deref(), Some("a"));
        assert!((s[0].worst_rel_error.unwrap_or(0.0) - 0.1).abs() < 1e-9);
        // An ordering row and an absolute bound have no relative error.
        assert_eq!((s[1].known_misses, s[1].failed), (1, 1));
        assert_eq!(s[1].worst_rel_error, None);
        assert_eq!((s[2].paper.as_str(), s[2].rows, s[2].passed), ("all", 4, 2));
    }
}

/// One row whose verdict differs between two runs of the rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Flip {
    /// The row's name.
    pub name: String,
    /// Its verdict and figure in the moved run (`true` = passes), or
    /// `None` when the moved run lacks the row.
    pub now: Option<(bool, f64)>,
}

/// As `validate` prints it: `name (now fails: 1.02)`, `name (missing)`.
impl std::fmt::Display for Flip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.now {
            Some((pass, simulated)) => write!(
                f,
                "{} ({}: {simulated})",
                self.name,
                if pass { "now passes" } else { "now fails" }
            ),
            None => write!(f, "{} (missing)", self.name),
        }
    }
}

/// In JSON a flip is the line `validate` prints for it.
impl Serialize for Flip {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Which rows one perturbed parameter flips (pass ↔ fail), each way.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KnobFlips {
    /// The key that was moved ([`ecosched_sim::perturb::Knob::key`]).
    pub knob: String,
    /// Rows whose verdict changed with the parameter lowered.
    pub lowered: Vec<Flip>,
    /// Rows whose verdict changed with the parameter raised.
    pub raised: Vec<Flip>,
}

/// The rows of `moved` whose pass/fail differs from `base` (matched by
/// source and name; a row missing from either counts as flipped).
pub fn flipped(base: &[Check], moved: &[Check]) -> Vec<Flip> {
    let key = |c: &Check| (c.source.clone(), c.name.clone());
    let before: std::collections::BTreeMap<_, bool> =
        base.iter().map(|c| (key(c), c.pass)).collect();
    let mut out: Vec<Flip> = moved
        .iter()
        .filter(|c| before.get(&key(c)) != Some(&c.pass))
        .map(|c| Flip {
            name: c.name.clone(),
            now: Some((c.pass, c.simulated)),
        })
        .collect();
    let after: std::collections::BTreeSet<_> = moved.iter().map(key).collect();
    out.extend(
        base.iter()
            .filter(|c| !after.contains(&key(c)))
            .map(|c| Flip {
                name: c.name.clone(),
                now: None,
            }),
    );
    out
}

/// Re-run `rows` with each calibrated parameter
/// ([`ecosched_sim::perturb::Knob::ALL`]: machine, profile and build
/// parameters) moved by ±`pct` %, and report which rows flip against
/// `base` (the unperturbed run). The passes run side by side, and so do
/// the rows within each ([`crate::parallel`]); `progress` is told how many
/// passes have finished.
pub fn perturb<F>(
    base: &[Check],
    pct: f64,
    rows: F,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<KnobFlips>, crate::EngineError>
where
    F: Fn() -> Result<Vec<Check>, crate::EngineError> + Sync,
{
    use ecosched_sim::perturb::{with_perturbation, Knob};
    let passes: Vec<(Knob, f64)> = Knob::ALL
        .iter()
        .flat_map(|&k| [(k, 1.0 - pct / 100.0), (k, 1.0 + pct / 100.0)])
        .collect();
    let moved = crate::parallel::map_counted(
        &passes,
        |&(knob, factor)| with_perturbation(knob, factor, &rows),
        progress,
    )?;
    Ok(Knob::ALL
        .iter()
        .zip(moved.chunks(2))
        .map(|(knob, pair)| KnobFlips {
            knob: knob.key().to_string(),
            lowered: flipped(base, &pair[0]),
            raised: flipped(base, &pair[1]),
        })
        .collect())
}

/// How far apart the seed sets of two reseeded passes lie: rows that
/// average over seeds 1–36 (Patel) still draw from disjoint sets.
pub const SEED_STRIDE: u64 = 1000;

/// The rows one reseeded pass flips.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeedFlips {
    /// What every run's seed was moved by.
    pub shift: u64,
    /// Rows whose verdict changed.
    pub flipped: Vec<Flip>,
}

/// Re-run `rows` `passes` times, pass k with every simulated run's seed
/// moved by k · [`SEED_STRIDE`], and report which rows flip against
/// `base` (the run on the scenarios' own seeds). A row that flips on some
/// other seed passes or fails by the luck of its seed, not by the model.
/// The passes run side by side, and so do the rows within each
/// ([`crate::parallel`]); `progress` is told how many passes have finished.
pub fn reseed<F>(
    base: &[Check],
    passes: u32,
    rows: F,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<SeedFlips>, crate::EngineError>
where
    F: Fn() -> Result<Vec<Check>, crate::EngineError> + Sync,
{
    let shifts: Vec<u64> = (1..=u64::from(passes)).map(|k| k * SEED_STRIDE).collect();
    let moved = crate::parallel::map_counted(
        &shifts,
        |&shift| crate::experiment::with_seed_shift(shift, &rows),
        progress,
    )?;
    Ok(shifts
        .into_iter()
        .zip(moved)
        .map(|(shift, moved)| SeedFlips {
            shift,
            flipped: flipped(base, &moved),
        })
        .collect())
}

/// Per row that flips on any reseeded pass: its name and on how many of
/// the passes it flipped, most often first.
pub fn seed_fragile_rows(passes: &[SeedFlips]) -> Vec<(String, usize)> {
    let mut count: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for p in passes {
        for r in &p.flipped {
            *count.entry(r.name.clone()).or_default() += 1;
        }
    }
    let mut out: Vec<(String, usize)> = count.into_iter().collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod reseed_tests {
    use super::*;
    use crate::experiment::{simulate, with_seed_shift, SimOptions};
    use ecosched_policy::Params;
    use ecosched_sim::Scenario;

    /// A flip keeps its row's name whole, brackets and all, and prints
    /// (and serialises) as the line `validate` shows.
    #[test]
    fn a_flip_counts_by_its_row_name_and_prints_its_verdict() {
        let name = "Core i7 -j1: high/low (|H| = 1) vs performance (run time ratio)";
        let fails = Flip {
            name: name.to_string(),
            now: Some((false, 1.5)),
        };
        let missing = Flip {
            name: name.to_string(),
            now: None,
        };
        assert_eq!(fails.to_string(), format!("{name} (now fails: 1.5)"));
        assert_eq!(
            serde_json::to_string(&missing).unwrap(),
            format!("\"{name} (missing)\"")
        );
        let passes = [
            SeedFlips {
                shift: SEED_STRIDE,
                flipped: vec![fails],
            },
            SeedFlips {
                shift: 2 * SEED_STRIDE,
                flipped: vec![missing],
            },
        ];
        assert_eq!(seed_fragile_rows(&passes), vec![(name.to_string(), 2)]);
    }

    /// A row that holds only on the scenario's own seed.
    fn seed_row() -> Result<Vec<Check>, crate::EngineError> {
        let s = Scenario::load("merkel-1-aluadd")?;
        let run = simulate(
            &s,
            "performance",
            &Params::default(),
            &SimOptions::default(),
            &mut |_| {},
        )?;
        Ok(vec![Check::ordering(
            "runs on the scenario's seed",
            "test",
            run.report.seed == s.spec.seed,
            "",
        )])
    }

    #[test]
    fn a_shift_moves_every_seed_and_ends_with_its_scope() {
        let s = Scenario::load("merkel-1-aluadd").unwrap();
        let seed = |o: &SimOptions| {
            simulate(&s, "performance", &Params::default(), o, &mut |_| {})
                .unwrap()
                .report
                .seed
        };
        let explicit = SimOptions::seeded(Some(7));
        let (own, given) =
            with_seed_shift(3000, || (seed(&SimOptions::default()), seed(&explicit)));
        assert_eq!((own, given), (s.spec.seed + 3000, 7 + 3000));
        assert_eq!(seed(&SimOptions::default()), s.spec.seed);
    }

    #[test]
    fn reseeding_reports_a_row_that_holds_only_on_its_own_seed() {
        let base = seed_row().unwrap();
        assert!(base[0].pass);
        let told = std::sync::Mutex::new(Vec::new());
        let passes = reseed(&base, 2, seed_row, &|done, of| {
            told.lock().unwrap().push((done, of))
        })
        .unwrap();
        assert_eq!(told.into_inner().unwrap(), vec![(1, 2), (2, 2)]);
        let shifts: Vec<u64> = passes.iter().map(|p| p.shift).collect();
        assert_eq!(shifts, vec![SEED_STRIDE, 2 * SEED_STRIDE]);
        assert!(passes.iter().all(|p| p.flipped.len() == 1), "{passes:?}");
        assert_eq!(
            seed_fragile_rows(&passes),
            vec![("runs on the scenario's seed".to_string(), 2)]
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod perturb_tests {
    use super::*;
    use crate::validate::merkel::measurements::fig1 as merkel_fig1;
    use ecosched_sim::perturb::{with_perturbation, Knob};
    use ecosched_sim::Observe;

    /// The mechanism on one row: Fig. 1's four streams run 3.9× slower
    /// than one because the front-side bus saturates, so that row must
    /// move with the bus's bandwidth; and a knob that cannot matter to it
    /// (the board's base power) must leave every Fig. 1 verdict alone.
    #[test]
    fn bandwidth_moves_the_bus_row_and_base_power_flips_nothing() {
        let base = merkel_fig1(Observe::Linux).unwrap();
        let stream = |rows: &[Check]| {
            rows.iter()
                .find(|c| c.name.starts_with("stream: 4 instances"))
                .map(|c| c.simulated)
                .unwrap()
        };
        let wide =
            with_perturbation(Knob::MemBandwidth, 1.3, || merkel_fig1(Observe::Linux)).unwrap();
        assert!(
            stream(&wide) < stream(&base) - 0.3,
            "{} vs {}",
            stream(&wide),
            stream(&base)
        );
        assert!(flipped(&base, &wide)
            .iter()
            .any(|r| r.name.starts_with("stream: 4 instances")));
        let flips = perturb(&base, 10.0, || merkel_fig1(Observe::Linux), &|_, _| {}).unwrap();
        let base_w = flips.iter().find(|k| k.knob == "power.base_w").unwrap();
        assert!(
            base_w.lowered.is_empty() && base_w.raised.is_empty(),
            "{base_w:?}"
        );
    }
}
