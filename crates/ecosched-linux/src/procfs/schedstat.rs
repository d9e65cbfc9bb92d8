//! `/proc/<pid>/task/<tid>/schedstat` (kernel `Documentation/scheduler/sched-stats.rst`):
//! three cumulative numbers per task — time on a CPU, time waiting on a run
//! queue (both ns) and the number of timeslices run. The first two are the
//! `on_cpu_ns` / `runqueue_wait_ns` counters policies use to tell a task
//! that is slow from one that is starved.

use super::{number, ProcParseError};

/// Cumulative scheduler statistics of one task since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedStat {
    /// Time spent on a CPU, ns.
    pub on_cpu_ns: u64,
    /// Time spent runnable but waiting for a CPU, ns.
    pub runqueue_wait_ns: u64,
    /// Timeslices run on a CPU.
    pub timeslices: u64,
}

/// Parse the text of a `schedstat` file.
pub fn parse(text: &str) -> Result<SchedStat, ProcParseError> {
    let mut fields = text.split_ascii_whitespace();
    let parsed = SchedStat {
        on_cpu_ns: number(fields.next(), "on-CPU time (1)")?,
        runqueue_wait_ns: number(fields.next(), "run-queue wait (2)")?,
        timeslices: number(fields.next(), "timeslices (3)")?,
    };
    match fields.next() {
        None => Ok(parsed),
        Some(extra) => Err(ProcParseError::new(format!(
            "unexpected fourth field {extra:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_the_three_numbers() {
        let s = parse("1033734 3202082 2\n").unwrap();
        assert_eq!(
            s,
            SchedStat {
                on_cpu_ns: 1_033_734,
                runqueue_wait_ns: 3_202_082,
                timeslices: 2
            }
        );
    }

    #[test]
    fn malformed_text_is_an_error() {
        assert!(parse("").is_err());
        assert!(parse("1 2").unwrap_err().reason.contains("timeslices"));
        assert!(parse("1 -2 3").unwrap_err().reason.contains("run-queue"));
        assert!(parse("1 2 3 4").unwrap_err().reason.contains("fourth"));
    }
}
