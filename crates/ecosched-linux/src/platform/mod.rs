//! `LinuxPlatform`: the real machine behind the `Platform` trait. It starts
//! the command to manage, follows it and every descendant, reads their
//! counters, the CPUs and the power meter each interval, and carries out
//! plans through affinity, a cpuset cgroup, cpufreq and stop/continue
//! signals — each change journalled first (see [`crate::journal`]).
//!
//! ```text
//! launch ─► apply(plan₀) ─► { advance ─► observe ─► apply(plan) }* ─► finish
//!   spawn CMD          journal + syscall       procfs, perf,         undo journal,
//!   open journal,                              /proc/stat, power     wait for CMD
//!   counters, meter
//! ```
//!
//! What it does not have, it says: counters the PMU lacks are listed once
//! and left absent; without cpufreq the platform reports no frequency
//! control and a plan that sets frequencies is refused; power is measured or
//! estimated and labelled so. A platform built on a recorded machine
//! observes it and changes nothing.
//!
//! It is made by one builder and composed of parts with one job each:
//!
//! ```text
//! builder     LinuxPlatform::builder(root)…build(): settings, parts, notices
//! actuation   affinity, cpusets, cpufreq, stop/continue, run cgroup; journalled
//! ledger      per-task bookkeeping between observations, the snapshot's samples
//! notices     what the run says once: each line once, a bounded list
//! pacing      when the tasks are read between observations, and when not
//! sensors     CPU times, power and load average of the whole machine
//! command     the managed command: start, exit, end of the run
//! halt        a run ended by a signal: every process stopped, then signalled
//! attachment  the daemon's groups: processes that already run
//! signals     every terminating signal ends the run through the undo
//! clock       run time and observation intervals
//! ```
//! The task reader ([`crate::tasks`]) and the gang runner
//! ([`crate::freezer`]) are parts too.

mod actuation;
mod attachment;
mod builder;
mod clock;
mod command;
mod halt;
mod ledger;
mod notices;
mod pacing;
mod sensors;
mod signals;

pub use actuation::apply_frequency;
pub use attachment::Members;
pub use builder::{LinuxOptions, LinuxPlatformBuilder};
pub use command::RunEnd;
pub use notices::MAX_NOTICES;
pub use pacing::{full_reads_per_interval, read_spacing, SUBSAMPLE};

use crate::error::LinuxError;
use crate::freezer::{check_schedule, GangRunner, SwitchStats};
use crate::fsroot::FsRoot;
use crate::hints::HintFile;
use crate::journal::UndoReport;
use crate::runcgroup::RunCgroup;
use crate::spawn::{self, CommandError};
use crate::switches::SwitchRecorder;
use crate::tasks::TaskReader;
use crate::topology::LinuxTopology;
use actuation::Actuator;
use attachment::Attachment;
use clock::RunClock;
use command::ManagedCommand;
use ecosched_model::platform::check_plan;
use ecosched_model::{
    ApplyReport, Capabilities, Meter, Plan, Platform, PlatformError, Snapshot, TaskId, Topology,
};
use ledger::TaskLedger;
use notices::Notices;
use pacing::ReadPacer;
use sensors::Sensors;
use signals::SignalWatch;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long `advance` sleeps at a time while it watches for the command's
/// exit and for signals where the exit cannot wake it (no pidfd) or a gang
/// schedule runs.
const POLL: Duration = Duration::from_millis(10);

/// The live machine, managing one command and its descendants (or, attached,
/// a daemon group's processes).
pub struct LinuxPlatform {
    root: FsRoot,
    machine: LinuxTopology,
    topology: Arc<Topology>,
    reader: TaskReader,
    ledger: TaskLedger,
    pacer: ReadPacer,
    actuator: Actuator,
    gang: GangRunner,
    sensors: Sensors,
    command: Option<ManagedCommand>,
    attachment: Option<Attachment>,
    signals: SignalWatch,
    clock: RunClock,
    hint: HintFile,
    notices: Notices,
    /// The command's stdout goes to ecosched's stderr.
    stdout_to_stderr: bool,
    /// A trace asked for the exact schedule (`Platform::record_schedule`).
    schedule_wanted: bool,
    switches: Option<SwitchRecorder>,
}

impl std::fmt::Debug for LinuxPlatform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxPlatform")
            .field("machine", &self.machine.machine_name)
            .field("child", &self.child_pid())
            .field("tasks", &self.ledger.tasks().len())
            .finish_non_exhaustive()
    }
}

