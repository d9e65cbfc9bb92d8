//! Chaos: `ecosched` SIGKILLed at random moments, then `ecosched restore`,
//! which must put back everything, every time.
//!
//! - `run`: for every policy `doctor --json` says runs (fully or degraded)
//!   on this machine, `ecosched run` on a `sleep` is killed at random
//!   moments from just after its start to a few hundred milliseconds in
//!   (while it sets up, starts the command, and manages it);
//! - `daemon`: a daemon managing a group (a process by command name, with
//!   each of those policies) is killed the same way, after its first
//!   change;
//! - `av-sort`: the gang scheduler, which freezes cgroups, run behind the
//!   fake PMU (it is refused without hardware counters), killed during its
//!   first second of gangs.
//!
//! After each kill and restore: every change the journal records is
//! undone where the thing changed still exists (affinity, files such as
//! frequencies, created cgroups, moved or stopped tasks), no journal or
//! hint file is left, no cgroup named after the killed process is left in
//! any hierarchy (cpuset, cpuacct, freezer, cgroup2), and the surviving
//! command has its original CPUs and cpuset back. The moments come from a
//! seeded RNG: the seed is printed, and `CHAOS_SEED=N` repeats a run.
//! Each test prints its tally (`N kills, N restored`).
//!
//! Needs root (cgroups, other processes' affinity) and two online CPUs.

use crate::support::chaos::{
    cgroups_named, journal_records, not_undone, processes_with_arg, processes_with_env,
    task_not_back,
};
use crate::support::daemon::named;
use crate::support::{ecosched_command, json, leftovers};
use ecosched_testkit::live::{allowed_list, busy_turn, has_exited, wait_for, Reap};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Kills of `ecosched run` in all, spread over the policies.
const RUN_KILLS: usize = 55;
/// Kills of a daemon per policy.
const DAEMON_KILLS_PER_POLICY: usize = 2;
/// Kills of the process managing `av-sort`'s gang groups.
const AV_SORT_KILLS: usize = 5;
/// The latest moment of a kill after the start: a run has set up and
/// applied its first plans well before.
const LATEST_KILL_MS: f64 = 400.0;

/// The seed of this test's RNG: `CHAOS_SEED`, else the clock. Printed.
fn rng(test: &str) -> ChaCha8Rng {
    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
    println!("chaos {test}: seed {seed} (CHAOS_SEED={seed} repeats it)");
    ChaCha8Rng::seed_from_u64(seed)
}

/// A moment after the start, up to [`LATEST_KILL_MS`]: more of them
/// early, where a run sets up and is the most fragile.
fn moment(rng: &mut ChaCha8Rng) -> Duration {
    let u: f64 = rng.random_range(0.0..1.0);
    Duration::from_secs_f64(u * u * LATEST_KILL_MS / 1000.0)
}

/// Every policy `doctor` says runs here, fully or degraded, with the
/// parameters it needs to start: `placed` pins the task named `TASK`
/// (which the caller replaces: a live task's name is `comm:pid`), and
/// `hilo` (in `run`, with `--parallelism 1`) is told the command has one
/// thread, so that it sizes its set to one CPU.
fn runnable_policies() -> Vec<(String, Vec<String>)> {
    let report = json(&["doctor", "--json"]);
    report["policies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| matches!(p["verdict"].as_str(), Some("runs" | "degraded")))
        .map(|p| {
            let policy = p["name"].as_str().unwrap().to_string();
            let params: Vec<String> = match policy.as_str() {
                "static" => vec!["cpus=0".into()],
                "placed" => vec!["map=TASK@0".into()],
                "fixed" => vec![format!("freq_mhz={}", lowest_mhz())],
                _ => vec![],
            };
            (policy, params)
        })
        .collect()
}

/// The lowest frequency of CPU 0 in MHz, for `fixed` on a machine with
/// cpufreq.
fn lowest_mhz() -> u64 {
    std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_min_freq")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .map_or(1000, |khz| khz / 1000)
}

/// The CPUs and cpuset every command starts with (this process's).
fn original() -> (String, String) {
    let me = std::process::id();
    let cpuset = std::fs::read_to_string(format!("/proc/{me}/cpuset")).unwrap();
    (allowed_list(me).unwrap(), cpuset.trim().to_string())
}

/// One kill's outcome: what it found not restored, and whether a change
/// was in force at the kill (the journal held one).
struct Kill {
    problems: Vec<String>,
    changes: usize,
}

/// After `ecosched` died: let its command (the processes `find` finds)
/// finish its start, run `ecosched restore` on the state directory
/// `state` and check everything was put back, with no cgroup named
/// `cgroups` left.
fn restore_and_check(state: &Path, cgroups: &str, find: impl Fn() -> Vec<u32>) -> Kill {
    // The command may be between fork and exec, in its start trampoline,
    // or still starting its own processes: it finishes that (or exits)
    // without ecosched. Settled when two looks 20 ms apart agree.
    let mut command = find();
    let settle = Instant::now() + Duration::from_secs(2);
    while Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(20));
        let again = find();
        if again == command && !command.iter().any(|&p| in_trampoline(p)) {
            break;
        }
        command = again;
    }
    // Killed however the checks end, thawed first should one be frozen.
    let _reap = Reap(command.clone());
    let records = journal_records(state);
    let out = ecosched_command()
        .args(["restore", "--state-dir"])
        .arg(state)
        .output()
        .unwrap();
    let mut problems = Vec::new();
    if !out.status.success() {
        problems.push(format!(
            "restore failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    problems.extend(not_undone(&records));
    let left = leftovers(state);
    if !left.is_empty() {
        problems.push(format!("left in the state directory: {left:?}"));
    }
    for dir in cgroups_named(cgroups) {
        problems.push(format!("cgroup {} left", dir.display()));
    }
    let (cpus, cpuset) = original();
    for &p in &command {
        problems.extend(task_not_back(p, &cpus, &cpuset));
    }
    Kill {
        problems,
        changes: records.len(),
    }
}

/// Whether `pid` is still the shell that starts a command inside its
/// cgroups (`ecosched_linux::spawn`), before it `exec`s the command.
fn in_trampoline(pid: u32) -> bool {
    !has_exited(pid)
        && std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a.ends_with(b"exec \"$@\"")))
}

