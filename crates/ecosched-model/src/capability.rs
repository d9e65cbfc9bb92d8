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
    /// Whether those figures must be measured: a limit held against an
    /// estimate (a model of utilisation and P-states) limits nothing.
    #[serde(default)]
    pub measured_power: bool,
    /// Whether it sets affinity.
    pub affinity: bool,
    /// Whether it sets frequencies or governors.
    pub frequency: bool,
    /// Whether it sets frequencies where the machine has frequency
    /// control but goes on without (HiLo's high and low sets become
    /// affinity only).
    #[serde(default)]
    pub frequency_wanted: bool,
    /// Whether it stops and continues tasks.
    pub gang: bool,
}

/// One kind of thing a platform provides, so that a shortfall can be
/// traced to the feature behind it (`ecosched doctor` lists, for each
/// missing feature, the policies it stops or degrades).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Need {
    /// Counters (hardware or software).
    Counters,
    /// Energy figures.
    Power,
    /// Per-task affinity.
    Affinity,
    /// Frequency or governor control.
    Frequency,
    /// Gang stop/continue.
    Gang,
}

/// One thing a policy lacks on a platform, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shortfall {
    /// What kind of thing is missing.
    pub need: Need,
    /// The counter kinds involved, for [`Need::Counters`].
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub counters: BTreeSet<CounterKind>,
    /// What is missing and what it means, in words.
    pub text: String,
}

/// Whether a policy runs on a platform: the one judgement `ecosched run`,
/// the daemon (at configuration load and when a group starts) and
/// `ecosched doctor` all make, from [`Requirements::verdict`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Everything it uses is there.
    Runs,
    /// It runs without something it would use: each shortfall says what
    /// it does instead.
    Degraded {
        /// What is missing and how the policy goes on.
        how: Vec<Shortfall>,
    },
    /// It cannot run: each shortfall is something it needs.
    Refused {
        /// What it needs that is missing.
        why: Vec<Shortfall>,
    },
}

impl Verdict {
    /// Whether the policy may start.
    pub fn runs(&self) -> bool {
        !matches!(self, Verdict::Refused { .. })
    }

    /// The shortfalls, whichever the verdict.
    pub fn shortfalls(&self) -> &[Shortfall] {
        match self {
            Verdict::Runs => &[],
            Verdict::Degraded { how } => how,
            Verdict::Refused { why } => why,
        }
    }

    /// The shortfalls' texts joined, for one line of output.
    pub fn reasons(&self) -> String {
        let texts: Vec<&str> = self.shortfalls().iter().map(|s| s.text.as_str()).collect();
        texts.join("; ")
    }

    /// The refusal in the words `ecosched run`, the daemon and `ecosched
    /// doctor` all use; `None` when the policy may start.
    pub fn refusal(&self, policy: &str) -> Option<String> {
        match self {
            Verdict::Refused { .. } => Some(format!(
                "policy {policy} cannot run on this machine: it needs {}",
                self.reasons()
            )),
            _ => None,
        }
    }
}

/// The words for missing frequency control.
const NO_FREQUENCY: &str = "frequency control (cpufreq; where the hardware picks the frequency \
                            itself, as autonomous HWP or EPP-only control does, there is none \
                            to set)";

impl Requirements {
    /// Everything the policy needs that the platform lacks, in words; empty
    /// when the policy can run.
    pub fn missing(&self, caps: &Capabilities) -> Vec<String> {
        self.lacking(caps).into_iter().map(|s| s.text).collect()
    }

    /// [`Self::missing`], each with the kind of thing it is.
    fn lacking(&self, caps: &Capabilities) -> Vec<Shortfall> {
        let mut out = Vec::new();
        let absent: BTreeSet<CounterKind> =
            self.counters.difference(&caps.counters).copied().collect();
        if !absent.is_empty() {
            let names: Vec<String> = absent.iter().map(|c| signal(*c)).collect();
            out.push(Shortfall {
                need: Need::Counters,
                text: format!("counters {}", names.join(", ")),
                counters: absent,
            });
        }
        let mut plain = |need: Need, text: &str| {
            out.push(Shortfall {
                need,
                counters: BTreeSet::new(),
                text: text.to_string(),
            })
        };
        if self.power && caps.power.is_none() {
            plain(Need::Power, "energy measurement");
        } else if self.measured_power && caps.power != Some(PowerSource::Measured) {
            plain(
                Need::Power,
                "measured energy (RAPL, hwmon or a power meter): this machine only has an \
                 estimate, and a limit held against an estimate limits nothing",
            );
        }
        if self.affinity && !caps.affinity {
            plain(Need::Affinity, "affinity control");
        }
        if self.frequency && !caps.frequency {
            plain(Need::Frequency, NO_FREQUENCY);
        }
        if self.gang && !caps.gang {
            plain(Need::Gang, "gang stop/continue");
        }
        out
    }

