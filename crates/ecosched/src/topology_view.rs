//! `ecosched topology [--root DIR] [--json | --emit-machine FILE [--force]]`:
//! what discovery found, as a
//! tree in the manner of `lstopo` / `likwid-topology` (package → caches →
//! core → PU, with NUMA nodes, frequency domains, capacity and the allowed
//! set beside it) or as JSON whose CPU sets are Linux cpulists.
//!
//! A recorded root (a directory holding `sys/` and `proc/`, as hwloc's
//! `hwloc-gather-topology` makes) is shown as read from there; without
//! `--root` the running machine is shown.

use crate::cli::TopologyArgs;
use crate::outcome::Outcome;
use crate::outcome::UsageError;
use anyhow::{Context, Result};
use ecosched_linux::topology::{self, Cppc, LinuxTopology};
use ecosched_linux::FsRoot;
use ecosched_model::topology::CacheKind;
use ecosched_model::{CpuId, CpuSet};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Run `ecosched topology`.
pub fn run(args: &TopologyArgs) -> Result<Outcome> {
    let root = match &args.root {
        None => FsRoot::live(),
        Some(dir) => {
            if !dir.is_dir() {
                return Err(anyhow::Error::new(UsageError(format!(
                    "--root {}: no such directory",
                    dir.display()
                ))));
            }
            if !dir.join("sys/devices/system/cpu").is_dir() {
                return Err(anyhow::Error::new(UsageError(format!(
                    "--root {}: not a Linux root (no sys/devices/system/cpu inside)",
                    dir.display()
                ))));
            }
            FsRoot::recorded(dir)
        }
    };
    let found = topology::discover(&root).with_context(|| {
        format!(
            "cannot discover the topology under {}",
            root.dir().display()
        )
    })?;
    if let Some(path) = &args.emit_machine {
        let name = path
            .file_stem()
            .map_or_else(|| "host".to_string(), |s| s.to_string_lossy().into_owned());
        let text = crate::machine_emit::emit(&found, &root, &name);
        crate::machine_emit::write(path, &text, args.force)?;
        let to_fill = text.matches("TO FILL IN").count();
        return Ok(Outcome::ok(format!(
            "wrote machine file {} for {} ({to_fill} values marked TO FILL IN); try it: a scenario with machine = {:?}\n",
            path.display(),
            found.machine_name,
            path.display().to_string()
        )));
    }
    let text = if args.json {
        let mut s = serde_json::to_string_pretty(&TopologyJson::new(&found, &root))?;
        s.push('\n');
        s
    } else {
        render_tree(&found, &root)
    };
    Ok(Outcome::ok(text))
}

/// One CPU in the JSON form.
#[derive(Debug, Serialize)]
struct CpuJson {
    id: u32,
    package: u32,
    die: u32,
    core: u32,
    /// The kernel's `core_id` (unique within a package only).
    core_id: Option<u32>,
    numa_node: u32,
    online: bool,
    allowed: bool,
    capacity: Option<u32>,
}

/// One cache in the JSON form.
#[derive(Debug, Serialize)]
struct CacheJson {
    level: u8,
    #[serde(rename = "type")]
    kind: CacheKind,
    size_kib: u64,
    cpus: CpuSet,
}

/// One NUMA node in the JSON form.
#[derive(Debug, Serialize)]
struct NodeJson {
    id: u32,
    cpus: CpuSet,
    /// The node's row of the distance matrix (empty when unknown).
    distances: Vec<u32>,
    allowed: bool,
}

/// One frequency domain in the JSON form.
#[derive(Debug, Serialize)]
struct FreqJson {
    cpus: CpuSet,
    /// The P-states: the listed frequencies, or the hardware minimum and
    /// maximum of a continuous driver.
    available_khz: Vec<u64>,
    /// Whether the driver lists frequencies (`false`: any value between
    /// the two ends can be pinned).
    listed: bool,
    governors: Vec<String>,
    governor: Option<String>,
    min_khz: Option<u64>,
    max_khz: Option<u64>,
    transition_latency_us: u32,
    policy: String,
}

/// The whole JSON document.
#[derive(Debug, Serialize)]
struct TopologyJson<'a> {
    machine: &'a str,
    root: String,
    cpus: Vec<CpuJson>,
    caches: Vec<CacheJson>,
    numa_nodes: Vec<NodeJson>,
    frequency_domains: Vec<FreqJson>,
    smt_siblings: &'a [CpuSet],
    allowed: &'a CpuSet,
    allowed_source: &'a str,
    offline: &'a CpuSet,
    cppc: BTreeMap<u32, Cppc>,
    notes: &'a [String],
}

