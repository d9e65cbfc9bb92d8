//! Patel's schedulers (ch. 6) on this machine, for real. A machine that
//! cannot serve them refuses them before the command starts, naming the
//! missing hardware events and frequency control. And `patel2` moves
//! CPU-bound processes of different nice values between its cpusets:
//! managed behind the fake PMU (this VM has none) with `confine_only=true`
//! (it has no cpufreq either), `/proc` confirms where each process may
//! run: `Cpus_allowed_list` in `/proc/<pid>/status` is always exactly one
//! of the policy's cpusets, the process stays in the run's cpuset cgroup
//! (`/proc/<pid>/cpuset`), and the moves the policy reports are the moves
//! `/proc` shows. Needs root and at least two online CPUs, as CI has.

use crate::support::{ecosched_command, leftovers, loops_of};
use ecosched_linux::perf::{Event, FakePerf};
use ecosched_linux::platform::{LinuxOptions, LinuxPlatform};
use ecosched_model::Platform;
use ecosched_policy::Params;
use ecosched_testkit::live::{allowed_list, busy_turn, has_exited, kill, stat_fields, Reap};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Run `patel*` with `params` on `touch MARKER`; the output and whether
/// the command ran.
fn run(policy: &str, params: &[&str]) -> (std::process::Output, bool) {
    let state = tempfile::tempdir().unwrap();
    let marker = state.path().join("started");
    let mut cmd = ecosched_command();
    cmd.args(["run", "--policy", policy]);
    for p in params {
        cmd.args(["--param", p]);
    }
    let out = cmd
        .arg("--state-dir")
        .arg(state.path())
        .arg("--")
        .arg("touch")
        .arg(&marker)
        .output()
        .unwrap();
    (out, marker.exists())
}

/// One cpuset of every online CPU (its frequency is nominal under
/// `confine_only`), so the partition fits whatever machine runs the test.
fn whole_machine() -> String {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("partition={n}@800")
}

/// Whether the kernel exposes a hardware PMU.
fn has_hardware_pmu() -> bool {
    Path::new("/sys/bus/event_source/devices/cpu").exists()
}

/// Whether any CPU has a cpufreq policy.
fn has_cpufreq() -> bool {
    Path::new("/sys/devices/system/cpu/cpufreq")
        .read_dir()
        .is_ok_and(|mut d| d.next().is_some())
}

/// perf's software events exist on every Linux with perf_event.
fn has_perf_software_switches() -> bool {
    Path::new("/sys/bus/event_source/devices/software").exists()
}

