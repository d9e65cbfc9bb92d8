//! [`SimPlatform`]: the simulator seen through the same [`Platform`] trait
//! as a real machine.
//!
//! Time advances from event to event (slice ends, completions, wake-ups,
//! governor samples, balancing, DVFS transitions) rather than tick by tick:
//! between two events nothing changes, so every counter and joule over the
//! span is integrated in one step, and the contention solve for a given
//! set of running tasks and frequencies is memoised. Scheduling decisions
//! still fall on tick boundaries (slices are whole ticks), so results are
//! those of a tick-driven simulation at a fraction of the cost.
//!
//! A scenario's `[jobgraph]` (a `make -jN` build, `jobgraph.rs`) runs as
//! processes too: `make` works for a short burst per job it starts and
//! blocks in between; each finished job wakes it.

use crate::contention::{solve, Demand, Outcome};
use crate::governor::DomainGovernor;
use crate::jobgraph::{JobGraph, JobKind};
use crate::kernel::{weight, Kernel, Ns, Sched};
use crate::machine::Machine;
use crate::power;
use crate::profile::Profile;
use crate::scenario::Scenario;
use crate::SimError;
use ecosched_model::platform::check_plan;
use ecosched_model::{
    ApplyReport, Capabilities, CounterKind, Counters, CpuId, CpuSample, CpuSet, FreqSetting,
    GangAction, Meter, Plan, Platform, PlatformError, PowerSample, PowerSource, Snapshot, TaskId,
    TaskSample, TaskState, Topology,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

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
    /// A build job, with the index of the assembler beside it.
    Job { job: usize, helper: Option<usize> },
    /// The assembler beside a compile job; it ends with the job.
    Helper,
}

/// The running `make -jN` build of a scenario's `[jobgraph]`.
#[derive(Debug, Clone)]
struct Build {
    graph: JobGraph,
    /// The `make` process's task index.
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

#[derive(Debug, Clone, Copy, PartialEq)]
enum Life {
    Pending,
    Runnable,
    Sleeping { until: Ns },
    Stopped,
    Exited,
}

/// Cumulative counters, kept as floats so nothing is lost to rounding.
#[derive(Debug, Clone, Default)]
struct Acc {
    instructions: f64,
    cycles: f64,
    llc_refs: f64,
    llc_misses: f64,
    lines_in: f64,
    l1d_refs: f64,
    l1d_misses: f64,
    on_cpu_ns: f64,
    wait_ns: f64,
}

#[derive(Debug, Clone)]
struct Task {
    id: TaskId,
    name: String,
    spec: usize,
    role: Role,
    managed: bool,
    nice: i32,
    profile: Arc<Profile>,
    /// Global phase ids, one per phase of the profile.
    phase_ids: Vec<u32>,
    phase: usize,
    phase_left: f64,
    remaining: f64,
    burst_left_ns: f64,
    life: Life,
    arrival: Ns,
    started: Ns,
    finished: Option<Ns>,
    /// The plan's per-task CPU set, if any.
    own_cpus: Option<CpuSet>,
    acc: Acc,
    reported: Acc,
    reported_switches: u64,
    reported_migrations: u64,
    exit_reported: bool,
}

#[derive(Debug, Clone)]
struct Domain {
    cur_khz: u64,
    pending: Option<(u64, Ns)>,
    stall_until: Ns,
    governor: DomainGovernor,
}

/// Figures about the simulator's own work, for benchmarks and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SimStats {
    /// Spans integrated.
    pub spans: u64,
    /// Contention solves computed (memo misses).
    pub solves: u64,
    /// Solves that hit the iteration cap.
    pub unconverged: u64,
}

/// The simulated machine running a scenario.
pub struct SimPlatform {
    scenario: Scenario,
    machine: Arc<Machine>,
    topology: Arc<Topology>,
    tick: Ns,
    now: Ns,
    end: Option<Ns>,
    tasks: Vec<Task>,
    sched: Vec<Sched>,
    kernel: Kernel,
    domains: Vec<Domain>,
    managed_cpus: CpuSet,
    rng: ChaCha8Rng,
    next_pid: u32,
    /// Remaining instances to start after a named task: (spec index, instance).
    waiting_after: Vec<(usize, u32)>,
    /// Completions still owed per (spec, instance).
    owed: HashMap<(usize, u32), u32>,
    next_balance: Ns,
    memo: HashMap<Vec<u32>, Arc<Vec<Option<Outcome>>>>,
    rates: Arc<Vec<Option<Outcome>>>,
    dirty: bool,
    busy_ns: Vec<f64>,
    package_j: f64,
    system_j: f64,
    reported_package_j: f64,
    reported_system_j: f64,
    last_observe: Ns,
    stats: SimStats,
    /// Global id per (profile, phase): the memo key's vocabulary.
    phase_keys: HashMap<(String, usize), u32>,
    /// Instructions of one instance per task spec.
    lengths: Vec<f64>,
    /// The scenario's build, if it has one.
    build: Option<Build>,
}

