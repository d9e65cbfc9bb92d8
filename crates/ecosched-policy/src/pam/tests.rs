//! PAM on hand-built snapshots of the paper's Xeon E5345 (4 pairs of CPUs
//! sharing an L2): what it requires, what it proposes, how it leaves Good,
//! and how the power cap steers the CPU count.

use super::*;
use ecosched_model::{Capabilities, Counters};
use ecosched_testkit::machines::xeon_e5345;
use ecosched_testkit::snapshots::{self, snapshot, TaskBuilder};
use search::SearchKind;
use shares::weigh_by_measured_occupancy;
use std::collections::BTreeSet;

/// Counters of one second at 2.33 GHz for a task with this CPI and these
/// miss ratios (0.4 L1D references per instruction).
fn counters(cpi: f64, m1: f64, m2: f64) -> Counters {
    let cycles = 2.333e9;
    let instructions = cycles / cpi;
    let l1d_refs = 0.4 * instructions;
    let l1d_misses = m1 * l1d_refs;
    let llc_misses = m2 * l1d_misses;
    Counters {
        instructions: Some(instructions as u64),
        cycles: Some(cycles as u64),
        llc_references: Some(l1d_misses as u64),
        llc_misses: Some(llc_misses as u64),
        lines_in: Some(llc_misses as u64),
        l1d_references: Some(l1d_refs as u64),
        l1d_misses: Some(l1d_misses as u64),
        ..Counters::default()
    }
}

fn task(pid: u32, cpu: u32, c: Counters) -> TaskBuilder {
    snapshots::task(pid).cpu(cpu).counters(c)
}

/// Streaming tasks on even CPUs, cache-sensitive ones on odd CPUs: every L2
/// holds one of each (the Linux placement of Fig. 6, left). `sensitive_cpi`
/// lets a test make the sensitive tasks look faster or slower.
fn mixed(time_s: f64, sensitive_cpi: f64, power_w: f64) -> Snapshot {
    snapshot(xeon_e5345(), time_s, 1.0)
        .utilisation(1.0)
        .freq_khz(2_333_000)
        .nr_running(1)
        .system_j(power_w)
        .tasks((0..8).map(|cpu| {
            if cpu % 2 == 0 {
                task(100 + cpu, cpu, counters(3.0, 0.08, 0.95))
            } else {
                task(100 + cpu, cpu, counters(sensitive_cpi, 0.03, 0.4))
            }
        }))
        .build()
}

fn from_params(params: &Params) -> Result<Pam, PolicyError> {
    let (_, variant) = crate::find("pam")?;
    Pam::new(variant.typed(params)?)
}

fn config(params: &Params) -> Result<PamConfig, PolicyError> {
    let (_, variant) = crate::find("pam")?;
    PamConfig::new(variant.typed(params)?)
}

fn pam(params: &[&str]) -> Pam {
    let mut p = from_params(&Params::parse(params.iter().copied()).unwrap()).unwrap();
    p.init(&xeon_e5345()).unwrap();
    p
}

/// The cache (pair of CPUs) each pinned task was sent to.
fn caches_of(plan: &Plan) -> BTreeMap<u32, u32> {
    plan.task_cpus
        .iter()
        .map(|(id, set)| {
            assert_eq!(set.len(), 1, "{id} pinned to {set}");
            (id.pid, set.first().unwrap().0 / 2)
        })
        .collect()
}

#[test]
fn refuses_a_platform_without_the_counters_it_reads() {
    let software_only = Capabilities {
        counters: [
            CounterKind::OnCpuTime,
            CounterKind::RunqueueWait,
            CounterKind::ContextSwitches,
            CounterKind::Migrations,
        ]
        .into_iter()
        .collect(),
        power: None,
        affinity: true,
        frequency: true,
        gang: false,
    };
    let missing = pam(&[]).requirements().missing(&software_only);
    assert_eq!(missing.len(), 1, "{missing:?}");
    for event in [
        "(instructions)",
        "(cycles)",
        "(llc_references)",
        "(llc_misses)",
        "(l1d_references)",
        "(l1d_misses)",
    ] {
        assert!(
            missing[0].contains(event),
            "{event} not named in {missing:?}"
        );
    }
    // The power goals also need an energy meter.
    let capped = pam(&["goal=power-cap", "power_cap_w=260"]);
    let missing = capped.requirements().missing(&software_only);
    assert!(missing.iter().any(|m| m.contains("energy")), "{missing:?}");
    // With every counter, the performance goal runs.
    let full = Capabilities {
        counters: CounterKind::ALL.into_iter().collect::<BTreeSet<_>>(),
        ..software_only
    };
    assert!(pam(&[]).requirements().missing(&full).is_empty());
    // A cap needs measured power: an estimate is refused unless asked for;
    // the energy goal decides on an estimate, saying so.
    let estimated = Capabilities {
        power: Some(ecosched_model::PowerSource::Estimated),
        ..full.clone()
    };
    let verdict = capped.requirements().verdict(&estimated);
    assert!(!verdict.runs(), "{verdict:?}");
    assert!(verdict.reasons().contains("measured energy"), "{verdict:?}");
    let asked = pam(&["goal=power-cap", "power_cap_w=260", "cap_on_estimate=true"]);
    assert!(asked.requirements().verdict(&estimated).runs());
    assert!(pam(&["goal=energy"])
        .requirements()
        .verdict(&estimated)
        .runs());
    let measured = Capabilities {
        power: Some(ecosched_model::PowerSource::Measured),
        ..full
    };
    assert_eq!(
        capped.requirements().verdict(&measured),
        ecosched_model::Verdict::Runs
    );
}

