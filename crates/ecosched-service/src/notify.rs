//! systemd's readiness and watchdog protocol (`sd_notify(3)`): with
//! `Type=notify` the unit is started only once the daemon says `READY=1`,
//! and with `WatchdogSec=` systemd restarts a daemon that stops sending
//! `WATCHDOG=1` at least every `WATCHDOG_USEC`; a reload is bracketed by
//! `RELOADING=1` (with its `MONOTONIC_USEC`) and `READY=1`. Outside
//! systemd (`NOTIFY_SOCKET` unset) every call does nothing.

use std::time::Duration;

/// Tell the service manager the daemon is up (groups started, socket and
/// exporter listening), or done reloading (applied or refused), with
/// `status` saying how.
pub fn ready(status: &str) {
    let _ = sd_notify::notify(
        false,
        &[
            sd_notify::NotifyState::Ready,
            sd_notify::NotifyState::Status(status),
        ],
    );
}

/// One watchdog keep-alive.
pub fn watchdog() {
    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Watchdog]);
}

/// Reloading the configuration (`SIGHUP`, `ctl reload`) starts:
/// `RELOADING=1` with `MONOTONIC_USEC`, the `CLOCK_MONOTONIC` time it
/// started at, in one datagram. systemd 253 and later take a reload
/// notification only with that timestamp (`sd_notify(3)`), and a
/// `Type=notify-reload` service that omits it fails its reload.
pub fn reloading() {
    let mut states = vec![sd_notify::NotifyState::Reloading];
    if let Ok(now) = sd_notify::NotifyState::monotonic_usec_now() {
        states.push(now);
    }
    let _ = sd_notify::notify(false, &states);
}

/// The daemon is restoring the machine and will exit.
pub fn stopping() {
    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Stopping]);
}

/// How often to send [`watchdog`]: half the interval systemd asked for, as
/// `sd_watchdog_enabled(3)` recommends; `None` without a watchdog. As in
/// libsystemd, an absent `WATCHDOG_PID` means the watchdog is this
/// process's (the `sd-notify` crate would insist on it).
pub fn watchdog_every() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    match std::env::var("WATCHDOG_PID") {
        Ok(pid) if pid.parse::<u32>().ok() != Some(std::process::id()) => None,
        _ if usec == 0 => None,
        _ => Some(Duration::from_micros(usec / 2)),
    }
}
