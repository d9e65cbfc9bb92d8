//! The advisor's decisions, pure: from the running jobs' classes, which
//! class each node has room for (its `eco_take_*` features) and its weight.
//!
//! A node running more memory-bound jobs than compute-bound ones wants a
//! compute-bound job next, and the reverse; a balanced node takes either.
//! That is vector balancing (§4.2) with two classes: co-locating a
//! memory-bound job with compute-bound ones raises the node's variance sum
//! least. Slurm then applies the preference softly (`--prefer`), so a job
//! whose preferred nodes are full still runs elsewhere.

use std::collections::{BTreeMap, BTreeSet};

/// A job's class, from its activity vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// Memory-bus bound (`stream`, `vm`).
    Mem,
    /// Core bound (`cpu`).
    Cpu,
}

/// Every node feature the advisor owns starts with this; others are the
/// administrator's and are kept.
pub const FEATURE_PREFIX: &str = "eco_take_";

impl Class {
    /// Its name in comments, the database and features.
    pub fn name(self) -> &'static str {
        match self {
            Class::Mem => "mem",
            Class::Cpu => "cpu",
        }
    }

    /// Parse `mem` or `cpu`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "mem" => Some(Class::Mem),
            "cpu" => Some(Class::Cpu),
            _ => None,
        }
    }

    /// The node feature that says "room for this class".
    pub fn feature(self) -> String {
        format!("{FEATURE_PREFIX}{}", self.name())
    }
}

/// The class a job declares in its comment: `ecosched:class=mem` (or
/// `cpu`) anywhere in it, words separated by spaces or commas.
pub fn declared_class(comment: &str) -> Option<Class> {
    comment
        .split([' ', ','])
        .find_map(|w| w.strip_prefix("ecosched:class="))
        .and_then(Class::parse)
}

/// The advisor's settings for one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAdvice {
    /// The `eco_take_*` features it should carry.
    pub features: BTreeSet<String>,
    /// Its scheduling weight (Slurm fills low weights first): 1 when
    /// balanced, one more per job of imbalance.
    pub weight: u32,
}

/// The advice for every node in `nodes`, given the classes of the jobs
/// running on each (`running[node]`); jobs of unknown class count for
/// nothing.
///
/// Every class's feature stays on at least one node (the one with the
/// least surplus of that class): Slurm refuses a submission whose
/// `--prefer` no node can satisfy, and a preference must never turn into
/// a refusal.
pub fn advise(
    nodes: &[String],
    running: &BTreeMap<String, Vec<Class>>,
) -> BTreeMap<String, NodeAdvice> {
    let surplus = |node: &str, c: Class| {
        let classes = running.get(node).map(Vec::as_slice).unwrap_or(&[]);
        let n = classes.iter().filter(|x| **x == c).count();
        n as i64 - (classes.len() - n) as i64
    };
    let mut advice = by_node(nodes, running);
    for c in [Class::Mem, Class::Cpu] {
        if advice.values().any(|a| a.features.contains(&c.feature())) {
            continue;
        }
        if let Some(best) = nodes.iter().min_by_key(|n| surplus(n, c)) {
            if let Some(a) = advice.get_mut(best) {
                a.features.insert(c.feature());
            }
        }
    }
    advice
}

fn by_node(
    nodes: &[String],
    running: &BTreeMap<String, Vec<Class>>,
) -> BTreeMap<String, NodeAdvice> {
    nodes
        .iter()
        .map(|node| {
            let classes = running.get(node).map(Vec::as_slice).unwrap_or(&[]);
            let mem = classes.iter().filter(|c| **c == Class::Mem).count();
            let cpu = classes.len() - mem;
            let mut features = BTreeSet::new();
            if mem <= cpu {
                features.insert(Class::Mem.feature());
            }
            if cpu <= mem {
                features.insert(Class::Cpu.feature());
            }
            let weight = 1 + u32::try_from(mem.abs_diff(cpu)).unwrap_or(u32::MAX - 1);
            (node.clone(), NodeAdvice { features, weight })
        })
        .collect()
}

/// A node's whole feature list after advice: its own (non-`eco_take_`)
/// features, then the advised ones.
pub fn merged_features(current: &[String], advised: &BTreeSet<String>) -> Vec<String> {
    let mut out: Vec<String> = current
        .iter()
        .filter(|f| !f.starts_with(FEATURE_PREFIX) && !f.is_empty())
        .cloned()
        .collect();
    out.extend(advised.iter().cloned());
    out
}

/// A running single-node job, for swapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// Job id.
    pub id: String,
    /// Its node.
    pub node: String,
    /// Its class.
    pub class: Class,
}