#[test]
#[ignore = "live: this machine's PMU (a run refused without one)"]
fn without_a_pmu_every_patel_policy_is_refused_naming_its_events() {
    if has_hardware_pmu() {
        return; // This machine can count them; nothing to check here.
    }
    for (policy, events) in [
        ("patel1", &["(instructions)", "(cycles)"][..]),
        (
            "patel3",
            &[
                "(instructions)",
                "(cycles)",
                "(llc_references)",
                "(llc_misses)",
            ][..],
        ),
        (
            "patel4",
            &["(context_switches)", "(migrations)", "(instructions)"][..],
        ),
    ] {
        let (out, ran) = run(policy, &["confine_only=true", &whole_machine()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let software = has_perf_software_switches();
        assert_eq!(out.status.code(), Some(2), "{policy}: {stderr}");
        for e in events {
            // Context switches and migrations are software events perf
            // counts without a PMU; only hardware events must be named.
            if software && (*e == "(context_switches)" || *e == "(migrations)") {
                continue;
            }
            assert!(stderr.contains(e), "{policy} must name {e}: {stderr}");
        }
        assert!(!ran, "{policy}: the command must not have run");
    }
}

#[test]
#[ignore = "live: this machine's cpufreq (a run refused without it)"]
fn without_cpufreq_the_refusal_names_frequency_control() {
    if has_cpufreq() {
        return; // A machine with cpufreq can pin the cpusets' frequencies.
    }
    let (out, ran) = run("patel2", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("frequency control"), "{stderr}");
    assert!(!ran);
    // confine_only drops the frequency requirement: what is left missing
    // (if anything) is counters, never frequency control.
    let (out, _) = run("patel2", &["confine_only=true", &whole_machine()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("frequency control"), "{stderr}");
}

/// The cpuset cgroup of `pid` (`/proc/<pid>/cpuset`).
fn cpuset_of(pid: u32) -> Option<String> {
    Some(
        std::fs::read_to_string(format!("/proc/{pid}/cpuset"))
            .ok()?
            .trim()
            .to_string(),
    )
}

/// Nice value, field 19 of `/proc/<pid>/stat`.
fn nice_of(pid: u32) -> Option<i32> {
    stat_fields(pid)?.get(16)?.parse().ok()
}

/// The nice values of the busy loops, in turn.
const NICES: [i32; 3] = [0, 5, 12];

#[test]
#[ignore = "live: root (cpuset cgroups), two online CPUs"]
fn patel2_moves_processes_of_different_nice_values_between_cpusets() {
    let _turn = busy_turn();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        return; // One CPU makes one cpuset: nothing can move.
    }
    // Two cpusets: CPU 0 "slow", the rest "fast" (frequencies nominal
    // under confine_only).
    let partition = format!("1@800,{}@2300", cpus - 1);
    let slow = "0".to_string();
    let fast = if cpus == 2 {
        "1".to_string()
    } else {
        format!("1-{}", cpus - 1)
    };
    let state = tempfile::tempdir().unwrap();
    let options = LinuxOptions {
        state_dir: state.path().to_path_buf(),
        cgroup_name: "ecosched-patel2".into(),
        ..LinuxOptions::default()
    };
    let fake = FakePerf::new();
    let mut platform = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options)
        .perf(Box::new(fake.clone()))
        .build()
        .unwrap();
    let params = Params::default()
        .with("confine_only", true)
        .with("partition", partition.as_str())
        // Every window 0.5 s (A4 would lengthen them with elapsed time):
        // more decisions in a short test.
        .with("window_max_s", 0.5);
    let mut policy = ecosched_policy::build("patel2", &params).unwrap();
    platform.open_counters(&policy.requirements());
    let missing = policy.requirements().missing(&platform.capabilities());
    assert!(missing.is_empty(), "{missing:?}");
    let initial = policy.init(&platform.topology()).unwrap();
    platform.apply(&initial).unwrap();
    // More CPU-bound processes than CPUs, one per nice value and then
    // some, so that cpusets are contended and processes move.
    let loops: String = (0..cpus + 1)
        .map(|i| {
            format!(
                "nice -n {} sh -c 'while :; do :; done' & ",
                NICES[i % NICES.len()]
            )
        })
        .collect();
    platform
        .start(&["sh".into(), "-c".into(), format!("{loops}wait")])
        .unwrap();
    let sh = platform.child_pid().unwrap();
    let mut reap = Reap(vec![sh]);
    let run_cpuset = {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let c = cpuset_of(sh).unwrap();
            if c.contains("ecosched-patel2") {
                break c;
            }
            assert!(
                Instant::now() < until,
                "sh never joined the run's cpuset: {c}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };

    // Drive the loop for at least 4 s and until /proc has shown a move
    // (at most 40 s). The fake PMU counts an IPC of 0.5 for every loop
    // (below the 1.7 of the performance index), so CPU-intensive loops
    // that wait want to move up, as far as their nice values let them.
    let mut history: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let interval = policy.interval();
    let start = Instant::now();
    let moved = |h: &BTreeMap<u32, Vec<String>>| h.values().any(|l| l.len() > 1);
    // On a quiet machine the first placement can be an equilibrium: the
    // loops in the fast cpuset keep it the better choice, and a nice-12
    // loop in the slow one may not move up (§6.2). If nothing has moved
    // after 4 s, the fast cpuset's loops are killed: its run queue empties
    // and step 7 (fill, A8) must move a slow loop up, whatever its nice.
    let mut nices: Option<Vec<i32>> = None;
    let mut killed: Vec<u32> = Vec::new();
    while start.elapsed() < Duration::from_secs(4)
        || (!moved(&history) && start.elapsed() < Duration::from_secs(40))
    {
        if nices.is_none() && start.elapsed() >= Duration::from_secs(4) {
            nices = Some(nices_seen(&history));
            if !moved(&history) {
                for (&p, lists) in &history {
                    if lists.last() == Some(&fast) {
                        kill(&[p]);
                        killed.push(p);
                    }
                }
            }
        }
        platform.advance(interval).unwrap();
        for p in loops_of(sh) {
            let ns = interval.as_nanos() as u64;
            fake.add(p, Event::Instructions, ns / 2);
            fake.add(p, Event::Cycles, ns);
            fake.advance(p, ns, ns);
        }
        let snapshot = platform.observe().unwrap();
        let plan = policy.decide(&snapshot);
        platform.apply(&plan).unwrap();
        let loops = loops_of(sh);
        reap.0.extend(&loops);
        for p in loops {
            let list = allowed_list(p).unwrap();
            let h = history.entry(p).or_default();
            if h.last() != Some(&list) {
                h.push(list);
            }
            assert_eq!(
                cpuset_of(p).unwrap(),
                run_cpuset,
                "loop {p} left the run's cpuset"
            );
        }
    }
    // The loop can end before its body saw the 4 s mark (the test above
    // runs first); read the nice values now then, while every loop lives.
    let nices = nices.or_else(|| Some(nices_seen(&history)));
    let notes = policy.stats();
    eprintln!("Cpus_allowed_list per loop over the run: {history:?}\npolicy notes: {notes:?}");
    let count = |k: &str| notes.get(k).and_then(|v| v.as_f64()).unwrap() as usize;
    // Every loop was always confined to exactly one cpuset …
    for (p, lists) in &history {
        for l in lists {
            assert!(
                *l == slow || *l == fast,
                "loop {p} allowed {l}, not a cpuset"
            );
        }
    }
    // … some moved between them, and no move happened that the policy
    // did not make (it reports moves by window decision and by filling an
    // empty queue).
    let moves: usize = history.values().map(|h| h.len() - 1).sum();
    assert!(moves >= 1, "no loop moved: {history:?}");
    let decided = count("up_moves") + count("down_moves") + count("empty_queue_fills");
    assert!(
        moves <= decided,
        "{moves} moves in /proc, {decided} by the policy"
    );
    // The nice values reached the processes, and patel2's guards used them.
    // `nice -n` adds to the test's own nice value (a test run under
    // `nice` starts higher), and the kernel caps the sum at 19.
    let own = nice_of(std::process::id()).unwrap();
    let mut started: Vec<i32> = NICES.iter().map(|n| (own + n).min(19)).collect();
    started.dedup();
    assert_eq!(nices, Some(started), "nice values as started");
    assert!(count("vetoed_by_nice") >= 1, "{notes:?}");
    // Without cpufreq the run only confines, and says so (`run` prints the
    // statistics as `policy: …` rows and in its JSON's `policy_notes`).
    let confine = notes.get("confine_only").map(ToString::to_string);
    assert!(confine.is_some_and(|c| c.contains("NOT set")), "{notes:?}");

    // The end of the run (`stop`: SIGTERM to every process of the run,
    // as `run` hands a signal on) ends every loop, and undoes everything.
    let end = platform.finish(true).unwrap();
    assert!(end.restore.failed.is_empty(), "{:?}", end.restore);
    for &p in history.keys() {
        assert!(has_exited(p), "loop {p} outlived the end of the run");
    }
    let run_dir = Path::new("/sys/fs/cgroup/cpuset").join(run_cpuset.trim_start_matches('/'));
    assert!(!run_dir.exists(), "{} left", run_dir.display());
    assert_eq!(leftovers(state.path()).len(), 0);
}

/// The distinct nice values of the loops seen so far, in ascending order.
fn nices_seen(history: &BTreeMap<u32, Vec<String>>) -> Vec<i32> {
    let mut seen: Vec<i32> = history.keys().map(|&p| nice_of(p).unwrap()).collect();
    seen.sort_unstable();
    seen.dedup();
    seen
}
