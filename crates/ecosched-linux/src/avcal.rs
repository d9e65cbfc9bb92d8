//! `ecosched calibrate av` on this machine: activity-vector peaks and
//! translation vectors measured with built-in kernels at each P-state
//! (Merkel et al., EuroSys'10, §4.1; `docs/design/papers.md`, "Activity
//! vectors").
//!
//! ```text
//!  preflight: cpufreq policies? perf hardware events?
//!      │ something missing ──▶ refuse, naming it; nothing changed
//!      ▼
//!  journal ─▶ for each P-state f common to every cpufreq policy, ascending:
//!      │        every policy held at f (userspace governor, or min = max)
//!      │        stream kernel alone ─┐  one perf group per kernel thread:
//!      │        compute kernel alone ─┤  instructions, cycles, LLC loads,
//!      │        at f_max: stream on   │  LLC load misses; task-clock
//!      │        every CPU (bus peak) ─┘
//!      ▼
//!  undo the journal (always, also on error or SIGINT/SIGTERM)
//!      ▼
//!  ecosched_model::avcal::derive ─▶ the `activity` calibration
//! ```
//!
//! The derivation is the simulator calibration's (`ecosched-engine`), so
//! a live machine and its preset are calibrated by the same arithmetic.
//!
//! The kernels are real code, chosen to sit at the two ends the paper's
//! "representative benchmarks" span:
//! - *stream*: reads one word of every cache line of a buffer several
//!   times the last-level cache (at least [`MIN_STREAM_BYTES`]), so nearly
//!   every load misses the LLC and the memory bus is the bottleneck;
//!   concurrent instances share one buffer, each starting at its own
//!   offset, so the bus peak does not cost a buffer per CPU;
//! - *compute*: a register-resident integer recurrence (an LCG step and a
//!   rotate per iteration) that never touches memory.
//!
//! Each kernel thread is named `avcal-<kernel>` (visible in `top -H` and
//! in `/proc/<pid>/task/<tid>/comm`, which keeps 15 bytes). On the live machine it is pinned
//! to the CPU it measures; on a recorded tree (tests) the CPU numbers are
//! the recorded machine's, not this host's, so nothing is pinned.

use crate::cpufreq::CpufreqPolicy;
use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::journal::Journal;
use crate::perf::{scaled_delta, Event, GroupReading, PerfBackend, PerfGroup, PerfOpenError};
use crate::{affinity, platform, topology};
use ecosched_model::avcal::{self, AvCalibrationRun, BenchRun};
use ecosched_model::{Counters, CpuId, CpuSet, FreqDomainId, FreqSetting};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// The hardware events the vectors are made of, in group order.
pub const HARDWARE_EVENTS: [Event; 4] = [
    Event::Instructions,
    Event::Cycles,
    Event::LlcReferences,
    Event::LlcMisses,
];

/// The smallest stream buffer, whatever the LLC (a machine whose caches
/// sysfs does not describe still gets a buffer no L3 of today holds).
pub const MIN_STREAM_BYTES: usize = 64 << 20;
/// The largest stream buffer (memory stays bounded on huge-LLC machines).
pub const MAX_STREAM_BYTES: usize = 1 << 30;
/// How many times the LLC the stream buffer is.
pub const STREAM_LLC_MULTIPLE: u64 = 4;
/// Words per 64-byte cache line: the stream kernel's stride.
const LINE_WORDS: usize = 8;
/// Longest wait for a new frequency to take effect.
const MAX_SETTLE: Duration = Duration::from_millis(100);

/// A built-in calibration kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Memory-bound: one load per cache line over a buffer beyond the LLC.
    Stream,
    /// Core-bound: a register-only integer recurrence.
    Compute,
}

impl Kernel {
    /// Its name in the measurements.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Stream => "stream",
            Kernel::Compute => "compute",
        }
    }

    /// The name of the threads that run it (within the kernel's 15-byte
    /// `comm`).
    pub fn thread_name(self) -> String {
        format!("avcal-{}", self.name())
    }
}

