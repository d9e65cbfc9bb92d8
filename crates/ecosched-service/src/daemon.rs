//! The daemon's loop: restore what a dead predecessor left, start the
//! groups, then every 100 ms handle signals, control requests, the group
//! scan, the machine's series and the watchdog, until a signal that ends
//! it ([`crate::shutdown`]: `SIGTERM`, `SIGINT` and every other one it can
//! catch) — which stops every group (restoring its changes) before exit.
//!
//! ```text
//! start: load config ─► judge it here ─► journal::restore(state_dir) ─► exporter, socket ─► reconcile ─► READY=1
//! loop:  SIGHUP, ctl reload ─► RELOADING=1 ─► load, judge; ok: reconcile to it | error: keep the old one, log where ─► READY=1
//!        scan due ─► reconcile (new job cgroups start, vanished ones stop)
//!        ctl request ─► answer;  1 s ─► machine series;  WATCHDOG=1
//! stop:  STOPPING=1 ─► stop every worker (each undoes its journal)
//! ```
//!
//! Reconciling compares the groups that should run (config, jobs, ctl
//! overrides, minus paused ones) with the workers that do, and stops,
//! starts or restarts workers to match; a group that disappears also
//! loses its series, and its totals become a record in the history store
//! ([`crate::history`]), which `job-end` answers with and `history` lists.
//! A store that cannot be opened or written is logged with its file and
//! retried at the next record; the daemon goes on without it.
//!
//! A change is accepted only once it is known to work
//! ([`crate::vet`]): `set-policy` and `job-start` are judged on this
//! machine first, then wait for their worker to apply its first plan; a
//! worker that fails at start is answered as a failure and what ran
//! before runs again.

use crate::config::{self, Config, PolicyChoice, Source};
use crate::ctl::{self, Envelope, Request, Response};
use crate::exporter::Exporter;
use crate::group::{Worker, WorkerContext, WorkerState};
use crate::history::{History, Record};
use crate::membership;
use crate::metrics::{MachineSampler, Metrics};
use crate::notify;
use crate::shutdown::Signals;
use crate::totals::{GroupTotals, SharedTotals};
use crate::vet::{self, Machine};
use ecosched_linux::journal::RestoreOutcome;
use ecosched_linux::FsRoot;
use ecosched_policy::Params;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use tracing::{error, info, warn};

const TICK: Duration = Duration::from_millis(100);
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// How many records `history` answers when not told.
const HISTORY_LIST: usize = 20;
/// How long a `ctl` change waits for its worker to apply its first plan
/// (well within the client's [`ctl::TIMEOUT`]); a worker still starting
/// then is answered as starting.
const START_WAIT: Duration = Duration::from_secs(5);

/// A group as it should be managed.
#[derive(Debug, Clone, PartialEq)]
struct Wanted {
    source: Source,
    policy: PolicyChoice,
}

/// A job from `job-start`. Slurm's Prolog runs before the job's cgroup
/// exists (the job's steps make it), and its Epilog after the cgroup is
/// gone, so a job waits up to [`JOB_GRACE`] for its cgroup to appear and
/// is remembered as long after it vanished, for the Epilog's `job-end`.
#[derive(Debug, Clone)]
struct Job {
    wanted: Wanted,
    /// When `job-start` arrived.
    since: Instant,
    /// When its cgroup was last seen.
    seen: Option<Instant>,
    /// Its totals, once its group ended before its `job-end`.
    record: Option<Record>,
}

/// How long a job's cgroup may take to appear, and how long a vanished
/// one's job is remembered.
const JOB_GRACE: Duration = Duration::from_secs(120);

impl Job {
    /// Whether the job is still of interest at `now`.
    fn alive(&self, now: Instant) -> bool {
        let since = self.seen.unwrap_or(self.since);
        now.duration_since(since) < JOB_GRACE
    }
}

/// A group being managed.
#[derive(Debug)]
struct Managed {
    wanted: Wanted,
    worker: Worker,
    reported_failure: bool,
}

