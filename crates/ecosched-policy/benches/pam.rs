//! PAM's decision time: one Algorithm 2 call (search plus Algorithm 1 on
//! every candidate) on a seeded synthetic machine of 8, 16, 64 and 256
//! CPUs in two-CPU caches, every CPU busy (the budget: ≤ 1 ms at 8 CPUs
//! exhaustive, ≤ 20 ms at 256). `ecosched bench pam --cpus N` times the
//! same instance.

#![allow(clippy::unwrap_used, missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ecosched_policy::pam::{bench_decide, bench_instance, BENCH_SEED};

fn decision(c: &mut Criterion) {
    let mut group = c.benchmark_group("pam decision");
    for cpus in [8usize, 16, 64, 256] {
        let (layout, slots, current) = bench_instance(cpus, BENCH_SEED);
        let config = ecosched_policy::pam::PamConfig::default().search;
        let kind = bench_decide(&layout, &slots, &current, &config).kind;
        group.bench_with_input(BenchmarkId::new(kind.name(), cpus), &cpus, |b, _| {
            b.iter(|| bench_decide(&layout, &slots, &current, &config))
        });
    }
    group.finish();
}

criterion_group!(benches, decision);
criterion_main!(benches);
