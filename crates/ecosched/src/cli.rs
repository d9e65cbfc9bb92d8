//! The raw command line, as clap parses it. Nothing here is validated
//! beyond what clap checks itself (types, required flags); turning these
//! strings into checked values is `settings.rs`'s job.
//!
//! The subcommand and flag names are a contract other tools depend on:
//! add, never rename.

use clap::{Args, Parser, Subcommand};

/// ecosched: an energy-aware meta-scheduler, with a calibrated multicore
/// simulator to try policies on.
#[derive(Debug, Parser)]
#[command(name = "ecosched", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the built-in scenarios.
    Scenarios(ListArgs),
    /// List the policies and their parameters.
    Policies(ListArgs),
    /// Simulate one policy on one scenario.
    Sim(SimArgs),
    /// Simulate several policies on one scenario and compare them with a baseline.
    Compare(CompareArgs),
    /// Check the simulator against the papers' published figures (exit 1 if any check fails).
    Validate(ValidateArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Run a command on this machine under a policy, managing it and every
    /// process it spawns; exits with the command's status.
    Run(RunArgs),
    /// Undo what an ecosched run killed with SIGKILL left behind (affinity,
    /// cpusets, cpufreq settings, stopped tasks).
    Restore(RestoreArgs),
    /// Show this machine's (or a recorded machine's) topology: packages,
    /// caches, cores, NUMA nodes, frequency domains, the allowed CPUs.
    Topology(TopologyArgs),
}

/// `ecosched run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The policy to run (see `ecosched policies`).
    #[arg(long, value_name = "NAME")]
    pub policy: String,
    /// Control interval in milliseconds (default: the policy's own).
    #[arg(long, value_name = "MS")]
    pub interval_ms: Option<u64>,
    /// A policy parameter, `key=value` (or `policy:key=value`); repeatable.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// The command's parallelism (number of busy threads), as a hint to
    /// policies; the command may update it through the file named in
    /// $ECOSCHED_HINT_FILE.
    #[arg(long, value_name = "N")]
    pub parallelism: Option<u32>,
    /// Where the restore journal is kept.
    #[arg(long, value_name = "DIR", default_value = ecosched_linux::journal::DEFAULT_STATE_DIR)]
    pub state_dir: std::path::PathBuf,
    /// Name of the cpuset cgroup ecosched creates its runs under.
    #[arg(long, value_name = "NAME", default_value = "ecosched")]
    pub cgroup_name: String,
    /// Stream every control-loop step to FILE as JSON lines (first line:
    /// the header and initial plan; then one step per line).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// A calibration file (TOML, the `[calibration]` table of a machine
    /// preset: activity vectors, EDP factor, partition) for policies that
    /// need measured facts about this machine.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<std::path::PathBuf>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `ecosched topology`.
#[derive(Debug, Args)]
pub struct TopologyArgs {
    /// A recorded machine: a directory holding `sys/` and `proc/` (as
    /// hwloc-gather-topology makes). Default: this machine.
    #[arg(long, value_name = "DIR")]
    pub root: Option<std::path::PathBuf>,
    /// Print JSON (CPU sets as Linux cpulists).
    #[arg(long)]
    pub json: bool,
}

/// `ecosched restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// Where the restore journals are kept.
    #[arg(long, value_name = "DIR", default_value = ecosched_linux::journal::DEFAULT_STATE_DIR)]
    pub state_dir: std::path::PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `ecosched bench observe`.
#[derive(Debug, Args)]
pub struct ObserveBenchArgs {
    /// Number of threads to observe.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub tasks: usize,
    /// Observations to average over.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub rounds: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of the listing commands.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `ecosched validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// What the policy is shown: `linux`, what a Linux machine could read
    /// (perf's events of the machine's PMU, multiplexed; procfs), or `full`,
    /// simulator truth (labelled; never evidence of a gain).
    #[arg(long, value_name = "linux|full", default_value = "linux")]
    pub observe: ecosched_sim::Observe,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `ecosched sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// A built-in scenario's name, or a scenario TOML file.
    #[arg(long, value_name = "NAME|FILE.toml")]
    pub scenario: String,
    /// The policy to run (see `ecosched policies`).
    #[arg(long, value_name = "NAME")]
    pub policy: String,
    /// A policy parameter, `key=value` (or `policy:key=value`); repeatable.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Random seed (default: the scenario's).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// What the policy is shown: `linux`, what a Linux machine could read
    /// (perf's events of the machine's PMU, multiplexed; procfs), or `full`,
    /// simulator truth (labelled; never evidence of a gain).
    #[arg(long, value_name = "linux|full", default_value = "linux")]
    pub observe: ecosched_sim::Observe,
    /// Stream every control-loop step to FILE as JSON lines (first line:
    /// the header and initial plan; then one step per line).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `ecosched compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// A built-in scenario's name, or a scenario TOML file.
    #[arg(long, value_name = "NAME|FILE.toml")]
    pub scenario: String,
    /// The policies to run, comma-separated (see `ecosched policies`).
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', required = true)]
    pub policies: Vec<String>,
    /// The policy the others are compared with (default: the first).
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// A parameter: `key=value` goes to every policy that takes `key`;
    /// `policy:key=value` to that policy only. Repeatable.
    #[arg(long = "param", value_name = "[POLICY:]KEY=VALUE")]
    pub params: Vec<String>,
    /// Random seed (default: the scenario's).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// What the policy is shown: `linux`, what a Linux machine could read
    /// (perf's events of the machine's PMU, multiplexed; procfs), or `full`,
    /// simulator truth (labelled; never evidence of a gain).
    #[arg(long, value_name = "linux|full", default_value = "linux")]
    pub observe: ecosched_sim::Observe,
    /// Print the comparison as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Repeat the comparison over N seeds (the scenario's or --seed's, then
    /// the next N − 1) and report each policy's mean and standard deviation,
    /// with the run-time standard deviation across seeds (Dhiman Table 2).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub seeds: Option<u32>,
}

/// `ecosched bench …`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Simulator speed: simulated seconds per wall second on a benchmark scenario.
    Sim(BenchSimArgs),
    /// The cost of observing N live threads once (procfs + perf software counters).
    Observe(ObserveBenchArgs),
    /// PAM's decision time (one Algorithm 2 call) on a synthetic machine.
    Pam(BenchPamArgs),
}

/// `ecosched bench sim`.
#[derive(Debug, Args)]
pub struct BenchSimArgs {
    /// The scenario to time: bench-8c24t (8 cores, 24 tasks) or
    /// bench-64c512t (64 cores, 512 tasks), or any scenario name or file.
    #[arg(long, value_name = "NAME|FILE.toml", default_value = "bench-8c24t")]
    pub scenario: String,
    /// Print JSON: {"scenario", "simulated_s", "wall_s", "realtime_factor",
    /// "tick_ms", "events", "solves", "memo_hit_rate"}.
    #[arg(long)]
    pub json: bool,
}

/// `ecosched bench pam`.
#[derive(Debug, Args)]
pub struct BenchPamArgs {
    /// CPUs of the synthetic machine (two-CPU shared caches, all busy).
    #[arg(long, value_name = "N")]
    pub cpus: usize,
    /// Print JSON: {"cpus", "search", "decision_ms"}.
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn policies_split_on_commas() {
        let cli = Cli::try_parse_from([
            "ecosched",
            "compare",
            "--scenario",
            "s",
            "--policies",
            "a,b",
            "--policies",
            "c",
        ])
        .unwrap();
        let Command::Compare(args) = cli.command else {
            panic!("not compare")
        };
        assert_eq!(args.policies, ["a", "b", "c"]);
    }
}
