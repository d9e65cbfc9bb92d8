//! `ecosched daemon` and `ecosched ctl` for real: a daemon process managing
//! a real process by command name (its affinity), talking systemd's notify
//! protocol to a socket the test binds, answering on its control socket
//! (its exit status following the daemon's verdict), refusing a bad config
//! on `ctl reload` and SIGHUP, restoring on SIGTERM; and, through
//! `scripts/prometheus-check`, a real Prometheus scraping it. Needs root
//! (another process's affinity) and two online CPUs, as CI has.

use crate::support::daemon::{ctl, sleeper};
use crate::support::{ecosched_command, ecosched_path};
use ecosched_testkit::live::{allowed_list, wait_for};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A daemon configuration under `dir` with one group, `demo`: the
/// processes named `command`, confined by `static` to `cpus`.
fn config(dir: &Path, command: &str, cpus: &str) -> String {
    format!(
        "[daemon]\nstate_dir = \"{d}/state\"\nsocket = \"{d}/ctl.sock\"\nmetrics = \"\"\nscan_interval_ms = 200\n\n[[group]]\nname = \"demo\"\nmatch = {{ command = \"{command}\" }}\npolicy = \"static\"\nparams = {{ cpus = \"{cpus}\" }}\n",
        d = dir.display()
    )
}

/// READY=1 once up, WATCHDOG=1 at half of WATCHDOG_USEC, STOPPING=1 on
/// SIGTERM, to the NOTIFY_SOCKET it was given; and the managed process gets
/// its CPUs back.
#[test]
#[ignore = "live: root, two online CPUs"]
fn notifies_systemd_and_restores_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut sleeper = sleeper(dir.path(), "svc-t-notify");
    let before = allowed_list(sleeper.id()).unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        config(dir.path(), "svc-t-notify", "0"),
    )
    .unwrap();
    let notify_path = dir.path().join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut daemon = ecosched_command()
        .args(["daemon", "--config"])
        .arg(dir.path().join("c.toml"))
        .env("NOTIFY_SOCKET", &notify_path)
        .env("WATCHDOG_USEC", "400000")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !(seen.contains("READY=1") && seen.matches("WATCHDOG=1").count() >= 3) {
        let n = notify
            .recv(&mut buf)
            .expect("no READY=1 and WATCHDOG=1 in time");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        seen.push('\n');
    }
    wait_for("the group to be confined", Duration::from_secs(10), || {
        allowed_list(sleeper.id()).unwrap() == "0"
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = daemon.wait().unwrap();
    let mut log = String::new();
    std::io::Read::read_to_string(&mut daemon.stderr.take().unwrap(), &mut log).unwrap();
    assert!(status.success(), "{status}: {log}");
    let n = notify.recv(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).contains("STOPPING=1"));
    assert_eq!(allowed_list(sleeper.id()).unwrap(), before, "{log}");
    assert!(log.contains("everything restored"), "{log}");
    assert!(!dir.path().join("ctl.sock").exists());
    sleeper.kill().unwrap();
    let _ = sleeper.wait();
}

