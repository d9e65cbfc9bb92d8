//! Frequency plans carried out on a recorded cpufreq tree (this VM has no
//! cpufreq): the files a plan writes, journalled first, and all of them put
//! back by undo. Uses the hand-written Xeon E5345 / acpi-cpufreq tree in
//! `tests/data/cpufreq-acpi-xeon-e5345`, copied to a writable directory.

use crate::support::{scratch_copy, snapshot};
use ecosched_linux::journal::Journal;
use ecosched_linux::platform::apply_frequency;
use ecosched_linux::topology::discover;
use ecosched_linux::FsRoot;
use ecosched_model::{FreqSetting, Governor};
use std::collections::BTreeMap;
use std::path::Path;

#[test]
fn fixed_and_governor_settings_are_written_journalled_and_undone() {
    let dir = scratch_copy("cpufreq-acpi-xeon-e5345");
    let machine = discover(&FsRoot::recorded(dir.path())).unwrap();
    assert!(machine.cpufreq.len() >= 2, "{:?}", machine.cpufreq);
    let before = snapshot(dir.path());

    let state = tempfile::tempdir().unwrap();
    let mut journal = Journal::create(state.path(), FsRoot::writable_fixture(dir.path())).unwrap();
    let low = machine.topology.freq_domains[0].min_khz();
    let plan = BTreeMap::from([
        (
            ecosched_model::FreqDomainId(0),
            FreqSetting::Fixed { freq_khz: low },
        ),
        (
            ecosched_model::FreqDomainId(1),
            FreqSetting::Governor(Governor::Performance),
        ),
    ]);
    apply_frequency(&mut journal, &machine.cpufreq, &plan).unwrap();

    let p0 = &machine.cpufreq[0];
    let p1 = &machine.cpufreq[1];
    let read = |rel: String| std::fs::read_to_string(dir.path().join(rel)).unwrap();
    assert_eq!(read(p0.file("scaling_governor")).trim(), "userspace");
    assert_eq!(read(p0.file("scaling_setspeed")).trim(), low.to_string());
    assert_eq!(read(p1.file("scaling_governor")).trim(), "performance");
    let log = std::fs::read_to_string(journal.path()).unwrap();
    assert!(
        log.contains(&p0.file("scaling_setspeed")),
        "journalled first:\n{log}"
    );

    let report = journal.undo();
    assert!(report.failed.is_empty(), "{report:?}");
    let after = snapshot(dir.path());
    let changed: Vec<&String> = before
        .iter()
        .filter(|(k, v)| after.get(*k).map(|a| a.trim()) != Some(v.trim()))
        .map(|(k, _)| k)
        .collect();
    assert!(changed.is_empty(), "not put back: {changed:?}");
}

#[test]
fn a_frequency_the_policy_cannot_hold_is_refused_before_anything_is_written() {
    let dir = scratch_copy("cpufreq-acpi-xeon-e5345");
    let machine = discover(&FsRoot::recorded(dir.path())).unwrap();
    let before = snapshot(dir.path());
    let state = tempfile::tempdir().unwrap();
    let mut journal = Journal::create(state.path(), FsRoot::writable_fixture(dir.path())).unwrap();
    let plan = BTreeMap::from([(
        ecosched_model::FreqDomainId(0),
        FreqSetting::Fixed {
            freq_khz: 1_234_000,
        },
    )]);
    let err = apply_frequency(&mut journal, &machine.cpufreq, &plan)
        .unwrap_err()
        .to_string();
    assert!(err.contains("1234000") && err.contains("offers"), "{err}");
    assert_eq!(snapshot(dir.path()), before);
}

/// Every file's modification time under `dir`: a rewrite with the same
/// value shows here, not in the contents.
fn mtimes(dir: &Path) -> BTreeMap<String, std::time::SystemTime> {
    snapshot(dir)
        .into_keys()
        .map(|rel| {
            let t = std::fs::metadata(dir.join(&rel))
                .unwrap()
                .modified()
                .unwrap();
            (rel, t)
        })
        .collect()
}

#[test]
fn re_sending_an_unchanged_setting_writes_nothing() {
    let dir = scratch_copy("cpufreq-acpi-xeon-e5345");
    let machine = discover(&FsRoot::recorded(dir.path())).unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut journal = Journal::create(state.path(), FsRoot::writable_fixture(dir.path())).unwrap();
    let low = machine.topology.freq_domains[0].min_khz();
    let plan = BTreeMap::from([
        (
            ecosched_model::FreqDomainId(0),
            FreqSetting::Fixed { freq_khz: low },
        ),
        (
            ecosched_model::FreqDomainId(1),
            FreqSetting::Governor(Governor::Performance),
        ),
        // Already the governor in the recorded tree: never written.
        (
            ecosched_model::FreqDomainId(2),
            FreqSetting::Governor(Governor::Ondemand),
        ),
    ]);
    let p2 = machine.cpufreq[2].file("scaling_governor");
    let untouched = std::fs::metadata(dir.path().join(&p2))
        .unwrap()
        .modified()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    apply_frequency(&mut journal, &machine.cpufreq, &plan).unwrap();
    let log = std::fs::read_to_string(journal.path()).unwrap();
    assert!(
        !log.contains(&p2),
        "an unchanged governor is not journalled:\n{log}"
    );
    let first = mtimes(dir.path());
    assert_eq!(
        first[&p2], untouched,
        "an unchanged governor is not rewritten"
    );
    assert_ne!(
        first[&machine.cpufreq[1].file("scaling_governor")],
        untouched,
        "a changed one is"
    );
    std::thread::sleep(std::time::Duration::from_millis(20));
    // The same plan again, as a policy re-sends it every interval.
    apply_frequency(&mut journal, &machine.cpufreq, &plan).unwrap();
    assert_eq!(mtimes(dir.path()), first, "a re-sent plan rewrote files");
    // A real change is still made.
    let high = machine.topology.freq_domains[0].max_khz();
    let plan = BTreeMap::from([(
        ecosched_model::FreqDomainId(0),
        FreqSetting::Fixed { freq_khz: high },
    )]);
    apply_frequency(&mut journal, &machine.cpufreq, &plan).unwrap();
    let setspeed = machine.cpufreq[0].file("scaling_setspeed");
    let read = |rel: &str| std::fs::read_to_string(dir.path().join(rel)).unwrap();
    assert_eq!(read(&setspeed).trim(), high.to_string());
    let changed: Vec<String> = mtimes(dir.path())
        .into_iter()
        .filter(|(k, t)| first[k] != *t)
        .map(|(k, _)| k)
        .collect();
    assert_eq!(changed, vec![setspeed], "only the setspeed file");
    assert!(journal.undo().failed.is_empty());
}
