//! Trace sinks that write: JSON lines, one record per line, so that a
//! program can follow a run as it happens (`tail -f`, `jq`) and a run of
//! any length writes as it goes instead of holding its steps.
//!
//! The first line is `{"header": …, "initial_plan": …}`; every later line is
//! one step, `{"snapshot": …, "plan": …}`, in the field names of
//! [`ecosched_model::Step`].

use ecosched_model::trace::TraceSink;
use ecosched_model::{Plan, Step, TraceHeader};
use serde::Serialize;
use std::io::{self, Write};

/// Writes each record as one line of JSON.
pub struct JsonLinesSink<W: Write> {
    out: W,
}

#[derive(Serialize)]
struct HeaderLine<'a> {
    header: &'a TraceHeader,
    initial_plan: &'a Plan,
}

impl<W: Write> JsonLinesSink<W> {
    /// Write to `out` (wrap a file in a `BufWriter`).
    pub fn new(out: W) -> Self {
        JsonLinesSink { out }
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn line(&mut self, value: &impl Serialize) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, value).map_err(io::Error::other)?;
        self.out.write_all(b"\n")
    }
}

impl<W: Write> TraceSink for JsonLinesSink<W> {
    fn begin(&mut self, header: &TraceHeader, initial_plan: &Plan) -> io::Result<()> {
        self.line(&HeaderLine {
            header,
            initial_plan,
        })
    }

    fn step(&mut self, step: &Step) -> io::Result<()> {
        self.line(step)
    }

    fn end(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
