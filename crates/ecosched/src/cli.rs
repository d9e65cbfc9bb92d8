//! The raw command line, as clap parses it. Nothing here is validated
//! beyond what clap checks itself (types, required flags); turning these
//! strings into checked values is `settings.rs`'s job.
//!
//! The subcommand and flag names are a contract other tools depend on:
//! add, never rename.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// ecosched: an energy-aware meta-scheduler, with a calibrated multicore
/// simulator to try policies on.
#[derive(Debug, Parser)]
#[command(
    name = "ecosched",
    version = ecosched_service::build_info::LONG_VERSION,
    about,
    long_about = None
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// More diagnostics on stderr: -v adds debug, -vv trace; not with
    /// -q. RUST_LOG, when set, decides instead.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Errors only on stderr. RUST_LOG, when set, decides instead.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Print tables at their full width: by default they fit 100 columns,
    /// headers and text wrapped and the rightmost columns left out if
    /// need be.
    #[arg(long, global = true)]
    pub wide: bool,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the built-in scenarios.
    Scenarios(ListArgs),
    /// List the policies by family: what each needs, its parameters and
    /// statistics.
    Policies(PoliciesArgs),
    /// Simulate one policy on one scenario.
    Sim(SimArgs),
    /// Simulate several policies on one scenario and compare them with a baseline.
    #[command(after_help = crate::glossary::COMPARE_COLUMNS)]
    Compare(CompareArgs),
    /// Check the simulator against the papers' published figures (exit 1 if any check fails).
    Validate(ValidateArgs),
    /// Run every policy on the workload suite of current machines (EPYC,
    /// Xeon, hybrid, Arm) against performance, schedutil and the oracle;
    /// exit 1 if a workload misses (the oracle saves more than any policy).
    Suite(SuiteArgs),
    /// Which policy and parameters to use for a workload on this machine
    /// (or a preset or machine file), with the expected saving and its
    /// spread over seeds, or why nothing beats running fast.
    Recommend(RecommendArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Run a command on this machine under a policy, managing it and every
    /// process it spawns; exits with the command's status.
    #[command(after_help = RUN_EXIT_STATUS)]
    Run(RunArgs),
    /// Run a command repeatedly under a baseline and a policy on this
    /// machine (ABBA order) and give the ratios of energy, time and EDP
    /// with 95 % intervals (see docs/operators/ab.md).
    Ab(AbArgs),
    /// Undo what an ecosched run killed with SIGKILL left behind (affinity,
    /// cpusets, cpufreq settings, stopped tasks).
    Restore(RestoreArgs),
    /// Show this machine's (or a recorded machine's) topology: packages,
    /// caches, cores, NUMA nodes, frequency domains, the allowed CPUs.
    Topology(TopologyArgs),
    /// What this machine (or a recorded one) offers ecosched: counters,
    /// power meters, cpufreq, resctrl, cgroups, other managers; what is
    /// missing, and whether each policy runs, runs degraded or is refused.
    Doctor(DoctorArgs),
    /// Measure a machine's calibration data (written as the `[calibration]`
    /// table of a preset or a `--calibration` file).
    #[command(subcommand)]
    Calibrate(CalibrateCommand),
    /// Simulate one policy at every value of one parameter and tabulate
    /// (and with --report plot) the figures against it.
    Sweep(SweepArgs),
    /// Run as a service managing groups of this machine's processes (see
    /// deploy/ecosched.toml); SIGHUP reloads, SIGTERM restores everything.
    Daemon(DaemonArgs),
    /// Talk to a running daemon through its control socket.
    Ctl(CtlArgs),
    /// The Slurm cluster side (see docs/operators/slurm.md).
    #[command(subcommand)]
    Slurm(SlurmCommand),
    /// Print a shell completion script for SHELL on stdout (the .deb
    /// installs bash's, zsh's and fish's).
    Completions(CompletionsArgs),
    /// Print the man page, ecosched(1), as roff on stdout
    /// (`ecosched man | man -l -`).
    Man,
}

