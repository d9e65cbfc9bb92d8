//! Timed gang schedules on this machine, with real busy processes: the
//! cgroup freezer holds a group still in its frozen slots (its on-CPU time
//! does not move) and lets it run in its own; slot switches happen on time
//! between decisions; and everything is thawed and put back after the run,
//! and after a SIGKILL by `restore`. Needs root and a cgroup freezer (v1
//! `freezer` or cgroup v2), as CI has.

use crate::support::{child, live_turn};
use ecosched_linux::mounts::MountTable;
use ecosched_linux::platform::{LinuxOptions, LinuxPlatform};
use ecosched_linux::FsRoot;
use ecosched_model::{GangGroup, GangSchedule, GangSlot, Plan, Platform, TaskId};
use ecosched_testkit::live::{descendants, freezer_cgroup, kill, on_cpu_ns, Reap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Two busy loops (subshells) under one `sh`.
const TWO_LOOPS: &str = "while :; do :; done & while :; do :; done & wait";

/// Whether a group's state file says it is frozen or being frozen (v1's
/// `FREEZING` is neither thawed nor yet frozen).
fn frozen(state: &str) -> bool {
    !matches!(state.trim(), "THAWED" | "0")
}

fn options(state: &Path, name: &str) -> LinuxOptions {
    LinuxOptions {
        state_dir: state.to_path_buf(),
        // Tests in one binary share a PID: keep their cgroups apart.
        cgroup_name: name.into(),
        ..LinuxOptions::default()
    }
}

/// Start the two loops and wait until the platform sees them.
fn start_loops(platform: &mut LinuxPlatform) -> (TaskId, TaskId) {
    platform
        .start(&["sh".into(), "-c".into(), TWO_LOOPS.into()])
        .unwrap();
    let sh = platform.child_pid().unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let snap = platform.observe().unwrap();
        let loops: Vec<TaskId> = snap
            .tasks
            .iter()
            .filter(|t| t.id.pid != sh)
            .map(|t| t.id)
            .collect();
        if loops.len() == 2 {
            return (loops[0], loops[1]);
        }
        assert!(
            Instant::now() < until,
            "the loops did not appear: {loops:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn alternate(a: TaskId, b: TaskId, slot_ms: u64) -> GangSchedule {
    GangSchedule {
        groups: vec![
            GangGroup {
                name: "a".into(),
                tasks: vec![a],
            },
            GangGroup {
                name: "b".into(),
                tasks: vec![b],
            },
        ],
        slots: vec![
            GangSlot {
                duration_us: slot_ms * 1000,
                run: vec![0],
            },
            GangSlot {
                duration_us: slot_ms * 1000,
                run: vec![1],
            },
        ],
    }
}

/// Kills every descendant of a command however the test ends: the loops a
/// shell forks outlive the shell, and a failure before their ids are known
/// must not leave them spinning.
struct ReapTree(u32);

impl Drop for ReapTree {
    fn drop(&mut self) {
        let mut tree = descendants(self.0);
        tree.push(self.0);
        kill(&tree);
    }
}

/// One look at both groups from outside.
#[derive(Debug, Clone)]
struct Look {
    at: Instant,
    a_frozen: bool,
    a_cpu: u64,
    b_frozen: bool,
    b_cpu: u64,
}

#[test]
#[ignore = "live: root and a cgroup freezer (v1 freezer or cgroup v2)"]
fn frozen_slots_hold_a_group_still_and_slots_switch_on_time() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    let mut platform = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options(state.path(), "ecosched-gang"))
        .build()
        .unwrap();
    let (a, b) = start_loops(&mut platform);
    let _reap = Reap(vec![a.pid, b.pid, platform.child_pid().unwrap()]);
    let (orig_a, _) = freezer_cgroup(a.pid).unwrap();
    const SLOT_MS: u64 = 100;
    let plan = Plan {
        gang_schedule: Some(alternate(a, b, SLOT_MS)),
        ..Plan::default()
    };
    let report = platform.apply(&plan).unwrap();
    assert!(report.vanished.is_empty());
    let (dir_a, file) = freezer_cgroup(a.pid).unwrap();
    let (dir_b, _) = freezer_cgroup(b.pid).unwrap();
    let run_dir = format!("ecosched-gang-{}", std::process::id());
    assert!(dir_a.ends_with(format!("{run_dir}/a")), "{dir_a:?}");
    assert!(dir_b.ends_with(format!("{run_dir}/b")), "{dir_b:?}");

    // Watch both groups from another thread while the platform advances.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        let (sa, sb) = (dir_a.join(file), dir_b.join(file));
        std::thread::spawn(move || {
            let mut looks = Vec::new();
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let a_frozen = frozen(&std::fs::read_to_string(&sa).unwrap());
                let a_cpu = on_cpu_ns(a.pid).unwrap();
                let b_frozen = frozen(&std::fs::read_to_string(&sb).unwrap());
                let b_cpu = on_cpu_ns(b.pid).unwrap();
                looks.push(Look {
                    at: Instant::now(),
                    a_frozen,
                    a_cpu,
                    b_frozen,
                    b_cpu,
                });
                std::thread::sleep(Duration::from_millis(1));
            }
            looks
        })
    };
    // Decisions every 350 ms: slot switches happen in between.
    for _ in 0..4 {
        platform.advance(Duration::from_millis(350)).unwrap();
        platform.observe().unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let looks = watcher.join().unwrap();

    // The two gangs never run at once: a switch freezes before it thaws.
    assert!(
        looks.iter().all(|l| l.a_frozen || l.b_frozen),
        "both groups thawed at once"
    );
    // Episodes: maximal runs of looks with the same state of group a.
    let mut episodes: Vec<&[Look]> = looks.chunk_by(|x, y| x.a_frozen == y.a_frozen).collect();
    // The first and last may be cut short by the watcher's start and end.
    episodes.remove(0);
    episodes.pop();
    assert!(episodes.len() >= 8, "{} slot switches seen", episodes.len());
    let mut lengths_ms = Vec::new();
    for ep in &episodes {
        let (first, last) = (&ep[0], &ep[ep.len() - 1]);
        lengths_ms.push((last.at - first.at).as_secs_f64() * 1e3);
        if first.a_frozen {
            // Once FROZEN (v1 passes through FREEZING, and a busy machine
            // may take a while to get a to its freezing point), a does not
            // run: from 20 ms into the episode on, its CPU time stands still.
            let settle = first.at + Duration::from_millis(20);
            let settled: Vec<&Look> = ep.iter().filter(|l| l.at >= settle).collect();
            if let (Some(s), Some(e)) = (settled.first(), settled.last()) {
                assert_eq!(s.a_cpu, e.a_cpu, "a ran while FROZEN");
            }
            assert!(last.b_cpu > first.b_cpu, "b did not run in its slot");
        } else {
            assert!(last.a_cpu > first.a_cpu, "a did not run in its slot");
        }
        // Some real time on the CPU in its 100 ms slot (the machine may
        // be busy with other work; a frozen group gets none at all).
        let ran = |l: &Look| if first.a_frozen { l.b_cpu } else { l.a_cpu };
        assert!(
            ran(last) - ran(first) > 5_000_000,
            "the running group got {} ms",
            (ran(last) - ran(first)) / 1_000_000
        );
    }
    // Slot length as seen from outside (1 ms polls).
    let worst = lengths_ms
        .iter()
        .map(|l| (l - SLOT_MS as f64).abs())
        .fold(0.0, f64::max);
    let stats = platform.gang_switch_stats();
    eprintln!(
        "gang slots of {SLOT_MS} ms seen as {lengths_ms:.1?} ms; worst deviation {worst:.1} ms; \
         platform: {} switches, mean {:.0} µs late, max {} µs late",
        stats.switches, stats.mean_late_us, stats.max_late_us
    );
    // A non-realtime waker on a 2-core machine saturated by other work can
    // wake 22 ms late; a schedule that stopped switching is off by whole
    // slots.
    assert!(worst < 30.0, "slot lengths {lengths_ms:?}");
    assert!(stats.max_late_us < 30_000, "{stats:?}");

    // Ending the schedule thaws both groups.
    let end = Plan {
        gang_schedule: Some(GangSchedule::end()),
        ..Plan::default()
    };
    platform.apply(&end).unwrap();
    let (ca, cb) = (on_cpu_ns(a.pid).unwrap(), on_cpu_ns(b.pid).unwrap());
    platform.advance(Duration::from_millis(250)).unwrap();
    assert!(on_cpu_ns(a.pid).unwrap() > ca && on_cpu_ns(b.pid).unwrap() > cb);

    let end = platform.finish(true).unwrap();
    assert!(end.restore.failed.is_empty(), "{:?}", end.restore);
    for t in [a, b] {
        assert_eq!(freezer_cgroup(t.pid).unwrap().0, orig_a, "back home");
    }
    assert!(!dir_a.exists() && !dir_b.exists() && !dir_a.parent().unwrap().exists());
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
}

