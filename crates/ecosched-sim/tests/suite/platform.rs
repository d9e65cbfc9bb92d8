//! `SimPlatform` driven directly, without the engine: the timed gang
//! schedule, governor settings re-sent by a policy, the load average, and
//! the simulator's own memory (exited tasks are pruned once reported).

use ecosched_model::{
    CpuId, CpuSet, FreqDomainId, FreqSetting, GangGroup, GangSchedule, GangSlot, Governor, Plan,
    Platform, Snapshot, TaskId, TaskState,
};
use ecosched_sim::{Scenario, SimPlatform};
use std::time::Duration;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn step(sim: &mut SimPlatform, d: Duration) -> Snapshot {
    sim.advance(d).unwrap();
    sim.observe().unwrap()
}

fn on_cpu_ms(s: &Snapshot, id: TaskId) -> f64 {
    let t = s.tasks.iter().find(|t| t.id == id).unwrap();
    t.counters.on_cpu_ns.unwrap() as f64 / 1e6
}

fn state(s: &Snapshot, id: TaskId) -> TaskState {
    s.tasks.iter().find(|t| t.id == id).unwrap().state
}

/// One `aluadd` task (`length_s` alone, from `start_s`) on `machine`
/// under `governor`, its initial plan applied.
fn one_task(machine: &str, governor: &str, length_s: f64, start_s: f64) -> SimPlatform {
    let text = format!(
        r#"
name = "one-task"
description = "one aluadd task"
machine = "{machine}"
governor = "{governor}"

[[tasks]]
profile = "aluadd"
length_s = {length_s}
start_s = {start_s}
"#
    );
    let scenario = Scenario::from_toml("one-task.toml", &text, None).unwrap();
    let mut sim = SimPlatform::new(&scenario, 1).unwrap();
    sim.apply(&Plan::unchanged()).unwrap();
    sim
}

/// Two CPU-bound tasks pinned to CPU 0, one gang group each, slots of
/// 30 ms for `a` and 10 ms for `b`.
fn gang_setup() -> (SimPlatform, TaskId, TaskId) {
    let scenario = Scenario::load("merkel-2-aluadd-shared").unwrap();
    let mut sim = SimPlatform::new(&scenario, 1).unwrap();
    sim.apply(&Plan::unchanged()).unwrap();
    let s = step(&mut sim, ms(10));
    let (a, b) = (s.tasks[0].id, s.tasks[1].id);
    let cpu0: CpuSet = [CpuId(0)].into_iter().collect();
    let mut plan = Plan::unchanged();
    plan.task_cpus.insert(a, cpu0.clone());
    plan.task_cpus.insert(b, cpu0);
    plan.gang_schedule = Some(GangSchedule {
        groups: vec![
            GangGroup {
                name: "a".into(),
                tasks: vec![a],
            },
            GangGroup {
                name: "b".into(),
                tasks: vec![b],
            },
        ],
        slots: vec![
            GangSlot {
                duration_us: 30_000,
                run: vec![0],
            },
            GangSlot {
                duration_us: 10_000,
                run: vec![1],
            },
        ],
    });
    sim.apply(&plan).unwrap();
    (sim, a, b)
}

#[test]
fn a_frozen_group_gets_no_cpu_and_shows_stopped() {
    let (mut sim, a, b) = gang_setup();
    // 20 ms into a's 30 ms slot: b is frozen and gets nothing.
    let s = step(&mut sim, ms(20));
    assert_eq!(on_cpu_ms(&s, b), 0.0);
    assert_eq!(state(&s, b), TaskState::Stopped);
    assert!(
        (on_cpu_ms(&s, a) - 20.0).abs() < 1e-6,
        "{}",
        on_cpu_ms(&s, a)
    );
    // Into b's slot (30–40 ms): a is frozen.
    let s = step(&mut sim, ms(15));
    assert_eq!(state(&s, a), TaskState::Stopped);
    assert_eq!(state(&s, b), TaskState::Running);
    assert!(
        (on_cpu_ms(&s, b) - 5.0).abs() < 1e-6,
        "{}",
        on_cpu_ms(&s, b)
    );
}

