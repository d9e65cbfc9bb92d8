//! NUMA nodes from `sys/devices/system/node/nodeN/{cpulist,cpumap,distance}`.
//!
//! A kernel without NUMA support has no `node` directory: the machine is then
//! one node 0 holding every CPU (as hwloc reports it). Some firmware makes
//! every node list every CPU (an SGI Altix XE320 does, hwloc's
//! `8em64t-2s2ca2c-buggynuma`); a node whose CPUs overlap an earlier node's
//! is then dropped, as hwloc drops it, so that each CPU belongs to one node.
//! Nodes without CPUs (memory-only) are kept with an empty set.

use super::masks::parse_cpumask;
use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use ecosched_model::topology::NumaNode;
use ecosched_model::CpuSet;

const NODE_DIR: &str = "sys/devices/system/node";

/// NUMA nodes in id order and their distance matrix (rows and columns in
/// the same order; empty when the kernel gives no distances).
pub fn read_numa(
    root: &FsRoot,
    all: &CpuSet,
) -> Result<(Vec<NumaNode>, Vec<Vec<u32>>), LinuxError> {
    let mut ids: Vec<u32> = root
        .list(NODE_DIR)?
        .iter()
        .filter_map(|n| n.strip_prefix("node")?.parse().ok())
        .collect();
    ids.sort_unstable();
    if ids.is_empty() {
        let node = NumaNode {
            id: 0,
            cpus: all.clone(),
        };
        return Ok((vec![node], Vec::new()));
    }
    let all_ids = ids.clone();
    let mut nodes: Vec<NumaNode> = Vec::new();
    let mut rows: Vec<(u32, Vec<u32>)> = Vec::new();
    let mut taken = CpuSet::new();
    for id in ids {
        let dir = format!("{NODE_DIR}/node{id}");
        let cpus = match root.read_cpulist_opt(&format!("{dir}/cpulist"))? {
            Some(set) => set,
            None => match root.read_opt(&format!("{dir}/cpumap"))? {
                Some(text) => parse_cpumask(&text).ok_or_else(|| {
                    LinuxError::parse(
                        &root.path(&format!("{dir}/cpumap")),
                        &text,
                        "expected a CPU bitmask",
                    )
                })?,
                None => CpuSet::new(),
            },
        }
        .intersection(all);
        if cpus.intersects(&taken) {
            continue;
        }
        taken = taken.union(&cpus);
        let rel = format!("{dir}/distance");
        if let Some(text) = root.read_opt(&rel)? {
            let row = text
                .split_whitespace()
                .map(|d| d.parse::<u32>())
                .collect::<Result<Vec<u32>, _>>()
                .map_err(|_| LinuxError::parse(&root.path(&rel), &text, "expected distances"))?;
            rows.push((id, row));
        }
        nodes.push(NumaNode { id, cpus });
    }
    let matrix = distance_matrix(&all_ids, &nodes, rows);
    Ok((nodes, matrix))
}

/// Keep the columns of the kept nodes. The kernel orders each `distance`
/// row by node id over all nodes that have memory or CPUs, which is the
/// order of the node directories.
/// A matrix whose rows do not all have one entry per node is dropped.
fn distance_matrix(
    all_ids: &[u32],
    nodes: &[NumaNode],
    rows: Vec<(u32, Vec<u32>)>,
) -> Vec<Vec<u32>> {
    if rows.len() != nodes.len() {
        return Vec::new();
    }
    let cols: Vec<usize> = nodes
        .iter()
        .filter_map(|n| all_ids.iter().position(|&id| id == n.id))
        .collect();
    let mut matrix = Vec::new();
    for (_, row) in rows {
        if row.len() != all_ids.len() {
            return Vec::new();
        }
        matrix.push(cols.iter().map(|&c| row[c]).collect());
    }
    matrix
}
