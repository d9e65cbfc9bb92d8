//! Cluster scenarios: several simulated machines ("nodes"), each with its
//! own machine preset and workload, and what moving a workload between
//! them costs (Merkel et al., EuroSys'10, §5.2, §8.4).
//!
//! ```toml
//! name = "merkel-xnode-worst"
//! description = "…"
//! meter = "package"          # as a scenario: seed, tick_ms, meter, governor,
//! duration_s = 3600          # duration_s and [profiles.NAME] hold for every node
//!
//! [migration]                # what one task's move costs (defaults below)
//! downtime_s = 10.0          # it runs nowhere for this long
//! energy_j = 300.0           # spent on top of what the meters see
//!
//! [[nodes]]
//! name = "a"                 # default node0, node1, …
//! machine = "q6600"
//! [[nodes.tasks]]            # a scenario's [[tasks]]; names unique cluster-wide
//! profile = "lbm"
//! length_s = 100
//! ```
//!
//! Each node is checked as a scenario of its own; an error names the file,
//! line and key (`nodes[1].machine`) in the cluster file. A file is a
//! cluster scenario when it has `[[nodes]]` ([`Workload::load`]).

use crate::error::SimError;
use crate::profile::Profile;
use crate::scenario::{
    default_governor, default_meter, default_tick, find_key_line, input_error, parse_toml,
    ScenarioSpec, TaskSpec, SCENARIOS,
};
use crate::Scenario;
use ecosched_model::user_file::{read_text, TEXT_MAX_BYTES};
use ecosched_model::{Governor, Meter};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Built-in cluster scenarios: (name, TOML).
pub const CLUSTERS: &[(&str, &str)] = &[
    (
        "merkel-xnode-worst",
        include_str!("../scenarios/merkel-xnode-worst.toml"),
    ),
    (
        "merkel-xnode-mixed",
        include_str!("../scenarios/merkel-xnode-mixed.toml"),
    ),
];

/// What moving one task between nodes costs.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationCost {
    /// Seconds the task runs nowhere. Default 10 s: a stop-and-copy of a
    /// VM of about 1 GiB over Gigabit Ethernet (≈ 110 MB/s of payload),
    /// the link of Merkel §8; an assumption, not a measured figure (live
    /// migration, Clark et al., NSDI 2005, the paper's ref. 3, stops a VM
    /// for far less but copies as much).
    #[serde(default = "default_downtime")]
    pub downtime_s: f64,
    /// Joules spent per move beyond what the nodes' meters see. Default
    /// 300 J: a core busy copying on each of the two nodes (≈ 15 W each
    /// on the Q6600's package) for the 10 s copy; an assumption.
    #[serde(default = "default_energy")]
    pub energy_j: f64,
}

fn default_downtime() -> f64 {
    10.0
}
fn default_energy() -> f64 {
    300.0
}

impl Default for MigrationCost {
    fn default() -> Self {
        MigrationCost {
            downtime_s: default_downtime(),
            energy_j: default_energy(),
        }
    }
}

/// One node as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Name (default `node<i>`).
    #[serde(default)]
    pub name: Option<String>,
    /// Machine preset name or machine file path.
    pub machine: String,
    /// Its workload.
    #[serde(default)]
    pub tasks: Vec<TaskSpec>,
}

/// A cluster scenario as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// Name.
    pub name: String,
    /// One line.
    pub description: String,
    /// The paper experiment it reproduces, if any.
    #[serde(default)]
    pub source: Option<String>,
    /// RNG seed (node i runs with seed + i).
    #[serde(default)]
    pub seed: u64,
    /// Scheduler tick, ms.
    #[serde(default = "default_tick")]
    pub tick_ms: f64,
    /// Energy meter for metrics.
    #[serde(default = "default_meter")]
    pub meter: Meter,
    /// Kernel governor before a policy acts.
    #[serde(default = "default_governor")]
    pub governor: Governor,
    /// Stop after this many simulated seconds.
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// Extra profiles, for every node.
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
    /// The cost of a move.
    #[serde(default)]
    pub migration: MigrationCost,
    /// The nodes.
    pub nodes: Vec<NodeSpec>,
}

