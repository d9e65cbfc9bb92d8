//! `/proc/<pid>/task/<tid>/status` (proc(5)): the `Key:\tvalue` lines ecosched
//! uses — thread-group and parent IDs, voluntary and involuntary context
//! switches, and the CPUs the task may run on (`Cpus_allowed_list`, which is
//! what a pinning policy changes and what the live tests check).

use super::{number, ProcParseError};
use ecosched_model::CpuSet;

/// The parsed fields of one `status` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// Thread-group ID: the process a thread belongs to.
    pub tgid: u32,
    /// Parent process ID.
    pub ppid: u32,
    /// Context switches the task asked for (blocking), if the kernel reports them.
    pub voluntary_ctxt_switches: Option<u64>,
    /// Context switches forced on it (preemption), if reported.
    pub nonvoluntary_ctxt_switches: Option<u64>,
    /// CPUs it may run on, if reported.
    pub cpus_allowed: Option<CpuSet>,
}

impl Status {
    /// Voluntary plus involuntary switches, when both are reported.
    pub fn context_switches(&self) -> Option<u64> {
        Some(self.voluntary_ctxt_switches? + self.nonvoluntary_ctxt_switches?)
    }
}

/// Parse the text of a `status` file. `Tgid` and `PPid` must be present; the
/// other fields are `None` when their line is missing (older kernels) but an
/// error when present and malformed.
pub fn parse(text: &str) -> Result<Status, ProcParseError> {
    let mut tgid = None;
    let mut ppid = None;
    let mut voluntary = None;
    let mut nonvoluntary = None;
    let mut allowed = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key {
            "Tgid" => tgid = Some(number(Some(value), "Tgid")?),
            "PPid" => ppid = Some(number(Some(value), "PPid")?),
            "voluntary_ctxt_switches" => {
                voluntary = Some(number(Some(value), "voluntary_ctxt_switches")?)
            }
            "nonvoluntary_ctxt_switches" => {
                nonvoluntary = Some(number(Some(value), "nonvoluntary_ctxt_switches")?)
            }
            "Cpus_allowed_list" => {
                allowed = Some(
                    CpuSet::parse_list(value)
                        .map_err(|e| ProcParseError::new(format!("Cpus_allowed_list: {e}")))?,
                )
            }
            _ => {}
        }
    }
    Ok(Status {
        tgid: tgid.ok_or_else(|| ProcParseError::new("no Tgid line"))?,
        ppid: ppid.ok_or_else(|| ProcParseError::new("no PPid line"))?,
        voluntary_ctxt_switches: voluntary,
        nonvoluntary_ctxt_switches: nonvoluntary,
        cpus_allowed: allowed,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const STATUS: &str = "Name:\tstress-ng (cpu)\nUmask:\t0022\nState:\tR (running)\nTgid:\t4242\nNgid:\t0\nPid:\t4243\nPPid:\t4200\nTracerPid:\t0\nThreads:\t3\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0\nvoluntary_ctxt_switches:\t17\nnonvoluntary_ctxt_switches:\t1205\n";

    #[test]
    fn parses_the_fields_ecosched_uses() {
        let s = parse(STATUS).unwrap();
        assert_eq!(s.tgid, 4242);
        assert_eq!(s.ppid, 4200);
        assert_eq!(s.voluntary_ctxt_switches, Some(17));
        assert_eq!(s.nonvoluntary_ctxt_switches, Some(1205));
        assert_eq!(s.context_switches(), Some(1222));
        assert_eq!(s.cpus_allowed.unwrap().to_list(), "0-1");
    }

    #[test]
    fn a_name_with_a_colon_does_not_confuse_the_keys() {
        let text = STATUS.replace("Name:\tstress-ng (cpu)", "Name:\tTgid: 1 (x)");
        assert_eq!(parse(&text).unwrap().tgid, 4242);
    }

    #[test]
    fn missing_optional_lines_are_none_and_bad_values_are_errors() {
        let minimal = "Tgid:\t7\nPPid:\t1\n";
        let s = parse(minimal).unwrap();
        assert_eq!((s.tgid, s.ppid), (7, 1));
        assert_eq!(s.context_switches(), None);
        assert_eq!(s.cpus_allowed, None);
        assert!(parse("PPid:\t1\n").unwrap_err().reason.contains("Tgid"));
        assert!(parse("").is_err());
        let bad = STATUS.replace("1205", "many");
        assert!(parse(&bad).unwrap_err().reason.contains("nonvoluntary"));
        let bad = STATUS.replace("0-1", "1-0");
        assert!(parse(&bad)
            .unwrap_err()
            .reason
            .contains("Cpus_allowed_list"));
    }
}
