//! [`SimPlatform`]: the simulator seen through the same [`Platform`] trait
//! as a real machine.
//!
//! Time advances from event to event (slice ends, completions, wake-ups,
//! governor samples, balancing, DVFS transitions, gang slot boundaries)
//! rather than tick by tick: between two events nothing changes, so every
//! counter and joule over the span is integrated in one step, and the
//! contention solve for a given set of running tasks and frequencies is
//! memoised. Each CPU is integrated, and has its next event found, only
//! when something it depends on changes, so an event costs work for the
//! CPUs it touches rather than for every CPU. Scheduling decisions still
//! fall on tick boundaries (slices are whole ticks), so results are those
//! of a tick-driven simulation at a fraction of the cost.
//!
//! The platform is split by concern, so that each can be read (and later
//! replaced) alone:
//!
//! ```text
//!  setup.rs    scenario → machine tables, tasks, build, transients
//!  jobs.rs     task life: spawn, complete, restart, `after`, make -jN
//!  events.rs   the event loop: next_event, process_events, wake, schedule
//!  rates.rs    memoised contention solve per memory domain
//!  energy.rs   integrate a CPU's span: counters, energy, governor load
//!  counters.rs per-task cumulative counters (the truth a PMU would count)
//!  observe.rs  the truth Snapshot, and pruning of reported exits
//!  migrate.rs  a task leaving for, or arriving from, another machine
//!  gang.rs     timed gang schedules (Plan::gang_schedule)
//!  warmup.rs   cache warm-up after a move across last-level caches
//!  schedule.rs every stretch a managed task ran on a CPU, for a trace
//!  loadavg.rs  /proc/loadavg's calc_load
//!  truth.rs    each task's true energy, to check attribution against
//! ```
//!
//! `integrate_cpu` (energy.rs) and `observe` (observe.rs) are the two seams an
//! observation model hooks into: the first is where truth accrues, the
//! second where it is read out as deltas.

mod counters;
mod energy;
mod events;
mod gang;
mod jobs;
mod limit;
mod loadavg;
mod migrate;
mod observe;
mod rates;
mod schedule;
mod setup;
mod truth;
mod warmup;

use crate::governor::DomainGovernor;
use crate::jobgraph::JobGraph;
use crate::kernel::{Kernel, Ns, Sched};
use crate::machine::Machine;
use crate::observation::{MuxAcc, Observe, Observer};
use crate::profile::Profile;
use crate::scenario::Scenario;
use counters::{Acc, SchedCounts};
use ecosched_model::platform::check_plan;
use ecosched_model::schedule::RunSlice;
use ecosched_model::{
    ApplyReport, Capabilities, CounterKind, CpuSet, FreqDomainId, GangAction, Meter, Plan,
    Platform, PlatformError, PowerSource, Requirements, Snapshot, TaskId, Topology,
};
use events::MinTree;
use gang::GangRun;
use loadavg::LoadTracker;
pub use migrate::Migrant;
use rand_chacha::ChaCha8Rng;
use rates::RateMemo;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Duration;
pub use truth::TrueEnergy;

const NS_PER_S: f64 = 1e9;
/// Instructions below which a task counts as done (float rounding).
const EPS_INSTR: f64 = 1e-3;

/// What a simulated process is, for the build's bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Role {
    /// A scenario task or a transient thread.
    Plain,
    /// The `make` process, with the job its current burst is starting.
    Make { starting: Option<usize> },
    /// A build job, with the slot of the assembler beside it.
    Job { job: usize, helper: Option<usize> },
    /// The assembler beside a compile job; it ends with the job.
    Helper,
}

/// The running `make -jN` build of a scenario's `[jobgraph]`.
#[derive(Debug, Clone)]
struct Build {
    graph: JobGraph,
    /// The `make` process's task slot.
    make: usize,
    /// Instructions per ms of work alone at the highest frequency.
    instr_per_ms: f64,
    make_ms: f64,
    /// Compile/link/make work: the profile's first phase, never sleeping.
    work: Arc<Profile>,
    /// The assembler: the same phase, in short random bursts.
    helper: Option<Arc<Profile>>,
    phase_id: u32,
}

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Life {
    /// Created, arriving at `Task::arrival`.
    Pending,
    /// Running or waiting for a CPU (or held by a gang freeze).
    Runnable,
    /// Asleep until `until`; `Ns::MAX` means blocked until something
    /// wakes it (`make` waiting for a job).
    Sleeping { until: Ns },
    /// Stopped by a plan's one-shot `GangAction::Stop`.
    Stopped,
    /// Finished; its slot is freed once the exit has been observed.
    Exited,
}

