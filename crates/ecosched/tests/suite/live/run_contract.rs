//! The contract of `ecosched run`, with real processes: a run is checked
//! before anything starts, its command starts inside its cgroups, a
//! signal to ecosched reaches every process of the run, its CPU time
//! counts exited processes, and its own outcomes have unambiguous exit
//! statuses and messages. Needs root (cgroups), as CI has; the
//! unprivileged cases drop to `nobody` with `setpriv` (util-linux).

use crate::support::{ecosched_as_nobody, ecosched_command, leftovers, stderr};
use ecosched_testkit::live::{descendants, has_exited, wait_for};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// `ecosched run --state-dir STATE ARGS…`, waited for.
fn run(state: &Path, args: &[&str]) -> Output {
    ecosched_command()
        .arg("run")
        .arg("--state-dir")
        .arg(state)
        .args(args)
        .output()
        .unwrap()
}

/// The command name of `pid` (`/proc/<pid>/comm`), empty once it is gone.
fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// How many CPUs this process may run on.
fn online_cpus() -> usize {
    std::thread::available_parallelism().unwrap().get()
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine"]
fn a_plan_this_machine_cannot_carry_out_runs_nothing_and_exits_2() {
    let state = tempfile::tempdir().unwrap();
    let marker = state.path().join("ran");
    let cpus = format!("cpus={}", online_cpus() + 3);
    let o = ecosched_command()
        .args(["run", "--state-dir"])
        .arg(state.path())
        .args(["--policy", "static", "--param", &cpus, "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!marker.exists(), "the command ran");
    assert!(stderr(&o).contains("nothing was run"), "{}", stderr(&o));
    assert!(stderr(&o).contains("cpus"), "{}", stderr(&o));
}

#[test]
#[ignore = "live: root (cpuset cgroups)"]
fn the_command_starts_inside_its_cpuset_every_time() {
    let state = tempfile::tempdir().unwrap();
    for attempt in 0..5 {
        let o = run(
            state.path(),
            &["--policy", "static", "--param", "cpus=0", "--", "nproc"],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            out.lines().next(),
            Some("1"),
            "attempt {attempt}: nproc saw more than the one CPU of its cpuset:\n{out}"
        );
    }
    assert_eq!(leftovers(state.path()).len(), 0);
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine"]
fn sigterm_and_sigint_reach_every_process_of_the_run() {
    for signal in [libc_sig::TERM, libc_sig::INT] {
        let state = tempfile::tempdir().unwrap();
        let mut eco = ecosched_command()
            .args(["run", "--state-dir"])
            .arg(state.path())
            .args([
                "--policy",
                "placed",
                "--param",
                "map=ecosched-no-task@0",
                "--",
                "sh",
                "-c",
                "sleep 25 & sleep 26 & wait",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut sleeps = Vec::new();
        wait_for("both sleeps", Duration::from_secs(10), || {
            sleeps = descendants(eco.id())
                .into_iter()
                .filter(|&p| comm(p) == "sleep")
                .collect();
            sleeps.len() == 2
        });
        Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(eco.id().to_string())
            .status()
            .unwrap();
        let status = eco.wait().unwrap();
        assert!(!status.success(), "{signal}: {status:?}");
        wait_for(
            &format!("the sleeps to end after SIG{signal}"),
            Duration::from_secs(5),
            || sleeps.iter().all(|&p| has_exited(p)),
        );
        assert_eq!(leftovers(state.path()).len(), 0);
    }
}

/// Signal names for `kill -NAME`.
mod libc_sig {
    pub const TERM: &str = "TERM";
    pub const INT: &str = "INT";
}

/// Run `script` under ecosched with `--json`; the script ends with the
/// shell's `times` (its children's user and system time, which every
/// process of the run is, written to a file), so the two figures are of
/// the very same processes. Returns (ecosched's cpu_s, the shell's
/// user+sys, the summary).
fn cpu_against_times(script: &str) -> (f64, f64, serde_json::Value) {
    let state = tempfile::tempdir().unwrap();
    let times = state.path().join("times");
    let full = format!("{script}; times > {}", times.display());
    let o = ecosched_command()
        .args(["run", "--json", "--state-dir"])
        .arg(state.path())
        .args([
            "--policy",
            "placed",
            "--param",
            "map=ecosched-no-task@0",
            "--",
            "sh",
            "-c",
            &full,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = std::fs::read_to_string(&times).unwrap();
    // dash: "0m0.00s 0m0.00s\n0m1.86s 0m0.16s\n" (the shell, its children).
    let children = text.lines().nth(1).unwrap();
    let secs: f64 = children
        .split_whitespace()
        .map(|f| {
            let (m, s) = f.trim_end_matches('s').split_once('m').unwrap();
            m.parse::<f64>().unwrap() * 60.0 + s.parse::<f64>().unwrap()
        })
        .sum();
    (summary["cpu_s"].as_f64().unwrap(), secs, summary)
}

#[test]
#[ignore = "live: root (the run's accounting cgroup), python3"]
fn cpu_time_counts_short_lived_processes() {
    for script in [
        "for i in $(seq 30); do python3 -c 'sum(range(300000))'; done",
        "for i in $(seq 3000); do /bin/true; done",
    ] {
        let (cpu_s, times_s, summary) = cpu_against_times(script);
        assert!(
            cpu_s >= 0.95 * times_s,
            "{script}: ecosched counted {cpu_s:.3} s, the shell's children used {times_s:.3} s"
        );
        assert!(
            summary["cpu_source"]
                .as_str()
                .unwrap()
                .contains("the run's cgroup"),
            "{summary}"
        );
        // Energy is the machine's, labelled so; the run's share is at most it.
        assert_eq!(summary["energy_scope"], "machine-wide");
        let all = summary["energy_j"].as_f64().unwrap();
        let share = summary["energy_attributed_j"].as_f64().unwrap();
        assert!(share > 0.0 && share <= all, "{share} of {all}");
    }
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine"]
fn a_missing_or_unexecutable_command_exits_like_a_shell() {
    let state = tempfile::tempdir().unwrap();
    let o = run(
        state.path(),
        &[
            "--policy",
            "placed",
            "--param",
            "map=ecosched-no-task@0",
            "--",
            "no-such-command-ecosched",
        ],
    );
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    assert!(stderr(&o).contains("not found"), "{}", stderr(&o));
    let plain = state.path().join("plain.sh");
    std::fs::write(&plain, "#!/bin/sh\necho ran\n").unwrap();
    let o = run(
        state.path(),
        &[
            "--policy",
            "placed",
            "--param",
            "map=ecosched-no-task@0",
            "--",
            plain.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(126), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let o = run(
        state.path(),
        &[
            "--policy",
            "placed",
            "--param",
            "map=ecosched-no-task@0",
            "--",
            "/etc",
        ],
    );
    assert_eq!(o.status.code(), Some(126), "{}", stderr(&o));
    // The command's own statuses come through unchanged.
    let o = run(
        state.path(),
        &[
            "--policy",
            "placed",
            "--param",
            "map=ecosched-no-task@0",
            "--",
            "sh",
            "-c",
            "exit 125",
        ],
    );
    assert_eq!(o.status.code(), Some(125));
    assert_eq!(leftovers(state.path()).len(), 1);
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine"]
fn ecosched_failures_exit_125_and_bad_input_is_named() {
    let state = tempfile::tempdir().unwrap();
    // A state directory that cannot be made: ecosched's own failure.
    let o = ecosched_command()
        .args([
            "run",
            "--state-dir",
            "/proc/ecosched-cannot-exist",
            "--policy",
            "placed",
            "--param",
            "map=ecosched-no-task@0",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    let o = ecosched_command()
        .args([
            "run",
            "--state-dir",
            "/etc/passwd",
            "--policy",
            "placed",
            "--param",
            "map=ecosched-no-task@0",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a directory"), "{}", stderr(&o));
    let o = run(
        state.path(),
        &[
            "--policy",
            "fixed",
            "--param",
            "freq_mhz=-1600",
            "--",
            "true",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("freq_mhz=-1600") && e.contains("valid values"),
        "{e}"
    );
}

/// `ecosched run` as user `nobody`.
fn as_nobody(args: &[&str]) -> Output {
    ecosched_as_nobody().arg("run").args(args).output().unwrap()
}

#[test]
#[ignore = "live: root (to run as nobody with setpriv)"]
fn without_root_the_missing_capability_is_named_and_a_state_dir_suggested() {
    let o = as_nobody(&[
        "--state-dir",
        "/run/ecosched-test-root-only",
        "--policy",
        "placed",
        "--param",
        "map=ecosched-no-task@0",
        "--",
        "true",
    ]);
    // /run is root's: the journal cannot be written there.
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("permission denied") && e.contains("root") && e.contains("--state-dir"),
        "{e}"
    );
    // With a state directory it may write, a run that needs no cgroup
    // works, and says where its CPU time came from.
    let state = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(state.path(), Some(65534), Some(65534)).unwrap();
    let dir = state.path().to_str().unwrap().to_string();
    let o = as_nobody(&[
        "--state-dir",
        &dir,
        "--json",
        "--policy",
        "placed",
        "--param",
        "map=ecosched-no-task@0",
        "--",
        "true",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        summary["cpu_source"]
            .as_str()
            .unwrap()
            .contains("no accounting cgroup"),
        "{summary}"
    );
    // A cpuset needs root, and the refusal says so before anything runs.
    let o = as_nobody(&[
        "--state-dir",
        &dir,
        "--policy",
        "static",
        "--param",
        "cpus=0",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("needs root (cgroup cpusets)"),
        "{}",
        stderr(&o)
    );
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine"]
fn the_estimated_power_model_is_named_and_can_be_chosen() {
    if Path::new("/sys/class/powercap/intel-rapl:0").exists() {
        return; // measured here: no model is used
    }
    let state = tempfile::tempdir().unwrap();
    let model = state.path().join("big-uncore.toml");
    std::fs::write(
        &model,
        "idle_w_per_core = 0.0\nbusy_static_w_per_core = 0.0\ndynamic_max_w_per_core = 0.0\nuncore_w_per_package = 1000.0\nvoltage_slope = 0.0\n",
    )
    .unwrap();
    let summary = |extra: &[&str]| -> serde_json::Value {
        let o = ecosched_command()
            .args(["run", "--json", "--state-dir"])
            .arg(state.path())
            .args(extra)
            .args([
                "--policy",
                "placed",
                "--param",
                "map=ecosched-no-task@0",
                "--",
                "sleep",
                "0.3",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    // This VM's CPU is no preset's: the generic model, called an estimate,
    // and never the Q6600's figures.
    let default = summary(&[]);
    let named = default["power_model"].as_str().unwrap();
    assert!(
        named.starts_with("generic") && named.contains("ESTIMATE") && !named.contains("Q6600"),
        "{default}"
    );
    let chosen = summary(&["--power-model", model.to_str().unwrap()]);
    assert!(
        chosen["power_model"]
            .as_str()
            .unwrap()
            .contains("big-uncore.toml"),
        "{chosen}"
    );
    // 1000 W of uncore, whatever the load: the model was used.
    let power = chosen["avg_power_w"].as_f64().unwrap();
    assert!((power - 1000.0).abs() < 1.0, "{power} W");
    let o = ecosched_command()
        .args(["run", "--state-dir"])
        .arg(state.path())
        .args([
            "--power-model",
            "no-such-model",
            "--policy",
            "placed",
            "--param",
            "map=ecosched-no-task@0",
        ])
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--power-model no-such-model"),
        "{}",
        stderr(&o)
    );
}
