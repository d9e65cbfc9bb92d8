//! `PowerMeter` against hand-recorded sysfs trees of real machines, and on
//! the running one. The trees under `tests/data/power-*/` hold only the
//! powercap and hwmon files the meter reads, with the layout those machines
//! have:
//!
//! - `power-poweredge-r640-xeon-gold-6130`: 2 × Skylake-SP — RAPL
//!   `package-N` with a `dram` subzone each, and the iDRAC's ACPI
//!   `power_meter` (system);
//! - `power-thinkpad-t480-i7-8650u`: Kaby Lake R laptop — `package-0` with
//!   `core`/`uncore`/`dram`, `psys`, and the `intel-rapl-mmio:0` repeat of
//!   `package-0`;
//! - `power-ryzen-3700x-amd-energy`: Zen 2 with the `amd_energy` hwmon
//!   driver (`Ecore000..007`, `Esocket0`) and no powercap;
//! - `power-proliant-dl380-g7-power-meter`: Westmere (before RAPL), old
//!   kernel with the ACPI power meter's attributes in `hwmon0/device/`;
//! - `power-phenom-ii-x6-amdgpu`: no RAPL, and the only power sensor is a
//!   GPU's (`amdgpu`), which must not be taken for the processor.
//!
//! Deltas and wrap-around are checked by copying a tree to a temporary
//! directory and writing new counter values between samples. The meter of
//! the machine running the tests is checked in `live::power_meter`.
use crate::support::{child_of, data, scratch_copy};
use ecosched_linux::power::{DomainEnergy, PowerMeter};
use ecosched_linux::{FsRoot, LinuxError};
use ecosched_model::topology::Cpu;
use ecosched_model::{CpuId, CpuSample, Meter, PowerSource, Topology};
use std::path::Path;

/// `n` online CPUs, one core each, in one package, without cpufreq.
fn topology(n: u32) -> Topology {
    Topology {
        cpus: (0..n)
            .map(|i| Cpu {
                id: CpuId(i),
                package: 0,
                die: 0,
                core: i,
                numa_node: 0,
                online: true,
                freq_domain: Some(ecosched_model::FreqDomainId(0)),
                capacity: ecosched_model::topology::FULL_CAPACITY,
            })
            .collect(),
        ..Topology::default()
    }
}

fn idle(n: u32) -> Vec<CpuSample> {
    (0..n)
        .map(|i| CpuSample {
            id: CpuId(i),
            freq_khz: None,
            utilisation: 0.0,
            nr_running: None,
        })
        .collect()
}

/// A writable copy of a fixture.
fn scratch(name: &str) -> (tempfile::TempDir, FsRoot) {
    let dir = scratch_copy(name);
    let root = FsRoot::writable_fixture(dir.path());
    (dir, root)
}

fn set(dir: &tempfile::TempDir, rel: &str, value: u64) {
    std::fs::write(dir.path().join(rel), format!("{value}\n")).unwrap();
}

pub fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

fn domain<'a>(domains: &'a [DomainEnergy], name: &str) -> &'a DomainEnergy {
    domains
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no domain {name} in {domains:?}"))
}

const PKG0: &str = "sys/class/powercap/intel-rapl:0/energy_uj";
const PKG1: &str = "sys/class/powercap/intel-rapl:1/energy_uj";
const RANGE: u64 = 262_143_328_850;

#[test]
fn xeon_server_sums_packages_leaves_dram_out_and_takes_the_acpi_meter_for_the_system() {
    let root = FsRoot::recorded(data("power-poweredge-r640-xeon-gold-6130"));
    let mut meter = PowerMeter::open(&root, &topology(4)).unwrap();
    assert_eq!(meter.source(), PowerSource::Measured);
    assert_eq!(meter.meter(), Meter::System);
    assert_eq!(
        meter.describe(),
        "measured: RAPL package-0, package-1 (+dram); system: hwmon power_meter power1_average"
    );
    // Unchanged counters: zero package energy, and 248 W held for 2 s.
    let s = meter.sample(2.0, &[]).unwrap();
    assert!(close(s.package_j, 0.0), "{s:?}");
    assert!(close(s.system_j, 496.0), "{s:?}");
    assert_eq!(s.source, Some(PowerSource::Measured));
    let names: Vec<&str> = meter.domains().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "package-0",
            "package-1",
            "power_meter power1_average",
            "package-0/dram",
            "package-1/dram"
        ]
    );
}

