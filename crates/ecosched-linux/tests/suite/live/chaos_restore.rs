//! Chaos test of the restore journal: a worker process applies a plan the way `LinuxPlatform` does
//! — affinity of three real processes, a cpuset cgroup they are moved
//! into, cpufreq files, and a gang schedule carried out with the freezer —
//! journalling each change first, and is killed with `SIGKILL` at 50
//! random moments of that work. After each kill `journal::restore` must
//! put every affinity, cgroup membership, cpufreq value and freezer state
//! back, remove every cgroup it made, and leave the state directory empty.
//!
//! The worker is this test binary run again (`children::chaos_worker`,
//! ignored by a normal run). Its root is a tree whose `proc` and `sys/fs` are the live
//! ones (real tasks, real cgroups) and whose cpufreq is a fixture: this VM
//! has none. Needs root and a cgroup cpuset controller, like the other live
//! tests.

use crate::support::{child, live_turn, Reaped};
use ecosched_linux::cgroup::{CpusetMount, ManagedCpuset, Version};
use ecosched_linux::freezer::{GangContext, GangRunner};
use ecosched_linux::journal::{Change, Journal, RestoreOutcome};
use ecosched_linux::mounts::MountTable;
use ecosched_linux::{affinity, hints::HintFile, identity::start_ticks, FsRoot};
use ecosched_model::{CpuSet, GangGroup, GangSchedule, GangSlot, TaskId};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const POLICY: &str = "sys/devices/system/cpu/cpufreq/policy0";
const CPUFREQ: &[(&str, &str)] = &[
    ("scaling_governor", "ondemand"),
    ("scaling_setspeed", "<unsupported>"),
    ("scaling_min_freq", "800000"),
    ("scaling_max_freq", "2400000"),
];
const KILLS: usize = 50;

/// A root with the live `proc` and `sys/fs` and a fixture cpufreq.
fn mixed_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink("/proc", dir.path().join("proc")).expect("proc link");
    std::fs::create_dir_all(dir.path().join("sys")).expect("sys");
    std::os::unix::fs::symlink("/sys/fs", dir.path().join("sys/fs")).expect("sys/fs link");
    let policy = dir.path().join(POLICY);
    std::fs::create_dir_all(&policy).expect("policy dir");
    for (name, value) in CPUFREQ {
        std::fs::write(policy.join(name), format!("{value}\n")).expect("cpufreq file");
    }
    dir
}

/// Everything the worker may change, as it was.
#[derive(Debug, PartialEq)]
struct Observed {
    affinity: Vec<CpuSet>,
    cgroups: Vec<String>,
    states: Vec<char>,
    cpufreq: Vec<String>,
    leftover_dirs: Vec<PathBuf>,
}

fn observe(root: &Path, pids: &[u32]) -> Observed {
    let affinity = pids
        .iter()
        .map(|p| affinity::get(*p).expect("affinity"))
        .collect();
    let cgroups = pids
        .iter()
        .map(|p| std::fs::read_to_string(format!("/proc/{p}/cgroup")).expect("cgroup"))
        .collect();
    let states = pids
        .iter()
        .map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).expect("stat");
            let after = stat.rsplit_once(") ").expect("stat comm").1;
            // Running or sleeping are the same here (a thawed task may be
            // on a CPU for a moment); stopped (T) or frozen (D) are not.
            match after.chars().next().expect("state") {
                'R' => 'S',
                c => c,
            }
        })
        .collect();
    let cpufreq = CPUFREQ
        .iter()
        .map(|(name, _)| {
            std::fs::read_to_string(root.join(POLICY).join(name))
                .expect("cpufreq")
                .trim()
                .to_string()
        })
        .collect();
    Observed {
        affinity,
        cgroups,
        states,
        cpufreq,
        leftover_dirs: chaos_dirs(),
    }
}

