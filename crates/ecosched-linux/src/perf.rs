//! Per-thread hardware and software counters through `perf_event_open(2)`,
//! behind a seam.
//!
//! [`PerfBackend`] is the one place the syscall is made, as in the
//! `perf-event` crate's `hooks`: [`SystemPerf`] opens real counter groups
//! with `perf-event2`; [`FakePerf`] replays scripted values, scripted
//! unavailability and multiplexing so the hardware paths are tested on
//! machines without a PMU (this VM among them).
//!
//! Hardware events (instructions, cycles, LLC and L1D read accesses/misses)
//! and software events (task-clock, context-switches, cpu-migrations) go in
//! *separate* groups: a group is scheduled onto the PMU all or nothing, so
//! one missing hardware event must not take the always-available software
//! events down with it.
//!
//! When more hardware events are asked for than the PMU has counters, the
//! kernel time-shares them and reports how long each group was enabled and
//! how long it actually counted. A delta is scaled by
//! Δtime_enabled / Δtime_running ([`scaled_delta`]), as `perf stat` does; a
//! group that never got onto the PMU during an interval has no estimate
//! (`None`), which is different from having counted zero.

use ecosched_model::CounterKind;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

/// One perf event ecosched can count per thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Event {
    /// Instructions retired (`PERF_COUNT_HW_INSTRUCTIONS`).
    Instructions,
    /// Core cycles (`PERF_COUNT_HW_CPU_CYCLES`).
    Cycles,
    /// Last-level cache read accesses (`LL`/`READ`/`ACCESS` cache event).
    LlcReferences,
    /// Last-level cache read misses (`LL`/`READ`/`MISS`).
    LlcMisses,
    /// L1 data cache read accesses (`L1D`/`READ`/`ACCESS`).
    L1dReferences,
    /// L1 data cache read misses (`L1D`/`READ`/`MISS`).
    L1dMisses,
    /// Time on a CPU in ns, kept by the kernel (`PERF_COUNT_SW_TASK_CLOCK`).
    TaskClock,
    /// Context switches (`PERF_COUNT_SW_CONTEXT_SWITCHES`).
    ContextSwitches,
    /// Moves to another CPU (`PERF_COUNT_SW_CPU_MIGRATIONS`).
    CpuMigrations,
    /// A model-specific event, as the signal resolver ([`crate::signals`])
    /// encoded it for this machine's PMU.
    Raw {
        /// What it counts.
        kind: CounterKind,
        /// The PMU type and config words.
        code: RawCode,
    },
}

/// A model-specific event as `perf_event_attr` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RawCode {
    /// `perf_event_attr.type`: `PERF_TYPE_RAW` for the core PMU, or a
    /// PMU's own type (from sysfs, or as libpfm4 reports it).
    pub pmu_type: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// `perf_event_attr.config1` (an extra register some events need).
    pub config1: u64,
}

impl RawCode {
    /// `PERF_TYPE_RAW` in `perf_event_attr.type`.
    pub const PERF_TYPE_RAW: u32 = 4;

    /// A `PERF_TYPE_RAW` event with this config.
    pub fn raw(config: u64) -> RawCode {
        RawCode {
            pmu_type: Self::PERF_TYPE_RAW,
            config,
            config1: 0,
        }
    }
}

impl std::fmt::Display for RawCode {
    /// `r1ff1` for a plain raw event (as `perf stat -e` takes it), else
    /// the type and config words.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pmu_type == Self::PERF_TYPE_RAW && self.config1 == 0 {
            return write!(f, "r{:x}", self.config);
        }
        write!(f, "type {} config {:#x}", self.pmu_type, self.config)?;
        if self.config1 != 0 {
            write!(f, " config1 {:#x}", self.config1)?;
        }
        Ok(())
    }
}

impl perf_event::events::Event for RawCode {
    fn update_attrs(self, attr: &mut perf_event_open_sys::bindings::perf_event_attr) {
        attr.type_ = self.pmu_type;
        attr.config = self.config;
        attr.config1 = self.config1;
    }
}

