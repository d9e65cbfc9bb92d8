//! The machine as a policy sees it, whichever world it came from (sysfs or a
//! simulator preset):
//!
//! ```text
//!  machine
//!  └─ package (socket)                 Cpu::package
//!     └─ die / chip                    Cpu::die
//!        └─ cache domain (shared LLC)  CacheDomain::cpus
//!           └─ core                    Cpu::core
//!              └─ hardware thread      Cpu::id (kernel CPU number)
//!
//!  frequency domain: CPUs that must run at one frequency (cpufreq policy,
//!                    `related_cpus`); several may share one voltage domain,
//!                    whose voltage the highest requested P-state sets.
//! ```

use crate::calibration::{Calibration, Partition, PartitionError};
use crate::cpuset::{CpuId, CpuSet};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Index of a frequency domain in [`Topology::freq_domains`]. A newtype so
/// that a domain can never be confused with a CPU number or a dense CPU
/// index, and so that "no domain" is `None` rather than a sentinel.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct FreqDomainId(pub usize);

impl FreqDomainId {
    /// The index into [`Topology::freq_domains`].
    pub fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for FreqDomainId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One hardware thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    /// Kernel CPU number.
    pub id: CpuId,
    /// Physical package (socket) id.
    pub package: u32,
    /// Die (chip) id, unique within the machine.
    pub die: u32,
    /// Core id, unique within the machine (SMT siblings share it).
    pub core: u32,
    /// NUMA node.
    pub numa_node: u32,
    /// Whether the CPU is online.
    pub online: bool,
    /// Its frequency domain; `None` when the machine exposes no frequency
    /// control (no cpufreq) or the CPU is offline without a policy.
    pub freq_domain: Option<FreqDomainId>,
    /// How much work it does per unit time relative to the machine's
    /// fastest CPU type at the same frequency, on Linux's scale (1024 = the
    /// biggest core: `/sys/devices/system/cpu/cpuN/cpu_capacity`). Hybrid
    /// parts (Intel P/E cores, Arm big.LITTLE) have CPUs below 1024; every
    /// CPU of a homogeneous machine has 1024.
    #[serde(default = "full_capacity")]
    pub capacity: u32,
}

/// Linux's `SCHED_CAPACITY_SCALE`: the capacity of the biggest core.
pub const FULL_CAPACITY: u32 = 1024;

fn full_capacity() -> u32 {
    FULL_CAPACITY
}

/// Data, instruction or unified cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    /// Data cache.
    Data,
    /// Instruction cache.
    Instruction,
    /// Unified cache.
    Unified,
}

/// A cache and the CPUs that share it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheDomain {
    /// Cache level (1, 2, 3 …).
    pub level: u8,
    /// Kind of cache.
    pub kind: CacheKind,
    /// Size in KiB.
    pub size_kib: u64,
    /// CPUs sharing this cache.
    pub cpus: CpuSet,
}

/// A performance state: a frequency and the voltage it needs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PState {
    /// Frequency in kHz (the unit cpufreq uses).
    pub freq_khz: u64,
    /// Core voltage in millivolts, when known (sysfs does not expose it).
    pub voltage_mv: Option<u32>,
}

/// CPUs that must run at one frequency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FreqDomain {
    /// CPUs in the domain.
    pub cpus: CpuSet,
    /// Available P-states, ascending by frequency.
    pub pstates: Vec<PState>,
    /// Worst-case frequency transition latency in microseconds.
    pub transition_latency_us: u32,
    /// Index into [`Topology::voltage_domains`].
    pub voltage_domain: usize,
}

