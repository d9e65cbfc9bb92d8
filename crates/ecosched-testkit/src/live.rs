//! Reading this machine's processes for live tests: what `/proc` says of a
//! task's CPUs, children and state, and waiting for a condition.

use std::time::{Duration, Instant};

/// `Cpus_allowed_list` of task `pid`, `None` once it is gone.
pub fn allowed_list(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

/// Wait up to `timeout` for `ok`, panicking with `what` when it never holds.
pub fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