impl Event {
    /// The hardware events, in the order the hardware group is opened.
    pub const HARDWARE: [Event; 6] = [
        Event::Instructions,
        Event::Cycles,
        Event::LlcReferences,
        Event::LlcMisses,
        Event::L1dReferences,
        Event::L1dMisses,
    ];

    /// The software events, in the order the software group is opened.
    pub const SOFTWARE: [Event; 3] = [
        Event::TaskClock,
        Event::ContextSwitches,
        Event::CpuMigrations,
    ];

    /// Whether the event needs the PMU.
    pub fn is_hardware(self) -> bool {
        Event::HARDWARE.contains(&self) || matches!(self, Event::Raw { .. })
    }

    /// The counter of the model this event fills (task-clock measures the
    /// same thing as schedstat's on-CPU time).
    pub fn counter_kind(self) -> CounterKind {
        match self {
            Event::Instructions => CounterKind::Instructions,
            Event::Cycles => CounterKind::Cycles,
            Event::LlcReferences => CounterKind::LlcReferences,
            Event::LlcMisses => CounterKind::LlcMisses,
            Event::L1dReferences => CounterKind::L1dReferences,
            Event::L1dMisses => CounterKind::L1dMisses,
            Event::TaskClock => CounterKind::OnCpuTime,
            Event::ContextSwitches => CounterKind::ContextSwitches,
            Event::CpuMigrations => CounterKind::Migrations,
            Event::Raw { kind, .. } => kind,
        }
    }

    /// The name `perf list` uses (for a raw event, `r<config in hex>` as
    /// `perf stat -e` takes it, or its type and config words).
    pub fn perf_name(self) -> String {
        let name = match self {
            Event::Instructions => "instructions",
            Event::Cycles => "cycles",
            Event::LlcReferences => "LLC-loads",
            Event::LlcMisses => "LLC-load-misses",
            Event::L1dReferences => "L1-dcache-loads",
            Event::L1dMisses => "L1-dcache-load-misses",
            Event::TaskClock => "task-clock",
            Event::ContextSwitches => "context-switches",
            Event::CpuMigrations => "cpu-migrations",
            Event::Raw { code, .. } => return code.to_string(),
        };
        name.to_string()
    }
}

/// One read of a counter group: cumulative values since it was opened, in
/// the order the events were given, and the group's cumulative times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupReading {
    /// Raw (unscaled) cumulative count of each event.
    pub values: Vec<u64>,
    /// Time the group was enabled (its task was scheduled in), ns.
    pub time_enabled_ns: u64,
    /// Time the group was actually on the PMU, ns; less than enabled when
    /// the kernel multiplexed it.
    pub time_running_ns: u64,
}

/// The change of event `index` between two readings of one group, scaled
/// for multiplexing: Δvalue × Δenabled / Δrunning.
///
/// `None` when the event is not in the readings, when the counter went
/// backwards (the readings are not from the same group), or when the group
/// was enabled but never ran on the PMU during the interval — there is no
/// estimate then, and reporting zero would be a lie.
pub fn scaled_delta(prev: &GroupReading, now: &GroupReading, index: usize) -> Option<u64> {
    let value = now
        .values
        .get(index)?
        .checked_sub(*prev.values.get(index)?)?;
    let enabled = now.time_enabled_ns.checked_sub(prev.time_enabled_ns)?;
    let running = now.time_running_ns.checked_sub(prev.time_running_ns)?;
    if running >= enabled {
        // Not multiplexed (or a task that did not run: both zero).
        return Some(value);
    }
    if running == 0 {
        return None;
    }
    let scaled = u128::from(value) * u128::from(enabled) / u128::from(running);
    Some(u64::try_from(scaled).unwrap_or(u64::MAX))
}

/// An open counter group on one thread. Dropping it closes the counters.
pub trait PerfGroup: Send {
    /// Read every event of the group and the group's times.
    fn read(&mut self) -> io::Result<GroupReading>;
}

