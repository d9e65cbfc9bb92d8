//! Cross-node balancing with activity vectors — Merkel et al., EuroSys'10
//! §5.2, §8.4 (`docs/design/papers.md`, "Activity vectors"): `av-xnode`
//! is `av` on every node plus this coordinator.
//!
//! ```text
//!  node i: snapshots (what Linux shows) ──▶ Publisher: each task's vector,
//!          on-CPU-time weighted over the window, every `publish_s` (15 s)
//!                                              │ published vectors only
//!                                              ▼
//!  every `swap_s` (10 min): the one swap of two tasks on two nodes that
//!  raises min(varsum_a, varsum_b) most — varsum over all tasks of a node
//!  (eq. 3 with the node as one run queue) — if it gains > `min_gain`
//! ```
//!
//! The coordinator sees nothing but published vectors: never the
//! simulator's truth, nor another node's counters. Migration is expensive
//! (§5.2: the paper uses minutes between decisions and does not weigh the
//! cost), so at most one swap is made per period, and only between nodes
//! whose every task has a published vector (a task that just arrived has
//! none until a full window has passed on its new node). What a move
//! costs is the caller's to account.

use crate::av::{activity_vector, varsum, AvConfig, AvParams, BusEvent, Vector};
use crate::params::{Params, TypedParams};
use crate::PolicyError;
use ecosched_model::calibration::ActivityCalibration;
use ecosched_model::{PolicyStats, Snapshot, TaskId, Topology, TypedStats};
use std::collections::BTreeMap;

crate::typed_params! {
    /// Parameters of the coordinator (`av-xnode` also takes every `av` one).
    pub struct XnodeParams {
        /// How often each node publishes its tasks' activity vectors, s.
        publish_s: f64 = real().above(0.0).default("15").source("§8.4"),
        /// How often a cross-node swap is considered, s (at least publish_s);
        /// at most one swap each time.
        swap_s: f64 = real().above(0.0).default("600").source("§8.4"),
        /// Smallest rise of min(varsum) of the two nodes a swap must bring
        /// (as av's min_gain: smaller gains are noise, and swapping on them
        /// ping-pongs two like tasks).
        swap_gain: f64 = real().at_least(0.0).default("0.01"),
    }
}

ecosched_model::policy_stats! {
    /// What the cross-node coordinator has done.
    pub struct XnodeStats {
        /// Publications of every node's vectors.
        publications: u64 => counter,
        /// Swaps of two tasks between two nodes.
        swaps: u64 => counter,
    }
}

/// The policy every node of a cross-node cluster runs.
pub const NODE_POLICY: &str = "av";

/// The counter the node policy reads as the memory bus, from its
/// parameters (those the coordinator does not take).
pub fn node_bus_event(node_params: &Params) -> Result<BusEvent, PolicyError> {
    let resolved = node_params.resolve(NODE_POLICY, AvParams::SPEC, &[], &[])?;
    Ok(AvConfig::new(AvParams::from_resolved(&resolved)?).bus_event)
}

/// Settings of the coordinator.
#[derive(Debug, Clone, PartialEq)]
pub struct XnodeConfig {
    /// Publication period, s.
    pub publish_s: f64,
    /// Swap period, s.
    pub swap_s: f64,
    /// Smallest accepted gain of min(varsum).
    pub swap_gain: f64,
}

impl XnodeConfig {
    /// Take the coordinator's keys out of `params` and check them; the
    /// rest are the node policy's.
    pub fn split(params: &Params) -> Result<(XnodeConfig, Params), PolicyError> {
        let (mine, rest) = params.split(XnodeParams::SPEC);
        let p =
            XnodeParams::from_resolved(&mine.resolve("av-xnode", XnodeParams::SPEC, &[], &[])?)?;
        if p.swap_s < p.publish_s {
            return Err(PolicyError::BadParam {
                key: "swap_s".into(),
                value: p.swap_s.to_string(),
                reason: format!("must be at least publish_s ({})", p.publish_s),
            });
        }
        Ok((
            XnodeConfig {
                publish_s: p.publish_s,
                swap_s: p.swap_s,
                swap_gain: p.swap_gain,
            },
            rest,
        ))
    }
}

/// One task's published vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// The task.
    pub id: TaskId,
    /// Its name.
    pub name: String,
    /// Its vector over the last window, as if at the highest frequency.
    pub vector: Vector,
}

/// Per task: on-CPU-weighted sum of vectors and the weight, this window.
#[derive(Debug, Clone, Default)]
struct Window {
    name: String,
    sum: Vector,
    weight: f64,
}

