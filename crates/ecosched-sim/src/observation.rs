//! The observation model: what a policy may see of the simulated machine.
//!
//! The simulator knows everything: every counter exactly, every run queue,
//! every kernel thread. A Linux machine shows far less, and a policy that
//! only works on simulator truth would not work anywhere else. With
//! [`Observe::Linux`] (the default) a snapshot holds exactly what
//! `LinuxPlatform` would read on the preset's machine:
//!
//! | truth | what Linux shows |
//! |---|---|
//! | every task | the managed tasks only (the command's descendants) |
//! | every hardware event | the preset's PMU events ([`PmuSpec`]) that the policy asked for (plus instructions, for the run's figures) |
//! | exact counts | counts multiplexed when more general-purpose events are open than the PMU has counters: each group counts only in its turn (rotated every [`MUX_INTERVAL_NS`], as the kernel's perf hrtimer does) and is scaled by enabled / running time, like `perf stat`; a group that never ran in an interval gives no value |
//! | per-CPU run-queue length | nothing (Linux has no per-CPU `nr_running` outside debugfs) |
//! | a task's LLC occupancy and memory traffic | only where the PMU table has them `via = "resctrl"` (cache and memory-bandwidth monitoring): exact, never multiplexed (resctrl takes no perf counter), and only for tasks holding a monitoring ID ([`Rmids`]) |
//! | exact per-CPU busy time | `/proc/stat`'s, in whole `USER_HZ` ticks (10 ms) |
//!
//! On-CPU time, run-queue wait (`schedstat`), context switches (`status`),
//! migrations (a perf software event), a task's CPU, affinity, nice and
//! state, the load average and the frequency (`scaling_cur_freq`) are all
//! readable on Linux and pass through unchanged. So does energy: the
//! papers read a power meter (a probe, a wall meter, a blade meter), and so
//! can `LinuxPlatform` (RAPL or hwmon).
//!
//! [`Observe::Full`] shows simulator truth. It exists for tests and for
//! studying what a policy would gain from information no machine gives; it
//! is labelled wherever it appears and never backs a validation row about
//! a policy's gain.

use ecosched_model::pmu::SOFTWARE_COUNTERS;
use ecosched_model::{CounterKind, PmuSpec, Via};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// The kernel's default perf multiplexing interval
/// (`/sys/bus/event_source/devices/cpu/perf_event_mux_interval_ms`, 4 ms).
pub const MUX_INTERVAL_NS: u64 = 4_000_000;

/// `/proc/stat` counts time in `USER_HZ` ticks of 10 ms.
pub const PROC_STAT_TICK_NS: f64 = 10_000_000.0;

/// What a policy is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Observe {
    /// Exactly what `LinuxPlatform` would read on the machine.
    #[default]
    Linux,
    /// Simulator truth (labelled; for tests and what-if studies).
    Full,
}

impl Observe {
    /// Its name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Observe::Linux => "linux",
            Observe::Full => "full",
        }
    }
}

impl fmt::Display for Observe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Observe {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "linux" => Ok(Observe::Linux),
            "full" => Ok(Observe::Full),
            other => Err(format!(
                "unknown observation model {other:?}; valid: linux, full"
            )),
        }
    }
}

/// The hardware counters the simulator accumulates per task, in the order
/// of the arrays below.
pub const HARDWARE: [CounterKind; 8] = CounterKind::PERF_HARDWARE;

/// Position of a hardware counter kind in [`HARDWARE`].
fn slot(kind: CounterKind) -> Option<usize> {
    HARDWARE.iter().position(|&k| k == kind)
}

/// One value per hardware counter kind.
pub type HwValues = [f64; HARDWARE.len()];

