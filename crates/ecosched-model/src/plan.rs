//! What a policy asks the platform to do. A plan is pure data: it names
//! tasks, CPU sets and frequency settings, and says nothing about how a
//! platform carries them out (affinity syscalls or simulator state).
//! Anything a plan does not mention is left as it is.

use crate::cpuset::CpuSet;
use crate::task::TaskId;
use crate::topology::FreqDomainId;
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
    /// Hand the domain back as it was found before the policy started (its
    /// governor, frequency range and preference): for CPUs a policy has no
    /// work on and leaves to whatever else the machine runs there.
    #[serde(rename = "as_found")]
    AsFound,
    /// Hold one frequency (the `userspace` governor's `scaling_setspeed`).
    Fixed {
        /// Frequency in kHz; must be one of the domain's P-states.
        freq_khz: u64,
    },
    /// Let the hardware choose (Intel HWP, AMD CPPC autonomous mode: the
    /// `intel_pstate`/`amd-pstate-epp` active drivers under their
    /// `powersave` governor) within `[min_khz, max_khz]`, biased by an
    /// energy-performance preference (`energy_performance_preference`).
    Hwp {
        /// The preference.
        epp: Epp,
        /// Lowest frequency the hardware may pick (`scaling_min_freq`),
        /// kHz; `None`: the domain's lowest.
        min_khz: Option<u64>,
        /// Highest (`scaling_max_freq`), kHz; `None`: the domain's highest.
        max_khz: Option<u64>,
    },
}

/// An energy-performance preference (the kernel's
/// `energy_performance_preference` strings, Intel SDM "Hardware
/// Controlled Performance States", IA32_HWP_REQUEST bits 31:24).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Epp {
    /// EPP 0: always the highest frequency allowed.
    Performance,
    /// EPP 128 on Intel (0x80): leans to performance.
    BalancePerformance,
    /// EPP 192 (0xC0): leans to saving energy.
    BalancePower,
    /// EPP 255: the lowest frequency that keeps up.
    Power,
}

impl Epp {
    /// Every preference, most performance first.
    pub const ALL: [Epp; 4] = [
        Epp::Performance,
        Epp::BalancePerformance,
        Epp::BalancePower,
        Epp::Power,
    ];

    /// The string `energy_performance_preference` takes.
    pub fn name(self) -> &'static str {
        match self {
            Epp::Performance => "performance",
            Epp::BalancePerformance => "balance_performance",
            Epp::BalancePower => "balance_power",
            Epp::Power => "power",
        }
    }
}

impl fmt::Display for Epp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
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
    #[serde(with = "task_keyed")]
    pub task_cpus: BTreeMap<TaskId, CpuSet>,
    /// Per frequency domain.
    pub frequency: BTreeMap<FreqDomainId, FreqSetting>,
    /// Gang stop/continue, once, now.
    #[serde(with = "task_keyed")]
    pub gang: BTreeMap<TaskId, GangAction>,
    /// A timed gang schedule the platform carries out by itself until a
    /// later plan replaces it; `Some` of an empty schedule ends it.
    #[serde(default)]
    pub gang_schedule: Option<GangSchedule>,
}

/// A timed gang schedule: a cycle of slots that the platform carries out
/// between decisions, because a control loop waking every few hundred
/// milliseconds cannot switch gangs every time slice (Merkel et al. §4.3,
/// sorted co-scheduling). In each slot only the listed groups may run;
/// every other group is frozen (the cgroup freezer on Linux, exact in the
/// simulator). Tasks in no group are never frozen. The cycle starts when
/// the plan is applied and repeats until a later plan replaces it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GangSchedule {
    /// The groups that are frozen and thawed together.
    pub groups: Vec<GangGroup>,
    /// The slots of one cycle, in order.
    pub slots: Vec<GangSlot>,
}

/// Tasks frozen and thawed together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GangGroup {
    /// A name for traces and cgroup directories (`[A-Za-z0-9_-]`).
    pub name: String,
    /// Its tasks.
    pub tasks: Vec<TaskId>,
}

/// One slot of a gang cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GangSlot {
    /// How long it lasts, microseconds.
    pub duration_us: u64,
    /// Indices into [`GangSchedule::groups`] of the groups that may run.
    pub run: Vec<usize>,
}

impl GangSchedule {
    /// The schedule that ends gang scheduling (everything thawed).
    pub fn end() -> Self {
        Self::default()
    }

    /// Whether this schedule ends gang scheduling.
    pub fn is_end(&self) -> bool {
        self.groups.is_empty() || self.slots.is_empty()
    }

    /// Length of one cycle, microseconds.
    pub fn cycle_us(&self) -> u64 {
        self.slots.iter().map(|s| s.duration_us).sum()
    }

