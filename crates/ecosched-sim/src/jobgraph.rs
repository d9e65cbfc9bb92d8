//! A `make -jN`-style build as a simulated workload (Richling et al., PIK
//! 32(2), 2009, §II, Fig. 1): hundreds of short compile jobs whose
//! dependencies limit the parallelism, started by a `make` process that
//! sleeps most of the time and runs a short burst for every job it spawns.
//!
//! The graph is written as one `[jobgraph]` table of a scenario and
//! generated from the scenario's seed:
//!
//! ```text
//!  stage 0: cc cc cc … cc  (width w0)      every stage is a directory: its
//!                \ | /                      compile jobs are independent,
//!                 ld                        its link job waits for all of
//!  stage 1: cc cc … cc     (width w1)      them, and the next stage waits
//!                \ | /                      for the link (kbuild descends
//!                 ld                        into a directory once its
//!  …                                        prerequisites are built)
//! ```
//!
//! - compile jobs: `work_ms` of work each (seconds alone at the highest
//!   frequency, uniform in the range — the paper's "fractions of a second");
//! - link jobs: `link_ms` each, one per stage;
//! - `make -jN`: at most `parallelism` jobs run at once; `make` starts them
//!   one at a time in graph order, running `make_ms` of work per job (fork,
//!   exec, reading dependency files) before the job exists;
//! - with `helper_share > 0`, every compile job has an assembler beside it
//!   (`gcc -pipe`: `cc1` and `as` run concurrently), which wakes for short
//!   bursts and uses about that share of a CPU while the job lives. This is
//!   why a build wants slightly more CPUs than `-jN` (Richling §V-A/B:
//!   "`make` conflicting with the compiler processes it starts").
//!
//! This module holds only the graph and its bookkeeping; the platform owns
//! the simulated processes and calls in when one finishes.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use std::collections::VecDeque;

/// The `[jobgraph]` table of a scenario.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobGraphSpec {
    /// Compile jobs in the whole build (link jobs come on top).
    pub jobs: u32,
    /// `make -jN`: jobs running at once at most.
    pub parallelism: u32,
    /// Work per compile job, `[min, max]` ms alone at the highest frequency.
    #[serde(default = "default_work_ms")]
    pub work_ms: [f64; 2],
    /// Compile jobs per stage (directory), `[min, max]`.
    #[serde(default = "default_stage_width")]
    pub stage_width: [u32; 2],
    /// Work per link job, `[min, max]` ms.
    #[serde(default = "default_link_ms")]
    pub link_ms: [f64; 2],
    /// `make`'s own work per job it starts, ms at the highest frequency.
    #[serde(default = "default_make_ms")]
    pub make_ms: f64,
    /// Share of a CPU the assembler beside each compile job uses (0 = none).
    #[serde(default)]
    pub helper_share: f64,
    /// Mean length of one assembler burst, ms.
    #[serde(default = "default_helper_burst_ms")]
    pub helper_burst_ms: f64,
    /// Profile of compile, link, `make` and assembler work.
    #[serde(default = "default_profile")]
    pub profile: String,
}

fn default_work_ms() -> [f64; 2] {
    [50.0, 300.0]
}
fn default_stage_width() -> [u32; 2] {
    [4, 40]
}
fn default_link_ms() -> [f64; 2] {
    [50.0, 150.0]
}
fn default_make_ms() -> f64 {
    3.0
}
fn default_helper_burst_ms() -> f64 {
    1.0
}
fn default_profile() -> String {
    "cc1".into()
}