fn ns(seconds: f64) -> Ns {
    (seconds * NS_PER_S).round().max(0.0) as Ns
}

impl SimPlatform {
    /// Build the machine and workload of a scenario.
    pub fn new(scenario: &Scenario, seed: u64) -> Result<Self, SimError> {
        let machine = scenario.machine.clone();
        let topology = Arc::new(machine.topology.clone());
        let tick = ns(scenario.spec.tick_ms / 1000.0).max(1);
        let n = machine.cpus();
        let mut phase_keys: HashMap<(String, usize), u32> = HashMap::new();
        for spec in &scenario.spec.tasks {
            for k in 0..scenario.profiles[&spec.profile].phases.len() {
                let next = phase_keys.len() as u32 + 1;
                phase_keys.entry((spec.profile.clone(), k)).or_insert(next);
            }
        }
        if let Some(g) = &scenario.spec.jobgraph {
            let next = phase_keys.len() as u32 + 1;
            phase_keys.entry((g.profile.clone(), 0)).or_insert(next);
        }
        let mut sim = SimPlatform {
            scenario: scenario.clone(),
            machine: machine.clone(),
            topology: topology.clone(),
            tick,
            now: 0,
            end: scenario.spec.duration_s.map(ns),
            tasks: Vec::new(),
            sched: Vec::new(),
            kernel: Kernel::new(&machine, tick),
            domains: Vec::new(),
            managed_cpus: topology.online_cpus(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            next_pid: 1000,
            waiting_after: Vec::new(),
            owed: HashMap::new(),
            next_balance: ns(machine.spec.scheduler.balance_interval_ms / 1000.0),
            memo: HashMap::new(),
            rates: Arc::new(vec![None; n]),
            dirty: true,
            busy_ns: vec![0.0; n],
            package_j: 0.0,
            system_j: 0.0,
            reported_package_j: 0.0,
            reported_system_j: 0.0,
            last_observe: 0,
            stats: SimStats::default(),
            phase_keys,
            lengths: Vec::new(),
            build: None,
        };
        let initial = FreqSetting::Governor(scenario.spec.governor);
        for dom in &topology.freq_domains {
            let governor = DomainGovernor::new(initial, dom.cpus.len(), 0, dom.max_khz());
            let cur = governor.initial_khz(dom, dom.max_khz());
            sim.domains.push(Domain {
                cur_khz: cur,
                pending: None,
                stall_until: 0,
                governor,
            });
        }
        sim.lengths = scenario
            .spec
            .tasks
            .iter()
            .map(|t| match (t.instructions, t.length_s) {
                (Some(n), _) => n,
                (None, Some(s)) => {
                    s * NS_PER_S / sim.alone_tpi_ns(&scenario.profiles[&t.profile].phases[0])
                }
                (None, None) => 0.0,
            })
            .collect();
        for (i, spec) in scenario.spec.tasks.iter().enumerate() {
            for k in 0..spec.count {
                sim.owed.insert((i, k), spec.completions);
                if spec.after.is_some() {
                    sim.waiting_after.push((i, k));
                } else {
                    sim.spawn(i, k, ns(spec.start_s + spec.stagger_s * f64::from(k)));
                }
            }
        }
        if let Some(g) = &scenario.spec.jobgraph {
            sim.start_build(g, seed);
        }
        if let Some(tr) = scenario.spec.transients.clone() {
            let profile = Arc::new(transient_profile(tr.run_ms, tr.period_ms));
            let id = sim.phase_keys.len() as u32 + 1;
            for k in 0..tr.count {
                let first = ns(sim.rng.random::<f64>() * tr.period_ms / 1000.0);
                sim.push_task(
                    format!("kworker/{k}"),
                    usize::MAX,
                    false,
                    0,
                    profile.clone(),
                    vec![id],
                    f64::INFINITY,
                    first,
                );
            }
        }
        Ok(sim)
    }
}

/// A kernel or daemon thread that wakes about every `period_ms`, runs
/// `run_ms` of pure computation and sleeps again (random, seeded).
fn transient_profile(run_ms: f64, period_ms: f64) -> Profile {
    use crate::profile::{MissCurve, Phase, SleepSpec};
    Profile {
        description: "transient kernel/daemon thread".into(),
        source: "SIMULATOR.md §3".into(),
        phases: vec![Phase {
            instructions: None,
            cpi_core: 1.0,
            api: 0.0,
            l1d_refs_per_instr: 0.3,
            mlp: 1.0,
            prefetch_coverage: 0.0,
            miss: MissCurve {
                m0: 0.0,
                s0_kib: 1.0,
                alpha: 0.0,
                m_max: 0.0,
                m_floor: 0.0,
                ws_kib: 1.0,
            },
            sleep: Some(SleepSpec {
                run_ms,
                sleep_ms: period_ms - run_ms,
                random: true,
            }),
        }],
    }
}

impl SimPlatform {
    /// Create the `make` process of a `[jobgraph]`; it starts with a burst
    /// that launches the first job.
    fn start_build(&mut self, spec: &crate::jobgraph::JobGraphSpec, seed: u64) {
        let mut phase = self.scenario.profiles[&spec.profile].phases[0].clone();
        phase.sleep = None;
        phase.instructions = None;
        let instr_per_ms = 1e6 / self.alone_tpi_ns(&phase);
        let profile = |phase: crate::profile::Phase, description: &str| {
            Arc::new(Profile {
                description: description.into(),
                source: "jobgraph.rs".into(),
                phases: vec![phase],
            })
        };
        let helper = (spec.helper_share > 0.0).then(|| {
            let mut p = phase.clone();
            p.sleep = Some(crate::profile::SleepSpec {
                run_ms: spec.helper_burst_ms,
                sleep_ms: spec.helper_burst_ms * (1.0 / spec.helper_share - 1.0),
                random: true,
            });
            profile(p, "assembler beside a compile job (gcc -pipe)")
        });
        let work = profile(phase, "build job or make");
        let phase_id = self
            .phase_keys
            .get(&(spec.profile.clone(), 0))
            .copied()
            .unwrap_or(0);
        let mut graph = JobGraph::generate(spec, seed);
        let first = graph.take_next();
        let make = self.push_task(
            "make".into(),
            usize::MAX,
            true,
            0,
            work.clone(),
            vec![phase_id],
            spec.make_ms * instr_per_ms,
            0,
        );
        self.tasks[make].role = Role::Make { starting: first };
        self.build = Some(Build {
            graph,
            make,
            instr_per_ms,
            make_ms: spec.make_ms,
            work,
            helper,
            phase_id,
        });
    }