#[test]
#[ignore = "live: real processes managed by a LinuxPlatform on this machine"]
fn a_schedule_naming_a_stranger_or_a_short_slot_is_refused_before_anything_changes() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    let mut platform = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options(state.path(), "ecosched-refuse"))
        .build()
        .unwrap();
    let (a, b) = start_loops(&mut platform);
    let _reap = Reap(vec![a.pid, b.pid, platform.child_pid().unwrap()]);
    let before = freezer_cgroup(a.pid).unwrap().0;
    let journal_lines = || {
        let journal = std::fs::read_dir(state.path())
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("journal-"))
            .unwrap();
        std::fs::read_to_string(journal.path())
            .unwrap()
            .lines()
            .count()
    };
    // The header and the run's accounting cgroup, made at start.
    let journalled = journal_lines();
    let stranger = TaskId {
        pid: 1,
        start_ticks: 0,
    };
    for (schedule, why) in [
        (alternate(a, stranger, 100), "does not manage"),
        (alternate(a, b, 2), "at least"),
        (alternate(a, a, 100), "more than one"),
    ] {
        let err = platform
            .apply(&Plan {
                gang_schedule: Some(schedule),
                ..Plan::default()
            })
            .unwrap_err()
            .to_string();
        assert!(err.contains(why), "{err}");
        assert_eq!(freezer_cgroup(a.pid).unwrap().0, before, "nothing moved");
    }
    assert!(platform.capabilities().gang);
    assert_eq!(journal_lines(), journalled, "nothing journalled");
    platform.finish(true).unwrap();
}

