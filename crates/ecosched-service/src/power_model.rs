//! `run --power-model` and the daemon's `power_model`: which figures the
//! ESTIMATED power model uses where no RAPL or hwmon meter measures power. Never one CPU's figures on
//! another: `auto` (the default) takes the built-in machine preset that
//! describes this CPU (matched by its model name, or on Arm by its MIDR
//! implementer and part and core count), else a generic model scaled to
//! the package ([`EstimateParams::generic`]). The user can name a preset,
//! `generic`, or give a file: a machine file (the simulator's TOML, e.g.
//! one written by `ecosched topology --emit-machine` with its power
//! figures filled in), whose `[power]` and `[frequency]` give the
//! figures, or a TOML file of per-core watts:
//!
//! ```toml
//! idle_w_per_core = 1.5          # a core in its deepest common idle state
//! busy_static_w_per_core = 2.5   # leakage a busy core adds at maximum voltage
//! dynamic_max_w_per_core = 8.5   # a fully busy core at maximum f and V
//! uncore_w_per_package = 24.0    # caches, memory controller, interconnect
//! voltage_slope = 0.27           # V/Vmax = 1 - k(1 - f/fmax) without voltages
//! ```
//!
//! Whichever it is, the run's summary (and the daemon's log and records)
//! names the model and says the figures are an estimate.

use ecosched_linux::power::estimate::EstimateParams;
use ecosched_model::Topology;
use ecosched_sim::machine::MachineSpec;
use serde::Deserialize;
use std::path::Path;

/// The default: match this CPU to a preset, else the generic model.
pub const AUTO: &str = "auto";
/// The generic model's name.
pub const GENERIC: &str = "generic";

/// A power model file: every figure required, unknown keys refused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelFile {
    idle_w_per_core: f64,
    busy_static_w_per_core: f64,
    dynamic_max_w_per_core: f64,
    uncore_w_per_package: f64,
    voltage_slope: f64,
}

/// Which built-in machine preset describes a CPU: the preset's name, the
/// words of `/proc/cpuinfo`'s model name that identify the part (matched
/// as whole words, whitespace collapsed), or for Arm parts, which have no
/// model name, `arm:<implementer>:<part>:<cores per package>`.
const PRESET_CPUS: &[(&str, &str)] = &[
    ("q6600", "Q6600"),
    ("xeon-e5345", "E5345"),
    ("xeon-e5430", "E5430"),
    ("core-i7-940", "i7 CPU 940"),
    ("opteron-2352", "Opteron(tm) Processor 2352"),
    ("opteron-6134", "Opteron(tm) Processor 6134"),
    ("phenom-9750", "Phenom(tm) 9750"),
    ("phenom-ii-940", "Phenom(tm) II X4 940"),
    ("epyc-9654-2s", "EPYC 9654"),
    ("xeon-8480-2s", "Platinum 8480+"),
    ("core-i9-13900k", "i9-13900K"),
    // Ampere Altra Q80-30: 80 Neoverse N1 cores (Arm, implementer 0x41,
    // part 0xd0c) in one package.
    ("altra-q80-30", "arm:0x41:0xd0c:80"),
];

/// What the user chose, checked before anything on the machine changes.
#[derive(Debug, Clone)]
pub enum Choice {
    /// Match this CPU.
    Auto,
    /// The generic model.
    Generic,
    /// Figures already known: a preset or a file.
    Fixed(EstimateParams),
}

/// Parse `choice` (`auto`, `generic`, a preset name, or a file): a bad
/// file is refused here, naming it; the error starts with `choice`, for
/// the caller to say where it was given (`--power-model`, a config key).
pub fn load(choice: &str) -> Result<Choice, String> {
    match choice {
        AUTO => return Ok(Choice::Auto),
        GENERIC => return Ok(Choice::Generic),
        _ => {}
    }
    if let Some(machine) = ecosched_sim::scenario::preset(choice) {
        let machine = machine.map_err(|e| format!("{choice}: built-in preset: {e}"))?;
        let params = from_spec(&machine.spec, format!("{choice} (built-in machine preset)"));
        return Ok(Choice::Fixed(params));
    }
    let path = Path::new(choice);
    let text = ecosched_model::user_file::read_text(path, ecosched_model::user_file::TEXT_MAX_BYTES).map_err(|e| {
        format!(
            "{choice}: neither `{AUTO}`, `{GENERIC}`, a built-in machine preset nor a readable file ({})",
            e.reason()
        )
    })?;
    let origin = path.display().to_string();
    let is_machine = text
        .parse::<toml::Table>()
        .is_ok_and(|t| t.contains_key("power") || t.contains_key("packages"));
    let params = if is_machine {
        let spec: MachineSpec = ecosched_sim::scenario::parse_toml(&origin, &text)
            .map_err(|e| format!("{choice}: machine file {e}"))?;
        from_spec(&spec, format!("{origin} (machine file `{}`)", spec.name))
    } else {
        let m: ModelFile = ecosched_sim::scenario::parse_toml(&origin, &text)
            .map_err(|e| format!("{choice}: power model file {e}"))?;
        EstimateParams {
            model: format!("{origin} (per-core figures from the file)"),
            idle_w_per_core: m.idle_w_per_core,
            busy_static_w_per_core: m.busy_static_w_per_core,
            dynamic_max_w_per_core: m.dynamic_max_w_per_core,
            uncore_w_per_package: m.uncore_w_per_package,
            voltage_slope: m.voltage_slope,
        }
    };
    if !params.is_valid() {
        return Err(format!(
            "{choice}: every figure must be a finite number of watts ≥ 0 and voltage_slope in [0, 1)"
        ));
    }
    Ok(Choice::Fixed(params))
}

