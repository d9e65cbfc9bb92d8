//! Facts about the host that turn the kernel's units (clock ticks, ticks
//! since boot) into seconds.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::procfs;
use std::path::PathBuf;

/// Facts about the host that turn kernel units into seconds; detected once
/// and injected, so parsers and recorded machines do not depend on the
/// machine running the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostFacts {
    /// Clock ticks per second (`sysconf(_SC_CLK_TCK)`), the unit of `stat`
    /// times.
    pub ticks_per_s: u64,
    /// Boot time, seconds since the Unix epoch (`btime` in `/proc/stat`).
    pub boot_time_s: u64,
}

impl HostFacts {
    /// Ticks per second from `sysconf` and boot time from `proc/stat` under
    /// `root`.
    pub fn detect(root: &FsRoot) -> Result<HostFacts, LinuxError> {
        let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .and_then(|t| u64::try_from(t).ok())
            .filter(|&t| t > 0)
            .ok_or_else(|| LinuxError::Absent {
                path: PathBuf::from("sysconf(_SC_CLK_TCK)"),
                what: "clock ticks per second".into(),
            })?;
        let rel = "proc/stat";
        let text = root.read(rel, "boot time (btime)")?;
        let boot_time_s = procfs::parse_btime(&text)
            .map_err(|e| LinuxError::parse(&root.path(rel), &text, e.reason))?;
        Ok(HostFacts {
            ticks_per_s: ticks,
            boot_time_s,
        })
    }

    /// A tick count (e.g. a start time) in seconds.
    pub fn ticks_to_s(&self, ticks: u64) -> f64 {
        ticks as f64 / self.ticks_per_s.max(1) as f64
    }

    /// When a task that started `start_ticks` after boot started, in seconds
    /// since the Unix epoch.
    pub fn start_epoch_s(&self, start_ticks: u64) -> f64 {
        self.boot_time_s as f64 + self.ticks_to_s(start_ticks)
    }
}
