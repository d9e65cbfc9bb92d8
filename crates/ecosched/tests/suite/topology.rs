//! `ecosched topology`: a recorded machine (the dual Xeon E5345 with
//! acpi-cpufreq) as JSON and as a tree, this machine's online CPUs as
//! sysfs lists them, and the refusal of a root that is not a Linux tree.

use crate::support::{e5345_tree, ecosched, has_keys, json};
use predicates::prelude::*;

#[test]
fn topology_json_of_a_recorded_machine() {
    let v = json(&[
        "topology",
        "--root",
        e5345_tree().to_str().unwrap(),
        "--json",
    ]);
    has_keys(
        &v,
        &[
            "cpus",
            "caches",
            "numa_nodes",
            "frequency_domains",
            "allowed",
            "offline",
        ],
        "topology",
    );
    let cpus = v["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 8);
    for c in cpus {
        has_keys(c, &["id", "package", "core", "online"], "cpu");
    }
    // CPU 1 sits in the second socket; cores are numbered machine-wide.
    assert_eq!(cpus[1]["package"], 1);
    let mut cores: Vec<u64> = cpus.iter().map(|c| c["core"].as_u64().unwrap()).collect();
    cores.sort_unstable();
    cores.dedup();
    assert_eq!(cores.len(), 8);
    assert_eq!(v["numa_nodes"][0]["cpus"], "0-7");
    let doms = v["frequency_domains"].as_array().unwrap();
    assert_eq!(doms.len(), 8);
    assert_eq!(doms[5]["cpus"], "5");
    assert_eq!(
        doms[5]["available_khz"],
        serde_json::json!([2_000_000, 2_333_000])
    );
    assert_eq!(v["allowed"], "0-7");
}

#[test]
fn topology_tree_of_a_recorded_machine() {
    ecosched()
        .args(["topology", "--root", e5345_tree().to_str().unwrap()])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("E5345")
                .and(predicate::str::contains("Package 1"))
                .and(predicate::str::contains("Frequency domains (8)"))
                .and(predicate::str::contains("2000000 2333000 kHz")),
        );
}

#[test]
fn topology_of_this_machine_matches_sysfs_online() {
    let v = json(&["topology", "--json"]);
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let online = ecosched_model::CpuSet::parse_list(online.trim()).unwrap();
    let ours: ecosched_model::CpuSet = v["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["online"] == true)
        .map(|c| ecosched_model::CpuId(c["id"].as_u64().unwrap() as u32))
        .collect();
    assert_eq!(ours, online);
    for cache in v["caches"].as_array().unwrap() {
        has_keys(cache, &["level", "type", "size_kib", "cpus"], "cache");
        assert!(cache["cpus"].is_string(), "cpulist expected: {cache}");
    }
    ecosched()
        .arg("topology")
        .assert()
        .success()
        .stdout(predicate::str::contains("Package 0"));
}

#[test]
fn topology_rejects_a_root_that_is_not_a_linux_tree() {
    ecosched()
        .args(["topology", "--root", "/nonexistent/recording"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/nonexistent/recording"));
    let dir = tempfile::tempdir().unwrap();
    ecosched()
        .args(["topology", "--root", dir.path().to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a Linux root"));
}
