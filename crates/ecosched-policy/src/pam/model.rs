//! PAM's algebraic shared-cache model (Banikazemi, Poff and Abali, SC '08,
//! §IV-B, §IV-C): from what the counters say about each CPU now, predict how
//! fast each one would run if the processes were re-shuffled among the
//! caches.
//!
//! ```text
//!  measured per slot (a CPU, or the group of tasks time-sharing it):
//!    L^h  lines brought into the shared cache        (eq. 5)
//!    O^h  = L^h ./ (C L^h)   occupancy of its cache  (eqs. 6–7)
//!    m1^h = L1D misses / L1D refs,  m2^h = LLC misses / LLC refs   (eq. 8)
//!    CPI^h = cycles / instructions                    (eq. 9)
//!
//!  Algorithm 1, per cache of a candidate assignment, from O = O^h ./ ΣO^h:
//!    m2  = m2^h · (O^h / O)^α                         (eqs. 11–12)
//!    CPI = t1 + t2·m1 + t3·m1·m2  (+ the slot's offset, see below)  (eqs. 13–15)
//!    L   = L^h · (m2 / m2^h) · (CPI^h / CPI)          (eqs. 16–17)
//!    O'  = L ./ (C L);  repeat until ‖O' − O‖ ≤ 0.001
//!  speedup = geometric mean of CPI^h / CPI             (eq. 1)
//! ```
//!
//! Occupancies are normalised within one cache, so the fixed point of one
//! cache never depends on another: the solve runs cache by cache, which is
//! what lets the search re-evaluate a swap by re-solving two caches only.
//!
//! **Offset (`docs/design/papers.md`, "PAM"):** the paper hard-codes one
//! CPI fit (eq. 14) for every benchmark. Used raw, the model then predicts a
//! change even for the identity assignment whenever a process does not sit
//! exactly on the fitted plane, and Algorithm 2 compares candidates with the
//! identity's speedup of exactly 1. Each slot therefore keeps its measured
//! CPI minus the model's CPI at its measured miss ratios as a constant
//! offset: the identity predicts exactly its measured CPI, and a candidate
//! moves the prediction only through the change in `m2` (by `t3·m1·Δm2`).
//!
//! The simulator's own cache fixed point (`ecosched-sim` `contention.rs`)
//! has the same shape but knows the true miss curves; this one knows only
//! counters and the power-law hypothesis, as the paper's does.

use std::collections::VecDeque;

/// Algorithm 1's convergence tolerance on occupancies (the paper's 0.001).
pub const OCCUPANCY_TOLERANCE: f64 = 0.001;
/// Iteration cap for Algorithm 1; the paper observes 5–6 iterations.
pub const MAX_ITERATIONS: usize = 50;
/// The paper's miss-ratio exponent: the "cache rule of thumb" (§IV-C).
pub const DEFAULT_ALPHA: f64 = 0.5;
/// Smallest CPI a prediction may reach, as a fraction of the measured CPI:
/// keeps a wildly wrong model (or fit) from dividing by zero or going
/// negative.
pub(super) const MIN_CPI_FRACTION: f64 = 0.05;

/// The CPI model `CPI = t1 + t2·m1 + t3·m1·m2` (eq. 13).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpiModel {
    /// CPI with an infinite L1 (m1 = 0).
    pub t1: f64,
    /// Cost of L1 misses that hit the shared cache.
    pub t2: f64,
    /// Cost of shared-cache misses (memory accesses).
    pub t3: f64,
}

impl CpiModel {
    /// The paper's fit on the Xeon E5345 from bzip2 and libquantum (eq. 14).
    pub const PAPER: CpiModel = CpiModel {
        t1: 0.733,
        t2: 3.43,
        t3: 110.0,
    };

    /// CPI predicted at miss ratios `m1`, `m2`.
    pub fn cpi(&self, m1: f64, m2: f64) -> f64 {
        self.t1 + self.t2 * m1 + self.t3 * m1 * m2
    }
}

impl Default for CpiModel {
    fn default() -> Self {
        CpiModel::PAPER
    }
}

