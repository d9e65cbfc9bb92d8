//! `--trace FILE`: where `sim` and `run` stream their steps. The file is
//! created before anything runs, so a path that cannot be written is
//! refused up front rather than after an hour of simulation.

use anyhow::{Context, Result};
use ecosched_control::JsonLinesSink;
use ecosched_model::trace::{NullSink, TraceSink};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// A JSON-lines sink writing to `path`, or one that keeps nothing.
pub fn open(path: Option<&Path>) -> Result<Box<dyn TraceSink>> {
    Ok(match path {
        Some(path) => {
            let file = File::create(path)
                .with_context(|| format!("cannot create the trace file {}", path.display()))?;
            Box::new(JsonLinesSink::new(BufWriter::new(file)))
        }
        None => Box::new(NullSink),
    })
}
