//! The live tier: `ecosched` on this machine for real, with root, cgroups
//! (cpusets, the freezer, accounting), real processes and the tools CI
//! installs (stress-ng, make and a C compiler, python3, chromium,
//! Prometheus). Every test is `#[ignore = "live: <what it needs>"]`; run
//! them as root with `cargo test --release -p ecosched -- --ignored
//! live::`.
//!
//! - [`run`]: `run` and `restore` confine, report, and put everything
//!   back, after a SIGKILL too; calibration files;
//! - [`run_contract`]: what a run checks first, where its command starts,
//!   signals, CPU time, exit statuses and messages;
//! - [`run_limits`]: the open-file limit, dead runs' journals, state
//!   directories others could write;
//! - [`run_memory`]: `run` stays within bounded memory with more threads
//!   than the open-file limit lets it observe;
//! - [`run_signals`]: every terminating signal to `run` is undone, and a
//!   `SIGTERM` reaches a forking run all at once;
//! - [`run_exports`]: report, time series and trace of a real run, the
//!   context switches of `make -j2` in its Perfetto trace, `--json` and
//!   `--json-file` kept apart from the command's output, and a time
//!   series with odd task names read back by pandas;
//! - [`counters`]: what needs hardware counters or cpufreq, refused here
//!   or run behind the fake PMU;
//! - [`patel`]: Patel's schedulers refused here, and `patel2` moving real
//!   processes between cpusets;
//! - [`av_sort`]: av-sort's gang groups in the cgroup freezer, and
//!   `restore` after a SIGKILL;
//! - [`daemon`]: `daemon` and `ctl` with systemd's notify protocol, and a
//!   real Prometheus scraping the exporter;
//! - [`daemon_scope`]: the daemon's scope, refused changes and signals;
//! - [`metrics_flood`]: the daemon's exporter and control socket under
//!   a flood from an unprivileged user, and a huge control line;
//! - [`daemon_logs`]: the daemon's log lines with journald's priorities
//!   under `JOURNAL_STREAM`, plain elsewhere; `-q` and `RUST_LOG`;
//! - [`daemon_records`]: groups' CPU time of fork-heavy work against the
//!   kernel's count, `job-end` totals and `ctl history`;
//! - [`report_browser`]: the HTML reports in headless Chromium;
//! - [`emit_machine`]: this machine's machine file loads and simulates;
//! - [`ab`]: `ab` on a real build, energy ratios from a recorded meter
//!   whose counters the runs drive, and its report in the browser.
//! - [`recommend`]: `recommend` for this host, its preset or its emitted
//!   machine.
//! - [`doctor`]: `doctor`'s verdict for every policy matches what `run`
//!   does with it here.
//! - [`chaos`]: `run` and the daemon SIGKILLed at random moments under
//!   every policy that runs here, then `restore` puts everything back.
//! - [`slurm_hooks`]: the Slurm Prolog and Epilog exit 0 and run nothing
//!   from a hostile settings file, alone or with the daemon down.
//! - [`hostile_inputs`]: FIFOs and `/dev/zero` as input and hint files,
//!   and a planted journal naming a cgroup ecosched never made.

mod ab;
mod av_sort;
mod chaos;
mod counters;
mod daemon;
mod daemon_logs;
mod daemon_records;
mod daemon_scope;
mod doctor;
mod emit_machine;
mod hostile_inputs;
mod metrics_flood;
mod patel;
mod recommend;
mod report_browser;
mod run;
mod run_contract;
mod run_exports;
mod run_limits;
mod run_memory;
mod run_signals;
mod slurm_hooks;
