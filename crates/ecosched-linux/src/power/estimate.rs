//! A package-power estimate for machines with neither RAPL nor a usable
//! hwmon sensor (virtual machines, old servers), from per-CPU utilisation
//! and the P-state table. Every figure it yields is labelled "estimated".
//!
//! ```text
//!  P_package = Σ_packages  P_uncore
//!            + Σ_cores   [ P_idle + u · ( P_static · v  +  P_dyn · φ · v² ) ]
//!
//!  u = busy fraction of the core (the busiest of its hardware threads)
//!  φ = f / f_max                (Patel ch. 1: P = ½·C·V²·f)
//!  v = V / V_max
//! ```
//!
//! The model is per physical core, not per hardware thread: SMT siblings
//! share one core's power, and a second busy thread adds little to it, so
//! counting threads would double the figure on SMT machines.
//!
//! Assumptions, stated in [`Estimator::assumptions`] and thus in every
//! description of the meter:
//! - **frequency**: each CPU sample's `freq_khz`; when a sample has none,
//!   or the machine has no cpufreq (no P-state table, no `f_max`), the core
//!   is assumed to run at its maximum frequency (φ = 1), which errs high.
//! - **voltage**: sysfs publishes none. When the topology's P-states carry
//!   voltages (a machine described by hand), they are used. Otherwise
//!   `v = 1 − k·(1 − φ)` with `k` = [`EstimateParams::voltage_slope`]:
//!   the Q6600 of Merkel et al. (§3) drops from 1.24 V to 1.13 V when
//!   going from 2.4 to 1.6 GHz, i.e. k = (1 − 1.13/1.24)/(1 − 1.6/2.4) ≈ 0.27.
//! - **parameters**: which figures is the caller's choice, and named in
//!   every description ([`EstimateParams::model`]): `ecosched run` takes the
//!   built-in machine preset that matches the CPU, else
//!   [`EstimateParams::generic`], else the user's file. The
//!   [`EstimateParams::q6600`] figures are the calibrated `q6600` preset of
//!   the simulator (Merkel §3, Tables 1–2): four busy cores at 2.4 GHz draw
//!   ≈ 74 W, and 1.6 GHz cuts that by ≈ 22 %. With figures not measured on
//!   the machine itself only ratios between intervals mean much.
//!
//! It refuses (returns `None`) rather than guess when it lacks what it
//! needs: no online CPU in the topology, a sample missing for an online
//! CPU, a utilisation that is not a number, or an unusable interval.

use ecosched_model::topology::FreqDomain;
use ecosched_model::{CpuId, CpuSample, Topology};
use std::collections::{BTreeMap, BTreeSet};

/// The model's constants, per core and per package, in watts.
#[derive(Debug, Clone, PartialEq)]
pub struct EstimateParams {
    /// Whose figures these are, for every description of the estimate.
    pub model: String,
    /// A core in its deepest common idle state (Q6600 C1E: 1.5 W).
    pub idle_w_per_core: f64,
    /// Static power a busy core adds over idle at maximum voltage (Q6600:
    /// 4.0 W leakage at 1.24 V less the 1.5 W it draws idle).
    pub busy_static_w_per_core: f64,
    /// Dynamic power of a fully busy core at maximum frequency and voltage
    /// (Q6600: C_eff 2.30 · 1.24² V² · 2.4 GHz ≈ 8.5 W).
    pub dynamic_max_w_per_core: f64,
    /// Caches, memory controller and interconnect of a package: the part
    /// that does not follow core DVFS (Q6600: 24 W).
    pub uncore_w_per_package: f64,
    /// `k` in `V/V_max = 1 − k·(1 − f/f_max)`, used when the P-state table
    /// has no voltages (Q6600 P-states: 0.27).
    pub voltage_slope: f64,
}

/// The generic model's share of a package's full-load power per core, W:
/// server parts of today spend about 3.7–6.3 W of TDP per core (AMD EPYC
/// 9654: 360 W / 96 cores; EPYC 7763: 280 W / 64; Intel Xeon Platinum
/// 8480+: 350 W / 56, from the vendors' product pages); 4.5 W sits between.
const GENERIC_W_PER_CORE: f64 = 4.5;

