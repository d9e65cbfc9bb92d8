//! The signals the daemon answers, so that no signal it can catch ends it
//! with the machine still changed: every signal whose default action ends
//! a process (`SIGTERM` and `SIGINT` from systemd or a terminal, `SIGQUIT`,
//! the timers' `SIGALRM`, `SIGVTALRM` and `SIGPROF`, the resource limits'
//! `SIGXCPU` and `SIGXFSZ`, `SIGIO` and `SIGPWR`) stops every group,
//! undoing its changes, before the daemon exits; `SIGUSR1` and `SIGUSR2`,
//! which mean nothing to it, are logged and ignored; `SIGHUP` reloads.
//! `SIGPIPE` stays ignored (Rust's runtime ignores it): a control client
//! that hangs up early must cost its own answer, not the daemon.
//!
//! What cannot be caught (`SIGKILL`) or is a fault of the daemon itself
//! (`SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE`, `SIGABRT`) leaves the groups'
//! journals, which the next daemon undoes at start (or `ecosched
//! restore`).

use nix::sys::signal::Signal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Signals that stop the daemon after it undid every group's changes.
pub const ENDING: [Signal; 10] = [
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGQUIT,
    Signal::SIGALRM,
    Signal::SIGXCPU,
    Signal::SIGXFSZ,
    Signal::SIGVTALRM,
    Signal::SIGPROF,
    Signal::SIGIO,
    Signal::SIGPWR,
];

/// Signals the daemon logs and otherwise ignores.
pub const IGNORED: [Signal; 2] = [Signal::SIGUSR1, Signal::SIGUSR2];

/// What arrived since the last look.
#[derive(Debug)]
pub struct Signals {
    ending: Arc<AtomicUsize>,
    ignored: Arc<AtomicUsize>,
    hup: Arc<AtomicBool>,
}

impl Signals {
    /// Catch [`ENDING`], [`IGNORED`] and `SIGHUP` from now on.
    pub fn catch() -> Result<Self, String> {
        let s = Signals {
            ending: Arc::new(AtomicUsize::new(0)),
            ignored: Arc::new(AtomicUsize::new(0)),
            hup: Arc::new(AtomicBool::new(false)),
        };
        let cannot = |sig: Signal, e: std::io::Error| format!("cannot handle {sig}: {e}");
        for sig in ENDING {
            signal_hook::flag::register_usize(sig as i32, Arc::clone(&s.ending), sig as usize)
                .map_err(|e| cannot(sig, e))?;
        }
        for sig in IGNORED {
            signal_hook::flag::register_usize(sig as i32, Arc::clone(&s.ignored), sig as usize)
                .map_err(|e| cannot(sig, e))?;
        }
        signal_hook::flag::register(Signal::SIGHUP as i32, Arc::clone(&s.hup))
            .map_err(|e| cannot(Signal::SIGHUP, e))?;
        Ok(s)
    }

    /// The ending signal that arrived, if one did.
    pub fn ending(&self) -> Option<Signal> {
        signal_of(self.ending.load(Ordering::SeqCst))
    }

    /// Whether a reload was asked for since the last call.
    pub fn take_hup(&self) -> bool {
        self.hup.swap(false, Ordering::SeqCst)
    }

    /// An ignored signal that arrived since the last call.
    pub fn take_ignored(&self) -> Option<Signal> {
        signal_of(self.ignored.swap(0, Ordering::SeqCst))
    }
}

fn signal_of(n: usize) -> Option<Signal> {
    if n == 0 {
        return None;
    }
    Signal::try_from(i32::try_from(n).ok()?).ok()
}
