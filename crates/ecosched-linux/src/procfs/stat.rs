//! `/proc/<pid>/stat` and `/proc/<pid>/task/<tid>/stat` (proc(5)): the
//! fields ecosched needs — command name, state, parent, CPU times, nice,
//! thread count, start time (field 22, the half of a task's identity that
//! survives PID reuse), memory (for the exporter's `process_*` series) and
//! the CPU it last ran on (field 39).
//!
//! The command name is in parentheses and may itself contain spaces and
//! parentheses (`prctl(PR_SET_NAME)` accepts anything), so the fields are
//! split after the *last* `)`, as procps does.

use super::{number, ProcParseError};

/// The parsed fields of one `stat` file. Times are in clock ticks
/// (`sysconf(_SC_CLK_TCK)`), converted by the caller with injected host facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// Field 1: PID (the thread ID in a `task/<tid>/stat`).
    pub pid: u32,
    /// Field 2: command name without the parentheses (at most 15 bytes in
    /// the kernel, but any bytes).
    pub comm: String,
    /// Field 3: one-letter state (`R`, `S`, `D`, `T`, `t`, `Z`, `X`, `I`, …).
    pub state: char,
    /// Field 4: parent's PID (the parent process, not thread).
    pub ppid: u32,
    /// Field 14: user-mode time in clock ticks.
    pub utime_ticks: u64,
    /// Field 15: kernel-mode time in clock ticks.
    pub stime_ticks: u64,
    /// Fields 16 and 17: user plus kernel time of the children this
    /// process has waited for (and theirs, recursively), in clock ticks —
    /// the only trace a reaped child's CPU time leaves.
    pub children_ticks: u64,
    /// Field 19: nice value (-20..19).
    pub nice: i32,
    /// Field 20: threads in the process.
    pub num_threads: u32,
    /// Field 22: start time after boot in clock ticks.
    pub start_ticks: u64,
    /// Field 23: virtual memory size in bytes.
    pub vsize_bytes: u64,
    /// Field 24: resident set size in pages.
    pub rss_pages: u64,
    /// Field 39: CPU the task last ran on.
    pub processor: u32,
}

/// Parse the text of a `stat` file.
pub fn parse(text: &str) -> Result<Stat, ProcParseError> {
    let open = text
        .find('(')
        .ok_or_else(|| ProcParseError::new("no '(' before the command name"))?;
    let close = text
        .rfind(')')
        .filter(|&c| c > open)
        .ok_or_else(|| ProcParseError::new("no ')' after the command name"))?;
    let pid = number(Some(text[..open].trim()), "pid (1)")?;
    let comm = text[open + 1..close].to_string();
    // `rest[i]` is field i + 3: the state is field 3. On the stack: this
    // runs for every thread that ran at every read.
    let mut rest = [""; 37];
    let mut found = 0;
    for (slot, field) in rest
        .iter_mut()
        .zip(text[close + 1..].split_ascii_whitespace())
    {
        *slot = field;
        found += 1;
    }
    if found < rest.len() {
        return Err(ProcParseError::new(format!(
            "{found} fields after the command name, expected at least 37 (up to processor, field 39)"
        )));
    }
    let mut state_chars = rest[0].chars();
    let state = match (state_chars.next(), state_chars.next()) {
        (Some(c), None) if c.is_ascii_alphabetic() => c,
        _ => {
            return Err(ProcParseError::new(format!(
                "state (3): {:?} is not one letter",
                rest[0]
            )))
        }
    };
    let field = |n: usize| rest.get(n - 3).copied();
    Ok(Stat {
        pid,
        comm,
        state,
        ppid: number(field(4), "ppid (4)")?,
        utime_ticks: number(field(14), "utime (14)")?,
        stime_ticks: number(field(15), "stime (15)")?,
        children_ticks: number::<u64>(field(16), "cutime (16)")?
            .saturating_add(number(field(17), "cstime (17)")?),
        nice: number(field(19), "nice (19)")?,
        num_threads: number(field(20), "num_threads (20)")?,
        start_ticks: number(field(22), "starttime (22)")?,
        vsize_bytes: number(field(23), "vsize (23)")?,
        rss_pages: number(field(24), "rss (24)")?,
        processor: number(field(39), "processor (39)")?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A real line from a 6.x kernel (`cat /proc/self/stat`), 52 fields.
    const CAT: &str = "11378 (cat) R 11374 11378 11374 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 1 0 252847 5767168 256 18446744073709551615 94558287298560 94558287316913 140726609049920 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94558287330544 94558287332032 94558314106880 140726609055355 140726609055375 140726609055375 140726609063915 0\n";

    #[test]
    fn parses_a_real_line() {
        let s = parse(CAT).unwrap();
        assert_eq!(s.pid, 11378);
        assert_eq!(s.comm, "cat");
        assert_eq!(s.state, 'R');
        assert_eq!(s.ppid, 11374);
        assert_eq!((s.utime_ticks, s.stime_ticks), (0, 0));
        assert_eq!(s.children_ticks, 0);
        assert_eq!(s.nice, 0);
        assert_eq!(s.num_threads, 1);
        assert_eq!(s.start_ticks, 252_847);
        assert_eq!(s.processor, 1);
    }

    #[test]
    fn command_names_with_spaces_and_parentheses() {
        let hostile = CAT.replacen("(cat)", "(a) S 1 (b c))", 1);
        let s = parse(&hostile).unwrap();
        assert_eq!(s.comm, "a) S 1 (b c)");
        assert_eq!(s.state, 'R');
        assert_eq!(s.start_ticks, 252_847);
        let empty = CAT.replacen("(cat)", "()", 1);
        assert_eq!(parse(&empty).unwrap().comm, "");
    }

    #[test]
    fn negative_nice_and_large_values() {
        let line = CAT.replacen(
            " 98 0 0 0 0 0 0 0 20 0 1 0 252847 ",
            " 98 0 0 0 123 456 0 0 39 -19 4 0 18446744073709551615 ",
            1,
        );
        let s = parse(&line).unwrap();
        assert_eq!(s.nice, -19);
        assert_eq!(s.num_threads, 4);
        assert_eq!(s.start_ticks, u64::MAX);
        assert_eq!((s.utime_ticks, s.stime_ticks), (123, 456));
    }

    #[test]
    fn malformed_lines_are_errors_naming_the_field() {
        assert!(parse("").is_err());
        assert!(parse("11378 cat R 1").is_err());
        assert!(parse("11378 )cat( R 1").is_err());
        let short = "11378 (cat) R 11374 11378";
        assert!(parse(short).unwrap_err().reason.contains("fields"));
        let bad_start = CAT.replacen(" 252847 ", " 25x847 ", 1);
        let err = parse(&bad_start).unwrap_err();
        assert!(err.reason.contains("starttime (22)"), "{err}");
        let bad_state = CAT.replacen(") R ", ") RS ", 1);
        assert!(parse(&bad_state).unwrap_err().reason.contains("state"));
        let bad_pid = CAT.replacen("11378 (", "-1 (", 1);
        assert!(parse(&bad_pid).unwrap_err().reason.contains("pid"));
    }
}
