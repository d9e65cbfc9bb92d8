//! Richling et al.'s high/low sets in the simulator: `hilo` keeps a
//! `make -jN` build at performance's pace for less energy, and its green
//! set saves processor energy on memory-bound tasks. The table test prints
//! run time and energy for `make -j1` … `-j8` under performance, ondemand
//! and the two high/low variants (`cargo test --release -p ecosched-engine
//! hilo::make_j1_to_j8_table -- --nocapture` shows it). The paper's
//! figures are rows of `validation::richling`; those runs own the machine
//! as the paper's system does (`own_machine=true`). By default hilo leaves
//! the cores outside H to their governor, and a program it does not manage
//! keeps its speed there.

use ecosched_engine::experiment::{simulate, SimOptions};
use ecosched_engine::validate::richling::paper_params;
use ecosched_model::RunMetrics;
use ecosched_policy::Params;
use ecosched_sim::Scenario;

fn run(n: u32, policy: &str, hint: Option<u32>) -> RunMetrics {
    let mut s = Scenario::load(&format!("richling-make-j{n}")).unwrap();
    s.spec.parallelism_hint = hint;
    simulate(
        &s,
        policy,
        &paper_params(policy),
        &SimOptions::default(),
        &mut |_| {},
    )
    .unwrap()
    .metrics
}

/// N = 1 … 8 on the dual Opteron, with the parallelism measured by `hilo`
/// itself and with `-jN` declared.
#[test]
fn make_j1_to_j8_table() {
    const POLICIES: [&str; 4] = ["performance", "ondemand", "hilo", "hilo-nospare"];
    for hinted in [false, true] {
        println!(
            "\nparallelism {}: run time s / energy kJ (× performance)",
            if hinted {
                "declared (hint = N)"
            } else {
                "measured every 20 ms"
            }
        );
        println!(
            "{:>3}  {:>26}  {:>26}  {:>26}  {:>26}",
            "N", POLICIES[0], POLICIES[1], POLICIES[2], POLICIES[3]
        );
        for n in 1..=8u32 {
            let hint = hinted.then_some(n);
            let runs: Vec<RunMetrics> = POLICIES.iter().map(|p| run(n, p, hint)).collect();
            let perf_t = runs[0].makespan_s;
            let cells: Vec<String> = runs
                .iter()
                .map(|m| {
                    format!(
                        "{:6.1} / {:5.2} ({:5.3})",
                        m.makespan_s,
                        m.energy_j.unwrap() / 1000.0,
                        m.makespan_s / perf_t
                    )
                })
                .collect();
            println!("{n:>3}  {}", cells.join("  "));
            let od = runs[1].makespan_s / perf_t;
            let hilo = runs[2].makespan_s / perf_t;
            if n < 8 {
                assert!(od > 1.08, "-j{n}: ondemand only {od:.3}× performance");
            }
            assert!(hilo < 1.05, "-j{n}: hilo {hilo:.3}× performance");
            assert!(
                runs[2].energy_j.unwrap() < runs[0].energy_j.unwrap() * 1.005,
                "-j{n}: hilo uses more energy than performance"
            );
        }
    }
}

/// §IV-C's green set (in the paper's system, which owns the machine), in
/// the "machine stays on" view (processor energy):
/// memory-bound tasks at the lowest frequency cost the processor less and
/// lose little time, and the compute-bound ones keep the high set.
#[test]
fn green_set_saves_processor_energy_on_memory_bound_tasks() {
    let text = r#"
name = "green-mix"
description = "2 stream + 2 aluadd on the dual Opteron, processor meter"
machine = "opteron-2352"
meter = "package"
seed = 1
[[tasks]]
profile = "stream"
count = 2
length_s = 20
[[tasks]]
profile = "aluadd"
count = 2
length_s = 20
"#;
    let s = Scenario::from_toml("green-mix", text, None).unwrap();
    let run = |params: Params| {
        simulate(&s, "hilo", &params, &SimOptions::default(), &mut |_| {})
            .unwrap()
            .metrics
    };
    let owner = Params::default().with("own_machine", true);
    let plain = run(owner.clone());
    let green = run(owner.with("green", true));
    let t = |m: &RunMetrics, name: &str| m.task(name).unwrap().runtime_s;
    let energy = green.energy_j.unwrap() / plain.energy_j.unwrap();
    let stream = t(&green, "stream#0") / t(&plain, "stream#0");
    let alu = t(&green, "aluadd#0") / t(&plain, "aluadd#0");
    println!("green vs plain hilo: processor energy {energy:.3}, stream time {stream:.3}, aluadd time {alu:.3}");
    assert!(energy < 0.98, "processor energy ratio {energy:.3}");
    assert!(
        (1.0..1.15).contains(&stream),
        "stream time ratio {stream:.3}"
    );
    assert!((alu - 1.0).abs() < 0.01, "aluadd time ratio {alu:.3}");
}

/// Instructions the unmanaged program `name` retired in the 30 s of
/// `hilo-unmanaged`: its speed. The runs are observed in full so that the
/// test sees the unmanaged program; hilo reads only managed tasks either
/// way.
fn unmanaged_instructions(policy: &str, params: &Params, name: &str) -> u64 {
    let s = Scenario::load("hilo-unmanaged").unwrap();
    let options = SimOptions::observing(ecosched_sim::Observe::Full);
    let (_, trace) =
        ecosched_engine::experiment::simulate_traced(&s, policy, params, &options).unwrap();
    trace
        .steps
        .iter()
        .flat_map(|step| &step.snapshot.tasks)
        .filter(|t| t.name == name && !t.managed)
        .filter_map(|t| t.counters.instructions)
        .sum()
}

/// A CPU-bound program ecosched does not manage runs beside a managed
/// `make -j1` and ends up on a core outside the high set. Left under the
/// machine's governor (the default) it runs as fast as with no policy at
/// all; held at the lowest P-state (`own_machine=true`, the paper's
/// system) it loses about a third of its speed (1.2 of 2.4 GHz, less
/// the memory stalls that do not scale).
#[test]
fn an_unmanaged_program_keeps_its_speed_unless_hilo_owns_the_machine() {
    let name = "backup-gzip";
    let alone = unmanaged_instructions("ondemand", &Params::default(), name) as f64;
    let left = unmanaged_instructions("hilo", &Params::default(), name) as f64;
    let owned =
        unmanaged_instructions("hilo", &Params::default().with("own_machine", true), name) as f64;
    assert!(alone > 0.0);
    assert!(
        (left / alone - 1.0).abs() <= 0.02,
        "left to its governor: {:.3}× the instructions",
        left / alone
    );
    assert!(
        owned / alone < 0.8,
        "held low: {:.3}× the instructions",
        owned / alone
    );
}
