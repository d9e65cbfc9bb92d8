//! Property tests of the daemon's input files: the configuration and a
//! per-core power model, given arbitrary bytes or the shipped files with
//! random edits, never panic and are loaded or refused with an error
//! naming the file.

#![allow(clippy::unwrap_used)]

use ecosched_testkit::fuzz::edit;
use proptest::prelude::*;
use std::path::Path;

const CONFIG: &str = include_str!("../../../deploy/ecosched.toml");
const MODEL: &str = "idle_w_per_core = 0.5\nbusy_static_w_per_core = 1.0\ndynamic_max_w_per_core = 3.0\nuncore_w_per_package = 60.0\nvoltage_slope = 0.3\n";

fn config_located(text: &str) -> Result<(), TestCaseError> {
    if let Err(e) = crate::config::parse(Path::new("fuzz.toml"), text) {
        prop_assert!(e.to_string().starts_with("fuzz.toml"), "{}", e);
    }
    Ok(())
}

fn model_located(dir: &Path, bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = dir.join("model.toml");
    std::fs::write(&path, bytes).unwrap();
    let choice = path.to_str().unwrap();
    if let Err(e) = crate::power_model::load(choice) {
        prop_assert!(e.contains(choice), "{}", e);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn arbitrary_bytes_never_panic_the_config_or_power_model(bytes in proptest::collection::vec(any::<u8>(), 0..500)) {
        config_located(&String::from_utf8_lossy(&bytes))?;
        let dir = tempfile::tempdir().unwrap();
        model_located(dir.path(), &bytes)?;
    }

    #[test]
    fn edited_configs_load_or_name_the_file(at in 0usize..3000, cut in 0usize..10, insert in "[a-z0-9_=\\[\\]{}\" .,/\n-]{0,16}") {
        config_located(&edit(CONFIG, at, cut, &insert))?;
    }

    #[test]
    fn edited_power_models_load_or_name_the_file(at in 0usize..200, cut in 0usize..10, insert in "[a-z0-9_=\\[\\]\" .\n-]{0,12}") {
        let dir = tempfile::tempdir().unwrap();
        model_located(dir.path(), edit(MODEL, at, cut, &insert).as_bytes())?;
    }
}