/// What one node publishes: built from the snapshots its node policy
/// sees, with the node's own calibration.
#[derive(Debug, Clone)]
pub struct Publisher {
    activity: ActivityCalibration,
    bus_event: BusEvent,
    max_khz: u64,
    window: BTreeMap<TaskId, Window>,
}

impl Publisher {
    /// A publisher for a node with `topology`, reading the bus from
    /// `bus_event`; refused without the activity calibration.
    pub fn new(topology: &Topology, bus_event: BusEvent) -> Result<Self, PolicyError> {
        let activity = topology.calibration.activity.clone().ok_or_else(|| {
            PolicyError::Incompatible(
                "av-xnode needs every node's activity-vector calibration (calibration.activity)"
                    .into(),
            )
        })?;
        let max_khz = topology
            .freq_domains
            .iter()
            .map(|d| d.max_khz())
            .max()
            .unwrap_or(0);
        Ok(Publisher {
            activity,
            bus_event,
            max_khz,
            window: BTreeMap::new(),
        })
    }

    /// Take one snapshot of the node into the window.
    pub fn observe(&mut self, snap: &Snapshot) {
        for t in snap.live_managed() {
            let freq = t
                .cpu
                .and_then(|c| snap.cpus.iter().find(|s| s.id == c))
                .and_then(|s| s.freq_khz);
            let Some(v) = activity_vector(t, freq, self.max_khz, &self.activity, self.bus_event)
            else {
                continue;
            };
            let w = t.counters.on_cpu_ns.unwrap_or(0) as f64;
            if w <= 0.0 {
                continue;
            }
            let e = self.window.entry(t.id).or_default();
            e.name.clone_from(&t.name);
            for (s, x) in e.sum.iter_mut().zip(v) {
                *s += w * x;
            }
            e.weight += w;
        }
    }

    /// The window's vectors of the tasks that ran in it; starts a new window.
    pub fn publish(&mut self) -> Vec<Published> {
        std::mem::take(&mut self.window)
            .into_iter()
            .map(|(id, w)| Published {
                id,
                name: w.name,
                vector: w.sum.map(|s| s / w.weight),
            })
            .collect()
    }
}

/// A swap chosen: task `task_a` of node `a` with `task_b` of node `b`.
#[derive(Debug, Clone, PartialEq)]
pub struct Swap {
    /// First node.
    pub a: usize,
    /// Its task that goes to `b`.
    pub task_a: TaskId,
    /// Its name.
    pub name_a: String,
    /// Second node.
    pub b: usize,
    /// Its task that goes to `a`.
    pub task_b: TaskId,
    /// Its name.
    pub name_b: String,
    /// min(varsum_a, varsum_b) before and after.
    pub before: f64,
    /// See `before`.
    pub after: f64,
}

/// The best swap between any two nodes' published vectors (each node's
/// list complete: every task it runs), if one raises min(varsum) of its
/// two nodes by more than `min_gain`.
pub fn best_swap(nodes: &[Vec<Published>], min_gain: f64) -> Option<Swap> {
    let mut best: Option<Swap> = None;
    for a in 0..nodes.len() {
        for b in a + 1..nodes.len() {
            let (na, nb) = (&nodes[a], &nodes[b]);
            let va: Vec<Vector> = na.iter().map(|p| p.vector).collect();
            let vb: Vec<Vector> = nb.iter().map(|p| p.vector).collect();
            let before = varsum(&va).min(varsum(&vb));
            for i in 0..na.len() {
                for j in 0..nb.len() {
                    let (mut sa, mut sb) = (va.clone(), vb.clone());
                    std::mem::swap(&mut sa[i], &mut sb[j]);
                    let after = varsum(&sa).min(varsum(&sb));
                    let gain = after - before;
                    if gain > min_gain && best.as_ref().is_none_or(|s| gain > s.after - s.before) {
                        best = Some(Swap {
                            a,
                            task_a: na[i].id,
                            name_a: na[i].name.clone(),
                            b,
                            task_b: nb[j].id,
                            name_b: nb[j].name.clone(),
                            before,
                            after,
                        });
                    }
                }
            }
        }
    }
    best
}

/// The coordinator: one publisher per node, the latest publications, and
/// the clock of both periods.
#[derive(Debug, Clone)]
pub struct Xnode {
    config: XnodeConfig,
    publishers: Vec<Publisher>,
    latest: Vec<Vec<Published>>,
    next_publish_s: f64,
    next_swap_s: f64,
    stats: XnodeStats,
}

