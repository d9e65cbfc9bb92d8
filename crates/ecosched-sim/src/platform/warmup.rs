//! Cache warm-up: a task that starts running behind a last-level cache
//! other than the one it last ran behind (moved across caches by the
//! kernel or a policy, or run for the first time) has none of its lines
//! there, and misses more until it has brought its share back in
//! (`contention::warming` holds the physics; this file the bookkeeping).
//!
//! ```text
//!  switch-in on CPU c (cache L)            integrate_cpu               stage end
//!  ───────────────────────────────►  occupancy += lines brought in  ──► next stage
//!  same L as last run: nothing          (instr · api · m̄ · line)        (a CPU event)
//!  other L: occupancy 0 (or what it left in L, if nothing ran there since)
//! ```
//!
//! What persists: a task that runs again behind the cache it last ran
//! behind (after a slice, a sleep, or a move to a CPU sharing that cache)
//! keeps its lines, as the steady-state solve already assumes for tasks
//! time-sharing a cache. A task that comes back to a cache it left keeps
//! what it had there only if no task ran behind that cache meanwhile
//! (`CacheWarmup::activity`); otherwise it starts from zero again.
//!
//! Memory is bounded: two cache residences per task, a counter per cache
//! and the task last seen on each CPU, whatever the run length. The
//! contention memo is untouched: it keeps the steady-state outcomes, and a
//! warming task's outcome is derived from its steady one per CPU.

use super::SimPlatform;
use crate::contention::{warming, Outcome};
use crate::machine::Machine;

/// A task's lines in one cache.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Residence {
    /// The cache (index into `Machine::llc`).
    llc: usize,
    /// KiB of its lines there; `INFINITY` once warm (it holds its share,
    /// whatever that becomes).
    occupancy_kib: f64,
    /// The cache's activity count just after the task last left it.
    left: u64,
}

/// A task's cache state: where its lines are.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Warmth {
    /// The cache it last ran behind (`None`: it never ran).
    here: Option<Residence>,
    /// The cache it ran behind before that.
    before: Option<Residence>,
    /// Where its current warm-up stage ends, KiB.
    stage_end_kib: f64,
}

/// Per-machine warm-up bookkeeping.
pub(super) struct CacheWarmup {
    /// Per cache: switches in and out on its CPUs so far. A task that left
    /// a cache finds its lines there only if this has not moved since (and
    /// no other task runs there now): the simplest defensible rule, since
    /// a running neighbour refills a few MiB in milliseconds, far below the
    /// time between two moves of one task; a cache left idle keeps them.
    activity: Vec<u64>,
    /// Per CPU: the task (slot) last seen running on it; cleared when the
    /// slot is freed ([`CacheWarmup::forget`]), so a reused slot is never
    /// mistaken for the task that held it.
    seen: Vec<Option<usize>>,
    /// Per CPU: whether that task is still warming up (its outcome is
    /// derived from its steady one; otherwise it is the steady one).
    pub(super) cold: Vec<bool>,
    /// How many CPUs are `cold`.
    cold_cpus: usize,
    /// Cache line size, KiB.
    pub(super) line_kib: f64,
    /// Per task slot: where its lines are (kept beside the task table so
    /// that the hot task fields stay as they were).
    pub(super) tasks: Vec<Warmth>,
    /// CPUs touched since the last call whose outcome may differ from
    /// their steady one's derivation: a new task, or a warming one.
    pub(super) recheck: Vec<usize>,
}

impl CacheWarmup {
    /// Nothing seen yet on `machine`.
    pub(super) fn new(machine: &Machine) -> Self {
        CacheWarmup {
            activity: vec![0; machine.llc.len()],
            seen: vec![None; machine.cpus()],
            cold: vec![false; machine.cpus()],
            cold_cpus: 0,
            line_kib: f64::from(machine.spec.memory.line_bytes) / 1024.0,
            recheck: Vec::new(),
            tasks: Vec::new(),
        }
    }
}

impl SimPlatform {
    /// Bring every task's cache residence up to date with who runs where:
    /// for each CPU whose running task changed since the last call (the
    /// kernel lists them), the task that left it and the task that
    /// arrived. Called before any outcome is derived, so every departure
    /// is counted before any arrival is judged. Lists in `recheck` the CPUs
    /// whose outcome must be derived again even if their steady one did
    /// not change: a new task, or a warming one that was touched.
    pub(super) fn note_switches(&mut self) {
        let mut switched = std::mem::take(&mut self.warmup.recheck);
        self.kernel.take_switched(&mut switched);
        for &c in &switched {
            let Some(t) = self.warmup.seen[c] else {
                continue;
            };
            if self.kernel.rqs[c].current == Some(t) {
                continue;
            }
            let llc = self.machine.llc_of[c];
            self.warmup.activity[llc] += 1;
            if let Some(r) = &mut self.warmup.tasks[t].here {
                if r.llc == llc {
                    r.left = self.warmup.activity[llc];
                }
            }
        }
        for &c in &switched {
            let now_on = self.kernel.rqs[c].current;
            if self.warmup.seen[c] == now_on {
                continue;
            }
            self.note_schedule(c, now_on);
            self.warmup.seen[c] = now_on;
            self.warmup.set_cold(c, false);
            let Some(t) = now_on else {
                continue;
            };
            let llc = self.machine.llc_of[c];
            let w = self.warmup.tasks[t];
            if w.here.is_none_or(|r| r.llc != llc) {
                let quiet = self.machine.llc[llc]
                    .1
                    .iter()
                    .all(|&o| o == c || self.kernel.rqs[o].current.is_none());
                let kept = w
                    .before
                    .filter(|b| b.llc == llc && b.left == self.warmup.activity[llc] && quiet)
                    .map_or(0.0, |b| b.occupancy_kib);
                if kept == 0.0 {
                    self.stats.cold_starts += 1;
                }
                let warmth = &mut self.warmup.tasks[t];
                warmth.before = w.here;
                warmth.here = Some(Residence {
                    llc,
                    occupancy_kib: kept,
                    left: 0,
                });
            }
            let cold = self.warmup.tasks[t]
                .here
                .is_some_and(|r| r.occupancy_kib.is_finite());
            self.warmup.set_cold(c, cold);
            self.warmup.activity[llc] += 1;
        }
        // Warming tasks whose CPU was touched start a new stage (a stage
        // end is such a touch).
        if self.warmup.cold_cpus > 0 {
            for &c in &self.stale {
                if self.warmup.cold[c] && self.kernel.rqs[c].current.is_some() {
                    switched.push(c);
                }
            }
        }
        self.warmup.recheck = switched;
    }

