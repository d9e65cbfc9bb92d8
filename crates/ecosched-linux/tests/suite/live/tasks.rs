//! Task discovery and counters on the running kernel: real threads and
//! processes (`sleep`, `sh`, `stress-ng`, busy and sleeping
//! `std::thread`s) are discovered and read through `/proc` and the real
//! perf backend. Hardware counters are checked against
//! the start-up probe, so the same assertions hold on this PMU-less VM
//! (all `None`, each named missing) and on a machine with a PMU.

use crate::support::{live_turn, spawn};
use ecosched_linux::perf::{Event, SystemPerf};
use ecosched_linux::tasks::{HostFacts, TaskReader, AFFINITY_RECHECK};
use ecosched_linux::FsRoot;
use ecosched_model::{CounterKind, TaskId, TaskState};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn reader() -> TaskReader {
    let root = FsRoot::live();
    let host = HostFacts::detect(&root).unwrap();
    TaskReader::new(root, Box::new(SystemPerf), host)
}

fn gettid() -> u32 {
    u32::try_from(nix::unistd::gettid().as_raw()).unwrap()
}

/// The TaskId of thread `tid` of this process.
fn own_thread(reader: &mut TaskReader, tid: u32) -> TaskId {
    reader
        .discover(std::process::id())
        .unwrap()
        .into_iter()
        .find(|id| id.pid == tid)
        .unwrap()
}

