//! `--timeseries out.csv` on `sim` and `run`: one row per control interval
//! and CPU, like turbostat's per-CPU rows, streamed as the run goes:
//!
//! ```text
//! time_s,cpu,mhz,utilisation,watts,tasks
//! 0.100,0,2400,1.000,71.20,hmmer#0
//! ```
//!
//! `watts` is the whole machine's average over the interval from the
//! scenario's (or run's) meter, repeated on each CPU's row (no platform
//! meters a single CPU); `tasks` are the managed tasks last seen on the
//! CPU, `;`-separated. A missing figure is an empty field.

use ecosched_model::trace::TraceSink;
use ecosched_model::{Meter, Plan, Step, TraceHeader};
use std::io::{self, Write};

/// Writes the CSV rows.
pub struct TimeseriesSink<W: Write> {
    out: W,
    meter: Meter,
}

impl<W: Write> TimeseriesSink<W> {
    /// Write to `out` (wrap a file in a `BufWriter`).
    pub fn new(out: W) -> Self {
        TimeseriesSink {
            out,
            meter: Meter::System,
        }
    }
}

impl<W: Write> TraceSink for TimeseriesSink<W> {
    fn begin(&mut self, header: &TraceHeader, _: &Plan) -> io::Result<()> {
        self.meter = header.meter;
        writeln!(self.out, "time_s,cpu,mhz,utilisation,watts,tasks")
    }

    fn step(&mut self, step: &Step) -> io::Result<()> {
        let s = &step.snapshot;
        let watts = s
            .power
            .energy_j(self.meter)
            .filter(|_| s.interval_s > 0.0)
            .map_or_else(String::new, |e| format!("{:.2}", e / s.interval_s));
        for c in &s.cpus {
            let tasks: Vec<&str> = s
                .live_managed()
                .filter(|t| t.cpu == Some(c.id))
                .map(|t| t.name.as_str())
                .collect();
            writeln!(
                self.out,
                "{:.3},{},{},{:.3},{},{}",
                s.time_s,
                c.id.0,
                c.freq_khz
                    .map_or_else(String::new, |k| (k / 1000).to_string()),
                c.utilisation,
                watts,
                tasks.join(";")
            )?;
        }
        Ok(())
    }

    fn end(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
