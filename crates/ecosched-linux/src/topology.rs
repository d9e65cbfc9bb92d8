//! Topology discovery from sysfs and procfs under an [`FsRoot`], in the
//! manner of hwloc's Linux backend, into the model's [`Topology`] plus the
//! Linux-only facts a platform needs.
//!
//! ```text
//!  sys/devices/system/cpu/{possible,present,online}   which CPUs exist / run
//!  sys/devices/system/cpu/cpuN/online                 per-CPU, when `online` is absent
//!  sys/devices/system/cpu/cpuN/topology/
//!     physical_package_id, die_id, core_id            kernel ids (per package)
//!     package_cpus_list | core_siblings_list          → package
//!     die_cpus_list                                   → die
//!     core_cpus_list | thread_siblings_list           → core (SMT siblings)
//!     (the bitmask forms without `_list` are read first, as hwloc does)
//!  sys/devices/system/cpu/cpuN/cache/index*/          → caches      (caches.rs)
//!  sys/devices/system/node/nodeN/{cpulist,distance}   → NUMA        (numa.rs)
//!  sys/devices/system/cpu/cpufreq/policyN/ | cpuN/cpufreq/ → frequency domains (cpufreq.rs)
//!  sys/devices/system/cpu/cpuN/cpu_capacity           → capacity (arm64 big.LITTLE)
//!  sys/devices/system/cpu/cpuN/acpi_cppc/*            → CPPC performance levels
//!  proc/self/status, proc/mounts, proc/self/cgroup, cpuset files → allowed CPUs (allowed.rs)
//!  proc/cpuinfo                                       → machine name
//! ```
//!
//! Grouping follows the sibling *sets*, not the ids: the kernel's `core_id`
//! is only unique within a package (and on s390 not even there), and
//! `physical_package_id` is `-1` on some architectures. Packages are the
//! distinct package sibling sets; cores the distinct thread sibling sets
//! within a package; dies the distinct die sets within a package. A
//! thread sibling set whose CPUs each have their own L1d cache but share
//! one L1i is not SMT but an AMD family 15h compute unit (two cores with
//! one `core_id`, one L1i and one L2): each CPU is then a core, as hwloc
//! counts them. Model
//! ids: a package keeps its kernel `physical_package_id` when every package
//! has a distinct valid one (else packages are numbered by first CPU); dies
//! and cores are numbered machine-wide by first CPU. The kernel ids are kept
//! in [`LinuxTopology::kernel_ids`] for display.
//!
//! An offline CPU has no `topology` directory on current kernels, so where
//! it sits is unknown: it is kept with `online = false`, in the package its
//! `physical_package_id` names when that was recorded (else the first
//! package), as a core of its own.
//!
//! The machine name is the processor model from `proc/cpuinfo` (`model
//! name` on x86, `cpu` on POWER, `Processor` on 32-bit ARM, `family` on
//! ia64) followed by the package/core/CPU counts; a recorded tree has no
//! meaningful host name, and the model is what an operator recognises.

mod allowed;
pub mod caches;
pub mod masks;
pub mod numa;

use crate::cpufreq::{self, CpufreqPolicy};
use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::mounts::MountTable;
use crate::pstate::DriverState;
use ecosched_model::topology::{Cpu, VoltageDomain};
use ecosched_model::{CpuId, CpuSet, FreqDomainId, Topology};
use masks::parse_cpumask;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

const CPU_DIR: &str = "sys/devices/system/cpu";

/// The ids the kernel gives a CPU (`topology/*_id`), `None` when absent or
/// `-1`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KernelCpuIds {
    /// `physical_package_id`.
    pub package_id: Option<u32>,
    /// `die_id` (unique within a package).
    pub die_id: Option<u32>,
    /// `core_id` (unique within a package at best).
    pub core_id: Option<u32>,
}

/// ACPI CPPC abstract performance levels of one CPU (`acpi_cppc/*`); the
/// ratio of `highest_perf` values tells big from little cores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Cppc {
    /// `highest_perf`: the best the core can do (turbo).
    pub highest_perf: Option<u64>,
    /// `nominal_perf`: sustained performance.
    pub nominal_perf: Option<u64>,
    /// `lowest_nonlinear_perf`: below this, energy efficiency stops improving.
    pub lowest_nonlinear_perf: Option<u64>,
    /// `lowest_perf`.
    pub lowest_perf: Option<u64>,
    /// `nominal_freq` in MHz, when the firmware maps levels to frequencies.
    pub nominal_freq_mhz: Option<u64>,
    /// `lowest_freq` in MHz.
    pub lowest_freq_mhz: Option<u64>,
}

