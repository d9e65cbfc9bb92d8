//! Patel's schedulers on hand-built snapshots of the thesis's machine (an
//! Opteron 6134: 8 cores, per-core DVFS 800–2300 MHz): the cpusets, where
//! a new process goes, each move rule of §5.2 and its algorithm-2/3/4
//! guards, and the refusals.

use super::*;
use crate::{build, Params};
use ecosched_model::FreqDomainId;
use ecosched_testkit::machines::{opteron_6134, without_cpufreq};
use ecosched_testkit::snapshots::{self, process_id, snapshot, task_id};

fn policy(name: &str, params: Params) -> Patel {
    let algorithm = match name {
        "patel1" => Algorithm::CpuScheduler,
        "patel2" => Algorithm::Priority,
        "patel3" => Algorithm::CacheMiss,
        _ => Algorithm::ContextSwitch,
    };
    let (_, variant) = crate::find(name).unwrap();
    let mut p = Patel::new("test", algorithm, variant.typed(&params).unwrap()).unwrap();
    p.init(&opteron_6134()).unwrap();
    p
}

/// What one process did over a one-second window.
#[derive(Clone, Copy)]
struct Behaviour {
    ipc: f64,
    cpu_frac: f64,
    util: f64,
    miss_ratio: f64,
    switches_per_s: f64,
    nice: i32,
}

const CPU_BOUND_SLOWED: Behaviour = Behaviour {
    ipc: 1.0,
    cpu_frac: 0.95,
    util: 0.95,
    miss_ratio: 0.001,
    switches_per_s: 5.0,
    nice: 0,
};

/// Put process `n` in cpuset `set` with a finished window showing `b`.
fn seed(p: &mut Patel, n: u32, set: usize, b: Behaviour) {
    let cycles = 2e9 * b.cpu_frac;
    let w = ThreadWindow {
        alive_s: 1.0,
        on_cpu_ns: (b.cpu_frac * 1e9) as u64,
        on_cpu_known: true,
        instructions: Some((cycles * b.ipc) as u64),
        cycles: Some(cycles as u64),
        references: Some(1_000_000),
        misses: Some((1e6 * b.miss_ratio) as u64),
        switches: Some((b.switches_per_s * b.cpu_frac) as u64),
        migrations: Some(0),
        util_sum: b.util,
        util_n: 1,
    };
    p.procs.insert(
        process_id(n),
        Process {
            set,
            first_seen_s: 0.0,
            window_start_s: 0.0,
            threads: [(task_id(n), w)].into(),
            nice: b.nice,
            demand: b.cpu_frac,
            last: None,
        },
    );
}

/// Where process `n` would go at load average `load`.
fn target(p: &mut Patel, n: u32, load: f64) -> Option<usize> {
    let occ = p.occupancy();
    p.decide_process(process_id(n), &occ, load)
}

const SLOW: usize = 0;
const MID: usize = 1;
const FAST: usize = 2;

#[test]
fn default_partition_is_the_theses_derived_from_pstates() {
    let p = policy("patel1", Params::default());
    let sets: Vec<(String, u64)> = p
        .sets()
        .iter()
        .map(|s| (s.cpus.to_list(), s.freq_khz / 1000))
        .collect();
    assert_eq!(
        sets,
        [
            ("0-3".to_string(), 800),
            ("4-5".to_string(), 1400),
            ("6-7".to_string(), 2300)
        ]
    );
    assert_eq!(
        derive_partition(&opteron_6134()).unwrap().to_string(),
        "4@800,2@1400,2@2300"
    );
}

#[test]
fn init_pins_every_domain_of_a_set_to_its_frequency() {
    let mut p = policy("patel1", Params::default());
    let plan = p.init(&opteron_6134()).unwrap();
    let khz = |d: usize| match plan.frequency[&FreqDomainId(d)] {
        FreqSetting::Fixed { freq_khz } => freq_khz,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        (0..8).map(khz).collect::<Vec<_>>(),
        [800_000, 800_000, 800_000, 800_000, 1_400_000, 1_400_000, 2_300_000, 2_300_000]
    );
    assert_eq!(plan.managed_cpus.unwrap().to_list(), "0-7");
}

