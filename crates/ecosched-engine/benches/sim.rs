//! Simulator speed on `bench-8c24t` (8 cores, 24 tasks, 1 ms tick): the
//! figure to watch is simulated seconds per wall second, which
//! `ecosched bench sim` prints directly; criterion tracks the wall time of
//! one simulated hour.

#![allow(clippy::unwrap_used, missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use ecosched_engine::bench::bench_sim as run_bench;

fn bench_sim(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim");
    group.sample_size(10);
    group.bench_function("bench-8c24t one simulated hour", |b| {
        b.iter(|| run_bench(ecosched_engine::bench::BENCH_SCENARIO).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench_sim);
criterion_main!(benches);
