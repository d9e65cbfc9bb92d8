//! A fixed-duration scenario must never show less energy for less work:
//! half the machine, and a fixed low clock (the README's example), as a
//! new user would run them, read as losses per unit of work.

use ecosched_engine::compare::compare;
use ecosched_engine::experiment::SimOptions;
use ecosched_engine::normalise::Normalisation;
use ecosched_model::CounterKind;
use ecosched_policy::Params;
use ecosched_sim::Scenario;

fn options() -> SimOptions {
    SimOptions {
        extra_counters: [CounterKind::Instructions].into(),
        ..SimOptions::default()
    }
}

fn params(pairs: &[(&str, &str)]) -> Params {
    pairs
        .iter()
        .fold(Params::default(), |p, (k, v)| p.with(k, v))
}

#[test]
fn half_the_machine_is_no_energy_gain() {
    let scenario = Scenario::load("pam-libq-xalancbmk").unwrap();
    let policies = vec![
        ("performance".to_string(), Params::default()),
        ("static".to_string(), params(&[("cpus", "0-3")])),
    ];
    let r = compare(
        &scenario,
        &policies,
        "performance",
        &options(),
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(r.normalisation, Normalisation::PerGigaInstruction);
    // The raw energy ratio reads as a "saving"...
    assert!(r.ratios["static"].energy.unwrap() < 0.9);
    // ...but per unit of work it is a loss, with less throughput.
    let w = &r.work_ratios["static"];
    assert!(w.throughput.unwrap() < 0.6, "{w:?}");
    assert!(w.energy_per_unit.unwrap() > 1.3, "{w:?}");
    assert!(w.edp_per_unit.unwrap() > 2.0, "{w:?}");
}

#[test]
fn readme_fixed_example_is_no_energy_gain() {
    let scenario = Scenario::load("merkel-2hmmer-2soplex").unwrap();
    let policies = vec![
        ("performance".to_string(), Params::default()),
        ("fixed".to_string(), params(&[("freq_mhz", "1600")])),
    ];
    let r = compare(
        &scenario,
        &policies,
        "performance",
        &options(),
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(r.normalisation, Normalisation::PerGigaInstruction);
    let w = &r.work_ratios["fixed"];
    assert!(w.energy_per_unit.unwrap() > 1.0, "{w:?}");
    assert!(w.throughput.unwrap() < 1.0, "{w:?}");
}

#[test]
fn finished_work_compares_totals() {
    let scenario = Scenario::load("merkel-4hmmer").unwrap();
    let policies = vec![
        ("performance".to_string(), Params::default()),
        ("fixed".to_string(), params(&[("freq_mhz", "1600")])),
    ];
    let r = compare(
        &scenario,
        &policies,
        "performance",
        &options(),
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(r.normalisation, Normalisation::Total);
    assert!(r.results.iter().all(|x| x.unfinished_tasks == 0));
}
