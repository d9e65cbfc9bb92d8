//! The open-file limit is raised to the hard one. The check lowers the
//! limit of the process it runs in, which would starve the tests running
//! beside it, so it runs in a child process of its own
//! (`children::nofile_limit_raised`).

use crate::support::child;
use ecosched_linux::limits::raise_nofile;
use nix::sys::resource::{getrlimit, setrlimit, Resource};

#[test]
fn the_soft_limit_is_raised_to_the_hard_one() {
    let out = child("nofile_limit_raised").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Lower this process's soft limit, as a login shell's `ulimit -n 1024`
/// would, and raise it again.
pub fn raise_from_low() {
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
    let low = hard.min(256);
    setrlimit(Resource::RLIMIT_NOFILE, low, hard).expect("setrlimit");
    let limit = raise_nofile().expect("raise");
    assert_eq!(limit.before, low);
    assert_eq!(limit.now, hard);
    assert_eq!(
        getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit"),
        (hard, hard)
    );
}
