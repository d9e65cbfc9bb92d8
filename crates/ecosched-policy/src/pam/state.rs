//! PAM's two-state machine and its goals (Banikazemi, Poff and Abali,
//! SC '08, §III-A, Fig. 2), and the CPU-count controller of the power cap
//! (§V-G).
//!
//! ```text
//!            plan predicted to beat Default
//!   Default ─────────────────────────────────▶ Good
//!      ▲   ◀── not better at an M-check ───────  │   (then hold Default N−M intervals)
//!      └────── N intervals in Good ──────────────┘   (re-observe)
//! ```
//!
//! Goodness per goal: `performance` — measured system speedup (eq. 1) of
//! the Good plan over the last Default interval; `energy` — energy per
//! instruction, `power × cycle time / ΣIPC` (§III-A), lower is better;
//! `power-cap` — performance inside the CPU set the cap controller allows.
//!
//! **Worst case (`docs/design/papers.md`, "PAM").** The paper's bound —
//! goodness ≥ (N−M)/N of Default — assumes that a failed plan costs at most
//! M intervals per N. Two things make that true here: after a failed check
//! Default is held for N−M intervals before Algorithm 2 may propose again,
//! and leaving Good first puts every task back on the CPU it had in the
//! last Default interval (the kernel would not undo PAM's moves by itself,
//! so merely lifting the restrictions would keep the bad placement).

use ecosched_model::{CpuId, CpuSet, TaskId, Topology};
use std::collections::BTreeMap;

/// What PAM optimises.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// System speedup (eq. 1).
    Performance,
    /// Keep whole-system power at or below the cap (W), and within the
    /// CPUs that allows, performance.
    PowerCap {
        /// The cap, W.
        cap_w: f64,
    },
    /// Energy per instruction.
    Energy,
}

impl Goal {
    /// Name used in parameters and reports.
    pub fn name(&self) -> &'static str {
        match self {
            Goal::Performance => "performance",
            Goal::PowerCap { .. } => "power-cap",
            Goal::Energy => "energy",
        }
    }
}

/// Per-task CPI and the system's power over one interval (or a window).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measure {
    /// Cycles and instructions per task.
    pub tasks: BTreeMap<TaskId, (f64, f64)>,
    /// Energy, J, when known.
    pub energy_j: Option<f64>,
    /// Seconds covered.
    pub seconds: f64,
    /// Mean frequency of the busy CPUs, GHz, when known.
    pub ghz: Option<f64>,
}

impl Measure {
    /// Add another interval.
    pub fn add(&mut self, other: &Measure) {
        for (id, (c, i)) in &other.tasks {
            let e = self.tasks.entry(*id).or_insert((0.0, 0.0));
            e.0 += c;
            e.1 += i;
        }
        self.energy_j = match (self.energy_j, other.energy_j) {
            (Some(a), Some(b)) => Some(a + b),
            (None, b) if self.seconds == 0.0 => b,
            _ => None,
        };
        self.ghz = other.ghz.or(self.ghz);
        self.seconds += other.seconds;
    }

    fn cpi(&self, id: &TaskId) -> Option<f64> {
        self.tasks
            .get(id)
            .filter(|(_, i)| *i > 0.0)
            .map(|(c, i)| c / i)
    }

