//! The comparisons every experiment needs (`docs/design/papers.md`,
//! "Baselines and the oracle"): the kernel's own scheduler left unrestricted
//! under one cpufreq governor, all CPUs held at one frequency (`fixed`), and
//! all managed tasks confined to a static CPU set (`static`, the managed and
//! measured equivalent of `taskset`). None of them reads counters; they
//! decide once, at `init`.

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
    /// Frequency control: setting the governor is all this policy does,
    /// so on a machine without it (a VM with no cpufreq) it is refused
    /// rather than run doing nothing.
    fn requirements(&self) -> Requirements {
        Requirements {
            frequency: true,
            ..Requirements::default()
        }
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

crate::typed_params! {
    /// Parameters of the governors: none.
    pub struct NoParams {}
}

ecosched_model::policy_stats! {
    /// Statistics of a policy that decides once, at the start: none.
    pub struct NoStats {}
}

crate::typed_params! {
    /// Parameters of `fixed`.
    pub struct FixedParams {
        /// Frequency for every domain, MHz; must be one of its P-states.
        freq_mhz: u64 = int_from(1).required(),
    }
}

crate::typed_params! {
    /// Parameters of `static`.
    pub struct StaticParams {
        /// CPUs every managed task is confined to, e.g. 0-3.
        cpus: String = text("CPU list, e.g. 0-3,8").required(),
        /// A fixed frequency for every domain, MHz.
        freq_mhz: Option<u64> = int_from(1).unset("the platform's governor stays"),
    }
}

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
    pub fn fixed(params: FixedParams) -> Self {
        StaticPolicy {
            name: "fixed",
            cpus: None,
            freq_mhz: Some(params.freq_mhz),
        }
    }

    /// `static`: managed tasks on `cpus`, optionally at `freq_mhz`.
    pub fn confined(params: StaticParams) -> Result<Self, PolicyError> {
        let text = params.cpus;
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
            freq_mhz: params.freq_mhz,
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

#[cfg(test)]
mod tests {
    use crate::{build, Params};
    use ecosched_model::{FreqDomainId, FreqSetting};
    use ecosched_testkit::machines::q6600;

    #[test]
    fn fixed_sets_every_domain_and_rejects_non_pstates() {
        let mut p = build("fixed", &Params::default().with("freq_mhz", 1600)).unwrap();
        let plan = p.init(&q6600()).unwrap();
        assert_eq!(
            plan.frequency[&FreqDomainId(0)],
            FreqSetting::Fixed {
                freq_khz: 1_600_000
            }
        );
        let mut bad = build("fixed", &Params::default().with("freq_mhz", 2000)).unwrap();
        let err = bad.init(&q6600()).unwrap_err().to_string();
        assert!(err.contains("1600, 2400"), "{err}");
    }

    #[test]
    fn static_confines_and_checks_cpus() {
        let mut p = build("static", &Params::default().with("cpus", "0-1")).unwrap();
        let plan = p.init(&q6600()).unwrap();
        assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-1");
        assert!(plan.frequency.is_empty());
        let mut off = build("static", &Params::default().with("cpus", "0-7")).unwrap();
        assert!(off.init(&q6600()).is_err());
        assert!(build("static", &Params::default().with("cpus", "3-1")).is_err());
    }
}