/// `ecosched completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell the script is for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `ecosched suite`.
#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// Only these machines (short names epyc, xeon, i9, altra, or preset
    /// names); repeatable. Default: all four.
    #[arg(long, value_name = "NAME")]
    pub machine: Vec<String>,
    /// Only these workloads (batch, build, services-low, services-high,
    /// batch-services); repeatable. Default: all.
    #[arg(long, value_name = "NAME")]
    pub workload: Vec<String>,
    /// Print the rows as one JSON array.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the table as Markdown (what the README shows).
    #[arg(long)]
    pub markdown: bool,
}

/// `ecosched recommend`.
#[derive(Debug, Args)]
pub struct RecommendArgs {
    /// A machine preset or a machine file. Default: this host, as its
    /// preset when one describes its CPU, else a machine built from it as
    /// `topology --emit-machine` writes it.
    #[arg(long, value_name = "NAME|FILE.toml")]
    pub machine: Option<String>,
    /// Read this host from a recorded root (sys/, proc/) instead of `/`;
    /// without --machine only.
    #[arg(long, value_name = "DIR", conflicts_with = "machine")]
    pub root: Option<PathBuf>,
    /// A scenario (built-in name or file) whose workload to run on the machine.
    #[arg(long, value_name = "SCENARIO|FILE.toml", conflicts_with = "class")]
    pub workload: Option<String>,
    /// A class of work generated for the machine: build, batch (or
    /// batch-mixed), services:PCT (busy 1–99 %), services-low,
    /// services-high, batch-services.
    #[arg(long, value_name = "CLASS")]
    pub class: Option<String>,
    /// Seeds each candidate runs on (the scenario's and the next ones).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub seeds: u32,
    /// Print the answer and every candidate as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `ecosched sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// A built-in scenario's name, or a scenario TOML file.
    #[arg(long, value_name = "NAME|FILE.toml")]
    pub scenario: String,
    /// The policy to run (see `ecosched policies`).
    #[arg(long, value_name = "NAME")]
    pub policy: String,
    /// The swept parameter `KEY=A..B:STEP` (exactly one), or a fixed one
    /// `KEY=VALUE`; repeatable.
    #[arg(
        long = "param",
        value_name = "KEY=A..B:STEP|KEY=VALUE",
        required = true
    )]
    pub params: Vec<String>,
    /// Random seed (default: the scenario's).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// What the policy is shown: `linux` or `full` (simulator truth).
    #[arg(long, value_name = "linux|full", default_value = "linux")]
    pub observe: ecosched_sim::Observe,
    /// Write one self-contained HTML page plotting the figures against
    /// the parameter.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<std::path::PathBuf>,
    /// Print JSON: {"scenario", "policy", "key", "normalisation", "points"}.
    #[arg(long)]
    pub json: bool,
}

/// `ecosched calibrate …`.
#[derive(Debug, Subcommand)]
pub enum CalibrateCommand {
    /// Activity-vector peaks and translation vectors (Merkel et al. §4.1)
    /// for the `av` policies.
    Av(CalibrateAvArgs),
}

