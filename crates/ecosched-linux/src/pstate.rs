//! How frequency is controlled on a machine whose cpufreq driver decides
//! on its own: `intel_pstate` and `amd-pstate-epp` in active mode offer only
//! the `performance` and `powersave` governors (no `userspace`, no
//! `scaling_setspeed`), and take hints instead: the range
//! `scaling_min_freq`..`scaling_max_freq` the hardware must stay in, and
//! the energy-performance preference (EPP) it leans by inside that range.
//!
//! A fixed frequency there is the range pinned (min = max = target) plus
//! the EPP that says the same thing ([`epp_for`]): the pin sets the
//! frequency while the range binds, and the EPP keeps the hardware's own
//! choices (when firmware or the kernel clamps the range, e.g. thermal or
//! power limits, `max_perf_pct`, `no_turbo`; how fast it ramps after idle)
//! leaning the same way instead of at the preference the machine booted
//! with.
//!
//! Files read: per policy `scaling_driver`, `energy_performance_preference`
//! and `energy_performance_available_preferences`; for the machine
//! `sys/devices/system/cpu/intel_pstate/{status,no_turbo,min_perf_pct,max_perf_pct}`
//! and `sys/devices/system/cpu/amd_pstate/status` (see the kernel's
//! `Documentation/admin-guide/pm/intel_pstate.rst` and `amd-pstate.rst`).

use crate::cpufreq::CpufreqPolicy;
use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use serde::Serialize;

/// The EPP file of a policy.
pub const EPP_FILE: &str = "energy_performance_preference";
/// The EPP values a policy accepts.
pub const EPP_OFFERED_FILE: &str = "energy_performance_available_preferences";

/// How a fixed frequency is carried out on one policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FreqControl {
    /// The `userspace` governor's `scaling_setspeed` (acpi-cpufreq,
    /// cpufreq-dt, intel_pstate and amd-pstate in passive mode).
    Setspeed,
    /// `scaling_min_freq` = `scaling_max_freq` = the target, with
    /// `energy_performance_preference` set to match.
    PinnedRangeEpp,
    /// `scaling_min_freq` = `scaling_max_freq` = the target (no EPP file).
    PinnedRange,
}

impl FreqControl {
    /// The way `policy` takes a fixed frequency.
    pub fn of(policy: &CpufreqPolicy) -> FreqControl {
        if policy.has_setspeed && policy.governors.iter().any(|g| g == "userspace") {
            FreqControl::Setspeed
        } else if policy.epp.is_some() && !policy.epp_offered.is_empty() {
            FreqControl::PinnedRangeEpp
        } else {
            FreqControl::PinnedRange
        }
    }

    /// In words, for notices and reports.
    pub fn describe(self) -> &'static str {
        match self {
            FreqControl::Setspeed => "the userspace governor's scaling_setspeed",
            FreqControl::PinnedRangeEpp => {
                "scaling_min_freq = scaling_max_freq pinned to the target, with energy_performance_preference to match (no userspace governor)"
            }
            FreqControl::PinnedRange => {
                "scaling_min_freq = scaling_max_freq pinned to the target (no userspace governor)"
            }
        }
    }
}

/// The machine-wide state of a pstate driver, as read from sysfs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DriverState {
    /// `intel_pstate` or `amd_pstate`, when either directory exists.
    pub name: Option<String>,
    /// `status`: `active`, `passive`, `guided` or `off`.
    pub status: Option<String>,
    /// intel_pstate `no_turbo` (1: turbo frequencies are not granted).
    pub no_turbo: Option<bool>,
    /// intel_pstate `min_perf_pct`.
    pub min_perf_pct: Option<u64>,
    /// intel_pstate `max_perf_pct`: a cap below the policies' maximum.
    pub max_perf_pct: Option<u64>,
}

impl DriverState {
    /// Read `intel_pstate/` or `amd_pstate/` under `sys/devices/system/cpu`;
    /// all fields empty when neither exists.
    pub fn read(root: &FsRoot) -> Result<DriverState, LinuxError> {
        for name in ["intel_pstate", "amd_pstate"] {
            let dir = format!("sys/devices/system/cpu/{name}");
            if !root.exists(&dir) {
                continue;
            }
            return Ok(DriverState {
                name: Some(name.to_string()),
                status: root.read_opt(&format!("{dir}/status"))?,
                no_turbo: root
                    .read_u64_opt(&format!("{dir}/no_turbo"))?
                    .map(|v| v != 0),
                min_perf_pct: root.read_u64_opt(&format!("{dir}/min_perf_pct"))?,
                max_perf_pct: root.read_u64_opt(&format!("{dir}/max_perf_pct"))?,
            });
        }
        Ok(DriverState::default())
    }

