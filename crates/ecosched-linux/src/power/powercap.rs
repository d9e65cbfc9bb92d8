//! RAPL energy counters through the powercap class
//! (`sys/class/powercap/intel-rapl:*`, `intel-rapl-mmio:*`), the best power
//! source Linux offers on Intel (Sandy Bridge on) and AMD (Zen 2 on, kernel
//! 5.8+, which exposes AMD's RAPL MSRs under the same `intel-rapl` names).
//!
//! ```text
//!  sys/class/powercap/
//!  ├─ intel-rapl            control type (no counter; skipped)
//!  ├─ intel-rapl:0          name = package-0   ← summed into package energy
//!  ├─ intel-rapl:0:0        name = core | dram (subzone of package 0)
//!  ├─ intel-rapl:0:1        name = uncore      (client parts: the GPU)
//!  ├─ intel-rapl:1          name = package-1 on a second socket,
//!  │                               psys (whole platform) on recent laptops
//!  └─ intel-rapl-mmio:0     name = package-0 again, through MMIO; only
//!                                  used when the MSR zones lack it
//! ```
//!
//! Each zone has `energy_uj`, a counter in microjoules that wraps to zero
//! at `max_energy_range_uj` (about 262 kJ for a package: a little over
//! 15 minutes at 260 W, so an interval must be shorter than that — more than
//! one wrap between two reads cannot be seen). `core` and `uncore` are
//! parts of their package; `dram` is not (on servers it is a separate
//! supply), so only `package-*` zones are summed into package energy.
//!
//! Since Linux 5.10 `energy_uj` is readable by root only (mode 0400, after
//! the PLATYPUS side channel, CVE-2020-8694): a refusal is reported as a
//! permission error naming root, never papered over with an estimate.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;

/// Where the powercap class lives under a root.
pub const POWERCAP_DIR: &str = "sys/class/powercap";

/// What reading `energy_uj` needs on a current kernel.
pub const RAPL_CAPABILITY: &str = "root: RAPL energy_uj is mode 0400 since Linux 5.10 \
     and its stable backports (CVE-2020-8694); run as root or grant CAP_DAC_READ_SEARCH";

/// How the kernel reaches a zone's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RaplInterface {
    /// Model-specific registers (`intel-rapl:*`).
    Msr,
    /// Memory-mapped registers (`intel-rapl-mmio:*`), which repeat the
    /// package zone on some client parts to allow power limiting.
    Mmio,
}

/// What a RAPL zone measures, from its `name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RaplDomain {
    /// A whole processor package (`package-N`, `package-N-die-M`).
    Package,
    /// The cores of a package (`core`, also called PP0).
    Core,
    /// The rest of a client package: integrated graphics (`uncore`, PP1).
    Uncore,
    /// Memory (`dram`).
    Dram,
    /// The whole platform as the SoC sees it (`psys`).
    Psys,
    /// A name this code does not know; read but not summed.
    Other,
}

impl RaplDomain {
    /// Classify a zone `name` as the kernel writes it.
    pub fn from_name(name: &str) -> Self {
        match name {
            "core" => RaplDomain::Core,
            "uncore" => RaplDomain::Uncore,
            "dram" => RaplDomain::Dram,
            "psys" => RaplDomain::Psys,
            n if n.starts_with("package-") => RaplDomain::Package,
            _ => RaplDomain::Other,
        }
    }
}

/// One RAPL zone with a readable counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaplZone {
    /// Directory name under [`POWERCAP_DIR`] (`intel-rapl:0:1`).
    pub id: String,
    /// How the kernel reads it.
    pub interface: RaplInterface,
    /// Zone path indices: `[0]` for `intel-rapl:0`, `[0, 1]` for
    /// `intel-rapl:0:1`.
    pub indices: Vec<u32>,
    /// The zone's `name` (`package-0`, `core`, `dram`, `psys` …).
    pub name: String,
    /// What it measures.
    pub domain: RaplDomain,
    /// The value at which `energy_uj` wraps to zero.
    pub max_energy_range_uj: u64,
}

impl RaplZone {
    /// `energy_uj` relative to the root.
    pub fn energy_file(&self) -> String {
        format!("{POWERCAP_DIR}/{}/energy_uj", self.id)
    }
}