impl<'a> TopologyJson<'a> {
    fn new(found: &'a LinuxTopology, root: &FsRoot) -> Self {
        let t = &found.topology;
        TopologyJson {
            machine: &found.machine_name,
            root: root.dir().display().to_string(),
            cpus: t
                .cpus
                .iter()
                .map(|c| CpuJson {
                    id: c.id.0,
                    package: c.package,
                    die: c.die,
                    core: c.core,
                    core_id: found.kernel_ids.get(&c.id).and_then(|k| k.core_id),
                    numa_node: c.numa_node,
                    online: c.online,
                    allowed: found.allowed.contains(c.id),
                    capacity: found.capacity.get(&c.id).copied(),
                })
                .collect(),
            caches: t
                .caches
                .iter()
                .map(|c| CacheJson {
                    level: c.level,
                    kind: c.kind,
                    size_kib: c.size_kib,
                    cpus: c.cpus.clone(),
                })
                .collect(),
            numa_nodes: t
                .numa_nodes
                .iter()
                .enumerate()
                .map(|(i, n)| NodeJson {
                    id: n.id,
                    cpus: n.cpus.clone(),
                    distances: found.numa_distances.get(i).cloned().unwrap_or_default(),
                    allowed: found.allowed_numa_nodes.contains(&n.id),
                })
                .collect(),
            frequency_domains: t
                .freq_domains
                .iter()
                .zip(&found.cpufreq)
                .map(|(d, p)| FreqJson {
                    cpus: d.cpus.clone(),
                    available_khz: d.pstates.iter().map(|s| s.freq_khz).collect(),
                    listed: !p.available_khz.is_empty(),
                    governors: p.governors.clone(),
                    governor: p.governor.clone(),
                    min_khz: p.min_khz,
                    max_khz: p.max_khz,
                    transition_latency_us: d.transition_latency_us,
                    policy: p.dir.clone(),
                })
                .collect(),
            smt_siblings: &found.smt_siblings,
            allowed: &found.allowed,
            allowed_source: &found.allowed_source,
            offline: &found.offline,
            cppc: found.cppc.iter().map(|(c, v)| (c.0, *v)).collect(),
            notes: &found.notes,
        }
    }
}

/// One box of the tree: a package, die, cache or core.
struct Item {
    /// Depth class: packages first, then dies, caches from the last level
    /// down, then cores.
    rank: u32,
    cpus: CpuSet,
    label: String,
    children: Vec<usize>,
}

fn cache_label(level: u8, kind: CacheKind, size_kib: u64) -> String {
    let k = match kind {
        CacheKind::Data => "d",
        CacheKind::Instruction => "i",
        CacheKind::Unified => "",
    };
    format!("L{level}{k} {}", size_text(size_kib))
}

fn size_text(kib: u64) -> String {
    if kib >= 1024 && kib.is_multiple_of(1024) {
        format!("{} MiB", kib / 1024)
    } else {
        format!("{kib} KiB")
    }
}

