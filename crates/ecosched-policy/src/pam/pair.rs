//! Algorithm 1 for a cache that holds two slots (or one): the case the
//! local search meets hundreds of thousands of times on machines of
//! two-CPU caches. The arithmetic is [`solve_cache_with`]'s, operation for
//! operation and in the same order, on values kept in registers instead of
//! working vectors: the results are the same to the bit, so which of the
//! two a search calls never changes its choice.
//!
//! [`solve_cache_with`]: super::model::solve_cache_with

use super::model::{
    fetches, CacheSummary, CpiModel, SlotObs, MAX_ITERATIONS, MIN_CPI_FRACTION, OCCUPANCY_TOLERANCE,
};

/// One member's part of an iteration: eqs. 12, 15 and 17 at occupancy
/// `o`; returns (m2, CPI, lines in).
#[inline(always)]
fn step(s: &SlotObs, o: f64, model: &CpiModel) -> (f64, f64, f64) {
    let ratio = s.occupancy / o.max(1e-9);
    let scale = if s.alpha == 0.5 {
        ratio.sqrt()
    } else {
        ratio.powf(s.alpha)
    };
    let m2 = (s.m2 * scale).min(1.0);
    let predicted = s.cpi + model.t3 * s.m1 * (m2 - s.m2);
    let cpi = predicted.max(MIN_CPI_FRACTION * s.cpi);
    let lines = s.lines_per_s * (m2 / s.m2) * (s.cpi / cpi);
    (m2, cpi, lines)
}

/// Algorithm 1 for the slots `a` and `b` together in one cache, or `a`
/// alone when `b` is `None`.
pub fn solve_pair(a: &SlotObs, b: Option<&SlotObs>, model: &CpiModel) -> CacheSummary {
    let mut pair = PairSolve::new(a, b);
    while pair.running() {
        pair.iterate(model);
    }
    pair.summary()
}

/// Algorithm 1 for up to four pairs at once, each one's iterations
/// interleaved with the others': the same operations per pair as
/// [`solve_pair`] (so the same results), but four independent chains of
/// divisions and square roots for the processor to overlap.
pub fn solve_pairs<const K: usize>(
    pairs: [(&SlotObs, Option<&SlotObs>); K],
    model: &CpiModel,
) -> [CacheSummary; K] {
    let mut solves = pairs.map(|(a, b)| PairSolve::new(a, b));
    loop {
        let mut any = false;
        for s in solves.iter_mut() {
            if s.running() {
                s.iterate(model);
                any = true;
            }
        }
        if !any {
            break;
        }
    }
    solves.map(|s| s.summary())
}

/// One pair's Algorithm 1 in progress.
struct PairSolve<'s> {
    a: &'s SlotObs,
    b: Option<&'s SlotObs>,
    active_a: bool,
    active_b: bool,
    o_a: f64,
    o_b: f64,
    cpi_a: f64,
    cpi_b: f64,
    iterations: usize,
    converged: bool,
}

impl<'s> PairSolve<'s> {
    fn new(a: &'s SlotObs, b: Option<&'s SlotObs>) -> Self {
        let active_a = fetches(a);
        let active_b = b.is_some_and(fetches);
        // The measured shares of the active members, renormalised (the
        // general solve sums from -0.0, which adds nothing to these).
        let measured = match (active_a, b) {
            (true, Some(b)) if active_b => a.occupancy + b.occupancy,
            (true, _) => a.occupancy,
            (false, Some(b)) if active_b => b.occupancy,
            _ => 0.0,
        };
        PairSolve {
            a,
            b,
            active_a,
            active_b,
            o_a: if active_a {
                a.occupancy / measured
            } else {
                0.0
            },
            o_b: match b {
                Some(b) if active_b => b.occupancy / measured,
                _ => 0.0,
            },
            cpi_a: a.cpi,
            cpi_b: b.map_or(0.0, |b| b.cpi),
            iterations: 0,
            converged: !(active_a || active_b),
        }
    }

    #[inline(always)]
    fn running(&self) -> bool {
        !self.converged && self.iterations < MAX_ITERATIONS
    }

