//! Simulated clusters (`ecosched sim`/`compare` on a scenario with
//! `[[nodes]]`): one [`SimPlatform`] and one node policy per node, stepped
//! in lockstep by the control loop's [`Session`], and for `av-xnode` the
//! cross-node coordinator (Merkel et al., EuroSys'10, §5.2, §8.4).
//!
//! ```text
//!  each wake-up:  node 0 ─ step ─▶ snapshot ─┬─▶ its own figures
//!                 node 1 ─ step ─▶ snapshot ─┼─▶ the cluster's figures
//!                 …                          └─▶ coordinator (published
//!                                                vectors only)
//!  when due:      coordinator → swap(task a@i, task b@j): both evicted,
//!                 each admitted on the other node after the downtime,
//!                 the migration energy charged to the moved instances
//! ```
//!
//! A moved task keeps its identity, so its instance's run time spans both
//! nodes and the downtime, and the cluster's per-task figures follow it.
//! Each node's figures count the instances that finished there.

use crate::experiment::{alone_times, comparisons, SimOptions};
use crate::report::SimReport;
use crate::EngineError;
use ecosched_control::{ControlError, Session};
use ecosched_model::metrics::MetricsAccumulator;
use ecosched_model::trace::NullSink;
use ecosched_model::{
    Comparison, Platform, PolicyStats, RunMetrics, TaskId, TaskMetrics, Topology,
};
use ecosched_policy::xnode::{node_bus_event, Xnode, XnodeConfig, NODE_POLICY};
use ecosched_policy::{build, Params, Policy, PolicyKind};
use ecosched_sim::cluster::{Cluster, MigrationCost};
use ecosched_sim::{Observe, SimPlatform};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Whether `policy` balances across the nodes of a cluster (each node then
/// runs [`NODE_POLICY`], and a coordinator moves tasks between them).
pub fn is_cross_node(policy: &str) -> Result<bool, EngineError> {
    Ok(ecosched_policy::find(policy)?.0.kind == PolicyKind::Cluster)
}

/// Pid numbering of node i starts at `PID_BASE + i × PID_STRIDE`, so that
/// no two tasks of a cluster share an id.
const PID_BASE: u32 = 1000;
const PID_STRIDE: u32 = 1_000_000;

/// One node's figures in a cluster run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeReport {
    /// Node name.
    pub name: String,
    /// Machine name.
    pub machine: String,
    /// Energy of this node, J, with its share of migration energy.
    pub energy_j: Option<f64>,
    /// Average power, W.
    pub avg_power_w: Option<f64>,
    /// Instances that finished on this node.
    pub completions: u32,
    /// Tasks it ran at the end.
    pub tasks_at_end: Vec<String>,
    /// Tasks moved here.
    pub moved_in: u32,
    /// Tasks moved away.
    pub moved_out: u32,
    /// Its share of the migration energy, J (half of each move it took part in).
    pub migration_energy_j: f64,
    /// Per task, the instances that finished here.
    pub tasks: Vec<TaskMetrics>,
    /// Its node policy's statistics at the end.
    #[serde(rename = "policy_notes", skip_serializing_if = "PolicyStats::is_empty")]
    pub policy_stats: PolicyStats,
}

/// One swap the coordinator made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwapRecord {
    /// When, s.
    pub time_s: f64,
    /// First node and its task that left it.
    pub node_a: String,
    /// See `node_a`.
    pub task_a: String,
    /// Second node and its task that left it.
    pub node_b: String,
    /// See `node_b`.
    pub task_b: String,
    /// min(varsum) of the two nodes before and after, from published vectors.
    pub varsum_before: f64,
    /// See `varsum_before`.
    pub varsum_after: f64,
}