/// What the counters say about one slot over the last interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlotObs {
    /// Lines brought into the shared cache per second (eq. 5).
    pub lines_per_s: f64,
    /// Occupancy of its current cache (eq. 6); filled by
    /// [`occupancies`] from the slots sharing the cache.
    pub occupancy: f64,
    /// L1D miss ratio.
    pub m1: f64,
    /// Shared-cache miss ratio.
    pub m2: f64,
    /// Cycles per instruction.
    pub cpi: f64,
    /// Miss-ratio sensitivity to occupancy (eq. 11's α).
    pub alpha: f64,
}

/// Fill in each slot's measured occupancy `O^h = L ./ (C L)` (eq. 7);
/// `cache_of[i]` is slot `i`'s current cache.
pub fn occupancies(slots: &mut [SlotObs], cache_of: &[usize]) {
    let caches = cache_of.iter().copied().max().map_or(0, |c| c + 1);
    let mut total = vec![0.0; caches];
    for (s, &c) in slots.iter().zip(cache_of) {
        total[c] += s.lines_per_s;
    }
    for (s, &c) in slots.iter_mut().zip(cache_of) {
        s.occupancy = if total[c] > 0.0 {
            s.lines_per_s / total[c]
        } else {
            0.0
        };
    }
}

/// Algorithm 1's result for the slots sharing one cache.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheSolution {
    /// Predicted occupancy per member.
    pub occupancy: Vec<f64>,
    /// Predicted shared-cache miss ratio per member.
    pub m2: Vec<f64>,
    /// Predicted CPI per member.
    pub cpi: Vec<f64>,
    /// Σ ln(CPI^h / CPI) over the members (the cache's part of eq. 1).
    pub log_speedup: f64,
    /// Lowest CPI^h / CPI among the members (for `max_degradation`).
    pub min_speedup: f64,
    /// Iterations used.
    pub iterations: usize,
    /// Whether ‖O' − O‖ fell to the tolerance within the cap.
    pub converged: bool,
}

/// Whether a slot takes part in the occupancy iteration: a slot that brings
/// no lines in (pure computation, or an idle CPU) keeps O = 0 and its CPI.
pub(super) fn fetches(s: &SlotObs) -> bool {
    s.lines_per_s > 0.0 && s.m2 > 0.0 && s.occupancy > 0.0
}

/// Algorithm 1 for the slots `members` placed together in one cache.
pub fn solve_cache(members: &[&SlotObs], model: &CpiModel) -> CacheSolution {
    let mut scratch = CacheScratch::default();
    let summary = solve_cache_with(members, model, &mut scratch);
    CacheSolution {
        occupancy: scratch.o,
        m2: scratch.m2,
        cpi: scratch.cpi,
        log_speedup: summary.log_speedup,
        min_speedup: summary.min_speedup,
        iterations: summary.iterations,
        converged: summary.converged,
    }
}

/// Working vectors of [`solve_cache_with`], reused across calls so that a
/// search evaluating hundreds of thousands of caches does not allocate.
#[derive(Debug, Clone, Default)]
pub struct CacheScratch {
    active: Vec<bool>,
    o: Vec<f64>,
    m2: Vec<f64>,
    cpi: Vec<f64>,
    lines: Vec<f64>,
}

/// The figures of a cache solve a search needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheSummary {
    /// Σ ln(CPI^h / CPI) over the members.
    pub log_speedup: f64,
    /// Lowest CPI^h / CPI among the members.
    pub min_speedup: f64,
    /// Iterations used.
    pub iterations: usize,
    /// Whether the iteration converged.
    pub converged: bool,
}

