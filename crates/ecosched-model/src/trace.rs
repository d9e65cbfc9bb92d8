//! The record of a run: every snapshot and every plan, in order. Metrics
//! and reports are computed from it and nothing else, so a real run and a
//! simulated one are measured the same way.

use crate::plan::Plan;
use crate::sample::Meter;
use crate::snapshot::Snapshot;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What a trace is a trace of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceHeader {
    /// `sim` or `linux`.
    pub platform: String,
    /// Machine name (preset or host).
    pub machine: String,
    /// Scenario or command.
    pub workload: String,
    /// Policy name.
    pub policy: String,
    /// Seed, for simulated runs.
    pub seed: Option<u64>,
    /// The meter energy metrics are reported from.
    pub meter: Meter,
    /// The machine.
    pub topology: Arc<Topology>,
}

/// One control-loop step: what was seen, and what was decided after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The observation.
    pub snapshot: Snapshot,
    /// The decision taken after it (empty on the last step).
    pub plan: Plan,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// What was run.
    pub header: TraceHeader,
    /// The plan applied before the first interval.
    pub initial_plan: Plan,
    /// Every step.
    pub steps: Vec<Step>,
}

impl Trace {
    /// A new, empty trace.
    pub fn new(header: TraceHeader, initial_plan: Plan) -> Self {
        Trace {
            header,
            initial_plan,
            steps: Vec::new(),
        }
    }

    /// Append an observation and the plan made from it.
    pub fn record(&mut self, snapshot: Snapshot, plan: Plan) {
        self.steps.push(Step { snapshot, plan });
    }

    /// Seconds from the start to the last observation.
    pub fn duration_s(&self) -> f64 {
        self.steps.last().map_or(0.0, |s| s.snapshot.time_s)
    }
}
