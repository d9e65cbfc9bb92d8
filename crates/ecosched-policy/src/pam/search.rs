//! Choosing an assignment of slots (processes, or groups of processes that
//! share a CPU) to shared caches (Banikazemi, Poff and Abali, SC '08,
//! §IV-A and Algorithm 2; `docs/design/papers.md`, "PAM", on the search).
//!
//! ```text
//!   caches (physical)       cache 0   cache 1   cache 2   cache 3
//!   CPUs                    [0  1]    [2  3]    [4  5]    [6  7]
//!   an assignment           {a, b}    {c, d}    {e, f}    {g, h}
//! ```
//!
//! - **Non-redundant enumeration (eq. 3).** CPUs within a cache are
//!   interchangeable, and so are caches of the same capacity on the same
//!   NUMA node; an assignment is a partition of the slots into caches up to
//!   those symmetries: `C(n,k)·C(n−k,k)···C(k,k) / m!` of them for `n` CPUs
//!   in `m` caches of `k`, 105 for 8 CPUs in 4 pairs. Caches on different
//!   NUMA nodes sit at different distances from memory and are never
//!   swapped for one another (no division there).
//! - **Algorithm 2.** Walk the candidates; take one if it beats the best so
//!   far by more than δ, or is within δ with fewer moves (the identity has
//!   none). A move is a slot whose cache changes; each candidate's caches
//!   are first matched to interchangeable physical caches by largest
//!   overlap with where the slots are now, so relabelling costs no moves.
//! - **Scalable search.** Eq. 3 explodes past ~12 CPUs (2 027 025 at 16).
//!   Above `exhaustive_max_cpus` a swap-based local search runs instead:
//!   from the current assignment, then from seeded random restarts, try
//!   every exchange of two slots (or of a slot and a free CPU) between two
//!   caches, keep improvements, and stop at a local optimum
//!   ([`super::descent`]). The model's fixed point is per cache, so an
//!   exchange costs two cache solves. Which search ran is part of the
//!   [`Decision`].
//! - **Budget.** Both searches count their work against `budget_ms`
//!   ([`super::budget`]) and stop when it runs out, keeping the best
//!   found so far; the [`Decision`] says whether they did.

use super::budget::Work;
use super::descent::{Descent, Shared};
use super::model::{solve_cache, CpiModel, SlotObs};
use ecosched_model::{CpuId, CpuSet, Topology};
use std::collections::HashMap;

/// One shared cache as the search sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheSlots {
    /// Its usable CPUs (capacity = their number).
    pub cpus: Vec<CpuId>,
    /// Interchangeability class: caches with the same class may be relabelled.
    pub class: usize,
}

/// The caches a search distributes slots over.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Layout {
    /// Every cache, each with at least one CPU.
    pub caches: Vec<CacheSlots>,
}

impl Layout {
    /// The last-level caches of `topology` restricted to `allowed`; an
    /// allowed CPU under no shared cache gets a cache of its own. Caches
    /// are interchangeable when they have as many usable CPUs and sit on
    /// the same NUMA node.
    pub fn from_topology(topology: &Topology, allowed: &CpuSet) -> Layout {
        let mut caches: Vec<(Vec<CpuId>, u32)> = Vec::new();
        let mut covered = CpuSet::default();
        let node = |id: CpuId| topology.cpu(id).map_or(0, |c| c.numa_node);
        for llc in topology.last_level_caches() {
            let cpus: Vec<CpuId> = llc.cpus.iter().filter(|c| allowed.contains(*c)).collect();
            if let Some(&first) = cpus.first() {
                covered = covered.union(&llc.cpus);
                caches.push((cpus, node(first)));
            }
        }
        for id in allowed.iter() {
            if !covered.contains(id) {
                caches.push((vec![id], node(id)));
            }
        }
        caches.sort_by_key(|(cpus, _)| cpus.first().copied());
        Layout::with_classes(caches)
    }

    /// `m` caches of `k` CPUs each on one NUMA node, CPUs numbered in order
    /// (for tests and benchmarks).
    pub fn uniform(m: usize, k: usize) -> Layout {
        Layout::numa(1, m, k)
    }