/// `ecosched calibrate av`.
#[derive(Debug, Args)]
pub struct CalibrateAvArgs {
    /// A simulated machine (preset name or file): run microbenchmarks at
    /// each of its P-states in the simulator. Without it: this machine,
    /// with built-in stream and compute kernels at each cpufreq P-state
    /// under perf's hardware counters (refused, changing nothing, where
    /// either is missing).
    #[arg(long, value_name = "PRESET|FILE.toml")]
    pub machine: Option<String>,
    /// Write the result to a calibration file (what `run --calibration`
    /// reads); an existing file keeps its other parts.
    #[arg(long, value_name = "FILE.toml")]
    pub output: Option<std::path::PathBuf>,
    /// This machine only: how long each kernel is counted at each P-state.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    pub run_ms: u64,
    /// This machine only: where the restore journal of the cpufreq
    /// changes is kept.
    #[arg(long, value_name = "DIR", default_value = ecosched_linux::journal::DEFAULT_STATE_DIR)]
    pub state_dir: std::path::PathBuf,
    /// Print JSON: {"machine", "measured_on", "activity", "measured"}.
    #[arg(long)]
    pub json: bool,
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
    /// Name of the cpuset cgroup ecosched creates its runs under; starts
    /// with `ecosched`.
    #[arg(long, value_name = "NAME", default_value = "ecosched")]
    pub cgroup_name: String,
    /// Stream the run to FILE, in the format `--trace-format` names.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// The `--trace` format: `perfetto` (Chrome trace-event JSON for
    /// ui.perfetto.dev: a track per CPU with a slice for every stretch a
    /// thread of the command ran there, from the kernel's context switches
    /// (perf; bounded, see docs/operators/run.md); frequency and power
    /// counters; decisions) or `jsonl` (JSON lines:
    /// the header and initial plan, then one control-loop step per line).
    /// Without it, a FILE name ending in `.json` gets `perfetto` and any
    /// other name `jsonl`.
    #[arg(long, value_name = "perfetto|jsonl", requires = "trace")]
    pub trace_format: Option<crate::trace_file::TraceFormat>,
    /// A calibration file (TOML, the `[calibration]` table of a machine
    /// preset: activity vectors, EDP factor, partition) for policies that
    /// need measured facts about this machine.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<std::path::PathBuf>,
    /// A run configuration file (TOML). Its `[events]` table names the
    /// event to count for a counter kind on this machine, replacing the
    /// built-in PMU tables' (`lines_in = "L2_LINES_IN:ALL"`, a libpfm4
    /// name, or `mem_transactions = "raw:0x412e"`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Print the summary as one JSON object on stdout. The command's own
    /// stdout then goes to ecosched's stderr, so that stdout holds the
    /// JSON alone.
    #[arg(long)]
    pub json: bool,
    /// Write the summary as one JSON object to FILE (the command's stdout
    /// stays on stdout); with `--json` too, both get it.
    #[arg(long, value_name = "FILE")]
    pub json_file: Option<std::path::PathBuf>,
    /// The power model the ESTIMATED figures use where no RAPL or hwmon
    /// meter measures power: `auto` (the built-in machine preset matching
    /// this CPU, else `generic`), `generic`, a preset name, a machine file
    /// (its `[power]` and `[frequency]`; see `ecosched topology
    /// --emit-machine`), or a TOML file of per-core watts (keys:
    /// idle_w_per_core, busy_static_w_per_core, dynamic_max_w_per_core,
    /// uncore_w_per_package, voltage_slope).
    #[arg(long, value_name = "MODEL", default_value = crate::power_model::AUTO)]
    pub power_model: String,
    /// Write one self-contained HTML report (inline SVG charts; no
    /// scripts, fonts or requests) to FILE.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<std::path::PathBuf>,
    /// Write one CSV row per control interval and CPU to FILE: time_s,
    /// cpu, mhz, utilisation, watts (whole machine), tasks.
    #[arg(long, value_name = "FILE.csv")]
    pub timeseries: Option<std::path::PathBuf>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `ab`'s baseline that leaves the machine as it is: the command runs
/// measured but unmanaged.
pub const UNMANAGED_BASELINE: &str = "none";

/// `ecosched ab`.
#[derive(Debug, Args)]
pub struct AbArgs {
    /// The policy under test (see `ecosched policies`).
    #[arg(long, value_name = "NAME")]
    pub policy: String,
    /// The reference: `none` (the machine as it is: the command runs
    /// measured but unmanaged) or any policy.
    #[arg(long, value_name = "NAME", default_value = UNMANAGED_BASELINE)]
    pub baseline: String,
    /// Pairs of runs (one under each), after one warm-up run.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub runs: usize,
    /// A policy parameter, `key=value` (or `policy:key=value`) for both
    /// arms; repeatable.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// The command's parallelism, as a hint to policies (as for `run`).
    #[arg(long, value_name = "N")]
    pub parallelism: Option<u32>,
    /// A run starts once the machine is at most this busy (% of all CPUs,
    /// over half a second).
    #[arg(long, value_name = "PERCENT", default_value_t = 10.0)]
    pub idle_below: f64,
    /// How long to wait for that, seconds; a run that starts on a busier
    /// machine is shown but not counted.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub idle_wait: f64,
    /// The bootstrap's seed: the same runs give the same intervals.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Read the power meters (`sys/class/powercap`, `sys/class/hwmon`)
    /// from a recorded tree under DIR instead of this machine, for tests
    /// and for replaying a recorded meter.
    #[arg(long, value_name = "DIR")]
    pub meter_root: Option<std::path::PathBuf>,
    /// Where each run's restore journal is kept.
    #[arg(long, value_name = "DIR", default_value = ecosched_linux::journal::DEFAULT_STATE_DIR)]
    pub state_dir: std::path::PathBuf,
    /// Name of the cpuset cgroup the runs are made under; starts with
    /// `ecosched`.
    #[arg(long, value_name = "NAME", default_value = "ecosched")]
    pub cgroup_name: String,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Write one self-contained HTML report (the runs, the ratios and a
    /// forest plot of their intervals) to FILE.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<std::path::PathBuf>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `run --help`'s list of exit statuses: the command's own pass through,
/// so ecosched's use the statuses a shell, `env` and `timeout` use.
const RUN_EXIT_STATUS: &str = "Exit status:
  the command's own    when it ran (128+N when signal N ended it)
  2                    bad input: arguments, a plan this machine cannot carry out (nothing was run)
  125                  ecosched itself failed (e.g. missing privileges, a state directory it cannot write)
  126                  the command was found but cannot be executed
  127                  the command was not found";

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
    /// Write a machine file (the simulator's TOML) for this host to FILE:
    /// what sysfs gives as read, the rest (voltages, power, memory
    /// bandwidth and latency) as placeholders marked `TO FILL IN` that
    /// load as written. An existing FILE is refused without --force.
    #[arg(long, value_name = "FILE.toml")]
    pub emit_machine: Option<std::path::PathBuf>,
    /// With --emit-machine: overwrite FILE if it exists.
    #[arg(long, requires = "emit_machine")]
    pub force: bool,
}

/// `ecosched doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// A recorded machine: a directory holding `sys/` and `proc/`.
    /// Default: this machine.
    #[arg(long, value_name = "DIR")]
    pub root: Option<std::path::PathBuf>,
    /// Print JSON (the shape is in docs/operators/doctor.md).
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
    /// The policy interval the shares of a core are for (the baseline
    /// policies' own is 1000).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub interval_ms: u64,
    /// Policies whose whole `ecosched run` is measured watching --tasks
    /// sleeping threads, each at its own interval: a row each (`static`
    /// confines to every online CPU). `none` measures no run.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "hilo,performance,static"
    )]
    pub policies: Vec<String>,
    /// Length of each policy's measured window, s (after 3 s to settle).
    #[arg(long, value_name = "S", default_value_t = 10)]
    pub seconds: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Be the process a measured run watches: this many sleeping threads.
    #[arg(long, value_name = "N", hide = true)]
    pub hold_threads: Option<usize>,
    /// How long --hold-threads sleeps, s.
    #[arg(long, value_name = "S", hide = true, default_value_t = 60)]
    pub hold_s: u64,
}