/// Which scenario task a simulated task is an instance of.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Instance {
    /// Index into the scenario's `[[tasks]]`.
    spec: usize,
    /// Which of its `count` instances.
    k: u32,
}

/// One simulated task. Each is its own process (a single-threaded program,
/// as the papers' SPEC runs and compile jobs are), so its `ProcessId` is
/// its own `TaskId`.
#[derive(Debug, Clone)]
struct Task {
    id: TaskId,
    name: String,
    /// The scenario task it instantiates; `None` for `make`, build jobs
    /// and transient threads.
    instance: Option<Instance>,
    role: Role,
    managed: bool,
    nice: i32,
    profile: Arc<Profile>,
    /// Global phase ids, one per phase of the profile.
    phase_ids: Vec<u32>,
    phase: usize,
    phase_left: f64,
    remaining: f64,
    /// Instructions until its next sleep (infinite if it never sleeps): a
    /// burst is a fixed amount of work, so it lasts longer at a lower
    /// frequency but ends in the same number of sleeps.
    burst_left: f64,
    /// Instructions per ms of a burst, for the phase it was worked out for.
    work_per_ms: Option<(usize, f64)>,
    life: Life,
    /// Held off its run queue by the timed gang schedule.
    frozen: bool,
    /// Index of its group in the gang schedule in force, if any.
    gang_group: Option<usize>,
    arrival: Ns,
    started: Ns,
    /// It arrived from another machine mid-instance (migrate.rs): its
    /// arrival does not restart `started`.
    carried_start: bool,
    finished: Option<Ns>,
    /// The plan's per-task CPU set, if any.
    own_cpus: Option<CpuSet>,
    acc: Acc,
    reported: Acc,
    /// The kernel's counts at the last observation.
    reported_sched: SchedCounts,
    /// Its hardware counts as a multiplexed PMU would have counted them.
    mux: MuxAcc,
    /// `mux` at the last observation.
    mux_reported: MuxAcc,
    /// It holds a resctrl monitoring ID (observation.rs, `Rmids`).
    monitored: bool,
    /// The energy it caused so far (truth.rs).
    true_j: TrueEnergy,
}

/// One frequency domain's state.
#[derive(Debug, Clone)]
struct Domain {
    cur_khz: u64,
    pending: Option<(u64, Ns)>,
    stall_until: Ns,
    governor: DomainGovernor,
    /// When the governor next samples (`governor.next_eval`, kept here
    /// because the event loop asks for it on every event).
    next_eval: Option<Ns>,
    /// A sample fell due while the CPUs that run it idled (2.6: the
    /// domain's first; 3.11: all of them): it is taken when one of them
    /// next runs a task (`DomainGovernor::deferrable`).
    deferred: bool,
}

/// Figures about the simulator's own work, for benchmarks and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SimStats {
    /// Events that moved the clock (the spans between them).
    pub spans: u64,
    /// Contention solves computed (memo misses).
    pub solves: u64,
    /// Contention results recalled from the memo (hits).
    pub memo_hits: u64,
    /// Solves that hit the iteration cap.
    pub unconverged: u64,
    /// Times a task started running behind a cache without its lines
    /// there (a move across last-level caches or a first run): warm-ups
    /// begun (warmup.rs).
    pub cold_starts: u64,
    /// Lines brought in by warming tasks beyond what their steady miss
    /// ratio would have brought in: the warm-ups' extra misses.
    pub warmup_extra_lines: f64,
    /// The managed tasks' migrations by what moved them.
    pub migrations: MigrationCauses,
}

