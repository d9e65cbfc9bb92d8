//! One descent of PAM's local search (`docs/design/papers.md`, "PAM", on
//! the search): from a starting assignment of slots to caches, exchange
//! slots between pairs of caches while an exchange raises the total value,
//! until none does — a local optimum — or the decision's budget runs out.
//!
//! ```text
//!   repeat until a sweep changes nothing:
//!     for every pair of caches (a, b) in order, unless neither changed
//!     since the pair was last found settled:
//!       try each exchange of a member of a (or a free CPU) with one of b
//!       (or a free CPU); keep the first that raises value(a) + value(b);
//!       try again from the start until none does
//!   value(cache) = Σ ln speedup of its members (Algorithm 1 on that cache
//!                  alone), less a penalty below the floor
//! ```
//!
//! Incremental: the model's occupancies are normalised within one cache
//! (`model`), so an exchange changes the value of the two caches it touches
//! and no other, and costs two cache evaluations. Caches of one or two
//! slots — every cache of a machine of two-CPU caches — are solved once
//! per pair of slots and remembered for the whole decision ([`Shared`]);
//! for those, a pair of caches found settled is not tried again until one
//! of them changes (trying it again could only repeat the same look-ups
//! with the same answer).
//!
//! The work is counted against the decision's budget (`budget`); when it
//! runs out the descent stops where it is: every exchange it kept was an
//! improvement, so what it holds is still better than where it started.

use super::budget::Work;
use super::model::{solve_cache_with, CacheScratch, CacheSummary, CpiModel, SlotObs};
use super::pair::{solve_pair, solve_pairs};
use std::collections::HashMap;

/// Penalty per unit of shortfall below the floor, in log-speedup units:
/// large enough that no feasible gain outweighs it.
const FLOOR_PENALTY: f64 = 1e6;

/// Values of caches holding one or two slots. A dense table while it is
/// small (the common two-CPU cache: one lookup, no hashing), a hash map
/// beyond. The table holds each value twice, at (p, q) and (q, p), so that
/// the look-ups of one sweep — every exchange pairs a member of the same
/// cache `a` with the members of the caches after it — read the few rows
/// of `a`'s members rather than rows all over the table.
///
/// A value may be solved ahead of its first use (four at a time, see
/// [`solve_pairs`]); it is counted as a solve — and as unconverged, if it
/// was — when the search first asks for it, so the counts are those of a
/// search that solves each pair when it first needs it.
enum PairMemo {
    Dense {
        n: usize,
        values: Vec<f64>,
        flags: Vec<u8>,
    },
    Sparse(HashMap<(usize, usize), (f64, u8)>),
}

/// Flag: the search has asked for this value (its solve is counted).
const COUNTED: u8 = 1;
/// Flag: its solve hit Algorithm 1's iteration cap.
const UNCONVERGED: u8 = 2;

/// Slots up to which the memo is a dense n × n table (8 MiB at 1024).
const DENSE_MEMO_SLOTS: usize = 1024;

/// Caches up to which a descent remembers which pairs of caches are
/// settled (an m × m table of clock readings, 8 MiB at 1024).
const SETTLED_MAX_CACHES: usize = 1024;

impl PairMemo {
    fn new(n: usize) -> Self {
        if n <= DENSE_MEMO_SLOTS {
            PairMemo::Dense {
                n,
                values: vec![f64::NAN; n * n],
                flags: vec![0; n * n],
            }
        } else {
            PairMemo::Sparse(HashMap::new())
        }
    }

    /// Entries set up front (none for the hash map, which grows).
    fn entries(&self) -> usize {
        match self {
            PairMemo::Dense { values, .. } => values.len(),
            PairMemo::Sparse(_) => 0,
        }
    }

    /// The key of a cache's members: (a, a) for one slot, (p, q) for two,
    /// `anchor` first when it is one of them.
    fn key(members: &[usize], anchor: Option<usize>) -> Option<(usize, usize)> {
        match *members {
            [a] => Some((a, a)),
            [p, q] if anchor == Some(q) => Some((q, p)),
            [p, q] => Some((p, q)),
            _ => None,
        }
    }

    fn get(&self, (p, q): (usize, usize)) -> Option<(f64, u8)> {
        match self {
            PairMemo::Dense { n, values, flags } => {
                let v = values[p * n + q];
                (!v.is_nan()).then(|| (v, flags[p * n + q]))
            }
            PairMemo::Sparse(map) => map.get(&(p.min(q), p.max(q))).copied(),
        }
    }