#[test]
fn gang_slots_share_the_cpu_in_proportion_and_end_thaws() {
    let (mut sim, a, b) = gang_setup();
    // 100 whole cycles of 40 ms.
    let s = step(&mut sim, ms(4000));
    let (ta, tb) = (on_cpu_ms(&s, a), on_cpu_ms(&s, b));
    assert!(
        (ta - 3000.0).abs() < 1.0 && (tb - 1000.0).abs() < 1.0,
        "{ta} {tb}"
    );
    let mut end = Plan::unchanged();
    end.gang_schedule = Some(GangSchedule::end());
    sim.apply(&end).unwrap();
    // Thawed, CFS shares CPU 0 evenly.
    let s = step(&mut sim, ms(1000));
    let (ta, tb) = (on_cpu_ms(&s, a), on_cpu_ms(&s, b));
    assert!(
        (ta - 500.0).abs() < 30.0 && (tb - 500.0).abs() < 30.0,
        "{ta} {tb}"
    );
    assert_ne!(state(&s, a), TaskState::Stopped);
    assert_ne!(state(&s, b), TaskState::Stopped);
}

/// A policy that sends `ondemand` every 100 ms must not restart the
/// governor's 200 ms sampling period each time: a busy CPU at the lowest
/// P-state reaches the highest at the first sample.
#[test]
fn resending_the_governor_keeps_its_sampling() {
    let scenario = Scenario::load("merkel-1-aluadd").unwrap();
    let mut sim = SimPlatform::new(&scenario, 1).unwrap();
    let domains = sim.topology().freq_domains.len();
    let max = sim.topology().freq_domains[0].max_khz();
    let min = sim.topology().freq_domains[0].min_khz();
    sim.apply(&Plan::all_domains(
        domains,
        FreqSetting::Governor(Governor::Powersave),
    ))
    .unwrap();
    let s = step(&mut sim, ms(10));
    assert_eq!(s.cpus[0].freq_khz, Some(min));
    let ondemand = Plan::all_domains(domains, FreqSetting::Governor(Governor::Ondemand));
    let mut freq = None;
    for _ in 0..10 {
        sim.apply(&ondemand).unwrap();
        freq = step(&mut sim, ms(100)).cpus[0].freq_khz;
    }
    assert_eq!(freq, Some(max));
}

/// Four busy tasks on four CPUs: no sample before 5.001 s, then the
/// first calc_load step by hand: (4·2048·164 + 2047) / 2048 = 656, printed
/// as 0.32.
#[test]
fn load_average_follows_calc_load() {
    let scenario = Scenario::load("merkel-4-aluadd").unwrap();
    let mut sim = SimPlatform::new(&scenario, 1).unwrap();
    sim.apply(&Plan::unchanged()).unwrap();
    let s = step(&mut sim, ms(5000));
    let l = s.load_avg.unwrap();
    assert_eq!((l.one, l.five, l.fifteen), (0.0, 0.0, 0.0));
    assert_eq!((l.runnable, l.total), (4, 4));
    let l = step(&mut sim, ms(2)).load_avg.unwrap();
    assert_eq!(l.one, 0.32);
    // EXP_5: (8192·34 + 2047) / 2048 = 136 → (146·100) >> 11 = 7 → 0.07.
    assert_eq!(l.five, 0.07);
    // EXP_15: (8192·11 + 2047) / 2048 = 44 → (54·100) >> 11 = 2 → 0.02.
    assert_eq!(l.fifteen, 0.02);
}