/// The daemon's state between ticks.
struct Daemon {
    config_path: PathBuf,
    config: Config,
    ctx: WorkerContext,
    managed: BTreeMap<String, Managed>,
    /// Groups stopped by `pause`.
    paused: BTreeSet<String>,
    /// Policies set by `set-policy`, kept while the group exists.
    overrides: BTreeMap<String, PolicyChoice>,
    /// Jobs from `job-start`: group `job-ID` on a cgroup.
    jobs: BTreeMap<String, Job>,
    /// Series names a group has used, so all go when it does.
    series_policies: BTreeMap<String, BTreeSet<String>>,
    /// Each existing group's totals, kept across its workers.
    totals: BTreeMap<String, SharedTotals>,
    /// The history store; `None` until it could be opened.
    history: Option<History>,
    started: Instant,
    power: String,
    exporter: Option<std::net::SocketAddr>,
    /// Changes a stopped group could not undo: group, what.
    unrestored: Vec<(String, String)>,
}

/// Run the daemon with the configuration at `config_path` until a signal
/// ends it ([`crate::shutdown::ENDING`]). Errors are about starting; once
/// up, problems are logged.
pub fn run(config_path: &Path) -> Result<(), String> {
    let caught = Signals::catch()?;
    let vet::Vetted { config, signals } = vet::load_vetted(config_path)?;
    info!("counter sources: {}", signals.describe().join("; "));

    // Clients' connections are bounded and stop short of a reserve of
    // descriptors (crate::admission); the rest of the limit is the groups'.
    match ecosched_linux::limits::raise_nofile() {
        Ok(l) => info!(
            "open-file limit {} ({} kept from clients)",
            l.now,
            crate::admission::reserve(l.now)
        ),
        Err(e) => warn!("open-file limit left as it is: {e}"),
    }
    // The state directory holds the journals and the history store: made
    // (mode 0700) and checked here, before either is opened.
    ecosched_linux::journal::trust::secure_state_dir(&config.state_dir)
        .map_err(|e| format!("state directory: {e}"))?;
    let metrics = Metrics::new();
    restore_predecessors(&config.state_dir, &metrics)?;

    let power_model = crate::power_model::load(&config.power_model)
        .map_err(|e| format!("{}: key `daemon.power_model`: {e}", config_path.display()))?;
    let mut sampler = MachineSampler::open(power_model)
        .map_err(|e| format!("cannot open the machine's meter: {e}"))?;
    info!("power: {}", sampler.describe());
    let exporter = match config.metrics {
        Some(addr) => {
            let e = Exporter::start(addr, metrics.clone())?;
            info!("metrics at http://{}/metrics", e.addr());
            Some(e)
        }
        None => None,
    };
    let (tx, rx) = mpsc::channel::<Envelope>();
    let server = ctl::Server::start(&config.socket, tx)?;
    info!("control socket {}", config.socket.display());

    let mut d = Daemon {
        config_path: config_path.to_path_buf(),
        ctx: WorkerContext {
            state_dir: config.state_dir.clone(),
            scan_interval: config.scan_interval,
            metrics: metrics.clone(),
            source: sampler.source(),
            signals,
        },
        config,
        managed: BTreeMap::new(),
        paused: BTreeSet::new(),
        overrides: BTreeMap::new(),
        jobs: BTreeMap::new(),
        series_policies: BTreeMap::new(),
        totals: BTreeMap::new(),
        history: None,
        started: Instant::now(),
        power: sampler.describe(),
        exporter: exporter.as_ref().map(Exporter::addr),
        unrestored: Vec::new(),
    };
    d.open_history();
    d.reconcile();
    notify::ready(&format!("managing {} groups", d.managed.len()));
    info!("daemon ready, managing {} groups", d.managed.len());
    let watchdog = notify::watchdog_every();
    let mut last_ping = Instant::now();
    let mut last_scan = Instant::now();
    let mut last_sample = Instant::now();
    if let Some(every) = watchdog {
        notify::watchdog();
        info!("watchdog every {} ms", every.as_millis());
    }
    while caught.ending().is_none() {
        if let Some(sig) = caught.take_ignored() {
            info!("{sig} ignored (SIGHUP reloads, SIGTERM stops)");
        }
        if caught.take_hup() {
            // The verdict is in the log (and the unit's status line).
            let _ = d.reload_notified();
        }
        if last_scan.elapsed() >= d.config.scan_interval {
            last_scan = Instant::now();
            d.reconcile();
        }
        let mut asked = false;
        while let Ok((request, reply)) = rx.try_recv() {
            let _ = reply.send(d.handle(request));
            asked = true;
        }
        if asked {
            d.publish_states(&d.existing());
        }
        if last_sample.elapsed() >= SAMPLE_EVERY {
            last_sample = Instant::now();
            if let Err(e) = sampler.sample(&metrics) {
                metrics.sample_errors.inc();
                warn!("machine sample: {e}");
            }
        }
        if let Some(every) = watchdog {
            if last_ping.elapsed() >= every {
                last_ping = Instant::now();
                notify::watchdog();
            }
        }
        metrics.beat();
        std::thread::sleep(TICK);
    }
    notify::stopping();
    let by = caught.ending().map_or(String::new(), |s| format!(" ({s})"));
    info!("stopping{by}: restoring every group");
    drop(server);
    let groups: Vec<String> = d.managed.keys().cloned().collect();
    for name in groups {
        d.stop(&name, Some("daemon stopped"));
    }
    drop(exporter);
    if d.unrestored.is_empty() {
        info!("stopped; everything restored");
        return Ok(());
    }
    for (group, what) in &d.unrestored {
        error!(group = %group, "group {group}: could not undo {what}");
    }
    Err(format!(
        "stopped, but {} change(s) could not be undone (listed above); their journals are kept in {}: run `ecosched restore --state-dir {}`",
        d.unrestored.len(),
        d.config.state_dir.display(),
        d.config.state_dir.display()
    ))
}