    fn insert(&mut self, (p, q): (usize, usize), value: f64, flag: u8) {
        match self {
            PairMemo::Dense { n, values, flags } => {
                values[p * *n + q] = value;
                values[q * *n + p] = value;
                flags[p * *n + q] = flag;
                flags[q * *n + p] = flag;
            }
            PairMemo::Sparse(map) => {
                map.insert((p.min(q), p.max(q)), (value, flag));
            }
        }
    }
}

/// What every descent of one decision shares: the problem, the memo of
/// small caches (a cache's value depends only on its members), the work
/// spent against the budget, and the solver's working vectors.
pub struct Shared<'a> {
    slots: &'a [SlotObs],
    model: &'a CpiModel,
    floor: f64,
    memo: PairMemo,
    /// Work spent so far, against the budget.
    pub work: Work,
    /// Algorithm 1 solves computed (memo misses).
    pub solves: usize,
    /// Solves that hit the iteration cap.
    pub unconverged: usize,
    scratch: CacheScratch,
    obs: Vec<&'a SlotObs>,
}

impl<'a> Shared<'a> {
    /// Nothing solved yet; `budget_ms` of modelled work allowed.
    pub fn new(slots: &'a [SlotObs], model: &'a CpiModel, floor: f64, budget_ms: f64) -> Self {
        let memo = PairMemo::new(slots.len());
        let mut work = Work::new(budget_ms);
        // A value (f64) and its flags (u8) per entry.
        work.memo(memo.entries(), 9);
        Shared {
            slots,
            model,
            floor,
            memo,
            work,
            solves: 0,
            unconverged: 0,
            scratch: CacheScratch::default(),
            obs: Vec::new(),
        }
    }

    /// Σ log speedup of a cache's members, less a penalty below the floor;
    /// `anchor`, a member, says which row of the memo to read.
    fn cache_value(&mut self, members: &[usize], anchor: Option<usize>) -> f64 {
        if members.is_empty() {
            return 0.0;
        }
        self.work.evaluation();
        let key = PairMemo::key(members, anchor);
        if let Some((k, (v, flag))) = key.and_then(|k| Some((k, self.memo.get(k)?))) {
            if flag & COUNTED == 0 {
                self.solves += 1;
                self.unconverged += usize::from(flag & UNCONVERGED != 0);
                self.memo.insert(k, v, flag | COUNTED);
            }
            return v;
        }
        let slots = self.slots;
        let sol = match *members {
            [a] => solve_pair(&slots[a], None, self.model),
            [a, b] => solve_pair(&slots[a], Some(&slots[b]), self.model),
            _ => {
                self.obs.clear();
                self.obs.extend(members.iter().map(|&s| &slots[s]));
                solve_cache_with(&self.obs, self.model, &mut self.scratch)
            }
        };
        self.work.solve(members.len(), sol.iterations);
        self.solves += 1;
        self.unconverged += usize::from(!sol.converged);
        let value = self.penalised(&sol);
        if let Some(k) = key {
            self.memo.insert(k, value, COUNTED | unconverged_flag(&sol));
        }
        value
    }

    /// A cache's value from its solve.
    fn penalised(&self, sol: &CacheSummary) -> f64 {
        sol.log_speedup - FLOOR_PENALTY * (self.floor - sol.min_speedup).max(0.0)
    }

    /// Solve ahead, four at a time, the pairs of a member of `xs` with one
    /// of `ys` that the memo lacks: the exchanges between two caches of two
    /// ask for all of them unless the first one tried is kept.
    fn prefetch(&mut self, xs: &[usize], ys: &[usize]) {
        let mut keys = [(0, 0); 4];
        let mut k = 0;
        for &x in xs {
            for &y in ys {
                if k < 4 && self.memo.get((x, y)).is_none() {
                    keys[k] = (x, y);
                    k += 1;
                }
            }
        }
        let slots = self.slots;
        let pair = |i: usize| (&slots[keys[i].0], Some(&slots[keys[i].1]));
        let mut sols = [None; 4];
        match k {
            4 => {
                let [s0, s1, s2, s3] =
                    solve_pairs([pair(0), pair(1), pair(2), pair(3)], self.model);
                sols = [Some(s0), Some(s1), Some(s2), Some(s3)];
            }
            3 => {
                let [s0, s1, s2] = solve_pairs([pair(0), pair(1), pair(2)], self.model);
                sols[..3].copy_from_slice(&[Some(s0), Some(s1), Some(s2)]);
            }
            2 => {
                let [s0, s1] = solve_pairs([pair(0), pair(1)], self.model);
                sols[..2].copy_from_slice(&[Some(s0), Some(s1)]);
            }
            _ => return,
        }
        for (key, sol) in keys.iter().zip(sols).take(k) {
            if let Some(sol) = sol {
                self.work.solve(2, sol.iterations);
                let value = self.penalised(&sol);
                self.memo.insert(*key, value, unconverged_flag(&sol));
            }
        }
    }
}

