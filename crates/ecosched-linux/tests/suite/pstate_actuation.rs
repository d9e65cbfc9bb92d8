//! Fixed frequencies where the driver offers no `userspace` governor:
//! `intel_pstate` (the recorded i7-1370P, `tests/data/cpufreq-intel-pstate-i7-1370p`)
//! and `amd-pstate-epp` (the Ryzen 9 7940HS tree built from the kernel's
//! documented layout, `tests/data/cpufreq-amd-pstate-epp-ryzen-9-7940hs`),
//! copied to a writable directory. A plan pins `scaling_min_freq` =
//! `scaling_max_freq`, sets the matching `energy_performance_preference`,
//! journals every file first, and undo puts min, max, EPP and governor back.

use crate::support::{scratch_copy, snapshot};
use ecosched_linux::cpufreq::describe_control;
use ecosched_linux::journal::Journal;
use ecosched_linux::platform::apply_frequency;
use ecosched_linux::pstate::FreqControl;
use ecosched_linux::topology::discover;
use ecosched_linux::FsRoot;
use ecosched_model::{FreqDomainId, FreqSetting, Governor};
use std::collections::BTreeMap;

const INTEL: &str = "cpufreq-intel-pstate-i7-1370p";
const AMD: &str = "cpufreq-amd-pstate-epp-ryzen-9-7940hs";

