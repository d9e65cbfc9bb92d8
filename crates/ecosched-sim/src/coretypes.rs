//! Core types (`[[core_types]]` in a machine file): hybrid processors
//! whose dies mix cores of different speed, power and P-states (Intel's
//! P- and E-cores), and the per-CPU layout every machine is built from.
//!
//! A machine without `[[core_types]]` has one implicit type made of the
//! top-level `cores_per_die`, `threads_per_core`, `[frequency] pstates`
//! and `[power]` coefficients, so one code path lays out every machine:
//! CPUs are numbered package first, then die, then the types in the order
//! listed, each core's hardware threads together (Linux's numbering on
//! Alder and Raptor Lake: the P-cores' threads first, then the E-cores).
//!
//! A type's `cpi_factor` multiplies every task's core CPI on it (a slower
//! core needs more cycles per instruction); its Linux capacity
//! (`cpu_capacity`, 1024 for the fastest type) is its highest frequency
//! over its CPI factor, relative to the fastest type's.

use crate::machine::{MachineSpec, PStateSpec};
use ecosched_model::topology::FULL_CAPACITY;
use serde::Deserialize;

/// One kind of core, as written in TOML.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreTypeSpec {
    /// Name (e.g. `"P"`, `"E"`).
    pub name: String,
    /// Cores of this type per die.
    pub cores: u32,
    /// Hardware threads per core of this type.
    #[serde(default = "one")]
    pub threads_per_core: u32,
    /// Multiplier on every task's core CPI on this type (1 = as fast per
    /// cycle as the profiles say; the fastest type should be 1).
    #[serde(default = "unit")]
    pub cpi_factor: f64,
    /// Switched capacitance of one core of this type, W/(V²·GHz);
    /// default `[power] ceff`.
    pub ceff: Option<f64>,
    /// Leakage of one active core of this type, W/V; default `[power]
    /// leak_w_per_v`.
    pub leak_w_per_v: Option<f64>,
    /// Its P-states, ascending; default `[frequency] pstates`.
    pub pstates: Option<Vec<PStateSpec>>,
    /// Its base (guaranteed) frequency, MHz: the P-states above it are
    /// boost states a package power limit may withhold; default
    /// `[frequency] base_mhz`.
    pub base_mhz: Option<u64>,
}

fn one() -> u32 {
    1
}

fn unit() -> f64 {
    1.0
}

/// A core type as the simulator uses it, defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreType {
    /// Name.
    pub name: String,
    /// Hardware threads per core.
    pub threads_per_core: usize,
    /// Multiplier on core CPI.
    pub cpi_factor: f64,
    /// Switched capacitance, W/(V²·GHz).
    pub ceff: f64,
    /// Leakage per volt of an active core, W/V.
    pub leak_w_per_v: f64,
    /// P-states, ascending.
    pub pstates: Vec<PStateSpec>,
    /// Index in `pstates` of the base frequency: the package power limit
    /// never lowers a core below it.
    pub base: usize,
    /// Linux capacity, 1024 for the fastest type.
    pub capacity: u32,
}

/// Where each CPU sits: dense indices of its core, die and package, and
/// its core type.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// The machine's core types (one when the file lists none).
    pub types: Vec<CoreType>,
    /// Per CPU: its core (machine-wide index).
    pub core: Vec<usize>,
    /// Per CPU: its die (machine-wide index).
    pub die: Vec<usize>,
    /// Per CPU: its package.
    pub package: Vec<usize>,
    /// Per CPU: its core type.
    pub kind: Vec<usize>,
}

impl Layout {
    /// Lay out `spec`'s CPUs; the error says what is wrong.
    pub fn of(spec: &MachineSpec) -> Result<Layout, String> {
        let types = core_types(spec)?;
        let threads: Vec<usize> = if spec.core_types.is_empty() {
            vec![spec.threads_per_core as usize]
        } else {
            types.iter().map(|t| t.threads_per_core).collect()
        };
        let counts: Vec<usize> = if spec.core_types.is_empty() {
            vec![spec.cores_per_die as usize]
        } else {
            spec.core_types.iter().map(|t| t.cores as usize).collect()
        };
        let per_die: usize = counts.iter().zip(&threads).map(|(c, t)| c * t).sum();
        let n = spec.packages as usize * spec.dies_per_package as usize * per_die;
        if n > 4096 {
            return Err(format!(
                "{n} CPUs is more than the simulator supports (4096)"
            ));
        }
        let mut layout = Layout {
            types,
            core: Vec::with_capacity(n),
            die: Vec::with_capacity(n),
            package: Vec::with_capacity(n),
            kind: Vec::with_capacity(n),
        };
        let (mut core, mut die) = (0, 0);
        for package in 0..spec.packages as usize {
            for _ in 0..spec.dies_per_package {
                for (kind, (&count, &tpc)) in counts.iter().zip(&threads).enumerate() {
                    for _ in 0..count {
                        for _ in 0..tpc {
                            layout.core.push(core);
                            layout.die.push(die);
                            layout.package.push(package);
                            layout.kind.push(kind);
                        }
                        core += 1;
                    }
                }
                die += 1;
            }
        }
        Ok(layout)
    }
}

