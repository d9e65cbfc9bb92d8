//! The simulator against the papers' published figures (SIMULATOR.md §6).
//! Each test prints the simulated figure next to the paper's and fails when
//! the model stops producing the effect.

#![allow(clippy::unwrap_used)]

use ecosched_engine::validate::{merkel_fig1, merkel_table1, merkel_table2};
use ecosched_sim::Observe;

mod common;
use common::report;

#[test]
fn merkel_fig1_contention() {
    report(&merkel_fig1(Observe::Linux).unwrap());
}

#[test]
fn merkel_table1_frequency_scaling() {
    report(&merkel_table1(Observe::Linux).unwrap());
}

#[test]
fn merkel_table2_mixing_beats_frequency_scaling() {
    report(&merkel_table2(Observe::Linux).unwrap());
}

/// Issue #10: Dhiman et al. Table 2, Fig. 2a and Fig. 5a under `--observe linux`.
#[test]
fn dhiman_wca_cuts_migrations_and_variance() {
    report(&ecosched_engine::validate::dhiman_checks().unwrap());
}

#[test]
fn merkel_fig5_sorted_co_scheduling() {
    // Known misses are shown but must still miss (`report` checks it).
    report(&ecosched_engine::validate::merkel_fig5(Observe::Linux).unwrap());
}

#[test]
fn merkel_fig6_frequency_heuristic() {
    report(&ecosched_engine::validate::merkel_fig6(Observe::Linux).unwrap());
}

/// Issue #13: Merkel Fig. 8, cross-node swaps on two simulated Q6600s.
#[test]
fn merkel_fig8_cross_node_swaps() {
    // Known misses are shown but must still miss (`report` checks it).
    report(&ecosched_engine::validate::merkel_xnode(Observe::Linux).unwrap());
}