impl FreqDomain {
    /// Lowest available frequency.
    pub fn min_khz(&self) -> u64 {
        self.pstates.first().map_or(0, |p| p.freq_khz)
    }
    /// Highest available frequency.
    pub fn max_khz(&self) -> u64 {
        self.pstates.last().map_or(0, |p| p.freq_khz)
    }
    /// The P-state with exactly this frequency.
    pub fn pstate(&self, freq_khz: u64) -> Option<&PState> {
        self.pstates.iter().find(|p| p.freq_khz == freq_khz)
    }
    /// Lowest available frequency ≥ `khz` (cpufreq's `RELATION_L`), or the max.
    pub fn at_least(&self, khz: f64) -> u64 {
        self.pstates
            .iter()
            .map(|p| p.freq_khz)
            .find(|&f| f as f64 >= khz)
            .unwrap_or_else(|| self.max_khz())
    }
}

/// Frequency domains whose CPUs share one supply voltage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoltageDomain {
    /// The frequency domains it supplies.
    pub freq_domains: Vec<FreqDomainId>,
}

/// A CPU idle state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleState {
    /// Name (`C1`, `C6` …).
    pub name: String,
    /// Exit latency in microseconds.
    pub exit_latency_us: u32,
    /// Minimum residency that makes entering it worthwhile, in microseconds.
    pub target_residency_us: u32,
}

/// A NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumaNode {
    /// Node id.
    pub id: u32,
    /// Its CPUs.
    pub cpus: CpuSet,
}

/// The whole machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Every CPU, ascending by id.
    pub cpus: Vec<Cpu>,
    /// Shared and private caches.
    pub caches: Vec<CacheDomain>,
    /// NUMA nodes.
    pub numa_nodes: Vec<NumaNode>,
    /// Frequency domains. Empty when the machine exposes no frequency
    /// control (no cpufreq); every [`Cpu::freq_domain`] is then `None`.
    pub freq_domains: Vec<FreqDomain>,
    /// Voltage domains.
    pub voltage_domains: Vec<VoltageDomain>,
    /// Idle states, shallowest first.
    pub idle_states: Vec<IdleState>,
    /// Per-machine calibration data (translation vectors, EDP coefficients,
    /// cpuset partitions): measured facts about this machine that some
    /// policies need and that discovery cannot read. Empty when none is
    /// known; the policies that need it say so.
    #[serde(default)]
    pub calibration: Calibration,
}

/// A topology that breaks an invariant.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TopologyError {
    /// No CPUs.
    #[error("the machine has no CPUs")]
    NoCpus,
    /// A cache shared by CPUs of several packages.
    #[error("L{level} cache over CPUs {cpus} spans packages {packages:?}")]
    CacheSpansPackages {
        /// Cache level.
        level: u8,
        /// Its CPUs.
        cpus: CpuSet,
        /// Packages it touches.
        packages: Vec<u32>,
    },
    /// A cache naming a CPU that does not exist.
    #[error("L{level} cache lists CPUs {cpus}, not all of which exist")]
    CacheUnknownCpu {
        /// Cache level.
        level: u8,
        /// Its CPUs.
        cpus: CpuSet,
    },
    /// A frequency domain without P-states.
    #[error("frequency domain {domain} (CPUs {cpus}) has no P-states")]
    NoPStates {
        /// Domain index.
        domain: usize,
        /// Its CPUs.
        cpus: CpuSet,
    },
    /// P-states not strictly ascending, or voltage falling as frequency rises.
    #[error("frequency domain {domain}: P-state {freq_khz} kHz at {voltage_mv} mV is not above the previous one ({prev_khz} kHz at {prev_mv} mV); frequencies must rise and voltages must not fall")]
    PStateOrder {
        /// Domain index.
        domain: usize,
        /// The offending frequency.
        freq_khz: u64,
        /// Its voltage.
        voltage_mv: u32,
        /// The previous frequency.
        prev_khz: u64,
        /// The previous voltage.
        prev_mv: u32,
    },
    /// A CPU pointing at a missing frequency domain, or domains that overlap.
    #[error("CPU {cpu} and frequency domain {domain:?} disagree")]
    FreqDomainMismatch {
        /// The CPU.
        cpu: CpuId,
        /// The domain it names, if any.
        domain: Option<FreqDomainId>,
    },
    /// A voltage domain index out of range.
    #[error(
        "frequency domain {domain} names voltage domain {voltage_domain}, which does not exist"
    )]
    BadVoltageDomain {
        /// The frequency domain.
        domain: usize,
        /// The missing voltage domain.
        voltage_domain: usize,
    },
}