impl LinuxPlatformBuilder {
    /// Discover the machine and open the journal, counters and meters;
    /// nothing is started or changed yet, so a caller can check the
    /// policy's requirements against [`Platform::capabilities`] first. An
    /// attached platform finds its tasks now.
    pub fn build(self) -> Result<LinuxPlatform, LinuxError> {
        let parts = self.assemble()?;
        let topology = Arc::new(parts.machine.topology.clone());
        let mut clock = RunClock::new();
        if parts.attachment.is_some() {
            clock.mark_epoch();
        }
        let mut platform = LinuxPlatform {
            root: parts.root,
            machine: parts.machine,
            topology,
            reader: parts.reader,
            ledger: TaskLedger::default(),
            pacer: ReadPacer::new(),
            actuator: parts.actuator,
            gang: GangRunner::default(),
            sensors: parts.sensors,
            command: None,
            attachment: parts.attachment,
            signals: parts.signals,
            clock,
            hint: parts.hint,
            notices: Notices::new(parts.notices),
            stdout_to_stderr: false,
            schedule_wanted: false,
            switches: None,
        };
        if platform.attachment.is_some() {
            platform.refresh_tasks();
        }
        Ok(platform)
    }
}

impl LinuxPlatform {
    /// The builder of a platform over `root`: `FsRoot::live()` for this
    /// machine, or a recorded one (`FsRoot::recorded`), which the platform
    /// observes and never changes.
    pub fn builder(root: FsRoot) -> LinuxPlatformBuilder {
        LinuxPlatformBuilder::new(root)
    }

    /// The members (see [`LinuxPlatformBuilder::attach`]) are exactly the
    /// processes of cgroup `dir` (absolute: a daemon group's directory),
    /// not those and their descendants: children are born in their
    /// parent's cgroup, so no walk of `/proc` is needed to find them, and
    /// one moved out of `dir` leaves the group. When `dir` accounts CPU
    /// time (a v1 `cpuacct` or a v2 directory) the tasks are also not read
    /// while none of them ran; the answer says whether it does.
    pub fn follow_cgroup(&mut self, dir: &Path) -> bool {
        if let Some(attachment) = &mut self.attachment {
            attachment.follow_exactly();
        }
        let rel = dir.to_string_lossy().trim_start_matches('/').to_string();
        self.pacer.watch(RunCgroup::accounting(&self.root, &rel));
        self.pacer.watching()
    }

    /// Undo everything an attached platform changed, and say what that did.
    pub fn release(mut self) -> UndoReport {
        self.actuator.undo()
    }

    /// How many looks found that no task had run, so read none of them.
    #[doc(hidden)]
    pub fn skipped_reads(&self) -> u64 {
        self.pacer.skipped_reads()
    }

    /// How many tasks are being managed now.
    pub fn task_count(&self) -> usize {
        self.ledger.tasks().len()
    }

    /// Start `command` (program and arguments) under management, found on
    /// `PATH` as a shell would (see [`LinuxPlatform::launch`]).
    pub fn start(&mut self, command: &[String]) -> Result<(), LinuxError> {
        let Some((program, args)) = command.split_first() else {
            return Err(LinuxError::Absent {
                path: PathBuf::from("ecosched run"),
                what: "a command to run after `--`".into(),
            });
        };
        let path = spawn::resolve(program, std::env::var("PATH").ok().as_deref()).map_err(|e| {
            let kind = match e {
                CommandError::NotFound { .. } => std::io::ErrorKind::NotFound,
                CommandError::NotExecutable { .. } => std::io::ErrorKind::PermissionDenied,
            };
            LinuxError::Io {
                path: PathBuf::from(program),
                source: std::io::Error::new(kind, e.to_string()),
            }
        })?;
        self.launch(&path, args, None)
    }

    /// Whether `plan` (a policy's first) can be carried out on this
    /// machine: its CPUs usable here, its frequencies P-states of domains
    /// that exist and a cpufreq to set them. Checked before the command
    /// starts, so a plan that cannot be applied runs nothing.
    pub fn check_initial(&self, plan: &Plan) -> Result<(), PlatformError> {
        check_plan(plan, &self.topology, &self.machine.allowed)?;
        if !plan.frequency.is_empty() && self.machine.cpufreq.is_empty() {
            return Err(PlatformError::InvalidPlan(
                "the plan sets frequencies, but this machine has no cpufreq (sys/devices/system/cpu/cpufreq absent)".into(),
            ));
        }
        Ok(())
    }