    /// `make` finished a burst on CPU `c`: the job it was starting begins,
    /// and it either starts the next one, blocks until a job ends, or exits
    /// once the build is done.
    fn make_burst_done(&mut self, t: usize, c: usize) {
        let Some(b) = self.build.as_mut() else {
            return;
        };
        let Role::Make { starting } = self.tasks[t].role else {
            return;
        };
        let next = b.graph.take_next();
        let (done, burst) = (b.graph.all_done(), b.make_ms * b.instr_per_ms);
        if let Some(j) = starting {
            self.start_job(j);
        }
        self.tasks[t].role = Role::Make { starting: next };
        if next.is_some() {
            self.tasks[t].remaining = burst;
        } else if done {
            self.complete(t, c);
        } else {
            self.tasks[t].life = Life::Sleeping { until: Ns::MAX };
            self.switch_out(t, c);
        }
    }

    /// Start build job `j` (and its assembler) now.
    fn start_job(&mut self, j: usize) {
        let Some(b) = self.build.as_ref() else {
            return;
        };
        let job = &b.graph.jobs()[j];
        let (kind, instr) = (job.kind, job.work_ms * b.instr_per_ms);
        let (work, helper, id) = (b.work.clone(), b.helper.clone(), b.phase_id);
        let now = self.now;
        let task = self.push_task(
            kind.name().into(),
            usize::MAX,
            true,
            0,
            work,
            vec![id],
            instr,
            now,
        );
        let helper = match (kind, helper) {
            (JobKind::Compile, Some(p)) => {
                let h = self.push_task(
                    "as".into(),
                    usize::MAX,
                    true,
                    0,
                    p,
                    vec![id],
                    f64::INFINITY,
                    now,
                );
                self.tasks[h].role = Role::Helper;
                Some(h)
            }
            _ => None,
        };
        self.tasks[task].role = Role::Job { job: j, helper };
    }

    /// A build job ended: end its assembler, update the graph, and wake a
    /// blocked `make` if there is a job to start or the build is done.
    fn job_done(&mut self, job: usize, helper: Option<usize>) {
        if let Some(h) = helper {
            self.kill(h);
        }
        let Some(b) = self.build.as_mut() else {
            return;
        };
        b.graph.finish(job);
        let make = b.make;
        let blocked = matches!(self.tasks[make].life, Life::Sleeping { until: Ns::MAX });
        if !blocked {
            return;
        }
        let next = b.graph.take_next();
        if next.is_some() || b.graph.all_done() {
            self.tasks[make].role = Role::Make { starting: next };
            self.tasks[make].remaining = b.make_ms * b.instr_per_ms;
            self.wake(make, false);
        }
    }

    /// End task `t` now, wherever it is (an assembler whose job finished).
    fn kill(&mut self, t: usize) {
        if self.tasks[t].life == Life::Exited {
            return;
        }
        self.tasks[t].finished = Some(self.now);
        self.tasks[t].life = Life::Exited;
        if let Some(c) = self.sched[t].cpu {
            if self.kernel.dequeue(t, c) {
                self.sched[t].switches += 1;
                self.schedule(c);
            }
        }
    }

    /// Time per instruction of a phase running alone at the highest frequency.
    fn alone_tpi_ns(&self, phase: &crate::profile::Phase) -> f64 {
        let ghz = self.topology.freq_domains[self.machine.domain_of[0]].max_khz() as f64 / 1e6;
        let d = [Demand {
            phase,
            cpu: 0,
            freq_ghz: ghz,
            cpi_factor: 1.0,
        }];
        solve(&self.machine, &d).outcomes[0].tpi_ns
    }

