//! End-to-end tests of the `ecosched` binary: the command-line contract
//! (subcommand names, JSON keys) and the error messages for bad input.
//! Only the small built-in scenarios are simulated, to keep this fast.

// Helpers outside `#[test]` functions unwrap too; this file is all test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn ecosched() -> Command {
    Command::cargo_bin("ecosched").expect("the ecosched binary is built")
}

/// Run with `args`, require success, and parse stdout as one JSON value.
fn json(args: &[&str]) -> Value {
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

fn has_keys(v: &Value, keys: &[&str], what: &str) {
    for k in keys {
        assert!(v.get(k).is_some(), "{what} lacks {k:?}: {v}");
    }
}

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

#[test]
fn compare_json_has_ratios_to_the_baseline() {
    let v = json(&[
        "compare",
        "--scenario",
        "merkel-2hmmer-2soplex",
        "--policies",
        "performance,fixed",
        "--param",
        "freq_mhz=1600",
        "--json",
    ]);
    has_keys(
        &v,
        &["scenario", "baseline", "results", "ratios"],
        "compare report",
    );
    assert_eq!(v["baseline"], "performance");
    assert_eq!(v["results"].as_array().unwrap().len(), 2);
    assert_eq!(v["ratios"]["performance"]["makespan"].as_f64(), Some(1.0));
    // The scenario runs for a fixed duration and 1.6 GHz does less work in
    // it: the total is lower, but per unit of work (issue #15) it is not.
    let energy = v["ratios"]["fixed"]["energy"].as_f64().unwrap();
    assert!(energy < 1.0, "{v}");
    assert_eq!(v["normalisation"], "per_giga_instruction", "{v}");
    let per_unit = v["work_ratios"]["fixed"]["energy_per_unit"]
        .as_f64()
        .unwrap();
    assert!(per_unit > 1.0, "less work must not read as a saving: {v}");
    assert!(v["work"]["fixed"]["units"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["alone_s"].is_object(), "{v}");
}

/// Issue #15: the table of a fixed-duration scenario says which
/// normalisation it uses and has no total-energy ratio to misread.
#[test]
fn issue_15_compare_table_is_per_unit_of_work() {
    let out = ecosched()
        .args([
            "compare",
            "--scenario",
            "pam-libq-xalancbmk",
            "--policies",
            "performance,static",
            "--param",
            "static:cpus=0-3",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("normalisation: fixed duration"), "{text}");
    assert!(text.contains("× J/1e9 ins"), "{text}");
    assert!(!text.contains("× energy"), "{text}");
}

#[test]
fn compare_help_explains_every_column() {
    let out = ecosched()
        .args(["compare", "--help"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for term in [
        "EDP",
        "× makespan, × energy, × EDP, × avg power",
        "speedup (geomean)",
        "AW perf/W",
        "run-queue wait",
        "normalisation",
        "throughput",
    ] {
        assert!(text.contains(term), "{term:?} not explained:\n{text}");
    }
}

#[test]
fn compare_scoped_params_and_explicit_baseline() {
    let v = json(&[
        "compare",
        "--scenario",
        "merkel-1-aluadd",
        "--policies",
        "performance,fixed",
        "--baseline",
        "fixed",
        "--param",
        "fixed:freq_mhz=2400",
        "--json",
    ]);
    assert_eq!(v["baseline"], "fixed");
    assert_eq!(v["ratios"]["fixed"]["makespan"].as_f64(), Some(1.0));
    ecosched()
        .args([
            "compare",
            "--scenario",
            "merkel-1-aluadd",
            "--policies",
            "performance,fixed",
            "--param",
            "freq_mhz=1600",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("fixed (freq_mhz=1600)")
                .and(predicate::str::contains("× EDP")),
        );
}

#[test]
fn compare_rejects_param_no_policy_takes() {
    ecosched()
        .args([
            "compare",
            "--scenario",
            "merkel-1-aluadd",
            "--policies",
            "performance,ondemand",
            "--param",
            "freq_mhz=1600",
        ])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("freq_mhz")
                .and(predicate::str::contains("none of the compared")),
        );
}

#[test]
fn compare_rejects_baseline_not_compared() {
    ecosched()
        .args([
            "compare",
            "--scenario",
            "merkel-1-aluadd",
            "--policies",
            "performance",
            "--baseline",
            "ondemand",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("must be one of"));
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
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
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

#[test]
fn bench_and_validate_exist() {
    ecosched()
        .args(["bench", "sim", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--json"));
    ecosched().args(["validate", "--help"]).assert().success();
}

/// Out-of-range sensitivity options are refused before any row runs.
#[test]
fn validate_refuses_bad_perturb_and_reseed_values() {
    ecosched()
        .args(["validate", "--reseed", "0"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--reseed 0").and(predicate::str::contains("1–20")));
    ecosched()
        .args(["validate", "--perturb", "100"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--perturb 100"));
}

/// `--paper` runs one paper's rows alone and names the valid papers when
/// given another.
#[test]
fn validate_runs_one_paper_alone() {
    let report = json(&["validate", "--paper", "pam", "--json"]);
    let checks = report["checks"].as_array().unwrap();
    assert!(!checks.is_empty());
    assert!(checks
        .iter()
        .all(|c| c["source"].as_str().unwrap().starts_with("Banikazemi")));
    ecosched()
        .args(["validate", "--paper", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "valid: merkel, richling, pam, dhiman, patel",
        ));
}

/// `--markdown` prints the document `docs/validation.md` is: the rules,
/// then one section per paper asked for, its rows in a table. It is its
/// own output, so `--json` beside it is a usage error.
#[test]
fn validate_prints_markdown_for_the_papers_asked_for() {
    let out = ecosched()
        .args(["validate", "--paper", "pam", "--markdown"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("# Validation against the papers\n"),
        "{text}"
    );
    assert!(text.contains("## Reading the rows"), "{text}");
    assert!(text.contains("## Banikazemi et al. (PAM)"), "{text}");
    assert!(text.contains("| Row | Where | Paper | Model | Tolerance | Kind | Verdict |"));
    assert!(!text.contains("## Merkel"), "{text}");
    ecosched()
        .args(["validate", "--markdown", "--json"])
        .assert()
        .code(2);
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

/// The hand-written recording of a dual Xeon E5345 with acpi-cpufreq.
fn e5345_root() -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ecosched-linux/tests/data/cpufreq-acpi-xeon-e5345");
    dir.to_str().unwrap().to_string()
}

#[test]
fn topology_json_of_a_recorded_machine() {
    let v = json(&["topology", "--root", &e5345_root(), "--json"]);
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
        .args(["topology", "--root", &e5345_root()])
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

#[test]
fn bench_pam_json_reports_cpus_search_and_time() {
    let v = json(&["bench", "pam", "--cpus", "8", "--json"]);
    has_keys(&v, &["cpus", "search", "decision_ms"], "bench pam");
    assert_eq!(v["cpus"], 8);
    assert_eq!(v["search"], "exhaustive");
    assert!(v["decision_ms"].as_f64().unwrap() > 0.0, "{v}");
    let v = json(&["bench", "pam", "--cpus", "32", "--json"]);
    assert_eq!(v["search"], "local");
    ecosched()
        .args(["bench", "pam", "--cpus", "0"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("cpus"));
}

#[test]
fn compare_shows_pam_gain_on_libquantum_with_xalancbmk() {
    let v = json(&[
        "compare",
        "--scenario",
        "pam-libq-xalancbmk",
        "--policies",
        "ondemand,pam",
        "--json",
    ]);
    let speedup = v["ratios"]["pam"]["speedup_geomean"].as_f64().unwrap();
    assert!(speedup > 1.08, "{v}");
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

/// Issue #11: `calibrate av --machine q6600` prints the translation vectors
/// and the TOML to store them; a simulated machine needs no PMU here.
#[test]
fn calibrate_av_prints_translation_vectors() {
    let out = ecosched()
        .args(["calibrate", "av", "--machine", "q6600"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("translation vectors"), "{text}");
    assert!(text.contains("[calibration.activity]"), "{text}");
    assert!(text.contains("freq_khz = 1600000"), "{text}");
}

/// Issue #11: `calibrate av` on this machine. Where cpufreq or the
/// hardware counters are missing (this VM and CI: neither) it refuses with
/// exit 2, naming each, before anything is changed: no journal is even
/// opened. On a machine that has both it measures, briefly, and prints
/// the translation vectors (with the cpufreq files journalled and undone:
/// no journal is left).
#[test]
fn calibrate_av_on_this_machine_measures_or_refuses_naming_what_is_missing() {
    let state = tempfile::tempdir().unwrap();
    let has_cpufreq = std::path::Path::new("/sys/devices/system/cpu/cpufreq/policy0").exists()
        || std::path::Path::new("/sys/devices/system/cpu/cpu0/cpufreq").exists();
    let out = ecosched()
        .args(["calibrate", "av", "--run-ms", "200", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let journals = std::fs::read_dir(state.path())
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(journals, 0, "a journal was left: {stderr}");
    if out.status.success() {
        assert!(has_cpufreq, "measured without cpufreq? {stdout}");
        assert!(stdout.contains("translation vectors"), "{stdout}");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("this machine lacks"), "{stderr}");
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    assert!(stderr.contains("--machine PRESET"), "{stderr}");
    if !has_cpufreq {
        assert!(stderr.contains("frequency control (no cpufreq"), "{stderr}");
    }
    // No PMU here: each hardware event is named with perf's reason.
    if stderr.contains("perf events") {
        assert!(stderr.contains("LLC-load-misses"), "{stderr}");
    }
}

/// Issue #11: `--output FILE` stores the result as a calibration file that
/// `run --calibration` reads, keeping the parts it did not measure.
#[test]
fn calibrate_av_output_is_a_calibration_file_that_keeps_other_parts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("q6600-calibration.toml");
    std::fs::write(&file, "partition = \"2@1600,2@2400\"\n").unwrap();
    ecosched()
        .args(["calibrate", "av", "--machine", "q6600", "--output"])
        .arg(&file)
        .assert()
        .success()
        .stdout(predicate::str::contains("written to"));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("partition = \"2@1600,2@2400\""), "{text}");
    assert!(text.contains("[activity]"), "{text}");
    assert!(text.contains("freq_khz = 1600000"), "{text}");
    assert!(
        text.contains("source = \"ecosched calibrate av: q6600"),
        "{text}"
    );
    // A malformed file is refused, located, and left alone.
    std::fs::write(&file, "partition = 3\n").unwrap();
    ecosched()
        .args(["calibrate", "av", "--machine", "q6600", "--output"])
        .arg(&file)
        .assert()
        .failure()
        .stderr(predicate::str::contains("q6600-calibration.toml"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "partition = 3\n");
}

/// Issue #15: `--policies …,oracle` searches the best static configuration
/// and reports every policy as a ratio to it; the oracle is no worse than
/// the others on its objective (work-normalised energy here).
#[test]
fn issue_15_compare_with_oracle_reports_ratios_to_it() {
    let v = json(&[
        "compare",
        "--scenario",
        "merkel-2hmmer-2soplex",
        "--policies",
        "performance,fixed,oracle",
        "--param",
        "fixed:freq_mhz=1600",
        "--json",
    ]);
    let to_oracle = &v["ratios_to_oracle"];
    assert_eq!(to_oracle["oracle"]["makespan"].as_f64(), Some(1.0), "{v}");
    for p in ["performance", "fixed"] {
        let e = v["work_ratios_to_oracle"][p]["energy_per_unit"]
            .as_f64()
            .unwrap();
        assert!(
            e >= 1.0 - 1e-9,
            "{p} beats the oracle on its objective: {v}"
        );
    }
    assert!(v["oracle"]["evaluated"].as_u64().unwrap() >= 2, "{v}");
    assert!(v["oracle"]["choice"]["placement"].is_object(), "{v}");
}

#[test]
fn issue_15_oracle_refuses_large_scenarios_naming_the_limit() {
    ecosched()
        .args([
            "compare",
            "--scenario",
            "bench-8c24t",
            "--policies",
            "performance,oracle",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("limited to 8 tasks on 8 CPUs"));
    ecosched()
        .args([
            "compare",
            "--scenario",
            "merkel-4hmmer",
            "--policies",
            "performance,oracle",
            "--param",
            "oracle:objective=fastest",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("objective"));
}

#[test]
fn bench_oracle_reports_search_time() {
    let v = json(&[
        "bench",
        "oracle",
        "--scenario",
        "merkel-2hmmer-2soplex",
        "--json",
    ]);
    assert!(v["search_s"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["raw_configurations"].as_u64(), Some(48), "{v}");
}

/// Issue #13: a cluster scenario compares per node and in total, as a table.
#[test]
fn issue_13_cluster_compare_table_shows_nodes_swaps_and_tasks() {
    ecosched()
        .args([
            "compare",
            "--scenario",
            "merkel-xnode-worst",
            "--policies",
            "av,av-xnode",
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

/// Issue #13: `compare --json` on a cluster has a `nodes` array per
/// policy, and the swaps shorten the memory-bound tasks (Merkel §8.4).
#[test]
fn issue_13_cluster_compare_json_has_nodes_and_the_gain() {
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

/// Issue #13: `sim --json` on a cluster has the totals and the nodes.
#[test]
fn issue_13_cluster_sim_json_has_nodes() {
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

/// Issue #13: a node with an unknown machine preset is refused with the
/// file, line and key.
#[test]
fn issue_13_cluster_with_unknown_preset_is_located() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
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

/// Issue #13: av-xnode on one machine says it needs a cluster.
#[test]
fn issue_13_av_xnode_needs_a_cluster() {
    ecosched()
        .args(["sim", "--scenario", "merkel-sort-8", "--policy", "av-xnode"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("[[nodes]]"));
}

/// Issue #13: one-machine outputs are refused on a cluster, as a usage error.
#[test]
fn issue_13_cluster_refuses_one_machine_outputs() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
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
