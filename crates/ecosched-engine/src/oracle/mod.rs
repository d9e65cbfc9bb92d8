//! The oracle (`docs/design/papers.md`, "Baselines and the oracle"): the
//! best *static* configuration of a small scenario — each managed task
//! pinned to one CPU and each frequency domain held at one P-state — found
//! by simulating every configuration that is not a symmetric copy of one
//! already tried.
//!
//! ```text
//!   machine ── package ── last-level cache ── CPU ── tasks on it
//!              (freq if    (freq if the        (freq if the
//!               per-package) domain is the      domain is one
//!                            cache's CPUs)      CPU)
//! ```
//!
//! Symmetry pruning follows PAM's eq. 3 (non-redundant assignments): CPUs
//! under one cache are interchangeable, so are caches within a package and
//! packages within the machine, and so are the instances of one task line
//! of the scenario. A configuration is reduced to a canonical key, built
//! bottom-up along the tree above (each node: its frequency where its
//! frequency domain sits, then its children's keys sorted); configurations
//! with equal keys are simulated once. A machine whose frequency domains do
//! not line up with that tree keeps CPU identities in the key (no pruning).
//!
//! Placements keep every CPU within one task of the others (at most
//! ⌈tasks/CPUs⌉ tasks each): with no more tasks than CPUs every task gets
//! a CPU of its own. A scenario whose managed work is a `make -jN` job
//! graph has no fixed tasks to pin: its placement is the CPU set all
//! managed work is confined to, every non-empty subset tried.
//!
//! The exhaustive search takes at most [`MAX_TASKS`] tasks on
//! [`MAX_CPUS`] CPUs. A larger scenario is searched over a smaller family
//! instead ([`confined`]: work confined to whole last-level caches, one
//! P-state rank for every domain), and the search says which it did.
//!
//! With a `slowdown` limit the choice is the lowest objective among the
//! configurations whose throughput (work per second) is within that
//! fraction of the fastest configuration tried, so that an energy figure
//! is never bought with work left undone.

pub mod confined;

use crate::experiment::{simulate_policy_into, SimOptions, SimRun};
use crate::EngineError;
use ecosched_model::trace::NullSink;
use ecosched_model::{CounterKind, CpuId, CpuSet, FreqDomainId, TypedStats};
use ecosched_policy::oracle::{FixedConfig, Objective, OracleStats, SearchGoal};
use ecosched_policy::PolicyError;
use ecosched_sim::Scenario;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// Most managed tasks the exhaustive search takes.
pub const MAX_TASKS: usize = 8;
/// Most online CPUs the exhaustive search takes.
pub const MAX_CPUS: usize = 8;
/// Most raw configurations (before symmetry pruning) enumerated.
pub const MAX_RAW: u64 = 20_000_000;

/// The configuration the search chose.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OracleChoice {
    /// Task name → CPU (empty for a confined job graph).
    pub placement: BTreeMap<String, u32>,
    /// The CPU set all managed work is confined to (job graphs), as a list.
    pub cpus: Option<String>,
    /// Each frequency domain's MHz, in domain order.
    pub freq_mhz: Vec<u64>,
    /// Each frequency domain's kHz (the exact P-state), in domain order.
    pub freq_khz: Vec<u64>,
}

impl OracleChoice {
    /// The configuration as a policy, to run it again.
    pub fn policy(&self) -> FixedConfig {
        FixedConfig::new(
            self.placement
                .iter()
                .map(|(t, c)| (t.clone(), CpuId(*c)))
                .collect(),
            self.cpus.as_deref().and_then(|c| c.parse::<CpuSet>().ok()),
            self.freq_khz
                .iter()
                .enumerate()
                .map(|(d, k)| (FreqDomainId(d), *k))
                .collect(),
        )
    }

    /// One line: `a@0 b@1 | 2400,1600 MHz`; runs of domains at one
    /// frequency are written once with their count (`3700×16,1500×176`).
    pub fn label(&self) -> String {
        let place = match &self.cpus {
            Some(c) => format!("cpus {c}"),
            None => self
                .placement
                .iter()
                .map(|(t, c)| format!("{t}@{c}"))
                .collect::<Vec<_>>()
                .join(" "),
        };
        let mut runs: Vec<(u64, usize)> = Vec::new();
        for &f in &self.freq_mhz {
            match runs.last_mut() {
                Some((g, n)) if *g == f => *n += 1,
                _ => runs.push((f, 1)),
            }
        }
        let freqs: Vec<String> = runs
            .iter()
            .map(|&(f, n)| {
                if n >= 3 {
                    format!("{f}×{n}")
                } else {
                    vec![f.to_string(); n].join(",")
                }
            })
            .collect();
        format!("{place} | {} MHz", freqs.join(","))
    }
}