/// Algorithm 1 into reusable buffers; the per-member results are left in
/// `scratch` (occupancy, m2, CPI).
pub fn solve_cache_with(
    members: &[&SlotObs],
    model: &CpiModel,
    scratch: &mut CacheScratch,
) -> CacheSummary {
    let k = members.len();
    let CacheScratch {
        active,
        o,
        m2,
        cpi,
        lines,
    } = scratch;
    active.clear();
    active.extend(members.iter().map(|s| fetches(s)));
    // Start from the measured occupancies renormalised over the new
    // company. The paper allows any start ("for example 1/n"); this one
    // makes the identity reproduce its measurement exactly and, where the
    // equations have several fixed points, finds the one nearest the
    // present rather than an arbitrary one.
    let measured: f64 = members
        .iter()
        .zip(active.iter())
        .filter(|(_, a)| **a)
        .map(|(s, _)| s.occupancy)
        .sum();
    o.clear();
    o.extend(
        members
            .iter()
            .zip(active.iter())
            .map(|(s, &a)| if a { s.occupancy / measured } else { 0.0 }),
    );
    m2.clear();
    m2.extend(members.iter().map(|s| s.m2));
    cpi.clear();
    cpi.extend(members.iter().map(|s| s.cpi));
    lines.clear();
    lines.resize(k, 0.0);
    let mut iterations = 0;
    let mut converged = !active.iter().any(|a| *a);
    while !converged && iterations < MAX_ITERATIONS {
        iterations += 1;
        for (i, s) in members.iter().enumerate() {
            if !active[i] {
                continue;
            }
            // eq. 12: miss ratio from occupancy (a ratio, so capped at 1).
            let ratio = s.occupancy / o[i].max(1e-9);
            let scale = if s.alpha == 0.5 {
                ratio.sqrt()
            } else {
                ratio.powf(s.alpha)
            };
            m2[i] = (s.m2 * scale).min(1.0);
            // eq. 15 with the slot's offset: only the change in m2 counts.
            let predicted = s.cpi + model.t3 * s.m1 * (m2[i] - s.m2);
            cpi[i] = predicted.max(MIN_CPI_FRACTION * s.cpi);
            // eq. 17: fewer misses and a faster CPU both change the fetch rate.
            lines[i] = s.lines_per_s * (m2[i] / s.m2) * (s.cpi / cpi[i]);
        }
        let total: f64 = lines.iter().sum();
        let mut norm = 0.0;
        for i in 0..k {
            if active[i] {
                let next = lines[i] / total;
                norm += (next - o[i]) * (next - o[i]);
                o[i] = next;
            }
        }
        converged = norm.sqrt() <= OCCUPANCY_TOLERANCE;
    }
    let mut product = 1.0;
    let mut min_speedup = f64::INFINITY;
    for (s, c) in members.iter().zip(cpi.iter()) {
        let x = s.cpi / c;
        product *= x;
        min_speedup = min_speedup.min(x);
    }
    // One logarithm per cache: the search evaluates hundreds of thousands.
    let log_speedup = product.ln();
    CacheSummary {
        log_speedup,
        min_speedup,
        iterations,
        converged,
    }
}

/// One sample for the online CPI fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpiSample {
    /// L1D miss ratio.
    pub m1: f64,
    /// Shared-cache miss ratio.
    pub m2: f64,
    /// Measured CPI.
    pub cpi: f64,
}

/// Online least-squares fit of `t1..t3` over the most recent samples
/// (§IV-C: "an on-line solution of the t constants would be more usable
/// than eq. 14 in general as it will work for any hardware").
#[derive(Debug, Clone)]
pub struct CpiFit {
    window: usize,
    samples: VecDeque<CpiSample>,
}

/// Samples below which no fit is attempted (three unknowns; the paper says
/// "at least three sets", we ask for a few more to average out noise).
pub const MIN_FIT_SAMPLES: usize = 6;
/// Smallest relative pivot accepted when solving the normal equations:
/// samples that all lie on one line (one process, one state) cannot fix
/// three constants.
const MIN_PIVOT: f64 = 1e-9;

impl CpiFit {
    /// A fit over the last `window` samples.
    pub fn new(window: usize) -> Self {
        CpiFit {
            window: window.max(MIN_FIT_SAMPLES),
            samples: VecDeque::new(),
        }
    }

    /// Record one sample (the oldest drops out past the window).
    pub fn push(&mut self, s: CpiSample) {
        if !(s.m1.is_finite() && s.m2.is_finite() && s.cpi.is_finite() && s.cpi > 0.0) {
            return;
        }
        if self.samples.len() == self.window {
            self.samples.pop_front();
        }
        self.samples.push_back(s);
    }