impl JobGraphSpec {
    /// What is wrong with the spec, naming the key, if anything.
    pub fn check(&self) -> Result<(), (String, String)> {
        let bad = |k: &str, m: &str| Err((k.to_string(), m.to_string()));
        let range_ok = |r: [f64; 2]| r[0].is_finite() && r[0] > 0.0 && r[1] >= r[0];
        if !(1..=100_000).contains(&self.jobs) {
            return bad("jobs", "must be 1–100000");
        }
        if !(1..=1024).contains(&self.parallelism) {
            return bad("parallelism", "make -jN needs 1 ≤ N ≤ 1024");
        }
        if !range_ok(self.work_ms) {
            return bad("work_ms", "needs 0 < min ≤ max");
        }
        if !range_ok(self.link_ms) {
            return bad("link_ms", "needs 0 < min ≤ max");
        }
        if !(self.stage_width[0] >= 1 && self.stage_width[1] >= self.stage_width[0]) {
            return bad("stage_width", "needs 1 ≤ min ≤ max");
        }
        if !(self.make_ms.is_finite() && self.make_ms > 0.0) {
            return bad("make_ms", "must be a positive number of ms");
        }
        if !(0.0..0.9).contains(&self.helper_share) {
            return bad("helper_share", "must be in [0, 0.9)");
        }
        if !(self.helper_burst_ms.is_finite() && self.helper_burst_ms > 0.0) {
            return bad("helper_burst_ms", "must be a positive number of ms");
        }
        crate::bounds::check_jobgraph(crate::bounds::JobTimes {
            work_max_ms: self.work_ms[1],
            link_max_ms: self.link_ms[1],
            make_ms: self.make_ms,
            helper_share: self.helper_share,
            helper_burst_ms: self.helper_burst_ms,
        })
    }

    /// The serial work of the build, s at the highest frequency: every
    /// compile job and one link job per stage at their longest (at most one
    /// stage per `stage_width[0]` jobs), and `make`'s work per job.
    pub fn work_s(&self) -> f64 {
        let jobs = f64::from(self.jobs);
        let stages = (jobs / f64::from(self.stage_width[0].max(1))).ceil();
        (jobs * (self.work_ms[1] + self.make_ms) + stages * self.link_ms[1]) / 1000.0
    }
}

/// What a job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// Compiles one source file (`cc`).
    Compile,
    /// Links a stage's objects (`ld`).
    Link,
}

impl JobKind {
    /// The process name the job runs under.
    pub fn name(self) -> &'static str {
        match self {
            JobKind::Compile => "cc",
            JobKind::Link => "ld",
        }
    }
}

/// One node of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Compile or link.
    pub kind: JobKind,
    /// Work, ms alone at the highest frequency.
    pub work_ms: f64,
    /// Jobs that wait for this one.
    pub dependents: Vec<usize>,
    /// Jobs this one still waits for.
    waiting_for: u32,
}

/// The build's progress: which jobs may start, how many run.
#[derive(Debug, Clone)]
pub struct JobGraph {
    jobs: Vec<Job>,
    ready: VecDeque<usize>,
    limit: u32,
    /// Jobs started (or being started by `make`) and not yet finished.
    running: u32,
    done: usize,
}