/// Which family of configurations the search went through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMethod {
    /// Every static placement and P-state combination, up to symmetry.
    Exhaustive,
    /// Work confined to whole last-level caches, one P-state rank
    /// ([`confined`]): for scenarios too large for the exhaustive search.
    Confined,
}

/// What the search did and found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OracleSearch {
    /// What it minimised.
    pub objective: Objective,
    /// The throughput it could give up against the fastest configuration
    /// tried, as a fraction, if limited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slowdown: Option<f64>,
    /// Which family of configurations it searched.
    pub method: SearchMethod,
    /// Configurations before symmetry pruning.
    pub raw_configurations: u64,
    /// Configurations simulated (one per symmetry class).
    pub evaluated: usize,
    /// Wall-clock seconds the search took.
    pub search_s: f64,
    /// The best configuration.
    pub choice: OracleChoice,
    /// Its objective value (J, J·s, s, or J per 10⁹ instructions).
    pub score: f64,
}

/// Where a frequency domain sits in the machine tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Cpu,
    Cache,
    Package,
    Machine,
    /// Lines up with no node: CPU identities stay in the key.
    Irregular,
}

/// The machine tree and the work to place, precomputed.
struct Space {
    /// Online CPUs in index order.
    cpus: Vec<CpuId>,
    package_of: Vec<usize>,
    cache_of: Vec<usize>,
    domain_of: Vec<usize>,
    levels: Vec<Level>,
    /// Each domain's P-states, kHz.
    pstates: Vec<Vec<u64>>,
    /// Managed instances (name, class), or none for a job graph.
    tasks: Vec<(String, usize)>,
    job_graph: bool,
}

fn refuse(msg: String) -> EngineError {
    EngineError::from(PolicyError::Incompatible(format!("oracle: {msg}")))
}

impl Space {
    fn new(scenario: &Scenario) -> Result<Space, EngineError> {
        let m = &scenario.machine;
        let topo = &m.topology;
        let idx: Vec<usize> = (0..topo.cpus.len())
            .filter(|&c| topo.cpus[c].online)
            .collect();
        if idx.len() > MAX_CPUS {
            return Err(refuse(format!(
                "{} has {} online CPUs; the exhaustive search is limited to {MAX_TASKS} tasks on {MAX_CPUS} CPUs",
                m.spec.name,
                idx.len()
            )));
        }
        let mut tasks = Vec::new();
        for (i, t) in scenario.spec.tasks.iter().enumerate() {
            if t.managed {
                for k in 0..t.count {
                    tasks.push((scenario.instance_name(i, k), i));
                }
            }
        }
        let job_graph = scenario.spec.jobgraph.is_some();
        if job_graph && !tasks.is_empty() {
            return Err(refuse(
                "a scenario with both a job graph and named tasks has no single static placement"
                    .into(),
            ));
        }
        if tasks.len() > MAX_TASKS {
            return Err(refuse(format!(
                "{} has {} managed tasks; the exhaustive search is limited to {MAX_TASKS} tasks on {MAX_CPUS} CPUs",
                scenario.spec.name,
                tasks.len()
            )));
        }
        if tasks.is_empty() && !job_graph {
            return Err(refuse(format!(
                "{} has no managed work to place",
                scenario.spec.name
            )));
        }
        let cpus: Vec<CpuId> = idx.iter().map(|&c| topo.cpus[c].id).collect();
        let package_of: Vec<usize> = idx.iter().map(|&c| m.package_of[c]).collect();
        let cache_of: Vec<usize> = idx.iter().map(|&c| m.llc_of[c]).collect();
        let domain_of: Vec<usize> = idx.iter().map(|&c| m.domain_of[c]).collect();
        let group = |key: &[usize], d: usize| -> Vec<usize> {
            (0..idx.len()).filter(|&i| key[i] == d).collect()
        };
        let levels = (0..topo.freq_domains.len())
            .map(|d| {
                let members = group(&domain_of, d);
                let Some(&first) = members.first() else {
                    return Level::Irregular;
                };
                if members.len() == 1 {
                    Level::Cpu
                } else if members == group(&cache_of, cache_of[first]) {
                    Level::Cache
                } else if members == group(&package_of, package_of[first]) {
                    Level::Package
                } else if members.len() == idx.len() {
                    Level::Machine
                } else {
                    Level::Irregular
                }
            })
            .collect();
        let pstates = topo
            .freq_domains
            .iter()
            .map(|d| d.pstates.iter().map(|p| p.freq_khz).collect())
            .collect();
        Ok(Space {
            cpus,
            package_of,
            cache_of,
            domain_of,
            levels,
            pstates,
            tasks,
            job_graph,
        })
    }

