//! Energy of the machine, from the best source it has: RAPL counters
//! ([`powercap`]), then hwmon sensors ([`hwmon`]), then a model of
//! utilisation and P-states ([`estimate`]). [`PowerMeter`] is the one front
//! door: it picks the source once, at open, and then returns energy deltas
//! per interval, labelled measured or estimated, so that every output can
//! say where its energy came from (`docs/design/linux-platform.md`,
//! "Power").
//!
//! Each of the two meters is chosen on its own:
//!
//! ```text
//!  package energy  = Σ RAPL package-* zones
//!                  | else Σ hwmon package sensors (amd_energy, zenpower, fam15h_power)
//!  system energy   = RAPL psys
//!                  | else Σ hwmon system meters (ACPI power_meter)
//!  neither         → package estimated from utilisation and P-states;
//!                    system absent (never zero, never invented)
//! ```
//!
//! A permission refusal (RAPL `energy_uj` is root-only since Linux 5.10) is
//! an error naming root, not a reason to fall back to a guess.
//!
//! ```
//! use ecosched_linux::{power::PowerMeter, FsRoot};
//! use ecosched_model::{Meter, Topology};
//!
//! // A recorded laptop: RAPL package-0 with its parts, and psys.
//! let root = FsRoot::recorded(concat!(
//!     env!("CARGO_MANIFEST_DIR"),
//!     "/tests/data/power-thinkpad-t480-i7-8650u"
//! ));
//! let mut meter = PowerMeter::open(&root, &Topology::default())?;
//! assert_eq!(
//!     meter.describe(),
//!     "measured: RAPL package-0 (+core, dram, uncore); system: RAPL psys"
//! );
//! assert_eq!(meter.meter(), Meter::System);
//! // The energy since open; a recorded tree's counters do not move.
//! let energy = meter.sample(1.0, &[])?;
//! assert_eq!((energy.package_j, energy.system_j), (Some(0.0), Some(0.0)));
//! # Ok::<(), ecosched_linux::LinuxError>(())
//! ```

pub mod estimate;
pub mod hwmon;
pub mod powercap;

pub use estimate::{EstimateParams, Estimator};

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use ecosched_model::{CpuSample, Meter, PowerSample, PowerSource, Topology};
use hwmon::{HwmonRole, HwmonSensor, SensorKind};
use powercap::{RaplDomain, RaplZone};

/// Energy of one measured domain (a RAPL zone, an hwmon sensor) or of the
/// estimate over the last interval.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainEnergy {
    /// `package-0`, `package-1/dram`, `power_meter power1_average`,
    /// `package (estimated)` …
    pub name: String,
    /// Joules over the last interval; `None` when it could not be told
    /// (a counter that went backwards, an unusable interval).
    pub energy_j: Option<f64>,
}

/// Where a channel's readings come from.
#[derive(Debug, Clone)]
enum Probe {
    /// A RAPL counter that wraps at the zone's range.
    Rapl(RaplZone),
    /// An hwmon sensor: an energy counter or a power reading.
    Hwmon(HwmonSensor),
}

/// One reading tracked between samples.
#[derive(Debug, Clone)]
struct Channel {
    name: String,
    probe: Probe,
    /// The previous reading: µJ for counters, µW for power.
    prev: u64,
}

impl Channel {
    /// Open a channel, taking its first reading.
    fn open(root: &FsRoot, name: String, probe: Probe) -> Result<Self, LinuxError> {
        let prev = Self::read(root, &probe)?;
        Ok(Channel { name, probe, prev })
    }

    fn read(root: &FsRoot, probe: &Probe) -> Result<u64, LinuxError> {
        match probe {
            Probe::Rapl(zone) => powercap::read_energy_uj(root, zone),
            Probe::Hwmon(sensor) => hwmon::read_sensor(root, sensor),
        }
    }

    /// Joules since the previous reading; `None` when they cannot be told.
    fn advance(&mut self, root: &FsRoot, interval_s: f64) -> Result<Option<f64>, LinuxError> {
        let now = Self::read(root, &self.probe)?;
        let prev = std::mem::replace(&mut self.prev, now);
        Ok(match &self.probe {
            Probe::Rapl(zone) => {
                let delta = powercap::energy_delta_uj(prev, now, zone.max_energy_range_uj)
                    .ok_or_else(|| {
                        LinuxError::parse(
                            &root.path(&zone.energy_file()),
                            &now.to_string(),
                            format!(
                                "a reading above max_energy_range_uj {} (previous {prev})",
                                zone.max_energy_range_uj
                            ),
                        )
                    })?;
                Some(delta as f64 * 1e-6)
            }
            // hwmon energy counters are 64-bit accumulators; one that goes
            // backwards was reset (driver reload), and the interval is lost.
            Probe::Hwmon(s) if s.kind == SensorKind::Energy => {
                now.checked_sub(prev).map(|uj| uj as f64 * 1e-6)
            }
            // Power readings: the trapezoid between the two readings.
            Probe::Hwmon(_) => (interval_s.is_finite() && interval_s >= 0.0)
                .then(|| (prev as f64 + now as f64) / 2.0 * 1e-6 * interval_s),
        })
    }
}

