//! Topology discovery against every machine recorded in hwloc's test suite
//! (`tests/data/hwloc-linux/`, see its README.md): each tarball is
//! unpacked into a temporary directory, [`topology::discover`] runs on it,
//! and the answer is compared with hwloc's expected `lstopo` output for
//! that machine (`NAME.console`, `lstopo -v` text, or `NAME.xml`).
//!
//! Compared: the PUs lstopo shows (online and allowed CPUs; with
//! `--disallowed`, online CPUs), the CPUs it says are "not represented"
//! (offline) or "represented but not allowed", packages (CPU sets and
//! `P#`), dies, cores (CPU sets and the kernel `core_id` as `P#`), NUMA
//! nodes that have CPUs (id and CPU set), and every cache (level, type,
//! size, CPU set). lstopo drops CPUs that are offline or not allowed, so
//! our sets are restricted to the PUs it shows before comparing; objects
//! left without PUs (a package kept only for its memory) are not compared.
//!
//! Options of the `.test` files: `--no-icaches` and `--no-caches` remove
//! the corresponding caches from our side too; `--merge` and `--filter
//! all:structure` make hwloc drop levels that add no structure, so then
//! every object hwloc kept must be one we found (inclusion, not equality);
//! `--whole-io`, `HWLOC_PCI_LOCALITY` and `HWLOC_SHOW_ERRORS` only concern
//! I/O devices or messages, `HWLOC_CPUKINDS` only CPU-kind ranking and
//! `HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES` only CPU-less GPU memory nodes (whose
//! CPU sets are not compared, see `support::lstopo`), so they change nothing
//! compared here. Every variant is therefore checked, none is skipped; the
//! aspects of a machine that cannot agree are listed, with the exact
//! reason, in [`EXCEPTIONS`] and printed with the summary
//! (`cargo test -p ecosched-linux --test suite hwloc_fixtures -- --nocapture`).
use crate::support::lstopo::{compare, parse_console, parse_xml, Aspect};
use crate::support::{data, unpack_tar_bz2};
use ecosched_linux::cpufreq::writes_for;
use ecosched_linux::topology;
use ecosched_linux::FsRoot;
use ecosched_model::{FreqSetting, Governor};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Aspects of one machine that cannot agree, and exactly why.
const EXCEPTIONS: &[(&str, Aspect, &str)] = &[
    (
        "40intel64-4n10c+pci-conflicts",
        Aspect::Packages,
        "its mask files were hand-edited to contradict each other (cpu3's core_siblings is 0-3, \
         cpu7's is 3,7,..,39) to exercise hwloc's insertion errors: hwloc drops the 4th package and \
         leaves CPUs 3,7,..,39 outside any package; the model puts every CPU in a package, so we \
         keep CPU 3 as a package of its own and 7,11,..,39 as another (the packages hwloc does \
         show must still be among ours)",
    ),
    (
        "40intel64-4n10c+pci-conflicts",
        Aspect::CacheLevel(3),
        "cpu2's L3 shared_cpu_map was hand-edited to 0-3, which spans packages: hwloc drops the \
         3rd L3 (CPUs 2,6,..,38); we drop the contradictory cache reported by cpu2 but keep the \
         one cpu6 and the others report",
    ),
    (
        "fakememinitiators-1np2c+1npp+gi",
        Aspect::Numa,
        "all nodes are CPU-only (0-3) or memory-only (5-10): hwloc hides the CPU-only nodes and \
         places the memory-only ones by their access0/initiators links; the model lists the nodes \
         sysfs gives with their own CPUs (node N's cpulist)",
    ),
    (
        "fakeheterocpunuma",
        Aspect::Numa,
        "HWLOC_DEBUG_ALLOW_OVERLAPPING_NODE_CPUSETS=1 makes hwloc keep NUMA nodes whose CPU sets \
         overlap; by default hwloc (and we) keep each CPU in one node",
    ),
];

fn fixtures_dir() -> PathBuf {
    let dir = data("hwloc-linux");
    assert!(
        dir.is_dir(),
        "hwloc fixtures not found at {}",
        dir.display()
    );
    dir
}