/// The control socket: groups, set-policy, pause/resume, clear refusals;
/// SIGHUP with a bad file keeps the old configuration and says where the
/// error is; a SIGKILLed daemon's changes are restored by the next one.
#[test]
#[ignore = "live: root, two online CPUs"]
fn ctl_reload_and_a_dead_predecessor() {
    let dir = tempfile::tempdir().unwrap();
    let mut sleeper = sleeper(dir.path(), "svc-t-ctl");
    let pid = sleeper.id();
    let before = allowed_list(pid).unwrap();
    let conf = dir.path().join("c.toml");
    std::fs::write(&conf, config(dir.path(), "svc-t-ctl", "0")).unwrap();
    let socket = dir.path().join("ctl.sock");
    let log_path = dir.path().join("daemon.log");
    let start = || {
        ecosched_command()
            .args(["daemon", "--config"])
            .arg(&conf)
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .unwrap()
    };
    let mut daemon = start();
    wait_for("confinement", Duration::from_secs(10), || {
        allowed_list(pid).unwrap() == "0"
    });
    let (ok, out, _) = ctl(&socket, &["groups"]);
    assert!(
        ok && out.contains("\"group\": \"demo\"") && out.contains("running"),
        "{out}"
    );
    let (ok, out, _) = ctl(&socket, &["status"]);
    assert!(
        ok && out.contains(&format!("\"pid\": {}", daemon.id())),
        "{out}"
    );

    let (ok, _, err) = ctl(&socket, &["pause", "nope"]);
    assert!(
        !ok && err.contains("no group \"nope\" (groups: demo)"),
        "{err}"
    );
    let (ok, _, err) = ctl(
        &socket,
        &["set-policy", "demo", "static", "--param", "cpus=zz"],
    );
    assert!(!ok && err.contains("cpus"), "{err}");

    let (ok, out, _) = ctl(&socket, &["pause", "demo"]);
    assert!(ok, "{out}");
    assert_eq!(
        allowed_list(pid).unwrap(),
        before,
        "pause undoes the group's changes"
    );
    let (ok, _, _) = ctl(&socket, &["resume", "demo"]);
    assert!(ok);
    wait_for("resumed", Duration::from_secs(10), || {
        allowed_list(pid).unwrap() == "0"
    });
    let (ok, _, _) = ctl(
        &socket,
        &["set-policy", "demo", "static", "--param", "cpus=1"],
    );
    assert!(ok);
    wait_for("the new policy", Duration::from_secs(10), || {
        allowed_list(pid).unwrap() == "1"
    });

    // `ctl` exits as the daemon did: a policy refused or failed at start
    // (wca, where counters are missing) exits non-zero and the group keeps
    // static; a policy that runs exits 0.
    let (ok, out, err) = ctl(&socket, &["set-policy", "demo", "wca"]);
    let (_, groups, _) = ctl(&socket, &["groups"]);
    let runs_wca = groups.contains("\"policy\": \"wca\"") && groups.contains("running");
    assert_eq!(ok, runs_wca, "exit {ok}: {out}{err}; groups: {groups}");
    if ok {
        let (ok, _, _) = ctl(
            &socket,
            &["set-policy", "demo", "static", "--param", "cpus=1"],
        );
        assert!(ok);
    } else {
        assert!(err.contains("group demo") && err.contains("wca"), "{err}");
        assert!(groups.contains("\"policy\": \"static\""), "{groups}");
    }
    assert_eq!(allowed_list(pid).unwrap(), "1");

    // `ctl reload` of a bad file: non-zero with its place, the old
    // configuration still runs.
    std::fs::write(&conf, "[daemon]\nbogus = 1\n").unwrap();
    let (ok, _, err) = ctl(&socket, &["reload"]);
    assert!(
        !ok && err.contains("c.toml:2:1: unknown field `bogus`"),
        "{err}"
    );
    assert_eq!(allowed_list(pid).unwrap(), "1");

    // A bad file on SIGHUP: refused with its place, the old one still runs.
    let hup = |p: u32| {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(p as i32),
            nix::sys::signal::Signal::SIGHUP,
        )
        .unwrap()
    };
    hup(daemon.id());
    wait_for("the refusal", Duration::from_secs(5), || {
        std::fs::read_to_string(&log_path)
            .unwrap()
            .contains("reload refused, keeping the running configuration")
    });
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("c.toml:2:1: unknown field `bogus`"), "{log}");
    assert_eq!(allowed_list(pid).unwrap(), "1");

    // Killed outright: the journal stays; the next daemon restores it.
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    assert_eq!(allowed_list(pid).unwrap(), "1");
    std::fs::write(&conf, config(dir.path(), "svc-t-none", "0")).unwrap();
    let mut next = start();
    wait_for("the predecessor's restore", Duration::from_secs(10), || {
        std::fs::read_to_string(&log_path)
            .unwrap()
            .contains("restored what a dead ecosched left")
    });
    assert_eq!(allowed_list(pid).unwrap(), before);
    // Stopped as systemd stops it, so that it leaves nothing behind.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(next.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(next.wait().unwrap().success());
    sleeper.kill().unwrap();
    let _ = sleeper.wait();
}

/// A real Prometheus scrapes the exporter with deploy/'s rules loaded, and
/// the Grafana dashboard matches Grafana's schema (scripts/prometheus-check).
/// `scripts/test` installs `prometheus` as root; without it the test fails
/// and says what to install.
#[test]
#[ignore = "live: root, prometheus and promtool"]
fn a_real_prometheus_scrapes_the_exporter() {
    let have = Command::new("sh")
        .args(["-c", "command -v prometheus && command -v promtool"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        have,
        "the live tier needs prometheus and promtool (apt-get install prometheus; \
         scripts/test installs them as root)"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/prometheus-check");
    let out = Command::new(script).arg(ecosched_path()).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("promtool check metrics: ok"), "{text}");
    assert!(
        text.contains("\"__name__\":\"ecosched_energy_joules_total\""),
        "{text}"
    );
    assert!(text.contains("\"group\":\"demo\""), "{text}");
    for line in [
        "promtool check rules, test rules: ok",
        "\"__name__\":\"process_resident_memory_bytes\"",
        "\"__name__\":\"ecosched_group_state\"",
        "Prometheus loaded the rules",
        "check-dashboard: ok",
    ] {
        assert!(text.contains(line), "{line} missing from {text}");
    }
}
