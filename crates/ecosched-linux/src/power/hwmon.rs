//! Power and energy sensors of the hwmon class (`sys/class/hwmon/hwmon*`),
//! the fallback when RAPL is missing (older AMD parts, servers whose BMC
//! publishes a power meter through ACPI).
//!
//! The sysfs ABI (Documentation/hwmon/sysfs-interface.rst) gives
//! `energyN_input` in microjoules (a counter), `powerN_average` and
//! `powerN_input` in microwatts, and `name` for the driver. A sensor only
//! counts when its driver says what it covers, so a GPU's or a voltage
//! rail's power is never passed off as the processor's:
//!
//! | driver (`name`)  | covers  | sensors used |
//! |------------------|---------|--------------|
//! | `power_meter`    | system  | ACPI power meter (ACPI000D; `sensors` shows `power_meter-acpi-0`), usually the BMC's reading of the power supplies: `power1_average` |
//! | `amd_energy`     | package | `energyN_input` labelled `Esocket*` (the `Ecore*` counters are parts of a socket) |
//! | `zenpower`       | package | SVI2 core and SoC power (`power1_input`, `power2_input`), summed |
//! | `fam15h_power`   | package | AMD family 15h/16h processor power (`power1_average`, else `power1_input`) |
//!
//! Within a device, energy counters are preferred (exact over any
//! interval); otherwise average power, then instantaneous power, is
//! integrated over the interval. Old kernels keep the attributes in
//! `hwmon*/device/`; both places are searched, as `libsensors` does.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;

/// Where the hwmon class lives under a root.
pub const HWMON_DIR: &str = "sys/class/hwmon";

/// What part of the machine a sensor covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HwmonRole {
    /// Processor packages.
    Package,
    /// The whole machine.
    System,
}

impl HwmonRole {
    /// The role of a driver's power/energy sensors; `None` for drivers
    /// whose sensors cover something else or something unknown.
    pub fn of_driver(name: &str) -> Option<Self> {
        match name {
            "power_meter" => Some(HwmonRole::System),
            "amd_energy" | "zenpower" | "fam15h_power" => Some(HwmonRole::Package),
            _ => None,
        }
    }
}

/// Kind of hwmon power attribute, in order of preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SensorKind {
    /// `energyN_input`: a counter in microjoules.
    Energy,
    /// `powerN_average`: microwatts averaged by the device.
    PowerAverage,
    /// `powerN_input`: microwatts now.
    PowerInput,
}

/// Recognise a power/energy reading file (`energy3_input`,
/// `power1_average`); `None` for its companions (`power1_average_interval`,
/// `power1_cap`, `energy1_label` …).
pub fn parse_sensor_file(file: &str) -> Option<(SensorKind, u32)> {
    let (kind, rest) = if let Some(rest) = file.strip_prefix("energy") {
        (SensorKind::Energy, rest.strip_suffix("_input")?)
    } else if let Some(rest) = file.strip_prefix("power") {
        if let Some(n) = rest.strip_suffix("_average") {
            (SensorKind::PowerAverage, n)
        } else {
            (SensorKind::PowerInput, rest.strip_suffix("_input")?)
        }
    } else {
        return None;
    };
    Some((kind, rest.parse().ok()?))
}

/// One reading file of a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HwmonSensor {
    /// The file, relative to the root.
    pub file: String,
    /// What it holds.
    pub kind: SensorKind,
    /// Its `*_label`, when the driver gives one.
    pub label: Option<String>,
}

impl HwmonSensor {
    /// The label, else the file name (`power1_average`).
    pub fn display_name(&self) -> &str {
        match &self.label {
            Some(l) => l,
            None => self.file.rsplit('/').next().unwrap_or(&self.file),
        }
    }
}

/// A device whose sensors ecosched uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HwmonMeter {
    /// `hwmon3`.
    pub device: String,
    /// Its driver name.
    pub driver: String,
    /// What it covers.
    pub role: HwmonRole,
    /// The sensors to sum, all of one kind.
    pub sensors: Vec<HwmonSensor>,
}

/// What the hwmon class offers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HwmonDiscovery {
    /// Devices with usable sensors, in device order.
    pub meters: Vec<HwmonMeter>,
    /// Drivers with power/energy sensors whose coverage is unknown (a GPU,
    /// a rail monitor), left out.
    pub ignored: Vec<String>,
    /// hwmon devices looked at.
    pub devices: usize,
}

/// The directory holding a device's attributes: the device itself, or its
/// `device/` on kernels before the attributes moved up.
fn attribute_dir(root: &FsRoot, dev: &str) -> Option<String> {
    [
        format!("{HWMON_DIR}/{dev}"),
        format!("{HWMON_DIR}/{dev}/device"),
    ]
    .into_iter()
    .find(|d| root.exists(&format!("{d}/name")))
}