/// Everything discovered about a Linux machine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinuxTopology {
    /// The model's view (what policies see); it passes `validate()`.
    pub topology: Topology,
    /// cpufreq policies, index-aligned with `topology.freq_domains`; both
    /// empty when there is no frequency control.
    pub cpufreq: Vec<CpufreqPolicy>,
    /// The pstate driver's machine-wide state (`intel_pstate/`,
    /// `amd_pstate/`); empty without one.
    pub pstate: DriverState,
    /// NUMA distances (`node*/distance`), rows and columns in the order of
    /// `topology.numa_nodes`; empty when the kernel gives none.
    pub numa_distances: Vec<Vec<u32>>,
    /// `cpu_capacity` (1024 = the biggest core); empty when absent.
    pub capacity: BTreeMap<CpuId, u32>,
    /// CPPC levels per CPU; empty when absent.
    pub cppc: BTreeMap<CpuId, Cppc>,
    /// The SMT sibling sets (one per core with an online CPU), by first CPU.
    pub smt_siblings: Vec<CpuSet>,
    /// The kernel's own ids, per CPU whose `topology` directory exists.
    pub kernel_ids: BTreeMap<CpuId, KernelCpuIds>,
    /// The CPUs this process may use (its affinity, or the recorded cpuset).
    pub allowed: CpuSet,
    /// Where `allowed` came from, in words.
    pub allowed_source: String,
    /// The NUMA nodes this process may allocate from (the cpuset's mems);
    /// every node when unrestricted.
    pub allowed_numa_nodes: BTreeSet<u32>,
    /// CPUs that exist but are offline.
    pub offline: CpuSet,
    /// Processor model and counts (see the module doc).
    pub machine_name: String,
    /// Things discovery noticed and degraded on, one sentence each.
    pub notes: Vec<String>,
}

/// What one online CPU's `topology` directory says.
#[derive(Debug, Clone, Default)]
struct CpuTopo {
    ids: KernelCpuIds,
    package_set: Option<CpuSet>,
    die_set: Option<CpuSet>,
    core_set: Option<CpuSet>,
}

/// Discover the machine under `root`, reading its mount table.
pub fn discover(root: &FsRoot) -> Result<LinuxTopology, LinuxError> {
    check_root(root)?;
    discover_with(root, &MountTable::read(root)?)
}

/// `root` must be a directory holding a Linux sysfs CPU tree.
fn check_root(root: &FsRoot) -> Result<(), LinuxError> {
    if !root.dir().is_dir() {
        return Err(LinuxError::Absent {
            path: root.dir().to_path_buf(),
            what: "a Linux root directory (holding sys/ and proc/)".into(),
        });
    }
    if !root.path(CPU_DIR).is_dir() {
        return Err(LinuxError::Absent {
            path: root.path(CPU_DIR),
            what: format!(
                "a Linux sysfs tree: {} has no sys/devices/system/cpu",
                root.dir().display()
            ),
        });
    }
    Ok(())
}

