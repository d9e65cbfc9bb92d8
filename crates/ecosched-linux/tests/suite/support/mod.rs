//! What the suite's modules share: where the recorded machines are, copies
//! and snapshots of them, unpacking the recorded tarballs, running one of
//! this binary's child entries, reaping spawned processes, and the turn
//! live tests take on the machine.

pub mod lstopo;

pub use ecosched_testkit::trees::copy_tree;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// `tests/data/<name>`: a recorded machine or a hand-written tree.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A writable copy of `tests/data/<name>` in a temporary directory.
pub fn scratch_copy(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&data(name), dir.path());
    dir
}

/// Every file under `dir`, with its contents.
pub fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    out
}

/// Unpack the entries of the `.tar.bz2` `tarball` whose path below the
/// archive's top directory `keep` accepts (the top directory itself is
/// always kept) into `into`.
pub fn unpack_tar_bz2(tarball: &Path, into: &Path, keep: &dyn Fn(&[String]) -> bool) {
    let file =
        std::fs::File::open(tarball).unwrap_or_else(|e| panic!("{}: {e}", tarball.display()));
    let mut archive = tar::Archive::new(bzip2::read::BzDecoder::new(file));
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().into_owned();
        let parts: Vec<String> = path
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        if parts.len() <= 1 || keep(&parts[1..]) {
            entry.unpack_in(into).unwrap();
        }
    }
}

/// This test binary run again for one child entry (`children::<name>`),
/// ignored in a normal run.
pub fn child(name: &str) -> Command {
    child_of(&std::env::current_exe().unwrap(), name)
}

/// The test binary at `exe` (this one, or a copy of it) running child
/// entry `children::<name>`.
pub fn child_of(exe: &Path, name: &str) -> Command {
    let mut command = Command::new(exe);
    command.args(["--exact", &format!("children::{name}"), "--ignored"]);
    command
}

/// A child process that is continued (it may have been stopped or frozen),
/// killed and reaped when the test ends, pass or fail.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let running = matches!(self.0.try_wait(), Ok(None));
        if let (true, Ok(pid)) = (running, i32::try_from(self.0.id())) {
            let _ =
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGCONT);
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `cmd` with `args`, reaped when the test ends.
pub fn spawn(cmd: &str, args: &[&str]) -> Reaped {
    Reaped(Command::new(cmd).args(args).spawn().unwrap())
}

/// The machine has few CPUs, and live tests run real processes, freeze
/// groups and time slot switches: they take turns.
pub fn live_turn() -> MutexGuard<'static, ()> {
    static LIVE: Mutex<()> = Mutex::new(());
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}