    /// `nodes` NUMA nodes of `m_per_node` caches of `k` CPUs each.
    pub fn numa(nodes: usize, m_per_node: usize, k: usize) -> Layout {
        let caches = (0..nodes * m_per_node)
            .map(|c| {
                let cpus = (c * k..(c + 1) * k).map(|i| CpuId(i as u32)).collect();
                (cpus, (c / m_per_node.max(1)) as u32)
            })
            .collect();
        Layout::with_classes(caches)
    }

    fn with_classes(caches: Vec<(Vec<CpuId>, u32)>) -> Layout {
        let mut keys: Vec<(usize, u32)> = Vec::new();
        let caches = caches
            .into_iter()
            .map(|(cpus, node)| {
                let key = (cpus.len(), node);
                let class = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                    keys.push(key);
                    keys.len() - 1
                });
                CacheSlots { cpus, class }
            })
            .collect();
        Layout { caches }
    }

    /// Usable CPUs.
    pub fn cpus(&self) -> usize {
        self.caches.iter().map(|c| c.cpus.len()).sum()
    }

    /// The cache holding `cpu`.
    pub fn cache_of(&self, cpu: CpuId) -> Option<usize> {
        self.caches.iter().position(|c| c.cpus.contains(&cpu))
    }
}

/// Which search produced a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchKind {
    /// Every non-redundant assignment (eq. 3) through Algorithm 2.
    Exhaustive,
    /// Swap-based local search with restarts.
    Local,
}

impl SearchKind {
    /// Name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            SearchKind::Exhaustive => "exhaustive",
            SearchKind::Local => "local",
        }
    }
}

/// Tunables of the search (`docs/design/papers.md`, "PAM").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchConfig {
    /// Algorithm 2's δ on the predicted system speedup (paper: 0.1 %).
    pub delta: f64,
    /// Lowest predicted per-slot speedup a candidate may impose
    /// (`max_degradation`).
    pub floor: f64,
    /// Largest number of usable CPUs searched exhaustively.
    pub exhaustive_max_cpus: usize,
    /// Random restarts of the local search after the one from the current
    /// assignment.
    pub restarts: usize,
    /// Seed of the restarts' generator.
    pub seed: u64,
    /// Modelled time one decision may search, ms ([`super::budget`]):
    /// bounds the decision time on large machines.
    pub budget_ms: f64,
}

/// What the search chose.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Physical cache of each slot.
    pub assignment: Vec<usize>,
    /// Predicted system speedup (eq. 1) of the chosen assignment.
    pub speedup: f64,
    /// Slots whose cache changes.
    pub moves: usize,
    /// Which search ran.
    pub kind: SearchKind,
    /// Assignments evaluated (exhaustive) or cache solves (local).
    pub evaluated: usize,
    /// Algorithm 1 solves that hit the iteration cap.
    pub unconverged: usize,
    /// Predicted CPI of each slot under the chosen assignment.
    pub predicted_cpi: Vec<f64>,
    /// Highest predicted speedup among the feasible candidates seen (the
    /// chosen one may be lower: Algorithm 2 prefers fewer moves within δ).
    pub best_found: f64,
    /// Whether the search stopped at its budget before it was complete
    /// (exhaustive: some assignments not evaluated; local: a descent
    /// unfinished or restarts not begun).
    pub stopped_early: bool,
    /// Local search: descents that reached a local optimum.
    pub descents: usize,
    /// Modelled time the search spent, ms ([`super::budget`]).
    pub work_ms: f64,
}

/// One decision problem: slots, where they are, and the model.
#[derive(Debug, Clone, Copy)]
pub struct Problem<'a> {
    /// The caches.
    pub layout: &'a Layout,
    /// Each slot's measurements.
    pub slots: &'a [SlotObs],
    /// Each slot's current cache.
    pub current: &'a [usize],
    /// The CPI model.
    pub model: &'a CpiModel,
}

/// Count the non-redundant assignments of `slots` distinct slots (eq. 3),
/// by enumerating them.
pub fn count_assignments(layout: &Layout, slots: usize) -> u64 {
    let mut count = 0u64;
    let mut fill = vec![0usize; layout.caches.len()];
    let mut assignment = vec![0usize; slots];
    enumerate(layout, 0, &mut fill, &mut assignment, &mut |_| {
        count += 1;
        true
    });
    count
}

/// Eq. 3 in closed form for `n` CPUs in caches of `k` on one NUMA node.
pub fn eq3(n: u64, k: u64) -> u64 {
    let m = n / k;
    let binom = |n: u64, r: u64| (0..r).fold(1u64, |acc, i| acc * (n - i) / (i + 1));
    let mut left = n;
    let mut product = 1u64;
    while left > 0 {
        product *= binom(left, k);
        left -= k;
    }
    product / (1..=m).product::<u64>()
}