/// Why a counter group could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("perf_event_open({events}) on thread {tid}: {}", describe_open_error(.source))]
pub struct PerfOpenError {
    /// The thread.
    pub tid: u32,
    /// The events asked for, by their `perf list` names.
    pub events: String,
    /// The syscall's error.
    pub source: io::Error,
}

impl PerfOpenError {
    /// An error for `events` on `tid`.
    pub fn new(tid: u32, events: &[Event], source: io::Error) -> Self {
        let names: Vec<String> = events.iter().map(|e| e.perf_name()).collect();
        PerfOpenError {
            tid,
            events: names.join(","),
            source,
        }
    }

    /// Whether the thread exited (ESRCH): normal, not a missing feature.
    pub fn is_gone(&self) -> bool {
        self.source.raw_os_error() == Some(nix::libc::ESRCH)
    }

    /// The reason in words, for telling the operator which events are missing.
    pub fn reason(&self) -> String {
        describe_open_error(&self.source)
    }
}

/// Translate `perf_event_open` errnos (perf_event_open(2) "ERRORS") into
/// what they mean for an operator.
fn describe_open_error(e: &io::Error) -> String {
    use nix::libc;
    let hint = match e.raw_os_error() {
        Some(libc::ENOENT) => "no PMU: perf_event_open returned ENOENT (event not supported here)",
        Some(libc::EOPNOTSUPP) => "not supported by this PMU: perf_event_open returned EOPNOTSUPP",
        Some(libc::ENODEV) => "no such PMU: perf_event_open returned ENODEV",
        Some(libc::EINVAL) => "event not valid on this CPU: perf_event_open returned EINVAL",
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "permission denied: needs CAP_PERFMON (or root) or a lower /proc/sys/kernel/perf_event_paranoid"
        }
        Some(libc::ESRCH) => "the thread has exited (ESRCH)",
        Some(libc::EMFILE) => "out of file descriptors (EMFILE): raise RLIMIT_NOFILE",
        Some(libc::ENOSPC) => "no free hardware counter (ENOSPC)",
        _ => "",
    };
    if hint.is_empty() {
        e.to_string()
    } else {
        hint.to_string()
    }
}

/// The seam around `perf_event_open`: open one group of events counting
/// one thread (on any CPU, not inherited by children — ecosched opens a
/// group per thread it discovers).
pub trait PerfBackend: Send {
    /// Open and enable a group counting `events` on thread `tid`.
    fn open_group(&self, tid: u32, events: &[Event]) -> Result<Box<dyn PerfGroup>, PerfOpenError>;
}

/// The real backend: `perf_event_open(2)` through `perf-event2`.
///
/// Kernel and user time are both counted (`exclude_kernel = 0`): a context
/// switch happens in the kernel, so a user-only software counter would
/// always read zero. Hypervisor time is excluded, as `perf` does by default.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemPerf;

struct SystemGroup {
    leader: perf_event::Counter,
    members: Vec<perf_event::Counter>,
}

impl SystemPerf {
    fn builder(event: Event, tid: u32) -> perf_event::Builder<'static> {
        use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware, Software};
        let cache = |which, result| Cache {
            which,
            operation: CacheOp::READ,
            result,
        };
        let mut b = match event {
            Event::Instructions => perf_event::Builder::new(Hardware::INSTRUCTIONS),
            Event::Cycles => perf_event::Builder::new(Hardware::CPU_CYCLES),
            Event::LlcReferences => {
                perf_event::Builder::new(cache(CacheId::LL, CacheResult::ACCESS))
            }
            Event::LlcMisses => perf_event::Builder::new(cache(CacheId::LL, CacheResult::MISS)),
            Event::L1dReferences => {
                perf_event::Builder::new(cache(CacheId::L1D, CacheResult::ACCESS))
            }
            Event::L1dMisses => perf_event::Builder::new(cache(CacheId::L1D, CacheResult::MISS)),
            Event::TaskClock => perf_event::Builder::new(Software::TASK_CLOCK),
            Event::ContextSwitches => perf_event::Builder::new(Software::CONTEXT_SWITCHES),
            Event::CpuMigrations => perf_event::Builder::new(Software::CPU_MIGRATIONS),
            Event::Raw { code, .. } => perf_event::Builder::new(code),
        };
        // A PID that does not fit in pid_t cannot exist; -1 would mean "any
        // process", so clamp to a value the kernel rejects with ESRCH.
        let pid = nix::libc::pid_t::try_from(tid).unwrap_or(nix::libc::pid_t::MAX);
        b.observe_pid(pid)
            .any_cpu()
            .inherit(false)
            .exclude_kernel(false)
            .exclude_hv(true);
        b
    }
}

