//! `ecosched calibrate av` run on the hand-written Xeon E5345 /
//! acpi-cpufreq tree (`tests/data/cpufreq-acpi-xeon-e5345`, copied to a
//! writable directory) behind a counter source that models that machine's
//! PMU. This VM has neither cpufreq nor hardware counters, so the
//! measurement path is tested here and the refusal both here and for real
//! (`crates/ecosched/tests/suite/live/counters.rs`).
//!
//! The model PMU counts what a Clovertown core would while the built-in
//! kernels run: it tells them apart by the kernel thread's name
//! (`/proc/self/task/<tid>/comm`) and reads the frequency the calibration
//! set from the tree's `scaling_setspeed`, so a calibration that did not
//! really hold each P-state, or mixed the kernels up, derives the wrong
//! vectors.

use crate::support::{copy_tree, data, snapshot};
use ecosched_linux::avcal::{calibrate, preflight, LiveAvError, LiveAvOptions};
use ecosched_linux::perf::{Event, FakePerf, GroupReading, PerfBackend, PerfGroup, PerfOpenError};
use ecosched_linux::FsRoot;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The recorded machine the calibration runs on.
const E5345: &str = "cpufreq-acpi-xeon-e5345";

const FMAX_KHZ: f64 = 2_333_000.0;
/// One stream thread alone: LLC misses per second at the highest P-state.
const STREAM_MISSES_PER_S: f64 = 2.0e8;
/// How a stream thread's miss rate falls with the clock: (f/fmax)^this.
const STREAM_CLOCK_EXPONENT: f64 = 0.3;
/// The front-side bus limit shared by concurrent streams, misses/s.
const BUS_MISSES_PER_S: f64 = 4.0e8;
/// Stream instructions per missed line (load, add, loop).
const STREAM_INSTRUCTIONS_PER_MISS: f64 = 3.0;
/// LLC loads per miss of the stream kernel.
const STREAM_REFS_PER_MISS: f64 = 1.05;
/// The compute kernel's IPC (capped at 1 in the vector).
const COMPUTE_IPC: f64 = 2.0;

fn journals(state: &Path) -> Vec<String> {
    std::fs::read_dir(state)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("journal-"))
                .collect()
        })
        .unwrap_or_default()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Stream,
    Compute,
    Other,
}

fn kind_of(tid: u32) -> Kind {
    let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).unwrap_or_default();
    match comm.trim() {
        "avcal-stream" => Kind::Stream,
        "avcal-compute" => Kind::Compute,
        _ => Kind::Other,
    }
}

#[derive(Default)]
struct ModelState {
    /// Stream hardware groups open now.
    streams_open: usize,
    /// Every (kernel, kHz) a hardware group was read at after counting.
    seen: Vec<(Kind, u64)>,
}

/// A Xeon E5345's PMU as the calibration kernels would drive it.
#[derive(Clone)]
struct ModelPmu {
    root: PathBuf,
    state: Arc<Mutex<ModelState>>,
}

struct ModelGroup {
    pmu: ModelPmu,
    kind: Kind,
    events: Vec<Event>,
    opened: Instant,
}

impl ModelPmu {
    fn freq_khz(&self) -> f64 {
        let rel = "sys/devices/system/cpu/cpu0/cpufreq/scaling_setspeed";
        std::fs::read_to_string(self.root.join(rel))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(FMAX_KHZ)
    }
}

impl PerfBackend for ModelPmu {
    fn open_group(&self, tid: u32, events: &[Event]) -> Result<Box<dyn PerfGroup>, PerfOpenError> {
        let kind = kind_of(tid);
        if kind == Kind::Stream && events.contains(&Event::Cycles) {
            self.state.lock().unwrap().streams_open += 1;
        }
        Ok(Box::new(ModelGroup {
            pmu: self.clone(),
            kind,
            events: events.to_vec(),
            opened: Instant::now(),
        }))
    }
}

impl PerfGroup for ModelGroup {
    fn read(&mut self) -> std::io::Result<GroupReading> {
        let t = self.opened.elapsed();
        let s = t.as_secs_f64();
        let khz = self.pmu.freq_khz();
        let cycles = khz * 1e3 * s;
        let mut state = self.pmu.state.lock().unwrap();
        let (instructions, refs, misses) = match self.kind {
            Kind::Stream => {
                let alone = STREAM_MISSES_PER_S * (khz / FMAX_KHZ).powf(STREAM_CLOCK_EXPONENT);
                let share = BUS_MISSES_PER_S / state.streams_open.max(1) as f64;
                let misses = alone.min(share) * s;
                (
                    misses * STREAM_INSTRUCTIONS_PER_MISS,
                    misses * STREAM_REFS_PER_MISS,
                    misses,
                )
            }
            Kind::Compute => (COMPUTE_IPC * cycles, 0.0, 0.0),
            Kind::Other => (0.0, 0.0, 0.0),
        };
        if self.events.contains(&Event::Cycles) && t > Duration::from_millis(5) {
            state.seen.push((self.kind, khz as u64));
        }
        let values = self
            .events
            .iter()
            .map(|e| match e {
                Event::Instructions => instructions,
                Event::Cycles => cycles,
                Event::LlcReferences => refs,
                Event::LlcMisses => misses,
                Event::TaskClock => t.as_nanos() as f64,
                _ => 0.0,
            } as u64)
            .collect();
        let ns = t.as_nanos() as u64;
        Ok(GroupReading {
            values,
            time_enabled_ns: ns,
            time_running_ns: ns,
        })
    }
}