/// Discover the machine under `root`, whose mount table (read once by the
/// caller) is `mounts`.
pub fn discover_with(root: &FsRoot, mounts: &MountTable) -> Result<LinuxTopology, LinuxError> {
    check_root(root)?;
    let mut notes = Vec::new();
    let (all, online) = cpu_sets(root)?;
    if online.is_empty() {
        return Err(LinuxError::Absent {
            path: root.path(&format!("{CPU_DIR}/online")),
            what: "any online CPU".into(),
        });
    }
    let offline = minus(&all, &online);

    let mut topo: BTreeMap<CpuId, CpuTopo> = BTreeMap::new();
    let mut l1: BTreeMap<CpuId, (CpuSet, CpuSet)> = BTreeMap::new();
    for cpu in online.iter() {
        topo.insert(cpu, read_cpu_topology(root, cpu, &online)?);
        if let (Some(d), Some(i)) = caches::l1_sharing(root, cpu)? {
            l1.insert(cpu, (d, i));
        }
    }
    let package_sets = partition(&online, |cpu| {
        let t = &topo[&cpu];
        t.package_set
            .clone()
            .unwrap_or_else(|| match t.ids.package_id {
                Some(id) => online
                    .iter()
                    .filter(|c| topo[c].package_set.is_none() && topo[c].ids.package_id == Some(id))
                    .collect(),
                None => online
                    .iter()
                    .filter(|c| topo[c].package_set.is_none() && topo[c].ids.package_id.is_none())
                    .collect(),
            })
    });
    let kernel_pkg: Vec<Option<u32>> = package_sets
        .iter()
        .map(|s| s.first().and_then(|c| topo[&c].ids.package_id))
        .collect();
    let mut distinct: Vec<u32> = kernel_pkg.iter().flatten().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    let keep_kernel_ids = distinct.len() == package_sets.len();
    let package_number = |i: usize| -> u32 {
        if keep_kernel_ids {
            kernel_pkg[i].unwrap_or(0)
        } else {
            u32::try_from(i).unwrap_or(u32::MAX)
        }
    };

    let mut cpus: Vec<Cpu> = Vec::new();
    let mut smt_siblings = Vec::new();
    let mut die_of_package: BTreeMap<u32, u32> = BTreeMap::new();
    let (mut next_die, mut next_core) = (0u32, 0u32);
    for (pi, pset) in package_sets.iter().enumerate() {
        let package = package_number(pi);
        let dies = partition(pset, |cpu| {
            topo[&cpu]
                .die_set
                .clone()
                .unwrap_or_else(|| pset.clone())
                .intersection(pset)
        });
        for dset in dies {
            let die = next_die;
            next_die += 1;
            die_of_package.entry(package).or_insert(die);
            let cores = partition(&dset, |cpu| {
                let siblings = topo[&cpu]
                    .core_set
                    .clone()
                    .unwrap_or_else(|| CpuSet::single(cpu))
                    .intersection(&dset);
                compute_unit_core(cpu, siblings, l1.get(&cpu))
            });
            for cset in cores {
                for id in cset.iter() {
                    cpus.push(Cpu {
                        id,
                        package,
                        die,
                        core: next_core,
                        numa_node: 0,
                        online: true,
                        freq_domain: None,
                        capacity: ecosched_model::topology::FULL_CAPACITY,
                    });
                }
                smt_siblings.push(cset);
                next_core += 1;
            }
        }
    }
    let first_package = package_number(0);
    for id in offline.iter() {
        let ids = read_kernel_ids(root, id)?;
        let package = ids
            .package_id
            .filter(|p| keep_kernel_ids && die_of_package.contains_key(p))
            .unwrap_or(first_package);
        cpus.push(Cpu {
            id,
            package,
            die: die_of_package.get(&package).copied().unwrap_or(0),
            core: next_core,
            numa_node: 0,
            online: false,
            freq_domain: None,
            capacity: ecosched_model::topology::FULL_CAPACITY,
        });
        next_core += 1;
    }
    cpus.sort_by_key(|c| c.id);
    smt_siblings.sort_by_key(|s| s.first());

    let core_of: BTreeMap<CpuId, CpuSet> = smt_siblings
        .iter()
        .flat_map(|s| s.iter().map(move |c| (c, s.clone())))
        .collect();
    let mut caches = caches::read_caches(root, &online, &core_of)?;
    caches.retain(|cache| {
        let mut packages: Vec<u32> = cpus
            .iter()
            .filter(|c| cache.cpus.contains(c.id))
            .map(|c| c.package)
            .collect();
        packages.sort_unstable();
        packages.dedup();
        if packages.len() > 1 {
            notes.push(format!(
                "L{} cache over CPUs {} spans packages {packages:?}, which contradicts the package sibling sets; ignored",
                cache.level, cache.cpus
            ));
        }
        packages.len() <= 1
    });
    let (numa_nodes, numa_distances) = numa::read_numa(root, &all)?;
    for cpu in &mut cpus {
        if let Some(node) = numa_nodes.iter().find(|n| n.cpus.contains(cpu.id)) {
            cpu.numa_node = node.id;
        } else if let Some(node) = numa_nodes.first() {
            cpu.numa_node = node.id;
        }
    }

    let (cpufreq, freq_domains) = frequency_domains(root, &all, &online, &mut notes)?;
    for cpu in &mut cpus {
        if let Some(i) = freq_domains.iter().position(|d| d.cpus.contains(cpu.id)) {
            cpu.freq_domain = Some(FreqDomainId(i));
        }
    }
    let voltage_domains = (0..freq_domains.len())
        .map(|i| VoltageDomain {
            freq_domains: vec![FreqDomainId(i)],
        })
        .collect();

    let mut capacity = BTreeMap::new();
    let mut cppc = BTreeMap::new();
    let mut kernel_ids = BTreeMap::new();
    for cpu in all.iter() {
        let base = format!("{CPU_DIR}/cpu{}", cpu.0);
        if let Some(c) = root.read_u64_opt(&format!("{base}/cpu_capacity"))? {
            capacity.insert(cpu, u32::try_from(c).unwrap_or(u32::MAX));
        }
        if let Some(c) = read_cppc(root, &base)? {
            cppc.insert(cpu, c);
        }
        if let Some(t) = topo.get(&cpu) {
            kernel_ids.insert(cpu, t.ids);
        } else if root.exists(&format!("{base}/topology")) {
            kernel_ids.insert(cpu, read_kernel_ids(root, cpu)?);
        }
    }

    let granted = allowed::read_allowed(root, mounts)?;
    let (allowed, allowed_source) = match granted.cpus {
        Some(set) if !set.intersection(&all).is_empty() => {
            let source = if root.is_live() {
                "the process's affinity (proc/self/status)"
            } else {
                "the recorded cpuset cgroup"
            };
            (set.intersection(&all), source.to_string())
        }
        _ => (
            online.clone(),
            "every online CPU (no cpuset recorded)".to_string(),
        ),
    };
    let node_ids: BTreeSet<u32> = numa_nodes.iter().map(|n| n.id).collect();
    let allowed_numa_nodes = match granted.mems {
        Some(m) if !m.is_disjoint(&node_ids) => m.intersection(&node_ids).copied().collect(),
        _ => node_ids,
    };

    let topology = Topology {
        cpus,
        caches,
        numa_nodes,
        freq_domains,
        voltage_domains,
        idle_states: Vec::new(),
        calibration: Default::default(),
    };
    let machine_name = machine_name(root, &topology, &offline)?;
    topology.validate().map_err(|e| LinuxError::Parse {
        path: root.path(CPU_DIR),
        content: String::new(),
        reason: format!("the discovered topology is inconsistent: {e}"),
    })?;
    Ok(LinuxTopology {
        topology,
        cpufreq,
        pstate: DriverState::read(root)?,
        numa_distances,
        capacity,
        cppc,
        smt_siblings,
        kernel_ids,
        allowed,
        allowed_source,
        allowed_numa_nodes,
        offline,
        machine_name,
        notes,
    })
}