impl Xnode {
    /// A coordinator over nodes with these topologies.
    pub fn new(
        config: XnodeConfig,
        topologies: &[&Topology],
        bus_event: BusEvent,
    ) -> Result<Self, PolicyError> {
        let publishers = topologies
            .iter()
            .map(|t| Publisher::new(t, bus_event))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Xnode {
            next_publish_s: config.publish_s,
            next_swap_s: config.swap_s,
            latest: vec![Vec::new(); publishers.len()],
            publishers,
            config,
            stats: XnodeStats::default(),
        })
    }

    /// What it has done so far.
    pub fn stats(&self) -> PolicyStats {
        self.stats.to_stats()
    }

    /// Take node `node`'s snapshot into its window.
    pub fn observe(&mut self, node: usize, snap: &Snapshot) {
        if let Some(p) = self.publishers.get_mut(node) {
            p.observe(snap);
        }
    }

    /// When it next has something to do, s.
    pub fn due_s(&self) -> f64 {
        self.next_publish_s.min(self.next_swap_s)
    }

    /// At `now_s`: publish if due, and if a swap period is due, choose at
    /// most one swap among the nodes in `eligible` (the caller leaves out
    /// nodes that have finished). `running[i]` are the tasks node i runs
    /// now: a node is considered only when each has a published vector.
    pub fn tick(&mut self, now_s: f64, eligible: &[bool], running: &[Vec<TaskId>]) -> Option<Swap> {
        if now_s + 1e-9 >= self.next_publish_s {
            for (p, latest) in self.publishers.iter_mut().zip(&mut self.latest) {
                *latest = p.publish();
            }
            while self.next_publish_s <= now_s + 1e-9 {
                self.next_publish_s += self.config.publish_s;
            }
            self.stats.publications += 1;
        }
        if now_s + 1e-9 < self.next_swap_s {
            return None;
        }
        while self.next_swap_s <= now_s + 1e-9 {
            self.next_swap_s += self.config.swap_s;
        }
        // Nodes left out are given no tasks, so no swap can touch them.
        let complete: Vec<Vec<Published>> = self
            .latest
            .iter()
            .enumerate()
            .map(|(i, pubs)| {
                let ok = eligible.get(i).copied().unwrap_or(false)
                    && running.get(i).is_some_and(|r| {
                        !r.is_empty() && r.iter().all(|id| pubs.iter().any(|p| p.id == *id))
                    });
                if ok {
                    let r = &running[i];
                    pubs.iter().filter(|p| r.contains(&p.id)).cloned().collect()
                } else {
                    Vec::new()
                }
            })
            .collect();
        let swap = best_swap(&complete, self.config.swap_gain);
        if swap.is_some() {
            self.stats.swaps += 1;
        }
        swap
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecosched_testkit::snapshots::task_id;

    fn task(pid: u32, v: Vector) -> Published {
        Published {
            id: task_id(pid),
            name: format!("t{pid}"),
            vector: v,
        }
    }

    const MEM: Vector = [0.6, 0.5, 0.3];
    const CPU: Vector = [0.02, 0.05, 0.9];

    #[test]
    fn like_with_like_nodes_swap_a_pair() {
        let nodes = vec![
            (0..4).map(|i| task(i, CPU)).collect::<Vec<_>>(),
            (4..8).map(|i| task(i, MEM)).collect(),
        ];
        let s = best_swap(&nodes, 0.001).expect("a swap");
        assert_eq!((s.a, s.b), (0, 1));
        assert!(s.before < 1e-12 && s.after > 0.1, "{s:?}");
    }

    #[test]
    fn balanced_nodes_do_not_swap() {
        let half = |base: u32| {
            vec![
                task(base, CPU),
                task(base + 1, CPU),
                task(base + 2, MEM),
                task(base + 3, MEM),
            ]
        };
        assert_eq!(best_swap(&[half(0), half(4)], 0.001), None);
    }

    #[test]
    fn a_node_without_every_vector_is_left_out() {
        let nodes: Vec<Vec<Published>> = vec![
            (0..4).map(|i| task(i, CPU)).collect(),
            (4..8).map(|i| task(i, MEM)).collect(),
        ];
        let mut x = Xnode {
            config: XnodeConfig {
                publish_s: 15.0,
                swap_s: 600.0,
                swap_gain: 0.001,
            },
            publishers: Vec::new(),
            latest: nodes,
            next_publish_s: f64::INFINITY,
            next_swap_s: 600.0,
            stats: XnodeStats::default(),
        };
        let ids = |r: std::ops::Range<u32>| r.map(task_id).collect::<Vec<_>>();
        // Node 1 runs a task (pid 9) nobody has published yet.
        let mut running = vec![ids(0..4), ids(5..10)];
        assert_eq!(x.tick(600.0, &[true, true], &running), None);
        running[1] = ids(4..8);
        assert!(x.tick(1200.0, &[true, true], &running).is_some());
        // Not before the next period.
        assert_eq!(x.tick(1300.0, &[true, true], &running), None);
    }
}
