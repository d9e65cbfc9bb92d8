//! `--trace out.perfetto.json` on `sim` and `run`: the run as Chrome
//! trace-event JSON, which ui.perfetto.dev (and chrome://tracing) opens.
//! Chosen by the file name; JSON lines stay the format for programs.
//!
//! ```text
//! process 1 "CPUs"       thread n+1 "CPU n": one slice per task stay
//! process 2 "machine"    counters "domain d MHz" and "<meter> W",
//!                        instant events "decision" (what the plan changed)
//! ```
//!
//! Streamed: a slice is written when its task leaves the CPU (or the run
//! ends), a counter only when its value changes, so the file grows with
//! what happened, and memory holds one open slice per CPU.

use ecosched_model::trace::TraceSink;
use ecosched_model::{FreqSetting, Meter, Plan, Step, TraceHeader};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{self, Write};

const CPU_PID: u32 = 1;
const MACHINE_PID: u32 = 2;

/// A task on a CPU since `start_us`.
struct Open {
    task: String,
    start_us: f64,
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
            self.event(&json!({
                "ph": "X", "pid": CPU_PID, "tid": cpu + 1, "name": o.task,
                "ts": round(o.start_us), "dur": round(end_us - o.start_us),
            }))?;
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
        // Task slices: a CPU's slice ends when another task (or none) is
        // seen on it.
        let mut on: BTreeMap<u32, &str> = BTreeMap::new();
        for t in s.live_managed() {
            if let Some(c) = t.cpu {
                on.entry(c.0).or_insert(t.name.as_str());
            }
        }
        let cpus: Vec<u32> = s.cpus.iter().map(|c| c.id.0).collect();
        for cpu in cpus {
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
                            start_us,
                        },
                    );
                }
            }
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

    fn end(&mut self) -> io::Result<()> {
        let cpus: Vec<u32> = self.open.keys().copied().collect();
        for cpu in cpus {
            self.close(cpu, self.last_us)?;
        }
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()
    }
}