/// Undo the journals of dead ecosched processes, saying so.
fn restore_predecessors(state_dir: &Path, metrics: &Metrics) -> Result<(), String> {
    let outcomes = ecosched_linux::journal::restore(state_dir, &FsRoot::live())
        .map_err(|e| format!("restoring what an earlier ecosched left: {e}"))?;
    for o in outcomes {
        match o {
            RestoreOutcome::Restored(r) => {
                warn!(
                    "restored what a dead ecosched left: {} ({} changes undone, {} about exited tasks)",
                    r.journal.display(),
                    r.undone,
                    r.skipped_gone
                );
                metrics
                    .restore_failures
                    .inc_by(u64::try_from(r.failed.len()).unwrap_or(u64::MAX));
                for f in &r.failed {
                    error!(journal = %r.journal.display(), "could not undo: {f}");
                }
            }
            RestoreOutcome::OwnerRunning { journal, pid } => info!(
                "left {} alone: ecosched {pid} is running",
                journal.display()
            ),
            RestoreOutcome::Refused { journal, reason } => {
                error!("refused to restore {}: {reason}", journal.display())
            }
        }
    }
    Ok(())
}

impl Daemon {
    /// The groups that exist now, as configured (before pauses).
    fn existing(&self) -> BTreeMap<String, Wanted> {
        let mut out = BTreeMap::new();
        for g in &self.config.groups {
            match &g.source {
                Source::Cgroup(dir) => {
                    if dir.is_dir() {
                        out.insert(g.name.clone(), wanted(&g.source, &g.policy));
                    }
                }
                Source::CgroupGlob { parent, prefix } => {
                    for (dir_name, dir) in membership::glob_dirs(parent, prefix) {
                        out.insert(
                            format!("{}/{dir_name}", g.name),
                            wanted(&Source::Cgroup(dir), &g.policy),
                        );
                    }
                }
                Source::Match { .. } => {
                    out.insert(g.name.clone(), wanted(&g.source, &g.policy));
                }
            }
        }
        for (name, job) in &self.jobs {
            if let Source::Cgroup(dir) = &job.wanted.source {
                if dir.is_dir() {
                    out.insert(name.clone(), job.wanted.clone());
                }
            }
        }
        for (name, w) in out.iter_mut() {
            if let Some(p) = self.overrides.get(name) {
                w.policy = p.clone();
            }
        }
        out
    }