    #[inline(always)]
    fn iterate(&mut self, model: &CpiModel) {
        self.iterations += 1;
        let (mut lines_a, mut lines_b) = (0.0, 0.0);
        if self.active_a {
            (_, self.cpi_a, lines_a) = step(self.a, self.o_a, model);
        }
        if let (Some(b), true) = (self.b, self.active_b) {
            (_, self.cpi_b, lines_b) = step(b, self.o_b, model);
        }
        let total = match self.b {
            Some(_) => lines_a + lines_b,
            None => lines_a,
        };
        let mut norm = 0.0;
        if self.active_a {
            let next = lines_a / total;
            norm += (next - self.o_a) * (next - self.o_a);
            self.o_a = next;
        }
        if self.active_b {
            let next = lines_b / total;
            norm += (next - self.o_b) * (next - self.o_b);
            self.o_b = next;
        }
        self.converged = f64::sqrt(norm) <= OCCUPANCY_TOLERANCE;
    }

    fn summary(&self) -> CacheSummary {
        let x_a = self.a.cpi / self.cpi_a;
        let mut product = 1.0 * x_a;
        let mut min_speedup = f64::INFINITY.min(x_a);
        if let Some(b) = self.b {
            let x_b = b.cpi / self.cpi_b;
            product *= x_b;
            min_speedup = min_speedup.min(x_b);
        }
        CacheSummary {
            log_speedup: product.ln(),
            min_speedup,
            iterations: self.iterations,
            converged: self.converged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::{occupancies, solve_cache_with, CacheScratch};
    use super::*;
    use proptest::prelude::*;

    fn slot() -> impl Strategy<Value = SlotObs> {
        (
            prop_oneof![Just(0.0), 0.0f64..1e8],
            0.0f64..0.2,
            prop_oneof![Just(0.0), 0.0f64..1.0, Just(1.0)],
            0.3f64..5.0,
            prop_oneof![Just(0.5), 0.0f64..1.5],
        )
            .prop_map(|(lines_per_s, m1, m2, cpi, alpha)| SlotObs {
                lines_per_s,
                occupancy: 0.0,
                m1,
                m2,
                cpi,
                alpha,
            })
    }

    proptest! {
        /// Same inputs, same bits: the pair solve is the general one.
        #[test]
        fn pair_solve_is_the_general_solve_to_the_bit(
            a in slot(), b in slot(), split in any::<bool>(), alone in any::<bool>(),
            model in prop_oneof![Just(CpiModel::PAPER), Just(CpiModel { t1: 0.5, t2: 2.0, t3: 400.0 })],
        ) {
            // Measured where they sat: together, or in two caches.
            let mut measured = [a, b];
            occupancies(&mut measured, if split { &[0, 1] } else { &[0, 0] });
            let [a, b] = measured;
            let mut scratch = CacheScratch::default();
            let (fast, general) = if alone {
                (solve_pair(&a, None, &model), solve_cache_with(&[&a], &model, &mut scratch))
            } else {
                (solve_pair(&a, Some(&b), &model), solve_cache_with(&[&a, &b], &model, &mut scratch))
            };
            prop_assert_eq!(fast.log_speedup.to_bits(), general.log_speedup.to_bits());
            prop_assert_eq!(fast.min_speedup.to_bits(), general.min_speedup.to_bits());
            prop_assert_eq!(fast.iterations, general.iterations);
            prop_assert_eq!(fast.converged, general.converged);
            // Interleaved with other pairs, the same again.
            let batch = solve_pairs([(&b, None), (&a, Some(&b)), (&b, Some(&a)), (&a, None)], &model);
            let alone_a = solve_pair(&a, None, &model);
            prop_assert_eq!(batch[3], alone_a);
            prop_assert_eq!(batch[0], solve_pair(&b, None, &model));
            if !alone {
                prop_assert_eq!(batch[1], fast);
            }
            prop_assert_eq!(batch[1].log_speedup.to_bits(), batch[2].log_speedup.to_bits());
        }
    }
}
