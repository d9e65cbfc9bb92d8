//! The workload suite of current machines (`ecosched suite`): every row's
//! line in the README's results table is what the suite computes now,
//! figures and verdict, so the table cannot go stale and a verdict cannot
//! change unnoticed in either direction (a miss that starts to pass fails
//! too, until the README says so).

use ecosched_engine::experiment::SimOptions;
use ecosched_engine::suite::{self, Verdict};
use ecosched_sim::Scenario;

/// The rows the README's table shows: every workload on the i9 and the
/// Altra, and the batch and build workloads on the two-socket servers
/// (their service workloads take the simulator hours; see
/// docs/researchers/workload-suite.md).
fn shown() -> Vec<String> {
    let mut names = Vec::new();
    for machine in ["i9", "altra"] {
        for w in suite::WORKLOADS {
            names.push(suite::scenario_name(machine, w));
        }
    }
    for machine in ["epyc", "xeon"] {
        for w in ["batch", "build"] {
            names.push(suite::scenario_name(machine, w));
        }
    }
    names
}

#[test]
#[ignore = "validation: the workload suite of current machines (minutes)"]
fn the_readme_results_table_is_current() {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .unwrap();
    let mut failures = Vec::new();
    for name in shown() {
        let scenario = Scenario::load(&name).unwrap();
        let row = suite::evaluate(&scenario, &SimOptions::default(), &mut |_| {}).unwrap();
        let table = suite::markdown(std::slice::from_ref(&row));
        let line = table.lines().nth(2).unwrap();
        println!(
            "{line}{}",
            if row.verdict == Verdict::Misses {
                "  <- misses"
            } else {
                ""
            }
        );
        if !readme.lines().any(|l| l == line) {
            failures.push(format!(
                "README.md lacks the row `{line}` (regenerate with `ecosched suite --markdown`)"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
