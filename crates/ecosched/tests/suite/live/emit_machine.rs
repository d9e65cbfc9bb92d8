//! `ecosched topology --emit-machine` on this machine: the file written
//! for the running host loads in the simulator and runs a short scenario
//! that names it by path.

use crate::emit_machine::emit_load_and_simulate;

/// This host's own machine file loads and simulates. Live tier: it reads
/// the running machine's sysfs and procfs, which differ on every host (the
/// fast tier uses recorded trees instead).
#[test]
#[ignore = "live: this machine's sysfs and procfs"]
fn this_machines_file_loads_and_simulates() {
    let dir = tempfile::tempdir().unwrap();
    let spec = emit_load_and_simulate(None, dir.path(), "this-host");
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let cpus = ecosched_model::CpuSet::parse_list(online.trim())
        .unwrap()
        .len();
    let written =
        (spec.packages * spec.dies_per_package * spec.cores_per_die * spec.threads_per_core)
            as usize;
    assert!(written >= cpus, "{written} CPUs written for {cpus} online");
}
