//! Sensitivity of the calibration (`ecosched validate --perturb`): move one calibrated parameter by a factor, so that a
//! validation run shows which conclusions hang on that one knob. A knob
//! is a machine parameter, scaled in every built-in machine preset; a
//! workload parameter, scaled in every phase of every built-in profile
//! (profiles.toml); or a build parameter, scaled in every built-in
//! scenario's `[jobgraph]`. Files a user names are never moved. The
//! override is per thread and scoped ([`with_perturbation`]), so nothing
//! else running in the process sees it, and perturbed runs may go on
//! threads of their own side by side.

use crate::jobgraph::JobGraphSpec;
use crate::machine::MachineSpec;
use crate::profile::Profile;
use std::cell::Cell;

/// A calibrated parameter that can be perturbed: each was set from a
/// datasheet or a paper's figure (the machine TOMLs, profiles.toml and the
/// scenarios say which).
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
    /// A profile's `cpi_core`: the core's own cycles per instruction
    /// (aluadd's and PAM's eq. 14 profiles were set from it).
    CpiCore,
    /// A profile's `api`: shared-cache accesses per instruction, capped
    /// at the L1D references (soplex's was calibrated).
    Api,
    /// A profile's `mlp`: misses overlapped, at least 1 (stream's was
    /// calibrated on Merkel's bus row).
    Mlp,
    /// The level of a profile's miss curve: `m0`, `m_floor` and `m_max`
    /// together, each at most 1 (libquantum's, bzip2's and soplex's were
    /// calibrated).
    MissLevel,
    /// The exponent of a profile's miss curve (stream-fit1's cliff and
    /// xalancbmk's and libquantum's curves were calibrated).
    MissAlpha,
    /// A profile's `prefetch_coverage`, kept below 1 (libquantum's).
    Prefetch,
    /// `jobgraph.make_ms`: `make`'s own work per job it starts.
    MakeWork,
    /// `jobgraph.helper_share`: the assembler beside each compile job
    /// (calibrated on Richling's Table I high/low row), below 0.9.
    HelperShare,
}

impl Knob {
    /// Every knob, in a stable order.
    pub const ALL: [Knob; 17] = [
        Knob::MemLatency,
        Knob::MemBandwidth,
        Knob::Ceff,
        Knob::IdleCeff,
        Knob::Leakage,
        Knob::StallActivity,
        Knob::BaseW,
        Knob::Sampling,
        Knob::BalanceInterval,
        Knob::CpiCore,
        Knob::Api,
        Knob::Mlp,
        Knob::MissLevel,
        Knob::MissAlpha,
        Knob::Prefetch,
        Knob::MakeWork,
        Knob::HelperShare,
    ];

    /// The key it scales: a machine TOML key, `profile.` and a phase's
    /// key, or a scenario's `jobgraph.` key.
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
            Knob::CpiCore => "profile.cpi_core",
            Knob::Api => "profile.api",
            Knob::Mlp => "profile.mlp",
            Knob::MissLevel => "profile.miss (m0, m_floor, m_max)",
            Knob::MissAlpha => "profile.miss.alpha",
            Knob::Prefetch => "profile.prefetch_coverage",
            Knob::MakeWork => "jobgraph.make_ms",
            Knob::HelperShare => "jobgraph.helper_share",
        }
    }

    fn scale_machine(self, spec: &mut MachineSpec, factor: f64) {
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
            _ => return,
        };
        *v *= factor;
        // An activity is a fraction: keep it one.
        if self == Knob::StallActivity {
            spec.power.stall_activity = spec.power.stall_activity.min(1.0);
        }
    }

    /// Scale every phase, keeping each within the range `Profile::check`
    /// accepts, so a moved profile is still a valid one.
    fn scale_profile(self, profile: &mut Profile, factor: f64) {
        for p in &mut profile.phases {
            let m = &mut p.miss;
            match self {
                Knob::CpiCore => p.cpi_core *= factor,
                Knob::Api => p.api = (p.api * factor).min(p.l1d_refs_per_instr),
                Knob::Mlp => p.mlp = (p.mlp * factor).max(1.0),
                Knob::MissLevel => {
                    m.m_max = (m.m_max * factor).min(1.0);
                    m.m0 = (m.m0 * factor).min(1.0);
                    m.m_floor = (m.m_floor * factor).min(m.m_max);
                }
                Knob::MissAlpha => m.alpha *= factor,
                Knob::Prefetch => p.prefetch_coverage = (p.prefetch_coverage * factor).min(0.99),
                _ => return,
            }
        }
    }

    fn scale_jobgraph(self, graph: &mut JobGraphSpec, factor: f64) {
        match self {
            Knob::MakeWork => graph.make_ms *= factor,
            Knob::HelperShare => graph.helper_share = (graph.helper_share * factor).min(0.89),
            _ => {}
        }
    }
}

thread_local! {
    static ACTIVE: Cell<Option<(Knob, f64)>> = const { Cell::new(None) };
}

/// Run `f` with `knob` scaled by `factor` in every built-in machine preset
/// loaded on this thread; the override ends with `f`, even on early return.
pub fn with_perturbation<T>(knob: Knob, factor: f64, f: impl FnOnce() -> T) -> T {
    with_active(Some((knob, factor)), f)
}

