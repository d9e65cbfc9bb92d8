//! Dhiman et al.'s rows: WCA against the default scheduler on Table 2's
//! mixes, and the best and worst placements of Fig. 2a.

use crate::support::report;
use ecosched_engine::validate::dhiman;

/// Table 2, Fig. 2a and Fig. 5a under `--observe linux`.
#[test]
#[ignore = "validation: Dhiman Table 2 and Figs. 2a, 5a against the simulator"]
fn dhiman_wca_cuts_migrations_and_variance() {
    report(&dhiman::checks().unwrap());
}
