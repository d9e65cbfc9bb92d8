//! Energy attribution checked against the simulator's truth
//! (`docs/researchers/attribution.md`).
//!
//! - [`crate::attribution_check::fit_machine`]: the activity model's
//!   coefficients for a machine, fitted on calibration microbenchmarks.
//! - [`AttributionSink`]: divides each interval's metered energy above
//!   idle among the tasks that ran, by on-CPU time and by the model
//!   ([`ecosched_model::attribution::split`]), per task name.
//! - [`AttributionSink::annotate`]: puts both estimates and the truth
//!   into a report's task rows.

use ecosched_model::attribution::{split, EnergyFit, EnergyModel};
use ecosched_model::schedule::RunSlice;
use ecosched_model::trace::TraceSink;
use ecosched_model::{CounterKind, Counters, Meter, Plan, Step, TaskMetrics, TraceHeader};
use ecosched_sim::SimPlatform;
use serde::Serialize;
use std::collections::BTreeMap;

/// What the estimators read beside the policy's own counters (as `perf
/// stat -e` would).
pub const COUNTERS: [CounterKind; 5] = [
    CounterKind::Instructions,
    CounterKind::Cycles,
    CounterKind::LlcMisses,
    CounterKind::MemTransactions,
    CounterKind::OnCpuTime,
];

/// How a run's energy was attributed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttributionNotes {
    /// The model over every counter the estimators read.
    pub model: Option<EnergyModel>,
    /// Intervals divided by the activity model.
    pub intervals_by_activity: u64,
    /// Intervals divided by on-CPU time because a task lacked a counter
    /// the model weighs (the model degraded to what it had).
    pub intervals_by_cpu_time: u64,
}

/// Divides each interval's energy above idle among the tasks by both
/// methods, per managed task name, and forwards every step.
pub struct AttributionSink<'a> {
    inner: &'a mut dyn TraceSink,
    fit: &'a EnergyFit,
    meter: Meter,
    /// Models by the counters the interval's tasks had (few sets).
    models: BTreeMap<Vec<CounterKind>, Option<EnergyModel>>,
    /// Per name: (by CPU time, by activity), J.
    per_name: BTreeMap<String, (f64, f64)>,
    notes: AttributionNotes,
}

impl<'a> AttributionSink<'a> {
    /// Attribute with `fit`'s models, passing steps on to `inner`.
    pub fn new(inner: &'a mut dyn TraceSink, fit: &'a EnergyFit) -> Self {
        AttributionSink {
            inner,
            fit,
            meter: Meter::Package,
            models: BTreeMap::new(),
            per_name: BTreeMap::new(),
            notes: AttributionNotes {
                model: fit.model(&COUNTERS.into()),
                intervals_by_activity: 0,
                intervals_by_cpu_time: 0,
            },
        }
    }
}

impl TraceSink for AttributionSink<'_> {
    fn begin(&mut self, header: &TraceHeader, plan: &Plan) -> std::io::Result<()> {
        self.meter = header.meter;
        self.inner.begin(header, plan)
    }

    fn step(&mut self, step: &Step) -> std::io::Result<()> {
        let s = &step.snapshot;
        let ran: Vec<_> = s
            .tasks
            .iter()
            .filter(|t| t.counters.on_cpu_ns.is_some_and(|n| n > 0))
            .collect();
        if let (Some(e), false) = (s.power.energy_j(self.meter), ran.is_empty()) {
            let have: Vec<CounterKind> = COUNTERS
                .into_iter()
                .filter(|&k| ran.iter().all(|t| t.counters.get(k).is_some()))
                .collect();
            let fit = self.fit;
            let model = self
                .models
                .entry(have.clone())
                .or_insert_with(|| fit.model(&have.into_iter().collect()));
            if let Some(model) = model {
                let counters: Vec<&Counters> = ran.iter().map(|t| &t.counters).collect();
                let out = split(model, e, s.interval_s, &counters);
                if out.by_activity && model.weighs_activity() {
                    self.notes.intervals_by_activity += 1;
                } else {
                    self.notes.intervals_by_cpu_time += 1;
                }
                for (i, t) in ran.iter().enumerate().filter(|(_, t)| t.managed) {
                    let acc = self.per_name.entry(t.name.clone()).or_default();
                    acc.0 += out.cpu_share_j[i];
                    acc.1 += out.activity_j[i];
                }
            }
        }
        self.inner.step(step)
    }

    fn end(&mut self) -> std::io::Result<()> {
        self.inner.end()
    }

    fn wants_schedule(&self) -> bool {
        self.inner.wants_schedule()
    }

    fn schedule_source(&mut self, source: Option<&str>) {
        self.inner.schedule_source(source);
    }

    fn schedule(&mut self, slices: &[RunSlice], dropped: u64) -> std::io::Result<()> {
        self.inner.schedule(slices, dropped)
    }
}

impl AttributionSink<'_> {
    /// Put both estimates and the platform's truth (at the meter's scope)
    /// into a report's task rows; the notes say how it went.
    pub fn annotate(
        self,
        rows: &mut [TaskMetrics],
        platform: &mut SimPlatform,
    ) -> AttributionNotes {
        let truth = platform.true_energy();
        for row in rows {
            if let Some(t) = truth.get(&row.name) {
                row.energy_true_j = Some(match self.meter {
                    Meter::Package => t.package_j,
                    Meter::System => t.system_j,
                });
            }
            let (cpu, act) = self.per_name.get(&row.name).copied().unwrap_or_default();
            row.energy_cpu_share_j = Some(cpu);
            row.energy_activity_j = Some(act);
        }
        self.notes
    }
}