fn unconverged_flag(sol: &CacheSummary) -> u8 {
    if sol.converged {
        0
    } else {
        UNCONVERGED
    }
}

/// When each cache last changed and when each pair of small caches was
/// last found settled, on one clock.
struct Settled {
    clock: u64,
    changed: Vec<u64>,
    checked: Vec<u64>,
    /// Whether a cache holds at most two slots (its values are remembered).
    small: Vec<bool>,
}

impl Settled {
    fn new(caps: &[usize]) -> Option<Self> {
        let m = caps.len();
        (m <= SETTLED_MAX_CACHES).then(|| Settled {
            clock: 1,
            changed: vec![1; m],
            checked: vec![0; m * m],
            small: caps.iter().map(|&k| k <= 2).collect(),
        })
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Whether trying `a` with `b` again could only repeat a check that
    /// found nothing.
    fn is_settled(&self, a: usize, b: usize) -> bool {
        let m = self.changed.len();
        self.small[a]
            && self.small[b]
            && self.checked[a * m + b] > self.changed[a].max(self.changed[b])
    }

    fn mark_settled(&mut self, a: usize, b: usize) {
        let m = self.changed.len();
        self.checked[a * m + b] = self.tick();
    }

    fn mark_changed(&mut self, c: usize) {
        self.changed[c] = self.tick();
    }
}

/// One descent's state: members per cache and each cache's value.
pub struct Descent<'s, 'a> {
    shared: &'s mut Shared<'a>,
    caps: &'s [usize],
    members: Vec<Vec<usize>>,
    value: Vec<f64>,
    settled: Option<Settled>,
    new_a: Vec<usize>,
    new_b: Vec<usize>,
    /// Whether the budget ran out before the descent reached a local optimum.
    pub cut: bool,
}

impl<'s, 'a> Descent<'s, 'a> {
    /// A descent from `assignment` (slot → cache) over caches of `caps`
    /// CPUs each.
    pub fn new(shared: &'s mut Shared<'a>, caps: &'s [usize], assignment: &[usize]) -> Self {
        let mut members = vec![Vec::new(); caps.len()];
        for (s, &c) in assignment.iter().enumerate() {
            members[c].push(s);
        }
        let value = members
            .iter()
            .map(|m| shared.cache_value(m, None))
            .collect();
        Descent {
            shared,
            caps,
            members,
            value,
            settled: Settled::new(caps),
            new_a: Vec::new(),
            new_b: Vec::new(),
            cut: false,
        }
    }

    /// Σ value over the caches.
    pub fn total(&self) -> f64 {
        self.value.iter().sum()
    }

    /// Each slot's cache.
    pub fn assignment(&self, n: usize) -> Vec<usize> {
        let mut out = vec![0usize; n];
        for (c, m) in self.members.iter().enumerate() {
            for &s in m {
                out[s] = c;
            }
        }
        out
    }

    /// Try exchanging member `x` of cache `a` (or a free CPU when `x` is
    /// `None`) with member `y` of cache `b` (or a free CPU); apply it if it
    /// raises the total value.
    fn try_exchange(&mut self, a: usize, x: Option<usize>, b: usize, y: Option<usize>) -> bool {
        let mut new_a = std::mem::take(&mut self.new_a);
        let mut new_b = std::mem::take(&mut self.new_b);
        new_a.clear();
        new_a.extend(self.members[a].iter().copied().filter(|&s| Some(s) != x));
        new_b.clear();
        new_b.extend(self.members[b].iter().copied().filter(|&s| Some(s) != y));
        new_a.extend(y);
        new_b.extend(x);
        // Both look-ups read the row of a member of `a`.
        let va = self.shared.cache_value(&new_a, new_a.first().copied());
        let vb = self.shared.cache_value(&new_b, x);
        let better = va + vb > self.value[a] + self.value[b] + 1e-12;
        if better {
            std::mem::swap(&mut self.members[a], &mut new_a);
            std::mem::swap(&mut self.members[b], &mut new_b);
            self.value[a] = va;
            self.value[b] = vb;
            if let Some(s) = self.settled.as_mut() {
                s.mark_changed(a);
                s.mark_changed(b);
            }
        }
        self.new_a = new_a;
        self.new_b = new_b;
        better
    }