/// Split a powercap directory name into interface and zone indices;
/// `None` for control types (`intel-rapl`) and other drivers (`dtpm`).
pub fn parse_zone_id(dir_name: &str) -> Option<(RaplInterface, Vec<u32>)> {
    let (interface, rest) = if let Some(rest) = dir_name.strip_prefix("intel-rapl-mmio:") {
        (RaplInterface::Mmio, rest)
    } else if let Some(rest) = dir_name.strip_prefix("intel-rapl:") {
        (RaplInterface::Msr, rest)
    } else {
        return None;
    };
    let indices: Option<Vec<u32>> = rest.split(':').map(|p| p.parse().ok()).collect();
    indices.filter(|i| !i.is_empty()).map(|i| (interface, i))
}

/// Energy consumed between two readings of a counter that wraps to zero at
/// `max_energy_range_uj`. `None` when a reading lies outside the range (it
/// cannot come from this counter) or the range is zero. At most one wrap
/// is assumed between the readings.
pub fn energy_delta_uj(prev_uj: u64, now_uj: u64, max_energy_range_uj: u64) -> Option<u64> {
    if max_energy_range_uj == 0 || prev_uj > max_energy_range_uj || now_uj > max_energy_range_uj {
        return None;
    }
    if now_uj >= prev_uj {
        Some(now_uj - prev_uj)
    } else {
        Some(max_energy_range_uj - prev_uj + now_uj)
    }
}

/// A permission refusal on a RAPL file, restated with what it needs.
fn rapl_permission(e: LinuxError) -> LinuxError {
    match e {
        LinuxError::Permission { path, .. } => LinuxError::Permission {
            path,
            capability: RAPL_CAPABILITY.to_string(),
        },
        other => other,
    }
}

/// An unsigned counter in `rel`; absent, refused or malformed is an error.
fn read_u64(root: &FsRoot, rel: &str, what: &str) -> Result<u64, LinuxError> {
    let text = root.read(rel, what).map_err(rapl_permission)?;
    text.parse()
        .map_err(|_| LinuxError::parse(&root.path(rel), &text, "expected microjoules"))
}

/// Read a zone's `energy_uj` now.
pub fn read_energy_uj(root: &FsRoot, zone: &RaplZone) -> Result<u64, LinuxError> {
    read_u64(root, &zone.energy_file(), "RAPL energy counter")
}

/// Every RAPL zone with an energy counter, MSR zones first, in name order.
/// Empty when the powercap class or RAPL is absent. An MMIO zone whose name
/// an MSR zone already has is dropped: both count the same package.
pub fn discover(root: &FsRoot) -> Result<Vec<RaplZone>, LinuxError> {
    let mut zones = Vec::new();
    for dir_name in root.list(POWERCAP_DIR)? {
        let Some((interface, indices)) = parse_zone_id(&dir_name) else {
            continue;
        };
        let dir = format!("{POWERCAP_DIR}/{dir_name}");
        if !root.exists(&format!("{dir}/energy_uj")) {
            continue;
        }
        let name = root.read(&format!("{dir}/name"), "RAPL zone name")?;
        let max_energy_range_uj = read_u64(
            root,
            &format!("{dir}/max_energy_range_uj"),
            "RAPL counter range",
        )?;
        zones.push(RaplZone {
            id: dir_name,
            interface,
            indices,
            domain: RaplDomain::from_name(&name),
            name,
            max_energy_range_uj,
        });
    }
    zones.sort_by(|a, b| {
        (a.interface == RaplInterface::Mmio, &a.indices)
            .cmp(&(b.interface == RaplInterface::Mmio, &b.indices))
    });
    let msr_names: Vec<String> = zones
        .iter()
        .filter(|z| z.interface == RaplInterface::Msr && z.indices.len() == 1)
        .map(|z| z.name.clone())
        .collect();
    zones.retain(|z| {
        z.interface == RaplInterface::Msr || !(z.indices.len() == 1 && msr_names.contains(&z.name))
    });
    Ok(zones)
}