/// The tally of a test: kills, how many found a change in force, how many
/// were restored, and what was not; and per policy, the kills that found
/// a change in force.
#[derive(Default)]
struct Tally {
    kills: usize,
    changed: usize,
    restored: usize,
    failures: Vec<String>,
    changed_by_policy: std::collections::BTreeMap<String, usize>,
}

impl Tally {
    fn add(&mut self, policy: &str, what: &str, kill: Kill) {
        self.kills += 1;
        self.changed += usize::from(kill.changes > 0);
        *self
            .changed_by_policy
            .entry(policy.to_string())
            .or_default() += usize::from(kill.changes > 0);
        let verdict = if kill.problems.is_empty() {
            "restored"
        } else {
            "NOT restored"
        };
        println!(
            "chaos: {what}: {} changes in force, {verdict}",
            kill.changes
        );
        if kill.problems.is_empty() {
            self.restored += 1;
        } else {
            self.failures
                .push(format!("{what}: {}", kill.problems.join("; ")));
        }
    }

    /// Print the tally; fail with every kill not restored, with fewer
    /// than `least` kills, or when a policy was never killed with a change
    /// in force (then the test only killed runs that had not started).
    fn finish(self, test: &str, least: usize) {
        println!(
            "chaos {test}: {} kills ({} with changes in force), {} restored",
            self.kills, self.changed, self.restored
        );
        assert!(
            self.failures.is_empty(),
            "not restored after {} of {} kills:\n{}",
            self.failures.len(),
            self.kills,
            self.failures.join("\n")
        );
        assert!(
            self.kills >= least,
            "{} kills, fewer than {least}",
            self.kills
        );
        let never: Vec<&String> = self
            .changed_by_policy
            .iter()
            .filter(|(_, n)| **n == 0)
            .map(|(p, _)| p)
            .collect();
        assert!(
            never.is_empty(),
            "never killed with a change in force: {never:?}"
        );
    }
}

#[test]
#[ignore = "live: root (cgroups), two online CPUs"]
fn run_killed_at_random_moments_is_restored_every_time_for_every_policy_here() {
    let mut rng = rng("run");
    let policies = runnable_policies();
    assert!(!policies.is_empty(), "doctor says no policy runs here");
    let mut tally = Tally::default();
    for i in 0..RUN_KILLS {
        let (policy, params) = &policies[i % policies.len()];
        let state = tempfile::tempdir().unwrap();
        // An argument no other process has: how the command is found.
        let token = format!("{}.{i:03}{}", 900 + i, std::process::id());
        let mut cmd = ecosched_command();
        cmd.args(["run", "--policy", policy, "--interval-ms", "20"]);
        for p in params {
            // The command's PID, which its name holds, is not known
            // before the run starts it: `placed` pins nothing, and the
            // run's changes are its cgroups.
            cmd.args(["--param", &p.replace("TASK", "sleep")]);
        }
        if policy.starts_with("hilo") {
            cmd.args(["--parallelism", "1"]);
        }
        let mut child = cmd
            .arg("--state-dir")
            .arg(state.path())
            .args(["--", "sleep", &token])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Gang groups form and freeze over the policy's first steps
        // (100 ms timeslices): any moment of its first second.
        let at = Duration::from_millis(rng.random_range(0..1000));
        std::thread::sleep(at);
        child.kill().unwrap(); // SIGKILL: no chance to undo anything.
        child.wait().unwrap();
        let what = format!("run --policy {policy} killed at {} ms", at.as_millis());
        tally.add(
            policy,
            &what,
            restore_and_check(state.path(), &format!("ecosched-{}", child.id()), || {
                processes_with_arg(&token, child.id())
            }),
        );
    }
    tally.finish("run", 50);
}