/// Advance every channel; the sum, or `None` when there are none or any
/// one could not be told. Each channel's figure is appended to `out`.
fn advance_all(
    root: &FsRoot,
    channels: &mut [Channel],
    interval_s: f64,
    out: &mut Vec<DomainEnergy>,
) -> Result<Option<f64>, LinuxError> {
    let mut sum = (!channels.is_empty()).then_some(0.0);
    for ch in channels.iter_mut() {
        let j = ch.advance(root, interval_s)?;
        out.push(DomainEnergy {
            name: ch.name.clone(),
            energy_j: j,
        });
        sum = match (sum, j) {
            (Some(s), Some(j)) => Some(s + j),
            _ => None,
        };
    }
    Ok(sum)
}

/// The machine's energy meter.
#[derive(Debug, Clone)]
pub struct PowerMeter {
    root: FsRoot,
    /// Summed into package energy.
    package: Vec<Channel>,
    /// Summed into system energy.
    system: Vec<Channel>,
    /// RAPL core, uncore, dram: reported per domain, summed into neither.
    parts: Vec<Channel>,
    /// Set only when nothing is measured.
    estimator: Option<Estimator>,
    description: String,
    last: Vec<DomainEnergy>,
}

/// Why RAPL gives no package figure, in words.
fn rapl_absence(root: &FsRoot, zones: &[RaplZone]) -> String {
    if !root.exists(powercap::POWERCAP_DIR) {
        format!("no RAPL ({} absent)", powercap::POWERCAP_DIR)
    } else if zones.is_empty() {
        format!(
            "no RAPL (no intel-rapl zone with energy_uj in {})",
            powercap::POWERCAP_DIR
        )
    } else {
        String::from("no RAPL package zone")
    }
}

/// Why hwmon gives no figure for `role`, in words.
fn hwmon_absence(root: &FsRoot, found: &hwmon::HwmonDiscovery, role: &str) -> String {
    if !root.exists(hwmon::HWMON_DIR) {
        return format!("no hwmon {role} sensor ({} absent)", hwmon::HWMON_DIR);
    }
    let mut why = format!(
        "no hwmon {role} sensor ({} device(s) checked",
        found.devices
    );
    if !found.ignored.is_empty() {
        why.push_str(&format!(
            "; coverage unknown, not used: {}",
            found.ignored.join(", ")
        ));
    }
    why.push(')');
    why
}

/// Open a channel per hwmon sensor of `role`, with the words that name
/// them in the description (`hwmon amd_energy Esocket0`).
fn hwmon_channels(
    root: &FsRoot,
    found: &hwmon::HwmonDiscovery,
    role: HwmonRole,
) -> Result<(Vec<Channel>, String), LinuxError> {
    let mut channels = Vec::new();
    let mut parts = Vec::new();
    for m in found.meters.iter().filter(|m| m.role == role) {
        let names: Vec<&str> = m.sensors.iter().map(|s| s.display_name()).collect();
        parts.push(format!("{} {}", m.driver, names.join(", ")));
        for s in &m.sensors {
            let name = format!("{} {}", m.driver, s.display_name());
            channels.push(Channel::open(root, name, Probe::Hwmon(s.clone()))?);
        }
    }
    Ok((channels, format!("hwmon {}", parts.join("; "))))
}

impl PowerMeter {
    /// Open the best meter `root` offers, with the generic estimate
    /// ([`EstimateParams::generic_for`]) should it come to that: no CPU's
    /// figures stand in for another's. See [`PowerMeter::open_with`].
    pub fn open(root: &FsRoot, topology: &Topology) -> Result<PowerMeter, LinuxError> {
        Self::open_with(root, topology, EstimateParams::generic_for(topology))
    }

