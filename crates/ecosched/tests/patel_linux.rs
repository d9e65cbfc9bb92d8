//! `ecosched run --policy patel*` on this machine (issue #12): a machine
//! that cannot serve Patel's schedulers refuses them before the command
//! starts, naming the missing hardware events and frequency control.

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
