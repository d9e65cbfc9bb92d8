//! `placed`: each named task pinned to one CPU of its own choosing, for
//! hand-made static placements — the best and worst schedules Dhiman et
//! al. create "manually … by binding threads to cores" (ISLPED'10, §3,
//! Fig. 2a) to bracket what a balancer achieves. Unlike `static`, which
//! confines all managed work to one set, this places tasks one by one.
//!
//! `--param map=art@0,equake#0@2,equake#1@3` pins the task named `art` to
//! CPU 0 and so on; tasks not named are left to the kernel. A task that
//! restarts under the same name is pinned again.

use crate::{Policy, PolicyError};
use ecosched_model::{
    CpuId, CpuSet, Plan, PolicyStats, Requirements, Snapshot, TaskId, Topology, TypedStats,
};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

crate::typed_params! {
    /// Parameters of `placed`.
    pub struct PlacedParams {
        /// Task-name@cpu pairs, comma-separated, e.g. art@0,equake#0@2.
        map: String = text("name@cpu,…").required(),
        /// How often new tasks are looked for, ms.
        interval_ms: u64 = int(1, 3_600_000).default("100"),
    }
}

ecosched_model::policy_stats! {
    /// What `placed` has done.
    pub struct PlacedStats {
        /// Live tasks pinned to their named CPU now.
        pinned_tasks: usize => gauge,
    }
}

/// The `placed` policy.
pub struct Placed {
    map: BTreeMap<String, CpuId>,
    interval: Duration,
    pinned: BTreeSet<TaskId>,
}

impl Placed {
    /// Built from its checked parameters.
    pub fn new(params: PlacedParams) -> Result<Self, PolicyError> {
        let text = params.map;
        let mut map = BTreeMap::new();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = |reason: &str| PolicyError::BadParam {
                key: "map".into(),
                value: text.clone(),
                reason: format!("{pair:?}: {reason}"),
            };
            let (name, cpu) = pair
                .rsplit_once('@')
                .ok_or_else(|| bad("expected task-name@cpu"))?;
            let cpu: u32 = cpu.parse().map_err(|_| bad("the CPU must be a number"))?;
            if name.is_empty() {
                return Err(bad("no task name"));
            }
            if map.insert(name.to_string(), CpuId(cpu)).is_some() {
                return Err(bad("the task is named twice"));
            }
        }
        if map.is_empty() {
            return Err(PolicyError::BadParam {
                key: "map".into(),
                value: text,
                reason: "names no task".into(),
            });
        }
        Ok(Placed {
            map,
            interval: Duration::from_millis(params.interval_ms),
            pinned: BTreeSet::new(),
        })
    }
}

impl Policy for Placed {
    fn name(&self) -> &str {
        "placed"
    }
    fn requirements(&self) -> Requirements {
        Requirements {
            affinity: true,
            ..Requirements::default()
        }
    }
    fn interval(&self) -> Duration {
        self.interval
    }
    fn init(&mut self, topology: &Topology) -> Result<Plan, PolicyError> {
        let online = topology.online_cpus();
        if let Some((name, cpu)) = self.map.iter().find(|(_, c)| !online.contains(**c)) {
            return Err(PolicyError::Incompatible(format!(
                "placed: {name}@{} names a CPU that is not online (online: {})",
                cpu.0,
                online.to_list()
            )));
        }
        self.pinned.clear();
        Ok(Plan::default())
    }
    fn decide(&mut self, snapshot: &Snapshot) -> Plan {
        pin_new_tasks(&self.map, &mut self.pinned, snapshot)
    }
    fn stats(&self) -> PolicyStats {
        PlacedStats {
            pinned_tasks: self.pinned.len(),
        }
        .to_stats()
    }
}

/// A plan pinning each live managed task named in `map` to its CPU, once:
/// `pinned` remembers the tasks already pinned (and forgets the ones that
/// ended), so a task the kernel or the user moves later is left alone and
/// a restart under the same name is a new task, pinned again.
pub(crate) fn pin_new_tasks(
    map: &BTreeMap<String, CpuId>,
    pinned: &mut BTreeSet<TaskId>,
    snapshot: &Snapshot,
) -> Plan {
    let mut plan = Plan::default();
    let live: BTreeSet<TaskId> = snapshot.live_managed().map(|t| t.id).collect();
    pinned.retain(|id| live.contains(id));
    for task in snapshot.live_managed() {
        if let Some(cpu) = map.get(&task.name) {
            if pinned.insert(task.id) {
                plan.task_cpus.insert(task.id, CpuSet::single(*cpu));
            }
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Params;

    fn from_params(params: &Params) -> Result<Placed, PolicyError> {
        let (_, variant) = crate::find("placed")?;
        Placed::new(variant.typed(params)?)
    }

    #[test]
    fn parses_pairs_and_rejects_bad_ones() {
        let p = from_params(&Params::default().with("map", "art@0, equake#0@2")).unwrap();
        assert_eq!(p.map["equake#0"], CpuId(2));
        for bad in ["art", "art@x", "@1", "a@1,a@2", ","] {
            let err = from_params(&Params::default().with("map", bad)).err();
            assert!(
                err.as_ref().is_some_and(|e| e.to_string().contains("map")),
                "{bad}: {err:?}"
            );
        }
        assert!(matches!(
            from_params(&Params::default()),
            Err(PolicyError::MissingParam { .. })
        ));
    }
}
