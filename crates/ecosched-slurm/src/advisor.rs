//! One pass of the advisory loop, and what it did. A pass never fails as a
//! whole: a node whose exporter does not answer is advised on what Slurm
//! says alone, and every problem is listed in the report.
//!
//! ```text
//! squeue ─► running jobs ─► class: comment (declared) | memory-bus
//!           component (measured, needs counters) | SQLite (remembered)
//! exporters ─► CPU seconds, LLC misses per job-N ─► cpu_busy, mem_bus ─► SQLite
//! classes per node ─► plan::advise ─► scontrol update (only what differs)
//! opposite imbalances on two nodes ─► requeue a pair that opted in
//! ```

use crate::plan::{self, Class};
use crate::scrape::{self, GroupActivity};
use crate::slurm;
use crate::store::{Measured, Store, StoreError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The status file a pass leaves in the state directory (JSON).
pub const STATUS_FILE: &str = "advise-status.json";

/// The least time between two requeues: moving a job costs its progress.
pub const REQUEUE_EVERY: Duration = Duration::from_secs(60);

/// One job as a pass saw it.
#[derive(Debug, Clone, Serialize)]
pub struct JobSeen {
    /// Job id.
    pub id: String,
    /// Owner.
    pub user: String,
    /// Name.
    pub name: String,
    /// Nodes.
    pub nodes: Vec<String>,
    /// Class, when known.
    pub class: Option<&'static str>,
    /// Where the class came from: `declared`, `measured` or `remembered`.
    pub class_source: Option<&'static str>,
    /// CPUs the job kept busy since the last pass (measured).
    pub cpu_busy: Option<f64>,
    /// Its memory-bus component since the last pass (measured; needs
    /// hardware counters and the bus peak).
    pub mem_bus: Option<f64>,
    /// The tasks ecosched manages for it on its first node.
    pub tasks: Option<i64>,
}

/// A node as a pass left it.
#[derive(Debug, Clone, Serialize)]
pub struct NodeSeen {
    /// Its features after the pass.
    pub features: Vec<String>,
    /// Its weight after the pass.
    pub weight: u32,
    /// Whether this pass had to change them.
    pub updated: bool,
}

/// What a pass did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PassReport {
    /// Passes so far, this one included.
    pub pass: u64,
    /// When (Unix seconds).
    pub time_s: i64,
    /// The running jobs.
    pub jobs: Vec<JobSeen>,
    /// The advised nodes.
    pub nodes: BTreeMap<String, NodeSeen>,
    /// Jobs requeued to be placed again.
    pub requeued: Vec<String>,
    /// What went wrong.
    pub errors: Vec<String>,
}

/// How measured vectors become classes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Classify {
    /// The memory system's peak LLC-miss rate (misses per second, summed
    /// over the machine: `peak_mem_per_s` from `ecosched calibrate av`);
    /// without it the memory-bus component is not computed.
    pub peak_llc_misses_per_s: Option<f64>,
    /// A job whose memory-bus component reaches this is memory-bound.
    pub mem_threshold: f64,
}

/// The loop's state between passes.
#[derive(Debug)]
pub struct Advisor {
    store: Store,
    state_dir: PathBuf,
    /// Node name → its exporter's address.
    nodes: Vec<(String, String)>,
    classify: Classify,
    /// Job id → what its node last exported for it, and when.
    last: BTreeMap<String, (GroupActivity, Instant)>,
    last_requeue: Option<Instant>,
    /// Jobs this advisor requeued that have not been released yet.
    releasing: Vec<String>,
    passes: u64,
}

impl Advisor {
    /// An advisor keeping its store in `state_dir`, for `nodes` (name,
    /// exporter address).
    pub fn new(
        state_dir: &Path,
        nodes: Vec<(String, String)>,
        classify: Classify,
    ) -> Result<Self, StoreError> {
        Ok(Advisor {
            store: Store::open(state_dir)?,
            state_dir: state_dir.to_path_buf(),
            nodes,
            classify,
            last: BTreeMap::new(),
            last_requeue: None,
            releasing: Vec::new(),
            passes: 0,
        })
    }