impl Topology {
    /// All CPU ids.
    pub fn all_cpus(&self) -> CpuSet {
        self.cpus.iter().map(|c| c.id).collect()
    }

    /// Online CPU ids.
    pub fn online_cpus(&self) -> CpuSet {
        self.cpus
            .iter()
            .filter(|c| c.online)
            .map(|c| c.id)
            .collect()
    }

    /// The CPU record for an id.
    pub fn cpu(&self, id: CpuId) -> Option<&Cpu> {
        self.cpus.iter().find(|c| c.id == id)
    }

    /// A frequency domain by id.
    pub fn freq_domain(&self, id: FreqDomainId) -> Option<&FreqDomain> {
        self.freq_domains.get(id.0)
    }

    /// Every frequency domain with its id.
    pub fn freq_domain_ids(&self) -> impl Iterator<Item = (FreqDomainId, &FreqDomain)> {
        self.freq_domains
            .iter()
            .enumerate()
            .map(|(i, d)| (FreqDomainId(i), d))
    }

    /// The frequency domain of a CPU, if it has one.
    pub fn domain_of(&self, cpu: CpuId) -> Option<FreqDomainId> {
        self.cpu(cpu).and_then(|c| c.freq_domain)
    }

    /// Number of distinct packages.
    pub fn package_count(&self) -> usize {
        let mut p: Vec<u32> = self.cpus.iter().map(|c| c.package).collect();
        p.sort_unstable();
        p.dedup();
        p.len()
    }

    /// The largest (last-level) shared caches: the cache domains that
    /// contention policies reason about.
    pub fn last_level_caches(&self) -> Vec<&CacheDomain> {
        let Some(level) = self.caches.iter().map(|c| c.level).max() else {
            return Vec::new();
        };
        self.caches.iter().filter(|c| c.level == level).collect()
    }

    /// Check the invariants every consumer relies on.
    pub fn validate(&self) -> Result<(), TopologyError> {
        if self.cpus.is_empty() {
            return Err(TopologyError::NoCpus);
        }
        let all = self.all_cpus();
        for cache in &self.caches {
            if !cache.cpus.is_subset(&all) || cache.cpus.is_empty() {
                return Err(TopologyError::CacheUnknownCpu {
                    level: cache.level,
                    cpus: cache.cpus.clone(),
                });
            }
            let mut packages: Vec<u32> = cache
                .cpus
                .iter()
                .filter_map(|id| self.cpu(id).map(|c| c.package))
                .collect();
            packages.sort_unstable();
            packages.dedup();
            if packages.len() > 1 {
                return Err(TopologyError::CacheSpansPackages {
                    level: cache.level,
                    cpus: cache.cpus.clone(),
                    packages,
                });
            }
        }
        for (i, dom) in self.freq_domains.iter().enumerate() {
            if dom.pstates.is_empty() {
                return Err(TopologyError::NoPStates {
                    domain: i,
                    cpus: dom.cpus.clone(),
                });
            }
            for pair in dom.pstates.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                let volts_fall =
                    matches!((a.voltage_mv, b.voltage_mv), (Some(va), Some(vb)) if vb < va);
                if b.freq_khz <= a.freq_khz || volts_fall {
                    return Err(TopologyError::PStateOrder {
                        domain: i,
                        freq_khz: b.freq_khz,
                        voltage_mv: b.voltage_mv.unwrap_or(0),
                        prev_khz: a.freq_khz,
                        prev_mv: a.voltage_mv.unwrap_or(0),
                    });
                }
            }
            if dom.voltage_domain >= self.voltage_domains.len() {
                return Err(TopologyError::BadVoltageDomain {
                    domain: i,
                    voltage_domain: dom.voltage_domain,
                });
            }
        }
        // No frequency domains means the machine exposes no frequency
        // control (a VM without cpufreq); offline CPUs may lack a policy.
        for cpu in self
            .cpus
            .iter()
            .filter(|c| c.online && !self.freq_domains.is_empty())
        {
            let ok = cpu
                .freq_domain
                .and_then(|d| self.freq_domain(d))
                .is_some_and(|d| d.cpus.contains(cpu.id));
            if !ok {
                return Err(TopologyError::FreqDomainMismatch {
                    cpu: cpu.id,
                    domain: cpu.freq_domain,
                });
            }
        }
        Ok(())
    }
}

