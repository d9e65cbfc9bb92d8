//! `run --power-model`: which figures the ESTIMATED power model uses where
//! no RAPL or hwmon meter measures power. The built-in `q6600` (Merkel et
//! al. §3, the default) is one desktop CPU of 2007; on any other CPU the
//! user can give their own per-core figures — measured once with a wall
//! meter, or from the vendor's datasheet — as a TOML file, so the estimate
//! says whose numbers it is and can be calibrated to the machine.
//!
//! ```toml
//! idle_w_per_core = 1.5          # a core in its deepest common idle state
//! busy_static_w_per_core = 2.5   # leakage a busy core adds at maximum voltage
//! dynamic_max_w_per_core = 8.5   # a fully busy core at maximum f and V
//! uncore_w_per_package = 24.0    # caches, memory controller, interconnect
//! voltage_slope = 0.27           # V/Vmax = 1 - k(1 - f/fmax) without voltages
//! ```

use crate::outcome::UsageError;
use anyhow::Result;
use ecosched_linux::power::estimate::EstimateParams;
use serde::Deserialize;
use std::path::Path;

/// The built-in model's name.
pub const BUILT_IN: &str = "q6600";

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

/// The model `choice` names (`q6600` or a TOML file) and how to call it in
/// the summary.
pub fn load(choice: &str) -> Result<(EstimateParams, String)> {
    if choice == BUILT_IN {
        return Ok((
            EstimateParams::default(),
            "q6600 (built-in: Intel Core 2 Quad Q6600 figures, Merkel et al. §3)".into(),
        ));
    }
    let path = Path::new(choice);
    let text = std::fs::read_to_string(path).map_err(|e| {
        UsageError(format!(
            "--power-model {choice}: neither the built-in model `{BUILT_IN}` nor a readable file ({e}); give `{BUILT_IN}` or a TOML file of per-core watts"
        ))
    })?;
    let m: ModelFile = ecosched_sim::scenario::parse_toml(&path.display().to_string(), &text)
        .map_err(|e| UsageError(format!("--power-model: power model file {e}")))?;
    let params = EstimateParams {
        idle_w_per_core: m.idle_w_per_core,
        busy_static_w_per_core: m.busy_static_w_per_core,
        dynamic_max_w_per_core: m.dynamic_max_w_per_core,
        uncore_w_per_package: m.uncore_w_per_package,
        voltage_slope: m.voltage_slope,
    };
    if !params.is_valid() {
        return Err(UsageError(format!(
            "--power-model {choice}: every figure must be a finite number of watts ≥ 0 and voltage_slope in [0, 1)"
        ))
        .into());
    }
    Ok((params, format!("{} (from the file)", path.display())))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_built_in_model_and_a_file_load_and_bad_files_are_named() {
        let (p, name) = load("q6600").unwrap();
        assert_eq!(p, EstimateParams::default());
        assert!(name.contains("Q6600"));
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("epyc.toml");
        std::fs::write(
            &good,
            "idle_w_per_core = 0.5\nbusy_static_w_per_core = 1.0\ndynamic_max_w_per_core = 3.0\nuncore_w_per_package = 60.0\nvoltage_slope = 0.3\n",
        )
        .unwrap();
        let (p, name) = load(good.to_str().unwrap()).unwrap();
        assert_eq!(p.uncore_w_per_package, 60.0);
        assert!(name.contains("epyc.toml"));
        let typo = dir.path().join("typo.toml");
        std::fs::write(&typo, "idle_w = 0.5\n").unwrap();
        let e = load(typo.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("typo.toml") && e.contains("idle_w"), "{e}");
        let negative = dir.path().join("neg.toml");
        std::fs::write(
            &negative,
            "idle_w_per_core = -1\nbusy_static_w_per_core = 1\ndynamic_max_w_per_core = 1\nuncore_w_per_package = 1\nvoltage_slope = 0.1\n",
        )
        .unwrap();
        assert!(load(negative.to_str().unwrap()).is_err());
        let e = load("xeon").unwrap_err().to_string();
        assert!(
            e.contains("--power-model xeon") && e.contains("q6600"),
            "{e}"
        );
    }
}