/// A platform carrying out a gang schedule until it is killed: run and
/// SIGKILLed by [`after_sigkill_restore_thaws_every_group_and_moves_tasks_back`]
/// as `children::gang_child_until_killed`.
pub fn run_until_killed() {
    let state = PathBuf::from(std::env::var("GANG_STATE").unwrap());
    let mut platform = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options(&state, "ecosched-killed"))
        .build()
        .unwrap();
    let (a, b) = start_loops(&mut platform);
    let _reap = Reap(vec![a.pid, b.pid, platform.child_pid().unwrap()]);
    platform
        .apply(&Plan {
            gang_schedule: Some(alternate(a, b, 50)),
            ..Plan::default()
        })
        .unwrap();
    let pids = std::env::var("GANG_PIDS").unwrap();
    std::fs::write(format!("{pids}.tmp"), format!("{} {}", a.pid, b.pid)).unwrap();
    std::fs::rename(format!("{pids}.tmp"), &pids).unwrap();
    loop {
        platform.advance(Duration::from_millis(200)).unwrap();
    }
}

#[test]
#[ignore = "live: root and a cgroup freezer (v1 freezer or cgroup v2)"]
fn after_sigkill_restore_thaws_every_group_and_moves_tasks_back() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let pids_file = scratch.path().join("pids");
    let home = freezer_cgroup(std::process::id()).unwrap().0;
    let mut child = child("gang_child_until_killed")
        .env("GANG_STATE", state.path())
        .env("GANG_PIDS", &pids_file)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while !pids_file.exists() {
        assert!(Instant::now() < until, "the child never started its gangs");
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = std::fs::read_to_string(&pids_file).unwrap();
    let pids: Vec<u32> = text.split(' ').map(|p| p.parse().unwrap()).collect();
    let sh: Vec<u32> = pids
        .iter()
        .filter_map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let after = &stat[stat.rfind(')')? + 2..];
            after.split(' ').nth(1)?.parse().ok()
        })
        .collect();
    let _reap = Reap(pids.iter().chain(&sh).copied().collect());
    let dirs: Vec<PathBuf> = pids.iter().map(|&p| freezer_cgroup(p).unwrap().0).collect();
    let run_dir = dirs[0].parent().unwrap().to_path_buf();
    assert!(
        run_dir.ends_with(format!("ecosched-killed-{}", child.id())),
        "{run_dir:?}"
    );
    std::thread::sleep(Duration::from_millis(120));
    child.kill().unwrap(); // SIGKILL: no chance to thaw anything.
    child.wait().unwrap();
    // One group is left frozen for good.
    let file = freezer_cgroup(pids[0]).unwrap().1;
    let states: Vec<bool> = dirs
        .iter()
        .map(|d| frozen(&std::fs::read_to_string(d.join(file)).unwrap()))
        .collect();
    assert_eq!(states.iter().filter(|f| **f).count(), 1, "{states:?}");
    let stuck = pids[states.iter().position(|f| *f).unwrap()];
    let cpu = on_cpu_ns(stuck).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(on_cpu_ns(stuck).unwrap(), cpu, "frozen after the kill");

    let outcomes = ecosched_linux::journal::restore(state.path(), &FsRoot::live()).unwrap();
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    for &p in &pids {
        assert_eq!(freezer_cgroup(p).unwrap().0, home, "task {p} moved back");
    }
    let cpu = on_cpu_ns(stuck).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    assert!(on_cpu_ns(stuck).unwrap() > cpu, "thawed by restore");
    assert!(!run_dir.exists(), "{run_dir:?} removed");
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
}