impl Choice {
    /// The figures for this machine: `identity` is what names its CPU
    /// ([`identity`]), `topology` what the generic model scales to.
    pub fn resolve(self, identity: &str, topology: &Topology) -> EstimateParams {
        match self {
            Choice::Fixed(p) => p,
            Choice::Generic => EstimateParams::generic_for(topology),
            Choice::Auto => match matching_preset(identity) {
                Some(name) => match ecosched_sim::scenario::preset(name) {
                    Some(Ok(machine)) => from_spec(
                        &machine.spec,
                        format!("{name} (built-in machine preset matched to this CPU)"),
                    ),
                    _ => {
                        let mut p = EstimateParams::generic_for(topology);
                        p.model = format!(
                            "{} (this CPU is preset {name}'s, which is not built in here)",
                            p.model
                        );
                        p
                    }
                },
                None => EstimateParams::generic_for(topology),
            },
        }
    }
}

/// What identifies this machine's CPU for the preset table: the machine
/// name (which holds the model name) and, on Arm, the
/// `arm:<implementer>:<part>:<cores per package>` of `cpuinfo`.
pub fn identity(machine_name: &str, cpuinfo: &str, topology: &Topology) -> String {
    let field = |key: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_ascii_lowercase())
        })
    };
    let mut id = machine_name.to_string();
    if let (Some(implementer), Some(part)) = (field("CPU implementer"), field("CPU part")) {
        let mut per_package: std::collections::BTreeMap<u32, std::collections::BTreeSet<u32>> =
            Default::default();
        for cpu in &topology.cpus {
            per_package.entry(cpu.package).or_default().insert(cpu.core);
        }
        let cores = per_package.values().map(|s| s.len()).max().unwrap_or(0);
        id.push_str(&format!(" arm:{implementer}:{part}:{cores}"));
    }
    id
}

/// The preset whose CPU `identity` names, if any.
pub fn matching_preset(identity: &str) -> Option<&'static str> {
    let words: Vec<&str> = identity.split_whitespace().collect();
    PRESET_CPUS.iter().find_map(|(preset, pattern)| {
        let want: Vec<&str> = pattern.split_whitespace().collect();
        words
            .windows(want.len())
            .any(|w| w == want.as_slice())
            .then_some(*preset)
    })
}

