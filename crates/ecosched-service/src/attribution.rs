//! A group's share of the machine's energy (`ecosched_group_energy_joules_total`,
//! `docs/researchers/attribution.md`): by the activity model where the
//! group's tasks have the counters it weighs, else by busy CPU time.
//!
//! The model is fitted online, per group, by least squares of the
//! machine's power on the group's summed event rates
//! ([`ecosched_model::attribution::EnergyFit`], constant memory): what the
//! group does explains the machine's power above what it draws without
//! the group, which the fit's intercept absorbs (idle power and any steady
//! load beside the group). Until the fit has seen [`MIN_INTERVALS`]
//! intervals and weighs some event, the group is charged by CPU time.
//!
//! With the model, a group is charged its CPU-time share of the intercept
//! (so the power the machine draws anyway is split as before) plus the
//! model's estimate of its own events' energy, never more than the
//! interval's energy above the intercept.

use ecosched_model::attribution::{EnergyFit, EnergyModel, Feature, FEATURES};
use ecosched_model::{CounterKind, Counters};

/// Intervals the online fit needs before its weights are used.
pub const MIN_INTERVALS: u64 = 30;

/// The counters the model may weigh: its machine-wide features.
fn weighed() -> impl Iterator<Item = CounterKind> {
    FEATURES.into_iter().filter_map(|f| match f {
        Feature::Counter(k) => Some(k),
        _ => None,
    })
}

/// One group's attribution state.
#[derive(Debug, Clone, Default)]
pub struct GroupAttribution {
    fit: EnergyFit,
    /// The model solved for the counters last seen, refreshed as the fit
    /// grows.
    model: Option<EnergyModel>,
}

/// How an interval's energy was charged to the group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Charge {
    /// By the activity model, J.
    Activity(f64),
    /// By the share of busy CPU time, J.
    CpuTime(f64),
}

impl GroupAttribution {
    /// Charge the group for one interval: the machine's energy `energy_j`
    /// over `interval_s`, `busy_s` of busy CPU time on the machine,
    /// `cpu_s` of it the group's (its cgroup's count where it has one, so
    /// that exited processes count), and the group's tasks' counters.
    /// `None` when there is nothing to divide.
    pub fn charge(
        &mut self,
        energy_j: f64,
        interval_s: f64,
        busy_s: f64,
        cpu_s: f64,
        tasks: &[&Counters],
    ) -> Option<Charge> {
        if !(busy_s > 0.0 && energy_j.is_finite() && energy_j >= 0.0) {
            return None;
        }
        let ran: Vec<&Counters> = tasks
            .iter()
            .copied()
            .filter(|c| c.on_cpu_ns.is_some_and(|n| n > 0))
            .collect();
        let share = (cpu_s / busy_s).clamp(0.0, 1.0);
        self.fit.observe(energy_j, interval_s, &ran);
        let have: std::collections::BTreeSet<CounterKind> = weighed()
            .filter(|&k| !ran.is_empty() && ran.iter().all(|c| c.get(k).is_some()))
            .collect();
        if self.fit.intervals() >= MIN_INTERVALS
            && self.fit.intervals().is_multiple_of(MIN_INTERVALS)
        {
            self.model = self.fit.model(&have);
        }
        let by_model = self
            .model
            .as_ref()
            .filter(|m| m.weighs_activity())
            .and_then(|m| {
                let own: f64 = ran.iter().map(|c| m.estimate_j(c)).sum::<Option<f64>>()?;
                let idle_j = (m.idle_w.max(0.0) * interval_s).min(energy_j);
                Some(idle_j * share + own.clamp(0.0, energy_j - idle_j))
            });
        Some(match by_model {
            Some(j) => Charge::Activity(j),
            None => Charge::CpuTime(energy_j * share),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(on_s: f64, gins: f64, gcyc: f64, mmiss: f64) -> Counters {
        Counters {
            on_cpu_ns: Some((on_s * 1e9) as u64),
            instructions: Some((gins * 1e9) as u64),
            cycles: Some((gcyc * 1e9) as u64),
            llc_misses: Some((mmiss * 1e6) as u64),
            ..Counters::default()
        }
    }

    #[test]
    fn cpu_time_until_the_fit_has_seen_enough_then_activity() {
        let mut g = GroupAttribution::default();
        // A machine of 50 W idle + 3 J per 10^9 cycles + 0.1 J per 10^6
        // misses, the group alone on it, its load varying.
        let mut last = None;
        for i in 0..(2 * MIN_INTERVALS) {
            let busy = 1.0 + (i % 4) as f64;
            let miss = 50.0 * ((i % 3) as f64);
            let c = task(busy, busy, 2.0 * busy, miss);
            let energy = 50.0 + 3.0 * 2.0 * busy + 0.1 * miss;
            let charge = g.charge(energy, 1.0, busy, busy, &[&c]).unwrap();
            if i < MIN_INTERVALS - 1 {
                assert_eq!(charge, Charge::CpuTime(energy));
            }
            last = Some((charge, energy, busy, miss));
        }
        let (charge, energy, _, _) = last.unwrap();
        let Charge::Activity(j) = charge else {
            panic!("{charge:?}")
        };
        assert!((j - energy).abs() < 1e-3 * energy, "{j} vs {energy}");
        // Half the machine's busy time, but the memory-heavy half: more
        // than half of the energy above idle.
        let c = task(1.0, 0.2, 2.0, 200.0);
        let energy = 50.0 + 3.0 * 4.0 + 0.1 * 200.0;
        let Some(Charge::Activity(j)) = g.charge(energy, 1.0, 2.0, 1.0, &[&c]) else {
            panic!()
        };
        assert!(j > 25.0 + 6.0 + 15.0, "{j}");
    }

    #[test]
    fn without_hardware_counters_it_is_cpu_time() {
        let mut g = GroupAttribution::default();
        let bare = Counters {
            on_cpu_ns: Some(1_000_000_000),
            ..Counters::default()
        };
        for i in 0..(3 * MIN_INTERVALS) {
            let energy = 60.0 + (i % 5) as f64;
            assert_eq!(
                g.charge(energy, 1.0, 2.0, 1.0, &[&bare]),
                Some(Charge::CpuTime(energy / 2.0))
            );
        }
    }
}