/// Many short tasks restarting over and over: the task table holds the
/// live tasks and the exits of one interval, never every task ever run.
#[test]
fn exited_tasks_are_pruned_once_reported() {
    let text = r#"
name = "churn"
description = "200 short tasks, each run 10 times"
machine = "q6600"
duration_s = 20

[[tasks]]
profile = "aluadd"
count = 200
length_s = 0.02
completions = 10
"#;
    let scenario = Scenario::from_toml("churn.toml", text, None).unwrap();
    let mut sim = SimPlatform::new(&scenario, 1).unwrap();
    sim.apply(&Plan::unchanged()).unwrap();
    let mut exits = 0;
    let mut most = 0;
    while !sim.finished() {
        let s = step(&mut sim, ms(100));
        exits += s
            .tasks
            .iter()
            .filter(|t| t.state == TaskState::Exited)
            .count();
        most = most.max(sim.task_slots());
    }
    assert_eq!(exits, 200 * 10);
    assert!(most <= 200 + 200, "{most} slots");
}

/// Leaving an idle state costs its exit latency (`docs/design/simulator.md`,
/// "Power and energy"): one short task arriving on an idle machine finishes
/// later by the exit latency of the state its CPU had reached, here made
/// 20 ms so that it stands out of the 1 ms observation steps.
#[test]
fn waking_an_idle_cpu_costs_the_exit_latency() {
    let text = r#"
name = "wake"
description = "one short task arriving on an idle machine"
machine = "q6600"

[[tasks]]
profile = "aluadd"
length_s = 0.1
start_s = 0.5
"#;
    let finish_s = |exit_us: u32| {
        let mut scenario = Scenario::from_toml("wake.toml", text, None).unwrap();
        let mut spec = scenario.machine.spec.clone();
        for s in &mut spec.power.idle_states {
            s.exit_latency_us = exit_us;
        }
        scenario.machine = std::sync::Arc::new(ecosched_sim::Machine::build(spec).unwrap());
        let mut sim = SimPlatform::new(&scenario, 1).unwrap();
        sim.apply(&Plan::unchanged()).unwrap();
        while !sim.finished() {
            step(&mut sim, ms(1));
        }
        sim.now_s()
    };
    let (free, slow) = (finish_s(0), finish_s(20_000));
    assert!((free - 0.6).abs() < 0.0015, "{free}");
    assert!((slow - free - 0.020).abs() < 0.0015, "{free} → {slow}");
}

/// ondemand's sample is deferrable work on a 200 ms grid (governor.rs): a
/// job that lands on an idle core at 1.05 s runs the overdue sample at
/// once, so the sample at 1.2 s sees 150 ms of 150 busy and raises the
/// core to 2.1 GHz. A timer that kept firing on an idle core would have
/// sampled at 1.0 s, and at 1.2 s seen 150 of 200 ms, under the 80 %
/// up-threshold: the core would stay at 1.05 GHz until 1.4 s.
#[test]
fn a_deferred_ondemand_sample_runs_when_the_core_wakes() {
    let mut sim = one_task("opteron-2352", "ondemand", 1.0, 1.05);
    let s = step(&mut sim, ms(1100));
    let task = s.tasks.iter().find(|t| t.managed).unwrap();
    let cpu = task.cpu.unwrap().0 as usize;
    let (min, max) = {
        let d = &sim.topology().freq_domains[0];
        (d.min_khz(), d.max_khz())
    };
    assert_eq!(s.cpus[cpu].freq_khz, Some(min));
    let s = step(&mut sim, ms(150));
    assert_eq!(s.cpus[cpu].freq_khz, Some(max), "at {} s", sim.now_s());
}

/// A run starts on an idle machine, where ondemand has settled at the
/// lowest P-state: a CPU no task wakes stays there for the whole run (its
/// deferrable sample never runs), while ondemand handed a machine mid-run
/// keeps the clock it finds until it samples.
#[test]
fn ondemand_starts_low_on_an_idle_machine_and_keeps_the_clock_it_takes_over() {
    let mut sim = one_task("opteron-2352", "ondemand", 5.0, 0.0);
    let (min, max) = {
        let d = &sim.topology().freq_domains[0];
        (d.min_khz(), d.max_khz())
    };
    let s = step(&mut sim, ms(1000));
    let busy = s.tasks.iter().find(|t| t.managed).unwrap().cpu.unwrap().0 as usize;
    assert_eq!(s.cpus[busy].freq_khz, Some(max));
    for (c, cpu) in s.cpus.iter().enumerate().filter(|&(c, _)| c != busy) {
        assert_eq!(cpu.freq_khz, Some(min), "idle CPU {c}");
    }
    let domains = sim.topology().freq_domains.len();
    sim.apply(&Plan::all_domains(
        domains,
        FreqSetting::Governor(Governor::Performance),
    ))
    .unwrap();
    step(&mut sim, ms(10));
    sim.apply(&Plan::all_domains(
        domains,
        FreqSetting::Governor(Governor::Ondemand),
    ))
    .unwrap();
    let s = step(&mut sim, ms(1));
    assert!(s.cpus.iter().all(|c| c.freq_khz == Some(max)));
}