/// Visit every canonical assignment: slot `i` may open a cache only if no
/// lower-numbered empty cache of the same class is still unopened. Stops
/// as soon as `visit` returns false; returns false if it did.
fn enumerate(
    layout: &Layout,
    slot: usize,
    fill: &mut [usize],
    assignment: &mut [usize],
    visit: &mut dyn FnMut(&[usize]) -> bool,
) -> bool {
    if slot == assignment.len() {
        return visit(assignment);
    }
    for c in 0..layout.caches.len() {
        if fill[c] == layout.caches[c].cpus.len() {
            continue;
        }
        if fill[c] == 0 {
            let class = layout.caches[c].class;
            let earlier_empty = (0..c).any(|e| fill[e] == 0 && layout.caches[e].class == class);
            if earlier_empty {
                continue;
            }
        }
        fill[c] += 1;
        assignment[slot] = c;
        let go_on = enumerate(layout, slot + 1, fill, assignment, visit);
        fill[c] -= 1;
        if !go_on {
            return false;
        }
    }
    true
}

/// Per-cache evaluation of an assignment.
struct Scored {
    log_speedup: f64,
    min_speedup: f64,
    unconverged: usize,
}

#[cfg(test)]
fn score(problem: &Problem<'_>, assignment: &[usize]) -> Scored {
    solve_assignment(problem, assignment, &mut Work::new(f64::INFINITY)).0
}

/// Algorithm 1 on every cache of an assignment, its work counted in
/// `work`; also returns each slot's predicted CPI.
fn solve_assignment(
    problem: &Problem<'_>,
    assignment: &[usize],
    work: &mut Work,
) -> (Scored, Vec<f64>) {
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); problem.layout.caches.len()];
    for (s, &c) in assignment.iter().enumerate() {
        members[c].push(s);
    }
    let mut out = Scored {
        log_speedup: 0.0,
        min_speedup: f64::INFINITY,
        unconverged: 0,
    };
    let mut cpi: Vec<f64> = problem.slots.iter().map(|s| s.cpi).collect();
    for m in members.iter().filter(|m| !m.is_empty()) {
        let obs: Vec<&SlotObs> = m.iter().map(|&s| &problem.slots[s]).collect();
        let sol = solve_cache(&obs, problem.model);
        work.evaluation();
        work.solve(m.len(), sol.iterations);
        out.log_speedup += sol.log_speedup;
        out.min_speedup = out.min_speedup.min(sol.min_speedup);
        out.unconverged += usize::from(!sol.converged);
        for (&s, &c) in m.iter().zip(&sol.cpi) {
            cpi[s] = c;
        }
    }
    (out, cpi)
}

/// Each slot's predicted CPI under `assignment` (Algorithm 1).
pub fn predict_cpi(problem: &Problem<'_>, assignment: &[usize]) -> Vec<f64> {
    solve_assignment(problem, assignment, &mut Work::new(f64::INFINITY)).1
}

/// Relabel interchangeable caches of `candidate` so that as many slots as
/// possible stay where they are (greedy on overlap); returns the physical
/// assignment and its number of moves.
pub fn relabel(layout: &Layout, current: &[usize], candidate: &[usize]) -> (Vec<usize>, usize) {
    let m = layout.caches.len();
    // Overlaps between candidate caches and physical ones, where non-zero
    // and the two are interchangeable (at most one entry per slot).
    let mut counts: HashMap<(usize, usize), usize> = HashMap::new();
    for (&cand, &cur) in candidate.iter().zip(current) {
        if layout.caches[cand].class == layout.caches[cur].class {
            *counts.entry((cand, cur)).or_insert(0) += 1;
        }
    }
    let mut pairs: Vec<(usize, usize, usize)> = counts
        .into_iter()
        .map(|((bin, phys), n)| (n, bin, phys))
        .collect();
    // Most overlap first; ties keep the enumeration's own label, then order.
    pairs.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then((a.1 != a.2).cmp(&(b.1 != b.2)))
            .then((a.1, a.2).cmp(&(b.1, b.2)))
    });
    let mut map = vec![usize::MAX; m];
    let mut taken = vec![false; m];
    for (_, bin, phys) in pairs {
        if map[bin] == usize::MAX && !taken[phys] {
            map[bin] = phys;
            taken[phys] = true;
        }
    }
    // Caches that keep none of their slots: any free physical cache of the
    // same class, the enumeration's own label first.
    for bin in 0..m {
        if map[bin] != usize::MAX {
            continue;
        }
        let class = layout.caches[bin].class;
        let phys = if !taken[bin] {
            bin
        } else {
            (0..m)
                .find(|&p| !taken[p] && layout.caches[p].class == class)
                .unwrap_or(bin)
        };
        map[bin] = phys;
        taken[phys] = true;
    }
    let assignment: Vec<usize> = candidate.iter().map(|&b| map[b]).collect();
    let moves = assignment
        .iter()
        .zip(current)
        .filter(|(a, c)| a != c)
        .count();
    (assignment, moves)
}

