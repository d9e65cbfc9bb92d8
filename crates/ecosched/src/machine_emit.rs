//! `ecosched topology --emit-machine FILE`: a machine file (the
//! simulator's TOML, `docs/researchers/machine-files.md`) for a discovered
//! host, so that a researcher can simulate the machine they own.
//!
//! What sysfs and procfs give is written as read (packages, dies, cores,
//! threads, caches and their scopes, P-states or the continuous range,
//! transition latency, idle states' names and latencies, the PMU table
//! matched to the CPU). What they do not (voltages, power figures, memory
//! bandwidth and latency) is written as a value that loads, marked
//! `# TO FILL IN: <what> — <where to find it>`, so that the file runs in
//! the simulator as written and says what to replace. The power
//! placeholders are the generic estimate's figures
//! (`EstimateParams::generic`), so until they are filled in the simulated
//! machine draws what `ecosched run` would estimate for it.
//!
//! A host the simulator's uniform machines cannot describe (hybrid
//! cores, packages of unequal size) is written as the nearest uniform
//! machine with a `# NOTE:` saying what differs.

use crate::outcome::UsageError;
use anyhow::Result;
use ecosched_linux::power::estimate::EstimateParams;
use ecosched_linux::topology::LinuxTopology;
use ecosched_linux::FsRoot;
use ecosched_model::topology::CacheKind;
use ecosched_model::PmuTable;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::io::Write as _;
use std::path::Path;

/// The placeholder voltage of every P-state, mV: flat, so that it reads
/// as unknown rather than as a curve.
const PLACEHOLDER_MV: u32 = 1000;
/// Idle states read from `cpuidle` at most.
const MAX_IDLE_STATES: usize = 16;

/// The uniform shape that stands for the host.
#[derive(Debug, Clone, PartialEq)]
struct Shape {
    packages: usize,
    dies_per_package: usize,
    cores_per_die: usize,
    threads_per_core: usize,
    /// What the uniform shape leaves out, one sentence each.
    notes: Vec<String>,
}

impl Shape {
    fn cpus_per_core(&self) -> usize {
        self.threads_per_core
    }
    fn cpus_per_die(&self) -> usize {
        self.cores_per_die * self.threads_per_core
    }
    fn cpus_per_package(&self) -> usize {
        self.dies_per_package * self.cpus_per_die()
    }

    /// The scope whose instances hold `n` CPUs, if one does.
    fn scope_of(&self, n: usize) -> Option<&'static str> {
        if n <= self.cpus_per_core() {
            Some("core")
        } else if n == self.cpus_per_die() {
            Some("die")
        } else if n == self.cpus_per_package() {
            Some("package")
        } else if self.packages == 1 && n >= self.cpus_per_package() {
            Some("machine")
        } else {
            None
        }
    }
}

/// The shape of the online CPUs: dies are the kernel's, or the last-level
/// cache's instances when a package holds several (AMD's CCDs), since the
/// simulator shares its last-level cache by die.
fn shape(found: &LinuxTopology) -> Shape {
    let t = &found.topology;
    let online: Vec<_> = t.cpus.iter().filter(|c| c.online).collect();
    let mut cores_of: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    let mut threads_of: BTreeMap<u32, usize> = BTreeMap::new();
    let mut kernel_dies: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for c in &online {
        cores_of.entry(c.package).or_default().insert(c.core);
        *threads_of.entry(c.core).or_default() += 1;
        kernel_dies.entry(c.package).or_default().insert(c.die);
    }
    let mut notes = Vec::new();
    let packages = cores_of.len().max(1);
    let core_counts: BTreeSet<usize> = cores_of.values().map(BTreeSet::len).collect();
    let thread_counts: BTreeSet<usize> = threads_of.values().copied().collect();
    let cores_per_package = core_counts.iter().max().copied().unwrap_or(1).max(1);
    let threads_per_core = thread_counts.iter().max().copied().unwrap_or(1).max(1);
    if core_counts.len() > 1 {
        notes.push(format!(
            "packages hold {core_counts:?} cores; written as {cores_per_package} each"
        ));
    }
    if thread_counts.len() > 1 {
        notes.push(format!(
            "cores run {thread_counts:?} threads (hybrid or SMT partly off); written as {threads_per_core} each, so the file has more CPUs than the host's {}",
            online.len()
        ));
    }
    let llc_level = t
        .caches
        .iter()
        .filter(|c| c.kind != CacheKind::Instruction)
        .map(|c| c.level)
        .max();
    let llcs_per_package = llc_level.map_or(1, |level| {
        let first_package = online.first().map(|c| c.package);
        t.caches
            .iter()
            .filter(|c| c.level == level && c.kind != CacheKind::Instruction)
            .filter(|c| {
                let package = c
                    .cpus
                    .first()
                    .and_then(|id| t.cpus.iter().find(|x| x.id == id))
                    .map(|x| x.package);
                package == first_package
            })
            .count()
            .max(1)
    });
    let kernel_dies_per_package = kernel_dies.values().map(BTreeSet::len).max().unwrap_or(1);
    let mut dies = if llcs_per_package > 1 && llcs_per_package < cores_per_package {
        llcs_per_package
    } else {
        kernel_dies_per_package.max(1)
    };
    if cores_per_package % dies != 0 {
        notes.push(format!(
            "{cores_per_package} cores do not split evenly into {dies} dies; written as one die per package"
        ));
        dies = 1;
    }
    Shape {
        packages,
        dies_per_package: dies,
        cores_per_die: cores_per_package / dies,
        threads_per_core,
        notes,
    }
}