    /// Create instance `instance` of task spec `spec`, arriving at `at`; returns its index.
    fn spawn(&mut self, spec: usize, instance: u32, at: Ns) -> usize {
        let t = &self.scenario.spec.tasks[spec];
        let profile = self.scenario.profiles[&t.profile].clone();
        let ids = (0..profile.phases.len())
            .map(|k| {
                self.phase_keys
                    .get(&(t.profile.clone(), k))
                    .copied()
                    .unwrap_or(0)
            })
            .collect();
        let name = self.scenario.instance_name(spec, instance);
        let (managed, nice, length) = (t.managed, t.nice, self.lengths[spec]);
        self.push_task(name, spec, managed, nice, profile, ids, length, at)
    }

    #[allow(clippy::too_many_arguments)]
    fn push_task(
        &mut self,
        name: String,
        spec: usize,
        managed: bool,
        nice: i32,
        profile: Arc<Profile>,
        phase_ids: Vec<u32>,
        instructions: f64,
        at: Ns,
    ) -> usize {
        let n = self.machine.cpus();
        let allowed: Vec<bool> = (0..n)
            .map(|c| !managed || self.managed_cpus.contains(CpuId(c as u32)))
            .collect();
        let phase_left = profile.phases[0].instructions.unwrap_or(f64::INFINITY);
        let pid = self.next_pid;
        self.next_pid += 1;
        let mut task = Task {
            id: TaskId {
                pid,
                start_ticks: at / self.tick,
            },
            name,
            spec,
            role: Role::Plain,
            managed,
            nice,
            profile,
            phase_ids,
            phase: 0,
            phase_left,
            remaining: instructions,
            burst_left_ns: f64::INFINITY,
            life: Life::Pending,
            arrival: at,
            started: at,
            finished: None,
            own_cpus: None,
            acc: Acc::default(),
            reported: Acc::default(),
            reported_switches: 0,
            reported_migrations: 0,
            exit_reported: false,
        };
        task.burst_left_ns = self.burst(&task);
        self.tasks.push(task);
        self.sched.push(Sched {
            weight: weight(nice),
            vruntime: 0.0,
            allowed,
            cpu: None,
            switches: 0,
            migrations: 0,
        });
        self.tasks.len() - 1
    }

    /// On-CPU time until the task's next sleep, ns (infinite if it never sleeps).
    fn burst(&mut self, task: &Task) -> f64 {
        match &task.profile.phases[task.phase].sleep {
            Some(s) if s.random => exponential(&mut self.rng, s.run_ms) * 1e6,
            Some(s) => s.run_ms * 1e6,
            None => f64::INFINITY,
        }
    }

    fn sleep_ns(&mut self, t: usize) -> Ns {
        match &self.tasks[t].profile.phases[self.tasks[t].phase].sleep {
            Some(s) if s.random => (exponential(&mut self.rng, s.sleep_ms) * 1e6) as Ns,
            Some(s) => (s.sleep_ms * 1e6) as Ns,
            None => 0,
        }
    }

    /// Frequency (GHz) a CPU runs at now; zero while its domain stalls in a transition.
    fn cpu_ghz(&self, c: usize) -> f64 {
        let d = &self.domains[self.machine.domain_of[c]];
        if self.now < d.stall_until {
            0.0
        } else {
            d.cur_khz as f64 / 1e6
        }
    }

    fn volts(&self, c: usize) -> f64 {
        let vd = self.topology.freq_domains[self.machine.domain_of[c]].voltage_domain;
        self.topology.voltage_domains[vd]
            .freq_domains
            .iter()
            .filter_map(|&fd| {
                let dom = &self.topology.freq_domains[fd.index()];
                dom.pstate(self.domains[fd.index()].cur_khz)
                    .and_then(|p| p.voltage_mv)
            })
            .max()
            .map_or(1.0, |mv| f64::from(mv) / 1000.0)
    }

    /// Recompute (or recall) every running task's speed.
    fn refresh_rates(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let n = self.machine.cpus();
        let mut key = Vec::with_capacity(2 * n);
        for c in 0..n {
            match self.kernel.rqs[c].current {
                Some(t) => {
                    let task = &self.tasks[t];
                    key.push(task.phase_ids[task.phase]);
                    key.push((self.domains[self.machine.domain_of[c]].cur_khz / 1000) as u32);
                }
                None => key.extend([0, 0]),
            }
        }
        if let Some(r) = self.memo.get(&key) {
            self.rates = r.clone();
            return;
        }
        let smt = self.machine.spec.scheduler.smt_cpi_factor;
        let mut demands = Vec::new();
        let mut cpus = Vec::new();
        for c in 0..n {
            if let Some(t) = self.kernel.rqs[c].current {
                let task = &self.tasks[t];
                let sibling_busy = (0..n).any(|o| {
                    o != c
                        && self.machine.core_of[o] == self.machine.core_of[c]
                        && self.kernel.rqs[o].current.is_some()
                });
                let khz = self.domains[self.machine.domain_of[c]].cur_khz;
                demands.push(Demand {
                    phase: &task.profile.phases[task.phase],
                    cpu: c,
                    freq_ghz: khz as f64 / 1e6,
                    cpi_factor: if sibling_busy { smt } else { 1.0 },
                });
                cpus.push(c);
            }
        }
        let solution = solve(&self.machine, &demands);
        self.stats.solves += 1;
        if !solution.converged {
            self.stats.unconverged += 1;
        }
        let mut rates = vec![None; n];
        for (c, o) in cpus.into_iter().zip(solution.outcomes) {
            rates[c] = Some(o);
        }
        let rates = Arc::new(rates);
        if self.memo.len() > 100_000 {
            self.memo.clear();
        }
        self.memo.insert(key, rates.clone());
        self.rates = rates;
    }

