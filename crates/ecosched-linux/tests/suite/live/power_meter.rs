//! The power meter of the machine running the tests: measured where it
//! has powercap or hwmon sensors, else estimated, and said so.

use crate::power::close;
use crate::support::live_turn;
use ecosched_linux::power::PowerMeter;
use ecosched_linux::{FsRoot, LinuxError};
use ecosched_model::topology::Cpu;
use ecosched_model::{CpuSample, PowerSource, Topology};

/// This VM has neither powercap nor hwmon: the meter estimates and says
/// why. Elsewhere it must measure, or refuse naming root.
#[test]
#[ignore = "live: this machine's power meter (powercap, hwmon) or its estimate"]
fn live_machine() {
    let _turn = live_turn();
    let root = FsRoot::live();
    let online = root
        .read_cpulist_opt("sys/devices/system/cpu/online")
        .unwrap()
        .unwrap();
    let n = u32::try_from(online.len()).unwrap();
    let topo = Topology {
        cpus: online
            .iter()
            .enumerate()
            .map(|(i, id)| Cpu {
                id,
                package: 0,
                die: 0,
                core: u32::try_from(i).unwrap(),
                numa_node: 0,
                online: true,
                freq_domain: Some(ecosched_model::FreqDomainId(0)),
                capacity: ecosched_model::topology::FULL_CAPACITY,
            })
            .collect(),
        ..Topology::default()
    };
    let samples: Vec<CpuSample> = online
        .iter()
        .map(|id| CpuSample {
            id,
            freq_khz: None,
            utilisation: 0.5,
            nr_running: None,
        })
        .collect();
    let meter = PowerMeter::open(&root, &topo);
    if !root.exists("sys/class/powercap") && !root.exists("sys/class/hwmon") {
        let mut meter = meter.unwrap();
        assert_eq!(meter.source(), PowerSource::Estimated);
        let d = meter.describe();
        eprintln!("live power meter: {d}");
        assert!(d.starts_with("estimated from utilisation and P-states: no RAPL (sys/class/powercap absent), no hwmon power/energy sensor (sys/class/hwmon absent); "), "{d}");
        let s = meter.sample(1.0, &samples).unwrap();
        // The generic model (no preset is matched here), every core half
        // busy at its maximum frequency and voltage (no cpufreq).
        let p = ecosched_linux::power::EstimateParams::generic_for(&topo);
        let expected = p.uncore_w_per_package
            + f64::from(n)
                * (p.idle_w_per_core + 0.5 * (p.busy_static_w_per_core + p.dynamic_max_w_per_core));
        assert!(close(s.package_j, expected), "{s:?} vs {expected}");
        assert_eq!(s.source, Some(PowerSource::Estimated));
    } else {
        match meter {
            Ok(mut m) => {
                let s = m.sample(1.0, &samples).unwrap();
                assert!(
                    m.describe().starts_with("measured") || m.describe().starts_with("estimated")
                );
                assert!(s.package_j.is_some() || s.system_j.is_some(), "{s:?}");
            }
            Err(e) => assert!(
                matches!(&e, LinuxError::Permission { capability, .. } if capability.contains("root")),
                "{e}"
            ),
        }
    }
}