    /// The canonical key of CPU loads (sorted task classes per CPU) and
    /// per-domain P-state indices.
    fn key(&self, loads: &[Vec<usize>], freqs: &[usize]) -> String {
        let irregular = self.levels.contains(&Level::Irregular);
        let freq_at = |c: usize, level: Level| -> String {
            let d = self.domain_of[c];
            if self.levels[d] == level {
                format!("f{}", freqs[d])
            } else {
                String::new()
            }
        };
        let mut packages: BTreeMap<usize, BTreeMap<usize, Vec<String>>> = BTreeMap::new();
        for c in 0..self.cpus.len() {
            let mut k = format!("{}{:?}", freq_at(c, Level::Cpu), loads[c]);
            if irregular {
                k = format!("#{c}f{}{k}", freqs[self.domain_of[c]]);
            }
            packages
                .entry(self.package_of[c])
                .or_default()
                .entry(self.cache_of[c])
                .or_default()
                .push(k);
        }
        let first_cpu = |pred: &dyn Fn(usize) -> bool| (0..self.cpus.len()).find(|&c| pred(c));
        let mut pkg_keys: Vec<String> = packages
            .iter()
            .map(|(&p, caches)| {
                let mut cache_keys: Vec<String> = caches
                    .iter()
                    .map(|(&l, cpu_keys)| {
                        let mut ks = cpu_keys.clone();
                        ks.sort();
                        let f = first_cpu(&|c| self.cache_of[c] == l)
                            .map(|c| freq_at(c, Level::Cache))
                            .unwrap_or_default();
                        format!("{f}({})", ks.join(","))
                    })
                    .collect();
                cache_keys.sort();
                let f = first_cpu(&|c| self.package_of[c] == p)
                    .map(|c| freq_at(c, Level::Package))
                    .unwrap_or_default();
                format!("{f}[{}]", cache_keys.join(","))
            })
            .collect();
        pkg_keys.sort();
        let f = freq_at(0, Level::Machine);
        format!("{f}{{{}}}", pkg_keys.join(","))
    }

    /// Every placement: per CPU, the indices of the tasks on it (or, for a
    /// job graph, a marker on each CPU of the confining set).
    fn placements(&self) -> Vec<Vec<Vec<usize>>> {
        let n_cpu = self.cpus.len();
        let mut out = Vec::new();
        if self.job_graph {
            for mask in 1u32..(1 << n_cpu) {
                out.push(
                    (0..n_cpu)
                        .map(|c| {
                            if mask & (1 << c) != 0 {
                                vec![0]
                            } else {
                                vec![]
                            }
                        })
                        .collect(),
                );
            }
            return out;
        }
        let cap = self.tasks.len().div_ceil(n_cpu).max(1);
        let mut current: Vec<Vec<usize>> = vec![Vec::new(); n_cpu];
        fn go(
            t: usize,
            n: usize,
            cap: usize,
            current: &mut Vec<Vec<usize>>,
            out: &mut Vec<Vec<Vec<usize>>>,
        ) {
            if t == n {
                out.push(current.clone());
                return;
            }
            for c in 0..current.len() {
                if current[c].len() < cap {
                    current[c].push(t);
                    go(t + 1, n, cap, current, out);
                    current[c].pop();
                }
            }
        }
        go(0, self.tasks.len(), cap, &mut current, &mut out);
        out
    }

    /// Configurations before pruning: `placements` × P-state combinations.
    fn raw_count(&self, placements: usize) -> u64 {
        self.pstates.iter().fold(placements as u64, |acc, p| {
            acc.saturating_mul(p.len() as u64)
        })
    }

