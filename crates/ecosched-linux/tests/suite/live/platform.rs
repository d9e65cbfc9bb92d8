//! `LinuxPlatform` on this machine, with real commands (`sleep`, `sh`,
//! `python3`): plans carried out and undone (also when the platform is
//! dropped during a panic), every task and exit reported once, sleeping
//! tasks not read (and reported as reading them would), and the
//! platform's state bounded by the tasks alive.

use crate::support::live_turn;
use ecosched_linux::platform::{LinuxOptions, LinuxPlatform};
use ecosched_model::{CpuId, CpuSet, Plan, Platform, Snapshot, TaskSample, TaskState};
use std::time::Duration;

fn allowed_list(pid: u32) -> String {
    ecosched_testkit::live::allowed_list(pid).unwrap()
}

/// Pin process `pid`'s task to CPU 0 by a plan, as a policy would.
fn pin_to_cpu0(platform: &mut LinuxPlatform, pid: u32) {
    let snapshot = platform.observe().unwrap();
    let task = snapshot.tasks.iter().find(|t| t.id.pid == pid).unwrap().id;
    let plan = Plan {
        task_cpus: [(task, CpuSet::single(CpuId(0)))].into(),
        ..Plan::default()
    };
    let report = platform.apply(&plan).unwrap();
    assert!(report.vanished.is_empty());
}

#[test]
#[ignore = "live: real processes managed by a LinuxPlatform on this machine"]
fn a_panic_mid_run_still_puts_affinity_back() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    let options = options_in(state.path());
    let mut platform = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options)
        .build()
        .unwrap();
    platform.start(&["sleep".into(), "5".into()]).unwrap();
    let pid = platform.child_pid().unwrap();
    let original = allowed_list(pid);
    pin_to_cpu0(&mut platform, pid);
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

/// A child forked after its parent was pinned starts pinned; the undo
/// gives it its parent's original CPUs, not the pin it inherited (else a
/// Slurm job's worker would keep its confined CPUs after `job-end`).
#[test]
#[ignore = "live: python3, and root for the run's cgroups"]
fn a_child_born_under_a_pin_gets_the_original_cpus_back() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    let mut platform = python_run(
        state.path(),
        "import subprocess, time\n\
         time.sleep(0.5)\n\
         subprocess.Popen(['sleep', '5']).wait()",
    );
    let pid = platform.child_pid().unwrap();
    let original = allowed_list(pid);
    pin_to_cpu0(&mut platform, pid);
    // The child is born pinned and seen by the next observation.
    let mut child = None;
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(50));
        let snapshot = platform.observe().unwrap();
        // `python3` may be a shim whose helpers come and go: the child is
        // the one running `sleep`.
        child = snapshot.tasks.iter().map(|t| t.id.pid).find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "sleep")
        });
        if child.is_some() {
            break;
        }
    }
    let child = child.expect("the python parent forks a child");
    assert_eq!(allowed_list(child), "0", "inherited the pin");
    drop(platform);
    assert_eq!(
        allowed_list(child),
        original,
        "the undo gave the child its CPUs back"
    );
    for p in [child, pid] {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(p as i32),
            nix::sys::signal::SIGKILL,
        );
    }
    std::thread::sleep(Duration::from_millis(50));
}

#[test]
#[ignore = "live: real processes managed by a LinuxPlatform on this machine"]
fn a_plan_naming_a_task_that_is_not_managed_is_refused() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    let options = options_in(state.path());
    let mut platform = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options)
        .build()
        .unwrap();
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
    // The command has exited by now but is not reaped: the undo must
    // still remove the run's cgroup.
    let end = platform.finish(false).unwrap();
    assert!(end.restore.failed.is_empty(), "{:?}", end.restore);
}

/// Options for a test's platform. The tests of this module run in one
/// process, and a run's cgroup is named `<cgroup_name>-<pid>`: each test
/// names its own (after its state directory), or they would share one.
fn options_in(state: &std::path::Path) -> LinuxOptions {
    let unique = state.file_name().unwrap().to_string_lossy();
    LinuxOptions {
        state_dir: state.to_path_buf(),
        cgroup_name: format!("ecosched-test{}", unique.trim_start_matches('.')),
        ..LinuxOptions::default()
    }
}

