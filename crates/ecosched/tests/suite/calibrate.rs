//! `ecosched calibrate av` on a simulated machine preset: the activity
//! translation vectors it prints, and the calibration file it writes,
//! keeping the parts it did not measure. (On this machine's own hardware
//! it is a live test.)

use crate::support::ecosched;
use predicates::prelude::*;

/// `calibrate av --machine q6600` prints the translation vectors
/// and the TOML to store them; a simulated machine needs no PMU here.
#[test]
fn calibrate_av_prints_translation_vectors() {
    let out = ecosched()
        .args(["calibrate", "av", "--machine", "q6600"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("translation vectors"), "{text}");
    assert!(text.contains("[calibration.activity]"), "{text}");
    assert!(text.contains("freq_khz = 1600000"), "{text}");
}

/// `--output FILE` stores the result as a calibration file that
/// `run --calibration` reads, keeping the parts it did not measure.
#[test]
fn calibrate_av_output_is_a_calibration_file_that_keeps_other_parts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("q6600-calibration.toml");
    std::fs::write(&file, "partition = \"2@1600,2@2400\"\n").unwrap();
    ecosched()
        .args(["calibrate", "av", "--machine", "q6600", "--output"])
        .arg(&file)
        .assert()
        .success()
        .stdout(predicate::str::contains("written to"));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("partition = \"2@1600,2@2400\""), "{text}");
    assert!(text.contains("[activity]"), "{text}");
    assert!(text.contains("freq_khz = 1600000"), "{text}");
    assert!(
        text.contains("source = \"ecosched calibrate av: q6600"),
        "{text}"
    );
    // A malformed file is refused, located, and left alone.
    std::fs::write(&file, "partition = 3\n").unwrap();
    ecosched()
        .args(["calibrate", "av", "--machine", "q6600", "--output"])
        .arg(&file)
        .assert()
        .failure()
        .stderr(predicate::str::contains("q6600-calibration.toml"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "partition = 3\n");
}
