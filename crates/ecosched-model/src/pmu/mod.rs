//! What a machine's performance-monitoring unit offers: which hardware
//! events exist (perf's generic events, or the vendor's own with their raw
//! `perf_event_attr.config` encoding), and how many general-purpose
//! counters there are to count them at once.
//!
//! The same description serves both worlds, and comes from the same
//! tables ([`table`]: one data file per PMU). The simulator's `--observe
//! linux` model shows a policy only these events, multiplexed as perf would
//! multiplex them when more are open than there are counters;
//! `LinuxPlatform` opens the raw ones for real when the running CPU is the
//! one the description was matched to ([`PmuSpec::cpuid`]).

use crate::sample::CounterKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

pub mod table;

pub use table::{named_or_inline, PmuTable, PmuTableError};

/// Counters read from procfs or perf software events: every Linux machine
/// has them, PMU or not.
pub const SOFTWARE_COUNTERS: [CounterKind; 4] = [
    CounterKind::OnCpuTime,
    CounterKind::RunqueueWait,
    CounterKind::ContextSwitches,
    CounterKind::Migrations,
];

/// A machine's PMU: a built-in table's ([`PmuTable::spec`]) or one a
/// machine file writes inline ([`named_or_inline`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PmuSpec {
    /// The CPU this description was matched to, as the kernel's pmu-events
    /// map names it (`<vendor>-<family>-<model>` from `/proc/cpuinfo`, e.g.
    /// `GenuineIntel-6-0F` for Core 2): `LinuxPlatform` opens the raw
    /// events only on that CPU. `None` for a simulated machine's.
    #[serde(default)]
    pub cpuid: Option<String>,
    /// General-purpose counters per CPU. More events than this are
    /// multiplexed (time-shared and scaled by perf).
    pub counters: u32,
    /// Events counted on dedicated fixed counters (they never multiplex).
    #[serde(default)]
    pub fixed: Vec<CounterKind>,
    /// Every hardware event the machine can count.
    pub events: Vec<PmuEvent>,
    /// Monitoring groups resctrl can watch at once (the CPU's RMIDs:
    /// `/sys/fs/resctrl/info/L3_MON/num_rmids`, CPUID leaf 0xF), one of
    /// them the default group's. Bounds how many tasks get the events
    /// marked `via = "resctrl"`; `None` where the table gives no figure.
    #[serde(default)]
    pub rmids: Option<u32>,
}

/// One hardware event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PmuEvent {
    /// What it counts.
    pub kind: CounterKind,
    /// The vendor's name (`L2_LINES_IN.SELF.ANY`), or perf's generic name.
    pub name: String,
    /// The raw `perf_event_attr.config` (`PERF_TYPE_RAW`); `None` for one of
    /// perf's generic hardware or cache events, or an event had another way
    /// ([`Via`]).
    #[serde(default)]
    pub raw: Option<u64>,
    /// How Linux gets it on the real machine.
    #[serde(default)]
    pub via: Via,
}

/// How Linux gets an event on the real machine. The simulator shows a
/// policy the same kinds either way; the Linux resolver opens each the way
/// its table says, and only the perf ones take a general-purpose counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// A perf event: generic by name (`cache-misses`) or `raw`.
    #[default]
    Perf,
    /// The vendor's event name, encoded for the running PMU by libpfm4
    /// (`L2_LINES_IN:ALL`), so no encoding is written by hand.
    Libpfm,
    /// An event the kernel names under
    /// `/sys/bus/event_source/devices/<pmu>/events/` (Arm PMUs).
    Sysfs,
    /// resctrl monitoring of the task's group (CMT occupancy, MBM bytes):
    /// no perf counter at all.
    Resctrl,
}

impl PmuSpec {
    /// The hardware event for a counter kind, if the PMU has one.
    pub fn event(&self, kind: CounterKind) -> Option<&PmuEvent> {
        self.events.iter().find(|e| e.kind == kind)
    }

