//! What a platform can measure and actuate, and what a policy needs. The
//! engine compares the two before the first interval so that a policy never
//! runs on data a platform cannot provide.

use crate::sample::CounterKind;
use crate::sample::PowerSource;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// What a platform provides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Counters it fills in.
    pub counters: BTreeSet<CounterKind>,
    /// Energy figures and whether they are measured or estimated.
    pub power: Option<PowerSource>,
    /// Per-task affinity.
    pub affinity: bool,
    /// Frequency control (governors and fixed frequencies).
    pub frequency: bool,
    /// Gang stop/continue.
    pub gang: bool,
}

/// What a policy needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Requirements {
    /// Counters it reads.
    pub counters: BTreeSet<CounterKind>,
    /// Counters it uses when the machine has them but can do without (PAM
    /// prefers lines-in to LLC misses). A platform that must choose which
    /// events to open opens these too.
    #[serde(default)]
    pub wanted: BTreeSet<CounterKind>,
    /// Whether it needs energy figures.
    pub power: bool,
    /// Whether it sets affinity.
    pub affinity: bool,
    /// Whether it sets frequencies or governors.
    pub frequency: bool,
    /// Whether it stops and continues tasks.
    pub gang: bool,
}

impl Requirements {
    /// Everything the policy needs that the platform lacks, in words; empty
    /// when the policy can run.
    pub fn missing(&self, caps: &Capabilities) -> Vec<String> {
        let mut out = Vec::new();
        let counters: Vec<String> = self
            .counters
            .difference(&caps.counters)
            .map(|c| signal(*c))
            .collect();
        if !counters.is_empty() {
            out.push(format!("counters {}", counters.join(", ")));
        }
        if self.power && caps.power.is_none() {
            out.push("energy measurement".into());
        }
        if self.affinity && !caps.affinity {
            out.push("affinity control".into());
        }
        if self.frequency && !caps.frequency {
            out.push(
                "frequency control (cpufreq; where the hardware picks the frequency itself, \
                 as autonomous HWP or EPP-only control does, there is none to set)"
                    .into(),
            );
        }
        if self.gang && !caps.gang {
            out.push("gang stop/continue".into());
        }
        out
    }
}

/// A counter named by what it measures, then by its key, so that a refusal
/// says which signal is missing in words a user can look up: "lines into
/// the last-level cache (lines_in)".
pub fn signal(kind: CounterKind) -> String {
    let (meaning, key) = match kind {
        CounterKind::Instructions => ("instructions retired", "instructions"),
        CounterKind::Cycles => ("core cycles", "cycles"),
        CounterKind::LlcReferences => ("last-level cache references", "llc_references"),
        CounterKind::LlcMisses => ("last-level cache misses", "llc_misses"),
        CounterKind::LinesIn => ("lines into the last-level cache", "lines_in"),
        CounterKind::L1dReferences => ("L1 data cache references", "l1d_references"),
        CounterKind::L1dMisses => ("L1 data cache misses", "l1d_misses"),
        CounterKind::MemTransactions => (
            "memory traffic in cache lines (a bus event or memory-bandwidth monitoring)",
            "mem_transactions",
        ),
        CounterKind::LlcOccupancy => (
            "last-level cache occupancy (cache monitoring, resctrl)",
            "llc_occupancy",
        ),
        CounterKind::OnCpuTime => ("time on a CPU", "on_cpu_time"),
        CounterKind::RunqueueWait => ("time waiting for a CPU", "runqueue_wait"),
        CounterKind::ContextSwitches => ("context switches", "context_switches"),
        CounterKind::Migrations => ("CPU migrations", "migrations"),
    };
    format!("{meaning} ({key})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_counter_is_named_by_meaning_and_key() {
        let needs = Requirements {
            counters: [CounterKind::Instructions, CounterKind::LinesIn].into(),
            frequency: true,
            ..Requirements::default()
        };
        let caps = Capabilities {
            counters: [CounterKind::Instructions].into(),
            power: None,
            affinity: true,
            frequency: false,
            gang: false,
        };
        let missing = needs.missing(&caps);
        assert_eq!(
            missing[0],
            "counters lines into the last-level cache (lines_in)"
        );
        assert!(missing[1].starts_with("frequency control (cpufreq"));
        // Every kind's key is its name in machine files and JSON.
        for kind in CounterKind::ALL {
            let key = serde_json::to_string(&kind).unwrap();
            assert!(signal(kind).ends_with(&format!("({})", key.trim_matches('"'))));
        }
    }
}