#[test]
fn params_are_checked_and_named() {
    let err = |p: &[&str]| {
        from_params(&Params::parse(p.iter().copied()).unwrap())
            .unwrap_err()
            .to_string()
    };
    assert!(err(&["goal=power-cap"]).contains("power_cap_w"));
    assert!(err(&["goal=speed"]).contains("performance, power-cap or energy"));
    assert!(err(&["m=5", "n=4"]).contains("n=\"4\""));
    assert!(err(&["max_degradation=1.5"]).contains("max_degradation"));
    assert!(err(&["power_cap_w=200"]).contains("goal=power-cap"));
    assert!(err(&["cap_on_estimate=true"]).contains("goal=power-cap"));
    assert!(err(&["t3=-1"]).contains("t3"));
    assert!(err(&["search_budget_ms=0"]).contains("search_budget_ms"));
    assert!(err(&["search_budget_ms=-5"]).contains("search_budget_ms"));
    assert!(err(&["search_budget_ms=inf"]).contains("search_budget_ms"));
    assert_eq!(PamConfig::default().search.budget_ms, 20.0);
    let c = config(&Params::parse(["delta=0.01", "m=2", "n=20", "exhaustive_max_cpus=4"]).unwrap())
        .unwrap();
    assert_eq!(
        (c.search.delta, c.m, c.n, c.search.exhaustive_max_cpus),
        (0.01, 2, 20, 4)
    );
}

#[test]
fn separates_streams_from_cache_sensitive_tasks() {
    let mut p = pam(&[]);
    // The first interval follows start-up: observed, not acted on.
    assert!(p.decide(&mixed(1.0, 2.5, 280.0)).is_empty());
    let plan = p.decide(&mixed(2.0, 2.5, 280.0));
    let caches = caches_of(&plan);
    assert_eq!(caches.len(), 8);
    for (pid, cache) in &caches {
        for (other, c) in &caches {
            let same_kind = (pid % 2) == (other % 2);
            if c == cache {
                assert!(same_kind, "{caches:?}");
            }
        }
    }
    // Four tasks stay; the others fill the freed CPUs.
    let stayed = caches
        .iter()
        .filter(|(pid, c)| (*pid - 100) / 2 == **c)
        .count();
    assert_eq!(stayed, 4, "{caches:?}");
    let last = p.history().last.clone().unwrap();
    assert_eq!(last.kind, SearchKind::Exhaustive);
    assert_eq!(last.evaluated, 105);
    assert!(last.speedup > 1.0);
    assert_eq!(p.history().plans, 1);
}

#[test]
fn a_plan_that_does_not_pay_is_undone_and_not_retried_for_n_minus_m() {
    let mut p = pam(&["m=3", "n=10"]);
    p.decide(&mixed(1.0, 2.5, 280.0));
    let plan = p.decide(&mixed(2.0, 2.5, 280.0));
    assert!(!plan.is_empty());
    // In Good the sensitive tasks got slower: the plan failed.
    assert!(p.decide(&mixed(3.0, 2.9, 280.0)).is_empty());
    assert!(p.decide(&mixed(4.0, 2.9, 280.0)).is_empty());
    let restore = p.decide(&mixed(5.0, 2.9, 280.0));
    assert_eq!(p.history().failed, 1);
    // Every task goes back to the CPU it had in Default ...
    for (id, set) in &restore.task_cpus {
        assert_eq!(set.to_list(), (id.pid - 100).to_string());
    }
    // ... and is then released to the whole machine.
    let release = p.decide(&mixed(6.0, 2.5, 280.0));
    assert!(release.task_cpus.values().all(|s| s.len() == 8));
    // With the release, N − M = 7 intervals pass without a plan, although
    // one is predicted to pay.
    for t in 7..13 {
        assert!(
            p.decide(&mixed(t as f64, 2.5, 280.0)).is_empty(),
            "interval {t}"
        );
    }
    assert!(!p.decide(&mixed(13.0, 2.5, 280.0)).is_empty());
    assert_eq!(p.history().plans, 2);
}