    /// Instructions per ns of the task running on `c`.
    fn rate(&self, c: usize) -> f64 {
        let ghz = self.cpu_ghz(c);
        match self.rates[c] {
            Some(o) if ghz > 0.0 => 1.0 / o.tpi_ns,
            _ => 0.0,
        }
    }

    /// `now + span_ns`, rounded up to a whole nanosecond (at least one, so
    /// time always advances) and saturating for spans that never end.
    fn after(&self, span_ns: f64) -> Ns {
        let span = span_ns.ceil().max(1.0);
        if span >= (Ns::MAX - self.now) as f64 {
            Ns::MAX
        } else {
            self.now + span as Ns
        }
    }

    /// The earliest time something happens, capped at `target`.
    fn next_event(&self, target: Ns) -> Ns {
        let mut next = target;
        let spec = &self.machine.spec.governor;
        for (c, rq) in self.kernel.rqs.iter().enumerate() {
            if !rq.queue.is_empty() {
                next = next.min(rq.slice_end.max(self.now));
            }
            if let Some(t) = rq.current {
                let task = &self.tasks[t];
                let rate = self.rate(c);
                if rate > 0.0 {
                    let instr = task.remaining.min(task.phase_left);
                    next = next.min(self.after(instr / rate));
                }
                if self.cpu_ghz(c) > 0.0 {
                    next = next.min(self.after(task.burst_left_ns));
                }
            }
        }
        for task in &self.tasks {
            match task.life {
                Life::Sleeping { until } => next = next.min(until),
                Life::Pending => next = next.min(task.arrival),
                _ => {}
            }
        }
        for d in &self.domains {
            if let Some((_, at)) = d.pending {
                next = next.min(at);
            }
            if let Some(at) = d.governor.next_eval(spec) {
                next = next.min(at);
            }
        }
        next.min(self.next_balance).max(self.now)
    }

    /// Integrate counters, energy and governor load over `[now, to)`.
    fn integrate(&mut self, to: Ns) {
        let dt = to - self.now;
        if dt == 0 {
            return;
        }
        self.stats.spans += 1;
        let dtf = dt as f64;
        let p = &self.machine.spec.power;
        let v_max = self
            .topology
            .freq_domains
            .iter()
            .filter_map(|d| d.pstates.last().and_then(|s| s.voltage_mv))
            .max()
            .map_or(1.0, |mv| f64::from(mv) / 1000.0);
        let mut package_w = vec![p.uncore_w; self.topology.package_count()];
        let mut package_idle_j = vec![0.0; package_w.len()];
        let mut bytes = 0.0;
        for c in 0..self.machine.cpus() {
            let volts = self.volts(c);
            let ghz = self.cpu_ghz(c);
            let fd = self.machine.domain_of[c];
            let max_khz = self.topology.freq_domains[fd].max_khz();
            let local = self.topology.freq_domains[fd]
                .cpus
                .iter()
                .position(|x| x.0 as usize == c)
                .unwrap_or(0);
            let pkg = self.machine.package_of[c];
            let rq = &self.kernel.rqs[c];
            for &w in &rq.queue {
                self.tasks[w].acc.wait_ns += dtf;
            }
            match (rq.current, self.rates[c]) {
                (Some(t), Some(o)) => {
                    let rate = if ghz > 0.0 { 1.0 / o.tpi_ns } else { 0.0 };
                    let instr = (rate * dtf).min(self.tasks[t].remaining);
                    let phase = &self.tasks[t].profile.phases[self.tasks[t].phase];
                    let (api, l1d) = (phase.api, phase.l1d_refs_per_instr);
                    let demand = 1.0 - phase.prefetch_coverage;
                    let acc = &mut self.tasks[t].acc;
                    acc.instructions += instr;
                    acc.cycles += ghz * dtf;
                    acc.l1d_refs += instr * l1d;
                    acc.l1d_misses += instr * api;
                    acc.llc_refs += instr * api;
                    // Every line brought in counts as a line in; only the
                    // ones the prefetcher did not cover are demand misses.
                    acc.llc_misses += instr * api * o.miss_ratio * demand;
                    acc.lines_in += instr * api * o.miss_ratio;
                    acc.on_cpu_ns += dtf;
                    let task = &mut self.tasks[t];
                    task.remaining -= instr;
                    task.phase_left -= instr;
                    if task.burst_left_ns.is_finite() && ghz > 0.0 {
                        task.burst_left_ns -= dtf;
                    }
                    self.sched[t].vruntime += dtf * 1024.0 / self.sched[t].weight;
                    if ghz > 0.0 {
                        bytes += o.bytes_per_ns * dtf;
                    }
                    package_w[pkg] += power::active_w(p, volts, ghz, o.compute_fraction);
                    self.busy_ns[c] += dtf;
                    let cur = self.domains[fd].cur_khz;
                    self.domains[fd].governor.account(
                        &self.machine.spec.governor,
                        local,
                        dt,
                        true,
                        cur,
                        max_khz,
                    );
                }
                _ => {
                    package_idle_j[pkg] +=
                        power::idle_j(p, volts, v_max, ghz, rq.idle_since, (self.now, to));
                    let cur = self.domains[fd].cur_khz;
                    self.domains[fd].governor.account(
                        &self.machine.spec.governor,
                        local,
                        dt,
                        false,
                        cur,
                        max_khz,
                    );
                }
            }
        }
        let secs = dtf / NS_PER_S;
        let package_j: f64 =
            package_w.iter().sum::<f64>() * secs + package_idle_j.iter().sum::<f64>();
        self.package_j += package_j;
        self.system_j +=
            package_j + (p.base_w + p.mem_idle_w) * secs + p.mem_nj_per_byte * 1e-9 * bytes;
        self.now = to;
    }
}

/// An exponentially distributed sample with the given mean.
fn exponential(rng: &mut ChaCha8Rng, mean: f64) -> f64 {
    let u: f64 = rng.random::<f64>();
    -mean * (1.0f64 - u).max(1e-12).ln()
}

impl SimPlatform {
    /// Run until `target` or until every managed task has finished.
    fn run_until(&mut self, target: Ns) {
        while !self.workload_done() && self.now < target {
            self.refresh_rates();
            let next = self.next_event(target);
            self.integrate(next);
            self.process_events();
        }
    }