/// A busy loop started by the test itself, with its identity.
fn busy() -> (std::process::Child, TaskId) {
    let child = std::process::Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let pid = child.id();
    let start_ticks = ecosched_linux::identity::start_ticks(&FsRoot::live(), pid).unwrap();
    (child, TaskId { pid, start_ticks })
}

/// Drive a [`GangRunner`] with `forced` over two busy loops in 60 ms slots
/// for 1.2 s and check, in at least three slots where a loop ran, that the
/// frozen one did not; then undo the
/// journal and check both run again. Returns the runner's description.
fn exercise(forced: ecosched_linux::freezer::ForcedMechanism, name: &str) -> String {
    use ecosched_linux::freezer::{GangContext, GangRunner};
    use ecosched_linux::journal::Journal;
    let state = tempfile::tempdir().unwrap();
    let mut journal = Journal::create(state.path(), FsRoot::live()).unwrap();
    let mounts = MountTable::read(&FsRoot::live()).unwrap();
    let (mut ca, a) = busy();
    let (mut cb, b) = busy();
    let _reap = Reap(vec![a.pid, b.pid]);
    let mut runner = GangRunner::forcing(forced);
    let process_of = |t: TaskId| Some(t.as_process());
    let mut ctx = GangContext {
        journal: &mut journal,
        process_of: Box::new(process_of),
        base_name: format!("{name}-{}", std::process::id()),
        v2_cpuset_dir: None,
        mounts: &mounts,
    };
    runner.replace(&mut ctx, alternate(a, b, 60)).unwrap();
    let description = runner.describe();
    // A failed check still undoes the journal: nothing is left frozen or
    // behind in the cgroup tree for the next test.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut checked = 0;
        let until = Instant::now() + Duration::from_millis(1200);
        while Instant::now() < until {
            runner.tick(&mut ctx).unwrap();
            // The middle of a slot: which one runs?
            let due = runner.due().unwrap();
            let left = due.saturating_duration_since(Instant::now());
            if left < Duration::from_millis(45) {
                std::thread::sleep(left + Duration::from_millis(1));
                continue;
            }
            // A freeze completes when the task reaches its freezing point, and
            // on a loaded machine that can take a timeslice: look from 20 ms in.
            std::thread::sleep(Duration::from_millis(20));
            let before = (on_cpu_ns(a.pid).unwrap(), on_cpu_ns(b.pid).unwrap());
            std::thread::sleep(Duration::from_millis(15));
            let after = (on_cpu_ns(a.pid).unwrap(), on_cpu_ns(b.pid).unwrap());
            let (ran_a, ran_b) = (after.0 > before.0, after.1 > before.1);
            assert!(!(ran_a && ran_b), "both gangs ran in one slot");
            // On a loaded machine a runnable loop can go 15 ms without the CPU;
            // such a slot shows nothing either way and is not counted.
            if ran_a || ran_b {
                checked += 1;
            }
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
        checked
    }));
    drop(ctx);
    let report = journal.undo();
    let checked = outcome.unwrap_or_else(|p| std::panic::resume_unwind(p));
    assert!(checked >= 3, "only {checked} slots checked");
    assert!(report.failed.is_empty(), "{report:?}");
    let before = (on_cpu_ns(a.pid).unwrap(), on_cpu_ns(b.pid).unwrap());
    std::thread::sleep(Duration::from_millis(100));
    let after = (on_cpu_ns(a.pid).unwrap(), on_cpu_ns(b.pid).unwrap());
    assert!(
        after.0 > before.0 && after.1 > before.1,
        "both run after undo"
    );
    ca.kill().unwrap();
    cb.kill().unwrap();
    ca.wait().unwrap();
    cb.wait().unwrap();
    description
}