/// The managed tasks' migrations by what moved them: simulator truth. A
/// Linux machine's perf counts only their total (`cpu-migrations`); the
/// split shows which part of the kernel model a migration figure rests on
/// (e.g. Patel's Table 25, where most of the default scheduler's moves are
/// wake-ups). The four add up to the run's managed migrations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MigrationCauses {
    /// A task that had slept woke on another CPU (the wake-up placement).
    pub wake_up: u64,
    /// Load balancing pulled it to another CPU (periodic or active).
    pub balance: u64,
    /// A CPU going idle pulled it from another CPU's queue.
    pub idle_pull: u64,
    /// Its affinity or cpuset changed to exclude the CPU it was on.
    pub affinity: u64,
}

/// What moved a task (see [`MigrationCauses`]).
#[derive(Debug, Clone, Copy)]
enum MoveCause {
    WakeUp,
    Balance,
    IdlePull,
    Affinity,
}

impl SimStats {
    /// Share of contention look-ups answered by the memo.
    pub fn memo_hit_rate(&self) -> f64 {
        let total = self.solves + self.memo_hits;
        if total == 0 {
            0.0
        } else {
            self.memo_hits as f64 / total as f64
        }
    }
}

/// Per-CPU facts that never change during a run, looked up every span.
#[derive(Debug, Clone)]
struct CpuFacts {
    /// Its frequency domain.
    domain: usize,
    /// Its position inside the domain (the governor's per-CPU index).
    local: usize,
    /// Its voltage domain.
    voltage_domain: usize,
    /// Its domain's highest frequency, kHz.
    max_khz: u64,
}

/// A timer: a pending arrival or the end of a sleep, for task `slot`
/// created as number `seq`. Entries go stale when the task's state moves
/// on; they are checked against the task when they come due.
type Timer = Reverse<(Ns, u64, usize)>;

/// The simulated machine running a scenario.
pub struct SimPlatform {
    scenario: Scenario,
    machine: Arc<Machine>,
    topology: Arc<Topology>,
    tick: Ns,
    now: Ns,
    end: Option<Ns>,
    /// Task table, by slot. A slot is reused once its task's exit has been
    /// observed, so memory follows the live task count, not run length.
    tasks: Vec<Task>,
    /// Kernel state per slot (same indices as `tasks`).
    sched: Vec<Sched>,
    /// Slots free for reuse.
    free: Vec<usize>,
    /// Occupied slots in creation order: the order of snapshots and of
    /// every walk over tasks whose order matters.
    order: Vec<usize>,
    /// Next creation number.
    next_seq: u64,
    /// Arrivals and sleep ends, earliest first.
    timers: BinaryHeap<Timer>,
    /// Managed tasks that have not exited.
    live_managed: usize,
    kernel: Kernel,
    domains: Vec<Domain>,
    cpu_facts: Vec<CpuFacts>,
    /// Voltage of each voltage domain (the highest its frequency domains
    /// ask for), kept current as frequencies change.
    volts: Vec<f64>,
    /// The highest voltage of any P-state (idle-state power scales with it).
    v_max: f64,
    /// Per CPU: how many of its SMT siblings run a task, as the rates in
    /// force were found (rates.rs): busy siblings share one core's power.
    busy_siblings: Vec<u8>,
    /// The package power limit's state (limit.rs), if the machine has one.
    limit: Option<limit::PowerLimit>,
    managed_cpus: CpuSet,
    rng: ChaCha8Rng,
    next_pid: u32,
    /// Remaining instances to start after a named task.
    waiting_after: Vec<Instance>,
    /// Completions still owed per (spec, instance).
    owed: HashMap<(usize, u32), u32>,
    next_balance: Ns,
    rates: RateMemo,
    /// Cache residences: who ran where last (warmup.rs).
    warmup: warmup::CacheWarmup,
    busy_ns: Vec<f64>,
    /// Per CPU: up to when it has been integrated (energy.rs).
    cpu_at: Vec<Ns>,
    /// Per CPU: until when it is still leaving an idle state (its task
    /// makes no progress before then; `power::exit_latency_ns`).
    wake_until: Vec<Ns>,
    /// Per CPU: when something next happens on it (slice end, completion,
    /// phase or burst end), found when it last changed, so an event costs
    /// nothing for the CPUs it leaves alone.
    cpu_next: MinTree,
    /// Per CPU: from when its task may count as done with its work, phase
    /// or burst, so that every event checks it (events.rs).
    cpu_check: Vec<Ns>,
    /// Per CPU: whether it changed during the current event, so that
    /// `cpu_next` must be found again (those CPUs are listed in `stale`).
    cpu_stale: Vec<bool>,
    stale: Vec<usize>,
    /// Per frequency domain: its next transition end or governor sample.
    dom_next: MinTree,
    /// CPUs of each frequency domain.
    fd_cpus: Vec<Vec<usize>>,
    /// CPUs of each voltage domain.
    vd_cpus: Vec<Vec<usize>>,
    /// Whether a task joined a run queue, or affinities changed, since the
    /// idle CPUs last tried to pull work: until then they would find none.
    idle_retry: bool,
    package_count: usize,
    package_j: f64,
    system_j: f64,
    reported_package_j: f64,
    reported_system_j: f64,
    /// Exited managed tasks' true energy per name (truth.rs).
    true_by_name: BTreeMap<String, TrueEnergy>,
    last_observe: Ns,
    stats: SimStats,
    /// Global id per (profile, phase): the memo key's vocabulary.
    phase_keys: HashMap<(String, usize), u32>,
    /// Instructions of one instance per task spec.
    lengths: Vec<f64>,
    /// The scenario's build, if it has one.
    build: Option<Build>,
    /// The timed gang schedule in force, if any.
    gang: Option<GangRun>,
    /// `/proc/loadavg`.
    load: LoadTracker,
    /// What policies are shown (observation.rs).
    observer: Observer,
    /// The observation model chosen for the run.
    observe_mode: Observe,
    /// Counters opened beside the policy's.
    extra_counters: BTreeSet<CounterKind>,
    /// The exact schedule, recorded when a trace asks (schedule.rs).
    schedule: Option<schedule::ScheduleLog>,
}

