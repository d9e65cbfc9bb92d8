//! The command line's shape: the listings of scenarios and policies (as
//! JSON with every family's parameters, and as tables), and the usage
//! error for a missing subcommand or option, and for a cgroup name
//! `restore` could not tell from others; the global `-v`/`-q` flags and a
//! malformed `RUST_LOG`.

use crate::support::{ecosched, has_keys, json};
use predicates::prelude::*;

#[test]
fn scenarios_json_lists_builtins() {
    let v = json(&["scenarios", "--json"]);
    let list = v.as_array().unwrap();
    let names: Vec<&str> = list.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"merkel-4-stream"), "{names:?}");
    assert!(names.contains(&"bench-8c24t"), "{names:?}");
    for s in list {
        assert!(s["description"].is_string(), "{s}");
    }
}

#[test]
fn scenarios_human_is_a_table() {
    ecosched().arg("scenarios").assert().success().stdout(
        predicate::str::contains("merkel-1-aluadd").and(predicate::str::contains("description")),
    );
}

#[test]
fn policies_json_lists_baselines_with_params() {
    let v = json(&["policies", "--json"]);
    let families = v.as_array().unwrap();
    let variants: Vec<&serde_json::Value> = families
        .iter()
        .flat_map(|f| f["variants"].as_array().unwrap())
        .collect();
    for want in ["performance", "ondemand", "fixed", "static"] {
        assert!(
            variants.iter().any(|p| p["name"] == want),
            "{want} missing: {v}"
        );
    }
    let fixed = families.iter().find(|p| p["name"] == "fixed").unwrap();
    has_keys(
        fixed,
        &["name", "title", "kind", "variants", "params", "stats"],
        "family",
    );
    let params = fixed["params"].as_array().unwrap();
    assert!(
        params
            .iter()
            .any(|p| p["key"] == "freq_mhz" && p["help"].is_string()),
        "{fixed}"
    );
}

#[test]
fn missing_subcommand_is_a_usage_error() {
    ecosched().assert().code(2);
    ecosched()
        .args(["sim", "--policy", "performance"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--scenario"));
}

/// `restore` tells a run's cgroups from others by their `ecosched` prefix,
/// so a run may not name them otherwise.
#[test]
fn a_cgroup_name_without_the_ecosched_prefix_is_a_usage_error() {
    let state = tempfile::tempdir().unwrap();
    ecosched()
        .args([
            "run",
            "--policy",
            "static",
            "--param",
            "cpus=0",
            "--cgroup-name",
            "db",
            "--state-dir",
        ])
        .arg(state.path())
        .args(["--", "true"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("--cgroup-name").and(predicate::str::contains("ecosched")),
        );
}

/// `-v` and `-q` go anywhere on the line, not both; a malformed
/// `RUST_LOG` is bad input naming the variable, and nothing is run.
#[test]
fn log_flags_are_global_and_rust_log_is_checked() {
    ecosched()
        .args(["policies", "-q", "--json"])
        .env_remove("RUST_LOG")
        .assert()
        .success();
    ecosched()
        .args(["-vv", "scenarios"])
        .env_remove("RUST_LOG")
        .assert()
        .success();
    ecosched()
        .args(["-v", "scenarios", "-q"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--quiet"));
    ecosched()
        .args(["scenarios"])
        .env("RUST_LOG", "ecosched=loud")
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::starts_with(
            "error: environment variable RUST_LOG=\"ecosched=loud\"",
        ));
}
