//! What every validation test does with its rows: print each simulated
//! figure next to the paper's, then fail naming the rows outside their
//! tolerance (shared by `validation.rs`, `pam.rs` and `hilo.rs`).

use ecosched_engine::validate::Check;

/// Print `checks` and assert that all pass.
pub fn report(checks: &[Check]) {
    for c in checks {
        println!(
            "{:4} {:84} paper {:7.3}  simulated {:7.3}  ±{:.3}  ({})",
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