#[test]
#[ignore = "live: root (cgroups, other processes' affinity), two online CPUs"]
fn a_daemon_killed_while_managing_a_group_is_restored_for_every_policy_here() {
    let mut rng = rng("daemon");
    let mut tally = Tally::default();
    let name = format!("chaos-d{}", std::process::id());
    let policies = runnable_policies();
    for (policy, params) in policies
        .iter()
        .cycle()
        .take(policies.len() * DAEMON_KILLS_PER_POLICY)
    {
        let dir = tempfile::tempdir().unwrap();
        let token = format!("{}.{}", 800 + tally.kills, std::process::id());
        let mut sleeper = named(dir.path(), "/bin/sleep", &name, &[token.as_str()]);
        let task = format!("{name}:{}", sleeper.id());
        let params: Vec<String> = params
            .iter()
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap();
                let v = v.replace("TASK", &task);
                format!("{k} = \"{v}\"")
            })
            .collect();
        let d = dir.path().display();
        std::fs::write(
            dir.path().join("c.toml"),
            format!(
                "[daemon]\nstate_dir = \"{d}/state\"\nsocket = \"{d}/ctl.sock\"\nmetrics = \"\"\n\
                 scan_interval_ms = 50\n\n[[group]]\nname = \"chaos\"\n\
                 match = {{ command = \"{name}\" }}\npolicy = \"{policy}\"\n\
                 params = {{ {} }}\n",
                params.join(", ")
            ),
        )
        .unwrap();
        let mut daemon = ecosched_command()
            .args(["daemon", "--config"])
            .arg(dir.path().join("c.toml"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Should the daemon never change anything, neither it nor the
        // sleeper outlives the test.
        let mut reap = Reap(vec![daemon.id(), sleeper.id()]);
        // Managing first: a daemon killed before its first change is what
        // the run kills cover.
        let state = dir.path().join("state");
        wait_for("the daemon's first change", Duration::from_secs(20), || {
            !journal_records(&state).is_empty()
        });
        let at = moment(&mut rng);
        std::thread::sleep(at);
        daemon.kill().unwrap();
        daemon.wait().unwrap();
        reap.0.clear();
        let what = format!(
            "daemon with {policy} killed {} ms after its first change",
            at.as_millis()
        );
        // The group's cgroups: `ecosched-<group name>-<daemon pid>`.
        let kill = restore_and_check(&state, &format!("ecosched-chaos-{}", daemon.id()), || {
            processes_with_arg(&token, daemon.id())
        });
        tally.add(policy, &what, kill);
        let _ = sleeper.kill();
        let _ = sleeper.wait();
    }
    tally.finish("daemon", policies.len() * DAEMON_KILLS_PER_POLICY);
}

/// `av-sort` (refused on a machine without hardware counters, so run
/// here behind the fake PMU by [`crate::children::av_sort_managing_process`])
/// gang-schedules busy loops in freezer cgroups; its managing process is
/// killed at a random moment after its first change, frozen groups
/// included, and `restore` must thaw and remove them all.
#[test]
#[ignore = "live: root, a cgroup freezer"]
fn av_sort_killed_at_random_moments_is_restored_every_time() {
    let _turn = busy_turn();
    let mut rng = rng("av-sort");
    let mut tally = Tally::default();
    for _ in 0..AV_SORT_KILLS {
        let state = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let state_var = state.path().display().to_string();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "children::av_sort_managing_process", "--ignored"])
            .env("AV_STATE", &state_var)
            .env("AV_PIDS", scratch.path().join("pids"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The child and the loops it starts (they inherit its environment)
        // never outlive the test.
        let mut reap = Reap(vec![child.id()]);
        wait_for("av-sort's first change", Duration::from_secs(30), || {
            !journal_records(state.path()).is_empty()
        });
        // Gang groups form and freeze over the policy's first steps
        // (100 ms timeslices): any moment of its first second.
        let at = Duration::from_millis(rng.random_range(0..1000));
        std::thread::sleep(at);
        child.kill().unwrap();
        child.wait().unwrap();
        reap.0 = processes_with_env("AV_STATE", &state_var);
        let what = format!(
            "av-sort killed {} ms after its first change",
            at.as_millis()
        );
        let kill = restore_and_check(
            state.path(),
            &format!("ecosched-av-killed-{}", child.id()),
            || processes_with_env("AV_STATE", &state_var),
        );
        tally.add("av-sort", &what, kill);
        // Whatever the orphaned command still started is killed too.
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            reap.0 = processes_with_env("AV_STATE", &state_var);
            if reap.0.is_empty() || Instant::now() > until {
                break;
            }
            drop(std::mem::take(&mut reap));
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    tally.finish("av-sort", AV_SORT_KILLS);
}
