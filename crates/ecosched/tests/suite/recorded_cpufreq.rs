//! Patel's `patel2` cpusets on a recorded machine that has cpufreq (the
//! Xeon E5345 / acpi-cpufreq tree, copied to a temporary directory): the
//! cpusets' frequencies are set through the journalled cpufreq writes and
//! put back, and a partition the machine cannot hold is refused.

use crate::support::e5345_tree;
use ecosched_linux::journal::Journal;
use ecosched_linux::platform::apply_frequency;
use ecosched_linux::FsRoot;
use ecosched_model::FreqSetting;
use ecosched_policy::Params;
use ecosched_testkit::trees::copy_tree;

/// On Linux Patel's frequencies are set with the userspace governor or
/// min=max pinning, journalled: `patel2`'s cpusets on the Xeon E5345 /
/// acpi-cpufreq tree. The partition derived from its two P-states pins
/// every CPU's policy to its set's frequency with the userspace governor,
/// each file journalled first, and undo puts every file back; a partition
/// naming a frequency the tree does not offer is refused with the valid
/// ones.
#[test]
fn patel2_cpusets_pin_cpufreq_through_the_journal_on_a_recorded_xeon() {
    let src = e5345_tree();
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&src, dir.path());
    let machine = ecosched_linux::topology::discover(&FsRoot::recorded(dir.path())).unwrap();
    let governors = |m: &ecosched_linux::topology::LinuxTopology| -> Vec<String> {
        m.cpufreq
            .iter()
            .map(|p| {
                std::fs::read_to_string(dir.path().join(p.file("scaling_governor")))
                    .unwrap()
                    .trim()
                    .to_string()
            })
            .collect()
    };
    let before = governors(&machine);

    let mut policy = ecosched_policy::build("patel2", &Params::default()).unwrap();
    let plan = policy.init(&machine.topology).unwrap();
    let sets = policy
        .stats()
        .get("cpusets")
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        sets.contains("@2000 MHz") && sets.contains("@2333 MHz"),
        "{sets}"
    );
    assert_eq!(plan.frequency.len(), machine.cpufreq.len(), "{plan:?}");

    let state = tempfile::tempdir().unwrap();
    let mut journal = Journal::create(state.path(), FsRoot::writable_fixture(dir.path())).unwrap();
    apply_frequency(&mut journal, &machine.cpufreq, &plan.frequency).unwrap();
    for (domain, setting) in &plan.frequency {
        let FreqSetting::Fixed { freq_khz } = setting else {
            panic!("patel pins fixed frequencies: {setting:?}");
        };
        let p = &machine.cpufreq[domain.index()];
        let read = |f: &str| std::fs::read_to_string(dir.path().join(p.file(f))).unwrap();
        assert_eq!(read("scaling_governor").trim(), "userspace");
        assert_eq!(read("scaling_setspeed").trim(), freq_khz.to_string());
    }
    let log = std::fs::read_to_string(journal.path()).unwrap();
    assert!(log.contains("scaling_setspeed"), "{log}");
    let report = journal.undo();
    assert!(report.failed.is_empty(), "{report:?}");
    assert_eq!(governors(&machine), before);

    let mut bad = ecosched_policy::build(
        "patel2",
        &Params::default().with("partition", "4@1600,4@2333"),
    )
    .unwrap();
    let err = bad.init(&machine.topology).unwrap_err().to_string();
    assert!(
        err.contains("1600 MHz is not a P-state") && err.contains("2000, 2333"),
        "{err}"
    );
}