fn ns(seconds: f64) -> Ns {
    (seconds * NS_PER_S).round().max(0.0) as Ns
}

impl SimPlatform {
    /// Show policies `mode`: what a Linux machine could read (the
    /// preset's PMU events a policy opens, multiplexed as perf would) or
    /// simulator truth; `extra` counters are opened beside the policy's,
    /// as an experimenter runs `perf stat -e` beside a workload. Call it
    /// before the run starts.
    pub fn observe_as(&mut self, mode: Observe, extra: &BTreeSet<CounterKind>) {
        self.observe_mode = mode;
        self.extra_counters = extra.clone();
        self.open_counters(&Requirements::default());
    }

    /// What policies are shown.
    pub fn observation(&self) -> Observe {
        self.observer.mode()
    }

    /// Simulator work counters.
    pub fn stats(&self) -> SimStats {
        self.stats
    }

    /// Current simulated time, s.
    pub fn now_s(&self) -> f64 {
        self.now as f64 / NS_PER_S
    }

    /// Task slots in use (live tasks plus exits not yet observed): what
    /// the simulator's memory grows with.
    pub fn task_slots(&self) -> usize {
        self.order.len()
    }
}

impl Platform for SimPlatform {
    fn kind(&self) -> &'static str {
        "sim"
    }

    fn machine_name(&self) -> String {
        self.machine.spec.name.clone()
    }

    fn topology(&self) -> Arc<Topology> {
        self.topology.clone()
    }

    fn open_counters(&mut self, requirements: &Requirements) {
        let mut counters = requirements.counters.clone();
        counters.extend(&self.extra_counters);
        self.observer = Observer::new(
            self.observe_mode,
            self.machine.cpus(),
            self.machine.spec.pmu.as_ref(),
            &counters,
            &requirements.wanted,
        );
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            counters: self.observer.counters(),
            power: Some(PowerSource::Measured),
            affinity: true,
            frequency: true,
            gang: true,
        }
    }

    fn meter(&self) -> Meter {
        self.scenario.spec.meter
    }

    fn apply(&mut self, plan: &Plan) -> Result<ApplyReport, PlatformError> {
        check_plan(plan, &self.topology, &self.topology.online_cpus())?;
        if let Some(g) = &plan.gang_schedule {
            g.validate().map_err(PlatformError::InvalidPlan)?;
        }
        let mut report = ApplyReport::default();
        let by_id: HashMap<TaskId, usize> = self
            .order
            .iter()
            .filter(|&&t| self.tasks[t].life != Life::Exited)
            .map(|&t| (self.tasks[t].id, t))
            .collect();
        let mut touched = Vec::new();
        for (id, set) in &plan.task_cpus {
            match by_id.get(id) {
                Some(&t) if self.tasks[t].managed => {
                    self.tasks[t].own_cpus = Some(set.clone());
                    touched.push(t);
                }
                Some(_) => {
                    return Err(PlatformError::InvalidPlan(format!(
                        "task {id} is not managed"
                    )))
                }
                None => report.vanished.push(*id),
            }
        }
        if let Some(set) = &plan.managed_cpus {
            self.managed_cpus = set.clone();
            touched = self
                .order
                .iter()
                .copied()
                .filter(|&t| self.tasks[t].managed)
                .collect();
        }
        for t in touched {
            if self.tasks[t].life != Life::Exited {
                self.reconfine(t);
            }
        }
        for (&d, setting) in &plan.frequency {
            self.set_freq_setting(d, *setting);
        }
        for (id, action) in &plan.gang {
            let Some(&t) = by_id.get(id) else {
                report.vanished.push(*id);
                continue;
            };
            match (action, self.tasks[t].life) {
                (GangAction::Stop, Life::Runnable) => {
                    self.tasks[t].life = Life::Stopped;
                    if let Some(c) = self.sched[t].cpu {
                        self.switch_out(t, c);
                    }
                }
                (GangAction::Continue, Life::Stopped) => self.wake(t, false),
                _ => {}
            }
        }
        if let Some(schedule) = &plan.gang_schedule {
            self.install_gang(schedule, &by_id, &mut report);
        }
        Ok(report)
    }

    fn advance(&mut self, interval: Duration) -> Result<(), PlatformError> {
        let mut target = self.now + interval.as_nanos() as Ns;
        if let Some(end) = self.end {
            target = target.min(end);
        }
        self.run_until(target);
        Ok(())
    }

    fn observe(&mut self) -> Result<Snapshot, PlatformError> {
        Ok(self.snapshot())
    }

    fn finished(&self) -> bool {
        self.workload_done() || self.end.is_some_and(|e| self.now >= e)
    }

    fn record_schedule(&mut self) -> Option<String> {
        if self.schedule.is_none() {
            self.start_schedule();
        }
        Some("the simulator's kernel model: every switch, exact".into())
    }

    fn take_schedule(&mut self, out: &mut Vec<RunSlice>) -> u64 {
        self.drain_schedule(out)
    }
}

