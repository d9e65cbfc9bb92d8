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

/// A cgroup the daemon never made, inside the cpuset group it made for
/// `pid`: the kernel keeps a cgroup with children, so the daemon cannot
/// remove its group and must say so. Returns the group; [`unblock`]
/// removes both afterwards.
pub fn block_group_removal(cpuset: &Path, pid: u32) -> PathBuf {
    let own = std::fs::read_to_string(format!("/proc/{pid}/cpuset")).unwrap();
    let group = cpuset.join(own.trim().trim_start_matches('/'));
    assert!(group != cpuset, "the group's process is in the root cpuset");
    std::fs::create_dir(group.join("not-ecosched")).unwrap();
    group
}

/// Remove what [`block_group_removal`] left, once the group is empty.
pub fn unblock(group: &Path) {
    let _ = std::fs::remove_dir(group.join("not-ecosched"));
    let _ = std::fs::remove_dir(group);
}
