//! Reading hwloc's `lstopo` output (the `-v` text and the XML export) and
//! comparing it with `ecosched_linux::topology::discover`'s answer: shared
//! by the recorded machines (`hwloc_fixtures`) and the live one
//! (`live::hwloc_ls`).
//!
//! What is compared, and how lstopo's view is matched: lstopo drops CPUs
//! that are offline or not allowed, so our sets are restricted to the PUs
//! it shows before comparing; objects left without PUs (a package kept only
//! for its memory) are not compared; a NUMA node's CPUs in the text form
//! are those of the first non-memory object above it. A node that sysfs
//! gives no CPUs (memory-only: GPU memory, memory tiers) is only checked to
//! exist: hwloc places it near the CPUs its initiators or distances name,
//! while the model lists a node's own CPUs.

use ecosched_linux::topology::LinuxTopology;
use ecosched_model::topology::CacheKind;
use ecosched_model::{CpuId, CpuSet};
use std::collections::{BTreeMap, BTreeSet};

/// What an exception covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aspect {
    /// NUMA nodes.
    Numa,
    /// Packages.
    Packages,
    /// Caches of one level.
    CacheLevel(u8),
}

/// One object of the expected output with the PUs below it.
#[derive(Debug, Clone)]
pub struct Obj {
    pub kind: String,
    pub os_index: Option<u64>,
    /// Cache size in KiB and the unit lstopo printed it in (KiB), for a
    /// rounding tolerance.
    pub size_kib: Option<(u64, u64)>,
    pub cache_kind: Option<(u8, CacheKind)>,
    pub pus: CpuSet,
    /// Whether the object sits directly under the machine.
    pub under_machine: bool,
}

/// What lstopo printed for one machine.
#[derive(Debug, Default)]
pub struct Expected {
    pub objs: Vec<Obj>,
    pub not_represented: Option<CpuSet>,
    pub not_allowed: Option<CpuSet>,
    pub complete: Option<CpuSet>,
}

/// An hwloc bitmap (`0x0000f00f,0x00000001` or the console's `0x00e0000f`).
pub fn parse_hex_set(text: &str) -> Option<CpuSet> {
    let mut set = CpuSet::new();
    for (i, word) in text.trim().split(',').rev().enumerate() {
        let w = word.trim().trim_start_matches("0x");
        if w.contains("f...f") {
            return None;
        }
        let bits = if w.is_empty() {
            0
        } else {
            u32::from_str_radix(w, 16).ok()?
        };
        for b in 0..32 {
            if bits & (1 << b) != 0 {
                set.insert(CpuId(i as u32 * 32 + b));
            }
        }
    }
    Some(set)
}

fn cache_type(name: &str) -> Option<(u8, CacheKind)> {
    let rest = name.strip_prefix('L')?.strip_suffix("Cache")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let level = digits.parse().ok()?;
    let kind = match &rest[digits.len()..] {
        "" => CacheKind::Unified,
        "d" => CacheKind::Data,
        "i" => CacheKind::Instruction,
        _ => return None,
    };
    Some((level, kind))
}

fn size_to_kib(text: &str) -> Option<(u64, u64)> {
    for (unit, kib) in [
        ("KiB", 1),
        ("MiB", 1024),
        ("GiB", 1024 * 1024),
        ("TiB", 1 << 30),
    ] {
        if let Some(n) = text.strip_suffix(unit) {
            return Some((n.parse::<u64>().ok()? * kib, kib));
        }
    }
    None
}

