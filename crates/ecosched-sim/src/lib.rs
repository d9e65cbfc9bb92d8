//! # ecosched-sim
//!
//! A calibrated multicore simulator at scheduler granularity
//! (`docs/design/simulator.md`): machine presets from the papers,
//! shared-cache and memory-bandwidth contention, DVFS with voltage domains, a
//! power model with idle states, the Linux scheduler and governors as
//! baselines, and workloads from TOML scenarios, and clusters of such
//! machines (`cluster`: `[[nodes]]`, tasks moved between them). It implements
//! the same [`Platform`](ecosched_model::Platform) trait as a real machine.
//!
//! ```
//! use ecosched_model::{Platform, Plan};
//! use ecosched_sim::{Scenario, SimPlatform};
//! use std::time::Duration;
//!
//! let scenario = Scenario::load("merkel-1-aluadd").unwrap();
//! let mut sim = SimPlatform::new(&scenario, 1).unwrap();
//! sim.apply(&Plan::unchanged()).unwrap();
//! sim.advance(Duration::from_secs(1)).unwrap();
//! let snapshot = sim.observe().unwrap();
//! assert!(snapshot.tasks[0].counters.instructions.unwrap() > 0);
//! ```

pub mod bounds;
pub mod cluster;
pub mod contention;
pub mod coretypes;
pub mod error;
pub mod governor;
pub mod jobgraph;
pub mod kernel;
pub mod machine;
pub mod observation;
pub mod perturb;
pub mod platform;
pub mod power;
pub mod profile;
pub mod scenario;

pub use error::SimError;
pub use jobgraph::{JobGraph, JobGraphSpec};
pub use machine::{Machine, MachineSpec};
pub use observation::Observe;
pub use platform::{Migrant, MigrationCauses, SimPlatform, SimStats, TrueEnergy};
pub use scenario::Scenario;
