//! The daemon's listeners under a flood from an unprivileged local user:
//! `nobody` (through `setpriv`) runs `scripts/flood-metrics` against the
//! exporter — a client that never reads its answers, one that sends a
//! byte at a time, hundreds of idle connections reopened as fast as they
//! close — while a scraper's `GET /metrics` must be answered within 1 s,
//! every time, and a group's new process must still be confined (its
//! descriptors are the daemon's to open). The daemon runs with an
//! open-file limit of 512, a machine whose hard limit leaves little room.
//! And a huge line on the control socket is refused without the daemon's
//! memory following it. Needs root, python3 and util-linux's `setpriv`
//! and `prlimit`.

use crate::support::daemon::{log, signal, sleeper, stop_with_group_held, Daemon};
use crate::support::{ecosched_command, ecosched_path};
use ecosched_testkit::live::{allowed_list, wait_for};
use nix::sys::signal::Signal;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A daemon under `dir` managing the processes named `command` with
/// `static` on CPU 0, its exporter on a port of the kernel's choosing.
fn start_daemon(dir: &Path, command: &str) -> Daemon {
    let conf = dir.join("c.toml");
    std::fs::write(
        &conf,
        format!(
            "[daemon]\nstate_dir = \"{d}/state\"\nsocket = \"{d}/ctl.sock\"\nmetrics = \"127.0.0.1:0\"\nscan_interval_ms = 200\n\n[[group]]\nname = \"demo\"\nmatch = {{ command = \"{command}\" }}\npolicy = \"static\"\nparams = {{ cpus = \"0\" }}\n",
            d = dir.display()
        ),
    )
    .unwrap();
    Daemon(
        Command::new("prlimit")
            .arg("--nofile=512:512")
            .arg(ecosched_path())
            .args(["daemon", "--config"])
            .arg(&conf)
            .stderr(std::fs::File::create(dir.join("daemon.log")).unwrap())
            .spawn()
            .unwrap(),
    )
}

/// The exporter's address, from the daemon's log.
fn exporter_addr(dir: &Path) -> SocketAddr {
    let mut addr = None;
    wait_for("the exporter", Duration::from_secs(10), || {
        addr = log(dir)
            .lines()
            .find_map(|l| l.strip_prefix("ecosched: metrics at http://"))
            .and_then(|l| l.strip_suffix("/metrics"))
            .and_then(|a| a.parse().ok());
        addr.is_some()
    });
    addr.unwrap()
}

/// One `GET /metrics` that must be answered in full within `deadline`;
/// the answer's body.
fn scrape(addr: SocketAddr, deadline: Duration) -> Result<String, String> {
    let start = Instant::now();
    let mut s = TcpStream::connect_timeout(&addr, deadline).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(deadline)).unwrap();
    s.set_write_timeout(Some(deadline)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: scraper\r\nConnection: close\r\n\r\n")
        .map_err(|e| format!("send: {e}"))?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        if start.elapsed() > deadline {
            return Err(format!("no full answer within {deadline:?}"));
        }
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("read after {:?}: {e}", start.elapsed())),
        }
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    if !text.starts_with("HTTP/1.1 200") || !text.contains("ecosched_build_info") {
        return Err(format!("not the metrics: {text:.200}"));
    }
    Ok(text)
}

