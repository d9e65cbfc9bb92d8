//! Merkel et al.'s rows: co-run slowdowns and frequency scaling on the
//! Q6600 (§3), and the activity-vector scheduler's evaluation (§8).

use crate::support::report;
use ecosched_engine::validate::merkel::evaluation::{fig5, fig6, fig8};
use ecosched_engine::validate::merkel::measurements::{fig1, table1, table2};
use ecosched_sim::Observe;

#[test]
#[ignore = "validation: Merkel Fig. 1 against the simulator"]
fn merkel_fig1_contention() {
    report(&fig1(Observe::Linux).unwrap());
}

#[test]
#[ignore = "validation: Merkel Table 1 against the simulator"]
fn merkel_table1_frequency_scaling() {
    report(&table1(Observe::Linux).unwrap());
}

#[test]
#[ignore = "validation: Merkel Table 2 against the simulator"]
fn merkel_table2_mixing_beats_frequency_scaling() {
    report(&table2(Observe::Linux).unwrap());
}

#[test]
#[ignore = "validation: Merkel Fig. 5 against the simulator"]
fn merkel_fig5_sorted_co_scheduling() {
    // Known misses are shown but must still miss (`report` checks it).
    report(&fig5(Observe::Linux).unwrap());
}

#[test]
#[ignore = "validation: Merkel Fig. 6 against the simulator"]
fn merkel_fig6_frequency_heuristic() {
    report(&fig6(Observe::Linux).unwrap());
}

/// Fig. 8: cross-node swaps on two simulated Q6600s.
#[test]
#[ignore = "validation: Merkel Fig. 8 against the simulator"]
fn merkel_fig8_cross_node_swaps() {
    // Known misses are shown but must still miss (`report` checks it).
    report(&fig8(Observe::Linux).unwrap());
}