impl PerfBackend for SystemPerf {
    fn open_group(&self, tid: u32, events: &[Event]) -> Result<Box<dyn PerfGroup>, PerfOpenError> {
        let fail = |e| PerfOpenError::new(tid, events, e);
        let (first, rest) = events.split_first().ok_or_else(|| {
            fail(io::Error::new(
                io::ErrorKind::InvalidInput,
                "empty event group",
            ))
        })?;
        let mut leader_builder = Self::builder(*first, tid);
        if rest.is_empty() {
            // One event (the migrations, where `schedstat` counts the
            // rest): read as a single counter, a third cheaper than a
            // group of one, and without the group read's allocation.
            leader_builder.read_format(
                perf_event::ReadFormat::TOTAL_TIME_ENABLED
                    | perf_event::ReadFormat::TOTAL_TIME_RUNNING,
            );
            let mut leader = leader_builder.build().map_err(fail)?;
            leader.enable().map_err(fail)?;
            return Ok(Box::new(SystemGroup {
                leader,
                members: Vec::new(),
            }));
        }
        leader_builder.read_format(
            perf_event::ReadFormat::GROUP
                | perf_event::ReadFormat::ID
                | perf_event::ReadFormat::TOTAL_TIME_ENABLED
                | perf_event::ReadFormat::TOTAL_TIME_RUNNING,
        );
        let mut leader = leader_builder.build().map_err(fail)?;
        let mut members = Vec::with_capacity(rest.len());
        for event in rest {
            members.push(
                Self::builder(*event, tid)
                    .build_with_group(&mut leader)
                    .map_err(fail)?,
            );
        }
        leader.enable_group().map_err(fail)?;
        Ok(Box::new(SystemGroup { leader, members }))
    }
}

impl PerfGroup for SystemGroup {
    fn read(&mut self) -> io::Result<GroupReading> {
        let ns = |d: Option<std::time::Duration>| {
            d.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
                .ok_or_else(|| io::Error::other("perf group read lacks its times"))
        };
        if self.members.is_empty() {
            let one = self.leader.read_count_and_time()?;
            return Ok(GroupReading {
                values: vec![one.count],
                time_enabled_ns: one.time_enabled,
                time_running_ns: one.time_running,
            });
        }
        let data = self.leader.read_group()?;
        let missing = || io::Error::other("perf group read lacks a member's value");
        let mut values = Vec::with_capacity(1 + self.members.len());
        values.push(data.get(&self.leader).ok_or_else(missing)?.value());
        for member in &self.members {
            values.push(data.get(member).ok_or_else(missing)?.value());
        }
        Ok(GroupReading {
            values,
            time_enabled_ns: ns(data.time_enabled())?,
            time_running_ns: ns(data.time_running())?,
        })
    }
}

/// Which counters this machine can provide, found once at start so the
/// platform can say which are missing (and why) a single time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterAvailability {
    /// Counters that will be measured.
    pub available: BTreeSet<CounterKind>,
    /// Counters that will stay `None`, each with the reason.
    pub unavailable: Vec<(CounterKind, String)>,
}