fn platform_in(state: &std::path::Path) -> LinuxPlatform {
    LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options_in(state))
        .build()
        .unwrap()
}

/// The tasks a snapshot reports as exited.
fn exits(s: &Snapshot) -> impl Iterator<Item = &TaskSample> {
    s.tasks.iter().filter(|t| t.state == TaskState::Exited)
}

/// A platform running `python3 -c script`.
fn python_run(state: &std::path::Path, script: &str) -> LinuxPlatform {
    let mut platform = platform_in(state);
    platform
        .start(&["python3".into(), "-c".into(), script.into()])
        .unwrap();
    platform
}

#[test]
#[ignore = "live: python3, and root for the run's cgroups"]
fn every_thread_of_a_process_shares_the_leaders_process_id() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    let mut platform = platform_in(state.path());
    // Threads started a moment after the leader, so their own start times
    // differ from its (clock ticks are 10 ms).
    let script = "import threading, time\n\
                  time.sleep(0.1)\n\
                  ts = [threading.Thread(target=time.sleep, args=(2,)) for _ in range(3)]\n\
                  [t.start() for t in ts]\n\
                  [t.join() for t in ts]\n";
    platform
        .start(&["python3".into(), "-c".into(), script.into()])
        .unwrap();
    // The process with the threads (python3 may be behind a launcher):
    // the one whose TGID four live tasks have.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    let (snapshot, tgid) = loop {
        let s = platform.observe().unwrap();
        let found = s.tasks.iter().map(|t| t.process.tgid).find(|g| {
            s.tasks
                .iter()
                .filter(|t| t.process.tgid == *g && t.state != TaskState::Exited)
                .count()
                >= 4
        });
        if let Some(g) = found {
            break (s, g);
        }
        assert!(std::time::Instant::now() < until, "threads never appeared");
        std::thread::sleep(Duration::from_millis(20));
    };
    let live: Vec<_> = snapshot
        .tasks
        .iter()
        .filter(|t| t.state != TaskState::Exited)
        .collect();
    let leader = live.iter().find(|t| t.id.pid == tgid).unwrap();
    let threads: Vec<_> = live
        .iter()
        .filter(|t| t.process.tgid == tgid && t.id.pid != tgid)
        .collect();
    assert!(threads.len() >= 3, "{:?}", snapshot.tasks);
    assert_eq!(leader.process, leader.id.as_process());
    for t in &threads {
        assert_eq!(t.process, leader.id.as_process(), "thread {}", t.id);
    }
    assert!(
        threads
            .iter()
            .any(|t| t.id.start_ticks != leader.id.start_ticks),
        "a thread started later than the leader (else the test proves nothing)"
    );
    platform.finish(true).unwrap();
}

#[test]
#[ignore = "live: real processes managed by a LinuxPlatform on this machine"]
fn snapshots_carry_the_load_average() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    let mut platform = platform_in(state.path());
    platform.start(&["sleep".into(), "1".into()]).unwrap();
    let load = platform.observe().unwrap().load_avg.unwrap();
    let text = std::fs::read_to_string("/proc/loadavg").unwrap();
    let fields: Vec<&str> = text.split_whitespace().collect();
    let (_, total) = fields[3].split_once('/').unwrap();
    let total: u32 = total.parse().unwrap();
    // Live figures move between the two reads; the task count barely.
    assert!(load.runnable >= 1, "{load:?}");
    assert!(load.total.abs_diff(total) < 50, "{load:?} vs {text}");
    assert!(load.one >= 0.0 && load.five >= 0.0 && load.fifteen >= 0.0);
    platform.finish(true).unwrap();
}

/// A platform running `sh -c script`.
fn shell_run(state: &std::path::Path, script: &str) -> LinuxPlatform {
    let mut platform = platform_in(state);
    platform
        .start(&["sh".into(), "-c".into(), script.into()])
        .unwrap();
    platform
}