/// One key line with an optional trailing comment.
fn line(out: &mut String, key: &str, value: impl std::fmt::Display, comment: &str) {
    if comment.is_empty() {
        let _ = writeln!(out, "{key} = {value}");
    } else {
        let _ = writeln!(out, "{key} = {value}  # {comment}");
    }
}

/// A TOML basic string.
fn quoted(s: &str) -> String {
    let mut q = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if c.is_control() => {}
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// `(name, exit latency µs, target residency µs)` of CPU 0's idle states
/// (`sys/devices/system/cpu/cpu0/cpuidle/stateN`), busy-polling left out.
fn idle_states(root: &FsRoot) -> Vec<(String, u32, u32)> {
    let mut out = Vec::new();
    for n in 0..MAX_IDLE_STATES {
        let dir = format!("sys/devices/system/cpu/cpu0/cpuidle/state{n}");
        let Ok(Some(name)) = root.read_opt(&format!("{dir}/name")) else {
            break;
        };
        if name.eq_ignore_ascii_case("POLL") {
            continue;
        }
        let num = |f: &str| {
            root.read_u64_opt(&format!("{dir}/{f}"))
                .ok()
                .flatten()
                .map_or(0, |v| u32::try_from(v).unwrap_or(u32::MAX))
        };
        out.push((name, num("latency"), num("residency")));
    }
    out
}

/// `MemTotal` of `proc/meminfo`, KiB.
fn mem_total_kib(root: &FsRoot) -> Option<u64> {
    let text = root.read_opt("proc/meminfo").ok()??;
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("MemTotal:")?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// `cpu MHz` of the first CPU in `proc/cpuinfo`.
fn cpuinfo_mhz(root: &FsRoot) -> Option<u64> {
    let text = root.read_opt("proc/cpuinfo").ok()??;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k.trim() != "cpu MHz" {
            return None;
        }
        v.trim().parse::<f64>().ok().map(|m| m.round() as u64)
    })
}

/// The machine file for `found` (read under `root`), named `name`.
pub fn emit(found: &LinuxTopology, root: &FsRoot, name: &str) -> String {
    let shape = shape(found);
    let t = &found.topology;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Machine file for {} (root {}), written by `ecosched topology --emit-machine`.\n\
         # Values read from sysfs/procfs are as read; every `TO FILL IN` value is a\n\
         # placeholder that loads and runs but describes no real measurement:\n\
         # replace it, with its source in the comment (docs/researchers/machine-files.md).",
        found.machine_name,
        root.dir().display()
    );
    for note in &shape.notes {
        let _ = writeln!(
            out,
            "# NOTE: this host is not uniform: {note}. The simulator's machines are."
        );
    }
    line(&mut out, "name", quoted(name), "");
    line(
        &mut out,
        "description",
        quoted(&format!("{} (emitted from this host)", found.machine_name)),
        "",
    );
    line(
        &mut out,
        "packages",
        shape.packages,
        "read: physical_package_id",
    );
    let die_source = if shape.dies_per_package > 1 {
        "read: die_id, or the last-level cache's instances per package"
    } else {
        "read: die_id"
    };
    line(
        &mut out,
        "dies_per_package",
        shape.dies_per_package,
        die_source,
    );
    line(
        &mut out,
        "cores_per_die",
        shape.cores_per_die,
        "read: core_id",
    );
    line(
        &mut out,
        "threads_per_core",
        shape.threads_per_core,
        "read: thread_siblings_list",
    );
    emit_pmu(&mut out, root);
    emit_caches(&mut out, found, &shape);
    let top_mhz = emit_frequency(&mut out, found, root, &shape);
    emit_memory(&mut out, root, t.numa_nodes.len());
    emit_power(&mut out, root, &shape, top_mhz);
    out
}