    /// Geometric mean over common tasks of `baseline CPI / this CPI` (eq. 1).
    pub fn speedup_over(&self, baseline: &Measure) -> Option<f64> {
        let logs: Vec<f64> = self
            .tasks
            .keys()
            .filter_map(|id| Some((baseline.cpi(id)? / self.cpi(id)?).ln()))
            .collect();
        (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
    }

    /// Energy per instruction, `power × cycle time / ΣIPC` (§III-A), in
    /// joules per instruction-per-cycle-of-every-CPU; lower is better.
    pub fn energy_per_instruction(&self) -> Option<f64> {
        let power_w = self.energy_j? / self.seconds.max(1e-9);
        let cycle_s = 1e-9 / self.ghz.filter(|g| *g > 0.0)?;
        let ipc: f64 = self
            .tasks
            .values()
            .filter(|(c, _)| *c > 0.0)
            .map(|(c, i)| i / c)
            .sum();
        (ipc > 0.0).then(|| power_w * cycle_s / ipc)
    }

    /// Joules per instruction retired: the same quantity as
    /// [`Self::energy_per_instruction`] when every task runs throughout,
    /// and one that needs no clock frequency, which a machine without
    /// cpufreq does not report.
    pub fn joules_per_instruction(&self) -> Option<f64> {
        let instructions: f64 = self.tasks.values().map(|(_, i)| i).sum();
        (instructions > 0.0).then_some(self.energy_j? / instructions)
    }

    /// Whether `self` (Good) beats `baseline` (Default) for `goal`. The
    /// energy goal compares §III-A's energy per instruction where both
    /// intervals know their clock, else joules per instruction retired:
    /// without a clock every plan would otherwise count as no better and
    /// be undone.
    pub fn better_than(&self, baseline: &Measure, goal: &Goal) -> bool {
        match goal {
            Goal::Performance | Goal::PowerCap { .. } => {
                self.speedup_over(baseline).is_some_and(|s| s > 1.0)
            }
            Goal::Energy => self
                .energy_per_instruction()
                .zip(baseline.energy_per_instruction())
                .or_else(|| {
                    self.joules_per_instruction()
                        .zip(baseline.joules_per_instruction())
                })
                .is_some_and(|(now, before)| now < before),
        }
    }
}

/// The state machine's state.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Observing; Algorithm 2 may propose once `hold` reaches zero.
    Default {
        /// Intervals still to wait before proposing.
        hold: u32,
    },
    /// A plan is in force.
    Good {
        /// Intervals spent in Good so far.
        intervals: u32,
        /// The tasks the plan covers.
        tasks: Vec<TaskId>,
        /// Goodness accumulated since the last M-check.
        window: Measure,
    },
}

/// Why the machine left Good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leave {
    /// Not better than Default at an M-check: restore, then hold N−M.
    Failed,
    /// N intervals are over: re-observe.
    Expired,
}

/// The Default/Good machine (Fig. 2).
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// M: intervals between goodness checks.
    pub m: u32,
    /// N: longest stay in Good.
    pub n: u32,
    /// Current state.
    pub state: State,
    /// Goodness of the last Default interval.
    pub baseline: Option<Measure>,
}

impl Machine {
    /// A machine in Default.
    pub fn new(m: u32, n: u32) -> Self {
        Machine {
            m: m.max(1),
            n: n.max(m.max(1)),
            state: State::Default { hold: 0 },
            baseline: None,
        }
    }

    /// Enter Good with a plan covering `tasks`.
    pub fn enter_good(&mut self, tasks: Vec<TaskId>) {
        self.state = State::Good {
            intervals: 0,
            tasks,
            window: Measure::default(),
        };
    }

    /// Go (back) to Default, waiting `hold` intervals before proposing.
    pub fn enter_default(&mut self, hold: u32) {
        self.state = State::Default { hold };
    }

    /// One interval in Good with measurement `now`: returns why to leave,
    /// if it is time to.
    pub fn good_step(&mut self, now: &Measure, goal: &Goal) -> Option<Leave> {
        let (m, n) = (self.m, self.n);
        let State::Good {
            intervals, window, ..
        } = &mut self.state
        else {
            return None;
        };
        *intervals += 1;
        // The first interval after re-mapping carries the migration's cache
        // refill; it is left out of the first check when M allows.
        if !(*intervals == 1 && m > 1) {
            window.add(now);
        }
        if *intervals % m == 0 {
            let better = self
                .baseline
                .as_ref()
                .is_some_and(|b| window.better_than(b, goal));
            *window = Measure::default();
            if !better {
                return Some(Leave::Failed);
            }
        }
        (*intervals >= n).then_some(Leave::Expired)
    }

    /// Hold to wait after leaving Good.
    pub fn hold_after(&self, why: Leave) -> u32 {
        match why {
            Leave::Failed => self.n - self.m,
            Leave::Expired => 0,
        }
    }
}