/// A cluster run (`ecosched sim --json` on a cluster): the whole
/// cluster's figures in the single-machine shape, then per node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterReport {
    /// The cluster's totals: energy over every node (and every move),
    /// per-task figures following each task across nodes.
    #[serde(flatten)]
    pub totals: SimReport,
    /// Per node.
    pub nodes: Vec<NodeReport>,
    /// The swaps made, in order.
    pub swaps: Vec<SwapRecord>,
    /// What one move costs.
    pub migration: MigrationCost,
    /// Energy spent on moves, J (included in the totals).
    pub migration_energy_j: f64,
}

/// A finished cluster run.
#[derive(Debug, Clone)]
pub struct ClusterRun {
    /// The cluster's figures.
    pub metrics: RunMetrics,
    /// The report.
    pub report: ClusterReport,
}

/// One node while the cluster runs.
struct Node {
    platform: SimPlatform,
    policy: Box<dyn Policy>,
    session: Session,
    /// Tasks moved away, to be forgotten once their exit was observed.
    leaving: Vec<TaskId>,
    /// The tasks it ran at its last step.
    running: Vec<(TaskId, String)>,
    moved_in: u32,
    moved_out: u32,
    migration_j: f64,
}

/// Run `policy` on every node of `cluster` (for `av-xnode`: `av`, plus
/// the coordinator). `progress` gets the simulated seconds so far.
pub fn simulate_cluster(
    cluster: &Cluster,
    policy: &str,
    params: &Params,
    options: &SimOptions,
    progress: &mut dyn FnMut(f64),
) -> Result<ClusterRun, EngineError> {
    let seed = crate::experiment::run_seed(options.seed, cluster.spec.seed);
    let (node_policy, node_params, xnode) = if is_cross_node(policy)? {
        let (config, rest) = XnodeConfig::split(params)?;
        let bus = node_bus_event(&rest)?;
        (NODE_POLICY, rest, Some((config, bus)))
    } else {
        (policy, params.clone(), None)
    };
    let mut nodes = Vec::new();
    for (i, scenario) in cluster.nodes.iter().enumerate() {
        let node_seed = seed.wrapping_add(i as u64);
        let mut platform =
            SimPlatform::numbered_from(scenario, node_seed, PID_BASE + PID_STRIDE * i as u32)?;
        platform.observe_as(options.observe, &options.extra_counters);
        let mut policy = build(node_policy, &node_params)?;
        let session = Session::start(
            &mut platform,
            policy.as_mut(),
            &scenario.spec.name,
            Some(node_seed),
            &mut NullSink,
        )?;
        nodes.push(Node {
            platform,
            policy,
            session,
            leaving: Vec::new(),
            running: Vec::new(),
            moved_in: 0,
            moved_out: 0,
            migration_j: 0.0,
        });
    }
    let mut coordinator = match xnode {
        Some((config, bus)) => {
            let topologies: Vec<_> = nodes.iter().map(|n| n.platform.topology()).collect();
            let refs: Vec<&Topology> = topologies.iter().map(|t| t.as_ref()).collect();
            Some(Xnode::new(config, &refs, bus)?)
        }
        None => None,
    };
    let cost = cluster.spec.migration;
    let mut totals = MetricsAccumulator::new(cluster.spec.meter);
    let mut swaps = Vec::new();
    loop {
        let mut now_s = f64::INFINITY;
        for (i, n) in nodes.iter_mut().enumerate() {
            if n.session.is_finished() {
                continue;
            }
            let snap = n
                .session
                .step(&mut n.platform, n.policy.as_mut(), &mut NullSink)?;
            for id in n.leaving.drain(..) {
                n.session.metrics_mut().depart(id);
            }
            totals.record(&snap);
            if let Some(x) = &mut coordinator {
                x.observe(i, &snap);
            }
            n.running = snap
                .live_managed()
                .map(|t| (t.id, t.name.clone()))
                .collect();
            now_s = now_s.min(snap.time_s);
        }
        if !now_s.is_finite() {
            break;
        }
        progress(now_s);
        let Some(x) = &mut coordinator else {
            continue;
        };
        if now_s + 1e-9 < x.due_s() {
            continue;
        }
        let eligible: Vec<bool> = nodes.iter().map(|n| !n.session.is_finished()).collect();
        let running: Vec<Vec<TaskId>> = nodes
            .iter()
            .map(|n| n.running.iter().map(|(id, _)| *id).collect())
            .collect();
        let Some(swap) = x.tick(now_s, &eligible, &running) else {
            continue;
        };
        let (Some(ma), Some(mb)) = (
            nodes[swap.a].platform.evict(swap.task_a),
            nodes[swap.b].platform.evict(swap.task_b),
        ) else {
            return Err(EngineError::Control(ControlError::Platform(
                ecosched_model::PlatformError::InvalidPlan(format!(
                    "a swap named {} and {}, which are not both running",
                    swap.name_a, swap.name_b
                )),
            )));
        };
        let downtime = Duration::from_secs_f64(cost.downtime_s);
        nodes[swap.b].platform.admit(ma, downtime);
        nodes[swap.a].platform.admit(mb, downtime);
        for (from, to, id) in [(swap.a, swap.b, swap.task_a), (swap.b, swap.a, swap.task_b)] {
            totals.charge(id, cost.energy_j);
            let half = cost.energy_j / 2.0;
            nodes[from].session.metrics_mut().charge(id, half);
            nodes[to].session.metrics_mut().charge(id, half);
            nodes[from].leaving.push(id);
            nodes[from].moved_out += 1;
            nodes[to].moved_in += 1;
            nodes[from].migration_j += half;
            nodes[to].migration_j += half;
        }
        swaps.push(SwapRecord {
            time_s: now_s,
            node_a: cluster.node_names[swap.a].clone(),
            task_a: swap.name_a,
            node_b: cluster.node_names[swap.b].clone(),
            task_b: swap.name_b,
            varsum_before: swap.before,
            varsum_after: swap.after,
        });
    }
    let mut node_reports = Vec::new();
    let mut header = None;
    for (i, n) in nodes.into_iter().enumerate() {
        let stats = n.policy.stats();
        let tasks_at_end = n.running.iter().map(|(_, name)| name.clone()).collect();
        let outcome = n.session.finish(&mut NullSink)?;
        let m = &outcome.metrics;
        node_reports.push(NodeReport {
            name: cluster.node_names[i].clone(),
            machine: outcome.header.machine.clone(),
            energy_j: m.energy_j,
            avg_power_w: m.avg_power_w,
            completions: m.tasks.iter().map(|t| t.completions).sum(),
            tasks_at_end,
            moved_in: n.moved_in,
            moved_out: n.moved_out,
            migration_energy_j: n.migration_j,
            tasks: m
                .tasks
                .iter()
                .filter(|t| t.completions > 0)
                .cloned()
                .collect(),
            policy_stats: stats,
        });
        header.get_or_insert(outcome.header);
    }
    let metrics = totals.metrics();
    let mut header = header.ok_or_else(|| {
        EngineError::Control(ControlError::Policy(
            ecosched_policy::PolicyError::Incompatible("a cluster without nodes".into()),
        ))
    })?;
    header.policy = policy.to_string();
    header.machine = node_reports
        .iter()
        .map(|n| format!("{}:{}", n.name, n.machine))
        .collect::<Vec<_>>()
        .join(" ");
    let mut totals_report = SimReport::new(&cluster.spec.name, &header, &metrics, seed);
    totals_report.observe = Some(options.observe);
    if let Some(x) = &coordinator {
        totals_report.policy_stats = x.stats();
    }
    let migration_energy_j = cost.energy_j * 2.0 * swaps.len() as f64;
    Ok(ClusterRun {
        metrics,
        report: ClusterReport {
            totals: totals_report,
            nodes: node_reports,
            swaps,
            migration: cost,
            migration_energy_j,
        },
    })
}