/// How the open hardware events share the PMU: which group each counts in
/// (`None`: not open; a fixed-counter event counts in every group).
#[derive(Debug, Clone, PartialEq)]
pub struct Multiplexer {
    /// Number of groups the kernel rotates through (1: no multiplexing).
    groups: usize,
    /// Per hardware kind: not open, always counting, or in group `g`.
    place: [Place; HARDWARE.len()],
    /// Per hardware kind: read through resctrl (so only for a task with a
    /// monitoring ID).
    resctrl: [bool; HARDWARE.len()],
    /// LLC occupancy is read (resctrl's cache monitoring).
    occupancy: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Place {
    Closed,
    Always,
    Group(usize),
}

impl Multiplexer {
    /// The events `LinuxPlatform` would open on a machine with `pmu` for a
    /// policy that needs `required` and wants `wanted`: those of them the
    /// PMU has, plus instructions (every run reports them).
    pub fn for_policy(
        pmu: Option<&PmuSpec>,
        required: &BTreeSet<CounterKind>,
        wanted: &BTreeSet<CounterKind>,
    ) -> Self {
        let mut place = [Place::Closed; HARDWARE.len()];
        let mut resctrl = [false; HARDWARE.len()];
        let Some(pmu) = pmu else {
            return Multiplexer {
                groups: 1,
                place,
                resctrl,
                occupancy: false,
            };
        };
        let asked = |k: CounterKind| required.contains(&k) || wanted.contains(&k);
        let open: Vec<CounterKind> = HARDWARE
            .iter()
            .copied()
            .filter(|k| (asked(*k) || *k == CounterKind::Instructions) && pmu.event(*k).is_some())
            .collect();
        let groups = pmu.multiplex_groups(&open);
        for (g, group) in groups.iter().enumerate() {
            for &k in group {
                if let Some(i) = slot(k) {
                    place[i] = if pmu.fixed.contains(&k) {
                        Place::Always
                    } else {
                        Place::Group(g)
                    };
                }
            }
        }
        // resctrl's events take no perf counter: counted whole, always.
        for &k in &open {
            if let (Some(i), Some(e)) = (slot(k), pmu.event(k)) {
                if e.via == Via::Resctrl {
                    place[i] = Place::Always;
                    resctrl[i] = true;
                }
            }
        }
        let occupancy = asked(CounterKind::LlcOccupancy)
            && pmu
                .event(CounterKind::LlcOccupancy)
                .is_some_and(|e| e.via == Via::Resctrl);
        Multiplexer {
            groups: groups.len().max(1),
            place,
            resctrl,
            occupancy,
        }
    }

    /// Every counter kind a Linux platform with this PMU fills for the
    /// policy: the open hardware events and the software ones.
    pub fn observable(&self) -> BTreeSet<CounterKind> {
        HARDWARE
            .iter()
            .zip(self.place)
            .filter(|(_, p)| *p != Place::Closed)
            .map(|(k, _)| *k)
            .chain(self.occupancy.then_some(CounterKind::LlcOccupancy))
            .chain(SOFTWARE_COUNTERS)
            .collect()
    }

    /// How many groups rotate on the PMU.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// Count `increments` (a task's true counts over `[from_ns, to_ns)`, at
    /// constant rates) into `acc` as the PMU would: each event only while
    /// its group is on the PMU.
    pub fn account(&self, acc: &mut MuxAcc, from_ns: u64, to_ns: u64, increments: &HwValues) {
        let span = (to_ns - from_ns) as f64;
        if span <= 0.0 {
            return;
        }
        if self.groups == 1 {
            // One group never leaves the PMU: every share is exactly 1, so
            // each open event counts its whole increment (the same sums the
            // general path below makes, without working out the turns).
            acc.enabled_ns += span;
            acc.running_ns[0] += span;
            for ((counted, inc), place) in acc.counted.iter_mut().zip(increments).zip(&self.place) {
                if *place != Place::Closed {
                    *counted += inc;
                }
            }
            return;
        }
        let mut share = [0.0; MAX_GROUPS];
        self.shares(from_ns, to_ns, &mut share[..self.groups]);
        acc.enabled_ns += span;
        for (running, s) in acc.running_ns.iter_mut().zip(&share[..self.groups]) {
            *running += s * span;
        }
        for (i, inc) in increments.iter().enumerate() {
            match self.place[i] {
                Place::Closed => {}
                Place::Always => acc.counted[i] += inc,
                Place::Group(g) => acc.counted[i] += inc * share[g],
            }
        }
    }

