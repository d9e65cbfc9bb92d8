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
            .map(|c| format!("{c:?}"))
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
            out.push("frequency control (cpufreq)".into());
        }
        if self.gang && !caps.gang {
            out.push("gang stop/continue".into());
        }
        out
    }
}