/// `ecosched policies`.
#[derive(Debug, Args)]
pub struct PoliciesArgs {
    /// Show only the family of this policy (or family) name.
    pub name: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the policy reference in Markdown (docs/policies.md).
    #[arg(long)]
    pub markdown: bool,
}

/// `ecosched scenarios`.
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
    /// Print a Markdown document instead of a table: what the labels and
    /// tolerance rules mean, then each paper's rows and the causes of its
    /// misses (docs/validation.md is this output).
    #[arg(long, conflicts_with_all = ["json", "perturb", "reseed"])]
    pub markdown: bool,
    /// Only this paper's rows (merkel, richling, pam, dhiman, patel);
    /// repeat for several. Every paper's without it.
    #[arg(long, value_name = "PAPER")]
    pub paper: Vec<ecosched_engine::validate::Paper>,
    /// Sensitivity: re-run every row with each calibrated parameter
    /// (machine, workload profile, build) moved by ±PCT % and report which
    /// rows flip (0 < PCT < 100; 34 validation runs, side by side on the
    /// CPUs this process may use).
    #[arg(long, value_name = "PCT")]
    pub perturb: Option<f64>,
    /// Seed robustness: re-run every row N more times, pass k with every
    /// run's seed moved by 1000·k, and report the rows whose verdict
    /// changes (1 ≤ N ≤ 20; one validation run per pass, side by side).
    #[arg(long, value_name = "N")]
    pub reseed: Option<u32>,
}