    /// The fraction of `[from, to)` each group spends on the PMU, with the
    /// groups taking turns of [`MUX_INTERVAL_NS`] from time zero.
    fn shares(&self, from: u64, to: u64, out: &mut [f64]) {
        let n = out.len() as u64;
        if n <= 1 {
            out.iter_mut().for_each(|s| *s = 1.0);
            return;
        }
        let span = (to - from) as f64;
        let cycle = MUX_INTERVAL_NS * n;
        // Whole cycles give every group an equal share; walk only the
        // partial turns at either end.
        let whole = (to - from) / cycle;
        let base = (whole * MUX_INTERVAL_NS) as f64;
        out.iter_mut().for_each(|s| *s = base);
        let mut t = from + whole * cycle;
        while t < to {
            let turn = t / MUX_INTERVAL_NS;
            let end = ((turn + 1) * MUX_INTERVAL_NS).min(to);
            out[(turn % n) as usize] += (end - t) as f64;
            t = end;
        }
        out.iter_mut().for_each(|s| *s /= span);
    }

    /// The deltas a perf reader would report between two readings of a
    /// task's accumulators: each open event's count scaled by enabled over
    /// running time of its group; `None` for events not open and for
    /// groups that never reached the PMU in the interval.
    pub fn scaled_deltas(&self, now: &MuxAcc, before: &MuxAcc) -> [Option<u64>; HARDWARE.len()] {
        let mut out = [None; HARDWARE.len()];
        let enabled = now.enabled_ns - before.enabled_ns;
        for (i, o) in out.iter_mut().enumerate() {
            *o = match self.place[i] {
                Place::Closed => None,
                // Whole counts of the cumulative value, so deltas add up
                // to the truth exactly.
                Place::Always => {
                    Some((now.counted[i].floor() - before.counted[i].floor()).max(0.0) as u64)
                }
                Place::Group(g) => {
                    let running = now.running_ns[g] - before.running_ns[g];
                    let counted = (now.counted[i] - before.counted[i]).max(0.0);
                    // A group that ran less than a nanosecond has no
                    // estimate; perf says "<not counted>".
                    (running >= 1.0).then(|| (counted * enabled / running).round() as u64)
                }
            };
        }
        out
    }
}

/// Most groups one task's events are split into (8 general-purpose events
/// on a 1-counter PMU).
pub const MAX_GROUPS: usize = HARDWARE.len();

/// A task's multiplexed counters, cumulative: what perf's group reads
/// would return (`count`, `time_enabled`, `time_running`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MuxAcc {
    /// Counted while on the PMU, per hardware kind.
    pub counted: HwValues,
    /// Time the task ran (its events were enabled), ns.
    pub enabled_ns: f64,
    /// Time each group was on the PMU while the task ran, ns.
    pub running_ns: [f64; MAX_GROUPS],
}

/// Everything the simulator needs to show a policy what it may see: the
/// mode, the PMU's multiplexing, and the per-CPU `/proc/stat` readings
/// already reported. The platform calls it at the few places where truth
/// would leak: accounting a span's counts, building a task's counters,
/// a CPU's utilisation and run-queue length, and choosing which tasks
/// appear at all.
#[derive(Debug, Clone)]
pub struct Observer {
    mode: Observe,
    mux: Multiplexer,
    /// Cumulative busy ns per CPU, as `/proc/stat` accumulates it.
    busy_total_ns: Vec<f64>,
    /// resctrl's monitoring IDs still free.
    rmids: Rmids,
}

impl Observer {
    /// An observer of a machine with `cpus` CPUs and `pmu`, for a policy
    /// that needs `required` counters and wants `wanted` ones.
    pub fn new(
        mode: Observe,
        cpus: usize,
        pmu: Option<&PmuSpec>,
        required: &BTreeSet<CounterKind>,
        wanted: &BTreeSet<CounterKind>,
    ) -> Self {
        Observer {
            mode,
            mux: Multiplexer::for_policy(pmu, required, wanted),
            busy_total_ns: vec![0.0; cpus],
            rmids: Rmids::new(pmu),
        }
    }