/// Observe every `step_ms` until the command ends: how many exits were
/// seen, and the largest size each of the platform's per-task maps reached.
fn largest_state_until_done(
    platform: &mut LinuxPlatform,
    step_ms: u64,
) -> (usize, std::collections::BTreeMap<&'static str, usize>) {
    let mut largest = std::collections::BTreeMap::new();
    let mut exited = 0;
    while !platform.finished() {
        platform.advance(Duration::from_millis(step_ms)).unwrap();
        exited += exits(&platform.observe().unwrap()).count();
        for (k, n) in platform.state_sizes() {
            let e = largest.entry(k).or_default();
            *e = n.max(*e);
        }
    }
    (exited, largest)
}

#[test]
#[ignore = "live: real processes managed by a LinuxPlatform on this machine"]
fn state_stays_bounded_over_many_short_lived_children() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    let mut platform = shell_run(state.path(), "for i in $(seq 150); do sleep 0.01; done");
    let (mut exited, largest) = largest_state_until_done(&mut platform, 5);
    exited += exits(&platform.observe().unwrap()).count();
    // Enough children were seen for unbounded maps to show.
    assert!(exited >= 50, "only {exited} exits seen");
    for (k, n) in &largest {
        assert!(*n <= 8, "{k} grew to {n} over {exited} exits: {largest:?}");
    }
    for (k, n) in platform.state_sizes() {
        assert!(n <= 2, "{k} holds {n} after the run");
    }
    platform.finish(false).unwrap();
}

/// A mounted cgroup hierarchy that accounts CPU time.
fn accounting_hierarchy() -> std::path::PathBuf {
    [
        "sys/fs/cgroup/cpuacct",
        "sys/fs/cgroup/cpu,cpuacct",
        "sys/fs/cgroup/unified",
    ]
    .iter()
    .map(|d| std::path::Path::new("/").join(d))
    .find(|d| d.join("cgroup.procs").exists())
    .expect("a cgroup hierarchy that accounts CPU time")
}

