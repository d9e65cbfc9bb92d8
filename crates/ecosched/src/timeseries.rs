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
//!
//! Written by the `csv` crate (RFC 4180): a field holding a comma, a quote
//! or a line break is quoted, with quotes doubled, so a task named
//! `st,re"ss` stays in its column for pandas, R or a spreadsheet.

use ecosched_model::trace::TraceSink;
use ecosched_model::{Meter, Plan, Step, TraceHeader};
use serde::Serialize;
use std::io::{self, Write};

/// One CSV row, its fields in the header's order.
#[derive(Serialize)]
struct Row<'a> {
    /// Seconds since the start, three decimals.
    time_s: &'a str,
    cpu: u32,
    /// Empty where the platform reads no frequency.
    mhz: Option<u64>,
    /// Busy share of the interval, three decimals.
    utilisation: String,
    /// Empty where no meter or estimate covers the interval.
    watts: Option<&'a str>,
    tasks: &'a str,
}

/// Writes the CSV rows.
pub struct TimeseriesSink<W: Write> {
    out: csv::Writer<W>,
    meter: Meter,
}

impl<W: Write> TimeseriesSink<W> {
    /// Write to `out` (wrap a file in a `BufWriter`).
    pub fn new(out: W) -> Self {
        TimeseriesSink {
            out: csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(out),
            meter: Meter::System,
        }
    }
}

/// A CSV error as the I/O error the sink reports.
fn io_error(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => io::Error::other(format!("{other:?}")),
    }
}

impl<W: Write> TraceSink for TimeseriesSink<W> {
    fn begin(&mut self, header: &TraceHeader, _: &Plan) -> io::Result<()> {
        self.meter = header.meter;
        // Written here rather than from the first row's field names, so
        // that a run without a single step still leaves a header.
        self.out
            .write_record(["time_s", "cpu", "mhz", "utilisation", "watts", "tasks"])
            .map_err(io_error)
    }

    fn step(&mut self, step: &Step) -> io::Result<()> {
        let s = &step.snapshot;
        let watts = s
            .power
            .energy_j(self.meter)
            .filter(|_| s.interval_s > 0.0)
            .map(|e| format!("{:.2}", e / s.interval_s));
        let time_s = format!("{:.3}", s.time_s);
        for c in &s.cpus {
            let tasks: Vec<&str> = s
                .live_managed()
                .filter(|t| t.cpu == Some(c.id))
                .map(|t| t.name.as_str())
                .collect();
            let tasks = tasks.join(";");
            self.out
                .serialize(Row {
                    time_s: &time_s,
                    cpu: c.id.0,
                    mhz: c.freq_khz.map(|k| k / 1000),
                    utilisation: format!("{:.3}", c.utilisation),
                    watts: watts.as_deref(),
                    tasks: &tasks,
                })
                .map_err(io_error)?;
        }
        Ok(())
    }

    fn end(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