    fn config(&self, placement: &[Vec<usize>], freqs: &[usize]) -> (FixedConfig, OracleChoice) {
        let freq_khz: BTreeMap<FreqDomainId, u64> = freqs
            .iter()
            .enumerate()
            .map(|(d, &i)| (FreqDomainId(d), self.pstates[d][i]))
            .collect();
        let freq_mhz = freq_khz.values().map(|k| k / 1000).collect();
        let khz: Vec<u64> = freq_khz.values().copied().collect();
        if self.job_graph {
            let set: CpuSet = (0..self.cpus.len())
                .filter(|&c| !placement[c].is_empty())
                .map(|c| self.cpus[c])
                .collect();
            let choice = OracleChoice {
                placement: BTreeMap::new(),
                cpus: Some(set.to_list()),
                freq_mhz,
                freq_khz: khz,
            };
            return (
                FixedConfig::new(BTreeMap::new(), Some(set), freq_khz),
                choice,
            );
        }
        let mut task_cpu = BTreeMap::new();
        for (c, on) in placement.iter().enumerate() {
            for &t in on {
                task_cpu.insert(self.tasks[t].0.clone(), self.cpus[c]);
            }
        }
        let choice = OracleChoice {
            placement: task_cpu.iter().map(|(k, v)| (k.clone(), v.0)).collect(),
            cpus: None,
            freq_mhz,
            freq_khz: khz,
        };
        (FixedConfig::new(task_cpu, None, freq_khz), choice)
    }
}

/// One configuration: per CPU the tasks on it, and per domain a P-state index.
type Candidate = (Vec<Vec<usize>>, Vec<usize>);

/// Every combination of per-domain P-state indices.
fn freq_combos(pstates: &[Vec<u64>]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for p in pstates {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                (0..p.len()).map(move |i| {
                    let mut v = prefix.clone();
                    v.push(i);
                    v
                })
            })
            .collect();
    }
    out
}

/// A run's objective value (lower is better), or `None` if it lacks the
/// figure.
pub fn score(run: &SimRun, objective: Objective) -> Option<f64> {
    let r = &run.report;
    match objective {
        Objective::Energy => r.energy_j,
        Objective::Edp => r.edp_js,
        Objective::Makespan => Some(r.makespan_s),
        // Per 10⁹ instructions: with all work finished this is the energy
        // over a fixed amount of work; cut off by a fixed duration it is
        // the energy per work done, so doing less never scores better.
        Objective::WorkEnergy => match (r.energy_j, r.instructions) {
            (Some(e), Some(i)) if i > 0 => Some(e / (i as f64 / 1e9)),
            _ => None,
        },
    }
}

/// The symmetry classes of `scenario`'s configurations, one representative
/// each, in enumeration order; and the raw count. Refused above
/// [`MAX_RAW`] raw configurations (balanced placements of at most
/// [`MAX_TASKS`] tasks on [`MAX_CPUS`] CPUs are at most 8! = 40320, so
/// only many P-states in many domains reach it).
fn candidates(space: &Space, scenario: &str) -> Result<(Vec<Candidate>, u64), EngineError> {
    let placements = space.placements();
    let raw = space.raw_count(placements.len());
    if raw > MAX_RAW {
        return Err(refuse(format!(
            "{scenario} has {raw} raw configurations; the exhaustive search enumerates at most {MAX_RAW} (and at most {MAX_TASKS} tasks on {MAX_CPUS} CPUs)"
        )));
    }
    let combos = freq_combos(&space.pstates);
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for placement in placements {
        let loads: Vec<Vec<usize>> = placement
            .iter()
            .map(|on| {
                let mut classes: Vec<usize> = if space.job_graph {
                    on.clone()
                } else {
                    on.iter().map(|&t| space.tasks[t].1).collect()
                };
                classes.sort_unstable();
                classes
            })
            .collect();
        for freqs in &combos {
            if seen.insert(space.key(&loads, freqs)) {
                out.push((placement.clone(), freqs.clone()));
            }
        }
    }
    Ok((out, raw))
}

/// One candidate's index, objective value and throughput, when it has them.
type Scored = (usize, Option<f64>, Option<f64>);

/// Whether `scenario` is beyond the exhaustive search's limits.
fn too_large(scenario: &Scenario) -> bool {
    let online = scenario
        .machine
        .topology
        .cpus
        .iter()
        .filter(|c| c.online)
        .count();
    let tasks: u32 = scenario
        .spec
        .tasks
        .iter()
        .filter(|t| t.managed)
        .map(|t| t.count)
        .sum();
    online > MAX_CPUS || tasks as usize > MAX_TASKS
}