    /// One pass at Unix time `now_s`; the report is also written to the
    /// status file.
    pub fn pass(&mut self, now_s: i64) -> PassReport {
        self.passes += 1;
        let mut r = PassReport {
            pass: self.passes,
            time_s: now_s,
            ..PassReport::default()
        };
        let jobs = match slurm::running_jobs() {
            Ok(j) => j,
            Err(e) => {
                r.errors.push(e.to_string());
                self.write_status(&mut r);
                return r;
            }
        };
        let mut activity: BTreeMap<&str, BTreeMap<String, GroupActivity>> = BTreeMap::new();
        for (node, addr) in &self.nodes {
            match scrape::fetch(addr) {
                Ok(a) => {
                    activity.insert(node, a);
                }
                Err(e) => r.errors.push(e.to_string()),
            }
        }
        let now = Instant::now();
        let mut running: BTreeMap<String, Vec<Class>> = BTreeMap::new();
        let mut placed: Vec<plan::Placed> = Vec::new();
        for job in &jobs {
            let seen = job
                .nodes
                .first()
                .and_then(|n| activity.get(n.as_str())?.get(&format!("job-{}", job.id)));
            let measured = seen
                .map(|a| {
                    let m = self
                        .last
                        .get(&job.id)
                        .map(|(was, at)| measure(was, a, now.duration_since(*at), self.classify))
                        .unwrap_or_default();
                    self.last.insert(job.id.clone(), (a.clone(), now));
                    m
                })
                .unwrap_or_default();
            let by_measure = measured.mem_bus.map(|x| {
                if x >= self.classify.mem_threshold {
                    Class::Mem
                } else {
                    Class::Cpu
                }
            });
            let (class, source) = match (plan::declared_class(&job.comment), by_measure) {
                (Some(c), _) => (Some(c), Some("declared")),
                (None, Some(c)) => (Some(c), Some("measured")),
                (None, None) => match self.store.get(&job.user, &job.name) {
                    Ok(e) => (e.map(|e| e.class), Some("remembered")),
                    Err(e) => {
                        r.errors.push(e.to_string());
                        (None, None)
                    }
                },
            };
            let class_source = class.and(source);
            if let (Some(c), Some(s)) = (class, class_source) {
                if let Err(e) = self
                    .store
                    .record(&job.user, &job.name, c, s, measured, now_s)
                {
                    r.errors.push(e.to_string());
                }
                for n in &job.nodes {
                    running.entry(n.clone()).or_default().push(c);
                }
                if let [node] = &job.nodes[..] {
                    placed.push(plan::Placed {
                        id: job.id.clone(),
                        node: node.clone(),
                        class: c,
                    });
                }
            }
            r.jobs.push(JobSeen {
                id: job.id.clone(),
                user: job.user.clone(),
                name: job.name.clone(),
                nodes: job.nodes.clone(),
                class: class.map(Class::name),
                class_source,
                cpu_busy: measured.cpu_busy,
                mem_bus: measured.mem_bus,
                tasks: seen.map(|a| a.tasks),
            });
        }
        self.last.retain(|id, _| jobs.iter().any(|j| &j.id == id));
        self.apply(&running, &mut r);
        self.release(&mut r);
        self.swap(&placed, &mut r);
        if let Err(e) = self.store.export_classes() {
            r.errors.push(e.to_string());
        }
        self.write_status(&mut r);
        r
    }

    /// Bring every node's features and weight to the advice.
    fn apply(&self, running: &BTreeMap<String, Vec<Class>>, r: &mut PassReport) {
        let current = match slurm::nodes() {
            Ok(n) => n,
            Err(e) => {
                r.errors.push(e.to_string());
                return;
            }
        };
        let names: Vec<String> = self.nodes.iter().map(|(n, _)| n.clone()).collect();
        for (name, advice) in plan::advise(&names, running) {
            let Some(info) = current.iter().find(|n| n.name == name) else {
                r.errors.push(format!("node {name} is not in sinfo"));
                continue;
            };
            let features = plan::merged_features(&info.features, &advice.features);
            let same = |a: &[String], b: &[String]| {
                a.iter().collect::<std::collections::BTreeSet<_>>()
                    == b.iter().collect::<std::collections::BTreeSet<_>>()
            };
            let updated = !same(&features, &info.features) || advice.weight != info.weight;
            if updated {
                if let Err(e) = slurm::update_node(&name, &features, advice.weight) {
                    r.errors.push(e.to_string());
                    continue;
                }
            }
            r.nodes.insert(
                name,
                NodeSeen {
                    features,
                    weight: advice.weight,
                    updated,
                },
            );
        }
    }

