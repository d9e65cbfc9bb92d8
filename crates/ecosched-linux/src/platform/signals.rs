//! `SIGINT` and `SIGTERM` end a managed run: the handlers only raise a
//! flag, which the control loop sees between intervals, so the run ends
//! through the normal path (undo, then the signal passed on to the
//! command).

use crate::error::LinuxError;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The flag the handlers raise, and the handlers, removed on drop.
#[derive(Debug)]
pub(super) struct SignalWatch {
    signal: Arc<AtomicUsize>,
    ids: Vec<signal_hook::SigId>,
}

impl SignalWatch {
    /// Watch for `SIGINT` and `SIGTERM` from now on.
    pub(super) fn register() -> Result<Self, LinuxError> {
        let signal = Arc::new(AtomicUsize::new(0));
        let mut ids = Vec::new();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
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
