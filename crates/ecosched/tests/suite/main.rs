//! The `ecosched` binary's integration tests, in tiers (see the
//! developer guide): the fast tier runs by default, unprivileged and with
//! nothing installed beyond Rust; the live tier (`live::`, ignored by
//! default) needs root and this machine's cgroups and tools, and runs with
//! `cargo test --release -p ecosched -- --ignored live::`.
//!
//! Fast tier:
//! - [`commands`]: the listings of scenarios and policies, usage errors;
//! - [`ab`]: `ab`'s input checks;
//! - [`sim`]: `sim`'s reports, trace and input errors;
//! - [`compare`]: `compare`'s ratios, baselines, oracle and refusals;
//! - [`cluster`]: cluster scenarios, per node and in total;
//! - [`benchmarks`]: `bench pam` and `bench oracle`;
//! - [`validate`]: `validate`'s options (not the validation itself);
//! - [`topology`]: `topology` of a recorded machine and of this one;
//! - [`doctor`]: `doctor` on recorded machines: missing features with
//!   their paths, cpufreq, EPP and resctrl found, verdicts that follow;
//! - [`emit_machine`]: `topology --emit-machine` files load and simulate;
//! - [`recommend`]: `recommend`'s answer against the suite's, recorded
//!   hosts, bad input;
//! - [`calibrate`]: `calibrate av` on a simulated machine preset;
//! - [`exports`]: Perfetto traces against golden files, CSV time series,
//!   sweeps and report paths;
//! - [`recorded_cpufreq`]: `patel2`'s frequencies on a recorded machine
//!   with cpufreq, through the journal;
//! - [`fake_pmu`]: the Linux platform behind the fake PMU serves PAM;
//! - [`restore`]: `restore` refuses a journal others could have written;
//! - [`daemon_reload`]: a daemon's reload on systemd's notify socket
//!   (`RELOADING=1` with `MONOTONIC_USEC`), `ctl reload`'s verdict, and
//!   `daemon --check-config`;
//! - [`structure`]: the workspace's files stay small and its modules
//!   free of import cycles.
//!
//! Live tier: [`live`] (its own doc lists its modules).
//!
//! Also: [`support`], the helpers the modules share; [`children`], the
//! entry points a live test runs as a separate process of this binary.

// Helpers outside `#[test]` functions unwrap too; this binary is all test
// code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ab;
mod benchmarks;
mod calibrate;
mod children;
mod cluster;
mod commands;
mod compare;
mod daemon_reload;
mod doctor;
mod emit_machine;
mod exports;
mod fake_pmu;
mod live;
mod recommend;
mod recorded_cpufreq;
mod restore;
mod sim;
mod structure;
mod support;
mod topology;
mod validate;
