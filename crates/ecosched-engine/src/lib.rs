//! # ecosched-engine
//!
//! The control loop that joins a [`Platform`](ecosched_model::Platform) and
//! a [`Policy`](ecosched_policy::Policy), and the experiments built on it:
//! simulated runs, comparisons against a baseline, validation against the
//! papers' published figures, and the simulator benchmark.
//!
//! ```
//! use ecosched_engine::experiment::simulate;
//! use ecosched_policy::Params;
//! use ecosched_sim::Scenario;
//!
//! let scenario = Scenario::load("merkel-1-aluadd").unwrap();
//! let run = simulate(&scenario, "performance", &Params::default(), None, &mut |_| {}).unwrap();
//! assert!(run.report.makespan_s > 0.0);
//! ```

pub mod bench;
pub mod engine;
pub mod experiment;
pub mod report;
pub mod validate;

pub use engine::{run, EngineError};
