//! `ecosched run` and `ecosched restore` on this machine, for real: real
//! child processes (`stress-ng`, installed by `.ci/run`), real affinity and
//! cpuset cgroups, a real SIGKILL. They need root (cgroups) and at least two
//! online CPUs, as CI has.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("ecosched"))
}

fn allowed_list(pid: u32) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

/// Every descendant of `pid` (by walking `/proc/*/stat` parent links).
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: u32 = after.split(' ').nth(1).unwrap().parse().unwrap();
        parent_of.push((p, ppid));
    }
    let mut out = vec![];
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for &(c, pp) in &parent_of {
            if pp == p {
                out.push(c);
                frontier.push(c);
            }
        }
    }
    out
}

/// The journal and the hint file are gone: the run undid everything.
fn assert_left_nothing(state: &Path) {
    let left: Vec<_> = std::fs::read_dir(state)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left in the state directory: {left:?}");
}

/// Wait until `f` holds, or fail after `secs` saying what was awaited.
fn wait_for(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn start_pinned_run(state: &Path, seconds: u32) -> Child {
    bin()
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
    wait_for(20, "stress-ng's two workers", || {
        found = descendants(ecosched);
        found.len() >= 3
    });
    found
}

#[test]
fn a_pinning_policy_confines_every_process_of_the_command_and_the_summary_follows() {
    let original = allowed_list(std::process::id()).unwrap();
    let state = tempfile::tempdir().unwrap();
    let child = start_pinned_run(state.path(), 3);
    let pids = workers(child.id());
    for &p in &pids {
        wait_for(10, "the pin to show in Cpus_allowed_list", || {
            allowed_list(p).is_none_or(|l| l == "0")
        });
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
fn run_exits_with_the_commands_status_and_json_uses_the_sim_field_names() {
    let state = tempfile::tempdir().unwrap();
    let out = bin()
        .args([
            "run",
            "--policy",
            "performance",
            "--json",
            "--interval-ms",
            "50",
            "--state-dir",
        ])
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
        "policy_stats",
    ] {
        assert!(v.get(key).is_some(), "run --json lacks {key}: {v}");
    }
    assert_eq!(v["exit_code"], 7);
    assert!(v["wall_s"].as_f64().unwrap() >= 0.3);
}

#[test]
fn a_policy_the_machine_cannot_serve_is_refused_before_the_command_starts() {
    let state = tempfile::tempdir().unwrap();
    let marker = state.path().join("started");
    let out = bin()
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
fn after_sigkill_restore_puts_every_affinity_and_cpuset_back() {
    let state = tempfile::tempdir().unwrap();
    let mut child = start_pinned_run(state.path(), 30);
    let pids = workers(child.id());
    for &p in &pids {
        wait_for(10, "the pin", || allowed_list(p).is_none_or(|l| l == "0"));
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
    let journals = std::fs::read_dir(state.path()).unwrap().count();
    assert!(journals >= 1, "the journal survives SIGKILL");

    let out = bin()
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
    let again = bin()
        .args(["restore", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to restore"));
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
fn without_root_the_error_names_what_is_needed_and_nothing_is_left() {
    let state = tempfile::tempdir().unwrap();
    // `nobody` owns the state directory (a shared, world-writable one is
    // refused), so it may write the journal there, but not create cgroups.
    std::os::unix::fs::chown(state.path(), Some(65534), Some(65534)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(assert_cmd::cargo::cargo_bin("ecosched"))
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
fn sigterm_restores_the_machine_and_is_passed_on_to_the_command() {
    let state = tempfile::tempdir().unwrap();
    let child = bin()
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
    wait_for(20, "the command to start and be pinned", || {
        sleeper = descendants(child.id());
        sleeper.len() == 1 && allowed_list(sleeper[0]).as_deref() == Some("0")
    });
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

#[test]
fn pam_is_refused_here_naming_the_missing_events() {
    if std::process::Command::new("perf")
        .args(["stat", "-e", "instructions", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return; // A machine with a PMU runs PAM; this VM has none.
    }
    let state = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["run", "--policy", "pam", "--state-dir"])
        .arg(state.path())
        .args(["--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for event in ["Instructions", "Cycles", "LlcMisses", "L1dMisses"] {
        assert!(
            stderr.contains(event),
            "the refusal names {event}:\n{stderr}"
        );
    }
}

#[test]
fn with_a_pmu_behind_the_seam_the_linux_platform_serves_pam() {
    use ecosched_linux::perf::FakePerf;
    use ecosched_linux::platform::{LinuxOptions, LinuxPlatform};
    use ecosched_model::Platform;
    let state = tempfile::tempdir().unwrap();
    let options = LinuxOptions {
        state_dir: state.path().to_path_buf(),
        ..LinuxOptions::default()
    };
    let pam = ecosched_policy::build("pam", &ecosched_policy::Params::default()).unwrap();
    let with_pmu = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options)
        .perf(Box::new(FakePerf::new()))
        .build()
        .unwrap();
    assert_eq!(
        pam.requirements().missing(&with_pmu.capabilities()),
        Vec::<String>::new()
    );
    drop(with_pmu);
    let without = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options)
        .perf(Box::new(FakePerf::new().without_pmu()))
        .build()
        .unwrap();
    let missing = pam
        .requirements()
        .missing(&without.capabilities())
        .join("; ");
    assert!(
        missing.contains("Instructions") && missing.contains("LlcMisses"),
        "{missing}"
    );
}

/// A small C project whose files take a moment each to compile.
fn c_project(dir: &Path) {
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
fn hilo_manages_a_real_make_j2_with_affinity_and_says_frequency_control_is_missing() {
    let project = tempfile::tempdir().unwrap();
    c_project(project.path());
    let state = tempfile::tempdir().unwrap();
    // Parallelism 1 declared and no spare: H is one CPU, so the pin shows.
    let child = bin()
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
        assert!(
            stdout.contains("frequency control  unavailable: no cpufreq"),
            "the summary says so too:\n{stdout}"
        );
    }
    assert_left_nothing(state.path());
}

/// `run --calibration FILE` with `text` in FILE; the command touches a
/// marker. Returns the exit code, stderr and whether the command ran.
fn run_with_calibration(text: &str) -> (Option<i32>, String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cal.toml");
    std::fs::write(&file, text).unwrap();
    let marker = dir.path().join("started");
    let out = bin()
        .args(["run", "--policy", "performance", "--calibration"])
        .arg(&file)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .arg("--")
        .arg("touch")
        .arg(&marker)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        marker.exists(),
    )
}

#[test]
fn a_bad_calibration_file_is_a_located_error_and_nothing_starts() {
    let (code, stderr, ran) =
        run_with_calibration("source = \"lab\"\n[edp_factor]\nintercept = 1.6\nslop = -0.8\n");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!ran, "the command must not have run");
    assert!(
        stderr.contains("cal.toml:4") && stderr.contains("edp_factor.slop"),
        "file, line and key named:\n{stderr}"
    );
    let (code, stderr, ran) = run_with_calibration("partition = \"4@800,x@2400\"\n");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!ran && stderr.contains("partition"), "{stderr}");
    // Valid TOML, but not for this machine: 64 CPUs at 800 MHz.
    let (code, stderr, ran) = run_with_calibration("partition = \"64@800\"\n");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        !ran && stderr.contains("cal.toml: key `partition`"),
        "{stderr}"
    );
}

#[test]
fn a_good_calibration_file_is_accepted() {
    let (code, stderr, ran) = run_with_calibration(
        "source = \"measured on this machine\"\n[edp_factor]\nintercept = 1.6\nslope = -0.8\n",
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(ran);
}

/// Issue #10: WCA needs the instruction, cycle and LLC-reference events;
/// on a machine without a PMU it is refused before the command starts,
/// naming them.
#[test]
fn wca_is_refused_here_naming_the_missing_events() {
    if std::process::Command::new("perf")
        .args(["stat", "-e", "instructions", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return; // A machine with a PMU runs WCA; this VM has none.
    }
    let state = tempfile::tempdir().unwrap();
    let marker = state.path().join("ran");
    let out = bin()
        .args(["run", "--policy", "wca", "--state-dir"])
        .arg(state.path())
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for event in ["Instructions", "Cycles", "LlcReferences"] {
        assert!(
            stderr.contains(event),
            "the refusal names {event}:\n{stderr}"
        );
    }
    assert!(!marker.exists(), "the command must not have started");
}

/// Issue #10: WCA behind a fake PMU on real processes. Two busy loops are
/// non-transient: each ends up pinned to one CPU (checked in
/// `/proc/<pid>/status`); the shell that started them sleeps (under 1 %
/// on a CPU per `/proc/<pid>/task/*/schedstat`), is transient and is left
/// with the CPUs it had.
#[test]
fn wca_pins_busy_threads_and_leaves_the_transient_shell_alone() {
    use ecosched_linux::perf::FakePerf;
    use ecosched_linux::platform::{LinuxOptions, LinuxPlatform};
    use ecosched_model::Platform;
    let state = tempfile::tempdir().unwrap();
    let options = LinuxOptions {
        state_dir: state.path().to_path_buf(),
        ..LinuxOptions::default()
    };
    let mut platform = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options)
        .perf(Box::new(FakePerf::new()))
        .build()
        .unwrap();
    let mut wca = ecosched_policy::build("wca", &ecosched_policy::Params::default()).unwrap();
    platform.open_counters(&wca.requirements());
    assert!(wca
        .requirements()
        .missing(&platform.capabilities())
        .is_empty());
    let initial = wca.init(&platform.topology()).unwrap();
    platform.apply(&initial).unwrap();
    platform
        .start(&[
            "sh".into(),
            "-c".into(),
            "sh -c 'while :; do :; done' & sh -c 'while :; do :; done' & sleep 30".into(),
        ])
        .unwrap();
    let shell = platform.child_pid().unwrap();
    let original = allowed_list(shell).unwrap();
    for _ in 0..15 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let snapshot = platform.observe().unwrap();
        let plan = wca.decide(&snapshot);
        platform.apply(&plan).unwrap();
    }
    let busy: Vec<u32> = descendants(shell)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.contains("while"))
        })
        .collect();
    assert_eq!(busy.len(), 2, "{busy:?}");
    let pins: Vec<String> = busy.iter().map(|p| allowed_list(*p).unwrap()).collect();
    for pin in &pins {
        assert!(
            pin.parse::<u32>().is_ok(),
            "a busy loop is pinned to one CPU: {pins:?}"
        );
    }
    if platform.topology().online_cpus().len() >= 2 {
        assert_ne!(pins[0], pins[1], "the two busy loops share no CPU");
    }
    assert_eq!(
        allowed_list(shell).unwrap(),
        original,
        "the transient shell is not pinned"
    );
    let notes = wca.stats();
    let stat = |k: &str| notes.get(k).map(ToString::to_string).unwrap_or_default();
    assert_eq!(stat("placed_threads"), "2", "{notes:?}");
    assert!(stat("transient_threads") != "0", "{notes:?}");
    platform.finish(true).unwrap();
    for p in busy.iter().chain([&shell]) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &p.to_string()])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// Issue #11: `run --policy av-sort` with a calibration file but on a
/// machine without the hardware counters activity vectors are made of is
/// refused before the command starts, naming the missing counters. (On a
/// machine with a PMU the same run starts; this test then only checks that
/// a refusal, if any, names what is missing.)
#[test]
fn av_without_hardware_counters_is_refused_naming_them() {
    let have_pmu = !ecosched_linux::perf::probe(&ecosched_linux::perf::SystemPerf)
        .unavailable
        .iter()
        .any(|(k, _)| *k == ecosched_model::CounterKind::Cycles);
    let (code, stderr, ran) = run_with_calibration_for(
        "av-sort",
        "[activity]\npeak_mem_per_s = 6.0e7\npeak_cache_per_cycle = 0.25\ntranslation = []\n",
    );
    if have_pmu {
        return;
    }
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!ran, "the command must not have run");
    assert!(
        stderr.contains("Cycles") && stderr.contains("LlcReferences"),
        "the missing counters are named:\n{stderr}"
    );
}

/// [`run_with_calibration`] under another policy.
fn run_with_calibration_for(policy: &str, text: &str) -> (Option<i32>, String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cal.toml");
    std::fs::write(&file, text).unwrap();
    let marker = dir.path().join("started");
    let out = bin()
        .args(["run", "--policy", policy, "--calibration"])
        .arg(&file)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .arg("--")
        .arg("touch")
        .arg(&marker)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        marker.exists(),
    )
}
