//! `ecosched slurm advise`: wiring only; the advisor is `ecosched-slurm`'s.

use crate::cli::{AdviseArgs, SlurmCommand};
use crate::outcome::Outcome;
use crate::outcome::UsageError;
use anyhow::Result;
use std::time::Duration;

/// Run `ecosched slurm …`.
pub fn slurm(command: &SlurmCommand) -> Result<Outcome> {
    match command {
        SlurmCommand::Advise(args) => advise(args),
    }
}

fn advise(args: &AdviseArgs) -> Result<Outcome> {
    if args.interval_ms == 0 {
        return Err(UsageError("--interval-ms must be at least 1".into()).into());
    }
    if !(0.0..=1.0).contains(&args.mem_threshold) {
        return Err(UsageError("--mem-threshold must be within 0..=1".into()).into());
    }
    if args
        .peak_llc_misses_per_s
        .is_some_and(|p| !p.is_finite() || p <= 0.0)
    {
        return Err(UsageError("--peak-llc-misses-per-s must be positive".into()).into());
    }
    let nodes = args
        .nodes
        .iter()
        .map(|n| match n.split_once('=') {
            Some((name, addr)) if !name.is_empty() && !addr.is_empty() => {
                Ok((name.to_string(), addr.to_string()))
            }
            _ => Err(UsageError(format!(
                "--node {n:?}: expected NAME=ADDRESS:PORT"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let classify = ecosched_slurm::advisor::Classify {
        peak_llc_misses_per_s: args.peak_llc_misses_per_s,
        mem_threshold: args.mem_threshold,
    };
    let report = ecosched_slurm::advisor::run(
        &args.state_dir,
        nodes,
        classify,
        Duration::from_millis(args.interval_ms),
        args.once,
    )
    .map_err(anyhow::Error::msg)?;
    Ok(Outcome::ok(if args.once {
        format!("{}\n", serde_json::to_string_pretty(&report)?)
    } else {
        String::new()
    }))
}
