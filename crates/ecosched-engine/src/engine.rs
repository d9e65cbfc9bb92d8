//! The control loop (ARCHITECTURE.md "One loop, two worlds"):
//!
//! ```text
//! plan0 = policy.init(topology); platform.apply(plan0)
//! loop { platform.advance(policy.interval())
//!        snapshot = platform.observe()
//!        plan = policy.decide(snapshot)        (skipped once finished)
//!        platform.apply(plan); trace.record(snapshot, plan) }
//! ```
//!
//! Generic over the platform, so the same loop drives the simulator and a
//! real machine; the policy is refused up front if the platform lacks
//! something it needs.

use ecosched_model::{Plan, Platform, PlatformError, Trace, TraceHeader};
use ecosched_policy::{Policy, PolicyError};

/// Why a run stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The policy could not be built or started.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The platform failed.
    #[error(transparent)]
    Platform(#[from] PlatformError),
    /// The platform lacks what the policy needs.
    #[error("policy {policy} cannot run on this {platform} platform: it needs {}", missing.join("; "))]
    Incapable {
        /// Policy name.
        policy: String,
        /// Platform kind.
        platform: String,
        /// What is missing.
        missing: Vec<String>,
    },
    /// The simulator could not load the scenario.
    #[error(transparent)]
    Sim(#[from] ecosched_sim::SimError),
}

/// Run `policy` on `platform` until the workload finishes; `progress` is
/// called after each interval with the seconds elapsed so far.
pub fn run(
    platform: &mut dyn Platform,
    policy: &mut dyn Policy,
    workload: &str,
    seed: Option<u64>,
    progress: &mut dyn FnMut(f64),
) -> Result<Trace, EngineError> {
    let missing = policy.requirements().missing(&platform.capabilities());
    if !missing.is_empty() {
        return Err(EngineError::Incapable {
            policy: policy.name().to_string(),
            platform: platform.kind().to_string(),
            missing,
        });
    }
    let topology = platform.topology();
    let initial = policy.init(&topology)?;
    platform.apply(&initial)?;
    let header = TraceHeader {
        platform: platform.kind().to_string(),
        machine: platform.machine_name(),
        workload: workload.to_string(),
        policy: policy.name().to_string(),
        seed,
        meter: platform.meter(),
        topology,
    };
    let mut trace = Trace::new(header, initial);
    let interval = policy.interval();
    loop {
        platform.advance(interval)?;
        let snapshot = platform.observe()?;
        progress(snapshot.time_s);
        if platform.finished() {
            trace.record(snapshot, Plan::unchanged());
            return Ok(trace);
        }
        let plan = policy.decide(&snapshot);
        platform.apply(&plan)?;
        trace.record(snapshot, plan);
    }
}
