//! The exact schedule of a managed command for a trace: every stretch one
//! of its threads ran on a CPU, from the kernel's own context-switch
//! records rather than from what `/proc` shows at each interval's end.
//!
//! One perf event per CPU (`PERF_COUNT_SW_DUMMY`, a software event that
//! counts nothing) on the command's first process, with `context_switch`
//! (a `PERF_RECORD_SWITCH` as a thread of it goes on or off that CPU),
//! `comm` (its name at each `exec`), `task` (its exits) and `inherit`
//! (every process and thread it starts, as `perf record -p` follows them).
//! Each record carries its thread, CPU and `CLOCK_MONOTONIC` time
//! (`sample_id_all` with `PERF_SAMPLE_TID | TIME | CPU`). Software events
//! need no PMU, so this works on a VM; the `sched:sched_switch`
//! tracepoint would need tracefs mounted, which ecosched does not do.
//!
//! Bounded: each CPU's ring buffer is [`RING_BYTES`] (the kernel counts
//! what does not fit as lost, reported as dropped), names are kept for at
//! most [`MAX_NAMES`] live threads, and at most
//! [`MAX_SLICES_PER_S`](ecosched_model::schedule::MAX_SLICES_PER_S)
//! slices a second are kept. A thread started before recording began (in
//! the microseconds between the command's start and the events' opening)
//! is not followed.

use ecosched_model::schedule::{RunSlice, SliceBudget};
use perf_event::events::Software;
use perf_event::{Builder, Clock, SampleFlag, Sampler};
use std::collections::HashMap;
use std::io;
use std::time::Duration;

/// Each CPU's ring buffer: 256 KiB holds 8,192 switch records (32 bytes
/// each), more than a CPU makes between two control-loop steps.
pub const RING_BYTES: usize = 256 * 1024;

/// Threads whose names are kept at once; beyond it, names are forgotten
/// (a forgotten one is read again from `/proc`).
pub const MAX_NAMES: usize = 4096;

// perf_event.h record types and flags.
const RECORD_LOST: u32 = 2;
const RECORD_COMM: u32 = 3;
const RECORD_EXIT: u32 = 4;
const RECORD_SWITCH: u32 = 14;
const MISC_SWITCH_OUT: u16 = 1 << 13;
/// `sample_id` with TID, TIME and CPU: pid, tid, time, cpu, reserved.
const SAMPLE_ID_BYTES: usize = 24;

/// A thread on a CPU since `start_ns`.
#[derive(Debug, Clone)]
struct OnCpu {
    pid: u32,
    tid: u32,
    name: String,
    start_ns: u64,
}

/// What one record says, in time order across CPUs.
#[derive(Debug)]
enum Happened {
    In { pid: u32, tid: u32 },
    Out { tid: u32 },
    Comm { pid: u32, tid: u32, name: String },
    Exit { tid: u32 },
    Lost(u64),
}

/// A record with where and when it happened.
#[derive(Debug)]
struct Event {
    time_ns: u64,
    cpu: u32,
    what: Happened,
}

/// Records the command's context switches (see the module's doc).
pub struct SwitchRecorder {
    samplers: Vec<Sampler>,
    /// Per CPU number, the thread on it.
    open: HashMap<u32, OnCpu>,
    names: HashMap<u32, (u32, String)>,
    /// `CLOCK_MONOTONIC` at the run's start, ns.
    origin_ns: u64,
    /// When recording began, ns (a thread seen leaving a CPU it was not
    /// seen arriving on ran since then at least).
    began_ns: u64,
    budget: SliceBudget,
    lost: u64,
    events: Vec<Event>,
}

impl std::fmt::Debug for SwitchRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwitchRecorder")
            .field("cpus", &self.samplers.len())
            .finish_non_exhaustive()
    }
}

