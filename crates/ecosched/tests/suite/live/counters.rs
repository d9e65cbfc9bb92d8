//! What needs hardware counters or cpufreq, on this machine: PAM, WCA and
//! av-sort are refused before the command starts, naming the missing
//! events, and `calibrate av` refuses naming what is missing (this VM has
//! neither; a machine that has them runs or measures instead). Behind the
//! fake PMU WCA pins real busy threads.

use crate::support::{ecosched_command, leftovers, run_with_calibration};
use ecosched_linux::perf::FakePerf;
use ecosched_linux::platform::{LinuxOptions, LinuxPlatform};
use ecosched_model::Platform;
use ecosched_testkit::live::{allowed_list, busy_turn, descendants, kill};
use std::path::Path;

/// Whether `perf` counts instructions here: a machine with a PMU runs the
/// policies that need one, so their refusals cannot be checked on it.
fn perf_counts_instructions() -> bool {
    std::process::Command::new("perf")
        .args(["stat", "-e", "instructions", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
#[ignore = "live: this machine's PMU (a run refused without one)"]
fn pam_is_refused_here_naming_the_missing_events() {
    if perf_counts_instructions() {
        return; // A machine with a PMU runs PAM; this VM has none.
    }
    let state = tempfile::tempdir().unwrap();
    let out = ecosched_command()
        .args(["run", "--policy", "pam", "--state-dir"])
        .arg(state.path())
        .args(["--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for event in ["(instructions)", "(cycles)", "(llc_misses)", "(l1d_misses)"] {
        assert!(
            stderr.contains(event),
            "the refusal names {event}:\n{stderr}"
        );
    }
}

/// WCA needs the instruction, cycle and LLC-reference events;
/// on a machine without a PMU it is refused before the command starts,
/// naming them.
#[test]
#[ignore = "live: this machine's PMU (a run refused without one)"]
fn wca_is_refused_here_naming_the_missing_events() {
    if perf_counts_instructions() {
        return; // A machine with a PMU runs WCA; this VM has none.
    }
    let state = tempfile::tempdir().unwrap();
    let marker = state.path().join("ran");
    let out = ecosched_command()
        .args(["run", "--policy", "wca", "--state-dir"])
        .arg(state.path())
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for event in ["(instructions)", "(cycles)", "(llc_references)"] {
        assert!(
            stderr.contains(event),
            "the refusal names {event}:\n{stderr}"
        );
    }
    assert!(!marker.exists(), "the command must not have started");
}

/// WCA behind a fake PMU on real processes. Two busy loops are
/// non-transient: each ends up pinned to one CPU (checked in
/// `/proc/<pid>/status`); the shell that started them sleeps (under 1 %
/// on a CPU per `/proc/<pid>/task/*/schedstat`), is transient and is left
/// with the CPUs it had.
#[test]
#[ignore = "live: root (cgroups), busy processes"]
fn wca_pins_busy_threads_and_leaves_the_transient_shell_alone() {
    let _turn = busy_turn();
    let state = tempfile::tempdir().unwrap();
    let options = LinuxOptions {
        state_dir: state.path().to_path_buf(),
        ..LinuxOptions::default()
    };
    let mut platform = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options)
        .perf(Box::new(FakePerf::new()))
        .build()
        .unwrap();
    let mut wca = ecosched_policy::build("wca", &ecosched_policy::Params::default()).unwrap();
    platform.open_counters(&wca.requirements());
    assert!(wca
        .requirements()
        .missing(&platform.capabilities())
        .is_empty());
    let initial = wca.init(&platform.topology()).unwrap();
    platform.apply(&initial).unwrap();
    platform
        .start(&[
            "sh".into(),
            "-c".into(),
            "sh -c 'while :; do :; done' & sh -c 'while :; do :; done' & sleep 30".into(),
        ])
        .unwrap();
    let shell = platform.child_pid().unwrap();
    let original = allowed_list(shell).unwrap();
    for _ in 0..15 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let snapshot = platform.observe().unwrap();
        let plan = wca.decide(&snapshot);
        platform.apply(&plan).unwrap();
    }
    let busy: Vec<u32> = descendants(shell)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.contains("while"))
        })
        .collect();
    assert_eq!(busy.len(), 2, "{busy:?}");
    let pins: Vec<String> = busy.iter().map(|p| allowed_list(*p).unwrap()).collect();
    for pin in &pins {
        assert!(
            pin.parse::<u32>().is_ok(),
            "a busy loop is pinned to one CPU: {pins:?}"
        );
    }
    if platform.topology().online_cpus().len() >= 2 {
        assert_ne!(pins[0], pins[1], "the two busy loops share no CPU");
    }
    assert_eq!(
        allowed_list(shell).unwrap(),
        original,
        "the transient shell is not pinned"
    );
    let notes = wca.stats();
    let stat = |k: &str| notes.get(k).map(ToString::to_string).unwrap_or_default();
    assert_eq!(stat("placed_threads"), "2", "{notes:?}");
    assert!(stat("transient_threads") != "0", "{notes:?}");
    platform.finish(true).unwrap();
    kill(&[busy[0], busy[1], shell]);
}