    /// How CPU `c`'s task fares now, if it may still be warming up
    /// (`CacheWarmup::cold`; otherwise it is its `steady` outcome): the
    /// current stage's (which this starts afresh from its occupancy now),
    /// or `steady` once it is warm.
    #[inline(never)]
    pub(super) fn warming_outcome(&mut self, c: usize, steady: Option<Outcome>) -> Option<Outcome> {
        let steady = steady?;
        let Some(t) = self.kernel.rqs[c].current else {
            return Some(steady);
        };
        let task = &self.tasks[t];
        let warmth = &mut self.warmup.tasks[t];
        let Some(r) = &mut warmth.here else {
            return Some(steady);
        };
        if !r.occupancy_kib.is_finite() {
            return Some(steady);
        }
        let phase = &task.profile.phases[task.phase];
        match warming(
            phase,
            &steady,
            self.rates.latency_ns[self.rates.domain_of(c)],
            r.occupancy_kib,
            self.machine.spec.memory.line_bytes,
        ) {
            Some(w) => {
                warmth.stage_end_kib = w.until_kib;
                Some(w.outcome)
            }
            None => {
                r.occupancy_kib = f64::INFINITY;
                self.warmup.set_cold(c, false);
                Some(steady)
            }
        }
    }

    /// Instructions task `t` runs with outcome `o` before its warm-up
    /// stage ends (infinite when it is warm).
    pub(super) fn warmup_instr_left(&self, t: usize, o: &Outcome) -> f64 {
        let task = &self.tasks[t];
        let warmth = &self.warmup.tasks[t];
        match warmth.here {
            Some(r) if r.occupancy_kib.is_finite() => {
                let per_instr =
                    task.profile.phases[task.phase].api * o.miss_ratio * self.warmup.line_kib;
                if per_instr > 0.0 {
                    (warmth.stage_end_kib - r.occupancy_kib).max(0.0) / per_instr
                } else {
                    f64::INFINITY
                }
            }
            _ => f64::INFINITY,
        }
    }
}

/// Grow a task's occupancy by the lines it brought in running `instr`
/// instructions of a phase with `api` at outcome `o` (called from
/// `integrate_cpu`); returns the lines beyond what its `steady` outcome
/// would have brought in (zero once it is warm).
#[cold]
#[inline(never)]
pub(super) fn grow(
    warmth: &mut Warmth,
    api: f64,
    o: &Outcome,
    steady: Option<&Outcome>,
    instr: f64,
    line_kib: f64,
) -> f64 {
    let end = warmth.stage_end_kib;
    match &mut warmth.here {
        Some(r) if r.occupancy_kib.is_finite() => {
            let lines = instr * api * o.miss_ratio;
            r.occupancy_kib = (r.occupancy_kib + lines * line_kib).min(end);
            steady.map_or(0.0, |s| {
                instr * api * (o.miss_ratio - s.miss_ratio).max(0.0)
            })
        }
        _ => 0.0,
    }
}

impl CacheWarmup {
    /// Mark CPU `c`'s task as warming up or warm.
    fn set_cold(&mut self, c: usize, cold: bool) {
        if self.cold[c] != cold {
            self.cold[c] = cold;
            if cold {
                self.cold_cpus += 1;
            } else {
                self.cold_cpus -= 1;
            }
        }
    }

    /// Slot `t` is freed: a CPU that still shows it as last seen (its
    /// exit was the last event before an observation) has seen it leave,
    /// so that the slot's next task is seen arriving.
    pub(super) fn forget(&mut self, t: usize, machine: &Machine) {
        for c in 0..self.seen.len() {
            if self.seen[c] == Some(t) {
                self.seen[c] = None;
                self.set_cold(c, false);
                self.activity[machine.llc_of[c]] += 1;
            }
        }
    }

    /// A new task takes slot `t`: it has never run.
    pub(super) fn new_task(&mut self, t: usize) {
        if t >= self.tasks.len() {
            self.tasks.resize(t + 1, Warmth::default());
        }
        self.tasks[t] = Warmth::default();
    }
}
