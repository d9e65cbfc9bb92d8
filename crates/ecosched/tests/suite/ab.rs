//! `ab`'s input checks, which refuse before any run (the runs themselves
//! need root and are in `live::ab`).

use crate::support::ecosched;

#[test]
fn ab_refuses_bad_input_before_running_anything() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let missing = dir.path().join("no-such-tree");
    let cases: [(&[&str], &str); 3] = [
        (&["--runs", "1"], "--runs 1: give 2 to 200 pairs"),
        (
            &["--idle-below", "150"],
            "--idle-below 150: a share of the machine",
        ),
        (
            &["--meter-root", missing.to_str().unwrap()],
            "not a directory",
        ),
    ];
    for (args, message) in cases {
        ecosched()
            .args(["ab", "--policy", "hilo"])
            .args(args)
            .arg("--state-dir")
            .arg(dir.path())
            .args(["--", "touch"])
            .arg(&marker)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
        assert!(!marker.exists(), "{args:?}: the command ran");
    }
}