    /// Improve until no exchange helps, or the budget runs out; caches
    /// that changed are revisited ("don't look" flags keep settled pairs
    /// from being retried).
    pub fn descend(&mut self) {
        let m = self.members.len();
        let mut dirty = vec![true; m];
        loop {
            let mut changed = vec![false; m];
            for a in 0..m {
                for b in a + 1..m {
                    if (dirty[a] || dirty[b] || changed[a] || changed[b])
                        && !self.settled.as_ref().is_some_and(|s| s.is_settled(a, b))
                        && self.improve_pair(a, b)
                    {
                        changed[a] = true;
                        changed[b] = true;
                    }
                    if self.cut {
                        return;
                    }
                }
            }
            if !changed.iter().any(|c| *c) {
                return;
            }
            dirty = changed;
        }
    }

    /// Exchanges between caches `a` and `b` until none helps: every member
    /// of one against every member of the other, or against a free CPU.
    fn improve_pair(&mut self, a: usize, b: usize) -> bool {
        let caps = (self.caps[a], self.caps[b]);
        let small = caps.0 <= 2 && caps.1 <= 2;
        let mut improved = false;
        'again: loop {
            if small {
                self.shared.prefetch(&self.members[a], &self.members[b]);
            }
            // Index == len stands for a free CPU, when the cache has one.
            let (la, lb) = (self.members[a].len(), self.members[b].len());
            let xa = if la < caps.0 { la + 1 } else { la };
            let yb = if lb < caps.1 { lb + 1 } else { lb };
            for xi in 0..xa {
                for yi in 0..yb {
                    let x = self.members[a].get(xi).copied();
                    let y = self.members[b].get(yi).copied();
                    if x.is_none() && y.is_none() {
                        continue;
                    }
                    let better = self.try_exchange(a, x, b, y);
                    if self.shared.work.exhausted() {
                        self.cut = true;
                        return improved || better;
                    }
                    if better {
                        improved = true;
                        continue 'again;
                    }
                }
            }
            if let Some(s) = self.settled.as_mut() {
                s.mark_settled(a, b);
            }
            return improved;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pam::bench_instance;

    /// A descent from the current assignment of a machine of two-CPU
    /// caches, remembering settled pairs or not.
    fn descend(cpus: usize, remember: bool) -> (Vec<usize>, u64, usize, usize) {
        let (layout, slots, current) = bench_instance(cpus, 11);
        let caps: Vec<usize> = layout.caches.iter().map(|c| c.cpus.len()).collect();
        let model = CpiModel::PAPER;
        let mut shared = Shared::new(&slots, &model, 0.1, f64::INFINITY);
        let mut d = Descent::new(&mut shared, &caps, &current);
        if !remember {
            d.settled = None;
        }
        d.descend();
        assert!(!d.cut);
        let (assignment, total) = (d.assignment(slots.len()), d.total().to_bits());
        (assignment, total, shared.solves, shared.unconverged)
    }

    #[test]
    fn skipping_settled_pairs_changes_nothing_but_the_time() {
        for cpus in [16, 64] {
            assert_eq!(descend(cpus, true), descend(cpus, false), "{cpus} CPUs");
        }
    }

    #[test]
    fn a_value_is_the_same_from_the_memo_and_from_a_solve() {
        let (_, slots, _) = bench_instance(8, 3);
        let model = CpiModel::PAPER;
        let mut memo = Shared::new(&slots, &model, 0.1, f64::INFINITY);
        let first = memo.cache_value(&[2, 5], None);
        assert_eq!(memo.solves, 1);
        // The other order and the other row, from the memo.
        assert_eq!(memo.cache_value(&[5, 2], None).to_bits(), first.to_bits());
        assert_eq!(
            memo.cache_value(&[2, 5], Some(5)).to_bits(),
            first.to_bits()
        );
        assert_eq!(memo.solves, 1);
        let mut scratch = CacheScratch::default();
        let general = solve_cache_with(&[&slots[5], &slots[2]], &model, &mut scratch);
        assert_eq!(general.log_speedup.to_bits(), first.to_bits());
    }
}
