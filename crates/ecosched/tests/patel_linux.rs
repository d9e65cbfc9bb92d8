//! `ecosched run --policy patel*` on this machine (issue #12): a machine
//! that cannot serve Patel's schedulers refuses them before the command
//! starts, naming the missing hardware events and frequency control; and
//! on a recorded machine that has cpufreq (the Xeon E5345 tree), the
//! cpusets' frequencies are set through the journalled cpufreq writes and
//! put back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

fn bin() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("ecosched"))
}

/// Run `patel*` with `params` on `touch MARKER`; the output and whether
/// the command ran.
fn run(policy: &str, params: &[&str]) -> (std::process::Output, bool) {
    let state = tempfile::tempdir().unwrap();
    let marker = state.path().join("started");
    let mut cmd = bin();
    cmd.args(["run", "--policy", policy]);
    for p in params {
        cmd.args(["--param", p]);
    }
    let out = cmd
        .arg("--state-dir")
        .arg(state.path())
        .arg("--")
        .arg("touch")
        .arg(&marker)
        .output()
        .unwrap();
    (out, marker.exists())
}

/// One cpuset of every online CPU (its frequency is nominal under
/// `confine_only`), so the partition fits whatever machine runs the test.
fn whole_machine() -> String {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("partition={n}@800")
}

fn has_hardware_pmu() -> bool {
    Path::new("/sys/bus/event_source/devices/cpu").exists()
}

fn has_cpufreq() -> bool {
    Path::new("/sys/devices/system/cpu/cpufreq")
        .read_dir()
        .is_ok_and(|mut d| d.next().is_some())
}

#[test]
fn without_a_pmu_every_patel_policy_is_refused_naming_its_events() {
    if has_hardware_pmu() {
        return; // This machine can count them; nothing to check here.
    }
    for (policy, events) in [
        ("patel1", &["Instructions", "Cycles"][..]),
        (
            "patel3",
            &["Instructions", "Cycles", "LlcReferences", "LlcMisses"][..],
        ),
        (
            "patel4",
            &["ContextSwitches", "Migrations", "Instructions"][..],
        ),
    ] {
        let (out, ran) = run(policy, &["confine_only=true", &whole_machine()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let software = has_perf_software_switches();
        assert_eq!(out.status.code(), Some(2), "{policy}: {stderr}");
        for e in events {
            // Context switches and migrations are software events perf
            // counts without a PMU; only hardware events must be named.
            if software && (*e == "ContextSwitches" || *e == "Migrations") {
                continue;
            }
            assert!(stderr.contains(e), "{policy} must name {e}: {stderr}");
        }
        assert!(!ran, "{policy}: the command must not have run");
    }
}

/// perf's software events exist on every Linux with perf_event.
fn has_perf_software_switches() -> bool {
    Path::new("/sys/bus/event_source/devices/software").exists()
}

#[test]
fn without_cpufreq_the_refusal_names_frequency_control() {
    if has_cpufreq() {
        return; // A machine with cpufreq can pin the cpusets' frequencies.
    }
    let (out, ran) = run("patel2", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("frequency control"), "{stderr}");
    assert!(!ran);
    // confine_only drops the frequency requirement: what is left missing
    // (if anything) is counters, never frequency control.
    let (out, _) = run("patel2", &["confine_only=true", &whole_machine()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("frequency control"), "{stderr}");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Issue #12 ("on Linux the frequencies are set with the userspace
/// governor or min=max pinning (journalled)"): `patel2`'s cpusets on the
/// Xeon E5345 / acpi-cpufreq tree. The partition derived from its two
/// P-states pins every CPU's policy to its set's frequency with the
/// userspace governor, each file journalled first, and undo puts every
/// file back; a partition naming a frequency the tree does not offer is
/// refused with the valid ones.
#[test]
fn patel2_cpusets_pin_cpufreq_through_the_journal_on_a_recorded_xeon() {
    use ecosched_linux::journal::Journal;
    use ecosched_linux::platform::apply_frequency;
    use ecosched_linux::FsRoot;
    use ecosched_model::FreqSetting;
    use ecosched_policy::Params;

    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ecosched-linux/tests/data/cpufreq-acpi-xeon-e5345");
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
