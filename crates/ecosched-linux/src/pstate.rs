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
    /// The way a policy takes a fixed frequency: whether it has
    /// `scaling_setspeed` and offers the `userspace` governor, and whether
    /// it has an EPP file with a list of values.
    pub fn from_parts(setspeed_with_userspace: bool, has_epp: bool) -> FreqControl {
        if setspeed_with_userspace {
            FreqControl::Setspeed
        } else if has_epp {
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

/// The EPP that matches holding `khz` in the hardware range `lo..=hi`,
/// among the `offered` ones; `None` when none of the four is offered.
///
/// The target's place in the range picks the preference: the highest
/// frequency is `performance`, the upper half `balance_performance`, the
/// lower half `balance_power`, the lowest `power`. The ends are exact
/// because they are the two requests whose meaning is plain (run flat
/// out; spend least); between them the balance values say which way to
/// lean without claiming more. A preference the policy does not list
/// falls back to the nearest one on the same side that it does.
pub fn epp_for(offered: &[String], lo: u64, hi: u64, khz: u64) -> Option<String> {
    const ORDER: [&str; 4] = [
        "power",
        "balance_power",
        "balance_performance",
        "performance",
    ];
    let want = if khz >= hi {
        3
    } else if khz <= lo {
        0
    } else if (khz - lo) * 2 >= hi - lo {
        2
    } else {
        1
    };
    let listed = |i: usize| offered.iter().any(|o| o == ORDER[i]);
    let toward_middle: &[usize] = match want {
        0 => &[0, 1, 2, 3],
        1 => &[1, 0, 2, 3],
        2 => &[2, 3, 1, 0],
        _ => &[3, 2, 1, 0],
    };
    toward_middle
        .iter()
        .find(|&&i| listed(i))
        .map(|&i| ORDER[i].to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn offered(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_targets_place_in_the_range_picks_the_preference() {
        let all = offered(&[
            "default",
            "performance",
            "balance_performance",
            "balance_power",
            "power",
        ]);
        let at = |khz| epp_for(&all, 400_000, 5_000_000, khz).unwrap();
        assert_eq!(at(400_000), "power");
        assert_eq!(at(1_000_000), "balance_power");
        assert_eq!(at(2_700_000), "balance_performance");
        assert_eq!(at(5_000_000), "performance");
    }

    #[test]
    fn an_unlisted_preference_falls_back_on_the_same_side() {
        let two = offered(&["performance", "power"]);
        assert_eq!(
            epp_for(&two, 400_000, 5_000_000, 1_000_000).unwrap(),
            "power"
        );
        assert_eq!(
            epp_for(&two, 400_000, 5_000_000, 4_000_000).unwrap(),
            "performance"
        );
        assert!(epp_for(&offered(&["default"]), 400_000, 5_000_000, 1_000_000).is_none());
        assert_eq!(FreqControl::from_parts(true, true), FreqControl::Setspeed);
        assert_eq!(
            FreqControl::from_parts(false, true),
            FreqControl::PinnedRangeEpp
        );
        assert_eq!(
            FreqControl::from_parts(false, false),
            FreqControl::PinnedRange
        );
    }
}