/// A cluster ready to simulate: one scenario per node.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// As written.
    pub spec: ClusterSpec,
    /// Node names, in order.
    pub node_names: Vec<String>,
    /// Each node as a scenario of its own (named `CLUSTER/NODE`).
    pub nodes: Vec<Scenario>,
}

/// A single machine's scenario or a cluster's.
#[derive(Debug, Clone)]
pub enum Workload {
    /// One machine.
    Single(Box<Scenario>),
    /// Several.
    Cluster(Box<Cluster>),
}

impl Workload {
    /// Load a built-in scenario or cluster by name, or a file by path (a
    /// cluster when it has `[[nodes]]`).
    pub fn load(name_or_path: &str) -> Result<Workload, SimError> {
        if let Some((name, text)) = CLUSTERS.iter().find(|(n, _)| *n == name_or_path) {
            return Cluster::from_toml(&format!("built-in scenario {name}"), text, None)
                .map(|c| Workload::Cluster(Box::new(c)));
        }
        let path = Path::new(name_or_path);
        let is_builtin = SCENARIOS.iter().any(|(n, _)| *n == name_or_path);
        if !is_builtin && path.is_file() {
            let text = read_text(path, TEXT_MAX_BYTES)?;
            if has_nodes(&text) {
                return Cluster::from_toml(name_or_path, &text, path.parent())
                    .map(|c| Workload::Cluster(Box::new(c)));
            }
        }
        Scenario::load(name_or_path).map(|s| Workload::Single(Box::new(s)))
    }
}

/// Whether a TOML text has a top-level `nodes` key (a cluster scenario).
fn has_nodes(text: &str) -> bool {
    text.parse::<toml::Table>()
        .is_ok_and(|t| t.contains_key("nodes"))
}

impl Cluster {
    /// Parse and check a cluster scenario. `dir` resolves relative
    /// machine paths.
    pub fn from_toml(origin: &str, text: &str, dir: Option<&Path>) -> Result<Cluster, SimError> {
        let spec: ClusterSpec = parse_toml(origin, text)?;
        let top = |key: &str, message: String| {
            input_error(
                origin,
                text,
                find_key_line(text, key),
                key.to_string(),
                message,
            )
        };
        if spec.nodes.len() < 2 {
            return Err(top(
                "nodes",
                format!(
                    "a cluster needs at least two [[nodes]], found {}",
                    spec.nodes.len()
                ),
            ));
        }
        let m = spec.migration;
        if !(m.downtime_s.is_finite() && m.downtime_s >= 0.0 && m.downtime_s <= 86_400.0) {
            return Err(top(
                "migration.downtime_s",
                format!("{} is not a downtime of 0 s to a day", m.downtime_s),
            ));
        }
        if !(m.energy_j.is_finite() && m.energy_j >= 0.0) {
            return Err(top(
                "migration.energy_j",
                format!("{} is not a non-negative energy", m.energy_j),
            ));
        }
        let mut node_names = Vec::new();
        let mut nodes = Vec::new();
        let mut task_names: BTreeSet<String> = BTreeSet::new();
        for (i, node) in spec.nodes.iter().enumerate() {
            let at = |key: String, message: String| {
                let line = node_key_line(text, i, &key);
                input_error(origin, text, line, format!("nodes[{i}].{key}"), message)
            };
            let name = node.name.clone().unwrap_or_else(|| format!("node{i}"));
            if node_names.contains(&name) {
                return Err(at("name".into(), format!("two nodes are named {name:?}")));
            }
            for (j, t) in node.tasks.iter().enumerate() {
                if t.after.is_some() {
                    return Err(at(
                        format!("tasks[{j}].after"),
                        "`after` is not supported in a cluster: a task that moves would leave its dependants behind".into(),
                    ));
                }
            }
            let scenario = Scenario::checked(
                origin,
                ScenarioSpec {
                    name: format!("{}/{name}", spec.name),
                    description: spec.description.clone(),
                    source: spec.source.clone(),
                    machine: node.machine.clone(),
                    seed: spec.seed.wrapping_add(i as u64),
                    tick_ms: spec.tick_ms,
                    meter: spec.meter,
                    governor: spec.governor,
                    duration_s: spec.duration_s,
                    profiles: spec.profiles.clone(),
                    tasks: node.tasks.clone(),
                    transients: None,
                    jobgraph: None,
                    parallelism_hint: None,
                },
                dir,
                &at,
            )?;
            // Tasks are reported by name across the cluster: one name, one task.
            let mut k = 0;
            for (j, t) in node.tasks.iter().enumerate() {
                for _ in 0..t.count {
                    let instance = scenario.instance_names()[k].clone();
                    k += 1;
                    if !task_names.insert(instance.clone()) {
                        return Err(at(
                            format!("tasks[{j}].name"),
                            format!("another node already has a task named {instance:?}; names are cluster-wide"),
                        ));
                    }
                }
            }
            node_names.push(name);
            nodes.push(scenario);
        }
        Ok(Cluster {
            spec,
            node_names,
            nodes,
        })
    }
}

