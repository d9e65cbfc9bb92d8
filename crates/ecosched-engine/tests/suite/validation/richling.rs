//! Richling et al.'s rows: `make -jN` under ondemand, performance and the
//! high/low variants on the dual Opteron 2352 (Figs. 1–2), Table I on the
//! Phenom 9750, and the three quad-cores of §II and §V-E.

use crate::support::report;
use ecosched_engine::validate::richling;
use ecosched_engine::validate::RowKind;
use ecosched_sim::Observe;

#[test]
#[ignore = "validation: Richling Fig. 2 against the simulator"]
fn richling_fig2_ondemand_slow_and_spare_recovers() {
    report(&richling::fig2(Observe::Linux).unwrap());
}

/// The predicted ordering of ondemand's slowdown over -j2 … -j12.
#[test]
#[ignore = "validation: Richling Fig. 1 against the simulator"]
fn richling_fig1_ordering_is_predicted_and_holds() {
    let rows = richling::fig1_ordering(Observe::Linux).unwrap();
    assert!(rows.iter().all(|r| r.kind == RowKind::Predicted));
    report(&rows);
}

/// Predicted -j1 slowdowns on the Core i7 940, the Phenom 9750 and the
/// Phenom II 940 (§II, §V-E).
#[test]
#[ignore = "validation: Richling §II and §V-E against the simulator"]
fn richling_three_quads_are_predicted() {
    let rows = richling::three_quads(Observe::Linux).unwrap();
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().all(|r| r.kind == RowKind::Predicted));
    report(&rows);
}

#[test]
#[ignore = "validation: Richling Table I against the simulator"]
fn richling_table1_energy_ordering() {
    report(&richling::table1(Observe::Linux).unwrap());
}