    fn workload_done(&self) -> bool {
        self.waiting_after.is_empty()
            && self
                .tasks
                .iter()
                .all(|t| !t.managed || matches!(t.life, Life::Exited))
    }

    fn process_events(&mut self) {
        let now = self.now;
        self.dirty = true;
        for d in 0..self.domains.len() {
            if let Some((khz, at)) = self.domains[d].pending {
                if at <= now {
                    self.domains[d].cur_khz = khz;
                    self.domains[d].pending = None;
                }
            }
        }
        for c in 0..self.machine.cpus() {
            let Some(t) = self.kernel.rqs[c].current else {
                continue;
            };
            if self.tasks[t].remaining <= EPS_INSTR {
                if matches!(self.tasks[t].role, Role::Make { .. }) {
                    self.make_burst_done(t, c);
                } else {
                    self.complete(t, c);
                }
            } else if self.tasks[t].phase_left <= EPS_INSTR {
                let task = &mut self.tasks[t];
                if task.phase + 1 < task.profile.phases.len() {
                    task.phase += 1;
                }
                task.phase_left = task.profile.phases[task.phase]
                    .instructions
                    .unwrap_or(f64::INFINITY);
                let task = task.clone();
                self.tasks[t].burst_left_ns = self.burst(&task);
            } else if self.tasks[t].burst_left_ns <= 0.5 {
                let until = now + self.sleep_ns(t).max(1);
                self.tasks[t].life = Life::Sleeping { until };
                self.switch_out(t, c);
            }
        }
        for t in 0..self.tasks.len() {
            match self.tasks[t].life {
                Life::Pending if self.tasks[t].arrival <= now => {
                    self.tasks[t].started = now;
                    self.wake(t, true);
                }
                Life::Sleeping { until } if until <= now => {
                    let task = self.tasks[t].clone();
                    self.tasks[t].burst_left_ns = self.burst(&task);
                    self.wake(t, false);
                }
                _ => {}
            }
        }
        for c in 0..self.machine.cpus() {
            let rq = &self.kernel.rqs[c];
            if rq.current.is_none() || (!rq.queue.is_empty() && rq.slice_end <= now) {
                if let Some(prev) = rq.current {
                    self.sched[prev].switches += 1;
                }
                self.schedule(c);
            }
        }
        let spec = self.machine.spec.governor.clone();
        for d in 0..self.domains.len() {
            if self.domains[d]
                .governor
                .next_eval(&spec)
                .is_some_and(|at| at <= now)
            {
                let cur = self.domains[d]
                    .pending
                    .map_or(self.domains[d].cur_khz, |p| p.0);
                let dom = &self.topology.freq_domains[d];
                if let Some(khz) = self.domains[d].governor.evaluate(&spec, dom, now, cur) {
                    self.set_freq(d, khz);
                }
            }
        }
        if self.next_balance <= now {
            for (t, from, to) in self.kernel.balance(&self.machine, &self.sched) {
                let was_running = self.kernel.dequeue(t, from);
                if was_running {
                    self.sched[t].switches += 1;
                }
                if self.kernel.enqueue(&mut self.sched, t, to, now, false) {
                    self.schedule(to);
                }
                if was_running {
                    self.schedule(from);
                }
            }
            self.next_balance =
                now + ns(self.machine.spec.scheduler.balance_interval_ms / 1000.0).max(1);
        }
    }

