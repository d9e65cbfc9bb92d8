//! `--trace FILE --trace-format perfetto` on `sim` and `run`: the run as
//! Chrome trace-event JSON, which ui.perfetto.dev (and chrome://tracing)
//! opens. JSON lines stay the format for programs (`trace_file.rs`).
//!
//! ```text
//! process 1 "CPUs"       thread n+1 "CPU n": a slice for every stretch a
//!                        task ran there (args: pid, tid)
//! process 2 "machine"    counters "domain d MHz" and "<meter> W",
//!                        instant events "decision" (what the plan changed),
//!                        "schedule" (how the slices were recorded) and
//!                        "schedule dropped" (slices over the cap)
//! ```
//!
//! The slices come from the exact schedule where the platform records one
//! (the simulator's kernel model; perf's context-switch records on Linux,
//! see `ecosched_model::schedule`): two compilers of `make -j2` show as two
//! overlapping slices on two CPUs. Where it records none, each control
//! interval's end shows which task each CPU last ran, and a slice lasts
//! while that stays the same; the "schedule" event says which.
//!
//! Streamed: a slice is written when its task leaves the CPU (or the run
//! ends), a counter only when its value changes, so the file grows with
//! what happened, and memory holds one open slice per CPU.

use ecosched_model::schedule::{RunSlice, MAX_SLICES_PER_S};
use ecosched_model::trace::TraceSink;
use ecosched_model::{FreqSetting, Meter, Plan, Step, TraceHeader};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{self, Write};

const CPU_PID: u32 = 1;
const MACHINE_PID: u32 = 2;

/// A task on a CPU since `start_us` (until `end_us` so far, in the exact
/// schedule).
struct Open {
    task: String,
    /// Process and thread, in the exact schedule.
    ids: Option<(u32, u32)>,
    start_us: f64,
    end_us: f64,
}

/// What the slices come from.
enum Slices {
    /// The step's snapshots (no sink has asked for more yet, or the
    /// platform records no schedule).
    Sampled,
    /// The platform's exact schedule, recorded as `source` says.
    Exact { source: String, dropped: u64 },
}

/// Writes Chrome trace-event JSON.
pub struct PerfettoSink<W: Write> {
    out: W,
    first: bool,
    meter: Meter,
    /// CPU number → its frequency domain.
    domain_of: BTreeMap<u32, usize>,
    open: BTreeMap<u32, Open>,
    last_mhz: BTreeMap<usize, u64>,
    last_w: Option<f64>,
    last_us: f64,
    slices: Slices,
}

impl<W: Write> PerfettoSink<W> {
    /// Write to `out` (wrap a file in a `BufWriter`).
    pub fn new(out: W) -> Self {
        PerfettoSink {
            out,
            first: true,
            meter: Meter::System,
            domain_of: BTreeMap::new(),
            open: BTreeMap::new(),
            last_mhz: BTreeMap::new(),
            last_w: None,
            last_us: 0.0,
            slices: Slices::Sampled,
        }
    }

