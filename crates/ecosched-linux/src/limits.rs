//! Process limits a run depends on. ecosched keeps a few file descriptors
//! per observed thread (a `schedstat` file and its perf events), so the
//! common soft limit of 1024 open files would leave most of a
//! 2000-thread program unobserved. The soft limit is raised to the hard
//! one at start (`setrlimit(RLIMIT_NOFILE)`), which needs no privilege.

use crate::error::LinuxError;
use nix::sys::resource::{getrlimit, setrlimit, Resource};
use std::path::PathBuf;

/// The open-file limit before and after raising it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NofileLimit {
    /// The soft limit found.
    pub before: u64,
    /// The soft limit now (the hard limit, unless that could not be set).
    pub now: u64,
}

/// Raise the soft `RLIMIT_NOFILE` to the hard limit.
pub fn raise_nofile() -> Result<NofileLimit, LinuxError> {
    let err = |e: nix::errno::Errno| LinuxError::Io {
        path: PathBuf::from("setrlimit(RLIMIT_NOFILE)"),
        source: e.into(),
    };
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(err)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).map_err(err)?;
    }
    let (now, _) = getrlimit(Resource::RLIMIT_NOFILE).map_err(err)?;
    Ok(NofileLimit { before: soft, now })
}
