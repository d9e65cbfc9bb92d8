//! The control loop:
//!
//! ```text
//! plan0 = policy.init(topology); platform.apply(plan0); sink.begin(header, plan0)
//! loop { platform.advance(until the next period is due)
//!        snapshot = platform.observe(); metrics.record(snapshot)
//!        plan = policy.decide_due(snapshot, due periods)   (skipped once finished)
//!        platform.apply(plan); sink.step(snapshot, plan) }
//! sink.end()
//! ```
//!
//! Nothing is kept per step: the step goes to the sink and the figures to a
//! [`MetricsAccumulator`], so memory does not grow with the run's length.
//! The policy is refused before anything is applied if the platform lacks
//! something it needs.

use ecosched_model::metrics::MetricsAccumulator;
use ecosched_model::schedule::RunSlice;
use ecosched_model::trace::TraceSink;
use ecosched_model::{
    Counters, Plan, Platform, PlatformError, RunMetrics, Snapshot, Step, TraceHeader,
};
use ecosched_policy::{Policy, PolicyError};
use std::time::Duration;

/// Why a run stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
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
    /// The trace could not be written.
    #[error("cannot write the trace: {0}")]
    Sink(#[source] std::io::Error),
}

/// What a finished run leaves: its header, its figures and the counter
/// totals per task name. The steps themselves went to the sink.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// What was run.
    pub header: TraceHeader,
    /// The run's figures.
    pub metrics: RunMetrics,
    /// Per managed task name, every counter's total.
    pub counter_totals: Vec<(String, Counters)>,
    /// How many steps the loop took.
    pub steps: u64,
}

/// Run `policy` on `platform` until the workload finishes, streaming every
/// step to `sink`; `progress` is called after each step with the seconds
/// elapsed so far.
pub fn run(
    platform: &mut dyn Platform,
    policy: &mut dyn Policy,
    workload: &str,
    seed: Option<u64>,
    sink: &mut dyn TraceSink,
    progress: &mut dyn FnMut(f64),
) -> Result<RunOutcome, ControlError> {
    let mut session = Session::start(platform, policy, workload, seed, sink)?;
    while !session.is_finished() {
        let snapshot = session.step(platform, policy, sink)?;
        progress(snapshot.time_s);
    }
    session.finish(sink)
}

/// A run taken one wake-up at a time, for a caller that interleaves several
/// machines (a simulated cluster) and acts on them between steps. The
/// platform, policy and sink stay the caller's: pass the same ones to every
/// call. [`run`] is `start`, `step` until finished, `finish`.
pub struct Session {
    cadence: Cadence,
    header: TraceHeader,
    metrics: MetricsAccumulator,
    steps: u64,
    finished: bool,
    /// Whether the platform records the exact schedule for the sink.
    recording: bool,
    /// The schedule of the current step, reused from step to step.
    slices: Vec<RunSlice>,
}

impl Session {
    /// Check the policy against the platform, apply its initial plan and
    /// begin the trace.
    pub fn start(
        platform: &mut dyn Platform,
        policy: &mut dyn Policy,
        workload: &str,
        seed: Option<u64>,
        sink: &mut dyn TraceSink,
    ) -> Result<Session, ControlError> {
        let requirements = policy.requirements();
        platform.open_counters(&requirements);
        let verdict = requirements.verdict(&platform.capabilities());
        if !verdict.runs() {
            return Err(ControlError::Incapable {
                policy: policy.name().to_string(),
                platform: platform.kind().to_string(),
                missing: verdict
                    .shortfalls()
                    .iter()
                    .map(|s| s.text.clone())
                    .collect(),
            });
        }
        let cadence = Cadence::new(policy)?;
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
        // The exact schedule is recorded only for a sink that shows it.
        let recording = sink.wants_schedule() && {
            let source = platform.record_schedule();
            sink.schedule_source(source.as_deref());
            source.is_some()
        };
        sink.begin(&header, &initial).map_err(ControlError::Sink)?;
        let metrics = MetricsAccumulator::new(header.meter);
        Ok(Session {
            cadence,
            header,
            metrics,
            steps: 0,
            finished: false,
            recording,
            slices: Vec::new(),
        })
    }

