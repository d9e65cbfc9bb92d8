//! Power (`docs/design/simulator.md`, "Power and energy"):
//!
//! ```text
//! active core  P = activity · ceff · V² · f + leak · V,
//!              activity = stall_activity + (1 − stall_activity) · compute_fraction
//! idle core    P = P_state · V / V_max + idle_ceff · V² · f,
//!              the state chosen by how long it has been idle; the second
//!              term is the clock tree of a halted core that keeps running
//!              at its P-state (K10 without C1E clock ramping), which is why
//!              parking idle cores at the lowest frequency saves power even
//!              when a shared voltage plane stays high (Richling §VI)
//! package      Σ cores + uncore (+ e_uncore · bytes; package_idle_w in
//!              place of the uncore while every core of it idles)
//! system       base + Σ packages + memory idle + e_mem · bytes
//! ```
//! `ceff` and `leak` are the core type's (`coretypes.rs`). SMT siblings
//! are one core: two busy threads each draw half of their core's active
//! power, an idle thread beside a busy one draws nothing more, and idle
//! threads of an idle core split its idle power.
//! Energy is integrated exactly over each span of constant state.
//!
//! Leaving an idle state costs time: a core woken after `idle` ns first
//! spends the exit latency of the state it had reached (the same descent
//! by target residency as the power), at zero speed, before its task runs
//! (`exit_latency_ns`).

use crate::coretypes::CoreType;
use crate::machine::PowerSpec;

/// Power of a running core of type `t`, W.
pub fn active_w(p: &PowerSpec, t: &CoreType, volts: f64, ghz: f64, compute_fraction: f64) -> f64 {
    let activity = p.stall_activity + (1.0 - p.stall_activity) * compute_fraction;
    activity * t.ceff * volts * volts * ghz + t.leak_w_per_v * volts
}

/// Energy of a core idle since `idle_since` over `[a, b]` (ns), J: it
/// descends through the idle states as their target residencies pass.
/// With no idle states described, an idle core draws nothing but its
/// clock (`idle_ceff · V² · f`, at `ghz`).
pub fn idle_j(
    p: &PowerSpec,
    volts: f64,
    v_max: f64,
    ghz: f64,
    idle_since: u64,
    (a, b): (u64, u64),
) -> f64 {
    if b <= a {
        return 0.0;
    }
    let mut energy = p.idle_ceff * volts * volts * ghz * (b - a) as f64 * 1e-9;
    let scale = volts / v_max;
    for (k, state) in p.idle_states.iter().enumerate() {
        let enter = idle_since + u64::from(state.target_residency_us) * 1000;
        let leave = p.idle_states.get(k + 1).map_or(u64::MAX, |next| {
            idle_since + u64::from(next.target_residency_us) * 1000
        });
        let (from, to) = (a.max(if k == 0 { idle_since } else { enter }), b.min(leave));
        if to > from {
            energy += state.power_w * scale * (to - from) as f64 * 1e-9;
        }
    }
    energy
}

/// Power, W, of a core that has idled long enough to reach its deepest
/// state at `volts` and `ghz`: what it would draw had the task it runs not
/// run (the counterfactual of a task's true energy, `platform/truth.rs`).
pub fn idle_floor_w(p: &PowerSpec, volts: f64, v_max: f64, ghz: f64) -> f64 {
    let state = p
        .idle_states
        .last()
        .map_or(0.0, |s| s.power_w * volts / v_max);
    p.idle_ceff * volts * volts * ghz + state
}

/// Exit latency, ns, of a core that has been idle for `idle_ns`: that of
/// the deepest state whose target residency has passed (the state
/// `idle_j` charges power for at that moment); none without idle states.
pub fn exit_latency_ns(p: &PowerSpec, idle_ns: u64) -> u64 {
    p.idle_states
        .iter()
        .take_while(|s| u64::from(s.target_residency_us) * 1000 <= idle_ns)
        .last()
        .map_or(0, |s| u64::from(s.exit_latency_us) * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::IdleSpec;

    fn spec() -> PowerSpec {
        PowerSpec {
            ceff: 2.0,
            idle_ceff: 0.0,
            leak_w_per_v: 4.0,
            stall_activity: 0.5,
            uncore_w: 10.0,
            base_w: 50.0,
            mem_idle_w: 5.0,
            mem_nj_per_byte: 0.5,
            package_limit_w: None,
            limit_period_ms: 10.0,
            uncore_nj_per_byte: 0.0,
            package_idle_w: None,
            idle_states: vec![
                IdleSpec {
                    name: "C1".into(),
                    exit_latency_us: 1,
                    target_residency_us: 0,
                    power_w: 4.0,
                },
                IdleSpec {
                    name: "C6".into(),
                    exit_latency_us: 100,
                    target_residency_us: 1000,
                    power_w: 1.0,
                },
            ],
        }
    }

    #[test]
    fn stalls_burn_less() {
        let p = spec();
        let t = CoreType {
            name: "core".into(),
            threads_per_core: 1,
            cpi_factor: 1.0,
            ceff: p.ceff,
            leak_w_per_v: p.leak_w_per_v,
            pstates: vec![],
            base: 0,
            capacity: 1024,
        };
        let busy = active_w(&p, &t, 1.2, 2.0, 1.0);
        assert!((busy - (2.0 * 1.44 * 2.0 + 4.8)).abs() < 1e-12);
        assert!(active_w(&p, &t, 1.2, 2.0, 0.0) < busy);
    }

    #[test]
    fn idle_descends_through_states() {
        let p = spec();
        // 1 ms in C1 at 4 W, then 1 ms in C6 at 1 W.
        let e = idle_j(&p, 1.0, 1.0, 2.0, 0, (0, 2_000_000));
        assert!((e - (4.0e-3 + 1.0e-3)).abs() < 1e-12, "{e}");
        // Split spans add up to the whole.
        let parts = idle_j(&p, 1.0, 1.0, 2.0, 0, (0, 500_000))
            + idle_j(&p, 1.0, 1.0, 2.0, 0, (500_000, 2_000_000));
        assert!((parts - e).abs() < 1e-12);
    }

    #[test]
    fn exit_latency_follows_the_state_reached() {
        let p = spec();
        assert_eq!(exit_latency_ns(&p, 0), 1_000);
        assert_eq!(exit_latency_ns(&p, 999_999), 1_000);
        assert_eq!(exit_latency_ns(&p, 1_000_000), 100_000);
        let mut none = spec();
        none.idle_states.clear();
        assert_eq!(exit_latency_ns(&none, 5_000_000), 0);
    }

    #[test]
    fn a_running_idle_clock_costs_in_proportion_to_frequency() {
        let mut p = spec();
        p.idle_states.clear();
        assert_eq!(idle_j(&p, 1.2, 1.2, 2.4, 0, (0, 1_000_000_000)), 0.0);
        p.idle_ceff = 2.0;
        let high = idle_j(&p, 1.2, 1.2, 2.4, 0, (0, 1_000_000_000));
        let low = idle_j(&p, 1.2, 1.2, 1.2, 0, (0, 1_000_000_000));
        assert!((high - 2.0 * 1.44 * 2.4).abs() < 1e-9, "{high}");
        assert!((high - 2.0 * low).abs() < 1e-9);
    }

    #[test]
    fn the_idle_floor_is_the_deepest_state_with_its_clock() {
        let mut p = spec();
        p.idle_ceff = 2.0;
        let long = idle_j(&p, 1.2, 1.2, 2.4, 0, (10_000_000_000, 11_000_000_000));
        assert!((idle_floor_w(&p, 1.2, 1.2, 2.4) - long).abs() < 1e-9);
    }
}
