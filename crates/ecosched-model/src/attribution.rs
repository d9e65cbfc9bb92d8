//! Energy attribution by activity (Merkel and Bellosa, "Balancing power
//! consumption in multiprocessor systems", EuroSys'06, §4): a machine's
//! power is modelled as an idle part plus a linear combination of event
//! rates, with one energy weight per event found by least squares against
//! the machine's meter; each task is then charged by what it did, not by
//! how long it ran (`docs/researchers/attribution.md`).
//!
//! - [`EnergyFit`] gathers intervals of (machine energy, summed event
//!   counts) as the normal equations of the regression: constant memory
//!   however long it runs, one set per combination of counters seen, so a
//!   model can be solved for whichever counters a task turns out to have.
//! - [`EnergyModel`] is the solved fit for a set of counters: idle power
//!   and joules per event (non-negative: an event never saves energy).
//! - [`split`] divides one interval's measured energy above idle among the
//!   tasks that ran, by the model's estimate of each task's energy (so the
//!   machine's measured total is conserved), and also by on-CPU time: the
//!   two estimators compared by `ecosched bench attribution`.
//!
//! Shared by the simulator's experiments and the daemon: both see only
//! what Linux reads (perf counters, schedstat, the power meter).

use crate::sample::{CounterKind, Counters};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What the model can weigh: a counter, cycles × frequency, or one of
/// those counted on one core type only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    /// A counter's count.
    Counter(CounterKind),
    /// Cycles × the task's mean frequency over the interval (cycles² /
    /// on-CPU time): dynamic power grows faster than frequency (the
    /// voltage rises with it, P ∝ C·V²·f), so a cycle at a high clock
    /// costs more than one at a low clock. Needs cycles and on-CPU time.
    CyclesTimesGhz,
    /// On a hybrid machine, a core feature counted on one core type's PMU
    /// ([`Counters::by_core_type`]): the same work costs more on a big
    /// core than on a small one, so each type has its own weights. Where
    /// a task has the split, these replace the machine-wide on-CPU time,
    /// instructions, cycles and cycles × GHz.
    OnCoreType {
        /// Index into the machine's core types.
        core_type: u8,
        /// What is counted there.
        feature: CoreFeature,
    },
}

/// A feature a hybrid PMU counts per core type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoreFeature {
    /// Time on a CPU of the type.
    OnCpuTime,
    /// Instructions retired there.
    Instructions,
    /// Cycles there.
    Cycles,
    /// Cycles × GHz there (cycles² / time there).
    CyclesTimesGhz,
}

/// The most core types the model splits by (Intel's hybrid parts have
/// two PMUs, `cpu_core` and `cpu_atom`; Arm's three-cluster parts three).
pub const MAX_CORE_TYPES: usize = 3;

const CORE_FEATURES: [CoreFeature; 4] = [
    CoreFeature::OnCpuTime,
    CoreFeature::Instructions,
    CoreFeature::Cycles,
    CoreFeature::CyclesTimesGhz,
];

const N: usize = 6 + CORE_FEATURES.len() * MAX_CORE_TYPES;

/// The features, in order. On-CPU time is always there (schedstat); the
/// others need hardware events a machine may lack, the per-core-type
/// ones a hybrid PMU.
pub const FEATURES: [Feature; N] = features();

/// Positions of the memory features in [`FEATURES`].
const LLC_MISSES: usize = 4;
const MEM_TRANSACTIONS: usize = 5;

const fn features() -> [Feature; N] {
    let mut out = [Feature::CyclesTimesGhz; N];
    out[0] = Feature::Counter(CounterKind::OnCpuTime);
    out[1] = Feature::Counter(CounterKind::Instructions);
    out[2] = Feature::Counter(CounterKind::Cycles);
    out[LLC_MISSES] = Feature::Counter(CounterKind::LlcMisses);
    out[MEM_TRANSACTIONS] = Feature::Counter(CounterKind::MemTransactions);
    let mut i = 6;
    while i < N {
        out[i] = Feature::OnCoreType {
            core_type: ((i - 6) / CORE_FEATURES.len()) as u8,
            feature: CORE_FEATURES[(i - 6) % CORE_FEATURES.len()],
        };
        i += 1;
    }
    out
}