    /// The mode.
    pub fn mode(&self) -> Observe {
        self.mode
    }

    /// How the open events share the PMU.
    pub fn multiplexer(&self) -> &Multiplexer {
        &self.mux
    }

    /// The counters a policy can be given.
    pub fn counters(&self) -> BTreeSet<CounterKind> {
        match self.mode {
            Observe::Full => CounterKind::ALL.into_iter().collect(),
            Observe::Linux => self.mux.observable(),
        }
    }

    /// Whether a task appears in snapshots: Linux sees the command's own
    /// tasks only.
    pub fn shows_task(&self, managed: bool) -> bool {
        managed || self.mode == Observe::Full
    }

    /// A CPU's run-queue length, where it can be read.
    pub fn nr_running(&self, truth: u32) -> Option<u32> {
        (self.mode == Observe::Full).then_some(truth)
    }

    /// CPU `cpu`'s utilisation over an interval of `interval_ns` in which
    /// it was busy for `busy_ns`.
    pub fn utilisation(&mut self, cpu: usize, busy_ns: f64, interval_ns: f64) -> f64 {
        let before = self.busy_total_ns[cpu];
        self.busy_total_ns[cpu] += busy_ns;
        match self.mode {
            Observe::Full => (busy_ns / interval_ns.max(1.0)).min(1.0),
            Observe::Linux => proc_stat_utilisation(before, self.busy_total_ns[cpu], interval_ns),
        }
    }

    /// Count a running task's true increments over `[from_ns, to_ns)` into
    /// its multiplexed accumulators (nothing to do when showing truth).
    pub fn account(&self, acc: &mut MuxAcc, from_ns: u64, to_ns: u64, increments: &HwValues) {
        if self.mode == Observe::Linux {
            self.mux.account(acc, from_ns, to_ns, increments);
        }
    }

    /// Replace a task's exact hardware counts with what perf and resctrl
    /// would report (Linux mode); `now` and `before` are its multiplexed
    /// accumulators at this and the previous observation, `monitored`
    /// whether it holds a resctrl monitoring ID.
    pub fn hardware_counters(
        &self,
        counters: &mut ecosched_model::Counters,
        now: &MuxAcc,
        before: &MuxAcc,
        monitored: bool,
    ) {
        if self.mode == Observe::Full {
            return;
        }
        let d = self.mux.scaled_deltas(now, before);
        for ((kind, value), resctrl) in HARDWARE.iter().zip(d).zip(self.mux.resctrl) {
            counters.set(*kind, if resctrl && !monitored { None } else { value });
        }
        if !(self.mux.occupancy && monitored) {
            counters.llc_occupancy = None;
        }
        split_as_observed(counters);
    }

    /// A monitoring ID for a managed task seen without one, if the policy
    /// reads anything through resctrl and one is free ([`Rmids`]);
    /// whether it got one.
    pub fn monitor(&mut self) -> bool {
        let uses =
            self.mode == Observe::Linux && (self.mux.occupancy || self.mux.resctrl.contains(&true));
        uses && self.rmids.take()
    }

    /// A task holding a monitoring ID exited.
    pub fn release(&mut self) {
        self.rmids.release();
    }
}

/// Scale a task's per-core-type counts to its observed totals: each
/// hybrid PMU's event is multiplexed and scaled like the others. Without
/// observed cycles and instructions there is no split.
fn split_as_observed(c: &mut ecosched_model::Counters) {
    let (Some(cycles), Some(instructions)) = (c.cycles, c.instructions) else {
        c.by_core_type.clear();
        return;
    };
    let scale = |total: u64, sum: u64, x: u64| {
        if sum == 0 {
            0
        } else {
            (x as f64 * total as f64 / sum as f64).round() as u64
        }
    };
    let cyc_sum: u64 = c.by_core_type.iter().map(|t| t.cycles).sum();
    let ins_sum: u64 = c.by_core_type.iter().map(|t| t.instructions).sum();
    for t in &mut c.by_core_type {
        t.cycles = scale(cycles, cyc_sum, t.cycles);
        t.instructions = scale(instructions, ins_sum, t.instructions);
    }
}

