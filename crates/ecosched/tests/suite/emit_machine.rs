//! `ecosched topology --emit-machine`: the machine file written for a
//! recorded host (trees under `ecosched-linux/tests/data`: the dual Xeon
//! E5345 with acpi-cpufreq, the i7-1370P with intel_pstate, the Ryzen 9
//! 7940HS with amd-pstate-epp, and hwloc's recordings of a 4-socket
//! Opteron and an Ampere Altra tree) loads in the simulator's machine
//! loader as written, runs a short simulation from a scenario naming it
//! by path, and serves `run --power-model`; an existing file is refused
//! without `--force`. The live VM's own file is in `live::`.

use crate::support::{ecosched, ecosched_path};
use ecosched_sim::machine::{Machine, MachineSpec};
use std::path::{Path, PathBuf};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ecosched-linux/tests/data")
        .join(rel)
}

/// Unpack a `.tar.bz2` recording into `into`; returns its root (the one
/// top directory inside).
fn unpack(tarball: &Path, into: &Path) -> PathBuf {
    let file = std::fs::File::open(tarball).unwrap();
    tar::Archive::new(bzip2::read::BzDecoder::new(file))
        .unpack(into)
        .unwrap();
    std::fs::read_dir(into)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap()
}

/// Emit for `root` into `dir/<name>.toml`, load it with the simulator's
/// loader, and run a short simulation of a scenario naming it by path.
pub fn emit_load_and_simulate(root: Option<&Path>, dir: &Path, name: &str) -> MachineSpec {
    let file = dir.join(format!("{name}.toml"));
    let mut cmd = ecosched();
    cmd.arg("topology");
    if let Some(root) = root {
        cmd.arg("--root").arg(root);
    }
    let out = cmd.arg("--emit-machine").arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("TO FILL IN"));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("# TO FILL IN") || text.contains("TO FILL IN:"),
        "{text}"
    );
    let spec: MachineSpec = ecosched_sim::scenario::parse_toml(&file.display().to_string(), &text)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let machine = Machine::build(spec.clone()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let scenario = dir.join(format!("{name}-scenario.toml"));
    std::fs::write(
        &scenario,
        format!(
            "name = \"{name}-check\"\ndescription = \"a short run on an emitted machine\"\nmachine = \"{name}.toml\"\nduration_s = 2\nseed = 1\n\n[[tasks]]\nprofile = \"hmmer\"\ncount = {}\nlength_s = 1\n",
            machine.cpus().min(8)
        ),
    )
    .unwrap();
    let report = sim_json(
        std::process::Command::new(ecosched_path())
            .args(["sim", "--json", "--policy", "performance", "--scenario"])
            .arg(&scenario),
        &text,
    );
    assert!(report["energy_j"].as_f64().unwrap() > 0.0, "{report}");
    // The same file given to `sim --machine` under a built-in scenario.
    let report = sim_json(
        std::process::Command::new(ecosched_path())
            .args(["sim", "--json", "--policy", "ondemand"])
            .args(["--scenario", "merkel-1-aluadd", "--machine"])
            .arg(&file),
        &text,
    );
    assert!(
        report["machine"].as_str().unwrap().contains(name),
        "{report}"
    );
    spec
}