    fn event(&mut self, v: &Value) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut self.out, v).map_err(io::Error::other)
    }

    fn close(&mut self, cpu: u32, end_us: f64) -> io::Result<()> {
        if let Some(o) = self.open.remove(&cpu) {
            let mut slice = json!({
                "ph": "X", "pid": CPU_PID, "tid": cpu + 1, "name": o.task,
                "ts": o.start_us, "dur": round(end_us - o.start_us),
            });
            if let Some((pid, tid)) = o.ids {
                slice["args"] = json!({"pid": pid, "tid": tid});
            }
            self.event(&slice)?;
        }
        Ok(())
    }

    /// One stretch of the exact schedule: it extends the CPU's open slice
    /// when the same task goes on running (the platform cuts a stretch at
    /// each step), else it closes that slice and opens its own.
    fn exact_slice(&mut self, s: &RunSlice) -> io::Result<()> {
        let (start_us, end_us) = (round(s.start_s * 1e6), round(s.end_s * 1e6));
        if let Some(o) = self.open.get_mut(&s.cpu) {
            if o.ids == Some((s.pid, s.tid))
                && o.task == s.name
                && (o.end_us - start_us).abs() < 1e-3
            {
                o.end_us = end_us;
                return Ok(());
            }
            let end = o.end_us;
            self.close(s.cpu, end)?;
        }
        self.open.insert(
            s.cpu,
            Open {
                task: s.name.clone(),
                ids: Some((s.pid, s.tid)),
                start_us,
                end_us,
            },
        );
        Ok(())
    }

    /// The sampled slices of a step: a CPU's slice ends when another task
    /// (or none) is seen on it at an interval's end.
    fn sampled_slices(&mut self, step: &Step, start_us: f64) -> io::Result<()> {
        let s = &step.snapshot;
        let mut on: BTreeMap<u32, &str> = BTreeMap::new();
        for t in s.live_managed() {
            if let Some(c) = t.cpu {
                on.entry(c.0).or_insert(t.name.as_str());
            }
        }
        for c in &s.cpus {
            let cpu = c.id.0;
            let now = on.get(&cpu).copied();
            let same = match (self.open.get(&cpu), now) {
                (Some(o), Some(n)) => o.task == n,
                (None, None) => true,
                _ => false,
            };
            if !same {
                self.close(cpu, start_us)?;
                if let Some(n) = now {
                    self.open.insert(
                        cpu,
                        Open {
                            task: n.to_string(),
                            ids: None,
                            start_us,
                            end_us: start_us,
                        },
                    );
                }
            }
        }
        Ok(())
    }
}

/// Microseconds to a whole number of nanoseconds, so that output is
/// identical across platforms (golden files).
fn round(us: f64) -> f64 {
    (us * 1000.0).round() / 1000.0
}

/// What a plan changes, in words (the decision's note).
fn describe(plan: &Plan, names: &BTreeMap<u32, &str>) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(c) = &plan.managed_cpus {
        notes.push(format!("managed tasks on CPUs {c}"));
    }
    for (id, set) in &plan.task_cpus {
        let name = names.get(&id.pid).copied().unwrap_or("?");
        notes.push(format!("{name} (pid {}) on CPUs {set}", id.pid));
    }
    for (d, f) in &plan.frequency {
        notes.push(match f {
            FreqSetting::Fixed { freq_khz } => {
                format!("domain {} at {} MHz", d.index(), freq_khz / 1000)
            }
            FreqSetting::Governor(g) => format!("domain {} governor {g}", d.index()),
            FreqSetting::AsFound => format!("domain {} as found", d.index()),
            FreqSetting::Hwp { epp, .. } => format!("domain {} hardware-chosen, {epp}", d.index()),
        });
    }
    for (id, a) in &plan.gang {
        notes.push(format!("pid {} {a:?}", id.pid));
    }
    if let Some(g) = &plan.gang_schedule {
        notes.push(format!(
            "gang schedule: {} groups, {} slots",
            g.groups.len(),
            g.slots.len()
        ));
    }
    notes
}

impl<W: Write> TraceSink for PerfettoSink<W> {
    fn begin(&mut self, header: &TraceHeader, initial_plan: &Plan) -> io::Result<()> {
        self.meter = header.meter;
        self.out
            .write_all(b"{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n")?;
        let title = format!(
            "{} on {} ({})",
            header.policy, header.machine, header.workload
        );
        self.event(&json!({"ph": "M", "pid": CPU_PID, "name": "process_name", "args": {"name": format!("CPUs: {title}")}}))?;
        self.event(&json!({"ph": "M", "pid": MACHINE_PID, "name": "process_name", "args": {"name": "machine"}}))?;
        for cpu in &header.topology.cpus {
            let n = cpu.id.0;
            if let Some(d) = cpu.freq_domain {
                self.domain_of.insert(n, d.index());
            }
            self.event(&json!({"ph": "M", "pid": CPU_PID, "tid": n + 1, "name": "thread_name", "args": {"name": format!("CPU {n}")}}))?;
            self.event(&json!({"ph": "M", "pid": CPU_PID, "tid": n + 1, "name": "thread_sort_index", "args": {"sort_index": n}}))?;
        }
        let source = match &self.slices {
            Slices::Exact { source, .. } => format!(
                "a slice per stretch a task ran on a CPU, from {source}; at most {MAX_SLICES_PER_S} slices a second are kept, the rest counted in \"schedule dropped\""
            ),
            Slices::Sampled => "which task each CPU ran at each control interval's end: this platform records no context switches".to_string(),
        };
        self.event(&json!({"ph": "i", "s": "g", "pid": MACHINE_PID, "tid": 0, "ts": 0.0, "name": "schedule", "args": {"source": source}}))?;
        let notes = describe(initial_plan, &BTreeMap::new());
        if !notes.is_empty() {
            self.event(&json!({"ph": "i", "s": "p", "pid": MACHINE_PID, "tid": 0, "ts": 0.0, "name": "initial plan", "args": {"notes": notes}}))?;
        }
        Ok(())
    }