/// cgroup directories a worker made (named `ecosched-chaos-<pid>` or
/// below: `restore` acts only within cgroups named `ecosched…-<pid>`).
fn chaos_dirs() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![PathBuf::from("/sys/fs/cgroup")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(Result::ok) {
            let Ok(ft) = e.file_type() else { continue };
            if !ft.is_dir() {
                continue;
            }
            let path = e.path();
            if e.file_name()
                .to_string_lossy()
                .starts_with("ecosched-chaos-")
            {
                found.push(path);
            } else {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

fn spawn_worker(
    root: &Path,
    state: &Path,
    tasks: &[TaskId],
) -> (Child, BufReader<std::process::ChildStdout>) {
    let list: Vec<String> = tasks
        .iter()
        .map(|t| format!("{}:{}", t.pid, t.start_ticks))
        .collect();
    let mut child = child("chaos_worker")
        .args(["--nocapture", "-q"])
        .env("CHAOS_ROOT", root)
        .env("CHAOS_STATE", state)
        .env("CHAOS_TASKS", list.join(","))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("worker");
    let out = BufReader::new(child.stdout.take().expect("worker stdout"));
    (child, out)
}

fn wait_for(out: &mut BufReader<std::process::ChildStdout>, word: &str) {
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).expect("worker output");
        assert!(n > 0, "the worker ended before saying {word:?}");
        if line.trim() == word {
            return;
        }
    }
}

/// A small deterministic generator (xorshift), so a failing kill point can
/// be replayed from the printed seed.
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
#[ignore = "live: root, a cgroup cpuset controller and a freezer"]
fn sigkill_at_random_points_then_restore_puts_everything_back() {
    let _turn = live_turn();
    let root = mixed_root();
    let sleepers: Vec<Reaped> = (0..3)
        .map(|_| Reaped(Command::new("sleep").arg("600").spawn().expect("sleep")))
        .collect();
    let pids: Vec<u32> = sleepers.iter().map(|s| s.0.id()).collect();
    let live = FsRoot::live();
    let tasks: Vec<TaskId> = pids
        .iter()
        .map(|p| TaskId {
            pid: *p,
            start_ticks: start_ticks(&live, *p).expect("start ticks"),
        })
        .collect();
    // A sleeper just spawned may still be in exec, in uninterruptible
    // sleep (D), which this test reads as frozen: take the original state
    // once every one sleeps in nanosleep.
    let settle = Instant::now();
    loop {
        let states = observe(root.path(), &pids).states;
        if states.iter().all(|&c| c == 'S') {
            break;
        }
        assert!(
            settle.elapsed() < Duration::from_secs(10),
            "the sleepers never settled: {states:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let original = observe(root.path(), &pids);
    assert!(
        original.leftover_dirs.is_empty(),
        "{:?}",
        original.leftover_dirs
    );
    let fixture = FsRoot::writable_fixture(root.path());

    // How long one round of plan application takes, unkilled.
    let state = tempfile::tempdir().expect("state");
    let (mut worker, mut out) = spawn_worker(root.path(), state.path(), &tasks);
    wait_for(&mut out, "ready");
    let t0 = Instant::now();
    wait_for(&mut out, "applied");
    let round = t0.elapsed();
    worker.kill().expect("kill");
    worker.wait().expect("wait");
    let changed = observe(root.path(), &pids);
    assert_ne!(changed, original, "the worker changed nothing");
    ecosched_linux::journal::restore(state.path(), &fixture).expect("restore");
    assert_eq!(observe(root.path(), &pids), original);

    let mut seed = 0x9e37_79b9_7f4a_7c15_u64
        ^ u64::from(std::process::id()).wrapping_mul(0x2545_f491_4f6c_dd1d);
    eprintln!("chaos seed {seed:#x}, one round {round:?}");
    let span_us = u64::try_from(round.as_micros()).unwrap_or(u64::MAX).max(1);
    let mut warned = 0;
    for kill in 0..KILLS {
        let state = tempfile::tempdir().expect("state");
        let (mut worker, mut out) = spawn_worker(root.path(), state.path(), &tasks);
        wait_for(&mut out, "ready");
        let delay = Duration::from_micros(next(&mut seed) % span_us);
        std::thread::sleep(delay);
        worker.kill().expect("SIGKILL");
        worker.wait().expect("wait");
        let outcomes = ecosched_linux::journal::restore(state.path(), &fixture).expect("restore");
        for o in &outcomes {
            match o {
                RestoreOutcome::Restored(r) => {
                    assert!(r.failed.is_empty(), "kill {kill} at {delay:?}: {r:?}");
                    warned += usize::from(!r.warnings.is_empty());
                }
                other => panic!("kill {kill} at {delay:?}: {other:?}"),
            }
        }
        assert_eq!(
            observe(root.path(), &pids),
            original,
            "kill {kill} at {delay:?} (seed {seed:#x})"
        );
        let left: Vec<_> = std::fs::read_dir(state.path())
            .expect("state dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        assert!(
            left.is_empty(),
            "kill {kill}: left in the state dir: {left:?}"
        );
    }
    eprintln!("{KILLS} kills restored; {warned} journals had a torn line");
}

/// The worker: apply changes like `LinuxPlatform` does, forever, until
/// killed. Run only by the chaos test, as `children::chaos_worker`.
pub fn worker() {
    let (Ok(root), Ok(state), Ok(list)) = (
        std::env::var("CHAOS_ROOT"),
        std::env::var("CHAOS_STATE"),
        std::env::var("CHAOS_TASKS"),
    ) else {
        panic!(
            "chaos_worker is run by the chaos test, with CHAOS_ROOT, CHAOS_STATE and CHAOS_TASKS"
        );
    };
    let tasks: Vec<TaskId> = list
        .split(',')
        .map(|t| {
            let (pid, ticks) = t.split_once(':').expect("pid:ticks");
            TaskId {
                pid: pid.parse().expect("pid"),
                start_ticks: ticks.parse().expect("ticks"),
            }
        })
        .collect();
    let root = FsRoot::writable_fixture(&root);
    let state = PathBuf::from(state);
    let mut stdout = std::io::stdout();
    writeln!(stdout, "ready").expect("stdout");
    stdout.flush().expect("stdout");
    let mut journal = Journal::create(&state, root.clone()).expect("journal");
    let _hint = HintFile::create(state.join(format!("hint-{}", std::process::id())), Some(2))
        .expect("hint");
    let ncpus = affinity::get(std::process::id())
        .expect("own affinity")
        .len();
    let cpus: Vec<_> = affinity::get(std::process::id())
        .expect("own affinity")
        .iter()
        .collect();
    let mounts = MountTable::read(&root).expect("mount table");
    let mount = CpusetMount::find(&mounts, &root).expect("cpuset mount");
    let v2 = mount.version == Version::V2;
    let cpuset = ManagedCpuset::create(&mut journal, mount, "ecosched-chaos").expect("cpuset");
    let mut runner = GangRunner::default();
    let base_name = format!("ecosched-chaos-{}", std::process::id());
    for round in 0u64.. {
        let cpu = cpus[(round as usize) % ncpus];
        for t in &tasks {
            let before = affinity::get(t.pid).expect("affinity");
            journal
                .record(Change::Affinity {
                    tid: t.pid,
                    start_ticks: t.start_ticks,
                    before,
                })
                .expect("record");
            affinity::set(t.pid, &CpuSet::single(cpu)).expect("set affinity");
        }
        cpuset
            .set_cpus(&mut journal, &CpuSet::single(cpu))
            .expect("cpus");
        for t in &tasks {
            cpuset.attach(&mut journal, *t).expect("attach");
        }
        let (gov, speed) = if round % 2 == 0 {
            ("userspace", "1600000")
        } else {
            ("performance", "2400000")
        };
        journal
            .write_file(&format!("{POLICY}/scaling_min_freq"), "1600000", "root")
            .expect("min");
        journal
            .write_file(&format!("{POLICY}/scaling_governor"), gov, "root")
            .expect("governor");
        journal
            .write_file(&format!("{POLICY}/scaling_setspeed"), speed, "root")
            .expect("setspeed");
        let mut ctx = GangContext {
            journal: &mut journal,
            process_of: Box::new(|t: TaskId| Some(t.as_process())),
            base_name: base_name.clone(),
            v2_cpuset_dir: v2.then(|| cpuset.dir().to_string()),
            mounts: &mounts,
        };
        let schedule = GangSchedule {
            groups: tasks
                .iter()
                .enumerate()
                .map(|(i, t)| GangGroup {
                    name: format!("g{i}"),
                    tasks: vec![*t],
                })
                .collect(),
            slots: (0..tasks.len())
                .map(|i| GangSlot {
                    duration_us: 10_000,
                    run: vec![i],
                })
                .collect(),
        };
        runner.replace(&mut ctx, schedule).expect("gang schedule");
        let until = Instant::now() + Duration::from_millis(25);
        while Instant::now() < until {
            runner.tick(&mut ctx).expect("tick");
            std::thread::sleep(Duration::from_millis(2));
        }
        if round == 0 {
            writeln!(stdout, "applied").expect("stdout");
            stdout.flush().expect("stdout");
        }
    }
}
