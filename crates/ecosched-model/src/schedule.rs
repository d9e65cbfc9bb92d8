//! The exact schedule a trace shows: every stretch a task ran on a CPU,
//! from the switches themselves (the simulator's kernel model; on Linux,
//! perf's context-switch records) rather than from what a control-loop
//! interval happened to see at its end. A platform records it only when a
//! trace asks ([`crate::Platform::record_schedule`]), and hands it over
//! once per step ([`crate::Platform::take_schedule`]).
//!
//! Bounded: at most [`MAX_SLICES_PER_S`] slices per second of run are
//! kept ([`SliceBudget`]); the rest are counted, and the trace says how
//! many were dropped.

/// The most slices kept per second of run, across all CPUs: a busy CPU
/// switches at most every scheduler tick (250 Hz), so 50,000 covers 200
/// CPUs each switching on every tick.
pub const MAX_SLICES_PER_S: u32 = 50_000;

/// One stretch of one task on one CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSlice {
    /// The CPU's number.
    pub cpu: u32,
    /// The process (thread group) the task belongs to.
    pub pid: u32,
    /// The task (thread) itself.
    pub tid: u32,
    /// Its name as the platform reports it.
    pub name: String,
    /// When it started running there, seconds since the run's start.
    pub start_s: f64,
    /// When it stopped (or the step ended, the stretch going on), seconds.
    pub end_s: f64,
}

/// Admits at most [`MAX_SLICES_PER_S`] slices per second of run (by
/// their start) and counts the rest.
#[derive(Debug, Clone, Default)]
pub struct SliceBudget {
    second: u64,
    used: u32,
    dropped: u64,
}

impl SliceBudget {
    /// Whether a slice starting at `start_s` may be kept; counts it
    /// dropped if not.
    pub fn admit(&mut self, start_s: f64) -> bool {
        let second = start_s.max(0.0) as u64;
        if second != self.second {
            self.second = second;
            self.used = 0;
        }
        if self.used < MAX_SLICES_PER_S {
            self.used += 1;
            true
        } else {
            self.dropped += 1;
            false
        }
    }

    /// Slices dropped since the last call.
    pub fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_caps_each_second_and_counts_the_rest() {
        let mut b = SliceBudget::default();
        let kept = (0..MAX_SLICES_PER_S + 10).filter(|_| b.admit(0.5)).count();
        assert_eq!(kept, MAX_SLICES_PER_S as usize);
        assert!(b.admit(1.0), "a new second starts afresh");
        assert_eq!(b.take_dropped(), 10);
        assert_eq!(b.take_dropped(), 0);
    }
}
