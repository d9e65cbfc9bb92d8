//! `ecosched compare`: ratios to a baseline and to the oracle (the best
//! static configuration), per unit of work on fixed-duration scenarios,
//! scoped parameters, a help text that explains every column, and the
//! refusal of parameters, baselines and scenarios it cannot serve.

use crate::support::{ecosched, has_keys, json, stdout_on_threads};
use predicates::prelude::*;

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
    // it: the total is lower, but per unit of work it is not.
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

/// The table of a fixed-duration scenario says which
/// normalisation it uses and has no total-energy ratio to misread.
#[test]
fn compare_table_is_per_unit_of_work() {
    let out = ecosched()
        .args([
            "compare",
            "--scenario",
            "pam-libq-xalancbmk",
            "--policies",
            "performance,static",
            "--param",
            "static:cpus=0-3",
            "--wide",
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

/// By default the text fits 100 columns: headers and long lines wrap,
/// columns that still do not fit are named as left out; `--wide` keeps
/// every column on one line. Patel's own metrics follow a comparison only
/// when one of his policies is in it.
#[test]
fn compare_fits_100_columns_unless_wide() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "compare",
            "--scenario",
            "merkel-2hmmer-2soplex",
            "--policies",
            "performance,fixed,hilo",
            "--param",
            "fixed:freq_mhz=1600",
        ];
        args.extend_from_slice(extra);
        let out = ecosched()
            .args(&args)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let fitted = run(&[]);
    for line in fitted.lines() {
        assert!(line.chars().count() <= 100, "{line}\n{fitted}");
    }
    assert!(fitted.contains("left out to fit 100 columns"), "{fitted}");
    assert!(!fitted.contains("Patel ch. 9"), "{fitted}");
    let wide = run(&["--wide"]);
    assert!(wide.lines().any(|l| l.chars().count() > 100), "{wide}");
    assert!(
        wide.contains("speedup (geomean)") && !wide.contains("left out"),
        "{wide}"
    );
    let patel = ecosched()
        .args([
            "compare",
            "--scenario",
            "merkel-2hmmer-2soplex",
            "--policies",
            "performance,patel2",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8(patel)
        .unwrap()
        .contains("Patel ch. 9 metrics"));
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
            "--wide",
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

/// `--policies …,oracle` searches the best static configuration
/// and reports every policy as a ratio to it; the oracle is no worse than
/// the others on its objective (work-normalised energy here).
#[test]
fn compare_with_oracle_reports_ratios_to_it() {
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
fn oracle_searches_large_scenarios_confined_and_says_so() {
    ecosched()
        .args([
            "compare",
            "--scenario",
            "bench-8c24t-short",
            "--policies",
            "performance,oracle",
            "--param",
            "oracle:slowdown=0.03",
            "--wide",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "confined to whole caches or cores",
        ))
        .stdout(predicate::str::contains("within 3 % of the fastest"));
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

/// The policies, the runs alone and the seeds run side by side; the table
/// and the JSON are the same bytes on one thread as on two.
#[test]
fn compare_prints_the_same_on_one_thread_as_on_two() {
    let base = [
        "compare",
        "--scenario",
        "merkel-2stream-2alu",
        "--policies",
        "performance,ondemand,fixed",
        "--param",
        "fixed:freq_mhz=1600",
    ];
    for extra in [&[][..], &["--json"], &["--seeds", "2", "--json"]] {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let one = stdout_on_threads(&args, 1);
        assert!(!one.is_empty());
        assert!(one == stdout_on_threads(&args, 2), "{args:?}");
    }
}
