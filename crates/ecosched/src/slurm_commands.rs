//! `ecosched slurm advise`: wiring only; the advisor is `ecosched-slurm`'s.

use crate::commands::Outcome;
use crate::settings::UsageError;
use anyhow::Result;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

/// `ecosched slurm …`.
#[derive(Debug, Subcommand)]
pub enum SlurmCommand {
    /// The cluster-side loop: classify running jobs, set node features and
    /// weights with scontrol (re-applied every pass), remember classes in
    /// SQLite for job_submit.lua. Idempotent; runs until SIGTERM.
    Advise(AdviseArgs),
}

/// `ecosched slurm advise`.
#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// Where the SQLite store, classes.tsv and advise-status.json live.
    #[arg(long, value_name = "DIR", default_value = "/var/lib/ecosched/slurm")]
    pub state_dir: PathBuf,
    /// A node to advise and its ecosched exporter, `NAME=ADDRESS:PORT`;
    /// repeatable.
    #[arg(long = "node", value_name = "NAME=ADDR", required = true)]
    pub nodes: Vec<String>,
    /// Time between passes, in ms (the paper publishes vectors every 15 s).
    #[arg(long, value_name = "MS", default_value_t = 15_000)]
    pub interval_ms: u64,
    /// The memory system's peak LLC-miss rate, misses/s over the machine
    /// (`peak_mem_per_s` from `ecosched calibrate av`). With it, jobs on
    /// nodes that count LLC misses are classed by their measured
    /// memory-bus component; without it only declared and remembered
    /// classes are used.
    #[arg(long, value_name = "PER_S")]
    pub peak_llc_misses_per_s: Option<f64>,
    /// The memory-bus component from which a job counts as memory-bound.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.3)]
    pub mem_threshold: f64,
    /// One pass, printed as JSON, then exit.
    #[arg(long)]
    pub once: bool,
}

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