/// Choose an assignment: exhaustive Algorithm 2 up to
/// `exhaustive_max_cpus` usable CPUs, the local search above.
pub fn decide(problem: &Problem<'_>, config: &SearchConfig) -> Decision {
    let mut d = if problem.layout.cpus() <= config.exhaustive_max_cpus {
        exhaustive(problem, config)
    } else {
        local(problem, config)
    };
    d.predicted_cpi = predict_cpi(problem, &d.assignment);
    d
}

/// Algorithm 2 over every non-redundant assignment.
pub fn exhaustive(problem: &Problem<'_>, config: &SearchConfig) -> Decision {
    let n = problem.slots.len();
    let mut best = Decision {
        assignment: problem.current.to_vec(),
        speedup: 1.0,
        moves: 0,
        kind: SearchKind::Exhaustive,
        evaluated: 0,
        unconverged: 0,
        predicted_cpi: Vec::new(),
        best_found: 1.0,
        stopped_early: false,
        descents: 0,
        work_ms: 0.0,
    };
    // Step 1: max_perf = 1, PP = I, min_moves = ∞ (the identity, once
    // enumerated, sets it to 0).
    let mut max_perf = 1.0;
    let mut min_moves = usize::MAX;
    let mut evaluated = 0;
    let mut unconverged = 0;
    let mut work = Work::new(config.budget_ms);
    let mut fill = vec![0usize; problem.layout.caches.len()];
    let mut candidate = vec![0usize; n];
    let complete = enumerate(problem.layout, 0, &mut fill, &mut candidate, &mut |cand| {
        if work.exhausted() {
            return false;
        }
        evaluated += 1;
        let (s, _) = solve_assignment(problem, cand, &mut work);
        unconverged += s.unconverged;
        if s.min_speedup < config.floor {
            return true;
        }
        let perf = (s.log_speedup / n.max(1) as f64).exp();
        best.best_found = best.best_found.max(perf);
        let (assignment, moves) = relabel(problem.layout, problem.current, cand);
        if perf > max_perf + config.delta || (perf > max_perf - config.delta && moves < min_moves) {
            max_perf = perf;
            min_moves = moves;
            best.assignment = assignment;
            best.speedup = perf;
            best.moves = moves;
        }
        true
    });
    best.evaluated = evaluated;
    best.unconverged = unconverged;
    best.stopped_early = !complete;
    best.work_ms = work.spent_ms();
    best
}