    /// Advance to the next due period, observe, record, decide and apply;
    /// returns the snapshot the policy saw.
    pub fn step(
        &mut self,
        platform: &mut dyn Platform,
        policy: &mut dyn Policy,
        sink: &mut dyn TraceSink,
    ) -> Result<Snapshot, ControlError> {
        platform.advance(self.cadence.until_next())?;
        let due = self.cadence.wake();
        let snapshot = platform.observe()?;
        if self.recording {
            self.slices.clear();
            let dropped = platform.take_schedule(&mut self.slices);
            sink.schedule(&self.slices, dropped)
                .map_err(ControlError::Sink)?;
        }
        self.metrics.record(&snapshot);
        self.steps += 1;
        let plan = if platform.finished() {
            self.finished = true;
            Plan::unchanged()
        } else {
            let plan = policy.decide_due(&snapshot, &due);
            platform.apply(&plan)?;
            plan
        };
        let step = Step {
            snapshot,
            plan,
            stats: policy.stats(),
        };
        sink.step(&step).map_err(ControlError::Sink)?;
        Ok(step.snapshot)
    }

    /// Whether the platform's workload has finished.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The loop's clock: when the last step observed.
    pub fn now(&self) -> Duration {
        self.cadence.now
    }

    /// The figures so far, for a caller that accounts something the
    /// platform cannot see (a task migrated away, the energy it cost).
    pub fn metrics_mut(&mut self) -> &mut MetricsAccumulator {
        &mut self.metrics
    }

    /// End the trace and return the run's outcome.
    pub fn finish(self, sink: &mut dyn TraceSink) -> Result<RunOutcome, ControlError> {
        sink.end().map_err(ControlError::Sink)?;
        Ok(RunOutcome {
            header: self.header,
            metrics: self.metrics.metrics(),
            counter_totals: self
                .metrics
                .counter_totals()
                .map(|(name, c)| (name.to_string(), c.clone()))
                .collect(),
            steps: self.steps,
        })
    }
}

/// When each of a policy's periods is next due, on the loop's own clock.
struct Cadence {
    periods: Vec<(&'static str, Duration)>,
    next: Vec<Duration>,
    now: Duration,
}

impl Cadence {
    fn new(policy: &dyn Policy) -> Result<Self, ControlError> {
        let periods: Vec<(&'static str, Duration)> =
            policy.periods().iter().map(|p| (p.name, p.every)).collect();
        if periods.is_empty() || periods.iter().any(|(_, every)| every.is_zero()) {
            return Err(ControlError::Policy(PolicyError::Incompatible(format!(
                "policy {} declares no period or a zero-length one",
                policy.name()
            ))));
        }
        let next = periods.iter().map(|(_, every)| *every).collect();
        Ok(Cadence {
            periods,
            next,
            now: Duration::ZERO,
        })
    }

    /// Time from now to the earliest due period.
    fn until_next(&self) -> Duration {
        let wake = self.next.iter().min().copied().unwrap_or(self.now);
        wake.saturating_sub(self.now)
    }

    /// Move to the earliest due time; return the names of the periods due
    /// there and schedule each one's next turn.
    fn wake(&mut self) -> Vec<&'static str> {
        self.now += self.until_next();
        let mut due = Vec::new();
        for ((name, every), next) in self.periods.iter().zip(self.next.iter_mut()) {
            if *next <= self.now {
                due.push(*name);
                while *next <= self.now {
                    *next += *every;
                }
            }
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecosched_model::{Requirements, Snapshot, Topology};
    use ecosched_policy::Period;

    struct TwoPeriods;

    impl Policy for TwoPeriods {
        fn name(&self) -> &str {
            "two-periods"
        }
        fn requirements(&self) -> Requirements {
            Requirements::default()
        }
        fn interval(&self) -> Duration {
            Duration::from_millis(20)
        }
        fn periods(&self) -> Vec<Period> {
            vec![
                Period {
                    name: "fast",
                    every: Duration::from_millis(20),
                },
                Period {
                    name: "slow",
                    every: Duration::from_millis(50),
                },
            ]
        }
        fn init(&mut self, _: &Topology) -> Result<Plan, PolicyError> {
            Ok(Plan::unchanged())
        }
        fn decide(&mut self, _: &Snapshot) -> Plan {
            Plan::unchanged()
        }
    }

    #[test]
    fn each_period_is_due_at_its_own_multiples() {
        let mut c = Cadence::new(&TwoPeriods).unwrap();
        let mut seen = Vec::new();
        for _ in 0..7 {
            let gap = c.until_next();
            let due = c.wake();
            seen.push((gap.as_millis(), c.now.as_millis(), due));
        }
        assert_eq!(
            seen,
            vec![
                (20, 20, vec!["fast"]),
                (20, 40, vec!["fast"]),
                (10, 50, vec!["slow"]),
                (10, 60, vec!["fast"]),
                (20, 80, vec!["fast"]),
                (20, 100, vec!["fast", "slow"]),
                (20, 120, vec!["fast"]),
            ]
        );
    }
}
