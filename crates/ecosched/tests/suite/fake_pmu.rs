//! The Linux platform behind the fake PMU, the seam the live tests drive
//! policies through on machines without hardware counters: with it the
//! platform serves PAM, and without its PMU the missing events are named.
//! Preparing the platform changes nothing on the machine (its journal
//! goes to a temporary directory), so no root is needed.

use ecosched_linux::perf::FakePerf;
use ecosched_linux::platform::{LinuxOptions, LinuxPlatform};
use ecosched_model::Platform;

#[test]
fn with_a_pmu_behind_the_seam_the_linux_platform_serves_pam() {
    let state = tempfile::tempdir().unwrap();
    let options = LinuxOptions {
        state_dir: state.path().to_path_buf(),
        ..LinuxOptions::default()
    };
    let pam = ecosched_policy::build("pam", &ecosched_policy::Params::default()).unwrap();
    let with_pmu = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options)
        .perf(Box::new(FakePerf::new()))
        .build()
        .unwrap();
    assert_eq!(
        pam.requirements().missing(&with_pmu.capabilities()),
        Vec::<String>::new()
    );
    drop(with_pmu);
    let without = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options)
        .perf(Box::new(FakePerf::new().without_pmu()))
        .build()
        .unwrap();
    let missing = pam
        .requirements()
        .missing(&without.capabilities())
        .join("; ");
    assert!(
        missing.contains("(instructions)")
            && missing.contains("last-level cache misses (llc_misses)"),
        "{missing}"
    );
}