/// The 1-based line of `key` (`machine`, `tasks[2].profile`) inside the
/// `i`-th `[[nodes]]` table of `text`.
fn node_key_line(text: &str, i: usize, key: &str) -> Option<usize> {
    let headers: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == "[[nodes]]")
        .map(|(n, _)| n)
        .collect();
    let first = *headers.get(i)?;
    let end = headers.get(i + 1).copied().unwrap_or(usize::MAX);
    // The node's block, with `nodes.` taken off its table headers, read
    // as a scenario of its own.
    let block: String = text
        .lines()
        .enumerate()
        .filter(|(n, _)| *n > first && *n < end)
        .map(|(_, l)| {
            let t = l.trim();
            if t.starts_with("[[nodes.") || t.starts_with("[nodes.") {
                l.replacen("nodes.", "", 1)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    // An absent key (a default) is shown at its table: `tasks[0]`'s header.
    let table = key.rsplit_once('.').map(|(t, _)| t);
    let line = find_key_line(&block, key).or_else(|| table.and_then(|t| find_key_line(&block, t)));
    Some(line.map_or(first + 1, |l| first + 1 + l))
}

/// Names and descriptions of the built-in cluster scenarios.
pub fn builtin_clusters() -> Vec<(String, String)> {
    CLUSTERS
        .iter()
        .map(|(name, text)| {
            let description = parse_toml::<ClusterSpec>(name, text)
                .map_or_else(|e| format!("(broken: {e})"), |s| s.description);
            (name.to_string(), description)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load_as_clusters() {
        for (name, _) in CLUSTERS {
            match Workload::load(name).unwrap() {
                Workload::Cluster(c) => assert_eq!(c.nodes.len(), 2, "{name}"),
                Workload::Single(_) => panic!("{name} loaded as one machine"),
            }
        }
        assert!(matches!(
            Workload::load("merkel-sort-8").unwrap(),
            Workload::Single(_)
        ));
    }

    #[test]
    fn unknown_preset_is_located_in_its_node() {
        let text = "name = \"c\"\ndescription = \"d\"\n\n[[nodes]]\nmachine = \"q6600\"\n[[nodes.tasks]]\nprofile = \"lbm\"\nlength_s = 1\n\n[[nodes]]\nmachine = \"q9999\"\n[[nodes.tasks]]\nprofile = \"mcf\"\nlength_s = 1\n";
        let e = Cluster::from_toml("c.toml", text, None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.toml:11:1 (key `nodes[1].machine`)"), "{e}");
        assert!(e.contains("q9999"), "{e}");
    }

    #[test]
    fn task_names_are_cluster_wide() {
        let text = "name = \"c\"\ndescription = \"d\"\n[[nodes]]\nmachine = \"q6600\"\n[[nodes.tasks]]\nprofile = \"lbm\"\nlength_s = 1\n[[nodes]]\nmachine = \"q6600\"\n[[nodes.tasks]]\nprofile = \"lbm\"\nlength_s = 1\n";
        let e = Cluster::from_toml("c.toml", text, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("nodes[1].tasks[0].name"), "{e}");
        assert!(e.starts_with("c.toml:10:1 "), "{e}");
    }

    #[test]
    fn one_node_is_not_a_cluster() {
        let text = "name = \"c\"\ndescription = \"d\"\n[[nodes]]\nmachine = \"q6600\"\n";
        let e = Cluster::from_toml("c.toml", text, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least two"), "{e}");
    }
}
