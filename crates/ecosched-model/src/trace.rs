//! The record of a run: every snapshot and every plan, in order. Metrics
//! and reports are computed from it and nothing else, so a real run and a
//! simulated one are measured the same way.
//!
//! A run does not keep its trace: the control loop hands each step to a
//! [`TraceSink`] as it happens, so a day-long `ecosched run` or daemon uses
//! the memory of one step. Sinks write JSON lines, feed incremental
//! metrics, or (for tests and validation, which need the steps afterwards)
//! keep everything in a [`Trace`].

use crate::plan::Plan;
use crate::sample::Meter;
use crate::schedule::RunSlice;
use crate::snapshot::Snapshot;
use crate::stats::PolicyStats;
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
    /// The policy's statistics after deciding.
    #[serde(default, skip_serializing_if = "PolicyStats::is_empty")]
    pub stats: PolicyStats,
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
        self.steps.push(Step {
            snapshot,
            plan,
            stats: PolicyStats::default(),
        });
    }

    /// Seconds from the start to the last observation.
    pub fn duration_s(&self) -> f64 {
        self.steps.last().map_or(0.0, |s| s.snapshot.time_s)
    }
}

/// Where the control loop sends a run's record as it happens.
pub trait TraceSink {
    /// The run starts: what it is, and the plan applied before the first
    /// interval.
    fn begin(&mut self, header: &TraceHeader, initial_plan: &Plan) -> std::io::Result<()>;
    /// One control-loop step.
    fn step(&mut self, step: &Step) -> std::io::Result<()>;
    /// The run ended; flush whatever is buffered.
    fn end(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    /// Whether the sink shows the exact schedule ([`TraceSink::schedule`]):
    /// the platform records it only then.
    fn wants_schedule(&self) -> bool {
        false
    }
    /// Before [`TraceSink::begin`]: how the platform records the schedule,
    /// or `None` where it cannot (the sink then falls back on what each
    /// step's snapshot shows).
    fn schedule_source(&mut self, source: Option<&str>) {
        let _ = source;
    }
    /// Before each [`TraceSink::step`]: the stretches tasks ran on CPUs
    /// during the step, and how many were dropped over the cap.
    fn schedule(&mut self, slices: &[RunSlice], dropped: u64) -> std::io::Result<()> {
        let _ = (slices, dropped);
        Ok(())
    }
}

/// A sink that keeps nothing: the run's metrics are all that is wanted.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl TraceSink for NullSink {
    fn begin(&mut self, _: &TraceHeader, _: &Plan) -> std::io::Result<()> {
        Ok(())
    }
    fn step(&mut self, _: &Step) -> std::io::Result<()> {
        Ok(())
    }
}

/// A sink that keeps every step in memory. Its memory grows with the run:
/// meant for tests and validation rows that read the steps afterwards, not
/// for long runs.
#[derive(Debug, Default, Clone)]
pub struct MemorySink {
    /// The trace, once the run has begun.
    pub trace: Option<Trace>,
}

impl TraceSink for MemorySink {
    fn begin(&mut self, header: &TraceHeader, initial_plan: &Plan) -> std::io::Result<()> {
        self.trace = Some(Trace::new(header.clone(), initial_plan.clone()));
        Ok(())
    }
    fn step(&mut self, step: &Step) -> std::io::Result<()> {
        if let Some(t) = &mut self.trace {
            t.steps.push(step.clone());
        }
        Ok(())
    }
}

/// Two sinks fed with the same steps, in order.
pub struct Tee<'a> {
    /// The first sink.
    pub first: &'a mut dyn TraceSink,
    /// The second sink.
    pub second: &'a mut dyn TraceSink,
}

impl TraceSink for Tee<'_> {
    fn begin(&mut self, header: &TraceHeader, initial_plan: &Plan) -> std::io::Result<()> {
        self.first.begin(header, initial_plan)?;
        self.second.begin(header, initial_plan)
    }
    fn step(&mut self, step: &Step) -> std::io::Result<()> {
        self.first.step(step)?;
        self.second.step(step)
    }
    fn wants_schedule(&self) -> bool {
        self.first.wants_schedule() || self.second.wants_schedule()
    }
    fn schedule_source(&mut self, source: Option<&str>) {
        self.first.schedule_source(source);
        self.second.schedule_source(source);
    }
    fn schedule(&mut self, slices: &[RunSlice], dropped: u64) -> std::io::Result<()> {
        self.first.schedule(slices, dropped)?;
        self.second.schedule(slices, dropped)
    }
    fn end(&mut self) -> std::io::Result<()> {
        self.first.end()?;
        self.second.end()
    }
}
