//! `LinuxPlatform` built on a recorded machine (the hand-written Xeon
//! E5345 tree, with a `/proc` that holds one process): it observes the
//! recording — its CPUs, its load, the recorded process as a task — and
//! changes nothing: its capabilities say so, a plan that changes anything
//! and a command to start are refused, and the tree is left as it was.

use crate::support::{scratch_copy, snapshot};
use ecosched_linux::perf::FakePerf;
use ecosched_linux::platform::{LinuxOptions, LinuxPlatform};
use ecosched_linux::{FsRoot, LinuxError};
use ecosched_model::{
    CpuId, CpuSet, FreqDomainId, FreqSetting, Plan, Platform, PlatformError, TaskId,
};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The E5345 tree with a recorded `/proc`: CPU times, the load average and
/// process 100 (`recorded app`, one thread, started 500 ticks after boot).
fn recorded_machine() -> tempfile::TempDir {
    let dir = scratch_copy("cpufreq-acpi-xeon-e5345");
    let write = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let mut stat = String::from("cpu  800 0 800 8000 0 0 0 0 0 0\n");
    for cpu in 0..8 {
        stat.push_str(&format!("cpu{cpu} 100 0 100 1000 0 0 0 0 0 0\n"));
    }
    stat.push_str("btime 1700000000\n");
    write("proc/stat", &stat);
    write("proc/loadavg", "0.50 0.25 0.10 2/80 300\n");
    let line = "100 (recorded app) S 1 100 100 0 -1 4194304 98 0 0 0 7 3 0 0 20 0 1 0 500 \
                5767168 256 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 \
                1 1 1 1 1 1 1 0\n";
    let status = "Name:\trecorded app\nTgid:\t100\nPPid:\t1\nCpus_allowed_list:\t0-7\n\
                  voluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t1\n";
    write("proc/100/stat", line);
    write("proc/100/status", status);
    write("proc/100/task/100/stat", line);
    write("proc/100/task/100/status", status);
    dir
}

fn options(state: &Path) -> LinuxOptions {
    LinuxOptions {
        state_dir: state.to_path_buf(),
        ..LinuxOptions::default()
    }
}

#[test]
fn a_recorded_machine_is_observed_and_never_changed() {
    let machine = recorded_machine();
    let before = snapshot(machine.path());
    let state = tempfile::tempdir().unwrap();
    let mut platform = LinuxPlatform::builder(FsRoot::recorded(machine.path()))
        .options(&options(state.path()))
        .perf(Box::new(FakePerf::new()))
        .build()
        .unwrap();
    assert!(platform.machine_name().contains("E5345"));
    let caps = platform.capabilities();
    assert!(!caps.affinity && !caps.frequency && !caps.gang, "{caps:?}");
    let notices = platform.notices().join("\n");
    assert!(notices.contains("is a recorded machine"), "{notices}");

    let snap = platform.observe().unwrap();
    assert_eq!(snap.cpus.len(), 8);
    assert!(snap.tasks.is_empty(), "no command, no task");
    let load = snap.load_avg.unwrap();
    assert_eq!((load.runnable, load.total), (2, 80));

    // Nothing that changes the machine gets through, and nothing is
    // journalled for it.
    let slow = Plan {
        frequency: [(
            FreqDomainId(0),
            FreqSetting::Fixed {
                freq_khz: 2_000_000,
            },
        )]
        .into(),
        ..Plan::default()
    };
    platform.check_initial(&slow).unwrap();
    let err = platform.apply(&slow).unwrap_err();
    assert!(matches!(err, PlatformError::Unsupported(_)), "{err}");
    assert!(err.to_string().contains("cannot be changed"), "{err}");
    let confine = Plan {
        managed_cpus: Some(CpuSet::single(CpuId(0))),
        ..Plan::default()
    };
    assert!(platform.apply(&confine).is_err());
    platform.apply(&Plan::default()).unwrap();
    let err = platform.start(&["true".into()]).unwrap_err();
    assert!(matches!(err, LinuxError::ReadOnly { .. }), "{err}");
    assert_eq!(platform.child_pid(), None);

    drop(platform);
    assert_eq!(snapshot(machine.path()), before, "the recording changed");
    let left: Vec<_> = std::fs::read_dir(state.path()).unwrap().collect();
    assert!(left.is_empty(), "left in the state directory: {left:?}");
}

#[test]
fn a_recorded_process_is_a_task_that_cannot_be_pinned() {
    let machine = recorded_machine();
    let before = snapshot(machine.path());
    let state = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut platform = LinuxPlatform::builder(FsRoot::recorded(machine.path()))
        .options(&options(state.path()))
        .perf(Box::new(FakePerf::new()))
        .attach("recorded", Box::new(|| vec![100]), stop)
        .build()
        .unwrap();
    let snap = platform.observe().unwrap();
    let [task] = &snap.tasks[..] else {
        panic!("{:?}", snap.tasks)
    };
    let id = TaskId {
        pid: 100,
        start_ticks: 500,
    };
    assert_eq!(task.id, id);
    assert_eq!(task.name, "recorded app:100");
    assert_eq!(task.allowed.to_list(), "0-7");
    assert_eq!(task.cpu, Some(CpuId(3)));
    let pin = Plan {
        task_cpus: [(id, CpuSet::single(CpuId(0)))].into(),
        ..Plan::default()
    };
    let err = platform.apply(&pin).unwrap_err();
    assert!(matches!(err, PlatformError::Unsupported(_)), "{err}");
    let undo = platform.release();
    assert_eq!((undo.undone, undo.failed.len()), (0, 0), "{undo:?}");
    assert_eq!(snapshot(machine.path()), before);
}

