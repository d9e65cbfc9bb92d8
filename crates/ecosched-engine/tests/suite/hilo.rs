//! Richling et al.'s high/low sets in the simulator: `hilo` keeps a
//! `make -jN` build at performance's pace for less energy, and its green
//! set saves processor energy on memory-bound tasks. The table test prints
//! run time and energy for `make -j1` … `-j8` under performance, ondemand
//! and the two high/low variants (`cargo test --release -p ecosched-engine
//! hilo::make_j1_to_j8_table -- --nocapture` shows it). The paper's
//! figures are rows of `validation::richling`.

use ecosched_engine::experiment::{simulate, SimOptions};
use ecosched_model::RunMetrics;
use ecosched_policy::Params;
use ecosched_sim::Scenario;

fn run(n: u32, policy: &str, hint: Option<u32>) -> RunMetrics {
    let mut s = Scenario::load(&format!("richling-make-j{n}")).unwrap();
    s.spec.parallelism_hint = hint;
    simulate(
        &s,
        policy,
        &Params::default(),
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

/// §IV-C's green set, in the "machine stays on" view (processor energy):
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
    let plain = run(Params::default());
    let green = run(Params::default().with("green", true));
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
