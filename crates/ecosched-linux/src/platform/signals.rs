//! The signals that end a managed run. Each one whose default action ends
//! a process — `SIGHUP` (a closed terminal), `SIGINT`, `SIGTERM`,
//! `SIGQUIT`, `SIGUSR1`/`SIGUSR2`, `SIGALRM`, `SIGXCPU`, `SIGXFSZ`,
//! `SIGVTALRM`, `SIGPROF` — would otherwise kill ecosched with its
//! changes in place; the handlers only raise a flag, which the control
//! loop sees between intervals, so the run ends through the normal path
//! (undo, then the signal passed on to the run's processes).
//!
//! `SIGPIPE` is not among them: Rust's runtime ignores it, so a closed
//! output is a write error, never ecosched's death. `SIGKILL` cannot be
//! caught: `ecosched restore` undoes what such a run left. An attached
//! platform (the daemon's groups) watches `SIGINT` and `SIGTERM` only: the
//! daemon reads `SIGHUP` as "reload".

use crate::error::LinuxError;
use signal_hook::consts as sig;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The signals that end a command's run.
pub(super) const RUN_ENDING: [i32; 11] = [
    sig::SIGHUP,
    sig::SIGINT,
    sig::SIGTERM,
    sig::SIGQUIT,
    sig::SIGUSR1,
    sig::SIGUSR2,
    sig::SIGALRM,
    sig::SIGXCPU,
    sig::SIGXFSZ,
    sig::SIGVTALRM,
    sig::SIGPROF,
];

/// The signals that end an attached platform's management.
const ATTACHED_ENDING: [i32; 2] = [sig::SIGINT, sig::SIGTERM];

/// The flag the handlers raise, and the handlers, removed on drop.
#[derive(Debug)]
pub(super) struct SignalWatch {
    signal: Arc<AtomicUsize>,
    ids: Vec<signal_hook::SigId>,
}

impl SignalWatch {
    /// Watch from now on for the signals that end a run ([`RUN_ENDING`]),
    /// or, `attached`, for `SIGINT` and `SIGTERM`.
    pub(super) fn register(attached: bool) -> Result<Self, LinuxError> {
        let signal = Arc::new(AtomicUsize::new(0));
        let watched: &[i32] = if attached {
            &ATTACHED_ENDING
        } else {
            &RUN_ENDING
        };
        let mut ids = Vec::new();
        for &sig in watched {
            let id = signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)
                .map_err(|e| LinuxError::Io {
                    path: PathBuf::from(format!("signal handler for signal {sig}")),
                    source: e,
                })?;
            ids.push(id);
        }
        Ok(SignalWatch { signal, ids })
    }

    /// The signal that arrived, if one did.
    pub(super) fn interrupted_by(&self) -> Option<i32> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            sig => i32::try_from(sig).ok(),
        }
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}
