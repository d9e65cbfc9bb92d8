//! What a platform measured over one interval. Counter fields are deltas
//! since the previous observation and are `None` when the platform cannot
//! measure them (no PMU, no RAPL): absent is never reported as zero.

use crate::cpuset::{CpuId, CpuSet};
use crate::task::{ProcessId, TaskId, TaskState};
use serde::{Deserialize, Serialize};

/// A counter a platform may provide (used to declare capabilities).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterKind {
    /// Instructions retired.
    Instructions,
    /// Core cycles.
    Cycles,
    /// Shared (last-level) cache references.
    LlcReferences,
    /// Shared (last-level) cache misses.
    LlcMisses,
    /// Lines brought into the shared cache (demand and prefetch), PAM's `L`.
    LinesIn,
    /// L1 data cache references.
    L1dReferences,
    /// L1 data cache misses.
    L1dMisses,
    /// Memory (bus) transactions: cache lines moved between the cores and
    /// memory (a bus event, the CPU's memory-traffic events, or resctrl's
    /// memory-bandwidth monitoring divided by the line size).
    MemTransactions,
    /// Bytes of the last-level cache a task holds at the end of the
    /// interval: a level, not a delta (resctrl's cache monitoring, CMT).
    LlcOccupancy,
    /// Time on a CPU.
    OnCpuTime,
    /// Time runnable but waiting for a CPU.
    RunqueueWait,
    /// Context switches.
    ContextSwitches,
    /// CPU migrations.
    Migrations,
}

/// Counter deltas over one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Instructions retired.
    pub instructions: Option<u64>,
    /// Core cycles while running.
    pub cycles: Option<u64>,
    /// Shared-cache references.
    pub llc_references: Option<u64>,
    /// Shared-cache misses.
    pub llc_misses: Option<u64>,
    /// Lines brought into the shared cache.
    pub lines_in: Option<u64>,
    /// L1D references.
    pub l1d_references: Option<u64>,
    /// L1D misses.
    pub l1d_misses: Option<u64>,
    /// Memory transactions.
    pub mem_transactions: Option<u64>,
    /// Bytes of the last-level cache held at the end of the interval (a
    /// level: accumulating keeps the latest).
    #[serde(default)]
    pub llc_occupancy: Option<u64>,
    /// Nanoseconds on a CPU.
    pub on_cpu_ns: Option<u64>,
    /// Nanoseconds runnable but not running.
    pub runqueue_wait_ns: Option<u64>,
    /// Context switches.
    pub context_switches: Option<u64>,
    /// CPU migrations.
    pub migrations: Option<u64>,
    /// On a hybrid machine, the task's counts on each core type (in the
    /// machine's core-type order): Linux opens a per-task event once per
    /// hybrid PMU (`cpu_core`, `cpu_atom`), each counting only while the
    /// task runs on a CPU of that type, and the event's time running is
    /// its time there. Empty on machines with one core type or without
    /// cycles and instructions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_core_type: Vec<CoreTypeCounts>,
}

/// One core type's part of a task's counts over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CoreTypeCounts {
    /// Nanoseconds on CPUs of this type.
    pub on_cpu_ns: u64,
    /// Core cycles there.
    pub cycles: u64,
    /// Instructions retired there.
    pub instructions: u64,
}

impl CounterKind {
    /// The kinds a hardware counter of the PMU counts through perf (LLC
    /// occupancy is a resctrl level; the software kinds come from procfs
    /// and perf's software events): what a machine's PMU table or a
    /// user's `[events]` override can name, and what the simulator
    /// accumulates per task.
    pub const PERF_HARDWARE: [CounterKind; 8] = [
        CounterKind::Instructions,
        CounterKind::Cycles,
        CounterKind::LlcReferences,
        CounterKind::LlcMisses,
        CounterKind::LinesIn,
        CounterKind::L1dReferences,
        CounterKind::L1dMisses,
        CounterKind::MemTransactions,
    ];

    /// Every counter kind.
    pub const ALL: [CounterKind; 13] = [
        CounterKind::Instructions,
        CounterKind::Cycles,
        CounterKind::LlcReferences,
        CounterKind::LlcMisses,
        CounterKind::LinesIn,
        CounterKind::L1dReferences,
        CounterKind::L1dMisses,
        CounterKind::MemTransactions,
        CounterKind::LlcOccupancy,
        CounterKind::OnCpuTime,
        CounterKind::RunqueueWait,
        CounterKind::ContextSwitches,
        CounterKind::Migrations,
    ];
}

impl Counters {
    /// The value of one counter, if measured.
    pub fn get(&self, kind: CounterKind) -> Option<u64> {
        match kind {
            CounterKind::Instructions => self.instructions,
            CounterKind::Cycles => self.cycles,
            CounterKind::LlcReferences => self.llc_references,
            CounterKind::LlcMisses => self.llc_misses,
            CounterKind::LinesIn => self.lines_in,
            CounterKind::L1dReferences => self.l1d_references,
            CounterKind::L1dMisses => self.l1d_misses,
            CounterKind::MemTransactions => self.mem_transactions,
            CounterKind::LlcOccupancy => self.llc_occupancy,
            CounterKind::OnCpuTime => self.on_cpu_ns,
            CounterKind::RunqueueWait => self.runqueue_wait_ns,
            CounterKind::ContextSwitches => self.context_switches,
            CounterKind::Migrations => self.migrations,
        }
    }

