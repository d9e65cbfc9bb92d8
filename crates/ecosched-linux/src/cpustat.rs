//! Per-CPU utilisation from the `cpuN` lines of `/proc/stat` (cumulative
//! jiffies per state), and each CPU's current frequency from cpufreq's
//! `scaling_cur_freq` when cpufreq exists. Utilisation over an interval is
//! the busy share of the jiffies that passed: everything but `idle` and
//! `iowait`. `steal` counts as busy: the CPU was not available to us.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use ecosched_model::{CpuId, CpuSample};
use std::collections::BTreeMap;

/// Cumulative jiffies of one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    /// All states.
    pub total: u64,
    /// `idle` + `iowait`.
    pub idle: u64,
}

/// Parse the `cpuN` lines of `/proc/stat` (the aggregate `cpu` line is
/// skipped).
pub fn parse(text: &str) -> Result<BTreeMap<CpuId, CpuTimes>, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(name) = fields.next() else { continue };
        let Some(num) = name.strip_prefix("cpu").filter(|n| !n.is_empty()) else {
            continue;
        };
        let id: u32 = num.parse().map_err(|_| format!("bad CPU name {name:?}"))?;
        let values: Vec<u64> = fields
            .map(|f| f.parse().map_err(|_| format!("{name}: bad value {f:?}")))
            .collect::<Result<_, _>>()?;
        if values.len() < 4 {
            return Err(format!(
                "{name}: expected at least 4 values, found {}",
                values.len()
            ));
        }
        // guest and guest_nice (fields 9, 10) are already inside user/nice.
        let total: u64 = values.iter().take(8).sum();
        let idle = values[3] + values.get(4).copied().unwrap_or(0);
        out.insert(CpuId(id), CpuTimes { total, idle });
    }
    Ok(out)
}

/// Samples per-CPU utilisation between calls.
#[derive(Debug)]
pub struct CpuStat {
    root: FsRoot,
    previous: BTreeMap<CpuId, CpuTimes>,
}

impl CpuStat {
    /// Start sampling (the first [`CpuStat::sample`] covers the time since).
    pub fn new(root: FsRoot) -> Result<Self, LinuxError> {
        let previous = read(&root)?;
        Ok(CpuStat { root, previous })
    }

    /// Each online CPU's utilisation since the previous call, with its
    /// current frequency when cpufreq reports one.
    pub fn sample(&mut self) -> Result<Vec<CpuSample>, LinuxError> {
        let now = read(&self.root)?;
        let mut out = Vec::with_capacity(now.len());
        for (&id, t) in &now {
            let before = self.previous.get(&id).copied().unwrap_or_default();
            let total = t.total.saturating_sub(before.total);
            let idle = t.idle.saturating_sub(before.idle).min(total);
            let utilisation = if total == 0 {
                0.0
            } else {
                (total - idle) as f64 / total as f64
            };
            let freq_khz = self.root.read_u64_opt(&format!(
                "sys/devices/system/cpu/cpu{}/cpufreq/scaling_cur_freq",
                id.0
            ))?;
            out.push(CpuSample {
                id,
                freq_khz,
                utilisation,
                nr_running: None,
            });
        }
        self.previous = now;
        Ok(out)
    }
}

fn read(root: &FsRoot) -> Result<BTreeMap<CpuId, CpuTimes>, LinuxError> {
    let text = root.read("proc/stat", "kernel statistics")?;
    parse(&text).map_err(|e| LinuxError::parse(&root.path("proc/stat"), &text, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_per_cpu_lines_and_skips_the_aggregate() {
        let text = "cpu  10 0 10 80 0 0 0 0 0 0\n\
                    cpu0 5 0 5 40 2 0 0 1 0 0\n\
                    cpu1 5 0 5 40 0 0 0 0 3 0\n\
                    intr 12345\nctxt 99\n";
        let t = parse(text).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            t[&CpuId(0)],
            CpuTimes {
                total: 53,
                idle: 42
            }
        );
        assert_eq!(
            t[&CpuId(1)],
            CpuTimes {
                total: 50,
                idle: 40
            }
        );
    }

    #[test]
    fn malformed_lines_are_refused_with_the_reason() {
        assert!(parse("cpu0 1 2\n").unwrap_err().contains("at least 4"));
        assert!(parse("cpuX 1 2 3 4\n").unwrap_err().contains("cpuX"));
        assert!(parse("cpu0 1 2 x 4\n").unwrap_err().contains("\"x\""));
    }

    #[test]
    fn utilisation_is_the_busy_share_of_the_interval() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        let stat = dir.path().join("proc/stat");
        std::fs::write(&stat, "cpu0 0 0 0 100 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0\n").unwrap();
        let mut s = CpuStat::new(FsRoot::recorded(dir.path())).unwrap();
        std::fs::write(&stat, "cpu0 75 0 0 125 0 0 0 0\ncpu1 0 0 0 200 0 0 0 0\n").unwrap();
        let cpus = s.sample().unwrap();
        assert!((cpus[0].utilisation - 0.75).abs() < 1e-12);
        assert_eq!(cpus[1].utilisation, 0.0);
        assert_eq!(
            cpus[0].freq_khz, None,
            "no cpufreq in the tree: unknown, not zero"
        );
    }
}
