//! `ecosched restore` on a journal it must not trust: one that group or
//! others could have written is refused, named, and left in place. The
//! journal is a dead run's, written by the test; nothing on the machine
//! is touched, so no root is needed.

use crate::support::{ecosched_command, DEAD_JOURNAL};
use std::os::unix::fs::PermissionsExt;

#[test]
fn restore_refuses_a_journal_others_could_write_and_exits_non_zero() {
    let state = tempfile::tempdir().unwrap();
    let path = state.path().join("journal-4194311.jsonl");
    std::fs::write(&path, DEAD_JOURNAL).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = ecosched_command()
        .args(["restore", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("not restored") && stdout.contains("writable by group or others"),
        "{stdout}"
    );
    assert!(path.exists());
}