    /// Samples held.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether no samples are held.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The least-squares `t1..t3`, or `None` when the samples cannot fix
    /// them (too few, degenerate, or a non-physical negative memory cost).
    pub fn solve(&self) -> Option<CpiModel> {
        if self.samples.len() < MIN_FIT_SAMPLES {
            return None;
        }
        // Normal equations (XᵀX) t = Xᵀy with rows x = [1, m1, m1·m2].
        let mut a = [[0.0f64; 4]; 3];
        for s in &self.samples {
            let x = [1.0, s.m1, s.m1 * s.m2];
            for r in 0..3 {
                for c in 0..3 {
                    a[r][c] += x[r] * x[c];
                }
                a[r][3] += x[r] * s.cpi;
            }
        }
        let scale = a[0][0].abs().max(1e-300);
        // Gaussian elimination with partial pivoting.
        for col in 0..3 {
            let pivot = (col..3).max_by(|&p, &q| a[p][col].abs().total_cmp(&a[q][col].abs()))?;
            if a[pivot][col].abs() / scale < MIN_PIVOT {
                return None;
            }
            a.swap(col, pivot);
            let pivot_row = a[col];
            for (r, row) in a.iter_mut().enumerate() {
                if r != col {
                    let f = row[col] / pivot_row[col];
                    for (x, p) in row.iter_mut().zip(pivot_row.iter()).skip(col) {
                        *x -= f * p;
                    }
                }
            }
        }
        let t = [a[0][3] / a[0][0], a[1][3] / a[1][1], a[2][3] / a[2][2]];
        let model = CpiModel {
            t1: t[0],
            t2: t[1],
            t3: t[2],
        };
        (t.iter().all(|v| v.is_finite()) && model.t3 > 0.0).then_some(model)
    }
}

/// Per-task online estimate of α from two samples at different occupancies
/// (§IV-C: "recording two sets of m2 and O values in two previous
/// scheduling cycles and substituting them in Eq. 11 would yield an α").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlphaFit {
    last: Option<(f64, f64)>,
    /// Current estimate.
    pub alpha: f64,
}

/// Relative occupancy change below which two samples say nothing about α.
const ALPHA_MIN_LOG_CHANGE: f64 = 0.1;
/// Range an estimate is clamped to: 0 (insensitive) to 3 (a cyclic working
/// set that thrashes LRU).
const ALPHA_RANGE: (f64, f64) = (0.0, 3.0);
/// Weight of a new estimate against the running one.
const ALPHA_SMOOTHING: f64 = 0.5;

impl AlphaFit {
    /// Start from `alpha`.
    pub fn new(alpha: f64) -> Self {
        AlphaFit { last: None, alpha }
    }