/// Nested CPU sets of decreasing size for the power cap (§II-C: e.g.
/// {0..7} ⊃ {0..5} ⊃ {0..3} ⊃ {0,1}), shrunk while power is above the cap
/// and grown back, with hysteresis, when there is room below it.
#[derive(Debug, Clone, PartialEq)]
pub struct CapController {
    /// The cap, W.
    pub cap_w: f64,
    /// Fraction of the cap kept free before growing.
    pub margin: f64,
    /// Calm intervals needed before growing.
    pub hold: u32,
    /// Level sets, largest first.
    pub levels: Vec<CpuSet>,
    /// Current level.
    pub level: usize,
    /// Estimated power of one more level, W (learned from each change).
    pub step_w: f64,
    calm: u32,
    /// Power before the last change and the level it changed from.
    pending: Option<(f64, usize)>,
}

/// Weight of a newly observed power step against the running estimate.
const STEP_SMOOTHING: f64 = 0.5;

impl CapController {
    /// Levels over `allowed`, removing `step` CPUs at a time, CPUs ordered
    /// by package, die and core so that whole caches and packages empty
    /// first (they can then sit in their deepest idle state).
    pub fn new(
        topology: &Topology,
        allowed: &CpuSet,
        cap_w: f64,
        step: usize,
        margin: f64,
        hold: u32,
    ) -> Self {
        let mut order: Vec<(u32, u32, u32, CpuId)> = allowed
            .iter()
            .map(|id| {
                topology
                    .cpu(id)
                    .map_or((0, 0, 0, id), |c| (c.package, c.die, c.core, id))
            })
            .collect();
        order.sort();
        let ids: Vec<CpuId> = order.into_iter().map(|o| o.3).collect();
        let step = step.max(1);
        let mut levels = Vec::new();
        let mut size = ids.len();
        while size > 0 {
            levels.push(ids[..size].iter().copied().collect());
            size = size.saturating_sub(step);
        }
        let n = ids.len().max(1) as f64;
        CapController {
            cap_w,
            margin,
            hold: hold.max(1),
            levels,
            level: 0,
            // Before any change is seen: the cap spread over twice the
            // CPUs, a deliberately pessimistic guess for growing back.
            step_w: cap_w / (2.0 * n) * step as f64,
            calm: 0,
            pending: None,
        }
    }

    /// The CPUs currently allowed.
    pub fn allowed(&self) -> &CpuSet {
        &self.levels[self.level]
    }

