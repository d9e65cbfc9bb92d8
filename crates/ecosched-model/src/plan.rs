//! What a policy asks the platform to do. A plan is pure data: it names
//! tasks, CPU sets and frequency settings, and says nothing about how a
//! platform carries them out (affinity syscalls or simulator state).
//! Anything a plan does not mention is left as it is.

use crate::cpuset::CpuSet;
use crate::task::TaskId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A kernel frequency governor (cpufreq `scaling_governor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Governor {
    /// Always the highest frequency.
    Performance,
    /// Always the lowest frequency.
    Powersave,
    /// Polls load; jumps to max above the up-threshold.
    Ondemand,
    /// Polls load; steps up or down gradually.
    Conservative,
    /// Follows scheduler utilisation.
    Schedutil,
}

impl Governor {
    /// Every governor.
    pub const ALL: [Governor; 5] = [
        Governor::Performance,
        Governor::Powersave,
        Governor::Ondemand,
        Governor::Conservative,
        Governor::Schedutil,
    ];

    /// The cpufreq name.
    pub fn name(self) -> &'static str {
        match self {
            Governor::Performance => "performance",
            Governor::Powersave => "powersave",
            Governor::Ondemand => "ondemand",
            Governor::Conservative => "conservative",
            Governor::Schedutil => "schedutil",
        }
    }
}

impl fmt::Display for Governor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a frequency domain's frequency is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FreqSetting {
    /// Hand the domain to a kernel governor.
    Governor(Governor),
    /// Hold one frequency (the `userspace` governor's `scaling_setspeed`).
    Fixed {
        /// Frequency in kHz; must be one of the domain's P-states.
        freq_khz: u64,
    },
}

/// Stop or continue a task that opted into gang control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GangAction {
    /// Stop it (SIGSTOP / freezer).
    Stop,
    /// Let it run again.
    Continue,
}

/// A policy's decision for one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// CPUs every managed task may use, including ones that appear later
    /// (a cgroup cpuset on Linux). `None` leaves it unchanged.
    pub managed_cpus: Option<CpuSet>,
    /// Per-task CPU sets (affinity), within `managed_cpus`.
    pub task_cpus: BTreeMap<TaskId, CpuSet>,
    /// Per frequency domain (index into `Topology::freq_domains`).
    pub frequency: BTreeMap<usize, FreqSetting>,
    /// Gang stop/continue.
    pub gang: BTreeMap<TaskId, GangAction>,
}

impl Plan {
    /// A plan that changes nothing.
    pub fn unchanged() -> Self {
        Self::default()
    }

    /// Whether the plan changes nothing.
    pub fn is_empty(&self) -> bool {
        self.managed_cpus.is_none()
            && self.task_cpus.is_empty()
            && self.frequency.is_empty()
            && self.gang.is_empty()
    }

    /// The same setting for every frequency domain of a machine.
    pub fn all_domains(domains: usize, setting: FreqSetting) -> Self {
        Plan {
            frequency: (0..domains).map(|d| (d, setting)).collect(),
            ..Plan::default()
        }
    }
}
