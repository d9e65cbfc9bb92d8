//! The simulator's integration tests, one binary. Every test here is of
//! the fast tier: it runs without root or system packages, on simulated
//! seconds.
//!
//! - `builtin_lists`: every machine and scenario file is a built-in, and
//!   every built-in is its file.
//! - `input_fuzz`: arbitrary and edited scenario, machine (PMU table
//!   inline) and calibration files never panic a loader, and are loaded or
//!   refused naming the file.
//! - `jobgraph`: the `make -jN` build (`-jN` respected, every job once,
//!   `make` exits last, the declared parallelism in every snapshot).
//! - `modern_presets`: the presets of current machines against their
//!   published power figures, and the model features they need (SMT
//!   sharing a core, an LLC per CCD, hybrid core types, boost within a
//!   power limit, EPP, uncore traffic power, package C6).
//! - `platform`: `SimPlatform` driven directly (gang schedule, governor
//!   re-sends, the load average, idle exit latency, cache warm-up after a
//!   move, pruning exited tasks).
//! - `resctrl`: LLC occupancy and memory traffic where the PMU has
//!   resctrl's monitoring, bounded by its monitoring IDs.
//! - `scenarios`: scenario and machine input (every built-in loads; a
//!   machine's PMU is a table's name or inline; every bad file is refused
//!   with its file, place and key; fuzzed input never panics; inputs that
//!   would run unboundedly are refused at load).
//! - `support`: paths of the crate's files and test data.

#![allow(clippy::unwrap_used)]

mod builtin_lists;
mod input_fuzz;
mod jobgraph;
mod modern_presets;
mod platform;
mod resctrl;
mod scenarios;
mod support;