#[test]
fn deltas_follow_the_counters_and_wrap_at_the_range() {
    let (dir, root) = scratch("power-poweredge-r640-xeon-gold-6130");
    let mut meter = PowerMeter::open(&root, &topology(4)).unwrap();
    // First sample: the energy since open.
    set(&dir, PKG0, 81_234_567_890 + 60_000_000);
    set(&dir, PKG1, 79_876_543_210 + 55_500_000);
    set(&dir, "sys/class/hwmon/hwmon0/power1_average", 252_000_000);
    let s = meter.sample(1.0, &[]).unwrap();
    assert!(close(s.package_j, 115.5), "{s:?}");
    assert!(close(s.system_j, 250.0), "{s:?}");
    assert!(close(domain(meter.domains(), "package-0").energy_j, 60.0));
    assert!(close(
        domain(meter.domains(), "package-0/dram").energy_j,
        0.0
    ));
    // package-0 wraps: 10 J before the end of the range, 30 J after it.
    set(&dir, PKG0, RANGE - 10_000_000);
    set(&dir, PKG1, 79_876_543_210 + 55_500_000 + 1_000_000);
    meter.sample(1.0, &[]).unwrap();
    set(&dir, PKG0, 30_000_000);
    set(&dir, PKG1, 79_876_543_210 + 55_500_000 + 2_000_000);
    set(
        &dir,
        "sys/class/powercap/intel-rapl:1:0/energy_uj",
        11_223_344_556 + 7_000_000,
    );
    let s = meter.sample(1.0, &[]).unwrap();
    assert!(close(s.package_j, 41.0), "{s:?}");
    assert!(close(domain(meter.domains(), "package-0").energy_j, 40.0));
    assert!(close(
        domain(meter.domains(), "package-1/dram").energy_j,
        7.0
    ));
    // A reading beyond the range cannot come from this counter.
    set(&dir, PKG0, RANGE + 1);
    let err = meter.sample(1.0, &[]).unwrap_err();
    assert!(matches!(err, LinuxError::Parse { .. }), "{err}");
    assert!(err.to_string().contains("intel-rapl:0/energy_uj"), "{err}");
}

#[test]
fn laptop_uses_psys_for_the_system_and_drops_the_mmio_repeat() {
    let (dir, root) = scratch("power-thinkpad-t480-i7-8650u");
    let mut meter = PowerMeter::open(&root, &topology(8)).unwrap();
    assert_eq!(meter.meter(), Meter::System);
    assert_eq!(
        meter.describe(),
        "measured: RAPL package-0 (+core, dram, uncore); system: RAPL psys"
    );
    set(&dir, PKG0, 23_456_789_012 + 8_000_000);
    set(&dir, PKG1, 45_678_901_234 + 14_250_000);
    set(
        &dir,
        "sys/class/powercap/intel-rapl:0:0/energy_uj",
        9_876_543_210 + 5_000_000,
    );
    // The MMIO counter moving must change nothing: it is the same package.
    set(
        &dir,
        "sys/class/powercap/intel-rapl-mmio:0/energy_uj",
        23_456_790_001 + 8_000_000,
    );
    let s = meter.sample(1.0, &[]).unwrap();
    assert!(close(s.package_j, 8.0), "{s:?}");
    assert!(close(s.system_j, 14.25), "{s:?}");
    assert!(close(
        domain(meter.domains(), "package-0/core").energy_j,
        5.0
    ));
    assert_eq!(meter.domains().len(), 5, "{:?}", meter.domains());
}

#[test]
fn amd_energy_counts_the_socket_not_the_cores() {
    let (dir, root) = scratch("power-ryzen-3700x-amd-energy");
    let mut meter = PowerMeter::open(&root, &topology(16)).unwrap();
    assert_eq!(meter.source(), PowerSource::Measured);
    assert_eq!(meter.meter(), Meter::Package);
    assert_eq!(meter.describe(), "measured: hwmon amd_energy Esocket0");
    let socket = "sys/class/hwmon/hwmon2/energy9_input";
    set(&dir, socket, 98_765_432_109 + 65_000_000);
    set(&dir, "sys/class/hwmon/hwmon2/energy1_input", 1_600_000_000);
    let s = meter.sample(1.0, &[]).unwrap();
    assert!(close(s.package_j, 65.0), "{s:?}");
    assert_eq!(s.system_j, None, "absent, never zero");
    // A counter that runs backwards (driver reloaded) loses the interval.
    set(&dir, socket, 1_000);
    let s = meter.sample(1.0, &[]).unwrap();
    assert_eq!(s.package_j, None);
    assert_eq!(s.source, None);
    set(&dir, socket, 2_001_000);
    assert!(close(meter.sample(1.0, &[]).unwrap().package_j, 2.0));
}

