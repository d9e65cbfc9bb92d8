//! Snapshots built task by task for policy tests, so that a test states
//! only what it cares about (a task's CPU, its counters, the interval)
//! and every other field has one default, set here.
//!
//! ```
//! use ecosched_testkit::{machines, snapshots};
//!
//! let snap = snapshots::snapshot(machines::xeon_e5430(), 0.1, 0.1)
//!     .utilisation(1.0)
//!     .task(snapshots::task(7).cpu(2).instructions(1_000).cycles(2_000))
//!     .build();
//! assert_eq!(snap.cpus.len(), 4);
//! assert_eq!(snap.tasks[0].counters.cpi(), Some(2.0));
//! assert_eq!(snap.tasks[0].allowed.to_list(), "0-3");
//! ```

use ecosched_model::{
    Counters, CpuId, CpuSample, CpuSet, PowerSample, ProcessId, Snapshot, TaskId, TaskSample,
    TaskState, Topology,
};
use std::sync::Arc;

/// The id [`task`] gives task `pid`: start time 0.
pub fn task_id(pid: u32) -> TaskId {
    TaskId {
        pid,
        start_ticks: 0,
    }
}

/// The process [`task`] puts task `pid` in: it leads its own.
pub fn process_id(pid: u32) -> ProcessId {
    task_id(pid).as_process()
}

/// A task to build: see [`task`].
#[derive(Debug, Clone, PartialEq)]
pub struct TaskBuilder {
    sample: TaskSample,
    allowed: Option<CpuSet>,
}

/// Task `pid`, named `t<pid>`, managed, running, on no CPU yet, nice 0,
/// started at 0 s, no counter measured; it may run on every CPU of the
/// machine it is built for.
pub fn task(pid: u32) -> TaskBuilder {
    TaskBuilder {
        sample: TaskSample {
            id: task_id(pid),
            process: process_id(pid),
            name: format!("t{pid}"),
            managed: true,
            state: TaskState::Running,
            cpu: None,
            allowed: CpuSet::new(),
            nice: 0,
            started_s: 0.0,
            finished_s: None,
            counters: Counters::default(),
        },
        allowed: None,
    }
}

impl TaskBuilder {
    /// Its name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.sample.name = name.into();
        self
    }

    /// Its state.
    pub fn state(mut self, state: TaskState) -> Self {
        self.sample.state = state;
        self
    }

    /// The CPU it last ran on.
    pub fn cpu(mut self, cpu: u32) -> Self {
        self.sample.cpu = Some(CpuId(cpu));
        self
    }

    /// The CPUs it may run on, instead of the whole machine.
    pub fn allowed(mut self, cpus: CpuSet) -> Self {
        self.allowed = Some(cpus);
        self
    }

    /// Its nice value.
    pub fn nice(mut self, nice: i32) -> Self {
        self.sample.nice = nice;
        self
    }

    /// When it started, seconds since the run began.
    pub fn started(mut self, s: f64) -> Self {
        self.sample.started_s = s;
        self
    }

    /// Every counter at once.
    pub fn counters(mut self, counters: Counters) -> Self {
        self.sample.counters = counters;
        self
    }

    /// Instructions retired over the interval.
    pub fn instructions(mut self, n: u64) -> Self {
        self.sample.counters.instructions = Some(n);
        self
    }

    /// Core cycles over the interval.
    pub fn cycles(mut self, n: u64) -> Self {
        self.sample.counters.cycles = Some(n);
        self
    }

    /// Shared-cache references over the interval.
    pub fn llc_references(mut self, n: u64) -> Self {
        self.sample.counters.llc_references = Some(n);
        self
    }

    /// Shared-cache misses over the interval.
    pub fn llc_misses(mut self, n: u64) -> Self {
        self.sample.counters.llc_misses = Some(n);
        self
    }

    /// Nanoseconds on a CPU over the interval.
    pub fn on_cpu_ns(mut self, ns: u64) -> Self {
        self.sample.counters.on_cpu_ns = Some(ns);
        self
    }

    /// Nanoseconds runnable but waiting for a CPU over the interval.
    pub fn runqueue_wait_ns(mut self, ns: u64) -> Self {
        self.sample.counters.runqueue_wait_ns = Some(ns);
        self
    }

    /// The sample, on `machine`.
    pub fn build(self, machine: &Topology) -> TaskSample {
        TaskSample {
            allowed: self.allowed.unwrap_or_else(|| machine.all_cpus()),
            ..self.sample
        }
    }
}

/// A snapshot to build: see [`snapshot`].
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotBuilder {
    snapshot: Snapshot,
    tasks: Vec<TaskBuilder>,
}

/// A snapshot of `machine` at `time_s` covering the last `interval_s`:
/// no tasks, every CPU idle at an unknown frequency and run-queue length,
/// no energy, load or parallelism hint.
pub fn snapshot(
    machine: impl Into<Arc<Topology>>,
    time_s: f64,
    interval_s: f64,
) -> SnapshotBuilder {
    let topology: Arc<Topology> = machine.into();
    let cpus = topology
        .cpus
        .iter()
        .map(|c| CpuSample {
            id: c.id,
            freq_khz: None,
            utilisation: 0.0,
            nr_running: None,
        })
        .collect();
    SnapshotBuilder {
        snapshot: Snapshot {
            time_s,
            interval_s,
            topology,
            tasks: Vec::new(),
            cpus,
            power: PowerSample::default(),
            load_avg: None,
            parallelism_hint: None,
        },
        tasks: Vec::new(),
    }
}

impl SnapshotBuilder {
    /// Every CPU busy for this fraction of the interval.
    pub fn utilisation(mut self, fraction: f64) -> Self {
        for c in &mut self.snapshot.cpus {
            c.utilisation = fraction;
        }
        self
    }

    /// Every CPU at this frequency.
    pub fn freq_khz(mut self, khz: u64) -> Self {
        for c in &mut self.snapshot.cpus {
            c.freq_khz = Some(khz);
        }
        self
    }

    /// Every CPU with this many runnable tasks queued.
    pub fn nr_running(mut self, n: u32) -> Self {
        for c in &mut self.snapshot.cpus {
            c.nr_running = Some(n);
        }
        self
    }

    /// The whole system's energy over the interval, from no named source.
    pub fn system_j(mut self, joules: f64) -> Self {
        self.snapshot.power.system_j = Some(joules);
        self
    }

    /// The parallelism the managed application declared, if any.
    pub fn parallelism_hint(mut self, hint: Option<u32>) -> Self {
        self.snapshot.parallelism_hint = hint;
        self
    }

    /// One more task.
    pub fn task(mut self, task: TaskBuilder) -> Self {
        self.tasks.push(task);
        self
    }

    /// More tasks, in order.
    pub fn tasks(mut self, tasks: impl IntoIterator<Item = TaskBuilder>) -> Self {
        self.tasks.extend(tasks);
        self
    }

    /// The snapshot; its tasks are built on its machine.
    pub fn build(self) -> Snapshot {
        let topology = Arc::clone(&self.snapshot.topology);
        Snapshot {
            tasks: self.tasks.into_iter().map(|t| t.build(&topology)).collect(),
            ..self.snapshot
        }
    }
}
