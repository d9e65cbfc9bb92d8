//! How fast each running task goes: the contention solve
//! (`contention.rs`), memoised.
//!
//! Memory domains do not interact (a cache never spans two, and each has
//! its own latency), so each is solved on its own and memoised under its
//! own key: the (phase, MHz) running on each of its CPUs. On a machine
//! with one memory domain that is exactly the whole-machine solve; on a
//! large machine it keeps the memo useful, since a 64-CPU configuration
//! almost never repeats while a 4-CPU one does. Only domains where
//! something changed (a CPU's running task, phase or frequency) have their
//! key rebuilt, and only the CPUs whose outcome changed are integrated up
//! to now and have their next event found again.

use super::SimPlatform;
use crate::contention::{solve, Demand, Outcome};
use crate::machine::Machine;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Memo size bound, in CPU entries over all keys (≈ 56 bytes each): the
/// memo is cleared when it would hold more, so memory stays bounded
/// however long the run.
const MEMO_MAX_CPU_ENTRIES: usize = 1 << 20;

/// FxHash (rustc's hasher): one multiply and rotate per word. Keys are
/// short slices of small integers the simulator makes itself, so a
/// collision-resistant hash (SipHash, the default) buys nothing and costs
/// most of a look-up; ten lines here spare a dependency.
#[derive(Default, Clone, Copy)]
struct FxHasher {
    hash: u64,
}

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

/// The memoised contention state.
pub(super) struct RateMemo {
    /// CPUs of each memory domain, ascending.
    domains: Vec<Vec<usize>>,
    /// The key each domain's current outcomes were found for: the domain,
    /// then per CPU its running phase id (high half) and MHz (low half).
    keys: Vec<Vec<u64>>,
    /// Scratch for building a key.
    scratch: Vec<u64>,
    /// Key → where its outcomes start in `outcomes`, and the domain's
    /// memory latency, ns.
    memo: HashMap<Box<[u64]>, (usize, f64), BuildHasherDefault<FxHasher>>,
    /// Every memoised domain's outcomes, one after another (one arena
    /// rather than an allocation per key).
    outcomes: Vec<Option<Outcome>>,
    /// Per CPU: how its running task fares in steady state, from the
    /// solve (`None` when idle).
    pub(super) steady: Vec<Option<Outcome>>,
    /// Per memory domain (an index into `domains`): its latency in the
    /// solve its CPUs' `steady` outcomes come from, ns.
    pub(super) latency_ns: Vec<f64>,
    /// Per CPU: how its running task fares now (`steady`, or its warm-up
    /// stage's outcome: warmup.rs).
    pub(super) by_cpu: Vec<Option<Outcome>>,
    /// Per CPU: its memory domain (an index into `domains`).
    of_cpu: Vec<usize>,
    /// Per CPU: the other CPUs of its core (SMT siblings), so a solve's
    /// demands find a busy sibling without scanning the whole domain.
    siblings: Vec<Vec<usize>>,
    /// Per domain: whether its key may have changed since it was built
    /// (such domains are listed in `dirty_list`).
    dirty: Vec<bool>,
    dirty_list: Vec<usize>,
}

impl RateMemo {
    /// An empty memo for `machine`.
    pub(super) fn new(machine: &Machine) -> Self {
        let mut domains = vec![Vec::new(); machine.mem_domains];
        for c in 0..machine.cpus() {
            domains[machine.mem_of[c]].push(c);
        }
        domains.retain(|d| !d.is_empty());
        let mut of_cpu = vec![0; machine.cpus()];
        for (m, cpus) in domains.iter().enumerate() {
            for &c in cpus {
                of_cpu[c] = m;
            }
        }
        let mut siblings = vec![Vec::new(); machine.cpus()];
        for cpus in &domains {
            for &c in cpus {
                siblings[c] = cpus
                    .iter()
                    .copied()
                    .filter(|&o| o != c && machine.core_of[o] == machine.core_of[c])
                    .collect();
            }
        }
        RateMemo {
            siblings,
            latency_ns: vec![machine.spec.memory.latency_ns; domains.len()],
            keys: vec![Vec::new(); domains.len()],
            of_cpu,
            dirty: vec![false; domains.len()],
            dirty_list: Vec::new(),
            domains,
            scratch: Vec::new(),
            memo: HashMap::default(),
            outcomes: Vec::new(),
            steady: vec![None; machine.cpus()],
            by_cpu: vec![None; machine.cpus()],
        }
    }

    /// CPU `c`'s memory domain (an index into `domains`).
    pub(super) fn domain_of(&self, c: usize) -> usize {
        self.of_cpu[c]
    }

    /// Something CPU `c`'s domain key depends on may have changed.
    pub(super) fn mark_dirty(&mut self, c: usize) {
        let m = self.of_cpu[c];
        if !self.dirty[m] {
            self.dirty[m] = true;
            self.dirty_list.push(m);
        }
    }
}

