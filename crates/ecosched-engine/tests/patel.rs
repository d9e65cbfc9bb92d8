//! Patel's schedulers (seed 000, issue #12) in the simulator: the thesis's
//! completion-order requirement for algorithm 2, the Table 4/21/25 rows,
//! the dynamic priorities of the `-dyn` scenarios, and the observation
//! model (the policies run on what Linux could read).

#![allow(clippy::unwrap_used)]

use ecosched_engine::experiment::{simulate, simulate_traced, SimOptions};
use ecosched_engine::validate::patel;
use ecosched_engine::validate::RowKind;
use ecosched_policy::Params;
use ecosched_sim::Scenario;
use std::collections::BTreeMap;

mod common;
use common::report;

fn last_completions(scenario: &str, policy: &str) -> BTreeMap<String, f64> {
    let s = Scenario::load(scenario).unwrap();
    patel::priorities::last_completions(&s, policy, &SimOptions::default()).unwrap()
}

fn groups_in_order(last: &BTreeMap<String, f64>, first: &[&str], second: &[&str]) -> bool {
    patel::priorities::order_margin(last, first, second) > 0.0
}

/// Issue #12 / POLICIES.md §5.4 and the thesis's Table 8: processes with
/// distinct priorities complete in the same order under algorithm 2 as
/// under the default scheduler. Task 4 (24 programs on 8 CPUs) is where
/// priorities decide the order: with three to eight programs each has a
/// CPU of its own. The rows judge each case over seeds; the default
/// scheduler keeps the order because CFS shares each CPU by weight (the
/// model carries a task's virtual runtime relative to its queue's floor,
/// as CFS does: when it carried the absolute value, nice −16 programs
/// could wait seconds behind a lagging queue and the order held by luck).
/// Every row is predicted and holds.
#[test]
fn table8_completion_order_rows() {
    let rows = patel::priorities::table8().unwrap();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        assert_eq!(r.kind, RowKind::Predicted, "{}", r.name);
        assert!(r.pass && !r.known_miss, "{}: {}", r.name, r.note);
    }
    report(&rows);
}

/// The same workload without priorities: algorithm 1 ignores nice values,
/// so the order it gives is not the priority order (the test above would
/// be empty if every policy kept it).
#[test]
fn without_priorities_the_low_priority_programs_do_not_finish_last() {
    let last = last_completions("patel-task4", "ondemand");
    assert!(
        !groups_in_order(
            &last,
            &["gcc", "bzip2", "mcf"],
            &["non-cpuintensive", "sjeng"]
        ) || !groups_in_order(
            &last,
            &["non-cpuintensive", "mcf", "gcc"],
            &["bzip2", "sjeng"]
        ),
        "{last:?}"
    );
}

/// `-dyn`: a program's later runs start at the new nice value.
#[test]
fn dynamic_priorities_change_after_the_third_completion() {
    let s = Scenario::load("patel-task2-dyn").unwrap();
    let (_, trace) =
        simulate_traced(&s, "ondemand", &Params::default(), &SimOptions::default()).unwrap();
    let mut nice_by_start: BTreeMap<(String, u64), i32> = BTreeMap::new();
    for step in &trace.steps {
        for t in step.snapshot.tasks.iter().filter(|t| t.name == "gcc") {
            nice_by_start.insert((t.name.clone(), (t.started_s * 1e6) as u64), t.nice);
        }
    }
    let nices: Vec<i32> = nice_by_start.values().copied().collect();
    assert_eq!(nices, [-4, -4, -4, -14, -14], "Table 7: gcc −4 then −14");
}

/// Only the two rows built on Task 4's control power, from which the
/// Opteron 6134 preset's base power was set, are calibrated.
#[test]
fn patel_table4_rows() {
    let rows = patel::algorithm1::table4().unwrap();
    let calibrated: Vec<&str> = rows
        .iter()
        .filter(|r| r.kind == RowKind::Calibrated)
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(
        calibrated,
        [
            "Task 4 control (ondemand): loaded wall power (W)",
            "Task 4: algorithm 1 saves power against control (loaded, %)"
        ]
    );
    assert_eq!(
        rows.iter()
            .filter(|r| r.name.contains("wall power"))
            .count(),
        8
    );
    report(&rows);
}

#[test]
fn patel_tables24_25_rows() {
    // `report` holds the known misses to the tolerance rules too, and
    // fails on one that now passes (it is promoted, not forgotten).
    report(&patel::priorities::tables24_25().unwrap());
}

/// Table 21 is a known miss since the compute-bound class curves became
/// continuous at their working set (its note gives the seeds): the row
/// must be computed from counted misses and references, labelled
/// predicted, and still miss; once it passes, drop `known_miss`.
#[test]
fn patel_table21_row_is_computed_and_labelled() {
    let rows = patel::priorities::table21().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].kind, RowKind::Predicted);
    assert!(rows[0].note.contains("simulated"));
    assert!(!rows[0].note.contains("NaN"), "{}", rows[0].note);
    assert!(rows[0].known_miss && !rows[0].pass, "{}", rows[0].note);
    report(&rows);
}

/// The policies run on what Linux could read on the Opteron 6134: patel3's
/// four events fit its four counters, and a machine without the events
/// refuses patel3 before anything runs, naming them.
#[test]
fn patel_runs_on_linux_observations_and_refuses_a_machine_without_its_events() {
    let s = Scenario::load("patel-task1").unwrap();
    let run = simulate(
        &s,
        "patel3",
        &Params::default(),
        &SimOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let notes = &run.report.policy_notes;
    assert_eq!(
        notes["cpusets"],
        "4@800 MHz (CPUs 0-3), 2@1400 MHz (CPUs 4-5), 2@2300 MHz (CPUs 6-7)"
    );
    assert!(run.metrics.patel.mean_ips.is_some());
    // The same machine without a PMU: patel3 is refused, naming the events.
    let mut s = Scenario::load("patel-task1").unwrap();
    let mut spec = (*s.machine).clone();
    spec.spec.pmu = None;
    s.machine = std::sync::Arc::new(spec);
    let err = simulate(
        &s,
        "patel3",
        &Params::default(),
        &SimOptions::default(),
        &mut |_| {},
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains("Instructions") && err.contains("LlcMisses"),
        "{err}"
    );
}
