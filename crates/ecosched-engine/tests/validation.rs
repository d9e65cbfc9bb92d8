//! The simulator against the papers' published figures (SIMULATOR.md §6).
//! Each test prints the simulated figure next to the paper's and fails when
//! the model stops producing the effect.

#![allow(clippy::unwrap_used)]

use ecosched_engine::validate::dhiman;
use ecosched_engine::validate::merkel::evaluation::{fig5, fig6, fig8};
use ecosched_engine::validate::merkel::measurements::{fig1, table1, table2};
use ecosched_sim::Observe;

mod common;
use common::report;

#[test]
fn merkel_fig1_contention() {
    report(&fig1(Observe::Linux).unwrap());
}

#[test]
fn merkel_table1_frequency_scaling() {
    report(&table1(Observe::Linux).unwrap());
}

#[test]
fn merkel_table2_mixing_beats_frequency_scaling() {
    report(&table2(Observe::Linux).unwrap());
}

/// Issue #10: Dhiman et al. Table 2, Fig. 2a and Fig. 5a under `--observe linux`.
#[test]
fn dhiman_wca_cuts_migrations_and_variance() {
    report(&dhiman::checks().unwrap());
}

#[test]
fn merkel_fig5_sorted_co_scheduling() {
    // Known misses are shown but must still miss (`report` checks it).
    report(&fig5(Observe::Linux).unwrap());
}

#[test]
fn merkel_fig6_frequency_heuristic() {
    report(&fig6(Observe::Linux).unwrap());
}

/// Issue #13: Merkel Fig. 8, cross-node swaps on two simulated Q6600s.
#[test]
fn merkel_fig8_cross_node_swaps() {
    // Known misses are shown but must still miss (`report` checks it).
    report(&fig8(Observe::Linux).unwrap());
}
