//! Every way a signal ends `ecosched run` is undone: each terminating
//! signal sent to `run` leaves the run's processes released (affinity back
//! to every CPU, no ecosched cgroup, no journal), and a `SIGTERM` reaches a
//! run that keeps forking all at once, so no process escapes it. Real
//! processes; root (cgroups), as the other `run` tests.

use crate::support::{ecosched_command, leftovers, measure_only_run};
use ecosched_testkit::live::{allowed_list, descendants, has_exited, wait_for};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The signals that end a run, by name for `kill -NAME`, and whether a
/// process of the run that ignores the signal is killed (the signals that
/// mean "end the work") or goes on, released.
const MATRIX: [(&str, bool); 11] = [
    ("HUP", false),
    ("INT", true),
    ("TERM", true),
    ("QUIT", true),
    ("USR1", false),
    ("USR2", false),
    ("ALRM", false),
    ("XCPU", false),
    ("XFSZ", false),
    ("VTALRM", false),
    ("PROF", false),
];

/// The command name of `pid`, empty once it is gone.
fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Cgroup directories of any hierarchy named after the run of ecosched
/// `pid` (`<name>-<pid>`), a few levels down from `/sys/fs/cgroup`.
fn cgroups_of_run(pid: u32) -> Vec<String> {
    let suffix = format!("-{pid}");
    let mut found = Vec::new();
    let mut dirs = vec![(std::path::PathBuf::from("/sys/fs/cgroup"), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if e.file_name().to_string_lossy().ends_with(&suffix) {
                found.push(path.display().to_string());
            }
            if depth < 4 {
                dirs.push((path, depth + 1));
            }
        }
    }
    found
}

/// The CPUs this test may use, as a `Cpus_allowed_list`.
fn all_cpus() -> String {
    allowed_list(std::process::id()).unwrap()
}

/// `ecosched run` confining (CPU 0) a `sleep` that ignores every signal
/// of the matrix, as `nohup` does `SIGHUP`.
fn confined_nohup_sleep(state: &Path) -> Child {
    let ignore: Vec<&str> = MATRIX.iter().map(|(s, _)| *s).collect();
    ecosched_command()
        .args(["run", "--state-dir"])
        .arg(state)
        .args(["--policy", "static", "--param", "cpus=0", "--", "sh", "-c"])
        .arg(format!("trap '' {}; exec sleep 60", ignore.join(" ")))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
#[ignore = "live: root (cpuset and accounting cgroups)"]
fn every_terminating_signal_undoes_the_run() {
    if all_cpus() == "0" {
        eprintln!("skipped: one CPU, nothing to confine");
        return;
    }
    let states: Vec<_> = MATRIX
        .iter()
        .map(|_| tempfile::tempdir().unwrap())
        .collect();
    let mut runs: Vec<Child> = states
        .iter()
        .map(|s| confined_nohup_sleep(s.path()))
        .collect();
    // Each run's sleep, once it is confined: the run has changed things.
    let sleeps: Vec<u32> = runs
        .iter()
        .map(|eco| {
            let mut sleep = 0;
            wait_for("a confined sleep", Duration::from_secs(20), || {
                sleep = descendants(eco.id())
                    .into_iter()
                    .find(|&p| comm(p) == "sleep")
                    .unwrap_or(0);
                sleep != 0 && allowed_list(sleep).as_deref() == Some("0")
            });
            sleep
        })
        .collect();
    for ((name, _), eco) in MATRIX.iter().zip(&runs) {
        Command::new("kill")
            .arg(format!("-{name}"))
            .arg(eco.id().to_string())
            .status()
            .unwrap();
    }
    let mut failures = Vec::new();
    for (i, eco) in runs.iter_mut().enumerate() {
        let (name, kills) = MATRIX[i];
        let pid = eco.id();
        let status = eco.wait().unwrap();
        let sleep = sleeps[i];
        if kills {
            if !has_exited(sleep) {
                failures.push(format!(
                    "SIG{name}: the sleep {sleep} that ignores it lives on"
                ));
            }
        } else if let Some(cpus) = allowed_list(sleep).filter(|c| *c != all_cpus()) {
            failures.push(format!(
                "SIG{name}: the sleep {sleep} is still confined to CPUs {cpus}"
            ));
        }
        let cgroups = cgroups_of_run(pid);
        if !cgroups.is_empty() {
            failures.push(format!("SIG{name}: cgroups left: {cgroups:?}"));
        }
        let left = leftovers(states[i].path());
        if !left.is_empty() {
            failures.push(format!("SIG{name} ({status:?}): left {left:?}"));
        }
    }
    ecosched_testkit::live::kill(&sleeps);
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Processes whose environment holds `marker`, with their state letter.
fn marked(marker: &str) -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == marker.as_bytes()))
        })
        .filter_map(|p| {
            let state = ecosched_testkit::live::stat_fields(p)?.first()?.clone();
            Some((p, state))
        })
        .collect()
}

/// The live (not zombie) processes of `marker`.
fn live_marked(marker: &str) -> Vec<u32> {
    marked(marker)
        .into_iter()
        .filter(|(_, s)| s != "Z" && s != "X")
        .map(|(p, _)| p)
        .collect()
}

/// Stop and kill every live process of `marker` until none is left.
fn kill_marked(marker: &str) {
    for _ in 0..200 {
        let live = live_marked(marker);
        if live.is_empty() {
            return;
        }
        for p in &live {
            let _ = Command::new("kill")
                .args(["-STOP", &p.to_string()])
                .status();
        }
        ecosched_testkit::live::kill(&live);
    }
}

#[test]
#[ignore = "live: root (the run's accounting cgroup), bash"]
fn sigterm_ends_a_forking_chain_that_ignores_it_with_nothing_escaping() {
    let dir = tempfile::tempdir().unwrap();
    let chain = dir.path().join("chain.sh");
    // Each link ignores SIGTERM, starts the next and exits: the chain's
    // processes change every few milliseconds.
    std::fs::write(&chain, "trap '' TERM\nsleep 0.01\nbash \"$0\" &\n").unwrap();
    for trial in 0..2 {
        let marker = format!("ECOSCHED_CHAIN={}-{trial}", std::process::id());
        let state = dir.path().join(format!("state-{trial}"));
        let mut eco = measure_only_run()
            .arg("--state-dir")
            .arg(&state)
            .args([
                "--",
                "bash",
                "-c",
                "trap '' TERM; bash \"$0\" & while :; do sleep 1; done",
            ])
            .arg(&chain)
            .env(
                marker.split_once('=').unwrap().0,
                marker.split_once('=').unwrap().1,
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for("the chain to run", Duration::from_secs(10), || {
            marked(&marker).len() >= 3
        });
        std::thread::sleep(Duration::from_millis(300));
        let pid = eco.id();
        Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        let status = eco.wait().unwrap();
        // An escaped link would go on forking: look twice.
        std::thread::sleep(Duration::from_millis(300));
        let first = live_marked(&marker);
        std::thread::sleep(Duration::from_millis(300));
        let second = live_marked(&marker);
        let cgroups = cgroups_of_run(pid);
        let left = leftovers(&state);
        kill_marked(&marker);
        assert!(
            first.is_empty() && second.is_empty(),
            "trial {trial} ({status:?}): processes of the chain escaped SIGTERM: {first:?}, then {second:?}"
        );
        assert!(
            cgroups.is_empty(),
            "trial {trial}: cgroups left: {cgroups:?}"
        );
        assert!(left.is_empty(), "trial {trial}: left {left:?}");
    }
}