fn changed(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    before
        .iter()
        .filter(|(k, v)| after.get(*k).map(|a| a.trim()) != Some(v.trim()))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Pin domain 0 low, domain 1 at its top, set domain 2's governor; check
/// the files, then undo and check nothing is left changed.
fn pin_and_restore(name: &str, driver: &str, status: &str) {
    let dir = scratch_copy(name);
    let machine = discover(&FsRoot::recorded(dir.path())).unwrap();
    assert_eq!(machine.pstate.status.as_deref(), Some(status));
    let p0 = machine.cpufreq[0].clone();
    let p1 = machine.cpufreq[1].clone();
    assert_eq!(p0.driver.as_deref(), Some(driver));
    assert_eq!(p0.control(), FreqControl::PinnedRangeEpp);
    let described = describe_control(&machine.cpufreq, &machine.pstate).unwrap();
    assert!(
        described.contains(driver)
            && described.contains("energy_performance_preference")
            && described.contains(status),
        "{described}"
    );
    let before = snapshot(dir.path());

    let state = tempfile::tempdir().unwrap();
    let mut journal = Journal::create(state.path(), FsRoot::writable_fixture(dir.path())).unwrap();
    let low = p0.cpuinfo_min_khz.unwrap();
    let top = p1.cpuinfo_max_khz.unwrap();
    let plan = BTreeMap::from([
        (FreqDomainId(0), FreqSetting::Fixed { freq_khz: low }),
        (FreqDomainId(1), FreqSetting::Fixed { freq_khz: top }),
        (
            FreqDomainId(2),
            FreqSetting::Governor(Governor::Performance),
        ),
    ]);
    apply_frequency(&mut journal, &machine.cpufreq, &plan).unwrap();
    let read = |rel: String| {
        std::fs::read_to_string(dir.path().join(rel))
            .unwrap()
            .trim()
            .to_string()
    };
    assert_eq!(read(p0.file("scaling_min_freq")), low.to_string());
    assert_eq!(read(p0.file("scaling_max_freq")), low.to_string());
    assert_eq!(read(p0.file("energy_performance_preference")), "power");
    assert_eq!(read(p1.file("scaling_min_freq")), top.to_string());
    assert_eq!(read(p1.file("scaling_max_freq")), top.to_string());
    assert_eq!(
        read(p1.file("energy_performance_preference")),
        "performance"
    );
    let p2 = &machine.cpufreq[2];
    assert_eq!(read(p2.file("scaling_governor")), "performance");
    let log = std::fs::read_to_string(journal.path()).unwrap();
    // Files already holding their value (policy 0's minimum, policy 1's
    // maximum) are not written, so not journalled.
    for file in [
        p0.file("scaling_max_freq"),
        p0.file("energy_performance_preference"),
        p1.file("scaling_min_freq"),
        p1.file("energy_performance_preference"),
    ] {
        assert!(log.contains(&file), "{file} journalled:\n{log}");
    }

    let report = journal.undo();
    assert!(report.failed.is_empty(), "{report:?}");
    let left = changed(&before, &snapshot(dir.path()));
    assert!(left.is_empty(), "not put back: {left:?}");
}

#[test]
fn intel_pstate_active_pins_the_range_sets_epp_and_restores_all() {
    pin_and_restore(INTEL, "intel_pstate", "active");
}

#[test]
fn amd_pstate_epp_pins_the_range_sets_epp_and_restores_all() {
    pin_and_restore(AMD, "amd-pstate-epp", "active");
}

/// Under the `performance` governor both drivers refuse any EPP but
/// `performance`: a low pin switches to `powersave` first, and undo puts
/// `performance` back last.
#[test]
fn a_low_pin_under_the_performance_governor_goes_through_powersave() {
    let dir = scratch_copy(AMD);
    let policy = dir.path().join("sys/devices/system/cpu/cpufreq/policy0");
    std::fs::write(policy.join("scaling_governor"), "performance\n").unwrap();
    std::fs::write(
        policy.join("energy_performance_preference"),
        "performance\n",
    )
    .unwrap();
    let machine = discover(&FsRoot::recorded(dir.path())).unwrap();
    let before = snapshot(dir.path());
    let state = tempfile::tempdir().unwrap();
    let mut journal = Journal::create(state.path(), FsRoot::writable_fixture(dir.path())).unwrap();
    let plan = BTreeMap::from([(
        FreqDomainId(0),
        FreqSetting::Fixed {
            freq_khz: 2_000_000,
        },
    )]);
    apply_frequency(&mut journal, &machine.cpufreq, &plan).unwrap();
    let read = |f: &str| std::fs::read_to_string(policy.join(f)).unwrap();
    assert_eq!(read("scaling_governor").trim(), "powersave");
    assert_eq!(
        read("energy_performance_preference").trim(),
        "balance_power"
    );
    assert_eq!(read("scaling_max_freq").trim(), "2000000");
    let log = std::fs::read_to_string(journal.path()).unwrap();
    let governor_at = log.find("scaling_governor").unwrap();
    let epp_at = log.find("energy_performance_preference").unwrap();
    assert!(governor_at < epp_at, "governor journalled first:\n{log}");
    // A governor setting afterwards puts the EPP found at discovery back.
    let plan = BTreeMap::from([(FreqDomainId(0), FreqSetting::Governor(Governor::Powersave))]);
    apply_frequency(&mut journal, &machine.cpufreq, &plan).unwrap();
    assert_eq!(read("energy_performance_preference").trim(), "performance");
    assert_eq!(read("scaling_min_freq").trim(), "400000");
    let report = journal.undo();
    assert!(report.failed.is_empty(), "{report:?}");
    let left = changed(&before, &snapshot(dir.path()));
    assert!(left.is_empty(), "not put back: {left:?}");
}

#[test]
fn a_frequency_outside_the_hardware_range_is_refused_before_anything_is_written() {
    let dir = scratch_copy(INTEL);
    let machine = discover(&FsRoot::recorded(dir.path())).unwrap();
    let before = snapshot(dir.path());
    let state = tempfile::tempdir().unwrap();
    let mut journal = Journal::create(state.path(), FsRoot::writable_fixture(dir.path())).unwrap();
    // CPU 12 is an E-core: 3.9 GHz at most.
    let e_core = machine
        .cpufreq
        .iter()
        .position(|p| p.cpuinfo_max_khz == Some(3_900_000))
        .unwrap();
    let plan = BTreeMap::from([(
        FreqDomainId(e_core),
        FreqSetting::Fixed {
            freq_khz: 5_000_000,
        },
    )]);
    let err = apply_frequency(&mut journal, &machine.cpufreq, &plan)
        .unwrap_err()
        .to_string();
    assert!(err.contains("400000..=3900000"), "{err}");
    assert_eq!(snapshot(dir.path()), before);
}