/// Per policy, each task's run-time and EDP ratio to the baseline and
/// their means over the tasks (Merkel Fig. 8 averages the benchmarks'
/// relative figures).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskRatios {
    /// Mean over tasks of run time / baseline run time.
    pub mean_runtime: Option<f64>,
    /// Mean over tasks of EDP / baseline EDP.
    pub mean_edp: Option<f64>,
    /// Per task: run time / baseline run time.
    pub runtime: BTreeMap<String, f64>,
    /// Per task: EDP / baseline EDP.
    pub edp: BTreeMap<String, f64>,
}

impl TaskRatios {
    /// `run`'s tasks against `base`'s, by name.
    pub fn new(run: &RunMetrics, base: &RunMetrics) -> Self {
        let per = |f: fn(&TaskMetrics) -> Option<f64>| -> BTreeMap<String, f64> {
            run.tasks
                .iter()
                .filter_map(|t| {
                    let b = base.task(&t.name).and_then(f).filter(|b| *b > 0.0)?;
                    Some((t.name.clone(), f(t)? / b))
                })
                .collect()
        };
        let mean = |m: &BTreeMap<String, f64>| {
            (!m.is_empty()).then(|| m.values().sum::<f64>() / m.len() as f64)
        };
        let runtime = per(|t| Some(t.runtime_s));
        let edp = per(|t| t.edp_js);
        TaskRatios {
            mean_runtime: mean(&runtime),
            mean_edp: mean(&edp),
            runtime,
            edp,
        }
    }
}