/// `ecosched sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// A built-in scenario's name, or a scenario TOML file.
    #[arg(long, value_name = "NAME|FILE.toml")]
    pub scenario: String,
    /// Run the scenario's workload on this machine instead of its own: a
    /// preset name or a machine file (e.g. one written by `ecosched
    /// topology --emit-machine`).
    #[arg(long, value_name = "NAME|FILE.toml")]
    pub machine: Option<String>,
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
    /// Stream the run to FILE, in the format `--trace-format` names.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// The `--trace` format: `perfetto` (Chrome trace-event JSON for
    /// ui.perfetto.dev: a track per CPU with a slice for every stretch a
    /// task ran there, taken from the simulator's exact schedule;
    /// frequency and power counters; decisions) or `jsonl` (JSON lines:
    /// the header and initial plan, then one control-loop step per line).
    /// Without it, a FILE name ending in `.json` gets `perfetto` and any
    /// other name `jsonl`.
    #[arg(long, value_name = "perfetto|jsonl", requires = "trace")]
    pub trace_format: Option<crate::trace_file::TraceFormat>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Write one self-contained HTML report (inline SVG charts; no
    /// scripts, fonts or requests) to FILE.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<std::path::PathBuf>,
    /// Write one CSV row per control interval and CPU to FILE: time_s,
    /// cpu, mhz, utilisation, watts (whole machine), tasks.
    #[arg(long, value_name = "FILE.csv")]
    pub timeseries: Option<std::path::PathBuf>,
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
    /// Write one self-contained HTML report (inline SVG charts; no
    /// scripts, fonts or requests) to FILE; with --seeds, the means with
    /// error bars from the smallest to the largest value over the seeds.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<std::path::PathBuf>,
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
    /// The oracle's exhaustive search time on a scenario.
    Oracle(BenchOracleArgs),
    /// Per-task energy attribution against the simulator's truth: CPU-time
    /// share and the activity model on mixed compute/memory scenarios.
    Attribution(BenchAttributionArgs),
}

/// `ecosched bench attribution`.
#[derive(Debug, Args)]
pub struct BenchAttributionArgs {
    /// Scenarios to check (default: the built-in mixed compute/memory set).
    #[arg(long, value_name = "NAME|FILE.toml")]
    pub scenario: Vec<String>,
    /// Print JSON: {"policy", "scenarios": [{"scenario", "machine",
    /// "tasks", "cpu_share_mae", "activity_mae", "report"}],
    /// "cpu_share_mae", "activity_mae", "ratio"}.
    #[arg(long)]
    pub json: bool,
}

/// `ecosched bench oracle`.
#[derive(Debug, Args)]
pub struct BenchOracleArgs {
    /// The scenario to search (at most 8 tasks on 8 CPUs).
    #[arg(
        long,
        value_name = "NAME|FILE.toml",
        default_value = "pam-libq-xalancbmk"
    )]
    pub scenario: String,
    /// What the search minimises: work_energy, energy, edp or makespan.
    #[arg(long, value_name = "NAME", default_value = "work_energy")]
    pub objective: String,
    /// Print JSON: {"scenario", "objective", "raw_configurations",
    /// "evaluated", "search_s", "per_candidate_ms", "choice", "score"}.
    #[arg(long)]
    pub json: bool,
}

/// `ecosched bench sim`.
#[derive(Debug, Args)]
pub struct BenchSimArgs {
    /// The scenario to time: bench-8c24t (8 cores, 24 tasks),
    /// bench-64c512t (64 cores, 512 tasks) or bench-192c1000t (2 x EPYC
    /// 9654: 384 CPUs, 1,000 tasks), or any scenario name or file.
    #[arg(long, value_name = "NAME|FILE.toml", default_value = "bench-8c24t")]
    pub scenario: String,
    /// Print JSON: {"scenario", "simulated_s", "wall_s", "realtime_factor",
    /// "tick_ms", "events", "solves", "memo_hit_rate", "cold_starts"}.
    #[arg(long)]
    pub json: bool,
}