fn emit_pmu(out: &mut String, root: &FsRoot) {
    let cpuid = ecosched_linux::pmu::cpuid(root).ok();
    let table = cpuid
        .as_deref()
        .and_then(|id| PmuTable::for_cpuid(id).ok().flatten());
    match (table, cpuid) {
        (Some((name, _)), Some(id)) => line(
            out,
            "pmu",
            quoted(name),
            &format!("read: CPU id {id} matches ecosched-model's PMU table `{name}`"),
        ),
        (None, Some(id)) => {
            let _ = writeln!(
                out,
                "# pmu: no built-in PMU table lists CPU id {id}; without `pmu` the simulated machine has no hardware counters"
            );
        }
        _ => {
            let _ = writeln!(
                out,
                "# pmu: the CPU id could not be read from proc/cpuinfo; without `pmu` the simulated machine has no hardware counters"
            );
        }
    }
}

/// One cache level's instances by (CPUs sharing one, whether that is a
/// whole package): how many, and the largest size, KiB.
type CacheKinds = BTreeMap<(usize, bool), (usize, u64)>;

fn emit_caches(out: &mut String, found: &LinuxTopology, shape: &Shape) {
    let t = &found.topology;
    let mut package_cpus: BTreeMap<u32, usize> = BTreeMap::new();
    for c in t.cpus.iter().filter(|c| c.online) {
        *package_cpus.entry(c.package).or_default() += 1;
    }
    let package_of = |id| t.cpus.iter().find(|x| x.id == id).map(|x| x.package);
    let mut by_level: BTreeMap<u8, CacheKinds> = BTreeMap::new();
    for c in &t.caches {
        if c.kind == CacheKind::Instruction {
            continue;
        }
        let sharing = c.cpus.len();
        let whole_package = c
            .cpus
            .first()
            .and_then(package_of)
            .and_then(|p| package_cpus.get(&p))
            .is_some_and(|&n| sharing >= n && n > shape.threads_per_core);
        let e = by_level
            .entry(c.level)
            .or_default()
            .entry((sharing, whole_package))
            .or_insert((0, 0));
        e.0 += 1;
        e.1 = e.1.max(c.size_kib);
    }
    if by_level.is_empty() {
        let _ = writeln!(
            out,
            "\n[[caches]]  # TO FILL IN: the caches — no cache/index* in sysfs; the CPU's datasheet\nlevel = 1\nsize_kib = 32\nscope = \"core\""
        );
        return;
    }
    for (level, kinds) in by_level {
        // The most common sharing stands for the level (a hybrid CPU's
        // P-cores and E-core clusters differ).
        let Some((&(sharing, whole_package), &(_, size_kib))) =
            kinds.iter().max_by_key(|(_, (count, _))| *count)
        else {
            continue;
        };
        let scope = if whole_package {
            Some("package")
        } else {
            shape.scope_of(sharing)
        };
        let mut comment = format!("read: cache/index*/shared_cpu_list, {sharing} CPU(s) share one");
        if kinds.len() > 1 {
            comment.push_str("; NOTE: instances differ on this host, the most common is written");
        }
        let scope = scope.unwrap_or_else(|| {
            comment =
                format!("NOTE: {sharing} CPUs share one, which is no scope of the uniform machine");
            "package"
        });
        let _ = writeln!(out, "\n[[caches]]");
        line(out, "level", level, "");
        line(out, "size_kib", size_kib, "read: cache/index*/size");
        line(out, "scope", quoted(scope), &comment);
    }
}

