//! The probes behind `ecosched doctor` on recorded machines: RAPL zones
//! and hwmon meters found and read (the PowerEdge R640, the Ryzen 3700X
//! with amd_energy), cpufreq with its governors, EPP and boost (the
//! i7-1370P under intel_pstate, the Ryzen 9 7940HS under amd-pstate-epp,
//! the Xeon E5345 under acpi-cpufreq), resctrl monitoring (the goresctrl
//! Xeon with CMT and MBM, the CMT-only tree), and this VM's recording,
//! where each is absent and says where it looked.

use crate::support::data;
use ecosched_linux::features::{self, Access};
use ecosched_linux::mounts::MountTable;
use ecosched_linux::topology::discover;
use ecosched_linux::FsRoot;

fn root(name: &str) -> FsRoot {
    FsRoot::recorded(data(name))
}

#[test]
fn rapl_zones_and_hwmon_meters_are_found_and_read() {
    let r640 = features::probe_power(&root("power-poweredge-r640-xeon-gold-6130")).unwrap();
    assert!(r640.measures());
    let rapl: Vec<&str> = r640
        .meters
        .iter()
        .filter(|m| m.kind == "rapl")
        .map(|m| m.name.as_str())
        .collect();
    assert!(
        rapl.contains(&"package-0") && rapl.contains(&"package-1"),
        "{rapl:?}"
    );
    assert!(r640.meters.iter().all(|m| m.access == Access::Readable));
    assert!(r640.meters.iter().any(|m| m.kind == "hwmon"), "{r640:?}");
    assert!(r640.absent.is_empty(), "{:?}", r640.absent);
    let ryzen = features::probe_power(&root("power-ryzen-3700x-amd-energy")).unwrap();
    assert!(ryzen
        .meters
        .iter()
        .any(|m| m.kind == "hwmon" && m.name.starts_with("amd_energy")));
    assert!(ryzen
        .absent
        .iter()
        .any(|a| a.contains("sys/class/powercap absent")));
}

#[test]
fn cpufreq_governors_epp_and_boost_are_read() {
    let i7 = root("cpufreq-intel-pstate-i7-1370p");
    let m = discover(&i7).unwrap();
    let f = features::probe_cpufreq(&i7, &m.cpufreq, &m.pstate);
    assert!(f.present);
    assert_eq!(f.drivers, ["intel_pstate"]);
    assert_eq!(f.governors, ["performance", "powersave"]);
    assert_eq!(f.epp.as_deref(), Some("balance_performance"));
    assert!(f.epp_offered.contains(&"power".to_string()));
    assert_eq!(f.boost, Some(true), "no_turbo 0");
    assert_eq!(f.pstate_driver.as_deref(), Some("intel_pstate (active)"));
    let ryzen = root("cpufreq-amd-pstate-epp-ryzen-9-7940hs");
    let m = discover(&ryzen).unwrap();
    let f = features::probe_cpufreq(&ryzen, &m.cpufreq, &m.pstate);
    assert_eq!(f.drivers, ["amd-pstate-epp"]);
    assert!(f.epp.is_some());
    let xeon = root("cpufreq-acpi-xeon-e5345");
    let m = discover(&xeon).unwrap();
    let f = features::probe_cpufreq(&xeon, &m.cpufreq, &m.pstate);
    assert!(f.governors.contains(&"ondemand".to_string()));
    assert!(f.epp.is_none() && f.epp_offered.is_empty());
}

#[test]
fn resctrl_monitoring_is_told_apart() {
    let both = features::probe_resctrl(&root("resctrl-goresctrl-xeon-4l3"));
    assert!(both.mounted && both.cmt && both.mbm);
    assert_eq!(both.num_rmids, Some(192));
    let cmt = features::probe_resctrl(&root("resctrl-reconstructed-cmt-only"));
    assert!(cmt.cmt && !cmt.mbm, "{cmt:?}");
}

#[test]
fn on_the_vm_each_feature_is_absent_with_its_path() {
    let vm = root("vm-epyc-2cpu");
    let m = discover(&vm).unwrap();
    let f = features::probe_cpufreq(&vm, &m.cpufreq, &m.pstate);
    assert!(!f.present);
    assert!(f
        .path
        .ends_with("vm-epyc-2cpu/sys/devices/system/cpu/cpufreq"));
    let p = features::probe_power(&vm).unwrap();
    assert!(!p.measures() && p.meters.is_empty());
    assert!(p.absent[0].ends_with("vm-epyc-2cpu/sys/class/powercap absent: no RAPL"));
    assert!(p.absent[1].contains("vm-epyc-2cpu/sys/class/hwmon absent"));
    let r = features::probe_resctrl(&vm);
    assert!(!r.mounted && r.absent.unwrap().contains("L3_MON/mon_features absent"));
    assert_eq!(features::core_pmu(&vm), Ok(None));
    let cg = features::probe_cgroups(&vm, &MountTable::read(&vm).unwrap());
    assert_eq!(cg.version, "hybrid");
    assert!(cg.v1_cpuset.unwrap().ends_with("sys/fs/cgroup/cpuset"));
    assert!(cg.v1_freezer.unwrap().ends_with("sys/fs/cgroup/freezer"));
    assert!(cg.v2_controllers.contains("hugetlb"));
}