/// The name to show for a zone: subzones carry their parent's name
/// (`package-1/dram`) because every package has a `core` or `dram`.
pub fn display_name(zones: &[RaplZone], zone: &RaplZone) -> String {
    if zone.indices.len() < 2 {
        return zone.name.clone();
    }
    let parent = zones
        .iter()
        .find(|p| p.interface == zone.interface && p.indices == zone.indices[..1]);
    match parent {
        Some(p) => format!("{}/{}", p.name, zone.name),
        None => zone.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;
    use std::path::PathBuf;

    #[test]
    fn zone_ids_parse_and_control_types_do_not() {
        assert_eq!(
            parse_zone_id("intel-rapl:0"),
            Some((RaplInterface::Msr, vec![0]))
        );
        assert_eq!(
            parse_zone_id("intel-rapl:1:2"),
            Some((RaplInterface::Msr, vec![1, 2]))
        );
        assert_eq!(
            parse_zone_id("intel-rapl-mmio:0"),
            Some((RaplInterface::Mmio, vec![0]))
        );
        for bad in [
            "intel-rapl",
            "intel-rapl:",
            "intel-rapl:x",
            "intel-rapl:0:",
            "dtpm",
            "intel-rapl-mmio",
        ] {
            assert_eq!(parse_zone_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn domains_from_names() {
        assert_eq!(RaplDomain::from_name("package-0"), RaplDomain::Package);
        assert_eq!(
            RaplDomain::from_name("package-1-die-0"),
            RaplDomain::Package
        );
        assert_eq!(RaplDomain::from_name("core"), RaplDomain::Core);
        assert_eq!(RaplDomain::from_name("uncore"), RaplDomain::Uncore);
        assert_eq!(RaplDomain::from_name("dram"), RaplDomain::Dram);
        assert_eq!(RaplDomain::from_name("psys"), RaplDomain::Psys);
        assert_eq!(RaplDomain::from_name("package"), RaplDomain::Other);
    }

    #[test]
    fn delta_wraps_once_and_rejects_readings_outside_the_range() {
        assert_eq!(energy_delta_uj(100, 250, 1000), Some(150));
        assert_eq!(energy_delta_uj(900, 50, 1000), Some(150));
        assert_eq!(energy_delta_uj(1000, 0, 1000), Some(0));
        assert_eq!(energy_delta_uj(5, 5, 1000), Some(0));
        assert_eq!(energy_delta_uj(1001, 5, 1000), None);
        assert_eq!(energy_delta_uj(5, 1001, 1000), None);
        assert_eq!(energy_delta_uj(0, 0, 0), None);
    }

    #[test]
    fn a_refusal_names_root_and_the_kernel_change() {
        let refused = LinuxError::Permission {
            path: PathBuf::from("/sys/class/powercap/intel-rapl:0/energy_uj"),
            capability: "root".into(),
        };
        let msg = rapl_permission(refused).to_string();
        assert!(msg.contains("intel-rapl:0/energy_uj"), "{msg}");
        assert!(msg.contains("root") && msg.contains("5.10"), "{msg}");
        let other = LinuxError::Gone { pid: 1 };
        assert!(matches!(
            rapl_permission(other),
            LinuxError::Gone { pid: 1 }
        ));
    }

    #[test]
    fn a_malformed_counter_names_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let zone = dir.path().join(POWERCAP_DIR).join("intel-rapl:0");
        std::fs::create_dir_all(&zone).unwrap();
        std::fs::write(zone.join("name"), "package-0\n").unwrap();
        std::fs::write(zone.join("energy_uj"), "12a4\n").unwrap();
        std::fs::write(zone.join("max_energy_range_uj"), "-1\n").unwrap();
        let root = FsRoot::recorded(dir.path());
        let err = discover(&root).unwrap_err().to_string();
        assert!(
            err.contains("max_energy_range_uj") && err.contains("-1"),
            "{err}"
        );
        std::fs::write(zone.join("max_energy_range_uj"), "262143328850\n").unwrap();
        let zones = discover(&root).unwrap();
        let err = read_energy_uj(&root, &zones[0]).unwrap_err().to_string();
        assert!(err.contains("energy_uj") && err.contains("12a4"), "{err}");
    }

    proptest! {
        /// For any start below the range and any consumption below the
        /// range, the delta is the consumption — never negative, never more
        /// than one range.
        #[test]
        fn delta_is_the_true_consumption(
            (range, start, used) in prop_oneof![
                1u64..1_000,
                Just(262_143_328_850u64), // an Intel package zone
                Just(65_712_999_613u64),  // a Skylake-SP dram zone
                1u64..=u64::MAX / 2,
            ]
            .prop_flat_map(|r| (Just(r), 0..r, 0..r)),
        ) {
            let now = (start + used) % range;
            let delta = energy_delta_uj(start, now, range).unwrap();
            prop_assert_eq!(delta, used);
            prop_assert!(delta < range);
        }
    }
}