/// Writes `[frequency]`; returns the highest P-state, MHz.
fn emit_frequency(out: &mut String, found: &LinuxTopology, root: &FsRoot, shape: &Shape) -> u64 {
    let _ = writeln!(out, "\n[frequency]");
    let policy = found
        .cpufreq
        .iter()
        .max_by_key(|p| p.cpuinfo_max_khz.unwrap_or(0));
    let Some(policy) = policy else {
        let mhz = cpuinfo_mhz(root).filter(|&m| m > 0);
        line(
            out,
            "domain",
            quoted("core"),
            "TO FILL IN: the frequency domain — no cpufreq here (a VM?); the CPU's datasheet",
        );
        line(
            out,
            "voltage_domain",
            quoted("package"),
            "TO FILL IN: the voltage domain — the CPU's datasheet",
        );
        line(out, "transition_latency_us", 10, "TO FILL IN: P-state transition latency — cpufreq's cpuinfo_transition_latency on the bare machine");
        let (mhz, comment) = match mhz {
            Some(m) => (m, "read: proc/cpuinfo `cpu MHz`; TO FILL IN: the P-states — no cpufreq here; `cpupower frequency-info` on the bare machine"),
            None => (1000, "TO FILL IN: the P-states — no cpufreq and no `cpu MHz`; the CPU's datasheet"),
        };
        let _ = writeln!(
            out,
            "pstates = [\n  {{ mhz = {mhz}, mv = {PLACEHOLDER_MV} }},  # {comment}; mv: TO FILL IN: voltage — datasheet VID table\n]"
        );
        return mhz;
    };
    let scope = shape.scope_of(policy.cpus.len()).unwrap_or("core");
    line(
        out,
        "domain",
        quoted(scope),
        &format!("read: related_cpus ({} CPUs a policy)", policy.cpus.len()),
    );
    let vscope = if scope == "machine" {
        "machine"
    } else {
        "package"
    };
    line(out, "voltage_domain", quoted(vscope), "TO FILL IN: the voltage domain — sysfs does not say; the CPU's datasheet (package-wide on most)");
    match policy.transition_latency_ns {
        Some(ns) if ns < u64::from(u32::MAX) && ns > 0 => {
            line(out, "transition_latency_us", (ns / 1000).max(1), "read: cpuinfo_transition_latency");
        }
        _ => line(out, "transition_latency_us", 10, "TO FILL IN: P-state transition latency — the driver reports none (hardware-managed P-states switch in tens of µs)"),
    }
    let mut mhz: Vec<u64> = policy
        .pstates_khz()
        .iter()
        .map(|k| k / 1000)
        .filter(|&m| m > 0)
        .collect();
    mhz.dedup();
    if mhz.is_empty() {
        mhz.push(cpuinfo_mhz(root).filter(|&m| m > 0).unwrap_or(1000));
    }
    let how = if policy.available_khz.is_empty() {
        format!(
            "read: cpuinfo_min_freq/cpuinfo_max_freq of {} — a continuous range (no scaling_available_frequencies): add the frequencies between that the simulator should offer",
            policy.driver.as_deref().unwrap_or("the driver")
        )
    } else {
        "read: scaling_available_frequencies".to_string()
    };
    let _ = writeln!(out, "# {how}\n# mv: TO FILL IN: voltage of each P-state — sysfs has none; the datasheet's VID table or MSR readings");
    let _ = writeln!(out, "pstates = [");
    for m in &mhz {
        let _ = writeln!(out, "  {{ mhz = {m}, mv = {PLACEHOLDER_MV} }},");
    }
    let _ = writeln!(out, "]");
    mhz.last().copied().unwrap_or(1000)
}

fn emit_memory(out: &mut String, root: &FsRoot, numa_nodes: usize) {
    let _ = writeln!(out, "\n[memory]");
    if let Some(kib) = mem_total_kib(root) {
        let _ = writeln!(
            out,
            "# read: MemTotal {:.1} GiB in {} NUMA node(s) (the simulator does not model capacity)",
            kib as f64 / 1024.0 / 1024.0,
            numa_nodes.max(1)
        );
    }
    line(
        out,
        "domain",
        quoted("package"),
        "integrated memory controllers: one memory domain per package",
    );
    line(out, "latency_ns", "100.0", "TO FILL IN: unloaded memory latency — a measurement (Intel MLC `--idle_latency`, lmbench lat_mem_rd)");
    line(out, "bandwidth_gbs", "20.0", "TO FILL IN: saturation bandwidth per package — STREAM triad or Intel MLC `--max_bandwidth`; channels x MT/s x 8 B is the ceiling");
}

