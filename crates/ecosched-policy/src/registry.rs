//! Every policy by name: one table drives construction, `ecosched
//! policies`, and the "valid choices" in error messages.

use crate::av::{Av, AvConfig, AV_PARAMS};
use crate::baseline::{GovernorPolicy, StaticPolicy, FIXED_PARAMS, STATIC_PARAMS};
use crate::hilo::{FreqMode, Hilo, HiloConfig, HILO_PARAMS};
use crate::pam::{Pam, PAM_PARAMS};
use crate::params::{ParamSpec, Params};
use crate::patel::{Algorithm, Patel, PatelConfig};
use crate::placed::{Placed, PLACED_PARAMS};
use crate::wca::{Wca, WCA_PARAMS};
use crate::xnode::XNODE_PARAMS;
use crate::{Policy, PolicyError};
use ecosched_model::Governor;

/// A policy's entry in the catalogue.
#[derive(Debug, Clone)]
pub struct PolicyInfo {
    /// Registry name.
    pub name: &'static str,
    /// One line.
    pub description: &'static str,
    /// Parameters it accepts.
    pub params: &'static [ParamSpec],
    build: fn(&Params) -> Result<Box<dyn Policy>, PolicyError>,
}

fn governor(name: &str, g: Governor, params: &Params) -> Result<Box<dyn Policy>, PolicyError> {
    params.check_keys(name, &[])?;
    Ok(Box::new(GovernorPolicy::new(g)))
}

/// `av-xnode`'s parameters: the coordinator's, then every `av` one.
const AV_XNODE_PARAMS: &[ParamSpec] = &concat_params();

const fn concat_params() -> [ParamSpec; XNODE_PARAMS.len() + AV_PARAMS.len()] {
    let mut out = [const { ParamSpec { key: "", help: "" } }; XNODE_PARAMS.len() + AV_PARAMS.len()];
    let mut i = 0;
    while i < XNODE_PARAMS.len() {
        out[i] = ParamSpec {
            key: XNODE_PARAMS[i].key,
            help: XNODE_PARAMS[i].help,
        };
        i += 1;
    }
    while i < out.len() {
        let p = &AV_PARAMS[i - XNODE_PARAMS.len()];
        out[i] = ParamSpec {
            key: p.key,
            help: p.help,
        };
        i += 1;
    }
    out
}