impl JobGraph {
    /// Generate the graph of `spec` from `seed`.
    pub fn generate(spec: &JobGraphSpec, seed: u64) -> JobGraph {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6d61_6b65_2d6a_4e00);
        let mut uniform = |r: [f64; 2]| r[0] + (r[1] - r[0]) * rng.random::<f64>();
        let mut jobs: Vec<Job> = Vec::new();
        let mut widths = Vec::new();
        let mut left = spec.jobs;
        let mut width_rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7769_6474_6873);
        while left > 0 {
            let [lo, hi] = spec.stage_width;
            let w = (lo + (f64::from(hi - lo + 1) * width_rng.random::<f64>()) as u32).min(hi);
            let w = w.min(left);
            widths.push(w);
            left -= w;
        }
        let mut prev_link: Option<usize> = None;
        for w in widths {
            let first = jobs.len();
            for _ in 0..w {
                jobs.push(Job {
                    kind: JobKind::Compile,
                    work_ms: uniform(spec.work_ms),
                    dependents: Vec::new(),
                    waiting_for: u32::from(prev_link.is_some()),
                });
            }
            let link = jobs.len();
            jobs.push(Job {
                kind: JobKind::Link,
                work_ms: uniform(spec.link_ms),
                dependents: Vec::new(),
                waiting_for: w,
            });
            if let Some(p) = prev_link {
                jobs[p].dependents.extend(first..link);
            }
            for j in &mut jobs[first..link] {
                j.dependents.push(link);
            }
            prev_link = Some(link);
        }
        let ready = (0..jobs.len())
            .filter(|&j| jobs[j].waiting_for == 0)
            .collect();
        JobGraph {
            jobs,
            ready,
            limit: spec.parallelism,
            running: 0,
            done: 0,
        }
    }

    /// Every job, in graph order.
    pub fn jobs(&self) -> &[Job] {
        &self.jobs
    }

    /// The next job `make` may start now, if a slot is free and a job is
    /// ready; the slot is taken from this moment.
    pub fn take_next(&mut self) -> Option<usize> {
        if self.running >= self.limit {
            return None;
        }
        let j = self.ready.pop_front()?;
        self.running += 1;
        Some(j)
    }

    /// Job `j` finished: free its slot and release the jobs waiting for it.
    pub fn finish(&mut self, j: usize) {
        self.running = self.running.saturating_sub(1);
        self.done += 1;
        for k in self.jobs[j].dependents.clone() {
            let job = &mut self.jobs[k];
            job.waiting_for = job.waiting_for.saturating_sub(1);
            if job.waiting_for == 0 {
                self.ready.push_back(k);
            }
        }
    }

    /// Whether every job has finished.
    pub fn all_done(&self) -> bool {
        self.done == self.jobs.len()
    }

    /// Jobs started and not finished.
    pub fn running(&self) -> u32 {
        self.running
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(jobs: u32, n: u32) -> JobGraphSpec {
        JobGraphSpec {
            jobs,
            parallelism: n,
            work_ms: default_work_ms(),
            stage_width: [3, 6],
            link_ms: default_link_ms(),
            make_ms: 3.0,
            helper_share: 0.0,
            helper_burst_ms: 1.0,
            profile: "cc1".into(),
        }
    }

    #[test]
    fn generation_is_seeded_and_respects_ranges() {
        let s = spec(200, 4);
        let a = JobGraph::generate(&s, 1);
        let b = JobGraph::generate(&s, 1);
        let c = JobGraph::generate(&s, 2);
        assert_eq!(a.jobs(), b.jobs());
        assert_ne!(a.jobs(), c.jobs());
        let compiles: Vec<&Job> = a
            .jobs()
            .iter()
            .filter(|j| j.kind == JobKind::Compile)
            .collect();
        assert_eq!(compiles.len(), 200);
        assert!(compiles.iter().all(|j| (50.0..=300.0).contains(&j.work_ms)));
        let links = a.jobs().len() - 200;
        // 200 jobs in stages of 3–6.
        assert!((34..=67).contains(&links), "{links} stages");
    }

    /// Run the graph with instantaneous jobs, finishing the oldest running
    /// one each step, and record how many ran at once.
    fn drain(g: &mut JobGraph) -> Vec<u32> {
        let mut running = VecDeque::new();
        let mut widths = Vec::new();
        while !g.all_done() {
            while let Some(j) = g.take_next() {
                running.push_back(j);
            }
            widths.push(g.running());
            let j = running.pop_front().unwrap();
            g.finish(j);
        }
        widths
    }

    #[test]
    fn never_more_than_n_and_links_serialise() {
        let mut g = JobGraph::generate(&spec(100, 4), 3);
        let widths = drain(&mut g);
        assert!(widths.iter().all(|&w| (1..=4).contains(&w)));
        // Every link runs alone: the width drops to one once per stage.
        let stages = g.jobs().iter().filter(|j| j.kind == JobKind::Link).count();
        assert!(widths.iter().filter(|&&w| w == 1).count() >= stages);
        assert!(widths.contains(&4));
    }

    #[test]
    fn a_link_waits_for_its_whole_stage() {
        let mut g = JobGraph::generate(&spec(10, 64), 5);
        let first_link = g
            .jobs()
            .iter()
            .position(|j| j.kind == JobKind::Link)
            .unwrap();
        let mut started = Vec::new();
        while let Some(j) = g.take_next() {
            started.push(j);
        }
        assert_eq!(started, (0..first_link).collect::<Vec<_>>());
        for &j in &started[..first_link - 1] {
            g.finish(j);
        }
        assert_eq!(g.take_next(), None, "link started before its stage ended");
        g.finish(first_link - 1);
        assert_eq!(g.take_next(), Some(first_link));
    }

    #[test]
    fn check_names_the_bad_key() {
        let mut s = spec(10, 0);
        assert_eq!(s.check().unwrap_err().0, "parallelism");
        s.parallelism = 2;
        s.work_ms = [300.0, 50.0];
        assert_eq!(s.check().unwrap_err().0, "work_ms");
        s.work_ms = [50.0, 300.0];
        assert!(s.check().is_ok());
    }
}