/// A group of real sleeping processes watched two ways at once: through
/// its cgroup's CPU time (no thread read while it has not moved, the last
/// samples copied) and by reading every thread at every observation. Both
/// report the same tasks, states and counts at every observation, through
/// quiet intervals, exits and a newcomer.
#[test]
#[ignore = "live: root and a cgroup hierarchy that accounts CPU time"]
fn the_cheap_path_reports_what_reading_every_thread_reports() {
    use std::io::Write;
    let _turn = live_turn();
    let dir = accounting_hierarchy().join(format!("ecosched-cheap-{}", std::process::id()));
    std::fs::create_dir(&dir).unwrap();
    // The shell joins the group, then forks its sleepers there on a line
    // from the test, and one more on a second line.
    let mut shell = std::process::Command::new("sh")
        .args([
            "-c",
            "read x; for i in $(seq 30); do sleep 30 & done; read x; sleep 30 & wait",
        ])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::fs::write(dir.join("cgroup.procs"), shell.id().to_string()).unwrap();
    let mut input = shell.stdin.take().unwrap();
    input.write_all(b"go\n").unwrap();
    let procs = dir.join("cgroup.procs");
    let members = move || {
        std::fs::read_to_string(&procs)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect::<Vec<u32>>()
    };
    let count = |want: usize| {
        for _ in 0..100 {
            if members().len() >= want {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    count(31);
    let (state_a, state_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let build = |tag: &str, state: &std::path::Path| {
        let members = members.clone();
        LinuxPlatform::builder(ecosched_linux::FsRoot::live())
            .options(&options_in(state))
            .attach(tag, Box::new(members), stop.clone())
            .build()
            .unwrap()
    };
    let mut cheap = build("cheap", state_a.path());
    assert!(
        cheap.follow_cgroup(&dir),
        "{} accounts CPU time",
        dir.display()
    );
    let mut full = build("full", state_b.path());
    let both = |cheap: &mut LinuxPlatform, full: &mut LinuxPlatform, what: &str| {
        let a = cheap.observe().unwrap();
        let b = full.observe().unwrap();
        // Starts and ends are given on each platform's own clock, which
        // started a few ms after the other's.
        let from_zero = |s: &Snapshot| {
            let mut tasks = s.tasks.clone();
            for t in &mut tasks {
                t.started_s = 0.0;
                t.finished_s = t.finished_s.map(|_| 0.0);
            }
            tasks
        };
        assert_eq!(from_zero(&a), from_zero(&b), "{what}");
        a
    };
    assert_eq!(both(&mut cheap, &mut full, "first").tasks.len(), 31);
    for round in 0..5 {
        let quiet = both(&mut cheap, &mut full, &format!("quiet round {round}"));
        assert!(quiet.tasks.iter().all(|t| t.counters.on_cpu_ns == Some(0)));
    }
    let skipped = cheap.skipped_reads();
    assert!(skipped >= 4, "only {skipped} looks skipped the threads");
    // Three sleepers killed: the shell reaps them (and runs).
    let sleepers: Vec<u32> = members().into_iter().filter(|&p| p != shell.id()).collect();
    for &pid in &sleepers[..3] {
        let pid = nix::unistd::Pid::from_raw(pid as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::SIGKILL).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let after = both(&mut cheap, &mut full, "after the kills");
    assert_eq!(exits(&after).count(), 3);
    input.write_all(b"go\n").unwrap();
    count(29);
    let born = both(&mut cheap, &mut full, "after a birth");
    assert_eq!(born.tasks.len(), 29);
    both(&mut cheap, &mut full, "quiet again");
    assert!(cheap.skipped_reads() > skipped);
    let _ = cheap.release();
    let _ = full.release();
    for pid in members() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::SIGKILL,
        );
    }
    let _ = shell.wait();
    std::thread::sleep(Duration::from_millis(100));
    let _ = std::fs::remove_dir(&dir);
}

/// A daemon group's process whose parent is outside the group (systemd,
/// say) is reaped at no CPU cost to the group: the platform, which skips
/// reading a group none of whose tasks ran, must still see it go rather
/// than list the zombie forever.
#[test]
#[ignore = "live: root and a cgroup hierarchy that accounts CPU time"]
fn a_group_member_reaped_from_outside_is_forgotten() {
    let _turn = live_turn();
    let acct = accounting_hierarchy();
    let state = tempfile::tempdir().unwrap();
    let dir = acct.join(format!("ecosched-zombie-{}", std::process::id()));
    std::fs::create_dir(&dir).unwrap();
    // Spawned by this test, outside the group, then moved into it.
    let mut member = std::process::Command::new("sleep")
        .arg("0.3")
        .spawn()
        .unwrap();
    let pid = member.id();
    std::fs::write(dir.join("cgroup.procs"), pid.to_string()).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut platform = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options_in(state.path()))
        .attach("zombie", Box::new(move || vec![pid]), stop)
        .build()
        .unwrap();
    assert!(
        platform.follow_cgroup(&dir),
        "{} accounts CPU time",
        dir.display()
    );
    assert_eq!(platform.observe().unwrap().tasks.len(), 1);
    // It exits; unreaped, it is a zombie, and is read as exited.
    let zombie = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z'))
        })
    };
    while !zombie() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let seen = platform.observe().unwrap();
    assert!(exits(&seen).any(|t| t.id.pid == pid), "{:?}", seen.tasks);
    // Reaped by its parent, this test: no CPU time in the group.
    member.wait().unwrap();
    platform.observe().unwrap();
    let left = platform.task_count();
    let _ = platform.release();
    let _ = std::fs::remove_dir(&dir);
    assert_eq!(left, 0, "the reaped member is still listed");
}