#[test]
#[ignore = "live: root and a cgroup freezer (v1 freezer or cgroup v2)"]
fn the_cgroup_v2_freezer_works_where_a_v2_tree_is_mounted() {
    let _turn = live_turn();
    let mounts = MountTable::read(&FsRoot::live()).unwrap();
    let Some(mount) = mounts.cgroup2().next().map(|m| m.rel().to_string()) else {
        return; // A v1-only machine: nothing to check.
    };
    let forced =
        ecosched_linux::freezer::ForcedMechanism::Freezer(ecosched_linux::freezer::FreezerMount {
            version: ecosched_linux::freezer::FreezerVersion::V2,
            mount: mount.clone(),
        });
    let description = exercise(forced, "ecosched-v2");
    assert!(description.contains("cgroup.freeze"), "{description}");
    let left: Vec<_> = std::fs::read_dir(format!("/{mount}"))
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name().to_string_lossy() == format!("ecosched-v2-{}", std::process::id())
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
#[ignore = "live: real busy processes stopped and continued by signals"]
fn without_a_freezer_stop_signals_carry_the_schedule() {
    let _turn = live_turn();
    let description = exercise(
        ecosched_linux::freezer::ForcedMechanism::Signals,
        "ecosched-sig",
    );
    assert!(description.contains("SIGSTOP"), "{description}");
}

#[test]
#[ignore = "live: root and a cgroup freezer (v1 freezer or cgroup v2)"]
fn a_panic_mid_schedule_thaws_everything() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    let mut platform = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options(state.path(), "ecosched-panic"))
        .build()
        .unwrap();
    let (a, b) = start_loops(&mut platform);
    let _reap = Reap(vec![a.pid, b.pid, platform.child_pid().unwrap()]);
    let home = freezer_cgroup(a.pid).unwrap().0;
    platform
        .apply(&Plan {
            gang_schedule: Some(alternate(a, b, 100)),
            ..Plan::default()
        })
        .unwrap();
    platform.advance(Duration::from_millis(30)).unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _owned = platform;
        panic!("a bug in a policy");
    }));
    assert!(outcome.is_err());
    for t in [a, b] {
        assert_eq!(freezer_cgroup(t.pid).unwrap().0, home);
    }
    let before = (on_cpu_ns(a.pid).unwrap(), on_cpu_ns(b.pid).unwrap());
    std::thread::sleep(Duration::from_millis(100));
    let after = (on_cpu_ns(a.pid).unwrap(), on_cpu_ns(b.pid).unwrap());
    assert!(after.0 > before.0 && after.1 > before.1, "both thawed");
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
}

