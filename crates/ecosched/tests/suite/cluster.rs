//! Cluster scenarios (`[[nodes]]`, with Merkel's cross-node swaps, §8.4):
//! `compare` and `sim` report per node and in total; a node with an
//! unknown machine, `av-xnode` on one machine and one-machine outputs on a
//! cluster are refused.

use crate::support::{ecosched, has_keys, json};
use predicates::prelude::*;

/// A cluster scenario compares per node and in total, as a table.
#[test]
fn cluster_compare_table_shows_nodes_swaps_and_tasks() {
    ecosched()
        .args([
            "compare",
            "--scenario",
            "merkel-xnode-worst",
            "--policies",
            "av,av-xnode",
            "--wide",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("cluster scenario merkel-xnode-worst, baseline av")
                .and(predicate::str::contains("mean task runtime ×"))
                .and(predicate::str::contains("moved in/out"))
                .and(predicate::str::contains("av-xnode: 2 swap(s)"))
                .and(predicate::str::contains("av: 0 swap(s)"))
                .and(predicate::str::contains("sjeng")),
        );
}

/// `compare --json` on a cluster has a `nodes` array per
/// policy, and the swaps shorten the memory-bound tasks (Merkel §8.4).
#[test]
fn cluster_compare_json_has_nodes_and_the_gain() {
    let v = json(&[
        "compare",
        "--scenario",
        "merkel-xnode-worst",
        "--policies",
        "av,av-xnode",
        "--json",
    ]);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        has_keys(
            r,
            &["policy", "energy_j", "tasks", "nodes", "swaps", "migration"],
            "cluster result",
        );
        let nodes = r["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 2, "{r}");
        for n in nodes {
            has_keys(
                n,
                &[
                    "name",
                    "machine",
                    "energy_j",
                    "avg_power_w",
                    "completions",
                    "tasks_at_end",
                    "moved_in",
                    "moved_out",
                ],
                "node",
            );
        }
        // The cluster's energy is its nodes' plus the migrations'.
        let sum: f64 = nodes.iter().map(|n| n["energy_j"].as_f64().unwrap()).sum();
        let total = r["energy_j"].as_f64().unwrap();
        assert!((sum - total).abs() < 1e-6 * total, "{sum} vs {total}");
    }
    assert!(results[0]["swaps"].as_array().unwrap().is_empty());
    assert_eq!(results[1]["swaps"].as_array().unwrap().len(), 2);
    let gain = v["task_ratios"]["av-xnode"]["mean_runtime"]
        .as_f64()
        .unwrap();
    assert!(gain < 0.95, "mean run-time ratio {gain}");
    let lbm = v["task_ratios"]["av-xnode"]["runtime"]["lbm"]
        .as_f64()
        .unwrap();
    assert!(lbm < 0.9, "lbm {lbm}");
}

/// `sim --json` on a cluster has the totals and the nodes.
#[test]
fn cluster_sim_json_has_nodes() {
    let v = json(&[
        "sim",
        "--scenario",
        "merkel-xnode-mixed",
        "--policy",
        "av",
        "--json",
    ]);
    has_keys(
        &v,
        &[
            "scenario",
            "makespan_s",
            "energy_j",
            "tasks",
            "nodes",
            "swaps",
        ],
        "cluster sim",
    );
    assert_eq!(v["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(v["tasks"].as_array().unwrap().len(), 8);
}

/// A node with an unknown machine preset is refused with the
/// file, line and key.
#[test]
fn cluster_with_unknown_preset_is_located() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let path = dir.join("ecosched-cli-bad-cluster.toml");
    std::fs::write(
        &path,
        "name = \"bad\"\ndescription = \"node b names no preset\"\n\n[[nodes]]\nname = \"a\"\nmachine = \"q6600\"\n[[nodes.tasks]]\nprofile = \"lbm\"\nlength_s = 10\n\n[[nodes]]\nname = \"b\"\nmachine = \"q6601\"\n[[nodes.tasks]]\nprofile = \"mcf\"\nlength_s = 10\n",
    )
    .unwrap();
    let shown = path.display().to_string();
    ecosched()
        .args(["compare", "--scenario", &shown, "--policies", "av,av-xnode"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains(format!("{shown}:13"))
                .and(predicate::str::contains("nodes[1].machine"))
                .and(predicate::str::contains("q6601")),
        );
}

/// Av-xnode on one machine says it needs a cluster.
#[test]
fn av_xnode_needs_a_cluster() {
    ecosched()
        .args(["sim", "--scenario", "merkel-sort-8", "--policy", "av-xnode"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("[[nodes]]"));
}

/// One-machine outputs are refused on a cluster, as a usage error.
#[test]
fn cluster_refuses_one_machine_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let trace = dir.join("ecosched-cli-cluster-trace.jsonl");
    ecosched()
        .args([
            "sim",
            "--scenario",
            "merkel-xnode-worst",
            "--policy",
            "av",
            "--trace",
        ])
        .arg(&trace)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is a cluster scenario"));
    assert!(!trace.exists(), "nothing is written");
}
