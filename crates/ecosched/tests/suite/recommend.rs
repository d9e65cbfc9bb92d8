//! `ecosched recommend`: on the hybrid i9 preset its batch-services answer
//! agrees with `ecosched suite` on the seed they share; where the suite
//! says "run fast" it says nothing beats the default and why; a recorded
//! host is matched to its preset, or built as an emitted machine when none
//! describes it (this host itself is in `live::recommend`); bad input is
//! refused, naming the flag or the file and key.

use crate::support::{e5345_tree, ecosched, json, stderr};
use serde_json::Value;
use std::path::Path;

fn candidate<'a>(r: &'a Value, label: &str) -> &'a Value {
    r["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            let params: Vec<&str> = c["params"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap())
                .collect();
            std::iter::once(c["policy"].as_str().unwrap())
                .chain(params)
                .collect::<Vec<_>>()
                .join(" ")
                == label
        })
        .unwrap_or_else(|| panic!("no candidate {label}: {r}"))
}

#[test]
fn on_the_i9_batch_services_it_names_a_saving_the_suite_agrees_with() {
    let suite = json(&[
        "suite",
        "--machine",
        "core-i9-13900k",
        "--workload",
        "batch-services",
        "--json",
    ]);
    let row = &suite[0];
    assert_eq!(row["verdict"], "saves", "{row}");
    let best = row["best"].as_str().unwrap();
    let saved = row["best_energy"].as_f64().unwrap();
    let r = json(&[
        "recommend",
        "--machine",
        "core-i9-13900k",
        "--class",
        "batch-services",
        "--seeds",
        "2",
        "--json",
    ]);
    assert_eq!(r["seeds"], serde_json::json!([11, 12]), "{r}");
    // Seed 11 is the suite's run: the suite's best is within its range.
    let same = &candidate(&r, best)["energy"];
    let (lo, hi) = (same["min"].as_f64().unwrap(), same["max"].as_f64().unwrap());
    assert!(
        lo - 1e-9 <= saved && saved <= hi + 1e-9,
        "{best}: {saved} outside {same}"
    );
    // The recommendation saves at least as much, on every seed.
    let chosen = &r["recommended"];
    assert!(chosen.is_object(), "{r}");
    assert_eq!(chosen["qualifies"], true);
    let e = &chosen["energy"];
    assert!(e["max"].as_f64().unwrap() <= 0.99, "{chosen}");
    assert!(
        e["median"].as_f64().unwrap() <= saved + 1e-9,
        "{chosen} vs {saved}"
    );
    assert!(
        chosen["throughput"]["min"].as_f64().unwrap() >= 0.97,
        "{chosen}"
    );
    assert!(r.get("run_fast_because").is_none(), "{r}");
}

#[test]
fn where_the_suite_says_run_fast_nothing_beats_the_default_and_it_says_why() {
    let suite = json(&["suite", "--machine", "i9", "--workload", "build", "--json"]);
    assert_eq!(suite[0]["verdict"], "run_fast", "{suite}");
    let out = ecosched()
        .args([
            "recommend",
            "--machine",
            "core-i9-13900k",
            "--class",
            "build",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("nothing beats running fast here (performance in the simulator)"),
        "{text}"
    );
    assert!(
        text.contains("why: the best candidate within 3 % of the default's throughput"),
        "{text}"
    );
    assert!(text.contains("refused (by the simulated machine"), "{text}");
}

#[test]
fn a_recorded_host_with_a_preset_uses_the_preset() {
    let root = e5345_tree();
    let r = json(&[
        "recommend",
        "--root",
        root.to_str().unwrap(),
        "--class",
        "services:35",
        "--seeds",
        "1",
        "--json",
    ]);
    assert_eq!(r["machine"], "xeon-e5345", "{r}");
    let source = r["machine_source"].as_str().unwrap();
    assert!(source.contains("is built-in preset xeon-e5345"), "{source}");
    assert!(r["workload"].as_str().unwrap().contains("35 % busy"), "{r}");
}

#[test]
fn a_recorded_host_without_a_preset_is_built_as_an_emitted_machine() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ecosched-linux/tests/data/cpufreq-amd-pstate-epp-ryzen-9-7940hs");
    let r = json(&[
        "recommend",
        "--root",
        root.to_str().unwrap(),
        "--class",
        "batch",
        "--seeds",
        "2",
        "--json",
    ]);
    let source = r["machine_source"].as_str().unwrap();
    assert!(
        source.contains("matches no built-in preset")
            && source.contains("--emit-machine")
            && source.contains("generic model"),
        "{source}"
    );
    // 8 cores: the suite's K/2 batch tasks.
    assert!(
        r["workload"]
            .as_str()
            .unwrap()
            .contains("4 tasks on 8 cores"),
        "{r}"
    );
    assert_eq!(r["seeds"].as_array().unwrap().len(), 2);
}

#[test]
fn a_scenario_runs_on_the_chosen_machine() {
    let r = json(&[
        "recommend",
        "--machine",
        "q6600",
        "--workload",
        "merkel-2-stream-apart",
        "--seeds",
        "1",
        "--json",
    ]);
    assert_eq!(r["machine"], "q6600");
    assert!(r["candidates"].as_array().unwrap().len() > 10, "{r}");
}

fn refused(args: &[&str]) -> String {
    let out = ecosched().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    stderr(&out)
}

#[test]
fn bad_input_is_refused_naming_the_flag_or_the_file_and_key() {
    let e = refused(&["recommend", "--machine", "q6600", "--class", "compile"]);
    assert!(
        e.contains("--class \"compile\" is not a workload class") && e.contains("services:PCT"),
        "{e}"
    );
    for pct in ["services:0", "services:120", "services:lots"] {
        let e = refused(&["recommend", "--machine", "q6600", "--class", pct]);
        assert!(
            e.contains(&format!("--class \"{pct}\"")) && e.contains("1 to 99"),
            "{e}"
        );
    }
    let e = refused(&[
        "recommend",
        "--machine",
        "no-such-box.toml",
        "--class",
        "batch",
    ]);
    assert!(
        e.contains("--machine no-such-box.toml: neither a built-in machine preset nor a file"),
        "{e}"
    );
    let e = refused(&[
        "recommend",
        "--machine",
        "q6600",
        "--workload",
        "no-such-scenario",
    ]);
    assert!(e.contains("--workload no-such-scenario"), "{e}");
    let e = refused(&["recommend", "--machine", "q6600"]);
    assert!(e.contains("--workload") && e.contains("--class"), "{e}");
    let e = refused(&[
        "recommend",
        "--machine",
        "q6600",
        "--class",
        "batch",
        "--seeds",
        "0",
    ]);
    assert!(e.contains("--seeds 0"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("box.toml");
    std::fs::write(&file, "name = \"box\"\npackages = \"two\"\n").unwrap();
    let e = refused(&[
        "recommend",
        "--machine",
        file.to_str().unwrap(),
        "--class",
        "batch",
    ]);
    assert!(e.contains("box.toml") && e.contains("packages"), "{e}");
}