/// Poll `discover(root)` until it finds `want` processes (children take a
/// moment to exec and fork).
fn discover_processes(reader: &mut TaskReader, root: u32, want: usize) -> Vec<TaskId> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ids = reader.discover(root).unwrap();
        let obs = reader.read(&ids);
        let processes = obs.tasks.iter().filter(|t| t.tgid == t.id.pid).count();
        if processes >= want || Instant::now() > deadline {
            return ids;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[ignore = "live: real processes and threads of this kernel"]
fn a_child_is_identified_by_pid_and_start_time() {
    let _turn = live_turn();
    let child = spawn("sleep", &["30"]);
    let pid = child.0.id();
    let mut r = reader();
    let ids = r.discover(pid).unwrap();
    assert_eq!(ids.len(), 1);
    let id = ids[0];
    assert_eq!(id.pid, pid);
    let now_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let started_s = r.host().start_epoch_s(id.start_ticks);
    assert!(
        (now_s - started_s).abs() < 5.0,
        "started {started_s}, now {now_s}"
    );
    // Until the child has exec'd and gone to sleep it may still be running.
    let deadline = Instant::now() + Duration::from_secs(5);
    let obs = loop {
        let obs = r.read(&ids);
        let settled = obs.tasks[0].comm == "sleep" && obs.tasks[0].state == TaskState::Sleeping;
        if settled || Instant::now() > deadline {
            break obs;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let t = &obs.tasks[0];
    assert_eq!((t.tgid, t.ppid), (pid, std::process::id()));
    assert_eq!(t.comm, "sleep");
    assert_eq!(t.state, TaskState::Sleeping);
    assert!(!t.allowed.is_empty());
    assert!(
        t.allowed.contains(t.cpu),
        "{:?} not in {}",
        t.cpu,
        t.allowed.to_list()
    );
}

#[test]
#[ignore = "live: real processes and threads of this kernel"]
fn a_reused_pid_is_gone_and_never_read() {
    let _turn = live_turn();
    let child = spawn("sleep", &["30"]);
    let mut r = reader();
    let real = r.discover(child.0.id()).unwrap()[0];
    let impostor = TaskId {
        pid: real.pid,
        start_ticks: real.start_ticks + 1,
    };
    let obs = r.read(&[impostor]);
    assert_eq!(obs.gone, vec![impostor]);
    assert!(obs.tasks.is_empty() && obs.errors.is_empty());
    assert_eq!(r.tracked(), 0);
    assert_eq!(r.read(&[real]).tasks.len(), 1);
}

#[test]
#[ignore = "live: real processes and threads of this kernel"]
fn an_exited_process_is_reported_exited_then_gone() {
    let _turn = live_turn();
    let mut child = spawn("sleep", &["30"]);
    let mut r = reader();
    let ids = r.discover(child.0.id()).unwrap();
    assert_eq!(r.read(&ids).tasks.len(), 1);
    child.0.kill().unwrap();
    // Killed but not yet reaped: a zombie, read one last time as Exited.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let obs = r.read(&ids);
        if obs.tasks.first().map(|t| t.state) == Some(TaskState::Exited) {
            break;
        }
        assert!(Instant::now() < deadline, "never became a zombie");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.0.wait().unwrap();
    let obs = r.read(&ids);
    assert_eq!(obs.gone, ids);
    assert!(
        obs.tasks.is_empty() && obs.errors.is_empty(),
        "{:?}",
        obs.errors
    );
    assert_eq!(r.tracked(), 0);
}

#[test]
#[ignore = "live: real processes and threads of this kernel"]
fn descendants_of_a_shell_are_found_with_their_threads() {
    let _turn = live_turn();
    let shell = spawn(
        "sh",
        &["-c", "sleep 30 & sleep 30 & (sleep 30; true) & wait"],
    );
    let pid = shell.0.id();
    let mut r = reader();
    // sh, two sleeps, the subshell and its sleep (a forked child reads as
    // `sh` until it has exec'd `sleep`: wait for that too).
    let want = vec!["sh", "sh", "sleep", "sleep", "sleep"];
    let deadline = Instant::now() + Duration::from_secs(10);
    let obs = loop {
        let ids = discover_processes(&mut r, pid, 5);
        let obs = r.read(&ids);
        let mut comms: Vec<_> = obs.tasks.iter().map(|t| t.comm.clone()).collect();
        comms.sort();
        if comms == want || Instant::now() > deadline {
            assert_eq!(comms, want);
            break obs;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // A grandchild's parent is the subshell, not the root.
    assert!(obs.tasks.iter().any(|t| t.comm == "sleep" && t.ppid != pid));
}

#[test]
#[ignore = "live: stress-ng"]
fn stress_ng_workers_and_their_threads_are_found() {
    let _turn = live_turn();
    let stress = spawn("stress-ng", &["--cpu", "2", "--timeout", "20", "--quiet"]);
    let mut r = reader();
    let ids = discover_processes(&mut r, stress.0.id(), 3);
    let obs = r.read(&ids);
    let workers = obs.tasks.iter().filter(|t| t.ppid == stress.0.id()).count();
    assert!(workers >= 2, "{:?}", obs.tasks);
    // Every thread of every member is listed, under its own process.
    for t in &obs.tasks {
        assert!(ids.iter().any(|id| id.pid == t.tgid), "{t:?}");
    }
}

#[test]
#[ignore = "live: perf software events of this kernel (root or perf_event_paranoid)"]
fn a_busy_thread_accumulates_on_cpu_time_and_software_counters() {
    let _turn = live_turn();
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let busy = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            tx.send(gettid()).unwrap();
            let mut x = 0u64;
            while !stop.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            x
        })
    };
    let tid = rx.recv().unwrap();
    let mut r = reader();
    assert!(
        r.availability().has(CounterKind::Migrations),
        "{:?}",
        r.availability()
    );
    let id = own_thread(&mut r, tid);
    let first = r.read(&[id]).tasks.remove(0);
    assert_eq!(
        first.counters.migrations, None,
        "no perf baseline on the first read"
    );
    std::thread::sleep(Duration::from_millis(400));
    let second = r.read(&[id]).tasks.remove(0);
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();

    let on_cpu = second.counters.on_cpu_ns.unwrap();
    // Two cores shared with other work: at least a quarter of the wall time.
    assert!(on_cpu > 100_000_000, "on-CPU {on_cpu} ns in 400 ms");
    assert_eq!(
        second.task_clock_ns, None,
        "with schedstat its on-CPU time is the task clock: perf does not count it again"
    );
    assert!(second.counters.context_switches.is_some());
    assert!(second.counters.migrations.is_some());
    assert!(second.counters.runqueue_wait_ns.is_some());
}

#[test]
#[ignore = "live: real processes and threads of this kernel"]
fn a_sleeping_thread_switches_once_per_sleep() {
    let _turn = live_turn();
    let (tx, rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let sleeper = std::thread::spawn(move || {
        tx.send(gettid()).unwrap();
        go_rx.recv().unwrap();
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    let tid = rx.recv().unwrap();
    let mut r = reader();
    let id = own_thread(&mut r, tid);
    r.read(&[id]);
    go_tx.send(()).unwrap();
    // 50 sleeps of 1 ms take at least 50 ms: read it while it still lives.
    std::thread::sleep(Duration::from_millis(40));
    let obs = r.read(&[id]);
    sleeper.join().unwrap();
    let t = &obs.tasks[0];
    let switches = t.counters.context_switches.unwrap();
    assert!(switches >= 10, "{switches} switches over ~40 sleeps");
}

#[test]
#[ignore = "live: real processes and threads of this kernel"]
fn hardware_counters_follow_the_probe() {
    let _turn = live_turn();
    let mut r = reader();
    let missing: Vec<_> = Event::HARDWARE
        .iter()
        .filter(|e| !r.availability().has(e.counter_kind()))
        .collect();
    for event in &missing {
        let kind = event.counter_kind();
        let reasons: Vec<_> = r
            .availability()
            .unavailable
            .iter()
            .filter(|(k, _)| *k == kind)
            .collect();
        assert_eq!(reasons.len(), 1, "{kind:?} named once");
        assert!(reasons[0].1.contains(&event.perf_name()), "{reasons:?}");
    }
    let id = own_thread(&mut r, gettid());
    r.read(&[id]);
    let mut x = 0u64;
    for i in 0..1_000_000u64 {
        x = std::hint::black_box(x ^ i);
    }
    let c = r.read(&[id]).tasks.remove(0).counters;
    for event in Event::HARDWARE {
        let kind = event.counter_kind();
        let value = c.get(kind);
        if r.availability().has(kind) {
            assert!(value.is_some(), "{kind:?} available but not read");
        } else {
            assert_eq!(value, None, "{kind:?} unavailable must be None, not zero");
        }
    }
    assert_eq!(c.get(CounterKind::LinesIn), None);
}

#[test]
#[ignore = "live: perf software events and an accounting cgroup (root)"]
fn the_observation_cost_measurement_reads_every_task() {
    let _turn = live_turn();
    let interval = std::time::Duration::from_millis(500);
    let cost = ecosched_linux::bench::observe_cost(50, 2, interval).unwrap();
    assert!(cost.idle_observe_ms > 0.0);
    assert_eq!((cost.tasks, cost.tasks_read, cost.rounds), (50, 50, 2));
    assert!(cost.software_counters);
    assert!(cost.observe_ms > 0.0 && cost.cpu_ms > 0.0 && cost.look_cpu_ms > 0.0);
    // The shares follow from the measured costs at the platform's schedule.
    let read_ms = cost.cpu_ms + cost.rediscover_cpu_ms;
    let reads = ecosched_linux::platform::full_reads_per_interval(
        std::time::Duration::from_secs_f64(read_ms / 1e3),
        interval,
    );
    assert_eq!(cost.busy_reads_per_interval, reads);
    assert!((cost.busy_cpu_percent - read_ms * reads as f64 / 500.0 * 100.0).abs() < 1e-9);
    // Five looks at the activity cgroup per 500 ms.
    assert!((cost.idle_cpu_percent - cost.look_cpu_ms * 5.0 / 500.0 * 100.0).abs() < 1e-9);
    assert!(cost.idle_cpu_percent < cost.idle_unwatched_cpu_percent);
    // A walk of /proc reads every process of the machine; a run's own
    // processes are one here.
    assert!(
        cost.rediscover_walk_cpu_ms > cost.rediscover_cpu_ms,
        "{cost:?}"
    );
    assert!(
        cost.busy_walk_cpu_percent > cost.busy_cpu_percent,
        "{cost:?}"
    );
    let json = serde_json::to_value(&cost).unwrap();
    for key in [
        "tasks",
        "observe_ms",
        "busy_cpu_percent",
        "busy_walk_cpu_percent",
        "idle_cpu_percent",
    ] {
        assert!(json.get(key).is_some(), "{key} in {json}");
    }
}

/// A thread that runs once per poke (so it runs between the reads of a
/// test: a change made by someone else while a task sleeps shows only
/// once it runs again, see `TaskReader`), and its thread ID.
struct Poked {
    poke: mpsc::Sender<bool>,
    ran: mpsc::Receiver<u32>,
    worker: Option<std::thread::JoinHandle<()>>,
    tid: u32,
}

impl Poked {
    fn start() -> Poked {
        let (tx, ran) = mpsc::channel();
        let (poke, poked) = mpsc::channel::<bool>();
        let worker = std::thread::spawn(move || {
            tx.send(gettid()).unwrap();
            while poked.recv().unwrap_or(false) {
                tx.send(gettid()).unwrap();
            }
        });
        let tid = ran.recv().unwrap();
        Poked {
            poke,
            ran,
            worker: Some(worker),
            tid,
        }
    }

    /// Make it run once, and wait until it has.
    fn run_once(&self) {
        self.poke.send(true).unwrap();
        self.ran.recv().unwrap();
    }

    fn pin(&self, cpus: &[u32]) {
        let mut set = nix::sched::CpuSet::new();
        for &c in cpus {
            set.set(c as usize).unwrap();
        }
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.tid).unwrap());
        nix::sched::sched_setaffinity(pid, &set).unwrap();
    }
}

impl Drop for Poked {
    fn drop(&mut self) {
        let _ = self.poke.send(false);
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

#[test]
#[ignore = "live: real processes and threads of this kernel"]
fn a_narrowed_affinity_shows_within_the_recheck_readings() {
    let _turn = live_turn();
    let worker = Poked::start();
    let mut r = reader();
    let id = own_thread(&mut r, worker.tid);
    let before = r.read(&[id]).tasks.remove(0).allowed;
    let first = before.first().unwrap();
    worker.pin(&[first.0]);
    // The worker now runs only on a CPU of its old set too, so its old
    // set may stand for up to AFFINITY_RECHECK readings, never longer.
    let mut seen = Vec::new();
    for _ in 0..=AFFINITY_RECHECK {
        worker.run_once();
        seen.push(r.read(&[id]).tasks.remove(0).allowed.to_list());
    }
    let narrowed = first.0.to_string();
    assert_eq!(seen.last().unwrap(), &narrowed, "{seen:?}");
    let at = seen.iter().position(|s| *s == narrowed).unwrap();
    assert!(
        seen[at..].iter().all(|s| *s == narrowed)
            && seen[..at].iter().all(|s| *s == before.to_list()),
        "the old set, then the new one: {seen:?}"
    );
}

#[test]
#[ignore = "live: real processes and threads of this kernel"]
fn a_task_running_outside_its_old_set_shows_its_new_set_at_once() {
    let _turn = live_turn();
    let worker = Poked::start();
    let mut r = reader();
    let id = own_thread(&mut r, worker.tid);
    let all = r.read(&[id]).tasks.remove(0).allowed;
    let cpus: Vec<u32> = all.iter().map(|c| c.0).collect();
    let [a, b, ..] = cpus[..] else {
        eprintln!("skipped: one CPU allowed, nowhere to move to");
        return;
    };
    worker.pin(&[a]);
    worker.run_once();
    // Asked again within the recheck readings (it may run on `a` inside
    // its old set meanwhile).
    for _ in 0..=AFFINITY_RECHECK {
        worker.run_once();
        if r.read(&[id]).tasks.remove(0).allowed.to_list() == a.to_string() {
            break;
        }
    }
    worker.pin(&[b]);
    worker.run_once();
    let t = r.read(&[id]).tasks.remove(0);
    assert_eq!(t.cpu.0, b, "it ran on its new CPU");
    assert_eq!(t.allowed.to_list(), b.to_string(), "seen at once");
}
