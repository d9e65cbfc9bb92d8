//! Per-machine calibration data: measured facts about one machine that some
//! policies need and that discovery cannot read from sysfs.
//!
//! - Activity vectors (Merkel et al., EuroSys'10, §4.1): the peaks each
//!   component is normalised to, and one *translation vector* per P-state
//!   that scales a vector sampled at that frequency to the maximum one.
//! - The EDP factor of the frequency heuristic (Merkel §4.4):
//!   `EDP_factor(x) = intercept + slope·x` (Q6600: 1.6 − 0.8·x).
//! - The heterogeneous cpuset partition (Patel's thesis, §5): how many CPUs
//!   run at which fixed frequency.
//!
//! A simulator preset carries it in its `[calibration]` table; on a real
//! machine it comes from a calibration file written by `ecosched calibrate`.
//! It is typed data, never flat strings, so a malformed entry is refused
//! where it is loaded, not deep inside a policy. It knows nothing of the
//! machine it describes: a [`Topology`](crate::topology::Topology) carries
//! it, and checks a partition against itself ([`Partition::validate`], in
//! `topology`).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Everything calibrated about one machine. Every part is optional: a
/// policy that needs a missing part refuses to start and names it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// Where the data came from (a preset, a calibration file).
    #[serde(default)]
    pub source: Option<String>,
    /// Activity-vector normalisation and translation vectors.
    #[serde(default)]
    pub activity: Option<ActivityCalibration>,
    /// Coefficients of the frequency heuristic's EDP factor.
    #[serde(default)]
    pub edp_factor: Option<EdpFactor>,
    /// The heterogeneous cpuset partition.
    #[serde(default)]
    pub partition: Option<Partition>,
}

/// Activity-vector calibration (Merkel §4.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivityCalibration {
    /// Peak memory-bus transactions per second of the machine, in LLC
    /// misses (the bus component's fallback event).
    pub peak_mem_per_s: f64,
    /// The same peak in memory transactions (cache lines moved to or from
    /// memory: a bus event, the CPU's memory-traffic events or MBM), where
    /// the calibration runs could count them: the bus component then
    /// reads memory traffic, prefetches included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_mem_transactions_per_s: Option<f64>,
    /// Peak shared-cache requests per cycle (paper: one per four cycles).
    pub peak_cache_per_cycle: f64,
    /// One translation vector per P-state, ascending by frequency.
    pub translation: Vec<TranslationVector>,
}

/// Component-wise factors that express a vector sampled at `freq_khz` as if
/// it had been sampled at the highest frequency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranslationVector {
    /// The P-state the vector was sampled at, kHz.
    pub freq_khz: u64,
    /// Memory-bus component factor.
    pub bus: f64,
    /// Shared-cache component factor.
    pub cache: f64,
    /// Core (IPC) component factor.
    pub core: f64,
}

impl ActivityCalibration {
    /// The translation vector for a P-state, if calibrated.
    pub fn translation_at(&self, freq_khz: u64) -> Option<&TranslationVector> {
        self.translation.iter().find(|t| t.freq_khz == freq_khz)
    }
}

/// `EDP_factor(x) = intercept + slope·x`, x the memory-bus utilisation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdpFactor {
    /// Value at x = 0.
    pub intercept: f64,
    /// Change per unit of x.
    pub slope: f64,
}

impl EdpFactor {
    /// The factor at memory-bus utilisation `x`.
    pub fn at(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }
}

/// A static split of the machine into sets of CPUs at fixed frequencies,
/// written `4@800,2@1400,2@2300` (CPU count @ MHz), slowest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Partition {
    /// The sets, in the order given.
    pub sets: Vec<PartitionSet>,
}

/// One set of a [`Partition`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionSet {
    /// How many CPUs it has.
    pub cpus: u32,
    /// Their fixed frequency, kHz.
    pub freq_khz: u64,
}

/// Why a partition was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    /// Not of the form `N@MHz,…`.
    #[error("partition {text:?}: {reason} (expected e.g. 4@800,2@1400,2@2300: CPU count @ MHz)")]
    Syntax {
        /// The text given.
        text: String,
        /// What is wrong.
        reason: String,
    },
    /// More or fewer CPUs than the machine has online.
    #[error("partition {partition} covers {given} CPUs but the machine has {online} online")]
    CpuCount {
        /// The partition.
        partition: String,
        /// CPUs it names.
        given: u32,
        /// CPUs the machine has.
        online: u32,
    },
    /// A frequency that is not a P-state of the machine.
    #[error(
        "partition {partition}: {mhz} MHz is not a P-state of this machine; valid: {valid} MHz"
    )]
    NotAPState {
        /// The partition.
        partition: String,
        /// The offending frequency.
        mhz: u64,
        /// Valid frequencies.
        valid: String,
    },
    /// The machine has no frequency control at all.
    #[error("partition {partition}: this machine exposes no frequency control (no cpufreq)")]
    NoFrequencyControl {
        /// The partition.
        partition: String,
    },
}

impl FromStr for Partition {
    type Err = PartitionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |reason: String| PartitionError::Syntax {
            text: text.to_string(),
            reason,
        };
        let mut sets = Vec::new();
        for part in text.split(',').map(str::trim) {
            let (count, mhz) = part
                .split_once('@')
                .ok_or_else(|| bad(format!("{part:?} has no '@'")))?;
            let cpus: u32 = count
                .trim()
                .parse()
                .map_err(|_| bad(format!("{count:?} is not a CPU count")))?;
            let mhz: u64 = mhz
                .trim()
                .parse()
                .map_err(|_| bad(format!("{mhz:?} is not a frequency in MHz")))?;
            if cpus == 0 || mhz == 0 {
                return Err(bad(format!(
                    "{part:?}: counts and frequencies must be positive"
                )));
            }
            sets.push(PartitionSet {
                cpus,
                freq_khz: mhz * 1000,
            });
        }
        Ok(Partition { sets })
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .sets
            .iter()
            .map(|s| format!("{}@{}", s.cpus, s.freq_khz / 1000))
            .collect();
        f.write_str(&parts.join(","))
    }
}

impl TryFrom<String> for Partition {
    type Error = PartitionError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Partition> for String {
    fn from(p: Partition) -> String {
        p.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_round_trips() {
        let p: Partition = "4@800,2@1400,2@2300".parse().unwrap();
        assert_eq!(p.sets.len(), 3);
        assert_eq!(p.sets[1].freq_khz, 1_400_000);
        assert_eq!(p.to_string(), "4@800,2@1400,2@2300");
    }

    #[test]
    fn partition_syntax_errors_name_the_part() {
        for bad in ["4-800", "x@800", "4@fast", "0@800", ""] {
            let err = bad.parse::<Partition>().unwrap_err().to_string();
            assert!(err.contains("expected e.g."), "{bad}: {err}");
        }
    }

    #[test]
    fn edp_factor_is_linear() {
        let f = EdpFactor {
            intercept: 1.6,
            slope: -0.8,
        };
        assert!((f.at(0.75) - 1.0).abs() < 1e-12);
    }
}
