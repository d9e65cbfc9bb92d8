//! Banikazemi et al.'s rows: the CPI model, the cache occupancies, PAM's
//! gains on the paper's mixes and the power cap.

use crate::support::report;
use ecosched_engine::validate::pam;
use ecosched_engine::validate::RowKind;
use ecosched_sim::Observe;

#[test]
#[ignore = "validation: PAM eq. 14, §IV-C and §V-B/C against the simulator"]
fn pam_validation_rows() {
    report(&pam::checks(Observe::Linux).unwrap());
}

/// The paper's stated effects on mixes nothing was fitted on, all
/// labelled predicted.
#[test]
#[ignore = "validation: PAM Figs. 4–5, 8–9 against the simulator"]
fn pam_predicted_rows() {
    let rows = pam::predicted(Observe::Linux).unwrap();
    assert!(rows.iter().all(|c| c.kind == RowKind::Predicted));
    report(&rows);
}

#[test]
#[ignore = "validation: PAM §V-G power cap against the simulator"]
fn pam_power_cap_row() {
    report(&pam::power_cap(Observe::Linux).unwrap());
}
