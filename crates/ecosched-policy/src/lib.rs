//! # ecosched-policy
//!
//! A policy turns what it observes into a plan: `Snapshot → Plan`. It never
//! touches the OS, a clock or an unseeded random source, and it does not
//! know whether it runs on Linux or in the simulator.
//!
//! ```
//! use ecosched_policy::{build, Params};
//!
//! let policy = build("hilo", &Params::default().with("hold_ms", 300)).unwrap();
//! assert_eq!(policy.name(), "hilo");
//! assert!(build("hilo", &Params::default().with("hold_ms", -1)).is_err());
//! assert!(build("no-such-policy", &Params::default()).is_err());
//! ```
//!
//! Every policy belongs to a family in the [`catalogue`]: one typed
//! parameter struct (declared with [`typed_params!`]) and one typed
//! statistics struct (declared with `ecosched_model::policy_stats!`) per
//! family, from which help, checking, docs and exported series all come.

pub mod av;
pub mod baseline;
pub mod catalogue;
pub mod family;
pub mod hilo;
pub mod membus;
pub mod oracle;
pub mod pam;
pub mod params;
pub mod patel;
pub mod placed;
pub mod wca;
pub mod xnode;

use ecosched_model::{Plan, PolicyStats, Requirements, Snapshot, Topology};
use std::time::Duration;

pub use catalogue::{build, check, families, find, needs, variants};
pub use family::{Family, Needs, PolicyKind, Variant};
pub use params::Params;

/// Why a policy could not be built or started.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// No policy by that name.
    #[error("unknown policy {name:?}; valid policies: {}", valid.join(", "))]
    UnknownPolicy {
        /// The name given.
        name: String,
        /// Every valid name.
        valid: Vec<String>,
    },
    /// A parameter the policy does not take.
    #[error("policy {policy} has no parameter {key:?}; valid parameters: {}", if valid.is_empty() { "none".to_string() } else { valid.join(", ") })]
    UnknownParam {
        /// The policy.
        policy: String,
        /// The key given.
        key: String,
        /// Valid keys.
        valid: Vec<String>,
    },
    /// A required parameter is missing.
    #[error("policy {policy} needs --param {key}=… ({help})")]
    MissingParam {
        /// The policy.
        policy: String,
        /// The key.
        key: String,
        /// What it means.
        help: String,
    },
    /// A parameter value that does not parse or is out of range.
    #[error("parameter {key}={value:?}: {reason}")]
    BadParam {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// Why it is wrong.
        reason: String,
    },
    /// The policy cannot run on this machine.
    #[error("{0}")]
    Incompatible(String),
    /// Not a policy that decides from one machine's snapshots (a search
    /// over the simulator, a cluster balancer): it runs elsewhere.
    #[error("{reason}")]
    Unbuildable {
        /// The policy.
        policy: String,
        /// Where it runs instead.
        reason: String,
    },
}

/// A scheduling policy.
pub trait Policy {
    /// Its registry name.
    fn name(&self) -> &str;
    /// What it needs from the platform.
    fn requirements(&self) -> Requirements;
    /// How often the control loop should call [`Policy::decide`] (its
    /// shortest period).
    fn interval(&self) -> Duration;
    /// The policy's periods. A policy that does different work at different
    /// cadences (parallelism every 20 ms, rebalancing every second) names
    /// each; the loop wakes whenever one is due and passes the names of the
    /// due ones to [`Policy::decide_due`]. Each snapshot's deltas cover the
    /// time since the previous wake-up, whichever period it was for. By
    /// default: one period, [`Policy::interval`], named `decide`.
    fn periods(&self) -> Vec<Period> {
        vec![Period {
            name: "decide",
            every: self.interval(),
        }]
    }
    /// Check the machine and return the plan to apply before the first
    /// interval.
    fn init(&mut self, topology: &Topology) -> Result<Plan, PolicyError>;
    /// Decide from one observation.
    fn decide(&mut self, snapshot: &Snapshot) -> Plan;
    /// Decide from one observation at a wake-up where the periods named in
    /// `due` are due. By default every wake-up is a [`Policy::decide`].
    fn decide_due(&mut self, snapshot: &Snapshot, due: &[&'static str]) -> Plan {
        let _ = due;
        self.decide(snapshot)
    }
    /// What the policy has done so far (plans applied, tasks moved …): its
    /// family's typed statistics, for the trace, `--json`, reports and the
    /// exporter. None by default.
    fn stats(&self) -> PolicyStats {
        PolicyStats::default()
    }
}

/// One of a policy's cadences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    /// Its name, passed to [`Policy::decide_due`] when it is due.
    pub name: &'static str,
    /// How often it is due (must be positive).
    pub every: Duration,
}

/// A policy run at another cadence than its own (`ecosched run
/// --interval-ms`): every one of its periods is due at each wake-up;
/// everything else is the wrapped policy's.
pub struct Retimed {
    inner: Box<dyn Policy>,
    interval: Duration,
}

impl Retimed {
    /// Run `inner` every `interval`.
    pub fn new(inner: Box<dyn Policy>, interval: Duration) -> Self {
        Retimed { inner, interval }
    }
}

impl Policy for Retimed {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn requirements(&self) -> Requirements {
        self.inner.requirements()
    }
    fn interval(&self) -> Duration {
        self.interval
    }
    fn init(&mut self, topology: &Topology) -> Result<Plan, PolicyError> {
        self.inner.init(topology)
    }
    fn decide(&mut self, snapshot: &Snapshot) -> Plan {
        let due: Vec<&'static str> = self.inner.periods().iter().map(|p| p.name).collect();
        self.inner.decide_due(snapshot, &due)
    }
    fn stats(&self) -> PolicyStats {
        self.inner.stats()
    }
}
