//! # ecosched-service
//!
//! ecosched as a machine's service (`ecosched daemon`), for operators who
//! do not wrap every program in `ecosched run`:
//!
//! ```text
//!  config (TOML) ──► groups: a cgroup path (systemd slice, Slurm job) or
//!                    a match rule (user, command name), each with a policy
//!        │
//!        ▼ one thread per group: an attached LinuxPlatform ─► control loop ─► release
//!  daemon loop: SIGHUP re-reads the config, SIGTERM restores everything,
//!               groups come and go with their cgroups, watchdog pings
//!        │                                  │
//!  control socket (JSON lines, 0600)   OpenMetrics exporter (127.0.0.1:9864)
//! ```
//!
//! The groups run the same platform, policies, journal and restore as
//! `ecosched run`: each group has a journal of its own, undone when the
//! group ends, is paused, changes policy, or the daemon stops; a daemon
//! that was killed leaves journals the next one restores at start.

pub mod admission;
pub mod attribution;
pub mod build_info;
pub mod config;
pub mod ctl;
pub mod daemon;
#[cfg(test)]
mod deploy_names;
pub mod exporter;
pub mod group;
pub mod group_cpu;
pub mod history;
#[cfg(test)]
mod input_fuzz;
pub mod labels;
pub mod membership;
pub mod metrics;
pub mod notify;
pub mod peer;
pub mod policy_series;
pub mod power_model;
pub mod process_series;
pub mod shutdown;
pub mod totals;
#[cfg(test)]
mod unit_file;
pub mod vet;

pub use config::{Config, ConfigError};
