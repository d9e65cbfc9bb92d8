//! cpufreq policies: reading them, and planning the sysfs writes that carry
//! out a [`FreqSetting`].
//!
//! Files read, per policy directory (`sys/devices/system/cpu/cpufreq/policyN`
//! on kernels since 4.3, else `sys/devices/system/cpu/cpuN/cpufreq`):
//! `related_cpus` (the CPUs that share one frequency: the frequency domain),
//! `affected_cpus`, `scaling_available_frequencies` (absent under
//! `intel_pstate`, whose range is continuous), `scaling_available_governors`,
//! `scaling_governor`, `scaling_min_freq`, `scaling_max_freq`,
//! `cpuinfo_min_freq`, `cpuinfo_max_freq`, `cpuinfo_transition_latency`
//! (ns) and whether `scaling_setspeed` exists. All frequencies are kHz.
//!
//! The planner ([`writes_for`]) is pure: it turns a setting into an ordered
//! list of [`SysfsWrite`]s and touches nothing, so the caller can journal
//! each old value before writing (`docs/design/restore-journal.md`).

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::pstate::{self, DriverState, FreqControl};
use ecosched_model::topology::{FreqDomain, PState};
use ecosched_model::{CpuId, CpuSet, FreqSetting};
use serde::Serialize;
use std::path::PathBuf;

const CPU_DIR: &str = "sys/devices/system/cpu";

/// One cpufreq policy as read from sysfs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpufreqPolicy {
    /// The policy directory, relative to the root.
    pub dir: String,
    /// `related_cpus`: every CPU the policy governs, online or not.
    pub cpus: CpuSet,
    /// `affected_cpus`: the online ones.
    pub affected: CpuSet,
    /// `scaling_available_frequencies`, ascending; empty when the driver has
    /// a continuous range (`intel_pstate`, `amd-pstate`).
    pub available_khz: Vec<u64>,
    /// `scaling_available_governors`.
    pub governors: Vec<String>,
    /// `scaling_governor`.
    pub governor: Option<String>,
    /// `scaling_min_freq`.
    pub min_khz: Option<u64>,
    /// `scaling_max_freq`.
    pub max_khz: Option<u64>,
    /// `cpuinfo_min_freq`: the hardware's lowest frequency.
    pub cpuinfo_min_khz: Option<u64>,
    /// `cpuinfo_max_freq`: the hardware's highest frequency.
    pub cpuinfo_max_khz: Option<u64>,
    /// `cpuinfo_transition_latency` in ns (`4294967295`, CPUFREQ_ETERNAL,
    /// means unknown).
    pub transition_latency_ns: Option<u64>,
    /// Whether `scaling_setspeed` exists (the `userspace` governor's knob).
    pub has_setspeed: bool,
    /// `scaling_driver` (`acpi-cpufreq`, `intel_pstate`, `amd-pstate-epp`...).
    pub driver: Option<String>,
    /// `energy_performance_preference` as found: what a governor setting
    /// puts back after a fixed frequency changed it.
    pub epp: Option<String>,
    /// `energy_performance_available_preferences`.
    pub epp_offered: Vec<String>,
}

/// One value to write to one sysfs file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SysfsWrite {
    /// The file, relative to the root.
    pub path: String,
    /// What to write.
    pub value: String,
}

