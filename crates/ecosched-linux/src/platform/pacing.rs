//! When the tasks are read between observations: at most once per
//! [`SUBSAMPLE`], thinned out so that the reads stay within a tiny share
//! of one core, and not at all while the activity cgroup shows that no
//! managed task ran.

use crate::fsroot::FsRoot;
use crate::runcgroup::RunCgroup;
use std::time::{Duration, Instant};

/// How often counters are read between observations, at most. A task's
/// counters can only be read while it exists, so reading more often than
/// the policy's interval bounds what a short-lived task takes with it.
pub const SUBSAMPLE: Duration = Duration::from_millis(100);

/// The extra reads may use at most this share of one core (0.1 %, so that
/// the daemon's several groups, each with its own reads, stay well below
/// 1 %): with many tasks a read costs more, and the reads between
/// observations thin out (a 1 ms read waits at least 1 s), so watching
/// never costs much more than the observations the policy asks for. The
/// run's total CPU time does not depend on them: it comes from its cgroup.
const SUBSAMPLE_DUTY: u32 = 1000;

/// The least time between two full reads of the tasks (every thread's
/// files and perf groups) when the last one took `read_cost`: [`SUBSAMPLE`],
/// stretched so that reads between observations stay within the duty.
pub fn read_spacing(read_cost: Duration) -> Duration {
    SUBSAMPLE.max(read_cost.saturating_mul(SUBSAMPLE_DUTY))
}

/// How many full reads of the tasks a policy interval holds when every
/// look finds that a task ran and a read costs `read_cost`: the reads
/// between observations, [`read_spacing`] apart, and the observation's
/// own. When nothing ran, a look reads only the activity cgroup's CPU time
/// (see [`LinuxPlatform::observe`](crate::platform::LinuxPlatform)), once
/// per [`SUBSAMPLE`].
pub fn full_reads_per_interval(read_cost: Duration, interval: Duration) -> u64 {
    let spacing = read_spacing(read_cost).as_nanos().max(1);
    let between = interval.as_nanos().saturating_sub(1) / spacing;
    1 + u64::try_from(between).unwrap_or(u64::MAX - 1)
}

/// The looks at the tasks and what they cost.
#[derive(Debug)]
pub(super) struct ReadPacer {
    /// The last full read of the tasks, and what it cost.
    last_read: Instant,
    read_cost: Duration,
    /// The last look at whether anything ran (a full read or not).
    last_look: Instant,
    /// The cgroup whose CPU time tells whether any managed task ran (the
    /// run's own; a daemon group's cgroup), and that time at the last full
    /// read. Sleeping tasks are the majority of most machines' threads:
    /// when the time has not moved, no task ran, exited or forked, so
    /// none of their files need reading (one file instead of thousands).
    activity: Option<RunCgroup>,
    activity_ns: Option<u64>,
    /// ecosched changed what a read would show (affinity, cpusets, stopped
    /// tasks) since the last full read: read even if nothing ran.
    changed: bool,
    /// Looks that found nothing had run (for tests and benchmarks).
    skipped_reads: u64,
}

impl ReadPacer {
    /// No look yet, no activity cgroup.
    pub(super) fn new() -> Self {
        let now = Instant::now();
        ReadPacer {
            last_read: now,
            read_cost: Duration::ZERO,
            last_look: now,
            activity: None,
            activity_ns: None,
            changed: false,
            skipped_reads: 0,
        }
    }

    /// Tell whether anything ran from cgroup `activity`'s CPU time from now
    /// on (`None`: read at every look).
    pub(super) fn watch(&mut self, activity: Option<RunCgroup>) {
        self.activity = activity;
        self.activity_ns = None;
    }

    /// Whether an activity cgroup is watched.
    pub(super) fn watching(&self) -> bool {
        self.activity.is_some()
    }

    /// ecosched changed something a read would show: the next look reads.
    pub(super) fn mark_changed(&mut self) {
        self.changed = true;
    }

    /// How many looks found that nothing had run.
    pub(super) fn skipped_reads(&self) -> u64 {
        self.skipped_reads
    }

    /// Whether a look is due at `now` between observations: one per
    /// [`SUBSAMPLE`], full reads [`read_spacing`] apart, and none that
    /// would make the gang slot switch due at `gang_due` late.
    pub(super) fn due(&self, now: Instant, gang_due: Option<Instant>) -> bool {
        let read_fits = gang_due.is_none_or(|d| d.saturating_duration_since(now) > self.read_cost);
        read_fits
            && now.duration_since(self.last_look) >= SUBSAMPLE
            && now.duration_since(self.last_read) >= read_spacing(self.read_cost)
    }

    /// When the next look between observations is due (see
    /// [`ReadPacer::due`]), so that `advance` sleeps until then.
    pub(super) fn next_look(&self) -> Instant {
        (self.last_look + SUBSAMPLE).max(self.last_read + read_spacing(self.read_cost))
    }

    /// Start a look: `false` when no managed task can have run since the
    /// last full read, so that none need reading. That is when the
    /// activity cgroup's CPU time has not moved (running, forking and
    /// exiting all take CPU time in the task's own cgroup), ecosched
    /// changed nothing a read would show, no gang schedule is switching
    /// groups (`gang_active`), and no zombie was reaped (its reaper's time
    /// is not the task's; `zombie_vanished` is asked last, as it costs a
    /// `stat` or two). A task that waits runnable for the whole gap without
    /// running would show its wait late, at the next read after it runs.
    pub(super) fn begin_look(
        &mut self,
        root: &FsRoot,
        gang_active: bool,
        zombie_vanished: impl FnOnce() -> bool,
    ) -> bool {
        self.last_look = Instant::now();
        let Some(cg) = &self.activity else {
            self.last_read = self.last_look;
            return true;
        };
        let usage = cg.usage_ns(root).ok();
        let idle = usage.is_some()
            && usage == self.activity_ns
            && !self.changed
            && !gang_active
            && !zombie_vanished();
        if idle {
            self.skipped_reads += 1;
            return false;
        }
        // Taken before the reads, so a task that runs during them is
        // caught by the next look.
        self.activity_ns = usage;
        self.changed = false;
        self.last_read = self.last_look;
        true
    }

    /// A full read begun by [`ReadPacer::begin_look`] is over: what it
    /// cost (discovery included: it walks /proc and is most of the cost)
    /// spaces the next ones.
    pub(super) fn end_read(&mut self) {
        self.read_cost = self.last_read.elapsed();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_between_observations_stay_within_the_duty() {
        let second = Duration::from_secs(1);
        // Cheap reads: one every SUBSAMPLE, the observation's included.
        assert_eq!(
            full_reads_per_interval(Duration::from_micros(50), second),
            10
        );
        // 0.25 ms reads may come every 250 ms (0.1 % of a core).
        assert_eq!(
            full_reads_per_interval(Duration::from_micros(250), second),
            4
        );
        // Dear reads: only the observation's.
        assert_eq!(full_reads_per_interval(Duration::from_millis(1), second), 1);
        assert_eq!(full_reads_per_interval(Duration::ZERO, SUBSAMPLE), 1);
        for us in (10..5000).step_by(10) {
            let cost = Duration::from_micros(us);
            let between = full_reads_per_interval(cost, second) - 1;
            assert!(cost * u32::try_from(between).unwrap() <= second / SUBSAMPLE_DUTY);
        }
    }
}