/// Whether a path of the recorded tree (below its top directory) is one
/// discovery reads. The recordings also hold PCI, DMI, block, network and
/// memory-block trees (most of their 88 000 files) that only slow the
/// unpacking down.
fn wanted(rel: &[String]) -> bool {
    let r: Vec<&str> = rel.iter().map(String::as_str).collect();
    match r.as_slice() {
        ["sys"] | ["sys", "devices"] | ["sys", "devices", "system"] => true,
        ["sys", "fs", ..] => true,
        ["sys", "devices", "system", "cpu"] | ["sys", "devices", "system", "node"] => true,
        ["sys", "devices", "system", "cpu", "cpufreq", ..] => true,
        ["sys", "devices", "system", "cpu", leaf] => {
            !leaf.starts_with("cpu") || leaf[3..].parse::<u32>().is_ok()
        }
        ["sys", "devices", "system", "cpu", _, sub, ..] => {
            matches!(
                *sub,
                "topology" | "cache" | "cpufreq" | "online" | "cpu_capacity" | "acpi_cppc"
            )
        }
        ["sys", "devices", "system", "node", _] => true,
        ["sys", "devices", "system", "node", _, leaf] => {
            matches!(*leaf, "cpulist" | "cpumap" | "distance")
        }
        ["sys", ..] => false,
        _ => true,
    }
}

/// Unpack the parts of `tarball` that discovery reads into `into` and
/// return the tarball's single top directory.
fn unpack(tarball: &Path, into: &Path) -> PathBuf {
    unpack_tar_bz2(tarball, into, &wanted);
    let tops: Vec<PathBuf> = std::fs::read_dir(into)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(
        tops.len(),
        1,
        "{}: expected one top directory",
        tarball.display()
    );
    tops.into_iter().next().unwrap()
}

/// A `.test` description.
#[derive(Debug, Default)]
struct TestSpec {
    name: String,
    source: String,
    target: String,
    options: String,
    env: Vec<String>,
}

fn read_spec(path: &Path) -> TestSpec {
    let mut spec = TestSpec {
        name: path.file_stem().unwrap().to_string_lossy().into_owned(),
        ..TestSpec::default()
    };
    for line in std::fs::read_to_string(path).unwrap().lines() {
        if let Some((k, v)) = line.split_once(':') {
            let v = v.trim().to_string();
            match k.trim() {
                "source" => spec.source = v,
                "target" => spec.target = v,
                "options" => spec.options = v,
                "env" => spec.env.push(v),
                _ => {}
            }
        }
    }
    spec
}

fn excepted(spec: &TestSpec, aspect: Aspect) -> bool {
    EXCEPTIONS
        .iter()
        .any(|(n, a, _)| *n == spec.name && *a == aspect)
}

