//! `ecosched run`'s memory stays bounded when a program has more threads
//! than the open-file limit lets it observe: the tasks it cannot read are
//! noted once, the list of notices is bounded, and nothing grows with the
//! run's length. (`scripts/soak-run` is the same check over minutes.)

use crate::support::{ecosched_path, leftovers};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// ecosched's resident memory, kB (`VmRSS` of `/proc/<pid>/status`).
fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine, python3"]
fn run_memory_stays_bounded_with_threads_beyond_the_open_file_limit() {
    let state = tempfile::tempdir().unwrap();
    let json = state.path().join("summary.json");
    // 2,000 threads that wake every 0.2 s for 22 s (so the run's tasks are
    // read often), at 1,024 descriptors: about half of them cannot be
    // observed.
    let program = "import threading,time\nthreading.stack_size(65536)\nend=time.time()+22\ndef w():\n  while time.time()<end: time.sleep(0.2)\nts=[threading.Thread(target=w) for _ in range(2000)]\n[t.start() for t in ts]\n[t.join() for t in ts]";
    let script = format!(
        "ulimit -n 1024 && exec {} run --json --policy placed --param map=ecosched-no-task@0 --state-dir {} -- python3 -c \"$0\" > {}",
        ecosched_path().display(),
        state.path().join("state").display(),
        json.display()
    );
    let mut eco = Command::new("sh")
        .args(["-c", &script, program])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // `exec`: the shell's PID is ecosched's.
    let pid = eco.id();
    let started = Instant::now();
    let mut samples = Vec::new();
    while eco.try_wait().unwrap().is_none() {
        let t = started.elapsed();
        if let Some(kb) = rss_kb(pid) {
            samples.push((t, kb));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(eco.wait().unwrap().success());
    // The threads are all started and read after a few seconds; from then
    // on nothing may grow.
    let settled: Vec<u64> = samples
        .iter()
        .filter(|(t, _)| *t >= Duration::from_secs(6) && *t <= Duration::from_secs(21))
        .map(|&(_, kb)| kb)
        .collect();
    assert!(settled.len() >= 10, "too few samples: {samples:?}");
    let max = samples.iter().map(|&(_, kb)| kb).max().unwrap();
    assert!(
        max < 50 * 1024,
        "ecosched's RSS reached {max} kB: {samples:?}"
    );
    let (first, last) = (settled[0], settled[settled.len() - 1]);
    assert!(
        last <= first + 2 * 1024,
        "ecosched's RSS grew from {first} kB to {last} kB while nothing changed: {samples:?}"
    );
    let size = std::fs::metadata(&json).unwrap().len();
    assert!(size < 2 * 1024 * 1024, "the --json summary is {size} bytes");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let unobserved = summary["unobserved_tasks"].as_u64().unwrap();
    assert!(
        (500..=2001).contains(&unobserved),
        "{unobserved} unobserved tasks"
    );
    // User and system time add up to the run's CPU time.
    let cpu = |key: &str| summary[key].as_f64().unwrap();
    let (total, user, system) = (cpu("cpu_s"), cpu("cpu_user_s"), cpu("cpu_system_s"));
    assert!(
        (user + system - total).abs() < 1e-6,
        "user {user} + system {system} is not cpu_s {total}"
    );
    let notices = summary["notices"].as_array().unwrap();
    assert!(notices.len() <= 101, "{} notices kept", notices.len());
    assert!(leftovers(&state.path().join("state")).is_empty());
}
