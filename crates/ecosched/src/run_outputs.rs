//! Everything a `sim` or `run` writes besides its summary, fed from the
//! one stream of control-loop steps: the trace (`--trace`, Perfetto or
//! JSON lines, see `trace_file.rs`), the CSV time series
//! (`--timeseries`) and the bounded series the HTML report plots
//! (`--report`). Every file is created before the run starts, so a path
//! that cannot be written is refused up front.

use crate::report;
use crate::timeseries::TimeseriesSink;
use crate::trace_file::{self, TraceFormat};
use anyhow::{Context, Result};
use ecosched_engine::series::{Series, SeriesSink};
use ecosched_model::schedule::RunSlice;
use ecosched_model::trace::TraceSink;
use ecosched_model::{Plan, Step, TraceHeader};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// The sinks of one run.
pub struct Outputs {
    trace: Box<dyn TraceSink>,
    timeseries: Option<TimeseriesSink<BufWriter<File>>>,
    series: Option<SeriesSink>,
}

impl Outputs {
    /// Open the files named (each optional).
    pub fn open(
        trace: Option<&Path>,
        trace_format: Option<TraceFormat>,
        timeseries: Option<&Path>,
        report: Option<&Path>,
    ) -> Result<Outputs> {
        let timeseries = match timeseries {
            Some(path) => {
                let file = ecosched_model::user_file::create_output(path).with_context(|| {
                    format!("cannot create the time-series file {}", path.display())
                })?;
                Some(TimeseriesSink::new(BufWriter::new(file)))
            }
            None => None,
        };
        if let Some(path) = report {
            report::check_writable(path)?;
        }
        Ok(Outputs {
            trace: trace_file::open(trace, trace_format)?,
            timeseries,
            series: report.map(|_| SeriesSink::new(report::POINTS)),
        })
    }

    /// The series for the report, if one was asked for.
    pub fn into_series(self) -> Option<Series> {
        self.series.map(SeriesSink::into_series)
    }
}

impl TraceSink for Outputs {
    fn begin(&mut self, header: &TraceHeader, initial_plan: &Plan) -> std::io::Result<()> {
        self.trace.begin(header, initial_plan)?;
        if let Some(t) = &mut self.timeseries {
            t.begin(header, initial_plan)?;
        }
        if let Some(s) = &mut self.series {
            s.begin(header, initial_plan)?;
        }
        Ok(())
    }
    fn step(&mut self, step: &Step) -> std::io::Result<()> {
        self.trace.step(step)?;
        if let Some(t) = &mut self.timeseries {
            t.step(step)?;
        }
        if let Some(s) = &mut self.series {
            s.step(step)?;
        }
        Ok(())
    }
    fn wants_schedule(&self) -> bool {
        self.trace.wants_schedule()
    }
    fn schedule_source(&mut self, source: Option<&str>) {
        self.trace.schedule_source(source);
    }
    fn schedule(&mut self, slices: &[RunSlice], dropped: u64) -> std::io::Result<()> {
        self.trace.schedule(slices, dropped)
    }
    fn end(&mut self) -> std::io::Result<()> {
        self.trace.end()?;
        if let Some(t) = &mut self.timeseries {
            t.end()?;
        }
        Ok(())
    }
}
