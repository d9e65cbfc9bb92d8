//! `doctor` on this machine, checked against `run`: every policy
//! `doctor` refuses, `run` refuses before its command starts (exit 2,
//! naming the same shortfall), and every policy it says runs (fully or
//! degraded) `run` runs to the end (exit 0), saying so when degraded.
//! Each policy is run once, managing `true`. A daemon configuration with
//! a policy `doctor` refuses is refused at load with the same reason.

use crate::support::{ecosched_command, json};
use serde_json::Value;

/// The parameters a policy needs to start here: its required ones, with
/// values that fit any machine (CPU 0, a task name no process has, a
/// frequency `doctor`'s verdict does not depend on).
fn params(policy: &str) -> &'static [&'static str] {
    match policy {
        "fixed" => &["--param", "freq_mhz=1600"],
        "static" => &["--param", "cpus=0"],
        "placed" => &["--param", "map=no-such-task@0"],
        _ => &[],
    }
}

#[test]
#[ignore = "live: root, cgroups (runs every policy on this machine)"]
fn doctor_verdicts_match_what_run_does_for_every_policy() {
    let report = json(&["doctor", "--json"]);
    let policies = report["policies"].as_array().unwrap();
    assert!(policies.len() >= 20, "{policies:?}");
    let state = tempfile::tempdir().unwrap();
    for p in policies {
        let name = p["name"].as_str().unwrap();
        let verdict = p["verdict"].as_str().unwrap();
        let out = ecosched_command()
            .args(["run", "--policy", name])
            .args(params(name))
            .arg("--state-dir")
            .arg(state.path())
            .args(["--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        match verdict {
            "refused" => {
                assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
                let reason = first_reason(p);
                assert!(
                    stderr.contains(reason),
                    "{name}: run's refusal names doctor's reason {reason:?}:\n{stderr}"
                );
            }
            "runs" | "degraded" => {
                assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
                assert_eq!(
                    stderr.contains("runs degraded here"),
                    verdict == "degraded",
                    "{name}: {stderr}"
                );
            }
            other => panic!("{name}: unknown verdict {other}"),
        }
    }
}

/// The start of doctor's first reason, as far as `run` words it the same
/// way (a search or cluster policy's reason is doctor's summary of
/// `run`'s longer message).
fn first_reason(p: &Value) -> &str {
    let reason = p["reasons"][0].as_str().unwrap();
    match p["family"].as_str() {
        Some("oracle") => "ecosched compare",
        Some("av-xnode") => "cluster scenario",
        _ => reason,
    }
}

/// A daemon configuration naming a policy `doctor` refuses here is
/// refused at load, with the reason `run` gives, and no group starts.
#[test]
#[ignore = "live: root (the daemon's state directory and socket)"]
fn the_daemon_refuses_at_load_what_doctor_refuses() {
    let report = json(&["doctor", "--json"]);
    let refused = report["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["verdict"] == "refused" && p["family"] == "governors");
    let Some(policy) = refused else {
        return; // This machine has cpufreq: every governor runs.
    };
    let name = policy["name"].as_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let file = dir.path().join("ecosched.toml");
    std::fs::write(
        &file,
        format!(
            "[daemon]\nstate_dir = \"{d}/state\"\nsocket = \"{d}/ctl.sock\"\nmetrics = \"\"\n\n\
             [[group]]\nname = \"g\"\ncgroup = \"{d}/none\"\npolicy = \"{name}\"\n"
        ),
    )
    .unwrap();
    let out = ecosched_command()
        .args(["daemon", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("group \"g\": key `policy`: policy ")
            && stderr.contains(&format!("{name} cannot run on this machine: it needs"))
            && stderr.contains(policy["reasons"][0].as_str().unwrap()),
        "{stderr}"
    );
    assert!(!dir.path().join("ctl.sock").exists());
}
