//! `--trace FILE` and `--trace-format`: where `sim` and `run` stream their
//! steps, and in which format. The file is created before anything runs,
//! so a path that cannot be written is refused up front rather than after
//! an hour of simulation.
//!
//! Without `--trace-format` the name decides, as `--help` says: a name
//! ending in `.json` promises one JSON document, so it gets the Perfetto
//! trace (`perfetto.rs`); any other name gets JSON lines, the format for
//! programs (`jq`, `tail -f`).

use anyhow::{Context, Result};
use ecosched_control::JsonLinesSink;
use ecosched_model::trace::{NullSink, TraceSink};
use std::io::BufWriter;
use std::path::Path;

/// What `--trace` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// Chrome trace-event JSON, for ui.perfetto.dev.
    Perfetto,
    /// One JSON object per line: the header, then every step.
    Jsonl,
}

impl TraceFormat {
    /// The format `--trace-format` names, else the one `path`'s name
    /// implies.
    pub fn of(chosen: Option<TraceFormat>, path: &Path) -> TraceFormat {
        chosen.unwrap_or_else(|| {
            let json = path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"));
            if json {
                TraceFormat::Perfetto
            } else {
                TraceFormat::Jsonl
            }
        })
    }
}

/// A sink writing `path` in `format` (or the one its name implies), or
/// one that keeps nothing.
pub fn open(path: Option<&Path>, format: Option<TraceFormat>) -> Result<Box<dyn TraceSink>> {
    Ok(match path {
        Some(path) => {
            let file = ecosched_model::user_file::create_output(path)
                .with_context(|| format!("cannot create the trace file {}", path.display()))?;
            match TraceFormat::of(format, path) {
                TraceFormat::Perfetto => {
                    Box::new(crate::perfetto::PerfettoSink::new(BufWriter::new(file)))
                }
                TraceFormat::Jsonl => Box::new(JsonLinesSink::new(BufWriter::new(file))),
            }
        }
        None => Box::new(NullSink),
    })
}

#[cfg(test)]
mod tests {
    use super::TraceFormat;
    use std::path::Path;

    #[test]
    fn the_flag_wins_and_a_json_name_means_perfetto_without_it() {
        let of = TraceFormat::of;
        assert_eq!(
            of(None, Path::new("a.perfetto.json")),
            TraceFormat::Perfetto
        );
        assert_eq!(of(None, Path::new("a.JSON")), TraceFormat::Perfetto);
        assert_eq!(of(None, Path::new("a.jsonl")), TraceFormat::Jsonl);
        assert_eq!(of(None, Path::new("trace")), TraceFormat::Jsonl);
        let chosen = Some(TraceFormat::Jsonl);
        assert_eq!(of(chosen, Path::new("a.json")), TraceFormat::Jsonl);
        let chosen = Some(TraceFormat::Perfetto);
        assert_eq!(of(chosen, Path::new("a.txt")), TraceFormat::Perfetto);
    }
}
