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
/// of a solve), ns.
///
/// The costs come from `bench pam` on a 2-core EPYC VM, timed against
/// these figures: at 1,024 CPUs (a 9 MiB memo, most look-ups missing the
/// L2 cache) 25 ns per evaluation and per member-iteration and 2 ns per
/// memo entry set up make the modelled time the wall time. Smaller
/// instances run faster per unit (their memo stays in the L2 cache), so
/// there the model errs towards stopping early.
pub const NS_PER_EVALUATION: f64 = 25.0;
/// Modelled cost of one Algorithm 1 iteration for one member of a cache,
/// ns (see [`NS_PER_EVALUATION`]).
pub const NS_PER_MEMBER_ITERATION: f64 = 25.0;
/// Modelled cost of setting up one entry of the local search's memo of
/// pair values, ns (see [`NS_PER_EVALUATION`]).
pub const NS_PER_MEMO_ENTRY: f64 = 2.0;

/// Work spent by one decision, against its budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Work {
    spent_ns: f64,
    limit_ns: f64,
}

impl Work {
    /// No work yet, `budget_ms` of modelled time allowed.
    pub fn new(budget_ms: f64) -> Self {
        Work {
            spent_ns: 0.0,
            limit_ns: budget_ms * 1e6,
        }
    }

    /// One cache evaluation.
    #[inline]
    pub fn evaluation(&mut self) {
        self.spent_ns += NS_PER_EVALUATION;
    }

    /// One Algorithm 1 solve of `members` slots that ran `iterations`
    /// iterations (at least one counted: the set-up and the final product).
    #[inline]
    pub fn solve(&mut self, members: usize, iterations: usize) {
        self.spent_ns += NS_PER_MEMBER_ITERATION * (members * iterations.max(1)) as f64;
    }

    /// Whether the budget is used up.
    #[inline]
    pub fn exhausted(&self) -> bool {
        self.spent_ns >= self.limit_ns
    }

    /// Setting up a memo of `entries` values.
    pub fn memo(&mut self, entries: usize) {
        self.spent_ns += NS_PER_MEMO_ENTRY * entries as f64;
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
        let mut w = Work::new(1e-6 * (2.0 * NS_PER_EVALUATION + 4.0 * NS_PER_MEMBER_ITERATION));
        w.evaluation();
        w.solve(2, 1);
        assert!(!w.exhausted());
        w.evaluation();
        // A solve that converged at once still costs one iteration.
        w.solve(2, 0);
        assert!(w.exhausted());
        assert!(
            (w.spent_ms() * 1e6 - 2.0 * NS_PER_EVALUATION - 4.0 * NS_PER_MEMBER_ITERATION).abs()
                < 1e-9
        );
    }
}