impl EstimateParams {
    /// The Intel Core 2 Quad Q6600 figures (simulator preset `q6600`,
    /// Merkel et al. §3): for that CPU only.
    pub fn q6600() -> Self {
        EstimateParams {
            model: "q6600: Intel Core 2 Quad Q6600 figures (Merkel et al. §3)".into(),
            idle_w_per_core: 1.5,
            busy_static_w_per_core: 2.5,
            dynamic_max_w_per_core: 8.5,
            uncore_w_per_package: 24.0,
            voltage_slope: 0.27,
        }
    }

    /// A generic model for a CPU no preset describes, scaled by its
    /// `cores_per_package`: per core, the 4.5 W share of
    /// full-load package power split into a third uncore (the I/O die or
    /// mesh, memory controllers and caches that stay up while any core
    /// runs), 0.3 W idle (deep C-states leave little), 0.7 W leakage and
    /// 2.0 W dynamic at the top frequency; voltage slope 0.3, near the
    /// Q6600's measured 0.27. These are estimates from no measurement of
    /// the machine; a file of its own figures replaces them.
    pub fn generic(cores_per_package: usize) -> Self {
        let per_core_uncore = GENERIC_W_PER_CORE / 3.0;
        EstimateParams {
            model: format!(
                "generic: {GENERIC_W_PER_CORE} W per busy core at full frequency including a {per_core_uncore} W uncore share, not this CPU's own figures"
            ),
            idle_w_per_core: 0.3,
            busy_static_w_per_core: 0.7,
            dynamic_max_w_per_core: 2.0,
            uncore_w_per_package: per_core_uncore * cores_per_package.max(1) as f64,
            voltage_slope: 0.3,
        }
    }

    /// [`EstimateParams::generic`] for `topology`'s largest package.
    pub fn generic_for(topology: &Topology) -> Self {
        let mut cores: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
        for cpu in &topology.cpus {
            cores.entry(cpu.package).or_default().insert(cpu.core);
        }
        Self::generic(cores.values().map(BTreeSet::len).max().unwrap_or(1))
    }

    /// Whether every figure is a finite, non-negative number and the slope
    /// keeps the voltage positive.
    pub fn is_valid(&self) -> bool {
        let watts = [
            self.idle_w_per_core,
            self.busy_static_w_per_core,
            self.dynamic_max_w_per_core,
            self.uncore_w_per_package,
        ];
        watts.iter().all(|w| w.is_finite() && *w >= 0.0)
            && self.voltage_slope.is_finite()
            && (0.0..1.0).contains(&self.voltage_slope)
    }
}

/// One physical core: its online hardware threads and frequency domain.
#[derive(Debug, Clone)]
struct Core {
    cpus: Vec<CpuId>,
    freq_domain: Option<FreqDomain>,
}

/// The estimate for one machine.
#[derive(Debug, Clone)]
pub struct Estimator {
    params: EstimateParams,
    cores: Vec<Core>,
    packages: usize,
    has_cpufreq: bool,
    has_voltages: bool,
}

impl Estimator {
    /// An estimator for `topology`; `None` when it has no online CPU or the
    /// parameters are not valid (see [`EstimateParams::is_valid`]).
    pub fn new(topology: &Topology, params: EstimateParams) -> Option<Self> {
        if !params.is_valid() {
            return None;
        }
        let has_cpufreq = !topology.freq_domains.is_empty();
        let mut cores: BTreeMap<u32, Core> = BTreeMap::new();
        let mut packages = BTreeSet::new();
        for cpu in topology.cpus.iter().filter(|c| c.online) {
            packages.insert(cpu.package);
            let freq_domain = if has_cpufreq {
                cpu.freq_domain
                    .and_then(|d| topology.freq_domain(d))
                    .cloned()
            } else {
                None
            };
            let core = cores.entry(cpu.core).or_insert(Core {
                cpus: Vec::new(),
                freq_domain,
            });
            core.cpus.push(cpu.id);
        }
        if cores.is_empty() {
            return None;
        }
        let has_voltages = has_cpufreq
            && topology
                .freq_domains
                .iter()
                .all(|d| d.pstates.iter().all(|p| p.voltage_mv.is_some()));
        Some(Estimator {
            params,
            cores: cores.into_values().collect(),
            packages: packages.len(),
            has_cpufreq,
            has_voltages,
        })
    }

