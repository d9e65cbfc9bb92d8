//! Policies that set frequencies, on recorded machines that have cpufreq
//! (copied to a temporary directory): Patel's `patel2` cpusets on the Xeon
//! E5345 / acpi-cpufreq tree, set through the journalled cpufreq writes
//! and put back, and a partition the machine cannot hold refused; `hilo`
//! on that tree and on the i7-1370P / intel_pstate one, leaving every
//! domain outside its high set as found.

use crate::support::e5345_tree;
use ecosched_linux::cpufreq::CpufreqPolicy;
use ecosched_linux::journal::Journal;
use ecosched_linux::platform::apply_frequency;
use ecosched_linux::FsRoot;
use ecosched_model::{FreqSetting, TaskState};
use ecosched_policy::Params;
use ecosched_testkit::snapshots::{snapshot, task};
use ecosched_testkit::trees::copy_tree;
use std::path::Path;

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

/// The files of `policy` a frequency setting may write, as the kernel
/// would show them now: `scaling_setspeed` means something only under
/// `userspace` (the kernel reads `<unsupported>` otherwise; a copied tree
/// keeps what was last written).
fn cpufreq_files(dir: &Path, policy: &CpufreqPolicy) -> Vec<(String, String)> {
    let read = |f: &str| {
        let text = std::fs::read_to_string(dir.join(policy.file(f))).ok()?;
        Some((f.to_string(), text.trim().to_string()))
    };
    let mut files: Vec<(String, String)> = [
        "scaling_governor",
        "scaling_min_freq",
        "scaling_max_freq",
        "energy_performance_preference",
    ]
    .iter()
    .filter_map(|f| read(f))
    .collect();
    if files
        .iter()
        .any(|(f, v)| f == "scaling_governor" && v == "userspace")
    {
        files.extend(read("scaling_setspeed"));
    }
    files
}

/// `hilo` on the recorded `tree`: three busy tasks grow H, then demand
/// falls and H shrinks. A domain with no CPU in H is never written; one
/// that leaves H holds again the governor, range and preference it was
/// found with; undo puts back the rest.
fn hilo_leaves_domains_outside_h_as_found(tree: &Path) {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(tree, dir.path());
    let machine = ecosched_linux::topology::discover(&FsRoot::recorded(dir.path())).unwrap();
    let topology = std::sync::Arc::new(machine.topology.clone());
    let found: Vec<_> = machine
        .cpufreq
        .iter()
        .map(|p| cpufreq_files(dir.path(), p))
        .collect();
    let state = tempfile::tempdir().unwrap();
    let mut journal = Journal::create(state.path(), FsRoot::writable_fixture(dir.path())).unwrap();
    let mut policy = ecosched_policy::build("hilo", &Params::default()).unwrap();
    let mut apply = |plan: &ecosched_model::Plan| {
        apply_frequency(&mut journal, &machine.cpufreq, &plan.frequency).unwrap();
    };
    let busy = |time_s: f64, n: u32| {
        snapshot(topology.clone(), time_s, 0.02)
            .tasks((0..n).map(|i| {
                task(10 + i)
                    .state(TaskState::Running)
                    .on_cpu_ns(20_000_000)
                    .runqueue_wait_ns(0)
            }))
            .build()
    };
    // The domains each plan gives a fixed frequency, and the rest as found.
    let check = |plan: &ecosched_model::Plan, high: &[usize], when: &str| {
        for (d, p) in machine.cpufreq.iter().enumerate() {
            let now = cpufreq_files(dir.path(), p);
            if high.contains(&d) {
                assert_ne!(now, found[d], "{when}: domain {d} in H was not set");
            } else {
                assert_eq!(now, found[d], "{when}: domain {d} outside H: {plan:?}");
            }
        }
    };
    let high_domains = |plan: &ecosched_model::Plan| -> Vec<usize> {
        let h = plan.managed_cpus.clone().unwrap();
        (0..machine.cpufreq.len())
            .filter(|&d| topology.freq_domains[d].cpus.intersects(&h))
            .collect()
    };
    let first = policy.init(&topology).unwrap();
    apply(&first);
    check(&first, &high_domains(&first), "at the start");
    let grown = policy.decide(&busy(0.02, 3));
    apply(&grown);
    let high = high_domains(&grown);
    assert!(
        high.len() < machine.cpufreq.len(),
        "H must leave domains out"
    );
    check(&grown, &high, "H grown");
    assert!(grown
        .frequency
        .values()
        .all(|s| matches!(s, FreqSetting::Fixed { .. })));
    let mut t = 0.04;
    let shrunk = loop {
        let plan = policy.decide(&busy(t, 0));
        if plan.managed_cpus.is_some() {
            break plan;
        }
        t += 0.02;
        assert!(t < 1.0, "H never shrank");
    };
    apply(&shrunk);
    assert!(shrunk
        .frequency
        .values()
        .any(|s| *s == FreqSetting::AsFound));
    check(&shrunk, &high_domains(&shrunk), "H shrunk");
    let report = journal.undo();
    assert!(report.failed.is_empty(), "{report:?}");
    for (d, p) in machine.cpufreq.iter().enumerate() {
        assert_eq!(cpufreq_files(dir.path(), p), found[d], "after undo");
    }
}

/// acpi-cpufreq with the userspace governor: H through scaling_setspeed.
#[test]
fn hilo_leaves_domains_outside_h_as_found_on_a_recorded_xeon() {
    hilo_leaves_domains_outside_h_as_found(&e5345_tree());
}

/// intel_pstate in active mode (no userspace): H pinned through
/// scaling_min/max_freq and its preference; a domain handed back gets
/// powersave's range and its balance_performance preference again.
#[test]
fn hilo_leaves_domains_outside_h_as_found_on_a_recorded_hybrid_laptop() {
    let tree = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ecosched-linux/tests/data/cpufreq-intel-pstate-i7-1370p");
    hilo_leaves_domains_outside_h_as_found(&tree);
}