    /// Let CPU `c` pick its next task, pulling one from elsewhere if it would idle.
    fn schedule(&mut self, c: usize) {
        if self
            .kernel
            .pick_next(&mut self.sched, c, self.now)
            .is_some()
        {
            return;
        }
        if let Some((t, from)) = self.kernel.idle_pull(&self.sched, c) {
            self.kernel.dequeue(t, from);
            self.kernel.enqueue(&mut self.sched, t, c, self.now, false);
            self.kernel.pick_next(&mut self.sched, c, self.now);
        }
    }

    /// Task `t` leaves CPU `c` (blocks, stops or exits).
    fn switch_out(&mut self, t: usize, c: usize) {
        if self.kernel.dequeue(t, c) {
            self.sched[t].switches += 1;
            self.schedule(c);
        }
    }

    fn wake(&mut self, t: usize, fresh: bool) {
        self.tasks[t].life = Life::Runnable;
        let Some(c) = self.kernel.select_cpu(&self.sched[t]) else {
            return;
        };
        if self.kernel.enqueue(&mut self.sched, t, c, self.now, fresh) {
            match self.kernel.rqs[c].current {
                None => self.schedule(c),
                Some(_) => self.kernel.rqs[c].slice_end = self.now,
            }
        }
    }

    fn complete(&mut self, t: usize, c: usize) {
        let now = self.now;
        self.tasks[t].finished = Some(now);
        self.tasks[t].life = Life::Exited;
        self.switch_out(t, c);
        if let Role::Job { job, helper } = self.tasks[t].role {
            self.job_done(job, helper);
        }
        let spec = self.tasks[t].spec;
        if spec == usize::MAX {
            return;
        }
        let instance = self.instance_of(t);
        let owed = self.owed.entry((spec, instance)).or_insert(1);
        *owed = owed.saturating_sub(1);
        if *owed > 0 {
            let restarted = self.spawn(spec, instance, now);
            self.tasks[restarted].started = now;
            return;
        }
        let finished_spec = (0..self.scenario.spec.tasks[spec].count)
            .all(|k| self.owed.get(&(spec, k)) == Some(&0));
        if finished_spec {
            let name = self.scenario.spec.tasks[spec]
                .name
                .clone()
                .unwrap_or_else(|| self.scenario.spec.tasks[spec].profile.clone());
            let ready: Vec<(usize, u32)> = self
                .waiting_after
                .iter()
                .copied()
                .filter(|&(i, _)| {
                    self.scenario.spec.tasks[i].after.as_deref() == Some(name.as_str())
                })
                .collect();
            self.waiting_after.retain(|w| !ready.contains(w));
            for (i, k) in ready {
                self.spawn(i, k, now);
            }
        }
    }

    /// Which instance of its spec a task is (from its name's `#k` suffix).
    fn instance_of(&self, t: usize) -> u32 {
        self.tasks[t]
            .name
            .rsplit_once('#')
            .and_then(|(_, k)| k.parse().ok())
            .unwrap_or(0)
    }

    fn set_freq(&mut self, d: usize, khz: u64) {
        let dom = &mut self.domains[d];
        let target = dom.pending.map_or(dom.cur_khz, |p| p.0);
        if khz == target {
            return;
        }
        let latency = u64::from(self.topology.freq_domains[d].transition_latency_us) * 1000;
        if latency == 0 {
            dom.cur_khz = khz;
            dom.pending = None;
        } else {
            dom.pending = Some((khz, self.now + latency));
            if self.machine.spec.frequency.stall_on_transition {
                dom.stall_until = self.now + latency;
            }
        }
        self.dirty = true;
    }

    /// Re-derive a managed task's allowed CPUs and move it if it sits outside them.
    fn reconfine(&mut self, t: usize) {
        let set = match &self.tasks[t].own_cpus {
            Some(own) => {
                let both = own.intersection(&self.managed_cpus);
                if both.is_empty() {
                    self.managed_cpus.clone()
                } else {
                    both
                }
            }
            None => self.managed_cpus.clone(),
        };
        let allowed: Vec<bool> = (0..self.machine.cpus())
            .map(|c| set.contains(CpuId(c as u32)))
            .collect();
        self.sched[t].allowed = allowed;
        let runnable = self.tasks[t].life == Life::Runnable;
        if let Some(c) = self.sched[t].cpu {
            if runnable && !self.sched[t].allowed[c] {
                let was_running = self.kernel.dequeue(t, c);
                if was_running {
                    self.sched[t].switches += 1;
                    self.schedule(c);
                }
                self.wake(t, false);
            }
        }
    }

