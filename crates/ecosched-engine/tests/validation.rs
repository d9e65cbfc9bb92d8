//! The simulator against the papers' published figures (SIMULATOR.md §6).
//! Each test prints the simulated figure next to the paper's and fails when
//! the model stops producing the effect.

#![allow(clippy::unwrap_used)]

use ecosched_engine::validate::{merkel_fig1, merkel_table1, merkel_table2, Check};

fn report(checks: &[Check]) {
    for c in checks {
        println!(
            "{:4} {:72} paper {:7.3}  simulated {:7.3}  ±{:.3}  ({})",
            if c.pass { "ok" } else { "FAIL" },
            c.name,
            c.paper,
            c.simulated,
            c.tolerance,
            c.source
        );
    }
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| !c.pass)
        .map(|c| c.name.as_str())
        .collect();
    assert!(failed.is_empty(), "outside tolerance: {failed:?}");
}

#[test]
fn merkel_fig1_contention() {
    report(&merkel_fig1().unwrap());
}

#[test]
fn merkel_table1_frequency_scaling() {
    report(&merkel_table1().unwrap());
}

#[test]
fn merkel_table2_mixing_beats_frequency_scaling() {
    report(&merkel_table2().unwrap());
}