/// Every CPU that exists and the online ones.
fn cpu_sets(root: &FsRoot) -> Result<(CpuSet, CpuSet), LinuxError> {
    let mut all: CpuSet = root
        .list(CPU_DIR)?
        .iter()
        .filter_map(|n| n.strip_prefix("cpu")?.parse().ok().map(CpuId))
        .collect();
    if let Some(present) = root.read_cpulist_opt(&format!("{CPU_DIR}/present"))? {
        all = all.union(&present);
    }
    let online = match root.read_cpulist_opt(&format!("{CPU_DIR}/online"))? {
        Some(set) => set,
        None => {
            let mut set = CpuSet::new();
            for cpu in all.iter() {
                let flag = root.read_opt(&format!("{CPU_DIR}/cpu{}/online", cpu.0))?;
                if flag.as_deref() != Some("0") {
                    set.insert(cpu);
                }
            }
            set
        }
    };
    Ok((all.union(&online), online))
}

/// `cpu`'s core given its thread `siblings` and the CPUs sharing its L1d
/// and L1i: siblings that share its L1i but no L1d are the other core of a
/// compute unit (AMD family 15h), so the core is `cpu` alone.
fn compute_unit_core(cpu: CpuId, siblings: CpuSet, l1: Option<&(CpuSet, CpuSet)>) -> CpuSet {
    match l1 {
        Some((data, instruction))
            if siblings.len() > 1
                && data.intersection(&siblings).len() <= 1
                && instruction.intersection(&siblings).len() > 1 =>
        {
            CpuSet::single(cpu)
        }
        _ => siblings,
    }
}

