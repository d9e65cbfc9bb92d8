//! Energy attribution against the simulator's per-task truth: the
//! activity model halves CPU-time share's error on `bench attribution`'s
//! mixed compute/memory scenarios (the hybrid one too, by its per-core-
//! type events) and divides the same energy; the fit weighs events where
//! they are counted and is on-CPU time alone without them.

use ecosched_engine::attribution_check::{bench_attribution, fit_machine, BENCH_SCENARIOS};
use ecosched_model::attribution::Feature;
use ecosched_model::CounterKind;
use ecosched_sim::Scenario;

#[test]
fn activity_attribution_has_at_most_half_the_error_of_cpu_time_share() {
    let b = bench_attribution(BENCH_SCENARIOS).unwrap();
    assert!(b.scenarios.iter().all(|s| s.tasks >= 4));
    assert!(b.cpu_share_mae > 0.02, "{}", b.cpu_share_mae);
    assert!(
        b.ratio <= 0.5,
        "activity {} vs CPU time {}: ratio {}",
        b.activity_mae,
        b.cpu_share_mae,
        b.ratio
    );
    // The hybrid machine's split by core type carries its share.
    let hybrid = b
        .scenarios
        .iter()
        .find(|s| s.scenario == "suite-i9-batch")
        .unwrap();
    assert!(
        hybrid.activity_mae <= 0.5 * hybrid.cpu_share_mae,
        "hybrid: activity {} vs CPU time {}",
        hybrid.activity_mae,
        hybrid.cpu_share_mae
    );
    let model = hybrid.report.attribution.as_ref().unwrap().model.as_ref();
    assert!(model
        .unwrap()
        .coefficients
        .iter()
        .any(|k| matches!(k.feature, Feature::OnCoreType { core_type: 1, .. })));
    for s in &b.scenarios {
        let notes = s.report.attribution.as_ref().unwrap();
        assert_eq!(notes.intervals_by_cpu_time, 0, "{}", s.scenario);
        let sum = |f: fn(&ecosched_model::TaskMetrics) -> Option<f64>| -> f64 {
            s.report.tasks.iter().filter_map(f).sum()
        };
        // Both methods divide the same energy; the truth is near it.
        let (cpu, act, truth) = (
            sum(|t| t.energy_cpu_share_j),
            sum(|t| t.energy_activity_j),
            sum(|t| t.energy_true_j),
        );
        assert!(
            (cpu - act).abs() < 1e-6 * cpu,
            "{}: {cpu} vs {act}",
            s.scenario
        );
        assert!(
            (act - truth).abs() < 0.1 * truth,
            "{}: {act} vs {truth}",
            s.scenario
        );
    }
}

#[test]
fn the_fit_weighs_events_where_counted_and_degrades_to_cpu_time() {
    let scenario = Scenario::load("merkel-2stream-2alu").unwrap();
    let fit = fit_machine(&scenario).unwrap();
    let full = fit.model(&CounterKind::ALL.into()).unwrap();
    assert!(full.weighs_activity(), "{full:?}");
    assert!(full.idle_w > 0.0);
    let bare = fit.model(&[CounterKind::OnCpuTime].into()).unwrap();
    assert!(!bare.weighs_activity(), "{bare:?}");
    assert_eq!(bare.missing.len(), 5);
}
