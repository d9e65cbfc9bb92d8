//! Reloading `ecosched daemon` as systemd sees it, and checking a file
//! without a daemon: on the wire of a `NOTIFY_SOCKET` the test binds,
//! `SIGHUP` and `ctl reload` each send `RELOADING=1` with a
//! `MONOTONIC_USEC=` inside the test's own `CLOCK_MONOTONIC` window (in
//! one datagram, as systemd 253 and later require), then `READY=1`;
//! `ctl reload` answers the verdict (non-zero with the located error on a
//! bad file, the daemon answering on); `daemon --check-config` exits 0
//! with a summary on a good file and 2 naming file, line or key on a bad
//! one. A daemon without groups needs no root, so this is the fast tier.

use crate::support::daemon::{ctl, Daemon};
use crate::support::{ecosched, ecosched_command};
use nix::time::{clock_gettime, ClockId};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// `CLOCK_MONOTONIC` in µs, the clock `MONOTONIC_USEC` is on.
fn monotonic_usec() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).unwrap();
    t.tv_sec() as u64 * 1_000_000 + t.tv_nsec() as u64 / 1_000
}

/// A configuration without groups, everything under `dir`.
fn config(dir: &Path) -> String {
    format!(
        "[daemon]\nstate_dir = \"{d}/state\"\nsocket = \"{d}/ctl.sock\"\nmetrics = \"\"\n",
        d = dir.display()
    )
}

/// The next datagram, as text.
fn next(notify: &UnixDatagram) -> String {
    let mut buf = [0u8; 4096];
    let n = notify.recv(&mut buf).expect("a notification in time");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// The `RELOADING=1` datagram a reload asked for between now and `ask`
/// returning sends, checked against the test's clock, and the `READY=1`
/// that ends it; `ask` returns what it wants to keep.
fn reload_on_the_wire<T>(notify: &UnixDatagram, ask: impl FnOnce() -> T) -> (T, String) {
    let before = monotonic_usec();
    let kept = ask();
    let reloading = next(notify);
    let after = monotonic_usec();
    let lines: Vec<&str> = reloading.lines().collect();
    assert!(lines.contains(&"RELOADING=1"), "{reloading:?}");
    let usec: u64 = lines
        .iter()
        .find_map(|l| l.strip_prefix("MONOTONIC_USEC="))
        .unwrap_or_else(|| panic!("no MONOTONIC_USEC in {reloading:?}"))
        .parse()
        .unwrap();
    assert!(
        (before..=after).contains(&usec),
        "MONOTONIC_USEC={usec} outside the test's window {before}..={after}"
    );
    let ready = next(notify);
    assert!(ready.lines().any(|l| l == "READY=1"), "{ready:?}");
    (kept, ready)
}

#[test]
fn a_reload_is_announced_with_its_monotonic_time_and_answered() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("c.toml");
    std::fs::write(&conf, config(dir.path())).unwrap();
    let socket = dir.path().join("ctl.sock");
    let notify_path = dir.path().join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let daemon = Daemon(
        ecosched_command()
            .args(["daemon", "--config"])
            .arg(&conf)
            .env("NOTIFY_SOCKET", &notify_path)
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(next(&notify).lines().any(|l| l == "READY=1"));

    let pid = nix::unistd::Pid::from_raw(daemon.0.id() as i32);
    let ((), ready) = reload_on_the_wire(&notify, || {
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap()
    });
    assert!(ready.contains("STATUS=reloaded"), "{ready:?}");

    let ((ok, out, err), _) = reload_on_the_wire(&notify, || ctl(&socket, &["reload"]));
    assert!(
        ok && out.contains("reloaded") && out.contains("c.toml"),
        "{out} {err}"
    );

    // A bad file: refused with its place, on the wire and to the caller;
    // the daemon answers on with what it ran.
    std::fs::write(&conf, "[daemon]\nbogus = 1\n").unwrap();
    let ((ok, _, err), ready) = reload_on_the_wire(&notify, || ctl(&socket, &["reload"]));
    assert!(!ok, "a refused reload exits non-zero");
    assert!(err.contains("c.toml:2:1: unknown field `bogus`"), "{err}");
    assert!(ready.contains("STATUS=reload refused"), "{ready:?}");
    let (ok, out, _) = ctl(&socket, &["status"]);
    assert!(
        ok && out.contains(&format!("\"pid\": {}", daemon.0.id())),
        "{out}"
    );
}

#[test]
fn check_config_takes_a_good_file_and_locates_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(&good, config(dir.path())).unwrap();
    let out = ecosched()
        .args(["daemon", "--check-config"])
        .arg(&good)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("good.toml: ok: 0 group(s)"), "{stdout}");

    let refused = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let out = ecosched()
            .args(["daemon", "--check-config"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = refused("syntax.toml", "[daemon]\nbogus = 1\n");
    assert!(
        err.contains("syntax.toml:2:1: unknown field `bogus`"),
        "{err}"
    );
    // Judged on this machine as start and reload judge it: a CPU no
    // machine here has.
    let err = refused(
        "cpus.toml",
        "[[group]]\nname = \"a\"\nmatch = { command = \"x\" }\npolicy = \"static\"\nparams = { cpus = \"4095\" }\n",
    );
    assert!(
        err.contains("cpus.toml: group \"a\": key `params`") && err.contains("4095"),
        "{err}"
    );
}
