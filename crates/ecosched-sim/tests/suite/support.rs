//! Helpers shared by the suite's modules: where the crate's own files and
//! the suite's data are, whatever directory the tests run from.

use std::path::PathBuf;

/// A path inside this crate (`machines`, `tests/data/…`).
pub fn crate_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A file of the suite's test data (`tests/data/<rel>`), as a string for
/// `Scenario::load`.
pub fn data_file(rel: &str) -> String {
    crate_path("tests/data").join(rel).display().to_string()
}
