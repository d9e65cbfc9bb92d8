//! Boost within a package power limit (`power.package_limit_w`: Intel
//! PL1, AMD PPT), `docs/design/simulator.md`, "Boost within a power
//! limit".
//!
//! P-states above a core type's base frequency are boost states. Each
//! time a frequency domain's governor decides (and at least every
//! `limit_period_ms`), its package's boost ceiling is the highest that
//! keeps the package's modelled power at or under the limit with the
//! cores busy right now running flat out: the busy cores of each type at
//! its `k`-th highest P-state (never below base), idle cores at their
//! deepest idle state's power, plus the uncore. `k` steps down from the
//! top until the sum fits, so with fewer busy cores each runs faster, and
//! with every core busy they settle near the all-core boost the vendor
//! quotes. Cores sharing a voltage rail are costed at the highest
//! voltage a busy type asks for. The estimate takes every busy core as
//! computing all the time
//! (activity 1) and leaves out the uncore's traffic-driven part, as a
//! power controller budgets for the worst case of the next interval.

use super::SimPlatform;
use crate::kernel::Ns;
use crate::machine::{Machine, Scope};
use crate::power;

/// The limit's constants and each package's ceiling, found at most once
/// per instant.
pub(super) struct PowerLimit {
    limit_w: f64,
    period: Ns,
    /// Per package: its cores (indices into `Machine::core_cpus`).
    package_cores: Vec<Vec<usize>>,
    /// Per package: when its ceiling was last found, and the ceiling per
    /// core type, kHz.
    cache: Vec<(Ns, Vec<u64>)>,
    /// Busy cores per type (scratch).
    busy: Vec<usize>,
    /// Cores per type in one package.
    total: Vec<usize>,
}

impl PowerLimit {
    /// The limit of `machine`, if it has one.
    pub(super) fn new(machine: &Machine) -> Option<PowerLimit> {
        let limit_w = machine.spec.power.package_limit_w?;
        let packages = machine.package_of.iter().max().map_or(0, |p| p + 1);
        let mut package_cores = vec![Vec::new(); packages];
        let mut total = vec![0; machine.core_types.len()];
        for (core, cpus) in machine.core_cpus.iter().enumerate() {
            let Some(&first) = cpus.first() else { continue };
            let p = machine.package_of[first];
            package_cores[p].push(core);
            if p == 0 {
                total[machine.type_of[first]] += 1;
            }
        }
        Some(PowerLimit {
            limit_w,
            period: ((machine.spec.power.limit_period_ms * 1e6) as Ns).max(1),
            package_cores,
            cache: vec![(Ns::MAX, Vec::new()); packages],
            busy: vec![0; machine.core_types.len()],
            total,
        })
    }

    /// How often every domain re-evaluates under the limit.
    pub(super) fn period(&self) -> Ns {
        self.period
    }
}

impl SimPlatform {
    /// The boost ceiling of frequency domain `d`'s package for its core
    /// type now, kHz; `u64::MAX` without a limit.
    pub(super) fn boost_cap(&mut self, d: usize) -> u64 {
        let Some(first) = self.fd_cpus[d].first().copied() else {
            return u64::MAX;
        };
        let Some(limit) = self.limit.as_mut() else {
            return u64::MAX;
        };
        let machine = &self.machine;
        let pkg = machine.package_of[first];
        if limit.cache[pkg].0 != self.now {
            limit.busy.iter_mut().for_each(|b| *b = 0);
            for &core in &limit.package_cores[pkg] {
                let cpus = &machine.core_cpus[core];
                if cpus.iter().any(|&c| self.kernel.rqs[c].current.is_some()) {
                    limit.busy[machine.type_of[cpus[0]]] += 1;
                }
            }
            let caps = ceilings(machine, limit.limit_w, &limit.busy, &limit.total);
            limit.cache[pkg] = (self.now, caps);
        }
        limit.cache[pkg].1[machine.type_of[first]]
    }

    /// Where a domain starts under a newly handed setting: with a limit,
    /// at most its base frequency until the limit's first period grants
    /// boost.
    pub(super) fn initial_cap(&self, d: usize, khz: u64) -> u64 {
        if self.limit.is_none() {
            return khz;
        }
        let Some(&first) = self.fd_cpus.get(d).and_then(|c| c.first()) else {
            return khz;
        };
        let t = &self.machine.core_types[self.machine.type_of[first]];
        t.pstates.get(t.base).map_or(khz, |s| khz.min(s.mhz * 1000))
    }
}

/// Per core type, the ceiling (kHz) that keeps a package with `busy` of
/// its `total` cores of each type busy at or under `limit_w`.
fn ceilings(machine: &Machine, limit_w: f64, busy: &[usize], total: &[usize]) -> Vec<u64> {
    let p = &machine.spec.power;
    let idle_w = p.idle_states.last().map_or(0.0, |s| s.power_w);
    let types = &machine.core_types;
    let steps = types
        .iter()
        .map(|t| t.pstates.len().saturating_sub(t.base + 1))
        .max()
        .unwrap_or(0);
    let index = |t: usize, k: usize| {
        let top = types[t].pstates.len() - 1;
        top.saturating_sub(k).max(types[t].base)
    };
    // Cores on one rail (a voltage domain wider than a core) all run at
    // the highest voltage any busy type asks for.
    let shared_rail = machine.spec.frequency.voltage_domain != Scope::Core;
    let level = (0..=steps)
        .find(|&k| {
            let rail_mv = (0..types.len())
                .filter(|&t| busy[t] > 0)
                .map(|t| types[t].pstates[index(t, k)].mv)
                .max()
                .unwrap_or(0);
            let mut w = p.uncore_w;
            for (t, ct) in types.iter().enumerate() {
                let s = ct.pstates[index(t, k)];
                let mv = if shared_rail { s.mv.max(rail_mv) } else { s.mv };
                let volts = f64::from(mv) / 1000.0;
                let core = power::active_w(p, ct, volts, s.mhz as f64 / 1000.0, 1.0);
                w += busy[t] as f64 * core + total[t].saturating_sub(busy[t]) as f64 * idle_w;
            }
            w <= limit_w
        })
        .unwrap_or(steps);
    (0..types.len())
        .map(|t| types[t].pstates[index(t, level)].mhz * 1000)
        .collect()
}