/// A partition is checked here, beside the topology it must fit, so that
/// `calibration` stays plain data that needs no machine.
impl Partition {
    /// Check the partition against a machine: it covers exactly the online
    /// CPUs and every frequency is a P-state of every domain.
    pub fn validate(&self, topology: &Topology) -> Result<(), PartitionError> {
        let partition = self.to_string();
        if topology.freq_domains.is_empty() {
            return Err(PartitionError::NoFrequencyControl { partition });
        }
        let online = topology.online_cpus().len() as u32;
        let given: u32 = self.sets.iter().map(|s| s.cpus).sum();
        if given != online {
            return Err(PartitionError::CpuCount {
                partition,
                given,
                online,
            });
        }
        for set in &self.sets {
            if let Some(dom) = topology
                .freq_domains
                .iter()
                .find(|d| d.pstate(set.freq_khz).is_none())
            {
                let valid: Vec<String> = dom
                    .pstates
                    .iter()
                    .map(|p| (p.freq_khz / 1000).to_string())
                    .collect();
                return Err(PartitionError::NotAPState {
                    partition,
                    mhz: set.freq_khz / 1000,
                    valid: valid.join(", "),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_core() -> Topology {
        let cpu = |i: u32, package: u32| Cpu {
            id: CpuId(i),
            package,
            die: package,
            core: i,
            numa_node: 0,
            online: true,
            freq_domain: Some(FreqDomainId(0)),
            capacity: FULL_CAPACITY,
        };
        Topology {
            cpus: vec![cpu(0, 0), cpu(1, 0)],
            caches: vec![CacheDomain {
                level: 2,
                kind: CacheKind::Unified,
                size_kib: 4096,
                cpus: CpuSet::first_n(2),
            }],
            numa_nodes: vec![],
            freq_domains: vec![FreqDomain {
                cpus: CpuSet::first_n(2),
                pstates: vec![
                    PState {
                        freq_khz: 1_600_000,
                        voltage_mv: Some(1130),
                    },
                    PState {
                        freq_khz: 2_400_000,
                        voltage_mv: Some(1240),
                    },
                ],
                transition_latency_us: 10,
                voltage_domain: 0,
            }],
            voltage_domains: vec![VoltageDomain {
                freq_domains: vec![FreqDomainId(0)],
            }],
            idle_states: vec![],
            calibration: Calibration::default(),
        }
    }

    #[test]
    fn valid_machine_passes() {
        assert_eq!(two_core().validate(), Ok(()));
        assert_eq!(two_core().freq_domains[0].at_least(1_700_000.0), 2_400_000);
    }

    #[test]
    fn cache_spanning_packages_is_rejected() {
        let mut t = two_core();
        t.cpus[1].package = 1;
        assert!(matches!(
            t.validate(),
            Err(TopologyError::CacheSpansPackages { .. })
        ));
    }

    #[test]
    fn falling_voltage_is_rejected() {
        let mut t = two_core();
        t.freq_domains[0].pstates[1].voltage_mv = Some(1000);
        let err = t.validate().unwrap_err();
        assert!(err.to_string().contains("voltages must not fall"), "{err}");
    }

    #[test]
    fn no_cpus_is_rejected() {
        let mut t = two_core();
        t.cpus.clear();
        assert_eq!(t.validate(), Err(TopologyError::NoCpus));
    }
}
