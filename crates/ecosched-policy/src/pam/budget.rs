//! How long one PAM decision may search (`search_budget_ms`), kept as a
//! deterministic amount of work rather than read from a clock.
//!
//! A policy reads no clock (`docs/design/architecture.md`, "A policy is
//! pure"): the same snapshots must give the same plans on a server, in
//! the simulator and in a replay, whatever else the machine is doing.
//! The budget is therefore spent in modelled time: every cache evaluation
//! (a memo look-up, or the entry into a solve) and every member-iteration
//! of Algorithm 1 costs a fixed number of nanoseconds, measured with
//! `ecosched bench pam` (which prints the modelled time next to the wall
//! time, so an operator can see how far the model is from a machine). A
//! search stops at the first check after the modelled time reaches the
//! budget; where it does, the decision says so.

/// Modelled cost of one cache evaluation (a memo look-up, or the set-up
/// of a solve) and of one Algorithm 1 iteration for one member of a
/// cache, ns, while the search's memo of pair values fits in
/// [`SMALL_MEMO_BYTES`].
///
/// The costs come from `bench pam` on a 2-core EPYC VM (1 MiB of L2
/// cache per core), timed against these figures: at 256 CPUs (a memo of
/// 0.6 MiB, in the L2 cache) about 15 ns per unit, at 1,024 CPUs (9 MiB,
/// most look-ups missing the L2 cache) about 25 ns, and 2 ns per memo
/// entry set up. Below 256 CPUs the search runs faster per unit than
/// either, so there the model errs towards stopping early.
pub const NS_PER_UNIT_SMALL_MEMO: f64 = 15.0;
/// The same with a memo larger than [`SMALL_MEMO_BYTES`].
pub const NS_PER_UNIT_LARGE_MEMO: f64 = 25.0;
/// Memo size up to which the smaller cost applies: the L2 cache of one
/// core of the measuring machine.
pub const SMALL_MEMO_BYTES: usize = 1 << 20;
/// Modelled cost of setting up one entry of the local search's memo of
/// pair values, ns (see [`NS_PER_UNIT_SMALL_MEMO`]).
pub const NS_PER_MEMO_ENTRY: f64 = 2.0;

/// Work spent by one decision, against its budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Work {
    spent_ns: f64,
    limit_ns: f64,
    /// Cost of one evaluation or member-iteration, ns.
    unit_ns: f64,
}

impl Work {
    /// No work yet, `budget_ms` of modelled time allowed.
    pub fn new(budget_ms: f64) -> Self {
        Work {
            spent_ns: 0.0,
            limit_ns: budget_ms * 1e6,
            unit_ns: NS_PER_UNIT_SMALL_MEMO,
        }
    }

    /// One cache evaluation.
    #[inline]
    pub fn evaluation(&mut self) {
        self.spent_ns += self.unit_ns;
    }

    /// One Algorithm 1 solve of `members` slots that ran `iterations`
    /// iterations (at least one counted: the set-up and the final product).
    #[inline]
    pub fn solve(&mut self, members: usize, iterations: usize) {
        self.spent_ns += self.unit_ns * (members * iterations.max(1)) as f64;
    }

    /// Whether the budget is used up.
    #[inline]
    pub fn exhausted(&self) -> bool {
        self.spent_ns >= self.limit_ns
    }

    /// Setting up a memo of `entries` values of `bytes` each; a memo
    /// larger than [`SMALL_MEMO_BYTES`] makes every later unit dearer.
    pub fn memo(&mut self, entries: usize, bytes: usize) {
        self.spent_ns += NS_PER_MEMO_ENTRY * entries as f64;
        if entries * bytes > SMALL_MEMO_BYTES {
            self.unit_ns = NS_PER_UNIT_LARGE_MEMO;
        }
    }

    /// Modelled time spent, ms.
    pub fn spent_ms(&self) -> f64 {
        self.spent_ns / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_adds_up_to_the_budget() {
        let unit = NS_PER_UNIT_SMALL_MEMO;
        let mut w = Work::new(1e-6 * 6.0 * unit);
        w.evaluation();
        w.solve(2, 1);
        assert!(!w.exhausted());
        w.evaluation();
        // A solve that converged at once still costs one iteration.
        w.solve(2, 0);
        assert!(w.exhausted());
        assert!((w.spent_ms() * 1e6 - 6.0 * unit).abs() < 1e-9);
        // A memo past the L2 cache's size: its set-up, and dearer units.
        let mut w = Work::new(1.0);
        w.memo(1 << 20, 9);
        let setup = NS_PER_MEMO_ENTRY * f64::from(1 << 20);
        w.evaluation();
        assert!((w.spent_ms() * 1e6 - setup - NS_PER_UNIT_LARGE_MEMO).abs() < 1e-6);
    }
}