impl CounterAvailability {
    /// Whether `kind` will be measured.
    pub fn has(&self, kind: CounterKind) -> bool {
        self.available.contains(&kind)
    }

    /// Mark `kind` available (removing any earlier reason it was not).
    pub fn add(&mut self, kind: CounterKind) {
        self.unavailable.retain(|(k, _)| *k != kind);
        self.available.insert(kind);
    }

    /// One line per missing counter, for the start-up message.
    pub fn describe_missing(&self) -> Vec<String> {
        self.unavailable
            .iter()
            .map(|(kind, why)| format!("{kind:?}: {why}"))
            .collect()
    }
}

/// Which perf events open on this machine: each event is tried alone on the
/// calling thread, so one missing event does not hide the others.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventProbe {
    /// Events that opened.
    pub available: Vec<Event>,
    /// Events that did not, with the reason.
    pub unavailable: Vec<(Event, String)>,
}

impl EventProbe {
    /// The available events among `group`, in `group`'s order.
    pub fn usable(&self, group: &[Event]) -> Vec<Event> {
        group
            .iter()
            .copied()
            .filter(|e| self.available.contains(e))
            .collect()
    }
}

/// Try every [`Event`] on the calling thread.
pub fn probe_events(backend: &dyn PerfBackend) -> EventProbe {
    probe_events_with(backend, &[])
}

/// Try every generic [`Event`] and the given raw ones on the calling thread.
pub fn probe_events_with(backend: &dyn PerfBackend, raw: &[Event]) -> EventProbe {
    let tid = u32::try_from(nix::unistd::gettid().as_raw()).unwrap_or(0);
    let mut probe = EventProbe::default();
    for event in Event::HARDWARE
        .into_iter()
        .chain(Event::SOFTWARE)
        .chain(raw.iter().copied())
    {
        match backend
            .open_group(tid, &[event])
            .and_then(|mut g| g.read().map_err(|e| PerfOpenError::new(tid, &[event], e)))
        {
            Ok(_) => probe.available.push(event),
            Err(e) => probe
                .unavailable
                .push((event, format!("{}: {}", event.perf_name(), e.reason()))),
        }
    }
    probe
}

/// The counters perf can provide here. Lines brought into the LLC and
/// memory transactions have no generic perf event (they need model-specific
/// raw events), so they are always reported missing; on-CPU time from
/// task-clock is listed, but the task reader takes it from schedstat.
pub fn probe(backend: &dyn PerfBackend) -> CounterAvailability {
    availability_from(&probe_events(backend))
}

/// Turn an event probe into counter availability.
pub fn availability_from(events: &EventProbe) -> CounterAvailability {
    let mut out = CounterAvailability::default();
    for (event, why) in &events.unavailable {
        out.unavailable.push((event.counter_kind(), why.clone()));
    }
    for event in &events.available {
        out.add(event.counter_kind());
    }
    for kind in [CounterKind::LinesIn, CounterKind::MemTransactions] {
        if !out.has(kind) && !out.unavailable.iter().any(|(k, _)| *k == kind) {
            out.unavailable.push((
                kind,
                "no generic perf event (needs a model-specific event: this CPU's PMU table or an [events] entry; see the counter sources notice)".to_string(),
            ));
        }
    }
    out
}

/// Scripted per-thread state of a [`FakePerf`].
#[derive(Debug, Default)]
struct FakeState {
    /// Errno returned when an event is opened.
    unavailable: BTreeMap<Event, i32>,
    /// Cumulative count per (thread, event).
    values: BTreeMap<(u32, Event), u64>,
    /// Cumulative enabled time, and running time of the hardware group, per
    /// thread; software groups always run while enabled.
    times_ns: BTreeMap<u32, (u64, u64)>,
    /// Groups currently open per thread.
    open: BTreeMap<u32, usize>,
    /// Threads that have exited (open fails with ESRCH).
    exited: BTreeSet<u32>,
    /// Every (thread, event) a group was opened with.
    opened: BTreeSet<(u32, Event)>,
}

