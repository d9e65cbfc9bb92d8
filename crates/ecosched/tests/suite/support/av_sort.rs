//! Running the `av-sort` policy (Merkel et al. §5.3) in this process on
//! the real Linux platform, behind the fake PMU: shared by the live test
//! that watches its gang groups and by the child entry that the SIGKILL
//! test starts and kills.

use ecosched_linux::perf::FakePerf;
use ecosched_linux::platform::{LinuxOptions, LinuxPlatform};
use ecosched_model::calibration::ActivityCalibration;
use ecosched_model::{Calibration, Platform};
use ecosched_policy::{Params, Policy};
use std::path::{Path, PathBuf};

/// Two busy loops per online CPU under one waiting `sh`, so that every
/// CPU's queue holds two tasks and the policy builds a gang cycle.
fn command() -> Vec<String> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let loops = "sh -c 'while :; do :; done' & ".repeat(2 * cpus);
    vec!["sh".into(), "-c".into(), format!("{loops}wait")]
}

/// A platform behind the fake PMU, with an activity calibration (this VM
/// cannot measure one: no cpufreq, no counters), and av-sort on it,
/// running [`command`]. The run's cgroups are named after `cgroup_name`.
pub fn prepare(state: &Path, cgroup_name: &str) -> (LinuxPlatform, Box<dyn Policy>) {
    let options = LinuxOptions {
        state_dir: state.to_path_buf(),
        // Tests in one binary share a PID: keep their cgroups apart.
        cgroup_name: cgroup_name.into(),
        ..LinuxOptions::default()
    };
    let mut platform = LinuxPlatform::builder(ecosched_linux::FsRoot::live())
        .options(&options)
        .perf(Box::new(FakePerf::new()))
        .build()
        .unwrap();
    platform
        .set_calibration(Calibration {
            source: Some("av-sort live test".into()),
            activity: Some(ActivityCalibration {
                peak_mem_per_s: 1e8,
                peak_mem_transactions_per_s: None,
                peak_cache_per_cycle: 0.25,
                translation: Vec::new(),
            }),
            ..Calibration::default()
        })
        .unwrap();
    let mut policy = ecosched_policy::build("av-sort", &Params::default()).unwrap();
    platform.open_counters(&policy.requirements());
    let missing = policy.requirements().missing(&platform.capabilities());
    assert!(missing.is_empty(), "{missing:?}");
    let initial = policy.init(&platform.topology()).unwrap();
    platform.apply(&initial).unwrap();
    platform.start(&command()).unwrap();
    (platform, policy)
}

/// One control-loop step, as `ecosched run` takes it.
pub fn step(platform: &mut LinuxPlatform, policy: &mut dyn Policy) {
    platform.advance(policy.interval()).unwrap();
    let snapshot = platform.observe().unwrap();
    let plan = policy.decide(&snapshot);
    platform.apply(&plan).unwrap();
}

/// Each loop's gang group, if every loop is in one of the run's
/// `cpu<N>-<j>` groups (under the run's directory `run_dir`).
pub fn groups_of(loops: &[u32], run_dir: &str) -> Option<Vec<PathBuf>> {
    loops
        .iter()
        .map(|&p| {
            let (dir, _) = ecosched_testkit::live::freezer_cgroup(p)?;
            let name = dir.file_name()?.to_string_lossy().to_string();
            let parent = dir.parent()?.file_name()?.to_string_lossy().to_string();
            (parent == run_dir && name.starts_with("cpu")).then_some(dir)
        })
        .collect()
}
