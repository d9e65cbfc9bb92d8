//! Patel's schedulers in the simulator: the completion order without
//! priorities, the dynamic priorities of the `-dyn` scenarios, and the
//! observation model (the policies run on what Linux could read). The
//! thesis's tables are rows of `validation::patel`.

use ecosched_engine::experiment::{simulate, simulate_traced, SimOptions};
use ecosched_engine::validate::patel;
use ecosched_policy::Params;
use ecosched_sim::Scenario;
use std::collections::BTreeMap;

fn last_completions(scenario: &str, policy: &str) -> BTreeMap<String, f64> {
    let s = Scenario::load(scenario).unwrap();
    patel::priorities::last_completions(&s, policy, &SimOptions::default()).unwrap()
}

fn groups_in_order(last: &BTreeMap<String, f64>, first: &[&str], second: &[&str]) -> bool {
    patel::priorities::order_margin(last, first, second) > 0.0
}

/// The same workload without priorities: algorithm 1 ignores nice values,
/// so the order it gives is not the priority order, and Table 8's rows
/// (`validation::patel`) check something no policy gets for free.
#[test]
fn without_priorities_the_low_priority_programs_do_not_finish_last() {
    let last = last_completions("patel-task4", "ondemand");
    assert!(
        !groups_in_order(
            &last,
            &["gcc", "bzip2", "mcf"],
            &["non-cpuintensive", "sjeng"]
        ) || !groups_in_order(
            &last,
            &["non-cpuintensive", "mcf", "gcc"],
            &["bzip2", "sjeng"]
        ),
        "{last:?}"
    );
}

/// `-dyn`: a program's later runs start at the new nice value.
#[test]
fn dynamic_priorities_change_after_the_third_completion() {
    let s = Scenario::load("patel-task2-dyn").unwrap();
    let (_, trace) =
        simulate_traced(&s, "ondemand", &Params::default(), &SimOptions::default()).unwrap();
    let mut nice_by_start: BTreeMap<(String, u64), i32> = BTreeMap::new();
    for step in &trace.steps {
        for t in step.snapshot.tasks.iter().filter(|t| t.name == "gcc") {
            nice_by_start.insert((t.name.clone(), (t.started_s * 1e6) as u64), t.nice);
        }
    }
    let nices: Vec<i32> = nice_by_start.values().copied().collect();
    assert_eq!(nices, [-4, -4, -4, -14, -14], "Table 7: gcc −4 then −14");
}

/// The policies run on what Linux could read on the Opteron 6134: patel3's
/// four events fit its four counters, and a machine without the events
/// refuses patel3 before anything runs, naming them.
#[test]
fn patel_runs_on_linux_observations_and_refuses_a_machine_without_its_events() {
    let s = Scenario::load("patel-task1").unwrap();
    let run = simulate(
        &s,
        "patel3",
        &Params::default(),
        &SimOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let stats = &run.report.policy_stats;
    assert_eq!(
        stats
            .get("cpusets")
            .map(ToString::to_string)
            .unwrap_or_default(),
        "4@800 MHz (CPUs 0-3), 2@1400 MHz (CPUs 4-5), 2@2300 MHz (CPUs 6-7)"
    );
    assert!(run.metrics.patel.mean_ips.is_some());
    // The same machine without a PMU: patel3 is refused, naming the events.
    let mut s = Scenario::load("patel-task1").unwrap();
    let mut spec = (*s.machine).clone();
    spec.spec.pmu = None;
    s.machine = std::sync::Arc::new(spec);
    let err = simulate(
        &s,
        "patel3",
        &Params::default(),
        &SimOptions::default(),
        &mut |_| {},
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        err.contains("(instructions)") && err.contains("last-level cache misses (llc_misses)"),
        "{err}"
    );
}