/// How the live calibration runs.
#[derive(Debug, Clone)]
pub struct LiveAvOptions {
    /// How long each measurement counts.
    pub run: Duration,
    /// The stream buffer; `None`: [`stream_bytes`] of the machine.
    pub stream_bytes: Option<usize>,
    /// Where the restore journal is kept.
    pub state_dir: PathBuf,
}

/// Why the live calibration did not give a result.
#[derive(Debug, thiserror::Error)]
pub enum LiveAvError {
    /// A feature it needs is missing; nothing was changed.
    #[error("calibrate av: this machine lacks {}; nothing was changed", .missing.join(" and "))]
    Refused {
        /// What is missing, one phrase each.
        missing: Vec<String>,
    },
    /// Reading or changing the machine failed.
    #[error(transparent)]
    Linux(#[from] LinuxError),
    /// A counter could not be opened on a kernel thread.
    #[error(transparent)]
    Perf(#[from] PerfOpenError),
    /// A kernel thread failed.
    #[error("calibrate av: kernel thread: {0}")]
    Kernel(String),
    /// SIGINT or SIGTERM arrived; the machine was restored.
    #[error("calibrate av: interrupted; cpufreq settings were put back")]
    Interrupted,
    /// The measurements gave no calibration.
    #[error(transparent)]
    Derive(#[from] avcal::AvCalibrationError),
    /// Some cpufreq file could not be put back.
    #[error("calibrate av: could not put back {}: run `ecosched restore` (journal {journal})", .failed.join("; "))]
    NotRestored {
        /// What failed.
        failed: Vec<String>,
        /// The journal that still holds it.
        journal: String,
    },
}

/// What the preflight found: everything the measurement needs.
#[derive(Debug, Clone)]
pub struct Preflight {
    /// The machine's name (processor model and counts).
    pub machine_name: String,
    /// cpufreq policies, index-aligned with the frequency domains.
    pub policies: Vec<CpufreqPolicy>,
    /// P-states every policy can hold, ascending, kHz.
    pub freqs_khz: Vec<u64>,
    /// The CPUs this process may use.
    pub cpus: CpuSet,
    /// The stream buffer for this machine.
    pub stream_bytes: usize,
}

/// The stream buffer for a machine: [`STREAM_LLC_MULTIPLE`] × its largest
/// last-level cache, within [`MIN_STREAM_BYTES`]..=[`MAX_STREAM_BYTES`].
pub fn stream_bytes(t: &ecosched_model::Topology) -> usize {
    let llc_kib = t
        .last_level_caches()
        .iter()
        .map(|c| c.size_kib)
        .max()
        .unwrap_or(0);
    let bytes = llc_kib.saturating_mul(1024 * STREAM_LLC_MULTIPLE);
    usize::try_from(bytes)
        .unwrap_or(MAX_STREAM_BYTES)
        .clamp(MIN_STREAM_BYTES, MAX_STREAM_BYTES)
}

/// P-states every policy offers, ascending.
fn common_pstates(policies: &[CpufreqPolicy]) -> Vec<u64> {
    let mut iter = policies.iter();
    let Some(first) = iter.next() else {
        return Vec::new();
    };
    let mut common = first.pstates_khz();
    for p in iter {
        let theirs = p.pstates_khz();
        common.retain(|f| theirs.contains(f));
    }
    common.sort_unstable();
    common.dedup();
    common
}

/// Check, without changing anything, that this machine can be calibrated:
/// cpufreq with P-states common to every policy, and every event of
/// [`HARDWARE_EVENTS`] plus task-clock. The refusal names each missing
/// part and, for events, perf's reason.
pub fn preflight(root: &FsRoot, backend: &dyn PerfBackend) -> Result<Preflight, LiveAvError> {
    let found = topology::discover(root)?;
    let mut missing = Vec::new();
    let freqs_khz = common_pstates(&found.cpufreq);
    if found.cpufreq.is_empty() {
        missing.push(
            "frequency control (no cpufreq under sys/devices/system/cpu/cpufreq: translation vectors need a run at each P-state)"
                .to_string(),
        );
    } else if freqs_khz.is_empty() {
        missing.push("a P-state that every cpufreq policy can hold".to_string());
    }
    let probe = crate::perf::probe_events(backend);
    let absent: Vec<String> = HARDWARE_EVENTS
        .iter()
        .chain([Event::TaskClock].iter())
        .filter_map(|e| {
            probe
                .unavailable
                .iter()
                .find(|(u, _)| u == e)
                .map(|(_, why)| why.clone())
        })
        .collect();
    if !absent.is_empty() {
        missing.push(format!("the perf events {}", absent.join("; ")));
    }
    if !missing.is_empty() {
        return Err(LiveAvError::Refused { missing });
    }
    let cpus = found.topology.online_cpus().intersection(&found.allowed);
    Ok(Preflight {
        machine_name: found.machine_name.clone(),
        stream_bytes: stream_bytes(&found.topology),
        policies: found.cpufreq,
        freqs_khz,
        cpus,
    })
}

/// Measure and derive the calibration of the machine under `root`:
/// [`preflight`], then the kernels at every P-state with the cpufreq
/// changes journalled under `options.state_dir` and always undone.
pub fn calibrate(
    root: &FsRoot,
    backend: &dyn PerfBackend,
    options: &LiveAvOptions,
) -> Result<AvCalibrationRun, LiveAvError> {
    let pre = preflight(root, backend)?;
    let interrupted = Arc::new(AtomicBool::new(false));
    let mut ids = Vec::new();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // The first signal stops the measurement and restores; a second
        // one, while restoring hangs, terminates (the journal stays for
        // `ecosched restore`).
        for id in [
            signal_hook::flag::register_conditional_default(sig, Arc::clone(&interrupted)),
            signal_hook::flag::register(sig, Arc::clone(&interrupted)),
        ]
        .into_iter()
        .flatten()
        {
            ids.push(id);
        }
    }
    let result = Journal::create_tagged(&options.state_dir, root.clone(), Some("calibrate-av"))
        .map_err(LiveAvError::from)
        .and_then(|mut journal| {
            let measured = measure_all(&pre, &mut journal, backend, options, &interrupted);
            let undo = journal.undo();
            match measured {
                Ok(_) if !undo.failed.is_empty() => Err(LiveAvError::NotRestored {
                    failed: undo.failed,
                    journal: undo.journal.display().to_string(),
                }),
                other => other,
            }
        });
    for id in ids {
        signal_hook::low_level::unregister(id);
    }
    let (peak, runs) = result?;
    Ok(avcal::derive(
        &pre.machine_name,
        "this machine; built-in kernels under perf",
        &peak,
        &runs,
    )?)
}

/// The runs, with the machine held at each P-state in turn.
fn measure_all(
    pre: &Preflight,
    journal: &mut Journal,
    backend: &dyn PerfBackend,
    options: &LiveAvOptions,
    interrupted: &AtomicBool,
) -> Result<(Vec<Counters>, Vec<BenchRun>), LiveAvError> {
    // A writable fixture stands in for the live machine, but its CPU
    // numbers are the recorded machine's: pin only on this host's root.
    let pin = journal.root().dir() == std::path::Path::new("/");
    let cpus: Vec<Option<CpuId>> = pre.cpus.iter().map(|c| pin.then_some(c)).collect();
    let Some(&first) = cpus.first() else {
        return Err(LiveAvError::Refused {
            missing: vec!["an online CPU this process may use".into()],
        });
    };
    let stream = options.stream_bytes.unwrap_or(pre.stream_bytes);
    let settle = pre
        .policies
        .iter()
        .filter_map(|p| p.transition_latency_ns)
        .map(Duration::from_nanos)
        .max()
        .unwrap_or_default()
        .min(MAX_SETTLE);
    let fmax = pre.freqs_khz.last().copied().unwrap_or(0);
    let mut runs = Vec::new();
    let mut peak = Vec::new();
    for &f in &pre.freqs_khz {
        let setting: BTreeMap<FreqDomainId, FreqSetting> = (0..pre.policies.len())
            .map(|i| (FreqDomainId(i), FreqSetting::Fixed { freq_khz: f }))
            .collect();
        platform::apply_frequency(journal, &pre.policies, &setting)?;
        std::thread::sleep(settle);
        for kernel in [Kernel::Stream, Kernel::Compute] {
            let counters = run_kernel(backend, kernel, &[first], options.run, stream, interrupted)?;
            runs.extend(counters.into_iter().map(|counters| BenchRun {
                benchmark: kernel.name().to_string(),
                freq_khz: f,
                counters,
            }));
        }
        if f == fmax {
            peak = run_kernel(
                backend,
                Kernel::Stream,
                &cpus,
                options.run,
                stream,
                interrupted,
            )?;
        }
    }
    Ok((peak, runs))
}

/// The stream kernel: one load per cache line from `start`, wrapping,
/// until `stop`. Returns the sum so the loads cannot be optimised away.
fn stream(buf: &[u64], start: usize, stop: &AtomicBool) -> u64 {
    const CHUNK: usize = 1 << 17;
    let mut sum = 0u64;
    let mut i = start - start % LINE_WORDS;
    while !stop.load(Ordering::Relaxed) {
        let end = (i + CHUNK).min(buf.len());
        for w in buf[i..end].iter().step_by(LINE_WORDS) {
            sum = sum.wrapping_add(*w);
        }
        i = if end >= buf.len() { 0 } else { end };
        sum = std::hint::black_box(sum);
    }
    sum
}

/// The compute kernel: an LCG step and a rotate per iteration, in
/// registers, until `stop`.
fn compute(seed: u64, stop: &AtomicBool) -> u64 {
    let mut x = seed | 1;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..(1 << 16) {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407)
                .rotate_left(17);
        }
        x = std::hint::black_box(x);
    }
    x
}

