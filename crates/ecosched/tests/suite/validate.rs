//! `ecosched validate`'s options, without running the minutes-long check
//! of the simulator against the papers: one paper's rows alone, and the
//! refusal of out-of-range sensitivity options.

use crate::support::{ecosched, json, stdout_on_threads};
use predicates::prelude::*;

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

/// The groups of rows and the runs within them go side by side; the
/// table, the JSON and the document are the same bytes on one thread as
/// on two.
#[test]
fn validate_prints_the_same_on_one_thread_as_on_two() {
    for output in [&[][..], &["--json"], &["--markdown"]] {
        let args: Vec<&str> = ["validate", "--paper", "pam"]
            .iter()
            .chain(output)
            .copied()
            .collect();
        let one = stdout_on_threads(&args, 1);
        assert!(!one.is_empty());
        assert!(one == stdout_on_threads(&args, 2), "{args:?}");
    }
}
