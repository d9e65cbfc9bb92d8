//! `ecosched run` and `ecosched restore` on this machine, for real: real
//! child processes (`stress-ng`, installed by `.ci/run`; `make` building a
//! small C project), real affinity and cpuset cgroups, a real SIGKILL;
//! calibration files checked before the command starts. They need root
//! (cgroups) and at least two online CPUs, as CI has.

use crate::support::{
    assert_left_nothing, ecosched_as_nobody, ecosched_command, leftovers, measure_only_run,
    run_with_calibration, MEASURE_ONLY,
};
use ecosched_testkit::live::{allowed_list, descendants, wait_for};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `ecosched run --policy static --param cpus=0` on two stress-ng CPU
/// workers for `seconds`, spawned with its output piped.
fn start_pinned_run(state: &Path, seconds: u32) -> Child {
    ecosched_command()
        .args([
            "run",
            "--policy",
            "static",
            "--param",
            "cpus=0",
            "--state-dir",
        ])
        .arg(state)
        .args(["--", "stress-ng", "--cpu", "2", "-t"])
        .arg(seconds.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The stress-ng workers (grandchildren of ecosched), once both exist.
fn workers(ecosched: u32) -> Vec<u32> {
    let mut found = vec![];
    wait_for("stress-ng's two workers", Duration::from_secs(20), || {
        found = descendants(ecosched);
        found.len() >= 3
    });
    found
}

/// The per-run `ecosched-<pid>` cpuset cgroups that exist now.
fn run_cgroup_dirs() -> Vec<String> {
    ["/sys/fs/cgroup/cpuset", "/sys/fs/cgroup"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|d| d.flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with("ecosched-"))
        .map(|e| e.path().display().to_string())
        .collect()
}

#[test]
#[ignore = "live: root (cpuset cgroups), stress-ng"]
fn a_pinning_policy_confines_every_process_of_the_command_and_the_summary_follows() {
    let original = allowed_list(std::process::id()).unwrap();
    let state = tempfile::tempdir().unwrap();
    let child = start_pinned_run(state.path(), 3);
    let pids = workers(child.id());
    for &p in &pids {
        wait_for(
            "the pin to show in Cpus_allowed_list",
            Duration::from_secs(10),
            || allowed_list(p).is_none_or(|l| l == "0"),
        );
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for needle in [
        "wall time (s)",
        "CPU time (s)",
        "energy (J)",
        "stress-ng-cpu:",
    ] {
        assert!(
            stdout.contains(needle),
            "summary lacks {needle:?}:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("ESTIMATED") || stdout.contains("measured"),
        "{stdout}"
    );
    assert!(
        stderr.contains("frequency control unavailable")
            || Path::new("/sys/devices/system/cpu/cpufreq/policy0").exists(),
        "the run says frequency control is missing:\n{stderr}"
    );
    assert_eq!(allowed_list(std::process::id()).unwrap(), original);
    assert_left_nothing(state.path());
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine"]
fn run_exits_with_the_commands_status_and_json_uses_the_sim_field_names() {
    let state = tempfile::tempdir().unwrap();
    let out = measure_only_run()
        .args(["--json", "--interval-ms", "50", "--state-dir"])
        .arg(state.path())
        .args(["--", "sh", "-c", "sleep 0.3; exit 7"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "policy",
        "machine",
        "makespan_s",
        "energy_j",
        "avg_power_w",
        "edp_js",
        "instructions",
        "migrations",
        "energy_meter",
        "tasks",
        "wall_s",
        "cpu_s",
        "energy_source",
        "exit_code",
        "policy_notes",
    ] {
        assert!(v.get(key).is_some(), "run --json lacks {key}: {v}");
    }
    assert_eq!(v["exit_code"], 7);
    assert!(v["wall_s"].as_f64().unwrap() >= 0.3);
}

#[test]
#[ignore = "live: this machine's cpufreq (a run refused without it)"]
fn a_policy_the_machine_cannot_serve_is_refused_before_the_command_starts() {
    let state = tempfile::tempdir().unwrap();
    let marker = state.path().join("started");
    let out = ecosched_command()
        .args([
            "run",
            "--policy",
            "fixed",
            "--param",
            "freq_mhz=1600",
            "--state-dir",
        ])
        .arg(state.path())
        .arg("--")
        .arg("touch")
        .arg(&marker)
        .output()
        .unwrap();
    if Path::new("/sys/devices/system/cpu/cpufreq")
        .read_dir()
        .is_ok_and(|mut d| d.next().is_some())
    {
        return; // A machine with cpufreq can serve it; nothing to check here.
    }
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("frequency control"), "{stderr}");
    assert!(!marker.exists(), "the command must not have run");
}

#[test]
#[ignore = "live: root (cpuset cgroups), stress-ng"]
fn after_sigkill_restore_puts_every_affinity_and_cpuset_back() {
    let state = tempfile::tempdir().unwrap();
    let mut child = start_pinned_run(state.path(), 30);
    let pids = workers(child.id());
    for &p in &pids {
        wait_for("the pin", Duration::from_secs(10), || {
            allowed_list(p).is_none_or(|l| l == "0")
        });
    }
    let cgroups: Vec<String> = pids
        .iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/cpuset")).ok())
        .collect();
    assert!(
        cgroups.iter().all(|c| c.contains("/ecosched-")),
        "{cgroups:?}"
    );

    child.kill().unwrap(); // SIGKILL: no chance to undo anything.
    child.wait().unwrap();
    let journals = leftovers(state.path()).len();
    assert!(journals >= 1, "the journal survives SIGKILL");

    let out = ecosched_command()
        .args(["restore", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    for p in &pids {
        if let Some(list) = allowed_list(*p) {
            assert_eq!(
                list,
                online.trim(),
                "process {p} still confined after restore:\n{text}"
            );
            let cg = std::fs::read_to_string(format!("/proc/{p}/cpuset")).unwrap();
            assert!(!cg.contains("ecosched"), "process {p} still in {cg}");
        }
    }
    let run_dir = format!("ecosched-{}", child.id());
    let leftover: Vec<String> = run_cgroup_dirs()
        .into_iter()
        .filter(|d| d.ends_with(&run_dir))
        .collect();
    assert!(leftover.is_empty(), "cgroups left behind: {leftover:?}");
    for p in pids {
        let _ = Command::new("kill")
            .arg(p.to_string())
            .stderr(Stdio::null())
            .status();
    }
    let again = ecosched_command()
        .args(["restore", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to restore"));
}

#[test]
#[ignore = "live: root (to run as nobody with setpriv)"]
fn without_root_the_error_names_what_is_needed_and_nothing_is_left() {
    let state = tempfile::tempdir().unwrap();
    // `nobody` owns the state directory (a shared, world-writable one is
    // refused), so it may write the journal there, but not create cgroups.
    std::os::unix::fs::chown(state.path(), Some(65534), Some(65534)).unwrap();
    let out = ecosched_as_nobody()
        .args([
            "run",
            "--policy",
            "static",
            "--param",
            "cpus=0",
            "--state-dir",
        ])
        .arg(state.path())
        .args(["--", "sleep", "5"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // ecosched's own failure (125), found before the command starts.
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("needs root (cgroup cpusets)"), "{stderr}");
    assert_left_nothing(state.path());
}

#[test]
#[ignore = "live: root (cpuset cgroups)"]
fn sigterm_restores_the_machine_and_is_forwarded_to_the_command() {
    let state = tempfile::tempdir().unwrap();
    let child = ecosched_command()
        .args([
            "run",
            "--policy",
            "static",
            "--param",
            "cpus=0",
            "--state-dir",
        ])
        .arg(state.path())
        .args(["--", "sleep", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut sleeper = vec![];
    wait_for(
        "the command to start and be pinned",
        Duration::from_secs(20),
        || {
            sleeper = descendants(child.id());
            sleeper.len() == 1 && allowed_list(sleeper[0]).as_deref() == Some("0")
        },
    );
    let pid = child.id();
    Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(128 + 15),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        allowed_list(sleeper[0]).is_none(),
        "the command got SIGTERM too"
    );
    assert_left_nothing(state.path());
    let run_dir = format!("ecosched-{pid}");
    assert!(run_cgroup_dirs().iter().all(|d| !d.ends_with(&run_dir)));
}

/// A small C project whose files take a moment each to compile.
pub(super) fn c_project(dir: &Path) {
    let mut objects = vec![];
    for i in 0..6 {
        let mut src = format!("int f{i}(int x) {{\n  int y = x;\n");
        for k in 0..3000 {
            src.push_str(&format!(
                "  y = y * {} + (y >> {});\n",
                k % 7 + 3,
                k % 5 + 1
            ));
        }
        src.push_str("  return y;\n}\n");
        std::fs::write(dir.join(format!("f{i}.c")), src).unwrap();
        objects.push(format!("f{i}.o"));
    }
    let calls: String = (0..6).map(|i| format!("f{i}(argc) + ")).collect();
    let decls: String = (0..6).map(|i| format!("int f{i}(int);\n")).collect();
    std::fs::write(
        dir.join("main.c"),
        format!(
            "{decls}int main(int argc, char **argv) {{ (void)argv; return ({calls}0) & 0; }}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("Makefile"),
        format!(
            "prog: main.o {o}\n\tcc -o $@ $^\n%.o: %.c\n\tcc -O2 -c $< -o $@\n",
            o = objects.join(" ")
        ),
    )
    .unwrap();
}

#[test]
#[ignore = "live: root (cpuset cgroups), make and a C compiler"]
fn hilo_manages_a_real_make_j2_with_affinity_and_says_frequency_control_is_missing() {
    let project = tempfile::tempdir().unwrap();
    c_project(project.path());
    let state = tempfile::tempdir().unwrap();
    // Parallelism 1 declared and no spare: H is one CPU, so the pin shows.
    let child = ecosched_command()
        .args([
            "run",
            "--policy",
            "hilo",
            "--parallelism",
            "1",
            "--param",
            "spare_with_hint=0",
        ])
        .arg("--state-dir")
        .arg(state.path())
        .args(["--", "make", "-j2", "-C"])
        .arg(project.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ecosched = child.id();
    let (mut pinned, mut seen) = (false, false);
    let until = Instant::now() + Duration::from_secs(120);
    while Instant::now() < until && !pinned {
        let tree = descendants(ecosched);
        pinned = tree
            .iter()
            .filter_map(|&p| allowed_list(p))
            .any(|l| !l.contains(['-', ',']));
        if seen && tree.is_empty() {
            break; // the build is over
        }
        seen |= !tree.is_empty();
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(project.path().join("prog").exists(), "the build finished");
    assert!(pinned, "hilo confined the build to one CPU while it ran");
    if !Path::new("/sys/devices/system/cpu/cpufreq/policy0").exists() {
        assert!(stderr.contains("frequency control unavailable"), "{stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The summary's key column is as wide as its longest key, and the
        // policy's statistics rows (`policy: …`) can be the longest.
        let says_so = stdout.lines().any(|l| {
            l.strip_prefix("frequency control")
                .is_some_and(|v| v.trim_start().starts_with("unavailable: no cpufreq"))
        });
        assert!(says_so, "the summary says so too:\n{stdout}");
    }
    assert_left_nothing(state.path());
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine"]
fn a_bad_calibration_file_is_a_located_error_and_nothing_starts() {
    let (code, stderr, ran) = run_with_calibration(
        MEASURE_ONLY,
        "source = \"lab\"\n[edp_factor]\nintercept = 1.6\nslop = -0.8\n",
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!ran, "the command must not have run");
    assert!(
        stderr.contains("cal.toml:4") && stderr.contains("edp_factor.slop"),
        "file, line and key named:\n{stderr}"
    );
    let (code, stderr, ran) = run_with_calibration(MEASURE_ONLY, "partition = \"4@800,x@2400\"\n");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!ran && stderr.contains("partition"), "{stderr}");
    // Valid TOML, but not for this machine: 64 CPUs at 800 MHz.
    let (code, stderr, ran) = run_with_calibration(MEASURE_ONLY, "partition = \"64@800\"\n");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        !ran && stderr.contains("cal.toml: key `partition`"),
        "{stderr}"
    );
}

#[test]
#[ignore = "live: a real `ecosched run` on this machine"]
fn a_good_calibration_file_is_accepted() {
    let (code, stderr, ran) = run_with_calibration(
        MEASURE_ONLY,
        "source = \"measured on this machine\"\n[edp_factor]\nintercept = 1.6\nslope = -0.8\n",
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(ran);
}

/// A `[events]` entry libpfm4 cannot encode stops `run` before the
/// command starts, naming the file, the key and libpfm4's message.
#[test]
#[ignore = "live: libpfm4"]
fn an_unknown_event_in_the_config_stops_the_run_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("run.toml");
    std::fs::write(&config, "[events]\nlines_in = \"L2_LINES_INN:ALL\"\n").unwrap();
    let marker = dir.path().join("started");
    let out = measure_only_run()
        .args(["--config"])
        .arg(&config)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .arg("--")
        .arg("touch")
        .arg(&marker)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: key `events.lines_in`: libpfm4 cannot encode \"L2_LINES_INN:ALL\": event not found",
            config.display()
        )),
        "{stderr}"
    );
    assert!(!marker.exists());
}