const CATALOGUE: &[PolicyInfo] = &[
    PolicyInfo {
        name: "performance",
        description: "default scheduler, performance governor (highest frequency)",
        params: &[],
        build: |p| governor("performance", Governor::Performance, p),
    },
    PolicyInfo {
        name: "powersave",
        description: "default scheduler, powersave governor (lowest frequency)",
        params: &[],
        build: |p| governor("powersave", Governor::Powersave, p),
    },
    PolicyInfo {
        name: "ondemand",
        description: "default scheduler, ondemand governor (polls load, jumps to max above 80 %)",
        params: &[],
        build: |p| governor("ondemand", Governor::Ondemand, p),
    },
    PolicyInfo {
        name: "conservative",
        description: "default scheduler, conservative governor (steps frequency up and down)",
        params: &[],
        build: |p| governor("conservative", Governor::Conservative, p),
    },
    PolicyInfo {
        name: "schedutil",
        description: "default scheduler, schedutil governor (follows utilisation)",
        params: &[],
        build: |p| governor("schedutil", Governor::Schedutil, p),
    },
    PolicyInfo {
        name: "fixed",
        description: "default scheduler, every CPU held at --param freq_mhz",
        params: FIXED_PARAMS,
        build: |p| Ok(Box::new(StaticPolicy::fixed(p)?)),
    },
    PolicyInfo {
        name: "static",
        description:
            "managed tasks confined to --param cpus=LIST (like taskset), optionally at freq_mhz",
        params: STATIC_PARAMS,
        build: |p| Ok(Box::new(StaticPolicy::confined(p)?)),
    },
    PolicyInfo {
        name: "hilo",
        description: "Richling high/low sets: managed work on H at max frequency, |H| = parallelism + 1 spare, the rest at min",
        params: HILO_PARAMS,
        build: |p| hilo("hilo", p, 1, FreqMode::HighLow),
    },
    PolicyInfo {
        name: "hilo-nospare",
        description: "Richling variant B: high/low sets with |H| = parallelism, no spare",
        params: HILO_PARAMS,
        build: |p| hilo("hilo-nospare", p, 0, FreqMode::HighLow),
    },
    PolicyInfo {
        name: "hilo-ondemand",
        description: "Richling variant A: managed work confined to H, frequencies left to ondemand",
        params: HILO_PARAMS,
        build: |p| hilo("hilo-ondemand", p, 0, FreqMode::Ondemand),
    },
    PolicyInfo {
        name: "pam",
        description: "PAM (Banikazemi et al.): shared-cache model picks process-to-cache mappings; goal=performance|power-cap|energy",
        params: PAM_PARAMS,
        build: |p| Ok(Box::new(Pam::from_params(p)?)),
    },
    PolicyInfo {
        name: "wca",
        description: "WCA (Dhiman et al.): transient threads ignored; threads balanced by count, cache weight, then IPC at every topology level, and pinned",
        params: WCA_PARAMS,
        build: |p| Ok(Box::new(Wca::from_params(p)?)),
    },
    PolicyInfo {
        name: "placed",
        description: "each named task pinned to its own CPU (--param map=name@cpu,…): hand-made static placements",
        params: PLACED_PARAMS,
        build: |p| Ok(Box::new(Placed::from_params(p)?)),
    },
    PolicyInfo {
        name: "av",
        description: "Merkel activity vectors: varsum balancing, sorted co-scheduling (gang cycle), chip-wide low frequency when the mean EDP factor < 1",
        params: AV_PARAMS,
        build: |p| av("av", p, true),
    },
    PolicyInfo {
        name: "av-sort",
        description: "Merkel activity vectors without the frequency heuristic: varsum balancing and sorted co-scheduling",
        params: AV_PARAMS,
        build: |p| av("av-sort", p, false),
    },
    PolicyInfo {
        name: "av-xnode",
        description: "av on every node of a cluster scenario, plus Merkel's cross-node swaps: vectors published every 15 s, one swap every 10 min when it raises min(varsum) of the two nodes",
        params: AV_XNODE_PARAMS,
        build: |_| {
            Err(PolicyError::Incompatible(
                "av-xnode balances across nodes: it runs on a cluster scenario (one with [[nodes]], e.g. merkel-xnode-worst); on one machine use av".into(),
            ))
        },
    },
    PolicyInfo {
        name: "patel1",
        description: "Patel algorithm 1: fixed-frequency cpusets (4@800,2@1400,2@2300 on the Opteron 6134); processes moved by IPC, wait, CPU intensity and load",
        params: crate::patel::PATEL1_PARAMS,
        build: |p| patel("patel1", Algorithm::CpuScheduler, p),
    },
    PolicyInfo {
        name: "patel2",
        description: "Patel algorithm 2: patel1 with nice-value guards (completion order of priorities kept)",
        params: crate::patel::PATEL2_PARAMS,
        build: |p| patel("patel2", Algorithm::Priority, p),
    },
    PolicyInfo {
        name: "patel3",
        description: "Patel algorithm 3: patel2, no up-move while cache misses/references > 0.0014",
        params: crate::patel::PATEL3_PARAMS,
        build: |p| patel("patel3", Algorithm::CacheMiss, p),
    },
    PolicyInfo {
        name: "patel4",
        description: "Patel algorithm 4: patel2, no up-move while context switches + migrations per CPU second > 17",
        params: crate::patel::PATEL4_PARAMS,
        build: |p| patel("patel4", Algorithm::ContextSwitch, p),
    },
    PolicyInfo {
        name: "oracle",
        description: "the best static placement + per-domain frequency, by exhaustive search over the simulator (compare only; up to 8 tasks on 8 CPUs)",
        params: crate::oracle::ORACLE_PARAMS,
        build: crate::oracle::build_refused,
    },
];

fn patel(
    name: &'static str,
    algorithm: Algorithm,
    params: &Params,
) -> Result<Box<dyn Policy>, PolicyError> {
    let config = PatelConfig::from_params(name, algorithm, params)?;
    Ok(Box::new(Patel::new(name, config)))
}

