//! The exports on a real managed run (`ecosched run`): the HTML report,
//! the CSV time series and the Perfetto trace, from one command pinned to
//! CPU 0; the Perfetto trace of `make -j2` from the kernel's context
//! switches; `--json` and `--json-file` apart from the command's own
//! output; and the time series of odd task names read back by pandas
//! (which `scripts/install-pandas` installs). Needs root (cpuset cgroups),
//! as CI has.

use crate::support::{ecosched_command, trace_slices, MEASURE_ONLY};
use serde_json::Value;
use std::process::Command;

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
    // Laid out as the simulated reports are: nothing clipped or overlapping.
    super::report_browser::assert_readable(&html, dir.path());
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
            .all(|s| s["name"].as_str().unwrap().starts_with("sh:")),
        "{slices:?}"
    );
    // The slices are the kernel's context switches: the shell's time is
    // on CPU 0 (track 1) but for the moment its trampoline runs before it
    // joins the cpuset (spawn.rs), on whatever CPU the parent's was.
    let on = |track: Option<u64>| -> f64 {
        slices
            .iter()
            .filter(|s| track.is_none_or(|t| s["tid"] == t))
            .map(|s| s["dur"].as_f64().unwrap())
            .sum()
    };
    assert!(on(Some(1)) > 0.9 * on(None), "{slices:?}");
}

/// `make -j2` on two CPUs: its two compilers run at once, and the trace,
/// made from the kernel's context-switch records, shows them so: slices
/// of two different compiler processes overlapping on two CPU tracks.
#[test]
#[ignore = "live: root (cgroups), perf software events, make and a C compiler"]
fn perfetto_trace_of_make_j2_shows_two_compilers_at_once() {
    let project = tempfile::tempdir().unwrap();
    super::run::c_project(project.path());
    let state = tempfile::tempdir().unwrap();
    let trace = project.path().join("t.json");
    let out = ecosched_command()
        .arg("run")
        .arg("--policy")
        .args(MEASURE_ONLY)
        .arg("--state-dir")
        .arg(state.path())
        .arg("--trace")
        .arg(&trace)
        .args(["--trace-format", "perfetto", "--", "make", "-j2", "-C"])
        .arg(project.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let source = events
        .iter()
        .find(|e| e["name"] == "schedule")
        .and_then(|e| e["args"]["source"].as_str())
        .unwrap();
    assert!(source.contains("context-switch records"), "{source}");
    // (pid, CPU track, start, end) of every compiler slice.
    let compilers = trace_slices(&v, |e| {
        let name = e["name"].as_str().unwrap();
        ["cc1:", "gcc:"].iter().any(|c| name.starts_with(c))
    });
    let pids: std::collections::BTreeSet<u64> = compilers.iter().map(|c| c.0).collect();
    assert!(pids.len() >= 7, "seven files, seven compilers: {pids:?}");
    let together = compilers.iter().any(|a| {
        compilers
            .iter()
            .any(|b| a.0 != b.0 && a.1 != b.1 && a.2 < b.3 && b.2 < a.3)
    });
    assert!(together, "no two compilers overlap on two CPUs");
    // A thread is on one CPU at a time.
    for (i, a) in compilers.iter().enumerate() {
        for b in &compilers[i + 1..] {
            assert!(a.0 != b.0 || a.3 <= b.2 || b.3 <= a.2, "{a:?} {b:?}");
        }
    }
}

/// `--json`: stdout is the JSON alone, the command's output goes to
/// stderr; `--json-file`: the same JSON in the file, the command's output
/// on stdout.
#[test]
#[ignore = "live: a real `ecosched run` on this machine"]
fn run_json_keeps_the_commands_output_apart() {
    let state = tempfile::tempdir().unwrap();
    let run = |extra: &[&std::ffi::OsStr]| {
        ecosched_command()
            .arg("run")
            .arg("--policy")
            .args(MEASURE_ONLY)
            .arg("--state-dir")
            .arg(state.path())
            .args(extra)
            .args(["--", "echo", "from-the-command"])
            .output()
            .unwrap()
    };
    let out = run(&["--json".as_ref()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["exit_code"], 0);
    assert!(String::from_utf8_lossy(&out.stderr).contains("from-the-command"));
    let file = state.path().join("summary.json");
    let out = run(&["--json-file".as_ref(), file.as_os_str()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("from-the-command"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["command"][0], "echo");
}

/// pandas reads the time series' odd task names back whole.
#[test]
#[ignore = "live: python3 with pandas (scripts/install-pandas)"]
fn pandas_reads_odd_task_names_back() {
    let dir = tempfile::tempdir().unwrap();
    let csv = crate::exports::odd_names_timeseries(dir.path());
    let script = "import json, sys, pandas\n\
                  d = pandas.read_csv(sys.argv[1], keep_default_na=False)\n\
                  print(json.dumps({'columns': list(d.columns), \
                  'tasks': sorted({t for t in d['tasks'] if t})}))";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(&csv)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["columns"],
        serde_json::json!(["time_s", "cpu", "mhz", "utilisation", "watts", "tasks"])
    );
    let mut want: Vec<&str> = crate::exports::ODD_NAMES.to_vec();
    want.sort();
    assert_eq!(v["tasks"], serde_json::json!(want));
}
