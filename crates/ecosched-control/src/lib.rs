//! # ecosched-control
//!
//! The control loop that joins a [`Platform`](ecosched_model::Platform) and a
//! [`Policy`](ecosched_policy::Policy) (`docs/design/architecture.md`, "One
//! loop, two worlds"), and the sinks its trace streams to. It depends on
//! neither the simulator nor the Linux crate, so the same loop drives both
//! and neither can leak into it.
//!
//! ```
//! use ecosched_control::{run, JsonLinesSink};
//! use ecosched_policy::{build, Params};
//! use ecosched_sim::{Scenario, SimPlatform};
//!
//! let scenario = Scenario::load("merkel-1-aluadd").unwrap();
//! let mut platform = SimPlatform::new(&scenario, 1).unwrap();
//! let mut policy = build("performance", &Params::default()).unwrap();
//! let mut lines = JsonLinesSink::new(Vec::new());
//! let outcome = run(&mut platform, policy.as_mut(), "merkel-1-aluadd", Some(1), &mut lines, &mut |_| {}).unwrap();
//! assert!(outcome.metrics.makespan_s > 0.0);
//! // One header line, then one line per step.
//! let text = String::from_utf8(lines.into_inner()).unwrap();
//! assert_eq!(text.lines().count() as u64, 1 + outcome.steps);
//! ```

pub mod control_loop;
pub mod sink;

pub use control_loop::{run, ControlError, RunOutcome, Session};
pub use sink::JsonLinesSink;