impl SimPlatform {
    /// Bring every running task's speed up to date with who runs where at
    /// which frequency.
    pub(super) fn refresh_rates(&mut self) {
        // Who arrived where decides who is cold (warmup.rs).
        self.note_switches();
        let mut list = std::mem::take(&mut self.rates.dirty_list);
        for &m in &list {
            self.rates.dirty[m] = false;
            let Some(at) = self.rekey(m) else {
                continue;
            };
            for i in 0..self.rates.domains[m].len() {
                let c = self.rates.domains[m][i];
                let steady = self.rates.outcomes[at + i];
                self.rates.steady[c] = steady;
                self.refresh_outcome(c, steady);
            }
        }
        list.clear();
        self.rates.dirty_list = list;
        // A CPU touched without its domain's key changing may still have
        // a new task, or a warm-up stage that ended.
        for i in 0..self.warmup.recheck.len() {
            let c = self.warmup.recheck[i];
            if self.cpu_stale[c] {
                self.refresh_outcome(c, self.rates.steady[c]);
            }
        }
    }

    /// Derive CPU `c`'s outcome now from its `steady` one; if it changed,
    /// integrate the CPU with the old one up to now and find its next
    /// event again (it moves with its speed).
    #[inline(always)]
    fn refresh_outcome(&mut self, c: usize, steady: Option<Outcome>) {
        let o = if self.warmup.cold[c] {
            self.warming_outcome(c, steady)
        } else {
            steady
        };
        let siblings = self.busy_siblings_now(c);
        if self.rates.by_cpu[c] != o || self.busy_siblings[c] != siblings {
            self.integrate_cpu(c);
            self.rates.by_cpu[c] = o;
            self.busy_siblings[c] = siblings;
            self.refresh_cpu_next_of(c);
        }
    }

    /// How many of CPU `c`'s SMT siblings run a task now.
    #[inline(always)]
    fn busy_siblings_now(&self, c: usize) -> u8 {
        let core = &self.machine.core_cpus[self.machine.core_of[c]];
        if core.len() < 2 {
            return 0;
        }
        core.iter()
            .filter(|&&o| o != c && self.kernel.rqs[o].current.is_some())
            .count() as u8
    }

    /// Rebuild memory domain `m`'s key; if it changed, recall (or solve)
    /// its outcomes and return where they start in `outcomes`.
    fn rekey(&mut self, m: usize) -> Option<usize> {
        let memo = &mut self.rates;
        let cpus = &memo.domains[m];
        memo.scratch.clear();
        memo.scratch.push(m as u64);
        // Whatever a CPU's word depends on changes only through `touch`,
        // which marks it stale until the next event is found: the word of
        // a CPU left alone is still the one in the key in force.
        let built = memo.keys[m].len() == cpus.len() + 1;
        for (i, &c) in cpus.iter().enumerate() {
            if built && !self.cpu_stale[c] {
                memo.scratch.push(memo.keys[m][1 + i]);
                continue;
            }
            memo.scratch.push(match self.kernel.rqs[c].current {
                Some(t) => {
                    let task = &self.tasks[t];
                    let mhz = self.domains[self.machine.domain_of[c]].cur_khz / 1000;
                    u64::from(task.phase_ids[task.phase]) << 32 | mhz
                }
                None => 0,
            });
        }
        // Keys are a few words: a plain loop beats a call to memcmp.
        let old = &memo.keys[m];
        if old.len() == memo.scratch.len() && old.iter().zip(&memo.scratch).all(|(a, b)| a == b) {
            return None;
        }
        std::mem::swap(&mut memo.scratch, &mut memo.keys[m]);
        let (at, latency_ns) = match memo.memo.get(&memo.keys[m][..]) {
            Some(&found) => {
                self.stats.memo_hits += 1;
                found
            }
            None => {
                let smt = self.machine.spec.scheduler.smt_cpi_factor;
                let types = &self.machine.core_types;
                let type_of = &self.machine.type_of;
                let mut demands = Vec::new();
                let mut slots = Vec::new();
                for (i, &c) in cpus.iter().enumerate() {
                    if let Some(t) = self.kernel.rqs[c].current {
                        let task = &self.tasks[t];
                        let sibling_busy = memo.siblings[c]
                            .iter()
                            .any(|&o| self.kernel.rqs[o].current.is_some());
                        let khz = self.domains[self.machine.domain_of[c]].cur_khz;
                        demands.push(Demand {
                            phase: &task.profile.phases[task.phase],
                            cpu: c,
                            freq_ghz: khz as f64 / 1e6,
                            cpi_factor: types[type_of[c]].cpi_factor
                                * if sibling_busy { smt } else { 1.0 },
                        });
                        slots.push(i);
                    }
                }
                let solution = solve(&self.machine, &demands);
                self.stats.solves += 1;
                if !solution.converged {
                    self.stats.unconverged += 1;
                }
                if memo.outcomes.len() + cpus.len() > MEMO_MAX_CPU_ENTRIES {
                    memo.memo.clear();
                    memo.outcomes.clear();
                }
                let at = memo.outcomes.len();
                memo.outcomes.resize(at + cpus.len(), None);
                for (i, o) in slots.into_iter().zip(solution.outcomes) {
                    memo.outcomes[at + i] = Some(o);
                }
                let latency_ns = solution.latency_ns[self.machine.mem_of[cpus[0]]];
                memo.memo
                    .insert(memo.keys[m].clone().into_boxed_slice(), (at, latency_ns));
                (at, latency_ns)
            }
        };
        memo.latency_ns[m] = latency_ns;
        Some(at)
    }
}
