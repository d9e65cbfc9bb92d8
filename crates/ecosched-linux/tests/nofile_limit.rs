//! The open-file limit is raised to the hard one (issue #16, "Scale and
//! limits"). A test binary of its own: it lowers this process's limit,
//! which would starve tests running beside it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ecosched_linux::limits::raise_nofile;
use nix::sys::resource::{getrlimit, setrlimit, Resource};

#[test]
fn the_soft_limit_is_raised_to_the_hard_one() {
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
    // Start low, as a login shell's `ulimit -n 1024` would.
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