/// On a shared clock domain the sample is deferrable work on the policy's
/// first CPU (2.6's `dbs_timer_init` queues it on `policy->cpu`): the
/// Q6600's one domain, handed from powersave to ondemand with a task busy
/// on CPU 1, stays at its lowest P-state while CPU 0 idles, although a
/// sample over CPU 1's load would raise it; when the task moves to CPU 0,
/// the overdue sample runs there at once, sees CPU 1 busy throughout, and
/// raises the domain.
#[test]
fn a_shared_domain_samples_only_when_its_policy_cpu_runs() {
    let mut sim = one_task("q6600", "powersave", 5.0, 0.0);
    let s = step(&mut sim, ms(1));
    let id = s.tasks.iter().find(|t| t.managed).unwrap().id;
    let domain = sim.topology().freq_domains[0].clone();
    assert_eq!(domain.cpus.len(), 4, "the Q6600 has one clock domain");
    let (min, max) = (domain.min_khz(), domain.max_khz());
    let pin = |sim: &mut SimPlatform, cpu: u32, governor: bool| {
        let mut plan = Plan::unchanged();
        plan.task_cpus
            .insert(id, [CpuId(cpu)].into_iter().collect::<CpuSet>());
        if governor {
            plan.frequency
                .insert(FreqDomainId(0), FreqSetting::Governor(Governor::Ondemand));
        }
        sim.apply(&plan).unwrap();
    };
    pin(&mut sim, 1, true);
    let s = step(&mut sim, ms(700));
    assert_eq!(state(&s, id), TaskState::Running);
    assert_eq!(s.cpus[1].freq_khz, Some(min), "CPU 0 idle: no sample yet");
    pin(&mut sim, 0, false);
    let s = step(&mut sim, ms(2));
    assert_eq!(s.cpus[0].freq_khz, Some(max), "at {} s", sim.now_s());
}

/// One task of `profile` alone on the Q6600 (performance governor, no
/// idle exit latency, so that nothing but the cache tells CPUs apart),
/// pinned to CPU `from` for 300 ms, then to CPU `to`. Returns the steady
/// instructions per ms before the move and, per ms after it, the
/// instructions and LLC misses.
fn move_once(profile: &str, from: u32, to: u32) -> (f64, Vec<(f64, f64)>) {
    use ecosched_model::CounterKind as K;
    let text = format!(
        r#"
name = "move"
description = "one task moved between two CPUs"
machine = "q6600"
governor = "performance"

[[tasks]]
profile = "{profile}"
length_s = 10
"#
    );
    let mut scenario = Scenario::from_toml("move.toml", &text, None).unwrap();
    let mut spec = scenario.machine.spec.clone();
    for s in &mut spec.power.idle_states {
        s.exit_latency_us = 0;
    }
    scenario.machine = std::sync::Arc::new(ecosched_sim::Machine::build(spec).unwrap());
    let mut sim = SimPlatform::new(&scenario, 1).unwrap();
    let counters = [K::Instructions, K::LlcMisses, K::LlcReferences].into();
    sim.observe_as(ecosched_sim::Observe::Full, &counters);
    sim.apply(&Plan::unchanged()).unwrap();
    let id = step(&mut sim, ms(1)).tasks[0].id;
    let pin = |sim: &mut SimPlatform, cpu: u32| {
        let mut plan = Plan::unchanged();
        plan.task_cpus
            .insert(id, [CpuId(cpu)].into_iter().collect());
        sim.apply(&plan).unwrap();
    };
    pin(&mut sim, from);
    step(&mut sim, ms(290));
    let s = step(&mut sim, ms(10));
    assert_eq!(s.tasks[0].cpu, Some(CpuId(from)));
    let steady = s.tasks[0].counters.instructions.unwrap() as f64 / 10.0;
    pin(&mut sim, to);
    let after = (0..300)
        .map(|_| {
            let s = step(&mut sim, ms(1));
            assert_eq!(s.tasks[0].cpu, Some(CpuId(to)));
            let c = &s.tasks[0].counters;
            (c.instructions.unwrap() as f64, c.llc_misses.unwrap() as f64)
        })
        .collect();
    (steady, after)
}