    /// Start `program` (already resolved, see [`spawn::resolve`]) with
    /// `args`, inside the run's accounting cgroup and, when `managed_cpus`
    /// is given, inside a cpuset of those CPUs from its first instruction.
    /// Without root (or cgroups) the run goes on without an accounting
    /// cgroup, and says so in [`RunEnd::cpu_source`]. On a recorded
    /// machine nothing is started.
    pub fn launch(
        &mut self,
        program: &Path,
        args: &[String],
        managed_cpus: Option<&ecosched_model::CpuSet>,
    ) -> Result<(), LinuxError> {
        self.actuator.check_writable()?;
        if let Some(cpus) = managed_cpus {
            self.actuator.set_managed_cpus(cpus, self.ledger.tasks())?;
        }
        let accounting = self.actuator.create_run_cgroup();
        if let Ok(cg) = &accounting {
            self.pacer.watch(Some(cg.clone()));
        }
        let join = self.actuator.join_files(accounting.as_ref().ok());
        let command = ManagedCommand::start(
            &self.root,
            program,
            args,
            &join,
            self.hint.path(),
            accounting,
            self.stdout_to_stderr,
        )?;
        self.clock.restart();
        self.command = Some(command);
        if self.schedule_wanted {
            self.open_switches();
        }
        self.refresh_tasks();
        Ok(())
    }

    /// The command's standard output goes to ecosched's standard error
    /// (for `run --json`, whose stdout is the JSON alone). Before `launch`.
    pub fn command_stdout_to_stderr(&mut self) {
        self.stdout_to_stderr = true;
    }

    /// Follow the command's context switches (switches.rs); a failure is
    /// a notice, and the trace falls back on sampled slices.
    fn open_switches(&mut self) {
        let Some(pid) = self.child_pid() else {
            return;
        };
        let cpus: Vec<u32> = self.topology.cpus.iter().map(|c| c.id.0).collect();
        match SwitchRecorder::open(pid, &cpus, self.clock.elapsed()) {
            Ok(r) => self.switches = Some(r),
            Err(e) => self.notices.push(format!(
                "the trace shows sampled slices: perf context-switch records cannot be opened ({e})"
            )),
        }
    }

    /// The command's PID, once started.
    pub fn child_pid(&self) -> Option<u32> {
        self.command.as_ref().map(ManagedCommand::pid)
    }

    /// One-line notices about what is missing or estimated; the caller
    /// prints them once.
    pub fn notices(&self) -> &[String] {
        self.notices.kept()
    }

    /// How many notices came past [`MAX_NOTICES`] and were not kept.
    pub fn notices_dropped(&self) -> u64 {
        self.notices.dropped()
    }

    /// How many of the run's tasks could not be read (out of descriptors,
    /// permissions), each counted once.
    pub fn unobserved_tasks(&self) -> u64 {
        self.ledger.unobserved_total()
    }

    /// Give policies this machine's calibration data (a calibration file),
    /// checked against the live topology first: a partition written for
    /// another machine (other CPU count, P-states it lacks) is refused here
    /// rather than deep inside a policy.
    pub fn set_calibration(
        &mut self,
        calibration: ecosched_model::Calibration,
    ) -> Result<(), ecosched_model::calibration::PartitionError> {
        if let Some(partition) = &calibration.partition {
            partition.validate(&self.topology)?;
        }
        let mut topology = (*self.topology).clone();
        topology.calibration = calibration;
        self.topology = Arc::new(topology);
        Ok(())
    }

    /// Estimate power with `params` (a power model the user chose) where
    /// nothing measures it; a measured meter stays as it is. Before the
    /// command starts: the meter takes its first reading now.
    pub fn set_power_model(
        &mut self,
        params: crate::power::estimate::EstimateParams,
    ) -> Result<(), LinuxError> {
        self.sensors.set_power_model(&self.topology, params)?;
        let line = format!("power: {}", self.sensors.describe_power());
        self.notices.replace_prefixed("power: ", line);
        Ok(())
    }

    /// How gang schedules are carried out here, in words.
    pub fn gang_description(&self) -> String {
        self.gang.describe()
    }

    /// How late gang slot switches have been (the timer's precision).
    pub fn gang_switch_stats(&self) -> SwitchStats {
        self.gang.switch_stats()
    }