/// The types of `spec`, defaults filled in and checked.
fn core_types(spec: &MachineSpec) -> Result<Vec<CoreType>, String> {
    let p = &spec.power;
    let f = &spec.frequency;
    let implicit = [CoreTypeSpec {
        name: "core".into(),
        cores: spec.cores_per_die,
        threads_per_core: spec.threads_per_core,
        cpi_factor: 1.0,
        ceff: None,
        leak_w_per_v: None,
        pstates: None,
        base_mhz: None,
    }];
    let listed: &[CoreTypeSpec] = if spec.core_types.is_empty() {
        &implicit
    } else {
        if spec.threads_per_core != 1 {
            return Err("with [[core_types]], threads_per_core is given per core type".into());
        }
        let sum: u32 = spec.core_types.iter().map(|t| t.cores).sum();
        if sum != spec.cores_per_die {
            return Err(format!(
                "cores_per_die is {} but the core types list {sum} cores per die",
                spec.cores_per_die
            ));
        }
        if f.domain != crate::machine::Scope::Core {
            return Err(
                "with [[core_types]], frequency.domain must be `core` (a domain holds one type)"
                    .into(),
            );
        }
        &spec.core_types
    };
    let mut types = Vec::new();
    for t in listed {
        let at = |what: &str| format!("core type `{}`: {what}", t.name);
        if t.cores == 0 || t.threads_per_core == 0 {
            return Err(at("cores and threads_per_core must be at least 1"));
        }
        if !(t.cpi_factor.is_finite() && t.cpi_factor >= 1.0) {
            return Err(at("cpi_factor must be at least 1"));
        }
        let ceff = t.ceff.unwrap_or(p.ceff);
        let leak = t.leak_w_per_v.unwrap_or(p.leak_w_per_v);
        if !(ceff.is_finite() && ceff >= 0.0 && leak.is_finite() && leak >= 0.0) {
            return Err(at("ceff and leak_w_per_v must be finite and non-negative"));
        }
        let pstates = t.pstates.clone().unwrap_or_else(|| f.pstates.clone());
        check_pstates(&pstates).map_err(|e| at(&e))?;
        let base_mhz = t.base_mhz.or(f.base_mhz);
        let base = match base_mhz {
            None => 0,
            Some(mhz) => pstates
                .iter()
                .position(|s| s.mhz == mhz)
                .ok_or_else(|| at(&format!("base_mhz {mhz} is not one of its P-states")))?,
        };
        types.push(CoreType {
            name: t.name.clone(),
            threads_per_core: t.threads_per_core as usize,
            cpi_factor: t.cpi_factor,
            ceff,
            leak_w_per_v: leak,
            pstates,
            base,
            capacity: 0,
        });
    }
    let speed = |t: &CoreType| t.pstates.last().map_or(0.0, |s| s.mhz as f64) / t.cpi_factor;
    let fastest = types.iter().map(speed).fold(0.0, f64::max);
    for t in &mut types {
        t.capacity = if fastest > 0.0 {
            ((speed(t) / fastest * f64::from(FULL_CAPACITY)).round() as u32).max(1)
        } else {
            FULL_CAPACITY
        };
    }
    Ok(types)
}

/// P-states must be non-empty, ascend by frequency, with voltages that
/// never fall and are positive.
pub fn check_pstates(pstates: &[PStateSpec]) -> Result<(), String> {
    if pstates.is_empty() {
        return Err("pstates is empty".into());
    }
    for w in pstates.windows(2) {
        if w[1].mhz <= w[0].mhz {
            return Err(format!(
                "pstates must ascend by frequency: {} MHz follows {} MHz",
                w[1].mhz, w[0].mhz
            ));
        }
        if w[1].mv < w[0].mv {
            return Err(format!(
                "voltages must not fall as frequency rises: {} MHz at {} mV after {} MHz at {} mV",
                w[1].mhz, w[1].mv, w[0].mhz, w[0].mv
            ));
        }
    }
    if pstates.iter().any(|p| p.mhz == 0 || p.mv == 0) {
        return Err("P-states need a positive frequency and voltage".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::scenario::{parse_toml, preset};
    use crate::{Machine, MachineSpec};

    fn hybrid() -> MachineSpec {
        let text = crate::scenario::PRESETS
            .iter()
            .find(|(n, _)| *n == "core-i9-13900k")
            .map(|(_, t)| *t)
            .unwrap_or_default();
        parse_toml("core-i9-13900k", text).unwrap()
    }

    #[test]
    fn hybrid_layout_numbers_p_threads_first() {
        let m = preset("core-i9-13900k").unwrap().unwrap();
        assert_eq!(m.type_of[..16], [0; 16]);
        assert_eq!(m.type_of[16..], [1; 16]);
        assert_eq!(m.core_cpus[0], vec![0, 1]);
        assert_eq!(m.core_cpus[8], vec![16]);
        assert_eq!(m.core_types[1].capacity, 506);
    }

    #[test]
    fn inconsistent_core_types_are_refused_with_the_reason() {
        let refused = |edit: fn(&mut MachineSpec), says: &str| {
            let mut spec = hybrid();
            edit(&mut spec);
            let err = Machine::build(spec).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        };
        refused(|s| s.cores_per_die = 20, "list 24 cores per die");
        refused(|s| s.threads_per_core = 2, "given per core type");
        refused(
            |s| s.core_types[1].cpi_factor = 0.5,
            "core type `E`: cpi_factor",
        );
        refused(
            |s| s.core_types[0].base_mhz = Some(3100),
            "core type `P`: base_mhz 3100",
        );
        refused(
            |s| s.frequency.domain = crate::machine::Scope::Package,
            "frequency.domain must be `core`",
        );
    }
}