/// A recorded group: process 100 with `threads` threads (TIDs 100...) in
/// cgroup `sys/fs/cgroup/grp`, whose `cpu.stat` accounts their CPU time.
fn recorded_group(threads: u32) -> tempfile::TempDir {
    let dir = recorded_machine();
    let write = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    // The kernel has `schedstat` (probed on process 1).
    write("proc/1/schedstat", "1 2 3\n");
    write("sys/fs/cgroup/grp/cgroup.procs", "100\n");
    write(
        "sys/fs/cgroup/grp/cpu.stat",
        "usage_usec 1000\nuser_usec 600\nsystem_usec 400\n",
    );
    for tid in 100..100 + threads {
        set_thread(dir.path(), tid, 'S', 1000);
    }
    set_threads(dir.path(), threads);
    dir
}

/// Process 100's `stat`, saying it has `threads` threads.
fn set_threads(root: &Path, threads: u32) {
    let line = format!(
        "100 (recorded app) S 1 100 100 0 -1 4194304 98 0 0 0 7 3 0 0 20 0 {threads} 0 500 \
         5767168 256 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 \
         1 1 1 1 1 1 1 0\n"
    );
    std::fs::write(root.join("proc/100/stat"), line).unwrap();
}

/// Thread `tid` of the recorded group in `state` with `on_cpu_ns` on a CPU.
fn set_thread(root: &Path, tid: u32, state: char, on_cpu_ns: u64) {
    let task = root.join(format!("proc/100/task/{tid}"));
    std::fs::create_dir_all(&task).unwrap();
    let stat = format!(
        "{tid} (worker) {state} 1 100 100 0 -1 4194304 98 0 0 0 7 3 0 0 20 0 1 0 {} \
         5767168 256 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 \
         1 1 1 1 1 1 1 0\n",
        500 + tid - 100
    );
    std::fs::write(task.join("stat"), stat).unwrap();
    std::fs::write(task.join("schedstat"), format!("{on_cpu_ns} 200 3\n")).unwrap();
    std::fs::write(
        task.join("status"),
        "Name:\tworker\nTgid:\t100\nPPid:\t1\nCpus_allowed_list:\t0-7\n\
         voluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t1\n",
    )
    .unwrap();
}

/// The cheap path — no thread read while the group's `cpu.stat` shows that
/// none ran, the last samples copied for a quiet interval — reports at
/// every observation exactly what a platform that reads every thread's
/// files at every observation reports: the same tasks, states and counts
/// (the runnable tasks and on-CPU deltas `hilo` sizes its set from).
#[test]
fn skipping_threads_that_did_not_run_reports_what_reading_all_reports() {
    let machine = recorded_group(40);
    let state = tempfile::tempdir().unwrap();
    let attached = |tag: &str, state: &Path| {
        LinuxPlatform::builder(FsRoot::recorded(machine.path()))
            .options(&options(state))
            .perf(Box::new(FakePerf::new()))
            .attach(
                tag,
                Box::new(|| vec![100]),
                Arc::new(AtomicBool::new(false)),
            )
            .build()
            .unwrap()
    };
    let other_state = tempfile::tempdir().unwrap();
    let mut cheap = attached("cheap", state.path());
    assert!(cheap.follow_cgroup(Path::new("/sys/fs/cgroup/grp")));
    let mut full = attached("full", other_state.path());
    let usage = |us: u64| {
        std::fs::write(
            machine.path().join("sys/fs/cgroup/grp/cpu.stat"),
            format!("usage_usec {us}\nuser_usec 0\nsystem_usec 0\n"),
        )
        .unwrap();
    };
    // What happens before each round: the group's time moves in round 1
    // (every thread is read a second time, so that its perf counters have
    // a baseline: a first reading has none, and one never read again
    // reports them absent, not 0); threads 105 and 106 run in round 3,
    // 105 is still runnable in round 4 and sleeps in round 5; thread 140
    // is born in round 6. Rounds 2, 7, 8 and 9 are quiet.
    let mut usage_us = 1000;
    for round in 0..10 {
        match round {
            3 => {
                set_thread(machine.path(), 105, 'R', 9_000_000);
                set_thread(machine.path(), 106, 'S', 4_000_000);
            }
            4 => set_thread(machine.path(), 105, 'R', 15_000_000),
            5 => set_thread(machine.path(), 105, 'S', 15_000_100),
            6 => {
                set_thread(machine.path(), 140, 'S', 2_000);
                set_threads(machine.path(), 41);
            }
            _ => {}
        }
        if round == 1 || (3..=6).contains(&round) {
            usage_us += 1000;
            usage(usage_us);
        }
        let a = cheap.observe().unwrap();
        let b = full.observe().unwrap();
        assert_eq!(a.tasks, b.tasks, "round {round}");
        let running = a
            .tasks
            .iter()
            .filter(|t| t.state == ecosched_model::TaskState::Running)
            .count();
        let on_cpu: u64 = a.tasks.iter().filter_map(|t| t.counters.on_cpu_ns).sum();
        match round {
            3 => assert_eq!((running, on_cpu), (1, 8_999_000 + 3_999_000)),
            4 => assert_eq!((running, on_cpu), (1, 6_000_000)),
            5 => assert_eq!((running, on_cpu), (0, 100)),
            6 => assert_eq!((running, on_cpu), (0, 2_000)),
            2 | 7..=9 => assert_eq!((running, on_cpu), (0, 0)),
            _ => {}
        }
        assert_eq!(a.tasks.len(), if round >= 6 { 41 } else { 40 });
    }
    assert!(
        cheap.skipped_reads() >= 4,
        "the cheap path read every thread: {} looks skipped",
        cheap.skipped_reads()
    );
    assert_eq!(full.skipped_reads(), 0);
    let _ = cheap.release();
    let _ = full.release();
}