    /// Set one counter (`None`: not measured).
    pub fn set(&mut self, kind: CounterKind, value: Option<u64>) {
        let slot = match kind {
            CounterKind::Instructions => &mut self.instructions,
            CounterKind::Cycles => &mut self.cycles,
            CounterKind::LlcReferences => &mut self.llc_references,
            CounterKind::LlcMisses => &mut self.llc_misses,
            CounterKind::LinesIn => &mut self.lines_in,
            CounterKind::L1dReferences => &mut self.l1d_references,
            CounterKind::L1dMisses => &mut self.l1d_misses,
            CounterKind::MemTransactions => &mut self.mem_transactions,
            CounterKind::LlcOccupancy => &mut self.llc_occupancy,
            CounterKind::OnCpuTime => &mut self.on_cpu_ns,
            CounterKind::RunqueueWait => &mut self.runqueue_wait_ns,
            CounterKind::ContextSwitches => &mut self.context_switches,
            CounterKind::Migrations => &mut self.migrations,
        };
        *slot = value;
    }

    /// Add `other`'s deltas to these (a counter measured in either stays
    /// measured; one measured in neither stays absent). Occupancy is a
    /// level, so the later reading replaces the earlier.
    pub fn accumulate(&mut self, other: &Counters) {
        fn add(total: &mut Option<u64>, x: Option<u64>) {
            if let Some(x) = x {
                *total = Some(total.unwrap_or(0) + x);
            }
        }
        add(&mut self.instructions, other.instructions);
        add(&mut self.cycles, other.cycles);
        add(&mut self.llc_references, other.llc_references);
        add(&mut self.llc_misses, other.llc_misses);
        add(&mut self.lines_in, other.lines_in);
        add(&mut self.l1d_references, other.l1d_references);
        add(&mut self.l1d_misses, other.l1d_misses);
        add(&mut self.mem_transactions, other.mem_transactions);
        if other.llc_occupancy.is_some() {
            self.llc_occupancy = other.llc_occupancy;
        }
        add(&mut self.on_cpu_ns, other.on_cpu_ns);
        add(&mut self.runqueue_wait_ns, other.runqueue_wait_ns);
        add(&mut self.context_switches, other.context_switches);
        add(&mut self.migrations, other.migrations);
        if self.by_core_type.len() < other.by_core_type.len() {
            self.by_core_type
                .resize(other.by_core_type.len(), CoreTypeCounts::default());
        }
        for (t, o) in self.by_core_type.iter_mut().zip(&other.by_core_type) {
            t.on_cpu_ns += o.on_cpu_ns;
            t.cycles += o.cycles;
            t.instructions += o.instructions;
        }
    }

    /// Cycles per instruction, when both are measured and non-zero.
    pub fn cpi(&self) -> Option<f64> {
        match (self.cycles, self.instructions) {
            (Some(c), Some(i)) if i > 0 => Some(c as f64 / i as f64),
            _ => None,
        }
    }
}

/// One task over one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSample {
    /// Identity.
    pub id: TaskId,
    /// The process it belongs to.
    pub process: ProcessId,
    /// Human name (command, or the scenario's task name).
    pub name: String,
    /// Whether ecosched manages it (policies act only on managed tasks).
    pub managed: bool,
    /// State at observation time.
    pub state: TaskState,
    /// CPU it last ran on.
    pub cpu: Option<CpuId>,
    /// CPUs it may run on now.
    pub allowed: CpuSet,
    /// Nice value.
    pub nice: i32,
    /// Time it started, seconds since the run began.
    pub started_s: f64,
    /// Time it finished, when it has (set on the `Exited` sample).
    pub finished_s: Option<f64>,
    /// Deltas over the interval.
    pub counters: Counters,
}

/// One CPU over one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuSample {
    /// The CPU.
    pub id: CpuId,
    /// Current frequency in kHz, if known.
    pub freq_khz: Option<u64>,
    /// Fraction of the interval it was busy, in [0, 1].
    pub utilisation: f64,
    /// Runnable tasks queued on it (including the running one), if known.
    /// Linux exposes no per-CPU run-queue length to user space without
    /// debugfs, so `--observe linux` leaves it `None`.
    pub nr_running: Option<u32>,
}

/// The system load as `/proc/loadavg` gives it: exponentially damped means
/// of runnable (and uninterruptible) tasks, sampled every 5 s, over one,
/// five and fifteen minutes, plus the instantaneous runnable count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoadAvg {
    /// One-minute load average.
    pub one: f64,
    /// Five-minute load average.
    pub five: f64,
    /// Fifteen-minute load average.
    pub fifteen: f64,
    /// Tasks runnable right now (field 4's numerator).
    pub runnable: u32,
    /// Tasks that exist (field 4's denominator).
    pub total: u32,
}

/// Where an energy figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PowerSource {
    /// A hardware meter or counter (RAPL, hwmon, wall meter, simulator meter).
    Measured,
    /// A model from utilisation and the P-state table.
    Estimated,
}

/// Which energy meter a figure refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Meter {
    /// Processor packages only (RAPL `package`, or a probe on the CPU supply).
    Package,
    /// The whole machine (a wall meter).
    System,
}

/// Energy over one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PowerSample {
    /// Joules used by processor packages, if measured or estimated.
    pub package_j: Option<f64>,
    /// Joules used by the whole system, if measured or estimated.
    pub system_j: Option<f64>,
    /// Where the figures come from, when there are any.
    pub source: Option<PowerSource>,
}

impl PowerSample {
    /// The reading of one meter.
    pub fn energy_j(&self, meter: Meter) -> Option<f64> {
        match meter {
            Meter::Package => self.package_j,
            Meter::System => self.system_j,
        }
    }
}
