//! Hand-built topologies for tests.

use ecosched_model::topology::{Cpu, FreqDomain, PState, VoltageDomain};
use ecosched_model::{CpuId, CpuSet, FreqDomainId, Topology};

/// `n` CPUs of one package and one frequency domain with the given
/// P-states (kHz), no caches: the smallest machine a policy can run on.
pub fn flat(n: u32, pstates_khz: &[u64]) -> Topology {
    Topology {
        cpus: (0..n)
            .map(|i| Cpu {
                id: CpuId(i),
                package: 0,
                die: 0,
                core: i,
                numa_node: 0,
                online: true,
                freq_domain: Some(FreqDomainId(0)),
            })
            .collect(),
        freq_domains: vec![FreqDomain {
            cpus: CpuSet::first_n(n),
            pstates: pstates_khz
                .iter()
                .map(|&freq_khz| PState {
                    freq_khz,
                    voltage_mv: None,
                })
                .collect(),
            transition_latency_us: 10,
            voltage_domain: 0,
        }],
        voltage_domains: vec![VoltageDomain {
            freq_domains: vec![FreqDomainId(0)],
        }],
        ..Topology::default()
    }
}