    /// Every counter a Linux platform could fill on this machine: the
    /// PMU's events plus the software ones.
    pub fn observable(&self) -> BTreeSet<CounterKind> {
        self.events
            .iter()
            .map(|e| e.kind)
            .chain(SOFTWARE_COUNTERS)
            .collect()
    }

    /// Split `open` hardware events into the groups perf rotates through
    /// (events resctrl monitors take no counter and are in none):
    /// events on fixed counters are always counted (they appear in every
    /// group); the others share the general-purpose counters, `counters`
    /// at a time. One group means no multiplexing.
    /// Events whose ratio policies read (references and misses of one
    /// cache) are kept in one group, so the ratio comes from one window.
    pub fn multiplex_groups(&self, open: &[CounterKind]) -> Vec<Vec<CounterKind>> {
        let counted = |k: &&CounterKind| self.event(**k).is_none_or(|e| e.via != Via::Resctrl);
        let (fixed, mut general): (Vec<CounterKind>, Vec<CounterKind>) = open
            .iter()
            .filter(counted)
            .partition(|k| self.fixed.contains(k));
        general.sort_by_key(|k| pairing_order(*k));
        general.dedup();
        let per = self.counters.max(1) as usize;
        if general.is_empty() {
            return vec![fixed];
        }
        general
            .chunks(per)
            .map(|chunk| fixed.iter().chain(chunk).copied().collect())
            .collect()
    }
}

/// Where an event goes when general-purpose events are packed into groups:
/// each cache's references next to its misses.
fn pairing_order(kind: CounterKind) -> u8 {
    match kind {
        CounterKind::Instructions => 0,
        CounterKind::Cycles => 1,
        CounterKind::LlcReferences => 2,
        CounterKind::LlcMisses => 3,
        CounterKind::L1dReferences => 4,
        CounterKind::L1dMisses => 5,
        CounterKind::LinesIn => 6,
        CounterKind::MemTransactions => 7,
        CounterKind::LlcOccupancy => 8,
        _ => 9,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core2() -> PmuSpec {
        let ev = |kind, name: &str, raw| PmuEvent {
            kind,
            name: name.into(),
            raw,
            via: Via::Perf,
        };
        PmuSpec {
            cpuid: Some("GenuineIntel-6-0F".into()),
            rmids: None,
            counters: 2,
            fixed: vec![CounterKind::Instructions, CounterKind::Cycles],
            events: vec![
                ev(CounterKind::Instructions, "instructions", None),
                ev(CounterKind::Cycles, "cycles", None),
                ev(CounterKind::LlcReferences, "cache-references", None),
                ev(CounterKind::LlcMisses, "cache-misses", None),
                ev(CounterKind::LinesIn, "L2_LINES_IN.SELF.ANY", Some(0x7024)),
            ],
        }
    }

    #[test]
    fn three_general_events_on_two_counters_take_two_groups() {
        let pmu = core2();
        let groups = pmu.multiplex_groups(&[
            CounterKind::Instructions,
            CounterKind::Cycles,
            CounterKind::LlcReferences,
            CounterKind::LlcMisses,
            CounterKind::LinesIn,
        ]);
        assert_eq!(groups.len(), 2);
        for g in &groups {
            assert!(g.contains(&CounterKind::Instructions));
        }
        // References and misses of the LLC share a window.
        assert!(groups[0].contains(&CounterKind::LlcReferences));
        assert!(groups[0].contains(&CounterKind::LlcMisses));
        assert_eq!(
            pmu.multiplex_groups(&[CounterKind::Instructions, CounterKind::LlcMisses])
                .len(),
            1
        );
    }

    #[test]
    fn observable_includes_software_counters() {
        let obs = core2().observable();
        assert!(obs.contains(&CounterKind::OnCpuTime));
        assert!(obs.contains(&CounterKind::LinesIn));
        assert!(!obs.contains(&CounterKind::MemTransactions));
    }
}
