//! `ecosched bench`: PAM's decision time by CPU count (exhaustive or local
//! search), the oracle's search time, and the help of `bench` and
//! `validate`.

use crate::support::{ecosched, has_keys, json};
use predicates::prelude::*;

#[test]
fn bench_and_validate_exist() {
    ecosched()
        .args(["bench", "sim", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--json"));
    ecosched().args(["validate", "--help"]).assert().success();
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
    assert_eq!(v["stopped_early"], false, "{v}");
    // A budget far below one descent's work stops the search, and says so.
    let v = json(&[
        "bench",
        "pam",
        "--cpus",
        "32",
        "--budget-ms",
        "0.001",
        "--json",
    ]);
    assert_eq!(v["stopped_early"], true, "{v}");
    assert!(v["speedup"].as_f64().unwrap() >= 1.0, "{v}");
    ecosched()
        .args(["bench", "pam", "--cpus", "8", "--budget-ms", "0"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("budget-ms"));
    ecosched()
        .args(["bench", "pam", "--cpus", "0"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("cpus"));
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
