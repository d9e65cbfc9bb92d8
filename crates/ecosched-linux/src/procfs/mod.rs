//! Pure parsers for the per-task and system files of `/proc` (proc(5)):
//! `<pid>/stat`, `<pid>/schedstat`, `<pid>/status`, `loadavg` and the
//! `btime` line of `stat`.
//!
//! Following the `procfs-core` split, nothing here touches the file system:
//! every parser takes the text and returns typed values, so the formats are
//! tested on literal strings (including malformed ones and hostile command
//! names) and the I/O side ([`crate::tasks`]) stays thin. Host facts such as
//! clock ticks per second are not read here; values stay in the kernel's
//! units (ticks, nanoseconds) and callers convert with injected facts.

pub mod cpuinfo;
pub mod loadavg;
pub mod schedstat;
pub mod stat;
pub mod status;

pub use loadavg::LoadAvg;
pub use schedstat::SchedStat;
pub use stat::Stat;
pub use status::Status;

/// Why a `/proc` file's text did not parse. Parsers do not know the path;
/// the reader wraps this into [`crate::LinuxError::Parse`] with the file
/// name and the offending text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct ProcParseError {
    /// What was expected and not found.
    pub reason: String,
}

impl ProcParseError {
    pub(crate) fn new(reason: impl Into<String>) -> Self {
        ProcParseError {
            reason: reason.into(),
        }
    }
}

/// Parse one whitespace-separated numeric field, naming it in the error.
pub(crate) fn number<T: std::str::FromStr>(
    field: Option<&str>,
    name: &str,
) -> Result<T, ProcParseError> {
    let text = field.ok_or_else(|| ProcParseError::new(format!("missing field {name}")))?;
    text.parse()
        .map_err(|_| ProcParseError::new(format!("field {name}: {text:?} is not a number")))
}

/// The boot time (`btime`, seconds since the Unix epoch) from the text of
/// `/proc/stat`; with a task's start time in ticks it dates the task.
pub fn parse_btime(proc_stat: &str) -> Result<u64, ProcParseError> {
    let line = proc_stat
        .lines()
        .find(|l| l.starts_with("btime "))
        .ok_or_else(|| ProcParseError::new("no btime line"))?;
    number(line.split_whitespace().nth(1), "btime")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn btime_is_found_among_the_other_lines() {
        let text =
            "cpu  10 0 5 100 0 0 0 0 0 0\nintr 1 2\nctxt 99\nbtime 1763716000\nprocesses 42\n";
        assert_eq!(parse_btime(text).unwrap(), 1_763_716_000);
        assert!(parse_btime("cpu 1 2 3\n").is_err());
        let err = parse_btime("btime soon\n").unwrap_err();
        assert!(err.reason.contains("soon"), "{err}");
    }
}