    /// Sizes of every per-task map the platform keeps: they must follow the
    /// tasks alive, not the run's length.
    #[doc(hidden)]
    pub fn state_sizes(&self) -> Vec<(&'static str, usize)> {
        let mut v = self.ledger.sizes().to_vec();
        v.push(("gang", self.gang.tracked()));
        v.push(("journal", self.actuator.journal_len()));
        v.extend(self.reader.map_sizes());
        v
    }

    /// How power is measured, in one line.
    pub fn power_description(&self) -> String {
        self.sensors.describe_power()
    }

    /// Whether frequency can be controlled here, in words.
    pub fn frequency_description(&self) -> String {
        crate::cpufreq::describe_control(&self.machine.cpufreq, &self.machine.pstate)
            .unwrap_or_else(|| "unavailable: no cpufreq on this machine".into())
    }

    /// Read the run's CPU time from its cgroup, undo every change, pass on
    /// an interrupting signal to every process of the run (SIGKILL after a
    /// grace period for those that ignore it), wait for the command and
    /// say how it ended. `stop` also asks the command to end (`SIGTERM`): a
    /// run that failed does not leave it running unmanaged.
    pub fn finish(mut self, stop: bool) -> Result<RunEnd, LinuxError> {
        let interrupted_by = self.signals.interrupted_by();
        let Some(command) = self.command.take() else {
            let _ = self.actuator.undo();
            return Err(LinuxError::Absent {
                path: PathBuf::from("ecosched run"),
                what: "a started command".into(),
            });
        };
        let pass_on = match (interrupted_by, stop) {
            (Some(sig), _) => nix::sys::signal::Signal::try_from(sig).ok(),
            (None, true) => Some(nix::sys::signal::Signal::SIGTERM),
            (None, false) => None,
        };
        // A task a gang holds frozen takes no signal and never shows as
        // stopped: the gang schedule ends (every group thawed) first.
        if pass_on.is_some() && self.gang.active() {
            if let Err(e) = self.replace_gang_schedule(ecosched_model::GangSchedule::end()) {
                tracing::error!("could not thaw the gang groups before passing the signal on: {e}");
            }
        }
        let host = *self.reader.host();
        let actuator = &mut self.actuator;
        command.finish(&self.root, &host, interrupted_by, pass_on, || {
            actuator.undo()
        })
    }

    /// Apply what the actuator changed to the reader (allowed CPUs read
    /// before are stale) and to the pacer (the next look reads).
    fn sync_touched(&mut self) {
        let touched = self.actuator.take_touched();
        if touched.affinity {
            self.reader.affinity_changed();
        }
        if touched.any {
            self.pacer.mark_changed();
        }
    }

    fn poll_child(&mut self) {
        if self.command.as_mut().is_some_and(ManagedCommand::poll) {
            // Its exit must be read even if nothing in the activity
            // cgroup ran after it: its parent, ecosched, is outside
            // the cgroup, and the exit's own CPU time may have been
            // booked before the last read.
            self.pacer.mark_changed();
        }
    }

    /// Add tasks the command (or the attached group) has spawned since the
    /// last look, and take each one on ([`Actuator::adopt`]).
    fn refresh_tasks(&mut self) {
        let (roots, exact) = match (&mut self.attachment, &self.command) {
            (Some(attachment), _) => attachment.roots(),
            // Every process of a run is born in the run's cgroup: its
            // `cgroup.procs` (gang groups below it included) names them
            // all, where a walk of `/proc` reads every process of the
            // machine, thousands on a server. Without one (no root), or
            // when it cannot be read, the walk from the command.
            (None, Some(command)) => {
                match command.run_cgroup().map(|cg| cg.processes(&self.root)) {
                    Some(Ok(pids)) if !pids.is_empty() => (pids, true),
                    _ => (vec![command.pid()], false),
                }
            }
            (None, None) => return,
        };
        let found = if exact {
            self.reader.discover_processes(&roots)
        } else {
            self.reader.discover_roots(&roots)
        };
        let Ok(found) = found else {
            return;
        };
        self.ledger.keep_unobserved_in(&found);
        for id in found {
            let process = self.reader.process_of(&id);
            if !self.ledger.admit(id, process) {
                continue;
            }
            let reader = &self.reader;
            let notices =
                self.actuator
                    .adopt(id, process, |pid| reader.parent_of(pid), &mut self.gang);
            for notice in notices {
                self.notices.push(notice);
            }
        }
    }