    /// Stop, start and restart workers to match what should run.
    fn reconcile(&mut self) {
        let existing = self.existing();
        let now = Instant::now();
        for (name, job) in self.jobs.iter_mut() {
            if existing.contains_key(name) {
                job.seen = Some(now);
            }
        }
        // A job whose cgroup never came, or went long ago, is forgotten as
        // if its Epilog had said so.
        self.jobs.retain(|name, job| {
            let keep = job.alive(now);
            if !keep {
                warn!(
                    group = %name,
                    "forgetting {name}: no cgroup for {} s",
                    JOB_GRACE.as_secs()
                );
            }
            keep
        });
        self.overrides.retain(|name, _| existing.contains_key(name));
        self.paused.retain(|name| existing.contains_key(name));
        let gone: Vec<String> = self
            .series_policies
            .keys()
            .filter(|n| !existing.contains_key(*n))
            .cloned()
            .collect();
        for name in gone {
            info!(group = %name, "group {name} is gone");
            self.stop(&name, Some("gone"));
        }
        for (name, w) in existing.clone() {
            if self.paused.contains(&name) {
                continue;
            }
            let same = self.managed.get(&name).map(|m| m.wanted == w);
            match same {
                Some(true) => {
                    if let Some(m) = self.managed.get_mut(&name) {
                        if let (WorkerState::Failed(why), false) =
                            (m.worker.state(), m.reported_failure)
                        {
                            m.reported_failure = true;
                            error!(group = %name, "group {name} is not managed: {why}");
                        }
                    }
                }
                Some(false) => {
                    info!(group = %name, "group {name} changed; restarting it");
                    self.stop(&name, None);
                    self.start(&name, w);
                }
                None => {
                    info!(
                        group = %name,
                        policy = %w.policy.name,
                        "managing group {name} with policy {}",
                        w.policy.name
                    );
                    self.start(&name, w);
                }
            }
        }
        self.publish_states(&existing);
    }

    /// Publish each existing group's state and policy
    /// (`ecosched_group_state`, `ecosched_group_policy_info`).
    fn publish_states(&self, existing: &BTreeMap<String, Wanted>) {
        for (name, w) in existing {
            let state = if self.paused.contains(name) {
                "paused"
            } else {
                match self.managed.get(name).map(|m| m.worker.state()) {
                    Some(WorkerState::Running) => "running",
                    Some(WorkerState::Starting) => "starting",
                    Some(WorkerState::Failed(_)) => "failed",
                    None => "waiting",
                }
            };
            let former: Vec<String> = self
                .series_policies
                .get(name)
                .map(|p| p.iter().cloned().collect())
                .unwrap_or_default();
            self.ctx
                .metrics
                .set_group_state(name, state, &w.policy.name, &former);
        }
    }

    fn start(&mut self, name: &str, w: Wanted) {
        let totals = self
            .totals
            .entry(name.to_string())
            .or_insert_with(|| GroupTotals::start(&w.source, &w.policy.name));
        let worker = Worker::start(name, &w.source, &w.policy, &self.ctx, Arc::clone(totals));
        let policies = self.series_policies.entry(name.to_string()).or_default();
        policies.insert(w.policy.name.clone());
        self.managed.insert(
            name.to_string(),
            Managed {
                wanted: w,
                worker,
                reported_failure: false,
            },
        );
    }

    /// Stop a group's worker; `end` says why the group ended, when it did:
    /// then its series go and its totals become a record, stored and
    /// answered.
    fn stop(&mut self, name: &str, end: Option<&str>) -> Option<Record> {
        if let Some(m) = self.managed.remove(name) {
            let failed = m.worker.stop();
            self.unrestored
                .extend(failed.into_iter().map(|f| (name.to_string(), f)));
        }
        let ended_by = end?;
        if let Some(policies) = self.series_policies.remove(name) {
            let policies: Vec<String> = policies.into_iter().collect();
            self.ctx.metrics.forget_group(name, &policies);
        }
        let totals = self.totals.remove(name)?;
        let kind = if self.jobs.contains_key(name) {
            "job"
        } else {
            "group"
        };
        let record = totals
            .lock()
            .ok()?
            .record(kind, name, self.ctx.source, &self.power, ended_by);
        info!(group = %name, "group {name} ended: {}", record.summary());
        self.store(&record);
        if let Some(job) = self.jobs.get_mut(name) {
            job.record = Some(record.clone());
        }
        Some(record)
    }

