//! A run's time series for plots (the HTML report): power, and
//! per CPU its frequency, utilisation and the managed task on it, kept in
//! bounded memory. Steps are merged into buckets; when the series reaches
//! twice its target length, neighbouring points are merged pairwise and
//! the bucket doubles, so a run of any length keeps between `target` and
//! `2 × target` points (the trace sink contract: nothing grows with run
//! length).

use ecosched_model::trace::TraceSink;
use ecosched_model::{Meter, Plan, Step, TraceHeader};
use serde::Serialize;
use std::collections::BTreeMap;

/// One point: the average over the steps merged into it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesPoint {
    /// Start of the span, s.
    pub start_s: f64,
    /// End of the span, s.
    pub end_s: f64,
    /// Average power over the span from the run's meter, W.
    pub power_w: Option<f64>,
    /// Per CPU (in [`Series::cpus`] order): average MHz, when known.
    pub cpu_mhz: Vec<Option<f64>>,
    /// Per CPU: average utilisation, 0..1.
    pub cpu_util: Vec<f64>,
    /// Per CPU: the managed task seen on it at the span's last step.
    pub cpu_task: Vec<Option<String>>,
}

/// A run's time series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// Policy name.
    pub policy: String,
    /// The meter power comes from.
    pub meter: Meter,
    /// The CPUs, by kernel number.
    pub cpus: Vec<u32>,
    /// The points, in time order.
    pub points: Vec<SeriesPoint>,
}

/// Accumulates one bucket.
#[derive(Debug, Default, Clone)]
struct Bucket {
    steps: u32,
    start_s: f64,
    end_s: f64,
    energy_j: Option<f64>,
    time_s: f64,
    mhz_sum: Vec<f64>,
    mhz_n: Vec<u32>,
    util_sum: Vec<f64>,
    task: Vec<Option<String>>,
}

/// A [`TraceSink`] that keeps a bounded [`Series`].
#[derive(Debug, Clone)]
pub struct SeriesSink {
    target: usize,
    /// Steps per point.
    stride: u32,
    series: Series,
    bucket: Bucket,
}

impl SeriesSink {
    /// Keep between `target` and `2 × target` points (at least 2).
    pub fn new(target: usize) -> Self {
        SeriesSink {
            target: target.max(2),
            stride: 1,
            series: Series {
                policy: String::new(),
                meter: Meter::System,
                cpus: Vec::new(),
                points: Vec::new(),
            },
            bucket: Bucket::default(),
        }
    }

    /// The series so far (the open bucket included).
    pub fn into_series(mut self) -> Series {
        self.flush();
        self.series
    }

    fn flush(&mut self) {
        if self.bucket.steps == 0 {
            return;
        }
        let b = std::mem::take(&mut self.bucket);
        self.series.points.push(SeriesPoint {
            start_s: b.start_s,
            end_s: b.end_s,
            power_w: b.energy_j.filter(|_| b.time_s > 0.0).map(|e| e / b.time_s),
            cpu_mhz: b
                .mhz_sum
                .iter()
                .zip(&b.mhz_n)
                .map(|(s, &n)| (n > 0).then(|| s / f64::from(n)))
                .collect(),
            cpu_util: b.util_sum.iter().map(|u| u / f64::from(b.steps)).collect(),
            cpu_task: b.task,
        });
        if self.series.points.len() >= 2 * self.target {
            self.halve();
        }
    }

