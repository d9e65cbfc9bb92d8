//! The built-in lists (`PRESETS`, `SCENARIOS`, `CLUSTERS`: names whose
//! TOML is embedded at build time) and the files beside them must match:
//! a file that is not listed is silently missing from the program, and a
//! name listed twice or with another file's text would shadow one.

use crate::support::crate_path;
use ecosched_sim::cluster::CLUSTERS;
use ecosched_sim::scenario::{PRESETS, SCENARIOS};
use std::collections::BTreeSet;

/// The stems of the `.toml` files in one of the crate's directories.
fn toml_stems(dir: &str) -> BTreeSet<String> {
    std::fs::read_dir(crate_path(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// Every file of `dir` is listed once in one of `lists`, and every listed
/// name's text is its file's.
fn check(dir: &str, lists: &[&[(&str, &str)]]) {
    let list: Vec<(&str, &str)> = lists.concat();
    let files = toml_stems(dir);
    let listed: BTreeSet<String> = list.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(listed.len(), list.len(), "{dir}: a name is listed twice");
    let unlisted: Vec<&String> = files.difference(&listed).collect();
    assert!(unlisted.is_empty(), "{dir}: not in the list: {unlisted:?}");
    let missing: Vec<&String> = listed.difference(&files).collect();
    assert!(missing.is_empty(), "{dir}: listed, no file: {missing:?}");
    for (name, text) in &list {
        let file = crate_path(&format!("{dir}/{name}.toml"));
        let on_disk = std::fs::read_to_string(&file).unwrap();
        assert_eq!(*text, on_disk, "{name}: its text is not {}", file.display());
    }
}

#[test]
fn every_machine_file_is_a_preset_and_every_preset_its_file() {
    check("machines", &[PRESETS]);
}

#[test]
fn every_scenario_file_is_built_in_and_every_built_in_its_file() {
    check("scenarios", &[SCENARIOS, CLUSTERS]);
}
