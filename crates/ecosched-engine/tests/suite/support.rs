//! What every validation test does with its rows: print each simulated
//! figure next to the paper's, then fail naming the rows outside their
//! tolerance, the rows whose tolerance is wider than the rules allow
//! ([`Check::tolerance_problem`]) or accepts no effect at all
//! ([`Check::no_effect_problem`]), the known misses that pass (so they
//! are promoted, not forgotten), and every row's line that
//! `docs/validation.md` lacks (the committed document is generated from
//! these rows and must not drift from them). Shared by the `validation`
//! modules.

use ecosched_engine::validate::{markdown, Check};

/// Print `checks` and assert that all pass (known misses: still miss) and
/// that every tolerance keeps within the rules.
pub fn report(checks: &[Check]) {
    for c in checks {
        println!(
            "{:4} {:84} paper {:7.3}  simulated {:7.3}  ±{:.3}  rel {:>6}  ({})",
            match (c.pass, c.known_miss) {
                (true, _) => "ok",
                (false, true) => "MISS",
                (false, false) => "FAIL",
            },
            c.name,
            c.paper,
            c.simulated,
            c.tolerance,
            c.rel_error
                .map_or_else(|| "-".to_string(), |e| format!("{:.3}", e)),
            c.source
        );
    }
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| !c.pass && !c.known_miss)
        .map(|c| c.name.as_str())
        .collect();
    assert!(failed.is_empty(), "outside tolerance: {failed:?}");
    let promoted: Vec<&str> = checks
        .iter()
        .filter(|c| c.pass && c.known_miss)
        .map(|c| c.name.as_str())
        .collect();
    assert!(
        promoted.is_empty(),
        "known misses that now pass (drop known_miss): {promoted:?}"
    );
    let wide: Vec<String> = checks
        .iter()
        .filter_map(|c| c.tolerance_problem())
        .collect();
    assert!(wide.is_empty(), "tolerances too wide: {wide:?}");
    let vanishing: Vec<String> = checks
        .iter()
        .filter_map(|c| c.no_effect_problem())
        .collect();
    assert!(
        vanishing.is_empty(),
        "tolerances that pass no effect: {vanishing:?}"
    );
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/validation.md"
    ))
    .unwrap_or_default();
    let stale: Vec<String> = markdown::row_lines(checks)
        .into_iter()
        .filter(|line| !doc.contains(line.as_str()))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/validation.md does not say this of its rows (regenerate it: \
         `cargo run --release -p ecosched -- validate --markdown > docs/validation.md`): {stale:#?}"
    );
}
