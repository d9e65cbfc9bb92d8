//! Hostile files given to `ecosched` as root: a FIFO or `/dev/zero` as a
//! configuration, calibration or power-model file, a hint file the command
//! replaces with one, and a journal planted in the state directory that
//! names a cgroup ecosched never made. Each ends quickly with a clear
//! message, and nothing is left behind or changed.

use crate::support::{ecosched_command, leftovers};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Run `cmd`, killing it and failing the test if it is still running after
/// `limit` (a blocked read never ends on its own).
fn within(mut cmd: Command, limit: Duration) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed();
    (child.wait_with_output().unwrap(), took)
}

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine"]
fn a_fifo_or_dev_zero_as_an_input_file_ends_run_at_once_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("input.fifo");
    mkfifo(&fifo);
    for option in ["--calibration", "--power-model", "--config"] {
        for (file, kind) in [
            (fifo.as_path(), "FIFO"),
            (Path::new("/dev/zero"), "character device"),
        ] {
            let state = dir.path().join("state");
            let marker = dir.path().join("started");
            let mut cmd = ecosched_command();
            cmd.args(["run", "--policy", "static", "--param", "cpus=0", option])
                .arg(file)
                .arg("--state-dir")
                .arg(&state)
                .arg("--")
                .arg("touch")
                .arg(&marker);
            let (out, took) = within(cmd, Duration::from_secs(20));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                !out.status.success(),
                "{option} {}: {stderr}",
                file.display()
            );
            assert!(
                stderr.contains(&file.display().to_string()) && stderr.contains(kind),
                "{option} {}: {stderr}",
                file.display()
            );
            assert!(took < Duration::from_secs(10), "{option}: took {took:?}");
            assert!(!marker.exists(), "{option}: the command ran");
            assert!(
                leftovers(&state).is_empty(),
                "{option}: {:?}",
                leftovers(&state)
            );
        }
    }
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine"]
fn a_hint_file_replaced_by_a_fifo_or_dev_zero_is_ignored_with_a_warning() {
    for (replace, kind) in [
        ("mkfifo \"$ECOSCHED_HINT_FILE\"", "FIFO"),
        (
            "ln -s /dev/zero \"$ECOSCHED_HINT_FILE\"",
            "character device",
        ),
    ] {
        let state = tempfile::tempdir().unwrap();
        let script = format!("rm -f \"$ECOSCHED_HINT_FILE\" && {replace} && sleep 1");
        let mut cmd = ecosched_command();
        cmd.args([
            "run",
            "--json",
            "--policy",
            "static",
            "--param",
            "cpus=0",
            "--parallelism",
            "1",
            "--interval-ms",
            "50",
            "--state-dir",
        ])
        .arg(state.path())
        .args(["--", "sh", "-c", &script]);
        let (out, took) = within(cmd, Duration::from_secs(20));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{kind}: {stderr}");
        assert!(took < Duration::from_secs(10), "{kind}: took {took:?}");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let notices = report["notices"].as_array().unwrap();
        assert!(
            notices
                .iter()
                .filter_map(|n| n.as_str())
                .any(|n| n.contains("ignoring the hint") && n.contains(kind)),
            "{kind}: {notices:?}"
        );
        assert!(
            leftovers(state.path()).is_empty(),
            "{kind}: {:?}",
            leftovers(state.path())
        );
    }
}

/// A v1 freezer cgroup of its own with a sleeping process in it, removed
/// (the process killed) when dropped.
struct Victim {
    dir: std::path::PathBuf,
    sleeper: std::process::Child,
}

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("freezer.state"), "THAWED");
        let _ = self.sleeper.kill();
        let _ = self.sleeper.wait();
        let _ = std::fs::write(
            "/sys/fs/cgroup/freezer/tasks",
            self.sleeper.id().to_string(),
        );
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[test]
#[ignore = "live: root, the cgroup v1 freezer"]
fn a_planted_journal_does_not_freeze_move_or_remove_an_unrelated_cgroup() {
    let dir = std::path::PathBuf::from(format!(
        "/sys/fs/cgroup/freezer/hostile-victim-{}",
        std::process::id()
    ));
    std::fs::create_dir(&dir).unwrap();
    let sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let victim = Victim { dir, sleeper };
    let pid = victim.sleeper.id();
    std::fs::write(victim.dir.join("tasks"), pid.to_string()).unwrap();
    let ticks: u64 = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap()
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let rel = victim.dir.strip_prefix("/").unwrap().display().to_string();
    // Root's journal in root's 0700 directory, as a dead run would leave
    // it, whose records name the victim.
    let state = tempfile::tempdir().unwrap();
    let journal = format!(
        "{{\"version\":1,\"owner_pid\":4194311,\"owner_start_ticks\":5}}\n\
         {{\"kind\":\"cgroup_created\",\"dir\":\"{rel}\",\"parent\":\"sys/fs/cgroup/freezer\",\"members\":\"tasks\"}}\n\
         {{\"kind\":\"file\",\"path\":\"{rel}/freezer.state\",\"before\":\"FROZEN\"}}\n\
         {{\"kind\":\"gang_moved\",\"tid\":{pid},\"start_ticks\":{ticks},\"back_to\":\"sys/fs/cgroup/freezer/tasks\"}}\n"
    );
    std::fs::write(state.path().join("journal-4194311.jsonl"), journal).unwrap();
    let mut cmd = ecosched_command();
    cmd.args(["restore", "--state-dir"]).arg(state.path());
    let (out, _) = within(cmd, Duration::from_secs(20));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(all.matches("record refused").count(), 3, "{all}");
    assert!(all.contains(&format!("task {pid}")), "{all}");
    let state_now = std::fs::read_to_string(victim.dir.join("freezer.state")).unwrap();
    assert_eq!(state_now.trim(), "THAWED", "frozen by a planted journal");
    let members = std::fs::read_to_string(victim.dir.join("tasks")).unwrap();
    assert!(
        members.lines().any(|l| l.trim() == pid.to_string()),
        "moved out by a planted journal: {members:?}"
    );
}