#[test]
fn partition_param_is_checked_against_the_machine() {
    let try_init = |text: &str| {
        let mut p = build("patel2", &Params::default().with("partition", text))?;
        p.init(&opteron_6134())
    };
    let err = try_init("4@900,2@1400,2@2300").unwrap_err().to_string();
    assert!(
        err.contains("900 MHz is not a P-state") && err.contains("800, 1400"),
        "{err}"
    );
    let err = try_init("4@800,4@1400,2@2300").unwrap_err().to_string();
    assert!(
        err.contains("covers 10 CPUs") && err.contains("8 online"),
        "{err}"
    );
    let err = build("patel1", &Params::default().with("partition", "4-800"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("partition") && err.contains("expected e.g."),
        "{err}"
    );
    let plan = try_init("2@800,6@2300").unwrap();
    assert_eq!(
        plan.frequency[&FreqDomainId(1)],
        FreqSetting::Fixed { freq_khz: 800_000 }
    );
}

#[test]
fn without_cpufreq_it_refuses_unless_confine_only() {
    let mut p = build("patel1", &Params::default()).unwrap();
    let err = p
        .init(&without_cpufreq(opteron_6134()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no cpufreq") && err.contains("confine_only"),
        "{err}"
    );
    let params = Params::default()
        .with("confine_only", true)
        .with("partition", "4@800,2@1400,2@2300");
    let mut p = build("patel1", &params).unwrap();
    assert!(!p.requirements().frequency);
    let plan = p.init(&without_cpufreq(opteron_6134())).unwrap();
    assert!(plan.frequency.is_empty());
    assert!(note(p.as_ref(), "confine_only").contains("NOT set"));
    // Without P-states there is nothing to derive a partition from.
    let mut p = build("patel1", &Params::default().with("confine_only", true)).unwrap();
    let err = p
        .init(&without_cpufreq(opteron_6134()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("partition"), "{err}");
}

#[test]
fn each_algorithm_requires_its_counters() {
    use CounterKind as K;
    let req = |name: &str| build(name, &Params::default()).unwrap().requirements();
    assert_eq!(req("patel1").counters, [K::Instructions, K::Cycles].into());
    assert_eq!(req("patel2").counters, [K::Instructions, K::Cycles].into());
    assert!(req("patel3").counters.contains(&K::LlcMisses));
    assert!(req("patel3").counters.contains(&K::LlcReferences));
    assert!(req("patel4").counters.contains(&K::ContextSwitches));
    assert!(req("patel4").counters.contains(&K::Migrations));
    assert!(req("patel1").frequency && req("patel1").affinity);
    // Thresholds of later algorithms are not accepted by earlier ones.
    assert!(build(
        "patel2",
        &Params::default().with("cache_miss_threshold", 0.1)
    )
    .is_err());
    assert!(build("patel1", &Params::default().with("nice_up_max", 5)).is_err());
    assert!(build("patel4", &Params::default().with("perf_rule", "xor")).is_err());
}

#[test]
fn signals_follow_a2_fraction_wait_is_wall_clock() {
    let mut p = policy("patel1", Params::default());
    seed(
        &mut p,
        1,
        SLOW,
        Behaviour {
            cpu_frac: 0.25,
            ..CPU_BOUND_SLOWED
        },
    );
    let s = p.procs[&process_id(1)].signals();
    assert!((s.fraction_wait - 0.75).abs() < 1e-9);
    assert!((s.ipc.unwrap() - 1.0).abs() < 1e-6);
    assert!((s.miss_ratio.unwrap() - 0.001).abs() < 1e-9);
}

#[test]
fn slowed_cpu_intensive_process_moves_up_to_least_a() {
    let mut p = policy("patel1", Params::default());
    seed(&mut p, 1, SLOW, CPU_BOUND_SLOWED);
    assert_eq!(target(&mut p, 1, 1.0), Some(FAST));
    // With the fast set crowded (2 threads per CPU), 1.4 GHz alone is better.
    seed(&mut p, 2, FAST, CPU_BOUND_SLOWED);
    seed(&mut p, 3, FAST, CPU_BOUND_SLOWED);
    seed(&mut p, 4, FAST, CPU_BOUND_SLOWED);
    seed(&mut p, 5, FAST, CPU_BOUND_SLOWED);
    assert_eq!(target(&mut p, 1, 5.0), Some(MID));
}

#[test]
fn a_process_with_good_ipc_and_little_wait_stays() {
    let mut p = policy("patel1", Params::default());
    let fine = Behaviour {
        ipc: 2.0,
        ..CPU_BOUND_SLOWED
    };
    seed(&mut p, 1, SLOW, fine);
    assert_eq!(target(&mut p, 1, 1.0), None);
    // A1: under the `and` reading, IPC alone does not make the index true.
    let mut p = policy("patel1", Params::default().with("perf_rule", "and"));
    seed(&mut p, 1, SLOW, CPU_BOUND_SLOWED);
    assert_eq!(target(&mut p, 1, 1.0), None);
}

#[test]
fn non_cpu_intensive_process_goes_down_on_a_loaded_machine_and_up_on_an_idle_one() {
    let waiting = Behaviour {
        cpu_frac: 0.3,
        util: 0.3,
        ..CPU_BOUND_SLOWED
    };
    let mut p = policy("patel1", Params::default());
    seed(&mut p, 1, FAST, waiting);
    assert_eq!(
        target(&mut p, 1, 12.0),
        Some(SLOW),
        "least b when load > CPUs"
    );
    let mut p = policy("patel1", Params::default());
    seed(&mut p, 1, SLOW, waiting);
    assert_eq!(
        target(&mut p, 1, 2.0),
        Some(FAST),
        "least a when load < CPUs"
    );
}

#[test]
fn algorithm_2_guards_moves_by_nice_value() {
    let mut p = policy("patel2", Params::default());
    seed(
        &mut p,
        1,
        SLOW,
        Behaviour {
            nice: 9,
            ..CPU_BOUND_SLOWED
        },
    );
    assert_eq!(target(&mut p, 1, 1.0), None, "nice 9 may not move up");
    seed(
        &mut p,
        1,
        SLOW,
        Behaviour {
            nice: 8,
            ..CPU_BOUND_SLOWED
        },
    );
    assert_eq!(target(&mut p, 1, 1.0), Some(FAST));
    // A high-priority non-CPU-intensive process leaves the fast set only
    // when the load exceeds twice the CPUs.
    let important = Behaviour {
        cpu_frac: 0.3,
        util: 0.3,
        nice: -5,
        ..CPU_BOUND_SLOWED
    };
    seed(&mut p, 2, FAST, important);
    assert_eq!(target(&mut p, 2, 12.0), None);
    assert_eq!(target(&mut p, 2, 17.0), Some(SLOW));
    // Up-moves of such processes need a light load unless nice ≤ −11.
    seed(
        &mut p,
        3,
        SLOW,
        Behaviour {
            nice: 0,
            ..important
        },
    );
    assert_eq!(target(&mut p, 3, 2.0), None, "load 2 is not below 0.15·8");
    assert_eq!(target(&mut p, 3, 1.0), Some(FAST));
    seed(
        &mut p,
        4,
        SLOW,
        Behaviour {
            nice: -12,
            ..important
        },
    );
    assert_eq!(target(&mut p, 4, 8.0), Some(FAST));
}

#[test]
fn algorithm_3_vetoes_up_moves_of_cache_missing_processes() {
    let mut p = policy("patel3", Params::default());
    seed(
        &mut p,
        1,
        SLOW,
        Behaviour {
            miss_ratio: 0.01,
            ..CPU_BOUND_SLOWED
        },
    );
    assert_eq!(target(&mut p, 1, 1.0), None);
    seed(&mut p, 2, SLOW, CPU_BOUND_SLOWED);
    assert_eq!(target(&mut p, 2, 1.0), Some(FAST), "0.001 ≤ 0.0014");
    assert_eq!(note(&p, "vetoed_by_cache_miss_index"), "1");
}

#[test]
fn algorithm_4_vetoes_up_moves_of_switching_processes() {
    let mut p = policy("patel4", Params::default());
    seed(
        &mut p,
        1,
        SLOW,
        Behaviour {
            switches_per_s: 100.0,
            ..CPU_BOUND_SLOWED
        },
    );
    assert_eq!(target(&mut p, 1, 1.0), None);
    seed(&mut p, 2, SLOW, CPU_BOUND_SLOWED);
    assert_eq!(target(&mut p, 2, 1.0), Some(FAST));
    // Down-moves are never vetoed.
    seed(
        &mut p,
        3,
        FAST,
        Behaviour {
            cpu_frac: 0.3,
            util: 0.3,
            switches_per_s: 100.0,
            ..CPU_BOUND_SLOWED
        },
    );
    assert_eq!(target(&mut p, 3, 12.0), Some(SLOW));
}

/// A9: the indices gate only step 8's up-moves (§8.2 step 8, Algorithm 3's
/// pseudocode). A process that switches and misses a lot still moves up
/// from the slow cpuset when it waits (step 9) or when the empty-queue
/// fill takes it (step 11), as under algorithm 2, and no veto is counted.
#[test]
fn the_indices_gate_only_the_periodic_up_moves() {
    for name in ["patel3", "patel4"] {
        let mut p = policy(name, Params::default());
        // Mostly waiting (fraction_wait 0.95), switching and missing a lot.
        let waiting = Behaviour {
            cpu_frac: 0.05,
            util: 0.05,
            switches_per_s: 100.0,
            miss_ratio: 0.01,
            ..CPU_BOUND_SLOWED
        };
        seed(&mut p, 1, SLOW, waiting);
        // Load between 0.15 and 1 × CPUs: neither 8(b) rule applies.
        assert_eq!(target(&mut p, 1, 4.0), Some(FAST), "{name}");

        let mut p = policy(name, Params::default());
        for n in 1..=6 {
            seed(
                &mut p,
                n,
                SLOW,
                Behaviour {
                    util: 0.5 + 0.05 * f64::from(n),
                    ipc: 2.0,
                    switches_per_s: 100.0,
                    miss_ratio: 0.01,
                    ..CPU_BOUND_SLOWED
                },
            );
        }
        let mut occ = p.occupancy();
        p.fill(&mut occ);
        assert_eq!(p.procs[&process_id(6)].set, FAST, "{name}");
        assert_eq!(p.procs[&process_id(5)].set, MID, "{name}");
        let vetoes = [
            note(&p, "vetoed_by_cache_miss_index"),
            note(&p, "vetoed_by_cs_mig_index"),
        ];
        assert_eq!(vetoes, ["0", "0"], "{name}");
    }
}

#[test]
fn empty_queue_fill_takes_the_most_cpu_intensive_waiting_process() {
    let mut p = policy("patel1", Params::default());
    // Six processes crowd the slow set (1.5 per CPU); the others are empty.
    for n in 1..=6 {
        let util = 0.5 + 0.05 * f64::from(n);
        seed(
            &mut p,
            n,
            SLOW,
            Behaviour {
                util,
                ipc: 2.0,
                ..CPU_BOUND_SLOWED
            },
        );
    }
    // Their windows close in one decision, as `decide` does before step 7:
    // the fill ranks by the closed windows, not the empty reopened ones.
    for n in 1..=6 {
        p.procs.get_mut(&process_id(n)).unwrap().close_window(1.0);
    }
    let mut occ = p.occupancy();
    p.fill(&mut occ);
    // The fastest set is filled first, by the most intensive (6, then 5).
    assert_eq!(p.procs[&process_id(6)].set, FAST);
    assert_eq!(p.procs[&process_id(5)].set, MID);
    assert_eq!(p.procs[&process_id(1)].set, SLOW);
    assert_eq!(note(&p, "empty_queue_fills"), "2");
}

/// A snapshot at `time_s` (0.5 s interval) of processes `(pid, cpu, nice)`,
/// each one busy thread.
fn snap(time_s: f64, procs: &[(u32, u32, i32)]) -> Snapshot {
    snapshot(opteron_6134(), time_s, 0.5)
        .utilisation(1.0)
        .tasks(procs.iter().map(|&(n, cpu, nice)| {
            snapshots::task(n)
                .name(format!("p{n}"))
                .cpu(cpu)
                .nice(nice)
                .instructions(2_000_000_000)
                .cycles(1_000_000_000)
                .on_cpu_ns(490_000_000)
                .runqueue_wait_ns(0)
        }))
        .build()
}

#[test]
fn new_processes_go_to_the_fastest_least_loaded_cpuset_and_plans_only_carry_changes() {
    let mut p = build("patel1", &Params::default()).unwrap();
    p.init(&opteron_6134()).unwrap();
    let plan = p.decide(&snap(0.5, &[(1, 0, 0)]));
    let set = |plan: &Plan, n: u32| plan.task_cpus.get(&task_id(n)).map(CpuSet::to_list);
    assert_eq!(set(&plan, 1).as_deref(), Some("6-7"));
    // A second: two threads per CPU of the fast set are still one per CPU.
    let plan = p.decide(&snap(1.0, &[(1, 6, 0), (2, 0, 0)]));
    assert_eq!(set(&plan, 1), None, "unchanged affinity is not re-sent");
    assert_eq!(set(&plan, 2).as_deref(), Some("6-7"));
    // A third also scores best on the fast set (a = 1.5/2.3 < 1/1.4), but
    // then the fast set queues and the empty 1.4 GHz set takes one (step 7).
    let plan = p.decide(&snap(1.5, &[(1, 6, 0), (2, 7, 0), (3, 0, 0)]));
    let mid: Vec<u32> = (1..=3)
        .filter(|&n| set(&plan, n).as_deref() == Some("4-5"))
        .collect();
    assert_eq!(mid.len(), 1, "{plan:?}");
    assert_eq!(note(p.as_ref(), "processes_placed"), "3");
    assert_eq!(note(p.as_ref(), "empty_queue_fills"), "1");
}

/// A statistic's value as text.
fn note(p: &dyn Policy, name: &str) -> String {
    p.stats()
        .get(name)
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// A hybrid part: CPUs 0-3 big cores, 4-7 small ones (capacity 600), each
/// core its own frequency domain with the same P-states.
fn hybrid() -> Topology {
    use ecosched_testkit::machines::{pstates_mhz, Dvfs, Scope, Synthetic};
    Synthetic::new(1, 1, 8)
        .llc(3, 36 * 1024)
        .capacity(4..8, 600)
        .dvfs(Dvfs {
            domain: Scope::Core,
            voltage: Scope::Package,
            pstates: pstates_mhz(&[800, 2000, 3000]),
            transition_latency_us: 100,
        })
        .build()
}

#[test]
fn on_a_hybrid_machine_the_cpusets_are_its_core_types_at_their_own_frequencies() {
    let (_, variant) = crate::find("patel1").unwrap();
    let params = variant.typed(&Params::default()).unwrap();
    let mut p = Patel::new("test", Algorithm::CpuScheduler, params).unwrap();
    let plan = p.init(&hybrid()).unwrap();
    let sets: Vec<(String, Option<u32>)> = p
        .sets()
        .iter()
        .map(|s| (s.cpus.to_list(), s.capacity))
        .collect();
    assert_eq!(
        sets,
        [
            ("4-7".to_string(), Some(600)),
            ("0-3".to_string(), Some(1024))
        ]
    );
    assert!(p.sets()[1].speed > p.sets()[0].speed);
    // Real cores differ without help: no frequency is pinned.
    assert!(plan.frequency.is_empty(), "{:?}", plan.frequency);
    // A slowed CPU-bound process on the small cores moves up to the big ones.
    seed(&mut p, 1, 0, CPU_BOUND_SLOWED);
    assert_eq!(target(&mut p, 1, 1.0), Some(1));
    // A partition given explicitly is still emulated with frequencies.
    let params = variant
        .typed(&Params::default().with("partition", "4@800,4@3000"))
        .unwrap();
    let mut p = Patel::new("test", Algorithm::CpuScheduler, params).unwrap();
    let plan = p.init(&hybrid()).unwrap();
    assert_eq!(plan.frequency.len(), 8);
    assert!(p.sets().iter().all(|s| s.capacity.is_none()));
}