    /// Whether the policy runs on a platform with `caps`: refused when
    /// something it needs is missing; degraded when something it would use
    /// is (a wanted counter, frequency control it uses where there is
    /// some, measured energy where only an estimate is had).
    pub fn verdict(&self, caps: &Capabilities) -> Verdict {
        let why = self.lacking(caps);
        if !why.is_empty() {
            return Verdict::Refused { why };
        }
        let mut how = Vec::new();
        let absent: BTreeSet<CounterKind> =
            self.wanted.difference(&caps.counters).copied().collect();
        if !absent.is_empty() {
            let names: Vec<String> = absent.iter().map(|c| signal(*c)).collect();
            how.push(Shortfall {
                need: Need::Counters,
                text: format!(
                    "without counters {}: it uses what stands in for them",
                    names.join(", ")
                ),
                counters: absent,
            });
        }
        if self.frequency_wanted && !caps.frequency {
            how.push(Shortfall {
                need: Need::Frequency,
                counters: BTreeSet::new(),
                text: "without frequency control (cpufreq): it sets affinity only and leaves \
                       frequencies as they are"
                    .into(),
            });
        }
        if self.power && caps.power == Some(PowerSource::Estimated) {
            how.push(Shortfall {
                need: Need::Power,
                counters: BTreeSet::new(),
                text: "energy is not measured: it decides on an estimate".into(),
            });
        }
        if how.is_empty() {
            Verdict::Runs
        } else {
            Verdict::Degraded { how }
        }
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

    /// A limit on power needs a meter: against an estimate it is refused,
    /// against a measurement it runs.
    #[test]
    fn measured_power_refuses_an_estimate() {
        let cap = Requirements {
            power: true,
            measured_power: true,
            ..Requirements::default()
        };
        let mut caps = Capabilities {
            counters: BTreeSet::new(),
            power: Some(PowerSource::Estimated),
            affinity: true,
            frequency: true,
            gang: true,
        };
        let v = cap.verdict(&caps);
        assert!(!v.runs());
        assert_eq!(v.shortfalls()[0].need, Need::Power);
        assert!(v.reasons().contains("only has an estimate"), "{v:?}");
        caps.power = None;
        assert_eq!(cap.missing(&caps), ["energy measurement"]);
        caps.power = Some(PowerSource::Measured);
        assert_eq!(cap.verdict(&caps), Verdict::Runs);
    }

    #[test]
    fn the_verdict_refuses_what_is_needed_and_degrades_what_is_wanted() {
        let caps = Capabilities {
            counters: [CounterKind::Instructions, CounterKind::LlcMisses].into(),
            power: Some(PowerSource::Estimated),
            affinity: true,
            frequency: false,
            gang: true,
        };
        let governor = Requirements {
            frequency: true,
            ..Requirements::default()
        };
        let v = governor.verdict(&caps);
        assert!(!v.runs());
        assert_eq!(v.shortfalls()[0].need, Need::Frequency);
        assert!(v.refusal("powersave").unwrap().starts_with(
            "policy powersave cannot run on this machine: it needs frequency control"
        ));
        let hilo = Requirements {
            affinity: true,
            frequency_wanted: true,
            wanted: [CounterKind::LinesIn].into(),
            power: true,
            ..Requirements::default()
        };
        let v = hilo.verdict(&caps);
        assert!(v.runs() && v.refusal("hilo").is_none());
        let needs: Vec<Need> = v.shortfalls().iter().map(|s| s.need).collect();
        assert_eq!(needs, [Need::Counters, Need::Frequency, Need::Power]);
        assert_eq!(v.shortfalls()[0].counters, [CounterKind::LinesIn].into());
        let full = Capabilities {
            frequency: true,
            power: Some(PowerSource::Measured),
            counters: CounterKind::ALL.into_iter().collect(),
            ..caps
        };
        assert_eq!(hilo.verdict(&full), Verdict::Runs);
        assert_eq!(governor.verdict(&full), Verdict::Runs);
    }
}