/// The readable tree.
fn render_tree(found: &LinuxTopology, root: &FsRoot) -> String {
    let t = &found.topology;
    let mut out = String::new();
    let source = if root.is_live() {
        "this machine".to_string()
    } else {
        format!("recorded at {}", root.dir().display())
    };
    let _ = writeln!(out, "Machine: {} [{source}]", found.machine_name);
    let _ = writeln!(
        out,
        "  allowed CPUs: {} ({})",
        list_or_none(&found.allowed),
        found.allowed_source
    );
    if !found.offline.is_empty() {
        let _ = writeln!(out, "  offline CPUs: {}", found.offline);
    }
    for (i, n) in t.numa_nodes.iter().enumerate() {
        let mut line = format!("  NUMA node {}: CPUs {}", n.id, list_or_none(&n.cpus));
        if let Some(row) = found.numa_distances.get(i) {
            let d: Vec<String> = row.iter().map(u32::to_string).collect();
            let _ = write!(line, "; distances {}", d.join(" "));
        }
        if !found.allowed_numa_nodes.contains(&n.id) {
            line.push_str(" (not allowed)");
        }
        let _ = writeln!(out, "{line}");
    }

    let max_level = u32::from(t.caches.iter().map(|c| c.level).max().unwrap_or(0));
    let online = t.online_cpus();
    let mut items: Vec<Item> = Vec::new();
    let mut packages: BTreeMap<u32, CpuSet> = BTreeMap::new();
    let mut dies: BTreeMap<u32, CpuSet> = BTreeMap::new();
    let mut cores: BTreeMap<u32, CpuSet> = BTreeMap::new();
    for c in t.cpus.iter().filter(|c| c.online) {
        packages.entry(c.package).or_default().insert(c.id);
        dies.entry(c.die).or_default().insert(c.id);
        cores.entry(c.core).or_default().insert(c.id);
    }
    for (p, cpus) in &packages {
        items.push(Item {
            rank: 0,
            cpus: cpus.clone(),
            label: format!("Package {p}"),
            children: Vec::new(),
        });
    }
    if dies.len() > packages.len() {
        for (d, cpus) in &dies {
            items.push(Item {
                rank: 1,
                cpus: cpus.clone(),
                label: format!("Die {d}"),
                children: Vec::new(),
            });
        }
    }
    for c in &t.caches {
        let kind_rank = match c.kind {
            CacheKind::Unified => 0,
            CacheKind::Data => 1,
            CacheKind::Instruction => 2,
        };
        items.push(Item {
            rank: 2 + (max_level - u32::from(c.level)) * 3 + kind_rank,
            cpus: c.cpus.clone(),
            label: cache_label(c.level, c.kind, c.size_kib),
            children: Vec::new(),
        });
    }
    for (core, cpus) in &cores {
        let first = cpus.first().unwrap_or(CpuId(0));
        let kernel = found
            .kernel_ids
            .get(&first)
            .and_then(|k| k.core_id)
            .map_or(String::new(), |id| format!(" (core_id {id})"));
        let pus: Vec<String> = cpus.iter().map(|c| pu_text(found, c)).collect();
        items.push(Item {
            rank: 1000,
            cpus: cpus.clone(),
            label: format!("Core {core}{kernel}: {}", pus.join(", ")),
            children: Vec::new(),
        });
    }
    // Each item hangs from the deepest earlier-ranked item that holds all
    // its CPUs; ties in CPUs keep the rank order (L2 above L1d above L1i).
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| (items[i].rank, items[i].cpus.first()));
    let mut roots = Vec::new();
    for (pos, &i) in order.iter().enumerate() {
        let parent = order[..pos]
            .iter()
            .rev()
            .copied()
            .filter(|&j| items[j].rank < items[i].rank && items[i].cpus.is_subset(&items[j].cpus))
            .max_by_key(|&j| (items[j].rank, std::cmp::Reverse(items[j].cpus.len())));
        match parent {
            Some(j) => items[j].children.push(i),
            None => roots.push(i),
        }
    }
    for &r in &roots {
        print_item(&items, r, 1, &mut out);
    }
    let unplaced: CpuSet = online
        .iter()
        .filter(|c| !items.iter().any(|i| i.rank == 1000 && i.cpus.contains(*c)))
        .collect();
    if !unplaced.is_empty() {
        let _ = writeln!(out, "  CPUs outside any core: {unplaced}");
    }

    if t.freq_domains.is_empty() {
        let _ = writeln!(
            out,
            "Frequency domains: none (no cpufreq; frequency control not offered)"
        );
    } else {
        let _ = writeln!(out, "Frequency domains ({}):", t.freq_domains.len());
        for (i, (d, p)) in t.freq_domains.iter().zip(&found.cpufreq).enumerate() {
            let freqs = if p.available_khz.is_empty() {
                format!("{}..{} kHz (continuous)", d.min_khz(), d.max_khz())
            } else {
                let f: Vec<String> = d.pstates.iter().map(|s| s.freq_khz.to_string()).collect();
                format!("{} kHz", f.join(" "))
            };
            let limits = match (p.min_khz, p.max_khz) {
                (Some(lo), Some(hi)) => format!("; limits {lo}..{hi} kHz"),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "  {i}: CPUs {}: {freqs}{limits}; governor {} of [{}]; latency {} us ({})",
                d.cpus,
                p.governor.as_deref().unwrap_or("?"),
                p.governors.join(" "),
                d.transition_latency_us,
                p.dir
            );
        }
    }
    if !found.cppc.is_empty() {
        let mut by_perf: BTreeMap<(Option<u64>, Option<u64>), CpuSet> = BTreeMap::new();
        for (cpu, c) in &found.cppc {
            by_perf
                .entry((c.highest_perf, c.nominal_perf))
                .or_default()
                .insert(*cpu);
        }
        let _ = writeln!(out, "CPPC performance levels (highest/nominal):");
        for ((hi, nom), cpus) in by_perf.iter().rev() {
            let n = |v: &Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
            let _ = writeln!(out, "  {}/{}: CPUs {cpus}", n(hi), n(nom));
        }
    }
    for note in &found.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

fn pu_text(found: &LinuxTopology, cpu: CpuId) -> String {
    let mut s = format!("PU {}", cpu.0);
    if let Some(cap) = found.capacity.get(&cpu) {
        let _ = write!(s, " (capacity {cap})");
    }
    if !found.allowed.contains(cpu) {
        s.push_str(" (not allowed)");
    }
    s
}

fn list_or_none(set: &CpuSet) -> String {
    if set.is_empty() {
        "none".to_string()
    } else {
        set.to_list()
    }
}

fn print_item(items: &[Item], i: usize, depth: usize, out: &mut String) {
    let item = &items[i];
    let _ = writeln!(out, "{}{}", "  ".repeat(depth), item.label);
    for &c in &item.children {
        print_item(items, c, depth + 1, out);
    }
}
