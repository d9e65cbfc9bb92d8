//! `ecosched run`'s record in the history store
//! (`<--state-dir>/history.sqlite`, the daemon's when both use the same
//! state directory): the run's totals outlive it, and `ecosched ctl
//! history` lists them beside the daemon's groups and jobs. Keeping the
//! record is a courtesy: a missing state directory or a store that cannot
//! be written costs a warning, never the run.

use crate::run_summary::RunSummary;
use ecosched_model::PowerSource;
use ecosched_service::history::{self, Energy, History, Record};
use std::path::Path;

/// Write the record of the run summarised by `summary` to the store in
/// `state_dir`, when that directory exists; warn when it cannot be kept.
pub fn keep(summary: &RunSummary, state_dir: &Path) {
    if !state_dir.is_dir() {
        return;
    }
    let record = of(summary);
    if let Err(e) = History::open(state_dir).and_then(|mut h| h.add(&record)) {
        tracing::warn!("the run's record was not kept: {e}");
    }
}

/// The record of a run.
fn of(summary: &RunSummary) -> Record {
    let r = &summary.report;
    let ended_s = history::now_s();
    let energy = r.energy_j.map(|whole| {
        let source = match r.energy_source {
            Some(PowerSource::Estimated) | None => "estimate",
            Some(PowerSource::Measured) if r.power_description.contains("RAPL") => "rapl",
            Some(PowerSource::Measured) => "hwmon",
        };
        let (joules, attribution) = match summary.energy_attributed_j {
            Some(j) => (j, "the run's share of the machine's busy CPU time"),
            None => (whole, "the whole machine over the run"),
        };
        Energy {
            joules,
            source: source.into(),
            meter: summary
                .power_model
                .clone()
                .unwrap_or_else(|| r.power_description.clone()),
            attribution: attribution.into(),
        }
    });
    Record {
        kind: "run".into(),
        name: r.command.join(" "),
        started_s: ended_s.saturating_sub(r.wall_s as u64),
        ended_s,
        wall_s: r.wall_s,
        cpu_s: r.cpu_s.unwrap_or(0.0),
        cpu_source: summary.cpu_source.clone(),
        energy,
        policy: r.policy.clone(),
        decisions: None,
        stats: serde_json::to_value(&r.policy_stats).unwrap_or_default(),
        ended_by: match (r.exit_code, r.exit_signal) {
            (Some(c), _) => format!("exited {c}"),
            (None, Some(s)) => format!("signal {s}"),
            (None, None) => "ended".into(),
        },
    }
}
