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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn root(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = dir.path().join(NODE_DIR).join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    #[test]
    fn overlapping_nodes_are_dropped_with_their_distance_columns() {
        let dir = root(&[
            ("node0/cpulist", "0-3\n"),
            ("node0/distance", "10 20 20\n"),
            ("node1/cpulist", "0-3\n"),
            ("node1/distance", "20 10 20\n"),
            ("node2/cpulist", "\n"),
            ("node2/distance", "20 20 10\n"),
        ]);
        let all = CpuSet::first_n(4);
        let (nodes, dist) = read_numa(&FsRoot::recorded(dir.path()), &all).unwrap();
        let ids: Vec<u32> = nodes.iter().map(|n| n.id).collect();
        assert_eq!(ids, [0, 2]);
        assert!(nodes[1].cpus.is_empty());
        assert_eq!(dist, [[10, 20], [20, 10]]);
    }

    #[test]
    fn no_node_directory_is_one_node_with_every_cpu() {
        let dir = tempfile::tempdir().unwrap();
        let (nodes, dist) = read_numa(&FsRoot::recorded(dir.path()), &CpuSet::first_n(2)).unwrap();
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0].cpus.to_list(), "0-1");
        assert!(dist.is_empty());
    }

    #[test]
    fn a_ragged_distance_row_drops_the_matrix() {
        let dir = root(&[
            ("node0/cpulist", "0\n"),
            ("node0/distance", "10 20\n"),
            ("node1/cpulist", "1\n"),
            ("node1/distance", "20\n"),
        ]);
        let (_, dist) = read_numa(&FsRoot::recorded(dir.path()), &CpuSet::first_n(2)).unwrap();
        assert!(dist.is_empty());
    }
}