/// A sibling set from its mask file, else its list file. The mask is read
/// first, as hwloc reads it: the kernel writes both alike, and hand-made
/// recordings edit only the mask.
fn sibling_set(root: &FsRoot, dir: &str, names: &[&str]) -> Result<Option<CpuSet>, LinuxError> {
    for name in names {
        let rel = format!("{dir}/{name}");
        if let Some(text) = root.read_opt(&rel)? {
            let set = parse_cpumask(&text).ok_or_else(|| {
                LinuxError::parse(&root.path(&rel), &text, "expected a CPU bitmask")
            })?;
            return Ok(Some(set));
        }
        if let Some(set) = root.read_cpulist_opt(&format!("{dir}/{name}_list"))? {
            return Ok(Some(set));
        }
    }
    Ok(None)
}

/// A `*_id` file; `-1` (no such level on this architecture) is `None`.
fn read_id(root: &FsRoot, rel: &str) -> Result<Option<u32>, LinuxError> {
    match root.read_opt(rel)? {
        None => Ok(None),
        Some(text) => {
            let n: i64 = text
                .parse()
                .map_err(|_| LinuxError::parse(&root.path(rel), &text, "expected an integer id"))?;
            Ok(u32::try_from(n).ok())
        }
    }
}

fn read_kernel_ids(root: &FsRoot, cpu: CpuId) -> Result<KernelCpuIds, LinuxError> {
    let dir = format!("{CPU_DIR}/cpu{}/topology", cpu.0);
    Ok(KernelCpuIds {
        package_id: read_id(root, &format!("{dir}/physical_package_id"))?,
        die_id: read_id(root, &format!("{dir}/die_id"))?,
        core_id: read_id(root, &format!("{dir}/core_id"))?,
    })
}

fn read_cpu_topology(root: &FsRoot, cpu: CpuId, online: &CpuSet) -> Result<CpuTopo, LinuxError> {
    let dir = format!("{CPU_DIR}/cpu{}/topology", cpu.0);
    let with_self = |s: Option<CpuSet>| {
        s.map(|s| {
            let mut s = s.intersection(online);
            s.insert(cpu);
            s
        })
    };
    Ok(CpuTopo {
        ids: read_kernel_ids(root, cpu)?,
        package_set: with_self(sibling_set(root, &dir, &["package_cpus", "core_siblings"])?),
        die_set: with_self(sibling_set(root, &dir, &["die_cpus"])?),
        core_set: with_self(sibling_set(root, &dir, &["core_cpus", "thread_siblings"])?),
    })
}

/// Split `set` into groups: each CPU not yet placed starts a group made of
/// its own sibling set minus the CPUs already placed. Consistent kernel
/// data gives its sets back unchanged; inconsistent data (sets that overlap
/// without being equal) still yields a partition.
fn partition(set: &CpuSet, siblings: impl Fn(CpuId) -> CpuSet) -> Vec<CpuSet> {
    let mut placed = CpuSet::new();
    let mut groups = Vec::new();
    for cpu in set.iter() {
        if placed.contains(cpu) {
            continue;
        }
        let mut group = minus(&siblings(cpu).intersection(set), &placed);
        group.insert(cpu);
        placed = placed.union(&group);
        groups.push(group);
    }
    groups
}

/// `a` without the CPUs of `b`.
pub(crate) fn minus(a: &CpuSet, b: &CpuSet) -> CpuSet {
    a.iter().filter(|c| !b.contains(*c)).collect()
}

/// The cpufreq policies and their frequency domains. Frequency control is
/// reported only when every online CPU has a usable policy; otherwise both
/// lists are empty and a note says why.
fn frequency_domains(
    root: &FsRoot,
    all: &CpuSet,
    online: &CpuSet,
    notes: &mut Vec<String>,
) -> Result<
    (
        Vec<CpufreqPolicy>,
        Vec<ecosched_model::topology::FreqDomain>,
    ),
    LinuxError,
