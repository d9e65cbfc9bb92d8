//! What the suite's modules share: the `ecosched` binary under test (as an
//! `assert_cmd` command to assert on, or a plain command to spawn), its
//! JSON output, the recorded machine trees of `ecosched-linux`, and the
//! checks several `run` tests make on what a run leaves behind.
//!
//! Helpers for this machine's processes that other crates' tests need too
//! live in `ecosched_testkit::live`.

pub mod av_sort;
pub mod chaos;
pub mod daemon;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `ecosched` binary cargo built for these tests.
pub fn ecosched_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("ecosched")
}

/// Every complete slice (`"ph": "X"`) of a Perfetto trace that `keep`
/// accepts, as (pid, CPU track, start µs, end µs).
pub fn trace_slices(trace: &Value, keep: impl Fn(&Value) -> bool) -> Vec<(u64, u64, f64, f64)> {
    trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && keep(e))
        .map(|e| {
            let ts = e["ts"].as_f64().unwrap();
            (
                e["args"]["pid"].as_u64().unwrap(),
                e["tid"].as_u64().unwrap(),
                ts,
                ts + e["dur"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// `ecosched`, to run and assert on (status, stdout, stderr).
pub fn ecosched() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("ecosched").expect("the ecosched binary is built")
}

/// What `ecosched ARGS` prints on stdout on a pool of `threads` threads
/// (`RAYON_NUM_THREADS`), for the tests that its output does not depend
/// on the thread count.
pub fn stdout_on_threads(args: &[&str], threads: usize) -> Vec<u8> {
    ecosched()
        .env("RAYON_NUM_THREADS", threads.to_string())
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

/// `ecosched` as a plain command, for tests that spawn it, signal it or
/// read its output as they go.
pub fn ecosched_command() -> Command {
    Command::new(ecosched_path())
}

/// `ecosched` run as user `nobody` (uid and gid 65534, no groups), through
/// util-linux's `setpriv`; the caller adds the subcommand. Needs root.
pub fn ecosched_as_nobody() -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(ecosched_path());
    cmd
}

/// Run with `args`, require success, and parse stdout as one JSON value.
pub fn json(args: &[&str]) -> Value {
    let out = ecosched()
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}):\n{text}"))
}

/// Assert that `v` has every key of `keys`; `what` names `v` in the
/// failure.
pub fn has_keys(v: &Value, keys: &[&str], what: &str) {
    for k in keys {
        assert!(v.get(k).is_some(), "{what} lacks {k:?}: {v}");
    }
}

/// A command's stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A policy (with its parameters, after `--policy`) that runs on any
/// machine and changes nothing: `placed`, pinning a task no process is
/// named. The live tests that check `run` itself use it; the governors
/// need cpufreq, which a VM often lacks.
pub const MEASURE_ONLY: &[&str] = &["placed", "--param", "map=ecosched-no-task@0"];

/// `ecosched run --policy` [`MEASURE_ONLY`], for the caller to add the
/// rest of the command line.
pub fn measure_only_run() -> Command {
    let mut command = ecosched_command();
    command.args(["run", "--policy"]).args(MEASURE_ONLY);
    command
}

/// The hand-written recording of a dual Xeon E5345 with acpi-cpufreq,
/// kept with `ecosched-linux`'s test data.
pub fn e5345_tree() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ecosched-linux/tests/data/cpufreq-acpi-xeon-e5345")
}

/// What a run left in its state directory besides the history store,
/// which keeps each run's record on purpose: journals and hint files.
pub fn leftovers(state: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(state)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| !p.ends_with(ecosched_service::history::FILE))
                .collect()
        })
        .unwrap_or_default()
}

/// The journal and the hint file are gone: the run undid everything.
pub fn assert_left_nothing(state: &Path) {
    let left = leftovers(state);
    assert!(left.is_empty(), "left in the state directory: {left:?}");
}

/// The busy loops `sh -c 'while :; do :; done'` that the shell `sh`
/// started: its children whose command line is the loop, in pid order.
pub fn loops_of(sh: u32) -> Vec<u32> {
    ecosched_testkit::live::children_of(sh)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.contains("while"))
        })
        .collect()
}

/// `ecosched run --policy POLICY… --calibration FILE` with `text` in FILE,
/// on a command that touches a marker. Returns the exit code, stderr and
/// whether the command ran.
pub fn run_with_calibration(policy: &[&str], text: &str) -> (Option<i32>, String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cal.toml");
    std::fs::write(&file, text).unwrap();
    let marker = dir.path().join("started");
    let out = ecosched_command()
        .args(["run", "--policy"])
        .args(policy)
        .arg("--calibration")
        .arg(&file)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .arg("--")
        .arg("touch")
        .arg(&marker)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        marker.exists(),
    )
}

/// The journal of a dead `ecosched` (owner pid 4194311, above the largest
/// pid Linux hands out) that changed the affinity of a thread that is
/// gone as well: `restore` finds nothing left to put back, and a later run
/// warns about it.
pub const DEAD_JOURNAL: &str = "{\"version\":1,\"owner_pid\":4194311,\"owner_start_ticks\":5}\n\
    {\"kind\":\"affinity\",\"tid\":4194300,\"start_ticks\":9,\"before\":\"0\"}\n";
