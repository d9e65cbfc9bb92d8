//! The `make -jN` build in the simulator (`jobgraph.rs` and its platform
//! hooks): `-jN` is respected, every job runs once, `make` sleeps between
//! short bursts and exits last, and the declared parallelism reaches the
//! snapshots.

use ecosched_model::{Plan, Platform, TaskState};
use ecosched_sim::{JobGraph, Scenario, SimPlatform};
use std::collections::BTreeMap;
use std::time::Duration;

/// Run a scenario to the end under the default governor, observing every
/// `step_ms`; returns per-name completions, the most jobs alive at once,
/// `make`'s on-CPU seconds and finish time, and the last finish time.
fn build(name: &str, hint: Option<u32>) -> (BTreeMap<String, u32>, usize, f64, f64, f64) {
    let mut s = Scenario::load(name).unwrap();
    s.spec.parallelism_hint = hint;
    let mut sim = SimPlatform::new(&s, s.spec.seed).unwrap();
    sim.apply(&Plan::unchanged()).unwrap();
    let mut done = BTreeMap::new();
    let (mut widest, mut make_cpu_s, mut make_end, mut last_end) = (0, 0.0, 0.0, 0.0f64);
    while !sim.finished() {
        sim.advance(Duration::from_millis(5)).unwrap();
        let snap = sim.observe().unwrap();
        assert_eq!(snap.parallelism_hint, hint);
        let alive = snap
            .tasks
            .iter()
            .filter(|t| (t.name == "cc" || t.name == "ld") && t.state != TaskState::Exited)
            .count();
        widest = widest.max(alive);
        for t in &snap.tasks {
            if t.name == "make" {
                make_cpu_s += t.counters.on_cpu_ns.unwrap() as f64 / 1e9;
            }
            if let Some(end) = t.finished_s {
                *done.entry(t.name.clone()).or_insert(0) += 1;
                last_end = last_end.max(end);
                if t.name == "make" {
                    make_end = end;
                }
            }
        }
    }
    (done, widest, make_cpu_s, make_end, last_end)
}

#[test]
fn make_j3_runs_every_job_once_and_never_more_than_three() {
    let s = Scenario::load("richling-make-j3").unwrap();
    let spec = s.spec.jobgraph.clone().unwrap();
    let links = JobGraph::generate(&spec, s.spec.seed).jobs().len() - spec.jobs as usize;
    let (done, widest, make_cpu_s, make_end, last_end) = build("richling-make-j3", Some(3));
    assert_eq!(done["cc"], spec.jobs);
    assert_eq!(done["ld"] as usize, links);
    assert_eq!(done["as"], spec.jobs, "every compile job had an assembler");
    assert_eq!(done["make"], 1);
    assert_eq!(widest, 3);
    assert_eq!(make_end, last_end, "make is the last to exit");
    // make works make_ms per job (at the highest frequency) and sleeps otherwise.
    let jobs = (spec.jobs as usize + links) as f64;
    let expected_s = jobs * spec.make_ms / 1000.0;
    assert!(
        (make_cpu_s - expected_s).abs() < 0.1 * expected_s,
        "make ran {make_cpu_s:.2} s, expected ≈ {expected_s:.2} s"
    );
    assert!(make_cpu_s < 0.1 * last_end, "make is mostly asleep");
}

#[test]
fn a_wider_make_finishes_sooner() {
    let one = build("richling-make-j1", None).4;
    let four = build("richling-make-j4", None).4;
    assert!(four < one / 2.5, "-j1 {one:.1} s, -j4 {four:.1} s");
}
