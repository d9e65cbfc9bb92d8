//! Child entries: this binary run again by a parent test, with the
//! environment that test sets, to do what cannot be done in the test's own
//! process (be SIGKILLed, run unprivileged, lower a process-wide limit).
//! Ignored in a normal run, and outside every tier (`live::`,
//! `validation::`): only their parent starts them, by this path.

use std::path::Path;

/// Apply changes like `LinuxPlatform` does until SIGKILLed.
#[test]
#[ignore = "run by live::chaos_restore::sigkill_at_random_points_then_restore_puts_everything_back"]
fn chaos_worker() {
    crate::live::chaos_restore::worker();
}

/// Carry out a gang schedule until SIGKILLed.
#[test]
#[ignore = "run by live::gang::after_sigkill_restore_thaws_every_group_and_moves_tasks_back"]
fn gang_child_until_killed() {
    crate::live::gang::run_until_killed();
}

/// As `nobody`, on the tree named by `POWER_FIXTURE`: an unreadable
/// `energy_uj` (mode 0400, as since Linux 5.10) is a permission error
/// naming root. Only an unprivileged process can see it: root reads the
/// file regardless of its mode.
#[test]
#[ignore = "run as an unprivileged user by power::rapl_refusal_is_an_error_naming_root_not_an_estimate"]
fn rapl_refusal_child() {
    assert!(!nix::unistd::geteuid().is_root(), "must run unprivileged");
    crate::power::expect_refusal(Path::new(&std::env::var("POWER_FIXTURE").unwrap()));
}

/// Lower the open-file limit and raise it again, in a process of its own.
#[test]
#[ignore = "run by limits::the_soft_limit_is_raised_to_the_hard_one"]
fn nofile_limit_raised() {
    crate::limits::raise_from_low();
}

/// Encode `LIBPFM_EVENTS` for the PMU `LIBPFM_FORCE_PMU` names, in a
/// process of its own (libpfm4 reads the variable once per process).
#[test]
#[ignore = "run by live::libpfm"]
fn libpfm_encode() {
    crate::live::libpfm::encode_child();
}
