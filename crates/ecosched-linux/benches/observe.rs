//! Criterion bench of one observation (`TaskReader::read`) of N = 100 and
//! 1000 real sleeping threads of this process, with `/proc` and the perf
//! software counters — when none of them ran since the last read, and when
//! all of them did (woken between reads, outside the timing). Target: 1000
//! tasks once a second under 1 % of one core, i.e. one read under 10 ms of
//! CPU.

use criterion::{criterion_group, BatchSize, Criterion};
use ecosched_linux::bench::SleepingThreads;
use ecosched_linux::perf::SystemPerf;
use ecosched_linux::tasks::{HostFacts, TaskReader};
use ecosched_linux::FsRoot;
use std::hint::black_box;

fn observe(c: &mut Criterion) {
    let root = FsRoot::live();
    let Ok(host) = HostFacts::detect(&root) else {
        eprintln!("observe bench: not on Linux with /proc; skipped");
        return;
    };
    let mut group = c.benchmark_group("observe");
    group.sample_size(20);
    for n in [100usize, 1000] {
        let Ok(threads) = SleepingThreads::spawn(n) else {
            eprintln!("observe bench: cannot spawn {n} threads; skipped");
            continue;
        };
        let mut reader = TaskReader::new(root.clone(), Box::new(SystemPerf), host);
        let Ok(all) = reader.discover(std::process::id()) else {
            continue;
        };
        let ids: Vec<_> = all
            .into_iter()
            .filter(|id| threads.tids().contains(&id.pid))
            .collect();
        reader.read(&ids);
        group.bench_function(format!("read_{n}_idle_tasks"), |b| {
            b.iter(|| black_box(reader.read(black_box(&ids))))
        });
        group.bench_function(format!("read_{n}_tasks_that_ran"), |b| {
            b.iter_batched(
                || threads.wake_all(),
                |()| black_box(reader.read(black_box(&ids))),
                BatchSize::PerIteration,
            )
        });
        group.bench_function(format!("discover_{n}_threads"), |b| {
            b.iter(|| black_box(reader.discover(std::process::id())))
        });
    }
    group.finish();
}

criterion_group!(benches, observe);

/// Criterion's runs, then (under `cargo bench`, not in test mode) the
/// figures `ecosched bench observe --json` reports, CPU share included.
fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    if std::env::args().any(|a| a == "--bench") {
        for n in [100, 1000] {
            match ecosched_linux::bench::observe_cost(n, 10, std::time::Duration::from_secs(1)) {
                Ok(cost) => println!(
                    "observe_cost {}",
                    serde_json::to_string(&cost).unwrap_or_default()
                ),
                Err(e) => eprintln!("observe_cost({n}): {e}"),
            }
        }
    }
}
