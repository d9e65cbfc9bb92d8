//! Ratios of a policy's runs to a baseline's with bootstrap confidence
//! intervals, paired by block.
//!
//! Why paired: `ab` runs the two arms in adjacent pairs (ABBA order), so
//! slow drifts of the machine (temperature, other load) hit both members
//! of a pair alike. Resampling whole pairs keeps that pairing: each
//! resample draws pairs with replacement and takes the ratio of the
//! policy's mean to the baseline's mean over the drawn pairs. The 95 %
//! interval is the 2.5th and 97.5th percentile of those ratios. The
//! generator is seeded, so the same runs give the same interval.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Resamples per interval: percentiles at 2.5 % and 97.5 % then rest on
/// 250 draws each, and 10,000 ratios (80 kB) are cheap.
pub const RESAMPLES: usize = 10_000;

/// A ratio policy/baseline with its 95 % bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// Σ policy / Σ baseline over every pair (the ratio of the means).
    pub ratio: f64,
    /// 2.5th percentile of the resampled ratios.
    pub low: f64,
    /// 97.5th percentile of the resampled ratios.
    pub high: f64,
}

impl Interval {
    /// Whether the interval leaves out 1: a difference the runs show at
    /// the 95 % level.
    pub fn significant(&self) -> bool {
        !(self.low <= 1.0 && 1.0 <= self.high)
    }
}

/// Why no interval can be given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoInterval {
    /// Fewer than two pairs: one pair has no spread to resample.
    TooFewPairs(usize),
    /// A baseline figure is zero, negative or not finite, so a ratio to
    /// it means nothing.
    BadBaseline,
}

impl std::fmt::Display for NoInterval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoInterval::TooFewPairs(n) => {
                write!(f, "{n} usable pair(s); an interval needs at least 2")
            }
            NoInterval::BadBaseline => {
                f.write_str("a baseline figure is not positive, so no ratio to it")
            }
        }
    }
}

/// The ratio policy/baseline over `pairs` (each `(baseline, policy)`) and
/// its 95 % interval from [`RESAMPLES`] resamples seeded with `seed`.
pub fn ratio_interval(pairs: &[(f64, f64)], seed: u64) -> Result<Interval, NoInterval> {
    if pairs.len() < 2 {
        return Err(NoInterval::TooFewPairs(pairs.len()));
    }
    let usable = |x: f64| x.is_finite() && x >= 0.0;
    if pairs
        .iter()
        .any(|&(b, p)| !(usable(b) && b > 0.0 && usable(p)))
    {
        return Err(NoInterval::BadBaseline);
    }
    let n = pairs.len();
    let (b, p) = pairs
        .iter()
        .fold((0.0, 0.0), |(b, p), &(pb, pp)| (b + pb, p + pp));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ratios: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let (mut b, mut p) = (0.0, 0.0);
            for _ in 0..n {
                let (pb, pp) = pairs[rng.random_range(0..n)];
                b += pb;
                p += pp;
            }
            p / b
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    Ok(Interval {
        ratio: p / b,
        low: percentile(&ratios, 0.025),
        high: percentile(&ratios, 0.975),
    })
}

/// The nearest-rank percentile `q` (0–1) of sorted, non-empty `values`.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs whose policy/baseline ratio scatters around `truth`.
    fn scattered(truth: f64, n: usize) -> Vec<(f64, f64)> {
        (0..n)
            .map(|i| {
                let base = 100.0 + (i % 7) as f64 * 3.0;
                let noise = ((i * 37 % 11) as f64 - 5.0) / 100.0;
                (base, base * truth * (1.0 + noise))
            })
            .collect()
    }

    #[test]
    fn the_interval_holds_the_true_ratio_and_leaves_out_1() {
        let i = ratio_interval(&scattered(0.8, 20), 7).unwrap();
        assert!(i.low < 0.8 && 0.8 < i.high, "{i:?}");
        assert!(i.low <= i.ratio && i.ratio <= i.high, "{i:?}");
        assert!(i.high < 1.0 && i.significant(), "{i:?}");
    }

    #[test]
    fn identical_arms_span_1() {
        let pairs: Vec<(f64, f64)> = scattered(1.0, 12)
            .iter()
            .enumerate()
            // Swap the arms of every other pair: the same runs, no effect.
            .map(|(i, &(b, p))| if i % 2 == 0 { (b, p) } else { (p, b) })
            .collect();
        let i = ratio_interval(&pairs, 1).unwrap();
        assert!(i.low < 1.0 && 1.0 < i.high, "{i:?}");
        assert!(!i.significant());
    }

    #[test]
    fn the_same_seed_gives_the_same_interval() {
        let pairs = scattered(1.1, 9);
        assert_eq!(ratio_interval(&pairs, 3), ratio_interval(&pairs, 3));
        assert_ne!(ratio_interval(&pairs, 3), ratio_interval(&pairs, 4));
    }

    /// Three pairs: every resample's ratio lies between the smallest and
    /// the largest pair's, and each of those is drawn thrice with
    /// probability 1/27 (3.7 % > 2.5 %), so they are the bounds.
    #[test]
    fn three_pairs_give_the_extreme_pairs_as_bounds() {
        let pairs = [(100.0, 80.0), (100.0, 90.0), (100.0, 85.0)];
        let i = ratio_interval(&pairs, 0).unwrap();
        assert_eq!((i.low, i.high), (0.8, 0.9));
        assert!((i.ratio - 0.85).abs() < 1e-12);
    }

    #[test]
    fn too_few_pairs_or_a_zero_baseline_give_no_interval() {
        assert_eq!(
            ratio_interval(&[(1.0, 1.0)], 0),
            Err(NoInterval::TooFewPairs(1))
        );
        assert_eq!(
            ratio_interval(&[(1.0, 1.0), (0.0, 1.0)], 0),
            Err(NoInterval::BadBaseline)
        );
        assert_eq!(
            ratio_interval(&[(1.0, f64::NAN), (1.0, 1.0)], 0),
            Err(NoInterval::BadBaseline)
        );
    }
}