/// A small seeded generator (SplitMix64) for the restarts: policies take
/// randomness only from a seed they are given (`docs/design/architecture.md`,
/// "One loop, two worlds").
#[derive(Debug, Clone)]
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Scalable search: local search from the current assignment and from
/// seeded random restarts ([`Descent`]); the best local optimum goes
/// through Algorithm 2's acceptance rule against the identity. The budget
/// is shared by every descent: when it runs out, the descent under way
/// stops where it is and no further restart begins.
pub fn local(problem: &Problem<'_>, config: &SearchConfig) -> Decision {
    let n = problem.slots.len();
    let caps: Vec<usize> = problem.layout.caches.iter().map(|c| c.cpus.len()).collect();
    let mut rng = SplitMix(config.seed);
    let mut shared = Shared::new(problem.slots, problem.model, config.floor, config.budget_ms);
    let mut candidates: Vec<(f64, Vec<usize>)> = Vec::new();
    let mut descents = 0;
    let mut stopped_early = false;
    for restart in 0..=config.restarts {
        if shared.work.exhausted() {
            stopped_early = true;
            break;
        }
        let start = if restart == 0 {
            problem.current.to_vec()
        } else {
            random_assignment(problem.layout, n, &mut rng)
        };
        let mut descent = Descent::new(&mut shared, &caps, &start);
        descent.descend();
        candidates.push((descent.total(), descent.assignment(n)));
        if descent.cut {
            stopped_early = true;
            break;
        }
        descents += 1;
    }
    let mut best = Decision {
        assignment: problem.current.to_vec(),
        speedup: 1.0,
        moves: 0,
        kind: SearchKind::Local,
        evaluated: shared.solves,
        unconverged: shared.unconverged,
        predicted_cpi: Vec::new(),
        best_found: 1.0,
        stopped_early,
        descents,
        work_ms: shared.work.spent_ms(),
    };
    let mut min_moves = 0;
    // A local optimum below the floor carries the penalty and so never
    // beats the identity; only optima within δ of the best need their
    // moves counted.
    let top = candidates
        .iter()
        .map(|c| c.0)
        .fold(f64::NEG_INFINITY, f64::max);
    let top_perf = (top / n.max(1) as f64).exp();
    for (value, cand) in candidates {
        let perf = (value / n.max(1) as f64).exp();
        if perf < top_perf - config.delta {
            continue;
        }
        best.best_found = best.best_found.max(perf);
        let (assignment, moves) = relabel(problem.layout, problem.current, &cand);
        if perf > best.speedup + config.delta
            || (perf > best.speedup - config.delta && moves < min_moves)
        {
            best.assignment = assignment;
            best.speedup = perf;
            best.moves = moves;
            min_moves = moves;
        }
    }
    best
}

/// Slots dealt at random onto free CPUs.
fn random_assignment(layout: &Layout, n: usize, rng: &mut SplitMix) -> Vec<usize> {
    let mut seats: Vec<usize> = layout
        .caches
        .iter()
        .enumerate()
        .flat_map(|(c, cache)| std::iter::repeat_n(c, cache.cpus.len()))
        .collect();
    for i in (1..seats.len()).rev() {
        let j = rng.below(i + 1);
        seats.swap(i, j);
    }
    seats.truncate(n);
    seats
}

#[cfg(test)]
mod tests {
    use super::super::model::occupancies;
    use super::*;
    use ecosched_testkit::machines::xeon_e5345;
    use proptest::prelude::*;

    #[test]
    fn eq3_counts_match_the_enumeration() {
        for (m, k, expected) in [
            (2, 2, 3),
            (3, 2, 15),
            (4, 2, 105),
            (2, 4, 35),
            (2, 3, 10),
            (3, 3, 280),
            (6, 2, 10395),
        ] {
            let layout = Layout::uniform(m, k);
            let n = (m * k) as u64;
            assert_eq!(eq3(n, k as u64), expected, "closed form {m}×{k}");
            assert_eq!(
                count_assignments(&layout, m * k),
                expected,
                "enumeration {m}×{k}"
            );
        }
    }

    #[test]
    fn numa_caches_are_not_interchangeable() {
        // 8 CPUs, 4 two-CPU caches on 2 nodes: divide by 2!·2!, not 4!.
        let layout = Layout::numa(2, 2, 2);
        assert_eq!(count_assignments(&layout, 8), 2520 / 4);
        // Every cache on its own node: no symmetry between caches at all.
        assert_eq!(count_assignments(&Layout::numa(4, 1, 2), 8), 2520);
    }

    #[test]
    fn fewer_slots_than_cpus_count_free_cpus_once() {
        // 2 slots in 2 pairs: together, or apart.
        assert_eq!(count_assignments(&Layout::uniform(2, 2), 2), 2);
    }

    #[test]
    fn layout_from_xeon_like_topology() {
        let topo = xeon_e5345();
        let all = Layout::from_topology(&topo, &CpuSet::first_n(8));
        assert_eq!(all.caches.len(), 4);
        assert!(all.caches.iter().all(|c| c.class == 0));
        // Five usable CPUs: one cache is cut in half and is no longer
        // interchangeable with the full ones.
        let five = Layout::from_topology(&topo, &CpuSet::first_n(5));
        assert_eq!(five.cpus(), 5);
        assert_eq!(five.caches[2].cpus, vec![CpuId(4)]);
        assert_ne!(five.caches[2].class, five.caches[0].class);
        assert_eq!(five.cache_of(CpuId(3)), Some(1));
    }

