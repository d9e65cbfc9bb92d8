//! `--trace FILE`: where `sim` and `run` stream their steps. The file is
//! created before anything runs, so a path that cannot be written is
//! refused up front rather than after an hour of simulation. A name ending
//! in `.perfetto.json` gets Chrome trace-event JSON for ui.perfetto.dev
//! (`perfetto.rs`); any other name gets JSON lines.

use anyhow::{Context, Result};
use ecosched_control::JsonLinesSink;
use ecosched_model::trace::{NullSink, TraceSink};
use std::io::BufWriter;
use std::path::Path;

/// A JSON-lines (or, for `*.perfetto.json`, Perfetto) sink writing to
/// `path`, or one that keeps nothing.
pub fn open(path: Option<&Path>) -> Result<Box<dyn TraceSink>> {
    Ok(match path {
        Some(path) => {
            let file = ecosched_model::user_file::create_output(path)
                .with_context(|| format!("cannot create the trace file {}", path.display()))?;
            let perfetto = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".perfetto.json"));
            if perfetto {
                Box::new(crate::perfetto::PerfettoSink::new(BufWriter::new(file)))
            } else {
                Box::new(JsonLinesSink::new(BufWriter::new(file)))
            }
        }
        None => Box::new(NullSink),
    })
}
