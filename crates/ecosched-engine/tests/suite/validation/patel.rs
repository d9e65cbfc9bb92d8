//! Patel's rows: algorithm 1 on Tasks 1–4 (Tables 3–4), and algorithms
//! 2–4 on Task 4 with priorities (Tables 8, 21, 24–25), each a mean over
//! the seeds.

use crate::support::report;
use ecosched_engine::validate::patel;
use ecosched_engine::validate::RowKind;

/// The thesis's §6.2 and Table 8: processes with
/// distinct priorities complete in the same order under algorithm 2 as
/// under the default scheduler. Task 4 (24 programs on 8 CPUs) is where
/// priorities decide the order: with three to eight programs each has a
/// CPU of its own. The rows judge each case over seeds; the default
/// scheduler keeps the order because CFS shares each CPU by weight (the
/// model carries a task's virtual runtime relative to its queue's floor,
/// as CFS does; an absolute one would make a nice −16 program wait
/// seconds behind a lagging queue, and the order would hold by luck).
/// Every row is predicted and holds.
#[test]
#[ignore = "validation: Patel Table 8 against the simulator"]
fn table8_completion_order_rows() {
    let rows = patel::priorities::table8().unwrap();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        assert_eq!(r.kind, RowKind::Predicted, "{}", r.name);
        assert!(r.pass && !r.known_miss, "{}: {}", r.name, r.note);
    }
    report(&rows);
}

/// Only the two rows built on Task 4's control power, from which the
/// Opteron 6134 preset's base power was set, are calibrated.
#[test]
#[ignore = "validation: Patel Tables 3–4 against the simulator"]
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
#[ignore = "validation: Patel Tables 24–25 against the simulator"]
fn patel_tables24_25_rows() {
    // `report` holds the known misses to the tolerance rules too, and
    // fails on one that passes (it is promoted, not forgotten).
    report(&patel::priorities::tables24_25().unwrap());
}

/// Table 21 is a known miss (its note gives the cause): the row must be
/// computed from counted misses and references, labelled predicted, and
/// still miss; once it passes, drop `known_miss`.
#[test]
#[ignore = "validation: Patel Table 21 against the simulator"]
fn patel_table21_row_is_computed_and_labelled() {
    let rows = patel::priorities::table21().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].kind, RowKind::Predicted);
    assert!(rows[0].note.contains("simulated"));
    assert!(!rows[0].note.contains("NaN"), "{}", rows[0].note);
    assert!(rows[0].known_miss && !rows[0].pass, "{}", rows[0].note);
    report(&rows);
}