/// `run --policy av-sort` with a calibration file but on a
/// machine without the hardware counters activity vectors are made of is
/// refused before the command starts, naming the missing counters. (On a
/// machine with a PMU the same run starts; this test then only checks that
/// a refusal, if any, names what is missing.)
#[test]
#[ignore = "live: this machine's PMU (a run refused without one)"]
fn av_without_hardware_counters_is_refused_naming_them() {
    let have_pmu = !ecosched_linux::perf::probe(&ecosched_linux::perf::SystemPerf)
        .unavailable
        .iter()
        .any(|(k, _)| *k == ecosched_model::CounterKind::Cycles);
    let (code, stderr, ran) = run_with_calibration(
        &["av-sort"],
        "[activity]\npeak_mem_per_s = 6.0e7\npeak_cache_per_cycle = 0.25\ntranslation = []\n",
    );
    if have_pmu {
        return;
    }
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!ran, "the command must not have run");
    assert!(
        stderr.contains("(cycles)") && stderr.contains("(llc_references)"),
        "the missing counters are named:\n{stderr}"
    );
}

/// `calibrate av` on this machine. Where cpufreq or the
/// hardware counters are missing (this VM and CI: neither) it refuses with
/// exit 2, naming each, before anything is changed: no journal is even
/// opened. On a machine that has both it measures, briefly, and prints
/// the translation vectors (with the cpufreq files journalled and undone:
/// no journal is left).
#[test]
#[ignore = "live: this machine's cpufreq and PMU"]
fn calibrate_av_on_this_machine_measures_or_refuses_naming_what_is_missing() {
    let state = tempfile::tempdir().unwrap();
    let has_cpufreq = Path::new("/sys/devices/system/cpu/cpufreq/policy0").exists()
        || Path::new("/sys/devices/system/cpu/cpu0/cpufreq").exists();
    let out = ecosched_command()
        .args(["calibrate", "av", "--run-ms", "200", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let journals = leftovers(state.path()).len();
    assert_eq!(journals, 0, "a journal was left: {stderr}");
    if out.status.success() {
        assert!(has_cpufreq, "measured without cpufreq? {stdout}");
        assert!(stdout.contains("translation vectors"), "{stdout}");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("this machine lacks"), "{stderr}");
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    assert!(stderr.contains("--machine PRESET"), "{stderr}");
    if !has_cpufreq {
        assert!(stderr.contains("frequency control (no cpufreq"), "{stderr}");
    }
    // No PMU here: each hardware event is named with perf's reason.
    if stderr.contains("perf events") {
        assert!(stderr.contains("LLC-load-misses"), "{stderr}");
    }
}