    /// Open the history store in the state directory, saying where and why
    /// when it cannot be.
    fn open_history(&mut self) -> Option<&mut History> {
        if self.history.is_none() {
            match History::open(&self.config.state_dir) {
                Ok(h) => {
                    info!("history in {}", h.path().display());
                    self.history = Some(h);
                }
                Err(e) => error!("no history kept for now: {e}"),
            }
        }
        self.history.as_mut()
    }

    /// Write `record` to the history store; a failure is logged (with the
    /// file) and the store is opened afresh for the next record.
    fn store(&mut self, record: &Record) {
        let Some(h) = self.open_history() else {
            return;
        };
        if let Err(e) = h.add(record) {
            error!(group = %record.name, "record of {} not kept: {e}", record.name);
            self.history = None;
        }
    }

    /// [`Daemon::reload`] as systemd follows it: `RELOADING=1` (with
    /// `MONOTONIC_USEC`) before, `READY=1` with the verdict as the unit's
    /// status after, applied or refused.
    fn reload_notified(&mut self) -> Result<String, String> {
        notify::reloading();
        let verdict = self.reload();
        notify::ready(match &verdict {
            Ok(done) | Err(done) => done,
        });
        verdict
    }

    /// Read the configuration file again and run it, vetted as at start;
    /// a refused file leaves the running configuration in force. The
    /// verdict is logged and returned (`ctl reload` answers with it).
    fn reload(&mut self) -> Result<String, String> {
        let path = self.config_path.clone();
        let loaded = vet::load_vetted(&path)
            .and_then(|v| vet::check_reload(&self.config, &v.config, &path).map(|()| v));
        match loaded {
            Ok(vet::Vetted { config: c, signals }) => {
                self.ctx.signals = signals;
                if c.state_dir != self.config.state_dir
                    || c.socket != self.config.socket
                    || c.metrics != self.config.metrics
                    || c.power_model != self.config.power_model
                {
                    warn!("reload: state_dir, socket, metrics and power_model take effect at the next start");
                }
                let keep = (
                    self.config.state_dir.clone(),
                    self.config.socket.clone(),
                    self.config.metrics,
                    self.config.power_model.clone(),
                );
                self.config = c;
                (
                    self.config.state_dir,
                    self.config.socket,
                    self.config.metrics,
                    self.config.power_model,
                ) = keep;
                self.ctx.scan_interval = self.config.scan_interval;
                let done = format!(
                    "reloaded {} ({} groups configured)",
                    self.config_path.display(),
                    self.config.groups.len()
                );
                info!("{done}");
                self.reconcile();
                Ok(done)
            }
            Err(e) => {
                let refused = format!("reload refused, keeping the running configuration: {e}");
                error!("{refused}");
                Err(refused)
            }
        }
    }

    fn group_names(&self) -> String {
        let names: Vec<String> = self.existing().into_keys().collect();
        if names.is_empty() {
            "there are none".into()
        } else {
            format!("groups: {}", names.join(", "))
        }
    }

    /// `policy` with `params`, judged on this machine ([`vet`]).
    fn judged(
        &self,
        policy: &str,
        params: &BTreeMap<String, String>,
        interval: Option<Duration>,
    ) -> Result<PolicyChoice, String> {
        let choice = choice_of(policy, params, interval)?;
        Machine::live(&self.ctx.signals)?.judge(&choice)?;
        Ok(choice)
    }

