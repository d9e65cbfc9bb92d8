//! Child entry points: tests that another test runs as a separate process
//! of this binary (started by path, with environment variables) and then
//! kills. They are `#[ignore]`d so that no tier runs them by itself, and
//! live outside every tier's module so that no tier filter matches them.

use crate::support::av_sort::{groups_of, prepare, step};
use crate::support::loops_of;
use ecosched_model::Platform;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The process that manages an av-sort run, for
/// `live::av_sort::after_sigkill_ecosched_restore_thaws_every_av_group`
/// and `live::chaos::av_sort_killed_at_random_moments_is_restored_every_time`:
/// it writes the pids of the shell and its loops to `$AV_PIDS` once every
/// loop is in a gang group, and steps the policy on while its parent
/// SIGKILLs it. The run's journal goes to `$AV_STATE`.
#[test]
#[ignore = "run by live::av_sort and live::chaos"]
fn av_sort_managing_process() {
    let state = PathBuf::from(std::env::var("AV_STATE").unwrap());
    let pids_file = PathBuf::from(std::env::var("AV_PIDS").unwrap());
    let (mut platform, mut policy) = prepare(&state, "ecosched-av-killed");
    let sh = platform.child_pid().unwrap();
    let run_dir = format!("ecosched-av-killed-{}", std::process::id());
    let cpus = platform.topology().online_cpus().len();
    let mut written = false;
    // Killed within seconds by the parent; should the parent die first,
    // end the run (thawing everything) rather than run on unmanaged.
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        step(&mut platform, policy.as_mut());
        let loops = loops_of(sh);
        if !written && loops.len() == 2 * cpus && groups_of(&loops, &run_dir).is_some() {
            let text: Vec<String> = std::iter::once(sh)
                .chain(loops)
                .map(|p| p.to_string())
                .collect();
            let tmp = pids_file.with_extension("tmp");
            std::fs::write(&tmp, text.join(" ")).unwrap();
            std::fs::rename(&tmp, &pids_file).unwrap();
            written = true;
        }
    }
    platform.finish(true).unwrap();
}