impl SimPlatform {
    /// Hand frequency domain `d` to `setting`. Re-sending the setting
    /// already in force changes nothing: a policy that repeats `ondemand`
    /// every interval must not restart the governor's sampling period
    /// (it would never sample).
    fn set_freq_setting(&mut self, d: FreqDomainId, setting: ecosched_model::FreqSetting) {
        // The domain as found is the scenario's governor, which every
        // domain starts under.
        let setting = match setting {
            ecosched_model::FreqSetting::AsFound => {
                ecosched_model::FreqSetting::Governor(self.scenario.spec.governor)
            }
            other => other,
        };
        let d = d.index();
        if self.domains[d].governor.setting() == setting {
            return;
        }
        let cur = self.domains[d]
            .pending
            .map_or(self.domains[d].cur_khz, |p| p.0);
        let governor = DomainGovernor::new(
            setting,
            self.topology.freq_domains[d].cpus.len(),
            self.now,
            cur,
            self.limit.as_ref().map(limit::PowerLimit::period),
        );
        // At t = 0 nothing has run: the machine was idle before the run.
        let khz = governor.initial_khz(&self.topology.freq_domains[d], cur, self.now == 0);
        let khz = self.initial_cap(d, khz);
        self.domains[d].next_eval = governor.next_eval(&self.machine.spec.governor);
        self.domains[d].deferred = false;
        self.domains[d].governor = governor;
        self.refresh_dom_next(d);
        self.set_freq(d, khz);
    }
}
