//! The static heterogeneous cpusets (Patel ch. 4 and §9.1;
//! `docs/design/papers.md`, "Patel", on the partition):
//! which CPUs run at which fixed frequency.
//!
//! - **Derivation.** Without a partition from `--param partition` or the
//!   machine's calibration, the sets are derived from the P-states: up to
//!   three frequencies (the lowest, the highest, and the P-state nearest
//!   to their geometric mean — equal steps in log-frequency), with sizes
//!   inversely proportional to frequency, rounded by largest remainder in
//!   whole frequency domains, at least one domain each. On the Opteron
//!   6134 (800–2300 MHz, per-core domains) this gives the thesis's
//!   `4@800,2@1400,2@2300`.
//! - **Realisation.** Sets take whole frequency domains in CPU order, in
//!   the partition's order, so the slowest set of the thesis's partition
//!   fills the first die and keeps its voltage plane low.
//! - **Real heterogeneous cores.** The thesis emulates cores of different
//!   speeds with frequencies. A hybrid machine has them: where CPUs differ
//!   in capacity (Linux's `cpu_capacity`: P and E cores) and no partition
//!   is given, the cpusets are its core types, slowest first, and their
//!   frequencies are left to the platform. Sets are ranked by speed:
//!   frequency times capacity.

use crate::PolicyError;
use ecosched_model::calibration::{Partition, PartitionSet};
use ecosched_model::topology::FULL_CAPACITY;
use ecosched_model::{CpuId, CpuSet, FreqDomainId, Topology};
use std::collections::BTreeMap;

/// One cpuset of fixed frequency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeteroSet {
    /// Its CPUs.
    pub cpus: CpuSet,
    /// Its frequency, kHz (nominal only under `confine_only`).
    pub freq_khz: u64,
    /// The frequency domains held at `freq_khz` (empty without cpufreq,
    /// and for a set of real core type, whose frequency is not set).
    pub domains: Vec<FreqDomainId>,
    /// The capacity of its CPUs when it is a core type of a hybrid
    /// machine (1024 = the biggest core); `None` for a frequency set.
    pub capacity: Option<u32>,
    /// How fast its CPUs run, to rank sets: kHz times capacity / 1024.
    pub speed: u64,
}

/// Capacity of the smallest of `cpus` (1024 without any).
fn capacity_of(topology: &Topology, cpus: &CpuSet) -> u32 {
    cpus.iter()
        .filter_map(|c| topology.cpu(c).map(|c| c.capacity))
        .min()
        .unwrap_or(FULL_CAPACITY)
}

/// The core types of a hybrid machine as cpusets, slowest first: one per
/// capacity among the online CPUs. `None` when every CPU has the same.
pub fn core_type_sets(topology: &Topology) -> Option<Vec<HeteroSet>> {
    let mut by_capacity: BTreeMap<u32, CpuSet> = BTreeMap::new();
    for cpu in topology.cpus.iter().filter(|c| c.online) {
        by_capacity.entry(cpu.capacity).or_default().insert(cpu.id);
    }
    if by_capacity.len() < 2 {
        return None;
    }
    Some(
        by_capacity
            .into_iter()
            .map(|(capacity, cpus)| {
                // Nominal: the fastest P-state its domains offer.
                let freq_khz = cpus
                    .iter()
                    .filter_map(|c| topology.domain_of(c))
                    .filter_map(|d| topology.freq_domain(d))
                    .map(|d| d.max_khz())
                    .max()
                    .unwrap_or(0);
                let speed = freq_khz.max(1) * u64::from(capacity) / u64::from(FULL_CAPACITY);
                HeteroSet {
                    cpus,
                    freq_khz,
                    domains: Vec::new(),
                    capacity: Some(capacity),
                    speed,
                }
            })
            .collect(),
    )
}

/// P-states every frequency domain offers, kHz, ascending.
fn common_pstates(topology: &Topology) -> Vec<u64> {
    let mut common: Option<Vec<u64>> = None;
    for d in &topology.freq_domains {
        let mut f: Vec<u64> = d.pstates.iter().map(|p| p.freq_khz).collect();
        f.sort_unstable();
        common = Some(match common {
            None => f,
            Some(c) => c.into_iter().filter(|x| f.contains(x)).collect(),
        });
    }
    common.unwrap_or_default()
}

/// Online frequency domains (their online CPUs), ordered by first CPU.
fn online_domains(topology: &Topology) -> Vec<(FreqDomainId, Vec<CpuId>)> {
    let online = topology.online_cpus();
    let mut out: Vec<(FreqDomainId, Vec<CpuId>)> = topology
        .freq_domain_ids()
        .map(|(id, d)| (id, d.cpus.intersection(&online).iter().collect::<Vec<_>>()))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    out.sort_by_key(|(_, c)| c.first().copied());
    out
}

