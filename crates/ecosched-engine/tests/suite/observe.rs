//! The observation model end to end: under `--observe linux` a policy sees
//! only what `LinuxPlatform` could read; under `full`, simulator truth.

use ecosched_engine::experiment::{simulate_traced, SimOptions};
use ecosched_model::{CounterKind, Trace};
use ecosched_policy::Params;
use ecosched_sim::{Observe, Scenario};

fn traced(scenario: &str, policy: &str, observe: Observe) -> Trace {
    let s = Scenario::load(scenario).unwrap();
    simulate_traced(
        &s,
        policy,
        &Params::default(),
        &SimOptions::observing(observe),
    )
    .unwrap()
    .1
}

#[test]
fn linux_hides_kernel_threads_and_run_queue_lengths() {
    // bench-8c24t-short has transient kernel threads beside its tasks.
    let linux = traced("bench-8c24t-short", "ondemand", Observe::Linux);
    let full = traced("bench-8c24t-short", "ondemand", Observe::Full);
    let unmanaged = |t: &Trace| {
        t.steps
            .iter()
            .flat_map(|s| &s.snapshot.tasks)
            .filter(|t| !t.managed)
            .count()
    };
    assert!(unmanaged(&full) > 0);
    assert_eq!(unmanaged(&linux), 0);
    for step in &linux.steps {
        assert!(step.snapshot.cpus.iter().all(|c| c.nr_running.is_none()));
        // /proc/stat counts whole 10 ms ticks.
        for c in &step.snapshot.cpus {
            let ticks = c.utilisation * step.snapshot.interval_s / 0.01;
            assert!((ticks - ticks.round()).abs() < 1e-6, "{}", c.utilisation);
        }
    }
    assert!(full.steps[0].snapshot.cpus[0].nr_running.is_some());
    // Only what the policy opened: ondemand asks for nothing, so of the
    // hardware events only instructions (for the run's figures) appear.
    let t = &linux.steps[1].snapshot.tasks[0].counters;
    assert!(t.instructions.is_some());
    assert_eq!(t.cycles, None);
    assert_eq!(t.llc_misses, None);
    assert!(t.on_cpu_ns.is_some() && t.runqueue_wait_ns.is_some());
}

#[test]
fn pam_sees_multiplexed_estimates_close_to_the_truth() {
    // PAM opens four general-purpose events plus lines-in on a Core 2 with
    // two counters: three groups take turns, each scaled up.
    let linux = traced("pam-libq-xalancbmk", "pam", Observe::Linux);
    let full = traced("pam-libq-xalancbmk", "pam", Observe::Full);
    let mut exact = 0;
    let mut compared = 0;
    for (l, f) in linux.steps.iter().zip(&full.steps).skip(1).take(20) {
        for (lt, ft) in l.snapshot.tasks.iter().zip(&f.snapshot.tasks) {
            assert_eq!(lt.id, ft.id);
            // Fixed counters are exact.
            assert_eq!(lt.counters.instructions, ft.counters.instructions);
            for kind in [CounterKind::LlcMisses, CounterKind::L1dReferences] {
                let (Some(a), Some(b)) = (lt.counters.get(kind), ft.counters.get(kind)) else {
                    continue;
                };
                compared += 1;
                exact += usize::from(a == b);
                let rel = (a as f64 - b as f64).abs() / (b as f64).max(1.0);
                assert!(rel < 0.05, "{kind:?}: {a} vs {b}");
            }
        }
    }
    assert!(compared > 50, "{compared}");
    assert!(
        exact < compared,
        "multiplexing never showed: {exact} of {compared} exact"
    );
}
