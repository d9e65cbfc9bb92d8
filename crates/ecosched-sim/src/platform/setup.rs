//! Building a run from a scenario: the per-CPU and per-domain tables the
//! hot loop reads, the scenario's tasks (with their `after` and restart
//! bookkeeping), the `make -jN` build and the transient kernel threads.

use super::events::MinTree;
use super::gang::GangRun;
use super::loadavg::LoadTracker;
use super::rates::RateMemo;
use super::{ns, CpuFacts, Domain, Instance, SimPlatform, NS_PER_S};
use crate::contention::{solve, Demand};
use crate::governor::DomainGovernor;
use crate::kernel::Kernel;
use crate::observation::{Observe, Observer};
use crate::profile::{MissCurve, Phase, Profile, SleepSpec};
use crate::scenario::Scenario;
use crate::SimError;
use ecosched_model::FreqSetting;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

impl SimPlatform {
    /// Build the machine and workload of a scenario.
    pub fn new(scenario: &Scenario, seed: u64) -> Result<Self, SimError> {
        SimPlatform::numbered_from(scenario, seed, 1000)
    }

    /// [`SimPlatform::new`], numbering tasks from pid `first_pid`: the
    /// machines of one cluster take disjoint ranges, so that a task that
    /// moves between them keeps an id no other task has.
    pub fn numbered_from(scenario: &Scenario, seed: u64, first_pid: u32) -> Result<Self, SimError> {
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
        let cpu_facts = (0..n)
            .map(|c| {
                let domain = machine.domain_of[c];
                let fd = &topology.freq_domains[domain];
                CpuFacts {
                    domain,
                    local: fd.cpus.iter().position(|x| x.0 as usize == c).unwrap_or(0),
                    voltage_domain: fd.voltage_domain,
                    max_khz: fd.max_khz(),
                }
            })
            .collect();
        let v_max = topology
            .freq_domains
            .iter()
            .filter_map(|d| d.pstates.last().and_then(|s| s.voltage_mv))
            .max()
            .map_or(1.0, |mv| f64::from(mv) / 1000.0);
        let packages = topology.package_count();
        let mut sim = SimPlatform {
            scenario: scenario.clone(),
            machine: machine.clone(),
            topology: topology.clone(),
            tick,
            now: 0,
            end: scenario.spec.duration_s.map(ns),
            tasks: Vec::new(),
            sched: Vec::new(),
            free: Vec::new(),
            order: Vec::new(),
            next_seq: 0,
            timers: BinaryHeap::new(),
            live_managed: 0,
            kernel: Kernel::new(&machine, tick),
            domains: Vec::new(),
            cpu_facts,
            volts: vec![1.0; topology.voltage_domains.len()],
            v_max,
            busy_siblings: vec![0; n],
            limit: super::limit::PowerLimit::new(&machine),
            managed_cpus: topology.online_cpus(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            next_pid: first_pid,
            waiting_after: Vec::new(),
            owed: HashMap::new(),
            next_balance: ns(machine.spec.scheduler.balance_interval_ms / 1000.0),
            rates: RateMemo::new(&machine),
            warmup: super::warmup::CacheWarmup::new(&machine),
            busy_ns: vec![0.0; n],
            cpu_at: vec![0; n],
            wake_until: vec![0; n],
            cpu_next: MinTree::new(n),
            cpu_check: vec![u64::MAX; n],
            cpu_stale: vec![false; n],
            stale: Vec::new(),
            dom_next: MinTree::new(topology.freq_domains.len()),
            fd_cpus: vec![Vec::new(); topology.freq_domains.len()],
            vd_cpus: vec![Vec::new(); topology.voltage_domains.len()],
            idle_retry: true,
            package_count: packages,
            package_j: 0.0,
            system_j: 0.0,
            reported_package_j: 0.0,
            reported_system_j: 0.0,
            true_by_name: Default::default(),
            last_observe: 0,
            stats: Default::default(),
            phase_keys,
            lengths: Vec::new(),
            build: None,
            gang: None::<GangRun>,
            load: LoadTracker::new(tick),
            observer: Observer::new(
                Observe::Linux,
                n,
                machine.spec.pmu.as_ref(),
                &Default::default(),
                &Default::default(),
            ),
            observe_mode: Observe::Linux,
            extra_counters: Default::default(),
            schedule: None,
        };
        let initial = FreqSetting::Governor(scenario.spec.governor);
        let limit_period = sim.limit.as_ref().map(super::limit::PowerLimit::period);
        for (d, dom) in topology.freq_domains.iter().enumerate() {
            let governor =
                DomainGovernor::new(initial, dom.cpus.len(), 0, dom.max_khz(), limit_period);
            let cur = governor.initial_khz(dom, dom.max_khz(), true);
            let cur = sim.initial_cap(d, cur);
            sim.domains.push(Domain {
                cur_khz: cur,
                pending: None,
                stall_until: 0,
                next_eval: governor.next_eval(&machine.spec.governor),
                deferred: false,
                governor,
            });
        }
        for (c, facts) in sim.cpu_facts.iter().enumerate() {
            sim.fd_cpus[facts.domain].push(c);
            sim.vd_cpus[facts.voltage_domain].push(c);
        }
        for d in 0..sim.domains.len() {
            sim.refresh_dom_next(d);
        }
        sim.refresh_volts();
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
                let instance = Instance { spec: i, k };
                if spec.after.is_some() {
                    sim.waiting_after.push(instance);
                } else {
                    sim.spawn(instance, ns(spec.start_s + spec.stagger_s * f64::from(k)));
                }
            }
        }
        if let Some(g) = &scenario.spec.jobgraph {
            sim.start_build(g, seed);
        }
        if let Some(tr) = scenario.spec.transients.clone() {
            let profile = Arc::new(transient_profile(tr.run_ms, tr.period_ms));
            let id = sim.phase_keys.len() as u32 + 1;
            // Reserved, so that a profile added later (a task migrating in)
            // never gets the transients' id.
            sim.phase_keys.insert(("\0transient".into(), 0), id);
            let cpus = sim.machine.cpus();
            for k in 0..tr.count {
                let first = ns(sim.rng.random::<f64>() * tr.period_ms / 1000.0);
                let slot = sim.push_task(
                    format!("kworker/{k}"),
                    None,
                    false,
                    tr.nice,
                    profile.clone(),
                    vec![id],
                    f64::INFINITY,
                    first,
                );
                if tr.per_cpu {
                    let own = k as usize % cpus;
                    for (c, a) in sim.sched[slot].allowed.iter_mut().enumerate() {
                        *a = c == own;
                    }
                }
            }
        }
        Ok(sim)
    }

    /// Time per instruction of a phase running alone at the highest frequency.
    pub(super) fn alone_tpi_ns(&self, phase: &Phase) -> f64 {
        let ghz = self.topology.freq_domains[self.machine.domain_of[0]].max_khz() as f64 / 1e6;
        let d = [Demand {
            phase,
            cpu: 0,
            freq_ghz: ghz,
            cpi_factor: 1.0,
        }];
        solve(&self.machine, &d).outcomes[0].tpi_ns
    }
}

/// A kernel or daemon thread that wakes about every `period_ms`, runs
/// `run_ms` of pure computation and sleeps again (random, seeded).
fn transient_profile(run_ms: f64, period_ms: f64) -> Profile {
    Profile {
        description: "transient kernel/daemon thread".into(),
        source: "transient threads of docs/design/simulator.md, The kernel scheduler".into(),
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
