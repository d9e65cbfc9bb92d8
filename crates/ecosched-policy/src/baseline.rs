//! The comparisons every experiment needs (POLICIES.md §6): the kernel's own
//! scheduler left unrestricted under one cpufreq governor, all CPUs held at
//! one frequency (`fixed`), and all managed tasks confined to a static CPU
//! set (`static`, the managed and measured equivalent of `taskset`).
//! None of them reads counters; they decide once, at `init`.

use crate::params::{ParamSpec, Params};
use crate::{Policy, PolicyError};
use ecosched_model::{
    CpuSet, FreqDomainId, FreqSetting, Governor, Plan, Requirements, Snapshot, Topology,
};
use std::time::Duration;

/// How often the baselines are woken. They change nothing after `init`, so
/// this only sets the granularity of the trace (one snapshot per second,
/// the papers' usual sampling period).
pub const BASELINE_INTERVAL: Duration = Duration::from_secs(1);

/// Default scheduler plus one kernel governor on every frequency domain.
#[derive(Debug, Clone)]
pub struct GovernorPolicy {
    governor: Governor,
}

impl GovernorPolicy {
    /// The baseline for one governor.
    pub fn new(governor: Governor) -> Self {
        GovernorPolicy { governor }
    }
}

impl Policy for GovernorPolicy {
    fn name(&self) -> &str {
        self.governor.name()
    }
    /// Nothing is required: on a machine without frequency control (a VM
    /// with no cpufreq) there are no frequency domains, the plan is empty,
    /// and the run leaves frequency to whatever controls it (the
    /// hypervisor); the platform says so in its notices.
    fn requirements(&self) -> Requirements {
        Requirements::default()
    }
    fn interval(&self) -> Duration {
        BASELINE_INTERVAL
    }
    fn init(&mut self, topology: &Topology) -> Result<Plan, PolicyError> {
        Ok(Plan::all_domains(
            topology.freq_domains.len(),
            FreqSetting::Governor(self.governor),
        ))
    }
    fn decide(&mut self, _: &Snapshot) -> Plan {
        Plan::unchanged()
    }
}

/// Parameters of `fixed`.
pub const FIXED_PARAMS: &[ParamSpec] = &[ParamSpec {
    key: "freq_mhz",
    help: "frequency for every domain, in MHz; must be a P-state (required)",
}];

/// Parameters of `static`.
pub const STATIC_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        key: "cpus",
        help: "cpulist every managed task is confined to, e.g. 0-3 (required)",
    },
    ParamSpec {
        key: "freq_mhz",
        help: "optional fixed frequency in MHz for every domain; without it the platform's governor stays",
    },
];

/// Every CPU at one frequency, default scheduler; or, with a CPU set, all
/// managed tasks confined to it (`static`).
#[derive(Debug, Clone)]
pub struct StaticPolicy {
    name: &'static str,
    cpus: Option<CpuSet>,
    freq_mhz: Option<u64>,
}

impl StaticPolicy {
    /// `fixed`: every domain at `freq_mhz`.
    pub fn fixed(params: &Params) -> Result<Self, PolicyError> {
        params.check_keys("fixed", FIXED_PARAMS)?;
        let freq_mhz = params
            .get::<u64>("freq_mhz")?
            .ok_or(PolicyError::MissingParam {
                policy: "fixed".into(),
                key: "freq_mhz".into(),
                help: FIXED_PARAMS[0].help.into(),
            })?;
        Ok(StaticPolicy {
            name: "fixed",
            cpus: None,
            freq_mhz: Some(freq_mhz),
        })
    }

    /// `static`: managed tasks on `cpus`, optionally at `freq_mhz`.
    pub fn confined(params: &Params) -> Result<Self, PolicyError> {
        params.check_keys("static", STATIC_PARAMS)?;
        let text = params
            .get::<String>("cpus")?
            .ok_or(PolicyError::MissingParam {
                policy: "static".into(),
                key: "cpus".into(),
                help: STATIC_PARAMS[0].help.into(),
            })?;
        let cpus = CpuSet::parse_list(&text).map_err(|e| PolicyError::BadParam {
            key: "cpus".into(),
            value: text.clone(),
            reason: e.to_string(),
        })?;
        if cpus.is_empty() {
            return Err(PolicyError::BadParam {
                key: "cpus".into(),
                value: text,
                reason: "the CPU set is empty".into(),
            });
        }
        Ok(StaticPolicy {
            name: "static",
            cpus: Some(cpus),
            freq_mhz: params.get::<u64>("freq_mhz")?,
        })
    }
}

impl Policy for StaticPolicy {
    fn name(&self) -> &str {
        self.name
    }
    fn requirements(&self) -> Requirements {
        Requirements {
            frequency: self.freq_mhz.is_some(),
            affinity: self.cpus.is_some(),
            ..Requirements::default()
        }
    }
    fn interval(&self) -> Duration {
        BASELINE_INTERVAL
    }
    fn init(&mut self, topology: &Topology) -> Result<Plan, PolicyError> {
        let mut plan = Plan::unchanged();
        if let Some(mhz) = self.freq_mhz {
            let khz = mhz * 1000;
            for (i, dom) in topology.freq_domains.iter().enumerate() {
                if dom.pstate(khz).is_none() {
                    let valid: Vec<String> = dom
                        .pstates
                        .iter()
                        .map(|p| (p.freq_khz / 1000).to_string())
                        .collect();
                    return Err(PolicyError::BadParam {
                        key: "freq_mhz".into(),
                        value: mhz.to_string(),
                        reason: format!(
                            "not a P-state of frequency domain {i} (CPUs {}); valid: {} MHz",
                            dom.cpus,
                            valid.join(", ")
                        ),
                    });
                }
                plan.frequency
                    .insert(FreqDomainId(i), FreqSetting::Fixed { freq_khz: khz });
            }
        }
        if let Some(cpus) = &self.cpus {
            let online = topology.online_cpus();
            if !cpus.is_subset(&online) {
                return Err(PolicyError::BadParam {
                    key: "cpus".into(),
                    value: cpus.to_list(),
                    reason: format!("not all of these CPUs are online; online CPUs: {online}"),
                });
            }
            plan.managed_cpus = Some(cpus.clone());
        }
        Ok(plan)
    }
    fn decide(&mut self, _: &Snapshot) -> Plan {
        Plan::unchanged()
    }
}