    /// `(φ, v)`: frequency and voltage relative to the maximum, for a core
    /// of `domain` running at `freq_khz`.
    fn scale(&self, domain: Option<&FreqDomain>, freq_khz: Option<u64>) -> (f64, f64) {
        let (Some(domain), Some(f)) = (domain, freq_khz) else {
            return (1.0, 1.0);
        };
        let f_max = domain.max_khz();
        if f_max == 0 {
            return (1.0, 1.0);
        }
        let phi = (f as f64 / f_max as f64).clamp(0.0, 1.0);
        let v_max = domain.pstates.last().and_then(|p| p.voltage_mv);
        let v_now = domain
            .pstate(domain.at_least(f as f64))
            .and_then(|p| p.voltage_mv);
        let v = match (v_now, v_max) {
            (Some(v), Some(m)) if m > 0 => (f64::from(v) / f64::from(m)).clamp(0.0, 1.0),
            _ => 1.0 - self.params.voltage_slope * (1.0 - phi),
        };
        (phi, v)
    }

    /// Estimated package power over the interval the samples describe, in
    /// watts; `None` when a sample is missing for an online CPU or holds a
    /// utilisation that is not a number.
    pub fn power_w(&self, cpus: &[CpuSample]) -> Option<f64> {
        let by_id: BTreeMap<CpuId, &CpuSample> = cpus.iter().map(|s| (s.id, s)).collect();
        let p = &self.params;
        let mut total_w = p.uncore_w_per_package * self.packages as f64;
        for core in &self.cores {
            let mut busy = 0.0f64;
            let mut freq_khz: Option<u64> = None;
            for id in &core.cpus {
                let sample = by_id.get(id)?;
                if !sample.utilisation.is_finite() {
                    return None;
                }
                busy = busy.max(sample.utilisation.clamp(0.0, 1.0));
                freq_khz = freq_khz.max(sample.freq_khz);
            }
            let (phi, v) = self.scale(core.freq_domain.as_ref(), freq_khz);
            total_w += p.idle_w_per_core
                + busy * (p.busy_static_w_per_core * v + p.dynamic_max_w_per_core * phi * v * v);
        }
        Some(total_w)
    }

    /// Estimated package energy over `interval_s` seconds, in joules; `None`
    /// as for [`Estimator::power_w`], or when the interval is negative or
    /// not a number.
    pub fn energy_j(&self, interval_s: f64, cpus: &[CpuSample]) -> Option<f64> {
        if !interval_s.is_finite() || interval_s < 0.0 {
            return None;
        }
        Some(self.power_w(cpus)? * interval_s)
    }