/// Look at every hwmon device and keep the power/energy sensors whose
/// coverage is known (see the module table).
pub fn discover(root: &FsRoot) -> Result<HwmonDiscovery, LinuxError> {
    let mut found = HwmonDiscovery::default();
    for dev in root.list(HWMON_DIR)? {
        if !dev.starts_with("hwmon") {
            continue;
        }
        found.devices += 1;
        let Some(dir) = attribute_dir(root, &dev) else {
            continue;
        };
        let driver = root.read(&format!("{dir}/name"), "hwmon driver name")?;
        let mut sensors = Vec::new();
        for file in root.list(&dir)? {
            let Some((kind, index)) = parse_sensor_file(&file) else {
                continue;
            };
            let prefix = if kind == SensorKind::Energy {
                "energy"
            } else {
                "power"
            };
            let label = root.read_opt(&format!("{dir}/{prefix}{index}_label"))?;
            sensors.push(HwmonSensor {
                file: format!("{dir}/{file}"),
                kind,
                label,
            });
        }
        if sensors.is_empty() {
            continue;
        }
        let Some(role) = HwmonRole::of_driver(&driver) else {
            found.ignored.push(driver);
            continue;
        };
        if driver == "amd_energy" {
            sensors.retain(|s| {
                s.kind == SensorKind::Energy
                    && s.label.as_deref().is_some_and(|l| l.starts_with("Esocket"))
            });
        }
        let Some(best) = sensors.iter().map(|s| s.kind).min() else {
            continue;
        };
        sensors.retain(|s| s.kind == best);
        found.meters.push(HwmonMeter {
            device: dev,
            driver,
            role,
            sensors,
        });
    }
    Ok(found)
}

/// Read one sensor now: microjoules for a counter, microwatts otherwise.
pub fn read_sensor(root: &FsRoot, sensor: &HwmonSensor) -> Result<u64, LinuxError> {
    let text = root.read(&sensor.file, "hwmon sensor")?;
    let unit = if sensor.kind == SensorKind::Energy {
        "microjoules"
    } else {
        "microwatts"
    };
    text.parse().map_err(|_| {
        LinuxError::parse(
            &root.path(&sensor.file),
            &text,
            format!("expected unsigned {unit}"),
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn sensor_files_are_told_from_their_companions() {
        assert_eq!(
            parse_sensor_file("energy1_input"),
            Some((SensorKind::Energy, 1))
        );
        assert_eq!(
            parse_sensor_file("energy12_input"),
            Some((SensorKind::Energy, 12))
        );
        assert_eq!(
            parse_sensor_file("power1_average"),
            Some((SensorKind::PowerAverage, 1))
        );
        assert_eq!(
            parse_sensor_file("power2_input"),
            Some((SensorKind::PowerInput, 2))
        );
        for other in [
            "power1_average_interval",
            "power1_cap",
            "power1_label",
            "energy1_label",
            "power_input",
            "powerx_input",
            "energy1_input_highest",
            "temp1_input",
            "name",
        ] {
            assert_eq!(parse_sensor_file(other), None, "{other}");
        }
    }

    #[test]
    fn only_drivers_with_known_coverage_count() {
        assert_eq!(HwmonRole::of_driver("power_meter"), Some(HwmonRole::System));
        assert_eq!(HwmonRole::of_driver("amd_energy"), Some(HwmonRole::Package));
        assert_eq!(HwmonRole::of_driver("zenpower"), Some(HwmonRole::Package));
        assert_eq!(HwmonRole::of_driver("amdgpu"), None);
        assert_eq!(HwmonRole::of_driver("ina3221"), None);
    }

    #[test]
    fn energy_is_preferred_and_malformed_readings_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let dev = dir.path().join(HWMON_DIR).join("hwmon0");
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::write(dev.join("name"), "fam15h_power\n").unwrap();
        std::fs::write(dev.join("power1_input"), "31000000\n").unwrap();
        std::fs::write(dev.join("power1_average"), "30000000\n").unwrap();
        std::fs::write(dev.join("power1_average_interval"), "10\n").unwrap();
        let root = FsRoot::recorded(dir.path());
        let found = discover(&root).unwrap();
        assert_eq!(found.meters.len(), 1);
        let sensors = &found.meters[0].sensors;
        assert_eq!(sensors.len(), 1);
        assert_eq!(sensors[0].kind, SensorKind::PowerAverage);
        assert_eq!(read_sensor(&root, &sensors[0]).unwrap(), 30_000_000);
        std::fs::write(dev.join("power1_average"), "n/a\n").unwrap();
        let err = read_sensor(&root, &sensors[0]).unwrap_err().to_string();
        assert!(
            err.contains("hwmon0/power1_average") && err.contains("n/a"),
            "{err}"
        );
        assert!(err.contains("microwatts"), "{err}");
    }
}