#[test]
fn power_readings_are_integrated_between_samples() {
    let (dir, root) = scratch("power-proliant-dl380-g7-power-meter");
    let mut meter = PowerMeter::open(&root, &topology(24)).unwrap();
    assert_eq!(meter.source(), PowerSource::Measured);
    assert_eq!(meter.meter(), Meter::System);
    let d = meter.describe();
    assert!(
        d.starts_with("measured: system only, hwmon power_meter power1_average (no package meter: no RAPL (sys/class/powercap absent), no hwmon package sensor (3 device(s) checked)"),
        "{d}"
    );
    // 187 W at open, 213 W now: the trapezoid over 0.5 s.
    set(
        &dir,
        "sys/class/hwmon/hwmon0/device/power1_average",
        213_000_000,
    );
    let s = meter.sample(0.5, &idle(24)).unwrap();
    assert!(close(s.system_j, 100.0), "{s:?}");
    assert_eq!(s.package_j, None, "no package meter: absent, not estimated");
    assert_eq!(s.source, Some(PowerSource::Measured));
    assert_eq!(meter.sample(f64::NAN, &[]).unwrap().system_j, None);
}

#[test]
fn a_gpu_sensor_is_not_the_processor_so_the_estimate_says_why() {
    let root = FsRoot::recorded(data("power-phenom-ii-x6-amdgpu"));
    let mut meter = PowerMeter::open(&root, &topology(6)).unwrap();
    assert_eq!(meter.source(), PowerSource::Estimated);
    assert_eq!(meter.meter(), Meter::Package);
    let d = meter.describe();
    assert!(
        d.starts_with(
            "estimated from utilisation and P-states: no RAPL (sys/class/powercap absent), \
             no hwmon power/energy sensor (2 device(s) checked; coverage unknown, not used: amdgpu); \
             ESTIMATE (model generic"
        ) && d.contains("no cpufreq, frequency assumed at maximum")
            && !d.contains("Q6600"),
        "{d}"
    );
    // Six idle cores of the generic figures (a Phenom II has no preset in
    // this crate): a 1.5 W uncore share and 0.3 W idle per core.
    let s = meter.sample(2.0, &idle(6)).unwrap();
    assert!(close(s.package_j, 2.0 * 6.0 * (1.5 + 0.3)), "{s:?}");
    assert_eq!(s.system_j, None);
    assert_eq!(s.source, Some(PowerSource::Estimated));
    assert_eq!(meter.domains()[0].name, "package (estimated)");
    // Without a sample for every online CPU the estimate refuses.
    let s = meter.sample(2.0, &idle(5)).unwrap();
    assert_eq!((s.package_j, s.source), (None, None));
}

#[test]
fn nothing_to_measure_and_nothing_to_estimate_is_absent() {
    let root = FsRoot::recorded(data("power-phenom-ii-x6-amdgpu"));
    let err = PowerMeter::open(&root, &Topology::default()).unwrap_err();
    assert!(err.is_absent(), "{err}");
    assert!(err.to_string().contains("no estimate"), "{err}");
}

#[test]
fn a_malformed_counter_fails_open_with_its_path() {
    let (dir, root) = scratch("power-thinkpad-t480-i7-8650u");
    std::fs::write(dir.path().join(PKG1), "psys\n").unwrap();
    let err = PowerMeter::open(&root, &topology(8)).unwrap_err();
    assert!(matches!(err, LinuxError::Parse { .. }), "{err}");
    assert!(err.to_string().contains("intel-rapl:1/energy_uj"), "{err}");
}

/// The refusal an unprivileged user gets on `energy_uj` (mode 0400 since
/// Linux 5.10) must surface as a permission error naming root.
pub fn expect_refusal(fixture_dir: &Path) {
    let err = PowerMeter::open(&FsRoot::recorded(fixture_dir), &topology(8)).unwrap_err();
    match &err {
        LinuxError::Permission { path, capability } => {
            assert!(path.ends_with("intel-rapl:0/energy_uj"), "{err}");
            assert!(capability.starts_with("root"), "{err}");
        }
        other => panic!("expected a permission error, got {other}"),
    }
}

#[test]
fn rapl_refusal_is_an_error_naming_root_not_an_estimate() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let (dir, _) = scratch("power-thinkpad-t480-i7-8650u");
    let counter = dir.path().join(PKG0);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    if !nix::unistd::geteuid().is_root() {
        std::fs::set_permissions(&counter, std::fs::Permissions::from_mode(0o000)).unwrap();
        expect_refusal(dir.path());
        return;
    }
    // Root reads anything: ask again as `nobody`, as the kernel's 0400 intends.
    std::fs::set_permissions(&counter, std::fs::Permissions::from_mode(0o400)).unwrap();
    // `nobody` may not be able to reach the build tree (a checkout under a
    // private directory), so it runs a copy of this test binary.
    let bin_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(bin_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = bin_dir.path().join("suite");
    std::fs::copy(std::env::current_exe().unwrap(), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = child_of(&bin, "rapl_refusal_child")
        .env("POWER_FIXTURE", dir.path())
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