    /// 4 streaming slots paired with 4 cache-sensitive ones, one of each
    /// per cache (the Linux placement the paper observes in Fig. 6).
    /// The search problem over borrowed parts, as every test builds it.
    fn problem<'a>(
        layout: &'a Layout,
        slots: &'a [SlotObs],
        current: &'a [usize],
        model: &'a CpiModel,
    ) -> Problem<'a> {
        Problem {
            layout,
            slots,
            current,
            model,
        }
    }

    fn mixed() -> (Layout, Vec<SlotObs>, Vec<usize>) {
        let stream = SlotObs {
            lines_per_s: 85.0,
            occupancy: 0.0,
            m1: 0.08,
            m2: 0.95,
            cpi: 3.0,
            alpha: 0.5,
        };
        let sensitive = SlotObs {
            lines_per_s: 15.0,
            m1: 0.05,
            m2: 0.4,
            cpi: 2.5,
            ..stream
        };
        let mut slots = vec![
            stream, sensitive, stream, sensitive, stream, sensitive, stream, sensitive,
        ];
        let current = vec![0, 0, 1, 1, 2, 2, 3, 3];
        occupancies(&mut slots, &current);
        (Layout::uniform(4, 2), slots, current)
    }

    #[test]
    fn algorithm2_separates_streams_from_cache_sensitive_slots() {
        let (layout, slots, current) = mixed();
        let model = CpiModel::PAPER;
        let problem = problem(&layout, &slots, &current, &model);
        let d = exhaustive(&problem, &crate::pam::PamConfig::default().search);
        assert_eq!(d.kind, SearchKind::Exhaustive);
        assert_eq!(d.evaluated, 105);
        assert!(d.speedup > 1.05, "{d:?}");
        // Streams together, sensitive slots together.
        for c in 0..4 {
            let kinds: Vec<bool> = (0..8)
                .filter(|&s| d.assignment[s] == c)
                .map(|s| s % 2 == 0)
                .collect();
            assert!(kinds.len() == 2 && kinds[0] == kinds[1], "{d:?}");
        }
        // Half the slots move; relabelling finds no cheaper equivalent.
        assert_eq!(d.moves, 4, "{d:?}");
        let l = local(&problem, &crate::pam::PamConfig::default().search);
        assert_eq!(l.kind, SearchKind::Local);
        assert!((l.speedup - d.speedup).abs() < 1e-9, "{l:?} vs {d:?}");
    }

    #[test]
    fn identity_wins_ties_and_gains_below_delta() {
        let (layout, mut slots, current) = mixed();
        // Make every slot alike: nothing can be gained.
        for s in slots.iter_mut() {
            *s = slots_like();
        }
        occupancies(&mut slots, &current);
        let model = CpiModel::PAPER;
        let problem = problem(&layout, &slots, &current, &model);
        let d = exhaustive(&problem, &crate::pam::PamConfig::default().search);
        assert_eq!(d.moves, 0);
        assert_eq!(d.assignment, current);
        let l = local(&problem, &crate::pam::PamConfig::default().search);
        assert_eq!(l.moves, 0);
    }

    fn slots_like() -> SlotObs {
        SlotObs {
            lines_per_s: 40.0,
            occupancy: 0.0,
            m1: 0.03,
            m2: 0.5,
            cpi: 2.0,
            alpha: 0.5,
        }
    }

    #[test]
    fn floor_rejects_plans_that_sacrifice_a_slot() {
        let (layout, slots, current) = mixed();
        let model = CpiModel::PAPER;
        let problem = problem(&layout, &slots, &current, &model);
        let free = exhaustive(&problem, &crate::pam::PamConfig::default().search);
        let worst = free.assignment.clone();
        // Under the floor, no candidate may predict any slot below 95 %.
        let config = SearchConfig {
            floor: 0.95,
            ..crate::pam::PamConfig::default().search
        };
        let d = exhaustive(&problem, &config);
        let s = score(&problem, &d.assignment);
        assert!(s.min_speedup >= 0.95, "{d:?}");
        assert!(score(&problem, &worst).min_speedup < 0.95);
        let l = local(&problem, &config);
        assert!(score(&problem, &l.assignment).min_speedup >= 0.95, "{l:?}");
    }

    #[test]
    fn decide_switches_search_by_size() {
        let (layout, slots, current) = mixed();
        let model = CpiModel::PAPER;
        let problem = problem(&layout, &slots, &current, &model);
        let small = SearchConfig {
            exhaustive_max_cpus: 7,
            ..crate::pam::PamConfig::default().search
        };
        assert_eq!(decide(&problem, &small).kind, SearchKind::Local);
        assert_eq!(
            decide(&problem, &crate::pam::PamConfig::default().search).kind,
            SearchKind::Exhaustive
        );
    }

    /// A random instance of at most 12 CPUs: 2–6 caches of 2–4 CPUs, at
    /// least half of the CPUs busy with streaming or cache-sensitive slots.
    fn instance() -> impl Strategy<Value = (Layout, Vec<SlotObs>, Vec<usize>)> {
        (2usize..=6, 2usize..=4)
            .prop_filter("at most 12 CPUs", |(m, k)| m * k <= 12)
            .prop_flat_map(|(m, k)| {
                let slot = (
                    any::<bool>(),
                    0.0f64..1.0,
                    0.005f64..0.1,
                    0.0f64..1.0,
                    0.8f64..4.0,
                    0.2f64..1.2,
                );
                (
                    Just((m, k)),
                    prop::collection::vec(slot, (m * k).div_ceil(2)..=m * k),
                )
            })
            .prop_map(|((m, k), raw)| {
                let layout = Layout::uniform(m, k);
                let mut slots: Vec<SlotObs> = raw
                    .into_iter()
                    .map(|(streaming, l, m1, m2, cpi, alpha)| SlotObs {
                        lines_per_s: if streaming {
                            20.0 + 40.0 * l
                        } else {
                            1.0 + 10.0 * l
                        },
                        occupancy: 0.0,
                        m1,
                        m2: if streaming {
                            0.7 + 0.3 * m2
                        } else {
                            0.05 + 0.5 * m2
                        },
                        cpi,
                        alpha,
                    })
                    .collect();
                // Fill the caches in order, as the kernel would.
                let current: Vec<usize> = (0..slots.len()).map(|i| i / k).collect();
                occupancies(&mut slots, &current);
                (layout, slots, current)
            })
    }

    fn check_valid(layout: &Layout, current: &[usize], d: &Decision) -> Result<(), TestCaseError> {
        let mut load = vec![0usize; layout.caches.len()];
        for &c in &d.assignment {
            load[c] += 1;
        }
        for (c, cache) in layout.caches.iter().enumerate() {
            prop_assert!(
                load[c] <= cache.cpus.len(),
                "cache {c} over capacity: {d:?}"
            );
        }
        let moves = d
            .assignment
            .iter()
            .zip(current)
            .filter(|(a, b)| a != b)
            .count();
        prop_assert_eq!(moves, d.moves);
        // The identity is always a candidate; Algorithm 1 reproduces it to
        // within its tolerance.
        prop_assert!(d.speedup >= 1.0 - 1e-3, "{:?}", d);
        prop_assert!(d.best_found >= d.speedup - 1e-12, "{:?}", d);
        Ok(())
    }

    proptest! {
        #[test]
        fn both_searches_return_valid_assignments_no_worse_than_staying(
            (layout, slots, current) in instance(),
            floor in prop_oneof![Just(0.1f64), Just(0.95f64)],
        ) {
            let model = CpiModel::PAPER;
            let problem = problem(&layout, &slots, &current, &model);
            let config = SearchConfig { floor, ..crate::pam::PamConfig::default().search };
            let e = exhaustive(&problem, &config);
            check_valid(&layout, &current, &e)?;
            let l = local(&problem, &config);
            check_valid(&layout, &current, &l)?;
            // The chosen plan respects the floor.
            prop_assert!(score(&problem, &e.assignment).min_speedup >= floor - 1e-9);
            prop_assert!(score(&problem, &l.assignment).min_speedup >= floor - 1e-9);
        }
    }

    proptest! {
        /// The descent keeps each cache's value and re-solves only the two
        /// caches an exchange touches; Algorithm 1 over the whole chosen
        /// assignment predicts the same speedup.
        #[test]
        fn incremental_values_add_up_to_a_full_solve(
            (layout, slots, current) in instance(),
            seed in any::<u64>(),
        ) {
            let model = CpiModel::PAPER;
            let problem = problem(&layout, &slots, &current, &model);
            let config = SearchConfig { seed, floor: 0.0, ..crate::pam::PamConfig::default().search };
            let l = local(&problem, &config);
            let full = score(&problem, &l.assignment);
            let perf = (full.log_speedup / slots.len() as f64).exp();
            // Equal up to rounding: sums over members and caches in another order.
            prop_assert!((perf - l.speedup).abs() < 1e-9, "full {} vs incremental {}", perf, l.speedup);
        }

        /// Stopped at any point, the local search still returns a valid
        /// plan no worse than staying, and says it stopped.
        #[test]
        fn a_budget_stop_keeps_a_valid_plan_and_is_reported(
            (layout, slots, current) in instance(),
            budget_ns in 1.0f64..20_000.0,
        ) {
            let model = CpiModel::PAPER;
            let problem = problem(&layout, &slots, &current, &model);
            let config = SearchConfig { budget_ms: budget_ns * 1e-6, ..crate::pam::PamConfig::default().search };
            let l = local(&problem, &config);
            check_valid(&layout, &current, &l)?;
            let unbounded = local(&problem, &SearchConfig { budget_ms: f64::INFINITY, ..config });
            prop_assert!(!unbounded.stopped_early);
            if l.stopped_early {
                prop_assert!(l.descents <= config.restarts, "{:?}", l);
            } else {
                // Not stopped: the very same decision as without a budget.
                prop_assert_eq!(&l.assignment, &unbounded.assignment);
                prop_assert_eq!(l.speedup.to_bits(), unbounded.speedup.to_bits());
                prop_assert_eq!(l.evaluated, unbounded.evaluated);
                prop_assert_eq!(l.descents, config.restarts + 1);
            }
            let e = exhaustive(&problem, &config);
            check_valid(&layout, &current, &e)?;
        }
    }

    #[test]
    fn a_tiny_budget_stops_both_searches() {
        let (layout, slots, current) = mixed();
        let model = CpiModel::PAPER;
        let problem = problem(&layout, &slots, &current, &model);
        let config = SearchConfig {
            budget_ms: 1e-6,
            ..crate::pam::PamConfig::default().search
        };
        let e = exhaustive(&problem, &config);
        assert!(e.stopped_early && e.evaluated < 105, "{e:?}");
        let l = local(&problem, &config);
        assert!(l.stopped_early && l.descents == 0, "{l:?}");
        let full = exhaustive(&problem, &crate::pam::PamConfig::default().search);
        assert!(!full.stopped_early && full.evaluated == 105, "{full:?}");
        assert!(full.work_ms > 0.0 && full.work_ms < 20.0, "{full:?}");
    }

    #[test]
    fn local_search_finds_the_exhaustive_optimum_on_95_percent_of_small_instances() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let strategy = instance();
        let model = CpiModel::PAPER;
        let cases = 300;
        let mut hits = 0;
        for _ in 0..cases {
            let (layout, slots, current) = strategy.new_tree(&mut runner).unwrap().current();
            let problem = problem(&layout, &slots, &current, &model);
            let config = crate::pam::PamConfig::default().search;
            // The reference sees every assignment, whatever the budget.
            let all = SearchConfig {
                budget_ms: f64::INFINITY,
                ..config
            };
            let e = exhaustive(&problem, &all);
            let l = local(&problem, &config);
            assert!(!l.stopped_early, "{l:?}");
            assert!(
                l.best_found <= e.best_found * (1.0 + 1e-9),
                "local beat exhaustive: {l:?} {e:?}"
            );
            if l.best_found >= e.best_found * (1.0 - 1e-9) {
                hits += 1;
            }
        }
        let rate = f64::from(hits) / f64::from(cases);
        println!("local search found the exhaustive optimum on {hits}/{cases} instances");
        assert!(rate >= 0.95, "{rate}");
    }

    #[test]
    fn relabelling_interchangeable_caches_costs_no_moves() {
        let layout = Layout::uniform(2, 2);
        // The canonical form of "slots 0,1 in cache 1; 2,3 in cache 0".
        let (phys, moves) = relabel(&layout, &[1, 1, 0, 0], &[0, 0, 1, 1]);
        assert_eq!((phys, moves), (vec![1, 1, 0, 0], 0));
        // Across NUMA nodes relabelling is not allowed.
        let numa = Layout::numa(2, 1, 2);
        let (_, moves) = relabel(&numa, &[1, 1, 0, 0], &[0, 0, 1, 1]);
        assert_eq!(moves, 4);
    }
}
