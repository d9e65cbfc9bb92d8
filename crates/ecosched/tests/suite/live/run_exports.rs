//! The exports on a real managed run (`ecosched run`): the HTML report,
//! the CSV time series and the Perfetto trace, from one command pinned to
//! CPU 0. Needs root (cpuset cgroups), as CI has.

use crate::support::ecosched_command;
use serde_json::Value;

#[test]
#[ignore = "live: root (cpuset cgroups)"]
fn run_writes_report_timeseries_and_perfetto_trace() {
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (html, csv, trace) = (
        dir.path().join("run.html"),
        dir.path().join("run.csv"),
        dir.path().join("run.perfetto.json"),
    );
    let out = ecosched_command()
        .args([
            "run",
            "--policy",
            "static",
            "--param",
            "cpus=0",
            "--interval-ms",
            "50",
            "--cgroup-name",
            "ecosched-rep-test",
            "--state-dir",
        ])
        .arg(state.path())
        .arg("--report")
        .arg(&html)
        .arg("--timeseries")
        .arg(&csv)
        .arg("--trace")
        .arg(&trace)
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("ecosched run: sh -c"), "no title");
    assert!(page.contains("static: task placement over time"));
    assert_eq!(page.matches("<svg").count(), 4);
    assert!(!page.contains("<script"));
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert!(rows.starts_with("time_s,cpu,mhz,utilisation,watts,tasks\n"));
    // The shell ran on CPU 0 only, and was seen there.
    let on: Vec<&str> = rows
        .lines()
        .skip(1)
        // Linux names a task by its command and PID (`sh:1234`).
        .filter(|l| l.rsplit(',').next().unwrap().starts_with("sh:"))
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert!(!on.is_empty(), "{rows}");
    assert!(on.iter().all(|c| *c == "0"), "{rows}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let slices: Vec<&Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    assert!(!slices.is_empty());
    assert!(
        slices
            .iter()
            .all(|s| s["tid"] == 1 && s["name"].as_str().unwrap().starts_with("sh:")),
        "{slices:?}"
    );
}