/// resctrl's monitoring IDs as ecosched hands them out: one monitoring
/// group per managed task, so a task's occupancy and traffic are its own.
/// A CPU has a fixed number of RMIDs (the PMU table's `rmids`), one taken
/// by the default group. Tasks get one in the order they are first seen
/// and keep it until they exit; a task that finds none free gets one when
/// another exits, and until then its resctrl events read as absent (never
/// as a share of a group's). Bounded by the RMID count; without one in
/// the table, every task gets one.
#[derive(Debug, Clone, PartialEq)]
pub struct Rmids {
    /// IDs left for tasks (`None`: not limited).
    free: Option<u32>,
}

impl Rmids {
    /// The IDs of a machine with `pmu`.
    pub fn new(pmu: Option<&PmuSpec>) -> Self {
        Rmids {
            free: pmu.and_then(|p| p.rmids).map(|n| n.saturating_sub(1)),
        }
    }

    /// Give a task an ID if one is free; whether it got one.
    pub fn take(&mut self) -> bool {
        match &mut self.free {
            None => true,
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                true
            }
        }
    }

    /// A task holding an ID exited: its ID is free again.
    pub fn release(&mut self) {
        if let Some(n) = &mut self.free {
            *n += 1;
        }
    }
}

/// Per-CPU busy time as `/proc/stat` reports it: cumulative, in whole
/// `USER_HZ` ticks. Returns the utilisation over an interval from the
/// cumulative busy nanoseconds before and after it.
pub fn proc_stat_utilisation(busy_before_ns: f64, busy_now_ns: f64, interval_ns: f64) -> f64 {
    let ticks = |ns: f64| (ns / PROC_STAT_TICK_NS).floor();
    let busy = (ticks(busy_now_ns) - ticks(busy_before_ns)) * PROC_STAT_TICK_NS;
    (busy / interval_ns.max(1.0)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecosched_model::PmuEvent;

    fn core2() -> PmuSpec {
        let ev = |kind, raw| PmuEvent {
            kind,
            name: format!("{kind:?}"),
            raw,
            via: ecosched_model::Via::Perf,
        };
        PmuSpec {
            cpuid: None,
            rmids: None,
            counters: 2,
            fixed: vec![CounterKind::Instructions, CounterKind::Cycles],
            events: vec![
                ev(CounterKind::Instructions, None),
                ev(CounterKind::Cycles, None),
                ev(CounterKind::LlcReferences, None),
                ev(CounterKind::LlcMisses, None),
                ev(CounterKind::L1dReferences, None),
                ev(CounterKind::L1dMisses, None),
                ev(CounterKind::LinesIn, Some(0x7024)),
            ],
        }
    }

    fn pam_like() -> Multiplexer {
        let required = [
            CounterKind::Instructions,
            CounterKind::Cycles,
            CounterKind::LlcReferences,
            CounterKind::LlcMisses,
            CounterKind::L1dReferences,
            CounterKind::L1dMisses,
        ]
        .into();
        Multiplexer::for_policy(Some(&core2()), &required, &[CounterKind::LinesIn].into())
    }

    fn rates(x: f64) -> HwValues {
        [x; HARDWARE.len()]
    }

    #[test]
    fn five_general_events_on_two_counters_rotate_in_three_groups() {
        let mux = pam_like();
        assert_eq!(mux.groups(), 3);
        let seen = mux.observable();
        assert!(seen.contains(&CounterKind::LinesIn));
        assert!(!seen.contains(&CounterKind::MemTransactions));
        assert!(seen.contains(&CounterKind::RunqueueWait));
    }

    #[test]
    fn constant_rates_are_estimated_exactly_over_whole_cycles() {
        let mux = pam_like();
        let mut acc = MuxAcc::default();
        // 120 ms at a constant rate: ten whole cycles of three 4 ms turns.
        mux.account(&mut acc, 0, 120_000_000, &rates(1e6));
        let d = mux.scaled_deltas(&acc, &MuxAcc::default());
        for (k, v) in HARDWARE.iter().zip(d) {
            match k {
                CounterKind::MemTransactions => assert_eq!(v, None),
                _ => assert_eq!(v, Some(1_000_000), "{k:?}"),
            }
        }
    }

    #[test]
    fn changing_rates_give_the_multiplexing_error_perf_gives() {
        let mux = pam_like();
        let mut acc = MuxAcc::default();
        // 4 ms of work in the first group's turn, then 8 ms in the others'.
        mux.account(&mut acc, 0, 4_000_000, &rates(100.0));
        mux.account(&mut acc, 4_000_000, 12_000_000, &rates(900.0));
        let d = mux.scaled_deltas(&acc, &MuxAcc::default());
        let i = |k| slot(k).unwrap();
        // Fixed counters see the truth (1000); the first group saw only the
        // quiet turn and extrapolates it, the second only a busy one.
        assert_eq!(d[i(CounterKind::Instructions)], Some(1000));
        assert_eq!(d[i(CounterKind::LlcReferences)], Some(300));
        assert_eq!(d[i(CounterKind::L1dReferences)], Some(1350));
    }

    #[test]
    fn a_group_that_never_ran_has_no_value() {
        let mux = pam_like();
        let mut acc = MuxAcc::default();
        // 3 ms: only the first group's turn.
        mux.account(&mut acc, 0, 3_000_000, &rates(10.0));
        let d = mux.scaled_deltas(&acc, &MuxAcc::default());
        assert!(d[slot(CounterKind::LlcMisses).unwrap()].is_some());
        assert_eq!(d[slot(CounterKind::L1dMisses).unwrap()], None);
    }

    #[test]
    fn without_a_pmu_nothing_hardware_is_seen() {
        let mux = Multiplexer::for_policy(None, &[CounterKind::Cycles].into(), &BTreeSet::new());
        let mut acc = MuxAcc::default();
        mux.account(&mut acc, 0, 10_000_000, &rates(5.0));
        assert!(mux
            .scaled_deltas(&acc, &MuxAcc::default())
            .iter()
            .all(Option::is_none));
        assert_eq!(
            mux.observable(),
            SOFTWARE_COUNTERS.into_iter().collect::<BTreeSet<_>>()
        );
    }

    #[test]
    fn the_linux_observer_hides_what_linux_cannot_read() {
        let required = [CounterKind::Instructions, CounterKind::MemTransactions].into();
        let mut linux = Observer::new(
            Observe::Linux,
            2,
            Some(&core2()),
            &required,
            &BTreeSet::new(),
        );
        assert!(!linux.shows_task(false) && linux.shows_task(true));
        assert_eq!(linux.nr_running(3), None);
        // The preset has no memory-transaction event: not offered.
        assert!(!linux.counters().contains(&CounterKind::MemTransactions));
        assert!((linux.utilisation(0, 25e6, 100e6) - 0.2).abs() < 1e-12);
        let mut full = Observer::new(
            Observe::Full,
            2,
            Some(&core2()),
            &required,
            &BTreeSet::new(),
        );
        assert!(full.shows_task(false));
        assert_eq!(full.nr_running(3), Some(3));
        assert!(full.counters().contains(&CounterKind::MemTransactions));
        assert!((full.utilisation(0, 25e6, 100e6) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn proc_stat_counts_whole_ticks() {
        // 25 ms busy of 100 ms: /proc/stat saw two ticks.
        assert!((proc_stat_utilisation(0.0, 25e6, 100e6) - 0.2).abs() < 1e-12);
        // A busy CPU is fully busy.
        assert!((proc_stat_utilisation(95e6, 195e6, 100e6) - 1.0).abs() < 1e-12);
        assert_eq!("full".parse::<Observe>(), Ok(Observe::Full));
        assert!("exact".parse::<Observe>().is_err());
    }
}