const K: usize = N + 1;

/// A set of features as a bit mask over [`FEATURES`].
type Mask = u32;

/// The unit each feature is counted in by the fit (so the normal
/// equations stay well scaled) and its name for reports: seconds, 10⁹
/// instructions, 10⁹ cycles, 10⁹ cycles·GHz, 10⁶ misses, 10⁶
/// transactions.
fn unit(f: Feature) -> (f64, String) {
    let (scale, name) = match f {
        Feature::Counter(CounterKind::OnCpuTime) => (1e9, "CPU-second"),
        Feature::Counter(CounterKind::Instructions) => (1e9, "10^9 instructions"),
        Feature::Counter(CounterKind::Cycles) => (1e9, "10^9 cycles"),
        Feature::CyclesTimesGhz => (1e9, "10^9 cycles x GHz"),
        Feature::Counter(CounterKind::MemTransactions) => (1e6, "10^6 memory transactions"),
        Feature::Counter(_) => (1e6, "10^6 LLC misses"),
        Feature::OnCoreType { core_type, feature } => {
            let (scale, name) = unit(match feature {
                CoreFeature::OnCpuTime => Feature::Counter(CounterKind::OnCpuTime),
                CoreFeature::Instructions => Feature::Counter(CounterKind::Instructions),
                CoreFeature::Cycles => Feature::Counter(CounterKind::Cycles),
                CoreFeature::CyclesTimesGhz => Feature::CyclesTimesGhz,
            });
            return (scale, format!("{name} on core type {core_type}"));
        }
    };
    (scale, name.to_string())
}

/// One task's feature `f` over an interval, in counts; `None` when not
/// counted. Where the task has the per-core-type split, the machine-wide
/// core features give way to it (they are its sums).
fn value(f: Feature, c: &Counters) -> Option<f64> {
    let split = !c.by_core_type.is_empty();
    match f {
        Feature::Counter(
            CounterKind::OnCpuTime | CounterKind::Instructions | CounterKind::Cycles,
        )
        | Feature::CyclesTimesGhz
            if split =>
        {
            None
        }
        Feature::Counter(k) => c.get(k).map(|v| v as f64),
        Feature::CyclesTimesGhz => {
            let on = c.on_cpu_ns.filter(|&n| n > 0)? as f64;
            let cycles = c.cycles? as f64;
            Some(cycles * cycles / on)
        }
        Feature::OnCoreType { core_type, feature } => {
            let t = c.by_core_type.get(usize::from(core_type))?;
            Some(match feature {
                CoreFeature::OnCpuTime => t.on_cpu_ns as f64,
                CoreFeature::Instructions => t.instructions as f64,
                CoreFeature::Cycles => t.cycles as f64,
                CoreFeature::CyclesTimesGhz if t.on_cpu_ns == 0 => 0.0,
                CoreFeature::CyclesTimesGhz => {
                    t.cycles as f64 * t.cycles as f64 / t.on_cpu_ns as f64
                }
            })
        }
    }
}

fn mask_of(c: &Counters) -> Option<Mask> {
    c.on_cpu_ns?;
    Some(
        FEATURES
            .iter()
            .enumerate()
            .filter(|(_, &f)| value(f, c).is_some())
            .fold(0, |m, (i, _)| m | (1 << i)),
    )
}

/// Whether a feature can be computed from the counters in `available`.
fn computable(f: Feature, available: &BTreeSet<CounterKind>) -> bool {
    match f {
        Feature::Counter(CounterKind::OnCpuTime)
        | Feature::OnCoreType {
            feature: CoreFeature::OnCpuTime,
            ..
        } => true,
        Feature::Counter(k) => available.contains(&k),
        Feature::OnCoreType {
            feature: CoreFeature::Instructions,
            ..
        } => available.contains(&CounterKind::Instructions),
        Feature::CyclesTimesGhz | Feature::OnCoreType { .. } => {
            available.contains(&CounterKind::Cycles)
        }
    }
}