    /// Read every live task's counters and fold them into what the next
    /// observation reports; note the tasks that have exited. Nothing is
    /// read (but the activity cgroup) when no task ran since the last read.
    fn read_tasks(&mut self) {
        self.sync_touched();
        let (root, ledger) = (&self.root, &self.ledger);
        if !self
            .pacer
            .begin_look(root, self.gang.active(), || ledger.a_zombie_vanished(root))
        {
            return;
        }
        self.refresh_tasks();
        self.sync_touched();
        // A task left unchanged keeps its latest reading, reported with
        // zero counters at the observation unless it ran in between.
        let observation = self.reader.read_changed(self.ledger.tasks());
        let notices = &mut self.notices;
        let gone = self.ledger.fold(observation, &mut |n| notices.push(n));
        self.gang.forget(&gone);
        self.pacer.end_read();
    }

    /// Carry out a new gang schedule from now on (the end of one included).
    fn replace_gang_schedule(
        &mut self,
        schedule: ecosched_model::GangSchedule,
    ) -> Result<Vec<TaskId>, LinuxError> {
        self.actuator
            .prepare_gangs(!schedule.is_end(), self.ledger.tasks())?;
        self.pacer.mark_changed();
        let ledger = &self.ledger;
        let mut ctx = self
            .actuator
            .gang_context(Box::new(move |t| ledger.process_of(t)));
        self.gang.replace(&mut ctx, schedule)
    }

    /// Switch gang slots if a boundary has passed.
    fn gang_tick(&mut self) -> Result<(), LinuxError> {
        if !self.gang.active() {
            return Ok(());
        }
        let ledger = &self.ledger;
        let mut ctx = self
            .actuator
            .gang_context(Box::new(move |t| ledger.process_of(t)));
        self.gang.tick(&mut ctx)
    }

    /// Refuse `plan` before anything is touched: its CPUs and frequencies
    /// (see [`check_plan`]), tasks this run does not manage, gang control
    /// over tasks another manager owns, and any change on a recorded root.
    fn check_apply(&self, plan: &Plan) -> Result<(), PlatformError> {
        check_plan(plan, &self.topology, &self.machine.allowed)?;
        let unknown: Vec<String> = plan
            .task_cpus
            .keys()
            .chain(plan.gang.keys())
            .filter(|t| !self.ledger.is_managed(t))
            .map(|t| t.to_string())
            .collect();
        if !unknown.is_empty() {
            return Err(PlatformError::InvalidPlan(format!(
                "tasks {} are not managed by this run",
                unknown.join(", ")
            )));
        }
        if let Some(schedule) = &plan.gang_schedule {
            check_schedule(schedule, &|t| self.ledger.is_managed(t))
                .map_err(PlatformError::InvalidPlan)?;
        }
        if self.actuator.confined() && (!plan.gang.is_empty() || plan.gang_schedule.is_some()) {
            return Err(PlatformError::InvalidPlan(
                "gang control moves tasks between freezer cgroups or stops them, and some of these tasks are in another manager's cpuset; use a policy without gangs".into(),
            ));
        }
        if !plan.is_empty() {
            self.actuator.check_writable()?;
        }
        Ok(())
    }
}