/// The cross-node swap (§4.5): when node A runs at least two more
/// memory-bound jobs than compute-bound ones and node B the reverse, a
/// memory-bound job of A and a compute-bound job of B, both of which
/// `may_move` (they opted in to requeueing). Requeued together, each is
/// placed again by its preference into the slot the other left, which
/// raises both nodes' variance sums. `None` when no such pair exists.
pub fn swap_pair(
    jobs: &[Placed],
    may_move: &mut dyn FnMut(&str) -> bool,
) -> Option<(String, String)> {
    let surplus = |node: &str, c: Class| {
        jobs.iter()
            .filter(|j| j.node == node)
            .map(|j| if j.class == c { 1i64 } else { -1 })
            .sum::<i64>()
    };
    let heavy = |c: Class| -> Vec<&Placed> {
        jobs.iter()
            .filter(|j| j.class == c && surplus(&j.node, c) >= 2)
            .collect()
    };
    let (mem, cpu) = (heavy(Class::Mem), heavy(Class::Cpu));
    if mem.is_empty() || cpu.is_empty() {
        return None;
    }
    let m = mem.into_iter().find(|j| may_move(&j.id))?;
    let c = cpu
        .into_iter()
        .find(|j| j.node != m.node && may_move(&j.id))?;
    Some((m.id.clone(), c.id.clone()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn comments_declare_classes() {
        assert_eq!(declared_class("ecosched:class=mem"), Some(Class::Mem));
        assert_eq!(declared_class("run 3,ecosched:class=cpu"), Some(Class::Cpu));
        assert_eq!(declared_class("ecosched:class=gpu"), None);
        assert_eq!(declared_class(""), None);
    }

    #[test]
    fn nodes_want_the_class_they_lack() {
        let nodes = names(&["n1", "n2", "n3"]);
        let running: BTreeMap<String, Vec<Class>> = [
            ("n1".to_string(), vec![Class::Mem]),
            ("n2".to_string(), vec![Class::Cpu, Class::Cpu]),
        ]
        .into();
        let a = advise(&nodes, &running);
        assert_eq!(a["n1"].features, [Class::Cpu.feature()].into());
        assert_eq!(a["n1"].weight, 2);
        assert_eq!(a["n2"].features, [Class::Mem.feature()].into());
        assert_eq!(a["n2"].weight, 3);
        // Empty and balanced nodes take either.
        assert_eq!(a["n3"].features.len(), 2);
        assert_eq!(a["n3"].weight, 1);
    }

    #[test]
    fn every_class_keeps_a_node() {
        let nodes = names(&["n1", "n2"]);
        let running: BTreeMap<String, Vec<Class>> = [
            ("n1".to_string(), vec![Class::Mem, Class::Mem]),
            ("n2".to_string(), vec![Class::Mem]),
        ]
        .into();
        let a = advise(&nodes, &running);
        // Nobody lacks memory-bound work, but a mem job must stay placeable:
        // the node with the least memory surplus keeps the feature.
        assert!(a["n2"].features.contains(&Class::Mem.feature()));
        assert!(!a["n1"].features.contains(&Class::Mem.feature()));
        assert!(a["n1"].features.contains(&Class::Cpu.feature()));
    }

    fn placed(id: &str, node: &str, class: Class) -> Placed {
        Placed {
            id: id.into(),
            node: node.into(),
            class,
        }
    }

    #[test]
    fn swaps_take_one_opted_in_job_from_each_side() {
        let jobs = [
            placed("1", "n1", Class::Mem),
            placed("2", "n1", Class::Mem),
            placed("3", "n2", Class::Mem),
            placed("4", "n2", Class::Cpu),
            placed("5", "n3", Class::Cpu),
            placed("6", "n3", Class::Cpu),
        ];
        let pair = swap_pair(&jobs, &mut |id| id == "2" || id == "6");
        assert_eq!(pair, Some(("2".into(), "6".into())));
        // Jobs that did not opt in are never moved: no pair at all.
        assert_eq!(swap_pair(&jobs, &mut |id| id == "2"), None);
        // Balanced nodes: nothing to gain.
        let mixed = [placed("1", "n1", Class::Mem), placed("2", "n1", Class::Cpu)];
        assert_eq!(swap_pair(&mixed, &mut |_| true), None);
    }

    #[test]
    fn advice_is_idempotent_and_keeps_foreign_features() {
        let advised: BTreeSet<String> = [Class::Mem.feature()].into();
        let once = merged_features(&names(&["gpu", "eco_take_cpu"]), &advised);
        assert_eq!(once, names(&["gpu", "eco_take_mem"]));
        assert_eq!(merged_features(&once, &advised), once);
    }
}
