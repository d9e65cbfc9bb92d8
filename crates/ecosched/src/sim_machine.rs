//! `sim --machine NAME|FILE`: a scenario's workload on another machine —
//! a preset, or a machine file such as one `ecosched topology
//! --emit-machine` wrote for the host. The scenario's `machine` key is
//! replaced and the scenario checked again whole, so a workload that does
//! not fit the machine (CPUs it pins that are not there) is refused as it
//! would be in a file.

use crate::outcome::UsageError;
use anyhow::{Context, Result};
use ecosched_sim::scenario::{preset, Scenario, SCENARIOS};
use std::path::{Path, PathBuf};

/// `scenario` (a built-in name or a file) on `machine` (a preset name or a
/// machine file).
pub fn scenario_on(scenario: &str, machine: &str) -> Result<Scenario> {
    let (origin, text, dir) = match SCENARIOS.iter().find(|(n, _)| *n == scenario) {
        Some((name, text)) => (format!("built-in scenario {name}"), text.to_string(), None),
        None => {
            let path = Path::new(scenario);
            let text = ecosched_model::user_file::read_text(
                path,
                ecosched_model::user_file::TEXT_MAX_BYTES,
            )
            .with_context(|| format!("cannot load scenario {scenario:?}"))?;
            (
                scenario.to_string(),
                text,
                path.parent().map(Path::to_path_buf),
            )
        }
    };
    let mut table: toml::Table = text
        .parse()
        .with_context(|| format!("cannot load scenario {scenario:?}"))?;
    if table.contains_key("nodes") {
        return Err(UsageError(format!(
            "--machine: {scenario} is a cluster scenario; --machine is for one-machine scenarios"
        ))
        .into());
    }
    let value = if preset(machine).is_some() {
        machine.to_string()
    } else {
        let path = PathBuf::from(machine);
        if !path.is_file() {
            return Err(UsageError(format!(
                "--machine {machine}: neither a built-in machine preset nor a file"
            ))
            .into());
        }
        std::path::absolute(&path)
            .with_context(|| format!("--machine {machine}"))?
            .display()
            .to_string()
    };
    table.insert("machine".into(), toml::Value::String(value));
    let text = toml::to_string(&table).with_context(|| format!("--machine {machine}"))?;
    let origin = format!("{origin} on machine {machine}");
    Scenario::from_toml(&origin, &text, dir.as_deref())
        .with_context(|| format!("cannot load scenario {scenario:?} on machine {machine:?}"))
}
