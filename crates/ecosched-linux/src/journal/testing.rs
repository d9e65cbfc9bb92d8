//! What the journal's unit tests share: a writable stand-in root with one
//! cpufreq governor file to change and put back.

#![allow(clippy::unwrap_used)]

use crate::fsroot::FsRoot;

pub(super) fn fixture() -> (tempfile::TempDir, FsRoot) {
    let dir = tempfile::tempdir().unwrap();
    let gov = dir.path().join("sys/devices/system/cpu/cpufreq/policy0");
    std::fs::create_dir_all(&gov).unwrap();
    std::fs::write(gov.join("scaling_governor"), "ondemand\n").unwrap();
    let root = FsRoot::writable_fixture(dir.path());
    (dir, root)
}

pub(super) const GOV: &str = "sys/devices/system/cpu/cpufreq/policy0/scaling_governor";
