//! Reading a node's activity from its ecosched daemon's exporter
//! (`GET /metrics`, the classic text format): per group, the CPU seconds
//! its tasks used and how many tasks it has. A Slurm job `N` managed
//! through the Prolog is group `job-N`.
//!
//! The activity vector's memory-bus component needs the shared-cache miss
//! counters (Merkel et al., EuroSys'10, §4.1): the exporter publishes them
//! per group (`ecosched_group_llc_misses_total`) only where the node reads
//! hardware counters. Without them (a VM) only the CPU use is measured, and
//! classes come from a declaration or an earlier run (see `store`).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// How long a node's exporter may take to answer.
pub const TIMEOUT: Duration = Duration::from_secs(3);

/// What one group used, as exported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupActivity {
    /// CPU seconds its tasks used since it started.
    pub cpu_s: f64,
    /// Its live tasks.
    pub tasks: i64,
    /// Shared-cache misses of its tasks, where the node counts them.
    pub llc_misses: Option<f64>,
}

/// Why a node could not be read.
#[derive(Debug, thiserror::Error)]
#[error("node exporter {addr}: {what}")]
pub struct ScrapeError {
    /// The exporter's address.
    pub addr: String,
    /// What went wrong.
    pub what: String,
}

/// Fetch and parse `http://addr/metrics`.
pub fn fetch(addr: &str) -> Result<BTreeMap<String, GroupActivity>, ScrapeError> {
    let err = |what: String| ScrapeError {
        addr: addr.to_string(),
        what,
    };
    let sock = addr
        .parse::<std::net::SocketAddr>()
        .map_err(|e| err(format!("not an address:port ({e})")))?;
    let mut stream = TcpStream::connect_timeout(&sock, TIMEOUT)
        .map_err(|e| err(format!("cannot connect: {e}")))?;
    stream
        .set_read_timeout(Some(TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(TIMEOUT)))
        .map_err(|e| err(e.to_string()))?;
    write!(
        stream,
        "GET /metrics HTTP/1.0\r\nHost: {addr}\r\nAccept: text/plain\r\n\r\n"
    )
    .map_err(|e| err(format!("cannot send the request: {e}")))?;
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .map_err(|e| err(format!("cannot read the answer: {e}")))?;
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .ok_or_else(|| err("malformed HTTP answer".into()))?;
    let status = head.split_whitespace().nth(1);
    if !head.starts_with("HTTP/1.") || status != Some("200") {
        return Err(err(format!(
            "answered {:?}",
            head.lines().next().unwrap_or_default()
        )));
    }
    Ok(parse(body))
}

/// The groups' activity in an exposition text; lines that are not one of
/// the two series are skipped.
pub fn parse(text: &str) -> BTreeMap<String, GroupActivity> {
    let mut out: BTreeMap<String, GroupActivity> = BTreeMap::new();
    for line in text.lines() {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let Some((name, labels)) = series.split_once('{') else {
            continue;
        };
        let Some(group) = labels
            .trim_end_matches('}')
            .split(',')
            .find_map(|l| l.strip_prefix("group=\""))
            .map(|g| g.trim_end_matches('"').to_string())
        else {
            continue;
        };
        match name {
            "ecosched_group_cpu_seconds_total" => out.entry(group).or_default().cpu_s = value,
            "ecosched_group_tasks" => out.entry(group).or_default().tasks = value as i64,
            "ecosched_group_llc_misses_total" => {
                out.entry(group).or_default().llc_misses = Some(value);
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn groups_are_read_and_the_rest_skipped() {
        let text = "# HELP ecosched_group_tasks Live tasks.\n\
ecosched_group_tasks{group=\"job-7\"} 2\n\
ecosched_group_cpu_seconds_total{group=\"job-7\"} 12.5\n\
ecosched_power_watts{zone=\"package-0\",source=\"estimate\"} 30\n\
ecosched_group_cpu_seconds_total{group=\"job-8\"} nope\n\
ecosched_group_llc_misses_total{group=\"job-9\"} 4000\n\
garbage\n";
        let g = parse(text);
        assert_eq!(g.len(), 2);
        assert_eq!(
            g["job-7"],
            GroupActivity {
                cpu_s: 12.5,
                tasks: 2,
                llc_misses: None,
            }
        );
        assert_eq!(g["job-9"].llc_misses, Some(4000.0));
    }

    #[test]
    fn an_absent_exporter_is_a_clear_error() {
        let e = fetch("127.0.0.1:1").unwrap_err().to_string();
        assert!(
            e.starts_with("node exporter 127.0.0.1:1: cannot connect"),
            "{e}"
        );
        let e = fetch("nowhere").unwrap_err().to_string();
        assert!(e.contains("not an address"), "{e}");
    }
}