/// Run a `sim --json` command that must succeed on the emitted `text`,
/// and parse its report.
fn sim_json(command: &mut std::process::Command, text: &str) -> serde_json::Value {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn sim_machine_refuses_what_is_neither_a_preset_nor_a_file() {
    let out = ecosched()
        .args([
            "sim",
            "--scenario",
            "merkel-1-aluadd",
            "--policy",
            "performance",
        ])
        .args(["--machine", "no-such-box.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--machine no-such-box.toml"), "{err}");
}

#[test]
fn acpi_cpufreq_xeon_e5345_lists_its_pstates_and_two_packages() {
    let dir = tempfile::tempdir().unwrap();
    let spec = emit_load_and_simulate(Some(&data("cpufreq-acpi-xeon-e5345")), dir.path(), "e5345");
    assert_eq!(
        (spec.packages, spec.cores_per_die * spec.dies_per_package),
        (2, 4)
    );
    let mhz: Vec<u64> = spec.frequency.pstates.iter().map(|p| p.mhz).collect();
    assert_eq!(mhz, [2000, 2333]);
}

#[test]
fn intel_pstate_hybrid_laptop_is_written_uniform_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let spec = emit_load_and_simulate(
        Some(&data("cpufreq-intel-pstate-i7-1370p")),
        dir.path(),
        "i7-1370p",
    );
    let text = std::fs::read_to_string(dir.path().join("i7-1370p.toml")).unwrap();
    assert!(text.contains("# NOTE: this host is not uniform"), "{text}");
    assert!(text.contains("continuous range"), "{text}");
    let mhz: Vec<u64> = spec.frequency.pstates.iter().map(|p| p.mhz).collect();
    // The fastest policy's range (Turbo Boost Max 3.0 cores reach 5.2 GHz).
    assert_eq!(mhz, [400, 5200]);
    assert_eq!(spec.threads_per_core, 2);
    let scope = |level| {
        spec.caches
            .iter()
            .find(|c| c.level == level)
            .map(|c| format!("{:?}", c.scope))
    };
    assert_eq!(scope(2).as_deref(), Some("Core"), "{text}");
    assert_eq!(scope(3).as_deref(), Some("Package"), "{text}");
}

#[test]
fn amd_pstate_epp_ryzen_has_smt_and_a_die_wide_l3() {
    let dir = tempfile::tempdir().unwrap();
    let spec = emit_load_and_simulate(
        Some(&data("cpufreq-amd-pstate-epp-ryzen-9-7940hs")),
        dir.path(),
        "ryzen",
    );
    assert_eq!(spec.threads_per_core, 2);
    assert_eq!(spec.cores_per_die * spec.dies_per_package, 8);
    let l3 = spec.caches.iter().find(|c| c.level == 3).unwrap();
    assert_eq!(l3.size_kib, 16 * 1024);
}

#[test]
fn hwloc_recordings_of_an_opteron_and_an_altra_load_and_run() {
    for (tarball, name) in [
        ("hwloc-linux/16amd64-8n2c.tar.bz2", "opteron"),
        ("topology/ampere-altra-2p-q64-30.tar.bz2", "altra"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let unpacked = dir.path().join("root");
        std::fs::create_dir_all(&unpacked).unwrap();
        let root = unpack(&data(tarball), &unpacked);
        let spec = emit_load_and_simulate(Some(&root), dir.path(), name);
        assert!(spec.packages >= 2, "{name}: {spec:?}");
    }
}

#[test]
fn an_existing_file_is_refused_without_force_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("taken.toml");
    std::fs::write(&file, "mine").unwrap();
    let out = ecosched()
        .args(["topology", "--root"])
        .arg(data("cpufreq-acpi-xeon-e5345"))
        .arg("--emit-machine")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("taken.toml") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    let out = ecosched()
        .args(["topology", "--root"])
        .arg(data("cpufreq-acpi-xeon-e5345"))
        .arg("--emit-machine")
        .arg(&file)
        .arg("--force")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("packages = 2"));
}

#[test]
fn an_emitted_machine_file_serves_as_the_power_model() {
    let dir = tempfile::tempdir().unwrap();
    emit_load_and_simulate(Some(&data("cpufreq-acpi-xeon-e5345")), dir.path(), "pm");
    let file = dir.path().join("pm.toml");
    // A bad key in the file is refused with the file and key named, before
    // any command runs.
    let text = std::fs::read_to_string(&file).unwrap();
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, text.replace("uncore_w =", "uncore_watts =")).unwrap();
    let out = ecosched()
        .args(["run", "--state-dir"])
        .arg(dir.path().join("state"))
        .arg("--power-model")
        .arg(&broken)
        .args(["--policy", "performance", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("broken.toml") && err.contains("uncore_watts"),
        "{err}"
    );
}