    /// One interval at `power_w`: returns the new level's set if it changes.
    pub fn step(&mut self, power_w: f64) -> Option<CpuSet> {
        if let Some((before, from)) = self.pending.take() {
            let levels = from.abs_diff(self.level).max(1) as f64;
            let observed = (before - power_w).abs() / levels;
            if observed.is_finite() && observed > 0.0 {
                self.step_w += STEP_SMOOTHING * (observed - self.step_w);
            }
        }
        let last = self.levels.len() - 1;
        let target = if power_w > self.cap_w {
            self.calm = 0;
            let over = ((power_w - self.cap_w) / self.step_w.max(1e-9)).ceil() as usize;
            (self.level + over.max(1)).min(last)
        } else if self.level > 0 && power_w + self.step_w <= self.cap_w * (1.0 - self.margin) {
            self.calm += 1;
            if self.calm >= self.hold {
                self.calm = 0;
                self.level - 1
            } else {
                self.level
            }
        } else {
            self.calm = 0;
            self.level
        };
        if target == self.level {
            return None;
        }
        self.pending = Some((power_w, self.level));
        self.level = target;
        Some(self.levels[target].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecosched_testkit::machines::xeon_e5345;
    use ecosched_testkit::snapshots::task_id;

    fn measure(cpis: &[(u32, f64)], energy_j: f64) -> Measure {
        Measure {
            tasks: cpis
                .iter()
                .map(|&(p, c)| (task_id(p), (c * 1e9, 1e9)))
                .collect(),
            energy_j: Some(energy_j),
            seconds: 1.0,
            ghz: Some(2.0),
        }
    }

    #[test]
    fn speedup_is_the_geometric_mean_of_cpi_ratios() {
        let before = measure(&[(1, 2.0), (2, 1.0)], 100.0);
        let after = measure(&[(1, 1.0), (2, 1.0), (3, 5.0)], 100.0);
        let s = after.speedup_over(&before).unwrap();
        assert!((s - 2f64.sqrt()).abs() < 1e-12);
        assert!(after.better_than(&before, &Goal::Performance));
        assert!(!before.better_than(&after, &Goal::Performance));
    }

    #[test]
    fn energy_goal_prefers_fewer_joules_per_instruction() {
        let before = measure(&[(1, 2.0), (2, 2.0)], 100.0);
        let faster = measure(&[(1, 1.5), (2, 1.5)], 100.0);
        let hungrier = measure(&[(1, 1.9), (2, 1.9)], 130.0);
        assert!(faster.better_than(&before, &Goal::Energy));
        assert!(!hungrier.better_than(&before, &Goal::Energy));
    }

    /// A machine without cpufreq reports no clock: the energy goal then
    /// compares joules per instruction retired instead of undoing every
    /// plan for want of a figure.
    #[test]
    fn energy_goal_without_a_clock_compares_joules_per_instruction() {
        let clockless = |instructions: f64, energy_j: f64| Measure {
            tasks: [
                (task_id(1), (2e9, instructions)),
                (task_id(2), (2e9, instructions)),
            ]
            .into(),
            energy_j: Some(energy_j),
            seconds: 1.0,
            ghz: None,
        };
        let before = clockless(1e9, 100.0);
        let more_work = clockless(1.3e9, 100.0);
        let hungrier = clockless(1e9, 110.0);
        assert!(before.energy_per_instruction().is_none());
        assert!(more_work.better_than(&before, &Goal::Energy));
        assert!(!hungrier.better_than(&before, &Goal::Energy));
        assert!(!before.better_than(&before, &Goal::Energy));
    }

    #[test]
    fn failed_plan_leaves_after_m_and_holds_n_minus_m() {
        let mut sm = Machine::new(3, 30);
        sm.baseline = Some(measure(&[(1, 1.0)], 100.0));
        sm.enter_good(vec![task_id(1)]);
        let worse = measure(&[(1, 1.2)], 100.0);
        assert_eq!(sm.good_step(&worse, &Goal::Performance), None);
        assert_eq!(sm.good_step(&worse, &Goal::Performance), None);
        let why = sm.good_step(&worse, &Goal::Performance).unwrap();
        assert_eq!(why, Leave::Failed);
        assert_eq!(sm.hold_after(why), 27);
    }

    #[test]
    fn good_plan_stays_n_intervals_then_reobserves() {
        let mut sm = Machine::new(3, 30);
        sm.baseline = Some(measure(&[(1, 1.2)], 100.0));
        sm.enter_good(vec![task_id(1)]);
        let better = measure(&[(1, 1.0)], 100.0);
        for i in 1..30 {
            assert_eq!(sm.good_step(&better, &Goal::Performance), None, "{i}");
        }
        let why = sm.good_step(&better, &Goal::Performance).unwrap();
        assert_eq!(why, Leave::Expired);
        assert_eq!(sm.hold_after(why), 0);
    }

    #[test]
    fn cap_levels_are_nested_and_shrink_above_the_cap() {
        let mut cap = CapController::new(&xeon_e5345(), &CpuSet::first_n(8), 260.0, 2, 0.02, 3);
        assert_eq!(cap.levels.len(), 4);
        for w in cap.levels.windows(2) {
            assert!(w[1].is_subset(&w[0]) && w[1].len() + 2 == w[0].len());
        }
        assert_eq!(cap.levels[3].to_list(), "0-1");
        // 20 W over with a 32.5 W step estimate: one level.
        assert_eq!(cap.step(280.0).unwrap().to_list(), "0-5");
        // The drop teaches the step size: 280 → 250 is 30 W per level.
        assert_eq!(cap.step(250.0), None);
        assert!((cap.step_w - (32.5 + 0.5 * (30.0 - 32.5))).abs() < 1e-9);
    }

    #[test]
    fn cap_grows_back_only_with_room_and_after_calm_intervals() {
        let mut cap = CapController::new(&xeon_e5345(), &CpuSet::first_n(8), 260.0, 1, 0.02, 3);
        cap.step_w = 15.0;
        cap.level = 3;
        // 240 + 15 > 260·0.98: no room.
        for _ in 0..5 {
            assert_eq!(cap.step(240.0), None);
        }
        assert_eq!(cap.step(200.0), None);
        assert_eq!(cap.step(200.0), None);
        assert_eq!(cap.step(200.0).unwrap().len(), 6);
    }
}