#[test]
fn a_plan_that_pays_stays_until_n_then_reobserves() {
    let mut p = pam(&["m=2", "n=6"]);
    p.decide(&mixed(1.0, 2.5, 280.0));
    assert!(!p.decide(&mixed(2.0, 2.5, 280.0)).is_empty());
    for t in 3..8 {
        assert!(
            p.decide(&mixed(t as f64, 2.0, 280.0)).is_empty(),
            "interval {t}"
        );
    }
    let release = p.decide(&mixed(8.0, 2.0, 280.0));
    assert_eq!(release.task_cpus.len(), 8);
    assert!(release.task_cpus.values().all(|s| s.len() == 8));
    assert_eq!(p.history().good_intervals, 6);
    assert_eq!(p.history().failed, 0);
}

#[test]
fn max_degradation_floor_keeps_every_task_near_its_default_speed() {
    // The separated plan squeezes the streams (they lose their big share):
    // at a 95 % floor the model forbids it.
    let mut p = pam(&["max_degradation=0.95"]);
    p.decide(&mixed(1.0, 2.5, 280.0));
    let plan = p.decide(&mixed(2.0, 2.5, 280.0));
    if !plan.is_empty() {
        let last = p.history().last.clone().unwrap();
        assert!(last.speedup > 1.0);
    }
    let mut free = pam(&[]);
    free.decide(&mixed(1.0, 2.5, 280.0));
    free.decide(&mixed(2.0, 2.5, 280.0));
    let (free_plan, floored) = (
        free.history().last.clone().unwrap(),
        p.history().last.clone().unwrap(),
    );
    assert!(
        floored.speedup <= free_plan.speedup,
        "{floored:?} vs {free_plan:?}"
    );
    assert_ne!(floored.assignment, free_plan.assignment);
}

#[test]
fn power_cap_shrinks_the_cpu_set_and_regrows_with_room() {
    let mut p = pam(&["goal=power-cap", "power_cap_w=260", "cap_hold=2"]);
    let plan = p.decide(&mixed(1.0, 2.5, 300.0));
    // 40 W over with a 16 W-per-CPU first guess: three CPUs go.
    let set = plan.managed_cpus.clone().unwrap();
    assert_eq!(set.to_list(), "0-4");
    assert!(plan.task_cpus.values().all(|s| *s == set));
    // Far below the cap: grows back one CPU after two calm intervals.
    assert!(p.decide(&mixed(2.0, 2.5, 200.0)).managed_cpus.is_none());
    let grown = p.decide(&mixed(3.0, 2.5, 200.0)).managed_cpus.unwrap();
    assert_eq!(grown.to_list(), "0-5");
    assert_eq!(p.history().cap_changes, 2);
    assert_eq!(p.history().cpus_allowed, vec![5, 5, 6]);
}

#[test]
fn tasks_sharing_a_cpu_move_as_one_group() {
    // Nine tasks: two share CPU 7.
    let mut snap = mixed(1.0, 2.5, 280.0);
    let extra = task(200, 7, counters(2.5, 0.03, 0.4)).name("extra");
    snap.tasks.push(extra.build(&snap.topology));
    let mut p = pam(&[]);
    p.decide(&snap);
    snap.time_s = 2.0;
    let plan = p.decide(&snap);
    let caches = caches_of(&plan);
    if let (Some(a), Some(b)) = (
        plan.task_cpus.get(&snap.tasks[7].id),
        plan.task_cpus.get(&snap.tasks[8].id),
    ) {
        assert_eq!(a, b, "{caches:?}");
    } else {
        // Both stayed: neither was re-pinned.
        assert!(
            !caches.contains_key(&107) && !caches.contains_key(&200),
            "{caches:?}"
        );
    }
    assert_eq!(p.history().last.as_ref().unwrap().assignment.len(), 8);
}

#[test]
fn bench_instance_is_reproducible_and_searchable() {
    let (layout, slots, current) = bench_instance(16, 7);
    let again = bench_instance(16, 7);
    assert_eq!(slots, again.1);
    assert_eq!(layout.cpus(), 16);
    let d = bench_decide(
        &layout,
        &slots,
        &current,
        &crate::pam::PamConfig::default().search,
    );
    assert_eq!(d.kind, SearchKind::Local);
    assert!(!d.stopped_early, "{d:?}");
}