    /// Open the best meter: RAPL, then hwmon, for each of package and
    /// system energy; the estimate (with `params`) when neither measures
    /// anything. Takes the first reading of every counter, so the first
    /// [`PowerMeter::sample`] covers the time since open.
    ///
    /// Errors: [`LinuxError::Permission`] naming root when a counter may not
    /// be read; [`LinuxError::Parse`] for a malformed file;
    /// [`LinuxError::Absent`] when nothing is measured and the estimate
    /// refuses too (no online CPU, invalid parameters).
    pub fn open_with(
        root: &FsRoot,
        topology: &Topology,
        params: EstimateParams,
    ) -> Result<PowerMeter, LinuxError> {
        let zones = powercap::discover(root)?;
        let rapl = |domain: RaplDomain| -> Result<Vec<Channel>, LinuxError> {
            zones
                .iter()
                .filter(|z| z.domain == domain)
                .map(|z| {
                    let name = powercap::display_name(&zones, z);
                    Channel::open(root, name, Probe::Rapl(z.clone()))
                })
                .collect()
        };
        let mut package = rapl(RaplDomain::Package)?;
        let mut system = rapl(RaplDomain::Psys)?;
        let mut parts = Vec::new();
        for domain in [
            RaplDomain::Core,
            RaplDomain::Uncore,
            RaplDomain::Dram,
            RaplDomain::Other,
        ] {
            parts.extend(rapl(domain)?);
        }
        let rapl_names = |chs: &[Channel]| {
            let names: Vec<&str> = chs.iter().map(|c| c.name.as_str()).collect();
            format!("RAPL {}", names.join(", "))
        };
        let mut package_desc = if package.is_empty() {
            None
        } else {
            let mut d = rapl_names(&package);
            let mut extra: Vec<&str> = parts
                .iter()
                .filter_map(|c| match &c.probe {
                    Probe::Rapl(z) => Some(z.name.as_str()),
                    Probe::Hwmon(_) => None,
                })
                .collect();
            extra.sort_unstable();
            extra.dedup();
            if !extra.is_empty() {
                d.push_str(&format!(" (+{})", extra.join(", ")));
            }
            Some(d)
        };
        let mut system_desc = (!system.is_empty()).then(|| rapl_names(&system));
        let rapl_why = rapl_absence(root, &zones);
        // Why hwmon offers no package figure, and no figure at all.
        let mut hwmon_why = (String::new(), String::new());
        if package.is_empty() || system.is_empty() {
            let found = hwmon::discover(root)?;
            if package.is_empty() {
                let (chs, desc) = hwmon_channels(root, &found, HwmonRole::Package)?;
                if !chs.is_empty() {
                    package = chs;
                    package_desc = Some(desc);
                }
            }
            if system.is_empty() {
                let (chs, desc) = hwmon_channels(root, &found, HwmonRole::System)?;
                if !chs.is_empty() {
                    system = chs;
                    system_desc = Some(desc);
                }
            }
            hwmon_why = (
                hwmon_absence(root, &found, "package"),
                hwmon_absence(root, &found, "power/energy"),
            );
        }
        let (hwmon_no_package, hwmon_none) = hwmon_why;
        let (estimator, description) = match (package_desc, system_desc) {
            (Some(p), Some(s)) => (None, format!("measured: {p}; system: {s}")),
            (Some(p), None) => (None, format!("measured: {p}")),
            (None, Some(s)) => (
                None,
                format!(
                    "measured: system only, {s} (no package meter: {rapl_why}, {hwmon_no_package})"
                ),
            ),
            (None, None) => {
                let Some(est) = Estimator::new(topology, params) else {
                    return Err(LinuxError::Absent {
                        path: root.path(powercap::POWERCAP_DIR),
                        what: format!(
                            "power meter: {rapl_why}, {hwmon_none}, and no estimate \
                             (no online CPU in the topology, or invalid estimate parameters)"
                        ),
                    });
                };
                let d = format!(
                    "estimated from utilisation and P-states: {rapl_why}, {hwmon_none}; {}",
                    est.assumptions()
                );
                (Some(est), d)
            }
        };
        Ok(PowerMeter {
            root: root.clone(),
            package,
            system,
            parts,
            estimator,
            description,
            last: Vec::new(),
        })
    }

    /// Whether the figures are measured or estimated.
    pub fn source(&self) -> PowerSource {
        if self.estimator.is_some() {
            PowerSource::Estimated
        } else {
            PowerSource::Measured
        }
    }

    /// The meter reports should use: the whole system when it is measured,
    /// otherwise the packages.
    pub fn meter(&self) -> Meter {
        if self.system.is_empty() {
            Meter::Package
        } else {
            Meter::System
        }
    }

    /// One line for summaries: the source, what is measured, and — for an
    /// estimate — why nothing is measured and what is assumed.
    pub fn describe(&self) -> String {
        self.description.clone()
    }

    /// Per-domain energies of the last [`PowerMeter::sample`]: every RAPL
    /// zone (including core, uncore and dram, which are in no total), every
    /// hwmon sensor, or the estimate. Empty before the first sample.
    pub fn domains(&self) -> &[DomainEnergy] {
        &self.last
    }

    /// Energy since the previous call (the first call: since open).
    /// `interval_s` is the time that covers — used to integrate power
    /// readings and by the estimate — and `cpus` the utilisation over it
    /// (used by the estimate only). A figure that cannot be told is `None`;
    /// `source` is `None` when both are.
    pub fn sample(
        &mut self,
        interval_s: f64,
        cpus: &[CpuSample],
    ) -> Result<PowerSample, LinuxError> {
        let mut last = Vec::new();
        let (package_j, system_j) = match &self.estimator {
            Some(est) => {
                let j = est.energy_j(interval_s, cpus);
                last.push(DomainEnergy {
                    name: String::from("package (estimated)"),
                    energy_j: j,
                });
                (j, None)
            }
            None => {
                let p = advance_all(&self.root, &mut self.package, interval_s, &mut last)?;
                let s = advance_all(&self.root, &mut self.system, interval_s, &mut last)?;
                advance_all(&self.root, &mut self.parts, interval_s, &mut last)?;
                (p, s)
            }
        };
        self.last = last;
        let source = (package_j.is_some() || system_j.is_some()).then(|| self.source());
        Ok(PowerSample {
            package_j,
            system_j,
            source,
        })
    }
}
