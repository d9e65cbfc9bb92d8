//! The `av-sort` policy (Merkel et al. §5.3) on this machine, for real:
//! more CPU-bound processes than CPUs, so each CPU's queue is
//! gang-scheduled and every group is frozen and thawed by the cgroup
//! freezer in turn. Counters come from the fake PMU (this VM has none);
//! the policy, the platform, the processes and the freezer are real.
//!
//! - the gang slots are visible from outside: each busy loop sits in its
//!   own `cpu<N>-<j>` freezer group and that group's state alternates
//!   between frozen and thawed while the others run;
//! - at the end every group is thawed (the loops run again) and removed;
//! - after a SIGKILL of the managing process (this test binary re-run as
//!   a child) one group is left frozen, and `ecosched restore` thaws it.
//!
//! Needs root and a cgroup freezer, as CI has.

use crate::support::av_sort::{groups_of, prepare, step};
use crate::support::{ecosched_command, leftovers, loops_of};
use ecosched_model::Platform;
use ecosched_testkit::live::{busy_turn, freezer_cgroup, has_exited, is_frozen, on_cpu_ns, Reap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[test]
#[ignore = "live: root, a cgroup freezer"]
fn av_sort_freezes_and_thaws_each_cpus_groups_in_turn_and_thaws_all_at_the_end() {
    let _turn = busy_turn();
    let state = tempfile::tempdir().unwrap();
    let (mut platform, mut policy) = prepare(state.path(), "ecosched-av");
    let sh = platform.child_pid().unwrap();
    let run_dir = format!("ecosched-av-{}", std::process::id());
    let cpus = platform.topology().online_cpus().len();
    let mut reap = Reap(vec![sh]);

    // Steps until every loop has been placed in a gang group.
    let until = Instant::now() + Duration::from_secs(20);
    let (loops, groups) = loop {
        step(&mut platform, policy.as_mut());
        let loops = loops_of(sh);
        reap.0.extend(&loops);
        if loops.len() == 2 * cpus {
            if let Some(groups) = groups_of(&loops, &run_dir) {
                break (loops, groups);
            }
        }
        assert!(
            Instant::now() < until,
            "the loops never all joined gang groups: {loops:?}"
        );
    };
    let file = freezer_cgroup(loops[0]).unwrap().1;
    let distinct: std::collections::BTreeSet<&PathBuf> = groups.iter().collect();
    assert_eq!(
        distinct.len(),
        loops.len(),
        "one group per loop: {groups:?}"
    );

    // Watch every group's state while the policy runs for 2 s (timeslice
    // 100 ms, two tasks per CPU: ten turns each).
    let mut seen_frozen = vec![false; loops.len()];
    let mut seen_thawed = vec![false; loops.len()];
    let mut frozen_at_once = Vec::new();
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        step(&mut platform, policy.as_mut());
        let now: Vec<bool> = loops
            .iter()
            .map(|&p| {
                let (dir, _) = freezer_cgroup(p).unwrap();
                is_frozen(&dir, file).unwrap_or(false)
            })
            .collect();
        for (i, f) in now.iter().enumerate() {
            seen_frozen[i] |= *f;
            seen_thawed[i] |= !*f;
        }
        frozen_at_once.push(now.iter().filter(|f| **f).count());
    }
    assert!(
        seen_frozen.iter().all(|f| *f) && seen_thawed.iter().all(|t| *t),
        "every loop's group must be seen frozen and thawed: frozen {seen_frozen:?}, thawed {seen_thawed:?}"
    );
    // Some loops run while others are frozen: typically one per CPU each
    // (the waiting `sh` may hold a slot until the policy sees it blocks).
    let typical = {
        let mut v = frozen_at_once.clone();
        v.sort_unstable();
        v[v.len() / 2]
    };
    assert!(
        (1..loops.len()).contains(&typical),
        "frozen loops per look: {frozen_at_once:?}"
    );

    // The run ends (`sh` is asked to stop, and every process of the run
    // gets the signal, SIGKILL after a grace period): every group is
    // thawed and removed, and each loop ends. A task in a frozen group
    // cannot exit, so a loop that has exited (gone, or a zombie nobody
    // reaps) was thawed.
    let end = platform.finish(true).unwrap();
    assert!(end.restore.failed.is_empty(), "{:?}", end.restore);
    assert!(groups.iter().all(|d| !d.exists()), "groups removed");
    let deadline = Instant::now() + Duration::from_secs(5);
    for &p in &loops {
        while !has_exited(p) {
            assert!(
                Instant::now() < deadline,
                "loop {p} still running after the run ended"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    assert_eq!(leftovers(state.path()).len(), 0);
}

/// The managing process is [`crate::children::av_sort_managing_process`].
#[test]
#[ignore = "live: root, a cgroup freezer"]
fn after_sigkill_ecosched_restore_thaws_every_av_group() {
    let _turn = busy_turn();
    let state = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let pids_file = scratch.path().join("pids");
    let home = freezer_cgroup(std::process::id()).unwrap().0;
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "children::av_sort_managing_process", "--ignored"])
        .env("AV_STATE", state.path())
        .env("AV_PIDS", &pids_file)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while !pids_file.exists() {
        assert!(
            Instant::now() < until,
            "the child never gang-scheduled its loops"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = std::fs::read_to_string(&pids_file).unwrap();
    let pids: Vec<u32> = text.split(' ').map(|p| p.parse().unwrap()).collect();
    let _reap = Reap(pids.clone());
    let loops = &pids[1..];
    let run_dir = freezer_cgroup(loops[0])
        .unwrap()
        .0
        .parent()
        .unwrap()
        .to_path_buf();
    std::thread::sleep(Duration::from_millis(130));
    child.kill().unwrap(); // SIGKILL: no chance to thaw anything.
    child.wait().unwrap();
    // Some groups are left frozen for good (the groups each loop is in
    // now: the cycle may have been rebuilt since the pids were written).
    std::thread::sleep(Duration::from_millis(50));
    let stuck: Vec<u32> = loops
        .iter()
        .filter(|&&p| {
            let (dir, file) = freezer_cgroup(p).unwrap();
            let state = std::fs::read_to_string(dir.join(file)).unwrap();
            matches!(state.trim(), "FROZEN" | "1")
        })
        .copied()
        .collect();
    assert!(!stuck.is_empty(), "a frozen slot was in force at the kill");
    let cpu: Vec<u64> = stuck.iter().map(|&p| on_cpu_ns(p).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    for (i, &p) in stuck.iter().enumerate() {
        assert_eq!(
            on_cpu_ns(p).unwrap(),
            cpu[i],
            "loop {p} frozen after the kill"
        );
    }

    let out = ecosched_command()
        .arg("restore")
        .arg("--state-dir")
        .arg(state.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for &p in loops {
        assert_eq!(freezer_cgroup(p).unwrap().0, home, "loop {p} moved back");
    }
    let cpu: Vec<u64> = stuck.iter().map(|&p| on_cpu_ns(p).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300 * loops.len() as u64));
    for (i, &p) in stuck.iter().enumerate() {
        assert!(on_cpu_ns(p).unwrap() > cpu[i], "loop {p} thawed by restore");
    }
    assert!(!run_dir.exists(), "{run_dir:?} removed");
    assert_eq!(leftovers(state.path()).len(), 0);
}