fn emit_power(out: &mut String, root: &FsRoot, shape: &Shape, top_mhz: u64) {
    let cores_per_package = shape.dies_per_package * shape.cores_per_die;
    let generic = EstimateParams::generic(cores_per_package);
    let volts = f64::from(PLACEHOLDER_MV) / 1000.0;
    let ghz = (top_mhz as f64 / 1000.0).max(0.001);
    let ceff = generic.dynamic_max_w_per_core / (volts * volts * ghz);
    let idle_w = generic.idle_w_per_core;
    let leak = (generic.busy_static_w_per_core + idle_w) / volts;
    let _ = writeln!(
        out,
        "\n[power]\n# The generic estimate's figures (4.5 W per busy core at the top P-state, a third\n# of it uncore): what `ecosched run` assumes without a measurement. Replace them."
    );
    line(out, "ceff", format!("{ceff:.4}"), "TO FILL IN: switched capacitance, W/(V²·GHz) — fit to package power (RAPL) of a busy core at two P-states");
    line(out, "leak_w_per_v", format!("{leak:.4}"), "TO FILL IN: leakage per core per volt — package power of idle-but-awake cores, or the TDP split");
    line(out, "stall_activity", "0.5", "TO FILL IN: activity of a core stalled on memory — compare package power under STREAM and a compute loop");
    line(out, "uncore_w", format!("{:.2}", generic.uncore_w_per_package), "TO FILL IN: uncore power per package — package power with all cores in their deepest idle state");
    line(
        out,
        "base_w",
        "0.0",
        "TO FILL IN: the rest of the system — wall power at idle minus package and memory power",
    );
    line(
        out,
        "mem_idle_w",
        "0.0",
        "TO FILL IN: memory idle power — the DIMMs' datasheet, or the DRAM RAPL domain at idle",
    );
    line(
        out,
        "mem_nj_per_byte",
        "0.1",
        "TO FILL IN: memory energy per byte — DRAM RAPL domain under STREAM",
    );
    let states = idle_states(root);
    if states.is_empty() {
        let _ = writeln!(
            out,
            "# idle states: none in cpu0/cpuidle; add them (name, latencies from the ACPI _CST / intel_idle tables)\nidle_states = []"
        );
        return;
    }
    let _ = writeln!(
        out,
        "# idle states: names and latencies read from cpu0/cpuidle; power_w: TO FILL IN — package power with all cores in that state, per core"
    );
    let _ = writeln!(out, "idle_states = [");
    for (name, exit, residency) in states {
        let _ = writeln!(
            out,
            "  {{ name = {}, exit_latency_us = {exit}, target_residency_us = {residency}, power_w = {idle_w:.1} }},",
            quoted(&name)
        );
    }
    let _ = writeln!(out, "]");
}

/// Write `text` to `path`; an existing file is refused unless `force`.
pub fn write(path: &Path, text: &str, force: bool) -> Result<()> {
    // Never through a symlink: `create_new` refuses one like any existing
    // file, and an overwrite opens with `O_NOFOLLOW`.
    let opened = if force {
        ecosched_model::user_file::create_output(path).map_err(|e| match e {
            ecosched_model::user_file::UserFileError::Io { source, .. } => source,
            other => std::io::Error::other(other.reason()),
        })
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
    };
    let mut file = opened.map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::Error::new(UsageError(format!(
                "--emit-machine {}: the file exists; give --force to overwrite it",
                path.display()
            )))
        } else {
            anyhow::anyhow!("--emit-machine {}: {e}", path.display())
        }
    })?;
    file.write_all(text.as_bytes())
        .map_err(|e| anyhow::anyhow!("--emit-machine {}: {e}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_existing_file_is_refused_without_force_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.toml");
        write(&path, "a", false).unwrap();
        let e = write(&path, "b", false).unwrap_err().to_string();
        assert!(e.contains("m.toml") && e.contains("--force"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a");
        write(&path, "c", true).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "c");
    }

    #[test]
    fn strings_are_quoted_for_toml() {
        assert_eq!(quoted("a \"b\" \\c"), "\"a \\\"b\\\" \\\\c\"");
    }
}