/// A `/proc/PID/status` field in kB.
fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
#[ignore = "live: root, python3, setpriv, prlimit"]
fn a_flood_from_nobody_starves_neither_scrapes_nor_groups() {
    let dir = tempfile::tempdir().unwrap();
    let name = "svc-t-flood";
    let first = sleeper(dir.path(), name);
    let before = allowed_list(first.id()).unwrap();
    let mut daemon = start_daemon(dir.path(), name);
    wait_for("the group to be confined", Duration::from_secs(10), || {
        allowed_list(first.id()).unwrap() == "0"
    });
    let addr = exporter_addr(dir.path());
    scrape(addr, Duration::from_secs(1)).unwrap();

    let script =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/flood-metrics"))
            .unwrap();
    let flood_s = 6.0;
    let mut flooder = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["/usr/bin/python3", "-"])
        .args([
            addr.ip().to_string(),
            addr.port().to_string(),
            "600".into(),
            flood_s.to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    flooder.stdin.take().unwrap().write_all(&script).unwrap();

    // Scrapes for the whole flood, each answered within 1 s.
    let start = Instant::now();
    let mut second = None;
    let mut scrapes = 0;
    let mut most_fds = 0;
    while start.elapsed() < Duration::from_secs_f64(flood_s - 0.5) {
        if let Err(e) = scrape(addr, Duration::from_secs(1)) {
            panic!(
                "scrape {scrapes} {:?} into the flood: {e}\n{}",
                start.elapsed(),
                log(dir.path())
            );
        }
        scrapes += 1;
        let fds = std::fs::read_dir(format!("/proc/{}/fd", daemon.0.id()))
            .unwrap()
            .count();
        most_fds = most_fds.max(fds);
        // Halfway, a process joins the group: the daemon opens its files.
        if second.is_none() && start.elapsed() > Duration::from_secs(2) {
            second = Some(sleeper(dir.path(), name));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The daemon's descriptors stay short of the reserve it keeps (a
    // quarter of 512).
    assert!(most_fds < 384, "the daemon held {most_fds} descriptors");
    let second = second.unwrap();
    wait_for(
        "the process that joined during the flood to be confined",
        Duration::from_secs(5),
        || allowed_list(second.id()).unwrap() == "0",
    );
    let out = flooder.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains("flood: held at most"), "{said}");
    let (ok, groups) = {
        let out = ecosched_command()
            .args(["ctl", "--socket"])
            .arg(dir.path().join("ctl.sock"))
            .arg("groups")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert!(ok && groups.contains("running"), "{groups}");

    signal(&daemon.0, Signal::SIGTERM);
    let status = daemon.0.wait().unwrap();
    let text = log(dir.path());
    assert!(status.success(), "{status}: {text}");
    assert!(text.contains("everything restored"), "{text}");
    assert_eq!(allowed_list(first.id()).unwrap(), before, "{text}");
    assert_eq!(allowed_list(second.id()).unwrap(), before, "{text}");
    eprintln!(
        "{scrapes} scrapes answered within 1 s during the flood, the daemon holding at most {most_fds} descriptors; {said}"
    );
    for mut p in [first, second] {
        p.kill().unwrap();
        let _ = p.wait();
    }
}

#[test]
#[ignore = "live: root"]
fn a_huge_control_line_is_refused_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut daemon = start_daemon(dir.path(), "svc-t-none");
    let socket = dir.path().join("ctl.sock");
    wait_for("the control socket", Duration::from_secs(10), || {
        UnixStream::connect(&socket).is_ok()
    });
    let peak_before = status_kb(daemon.0.id(), "VmHWM:");
    let stream = UnixStream::connect(&socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    // 64 MiB then the line's end; the daemon may hang up long before.
    let sender = std::thread::spawn(move || {
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..64 {
            if writer.write_all(&chunk).is_err() {
                return;
            }
        }
        let _ = writer.write_all(b"\n");
    });
    let mut answer = String::new();
    BufReader::new(&stream).read_line(&mut answer).unwrap();
    sender.join().unwrap();
    assert!(
        answer.contains("\"ok\":false") && answer.contains("longer than"),
        "{:.300}",
        answer
    );
    let peak_after = status_kb(daemon.0.id(), "VmHWM:");
    eprintln!(
        "the daemon's peak RSS: {peak_before} kB before a 64 MiB line, {peak_after} kB after"
    );
    assert!(
        peak_after < peak_before + 16 * 1024,
        "the daemon's peak memory went from {peak_before} kB to {peak_after} kB"
    );
    // The daemon still answers.
    let out = ecosched_command()
        .args(["ctl", "--socket"])
        .arg(&socket)
        .arg("status")
        .output()
        .unwrap();
    assert!(out.status.success());
    signal(&daemon.0, Signal::SIGTERM);
    assert!(daemon.0.wait().unwrap().success());
}

/// `SIGTERM` when a change cannot be undone: the cpuset cgroup a managed
/// process came from is removed while the group holds it, so it cannot be
/// moved back. The daemon must name that change and fail, not claim
/// everything was restored.
#[test]
#[ignore = "live: root, cgroup v1 cpuset at /sys/fs/cgroup/cpuset"]
fn sigterm_names_what_it_could_not_undo() {
    let cpuset = Path::new("/sys/fs/cgroup/cpuset");
    assert!(cpuset.join("tasks").exists(), "needs cgroup v1's cpuset");
    let dir = tempfile::tempdir().unwrap();
    let name = "svc-t-left";
    let mut sleeper = sleeper(dir.path(), name);
    let mut daemon = start_daemon(dir.path(), name);
    let (status, text, group) = stop_with_group_held(&mut daemon, &mut sleeper, cpuset, dir.path());
    assert!(!status.success(), "{text}");
    assert!(!text.contains("everything restored"), "{text}");
    assert!(text.contains("group demo: could not undo"), "{text}");
    assert!(
        text.contains(&group.display().to_string()),
        "the change is named: {text}"
    );
    assert!(text.contains("ecosched restore --state-dir"), "{text}");
}