/// Run `f` with the thread's override set to `moved` (`None`: no knob
/// moved), as [`with_perturbation`] does; a parallel run carries the
/// caller's [`active`] override into each worker with it, so that a worker
/// runs every job under the override of the pass it belongs to.
pub fn with_active<T>(moved: Option<(Knob, f64)>, f: impl FnOnce() -> T) -> T {
    struct Reset(Option<(Knob, f64)>);
    impl Drop for Reset {
        fn drop(&mut self) {
            ACTIVE.with(|a| a.set(self.0));
        }
    }
    let _reset = Reset(ACTIVE.with(|a| a.replace(moved)));
    f()
}

/// The thread's perturbation, if any: the knob and its factor.
pub fn active() -> Option<(Knob, f64)> {
    ACTIVE.with(Cell::get)
}

/// Apply the thread's perturbation, if any, to a preset's spec.
pub(crate) fn apply(mut spec: MachineSpec) -> MachineSpec {
    if let Some((knob, factor)) = active() {
        knob.scale_machine(&mut spec, factor);
    }
    spec
}

/// Apply the thread's perturbation, if any, to a built-in profile.
pub(crate) fn apply_to_profile(profile: &mut Profile) {
    if let Some((knob, factor)) = active() {
        knob.scale_profile(profile, factor);
    }
}

/// Apply the thread's perturbation, if any, to a built-in scenario's build.
pub(crate) fn apply_to_jobgraph(graph: &mut JobGraphSpec) {
    if let Some((knob, factor)) = active() {
        knob.scale_jobgraph(graph, factor);
    }
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

    /// A workload knob moves the field in every phase of every built-in
    /// profile, within the ranges a profile must keep: a curve already at
    /// 1 stays there, an MLP of 1 is not lowered below it.
    #[test]
    fn a_profile_knob_moves_every_built_in_profile_and_keeps_it_valid() {
        let load = || crate::scenario::builtin_profiles().ok();
        let Some(base) = load() else {
            panic!("the built-in profiles load");
        };
        for (knob, factor) in [(Knob::MissLevel, 1.1), (Knob::Mlp, 0.9), (Knob::Api, 1.1)] {
            let Some(moved) = with_perturbation(knob, factor, load) else {
                panic!("the moved profiles load");
            };
            for (name, p) in &moved {
                assert_eq!(p.check(), Ok(()), "{name} under {knob:?}");
            }
            let phase = |set: &std::collections::BTreeMap<String, Profile>, name: &str| {
                set.get(name).map(|p| p.phases[0].clone())
            };
            let (Some(soplex), Some(soplex0)) = (phase(&moved, "soplex"), phase(&base, "soplex"))
            else {
                panic!("soplex is built in");
            };
            let (Some(aluadd), Some(stream)) = (phase(&moved, "aluadd"), phase(&moved, "stream"))
            else {
                panic!("aluadd and stream are built in");
            };
            match knob {
                Knob::MissLevel => {
                    assert!((soplex.miss.m0 - 1.1 * soplex0.miss.m0).abs() < 1e-12);
                    assert_eq!((stream.miss.m0, stream.miss.m_max), (1.0, 1.0));
                }
                Knob::Mlp => {
                    assert!((soplex.mlp - 0.9 * soplex0.mlp).abs() < 1e-12);
                    assert_eq!(aluadd.mlp, 1.0);
                }
                _ => assert!((soplex.api - 1.1 * soplex0.api).abs() < 1e-12),
            }
        }
        assert_eq!(load(), Some(base));
    }

    /// A build knob moves a built-in scenario's `[jobgraph]`, never a
    /// scenario file's, and no machine or profile knob touches it.
    #[test]
    fn a_build_knob_moves_built_in_builds_only() {
        let share = |s: &crate::Scenario| s.spec.jobgraph.as_ref().map(|g| g.helper_share);
        let builtin = || crate::Scenario::load("richling-make-j1").ok();
        let Some(base) = builtin() else {
            panic!("richling-make-j1 loads");
        };
        let dir = std::env::temp_dir().join(format!("ecosched-perturb-{}", std::process::id()));
        let file = dir.join("build.toml");
        let text = include_str!("../scenarios/richling-make-j1.toml");
        assert!(std::fs::create_dir_all(&dir).is_ok() && std::fs::write(&file, text).is_ok());
        let path = file.display().to_string();
        let (moved, from_file) = with_perturbation(Knob::HelperShare, 1.5, || {
            (builtin(), crate::Scenario::load(&path).ok())
        });
        let _ = std::fs::remove_dir_all(&dir);
        let (Some(moved), Some(from_file)) = (moved, from_file) else {
            panic!("both scenarios load under the perturbation");
        };
        let (Some(before), Some(after)) = (share(&base), share(&moved)) else {
            panic!("richling-make-j1 is a build");
        };
        assert!(before > 0.0 && (after - 1.5 * before).abs() < 1e-12);
        assert_eq!(share(&from_file), Some(before));
        let other = with_perturbation(Knob::Mlp, 1.5, builtin);
        assert_eq!(other.as_ref().and_then(share), Some(before));
    }

    /// Every knob, either way, leaves every built-in scenario loadable:
    /// a perturbed validation pass never stops on a parameter moved out
    /// of its range.
    #[test]
    fn every_knob_either_way_leaves_every_built_in_scenario_valid() {
        for knob in Knob::ALL {
            for factor in [0.9, 1.1] {
                for (name, _) in crate::scenario::builtin_scenarios() {
                    let loaded = with_perturbation(knob, factor, || crate::Scenario::load(&name));
                    assert!(
                        loaded.is_ok(),
                        "{name} with {} × {factor}: {loaded:?}",
                        knob.key()
                    );
                }
            }
        }
    }
}
