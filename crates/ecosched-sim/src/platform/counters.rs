//! Per-task cumulative counters: the truth a PMU and the scheduler's
//! accounting would count, accrued span by span in `integrate_cpu` and read
//! out as deltas in `observe`. Kept apart so that an observation model
//! (what perf on a real machine could read: multiplexing, missing events)
//! has one place to take the truth from and nothing else to know about.

use crate::contention::Outcome;
use crate::observation::HwValues;
#[cfg(doc)]
use crate::observation::HARDWARE;
use crate::profile::Phase;
use ecosched_model::{CoreTypeCounts, Counters};

/// Cumulative counters, kept as floats so nothing is lost to rounding.
/// Run-queue wait, context switches and migrations are the kernel's own
/// bookkeeping (`kernel::Sched`) and join these in [`Acc::delta`].
#[derive(Debug, Clone, Default)]
pub(super) struct Acc {
    pub(super) instructions: f64,
    pub(super) cycles: f64,
    pub(super) llc_refs: f64,
    pub(super) llc_misses: f64,
    pub(super) lines_in: f64,
    pub(super) l1d_refs: f64,
    pub(super) l1d_misses: f64,
    pub(super) on_cpu_ns: f64,
    /// Bytes of its LLC the task held at the end of its last span on a
    /// CPU: its share in the contention model, no more than its working
    /// set (a level; its lines stay while it sleeps).
    pub(super) llc_bytes: f64,
    /// On a hybrid machine, (on-CPU ns, cycles, instructions) per core
    /// type, as one per-task event per hybrid PMU counts them; empty on
    /// a machine with one core type.
    pub(super) by_type: Vec<[f64; 3]>,
}

/// The kernel's counts for a task, cumulative.
#[derive(Debug, Clone, Copy)]
pub(super) struct SchedCounts {
    pub(super) wait_ns: u64,
    pub(super) switches: u64,
    pub(super) migrations: u64,
}

impl Acc {
    /// Accrue `instr` instructions of `phase` run over `dtf` ns at `ghz`,
    /// with the contention outcome `o`, on a CPU of core type `core_type`
    /// of the machine's `types`.
    /// Returns the span's hardware increments in [`HARDWARE`] order, for
    /// the observation model's multiplexed view.
    pub(super) fn run(
        &mut self,
        phase: &Phase,
        o: &Outcome,
        instr: f64,
        ghz: f64,
        dtf: f64,
        (core_type, types): (usize, usize),
    ) -> HwValues {
        let (api, l1d) = (phase.api, phase.l1d_refs_per_instr);
        let demand = 1.0 - phase.prefetch_coverage;
        let cycles = ghz * dtf;
        let refs = instr * api;
        // Every line brought in counts as a line in; only the ones the
        // prefetcher did not cover are demand misses.
        let misses = instr * api * o.miss_ratio * demand;
        let lines = instr * api * o.miss_ratio;
        self.instructions += instr;
        self.cycles += cycles;
        self.l1d_refs += instr * l1d;
        self.l1d_misses += refs;
        self.llc_refs += refs;
        self.llc_misses += misses;
        self.lines_in += lines;
        self.on_cpu_ns += dtf;
        self.llc_bytes = o.share_kib.min(phase.miss.ws_kib) * 1024.0;
        if types > 1 {
            self.by_type.resize(types, [0.0; 3]);
            let t = &mut self.by_type[core_type];
            t[0] += dtf;
            t[1] += cycles;
            t[2] += instr;
        }
        // Memory transactions are the lines that crossed the bus.
        [instr, cycles, refs, misses, lines, instr * l1d, refs, lines]
    }

    /// The counters between `before` (and `sched_before`) and now, as a
    /// PMU and schedstat would report them: whole events, never negative.
    pub(super) fn delta(
        &self,
        before: &Acc,
        sched: SchedCounts,
        sched_before: SchedCounts,
    ) -> Counters {
        let d = |x: f64, y: f64| Some((x.floor() - y.floor()).max(0.0) as u64);
        Counters {
            instructions: d(self.instructions, before.instructions),
            cycles: d(self.cycles, before.cycles),
            llc_references: d(self.llc_refs, before.llc_refs),
            llc_misses: d(self.llc_misses, before.llc_misses),
            lines_in: d(self.lines_in, before.lines_in),
            l1d_references: d(self.l1d_refs, before.l1d_refs),
            l1d_misses: d(self.l1d_misses, before.l1d_misses),
            mem_transactions: d(self.lines_in, before.lines_in),
            llc_occupancy: Some(self.llc_bytes.round() as u64),
            on_cpu_ns: d(self.on_cpu_ns, before.on_cpu_ns),
            runqueue_wait_ns: Some(sched.wait_ns.saturating_sub(sched_before.wait_ns)),
            context_switches: Some(sched.switches - sched_before.switches),
            migrations: Some(sched.migrations - sched_before.migrations),
            by_core_type: self
                .by_type
                .iter()
                .enumerate()
                .map(|(i, now)| {
                    let was = before.by_type.get(i).copied().unwrap_or_default();
                    let d = |k: usize| (now[k].floor() - was[k].floor()).max(0.0) as u64;
                    CoreTypeCounts {
                        on_cpu_ns: d(0),
                        cycles: d(1),
                        instructions: d(2),
                    }
                })
                .collect(),
        }
    }
}
