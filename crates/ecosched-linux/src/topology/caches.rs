//! CPU caches from `sys/devices/system/cpu/cpuN/cache/indexM/{level,type,
//! size,shared_cpu_list,shared_cpu_map}`.
//!
//! Every online CPU lists every cache it uses; a cache is the same cache for
//! all CPUs that list it with the same level, type and sharing set, so the
//! domains are the distinct `(level, type, shared CPUs)` triples. Two kernel
//! quirks are handled as hwloc handles them: an empty sharing set (seen on
//! ia64 for L3 and the L2 instruction cache) means the cache is private to
//! the core (the CPU's SMT siblings), and CPUs that are offline are removed
//! from sharing sets. Cache types other than
//! `Data`, `Instruction` and `Unified` (none exist today) are skipped.

use super::masks::{parse_cpumask, parse_size_kib};
use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use ecosched_model::topology::{CacheDomain, CacheKind};
use ecosched_model::{CpuId, CpuSet};
use std::collections::{BTreeMap, BTreeSet};

/// The sharing set of one cache index: the mask file (what hwloc reads;
/// hand-made recordings edit only it), else the list file.
fn shared_cpus(root: &FsRoot, dir: &str) -> Result<Option<CpuSet>, LinuxError> {
    let rel = format!("{dir}/shared_cpu_map");
    match root.read_opt(&rel)? {
        None => root.read_cpulist_opt(&format!("{dir}/shared_cpu_list")),
        Some(text) => parse_cpumask(&text)
            .map(Some)
            .ok_or_else(|| LinuxError::parse(&root.path(&rel), &text, "expected a CPU bitmask")),
    }
}

/// The CPUs sharing `cpu`'s level-1 data and instruction caches, when
/// sysfs says. Two "SMT siblings" that each have their own L1d but share
/// one L1i are not hardware threads of one core (SMT threads share the
/// L1d) but the two cores of an AMD family 15h compute unit, which share
/// only the front end, L1i, FPU and L2; hwloc counts them as two cores.
pub fn l1_sharing(
    root: &FsRoot,
    cpu: CpuId,
) -> Result<(Option<CpuSet>, Option<CpuSet>), LinuxError> {
    let base = format!("sys/devices/system/cpu/cpu{}/cache", cpu.0);
    let (mut data, mut instruction) = (None, None);
    for index in root.list(&base)? {
        if !index.starts_with("index") {
            continue;
        }
        let dir = format!("{base}/{index}");
        if root.read_opt(&format!("{dir}/level"))?.as_deref() != Some("1") {
            continue;
        }
        match root.read_opt(&format!("{dir}/type"))?.as_deref() {
            Some("Data") => data = shared_cpus(root, &dir)?,
            Some("Instruction") => instruction = shared_cpus(root, &dir)?,
            _ => {}
        }
    }
    Ok((data, instruction))
}

/// The caches seen by the `online` CPUs, in order of level, then kind, then
/// first CPU. `core_of` gives each online CPU's SMT sibling set.
pub fn read_caches(
    root: &FsRoot,
    online: &CpuSet,
    core_of: &BTreeMap<CpuId, CpuSet>,
) -> Result<Vec<CacheDomain>, LinuxError> {
    let mut seen: BTreeSet<(u8, u8, CpuSet, u64)> = BTreeSet::new();
    let mut caches = Vec::new();
    for cpu in online.iter() {
        let base = format!("sys/devices/system/cpu/cpu{}/cache", cpu.0);
        for index in root.list(&base)? {
            if !index.starts_with("index") {
                continue;
            }
            let dir = format!("{base}/{index}");
            let Some(level) = root.read_u64_opt(&format!("{dir}/level"))? else {
                continue;
            };
            let kind = match root.read_opt(&format!("{dir}/type"))?.as_deref() {
                Some("Data") => CacheKind::Data,
                Some("Instruction") => CacheKind::Instruction,
                Some("Unified") => CacheKind::Unified,
                _ => continue,
            };
            let size_kib = match root.read_opt(&format!("{dir}/size"))? {
                None => 0,
                Some(text) => parse_size_kib(&text).ok_or_else(|| {
                    LinuxError::parse(
                        &root.path(&format!("{dir}/size")),
                        &text,
                        "expected a size such as 32K",
                    )
                })?,
            };
            let mut cpus = shared_cpus(root, &dir)?
                .unwrap_or_default()
                .intersection(online);
            if cpus.is_empty() {
                cpus = core_of
                    .get(&cpu)
                    .cloned()
                    .unwrap_or_else(|| CpuSet::single(cpu));
            }
            let level = u8::try_from(level).map_err(|_| {
                LinuxError::parse(
                    &root.path(&format!("{dir}/level")),
                    &level.to_string(),
                    "cache level out of range",
                )
            })?;
            let key = (level, kind_rank(kind), cpus.clone(), size_kib);
            if seen.insert(key) {
                caches.push(CacheDomain {
                    level,
                    kind,
                    size_kib,
                    cpus,
                });
            }
        }
    }
    caches.sort_by(|a, b| {
        (a.level, kind_rank(a.kind), a.cpus.first()).cmp(&(
            b.level,
            kind_rank(b.kind),
            b.cpus.first(),
        ))
    });
    Ok(caches)
}

/// Data before instruction before unified, as lstopo lists them.
fn kind_rank(kind: CacheKind) -> u8 {
    match kind {
        CacheKind::Data => 0,
        CacheKind::Instruction => 1,
        CacheKind::Unified => 2,
    }
}