/// A scripted [`PerfBackend`] for tests: counts, enabled/running times
/// (to simulate multiplexing) and unavailable events are set by the test
/// through a clone of the handle given to the reader.
#[derive(Debug, Clone, Default)]
pub struct FakePerf {
    state: Arc<Mutex<FakeState>>,
}

impl FakePerf {
    /// A fake on which every event opens and counts nothing.
    pub fn new() -> Self {
        FakePerf::default()
    }

    fn with<R>(&self, f: impl FnOnce(&mut FakeState) -> R) -> R {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut guard)
    }

    /// Make opening `event` fail with `errno` (e.g. `ENOENT` for no PMU).
    pub fn set_unavailable(&self, event: Event, errno: i32) {
        self.with(|s| s.unavailable.insert(event, errno));
    }

    /// Whether a group with `event` was ever opened on `tid` (the fake keeps
    /// the events of each open).
    pub fn opened(&self, tid: u32, event: Event) -> bool {
        self.with(|s| s.opened.contains(&(tid, event)))
    }

    /// Make every hardware event fail as on a machine without a PMU.
    pub fn without_pmu(self) -> Self {
        for event in Event::HARDWARE {
            self.set_unavailable(event, nix::libc::ENOENT);
        }
        self
    }

    /// Add `count` to `event` on thread `tid`.
    pub fn add(&self, tid: u32, event: Event, count: u64) {
        self.with(|s| *s.values.entry((tid, event)).or_default() += count);
    }

    /// Let `enabled_ns` pass for thread `tid`, of which the hardware group
    /// was on the PMU for `hw_running_ns`.
    pub fn advance(&self, tid: u32, enabled_ns: u64, hw_running_ns: u64) {
        self.with(|s| {
            let t = s.times_ns.entry(tid).or_default();
            t.0 += enabled_ns;
            t.1 += hw_running_ns;
        });
    }

    /// Make thread `tid` exit: opening a group fails with ESRCH.
    pub fn exit(&self, tid: u32) {
        self.with(|s| s.exited.insert(tid));
    }

    /// Groups currently open on `tid` (to check they are closed when a task goes).
    pub fn open_groups(&self, tid: u32) -> usize {
        self.with(|s| s.open.get(&tid).copied().unwrap_or(0))
    }
}

struct FakeGroup {
    state: Arc<Mutex<FakeState>>,
    tid: u32,
    events: Vec<Event>,
}

impl PerfBackend for FakePerf {
    fn open_group(&self, tid: u32, events: &[Event]) -> Result<Box<dyn PerfGroup>, PerfOpenError> {
        self.with(|s| {
            let errno = if s.exited.contains(&tid) {
                Some(nix::libc::ESRCH)
            } else {
                events.iter().find_map(|e| s.unavailable.get(e).copied())
            };
            if let Some(errno) = errno {
                return Err(PerfOpenError::new(
                    tid,
                    events,
                    io::Error::from_raw_os_error(errno),
                ));
            }
            *s.open.entry(tid).or_default() += 1;
            s.opened.extend(events.iter().map(|e| (tid, *e)));
            Ok(())
        })?;
        Ok(Box::new(FakeGroup {
            state: Arc::clone(&self.state),
            tid,
            events: events.to_vec(),
        }))
    }
}

impl PerfGroup for FakeGroup {
    fn read(&mut self) -> io::Result<GroupReading> {
        let s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (enabled, hw_running) = s.times_ns.get(&self.tid).copied().unwrap_or((0, 0));
        let hardware = self.events.iter().any(|e| e.is_hardware());
        Ok(GroupReading {
            values: self
                .events
                .iter()
                .map(|e| s.values.get(&(self.tid, *e)).copied().unwrap_or(0))
                .collect(),
            time_enabled_ns: enabled,
            time_running_ns: if hardware { hw_running } else { enabled },
        })
    }
}