    fn step(&mut self, step: &Step) -> io::Result<()> {
        let s = &step.snapshot;
        let now_us = round(s.time_s * 1e6);
        let start_us = round((s.time_s - s.interval_s) * 1e6);
        self.last_us = now_us;
        if let Slices::Sampled = self.slices {
            self.sampled_slices(step, start_us)?;
        }
        // Counters: each domain's MHz (its first CPU's), and power.
        let mut mhz: BTreeMap<usize, u64> = BTreeMap::new();
        for c in &s.cpus {
            if let (Some(&d), Some(khz)) = (self.domain_of.get(&c.id.0), c.freq_khz) {
                mhz.entry(d).or_insert(khz / 1000);
            }
        }
        for (d, m) in mhz {
            if self.last_mhz.get(&d) != Some(&m) {
                self.last_mhz.insert(d, m);
                self.event(&json!({"ph": "C", "pid": MACHINE_PID, "name": format!("domain {d} MHz"), "ts": start_us, "args": {"MHz": m}}))?;
            }
        }
        if let Some(e) = s.power.energy_j(self.meter).filter(|_| s.interval_s > 0.0) {
            let w = (e / s.interval_s * 100.0).round() / 100.0;
            if self.last_w != Some(w) {
                self.last_w = Some(w);
                let name = match self.meter {
                    Meter::Package => "package W",
                    Meter::System => "system W",
                };
                self.event(&json!({"ph": "C", "pid": MACHINE_PID, "name": name, "ts": start_us, "args": {"W": w}}))?;
            }
        }
        let names: BTreeMap<u32, &str> = s
            .tasks
            .iter()
            .map(|t| (t.id.pid, t.name.as_str()))
            .collect();
        let notes = describe(&step.plan, &names);
        if !notes.is_empty() {
            self.event(&json!({"ph": "i", "s": "p", "pid": MACHINE_PID, "tid": 0, "ts": now_us, "name": "decision", "args": {"notes": notes}}))?;
        }
        Ok(())
    }

    fn wants_schedule(&self) -> bool {
        true
    }

    fn schedule_source(&mut self, source: Option<&str>) {
        if let Some(source) = source {
            self.slices = Slices::Exact {
                source: source.to_string(),
                dropped: 0,
            };
        }
    }

    fn schedule(&mut self, slices: &[RunSlice], dropped: u64) -> io::Result<()> {
        if let Slices::Exact { dropped: d, .. } = &mut self.slices {
            *d += dropped;
        }
        for s in slices {
            self.exact_slice(s)?;
        }
        Ok(())
    }

    fn end(&mut self) -> io::Result<()> {
        let open: Vec<(u32, f64)> = self.open.iter().map(|(&c, o)| (c, o.end_us)).collect();
        for (cpu, end_us) in open {
            let end = match self.slices {
                Slices::Sampled => self.last_us,
                Slices::Exact { .. } => end_us,
            };
            self.close(cpu, end)?;
        }
        if let Slices::Exact { dropped, .. } = self.slices {
            if dropped > 0 {
                let last_us = self.last_us;
                self.event(&json!({"ph": "i", "s": "g", "pid": MACHINE_PID, "tid": 0, "ts": last_us, "name": "schedule dropped", "args": {"slices": dropped, "cap_per_s": MAX_SLICES_PER_S}}))?;
            }
        }
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()
    }
}