/// The estimate's figures from a machine's `[power]` and `[frequency]`:
/// dynamic power of a busy core `ceff · V_max² · f_max`, its leakage
/// `leak_w_per_v · V_max` less what it draws in the deepest idle state,
/// the package's uncore, and the voltage slope between the lowest and
/// highest P-state.
pub fn from_spec(spec: &MachineSpec, model: String) -> EstimateParams {
    let mut pstates = spec.frequency.pstates.clone();
    pstates.sort_by_key(|p| p.mhz);
    let (v_max, f_max) = pstates.last().map_or((1.0, 1.0), |p| {
        (f64::from(p.mv) / 1000.0, p.mhz as f64 / 1000.0)
    });
    let power = &spec.power;
    let idle = power.idle_states.last().map_or(0.0, |s| s.power_w);
    let slope = match (pstates.first(), pstates.last()) {
        (Some(lo), Some(hi)) if lo.mhz < hi.mhz && hi.mv > 0 => {
            let dv = 1.0 - f64::from(lo.mv) / f64::from(hi.mv);
            let df = 1.0 - lo.mhz as f64 / hi.mhz as f64;
            (dv / df).clamp(0.0, 0.99)
        }
        _ => 0.0,
    };
    EstimateParams {
        model,
        idle_w_per_core: idle,
        busy_static_w_per_core: (power.leak_w_per_v * v_max - idle).max(0.0),
        dynamic_max_w_per_core: power.ceff * v_max * v_max * f_max,
        uncore_w_per_package: power.uncore_w,
        voltage_slope: slope,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn fixed(choice: &str) -> EstimateParams {
        match load(choice).unwrap() {
            Choice::Fixed(p) => p,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_q6600_preset_gives_the_q6600_figures() {
        let p = fixed("q6600");
        let q = EstimateParams::q6600();
        for (a, b) in [
            (p.idle_w_per_core, q.idle_w_per_core),
            (p.busy_static_w_per_core, q.busy_static_w_per_core),
            (p.dynamic_max_w_per_core, q.dynamic_max_w_per_core),
            (p.uncore_w_per_package, q.uncore_w_per_package),
        ] {
            assert!((a - b).abs() / b < 0.01, "{a} vs {b}");
        }
        assert!((p.voltage_slope - q.voltage_slope).abs() < 0.01);
        assert!(p.model.contains("q6600"));
    }

    #[test]
    fn cpus_match_their_preset_and_no_other() {
        let m = |name: &str| matching_preset(name);
        assert_eq!(
            m("Intel(R) Core(TM)2 Quad CPU Q6600 @ 2.40GHz (1 package, 4 cores, 4 CPUs)"),
            Some("q6600")
        );
        assert_eq!(
            m("AMD EPYC 9654 96-Core Processor (2 packages, 192 cores, 384 CPUs)"),
            Some("epyc-9654-2s")
        );
        assert_eq!(m("Intel(R) Xeon(R) Platinum 8480+"), Some("xeon-8480-2s"));
        assert_eq!(
            m("13th Gen Intel(R) Core(TM) i9-13900K"),
            Some("core-i9-13900k")
        );
        assert_eq!(
            m("Intel(R) Core(TM) i7 CPU 940 @ 2.93GHz"),
            Some("core-i7-940")
        );
        assert_eq!(m("x arm:0x41:0xd0c:80"), Some("altra-q80-30"));
        // Near misses are not matches.
        assert_eq!(m("AMD EPYC 9654P 96-Core Processor"), None);
        assert_eq!(m("AMD EPYC 7B13 (1 package, 1 cores, 2 CPUs)"), None);
        assert_eq!(m("x arm:0x41:0xd0c:64"), None);
        assert_eq!(m("13th Gen Intel(R) Core(TM) i7-1370P"), None);
    }

    #[test]
    fn an_unmatched_cpu_gets_the_generic_model_never_the_q6600() {
        let topology = ecosched_testkit::machines::flat(2, &[1_000_000, 2_000_000]);
        let p = Choice::Auto.resolve("AMD EPYC 7B13 (1 package, 2 cores, 2 CPUs)", &topology);
        assert!(p.model.starts_with("generic"), "{}", p.model);
        assert_ne!(p, EstimateParams::q6600());
        let q = Choice::Auto.resolve("Intel(R) Core(TM)2 Quad CPU Q6600", &topology);
        assert!(q.model.contains("q6600"), "{}", q.model);
    }

    #[test]
    fn files_load_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("epyc.toml");
        std::fs::write(
            &good,
            "idle_w_per_core = 0.5\nbusy_static_w_per_core = 1.0\ndynamic_max_w_per_core = 3.0\nuncore_w_per_package = 60.0\nvoltage_slope = 0.3\n",
        )
        .unwrap();
        let p = fixed(good.to_str().unwrap());
        assert_eq!(p.uncore_w_per_package, 60.0);
        assert!(p.model.contains("epyc.toml"));
        let typo = dir.path().join("typo.toml");
        std::fs::write(&typo, "idle_w = 0.5\n").unwrap();
        let e = load(typo.to_str().unwrap()).unwrap_err();
        assert!(e.contains("typo.toml") && e.contains("idle_w"), "{e}");
        let negative = dir.path().join("neg.toml");
        std::fs::write(
            &negative,
            "idle_w_per_core = -1\nbusy_static_w_per_core = 1\ndynamic_max_w_per_core = 1\nuncore_w_per_package = 1\nvoltage_slope = 0.1\n",
        )
        .unwrap();
        assert!(load(negative.to_str().unwrap()).is_err());
        let e = load("xeon").unwrap_err();
        assert!(e.starts_with("xeon:") && e.contains("auto"), "{e}");
        // A machine file: its [power] gives the figures.
        let machine = dir.path().join("m.toml");
        let q6600 = ecosched_sim::scenario::PRESETS
            .iter()
            .find(|(n, _)| *n == "q6600")
            .unwrap()
            .1;
        std::fs::write(
            &machine,
            q6600.replace("uncore_w = 24.0", "uncore_w = 30.0"),
        )
        .unwrap();
        let p = fixed(machine.to_str().unwrap());
        assert_eq!(p.uncore_w_per_package, 30.0);
        assert!(p.model.contains("m.toml"), "{}", p.model);
    }
}
