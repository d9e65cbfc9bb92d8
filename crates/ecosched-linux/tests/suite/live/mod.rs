//! The live tier: tests that need the machine running them, with root,
//! cgroups (cpuset, freezer, accounting), perf events, real processes and
//! the tools they run (`python3`, `stress-ng`, `hwloc-ls`). Each is
//! ignored in a normal run; `cargo test -- --ignored live::` runs them. They
//! take turns on the machine ([`crate::support::live_turn`]).
//!
//! - `chaos_restore`: SIGKILL a worker at random points; restore puts all back
//! - `gang`: timed gang schedules with the freezer or stop signals
//! - `hwloc_ls`: this machine's topology against `hwloc-ls`
//! - `libpfm`: libpfm4's encodings for forced PMUs against the vendors'
//! - `platform`: `LinuxPlatform` managing real commands
//! - `power_meter`: this machine's power meter
//! - `tasks`: task discovery and counters on the running kernel

pub mod chaos_restore;
pub mod gang;
mod hwloc_ls;
pub mod libpfm;
mod platform;
mod power_meter;
mod tasks;
