//! The demands of one contention solve grouped into kinds, and a memory
//! domain's traffic evaluated once per kind and added once per demand
//! (`docs/design/simulator.md`, "What a solve costs"): what makes a solve
//! on a large machine cheaper without changing a bit of its result.

use super::{Demand, Traffic};
use crate::machine::Machine;
use crate::profile::Phase;
use std::cell::Cell;

/// The demands of one solve grouped into kinds: demands behind the same
/// cache with the same phase (the same `Phase`), frequency and CPI factor
/// go through the same arithmetic from the same even split, so every
/// figure of the iteration is the same to the last bit for all of them.
/// The solve keeps one copy per kind (one miss-ratio curve evaluation and
/// one traffic division instead of one per demand) and visits the
/// demands, in order, only where their number matters: the sums of a
/// cache's insertion rates and of a domain's traffic, which are added
/// member by member in demand order exactly as one copy per demand would
/// be. On a large machine a memory domain's 192 CPUs hold a few dozen
/// kinds.
pub(super) struct Kinds<'a> {
    /// Per demand, its kind.
    pub(super) of: Vec<usize>,
    /// Per kind: its phase, cache, memory domain, compute time per
    /// instruction (ns) and number of demands.
    pub(super) phase: Vec<&'a Phase>,
    pub(super) llc: Vec<usize>,
    pub(super) mem: Vec<usize>,
    pub(super) compute_ns: Vec<f64>,
}

impl<'a> Kinds<'a> {
    pub(super) fn of(machine: &Machine, demands: &[Demand<'a>]) -> Self {
        let mut kinds = Kinds {
            of: Vec::with_capacity(demands.len()),
            phase: Vec::new(),
            llc: Vec::new(),
            mem: Vec::new(),
            compute_ns: Vec::new(),
        };
        // The kinds of each cache, as a chain from the latest one: a
        // demand is compared only with the kinds behind its own cache.
        let mut latest = vec![usize::MAX; machine.llc.len()];
        let mut earlier = Vec::new();
        let mut first = Vec::new();
        for (i, d) in demands.iter().enumerate() {
            let c = machine.llc_of[d.cpu];
            let m = machine.mem_of[d.cpu];
            let mut k = latest[c];
            while k != usize::MAX {
                let e: &Demand<'_> = &demands[first[k]];
                if kinds.mem[k] == m
                    && std::ptr::eq(e.phase, d.phase)
                    && e.freq_ghz.to_bits() == d.freq_ghz.to_bits()
                    && e.cpi_factor.to_bits() == d.cpi_factor.to_bits()
                {
                    break;
                }
                k = earlier[k];
            }
            if k == usize::MAX {
                k = kinds.phase.len();
                kinds.phase.push(d.phase);
                kinds.llc.push(c);
                kinds.mem.push(m);
                kinds
                    .compute_ns
                    .push(d.phase.cpi_core * d.cpi_factor / d.freq_ghz);
                earlier.push(latest[c]);
                first.push(i);
                latest[c] = k;
            }
            kinds.of.push(k);
        }
        kinds.by_domain();
        kinds
    }

    /// Number the kinds memory domain by memory domain, keeping their
    /// order within each: a domain's kinds are then numbered in the order
    /// they first occur among its demands (`TrafficTerms::traffic` relies
    /// on it).
    fn by_domain(&mut self) {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by_key(|&k| self.mem[k]);
        let mut renamed = vec![0; order.len()];
        for (new, &old) in order.iter().enumerate() {
            renamed[old] = new;
        }
        for k in &mut self.of {
            *k = renamed[*k];
        }
        self.phase = order.iter().map(|&k| self.phase[k]).collect();
        self.llc = order.iter().map(|&k| self.llc[k]).collect();
        self.mem = order.iter().map(|&k| self.mem[k]).collect();
        self.compute_ns = order.iter().map(|&k| self.compute_ns[k]).collect();
    }

    pub(super) fn len(&self) -> usize {
        self.phase.len()
    }
}

/// Who is behind one cache or in one memory domain: its kinds, and the
/// kind of each of its demands in demand order (the order its sums add
/// them in).
#[derive(Default, Clone)]
pub(super) struct Group {
    pub(super) kinds: Vec<usize>,
    pub(super) order: Vec<usize>,
}

/// Group the kinds by `key` (their cache or memory domain), `groups` of
/// them.
pub(super) fn groups(kinds: &Kinds<'_>, key: &[usize], groups: usize) -> Vec<Group> {
    let mut out = vec![Group::default(); groups];
    for (k, &g) in key.iter().enumerate() {
        out[g].kinds.push(k);
    }
    for &k in &kinds.of {
        out[key[k]].order.push(k);
    }
    out
}

/// A memory domain's traffic as a function of the latency: per kind, the
/// parts that do not depend on the latency, so the latency's root finder
/// (a dozen or more evaluations per share iteration, most of a
/// simulation's time) evaluates only `line_rate / (compute + stall · l /
/// mlp)`, once per kind, and adds one term per demand in demand order,
/// from −0.0 (as `Iterator::sum` does): the same operations in the same
/// order as writing the sum out demand by demand, so the result is the
/// same to the last bit.
pub(super) struct TrafficTerms {
    /// Per kind: lines per instruction times the line size, bytes per
    /// instruction.
    pub(super) line_rate: Vec<f64>,
    /// Compute time per instruction, ns.
    pub(super) compute: Vec<f64>,
    /// Stalling misses per instruction.
    pub(super) stall: Vec<f64>,
    /// Memory-level parallelism.
    pub(super) mlp: Vec<f64>,
    /// Per kind, its traffic at the latency being evaluated (and at the
    /// second one, `traffic_two`).
    each: Vec<Cell<f64>>,
    second: Vec<Cell<f64>>,
}

impl TrafficTerms {
    pub(super) fn new(kinds: usize) -> Self {
        TrafficTerms {
            line_rate: vec![0.0; kinds],
            compute: vec![0.0; kinds],
            stall: vec![0.0; kinds],
            mlp: vec![0.0; kinds],
            each: vec![Cell::new(0.0); kinds],
            second: vec![Cell::new(0.0); kinds],
        }
    }