/// Work per second of a run: instructions over the time the work took
/// (the makespan when everything finished, the scenario's duration when
/// it was cut off), so candidates that did less are slower.
fn throughput(run: &SimRun) -> Option<f64> {
    let r = &run.report;
    let time = if r.unfinished_tasks > 0 {
        r.simulated_s
    } else {
        r.makespan_s
    };
    r.instructions
        .filter(|&i| i > 0 && time > 0.0)
        .map(|i| i as f64 / time)
}

/// Search `scenario`'s static configurations for the one minimising the
/// goal's objective within its slowdown; returns its run (reported as
/// policy `oracle`) and what the search did. The candidates run side by
/// side on every core; `progress(done, total)` after each (from whichever
/// thread ran it).
pub fn search(
    scenario: &Scenario,
    goal: SearchGoal,
    options: &SimOptions,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<(SimRun, OracleSearch), EngineError> {
    let started = Instant::now();
    let (method, configs, raw) = if too_large(scenario) {
        let cands = confined::candidates(scenario);
        let n = cands.len() as u64;
        let configs: Vec<(FixedConfig, OracleChoice)> =
            cands.iter().map(confined::Candidate::config).collect();
        (SearchMethod::Confined, configs, n)
    } else {
        let space = Space::new(scenario)?;
        let (cands, raw) = candidates(&space, &scenario.spec.name)?;
        let configs = cands.iter().map(|(p, f)| space.config(p, f)).collect();
        (SearchMethod::Exhaustive, configs, raw)
    };
    // The work-normalised objective needs instructions whatever the
    // observation model shows the (counter-less) configuration.
    let mut options = options.clone();
    options.extra_counters.insert(CounterKind::Instructions);
    let total = configs.len();
    let simulate = |policy: FixedConfig| {
        simulate_policy_into(
            scenario,
            Box::new(policy),
            &options,
            &mut NullSink,
            &mut |_| {},
        )
    };
    // Each candidate's score and throughput, the candidates side by side
    // ([`crate::parallel`]). Without a throughput limit the best run so
    // far is kept (the lowest score, the first candidate among equals, as
    // the choice below picks), so that the chosen one need not run again;
    // with one, the chosen one runs again.
    let keep_best = goal.slowdown.is_none();
    let best: Mutex<Option<(usize, f64, SimRun)>> = Mutex::new(None);
    let progress = Mutex::new(progress);
    let indexed: Vec<(usize, &FixedConfig)> = configs
        .iter()
        .map(|(policy, _)| policy)
        .enumerate()
        .collect();
    let scored: Vec<(usize, f64, Option<f64>)> = crate::parallel::map_counted(
        &indexed,
        |&(i, policy)| {
            let run = simulate(policy.clone())?;
            let s = score(&run, goal.objective);
            let t = throughput(&run);
            if let (true, Some(s)) = (keep_best, s) {
                let mut best = best.lock().unwrap_or_else(PoisonError::into_inner);
                let better = best.as_ref().is_none_or(|(bi, bs, _)| {
                    s.total_cmp(bs).then(i.cmp(bi)) == std::cmp::Ordering::Less
                });
                if better {
                    *best = Some((i, s, run));
                }
            }
            Ok((i, s, t))
        },
        &|done, total| {
            if let Ok(mut progress) = progress.try_lock() {
                progress(done, total);
            }
        },
    )?
    .into_iter()
    .filter_map(|(i, s, t): Scored| s.map(|s| (i, s, t)))
    .collect();
    let best = best.into_inner().unwrap_or_else(PoisonError::into_inner);
    let fastest = scored
        .iter()
        .filter_map(|&(_, _, t)| t)
        .fold(0.0_f64, f64::max);
    let admissible = |t: Option<f64>| match goal.slowdown {
        None => true,
        Some(limit) => t.is_some_and(|t| t >= fastest * (1.0 - limit)),
    };
    let chosen = scored
        .iter()
        .filter(|&&(_, _, t)| admissible(t))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|&(i, s, _)| (i, s));
    let Some((index, score)) = chosen else {
        return Err(refuse(format!(
            "no configuration of {} gave the figures objective {} needs",
            scenario.spec.name,
            goal.objective.name()
        )));
    };
    let (policy, choice) = configs[index].clone();
    let mut run = match best {
        Some((i, _, run)) if i == index => run,
        _ => simulate(policy)?,
    };
    run.report.policy_stats = OracleStats {
        choice: choice.label(),
        evaluated: total as u64,
        configurations: raw,
    }
    .to_stats();
    Ok((
        run,
        OracleSearch {
            objective: goal.objective,
            slowdown: goal.slowdown,
            method,
            raw_configurations: raw,
            evaluated: total,
            search_s: started.elapsed().as_secs_f64(),
            choice,
            score,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_placements_are_tried_once() {
        // q6600: one package, two L2s of two cores, one frequency domain.
        // Two identical hmmers + two identical soplexes, one per core: the
        // classes on each L2 are {h,h}{s,s} or {h,s}{h,s}: two placements.
        let s = Scenario::load("merkel-2hmmer-2soplex").unwrap();
        let space = Space::new(&s).unwrap();
        let (cands, raw) = candidates(&space, "t").unwrap();
        let pstates = space.pstates.iter().map(Vec::len).product::<usize>();
        assert_eq!(cands.len(), 2 * pstates, "{cands:?}");
        // 4 tasks on 4 CPUs, one each: 4! placements.
        assert_eq!(raw, 24 * pstates as u64);
    }

    #[test]
    fn job_graph_subsets_prune_by_size() {
        // Phenom: four cores, one L3, per-core frequency: a confining set is
        // fixed by how many cores it has and at which P-states, and the
        // idle cores' P-states count too.
        let s = Scenario::load("richling-phenom-j1").unwrap();
        let space = Space::new(&s).unwrap();
        assert!(space.job_graph);
        let (cands, _) = candidates(&space, "t").unwrap();
        // Each core is one of {used, idle} × {low, high}: multisets of 4
        // cores over 4 states, minus the four all-idle ones: C(7,3) − C(5,3).
        assert_eq!(cands.len(), 35 - 5, "{}", cands.len());
    }

    #[test]
    fn too_large_is_refused_naming_the_limit() {
        let s = Scenario::load("bench-8c24t").unwrap();
        let err = Space::new(&s)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("limited to 8 tasks on 8 CPUs"), "{err}");
    }

    fn goal(objective: Objective, slowdown: Option<f64>) -> SearchGoal {
        SearchGoal {
            objective,
            slowdown,
        }
    }

    #[test]
    fn too_large_for_the_exhaustive_search_is_searched_confined() {
        let s = Scenario::load("bench-8c24t-short").unwrap();
        let (_, found) = search(
            &s,
            goal(Objective::WorkEnergy, None),
            &SimOptions::default(),
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(found.method, SearchMethod::Confined);
        assert!(found.choice.cpus.is_some());
    }

    #[test]
    fn a_slowdown_limit_never_picks_a_slower_configuration_than_it_allows() {
        let s = Scenario::load("merkel-2hmmer-2soplex").unwrap();
        let opts = SimOptions::default();
        let (free, _) = search(&s, goal(Objective::Energy, None), &opts, &mut |_, _| {}).unwrap();
        let (held, found) = search(
            &s,
            goal(Objective::Energy, Some(0.0)),
            &opts,
            &mut |_, _| {},
        )
        .unwrap();
        // With no slowdown allowed the choice is the fastest configuration
        // (or one as fast), never slower than the unconstrained choice.
        assert_eq!(found.slowdown, Some(0.0));
        assert!(throughput(&held).unwrap() >= throughput(&free).unwrap() * (1.0 - 1e-9));
    }

    #[test]
    fn the_oracle_is_no_worse_than_any_candidate() {
        let s = Scenario::load("merkel-2hmmer-2soplex").unwrap();
        let opts = SimOptions::default();
        let (run, found) =
            search(&s, goal(Objective::WorkEnergy, None), &opts, &mut |_, _| {}).unwrap();
        assert_eq!(run.report.policy, "oracle");
        let space = Space::new(&s).unwrap();
        let (cands, _) = candidates(&space, "t").unwrap();
        let mut with_ins = opts.clone();
        with_ins.extra_counters.insert(CounterKind::Instructions);
        for (p, f) in &cands {
            let (policy, _) = space.config(p, f);
            let r =
                simulate_policy_into(&s, Box::new(policy), &with_ins, &mut NullSink, &mut |_| {})
                    .unwrap();
            assert!(score(&r, Objective::WorkEnergy).unwrap() >= found.score - 1e-9);
        }
    }
}