impl CpufreqPolicy {
    /// The frequencies a fixed setting may choose: the available list, or
    /// for a continuous driver the hardware minimum and maximum.
    pub fn pstates_khz(&self) -> Vec<u64> {
        if !self.available_khz.is_empty() {
            return self.available_khz.clone();
        }
        let mut v: Vec<u64> = [self.cpuinfo_min_khz, self.cpuinfo_max_khz]
            .into_iter()
            .flatten()
            .collect();
        if v.is_empty() {
            v = [self.min_khz, self.max_khz].into_iter().flatten().collect();
        }
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Whether `khz` can be held: one of the listed frequencies, or within
    /// the hardware range of a continuous driver.
    pub fn accepts_khz(&self, khz: u64) -> bool {
        if !self.available_khz.is_empty() {
            return self.available_khz.contains(&khz);
        }
        let p = self.pstates_khz();
        matches!((p.first(), p.last()), (Some(&lo), Some(&hi)) if (lo..=hi).contains(&khz))
    }

    /// The model's view of the policy: a frequency domain (no voltages:
    /// sysfs has none). `None` when the policy lists no frequency at all.
    pub fn to_freq_domain(&self, voltage_domain: usize) -> Option<FreqDomain> {
        let pstates: Vec<PState> = self
            .pstates_khz()
            .into_iter()
            .map(|freq_khz| PState {
                freq_khz,
                voltage_mv: None,
            })
            .collect();
        if pstates.is_empty() {
            return None;
        }
        let latency_us = self
            .transition_latency_ns
            .map_or(0, |ns| u32::try_from(ns / 1000).unwrap_or(u32::MAX));
        Some(FreqDomain {
            cpus: self.cpus.clone(),
            pstates,
            transition_latency_us: latency_us,
            voltage_domain,
        })
    }

    /// How this policy takes a fixed frequency: `scaling_setspeed` under
    /// `userspace`, else a pinned range, with EPP where it has one.
    pub fn control(&self) -> FreqControl {
        FreqControl::from_parts(
            self.has_setspeed && self.governors.iter().any(|g| g == "userspace"),
            self.epp.is_some() && !self.epp_offered.is_empty(),
        )
    }

    /// The EPP matching `khz` ([`pstate::epp_for`]); `None` without EPP.
    pub fn epp_for(&self, khz: u64) -> Option<String> {
        if self.control() != FreqControl::PinnedRangeEpp {
            return None;
        }
        pstate::epp_for(
            &self.epp_offered,
            self.cpuinfo_min_khz?,
            self.cpuinfo_max_khz?,
            khz,
        )
    }

    /// The path of one of this policy's files, relative to the root.
    pub fn file(&self, name: &str) -> String {
        format!("{}/{name}", self.dir)
    }
}

/// cpufreq's CPU files (`related_cpus`, `affected_cpus`) hold numbers
/// separated by spaces (`0 1 2 3`), not a cpulist.
pub fn parse_cpu_words(text: &str) -> Option<CpuSet> {
    let mut set = CpuSet::new();
    for word in text.split_whitespace() {
        set = set.union(&CpuSet::parse_list(word).ok()?);
    }
    Some(set)
}

fn read_cpus(root: &FsRoot, rel: &str) -> Result<Option<CpuSet>, LinuxError> {
    match root.read_opt(rel)? {
        None => Ok(None),
        Some(text) => parse_cpu_words(&text).map(Some).ok_or_else(|| {
            LinuxError::parse(
                &root.path(rel),
                &text,
                "expected CPU numbers separated by spaces",
            )
        }),
    }
}

/// Read one policy directory; `own` is the CPU it belongs to when the kernel
/// does not say (no `related_cpus` nor `affected_cpus`).
pub fn read_policy(
    root: &FsRoot,
    dir: &str,
    own: Option<CpuId>,
) -> Result<CpufreqPolicy, LinuxError> {
    let f = |name: &str| format!("{dir}/{name}");
    let affected = read_cpus(root, &f("affected_cpus"))?;
    let related = read_cpus(root, &f("related_cpus"))?;
    let fallback = own.map(CpuSet::single).unwrap_or_default();
    let cpus = related
        .clone()
        .or_else(|| affected.clone())
        .unwrap_or(fallback);
    let mut available_khz = Vec::new();
    if let Some(text) = root.read_opt(&f("scaling_available_frequencies"))? {
        for word in text.split_whitespace() {
            let khz = word.parse::<u64>().map_err(|_| {
                LinuxError::parse(
                    &root.path(&f("scaling_available_frequencies")),
                    &text,
                    "expected frequencies in kHz",
                )
            })?;
            available_khz.push(khz);
        }
    }
    available_khz.sort_unstable();
    available_khz.dedup();
    let governors = root
        .read_opt(&f("scaling_available_governors"))?
        .map(|t| t.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    Ok(CpufreqPolicy {
        dir: dir.to_string(),
        affected: affected.unwrap_or_else(|| cpus.clone()),
        cpus,
        available_khz,
        governors,
        governor: root.read_opt(&f("scaling_governor"))?,
        min_khz: root.read_u64_opt(&f("scaling_min_freq"))?,
        max_khz: root.read_u64_opt(&f("scaling_max_freq"))?,
        cpuinfo_min_khz: root.read_u64_opt(&f("cpuinfo_min_freq"))?,
        cpuinfo_max_khz: root.read_u64_opt(&f("cpuinfo_max_freq"))?,
        transition_latency_ns: root.read_u64_opt(&f("cpuinfo_transition_latency"))?,
        has_setspeed: root.exists(&f("scaling_setspeed")),
        driver: root.read_opt(&f("scaling_driver"))?,
        epp: root.read_opt(&f(pstate::EPP_FILE))?,
        epp_offered: root
            .read_opt(&f(pstate::EPP_OFFERED_FILE))?
            .map(|t| t.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default(),
    })
}

/// Every cpufreq policy of the machine, ordered by first CPU; empty when
/// there is no cpufreq (a VM). Per-CPU directories of older kernels that
/// repeat one policy are read once.
pub fn read_policies(root: &FsRoot) -> Result<Vec<CpufreqPolicy>, LinuxError> {
    let mut policies: Vec<CpufreqPolicy> = Vec::new();
    let shared = format!("{CPU_DIR}/cpufreq");
    let named: Vec<String> = root
        .list(&shared)?
        .into_iter()
        .filter(|n| {
            n.strip_prefix("policy")
                .is_some_and(|r| r.parse::<u32>().is_ok())
        })
        .collect();
    if !named.is_empty() {
        for name in named {
            let own = name
                .strip_prefix("policy")
                .and_then(|r| r.parse().ok())
                .map(CpuId);
            policies.push(read_policy(root, &format!("{shared}/{name}"), own)?);
        }
    } else {
        for name in root.list(CPU_DIR)? {
            let Some(id) = name.strip_prefix("cpu").and_then(|r| r.parse::<u32>().ok()) else {
                continue;
            };
            let dir = format!("{CPU_DIR}/{name}/cpufreq");
            if !root.exists(&dir) {
                continue;
            }
            let policy = read_policy(root, &dir, Some(CpuId(id)))?;
            if !policies.iter().any(|p| p.cpus == policy.cpus) {
                policies.push(policy);
            }
        }
    }
    policies.sort_by_key(|p| p.cpus.first());
    Ok(policies)
}

/// How the machine's fixed frequencies are carried out, in one line: the
/// ways its policies take them (most machines have one), and the driver.
/// `None` without cpufreq.
pub fn describe_control(policies: &[CpufreqPolicy], driver: &DriverState) -> Option<String> {
    let first = policies.first()?;
    let mut ways: Vec<FreqControl> = policies.iter().map(CpufreqPolicy::control).collect();
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

/// The writes that put `policy` under `setting`, in the order to make them.
///
/// - `Governor(g)`: `scaling_min_freq`/`scaling_max_freq` back to the
///   hardware range (undoing any pinning), then `scaling_governor`. A
///   governor the policy does not offer is an error naming the policy and
///   what it offers.
/// - `Fixed{freq}` with the `userspace` governor offered: the governor, the
///   full range (the kernel clamps `scaling_setspeed` into
///   `[scaling_min_freq, scaling_max_freq]`), then `scaling_setspeed`.
/// - `Fixed{freq}` without it (`intel_pstate`, `amd-pstate-epp` active
///   mode): pin the range: min to the hardware minimum first, so that max
///   may go to `freq` without crossing min, then min to `freq`; then the
///   matching `energy_performance_preference` ([`pstate::epp_for`]) where
///   the policy has one. Both drivers refuse any EPP but `performance`
///   under the `performance` governor, so a lower one switches the
///   governor to `powersave` first.
/// - `Governor(g)` on a policy with EPP: after the governor, the EPP found
///   at discovery goes back (under `powersave`; `performance` sets its own).
/// - `AsFound`: the range widened, then the governor, `scaling_max_freq`,
///   `scaling_min_freq` and EPP found at discovery (the EPP only where the
///   governor found is not `performance`, which refuses any other). A
///   `userspace` governor found gets its governor back but not its
///   `scaling_setspeed`, which sysfs does not report; the journal puts that
///   back when the run ends.
///
/// A frequency the policy cannot hold is an error listing what it can.
pub fn writes_for(
    policy: &CpufreqPolicy,
    setting: &FreqSetting,
) -> Result<Vec<SysfsWrite>, LinuxError> {
    let w = |name: &str, value: String| SysfsWrite {
        path: policy.file(name),
        value,
    };
    let widen = || -> Vec<SysfsWrite> {
        let mut v = Vec::new();
        if let Some(lo) = policy.cpuinfo_min_khz {
            v.push(w("scaling_min_freq", lo.to_string()));
        }
        if let Some(hi) = policy.cpuinfo_max_khz {
            v.push(w("scaling_max_freq", hi.to_string()));
        }
        v
    };
    match setting {
        FreqSetting::Governor(g) => {
            if !policy.governors.iter().any(|o| o == g.name()) {
                return Err(LinuxError::Absent {
                    path: PathBuf::from(policy.file("scaling_available_governors")),
                    what: format!(
                        "governor {g} for CPUs {}; this policy offers: {}",
                        policy.cpus,
                        offered(&policy.governors)
                    ),
                });
            }
            let mut v = widen();
            v.push(w("scaling_governor", g.name().to_string()));
            if g.name() == "powersave" && policy.control() == FreqControl::PinnedRangeEpp {
                if let Some(epp) = &policy.epp {
                    v.push(w(pstate::EPP_FILE, epp.clone()));
                }
            }
            Ok(v)
        }
        FreqSetting::AsFound => {
            let mut v = widen();
            if let Some(g) = &policy.governor {
                v.push(w("scaling_governor", g.clone()));
            }
            if let Some(hi) = policy.max_khz {
                v.push(w("scaling_max_freq", hi.to_string()));
            }
            if let Some(lo) = policy.min_khz {
                v.push(w("scaling_min_freq", lo.to_string()));
            }
            if let Some(epp) = &policy.epp {
                if policy.governor.as_deref() != Some("performance") {
                    v.push(w(pstate::EPP_FILE, epp.clone()));
                }
            }
            Ok(v)
        }
        FreqSetting::Fixed { freq_khz } => {
            if !policy.accepts_khz(*freq_khz) {
                let can = if policy.available_khz.is_empty() {
                    let p = policy.pstates_khz();
                    match (p.first(), p.last()) {
                        (Some(lo), Some(hi)) => format!("{lo}..={hi} kHz"),
                        _ => "nothing".to_string(),
                    }
                } else {
                    let list: Vec<String> =
                        policy.available_khz.iter().map(u64::to_string).collect();
                    format!("{} kHz", list.join(" "))
                };
                return Err(LinuxError::Absent {
                    path: PathBuf::from(policy.file("scaling_available_frequencies")),
                    what: format!(
                        "frequency {freq_khz} kHz for CPUs {}; this policy offers {can}",
                        policy.cpus
                    ),
                });
            }
            let khz = freq_khz.to_string();
            if policy.control() == FreqControl::Setspeed {
                let mut v = vec![w("scaling_governor", "userspace".to_string())];
                v.extend(widen());
                v.push(w("scaling_setspeed", khz));
                return Ok(v);
            }
            let epp = policy.epp_for(*freq_khz);
            let mut v = Vec::new();
            let under_performance = policy.governor.as_deref() == Some("performance");
            if epp.as_deref().is_some_and(|e| e != "performance")
                && under_performance
                && policy.governors.iter().any(|g| g == "powersave")
            {
                v.push(w("scaling_governor", "powersave".to_string()));
            }
            let lo = policy.cpuinfo_min_khz.unwrap_or(*freq_khz).min(*freq_khz);
            v.push(w("scaling_min_freq", lo.to_string()));
            v.push(w("scaling_max_freq", khz.clone()));
            v.push(w("scaling_min_freq", khz));
            if let Some(epp) = epp {
                v.push(w(pstate::EPP_FILE, epp));
            }
            Ok(v)
        }
        FreqSetting::Hwp {
            epp,
            min_khz,
            max_khz,
        } => {
            if policy.epp.is_none() || !policy.governors.iter().any(|g| g == "powersave") {
                return Err(LinuxError::Absent {
                    path: PathBuf::from(policy.file("energy_performance_preference")),
                    what: format!(
                        "hardware-chosen frequency (HWP/CPPC with an energy-performance preference) for CPUs {}; \
                         the driver must be intel_pstate or amd-pstate-epp in active mode",
                        policy.cpus
                    ),
                });
            }
            // The preference only holds under `powersave` (`performance`
            // forces EPP 0); the range is widened first so that the
            // narrower one never crosses itself.
            let mut v = vec![w("scaling_governor", "powersave".to_string())];
            v.extend(widen());
            if let Some(hi) = max_khz {
                v.push(w("scaling_max_freq", hi.to_string()));
            }
            if let Some(lo) = min_khz {
                v.push(w("scaling_min_freq", lo.to_string()));
            }
            v.push(w(pstate::EPP_FILE, epp.name().to_string()));
            Ok(v)
        }
    }
}

fn offered(list: &[String]) -> String {
    if list.is_empty() {
        "none".to_string()
    } else {
        list.join(" ")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ecosched_model::Governor;

    fn acpi() -> CpufreqPolicy {
        CpufreqPolicy {
            dir: "sys/devices/system/cpu/cpu2/cpufreq".into(),
            cpus: CpuSet::single(CpuId(2)),
            affected: CpuSet::single(CpuId(2)),
            available_khz: vec![2_000_000, 2_333_000],
            governors: ["ondemand", "userspace", "performance"]
                .map(String::from)
                .to_vec(),
            governor: Some("ondemand".into()),
            min_khz: Some(2_000_000),
            max_khz: Some(2_333_000),
            cpuinfo_min_khz: Some(2_000_000),
            cpuinfo_max_khz: Some(2_333_000),
            transition_latency_ns: Some(10_000),
            has_setspeed: true,
            driver: Some("acpi-cpufreq".into()),
            epp: None,
            epp_offered: vec![],
        }
    }

    #[test]
    fn cpu_files_are_space_separated() {
        assert_eq!(parse_cpu_words("0 1 2 3\n").unwrap().to_list(), "0-3");
        assert_eq!(parse_cpu_words("4").unwrap().to_list(), "4");
        assert!(parse_cpu_words("0 x").is_none());
    }

    #[test]
    fn fixed_uses_userspace_when_offered() {
        let v = writes_for(
            &acpi(),
            &FreqSetting::Fixed {
                freq_khz: 2_000_000,
            },
        )
        .unwrap();
        let names: Vec<&str> = v
            .iter()
            .map(|w| w.path.rsplit('/').next().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "scaling_governor",
                "scaling_min_freq",
                "scaling_max_freq",
                "scaling_setspeed"
            ]
        );
        assert_eq!(v[0].value, "userspace");
        assert_eq!(v[3].value, "2000000");
        assert!(v[3]
            .path
            .starts_with("sys/devices/system/cpu/cpu2/cpufreq/"));
    }

    #[test]
    fn an_unlisted_frequency_or_governor_names_what_is_offered() {
        let err = writes_for(
            &acpi(),
            &FreqSetting::Fixed {
                freq_khz: 2_100_000,
            },
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("2000000 2333000") && text.contains("cpu2"),
            "{text}"
        );
        let err = writes_for(&acpi(), &FreqSetting::Governor(Governor::Schedutil)).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("schedutil") && text.contains("ondemand userspace performance"),
            "{text}"
        );
    }

    #[test]
    fn hwp_sets_powersave_the_range_and_the_preference() {
        let mut p = acpi();
        p.governors = vec!["performance".into(), "powersave".into()];
        p.has_setspeed = false;
        let setting = FreqSetting::Hwp {
            epp: ecosched_model::Epp::BalancePower,
            min_khz: None,
            max_khz: Some(2_200_000),
        };
        assert!(writes_for(&p, &setting).is_err(), "no EPP file: refused");
        p.epp = Some("balance_performance".into());
        let names: Vec<(String, String)> = writes_for(&p, &setting)
            .unwrap()
            .iter()
            .map(|w| {
                (
                    w.path.rsplit('/').next().unwrap().to_string(),
                    w.value.clone(),
                )
            })
            .collect();
        let pairs: Vec<(&str, &str)> = names
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        assert_eq!(
            pairs,
            vec![
                ("scaling_governor", "powersave"),
                ("scaling_min_freq", "2000000"),
                ("scaling_max_freq", "2333000"),
                ("scaling_max_freq", "2200000"),
                ("energy_performance_preference", "balance_power"),
            ]
        );
    }

    fn pairs(v: &[SysfsWrite]) -> Vec<(String, String)> {
        v.iter()
            .map(|w| {
                let name = w.path.rsplit('/').next().unwrap_or_default();
                (name.to_string(), w.value.clone())
            })
            .collect()
    }

    /// A domain handed back gets the governor, range and preference it had
    /// when ecosched found it, the range widened first so that neither
    /// end crosses the other.
    #[test]
    fn as_found_puts_back_the_discovered_governor_range_and_preference() {
        let mut p = acpi();
        p.available_khz.clear();
        p.governors = vec!["performance".into(), "powersave".into()];
        p.governor = Some("powersave".into());
        p.has_setspeed = false;
        p.cpuinfo_min_khz = Some(400_000);
        p.cpuinfo_max_khz = Some(5_000_000);
        p.min_khz = Some(800_000);
        p.max_khz = Some(4_000_000);
        p.epp = Some("balance_power".into());
        let got = pairs(&writes_for(&p, &FreqSetting::AsFound).unwrap());
        let want = [
            ("scaling_min_freq", "400000"),
            ("scaling_max_freq", "5000000"),
            ("scaling_governor", "powersave"),
            ("scaling_max_freq", "4000000"),
            ("scaling_min_freq", "800000"),
            ("energy_performance_preference", "balance_power"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()));
        assert_eq!(got, want);
        // Under performance the drivers refuse any EPP but their own.
        p.governor = Some("performance".into());
        let got = pairs(&writes_for(&p, &FreqSetting::AsFound).unwrap());
        assert!(got
            .iter()
            .all(|(f, _)| f != "energy_performance_preference"));
        assert_eq!(got[2], ("scaling_governor".into(), "performance".into()));
    }

    #[test]
    fn continuous_drivers_pin_min_and_max() {
        let mut p = acpi();
        p.available_khz.clear();
        p.governors = vec!["performance".into(), "powersave".into()];
        p.has_setspeed = false;
        p.cpuinfo_min_khz = Some(400_000);
        p.cpuinfo_max_khz = Some(5_000_000);
        let v = writes_for(
            &p,
            &FreqSetting::Fixed {
                freq_khz: 1_234_000,
            },
        )
        .unwrap();
        let pairs: Vec<(String, String)> = v
            .iter()
            .map(|w| {
                (
                    w.path.rsplit('/').next().unwrap().to_string(),
                    w.value.clone(),
                )
            })
            .collect();
        assert_eq!(
            pairs,
            [
                ("scaling_min_freq".to_string(), "400000".to_string()),
                ("scaling_max_freq".to_string(), "1234000".to_string()),
                ("scaling_min_freq".to_string(), "1234000".to_string()),
            ]
        );
        assert!(writes_for(
            &p,
            &FreqSetting::Fixed {
                freq_khz: 6_000_000
            }
        )
        .is_err());
        let v = writes_for(&p, &FreqSetting::Governor(Governor::Powersave)).unwrap();
        assert_eq!(v.last().unwrap().value, "powersave");
        assert_eq!(v[0].value, "400000");
        assert_eq!(v[1].value, "5000000");
    }

    #[test]
    fn eternal_latency_saturates_and_no_frequency_means_no_domain() {
        let mut p = acpi();
        p.transition_latency_ns = Some(4_294_967_295);
        assert_eq!(
            p.to_freq_domain(0).unwrap().transition_latency_us,
            4_294_967
        );
        p.available_khz.clear();
        p.cpuinfo_min_khz = None;
        p.cpuinfo_max_khz = None;
        p.min_khz = None;
        p.max_khz = None;
        assert!(p.to_freq_domain(0).is_none());
    }
}
