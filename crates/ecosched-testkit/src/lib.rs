//! # ecosched-testkit
//!
//! What several test suites need and none should copy:
//!
//! - [`machines`]: hand-built topologies of the papers' machines and of
//!   synthetic ones, for policy and platform tests;
//! - [`snapshots`]: snapshots built task by task, for policy tests;
//! - [`fuzz`]: mutations of valid input files, for property tests;
//! - [`trees`]: writable copies of recorded machine trees;
//! - [`live`]: reading this machine's processes, affinity and cgroups, for
//!   the live tier (tests that need root).
//!
//! It is a dev-dependency only: shipped code never links it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod fuzz;
pub mod live;
pub mod machines;
pub mod snapshots;
pub mod trees;