    /// The slot in force `elapsed_us` after the schedule started, and the
    /// microseconds left in it.
    pub fn slot_at(&self, elapsed_us: u64) -> Option<(usize, u64)> {
        let cycle = self.cycle_us();
        if cycle == 0 {
            return None;
        }
        let mut t = elapsed_us % cycle;
        for (i, slot) in self.slots.iter().enumerate() {
            if t < slot.duration_us {
                return Some((i, slot.duration_us - t));
            }
            t -= slot.duration_us;
        }
        None
    }

    /// Check the schedule's own consistency: names usable as cgroup
    /// directories, slots of positive length naming existing groups, and
    /// no task in two groups.
    pub fn validate(&self) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        for g in &self.groups {
            let ok = !g.name.is_empty()
                && g.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !ok {
                return Err(format!(
                    "gang group name {:?} must be non-empty and use only [A-Za-z0-9_-]",
                    g.name
                ));
            }
            for t in &g.tasks {
                if !seen.insert(*t) {
                    return Err(format!("task {t} is in more than one gang group"));
                }
            }
        }
        for (i, slot) in self.slots.iter().enumerate() {
            if slot.duration_us == 0 {
                return Err(format!("gang slot {i} has zero length"));
            }
            if let Some(g) = slot.run.iter().find(|&&g| g >= self.groups.len()) {
                return Err(format!(
                    "gang slot {i} names group {g}, but there are {} groups",
                    self.groups.len()
                ));
            }
        }
        Ok(())
    }

    /// Whether group `g` may run in slot `slot`.
    pub fn runs(&self, slot: usize, g: usize) -> bool {
        self.slots.get(slot).is_some_and(|s| s.run.contains(&g))
    }
}

/// Maps keyed by a task, written as a list of `[task, value]` pairs: JSON
/// object keys must be strings, and a task is a (pid, start time) pair.
mod task_keyed {
    use super::TaskId;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<V: Serialize, S: Serializer>(
        map: &BTreeMap<TaskId, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(map.iter())
    }

    pub fn deserialize<'de, V: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<TaskId, V>, D::Error> {
        Ok(Vec::<(TaskId, V)>::deserialize(d)?.into_iter().collect())
    }
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
            && self.gang_schedule.is_none()
    }

    /// The same setting for every frequency domain of a machine.
    pub fn all_domains(domains: usize, setting: FreqSetting) -> Self {
        Plan {
            frequency: (0..domains).map(|d| (FreqDomainId(d), setting)).collect(),
            ..Plan::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(pid: u32) -> TaskId {
        TaskId {
            pid,
            start_ticks: 1,
        }
    }

    fn two_slots() -> GangSchedule {
        GangSchedule {
            groups: vec![
                GangGroup {
                    name: "a".into(),
                    tasks: vec![task(1)],
                },
                GangGroup {
                    name: "b".into(),
                    tasks: vec![task(2)],
                },
            ],
            slots: vec![
                GangSlot {
                    duration_us: 100,
                    run: vec![0],
                },
                GangSlot {
                    duration_us: 50,
                    run: vec![1],
                },
            ],
        }
    }

    #[test]
    fn plans_round_trip_through_json() {
        let mut plan = Plan::all_domains(
            2,
            FreqSetting::Fixed {
                freq_khz: 1_600_000,
            },
        );
        plan.task_cpus.insert(task(7), CpuSet::first_n(2));
        plan.gang.insert(task(8), GangAction::Stop);
        plan.gang_schedule = Some(two_slots());
        plan.frequency.insert(FreqDomainId(1), FreqSetting::AsFound);
        let text = serde_json::to_string(&plan).unwrap();
        assert!(text.contains("\"as_found\""), "{text}");
        let back: Plan = serde_json::from_str(&text).unwrap();
        assert_eq!(back, plan);
    }

    #[test]
    fn slots_repeat_over_the_cycle() {
        let s = two_slots();
        assert_eq!(s.cycle_us(), 150);
        assert_eq!(s.slot_at(0), Some((0, 100)));
        assert_eq!(s.slot_at(99), Some((0, 1)));
        assert_eq!(s.slot_at(100), Some((1, 50)));
        assert_eq!(s.slot_at(160), Some((0, 90)));
        assert!(s.runs(1, 1) && !s.runs(1, 0));
        assert_eq!(GangSchedule::end().slot_at(5), None);
    }

    #[test]
    fn inconsistent_schedules_are_refused() {
        let mut s = two_slots();
        assert_eq!(s.validate(), Ok(()));
        s.groups[1].tasks.push(task(1));
        assert!(s.validate().unwrap_err().contains("more than one"));
        let mut s = two_slots();
        s.slots[0].run.push(7);
        assert!(s.validate().unwrap_err().contains("names group 7"));
        let mut s = two_slots();
        s.groups[0].name = "../etc".into();
        assert!(s.validate().is_err());
    }
}
