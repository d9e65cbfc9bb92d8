//! What the daemon's live tests share: `ecosched ctl` against a test
//! daemon's socket, processes under names of the test's choosing (groups
//! match processes by command name, so each test names its own), signals,
//! and a guard that stops a daemon however its test ends.

use super::ecosched_command;
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// `ecosched ctl --socket SOCKET ARGS…`: success, stdout and stderr.
pub fn ctl(socket: &Path, args: &[&str]) -> (bool, String, String) {
    let out = ecosched_command()
        .arg("ctl")
        .arg("--socket")
        .arg(socket)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A copy of `program` named `name` in `dir` (made once), started with
/// `args` and its output discarded.
pub fn named(dir: &Path, program: &str, name: &str, args: &[&str]) -> Child {
    let exe = dir.join(name);
    if !exe.exists() {
        std::fs::copy(program, &exe).unwrap();
    }
    // Another test thread forking while the copy was open for writing
    // makes exec fail with ETXTBSY for a moment.
    for _ in 0..50 {
        match Command::new(&exe).args(args).stdout(Stdio::null()).spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(Duration::from_millis(20))
            }
            other => return other.unwrap(),
        }
    }
    panic!("{} stayed busy", exe.display())
}

/// A copy of `sleep` named `name` in `dir`, sleeping 300 s.
pub fn sleeper(dir: &Path, name: &str) -> Child {
    named(dir, "/bin/sleep", name, &["300"])
}

/// Send `sig` to `child`.
pub fn signal(child: &Child, sig: Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
}

/// Wait up to 10 s for `child` to exit.
pub fn exited(child: &mut Child) -> Option<ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// A daemon a test started: stopped with `SIGTERM` (restoring what it
/// changed) when the test ends, a failed one included, and killed if it
/// has not stopped 10 s later.
pub struct Daemon(pub Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.0.id() as i32),
                Signal::SIGTERM,
            );
            if exited(&mut self.0).is_none() {
                let _ = self.0.kill();
                let _ = self.0.wait();
            }
        }
    }
}

/// What a test daemon started with its stderr in `DIR/daemon.log` said.
pub fn log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("daemon.log")).unwrap_or_default()
}

/// `SIGTERM` to `daemon` once it has confined `sleeper` (to CPU 0), with a
/// cgroup the daemon never made inside the cpuset group it made: the
/// kernel keeps a cgroup with children, so the daemon cannot remove its
/// group and must say so. Cleans up after it and returns the daemon's exit
/// status, its log (`dir/daemon.log`) and the group's path.
pub fn stop_with_group_held(
    daemon: &mut Daemon,
    sleeper: &mut Child,
    cpuset: &Path,
    dir: &Path,
) -> (ExitStatus, String, PathBuf) {
    ecosched_testkit::live::wait_for("the group to be confined", Duration::from_secs(10), || {
        ecosched_testkit::live::allowed_list(sleeper.id()).unwrap() == "0"
    });
    let own = std::fs::read_to_string(format!("/proc/{}/cpuset", sleeper.id())).unwrap();
    let group = cpuset.join(own.trim().trim_start_matches('/'));
    assert!(group != cpuset, "the group's process is in the root cpuset");
    let child = group.join("not-ecosched");
    std::fs::create_dir(&child).unwrap();
    signal(&daemon.0, Signal::SIGTERM);
    let status = daemon.0.wait().unwrap();
    let text = log(dir);
    sleeper.kill().unwrap();
    let _ = sleeper.wait();
    let _ = std::fs::remove_dir(&child);
    let _ = std::fs::remove_dir(&group);
    (status, text, group)
}