    /// `intel_pstate active`, or nothing when no pstate driver is there;
    /// with the limits that cap what a pin can reach.
    pub fn describe(&self) -> Option<String> {
        let name = self.name.as_deref()?;
        let mut s = match &self.status {
            Some(st) => format!("{name} {st}"),
            None => name.to_string(),
        };
        if self.no_turbo == Some(true) {
            s.push_str(", no_turbo=1 (turbo frequencies are not granted)");
        }
        if let Some(pct) = self.max_perf_pct.filter(|&p| p < 100) {
            s.push_str(&format!(", max_perf_pct={pct} (caps every pin)"));
        }
        Some(s)
    }
}

/// How the machine's fixed frequencies are carried out, in one line: the
/// ways its policies take them (most machines have one), and the driver.
/// `None` without cpufreq.
pub fn describe_control(policies: &[CpufreqPolicy], driver: &DriverState) -> Option<String> {
    let first = policies.first()?;
    let mut ways: Vec<FreqControl> = policies.iter().map(FreqControl::of).collect();
    ways.sort_by_key(|w| *w as u8);
    ways.dedup();
    let ways: Vec<&str> = ways.iter().map(|w| w.describe()).collect();
    let driver_name = first.driver.as_deref().unwrap_or("driver unknown");
    let mut s = format!(
        "cpufreq ({driver_name}), {} policies; fixed frequencies through {}",
        policies.len(),
        ways.join("; and through ")
    );
    if let Some(d) = driver.describe() {
        s.push_str(&format!("; {d}"));
    }
    Some(s)
}

/// The EPP that matches holding `khz` on `policy`, among the ones it
/// offers; `None` when the policy has no EPP.
///
/// The target's place in the hardware range `cpuinfo_min_freq` ..
/// `cpuinfo_max_freq` picks the preference: the highest frequency is
/// `performance`, the upper half `balance_performance`, the lower half
/// `balance_power`, the lowest `power`. The ends are exact because they are
/// the two requests whose meaning is plain (run flat out; spend least);
/// between them the balance values say which way to lean without claiming
/// more. A preference the policy does not list falls back to the nearest
/// one on the same side that it does.
pub fn epp_for(policy: &CpufreqPolicy, khz: u64) -> Option<String> {
    if FreqControl::of(policy) != FreqControl::PinnedRangeEpp {
        return None;
    }
    const ORDER: [&str; 4] = [
        "power",
        "balance_power",
        "balance_performance",
        "performance",
    ];
    let (lo, hi) = (policy.cpuinfo_min_khz?, policy.cpuinfo_max_khz?);
    let want = if khz >= hi {
        3
    } else if khz <= lo {
        0
    } else if (khz - lo) * 2 >= hi - lo {
        2
    } else {
        1
    };
    let offered = |i: usize| policy.epp_offered.iter().any(|o| o == ORDER[i]);
    let toward_middle: &[usize] = match want {
        0 => &[0, 1, 2, 3],
        1 => &[1, 0, 2, 3],
        2 => &[2, 3, 1, 0],
        _ => &[3, 2, 1, 0],
    };
    toward_middle
        .iter()
        .find(|&&i| offered(i))
        .map(|&i| ORDER[i].to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ecosched_model::{CpuId, CpuSet};

    fn hwp() -> CpufreqPolicy {
        CpufreqPolicy {
            dir: "sys/devices/system/cpu/cpufreq/policy0".into(),
            cpus: CpuSet::single(CpuId(0)),
            affected: CpuSet::single(CpuId(0)),
            available_khz: vec![],
            governors: vec!["performance".into(), "powersave".into()],
            governor: Some("powersave".into()),
            min_khz: Some(400_000),
            max_khz: Some(5_000_000),
            cpuinfo_min_khz: Some(400_000),
            cpuinfo_max_khz: Some(5_000_000),
            transition_latency_ns: Some(0),
            has_setspeed: true,
            driver: Some("intel_pstate".into()),
            epp: Some("balance_performance".into()),
            epp_offered: [
                "default",
                "performance",
                "balance_performance",
                "balance_power",
                "power",
            ]
            .map(String::from)
            .to_vec(),
        }
    }

    #[test]
    fn the_targets_place_in_the_range_picks_the_preference() {
        let p = hwp();
        assert_eq!(FreqControl::of(&p), FreqControl::PinnedRangeEpp);
        let at = |khz| epp_for(&p, khz).unwrap();
        assert_eq!(at(400_000), "power");
        assert_eq!(at(1_000_000), "balance_power");
        assert_eq!(at(2_700_000), "balance_performance");
        assert_eq!(at(5_000_000), "performance");
    }

    #[test]
    fn an_unlisted_preference_falls_back_on_the_same_side() {
        let mut p = hwp();
        p.epp_offered = vec!["performance".into(), "power".into()];
        assert_eq!(epp_for(&p, 1_000_000).unwrap(), "power");
        assert_eq!(epp_for(&p, 4_000_000).unwrap(), "performance");
        p.epp = None;
        assert_eq!(FreqControl::of(&p), FreqControl::PinnedRange);
        assert!(epp_for(&p, 1_000_000).is_none());
        p.governors.push("userspace".into());
        assert_eq!(FreqControl::of(&p), FreqControl::Setspeed);
    }
}
