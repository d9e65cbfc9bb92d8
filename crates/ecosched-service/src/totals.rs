//! One group's totals while it exists: CPU time (from [`GroupCpu`]),
//! attributed energy, the policy's decisions and statistics. They are
//! shared between the daemon and the group's worker and outlive a worker
//! (pausing, a policy change), so a group's record covers its whole life;
//! when the group ends they become its [`Record`].

use crate::config::Source;
use crate::group_cpu::GroupCpu;
use crate::history::{self, Energy, Record};
use ecosched_linux::FsRoot;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A group's totals so far.
#[derive(Debug)]
pub struct GroupTotals {
    /// Where its CPU time is read; `None` when neither its cgroup nor
    /// `/proc` can tell, and the tasks' own counters are summed.
    pub cpu: Option<GroupCpu>,
    /// When it started, seconds since the Unix epoch.
    pub started_s: u64,
    started: Instant,
    /// CPU seconds.
    pub cpu_s: f64,
    /// Attributed joules, once a meter reading came.
    pub energy_j: Option<f64>,
    /// The policy running (the last one).
    pub policy: String,
    /// Steps whose plan changed something.
    pub decisions: u64,
    /// The policy's statistics at its last step.
    pub stats: serde_json::Value,
    /// Intervals whose energy was charged by the activity model, and by
    /// CPU-time share (see `crate::attribution`).
    pub charged: (u64, u64),
}

/// Totals shared by the daemon and the group's worker.
pub type SharedTotals = Arc<Mutex<GroupTotals>>;

impl GroupTotals {
    /// Totals of a group of processes from `source`, starting now.
    pub fn start(source: &Source, policy: &str) -> SharedTotals {
        let root = FsRoot::live();
        // A cgroup that no hierarchy accounts (a Slurm job's cpuset without
        // a cpuacct twin) is counted from its processes.
        let of_cgroup = match source {
            Source::Cgroup(dir) => GroupCpu::of_cgroup(&root, dir),
            _ => None,
        };
        let cpu = of_cgroup.or_else(|| {
            ecosched_linux::tasks::HostFacts::detect(&root)
                .ok()
                .map(|h| GroupCpu::of_processes(&root, h.ticks_per_s))
        });
        Arc::new(Mutex::new(GroupTotals {
            cpu,
            started_s: history::now_s(),
            started: Instant::now(),
            cpu_s: 0.0,
            energy_j: None,
            policy: policy.to_string(),
            decisions: 0,
            stats: serde_json::Value::Object(Default::default()),
            charged: (0, 0),
        }))
    }

    /// How the group's energy was shared out, in words.
    fn attribution(&self) -> String {
        match self.charged {
            (0, _) => "share of the machine's busy CPU time".into(),
            (_, 0) => "activity model (instructions, cycles, cache misses)".into(),
            (a, c) => format!(
                "activity model for {a} of {} intervals, the rest by share of the busy CPU time",
                a + c
            ),
        }
    }

    /// Its record, ending now: `kind` (`group` or `job`), `name`, the
    /// energy's `source` label and `meter` description, why it ended.
    pub fn record(
        &self,
        kind: &str,
        name: &str,
        source: &str,
        meter: &str,
        ended_by: &str,
    ) -> Record {
        Record {
            kind: kind.to_string(),
            name: name.to_string(),
            started_s: self.started_s,
            ended_s: history::now_s(),
            wall_s: self.started.elapsed().as_secs_f64(),
            cpu_s: self.cpu_s,
            cpu_source: self
                .cpu
                .as_ref()
                .map_or_else(|| "its tasks' counters".into(), GroupCpu::describe),
            energy: self.energy_j.map(|joules| Energy {
                joules,
                source: source.to_string(),
                meter: meter.to_string(),
                attribution: self.attribution(),
            }),
            policy: self.policy.clone(),
            decisions: Some(self.decisions),
            stats: self.stats.clone(),
            ended_by: ended_by.to_string(),
        }
    }
}
