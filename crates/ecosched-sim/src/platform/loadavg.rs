//! `/proc/loadavg` as Linux computes it (kernel/sched/loadavg.c): every
//! `LOAD_FREQ` = 5 s + 1 tick, `calc_load` folds the number of active
//! tasks (runnable plus uninterruptible) into three fixed-point averages
//! with `FSHIFT` = 11 and decay factors `EXP_1` = 1884, `EXP_5` = 2014,
//! `EXP_15` = 2037 (1/exp(5 s/1, 5, 15 min) in fixed point), and
//! `/proc/loadavg` prints them rounded to two decimals.
//!
//! In the simulator every sleep is interruptible (no task waits on I/O
//! in D state), and a stopped or gang-frozen task is not runnable, so the
//! active count is the tasks on run queues. A sample falling inside a span
//! sees the span's state, so sampling adds no events.

use crate::kernel::{Kernel, Ns};
use ecosched_model::LoadAvg;

/// Fixed-point shift.
const FSHIFT: u32 = 11;
/// 1.0 in fixed point.
const FIXED_1: u64 = 1 << FSHIFT;
/// Decay per sample of the 1-, 5- and 15-minute averages.
const EXP: [u64; 3] = [1884, 2014, 2037];
/// Seconds between samples, before the extra tick.
const LOAD_FREQ_S: u64 = 5;

/// One step of `calc_load`: `load · e + active · (1 − e)`, rounded up
/// when the load rises (as Linux does since 4.x).
pub(super) fn calc_load(load: u64, exp: u64, active: u64) -> u64 {
    let mut newload = load * exp + active * (FIXED_1 - exp);
    if active >= load {
        newload += FIXED_1 - 1;
    }
    newload / FIXED_1
}

/// A fixed-point average as `/proc/loadavg` prints it (two decimals).
pub(super) fn printed(avenrun: u64) -> f64 {
    let a = avenrun + FIXED_1 / 200;
    let int = a >> FSHIFT;
    let frac = ((a & (FIXED_1 - 1)) * 100) >> FSHIFT;
    int as f64 + frac as f64 / 100.0
}

/// The three averages and when the next sample falls.
#[derive(Debug, Clone)]
pub(super) struct LoadTracker {
    avenrun: [u64; 3],
    period: Ns,
    next: Ns,
}

impl LoadTracker {
    /// Averages at zero, first sample one `LOAD_FREQ` after boot.
    pub(super) fn new(tick: Ns) -> Self {
        let period = LOAD_FREQ_S * 1_000_000_000 + tick;
        LoadTracker {
            avenrun: [0; 3],
            period,
            next: period,
        }
    }

    /// Fold in every sample that falls in `[from, to)`, during which the
    /// run queues are as `kernel` has them.
    pub(super) fn sample_span(&mut self, from: Ns, to: Ns, kernel: &Kernel) {
        if self.next < from || self.next >= to {
            return;
        }
        let active = kernel.rqs.iter().map(|rq| rq.nr() as u64).sum::<u64>() * FIXED_1;
        while self.next >= from && self.next < to {
            for (a, e) in self.avenrun.iter_mut().zip(EXP) {
                *a = calc_load(*a, e, active);
            }
            self.next += self.period;
        }
    }

    /// `/proc/loadavg` now, with `total` tasks existing.
    pub(super) fn read(&self, kernel: &Kernel, total: usize) -> LoadAvg {
        LoadAvg {
            one: printed(self.avenrun[0]),
            five: printed(self.avenrun[1]),
            fifteen: printed(self.avenrun[2]),
            runnable: kernel.rqs.iter().map(|rq| rq.nr() as u32).sum(),
            total: total as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One busy task from idle, worked by hand: 2048·164 + 2047 = 337919,
    /// /2048 = 164; printed (164 + 10)·100 >> 11 = 8 → 0.08.
    #[test]
    fn first_sample_of_one_busy_task() {
        let a = calc_load(0, EXP[0], FIXED_1);
        assert_eq!(a, 164);
        assert_eq!(printed(a), 0.08);
        // Second sample: 164·1884 + 2048·164 + 2047 = 647151, /2048 = 315.
        assert_eq!(calc_load(a, EXP[0], FIXED_1), 315);
    }

    /// A falling load is not rounded up: 2048·1884 / 2048 = 1884 → 0.92.
    #[test]
    fn falling_load_decays_without_rounding_up() {
        let a = calc_load(FIXED_1, EXP[0], 0);
        assert_eq!(a, 1884);
        assert_eq!(printed(a), 0.92);
    }
}