    /// Wait up to [`START_WAIT`] for group `name`'s worker to apply its
    /// first plan: `Ok` says how it is ("now runs", or "is starting with"
    /// when it is still preparing), `Err` why it failed.
    fn started(&self, name: &str) -> Result<&'static str, String> {
        let since = Instant::now();
        loop {
            match self.managed.get(name).map(|m| m.worker.state()) {
                Some(WorkerState::Running) | None => return Ok("now runs"),
                Some(WorkerState::Failed(why)) => return Err(why),
                Some(WorkerState::Starting) if since.elapsed() >= START_WAIT => {
                    return Ok("is starting with")
                }
                Some(WorkerState::Starting) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    fn handle(&mut self, request: Request) -> Response {
        match request {
            Request::Status => Response::ok(json!({
                "pid": std::process::id(),
                "config": self.config_path,
                "uptime_s": self.started.elapsed().as_secs_f64(),
                "groups": self.managed.len(),
                "paused": self.paused.len(),
                "power": self.power,
                "metrics": self.exporter.map(|a| a.to_string()),
                "socket": self.config.socket,
                "state_dir": self.config.state_dir,
                "history": self.history.as_ref().map(History::path),
            })),
            Request::Reload => match self.reload_notified() {
                Ok(done) => Response::ok(json!(done)),
                Err(refused) => Response::err(refused),
            },
            Request::Groups => {
                let list: Vec<serde_json::Value> = self
                    .existing()
                    .into_iter()
                    .map(|(name, w)| {
                        let state = if self.paused.contains(&name) {
                            "paused".to_string()
                        } else {
                            match self.managed.get(&name).map(|m| m.worker.state()) {
                                Some(WorkerState::Running) => "running".into(),
                                Some(WorkerState::Starting) => "starting".into(),
                                Some(WorkerState::Failed(why)) => format!("failed: {why}"),
                                None => "waiting".into(),
                            }
                        };
                        let params: BTreeMap<&str, &str> = w.policy.params.iter().collect();
                        json!({
                            "group": name,
                            "source": describe(&w.source),
                            "policy": w.policy.name,
                            "params": params,
                            "state": state,
                        })
                    })
                    .collect();
                Response::ok(json!(list))
            }
            Request::SetPolicy {
                group,
                policy,
                params,
            } => {
                if !self.existing().contains_key(&group) {
                    return Response::err(format!("no group {group:?} ({})", self.group_names()));
                }
                let interval = self.existing().get(&group).and_then(|w| w.policy.interval);
                let choice = match self.judged(&policy, &params, interval) {
                    Ok(c) => c,
                    Err(e) => return Response::err(format!("group {group} keeps its policy: {e}")),
                };
                let before = self.overrides.insert(group.clone(), choice);
                self.reconcile();
                match self.started(&group) {
                    Ok(state) => {
                        Response::ok(json!(format!("group {group} {state} policy {policy}")))
                    }
                    Err(why) => {
                        match before {
                            Some(b) => self.overrides.insert(group.clone(), b),
                            None => self.overrides.remove(&group),
                        };
                        self.reconcile();
                        Response::err(format!(
                            "group {group}: policy {policy} failed at start: {why}; the group keeps its policy"
                        ))
                    }
                }
            }
            Request::Pause { group } => {
                if !self.existing().contains_key(&group) {
                    return Response::err(format!("no group {group:?} ({})", self.group_names()));
                }
                if !self.paused.insert(group.clone()) {
                    return Response::err(format!("group {group} is already paused"));
                }
                self.stop(&group, None);
                Response::ok(json!(format!(
                    "group {group} paused (its changes were undone)"
                )))
            }
            Request::Resume { group } => {
                if !self.paused.remove(&group) {
                    return Response::err(format!("group {group:?} is not paused"));
                }
                self.reconcile();
                match self.started(&group) {
                    Ok(_) => Response::ok(json!(format!("group {group} resumed"))),
                    Err(why) => {
                        self.paused.insert(group.clone());
                        self.stop(&group, None);
                        Response::err(format!(
                            "group {group} failed at start and stays paused: {why}"
                        ))
                    }
                }
            }
            Request::JobStart {
                id,
                cgroup,
                policy,
                params,
            } => {
                let name = format!("job-{id}");
                if !config::valid_group_name(&name) {
                    return Response::err(format!(
                        "job id {id:?}: use letters, digits, `-`, `_` or `.`"
                    ));
                }
                if self.existing().contains_key(&name) || self.jobs.contains_key(&name) {
                    return Response::err(format!("group {name} already exists"));
                }
                let source = match config::cgroup_source(&cgroup) {
                    Ok(s @ Source::Cgroup(_)) => s,
                    Ok(_) => {
                        return Response::err(format!(
                            "cgroup {cgroup:?}: a job names one cgroup, not a pattern"
                        ))
                    }
                    Err(e) => return Response::err(format!("cgroup: {e}")),
                };
                let policy = match self.judged(&policy, &params, None) {
                    Ok(c) => c,
                    Err(e) => return Response::err(format!("job {id} is not managed: {e}")),
                };
                let present = Path::new(&cgroup).is_dir();
                self.jobs.insert(
                    name.clone(),
                    Job {
                        wanted: Wanted { source, policy },
                        since: Instant::now(),
                        seen: None,
                        record: None,
                    },
                );
                self.reconcile();
                if present {
                    if let Err(why) = self.started(&name) {
                        self.stop(&name, None);
                        self.jobs.remove(&name);
                        self.totals.remove(&name);
                        if let Some(p) = self.series_policies.remove(&name) {
                            let p: Vec<String> = p.into_iter().collect();
                            self.ctx.metrics.forget_group(&name, &p);
                        }
                        return Response::err(format!("job {id} is not managed: {why}"));
                    }
                }
                Response::ok(json!(if present {
                    format!("job {id} managed as group {name}")
                } else {
                    format!(
                        "job {id} will be managed as group {name} once {cgroup} appears (within {} s)",
                        JOB_GRACE.as_secs()
                    )
                }))
            }
            Request::JobEnd { id } => {
                let name = format!("job-{id}");
                let record = match self.stop(&name, Some("job-end")) {
                    Some(r) => Some(r),
                    None => match self.jobs.get(&name) {
                        Some(job) => job.record.clone(),
                        None => return Response::err(format!("no job {id:?} was started")),
                    },
                };
                self.jobs.remove(&name);
                self.reconcile();
                let message = match &record {
                    Some(_) => format!("job {id} ended; its changes were undone"),
                    None => format!("job {id} ended before its cgroup appeared; nothing to total"),
                };
                Response::ok(json!({
                    "message": message,
                    "summary": record.as_ref().map(Record::summary),
                    "record": record,
                }))
            }
            Request::History { name, limit } => {
                let limit = limit.unwrap_or(HISTORY_LIST);
                let listed = match self.open_history() {
                    Some(h) => h.list(name.as_deref(), limit),
                    None => {
                        return Response::err(format!(
                            "no history store in {} (see the daemon's log)",
                            self.config.state_dir.display()
                        ))
                    }
                };
                match listed {
                    Ok(list) => Response::ok(json!(list)),
                    Err(e) => Response::err(e.to_string()),
                }
            }
        }
    }
}

fn wanted(source: &Source, policy: &PolicyChoice) -> Wanted {
    Wanted {
        source: source.clone(),
        policy: policy.clone(),
    }
}

fn choice_of(
    policy: &str,
    params: &BTreeMap<String, String>,
    interval: Option<Duration>,
) -> Result<PolicyChoice, String> {
    let mut p = Params::default();
    for (k, v) in params {
        p = p.with(k, v);
    }
    let choice = PolicyChoice {
        name: policy.to_string(),
        params: p,
        interval,
    };
    choice.build().map_err(|e| e.to_string())?;
    Ok(choice)
}

fn describe(source: &Source) -> String {
    match source {
        Source::Cgroup(dir) => format!("cgroup {}", dir.display()),
        Source::CgroupGlob { parent, prefix } => {
            format!("cgroups {}/{prefix}*", parent.display())
        }
        Source::Match { uid, command } => {
            let mut parts = Vec::new();
            if let Some(u) = uid {
                parts.push(format!("uid {u}"));
            }
            if let Some(c) = command {
                parts.push(format!("command {c}"));
            }
            format!("processes of {}", parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        Job {
            wanted: Wanted {
                source: Source::Cgroup("/sys/fs/cgroup/cpuset/slurm/uid_0/job_7".into()),
                policy: PolicyChoice {
                    name: "static".into(),
                    params: Params::default(),
                    interval: None,
                },
            },
            since: Instant::now(),
            seen: None,
            record: None,
        }
    }

    #[test]
    fn a_job_waits_for_its_cgroup_and_is_remembered_after_it() {
        let mut j = job();
        let start = j.since;
        // The Prolog comes before the cgroup: still waiting within the grace.
        assert!(j.alive(start + JOB_GRACE - Duration::from_secs(1)));
        assert!(!j.alive(start + JOB_GRACE));
        // Seen late: the Epilog after the cgroup went still finds the job.
        j.seen = Some(start + Duration::from_secs(300));
        assert!(j.alive(start + Duration::from_secs(300) + JOB_GRACE / 2));
        assert!(!j.alive(start + Duration::from_secs(300) + JOB_GRACE));
    }
}
