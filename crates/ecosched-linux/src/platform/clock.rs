//! The run's clock: when it started (for snapshot times, and as wall time
//! for the tasks' start times) and when it was last observed (for each
//! snapshot's interval).

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// When the run started and was last observed.
#[derive(Debug)]
pub(super) struct RunClock {
    started: Instant,
    /// The start as seconds since the Unix epoch, what a task's start time
    /// is measured from (0 until the run starts).
    start_epoch_s: f64,
    last_observe: Instant,
}

impl RunClock {
    /// A clock started now, with no wall-clock start yet.
    pub(super) fn new() -> Self {
        let now = Instant::now();
        RunClock {
            started: now,
            start_epoch_s: 0.0,
            last_observe: now,
        }
    }

    /// The command starts now: times and the first interval count from here.
    pub(super) fn restart(&mut self) {
        self.started = Instant::now();
        self.last_observe = self.started;
        self.mark_epoch();
    }

    /// Tasks' start times count from now (the wall clock).
    pub(super) fn mark_epoch(&mut self) {
        self.start_epoch_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
    }

    /// The run's start, seconds since the Unix epoch.
    pub(super) fn start_epoch_s(&self) -> f64 {
        self.start_epoch_s
    }

    /// Time since the start.
    pub(super) fn elapsed(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// An observation now: seconds since the start, and since the last
    /// observation (the interval it covers).
    pub(super) fn observe(&mut self) -> (f64, f64) {
        let now = Instant::now();
        let interval_s = now.duration_since(self.last_observe).as_secs_f64();
        self.last_observe = now;
        (now.duration_since(self.started).as_secs_f64(), interval_s)
    }
}