fn av(name: &'static str, params: &Params, freq: bool) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(Av::new(
        name,
        AvConfig::from_params(name, params, freq)?,
    )))
}

fn hilo(
    name: &'static str,
    params: &Params,
    spare: usize,
    mode: FreqMode,
) -> Result<Box<dyn Policy>, PolicyError> {
    let config = HiloConfig::from_params(name, params, spare, mode)?;
    Ok(Box::new(Hilo::new(name, config)))
}

/// Every policy.
pub fn catalogue() -> &'static [PolicyInfo] {
    CATALOGUE
}

/// Build a policy by name.
pub fn build(name: &str, params: &Params) -> Result<Box<dyn Policy>, PolicyError> {
    let info =
        CATALOGUE
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| PolicyError::UnknownPolicy {
                name: name.to_string(),
                valid: CATALOGUE.iter().map(|p| p.name.to_string()).collect(),
            })?;
    (info.build)(params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecosched_model::topology::{Cpu, FreqDomain, PState, VoltageDomain};
    use ecosched_model::{CpuId, CpuSet, FreqDomainId, FreqSetting, Topology};

    fn machine() -> Topology {
        Topology {
            cpus: (0..4)
                .map(|i| Cpu {
                    id: CpuId(i),
                    package: 0,
                    die: i / 2,
                    core: i,
                    numa_node: 0,
                    online: true,
                    freq_domain: Some(FreqDomainId(0)),
                })
                .collect(),
            freq_domains: vec![FreqDomain {
                cpus: CpuSet::first_n(4),
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
            ..Topology::default()
        }
    }

    #[test]
    fn every_catalogue_entry_builds_or_names_its_missing_param() {
        for info in catalogue() {
            match build(info.name, &Params::default()) {
                Ok(p) => assert_eq!(p.name(), info.name),
                Err(PolicyError::MissingParam { key, .. }) => {
                    assert!(info.params.iter().any(|s| s.key == key))
                }
                // The oracle is a search over the simulator: it says where
                // it runs instead of building.
                Err(PolicyError::Incompatible(m)) if info.name == "oracle" => {
                    assert!(m.contains("ecosched compare"), "{m}")
                }
                // The cross-node policy needs a cluster: it says so.
                Err(PolicyError::Incompatible(m)) if info.name == "av-xnode" => {
                    assert!(m.contains("[[nodes]]"), "{m}")
                }
                Err(e) => panic!("{}: {e}", info.name),
            }
        }
    }

    #[test]
    fn unknown_policy_lists_choices() {
        let err = build("pamm", &Params::default()).err().unwrap();
        assert!(err.to_string().contains("ondemand"), "{err}");
    }

    #[test]
    fn governors_take_no_params() {
        let err = build("ondemand", &Params::default().with("x", 1))
            .err()
            .unwrap();
        assert!(matches!(err, PolicyError::UnknownParam { .. }));
    }

    #[test]
    fn fixed_sets_every_domain_and_rejects_non_pstates() {
        let mut p = build("fixed", &Params::default().with("freq_mhz", 1600)).unwrap();
        let plan = p.init(&machine()).unwrap();
        assert_eq!(
            plan.frequency[&FreqDomainId(0)],
            FreqSetting::Fixed {
                freq_khz: 1_600_000
            }
        );
        let mut bad = build("fixed", &Params::default().with("freq_mhz", 2000)).unwrap();
        let err = bad.init(&machine()).unwrap_err().to_string();
        assert!(err.contains("1600, 2400"), "{err}");
    }

    #[test]
    fn static_confines_and_checks_cpus() {
        let mut p = build("static", &Params::default().with("cpus", "0-1")).unwrap();
        let plan = p.init(&machine()).unwrap();
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-1");
        assert!(plan.frequency.is_empty());
        let mut off = build("static", &Params::default().with("cpus", "0-7")).unwrap();
        assert!(off.init(&machine()).is_err());
        assert!(build("static", &Params::default().with("cpus", "3-1")).is_err());
    }
}