    /// Cross-node swap (§4.5), rate-limited: requeue the pair
    /// [`plan::swap_pair`] finds, both of which opted in (`--requeue`);
    /// Slurm places each again by its preference. Jobs that did not opt in
    /// are never touched.
    fn swap(&mut self, jobs: &[plan::Placed], r: &mut PassReport) {
        if self
            .last_requeue
            .is_some_and(|t| t.elapsed() < REQUEUE_EVERY)
        {
            return;
        }
        let mut errors = Vec::new();
        let pair = plan::swap_pair(jobs, &mut |id| match slurm::requeueable(id) {
            Ok(yes) => yes,
            Err(e) => {
                errors.push(e.to_string());
                false
            }
        });
        r.errors.extend(errors);
        let Some((a, b)) = pair else {
            return;
        };
        self.last_requeue = Some(Instant::now());
        for id in [a, b] {
            match slurm::requeue(&id) {
                Ok(()) => {
                    self.releasing.push(id.clone());
                    r.requeued.push(id);
                }
                Err(e) => r.errors.push(e.to_string()),
            }
        }
    }

    /// Release the jobs requeued by earlier passes, all together once none
    /// of them is still leaving its node: a pair swaps nodes only if each
    /// finds the other's node free when it is placed again (released
    /// alone, the first would go back to its own, the only one free).
    fn release(&mut self, r: &mut PassReport) {
        let mut states = Vec::with_capacity(self.releasing.len());
        for id in std::mem::take(&mut self.releasing) {
            match slurm::requeued_state(&id) {
                Ok(state) => states.push((id, state)),
                Err(e) => r.errors.push(e.to_string()),
            }
        }
        let (release, keep) = release_together(states);
        self.releasing = keep;
        for id in release {
            if let Err(e) = slurm::release_requeued(&id) {
                r.errors.push(e.to_string());
            }
        }
    }

    fn write_status(&self, r: &mut PassReport) {
        let path = self.state_dir.join(STATUS_FILE);
        let aside = self.state_dir.join(format!("{STATUS_FILE}.new"));
        let written = serde_json::to_string_pretty(&r)
            .map_err(|e| e.to_string())
            .and_then(|text| std::fs::write(&aside, text).map_err(|e| e.to_string()))
            .and_then(|()| std::fs::rename(&aside, &path).map_err(|e| e.to_string()));
        if let Err(e) = written {
            r.errors.push(format!("{}: {e}", path.display()));
        }
    }
}

/// Of the requeued jobs and how each stands, those to release now and
/// those to keep watching: none is released while one is still leaving
/// its node; settled jobs are dropped.
fn release_together(states: Vec<(String, slurm::Requeued)>) -> (Vec<String>, Vec<String>) {
    use slurm::Requeued::{Leaving, Settled};
    let still_leaving = states.iter().any(|(_, s)| *s == Leaving);
    let watched = states.into_iter().filter(|(_, s)| *s != Settled);
    let ids: Vec<String> = watched.map(|(id, _)| id).collect();
    if still_leaving {
        (Vec::new(), ids)
    } else {
        // Nothing is leaving, so every watched job is waiting.
        (ids, Vec::new())
    }
}