    /// Simulator work counters.
    pub fn stats(&self) -> SimStats {
        self.stats
    }

    /// Current simulated time, s.
    pub fn now_s(&self) -> f64 {
        self.now as f64 / NS_PER_S
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

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            counters: CounterKind::ALL.into_iter().collect(),
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
        let mut report = ApplyReport::default();
        let by_id: HashMap<TaskId, usize> = self
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.life != Life::Exited)
            .map(|(i, t)| (t.id, i))
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
            touched = (0..self.tasks.len())
                .filter(|&t| self.tasks[t].managed)
                .collect();
        }
        for t in touched {
            if self.tasks[t].life != Life::Exited {
                self.reconfine(t);
            }
        }
        for (&d, setting) in &plan.frequency {
            let d = d.index();
            let cur = self.domains[d]
                .pending
                .map_or(self.domains[d].cur_khz, |p| p.0);
            let governor = DomainGovernor::new(
                *setting,
                self.topology.freq_domains[d].cpus.len(),
                self.now,
                cur,
            );
            let khz = governor.initial_khz(&self.topology.freq_domains[d], cur);
            self.domains[d].governor = governor;
            self.set_freq(d, khz);
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
                        self.kernel.dequeue(t, c);
                    }
                }
                (GangAction::Continue, Life::Stopped) => self.wake(t, false),
                _ => {}
            }
        }
        self.dirty = true;
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
        let interval = (self.now - self.last_observe).max(1) as f64;
        let now_s = self.now as f64 / NS_PER_S;
        let mut tasks = Vec::new();
        for (i, task) in self.tasks.iter_mut().enumerate() {
            if matches!(task.life, Life::Pending) || task.exit_reported {
                continue;
            }
            let (a, r) = (&task.acc, &task.reported);
            let d = |x: f64, y: f64| Some((x.floor() - y.floor()).max(0.0) as u64);
            let s = &self.sched[i];
            let counters = Counters {
                instructions: d(a.instructions, r.instructions),
                cycles: d(a.cycles, r.cycles),
                llc_references: d(a.llc_refs, r.llc_refs),
                llc_misses: d(a.llc_misses, r.llc_misses),
                lines_in: d(a.lines_in, r.lines_in),
                l1d_references: d(a.l1d_refs, r.l1d_refs),
                l1d_misses: d(a.l1d_misses, r.l1d_misses),
                mem_transactions: d(a.lines_in, r.lines_in),
                on_cpu_ns: d(a.on_cpu_ns, r.on_cpu_ns),
                runqueue_wait_ns: d(a.wait_ns, r.wait_ns),
                context_switches: Some(s.switches - task.reported_switches),
                migrations: Some(s.migrations - task.reported_migrations),
            };
            task.reported = task.acc.clone();
            task.reported_switches = s.switches;
            task.reported_migrations = s.migrations;
            let cpu = s.cpu;
            let running = cpu.is_some_and(|c| self.kernel.rqs[c].current == Some(i));
            let state = match task.life {
                Life::Exited => {
                    task.exit_reported = true;
                    TaskState::Exited
                }
                Life::Stopped => TaskState::Stopped,
                Life::Sleeping { .. } => TaskState::Sleeping,
                _ if running => TaskState::Running,
                _ => TaskState::Runnable,
            };
            tasks.push(TaskSample {
                id: task.id,
                process: task.id.as_process(),
                name: task.name.clone(),
                managed: task.managed,
                state,
                cpu: cpu.map(|c| CpuId(c as u32)),
                allowed: s
                    .allowed
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| **a)
                    .map(|(c, _)| CpuId(c as u32))
                    .collect(),
                nice: task.nice,
                started_s: task.started as f64 / NS_PER_S,
                finished_s: task.finished.map(|f| f as f64 / NS_PER_S),
                counters,
            });
        }
        let cpus = (0..self.machine.cpus())
            .map(|c| CpuSample {
                id: CpuId(c as u32),
                freq_khz: Some(self.domains[self.machine.domain_of[c]].cur_khz),
                utilisation: (self.busy_ns[c] / interval).min(1.0),
                nr_running: Some(self.kernel.rqs[c].nr() as u32),
            })
            .collect();
        self.busy_ns.iter_mut().for_each(|b| *b = 0.0);
        let power = PowerSample {
            package_j: Some(self.package_j - self.reported_package_j),
            system_j: Some(self.system_j - self.reported_system_j),
            source: Some(PowerSource::Measured),
        };
        self.reported_package_j = self.package_j;
        self.reported_system_j = self.system_j;
        let snapshot = Snapshot {
            time_s: now_s,
            interval_s: interval / NS_PER_S,
            topology: self.topology.clone(),
            tasks,
            cpus,
            power,
            parallelism_hint: self.scenario.spec.parallelism_hint,
            load_avg: None,
        };
        self.last_observe = self.now;
        Ok(snapshot)
    }

    fn finished(&self) -> bool {
        self.workload_done() || self.end.is_some_and(|e| self.now >= e)
    }
}
