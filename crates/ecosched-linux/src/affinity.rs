//! Per-thread CPU affinity through `sched_setaffinity(2)` /
//! `sched_getaffinity(2)`. Affinity is per thread on Linux, so every thread
//! of a managed process is set on its own.
//!
//! Errors are classified the way the platform needs them: `ESRCH` (the
//! thread exited) is [`LinuxError::Gone`], `EPERM` names `CAP_SYS_NICE`
//! (needed to change another user's threads), and `EINVAL` (no allowed CPU
//! left after the kernel intersects the mask with the thread's cpuset) says
//! so.

use crate::error::LinuxError;
use ecosched_model::{CpuId, CpuSet};
use nix::errno::Errno;
use nix::sched::CpuSet as NixCpuSet;
use nix::unistd::Pid;
use std::path::PathBuf;

fn to_nix(set: &CpuSet) -> Result<NixCpuSet, LinuxError> {
    let mut out = NixCpuSet::new();
    for cpu in set.iter() {
        out.set(cpu.0 as usize).map_err(|_| LinuxError::Parse {
            path: PathBuf::from("sched_setaffinity"),
            content: set.to_list(),
            reason: format!(
                "CPU {cpu} is beyond the kernel's CPU_SETSIZE ({})",
                NixCpuSet::count()
            ),
        })?;
    }
    Ok(out)
}

fn classify(tid: u32, errno: Errno) -> LinuxError {
    let path = PathBuf::from(format!("/proc/{tid} (sched_setaffinity)"));
    match errno {
        Errno::ESRCH => LinuxError::Gone { pid: tid },
        Errno::EPERM => LinuxError::Permission {
            path,
            capability: "CAP_SYS_NICE (to change another user's threads)".into(),
        },
        Errno::EINVAL => LinuxError::Parse {
            path,
            content: String::new(),
            reason: "the CPU set has no CPU the thread's cpuset allows".into(),
        },
        other => LinuxError::Io {
            path,
            source: std::io::Error::from_raw_os_error(other as i32),
        },
    }
}

/// The CPUs thread `tid` may run on.
pub fn get(tid: u32) -> Result<CpuSet, LinuxError> {
    let raw = i32::try_from(tid).map_err(|_| LinuxError::Gone { pid: tid })?;
    let set = nix::sched::sched_getaffinity(Pid::from_raw(raw)).map_err(|e| classify(tid, e))?;
    Ok((0..NixCpuSet::count())
        .filter(|&i| set.is_set(i).unwrap_or(false))
        .map(|i| CpuId(i as u32))
        .collect())
}

/// Restrict thread `tid` to `cpus`.
pub fn set(tid: u32, cpus: &CpuSet) -> Result<(), LinuxError> {
    let raw = i32::try_from(tid).map_err(|_| LinuxError::Gone { pid: tid })?;
    let mask = to_nix(cpus)?;
    nix::sched::sched_setaffinity(Pid::from_raw(raw), &mask).map_err(|e| classify(tid, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_thread_can_be_pinned_and_put_back() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let handle = std::thread::spawn(move || {
            tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
            done_rx.recv().unwrap();
        });
        let tid = rx.recv().unwrap();
        let before = get(tid).unwrap();
        let one = CpuSet::single(before.first().unwrap());
        set(tid, &one).unwrap();
        assert_eq!(get(tid).unwrap(), one);
        set(tid, &before).unwrap();
        assert_eq!(get(tid).unwrap(), before);
        done_tx.send(()).unwrap();
        handle.join().unwrap();
    }

    #[test]
    fn an_exited_thread_is_gone_not_an_error() {
        // PID numbers this high are never handed out (pid_max ≤ 2^22).
        let err = set(4_194_304 + 7, &CpuSet::first_n(1)).unwrap_err();
        assert!(matches!(err, LinuxError::Gone { .. }), "{err}");
    }

    #[test]
    fn a_set_with_no_usable_cpu_is_refused_with_a_reason() {
        let cpu = CpuSet::single(CpuId(1000));
        let err = set(nix::unistd::gettid().as_raw() as u32, &cpu).unwrap_err();
        assert!(err.to_string().contains("no CPU"), "{err}");
    }
}