/// A job's activity between two exports `dt` apart: the CPUs it kept
/// busy, and its memory-bus component (LLC misses per on-CPU second over
/// the bus peak, §4.1) where its node counts misses and the peak is known.
pub fn measure(was: &GroupActivity, now: &GroupActivity, dt: Duration, c: Classify) -> Measured {
    let secs = dt.as_secs_f64();
    let cpu_s = now.cpu_s - was.cpu_s;
    let cpu_busy = (secs > 0.0 && cpu_s >= 0.0).then(|| cpu_s / secs);
    let mem_bus = match (was.llc_misses, now.llc_misses, c.peak_llc_misses_per_s) {
        (Some(a), Some(b), Some(peak)) if cpu_s > 0.0 && peak > 0.0 && b >= a => {
            Some(((b - a) / cpu_s / peak).min(1.0))
        }
        _ => None,
    };
    Measured { cpu_busy, mem_bus }
}

/// Run passes every `interval` until `SIGTERM` or `SIGINT` (or one pass
/// with `once`), logging each pass's changes and problems on stderr.
pub fn run(
    state_dir: &Path,
    nodes: Vec<(String, String)>,
    classify: Classify,
    interval: Duration,
    once: bool,
) -> Result<PassReport, String> {
    let mut advisor = Advisor::new(state_dir, nodes, classify).map_err(|e| e.to_string())?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, std::sync::Arc::clone(&stop))
            .map_err(|e| format!("cannot handle signal {sig}: {e}"))?;
    }
    loop {
        let now_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let r = advisor.pass(now_s);
        for (name, n) in r.nodes.iter().filter(|(_, n)| n.updated) {
            tracing::info!(
                node = %name,
                "slurm advise: pass {}: node {name}: features {} weight {}",
                r.pass,
                n.features.join(","),
                n.weight
            );
        }
        for id in &r.requeued {
            tracing::info!(job = %id, "slurm advise: pass {}: requeued job {id}", r.pass);
        }
        for e in &r.errors {
            tracing::error!("slurm advise: pass {}: {e}", r.pass);
        }
        let until = Instant::now() + interval;
        while !once && !stop.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        if once || stop.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(cpu_s: f64, llc_misses: Option<f64>) -> GroupActivity {
        GroupActivity {
            cpu_s,
            tasks: 1,
            llc_misses,
        }
    }

    #[test]
    fn a_swapped_pair_is_released_only_once_both_have_left_their_nodes() {
        use slurm::Requeued::{Leaving, Settled, Waiting};
        let s = |v: &[(&str, slurm::Requeued)]| {
            v.iter()
                .map(|(id, st)| (id.to_string(), *st))
                .collect::<Vec<_>>()
        };
        // The first is pending while the second still holds its node.
        let (release, keep) = release_together(s(&[("11", Waiting), ("16", Leaving)]));
        assert!(release.is_empty());
        assert_eq!(keep, ["11", "16"]);
        // Both pending: both go at once.
        let (release, keep) = release_together(s(&[("11", Waiting), ("16", Waiting)]));
        assert_eq!(release, ["11", "16"]);
        assert!(keep.is_empty());
        // A job that is running again or gone is no longer watched.
        let (release, keep) = release_together(s(&[("11", Settled), ("16", Waiting)]));
        assert_eq!(release, ["16"]);
        assert!(keep.is_empty());
    }

    #[test]
    fn vectors_are_measured_only_from_what_was_counted() {
        let c = Classify {
            peak_llc_misses_per_s: Some(1e8),
            mem_threshold: 0.3,
        };
        let dt = Duration::from_secs(2);
        // 2 CPU seconds in 2 s with 1e8 misses: half the bus.
        let m = measure(&at(10.0, Some(0.0)), &at(12.0, Some(1e8)), dt, c);
        assert_eq!(m.cpu_busy, Some(1.0));
        assert_eq!(m.mem_bus, Some(0.5));
        // No counters on the node (a VM): CPU use only.
        let m = measure(&at(10.0, None), &at(11.0, None), dt, c);
        assert_eq!((m.cpu_busy, m.mem_bus), (Some(0.5), None));
        // No known peak: no memory component either.
        let unknown = Classify {
            peak_llc_misses_per_s: None,
            ..c
        };
        let m = measure(&at(10.0, Some(0.0)), &at(12.0, Some(1e8)), dt, unknown);
        assert_eq!(m.mem_bus, None);
    }
}
