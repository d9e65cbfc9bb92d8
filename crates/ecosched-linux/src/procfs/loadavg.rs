//! `/proc/loadavg` (proc(5)): the 1/5/15-minute load averages and the
//! number of runnable and existing scheduling entities — a cheap
//! whole-machine view of how oversubscribed the CPUs are.

use super::{number, ProcParseError};

/// The contents of `/proc/loadavg`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadAvg {
    /// Load average over 1 minute.
    pub one: f64,
    /// Load average over 5 minutes.
    pub five: f64,
    /// Load average over 15 minutes.
    pub fifteen: f64,
    /// Scheduling entities (threads) currently runnable.
    pub runnable: u32,
    /// Scheduling entities that exist.
    pub total: u32,
    /// PID most recently handed out.
    pub last_pid: u32,
}

/// Parse the text of `/proc/loadavg`.
pub fn parse(text: &str) -> Result<LoadAvg, ProcParseError> {
    let mut fields = text.split_whitespace();
    let one = number(fields.next(), "1-minute load")?;
    let five = number(fields.next(), "5-minute load")?;
    let fifteen = number(fields.next(), "15-minute load")?;
    let entities = fields
        .next()
        .ok_or_else(|| ProcParseError::new("missing runnable/total field"))?;
    let (runnable, total) = entities
        .split_once('/')
        .ok_or_else(|| ProcParseError::new(format!("{entities:?} is not runnable/total")))?;
    Ok(LoadAvg {
        one,
        five,
        fifteen,
        runnable: number(Some(runnable), "runnable")?,
        total: number(Some(total), "total")?,
        last_pid: number(fields.next(), "last pid")?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_a_real_line() {
        let l = parse("0.96 1.53 1.80 3/99 11378\n").unwrap();
        assert_eq!((l.one, l.five, l.fifteen), (0.96, 1.53, 1.80));
        assert_eq!((l.runnable, l.total, l.last_pid), (3, 99, 11378));
    }

    #[test]
    fn malformed_lines_are_errors() {
        assert!(parse("").is_err());
        assert!(parse("0.1 0.2 0.3 3-99 1")
            .unwrap_err()
            .reason
            .contains("runnable/total"));
        assert!(parse("0.1 0.2 x 3/99 1")
            .unwrap_err()
            .reason
            .contains("15-minute"));
        assert!(parse("0.1 0.2 0.3 3/99")
            .unwrap_err()
            .reason
            .contains("last pid"));
    }
}