/// `ecosched bench pam`.
#[derive(Debug, Args)]
pub struct BenchPamArgs {
    /// CPUs of the synthetic machine (two-CPU shared caches, all busy).
    #[arg(long, value_name = "N")]
    pub cpus: usize,
    /// The decision budget, ms of modelled time (PAM's `search_budget_ms`;
    /// default: its default). A large one times the complete search.
    #[arg(long, value_name = "MS")]
    pub budget_ms: Option<f64>,
    /// Print JSON: {"cpus", "search", "budget_ms", "decision_ms",
    /// "modelled_ms", "stopped_early", "speedup"}.
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

/// `ecosched daemon`.
#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// The configuration file (see deploy/ecosched.toml).
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/etc/ecosched/ecosched.toml"
    )]
    pub config: PathBuf,
    /// Check FILE as the daemon would at start or reload (syntax, keys,
    /// `[events]`, every group's policy on this machine), print what it
    /// would run and exit: 0 when it would be taken, 2 with the file,
    /// line and key at fault when not.
    #[arg(long, value_name = "FILE", conflicts_with = "config")]
    pub check_config: Option<PathBuf>,
}

/// `ecosched ctl`.
#[derive(Debug, Args)]
pub struct CtlArgs {
    /// The daemon's control socket.
    #[arg(long, value_name = "PATH", default_value = ecosched_service::config::DEFAULT_SOCKET)]
    pub socket: PathBuf,
    /// What to ask.
    #[command(subcommand)]
    pub command: CtlCommand,
}

/// The control requests.
#[derive(Debug, Subcommand)]
pub enum CtlCommand {
    /// The daemon's state (JSON).
    Status,
    /// Have the daemon read its configuration file again and say whether
    /// it took it: exit 0 when applied, 1 with the reason when refused
    /// (the running configuration stays). The unit's `ExecReload=`.
    Reload,
    /// Every group, its source, policy and state (JSON).
    Groups,
    /// Run GROUP with POLICY from now on (until it vanishes).
    SetPolicy {
        /// The group.
        group: String,
        /// The policy (see `ecosched policies`).
        policy: String,
        /// A policy parameter, `key=value`; repeatable.
        #[arg(long = "param", value_name = "KEY=VALUE")]
        params: Vec<String>,
    },
    /// Stop managing GROUP, undoing its changes, until `resume`.
    Pause {
        /// The group.
        group: String,
    },
    /// Manage a paused GROUP again.
    Resume {
        /// The group.
        group: String,
    },
    /// Manage job ID's cgroup as group `job-ID` (a Slurm Prolog).
    JobStart {
        /// The job id.
        id: String,
        /// The job's cgroup directory.
        cgroup: String,
        /// The policy for the job.
        #[arg(long, value_name = "NAME")]
        policy: String,
        /// A policy parameter, `key=value`; repeatable.
        #[arg(long = "param", value_name = "KEY=VALUE")]
        params: Vec<String>,
    },
    /// Stop managing job ID, undoing its changes, and print its totals
    /// (a Slurm Epilog).
    JobEnd {
        /// The job id.
        id: String,
        /// Print only the one-line summary (energy with its source, CPU
        /// and wall seconds, policy), as Slurm's AdminComment carries it.
        #[arg(long)]
        summary: bool,
    },
    /// The records of ended runs, groups and jobs, newest first.
    History(HistoryArgs),
}

/// `ecosched ctl history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Only the records of this group (`job-ID` for a Slurm job) or run
    /// command.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// At most this many records.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,
    /// Read the store in DIR (`DIR/history.sqlite`) instead of asking the
    /// daemon: works without a daemon, e.g. for `ecosched run` records.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Print the records as JSON.
    #[arg(long)]
    pub json: bool,
}

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