    /// Merge neighbouring points pairwise and double the stride.
    fn halve(&mut self) {
        let old = std::mem::take(&mut self.series.points);
        let mut it = old.into_iter();
        while let Some(a) = it.next() {
            match it.next() {
                None => self.series.points.push(a),
                Some(b) => {
                    let (da, db) = (a.end_s - a.start_s, b.end_s - b.start_s);
                    let w = |x: f64, y: f64| {
                        if da + db > 0.0 {
                            (x * da + y * db) / (da + db)
                        } else {
                            (x + y) / 2.0
                        }
                    };
                    self.series.points.push(SeriesPoint {
                        start_s: a.start_s,
                        end_s: b.end_s,
                        power_w: match (a.power_w, b.power_w) {
                            (Some(x), Some(y)) => Some(w(x, y)),
                            (x, y) => x.or(y),
                        },
                        cpu_mhz: a
                            .cpu_mhz
                            .iter()
                            .zip(&b.cpu_mhz)
                            .map(|(x, y)| match (x, y) {
                                (Some(x), Some(y)) => Some(w(*x, *y)),
                                (x, y) => x.or(*y),
                            })
                            .collect(),
                        cpu_util: a
                            .cpu_util
                            .iter()
                            .zip(&b.cpu_util)
                            .map(|(x, y)| w(*x, *y))
                            .collect(),
                        cpu_task: b.cpu_task,
                    });
                }
            }
        }
        self.stride = self.stride.saturating_mul(2);
    }
}

impl TraceSink for SeriesSink {
    fn begin(&mut self, header: &TraceHeader, _: &Plan) -> std::io::Result<()> {
        self.series.policy.clone_from(&header.policy);
        self.series.meter = header.meter;
        self.series.cpus = header.topology.cpus.iter().map(|c| c.id.0).collect();
        Ok(())
    }

    fn step(&mut self, step: &Step) -> std::io::Result<()> {
        let s = &step.snapshot;
        let n = self.series.cpus.len();
        let b = &mut self.bucket;
        if b.steps == 0 {
            b.start_s = s.time_s - s.interval_s;
            b.mhz_sum = vec![0.0; n];
            b.mhz_n = vec![0; n];
            b.util_sum = vec![0.0; n];
        }
        b.steps += 1;
        b.end_s = s.time_s;
        b.time_s += s.interval_s;
        if let Some(e) = s.power.energy_j(self.series.meter) {
            b.energy_j = Some(b.energy_j.unwrap_or(0.0) + e);
        }
        let index: BTreeMap<u32, usize> = self
            .series
            .cpus
            .iter()
            .enumerate()
            .map(|(i, c)| (*c, i))
            .collect();
        for c in &s.cpus {
            if let Some(&i) = index.get(&c.id.0) {
                if let Some(khz) = c.freq_khz {
                    b.mhz_sum[i] += khz as f64 / 1000.0;
                    b.mhz_n[i] += 1;
                }
                b.util_sum[i] += c.utilisation;
            }
        }
        b.task = vec![None; n];
        for t in s.live_managed() {
            if let Some(i) = t.cpu.and_then(|c| index.get(&c.0)) {
                if b.task[*i].is_none() {
                    b.task[*i] = Some(t.name.clone());
                }
            }
        }
        if b.steps >= self.stride {
            self.flush();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{simulate_into, SimOptions};
    use ecosched_policy::Params;
    use ecosched_sim::Scenario;

    #[test]
    fn stays_bounded_and_covers_the_run() {
        let s = Scenario::load("merkel-2hmmer-2soplex").unwrap();
        let mut sink = SeriesSink::new(50);
        let run = simulate_into(
            &s,
            "performance",
            &Params::default(),
            &SimOptions::default(),
            &mut sink,
            &mut |_| {},
        )
        .unwrap();
        let series = sink.into_series();
        assert!(series.points.len() >= 50 && series.points.len() < 100);
        let last = series.points.last().unwrap();
        assert!((last.end_s - run.metrics.duration_s).abs() < 1e-6);
        // Average power over the points equals the run's.
        let e: f64 = series
            .points
            .iter()
            .map(|p| p.power_w.unwrap() * (p.end_s - p.start_s))
            .sum();
        assert!((e / run.metrics.duration_s - run.metrics.avg_power_w.unwrap()).abs() < 0.01);
        assert_eq!(series.cpus.len(), 4);
        assert!(last.cpu_task.iter().all(Option::is_some), "{last:?}");
        assert!(last.cpu_mhz.iter().all(|m| m == &Some(2400.0)), "{last:?}");
    }
}