/// Counted groups of one kernel thread, and their baselines.
struct Counted {
    hw: Box<dyn PerfGroup>,
    sw: Box<dyn PerfGroup>,
    hw0: GroupReading,
    sw0: GroupReading,
}

fn read(
    g: &mut Box<dyn PerfGroup>,
    tid: u32,
    events: &[Event],
) -> Result<GroupReading, LiveAvError> {
    g.read()
        .map_err(|e| PerfOpenError::new(tid, events, e).into())
}

/// Run `kernel` on one thread per entry of `cpus` (pinned where given) for
/// `run`, counting each thread; one [`Counters`] per thread.
pub fn run_kernel(
    backend: &dyn PerfBackend,
    kernel: Kernel,
    cpus: &[Option<CpuId>],
    run: Duration,
    stream_bytes: usize,
    interrupted: &AtomicBool,
) -> Result<Vec<Counters>, LiveAvError> {
    let words = (stream_bytes / 8).max(LINE_WORDS);
    // Non-zero so that every page is really written (and faulted in) now,
    // not during the measurement.
    let buf: Vec<u64> = if kernel == Kernel::Stream {
        vec![1; words]
    } else {
        Vec::new()
    };
    let go = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let n = cpus.len();
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<Result<u32, String>>();
        for (i, cpu) in cpus.iter().enumerate() {
            let (tx, buf, go, stop) = (tx.clone(), &buf, &go, &stop);
            let cpu = *cpu;
            let spawned = std::thread::Builder::new()
                .name(kernel.thread_name())
                .spawn_scoped(scope, move || {
                    let tid = u32::try_from(nix::unistd::gettid().as_raw()).unwrap_or(0);
                    if let Some(cpu) = cpu {
                        if let Err(e) = affinity::set(tid, &CpuSet::single(cpu)) {
                            let _ = tx.send(Err(format!("pinning to CPU {cpu}: {e}")));
                            return;
                        }
                    }
                    let _ = tx.send(Ok(tid));
                    while !go.load(Ordering::Acquire) {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    let out = match kernel {
                        Kernel::Stream => stream(buf, i * words / n.max(1), stop),
                        Kernel::Compute => compute(i as u64, stop),
                    };
                    std::hint::black_box(out);
                });
            if let Err(e) = spawned {
                stop.store(true, Ordering::Relaxed);
                return Err(LiveAvError::Kernel(format!("cannot start a thread: {e}")));
            }
        }
        drop(tx);
        let result = (|| {
            let mut tids = Vec::with_capacity(n);
            for _ in 0..n {
                match rx.recv() {
                    Ok(Ok(tid)) => tids.push(tid),
                    Ok(Err(e)) => return Err(LiveAvError::Kernel(e)),
                    Err(_) => {
                        return Err(LiveAvError::Kernel("a kernel thread ended early".into()))
                    }
                }
            }
            let sw_events = [Event::TaskClock];
            let mut groups = Vec::with_capacity(n);
            for &tid in &tids {
                let mut hw = backend.open_group(tid, &HARDWARE_EVENTS)?;
                let mut sw = backend.open_group(tid, &sw_events)?;
                let hw0 = read(&mut hw, tid, &HARDWARE_EVENTS)?;
                let sw0 = read(&mut sw, tid, &sw_events)?;
                groups.push(Counted { hw, sw, hw0, sw0 });
            }
            go.store(true, Ordering::Release);
            let end = Instant::now() + run;
            while let Some(left) = end.checked_duration_since(Instant::now()) {
                if interrupted.load(Ordering::Relaxed) {
                    return Err(LiveAvError::Interrupted);
                }
                std::thread::sleep(left.min(Duration::from_millis(50)));
            }
            let mut out = Vec::with_capacity(n);
            for (g, &tid) in groups.iter_mut().zip(&tids) {
                let hw1 = read(&mut g.hw, tid, &HARDWARE_EVENTS)?;
                let sw1 = read(&mut g.sw, tid, &sw_events)?;
                out.push(Counters {
                    instructions: scaled_delta(&g.hw0, &hw1, 0),
                    cycles: scaled_delta(&g.hw0, &hw1, 1),
                    llc_references: scaled_delta(&g.hw0, &hw1, 2),
                    llc_misses: scaled_delta(&g.hw0, &hw1, 3),
                    on_cpu_ns: scaled_delta(&g.sw0, &sw1, 0),
                    ..Counters::default()
                });
            }
            Ok(out)
        })();
        stop.store(true, Ordering::Relaxed);
        result
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::perf::FakePerf;

    #[test]
    fn the_stream_buffer_is_several_llcs_within_bounds() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/cpufreq-acpi-xeon-e5345");
        let mut t = topology::discover(&FsRoot::recorded(dir)).unwrap().topology;
        t.caches.clear();
        assert_eq!(stream_bytes(&t), MIN_STREAM_BYTES);
        t.caches.push(ecosched_model::topology::CacheDomain {
            level: 3,
            kind: ecosched_model::topology::CacheKind::Unified,
            size_kib: 32 * 1024,
            cpus: t.online_cpus(),
        });
        assert_eq!(stream_bytes(&t), 128 << 20);
        t.caches[0].size_kib = 1 << 30;
        assert_eq!(stream_bytes(&t), MAX_STREAM_BYTES);
    }

    #[test]
    fn kernels_do_work_and_stop_when_told() {
        let stop = AtomicBool::new(true);
        // Stopped before starting: no pass, nothing summed.
        assert_eq!(stream(&[1; 64], 0, &stop), 0);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let h = s.spawn(|| stream(&vec![1u64; 1 << 16], 100, &stop));
            let c = s.spawn(|| compute(3, &stop));
            std::thread::sleep(Duration::from_millis(20));
            stop.store(true, Ordering::Relaxed);
            // One word per cache line, every pass adds len / 8.
            assert!(h.join().unwrap() > 0);
            assert_ne!(c.join().unwrap(), 3);
        });
    }

    #[test]
    fn each_kernel_thread_is_counted_on_its_own() {
        let fake = FakePerf::new();
        let stop = AtomicBool::new(false);
        let out = run_kernel(
            &fake,
            Kernel::Compute,
            &[None, None],
            Duration::from_millis(10),
            0,
            &stop,
        )
        .unwrap();
        // The fake counts nothing, but every event is there: zero counted,
        // not unknown.
        assert_eq!(out.len(), 2);
        assert!(out
            .iter()
            .all(|c| c.instructions == Some(0) && c.on_cpu_ns == Some(0)));
    }

    #[test]
    fn an_interrupt_stops_the_measurement() {
        let stop = AtomicBool::new(true);
        let err = run_kernel(
            &FakePerf::new(),
            Kernel::Stream,
            &[None],
            Duration::from_secs(30),
            4096,
            &stop,
        )
        .unwrap_err();
        assert!(matches!(err, LiveAvError::Interrupted), "{err}");
    }
}