#[test]
fn every_recorded_machine_agrees_with_hwloc() {
    let dir = fixtures_dir();
    let mut specs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "test"))
        .collect();
    specs.sort();
    assert!(!specs.is_empty(), "no .test files in {}", dir.display());
    let tmp = tempfile::tempdir().unwrap();
    let mut roots: BTreeMap<String, PathBuf> = BTreeMap::new();
    let (mut checked, mut failures) = (Vec::new(), Vec::new());
    for path in &specs {
        let spec = read_spec(path);
        let root = roots
            .entry(spec.source.clone())
            .or_insert_with(|| {
                let into = tmp.path().join(&spec.source);
                std::fs::create_dir_all(&into).unwrap();
                unpack(&dir.join(&spec.source), &into)
            })
            .clone();
        let text = std::fs::read_to_string(dir.join(&spec.target)).unwrap();
        let exp = if spec.target.ends_with(".xml") {
            parse_xml(&text)
        } else {
            parse_console(&text)
        };
        match topology::discover(&FsRoot::recorded(&root)) {
            Err(e) => failures.push(format!("{}: discovery failed: {e}", spec.name)),
            Ok(found) => {
                let errs = compare(&spec.options, &found, &exp, &|a| excepted(&spec, a));
                if errs.is_empty() {
                    checked.push(format!(
                        "{}: {} PUs, {} packages, {} NUMA nodes, {} caches agree",
                        spec.name,
                        exp.objs.iter().filter(|o| o.kind == "PU").count(),
                        found.topology.package_count(),
                        found.topology.numa_nodes.len(),
                        found.topology.caches.len()
                    ));
                } else {
                    failures.push(format!("{}:\n    {}", spec.name, errs.join("\n    ")));
                }
            }
        }
    }
    println!("checked {} machine variants:", checked.len());
    for c in &checked {
        println!("  ok   {c}");
    }
    println!("skipped 0 (every .test variant is checked); exceptions:");
    for (n, aspect, why) in EXCEPTIONS {
        println!("  exception {n} ({aspect:?}): {why}");
    }
    assert!(
        failures.is_empty(),
        "{} machines disagree with hwloc:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Unpack one recorded machine by tarball name.
fn recorded(name: &str, tmp: &Path) -> FsRoot {
    let into = tmp.join(name);
    std::fs::create_dir_all(&into).unwrap();
    FsRoot::recorded(unpack(
        &fixtures_dir().join(format!("{name}.tar.bz2")),
        &into,
    ))
}

#[test]
fn hybrid_laptop_has_intel_pstate_policies_and_cppc() {
    let tmp = tempfile::tempdir().unwrap();
    let root = recorded("20em64t-hybrid-1p6c2t+2ca4co1t", tmp.path());
    let found = topology::discover(&root).unwrap();
    let t = &found.topology;
    // intel_pstate: one policy per CPU, a continuous range, no userspace.
    assert_eq!(t.freq_domains.len(), 20);
    let p0 = &found.cpufreq[0];
    assert!(p0.available_khz.is_empty() && !p0.governors.iter().any(|g| g == "userspace"));
    let khz: Vec<u64> = t.freq_domains[0]
        .pstates
        .iter()
        .map(|p| p.freq_khz)
        .collect();
    assert_eq!(khz, [400_000, 5_000_000]);
    // TurboBoost Max 3.0: the E-core CPU 12 tops out lower, as CPPC says too.
    assert_eq!(t.freq_domains[12].max_khz(), 3_900_000);
    assert_eq!(found.cppc[&ecosched_model::CpuId(0)].highest_perf, Some(64));
    assert_eq!(
        found.cppc[&ecosched_model::CpuId(12)].highest_perf,
        Some(39)
    );
    assert!(found.capacity.is_empty());
    let writes = writes_for(
        p0,
        &FreqSetting::Fixed {
            freq_khz: 1_900_000,
        },
    )
    .unwrap();
    let files: Vec<(&str, &str)> = writes
        .iter()
        .map(|w| (w.path.rsplit('/').next().unwrap(), w.value.as_str()))
        .collect();
    assert_eq!(
        files,
        [
            ("scaling_min_freq", "400000"),
            ("scaling_max_freq", "1900000"),
            ("scaling_min_freq", "1900000"),
            ("energy_performance_preference", "balance_power")
        ]
    );
    assert!(writes[0]
        .path
        .starts_with("sys/devices/system/cpu/cpufreq/policy0/"));
    let err = writes_for(p0, &FreqSetting::Governor(Governor::Ondemand))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("policy0") && err.contains("performance powersave"),
        "{err}"
    );
}

#[test]
fn old_arm_kernel_lists_shared_policy_cpus_with_spaces() {
    let tmp = tempfile::tempdir().unwrap();
    let found = topology::discover(&recorded("2arm-2c", tmp.path())).unwrap();
    assert_eq!(found.topology.freq_domains.len(), 1);
    assert_eq!(found.topology.freq_domains[0].cpus.to_list(), "0-1");
    let khz: Vec<u64> = found.topology.freq_domains[0]
        .pstates
        .iter()
        .map(|p| p.freq_khz)
        .collect();
    assert_eq!(khz, [400_000, 800_000]);
}

#[test]
fn a_machine_without_cpufreq_has_no_frequency_domains() {
    let tmp = tempfile::tempdir().unwrap();
    let found = topology::discover(&recorded("16amd64-8n2c", tmp.path())).unwrap();
    assert!(found.topology.freq_domains.is_empty() && found.cpufreq.is_empty());
    assert_eq!(found.numa_distances.len(), 8);
    assert_eq!(found.numa_distances[0][0], 10);
}