    /// Bytes per ns the members of `domain` move at memory latency `l`.
    /// A kind's term is found where it first occurs among the domain's
    /// demands (the domain's kinds are numbered in that order), so its
    /// divisions overlap the additions of the demands before it: the
    /// additions, one after another, set the pace.
    fn traffic(&self, domain: &Group, l: f64) -> f64 {
        let mut fresh = domain.kinds.first().copied().unwrap_or(0);
        let mut sum = -0.0;
        for &k in &domain.order {
            if k == fresh {
                self.each[k]
                    .set(self.line_rate[k] / (self.compute[k] + self.stall[k] * l / self.mlp[k]));
                fresh += 1;
            }
            sum += self.each[k].get();
        }
        sum
    }

    /// `traffic` at two latencies in one pass: the two sums are
    /// independent, so their additions go side by side in the time of
    /// one, each the same to the last bit as on its own.
    fn traffic_two(&self, domain: &Group, a: f64, b: f64) -> (f64, f64) {
        let mut fresh = domain.kinds.first().copied().unwrap_or(0);
        let (mut sum_a, mut sum_b) = (-0.0, -0.0);
        for &k in &domain.order {
            if k == fresh {
                let (rate, compute, stall, mlp) = (
                    self.line_rate[k],
                    self.compute[k],
                    self.stall[k],
                    self.mlp[k],
                );
                self.each[k].set(rate / (compute + stall * a / mlp));
                self.second[k].set(rate / (compute + stall * b / mlp));
                fresh += 1;
            }
            sum_a += self.each[k].get();
            sum_b += self.second[k].get();
        }
        (sum_a, sum_b)
    }
}

/// One memory domain's traffic in a solve, as the latency's root finder
/// evaluates it.
pub(super) struct DomainTraffic<'a> {
    pub(super) terms: &'a TrafficTerms,
    pub(super) members: &'a Group,
}

impl Traffic for DomainTraffic<'_> {
    fn at(&self, l: f64) -> f64 {
        self.terms.traffic(self.members, l)
    }

    fn at_two(&self, a: f64, b: f64) -> (f64, f64) {
        self.terms.traffic_two(self.members, a, b)
    }
}