> {
    let mut policies = Vec::new();
    let mut domains = Vec::new();
    for mut policy in cpufreq::read_policies(root)? {
        policy.cpus = policy.cpus.intersection(all);
        if policy.cpus.is_empty() {
            continue;
        }
        match policy.to_freq_domain(domains.len()) {
            Some(d) => {
                domains.push(d);
                policies.push(policy);
            }
            None => notes.push(format!(
                "cpufreq: {} lists no frequency; ignored",
                policy.dir
            )),
        }
    }
    if policies.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let covered = policies
        .iter()
        .fold(CpuSet::new(), |acc, p| acc.union(&p.cpus));
    let missing = minus(online, &covered);
    if !missing.is_empty() {
        notes.push(format!(
            "cpufreq: online CPUs {missing} have no policy; frequency control is not offered"
        ));
        return Ok((Vec::new(), Vec::new()));
    }
    Ok((policies, domains))
}

fn read_cppc(root: &FsRoot, cpu_dir: &str) -> Result<Option<Cppc>, LinuxError> {
    let dir = format!("{cpu_dir}/acpi_cppc");
    if !root.exists(&dir) {
        return Ok(None);
    }
    let f = |name: &str| root.read_u64_opt(&format!("{dir}/{name}"));
    Ok(Some(Cppc {
        highest_perf: f("highest_perf")?,
        nominal_perf: f("nominal_perf")?,
        lowest_nonlinear_perf: f("lowest_nonlinear_perf")?,
        lowest_perf: f("lowest_perf")?,
        nominal_freq_mhz: f("nominal_freq")?,
        lowest_freq_mhz: f("lowest_freq")?,
    }))
}

/// Processor model from `proc/cpuinfo` plus counts.
fn machine_name(
    root: &FsRoot,
    topology: &Topology,
    offline: &CpuSet,
) -> Result<String, LinuxError> {
    let cpuinfo = root.read_opt("proc/cpuinfo")?.unwrap_or_default();
    let model = ["model name", "cpu", "Processor", "family"]
        .iter()
        .find_map(|key| {
            cpuinfo.lines().find_map(|line| {
                let (k, v) = line.split_once(':')?;
                (k.trim() == *key && !v.trim().is_empty())
                    .then(|| v.split_whitespace().collect::<Vec<_>>().join(" "))
            })
        });
    let mut cores: Vec<u32> = topology
        .cpus
        .iter()
        .filter(|c| c.online)
        .map(|c| c.core)
        .collect();
    cores.sort_unstable();
    cores.dedup();
    let total = topology.cpus.len();
    let cpus = if offline.is_empty() {
        format!("{total} CPUs")
    } else {
        format!("{} of {total} CPUs online", total - offline.len())
    };
    Ok(format!(
        "{} ({} package{}, {} cores, {cpus})",
        model.unwrap_or_else(|| "unknown processor".to_string()),
        topology.package_count(),
        if topology.package_count() == 1 {
            ""
        } else {
            "s"
        },
        cores.len(),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn partition_keeps_consistent_sets_and_splits_conflicting_ones() {
        let set = CpuSet::parse_list("0-5").unwrap();
        let pairs = partition(&set, |c| {
            let base = c.0 / 2 * 2;
            CpuSet::parse_list(&format!("{}-{}", base, base + 1)).unwrap()
        });
        let lists: Vec<String> = pairs.iter().map(CpuSet::to_list).collect();
        assert_eq!(lists, ["0-1", "2-3", "4-5"]);
        let odd = partition(&set, |c| {
            if c.0 == 0 {
                CpuSet::parse_list("0-2").unwrap()
            } else {
                CpuSet::parse_list("2-5").unwrap()
            }
        });
        let lists: Vec<String> = odd.iter().map(CpuSet::to_list).collect();
        assert_eq!(lists, ["0-2", "3-5"]);
    }

    #[test]
    fn a_missing_root_or_a_non_linux_tree_is_named() {
        let err = discover(&FsRoot::recorded("/nonexistent/ecosched-root")).unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent/ecosched-root"),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let err = discover(&FsRoot::recorded(dir.path())).unwrap_err();
        assert!(err.to_string().contains("sys/devices/system/cpu"), "{err}");
    }
}
