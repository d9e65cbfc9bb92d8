//! Read-only probes of the kernel features ecosched uses, each found or
//! absent with the path that says so, for `ecosched doctor`: power meters
//! (powercap RAPL zones, hwmon sensors: readable, permission denied),
//! cpufreq (driver, governors, EPP, boost), resctrl monitoring and the
//! cgroup controllers. Everything is read through an [`FsRoot`], so a
//! recorded machine answers as the live one does.

use crate::cpufreq::CpufreqPolicy;
use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::mounts::MountTable;
use crate::power::{hwmon, powercap};
use crate::pstate::DriverState;
use crate::signals::resctrl::{ResctrlInfo, LLC_OCCUPANCY, RESCTRL};
use serde::Serialize;
use std::collections::BTreeSet;

/// Where the kernel lists cpufreq policies.
pub const CPUFREQ_DIR: &str = "sys/devices/system/cpu/cpufreq";
/// MBM's total bandwidth counter.
const MBM_TOTAL: &str = "mbm_total_bytes";
/// MBM's local bandwidth counter.
const MBM_LOCAL: &str = "mbm_local_bytes";

/// Whether a meter's counter can be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// It reads.
    Readable,
    /// The kernel refuses this user (RAPL's `energy_uj` is root-only).
    PermissionDenied,
    /// It cannot be read for another reason, given.
    Unreadable(String),
}

/// One power or energy counter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeterProbe {
    /// `rapl` or `hwmon`.
    pub kind: &'static str,
    /// Its name (`package-0`, `dram`, `amd_energy Esocket0`).
    pub name: String,
    /// The file read, absolute.
    pub path: String,
    /// Whether it reads.
    pub access: Access,
}

/// The power meters the machine has, or why there are none.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PowerProbe {
    /// Every RAPL zone and hwmon sensor found.
    pub meters: Vec<MeterProbe>,
    /// What is absent, with its path (`/sys/class/powercap absent`).
    pub absent: Vec<String>,
}

impl PowerProbe {
    /// Whether a meter measures energy here (at least one reads).
    pub fn measures(&self) -> bool {
        self.meters.iter().any(|m| m.access == Access::Readable)
    }
}

fn access(result: Result<u64, LinuxError>) -> Access {
    match result {
        Ok(_) => Access::Readable,
        Err(LinuxError::Permission { .. }) => Access::PermissionDenied,
        Err(e) => Access::Unreadable(e.to_string()),
    }
}

/// Look at every RAPL zone and hwmon power/energy sensor and try to read
/// each once.
pub fn probe_power(root: &FsRoot) -> Result<PowerProbe, LinuxError> {
    let mut out = PowerProbe::default();
    let zones = powercap::discover(root)?;
    let powercap_dir = root.path(powercap::POWERCAP_DIR);
    if !root.exists(powercap::POWERCAP_DIR) {
        out.absent
            .push(format!("{} absent: no RAPL", powercap_dir.display()));
    } else if zones.is_empty() {
        out.absent.push(format!(
            "{}: no intel-rapl zone with energy_uj",
            powercap_dir.display()
        ));
    }
    for z in &zones {
        out.meters.push(MeterProbe {
            kind: "rapl",
            name: powercap::display_name(&zones, z),
            path: root.path(&z.energy_file()).display().to_string(),
            access: access(powercap::read_energy_uj(root, z)),
        });
    }
    let found = hwmon::discover(root)?;
    let hwmon_dir = root.path(hwmon::HWMON_DIR);
    if !root.exists(hwmon::HWMON_DIR) {
        out.absent.push(format!(
            "{} absent: no hwmon power or energy sensor",
            hwmon_dir.display()
        ));
    } else if found.meters.is_empty() {
        out.absent.push(format!(
            "{}: no power or energy sensor of known coverage in {} device(s)",
            hwmon_dir.display(),
            found.devices
        ));
    }
    for m in &found.meters {
        for s in &m.sensors {
            out.meters.push(MeterProbe {
                kind: "hwmon",
                name: format!("{} {}", m.driver, s.display_name()),
                path: root.path(&s.file).display().to_string(),
                access: access(hwmon::read_sensor(root, s)),
            });
        }
    }
    Ok(out)
}

/// cpufreq as the machine has it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CpufreqProbe {
    /// Whether any CPU has a cpufreq policy.
    pub present: bool,
    /// The directory looked at, absolute.
    pub path: String,
    /// `scaling_driver`s, in order of first appearance.
    pub drivers: Vec<String>,
    /// Governors offered by every policy.
    pub governors: Vec<String>,
    /// Energy-performance preferences offered (HWP or amd-pstate EPP);
    /// empty where there is no EPP.
    pub epp_offered: Vec<String>,
    /// The current preference of the first policy with one.
    pub epp: Option<String>,
    /// Boost (turbo): `Some(true)` granted, `Some(false)` off, `None`
    /// unknown.
    pub boost: Option<bool>,
    /// The `intel_pstate`/`amd_pstate` driver and its status.
    pub pstate_driver: Option<String>,
}