/// The default partition of a machine (see the module doc).
pub fn derive_partition(topology: &Topology) -> Result<Partition, PolicyError> {
    let pstates = common_pstates(topology);
    let domains = online_domains(topology);
    let (Some(&lo), Some(&hi)) = (pstates.first(), pstates.last()) else {
        return Err(PolicyError::Incompatible(
            "cannot derive heterogeneous cpusets: the machine exposes no frequency control \
             (no cpufreq P-states); give --param partition=COUNT@MHz,… with confine_only=true"
                .into(),
        ));
    };
    let size = domains.first().map_or(1, |(_, c)| c.len());
    if domains.iter().any(|(_, c)| c.len() != size) {
        return Err(PolicyError::Incompatible(
            "cannot derive heterogeneous cpusets: frequency domains differ in size; \
             give --param partition=COUNT@MHz,…"
                .into(),
        ));
    }
    let k = 3.min(pstates.len()).min(domains.len()).max(1);
    let mut freqs: Vec<u64> = (0..k)
        .map(|i| {
            if k == 1 {
                return hi;
            }
            let target = lo as f64 * (hi as f64 / lo as f64).powf(i as f64 / (k - 1) as f64);
            *pstates
                .iter()
                .min_by(|a, b| {
                    ((**a as f64).ln() - target.ln())
                        .abs()
                        .total_cmp(&((**b as f64).ln() - target.ln()).abs())
                })
                .unwrap_or(&hi)
        })
        .collect();
    freqs.dedup();
    let units = domains.len();
    // Largest remainder, one domain each at least.
    let weights: Vec<f64> = freqs.iter().map(|f| 1.0 / *f as f64).collect();
    let total: f64 = weights.iter().sum();
    let spare = units - freqs.len();
    let exact: Vec<f64> = weights.iter().map(|w| w / total * spare as f64).collect();
    let mut counts: Vec<usize> = exact.iter().map(|x| 1 + x.floor() as usize).collect();
    let mut left = units - counts.iter().sum::<usize>();
    let mut order: Vec<usize> = (0..freqs.len()).collect();
    order.sort_by(|a, b| {
        (exact[*b] - exact[*b].floor()).total_cmp(&(exact[*a] - exact[*a].floor()))
    });
    for i in order {
        if left == 0 {
            break;
        }
        counts[i] += 1;
        left -= 1;
    }
    Ok(Partition {
        sets: freqs
            .iter()
            .zip(&counts)
            .map(|(f, n)| PartitionSet {
                cpus: (n * size) as u32,
                freq_khz: *f,
            })
            .collect(),
    })
}

/// Realise `partition` on `topology`: whole frequency domains per set (or,
/// with `confine_only` on a machine without cpufreq, CPUs in order).
pub fn cpusets(
    topology: &Topology,
    partition: &Partition,
    confine_only: bool,
) -> Result<Vec<HeteroSet>, PolicyError> {
    let refused = |e: &dyn std::fmt::Display| PolicyError::BadParam {
        key: "partition".into(),
        value: partition.to_string(),
        reason: e.to_string(),
    };
    if topology.freq_domains.is_empty() {
        if !confine_only {
            return Err(PolicyError::Incompatible(format!(
                "heterogeneous cpusets need frequency control, and this machine exposes none \
                 (no cpufreq); with --param confine_only=true the policy only confines \
                 processes to the cpusets of {partition}, at whatever frequency the CPUs run"
            )));
        }
        let online: Vec<CpuId> = topology.online_cpus().iter().collect();
        let given: usize = partition.sets.iter().map(|s| s.cpus as usize).sum();
        if given != online.len() {
            return Err(refused(&format!(
                "partition {partition} covers {given} CPUs but the machine has {} online",
                online.len()
            )));
        }
        let mut it = online.into_iter();
        return Ok(partition
            .sets
            .iter()
            .map(|s| {
                let cpus: CpuSet = it.by_ref().take(s.cpus as usize).collect();
                let speed =
                    s.freq_khz * u64::from(capacity_of(topology, &cpus)) / u64::from(FULL_CAPACITY);
                HeteroSet {
                    cpus,
                    freq_khz: s.freq_khz,
                    domains: Vec::new(),
                    capacity: None,
                    speed,
                }
            })
            .collect());
    }
    partition.validate(topology).map_err(|e| refused(&e))?;
    let mut domains = online_domains(topology).into_iter();
    let mut sets = Vec::new();
    for s in &partition.sets {
        let mut set = HeteroSet {
            cpus: CpuSet::new(),
            freq_khz: s.freq_khz,
            domains: Vec::new(),
            capacity: None,
            speed: 0,
        };
        while set.cpus.len() < s.cpus as usize {
            let Some((id, cpus)) = domains.next() else {
                break;
            };
            cpus.iter().for_each(|c| set.cpus.insert(*c));
            set.domains.push(id);
        }
        if set.cpus.len() != s.cpus as usize {
            return Err(refused(&format!(
                "the set {}@{} cannot be made of whole frequency domains \
                 (this machine's domains have {} CPUs each)",
                s.cpus,
                s.freq_khz / 1000,
                topology.freq_domains.first().map_or(0, |d| d.cpus.len())
            )));
        }
        set.speed =
            s.freq_khz * u64::from(capacity_of(topology, &set.cpus)) / u64::from(FULL_CAPACITY);
        sets.push(set);
    }
    Ok(sets)
}
