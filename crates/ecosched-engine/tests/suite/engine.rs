//! The control loop and experiments end to end on the simulator.

use ecosched_engine::compare::compare;
use ecosched_engine::experiment::{simulate, simulate_traced, SimOptions, SimRun};
use ecosched_model::RunMetrics;
use ecosched_policy::Params;
use ecosched_sim::Scenario;

fn sim_run(scenario: &str, policy: &str, params: Params, seed: Option<u64>) -> SimRun {
    let s = Scenario::load(scenario).unwrap();
    simulate(&s, policy, &params, &SimOptions::seeded(seed), &mut |_| {}).unwrap()
}

fn run(scenario: &str, policy: &str, params: Params, seed: Option<u64>) -> RunMetrics {
    sim_run(scenario, policy, params, seed).metrics
}

#[test]
fn same_seed_same_result() {
    let a = run("bench-8c24t-short", "ondemand", Params::default(), Some(3));
    let b = run("bench-8c24t-short", "ondemand", Params::default(), Some(3));
    assert_eq!(a, b);
}

#[test]
fn static_policy_confines_managed_tasks() {
    let s = Scenario::load("merkel-4-aluadd").unwrap();
    let (r, trace) = simulate_traced(
        &s,
        "static",
        &Params::default().with("cpus", "0-1"),
        &SimOptions::default(),
    )
    .unwrap();
    for step in &trace.steps {
        for t in step.snapshot.tasks.iter().filter(|t| t.managed) {
            assert_eq!(t.allowed.to_list(), "0-1");
            if let Some(cpu) = t.cpu {
                assert!(cpu.0 <= 1, "{} ran on {cpu}", t.name);
            }
        }
    }
    // Four tasks on two CPUs take twice as long as on four.
    let free = run("merkel-4-aluadd", "performance", Params::default(), None);
    assert!(
        (r.metrics.makespan_s / free.makespan_s - 2.0).abs() < 0.05,
        "{}",
        r.metrics.makespan_s
    );
}

#[test]
fn powersave_is_slower_and_draws_less_power_than_performance() {
    let fast = run("merkel-4-aluadd", "performance", Params::default(), None);
    let slow = run("merkel-4-aluadd", "powersave", Params::default(), None);
    assert!(slow.makespan_s > 1.4 * fast.makespan_s);
    assert!(slow.avg_power_w.unwrap() < fast.avg_power_w.unwrap());
}

#[test]
fn ondemand_runs_busy_cores_at_max_after_one_sample() {
    let od = run("merkel-4-aluadd", "ondemand", Params::default(), None);
    let perf = run("merkel-4-aluadd", "performance", Params::default(), None);
    // Starts at max (kernel default governor is performance until the
    // policy switches), stays there under full load.
    assert!((od.makespan_s / perf.makespan_s - 1.0).abs() < 0.01);
}

#[test]
fn compare_reports_ratios_against_the_baseline() {
    let s = Scenario::load("merkel-2stream-2alu").unwrap();
    let policies = vec![
        ("performance".to_string(), Params::default()),
        (
            "fixed".to_string(),
            Params::default().with("freq_mhz", 1600),
        ),
    ];
    let report = compare(
        &s,
        &policies,
        "performance",
        &SimOptions::default(),
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(report.ratios["performance"].makespan, 1.0);
    let fixed = &report.ratios["fixed"];
    assert!(fixed.avg_power.unwrap() < 1.0);
    assert!(fixed.speedup_geomean.unwrap() < 1.0);
    assert_eq!(report.alone_s.len(), 4);
}

#[test]
fn energy_only_grows() {
    let s = Scenario::load("bench-8c24t-short").unwrap();
    let (_, trace) =
        simulate_traced(&s, "ondemand", &Params::default(), &SimOptions::default()).unwrap();
    for step in &trace.steps {
        assert!(step.snapshot.power.package_j.unwrap() >= 0.0);
        assert!(step.snapshot.power.system_j.unwrap() >= step.snapshot.power.package_j.unwrap());
    }
}

/// The split of migrations by cause (simulator truth) adds up to the
/// migrations the run counted, and names what a policy adds: the default
/// scheduler never changes a task's CPUs, Patel's algorithm 2 moves
/// programs between cpusets, and high/low pins a `make` build's jobs.
/// Where sleepers wake differs by preset: on the Opteron 6134 (2.6.35) a
/// sleeper of the fully loaded Task 4 goes back to its previous CPU, so
/// the default scheduler's moves are balancing; Richling's Opteron 2352
/// wakes `make` on the CPU idle longest, which moves it.
#[test]
fn migration_causes_add_up_to_the_counted_migrations() {
    for (scenario, policy, policy_moves, wakes_move) in [
        ("patel-task4", "ondemand", false, false),
        ("patel-task4", "patel2", true, true),
        ("richling-make-j4", "hilo", true, true),
    ] {
        let r = sim_run(scenario, policy, Params::default(), None).report;
        let m = r.migrations_by_cause.unwrap();
        let what = format!("{scenario} under {policy}: {m:?}");
        assert_eq!(
            Some(m.wake_up + m.balance + m.idle_pull + m.affinity),
            r.migrations,
            "{what}"
        );
        assert_eq!(m.affinity > 0, policy_moves, "{what}");
        assert_eq!(m.wake_up > 0, wakes_move, "{what}");
        assert!(m.balance + m.idle_pull > 0, "{what}");
    }
}
