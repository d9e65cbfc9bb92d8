//! `ecosched run` and `restore` at the limits: a program with more
//! threads than the open-file limit covers, a dead run's journal met by a
//! later run, and a state directory others could write. Real processes; root, as the other `run` tests.

use crate::support::{ecosched_command, ecosched_path, leftovers, measure_only_run, DEAD_JOURNAL};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// A Python program that starts `n` sleeping threads and waits for them.
fn threads(n: usize, secs: f64) -> String {
    format!(
        "import threading,time\nts=[threading.Thread(target=time.sleep,args=({secs},)) for _ in range({n})]\n[t.start() for t in ts]\n[t.join() for t in ts]"
    )
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine, python3"]
fn threads_beyond_the_open_file_limit_are_counted_in_the_table() {
    let state = tempfile::tempdir().unwrap();
    // A hard limit of 256 descriptors cannot cover 400 threads (two /proc
    // files and three perf events each), even raised from a soft 64.
    let script = format!(
        "ulimit -Sn 64 && ulimit -Hn 256 && exec {} run --policy placed --param map=ecosched-no-task@0 --state-dir {} -- python3 -c \"$0\"",
        ecosched_path().display(),
        state.path().display()
    );
    let out = Command::new("sh")
        .args(["-c", &script, &threads(400, 1.5)])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("unobserved tasks"))
        .expect("an unobserved-tasks row");
    let n: u64 = line
        .split_whitespace()
        .nth(2)
        .and_then(|v| v.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(n > 0 && n <= 401, "{line}");
    assert!(line.contains("no longer observed"), "{line}");

    // With the default limits the same program is observed whole.
    let out = measure_only_run()
        .args(["--state-dir"])
        .arg(state.path())
        .args(["--", "python3", "-c", &threads(400, 1.5)])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("unobserved tasks") && l.ends_with(" 0")),
        "{stdout}"
    );
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine"]
fn a_later_run_warns_about_a_dead_runs_journal_and_restore_clears_it() {
    let state = tempfile::tempdir().unwrap();
    std::fs::write(state.path().join("journal-4194311.jsonl"), DEAD_JOURNAL).unwrap();
    std::fs::write(state.path().join("hint-4194311"), "3\n").unwrap();
    let out = measure_only_run()
        .args(["--state-dir"])
        .arg(state.path())
        .args(["--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ecosched 4194311 ended without undoing its changes")
            && stderr.contains("ecosched restore"),
        "{stderr}"
    );
    let out = ecosched_command()
        .args(["restore", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let left = leftovers(state.path());
    assert!(left.is_empty(), "journal and hint file removed: {left:?}");
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine"]
fn run_makes_a_missing_state_dir_0700_and_refuses_a_world_writable_one() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let out = measure_only_run()
        .args(["--state-dir"])
        .arg(&state)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mode = std::fs::metadata(&state).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o700);
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = measure_only_run()
        .args(["--state-dir"])
        .arg(&state)
        .args(["--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("writable by group or others"), "{stderr}");
}
