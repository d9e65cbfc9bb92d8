//! The exporter's `process_*` series: the daemon's own CPU time, memory,
//! descriptors, threads and start time, under the names every Prometheus
//! client library gives them, so that the dashboards and alerts written
//! for any exporter's process work on this one.
//!
//! They are read from `/proc/self` when a scrape asks, never kept: each
//! read is bounded ([`READ_MAX`]), and a file that cannot be read leaves
//! its series out of that scrape rather than failing it.
//!
//! | series | from |
//! |---|---|
//! | `process_cpu_seconds_total` | `stat` fields 14–15 (utime + stime) / `CLK_TCK` |
//! | `process_virtual_memory_bytes` | `stat` field 23 (vsize) |
//! | `process_resident_memory_bytes` | `stat` field 24 (rss, pages) × page size |
//! | `process_threads` | `stat` field 20 (num_threads) |
//! | `process_start_time_seconds` | `stat` field 22 (starttime, ticks since boot) / `CLK_TCK` + `btime` of `/proc/stat` |
//! | `process_open_fds` | entries of `fd/` |
//! | `process_max_fds` | the soft `Max open files` of `limits` |
//!
//! Field numbers are those of proc(5).

use ecosched_linux::procfs;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The most read of any one file (`stat` and `limits` are well under a
/// kilobyte; `/proc/stat`'s `btime` line comes after one line per CPU and
/// the interrupt counts).
pub const READ_MAX: u64 = 1 << 20;

/// The most `fd/` entries counted: far above any descriptor limit the
/// daemon sets, so the count is exact in practice and the walk bounded.
const FDS_MAX: usize = 1 << 20;

/// Reads the `process_*` series of one process at each scrape.
#[derive(Debug)]
pub struct ProcessCollector {
    /// `/proc/self`, or a recorded directory in tests.
    dir: PathBuf,
    /// Clock ticks per second (`sysconf(_SC_CLK_TCK)`).
    ticks: f64,
    /// Bytes per page (`sysconf(_SC_PAGE_SIZE)`).
    page: f64,
    /// Boot time in seconds since the epoch (`btime`), read once: it does
    /// not change while the machine runs.
    boot_s: Option<f64>,
}

impl ProcessCollector {
    /// The collector of this process.
    pub fn own() -> Self {
        use nix::unistd::{sysconf, SysconfVar};
        let conf = |v, default: f64| match sysconf(v) {
            Ok(Some(n)) if n > 0 => n as f64,
            _ => default,
        };
        ProcessCollector {
            dir: PathBuf::from("/proc/self"),
            ticks: conf(SysconfVar::CLK_TCK, 100.0),
            page: conf(SysconfVar::PAGE_SIZE, 4096.0),
            boot_s: read_bounded(Path::new("/proc/stat"))
                .and_then(|t| procfs::parse_btime(&t).ok())
                .map(|b| b as f64),
        }
    }

    /// The collector of the process whose proc directory is `dir`, on a
    /// machine booted at `boot_s`.
    pub fn of(dir: impl Into<PathBuf>, ticks: f64, page: f64, boot_s: Option<f64>) -> Self {
        ProcessCollector {
            dir: dir.into(),
            ticks,
            page,
            boot_s,
        }
    }
}

/// Read at most [`READ_MAX`] bytes of `path`.
fn read_bounded(path: &Path) -> Option<String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(READ_MAX)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// The soft `Max open files` of `/proc/<pid>/limits` (`None` when
/// unlimited or absent).
pub fn parse_max_fds(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Entries of `fd/`, at most [`FDS_MAX`].
fn count_fds(dir: &Path) -> Option<u64> {
    let n = std::fs::read_dir(dir).ok()?.take(FDS_MAX).count();
    u64::try_from(n).ok()
}

/// Encode one unlabelled gauge.
fn gauge(enc: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> std::fmt::Result {
    let g = ConstGauge::new(v);
    g.encode(enc.encode_descriptor(name, help, None, g.metric_type())?)
}

impl Collector for ProcessCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stat = read_bounded(&self.dir.join("stat")).and_then(|t| procfs::stat::parse(&t).ok());
        if let Some(s) = stat {
            let cpu_ticks = s.utime_ticks.saturating_add(s.stime_ticks);
            let cpu = ConstCounter::new(cpu_ticks as f64 / self.ticks);
            cpu.encode(enc.encode_descriptor(
                "process_cpu_seconds",
                "User and system CPU time the daemon has used",
                None,
                cpu.metric_type(),
            )?)?;
            gauge(
                &mut enc,
                "process_virtual_memory_bytes",
                "Virtual memory size of the daemon",
                s.vsize_bytes as f64,
            )?;
            gauge(
                &mut enc,
                "process_resident_memory_bytes",
                "Resident memory of the daemon",
                s.rss_pages as f64 * self.page,
            )?;
            gauge(
                &mut enc,
                "process_threads",
                "Threads of the daemon (one per group, the exporter's, the control socket's ...)",
                f64::from(s.num_threads),
            )?;
            if let Some(boot) = self.boot_s {
                gauge(
                    &mut enc,
                    "process_start_time_seconds",
                    "When the daemon started, in seconds since the Unix epoch",
                    boot + s.start_ticks as f64 / self.ticks,
                )?;
            }
        }
        if let Some(n) = count_fds(&self.dir.join("fd")) {
            gauge(
                &mut enc,
                "process_open_fds",
                "Open file descriptors of the daemon",
                n as f64,
            )?;
        }
        let max = read_bounded(&self.dir.join("limits")).and_then(|t| parse_max_fds(&t));
        if let Some(max) = max {
            gauge(
                &mut enc,
                "process_max_fds",
                "The daemon's limit of open file descriptors (soft)",
                max as f64,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A `stat` line of a real process whose name holds `) (`: fields from
    /// utime on are 7 3 0 0 20 0 5 0 4242 123456789 2048.
    const STAT: &str = "1234 (a) (b c) S 1 1234 1234 0 -1 4194560 300 0 0 0 7 3 0 0 20 0 5 0 4242 123456789 2048 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let s = procfs::stat::parse(STAT).unwrap();
        assert_eq!(
            (
                s.utime_ticks + s.stime_ticks,
                s.num_threads,
                s.start_ticks,
                s.vsize_bytes,
                s.rss_pages
            ),
            (10, 5, 4242, 123_456_789, 2048)
        );
        assert!(procfs::stat::parse("1234 (x) S 1").is_err());
    }

    #[test]
    fn the_soft_descriptor_limit_is_read() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max processes             95473                95473                processes \n\
                      Max open files            524288               524288               files     \n";
        assert_eq!(parse_max_fds(limits), Some(524_288));
        assert_eq!(
            parse_max_fds(
                "Max open files            unlimited            unlimited            files\n"
            ),
            None
        );
    }

    #[test]
    fn a_recorded_process_gives_every_series_in_base_units() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("stat"), STAT).unwrap();
        std::fs::write(
            dir.path().join("limits"),
            "Max open files            1024                 4096                 files\n",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("fd")).unwrap();
        for n in 0..3 {
            std::fs::write(dir.path().join("fd").join(n.to_string()), "").unwrap();
        }
        let mut r = prometheus_client::registry::Registry::default();
        r.register_collector(Box::new(ProcessCollector::of(
            dir.path(),
            100.0,
            4096.0,
            Some(1_700_000_000.0),
        )));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &r).unwrap();
        for line in [
            "# TYPE process_cpu_seconds counter",
            "process_cpu_seconds_total 0.1",
            "process_virtual_memory_bytes 123456789.0",
            "process_resident_memory_bytes 8388608.0",
            "process_threads 5.0",
            "process_start_time_seconds 1700000042.42",
            "process_open_fds 3.0",
            "process_max_fds 1024.0",
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
    }

    #[test]
    fn this_process_reads_itself() {
        let mut r = prometheus_client::registry::Registry::default();
        r.register_collector(Box::new(ProcessCollector::own()));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &r).unwrap();
        for name in [
            "process_cpu_seconds_total ",
            "process_resident_memory_bytes ",
            "process_start_time_seconds ",
            "process_open_fds ",
            "process_max_fds ",
            "process_threads ",
        ] {
            assert!(text.contains(name), "{name} missing from\n{text}");
        }
    }
}