impl Drop for FakeGroup {
    fn drop(&mut self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = s.open.get_mut(&self.tid) {
            *n = n.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn reading(values: &[u64], enabled: u64, running: u64) -> GroupReading {
        GroupReading {
            values: values.to_vec(),
            time_enabled_ns: enabled,
            time_running_ns: running,
        }
    }

    #[test]
    fn deltas_are_scaled_by_enabled_over_running() {
        let a = reading(&[1_000, 50], 1_000, 1_000);
        // 2 ms enabled, 0.5 ms on the PMU: counts ×4.
        let b = reading(&[3_000, 150], 3_000, 1_500);
        assert_eq!(scaled_delta(&a, &b, 0), Some(8_000));
        assert_eq!(scaled_delta(&a, &b, 1), Some(400));
        // Not multiplexed: the raw delta.
        let c = reading(&[4_000, 150], 4_000, 2_500);
        assert_eq!(scaled_delta(&b, &c, 0), Some(1_000));
        assert_eq!(scaled_delta(&b, &c, 1), Some(0));
    }

    #[test]
    fn a_group_that_never_ran_has_no_estimate() {
        let a = reading(&[1_000], 1_000, 1_000);
        let b = reading(&[1_000], 2_000, 1_000);
        assert_eq!(scaled_delta(&a, &b, 0), None);
        // A task that did not run at all counted zero, truly.
        assert_eq!(scaled_delta(&a, &a, 0), Some(0));
        // Out of range or backwards: no value.
        assert_eq!(scaled_delta(&a, &a, 1), None);
        assert_eq!(scaled_delta(&b, &reading(&[10], 3_000, 2_000), 0), None);
    }

    #[test]
    fn scaling_does_not_overflow() {
        let a = reading(&[0], 0, 0);
        let b = reading(&[u64::MAX / 2], u64::MAX / 2, 1);
        assert_eq!(scaled_delta(&a, &b, 0), Some(u64::MAX));
    }

    #[test]
    fn the_probe_names_each_missing_event_once() {
        let fake = FakePerf::new().without_pmu();
        let avail = probe(&fake);
        for event in Event::SOFTWARE {
            assert!(avail.has(event.counter_kind()), "{event:?}");
        }
        for event in Event::HARDWARE {
            let kind = event.counter_kind();
            assert!(!avail.has(kind));
            let reasons: Vec<_> = avail
                .unavailable
                .iter()
                .filter(|(k, _)| *k == kind)
                .collect();
            assert_eq!(reasons.len(), 1, "{kind:?}");
            assert!(reasons[0].1.contains("no PMU") && reasons[0].1.contains(&event.perf_name()));
        }
        assert!(!avail.has(CounterKind::LinesIn));
        assert_eq!(avail.describe_missing().len(), Event::HARDWARE.len() + 2);
        assert_eq!(fake.open_groups(0), 0, "probe groups are closed");
    }

    #[test]
    fn one_missing_hardware_event_leaves_the_others() {
        let fake = FakePerf::new();
        fake.set_unavailable(Event::L1dMisses, nix::libc::EOPNOTSUPP);
        let events = probe_events(&fake);
        assert_eq!(events.usable(&Event::HARDWARE).len(), 5);
        assert_eq!(events.unavailable.len(), 1);
        assert!(events.unavailable[0].1.contains("EOPNOTSUPP"));
    }

    #[test]
    fn open_errors_explain_themselves() {
        let e = PerfOpenError::new(
            7,
            &Event::SOFTWARE,
            io::Error::from_raw_os_error(nix::libc::EACCES),
        );
        let text = e.to_string();
        assert!(
            text.contains("task-clock,context-switches,cpu-migrations")
                && text.contains("CAP_PERFMON"),
            "{text}"
        );
        assert!(!e.is_gone());
        assert!(
            PerfOpenError::new(7, &[], io::Error::from_raw_os_error(nix::libc::ESRCH)).is_gone()
        );
    }
}
