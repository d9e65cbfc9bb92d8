//! When `ab` runs what: the ABBA order of the two arms, and the wait for
//! an idle machine before each run.
//!
//! Why ABBA: a machine drifts (it warms up, its caches fill, other work
//! comes and goes). Alternating which arm goes first in each pair puts
//! each arm first as often as second, so a drift along the sequence
//! favours neither. Why wait for idle: a run that starts while something
//! else keeps the CPUs busy measures that too; a run that cannot get an
//! idle machine is still made (the order stays ABBA) but reported as
//! such and left out of the ratios.

use serde::Serialize;
use std::io::Read;
use std::time::{Duration, Instant};

/// One of the two things compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arm {
    /// The reference (`--baseline`).
    Baseline,
    /// The policy under test (`--policy`).
    Policy,
}

impl Arm {
    /// The arm's name, as the command sees it in `ECOSCHED_AB_ARM`.
    pub fn name(self) -> &'static str {
        match self {
            Arm::Baseline => "baseline",
            Arm::Policy => "policy",
        }
    }
}

/// The arms of `pairs` pairs in run order: pair 0 baseline then policy,
/// pair 1 policy then baseline, and so on (ABBA ABBA …).
pub fn abba(pairs: usize) -> Vec<[Arm; 2]> {
    (0..pairs)
        .map(|i| {
            if i % 2 == 0 {
                [Arm::Baseline, Arm::Policy]
            } else {
                [Arm::Policy, Arm::Baseline]
            }
        })
        .collect()
}

/// Busy and total CPU time of the whole machine, in ticks (the `cpu`
/// line of `/proc/stat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTicks {
    busy: u64,
    total: u64,
}

/// The `cpu` line of `/proc/stat`: user nice system idle iowait irq
/// softirq steal (guest time is inside user already); idle and iowait
/// are not busy.
pub fn parse_proc_stat(text: &str) -> Option<CpuTicks> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    if fields.len() < 4 {
        return None;
    }
    let total: u64 = fields.iter().sum();
    let idle = fields[3] + fields.get(4).copied().unwrap_or(0);
    Some(CpuTicks {
        busy: total - idle,
        total,
    })
}

/// The busy share (0–1) of the machine between two readings; `None` when
/// no tick passed.
pub fn busy_share(before: CpuTicks, after: CpuTicks) -> Option<f64> {
    let total = after.total.checked_sub(before.total)?;
    let busy = after.busy.checked_sub(before.busy)?;
    (total > 0).then(|| busy as f64 / total as f64)
}

/// The machine's state before a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Settle {
    /// Whether it was idle enough within the wait.
    pub settled: bool,
    /// The busy share (0–1) of the last window looked at.
    pub busy: f64,
    /// How long `ab` waited, seconds.
    pub waited_s: f64,
}

/// How long one look at the machine lasts: long enough for a few
/// scheduler ticks at any HZ.
const WINDOW: Duration = Duration::from_millis(500);

/// `/proc/stat`'s first lines are all that is read.
const STAT_BYTES: u64 = 4096;

fn read_ticks() -> std::io::Result<CpuTicks> {
    let mut text = String::new();
    std::fs::File::open("/proc/stat")?
        .take(STAT_BYTES)
        .read_to_string(&mut text)?;
    parse_proc_stat(&text).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "/proc/stat: no `cpu` line of numbers",
        )
    })
}

/// Look at the machine in windows of [`WINDOW`] until one is at most
/// `busy_max` (0–1) busy or `wait` has passed.
pub fn wait_for_idle(busy_max: f64, wait: Duration) -> std::io::Result<Settle> {
    let start = Instant::now();
    loop {
        let before = read_ticks()?;
        std::thread::sleep(WINDOW);
        let busy = busy_share(before, read_ticks()?).unwrap_or(0.0);
        let waited = start.elapsed();
        if busy <= busy_max || waited >= wait {
            return Ok(Settle {
                settled: busy <= busy_max,
                busy,
                waited_s: waited.as_secs_f64(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_alternate_which_arm_goes_first() {
        use Arm::{Baseline as B, Policy as P};
        assert_eq!(abba(4), [[B, P], [P, B], [B, P], [P, B]]);
        assert!(abba(0).is_empty());
    }

    /// Two readings of a 2-CPU VM's `/proc/stat` half a second apart.
    #[test]
    fn the_busy_share_leaves_idle_and_iowait_out() {
        let a = parse_proc_stat(
            "cpu  1000 10 500 8000 100 0 20 5 0 0\ncpu0 500 5 250 4000 50 0 10 2 0 0\n",
        )
        .unwrap();
        let b = parse_proc_stat("cpu  1030 10 510 8055 105 0 20 5 0 0\n").unwrap();
        // 40 busy ticks of 100.
        assert_eq!(busy_share(a, b), Some(0.4));
        assert_eq!(busy_share(a, a), None);
        assert_eq!(parse_proc_stat("intr 1 2 3\n"), None);
        assert_eq!(parse_proc_stat("cpu  1 x 3 4\n"), None);
    }
}
