//! Discovery on machines hwloc's recordings do not cover: a 128-CPU
//! two-socket arm64 server, whose package masks are 128 bits wide, and an
//! AMD Opteron 6272, whose compute units put two cores under one
//! `core_id`. The trees are
//! hand-written (`tests/data/topology/README.md`); the expected counts are
//! what hwloc reports for these machines.

use crate::support::{data, unpack_tar_bz2};
use ecosched_linux::topology::discover;
use ecosched_linux::FsRoot;
use ecosched_model::topology::CacheKind;
use ecosched_model::CpuSet;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Unpack `tests/data/topology/<name>.tar.bz2` and return its top directory.
fn unpack(name: &str, into: &Path) -> PathBuf {
    let tarball = data("topology").join(format!("{name}.tar.bz2"));
    unpack_tar_bz2(&tarball, into, &|_| true);
    into.join(name)
}

fn distinct<T: Ord>(items: impl Iterator<Item = T>) -> usize {
    items.collect::<BTreeSet<_>>().len()
}

fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).expect("cpulist")
}

#[test]
fn a_128_cpu_arm64_server_with_128_bit_package_masks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = unpack("ampere-altra-2p-q64-30", tmp.path());
    let mask =
        std::fs::read_to_string(root.join("sys/devices/system/cpu/cpu5/topology/package_cpus"))
            .expect("mask");
    assert_eq!(mask.trim(), "00000000,00000000,ffffffff,ffffffff");
    let found = discover(&FsRoot::recorded(&root)).expect("discovery");
    let t = &found.topology;
    assert_eq!(t.cpus.len(), 128);
    assert_eq!(distinct(t.cpus.iter().map(|c| c.package)), 2);
    assert_eq!(distinct(t.cpus.iter().map(|c| c.core)), 128);
    let package_of_64 = t.cpus.iter().find(|c| c.id.0 == 64).expect("cpu64").package;
    assert!(t
        .cpus
        .iter()
        .filter(|c| c.package == package_of_64)
        .map(|c| c.id.0)
        .eq(64..128));
    assert!(found.smt_siblings.iter().all(|s| s.len() == 1));
    let nodes: Vec<CpuSet> = t.numa_nodes.iter().map(|n| n.cpus.clone()).collect();
    assert_eq!(nodes, vec![cpus("0-63"), cpus("64-127")]);
    let l2 = t.caches.iter().filter(|c| c.level == 2).count();
    assert_eq!(l2, 128, "one private L2 per core");
}

#[test]
fn an_opteron_6272_compute_unit_is_two_cores_as_hwloc_counts_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = unpack("opteron-6272-2p", tmp.path());
    let found = discover(&FsRoot::recorded(&root)).expect("discovery");
    let t = &found.topology;
    assert!(
        found.machine_name.contains("Opteron(TM) Processor 6272"),
        "{}",
        found.machine_name
    );
    assert_eq!(t.cpus.len(), 32);
    assert_eq!(distinct(t.cpus.iter().map(|c| c.package)), 2);
    // hwloc: 32 cores of one PU each, not 16 cores × 2 threads.
    assert_eq!(distinct(t.cpus.iter().map(|c| c.core)), 32);
    assert!(
        found.smt_siblings.iter().all(|s| s.len() == 1),
        "{:?}",
        found.smt_siblings
    );
    // The kernel's ids are kept: both cores of a compute unit say core_id 0.
    let ids: Vec<Option<u32>> = [0, 1, 2]
        .iter()
        .map(|c| found.kernel_ids[&ecosched_model::CpuId(*c)].core_id)
        .collect();
    assert_eq!(ids, vec![Some(0), Some(0), Some(1)]);
    // The compute unit is still visible in the caches it shares.
    let shared = |level: u8, kind: CacheKind| -> Vec<CpuSet> {
        t.caches
            .iter()
            .filter(|c| c.level == level && c.kind == kind)
            .map(|c| c.cpus.clone())
            .collect()
    };
    assert_eq!(shared(1, CacheKind::Data).len(), 32);
    assert_eq!(shared(1, CacheKind::Instruction)[0], cpus("0-1"));
    assert_eq!(shared(2, CacheKind::Unified).len(), 16);
    assert_eq!(shared(3, CacheKind::Unified)[1], cpus("8-15"));
    assert_eq!(t.numa_nodes.len(), 4);
}
