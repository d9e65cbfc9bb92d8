//! What a policy sees at each control-loop step.

use crate::sample::{CpuSample, LoadAvg, PowerSample, TaskSample};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One observation of the whole machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Seconds since the run began, at the end of the interval.
    pub time_s: f64,
    /// Length of the interval the deltas cover, in seconds.
    pub interval_s: f64,
    /// The machine (shared, not repeated in serialised traces).
    #[serde(skip)]
    pub topology: Arc<Topology>,
    /// Every observed task; managed ones are flagged.
    pub tasks: Vec<TaskSample>,
    /// Every CPU.
    pub cpus: Vec<CpuSample>,
    /// Energy over the interval.
    pub power: PowerSample,
    /// The system load (`/proc/loadavg`), when the platform knows it.
    #[serde(default)]
    pub load_avg: Option<LoadAvg>,
    /// The parallelism the managed application declared, if it did
    /// (Richling et al. §IV-B "support by application"): on Linux from
    /// `ecosched run --parallelism N` or the hint file the platform watches,
    /// in the simulator from the scenario's `parallelism_hint`. `None` means
    /// no hint; policies then measure parallelism themselves.
    #[serde(default)]
    pub parallelism_hint: Option<u32>,
}

impl Snapshot {
    /// Managed tasks that are still alive.
    pub fn live_managed(&self) -> impl Iterator<Item = &TaskSample> {
        self.tasks
            .iter()
            .filter(|t| t.managed && t.state != crate::task::TaskState::Exited)
    }
}