/// Parse `lstopo -v` text: one object per line, two spaces per level.
pub fn parse_console(text: &str) -> Expected {
    let mut exp = Expected::default();
    // (depth, index into objs) of the open ancestors.
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for line in text.lines().map(str::trim_end) {
        if line.starts_with("depth ") {
            break;
        }
        let depth = (line.len() - line.trim_start().len()) / 2;
        let body = line.trim_start();
        let head = body.split(' ').next().unwrap_or("");
        let kind = head.split('(').next().unwrap_or("").to_string();
        let attrs = body.split_once(" (").map_or("", |(_, a)| a);
        let mut os_index = None;
        let mut size_kib = None;
        for attr in attrs.split_whitespace().map(|a| a.trim_end_matches(')')) {
            if let Some(n) = attr.strip_prefix("P#") {
                os_index = n.parse().ok();
            } else if let Some(s) = attr.strip_prefix("size=") {
                size_kib = size_to_kib(s);
            }
        }
        while stack.last().is_some_and(|&(d, _)| d >= depth) {
            stack.pop();
        }
        let under_machine = stack
            .last()
            .is_some_and(|&(_, i)| exp.objs[i].kind == "Machine");
        exp.objs.push(Obj {
            cache_kind: cache_type(&kind),
            kind: kind.clone(),
            os_index,
            size_kib,
            pus: CpuSet::new(),
            under_machine,
        });
        let me = exp.objs.len() - 1;
        if kind == "PU" {
            let cpu = CpuId(os_index.unwrap() as u32);
            for &(_, i) in &stack {
                exp.objs[i].pus.insert(cpu);
            }
            exp.objs[me].pus.insert(cpu);
        }
        stack.push((depth, me));
    }
    // A memory object's CPUs are its parent's: fill NUMA nodes afterwards.
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        if line.starts_with("depth ") {
            break;
        }
        let depth = (line.len() - line.trim_start().len()) / 2;
        while stack.last().is_some_and(|&(d, _)| d >= depth) {
            stack.pop();
        }
        if exp.objs[idx].kind == "NUMANode" {
            // The first ancestor that is not itself memory (a MemCache).
            let parent = stack
                .iter()
                .rev()
                .map(|&(_, i)| i)
                .find(|&i| exp.objs[i].kind != "MemCache");
            if let Some(parent) = parent {
                exp.objs[idx].pus = exp.objs[parent].pus.clone();
                exp.objs[idx].under_machine = exp.objs[parent].kind == "Machine";
            }
        }
        stack.push((depth, idx));
    }
    for line in text.lines() {
        if let Some((_, mask)) = line.split_once("processors not represented in topology: ") {
            exp.not_represented = parse_hex_set(mask);
        }
        if let Some((_, mask)) = line.split_once("processors represented but not allowed: ") {
            exp.not_allowed = parse_hex_set(mask);
        }
    }
    exp
}

fn xml_attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = tag[start..].find('"')? + start;
    Some(tag[start..end].to_string())
}

/// Parse hwloc's XML: every `<object …>` carries its cpuset.
pub fn parse_xml(text: &str) -> Expected {
    let mut exp = Expected::default();
    let mut depth = 0usize;
    let mut machine_depth = None;
    let mut rest = text;
    while let Some(pos) = rest.find('<') {
        rest = &rest[pos..];
        let end = rest.find('>').unwrap();
        let tag = &rest[..=end];
        rest = &rest[end + 1..];
        if tag.starts_with("</object") {
            depth -= 1;
            continue;
        }
        if !tag.starts_with("<object ") {
            continue;
        }
        let kind = xml_attr(tag, "type").unwrap();
        let self_closing = tag.ends_with("/>");
        let cpus = xml_attr(tag, "cpuset")
            .and_then(|s| parse_hex_set(&s))
            .unwrap_or_default();
        if kind == "Machine" {
            machine_depth = Some(depth);
            exp.complete = xml_attr(tag, "complete_cpuset").and_then(|s| parse_hex_set(&s));
        }
        let cache_kind = match (
            kind.as_str(),
            xml_attr(tag, "depth"),
            xml_attr(tag, "cache_type"),
        ) {
            (k, Some(d), Some(t)) if k.ends_with("Cache") && k != "MemCache" => {
                let kind = match t.as_str() {
                    "1" => CacheKind::Data,
                    "2" => CacheKind::Instruction,
                    _ => CacheKind::Unified,
                };
                Some((d.parse().unwrap(), kind))
            }
            _ => None,
        };
        exp.objs.push(Obj {
            kind: match cache_kind {
                Some(_) => "Cache".into(),
                None => kind,
            },
            os_index: xml_attr(tag, "os_index").and_then(|s| s.parse().ok()),
            size_kib: xml_attr(tag, "cache_size").map(|s| (s.parse::<u64>().unwrap() / 1024, 1)),
            cache_kind,
            pus: cpus,
            under_machine: machine_depth.is_some_and(|m| depth == m + 1),
        });
        if !self_closing {
            depth += 1;
        }
    }
    if let Some(m) = exp.objs.iter().find(|o| o.kind == "Machine") {
        let shown = m.pus.clone();
        if let Some(complete) = &exp.complete {
            exp.not_represented = Some(complete.iter().filter(|c| !shown.contains(*c)).collect());
        }
    }
    exp
}

fn kind_name(k: CacheKind) -> &'static str {
    match k {
        CacheKind::Data => "d",
        CacheKind::Instruction => "i",
        CacheKind::Unified => "",
    }
}