/// Summarise the cpufreq policies `discover` found.
pub fn probe_cpufreq(
    root: &FsRoot,
    policies: &[CpufreqPolicy],
    driver: &DriverState,
) -> CpufreqProbe {
    let mut drivers = Vec::new();
    for d in policies.iter().filter_map(|p| p.driver.clone()) {
        if !drivers.contains(&d) {
            drivers.push(d);
        }
    }
    let governors: Vec<String> = match policies.split_first() {
        None => Vec::new(),
        Some((first, rest)) => first
            .governors
            .iter()
            .filter(|g| rest.iter().all(|p| p.governors.contains(g)))
            .cloned()
            .collect(),
    };
    let boost = root
        .read_u64_opt(&format!("{CPUFREQ_DIR}/boost"))
        .ok()
        .flatten()
        .map(|b| b == 1)
        .or(driver.no_turbo.map(|n| !n));
    CpufreqProbe {
        present: !policies.is_empty(),
        path: root.path(CPUFREQ_DIR).display().to_string(),
        drivers,
        governors,
        epp_offered: policies
            .iter()
            .find(|p| !p.epp_offered.is_empty())
            .map(|p| p.epp_offered.clone())
            .unwrap_or_default(),
        epp: policies.iter().find_map(|p| p.epp.clone()),
        boost,
        pstate_driver: driver.name.as_ref().map(|n| match &driver.status {
            Some(s) => format!("{n} ({s})"),
            None => n.clone(),
        }),
    }
}

/// resctrl monitoring.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResctrlProbe {
    /// Whether resctrl is mounted (its `info` directory exists).
    pub mounted: bool,
    /// The mount point looked at, absolute.
    pub path: String,
    /// Cache monitoring (`llc_occupancy`).
    pub cmt: bool,
    /// Memory-bandwidth monitoring (`mbm_total_bytes` or
    /// `mbm_local_bytes`).
    pub mbm: bool,
    /// Monitoring groups the L3 tells apart.
    pub num_rmids: Option<u32>,
    /// Why there is no monitoring, when there is none.
    pub absent: Option<String>,
}

/// What resctrl offers at `root`.
pub fn probe_resctrl(root: &FsRoot) -> ResctrlProbe {
    let mounted = root.exists(&format!("{RESCTRL}/info"));
    let path = root.path(RESCTRL).display().to_string();
    match ResctrlInfo::detect(root) {
        Ok(info) => ResctrlProbe {
            mounted,
            path,
            cmt: info.has(LLC_OCCUPANCY),
            mbm: info.has(MBM_TOTAL) || info.has(MBM_LOCAL),
            num_rmids: Some(info.num_rmids),
            absent: None,
        },
        Err(why) => ResctrlProbe {
            mounted,
            path,
            absent: Some(why),
            ..ResctrlProbe::default()
        },
    }
}

/// The cgroup hierarchies ecosched uses.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CgroupProbe {
    /// `v1`, `v2`, `hybrid` (both), `none`, or `unknown` where the root
    /// has no mount table (a recording that did not keep one).
    pub version: &'static str,
    /// Where the v1 cpuset controller is mounted, absolute.
    pub v1_cpuset: Option<String>,
    /// Where the v1 freezer controller is mounted, absolute.
    pub v1_freezer: Option<String>,
    /// Where cgroup2 is mounted, absolute.
    pub v2_mount: Option<String>,
    /// The controllers cgroup2's root offers (`cgroup.controllers`).
    pub v2_controllers: BTreeSet<String>,
}

/// The cgroup hierarchies in `mounts`.
pub fn probe_cgroups(root: &FsRoot, mounts: &MountTable) -> CgroupProbe {
    let v1 = |c: &str| {
        mounts
            .cgroup_v1(c)
            .map(|m| root.path(m.rel()).display().to_string())
    };
    let v2 = mounts.cgroup2().next();
    let v2_controllers = v2
        .and_then(|m| {
            root.read_opt(&format!("{}/cgroup.controllers", m.rel()))
                .ok()
                .flatten()
        })
        .map(|t| t.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    let any_v1 = mounts.mounts().iter().any(|m| m.fstype == "cgroup");
    let version = match (any_v1, v2.is_some()) {
        _ if mounts.mounts().is_empty() => "unknown",
        (true, true) => "hybrid",
        (true, false) => "v1",
        (false, true) => "v2",
        (false, false) => "none",
    };
    CgroupProbe {
        version,
        v1_cpuset: v1("cpuset"),
        v1_freezer: v1("freezer"),
        v2_mount: v2.map(|m| root.path(m.rel()).display().to_string()),
        v2_controllers,
    }
}

/// Where the kernel lists its perf PMUs.
pub const PMU_DIR: &str = "sys/bus/event_source/devices";

/// The CPU's core PMU as the kernel lists it under [`PMU_DIR`] (`cpu` on
/// x86, `cpu_core`/`cpu_atom` on hybrid Intel parts, `armv8_…` on Arm):
/// `Ok(Some(name))` when there is one, `Ok(None)` when the list has none
/// (a VM without a virtual PMU: hardware events do not open), `Err` when
/// the root has no list (a recording that did not keep it).
pub fn core_pmu(root: &FsRoot) -> Result<Option<String>, String> {
    if !root.exists(PMU_DIR) {
        return Err(format!("{} absent", root.path(PMU_DIR).display()));
    }
    let names = root.list(PMU_DIR).map_err(|e| e.to_string())?;
    Ok(names.into_iter().find(|n| {
        n == "cpu"
            || n == "cpu_core"
            || n == "cpu_atom"
            || n.starts_with("armv8")
            || n.starts_with("armv9")
    }))
}