/// `ecosched compare --json` on a cluster.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterCompareReport {
    /// Scenario name.
    pub scenario: String,
    /// Baseline policy.
    pub baseline: String,
    /// What the policies were shown.
    pub observe: Observe,
    /// One report per policy, in the order given.
    pub results: Vec<ClusterReport>,
    /// Per policy, the cluster's figures against the baseline's.
    pub ratios: BTreeMap<String, Comparison>,
    /// Per policy, per-task ratios to the baseline and their means.
    pub task_ratios: BTreeMap<String, TaskRatios>,
    /// Each task's run time alone on its first node's machine under the
    /// baseline's node policy, s.
    pub alone_s: BTreeMap<String, f64>,
}

/// Run every policy on the cluster and compare each with `baseline`.
pub fn compare_cluster(
    cluster: &Cluster,
    policies: &[(String, Params)],
    baseline: &str,
    options: &SimOptions,
    progress: &mut dyn FnMut(usize, f64),
) -> Result<ClusterCompareReport, EngineError> {
    let Some((_, base_params)) = policies.iter().find(|(n, _)| n == baseline) else {
        return Err(EngineError::from(
            ecosched_policy::PolicyError::Incompatible(format!(
                "the baseline {baseline:?} must be one of the compared policies"
            )),
        ));
    };
    let mut runs = Vec::new();
    for (i, (name, params)) in policies.iter().enumerate() {
        runs.push(simulate_cluster(
            cluster,
            name,
            params,
            options,
            &mut |t| progress(i, t),
        )?);
    }
    // Alone, a task meets no other node: av-xnode is av there.
    let (alone_policy, alone_params) = if is_cross_node(baseline)? {
        (NODE_POLICY, XnodeConfig::split(base_params)?.1)
    } else {
        (baseline, base_params.clone())
    };
    let mut alone = BTreeMap::new();
    for node in &cluster.nodes {
        alone.extend(alone_times(node, alone_policy, &alone_params, options)?);
    }
    let metrics: Vec<&RunMetrics> = runs.iter().map(|r| &r.metrics).collect();
    let ratios = comparisons(policies, &metrics, baseline, &alone).unwrap_or_default();
    let base = metrics[policies
        .iter()
        .position(|(n, _)| n == baseline)
        .unwrap_or(0)];
    let task_ratios = policies
        .iter()
        .zip(&metrics)
        .map(|((name, _), m)| (name.clone(), TaskRatios::new(m, base)))
        .collect();
    Ok(ClusterCompareReport {
        scenario: cluster.spec.name.clone(),
        baseline: baseline.to_string(),
        observe: options.observe,
        results: runs.into_iter().map(|r| r.report).collect(),
        ratios,
        task_ratios,
        alone_s: alone,
    })
}