/// A daemon pins long-lived parents whose children come and go: each child
/// is journalled (it inherits the pin), and the journal must drop them as
/// they exit rather than grow with the run.
#[test]
#[ignore = "live: real processes managed by a LinuxPlatform on this machine"]
fn the_journal_stays_bounded_while_a_pinned_parent_forks_many_children() {
    let _turn = live_turn();
    use ecosched_linux::journal::COMPACT_AT_LEAST;
    let state = tempfile::tempdir().unwrap();
    let mut platform = shell_run(
        state.path(),
        "sleep 0.3; for i in $(seq 500); do sleep 0.002; done",
    );
    let pid = platform.child_pid().unwrap();
    pin_to_cpu0(&mut platform, pid);
    let (exited, sizes) = largest_state_until_done(&mut platform, 2);
    let largest = sizes["journal"];
    assert!(
        exited >= 3 * COMPACT_AT_LEAST,
        "only {exited} children seen: too few for growth to show"
    );
    assert!(
        largest <= COMPACT_AT_LEAST,
        "the journal grew to {largest} records over {exited} exited children"
    );
    platform.finish(false).unwrap();
}

#[test]
#[ignore = "live: real processes managed by a LinuxPlatform on this machine"]
fn a_preset_pmu_reaches_the_capabilities_only_on_its_own_cpu() {
    let _turn = live_turn();
    use ecosched_linux::perf::FakePerf;
    use ecosched_model::{CounterKind, PmuEvent, PmuSpec};
    let spec = PmuSpec {
        cpuid: Some("GenuineIntel-6-0F".into()),
        rmids: None,
        counters: 2,
        fixed: vec![],
        events: vec![PmuEvent {
            kind: CounterKind::MemTransactions,
            name: "BUS_TRANS_MEM.ALL_AGENTS".into(),
            raw: Some(0xe06f),
            via: ecosched_model::Via::Perf,
        }],
    };
    let state = tempfile::tempdir().unwrap();
    let options = options_in(state.path());
    let q6600 =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cpuinfo-core2-q6600");
    let core2 = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options)
        .perf(Box::new(FakePerf::new()))
        .pmu(Some(&spec))
        .cpu_id_root(ecosched_linux::FsRoot::recorded(q6600))
        .build()
        .unwrap();
    assert!(core2
        .capabilities()
        .counters
        .contains(&CounterKind::MemTransactions));
    drop(core2);
    // This machine is not a Core 2 (nor is CI's): nothing opened, and said.
    let here = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options)
        .perf(Box::new(FakePerf::new()))
        .pmu(Some(&spec))
        .build()
        .unwrap();
    assert!(!here
        .capabilities()
        .counters
        .contains(&CounterKind::MemTransactions));
    let notices = here.notices().join("\n");
    assert!(
        notices.contains("model-specific PMU events not opened") && notices.contains("6-0F"),
        "{notices}"
    );
}

/// While none of the run's threads runs, the run's cgroup says
/// so and no thread is read, yet every observation still reports every
/// thread, asleep and counting zero; when they wake, they are read again.
#[test]
#[ignore = "live: python3, and root for the run's cgroups"]
fn sleeping_threads_are_reported_without_being_read() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    let mut platform = python_run(
        state.path(),
        "import threading, time\n\
             ts = [threading.Thread(target=time.sleep, args=(4,)) for _ in range(20)]\n\
             [t.start() for t in ts]\n\
             [t.join() for t in ts]\n",
    );
    // The threads start, then sleep.
    std::thread::sleep(Duration::from_millis(1000));
    platform.observe().unwrap();
    let mut quiet = 0;
    for _ in 0..4 {
        platform.advance(Duration::from_millis(250)).unwrap();
        let s = platform.observe().unwrap();
        assert_eq!(s.tasks.len(), 21, "{:?}", s.tasks);
        if s.tasks.iter().all(|t| t.counters.on_cpu_ns == Some(0)) {
            quiet += 1;
            assert!(s.tasks.iter().all(|t| t.state == TaskState::Sleeping));
        }
    }
    assert!(quiet >= 2, "only {quiet} of 4 intervals without a run");
    assert!(
        platform.skipped_reads() >= 2,
        "{} reads skipped",
        platform.skipped_reads()
    );
    // They wake and exit: read again, every exit reported.
    let mut exited = 0;
    while !platform.finished() {
        platform.advance(Duration::from_millis(100)).unwrap();
        let s = platform.observe().unwrap();
        exited += exits(&s).count();
    }
    let s = platform.observe().unwrap();
    exited += exits(&s).count();
    assert_eq!(exited, 21);
    platform.finish(false).unwrap();
}

