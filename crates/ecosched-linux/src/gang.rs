//! Gang control: stopping and continuing the threads of tasks that opted
//! into it, with `SIGSTOP`/`SIGCONT` sent to the one thread (`tgkill(2)`
//! semantics are not needed: a stop signal stops the whole thread group, so
//! gang actions are addressed to processes).
//!
//! A stopped task left behind would be a hung program, so every stop is
//! journalled and undone with `SIGCONT` on exit or by `ecosched restore`.

use crate::error::LinuxError;
use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::path::PathBuf;

/// Send `signal` to process `pid`; an exited process is [`LinuxError::Gone`].
pub fn signal(pid: u32, signal: Signal) -> Result<(), LinuxError> {
    let raw = i32::try_from(pid).map_err(|_| LinuxError::Gone { pid })?;
    kill(Pid::from_raw(raw), signal).map_err(|e| match e {
        Errno::ESRCH => LinuxError::Gone { pid },
        Errno::EPERM => LinuxError::Permission {
            path: PathBuf::from(format!("/proc/{pid} (kill {signal})")),
            capability: "CAP_KILL (to signal another user's process)".into(),
        },
        other => LinuxError::Io {
            path: PathBuf::from(format!("/proc/{pid}")),
            source: std::io::Error::from_raw_os_error(other as i32),
        },
    })
}

/// Stop process `pid`.
pub fn stop(pid: u32) -> Result<(), LinuxError> {
    signal(pid, Signal::SIGSTOP)
}

/// Let process `pid` run again.
pub fn resume(pid: u32) -> Result<(), LinuxError> {
    signal(pid, Signal::SIGCONT)
}