/// Whether `f` is a feature of a machine whose intervals were split by
/// `types` core types (0: not split) and counted memory traffic or not,
/// so its absence is worth reporting.
fn applies(f: Feature, types: u8, traffic: bool) -> bool {
    match f {
        Feature::OnCoreType { core_type, .. } => core_type < types,
        Feature::Counter(
            CounterKind::OnCpuTime | CounterKind::Instructions | CounterKind::Cycles,
        )
        | Feature::CyclesTimesGhz => types == 0,
        Feature::Counter(CounterKind::LlcMisses) => !traffic,
        Feature::Counter(_) => true,
    }
}

/// The normal equations of intervals that counted the same features.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Normal {
    xtx: [[f64; K]; K],
    xty: [f64; K],
    intervals: u64,
}

/// Intervals of machine power against summed event rates, kept as normal
/// equations (weighted by interval length): at most one set per
/// combination of counters, so memory is constant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnergyFit {
    by_mask: BTreeMap<Mask, Normal>,
}

impl EnergyFit {
    /// Take in one interval: the machine's energy over it and every task
    /// that ran in it, with its counters over the interval. Intervals
    /// without tasks, on-CPU time or energy teach nothing and are left out.
    pub fn observe(&mut self, energy_j: f64, interval_s: f64, tasks: &[&Counters]) {
        let Some(mask) = tasks
            .iter()
            .map(|c| mask_of(c))
            .try_fold(Mask::MAX, |m, t| Some(m & t?))
        else {
            return;
        };
        if tasks.is_empty() || !(interval_s > 0.0 && energy_j.is_finite() && energy_j >= 0.0) {
            return;
        }
        let mut x = [0.0; K];
        x[0] = 1.0;
        for (i, &f) in FEATURES
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
        {
            x[i + 1] =
                tasks.iter().filter_map(|c| value(f, c)).sum::<f64>() / unit(f).0 / interval_s;
        }
        let y = energy_j / interval_s;
        let n = self.by_mask.entry(mask).or_default();
        for i in 0..K {
            for j in 0..K {
                n.xtx[i][j] += interval_s * x[i] * x[j];
            }
            n.xty[i] += interval_s * x[i] * y;
        }
        n.intervals += 1;
    }

    /// Intervals taken in.
    pub fn intervals(&self) -> u64 {
        self.by_mask.values().map(|n| n.intervals).sum()
    }