/// A zombie stays in `/proc` until its parent reaps it; its exit is
/// reported once, at the first reading that shows it finished, and never
/// again: not when it is reaped either.
#[test]
#[ignore = "live: python3, and root for the run's cgroups"]
fn a_zombie_exit_is_reported_once() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    let mut platform = python_run(
        state.path(),
        "import subprocess, time\n\
             p = subprocess.Popen(['sleep', '0.5'])\n\
             time.sleep(2)\n\
             p.wait()\n",
    );
    let mut exit_counts: std::collections::BTreeMap<_, usize> = Default::default();
    let mut seen = std::collections::BTreeSet::new();
    let mut seen_after_exit = Vec::new();
    let mut seen_sleep = false;
    loop {
        platform.advance(Duration::from_millis(100)).unwrap();
        let s = platform.observe().unwrap();
        for t in &s.tasks {
            seen.insert(t.id);
            seen_sleep |= t.name.starts_with("sleep");
            if exit_counts.contains_key(&t.id) {
                seen_after_exit.push(t.id);
            }
        }
        for t in exits(&s) {
            *exit_counts.entry(t.id).or_default() += 1;
        }
        if platform.finished() {
            break;
        }
    }
    let s = platform.observe().unwrap();
    for t in exits(&s) {
        *exit_counts.entry(t.id).or_default() += 1;
    }
    platform.finish(false).unwrap();
    assert!(seen_sleep, "the child was never seen");
    // Every task seen (python3, sleep, and whatever helpers a loaded
    // machine lets us glimpse) exits exactly once, and is not reported after.
    assert!(seen.len() >= 2, "{seen:?}");
    assert_eq!(
        exit_counts.keys().copied().collect::<Vec<_>>(),
        seen.iter().copied().collect::<Vec<_>>()
    );
    assert!(exit_counts.values().all(|&n| n == 1), "{exit_counts:?}");
    assert!(seen_after_exit.is_empty(), "{seen_after_exit:?}");
}

/// A forked child that execs another program is named after that program
/// once it has: a shell's children first read as `sh`.
#[test]
#[ignore = "live: python3, and root for the run's cgroups"]
fn a_child_is_renamed_when_it_execs() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    // The child execs once the test has seen it (the flag file): a loaded
    // machine can take a second to start python3.
    let flag = state.path().join("exec-now");
    let script = format!(
        "import os, time\n\
         pid = os.fork()\n\
         if pid == 0:\n    \
             while not os.path.exists({flag:?}): time.sleep(0.01)\n    \
             os.execvp('sleep', ['sleep', '1'])\n\
         os.waitpid(pid, 0)\n",
        flag = flag.to_string_lossy()
    );
    let mut platform = python_run(state.path(), &script);
    // `python3` may be a shell shim (pyenv) with helpers of its own: the
    // child is the task that reads as python3 besides the command itself,
    // and it is looked up again by its id.
    let parent = platform.child_pid().unwrap();
    let name_of = |platform: &mut LinuxPlatform, want: &dyn Fn(&TaskSample) -> bool| {
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < until {
            platform.advance(Duration::from_millis(50)).unwrap();
            let s = platform.observe().unwrap();
            if let Some(t) = s.tasks.iter().find(|t| want(t)) {
                return Some((t.id, t.name.clone()));
            }
        }
        None
    };
    let child = name_of(&mut platform, &|t| {
        t.id.pid != parent && t.name.starts_with("python3:")
    });
    std::fs::write(&flag, "").unwrap();
    let after = child.as_ref().and_then(|(id, _)| {
        name_of(&mut platform, &|t| {
            t.id == *id && t.name.starts_with("sleep:")
        })
    });
    platform.finish(true).unwrap();
    assert!(child.is_some(), "the forked child was never seen");
    assert!(
        after.is_some(),
        "{child:?} was never renamed after its exec"
    );
}