#[test]
fn a_search_stopped_by_its_budget_says_so_in_its_decision() {
    // Exhaustive on the Xeon: 105 assignments, far beyond 1 ns of work.
    let mut p = pam(&["search_budget_ms=0.000001"]);
    p.decide(&mixed(1.0, 2.5, 280.0));
    p.decide(&mixed(2.0, 2.5, 280.0));
    let last = p.history().last.clone().unwrap();
    assert!(last.stopped_early, "{last:?}");
    assert!(last.evaluated < 105, "{last:?}");
    let last_decision = |p: &Pam| {
        p.stats()
            .get("last_decision")
            .map(|v| v.to_string())
            .unwrap_or_default()
    };
    let stats = last_decision(&p);
    assert!(
        stats.contains("stopped early at search_budget_ms=0.000001"),
        "{stats}"
    );
    // The local search says how far it got.
    let mut p = pam(&["search_budget_ms=0.000001", "exhaustive_max_cpus=0"]);
    p.decide(&mixed(1.0, 2.5, 280.0));
    p.decide(&mixed(2.0, 2.5, 280.0));
    let stats = last_decision(&p);
    assert!(stats.starts_with("local search"), "{stats}");
    assert!(stats.ends_with("(0 of 9 descents complete)"), "{stats}");
    // The default budget covers it, and the report does not mention one.
    let mut p = pam(&[]);
    p.decide(&mixed(1.0, 2.5, 280.0));
    p.decide(&mixed(2.0, 2.5, 280.0));
    assert!(!p.history().last.as_ref().unwrap().stopped_early);
    let stats = last_decision(&p);
    assert!(
        stats.starts_with("exhaustive search, 105 evaluated"),
        "{stats}"
    );
    assert!(!stats.contains("stopped early"), "{stats}");
}

#[test]
fn refuses_a_machine_whose_caches_leave_no_mapping_to_choose() {
    use ecosched_testkit::machines::Synthetic;
    let refusal = |topology: Topology| {
        let mut p = from_params(&Params::default()).unwrap();
        p.init(&topology).unwrap_err().to_string()
    };
    // One L3 over every core (a desktop part, or one CCD).
    let one = refusal(Synthetic::new(1, 1, 8).llc(3, 32 * 1024).build());
    assert_eq!(
        one,
        "PAM pairs tasks across last-level caches; this machine has one, so there is no mapping to choose"
    );
    // A cache per core: no process ever shares one.
    let private = refusal(Synthetic::new(1, 4, 1).llc(2, 512).build());
    assert!(private.contains("no two CPUs share one"), "{private}");
    // Two shared caches: something to choose.
    let mut p = from_params(&Params::default()).unwrap();
    assert!(p
        .init(&Synthetic::new(1, 2, 4).llc(3, 8192).build())
        .is_ok());
}

#[test]
fn measured_occupancy_sets_the_cache_shares_and_lines_in_the_rest() {
    let slot = |lines_per_s: f64| SlotObs {
        lines_per_s,
        occupancy: 0.0,
        m1: 0.05,
        m2: 0.5,
        cpi: 1.5,
        alpha: DEFAULT_ALPHA,
    };
    // Cache 0: lines in 3:1 but the second holds three times the bytes
    // (its lines are reused, the first's stream through). Cache 1: one
    // slot unmeasured, so its lines-in shares stand.
    let mut slots = vec![slot(3e6), slot(1e6), slot(2e6), slot(2e6)];
    let current = [0, 0, 1, 1];
    let held = [Some(1e6), Some(3e6), Some(5e6), None];
    weigh_by_measured_occupancy(&mut slots, &current, &held);
    occupancies(&mut slots, &current);
    let o: Vec<f64> = slots.iter().map(|s| s.occupancy).collect();
    assert!(
        (o[0] - 0.25).abs() < 1e-12 && (o[1] - 0.75).abs() < 1e-12,
        "{o:?}"
    );
    assert!(
        (o[2] - 0.5).abs() < 1e-12 && (o[3] - 0.5).abs() < 1e-12,
        "{o:?}"
    );
    // The cache's total insertion rate is kept, so a slot moved to another
    // cache competes with the rate it really has.
    assert!((slots[0].lines_per_s + slots[1].lines_per_s - 4e6).abs() < 1e-6);
}

#[test]
fn the_statistics_say_where_the_cache_shares_came_from() {
    let source = |edit: fn(&mut Counters)| {
        let mut p = pam(&[]);
        let snap = snapshot(xeon_e5345(), 1.0, 1.0)
            .utilisation(1.0)
            .tasks((0..8).map(|cpu| {
                let mut c = counters(2.0, 0.05, 0.5);
                edit(&mut c);
                task(100 + cpu, cpu, c)
            }))
            .build();
        p.decide(&snap);
        p.stats()
            .get("occupancy_from")
            .map(|v| v.to_string())
            .unwrap_or_default()
    };
    assert_eq!(source(|c| c.llc_occupancy = Some(1 << 20)), "llc_occupancy");
    assert_eq!(source(|_| {}), "lines_in");
    assert_eq!(source(|c| c.lines_in = None), "llc_misses");
}