impl Drop for ModelGroup {
    fn drop(&mut self) {
        if self.kind == Kind::Stream && self.events.contains(&Event::Cycles) {
            self.pmu.state.lock().unwrap().streams_open -= 1;
        }
    }
}

fn options(state: &Path) -> LiveAvOptions {
    LiveAvOptions {
        run: Duration::from_millis(150),
        stream_bytes: Some(1 << 20),
        state_dir: state.to_path_buf(),
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

#[test]
fn e5345_translation_vectors_are_derived_at_each_pstate_and_cpufreq_is_put_back() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&data(E5345), dir.path());
    let before = snapshot(dir.path());
    let state = tempfile::tempdir().unwrap();
    let pmu = ModelPmu {
        root: dir.path().to_path_buf(),
        state: Arc::default(),
    };
    let root = FsRoot::writable_fixture(dir.path());
    let run = calibrate(&root, &pmu, &options(state.path())).unwrap();

    // Both kernels were counted at both of the E5345's P-states, which
    // means the calibration really held each one.
    let seen = pmu.state.lock().unwrap().seen.clone();
    for kind in [Kind::Stream, Kind::Compute] {
        for khz in [2_000_000, 2_333_000] {
            assert!(seen.contains(&(kind, khz)), "{kind:?} at {khz}: {seen:?}");
        }
    }
    // Peak: eight streams share the bus.
    let a = &run.activity;
    assert!(close(a.peak_mem_per_s, BUS_MISSES_PER_S, 0.02), "{a:?}");
    let hi = a.translation_at(2_333_000).unwrap();
    assert_eq!((hi.bus, hi.cache, hi.core), (1.0, 1.0, 1.0));
    let lo = a.translation_at(2_000_000).unwrap();
    let f = 2_000_000.0 / FMAX_KHZ;
    // Bus: only the stream uses it; its miss rate falls as f^0.3.
    assert!(
        close(lo.bus, f.powf(-STREAM_CLOCK_EXPONENT), 0.01),
        "{lo:?}"
    );
    // Cache: LLC loads per cycle of the stream rise as the clock falls.
    let per_cycle = f.powf(1.0 - STREAM_CLOCK_EXPONENT);
    assert!(close(lo.cache, per_cycle, 0.01), "{lo:?}");
    // Core: the stream's IPC rises likewise; the compute kernel's is
    // capped at 1 at both P-states, so the factor is their mean.
    assert!(close(lo.core, (per_cycle + 1.0) / 2.0, 0.01), "{lo:?}");
    assert_eq!(run.measured.len(), 4, "{:?}", run.measured);
    assert!(run.machine.contains("E5345"), "{}", run.machine);

    // Every cpufreq file is as it was, and the journal is gone.
    let after = snapshot(dir.path());
    let changed: Vec<&String> = before
        .iter()
        .filter(|(k, v)| after.get(*k).map(|a| a.trim()) != Some(v.trim()))
        .map(|(k, _)| k)
        .collect();
    assert!(changed.is_empty(), "not put back: {changed:?}");
    assert!(journals(state.path()).is_empty());
}

#[test]
fn without_hardware_counters_it_refuses_naming_them_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&data(E5345), dir.path());
    let before = snapshot(dir.path());
    let state = tempfile::tempdir().unwrap();
    let root = FsRoot::writable_fixture(dir.path());
    let err = calibrate(
        &root,
        &FakePerf::new().without_pmu(),
        &options(state.path()),
    )
    .unwrap_err();
    assert!(matches!(err, LiveAvError::Refused { .. }), "{err}");
    let text = err.to_string();
    for name in [
        "instructions",
        "cycles",
        "LLC-loads",
        "LLC-load-misses",
        "no PMU",
    ] {
        assert!(text.contains(name), "{name}: {text}");
    }
    assert!(!text.contains("frequency control"), "{text}");
    assert_eq!(snapshot(dir.path()), before);
    assert!(journals(state.path()).is_empty());
}

#[test]
fn without_cpufreq_it_refuses_naming_frequency_control() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&data(E5345), dir.path());
    for cpu in 0..8 {
        let d = dir
            .path()
            .join(format!("sys/devices/system/cpu/cpu{cpu}/cpufreq"));
        std::fs::remove_dir_all(d).unwrap();
    }
    let root = FsRoot::writable_fixture(dir.path());
    let err = preflight(&root, &FakePerf::new()).unwrap_err().to_string();
    assert!(
        err.contains("frequency control") && err.contains("nothing was changed"),
        "{err}"
    );
    assert!(!err.contains("perf events"), "{err}");
}