impl Platform for LinuxPlatform {
    fn kind(&self) -> &'static str {
        "linux"
    }

    fn machine_name(&self) -> String {
        self.machine.machine_name.clone()
    }

    fn topology(&self) -> Arc<Topology> {
        Arc::clone(&self.topology)
    }

    fn open_counters(&mut self, requirements: &ecosched_model::Requirements) {
        let kinds = requirements
            .counters
            .union(&requirements.wanted)
            .copied()
            .collect();
        self.reader.open_only(&kinds);
    }

    fn capabilities(&self) -> Capabilities {
        crate::offer::capabilities(
            &self.machine,
            self.reader.availability(),
            self.sensors.power_source(),
            self.actuator.writable(),
        )
    }

    fn meter(&self) -> Meter {
        self.sensors.meter()
    }

    fn apply(&mut self, plan: &Plan) -> Result<ApplyReport, PlatformError> {
        self.check_apply(plan)?;
        let mut report = ApplyReport::default();
        if let Some(cpus) = &plan.managed_cpus {
            self.actuator
                .set_managed_cpus(cpus, self.ledger.tasks())
                .map_err(PlatformError::from)?;
        }
        for (&task, cpus) in &plan.task_cpus {
            match self.actuator.set_affinity(task, cpus) {
                Ok(()) => {}
                Err(LinuxError::Gone { .. }) => report.vanished.push(task),
                Err(e) => return Err(e.into()),
            }
        }
        self.actuator
            .set_frequency(&self.machine.cpufreq, &plan.frequency)
            .map_err(PlatformError::from)?;
        for (&task, &action) in &plan.gang {
            match self.actuator.gang_action(task, action) {
                Ok(()) => {}
                Err(LinuxError::Gone { .. }) => report.vanished.push(task),
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(schedule) = &plan.gang_schedule {
            let vanished = self
                .replace_gang_schedule(schedule.clone())
                .map_err(PlatformError::from)?;
            report.vanished.extend(vanished);
        }
        Ok(report)
    }

    /// Wait out the interval, waking at every gang slot boundary to switch
    /// groups, at the command's exit (or every 10 ms to look for it where
    /// no pidfd tells), at least every [`SUBSAMPLE`] to see signals and
    /// stop requests, and now and then to read counters.
    fn advance(&mut self, interval: Duration) -> Result<(), PlatformError> {
        let until = Instant::now() + interval;
        loop {
            self.poll_child();
            self.gang_tick().map_err(PlatformError::from)?;
            let now = Instant::now();
            if self.finished() || now >= until {
                return Ok(());
            }
            let due = self.gang.due();
            // Counter reads walk /proc; skip one that would make a slot
            // switch late.
            if self.pacer.due(now, due) {
                self.read_tasks();
            }
            let now = Instant::now();
            // Without a command whose exit must be seen at once (none: the
            // daemon's groups; or one whose exit wakes the sleep) or a gang
            // to switch, only signals and the stop flag are watched, and
            // the next look at the tasks: waking ten times less often is a
            // tenth of an idle run's cost.
            let exit_wakes = self.command.as_ref().is_none_or(ManagedCommand::exit_wakes);
            let poll = if exit_wakes && !self.gang.active() {
                SUBSAMPLE
            } else {
                POLL
            };
            let mut wake = until.min(now + poll);
            // A look held back for a gang switch waits for the switch.
            let look = self.pacer.next_look();
            if look > now {
                wake = wake.min(look);
            }
            if let Some(d) = due {
                wake = wake.min(d);
            }
            let timeout = wake.saturating_duration_since(now);
            match &mut self.command {
                Some(command) => command.sleep_until_exit(timeout),
                None => std::thread::sleep(timeout),
            }
        }
    }

    fn observe(&mut self) -> Result<Snapshot, PlatformError> {
        self.read_tasks();
        let (time_s, interval_s) = self.clock.observe();
        let host = *self.reader.host();
        let tasks = self
            .ledger
            .report(time_s, &host, self.clock.start_epoch_s());
        let (cpus, power) = self
            .sensors
            .sample(interval_s)
            .map_err(PlatformError::from)?;
        let notices = &mut self.notices;
        let parallelism_hint = self.hint.read(&mut |w| notices.push(w));
        let load_avg = self.sensors.load_avg(&mut |n| notices.push(n));
        Ok(Snapshot {
            time_s,
            interval_s,
            topology: Arc::clone(&self.topology),
            tasks,
            cpus,
            power,
            parallelism_hint,
            load_avg,
        })
    }

    fn record_schedule(&mut self) -> Option<String> {
        if !self.root.is_live() || self.attachment.is_some() {
            return None;
        }
        self.schedule_wanted = true;
        if self.command.is_some() && self.switches.is_none() {
            self.open_switches();
        }
        (self.command.is_none() || self.switches.is_some()).then(|| {
            format!(
                "perf's context-switch records (PERF_RECORD_SWITCH) of the command's threads, {} KiB of ring buffer per CPU",
                crate::switches::RING_BYTES / 1024
            )
        })
    }

    fn take_schedule(&mut self, out: &mut Vec<ecosched_model::schedule::RunSlice>) -> u64 {
        self.switches.as_mut().map_or(0, |s| s.drain(out))
    }

    fn finished(&self) -> bool {
        self.command.as_ref().is_some_and(ManagedCommand::exited)
            || self.signals.interrupted_by().is_some()
            || self
                .attachment
                .as_ref()
                .is_some_and(Attachment::stop_requested)
    }
}

impl Drop for LinuxPlatform {
    /// Undo whatever is still journalled: this covers a panic and an early
    /// error return (`finish` has already undone a normal run).
    fn drop(&mut self) {
        let report = self.actuator.undo();
        for failure in &report.failed {
            tracing::error!("could not restore: {failure}");
        }
    }
}
