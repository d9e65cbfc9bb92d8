//! `LinuxPlatform` on this machine: a plan carried out on a real child and
//! undone when the platform is dropped during a panic.

#![allow(clippy::unwrap_used)]

use ecosched_linux::platform::{LinuxOptions, LinuxPlatform};
use ecosched_model::{CpuId, CpuSet, Plan, Platform};
use std::time::Duration;

fn allowed_list(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn a_panic_mid_run_still_puts_affinity_back() {
    let state = tempfile::tempdir().unwrap();
    let options = LinuxOptions {
        state_dir: state.path().to_path_buf(),
        ..LinuxOptions::default()
    };
    let mut platform = LinuxPlatform::prepare(&options).unwrap();
    platform.start(&["sleep".into(), "5".into()]).unwrap();
    let pid = platform.child_pid().unwrap();
    let original = allowed_list(pid);
    let snapshot = platform.observe().unwrap();
    let task = snapshot.tasks.iter().find(|t| t.id.pid == pid).unwrap().id;
    let plan = Plan {
        task_cpus: [(task, CpuSet::single(CpuId(0)))].into(),
        ..Plan::default()
    };
    let report = platform.apply(&plan).unwrap();
    assert!(report.vanished.is_empty());
    assert_eq!(allowed_list(pid), "0");

    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _owned = platform;
        panic!("a bug in a policy");
    }));
    assert!(outcome.is_err());
    assert_eq!(
        allowed_list(pid),
        original,
        "the drop during unwinding undid the pin"
    );
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::SIGKILL,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(50));
}

#[test]
fn a_plan_naming_a_task_that_is_not_managed_is_refused() {
    let state = tempfile::tempdir().unwrap();
    let options = LinuxOptions {
        state_dir: state.path().to_path_buf(),
        ..LinuxOptions::default()
    };
    let mut platform = LinuxPlatform::prepare(&options).unwrap();
    platform.start(&["true".into()]).unwrap();
    let stranger = ecosched_model::TaskId {
        pid: 1,
        start_ticks: 0,
    };
    let plan = Plan {
        task_cpus: [(stranger, CpuSet::single(CpuId(0)))].into(),
        ..Plan::default()
    };
    let err = platform.apply(&plan).unwrap_err().to_string();
    assert!(err.contains("not managed"), "{err}");
    platform.finish(false).unwrap();
}
