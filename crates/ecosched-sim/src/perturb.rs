//! Sensitivity of the calibration (issue #17, `ecosched validate
//! --perturb`): move one calibrated machine parameter by a factor in every
//! built-in preset, so that a validation run shows which conclusions hang
//! on that one knob. The override is per thread and scoped
//! ([`with_perturbation`]), so nothing else running in the process sees it.

use crate::machine::MachineSpec;
use std::cell::Cell;

/// A calibrated machine parameter that can be perturbed: each was set from
/// a datasheet or a paper's figure (the machine TOMLs say which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Knob {
    /// `memory.latency_ns`: unloaded DRAM latency.
    MemLatency,
    /// `memory.bandwidth_gbs`: sustained bandwidth (the FSB/IMC cap).
    MemBandwidth,
    /// `power.ceff`: effective switched capacitance of a running core.
    Ceff,
    /// `power.idle_ceff`: the same for an idle core.
    IdleCeff,
    /// `power.leak_w_per_v`: leakage per volt.
    Leakage,
    /// `power.stall_activity`: dynamic activity while stalled on memory.
    StallActivity,
    /// `power.base_w`: board, disk and PSU power.
    BaseW,
    /// `governor.sampling_ms`: ondemand's sampling period.
    Sampling,
    /// `scheduler.balance_interval_ms`: the periodic balancer's period.
    BalanceInterval,
}

impl Knob {
    /// Every knob, in a stable order.
    pub const ALL: [Knob; 9] = [
        Knob::MemLatency,
        Knob::MemBandwidth,
        Knob::Ceff,
        Knob::IdleCeff,
        Knob::Leakage,
        Knob::StallActivity,
        Knob::BaseW,
        Knob::Sampling,
        Knob::BalanceInterval,
    ];

    /// The TOML key it scales.
    pub fn key(self) -> &'static str {
        match self {
            Knob::MemLatency => "memory.latency_ns",
            Knob::MemBandwidth => "memory.bandwidth_gbs",
            Knob::Ceff => "power.ceff",
            Knob::IdleCeff => "power.idle_ceff",
            Knob::Leakage => "power.leak_w_per_v",
            Knob::StallActivity => "power.stall_activity",
            Knob::BaseW => "power.base_w",
            Knob::Sampling => "governor.sampling_ms",
            Knob::BalanceInterval => "scheduler.balance_interval_ms",
        }
    }

    fn scale(self, spec: &mut MachineSpec, factor: f64) {
        let v = match self {
            Knob::MemLatency => &mut spec.memory.latency_ns,
            Knob::MemBandwidth => &mut spec.memory.bandwidth_gbs,
            Knob::Ceff => &mut spec.power.ceff,
            Knob::IdleCeff => &mut spec.power.idle_ceff,
            Knob::Leakage => &mut spec.power.leak_w_per_v,
            Knob::StallActivity => &mut spec.power.stall_activity,
            Knob::BaseW => &mut spec.power.base_w,
            Knob::Sampling => &mut spec.governor.sampling_ms,
            Knob::BalanceInterval => &mut spec.scheduler.balance_interval_ms,
        };
        *v *= factor;
        // An activity is a fraction: keep it one.
        if self == Knob::StallActivity {
            spec.power.stall_activity = spec.power.stall_activity.min(1.0);
        }
    }
}

thread_local! {
    static ACTIVE: Cell<Option<(Knob, f64)>> = const { Cell::new(None) };
}

/// Run `f` with `knob` scaled by `factor` in every built-in machine preset
/// loaded on this thread; the override ends with `f`, even on early return.
pub fn with_perturbation<T>(knob: Knob, factor: f64, f: impl FnOnce() -> T) -> T {
    struct Reset(Option<(Knob, f64)>);
    impl Drop for Reset {
        fn drop(&mut self) {
            ACTIVE.with(|a| a.set(self.0));
        }
    }
    let _reset = Reset(ACTIVE.with(|a| a.replace(Some((knob, factor)))));
    f()
}

/// Apply the thread's perturbation, if any, to a preset's spec.
pub(crate) fn apply(mut spec: MachineSpec) -> MachineSpec {
    if let Some((knob, factor)) = ACTIVE.with(Cell::get) {
        knob.scale(&mut spec, factor);
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_perturbation_scales_one_knob_and_ends_with_its_scope() {
        let base = crate::scenario::preset("q6600")
            .and_then(Result::ok)
            .map(|m| m.spec);
        let Some(base) = base else {
            panic!("the q6600 preset loads");
        };
        let moved = with_perturbation(Knob::MemLatency, 1.1, || {
            crate::scenario::preset("q6600")
                .and_then(Result::ok)
                .map(|m| m.spec)
        });
        let Some(moved) = moved else {
            panic!("the perturbed preset loads");
        };
        assert!((moved.memory.latency_ns - 1.1 * base.memory.latency_ns).abs() < 1e-9);
        assert_eq!(moved.power, base.power);
        let after = crate::scenario::preset("q6600")
            .and_then(Result::ok)
            .map(|m| m.spec);
        assert_eq!(after, Some(base));
    }
}
