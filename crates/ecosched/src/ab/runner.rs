//! One run of the command under one policy, made the way `ecosched run`
//! makes it (the same checks, cgroups, journal and restore), with its
//! energy read around it.
//!
//! The command's standard output goes to `ab`'s standard error while it
//! runs, so that `ab`'s own output (its table, or `--json`) stays clean.
//! The command sees which arm it runs in through `ECOSCHED_AB_ARM`
//! (`warm-up`, `baseline`, `policy`), its place in the sequence through
//! `ECOSCHED_AB_RUN` and its pair through `ECOSCHED_AB_PAIR` (both 0 for
//! the warm-up): a test can make each arm's work, or energy, known.

use super::meter::{MeterInfo, RunEnergy};
use super::schedule::Settle;
use crate::cli::{AbArgs, RunArgs, UNMANAGED_BASELINE};
use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;

/// The variable naming the arm a run belongs to.
pub const ARM_ENV: &str = "ECOSCHED_AB_ARM";
/// The variable holding the run's place in the sequence.
pub const RUN_ENV: &str = "ECOSCHED_AB_RUN";
/// The variable holding the run's pair (from 1; 0 for the warm-up).
pub const PAIR_ENV: &str = "ECOSCHED_AB_PAIR";

/// What one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct RunRecord {
    /// Place in the sequence: 0 the warm-up, then 1, 2, …
    pub run: usize,
    /// `warm-up`, `baseline` or `policy`.
    pub arm: &'static str,
    /// The pair it belongs to (`None` for the warm-up).
    pub pair: Option<usize>,
    /// The policy it ran under.
    pub policy: String,
    /// The command's exit status, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub exit_signal: Option<i32>,
    /// Wall time of the command, seconds.
    pub wall_s: f64,
    /// CPU time of the command and every process it started, seconds.
    pub cpu_s: Option<f64>,
    /// Energy from a measured meter (all `None` without one).
    #[serde(flatten)]
    pub energy: RunEnergy,
    /// The machine's state before the run.
    pub before: Settle,
    /// Why the run is left out of the ratios (`None`: it counts).
    pub excluded: Option<String>,
}

impl RunRecord {
    /// Energy × time, J·s, when the energy is measured.
    pub fn edp(&self) -> Option<f64> {
        self.energy.energy_j.map(|j| j * self.wall_s)
    }

    /// The exit status in words: `0`, `2`, `signal 9`.
    pub fn status(&self) -> String {
        match (self.exit_code, self.exit_signal) {
            (Some(c), _) => c.to_string(),
            (None, Some(s)) => format!("signal {s}"),
            (None, None) => "-".into(),
        }
    }
}

/// Where a run sits in the sequence.
pub struct Slot<'a> {
    /// Place in the sequence (0: the warm-up).
    pub run: usize,
    /// `warm-up`, `baseline` or `policy`.
    pub arm: &'static str,
    /// Its pair, if it is counted.
    pub pair: Option<usize>,
    /// The policy to run under.
    pub policy: &'a str,
}

/// The policy and parameters a run is made with. The unmanaged baseline
/// (`none`) is `static` over every CPU `ab` itself may use, with none of
/// the user's parameters: its tasks keep the affinity they would have
/// had, and no frequency, cpuset or freezer setting is touched.
fn policy_and_params(policy: &str, params: &[String]) -> Result<(String, Vec<String>)> {
    if policy != UNMANAGED_BASELINE {
        return Ok((policy.to_string(), params.to_vec()));
    }
    let allowed = ecosched_linux::affinity::get(std::process::id())
        .context("reading the CPUs this process may use")?;
    Ok(("static".to_string(), vec![format!("cpus={allowed}")]))
}

/// Make one run; an error is ecosched's own failure (the command was not
/// found, the policy cannot run here), after which nothing more is run.
pub fn run_once(
    args: &AbArgs,
    slot: &Slot<'_>,
    meter: &MeterInfo,
    before: Settle,
) -> Result<RunRecord> {
    let (policy, params) = policy_and_params(slot.policy, &args.params)?;
    let run_args = RunArgs {
        policy,
        interval_ms: None,
        params,
        parallelism: args.parallelism,
        state_dir: args.state_dir.clone(),
        cgroup_name: args.cgroup_name.clone(),
        trace: None,
        trace_format: None,
        calibration: None,
        config: None,
        json: true,
        json_file: None,
        power_model: crate::power_model::AUTO.to_string(),
        report: None,
        timeseries: None,
        command: args.command.clone(),
    };
    std::env::set_var(ARM_ENV, slot.arm);
    std::env::set_var(RUN_ENV, slot.run.to_string());
    std::env::set_var(PAIR_ENV, slot.pair.unwrap_or(0).to_string());
    let (outcome, energy) = meter.measure(|| {
        let _stdout = StdoutToStderr::new()?;
        crate::linux_commands::run(&run_args)
    })?;
    let outcome = outcome
        .with_context(|| format!("run {} ({}, policy {})", slot.run, slot.arm, slot.policy))?;
    let summary: Value =
        serde_json::from_str(&outcome.stdout).context("reading the run's summary")?;
    let int = |key: &str| summary[key].as_i64().and_then(|v| i32::try_from(v).ok());
    Ok(RunRecord {
        run: slot.run,
        arm: slot.arm,
        pair: slot.pair,
        policy: slot.policy.to_string(),
        exit_code: int("exit_code"),
        exit_signal: int("exit_signal"),
        wall_s: summary["wall_s"]
            .as_f64()
            .context("the run's summary has no wall_s")?,
        cpu_s: summary["cpu_s"].as_f64(),
        energy,
        before,
        excluded: None,
    })
}

/// Sends this process's standard output to its standard error until
/// dropped, so that a command's output does not mix with `ab`'s.
struct StdoutToStderr {
    saved: std::os::fd::OwnedFd,
}

impl StdoutToStderr {
    fn new() -> Result<StdoutToStderr> {
        use std::io::Write;
        std::io::stdout().flush().context("flushing stdout")?;
        let saved = nix::unistd::dup(std::io::stdout()).context("duplicating stdout")?;
        nix::unistd::dup2_stdout(std::io::stderr()).context("sending stdout to stderr")?;
        Ok(StdoutToStderr { saved })
    }
}

impl Drop for StdoutToStderr {
    fn drop(&mut self) {
        if let Err(e) = nix::unistd::dup2_stdout(&self.saved) {
            tracing::error!("cannot give stdout back after a run: {e}");
        }
    }
}