/// CPUs of the Q6600 behind the same L2 as CPU 0, and behind the other.
fn q6600_l2_pairs() -> (u32, u32) {
    let m = Scenario::load("merkel-1-aluadd").unwrap().machine;
    let same = (1..m.cpus()).find(|&c| m.llc_of[c] == m.llc_of[0]).unwrap();
    let other = (1..m.cpus()).find(|&c| m.llc_of[c] != m.llc_of[0]).unwrap();
    (same as u32, other as u32)
}

/// A task moved to a CPU behind another L2 finds none of its lines there
/// (`docs/design/simulator.md`, "Cache warm-up"): it misses more and runs
/// slower until it has brought its working set back in, then runs exactly as
/// before. stream-fit1 sweeps 3.5 MiB, all of which it holds alone in a 4 MiB
/// L2.
#[test]
fn a_task_moved_across_caches_runs_cold_then_recovers() {
    let (_, other) = q6600_l2_pairs();
    let (steady, after) = move_once("stream-fit1", 0, other);
    let (first, first_misses) = after[0];
    assert!(first < 0.9 * steady, "first ms {first} vs steady {steady}");
    // It brings its 3,500 KiB working set back in: 56,000 lines, less
    // those it would have brought in warm over the same instructions.
    let per_instr = after[299].1 / after[299].0;
    let (instr, misses) = after.iter().fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    let extra = misses - per_instr * instr;
    assert!(
        (50_000.0..56_000.0).contains(&extra),
        "extra misses {extra}"
    );
    assert!(
        first_misses > 10.0 * after[299].1,
        "{first_misses} vs {}",
        after[299].1
    );
    // Recovered: the last 100 ms run at the steady rate.
    for (i, &(instr, _)) in after.iter().enumerate().skip(200) {
        assert!(
            (instr / steady - 1.0).abs() < 1e-6,
            "ms {i}: {instr} vs {steady}"
        );
    }
    // And the slow part is a warm-up, not a new steady state: it ends.
    let slow = after.iter().filter(|a| a.0 < steady * (1.0 - 1e-6)).count();
    assert!((1..100).contains(&slow), "{slow} slow ms");
}

/// Moved between two CPUs that share its L2, a task keeps its lines and
/// pays nothing.
#[test]
fn a_task_moved_within_its_cache_pays_nothing() {
    let (same, _) = q6600_l2_pairs();
    let (steady, after) = move_once("stream-fit1", 0, same);
    for (i, &(instr, _)) in after.iter().enumerate() {
        assert!(
            (instr / steady - 1.0).abs() < 1e-6,
            "ms {i}: {instr} vs {steady}"
        );
    }
}

/// A streaming task (α = 0) misses as much in a cold cache as in a warm
/// one: moving it across caches costs it nothing.
#[test]
fn a_streaming_task_pays_nothing_for_a_cold_cache() {
    let (_, other) = q6600_l2_pairs();
    let (steady, after) = move_once("stream", 0, other);
    for (i, &(instr, _)) in after.iter().enumerate() {
        assert!(
            (instr / steady - 1.0).abs() < 1e-3,
            "ms {i}: {instr} vs {steady}"
        );
    }
}
