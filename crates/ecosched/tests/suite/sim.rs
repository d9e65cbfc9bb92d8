//! `ecosched sim` on the small built-in scenarios: the JSON report's keys,
//! the human tables, the JSON-lines trace, and the errors for bad input
//! (an unknown policy, scenario or parameter, a broken or missing
//! scenario file, an unwritable trace path).

use crate::support::{ecosched, has_keys, json};
use predicates::prelude::*;
use serde_json::Value;

#[test]
fn sim_json_has_every_contract_key() {
    let v = json(&[
        "sim",
        "--scenario",
        "merkel-1-aluadd",
        "--policy",
        "performance",
        "--json",
    ]);
    has_keys(
        &v,
        &[
            "scenario",
            "policy",
            "machine",
            "seed",
            "simulated_s",
            "makespan_s",
            "energy_j",
            "avg_power_w",
            "edp_js",
            "instructions",
            "migrations",
            "migrations_per_s",
            "migrations_by_cause",
            "tasks",
        ],
        "sim report",
    );
    assert_eq!(v["scenario"], "merkel-1-aluadd");
    assert_eq!(v["policy"], "performance");
    assert!(v["makespan_s"].as_f64().unwrap() > 0.0, "{v}");
    let tasks = v["tasks"].as_array().unwrap();
    assert!(!tasks.is_empty());
    for t in tasks {
        has_keys(
            t,
            &[
                "name",
                "runtime_s",
                "completions",
                "instructions",
                "migrations",
            ],
            "task",
        );
    }
}

#[test]
fn sim_seed_is_reported_and_human_output_has_both_tables() {
    let v = json(&[
        "sim",
        "--scenario",
        "merkel-1-aluadd",
        "--policy",
        "performance",
        "--seed",
        "7",
        "--json",
    ]);
    assert_eq!(v["seed"], 7);
    ecosched()
        .args([
            "sim",
            "--scenario",
            "merkel-1-aluadd",
            "--policy",
            "fixed",
            "--param",
            "freq_mhz=1600",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("makespan (s)")
                .and(predicate::str::contains("energy (J)"))
                .and(predicate::str::contains("runtime (s)"))
                .and(predicate::str::contains("aluadd")),
        );
}

/// `sim --trace FILE` streams the run as JSON lines: a header line with the
/// initial plan, then one step per line whose times rise, ending at the
/// simulated time the report gives.
#[test]
fn sim_trace_streams_one_json_line_per_step() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let report = json(&[
        "sim",
        "--scenario",
        "merkel-1-aluadd",
        "--policy",
        "performance",
        "--trace",
        path.to_str().unwrap(),
        "--json",
    ]);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() > 2, "{} lines", lines.len());
    assert_eq!(lines[0]["header"]["policy"], "performance");
    assert!(lines[0].get("initial_plan").is_some());
    let times: Vec<f64> = lines[1..]
        .iter()
        .map(|l| l["snapshot"]["time_s"].as_f64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[1] > w[0]), "{times:?}");
    let last = *times.last().unwrap();
    assert!((last - report["simulated_s"].as_f64().unwrap()).abs() < 1e-9);
    assert!(lines[1]["snapshot"]["tasks"][0]["process"]["tgid"].is_u64());
}

#[test]
fn an_unwritable_trace_path_is_refused_before_simulating() {
    ecosched()
        .args([
            "sim",
            "--scenario",
            "merkel-1-aluadd",
            "--policy",
            "performance",
            "--trace",
            "/nonexistent-dir/run.jsonl",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "cannot create the trace file /nonexistent-dir/run.jsonl",
        ));
}

#[test]
fn unknown_policy_lists_valid_ones() {
    ecosched()
        .args(["sim", "--scenario", "merkel-1-aluadd", "--policy", "pamm"])
        .assert()
        .failure()
        .stderr(predicate::str::starts_with("error:").and(predicate::str::contains("ondemand")));
    ecosched()
        .args([
            "compare",
            "--scenario",
            "merkel-1-aluadd",
            "--policies",
            "performance,pamm",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("ondemand"));
}

#[test]
fn unknown_scenario_lists_builtins() {
    ecosched()
        .args([
            "sim",
            "--scenario",
            "no-such-scenario",
            "--policy",
            "performance",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("merkel-4-stream"));
}

#[test]
fn param_without_equals_is_a_clear_error() {
    ecosched()
        .args([
            "sim",
            "--scenario",
            "merkel-1-aluadd",
            "--policy",
            "fixed",
            "--param",
            "freq_mhz",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("freq_mhz").and(predicate::str::contains("key=value")));
}

#[test]
fn unknown_param_names_the_valid_ones() {
    ecosched()
        .args([
            "sim",
            "--scenario",
            "merkel-1-aluadd",
            "--policy",
            "fixed",
            "--param",
            "freq=1600",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("freq_mhz"));
}

#[test]
fn toml_syntax_error_names_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let path = dir.join("ecosched-cli-broken-scenario.toml");
    std::fs::write(
        &path,
        "name = \"broken\"\ndescription = \"a syntax error on line 3\"\nmachine = = \"q6600\"\n",
    )
    .unwrap();
    let shown = path.display().to_string();
    ecosched()
        .args(["sim", "--scenario", &shown, "--policy", "performance"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!("{shown}:3")));
}

#[test]
fn missing_scenario_file_is_an_error() {
    ecosched()
        .args([
            "sim",
            "--scenario",
            "/nonexistent/dir/x.toml",
            "--policy",
            "performance",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/nonexistent/dir/x.toml"));
}