#[test]
#[ignore = "live: root and a cgroup freezer (v1 freezer or cgroup v2)"]
fn a_task_forked_inside_a_group_but_named_by_none_is_not_frozen_with_it() {
    let _turn = live_turn();
    let state = tempfile::tempdir().unwrap();
    let mut platform = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options(state.path(), "ecosched-adopt"))
        .build()
        .unwrap();
    // The command forks one loop now and another two seconds later, when
    // it is itself in a gang group (a busy machine needs the margin to see
    // the first loop alone).
    let script = "while :; do :; done & sleep 2; while :; do :; done & wait";
    platform
        .start(&["sh".into(), "-c".into(), script.into()])
        .unwrap();
    let sh = platform.child_pid().unwrap();
    let _tree = ReapTree(sh);
    let loops = |platform: &mut LinuxPlatform| -> Vec<TaskId> {
        let snap = platform.observe().unwrap();
        snap.tasks
            .iter()
            .filter(|t| t.id.pid != sh && t.name.starts_with("sh:"))
            .filter(|t| t.state != ecosched_model::TaskState::Exited)
            .map(|t| t.id)
            .collect()
    };
    let until = Instant::now() + Duration::from_secs(10);
    let first = loop {
        if let [one] = loops(&mut platform)[..] {
            break one;
        }
        assert!(Instant::now() < until, "the first loop did not appear");
        std::thread::sleep(Duration::from_millis(10));
    };
    let snap = platform.observe().unwrap();
    let command = snap.tasks.iter().find(|t| t.id.pid == sh).unwrap().id;
    let mut reap = Reap(vec![first.pid, sh]);
    platform
        .apply(&Plan {
            gang_schedule: Some(alternate(command, first, 100)),
            ..Plan::default()
        })
        .unwrap();
    let second = loop {
        platform.advance(Duration::from_millis(50)).unwrap();
        if let Some(t) = loops(&mut platform).into_iter().find(|t| *t != first) {
            break t;
        }
        assert!(Instant::now() < until, "the second loop did not appear");
    };
    reap.0.push(second.pid);
    // Discovered, so moved out of the command's group into the run's own
    // directory, where nothing is frozen.
    let (dir, _) = freezer_cgroup(second.pid).unwrap();
    assert!(
        dir.ends_with(format!("ecosched-adopt-{}", std::process::id())),
        "{dir:?}"
    );
    // It runs through the command's frozen slots too.
    for _ in 0..6 {
        let before = on_cpu_ns(second.pid).unwrap();
        platform.advance(Duration::from_millis(50)).unwrap();
        assert!(
            on_cpu_ns(second.pid).unwrap() > before,
            "frozen with a gang"
        );
    }
    let end = platform.finish(true).unwrap();
    assert!(end.restore.failed.is_empty(), "{:?}", end.restore);
    assert!(!dir.exists());
}