    /// The model over the counters in `available` (on-CPU time always)
    /// that the fit's intervals counted too (the most of them any
    /// interval had), from every interval that counted at least those;
    /// `None` with no interval. Coefficients that come out negative are dropped
    /// and the rest refitted (an event never saves energy).
    pub fn model(&self, available: &BTreeSet<CounterKind>) -> Option<EnergyModel> {
        let want: Mask = FEATURES
            .iter()
            .enumerate()
            .filter(|(_, &f)| computable(f, available))
            .fold(0, |m, (i, _)| m | (1 << i));
        // The most of the wanted counters any interval counted.
        let want = self
            .by_mask
            .keys()
            .map(|&m| m & want)
            .max_by_key(|m| m.count_ones())?;
        // Memory traffic supersedes demand misses where both are counted:
        // moving a line costs the same whether a demand miss or a
        // prefetch brought it, and the misses leave out the prefetched.
        let traffic: Mask = 1 << MEM_TRANSACTIONS;
        let want = if want & traffic != 0 {
            want & !(1 << LLC_MISSES)
        } else {
            want
        };
        // The core types the fit's intervals were split by.
        let types = FEATURES
            .iter()
            .enumerate()
            .filter_map(|(i, f)| match f {
                Feature::OnCoreType { core_type, .. } if want & (1 << i) != 0 => {
                    Some(core_type + 1)
                }
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let mut sum = Normal::default();
        for (_, n) in self.by_mask.iter().filter(|(&m, _)| m & want == want) {
            for i in 0..K {
                for j in 0..K {
                    sum.xtx[i][j] += n.xtx[i][j];
                }
                sum.xty[i] += n.xty[i];
            }
            sum.intervals += n.intervals;
        }
        if sum.intervals == 0 {
            return None;
        }
        let mut used: Vec<usize> = std::iter::once(0)
            .chain(
                // A feature counted but never above zero teaches nothing
                // and would leave the equations singular.
                (0..FEATURES.len())
                    .filter(|&i| want & (1 << i) != 0 && sum.xtx[i + 1][i + 1] > 0.0)
                    .map(|i| i + 1),
            )
            .collect();
        loop {
            let beta = solve(&sum, &used)?;
            let worst = beta
                .iter()
                .enumerate()
                .skip(1)
                .filter(|(_, &b)| b < 0.0)
                .min_by(|a, b| a.1.total_cmp(b.1))
                .map(|(pos, _)| pos);
            match worst {
                Some(pos) => {
                    used.remove(pos);
                }
                None => {
                    return Some(EnergyModel {
                        idle_w: beta[0],
                        coefficients: used
                            .iter()
                            .zip(&beta)
                            .skip(1)
                            .map(|(&i, &b)| Coefficient {
                                feature: FEATURES[i - 1],
                                unit: unit(FEATURES[i - 1]).1,
                                joules_per_unit: b,
                            })
                            .collect(),
                        missing: FEATURES
                            .iter()
                            .enumerate()
                            .filter(|&(i, &f)| {
                                want & (1 << i) == 0 && applies(f, types, want & traffic != 0)
                            })
                            .map(|(_, &k)| k)
                            .collect(),
                        intervals: sum.intervals,
                    })
                }
            }
        }
    }
}

/// Least squares on the features `used` (indices into the row), by
/// Gaussian elimination with partial pivoting on the normal equations; a
/// ridge of 10⁻⁹ of the diagonal keeps collinear features (cycles and
/// on-CPU time at one frequency) solvable.
fn solve(n: &Normal, used: &[usize]) -> Option<Vec<f64>> {
    let m = used.len();
    let mut a: Vec<Vec<f64>> = used
        .iter()
        .map(|&i| {
            let mut r: Vec<f64> = used.iter().map(|&j| n.xtx[i][j]).collect();
            r.push(n.xty[i]);
            r
        })
        .collect();
    for (i, r) in a.iter_mut().enumerate().skip(1) {
        r[i] *= 1.0 + 1e-9;
    }
    for col in 0..m {
        let pivot = (col..m).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        let pivot_row = a[col].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (x, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    let beta: Vec<f64> = (0..m).map(|i| a[i][m] / a[i][i]).collect();
    beta.iter().all(|b| b.is_finite()).then_some(beta)
}

/// One event's energy weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coefficient {
    /// What it weighs.
    pub feature: Feature,
    /// What one unit of it is.
    pub unit: String,
    /// Joules per unit.
    pub joules_per_unit: f64,
}

/// A solved fit: machine power ≈ `idle_w` + Σ coefficient × event rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyModel {
    /// Power with nothing running, W: what goes to no task.
    pub idle_w: f64,
    /// The events it weighs (those whose weight came out positive).
    pub coefficients: Vec<Coefficient>,
    /// The features the machine's (or the tasks') counters could not
    /// give, so the model does without them.
    pub missing: Vec<Feature>,
    /// Intervals it was fitted on.
    pub intervals: u64,
}

impl EnergyModel {
    /// A task's modelled energy over an interval from its counters, J;
    /// `None` when it lacks a counter the model weighs.
    pub fn estimate_j(&self, c: &Counters) -> Option<f64> {
        self.coefficients.iter().try_fold(0.0, |sum, k| {
            Some(sum + value(k.feature, c)? / unit(k.feature).0 * k.joules_per_unit)
        })
    }

    /// Whether it weighs anything beyond on-CPU time.
    pub fn weighs_activity(&self) -> bool {
        self.coefficients.iter().any(|k| {
            k.feature != Feature::Counter(CounterKind::OnCpuTime) && k.joules_per_unit > 0.0
        })
    }
}

/// One interval's energy above idle divided among the tasks that ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// Measured energy minus the model's idle power over the interval
    /// (never below zero), J: what both methods divide.
    pub pool_j: f64,
    /// Per task (in the order given), by on-CPU time share.
    pub cpu_share_j: Vec<f64>,
    /// Per task, by the model's estimate; by on-CPU time when some task
    /// lacks a counter the model weighs or the estimates sum to zero.
    pub activity_j: Vec<f64>,
    /// Whether `activity_j` came from the model (not the fallback).
    pub by_activity: bool,
}

/// Divide `energy_j` measured over `interval_s` among `tasks` (every task
/// that ran, with its counters over the interval): the part above the
/// model's idle power, by on-CPU time and by the model.
pub fn split(model: &EnergyModel, energy_j: f64, interval_s: f64, tasks: &[&Counters]) -> Split {
    let pool_j = (energy_j - model.idle_w.max(0.0) * interval_s).max(0.0);
    let divide = |weights: &[f64]| -> Option<Vec<f64>> {
        let total: f64 = weights.iter().sum();
        (total > 0.0 && total.is_finite())
            .then(|| weights.iter().map(|w| pool_j * w / total).collect())
    };
    let on_cpu: Vec<f64> = tasks
        .iter()
        .map(|c| c.on_cpu_ns.unwrap_or(0) as f64)
        .collect();
    let cpu_share_j = divide(&on_cpu).unwrap_or_else(|| vec![0.0; tasks.len()]);
    let modelled: Option<Vec<f64>> = tasks.iter().map(|c| model.estimate_j(c)).collect();
    let activity = modelled.as_deref().and_then(divide);
    Split {
        pool_j,
        by_activity: activity.is_some(),
        activity_j: activity.unwrap_or_else(|| cpu_share_j.clone()),
        cpu_share_j,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::CoreTypeCounts;

    fn all() -> BTreeSet<CounterKind> {
        CounterKind::ALL.into()
    }

    fn counters(on_s: f64, gins: f64, gcyc: f64, mmiss: f64) -> Counters {
        Counters {
            on_cpu_ns: Some((on_s * 1e9) as u64),
            instructions: Some((gins * 1e9) as u64),
            cycles: Some((gcyc * 1e9) as u64),
            llc_misses: Some((mmiss * 1e6) as u64),
            ..Counters::default()
        }
    }

    /// A machine whose power is 20 W idle + 2 J per 10⁹ cycles + 0.05 J
    /// per 10⁶ misses, measured on varied intervals.
    fn fitted() -> EnergyFit {
        let mut fit = EnergyFit::default();
        for (busy, ipc, mpki) in [
            (1.0, 2.0, 0.1),
            (2.0, 0.5, 20.0),
            (4.0, 1.0, 5.0),
            (3.0, 0.2, 40.0),
        ] {
            let cyc = busy * 2.0;
            let miss = cyc * ipc * mpki;
            let energy = 20.0 + 2.0 * cyc + 0.05 * miss;
            fit.observe(energy, 1.0, &[&counters(busy, cyc * ipc, cyc, miss)]);
        }
        fit
    }

    #[test]
    fn the_fit_recovers_the_weights() {
        let m = fitted().model(&all()).unwrap();
        assert!((m.idle_w - 20.0).abs() < 1e-3, "{m:?}");
        let miss = m
            .coefficients
            .iter()
            .find(|k| k.feature == Feature::Counter(CounterKind::LlcMisses));
        assert!((miss.unwrap().joules_per_unit - 0.05).abs() < 1e-4, "{m:?}");
        assert!(m.coefficients.iter().all(|k| k.joules_per_unit >= 0.0));
        assert_eq!(
            m.missing,
            vec![Feature::Counter(CounterKind::MemTransactions)]
        );
    }

    #[test]
    fn the_split_conserves_the_energy_above_idle_and_follows_activity() {
        let m = fitted().model(&all()).unwrap();
        let compute = counters(1.0, 4.0, 2.0, 0.1);
        let memory = counters(1.0, 0.2, 2.0, 400.0);
        let s = split(&m, 100.0, 1.0, &[&compute, &memory]);
        assert!((s.pool_j - 80.0).abs() < 1e-2);
        assert!((s.activity_j.iter().sum::<f64>() - s.pool_j).abs() < 1e-9);
        assert!((s.cpu_share_j[0] - s.cpu_share_j[1]).abs() < 1e-9);
        assert!(s.by_activity && s.activity_j[1] > s.activity_j[0]);
    }

    #[test]
    fn without_hardware_counters_the_model_is_cpu_time() {
        let m = fitted().model(&BTreeSet::new()).unwrap();
        assert!(!m.weighs_activity());
        assert_eq!(m.missing.len(), 5);
        let a = counters(1.0, 4.0, 2.0, 0.1);
        let b = counters(3.0, 0.2, 6.0, 400.0);
        let s = split(&m, 100.0, 1.0, &[&a, &b]);
        for (x, y) in s.activity_j.iter().zip(&s.cpu_share_j) {
            assert!((x - y).abs() < 1e-9);
        }
        // A task that lacks a weighed counter sends the interval to CPU time.
        let full = fitted().model(&all()).unwrap();
        let bare = Counters {
            on_cpu_ns: Some(1_000_000_000),
            ..Counters::default()
        };
        let s = split(&full, 100.0, 1.0, &[&a, &bare]);
        assert!(!s.by_activity);
        assert_eq!(s.activity_j, s.cpu_share_j);
    }

    /// A task's counters on a two-type machine: `p_s` seconds on the big
    /// type and `e_s` on the small one, both at 2 GHz and IPC 1.
    fn hybrid(p_s: f64, e_s: f64) -> Counters {
        let part = |s: f64| CoreTypeCounts {
            on_cpu_ns: (s * 1e9) as u64,
            cycles: (s * 2e9) as u64,
            instructions: (s * 2e9) as u64,
        };
        Counters {
            by_core_type: vec![part(p_s), part(e_s)],
            ..counters(p_s + e_s, 2.0 * (p_s + e_s), 2.0 * (p_s + e_s), 0.0)
        }
    }

    #[test]
    fn on_a_hybrid_machine_each_core_type_has_its_own_weights() {
        // 10 W idle; a second on the big type costs 6 J, on the small 2 J.
        let mut fit = EnergyFit::default();
        for (p, e) in [(1.0, 0.0), (0.0, 1.0), (2.0, 1.0), (1.0, 4.0), (3.0, 3.0)] {
            fit.observe(10.0 + 6.0 * p + 2.0 * e, 1.0, &[&hybrid(p, e)]);
        }
        let m = fit.model(&all()).unwrap();
        assert!(m.coefficients.iter().all(|k| matches!(
            k.feature,
            Feature::OnCoreType {
                core_type: 0 | 1,
                ..
            }
        )));
        assert_eq!(
            m.missing,
            vec![Feature::Counter(CounterKind::MemTransactions)]
        );
        // Equal time, one on each type: three times the energy on the big.
        let (big, small) = (hybrid(1.0, 0.0), hybrid(0.0, 1.0));
        let s = split(&m, 18.0, 1.0, &[&big, &small]);
        assert!((s.activity_j[0] - 6.0).abs() < 1e-3, "{s:?}");
        assert!((s.activity_j[1] - 2.0).abs() < 1e-3, "{s:?}");
        assert!((s.cpu_share_j[0] - s.cpu_share_j[1]).abs() < 1e-9);
    }

    #[test]
    fn memory_traffic_supersedes_demand_misses_where_both_are_counted() {
        // Each line moved costs 0.05 J per 10⁶; a fifth of them are
        // demand misses, the rest prefetched.
        let mut fit = EnergyFit::default();
        for (busy, mlines) in [(1.0, 10.0), (2.0, 200.0), (4.0, 50.0), (3.0, 400.0)] {
            let c = Counters {
                mem_transactions: Some((mlines * 1e6) as u64),
                ..counters(busy, busy, busy * 2.0, mlines / 5.0)
            };
            fit.observe(20.0 + 2.0 * busy * 2.0 + 0.05 * mlines, 1.0, &[&c]);
        }
        let m = fit.model(&all()).unwrap();
        let weighs = |f: Feature| m.coefficients.iter().any(|k| k.feature == f);
        assert!(
            weighs(Feature::Counter(CounterKind::MemTransactions)),
            "{m:?}"
        );
        assert!(!weighs(Feature::Counter(CounterKind::LlcMisses)), "{m:?}");
        assert!(m.missing.is_empty(), "{m:?}");
        // Without the traffic event, the misses stand in for it.
        let m = fit
            .model(&[CounterKind::Cycles, CounterKind::LlcMisses].into())
            .unwrap();
        assert!(m
            .coefficients
            .iter()
            .any(|k| k.feature == Feature::Counter(CounterKind::LlcMisses)));
    }
}