/// `CLOCK_MONOTONIC` now, ns.
fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// One record's body (after its header) as an event, if it is one of the
/// kinds asked for.
fn parse(ty: u32, misc: u16, body: &[u8]) -> Option<Event> {
    let id = body.len().checked_sub(SAMPLE_ID_BYTES)?;
    let (pid, tid) = (u32_at(body, id)?, u32_at(body, id + 4)?);
    let time_ns = u64_at(body, id + 8)?;
    let cpu = u32_at(body, id + 16)?;
    let what = match ty {
        RECORD_SWITCH if misc & MISC_SWITCH_OUT != 0 => Happened::Out { tid },
        RECORD_SWITCH => Happened::In { pid, tid },
        RECORD_COMM => {
            let (pid, tid) = (u32_at(body, 0)?, u32_at(body, 4)?);
            let raw = body.get(8..id)?;
            let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            let name = String::from_utf8_lossy(&raw[..end]).into_owned();
            Happened::Comm { pid, tid, name }
        }
        RECORD_EXIT => Happened::Exit {
            tid: u32_at(body, 8)?,
        },
        RECORD_LOST => Happened::Lost(u64_at(body, 8)?),
        _ => return None,
    };
    Some(Event { time_ns, cpu, what })
}

impl SwitchRecorder {
    /// Follow process `pid` and everything it starts on `cpus`; the run
    /// started `since_start` ago.
    pub fn open(pid: u32, cpus: &[u32], since_start: Duration) -> io::Result<SwitchRecorder> {
        let now = monotonic_ns();
        let origin_ns = now.saturating_sub(since_start.as_nanos() as u64);
        let mut samplers = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let sampler = Builder::new(Software::DUMMY)
                .observe_pid(pid as i32)
                .one_cpu(cpu as usize)
                .inherit(true)
                .context_switch(true)
                .comm(true)
                .task(true)
                .sample_id_all(true)
                .sample(SampleFlag::TID | SampleFlag::TIME | SampleFlag::CPU)
                .clockid(Clock::MONOTONIC)
                .include_kernel()
                .enabled(true)
                .build()?
                .sampled(RING_BYTES)?;
            samplers.push(sampler);
        }
        Ok(SwitchRecorder {
            samplers,
            open: HashMap::new(),
            names: HashMap::new(),
            origin_ns,
            began_ns: now,
            budget: SliceBudget::default(),
            lost: 0,
            events: Vec::new(),
        })
    }

    /// Seconds since the run's start.
    fn secs(&self, ns: u64) -> f64 {
        ns.saturating_sub(self.origin_ns) as f64 / 1e9
    }

    /// The name of thread `tid`: as recorded, else from `/proc`.
    fn name_of(&mut self, pid: u32, tid: u32) -> String {
        if let Some((_, n)) = self.names.get(&tid) {
            return n.clone();
        }
        let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
            .map_or_else(|_| "?".to_string(), |c| c.trim_end().to_string());
        self.remember(pid, tid, comm.clone());
        comm
    }

    fn remember(&mut self, pid: u32, tid: u32, name: String) {
        if self.names.len() >= MAX_NAMES && !self.names.contains_key(&tid) {
            self.names.clear();
        }
        self.names.insert(tid, (pid, name));
    }

    /// The CPU thread `tid` is on, if any.
    fn cpu_of(&self, tid: u32) -> Option<u32> {
        self.open
            .iter()
            .find(|(_, o)| o.tid == tid)
            .map(|(&c, _)| c)
    }

    /// Close CPU `cpu`'s stretch at `end_ns` into `out`.
    fn close(&mut self, cpu: u32, end_ns: u64, out: &mut Vec<RunSlice>) {
        if let Some(o) = self.open.remove(&cpu) {
            self.emit(cpu, o, end_ns, out);
        }
    }

    fn emit(&mut self, cpu: u32, o: OnCpu, end_ns: u64, out: &mut Vec<RunSlice>) {
        let (start_s, end_s) = (self.secs(o.start_ns), self.secs(end_ns));
        if end_ns > o.start_ns && self.budget.admit(start_s) {
            out.push(RunSlice {
                cpu,
                pid: o.pid,
                tid: o.tid,
                name: format!("{}:{}", o.name, o.tid),
                start_s,
                end_s,
            });
        }
    }

    /// Move the stretches since the last call into `out`, those still
    /// going on cut now; returns how many were dropped or lost.
    pub fn drain(&mut self, out: &mut Vec<RunSlice>) -> u64 {
        let mut events = std::mem::take(&mut self.events);
        for sampler in &mut self.samplers {
            while let Some(record) = sampler.next_record() {
                if let Some(e) = parse(record.ty(), record.misc(), &record.to_contiguous()) {
                    events.push(e);
                }
            }
        }
        let now = monotonic_ns();
        // Each CPU's ring is in time order; a name set on one CPU is
        // needed by the switches on another.
        events.sort_by_key(|e| e.time_ns);
        for e in events.drain(..) {
            self.apply(e, out);
        }
        self.events = events;
        let cpus: Vec<u32> = self.open.keys().copied().collect();
        for cpu in cpus {
            if let Some(o) = self.open.get_mut(&cpu) {
                let cut = OnCpu {
                    start_ns: o.start_ns,
                    ..o.clone()
                };
                o.start_ns = now.max(o.start_ns);
                self.emit(cpu, cut, now, out);
            }
        }
        self.budget.take_dropped() + std::mem::take(&mut self.lost)
    }

    fn apply(&mut self, e: Event, out: &mut Vec<RunSlice>) {
        match e.what {
            Happened::In { pid, tid } => {
                self.close(e.cpu, e.time_ns, out);
                let name = self.name_of(pid, tid);
                self.open.insert(
                    e.cpu,
                    OnCpu {
                        pid,
                        tid,
                        name,
                        start_ns: e.time_ns,
                    },
                );
            }
            Happened::Out { tid } => match self.open.get(&e.cpu) {
                Some(o) if o.tid == tid => self.close(e.cpu, e.time_ns, out),
                Some(_) => {}
                None => {
                    // Running when recording began.
                    let pid = self.names.get(&tid).map_or(tid, |(p, _)| *p);
                    let name = self.name_of(pid, tid);
                    let o = OnCpu {
                        pid,
                        tid,
                        name,
                        start_ns: self.began_ns,
                    };
                    self.emit(e.cpu, o, e.time_ns, out);
                }
            },
            Happened::Comm { pid, tid, name } => {
                // An exec while on a CPU: the stretch goes on under the
                // new name.
                if let Some(cpu) = self.cpu_of(tid) {
                    if let Some(o) = self.open.get(&cpu).cloned() {
                        self.close(cpu, e.time_ns, out);
                        self.open.insert(
                            cpu,
                            OnCpu {
                                name: name.clone(),
                                start_ns: e.time_ns,
                                ..o
                            },
                        );
                    }
                }
                self.remember(pid, tid, name);
            }
            Happened::Exit { tid } => {
                // An exiting thread's events go before its last switch
                // out: its exit ends its stretch.
                let on = self.cpu_of(tid);
                if let Some(cpu) = on {
                    self.close(cpu, e.time_ns, out);
                }
                self.names.remove(&tid);
            }
            Happened::Lost(n) => self.lost += n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(prefix: &[u8], pid: u32, tid: u32, time: u64, cpu: u32) -> Vec<u8> {
        let mut b = prefix.to_vec();
        b.extend_from_slice(&pid.to_ne_bytes());
        b.extend_from_slice(&tid.to_ne_bytes());
        b.extend_from_slice(&time.to_ne_bytes());
        b.extend_from_slice(&cpu.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b
    }

    #[test]
    fn switch_and_comm_records_parse() {
        let e = parse(RECORD_SWITCH, MISC_SWITCH_OUT, &body(&[], 7, 8, 99, 1)).unwrap();
        assert!(matches!(e.what, Happened::Out { tid: 8 }));
        assert_eq!((e.time_ns, e.cpu), (99, 1));
        let e = parse(RECORD_SWITCH, 0, &body(&[], 7, 8, 5, 0)).unwrap();
        assert!(matches!(e.what, Happened::In { pid: 7, tid: 8 }));
        let mut prefix = Vec::new();
        prefix.extend_from_slice(&7u32.to_ne_bytes());
        prefix.extend_from_slice(&8u32.to_ne_bytes());
        prefix.extend_from_slice(b"cc1\0\0\0\0\0");
        let e = parse(RECORD_COMM, 0, &body(&prefix, 7, 8, 5, 0)).unwrap();
        match e.what {
            Happened::Comm { name, tid, .. } => assert_eq!((name.as_str(), tid), ("cc1", 8)),
            other => panic!("{other:?}"),
        }
        assert!(parse(RECORD_SWITCH, 0, &[0; 8]).is_none(), "too short");
    }
}