    /// Record a measured (occupancy, m2) pair; updates the estimate when
    /// the occupancy moved enough since the previous pair.
    pub fn push(&mut self, occupancy: f64, m2: f64) {
        if !(occupancy > 0.0 && m2 > 0.0 && occupancy.is_finite() && m2.is_finite()) {
            return;
        }
        if let Some((o0, m0)) = self.last {
            let d = (occupancy / o0).ln();
            if d.abs() >= ALPHA_MIN_LOG_CHANGE {
                let estimate = ((m0 / m2).ln() / d).clamp(ALPHA_RANGE.0, ALPHA_RANGE.1);
                self.alpha += ALPHA_SMOOTHING * (estimate - self.alpha);
            } else {
                return;
            }
        }
        self.last = Some((occupancy, m2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(lines: f64, m1: f64, m2: f64, cpi: f64) -> SlotObs {
        SlotObs {
            lines_per_s: lines,
            occupancy: 0.0,
            m1,
            m2,
            cpi,
            alpha: DEFAULT_ALPHA,
        }
    }

    #[test]
    fn occupancy_is_share_of_lines_within_each_cache() {
        let mut s = vec![
            slot(15.0, 0.03, 0.3, 1.0),
            slot(85.0, 0.02, 0.95, 3.0),
            slot(10.0, 0.03, 0.1, 1.0),
            slot(0.0, 0.0, 0.0, 0.5),
        ];
        occupancies(&mut s, &[0, 0, 1, 1]);
        assert!((s[0].occupancy - 0.15).abs() < 1e-12);
        assert!((s[1].occupancy - 0.85).abs() < 1e-12);
        assert_eq!(s[2].occupancy, 1.0);
        assert_eq!(s[3].occupancy, 0.0);
    }

    #[test]
    fn unchanged_company_predicts_the_measurement() {
        // The identity: the same two slots together again.
        let mut s = vec![slot(15.0, 0.03, 0.3, 1.2), slot(85.0, 0.02, 0.95, 2.9)];
        occupancies(&mut s, &[0, 0]);
        let sol = solve_cache(&[&s[0], &s[1]], &CpiModel::PAPER);
        assert!(sol.converged, "{sol:?}");
        assert!(sol.log_speedup.abs() < 1e-3, "{sol:?}");
        assert!((sol.occupancy[0] - 0.15).abs() < 2e-3, "{sol:?}");
    }

    #[test]
    fn a_squeezed_process_gains_when_alone_and_the_gain_follows_eq_11() {
        let mut s = vec![slot(15.0, 0.03, 0.3, 1.2), slot(85.0, 0.02, 0.95, 2.9)];
        occupancies(&mut s, &[0, 0]);
        let alone = solve_cache(&[&s[0]], &CpiModel::PAPER);
        assert_eq!(alone.occupancy, vec![1.0]);
        let m2 = 0.3 * (0.15f64 / 1.0).sqrt();
        assert!((alone.m2[0] - m2).abs() < 1e-12);
        let cpi = 1.2 + 110.0 * 0.03 * (m2 - 0.3);
        assert!((alone.cpi[0] - cpi).abs() < 1e-12);
        assert!(alone.log_speedup > 0.0);
    }

    #[test]
    fn two_equal_streams_split_the_cache() {
        let s = slot(50.0, 0.02, 0.9, 2.0);
        let mut both = vec![s, s];
        occupancies(&mut both, &[0, 1]);
        let sol = solve_cache(&[&both[0], &both[1]], &CpiModel::PAPER);
        assert!(sol.converged);
        assert!((sol.occupancy[0] - 0.5).abs() < 1e-9);
        // Each had the cache alone: sharing it raises m2 by √2, capped at 1.
        assert!((sol.m2[0] - 1.0).abs() < 1e-12);
        assert!(sol.min_speedup < 1.0);
    }

    #[test]
    fn wrong_model_cannot_produce_a_non_positive_cpi() {
        let mut s = vec![slot(15.0, 0.03, 0.3, 1.2), slot(85.0, 0.02, 0.95, 2.9)];
        occupancies(&mut s, &[0, 0]);
        let wrong = CpiModel {
            t1: 0.0,
            t2: 0.0,
            t3: -1e6,
        };
        let sol = solve_cache(&[&s[0]], &wrong);
        assert!(sol.cpi.iter().all(|c| *c > 0.0), "{sol:?}");
    }

    #[test]
    fn least_squares_recovers_the_constants() {
        let truth = CpiModel::PAPER;
        let mut fit = CpiFit::new(32);
        assert!(fit.solve().is_none());
        for i in 0..20 {
            let m1 = 0.01 + 0.003 * (i % 7) as f64;
            let m2 = 0.1 + 0.04 * (i % 5) as f64;
            fit.push(CpiSample {
                m1,
                m2,
                cpi: truth.cpi(m1, m2),
            });
        }
        let got = fit.solve().unwrap();
        assert!((got.t1 - truth.t1).abs() < 1e-6, "{got:?}");
        assert!((got.t2 - truth.t2).abs() < 1e-4, "{got:?}");
        assert!((got.t3 - truth.t3).abs() < 1e-3, "{got:?}");
    }

    #[test]
    fn degenerate_samples_give_no_fit() {
        let mut fit = CpiFit::new(16);
        for _ in 0..10 {
            fit.push(CpiSample {
                m1: 0.02,
                m2: 0.5,
                cpi: 1.5,
            });
        }
        assert_eq!(fit.len(), 10);
        assert!(fit.solve().is_none());
    }

    #[test]
    fn alpha_from_two_occupancies() {
        let mut a = AlphaFit::new(0.5);
        a.push(0.5, 0.2);
        a.push(0.52, 0.19); // too close: ignored
        assert_eq!(a.alpha, 0.5);
        // m2 ∝ O^−1.2
        a.push(0.25, 0.2 * 2f64.powf(1.2));
        assert!((a.alpha - (0.5 + 0.5 * (1.2 - 0.5))).abs() < 1e-9, "{a:?}");
    }
}
