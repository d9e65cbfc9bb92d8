//! The `av-sort` policy (issue #11, Merkel et al. §5.3) on this machine,
//! for real: more CPU-bound processes than CPUs, so each CPU's queue is
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

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ecosched_linux::perf::FakePerf;
use ecosched_linux::platform::{LinuxOptions, LinuxPlatform};
use ecosched_model::calibration::ActivityCalibration;
use ecosched_model::{Calibration, Platform};
use ecosched_policy::{Params, Policy};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The freezer cgroup of `pid` (a directory) and its state file's name.
fn freezer_cgroup(pid: u32) -> Option<(PathBuf, &'static str)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    if let Some(path) = text.lines().find_map(|l| {
        let mut p = l.splitn(3, ':');
        let (_, ctl, path) = (p.next()?, p.next()?, p.next()?);
        ctl.split(',')
            .any(|c| c == "freezer")
            .then(|| path.to_string())
    }) {
        let dir = Path::new("/sys/fs/cgroup/freezer").join(path.trim_start_matches('/'));
        return Some((dir, "freezer.state"));
    }
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some((
        Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/')),
        "cgroup.freeze",
    ))
}

/// Frozen or being frozen (v1 passes through `FREEZING`).
fn is_frozen(dir: &Path, file: &str) -> Option<bool> {
    let state = std::fs::read_to_string(dir.join(file)).ok()?;
    Some(!matches!(state.trim(), "THAWED" | "0"))
}

fn on_cpu_ns(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

fn kill(pids: &[u32]) {
    let pids: Vec<String> = pids
        .iter()
        .filter(|&&p| p > 1)
        .map(u32::to_string)
        .collect();
    if !pids.is_empty() {
        let _ = std::process::Command::new("kill")
            .arg("-KILL")
            .args(&pids)
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// Kills the busy loops however the test ends, a failed assertion included.
struct Reap(Vec<u32>);

impl Drop for Reap {
    fn drop(&mut self) {
        // A frozen task does not die of SIGKILL until it is thawed: thaw
        // whatever a failed assertion left frozen, then kill.
        for &p in &self.0 {
            if let Some((dir, file)) = freezer_cgroup(p) {
                if is_frozen(&dir, file) == Some(true) {
                    let thawed = if file == "freezer.state" {
                        "THAWED"
                    } else {
                        "0"
                    };
                    let _ = std::fs::write(dir.join(file), thawed);
                }
            }
        }
        kill(&self.0);
    }
}

/// The machine has few CPUs: busy-loop tests take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Two busy loops per online CPU under one waiting `sh`, so that every
/// CPU's queue holds two tasks and the policy builds a gang cycle.
fn command() -> Vec<String> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let loops = "sh -c 'while :; do :; done' & ".repeat(2 * cpus);
    vec!["sh".into(), "-c".into(), format!("{loops}wait")]
}

/// A platform behind the fake PMU, with an activity calibration (this VM
/// cannot measure one: no cpufreq, no counters), and av-sort on it.
fn prepare(state: &Path, cgroup_name: &str) -> (LinuxPlatform, Box<dyn Policy>) {
    let options = LinuxOptions {
        state_dir: state.to_path_buf(),
        // Tests in one binary share a PID: keep their cgroups apart.
        cgroup_name: cgroup_name.into(),
        ..LinuxOptions::default()
    };
    let mut platform = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options)
        .perf(Box::new(FakePerf::new()))
        .build()
        .unwrap();
    platform
        .set_calibration(Calibration {
            source: Some("av_linux test".into()),
            activity: Some(ActivityCalibration {
                peak_mem_per_s: 1e8,
                peak_cache_per_cycle: 0.25,
                translation: Vec::new(),
            }),
            ..Calibration::default()
        })
        .unwrap();
    let mut policy = ecosched_policy::build("av-sort", &Params::default()).unwrap();
    platform.open_counters(&policy.requirements());
    let missing = policy.requirements().missing(&platform.capabilities());
    assert!(missing.is_empty(), "{missing:?}");
    let initial = policy.init(&platform.topology()).unwrap();
    platform.apply(&initial).unwrap();
    platform.start(&command()).unwrap();
    (platform, policy)
}

/// One control-loop step, as `ecosched run` takes it.
fn step(platform: &mut LinuxPlatform, policy: &mut dyn Policy) {
    platform.advance(policy.interval()).unwrap();
    let snapshot = platform.observe().unwrap();
    let plan = policy.decide(&snapshot);
    platform.apply(&plan).unwrap();
}

/// The busy loops (every descendant of `sh` but itself): those whose
/// command line is the loop.
fn loops_of(sh: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let ppid: Option<u32> = stat[close + 2..]
            .split(' ')
            .nth(1)
            .and_then(|x| x.parse().ok());
        let cmdline = std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default();
        if ppid == Some(sh) && cmdline.contains("while") {
            out.push(p);
        }
    }
    out.sort_unstable();
    out
}

/// Each loop's gang group, if every loop is in one of the run's
/// `cpu<N>-<j>` groups.
fn groups_of(loops: &[u32], run_dir: &str) -> Option<Vec<PathBuf>> {
    loops
        .iter()
        .map(|&p| {
            let (dir, _) = freezer_cgroup(p)?;
            let name = dir.file_name()?.to_string_lossy().to_string();
            let parent = dir.parent()?.file_name()?.to_string_lossy().to_string();
            (parent == run_dir && name.starts_with("cpu")).then_some(dir)
        })
        .collect()
}

#[test]
fn av_sort_freezes_and_thaws_each_cpus_groups_in_turn_and_thaws_all_at_the_end() {
    let _turn = turn();
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
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
}

/// Whether `pid` has exited: gone, or a zombie.
fn has_exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

/// Run by [`after_sigkill_ecosched_restore_thaws_every_av_group`]: the
/// managing process, running av-sort until it is killed.
#[test]
#[ignore = "run and SIGKILLed by after_sigkill_ecosched_restore_thaws_every_av_group"]
fn av_child_until_killed() {
    let state = PathBuf::from(std::env::var("AV_STATE").unwrap());
    let pids_file = PathBuf::from(std::env::var("AV_PIDS").unwrap());
    let (mut platform, mut policy) = prepare(&state, "ecosched-av-killed");
    let sh = platform.child_pid().unwrap();
    let run_dir = format!("ecosched-av-killed-{}", std::process::id());
    let cpus = platform.topology().online_cpus().len();
    let mut written = false;
    // Killed within seconds by the parent; should the parent die first,
    // end the run (thawing everything) rather than run on unmanaged.
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        step(&mut platform, policy.as_mut());
        let loops = loops_of(sh);
        if !written && loops.len() == 2 * cpus && groups_of(&loops, &run_dir).is_some() {
            let text: Vec<String> = std::iter::once(sh)
                .chain(loops)
                .map(|p| p.to_string())
                .collect();
            let tmp = pids_file.with_extension("tmp");
            std::fs::write(&tmp, text.join(" ")).unwrap();
            std::fs::rename(&tmp, &pids_file).unwrap();
            written = true;
        }
    }
    platform.finish(true).unwrap();
}

#[test]
fn after_sigkill_ecosched_restore_thaws_every_av_group() {
    let _turn = turn();
    let state = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let pids_file = scratch.path().join("pids");
    let home = freezer_cgroup(std::process::id()).unwrap().0;
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "av_child_until_killed", "--ignored"])
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

    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("ecosched"))
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
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
}
