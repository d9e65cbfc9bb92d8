//! The oracle on a machine or workload too large to search exhaustively
//! (more than [`super::MAX_CPUS`] CPUs or [`super::MAX_TASKS`] managed
//! tasks): the best of a small family of static configurations that an
//! operator could set by hand — all managed work confined to the first
//! last-level caches of the machine (whole caches, with or without SMT
//! siblings; whole cores on a machine with one cache), the domains in use
//! at one P-state of the same rank from the top (every rank for the whole
//! machine, the top one for smaller sets), the others at their lowest.
//!
//! The family is what consolidation and frequency choice can reach without
//! knowing the tasks (which is what makes it comparable with every policy
//! on any scenario); it is not exhaustive, so a policy that places tasks
//! by their behaviour can beat it, and `compare` says when the oracle
//! searched this family.

use super::OracleChoice;
use ecosched_model::{CpuId, CpuSet, FreqDomainId};
use ecosched_policy::oracle::FixedConfig;
use ecosched_sim::Scenario;
use std::collections::{BTreeMap, BTreeSet};

/// Most confining sizes tried (spread between one cache and all).
pub const MAX_SETS: usize = 4;

/// One candidate: the CPUs work is confined to and each domain's P-state.
pub struct Candidate {
    /// The confining set.
    pub cpus: CpuSet,
    /// Frequency domain → kHz.
    pub freq_khz: BTreeMap<FreqDomainId, u64>,
}

impl Candidate {
    /// As the policy that holds it, and as the search reports it.
    pub fn config(&self) -> (FixedConfig, OracleChoice) {
        let choice = OracleChoice {
            placement: BTreeMap::new(),
            cpus: Some(self.cpus.to_list()),
            freq_mhz: self.freq_khz.values().map(|k| k / 1000).collect(),
            freq_khz: self.freq_khz.values().copied().collect(),
        };
        (
            FixedConfig::new(
                BTreeMap::new(),
                Some(self.cpus.clone()),
                self.freq_khz.clone(),
            ),
            choice,
        )
    }
}

/// Every candidate of `scenario`'s machine.
pub fn candidates(scenario: &Scenario) -> Vec<Candidate> {
    let m = &scenario.machine;
    let topo = &m.topology;
    let online = |c: usize| topo.cpus[c].online;
    // Last-level caches in the order of their first CPU, each with its
    // CPUs and the first hardware thread of each of its cores.
    // Cores in the order of their first CPU, grouped by last-level cache
    // (each with all its hardware threads); sets take whole caches when
    // the machine has several, else whole cores.
    let mut caches: Vec<Vec<Vec<usize>>> = m
        .llc
        .iter()
        .map(|(_, cpus)| {
            let mut cores: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
            for &c in cpus.iter().filter(|&&c| online(c)) {
                cores.entry(m.core_of[c]).or_default().push(c);
            }
            let mut cores: Vec<Vec<usize>> = cores.into_values().collect();
            cores.sort_by_key(|threads| threads[0]);
            cores
        })
        .filter(|cores| !cores.is_empty())
        .collect();
    caches.sort_by_key(|cores| cores[0][0]);
    let units: Vec<Vec<Vec<usize>>> = if caches.len() >= 2 {
        caches
    } else {
        caches
            .into_iter()
            .flatten()
            .map(|core| vec![core])
            .collect()
    };
    let smt = units.iter().flatten().any(|core| core.len() > 1);
    let mut sets: Vec<(CpuSet, bool)> = Vec::new();
    for k in unit_counts(units.len()) {
        let whole = k == units.len();
        let take = |threads: bool| -> CpuSet {
            units[..k]
                .iter()
                .flatten()
                .flat_map(|core| if threads { &core[..] } else { &core[..1] })
                .map(|&c| topo.cpus[c].id)
                .collect()
        };
        sets.push((take(true), whole));
        if smt {
            sets.push((take(false), whole));
        }
    }
    let ranks = topo
        .freq_domains
        .iter()
        .map(|d| d.pstates.len())
        .max()
        .unwrap_or(0);
    // Every P-state rank on the sets of every core (with and without SMT
    // siblings); the smaller sets at the top rank only, where confining
    // work pays if it pays at all (the idle caches sleep), and where a
    // slow, narrow configuration would take longest to simulate.
    let mut out = Vec::new();
    for (set, whole) in &sets {
        let tried = if *whole { ranks.max(1) } else { 1 };
        for rank in 0..tried {
            let mut freq_khz = BTreeMap::new();
            for (d, dom) in topo.freq_domains.iter().enumerate() {
                let mut khz: Vec<u64> = dom.pstates.iter().map(|p| p.freq_khz).collect();
                khz.sort_unstable();
                let Some(&lowest) = khz.first() else { continue };
                let used = dom.cpus.iter().any(|c: CpuId| set.contains(c));
                let pick = if used {
                    khz[khz.len().saturating_sub(1 + rank)]
                } else {
                    lowest
                };
                freq_khz.insert(FreqDomainId(d), pick);
            }
            out.push(Candidate {
                cpus: set.clone(),
                freq_khz,
            });
        }
    }
    out
}

/// How many units (caches, or cores under one cache) the confining sets
/// take: one, all, and up to [`MAX_SETS`] − 2 sizes spread evenly between.
fn unit_counts(n: usize) -> Vec<usize> {
    let mut counts: BTreeSet<usize> = [1, n].into_iter().filter(|&k| k >= 1).collect();
    let inner = MAX_SETS.saturating_sub(2);
    for i in 1..=inner {
        counts.insert((n * i).div_ceil(inner + 1).clamp(1, n));
    }
    counts.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_span_one_cache_to_all() {
        assert_eq!(unit_counts(1), vec![1]);
        assert_eq!(unit_counts(2), vec![1, 2]);
        let c = unit_counts(24);
        assert_eq!(c.first(), Some(&1));
        assert_eq!(c.last(), Some(&24));
        assert!(c.len() <= MAX_SETS, "{c:?}");
    }

    #[test]
    fn every_candidate_confines_whole_caches_and_idles_the_rest_low() {
        let s = Scenario::load("bench-64c512t").unwrap();
        let cands = candidates(&s);
        assert!(!cands.is_empty());
        let topo = &s.machine.topology;
        for c in &cands {
            for (d, khz) in &c.freq_khz {
                let dom = &topo.freq_domains[d.index()];
                let used = dom.cpus.iter().any(|cpu| c.cpus.contains(cpu));
                let lowest = dom.pstates.iter().map(|p| p.freq_khz).min().unwrap();
                if !used {
                    assert_eq!(*khz, lowest);
                }
            }
        }
        // One cache (4 CPUs) at the top P-state is among them.
        assert!(cands.iter().any(|c| c.cpus.len() == 4));
    }
}
