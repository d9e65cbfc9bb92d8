//! # ecosched-engine
//!
//! The experiments built on the control loop (`ecosched-control`) and the
//! simulator: simulated runs, comparisons against a baseline, validation
//! against the papers' published figures, and the simulator benchmark.
//!
//! ```
//! use ecosched_engine::experiment::{simulate, SimOptions};
//! use ecosched_policy::Params;
//! use ecosched_sim::Scenario;
//!
//! let scenario = Scenario::load("merkel-1-aluadd").unwrap();
//! let options = SimOptions::default();
//! let run = simulate(&scenario, "performance", &Params::default(), &options, &mut |_| {}).unwrap();
//! assert!(run.report.makespan_s > 0.0);
//! ```

pub mod attribution;
pub mod attribution_check;
pub mod bench;
pub mod calibrate;
pub mod cluster;
pub mod compare;
pub mod experiment;
pub mod fidelity;
pub mod normalise;
pub mod oracle;
pub mod parallel;
pub mod recommend;
pub mod report;
pub mod seed_shift;
pub mod seeds;
pub mod series;
pub mod suite;
pub mod sweep;
pub mod validate;
pub mod workload_class;

pub use ecosched_control::{run, ControlError};

/// Why an experiment stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The control loop failed (policy, platform, capabilities, trace).
    #[error(transparent)]
    Control(#[from] ControlError),
    /// The simulator could not load the scenario.
    #[error(transparent)]
    Sim(#[from] ecosched_sim::SimError),
}

impl From<ecosched_policy::PolicyError> for EngineError {
    fn from(e: ecosched_policy::PolicyError) -> Self {
        EngineError::Control(ControlError::Policy(e))
    }
}

impl EngineError {
    /// Whether the user can fix it in the input (a policy, parameter or
    /// scenario), as opposed to a failure of the platform or the trace.
    pub fn is_input(&self) -> bool {
        match self {
            EngineError::Control(ControlError::Platform(_) | ControlError::Sink(_)) => false,
            EngineError::Control(_) | EngineError::Sim(_) => true,
        }
    }
}
