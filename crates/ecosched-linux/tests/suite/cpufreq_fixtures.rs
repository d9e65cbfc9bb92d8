//! cpufreq reading and write planning on the hand-written
//! `tests/data/cpufreq-acpi-xeon-e5345/` tree (acpi-cpufreq, per-CPU
//! `cpuN/cpufreq` directories, `userspace` offered). The planned writes are
//! carried out on a writable copy of the tree and read back, so the test
//! shows that a plan leaves the policy where it was asked to be. The
//! `intel_pstate` case uses hwloc's recorded hybrid laptop (see
//! `hwloc_fixtures`).
use crate::support::{data, scratch_copy};
use ecosched_linux::cpufreq::{self, writes_for};
use ecosched_linux::topology;
use ecosched_linux::FsRoot;
use ecosched_model::{FreqSetting, Governor};

/// The recorded machine.
const E5345: &str = "cpufreq-acpi-xeon-e5345";

#[test]
fn acpi_cpufreq_gives_one_domain_per_core_with_both_pstates() {
    let found = topology::discover(&FsRoot::recorded(data(E5345))).unwrap();
    let t = &found.topology;
    assert_eq!(t.freq_domains.len(), 8);
    assert_eq!(found.cpufreq.len(), 8);
    for (i, (dom, policy)) in t.freq_domains.iter().zip(&found.cpufreq).enumerate() {
        assert_eq!(dom.cpus, policy.cpus);
        assert_eq!(dom.cpus.to_list(), i.to_string());
        let khz: Vec<u64> = dom.pstates.iter().map(|p| p.freq_khz).collect();
        assert_eq!(khz, [2_000_000, 2_333_000]);
        assert!(dom.pstates.iter().all(|p| p.voltage_mv.is_none()));
        assert_eq!(dom.transition_latency_us, 10);
        assert_eq!(policy.dir, format!("sys/devices/system/cpu/cpu{i}/cpufreq"));
        assert!(policy.has_setspeed);
    }
    assert_eq!(t.package_count(), 2);
    assert!(found
        .machine_name
        .starts_with("Intel(R) Xeon(R) CPU E5345 @ 2.33GHz (2 packages, 8 cores"));
    assert_eq!(found.allowed.to_list(), "0-7");
}

#[test]
fn planned_writes_carry_out_fixed_and_governor_settings() {
    let dir = scratch_copy(E5345);
    let root = FsRoot::writable_fixture(dir.path());
    let policy = &cpufreq::read_policies(&root).unwrap()[3];
    let apply = |setting: FreqSetting| {
        for w in writes_for(policy, &setting).unwrap() {
            root.write(&w.path, &w.value, "root").unwrap();
        }
        cpufreq::read_policy(&root, &policy.dir, None).unwrap()
    };
    let after = apply(FreqSetting::Fixed {
        freq_khz: 2_000_000,
    });
    assert_eq!(after.governor.as_deref(), Some("userspace"));
    let speed = root
        .read(&format!("{}/scaling_setspeed", policy.dir), "setspeed")
        .unwrap();
    assert_eq!(speed, "2000000");
    let after = apply(FreqSetting::Governor(Governor::Performance));
    assert_eq!(after.governor.as_deref(), Some("performance"));
    assert_eq!(
        (after.min_khz, after.max_khz),
        (Some(2_000_000), Some(2_333_000))
    );
    // The other policies were not touched.
    let other = cpufreq::read_policy(&root, "sys/devices/system/cpu/cpu2/cpufreq", None).unwrap();
    assert_eq!(other.governor.as_deref(), Some("ondemand"));
}

#[test]
fn a_recorded_tree_refuses_the_writes_and_bad_settings_name_the_policy() {
    let root = FsRoot::recorded(data(E5345));
    let policy = &cpufreq::read_policies(&root).unwrap()[0];
    let w = &writes_for(policy, &FreqSetting::Governor(Governor::Ondemand)).unwrap()[0];
    assert!(matches!(
        root.write(&w.path, &w.value, "root"),
        Err(ecosched_linux::LinuxError::ReadOnly { .. })
    ));
    let err = writes_for(policy, &FreqSetting::Governor(Governor::Schedutil))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cpu0/cpufreq") && err.contains("conservative ondemand userspace"),
        "{err}"
    );
    let err = writes_for(
        policy,
        &FreqSetting::Fixed {
            freq_khz: 2_600_000,
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("2000000 2333000"), "{err}");
}