    /// What the estimate assumes on this machine, for descriptions.
    pub fn assumptions(&self) -> String {
        let frequency = if self.has_cpufreq {
            "frequency from each CPU sample (maximum when unknown)"
        } else {
            "no cpufreq, frequency assumed at maximum"
        };
        let voltage = if !self.has_cpufreq {
            String::from("voltage at maximum")
        } else if self.has_voltages {
            String::from("voltages from the P-state table")
        } else {
            format!(
                "V/Vmax = 1 - {}*(1 - f/fmax) (sysfs has no voltages)",
                self.params.voltage_slope
            )
        };
        format!(
            "ESTIMATE (model {}); {frequency}; {voltage}; {} core(s) in {} package(s); package only, no system figure",
            self.params.model,
            self.cores.len(),
            self.packages
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ecosched_model::topology::{Cpu, PState, VoltageDomain};
    use ecosched_model::CpuSet;

    /// One package of `cores` cores with `threads` hardware threads each,
    /// and the Q6600's two P-states (with or without voltages), or none.
    fn machine(cores: u32, threads: u32, pstates: Option<bool>) -> Topology {
        let mut cpus = Vec::new();
        for core in 0..cores {
            for t in 0..threads {
                cpus.push(Cpu {
                    id: CpuId(t * cores + core),
                    package: 0,
                    die: 0,
                    core,
                    numa_node: 0,
                    online: true,
                    freq_domain: Some(ecosched_model::FreqDomainId(0)),
                    capacity: ecosched_model::topology::FULL_CAPACITY,
                });
            }
        }
        cpus.sort_by_key(|c| c.id);
        let freq_domains = match pstates {
            None => Vec::new(),
            Some(volts) => vec![FreqDomain {
                cpus: CpuSet::first_n(cores * threads),
                pstates: vec![
                    PState {
                        freq_khz: 1_600_000,
                        voltage_mv: volts.then_some(1130),
                    },
                    PState {
                        freq_khz: 2_400_000,
                        voltage_mv: volts.then_some(1240),
                    },
                ],
                transition_latency_us: 10,
                voltage_domain: 0,
            }],
        };
        Topology {
            cpus,
            freq_domains,
            voltage_domains: vec![VoltageDomain {
                freq_domains: vec![ecosched_model::FreqDomainId(0)],
            }],
            ..Topology::default()
        }
    }

    fn samples(n: u32, utilisation: f64, freq_khz: Option<u64>) -> Vec<CpuSample> {
        (0..n)
            .map(|i| CpuSample {
                id: CpuId(i),
                freq_khz,
                utilisation,
                nr_running: None,
            })
            .collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn four_busy_q6600_cores_draw_the_published_74_w_and_22_percent_less_at_1_6_ghz() {
        let est = Estimator::new(&machine(4, 1, Some(true)), EstimateParams::q6600()).unwrap();
        let busy = est.power_w(&samples(4, 1.0, Some(2_400_000))).unwrap();
        assert!(close(busy, 74.0), "{busy}");
        let slow = est.power_w(&samples(4, 1.0, Some(1_600_000))).unwrap();
        let v = 1130.0 / 1240.0;
        assert!(close(
            slow,
            24.0 + 4.0 * (1.5 + 2.5 * v + 8.5 * (2.0 / 3.0) * v * v)
        ));
        let cut = 1.0 - slow / busy;
        assert!((0.20..0.24).contains(&cut), "{cut}");
        let idle = est.power_w(&samples(4, 0.0, Some(1_600_000))).unwrap();
        assert!(close(idle, 24.0 + 4.0 * 1.5), "{idle}");
        assert!(close(
            est.energy_j(2.0, &samples(4, 1.0, Some(2_400_000)))
                .unwrap(),
            148.0
        ));
    }

    #[test]
    fn without_voltages_the_slope_stands_in_and_matches_the_q6600_closely() {
        let est = Estimator::new(&machine(4, 1, Some(false)), EstimateParams::q6600()).unwrap();
        let slow = est.power_w(&samples(4, 1.0, Some(1_600_000))).unwrap();
        let v = 1.0 - 0.27 * (1.0 - 2.0 / 3.0);
        assert!(close(
            slow,
            24.0 + 4.0 * (1.5 + 2.5 * v + 8.5 * (2.0 / 3.0) * v * v)
        ));
        // 1.13/1.24 V is 0.911; the slope gives 0.910.
        let with_volts = Estimator::new(&machine(4, 1, Some(true)), EstimateParams::q6600())
            .unwrap()
            .power_w(&samples(4, 1.0, Some(1_600_000)))
            .unwrap();
        assert!((slow - with_volts).abs() < 0.1, "{slow} vs {with_volts}");
        assert!(
            est.assumptions().contains("sysfs has no voltages"),
            "{}",
            est.assumptions()
        );
    }

    #[test]
    fn no_cpufreq_or_no_frequency_means_maximum_and_says_so() {
        let est = Estimator::new(&machine(2, 1, None), EstimateParams::q6600()).unwrap();
        let p = est.power_w(&samples(2, 0.5, None)).unwrap();
        assert!(close(p, 24.0 + 2.0 * (1.5 + 0.5 * (2.5 + 8.5))), "{p}");
        // A frequency without a P-state table has no maximum to compare with.
        assert!(close(
            est.power_w(&samples(2, 0.5, Some(800_000))).unwrap(),
            p
        ));
        assert!(est
            .assumptions()
            .contains("no cpufreq, frequency assumed at maximum"));
        let with_table =
            Estimator::new(&machine(2, 1, Some(true)), EstimateParams::q6600()).unwrap();
        assert!(close(
            with_table.power_w(&samples(2, 0.5, None)).unwrap(),
            p
        ));
    }

    #[test]
    fn smt_siblings_share_their_core() {
        let est = Estimator::new(&machine(2, 2, None), EstimateParams::q6600()).unwrap();
        let mut one = samples(4, 0.0, None);
        one[0].utilisation = 1.0;
        let mut both = one.clone();
        both[2].utilisation = 1.0; // CPU 2 is CPU 0's sibling
        let p_one = est.power_w(&one).unwrap();
        assert!(close(p_one, est.power_w(&both).unwrap()));
        assert!(close(p_one, 24.0 + 1.5 + 12.5));
    }

    #[test]
    fn refuses_rather_than_invents() {
        let est = Estimator::new(&machine(4, 1, None), EstimateParams::q6600()).unwrap();
        assert_eq!(est.power_w(&samples(3, 1.0, None)), None);
        assert_eq!(est.power_w(&[]), None);
        assert_eq!(est.power_w(&samples(4, f64::NAN, None)), None);
        assert_eq!(est.energy_j(-1.0, &samples(4, 1.0, None)), None);
        assert_eq!(est.energy_j(f64::INFINITY, &samples(4, 1.0, None)), None);
        let mut offline = machine(1, 1, None);
        offline.cpus[0].online = false;
        assert!(Estimator::new(&offline, EstimateParams::q6600()).is_none());
        assert!(Estimator::new(&Topology::default(), EstimateParams::q6600()).is_none());
        let bad = EstimateParams {
            idle_w_per_core: -1.0,
            ..EstimateParams::q6600()
        };
        assert!(Estimator::new(&machine(1, 1, None), bad).is_none());
        let bad = EstimateParams {
            voltage_slope: 1.0,
            ..EstimateParams::q6600()
        };
        assert!(Estimator::new(&machine(1, 1, None), bad).is_none());
    }

    #[test]
    fn utilisation_is_clamped_to_the_interval() {
        let est = Estimator::new(&machine(1, 1, None), EstimateParams::q6600()).unwrap();
        assert!(close(
            est.power_w(&samples(1, 1.7, None)).unwrap(),
            est.power_w(&samples(1, 1.0, None)).unwrap()
        ));
        assert!(close(
            est.power_w(&samples(1, -0.2, None)).unwrap(),
            24.0 + 1.5
        ));
    }

    #[test]
    fn the_generic_model_scales_with_the_package_and_names_itself() {
        let topology = machine(2, 1, None);
        let params = EstimateParams::generic_for(&topology);
        assert!(close(params.uncore_w_per_package, 3.0));
        let est = Estimator::new(&topology, params).unwrap();
        let busy = est.power_w(&samples(2, 1.0, None)).unwrap();
        assert!(close(busy, 2.0 * GENERIC_W_PER_CORE), "{busy}");
        let text = est.assumptions();
        assert!(text.starts_with("ESTIMATE (model generic"), "{text}");
        assert!(!text.contains("Q6600"), "{text}");
        let big = EstimateParams::generic(96);
        assert!(close(big.uncore_w_per_package, 96.0 * 1.5));
    }
}