/// Compare one machine under lstopo options `opts`; `excepted` names the
/// aspects not to compare. Returns the disagreements.
pub fn compare(
    opts: &str,
    found: &LinuxTopology,
    exp: &Expected,
    excepted: &dyn Fn(Aspect) -> bool,
) -> Vec<String> {
    let mut errs = Vec::new();
    let inclusion = opts.contains("--merge") || opts.contains("--filter");
    let disallowed = opts.contains("--disallowed");
    let topo = &found.topology;
    let online = topo.online_cpus();
    let shown = if disallowed {
        online.clone()
    } else {
        online.intersection(&found.allowed)
    };
    let exp_pus: CpuSet = exp
        .objs
        .iter()
        .filter(|o| o.kind == "PU")
        .flat_map(|o| o.pus.iter().collect::<Vec<_>>())
        .collect();
    if exp_pus != shown {
        errs.push(format!(
            "PUs: hwloc shows {exp_pus}, we have {shown} (online {online}, allowed {})",
            found.allowed
        ));
    }
    if let Some(nr) = &exp.not_represented {
        let all = topo.all_cpus();
        let ours: CpuSet = all.iter().filter(|c| !shown.contains(*c)).collect();
        if *nr != ours && exp.complete.is_none() {
            errs.push(format!("not represented: hwloc {nr}, we {ours}"));
        } else if let Some(complete) = &exp.complete {
            // XML: hwloc's complete set may include possible-but-absent CPUs.
            if !all.is_subset(complete) {
                errs.push(format!("complete set: hwloc {complete}, we {all}"));
            }
        }
    }
    if let Some(na) = &exp.not_allowed {
        let ours: CpuSet = online
            .iter()
            .filter(|c| !found.allowed.contains(*c))
            .collect();
        if *na != ours {
            errs.push(format!("not allowed: hwloc {na}, we {ours}"));
        }
    }

    // Packages.
    let mut our_pkgs: BTreeMap<u32, CpuSet> = BTreeMap::new();
    for c in topo.cpus.iter().filter(|c| shown.contains(c.id)) {
        our_pkgs.entry(c.package).or_default().insert(c.id);
    }
    let our_pkg_sets: BTreeSet<CpuSet> = our_pkgs.values().cloned().collect();
    let exp_pkgs: Vec<&Obj> = exp
        .objs
        .iter()
        .filter(|o| o.kind == "Package" && !o.pus.is_empty())
        .collect();
    let exp_pkg_sets: BTreeSet<CpuSet> = exp_pkgs.iter().map(|o| o.pus.clone()).collect();
    if exp_pkgs.is_empty() {
        if our_pkg_sets.len() > 1 && !inclusion {
            errs.push(format!(
                "packages: hwloc shows none, we have {}",
                our_pkg_sets.len()
            ));
        }
    } else if excepted(Aspect::Packages) {
        if !exp_pkg_sets.is_subset(&our_pkg_sets) {
            errs.push(format!(
                "packages: hwloc {} not all among ours {}",
                lists(&exp_pkg_sets),
                lists(&our_pkg_sets)
            ));
        }
    } else if (inclusion && !exp_pkg_sets.is_subset(&our_pkg_sets))
        || (!inclusion && exp_pkg_sets != our_pkg_sets)
    {
        errs.push(format!(
            "packages: hwloc {}, we {}",
            lists(&exp_pkg_sets),
            lists(&our_pkg_sets)
        ));
    }
    for o in &exp_pkgs {
        let (Some(p), Some(first)) = (o.os_index, o.pus.first()) else {
            continue;
        };
        let kid = found.kernel_ids.get(&first).and_then(|k| k.package_id);
        if kid != Some(p as u32) {
            errs.push(format!(
                "package of CPU {}: hwloc P#{p}, kernel id {kid:?}",
                first.0
            ));
        }
    }

    // Dies (only hwloc machines that show them).
    let exp_dies: BTreeSet<CpuSet> = exp
        .objs
        .iter()
        .filter(|o| o.kind == "Die" && !o.pus.is_empty())
        .map(|o| o.pus.clone())
        .collect();
    if !exp_dies.is_empty() {
        let mut ours: BTreeMap<u32, CpuSet> = BTreeMap::new();
        for c in topo.cpus.iter().filter(|c| shown.contains(c.id)) {
            ours.entry(c.die).or_default().insert(c.id);
        }
        let ours: BTreeSet<CpuSet> = ours.into_values().collect();
        if exp_dies != ours {
            errs.push(format!(
                "dies: hwloc {}, we {}",
                lists(&exp_dies),
                lists(&ours)
            ));
        }
    }

    // Cores.
    let mut our_cores: BTreeMap<u32, CpuSet> = BTreeMap::new();
    for c in topo.cpus.iter().filter(|c| shown.contains(c.id)) {
        our_cores.entry(c.core).or_default().insert(c.id);
    }
    let our_core_sets: BTreeSet<CpuSet> = our_cores.values().cloned().collect();
    let exp_cores: Vec<&Obj> = exp
        .objs
        .iter()
        .filter(|o| o.kind == "Core" && !o.pus.is_empty())
        .collect();
    let exp_core_sets: BTreeSet<CpuSet> = exp_cores.iter().map(|o| o.pus.clone()).collect();
    if !exp_cores.is_empty()
        && ((inclusion && !exp_core_sets.is_subset(&our_core_sets))
            || (!inclusion && exp_core_sets != our_core_sets))
    {
        errs.push(format!(
            "cores: hwloc {}, we {}",
            lists(&exp_core_sets),
            lists(&our_core_sets)
        ));
    }
    for o in &exp_cores {
        let (Some(p), Some(first)) = (o.os_index, o.pus.first()) else {
            continue;
        };
        let kid = found.kernel_ids.get(&first).and_then(|k| k.core_id);
        if kid != Some(p as u32) {
            errs.push(format!(
                "core of CPU {}: hwloc P#{p}, kernel core_id {kid:?}",
                first.0
            ));
        }
    }

    // NUMA nodes with CPUs; CPU-less ones must at least exist.
    if !excepted(Aspect::Numa) {
        let multi = exp.objs.iter().filter(|o| o.kind == "NUMANode").count() > 1;
        let mut exp_nodes = BTreeSet::new();
        for o in exp.objs.iter().filter(|o| o.kind == "NUMANode") {
            let id = o.os_index.unwrap_or(0) as u32;
            let ours = topo
                .numa_nodes
                .iter()
                .find(|n| n.id == id)
                .map(|n| n.cpus.intersection(&shown));
            match ours {
                None => errs.push(format!("NUMA node {id}: hwloc has it, we do not")),
                // A CPU-less node hangs from the machine in lstopo's text.
                Some(s) if s.is_empty() && o.under_machine && multi => {}
                // A node whose cpulist is empty in sysfs is memory-only:
                // hwloc places it near the CPUs its initiators or distances
                // name; the model lists a node's own CPUs (none).
                Some(_)
                    if topo
                        .numa_nodes
                        .iter()
                        .any(|n| n.id == id && n.cpus.is_empty()) => {}
                Some(s) if !inclusion && s != o.pus => {
                    errs.push(format!("NUMA node {id}: hwloc CPUs {}, we {s}", o.pus));
                }
                Some(_) => {}
            }
            exp_nodes.insert(id);
        }
        if !inclusion {
            let nodes_shown = topo
                .numa_nodes
                .iter()
                .filter(|n| disallowed || found.allowed_numa_nodes.contains(&n.id));
            for n in nodes_shown {
                if !n.cpus.intersection(&shown).is_empty() && !exp_nodes.contains(&n.id) {
                    errs.push(format!(
                        "NUMA node {} (CPUs {}): we have it, hwloc does not",
                        n.id, n.cpus
                    ));
                }
            }
        }
    }

    // Caches.
    let no_caches = opts.contains("--no-caches");
    let no_icaches = opts.contains("--no-icaches");
    let ours: BTreeSet<(u8, &str, CpuSet)> = topo
        .caches
        .iter()
        .filter(|c| !(no_caches || no_icaches && c.kind == CacheKind::Instruction))
        .filter(|c| !excepted(Aspect::CacheLevel(c.level)))
        .map(|c| (c.level, kind_name(c.kind), c.cpus.intersection(&shown)))
        .filter(|(_, _, s)| !s.is_empty())
        .collect();
    let mut theirs = BTreeSet::new();
    for o in exp
        .objs
        .iter()
        .filter(|o| o.cache_kind.is_some() && !o.pus.is_empty())
    {
        let (level, kind) = o.cache_kind.unwrap();
        if excepted(Aspect::CacheLevel(level)) {
            continue;
        }
        theirs.insert((level, kind_name(kind), o.pus.clone()));
        let size = topo
            .caches
            .iter()
            .find(|c| c.level == level && c.kind == kind && c.cpus.intersection(&shown) == o.pus)
            .map(|c| c.size_kib);
        if let (Some((kib, unit)), Some(s)) = (o.size_kib, size) {
            if s.abs_diff(kib) >= unit {
                errs.push(format!(
                    "L{level}{} over {}: hwloc {kib} KiB, we {s} KiB",
                    kind_name(kind),
                    o.pus
                ));
            }
        }
    }
    if (inclusion && !theirs.is_subset(&ours)) || (!inclusion && theirs != ours) {
        let only_theirs: Vec<String> = theirs
            .difference(&ours)
            .map(|(l, k, s)| format!("L{l}{k}:{s}"))
            .collect();
        let only_ours: Vec<String> = ours
            .difference(&theirs)
            .map(|(l, k, s)| format!("L{l}{k}:{s}"))
            .collect();
        errs.push(format!(
            "caches: only hwloc [{}]; only ours [{}]",
            only_theirs.join(" "),
            if inclusion {
                String::new()
            } else {
                only_ours.join(" ")
            }
        ));
    }
    errs
}

fn lists(sets: &BTreeSet<CpuSet>) -> String {
    let v: Vec<String> = sets.iter().map(CpuSet::to_list).collect();
    format!("[{}]", v.join(" "))
}
