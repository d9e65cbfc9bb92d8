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
//! estimated and labelled so.

use crate::cgroup::{CpusetMount, ManagedCpuset};
use crate::cpufreq::{self, CpufreqPolicy};
use crate::cpustat::CpuStat;
use crate::error::LinuxError;
use crate::freezer::{check_schedule, GangContext, GangRunner, SwitchStats};
use crate::fsroot::FsRoot;
use crate::hints::{HintFile, HINT_ENV};
use crate::identity::same_task;
use crate::journal::{Change, Journal, UndoReport};
use crate::mounts::MountTable;
use crate::perf::{PerfBackend, SystemPerf};
use crate::power::PowerMeter;
use crate::runcgroup::{AcctMount, AcctVersion, CgroupCpu, RunCgroup};
use crate::spawn::{self, CommandError};
use crate::tasks::{HostFacts, TaskReader, TaskReading};
use crate::topology::{discover_with, LinuxTopology};
use crate::{affinity, gang};
use ecosched_model::platform::check_plan;
use ecosched_model::{
    ApplyReport, Capabilities, Counters, FreqDomainId, FreqSetting, GangAction, LoadAvg, Meter,
    Plan, Platform, PlatformError, ProcessId, Snapshot, TaskId, TaskSample, TaskState, Topology,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long `advance` sleeps at a time while it watches for the command's
/// exit and for signals.
const POLL: Duration = Duration::from_millis(10);

/// How often counters are read between observations, at most. A task's
/// counters can only be read while it exists, so reading more often than
/// the policy's interval bounds what a short-lived task takes with it.
pub const SUBSAMPLE: Duration = Duration::from_millis(100);

/// The extra reads may use at most this share of one core (0.1 %, so that
/// the daemon's several groups, each with its own reads, stay well below
/// 1 %): with many tasks a read costs more, and the reads between
/// observations thin out (a 1 ms read waits at least 1 s), so watching
/// never costs much more than the observations the policy asks for. The
/// run's total CPU time does not depend on them: it comes from its cgroup.
const SUBSAMPLE_DUTY: u32 = 1000;

/// The least time between two full reads of the tasks (every thread's
/// files and perf groups) when the last one took `read_cost`: [`SUBSAMPLE`],
/// stretched so that reads between observations stay within the duty.
pub fn read_spacing(read_cost: Duration) -> Duration {
    SUBSAMPLE.max(read_cost.saturating_mul(SUBSAMPLE_DUTY))
}

/// How many full reads of the tasks a policy interval holds when every
/// look finds that a task ran and a read costs `read_cost`: the reads
/// between observations, [`read_spacing`] apart, and the observation's
/// own. When nothing ran, a look reads only the activity cgroup's CPU time
/// (see [`LinuxPlatform::observe`]), once per [`SUBSAMPLE`].
pub fn full_reads_per_interval(read_cost: Duration, interval: Duration) -> u64 {
    let spacing = read_spacing(read_cost).as_nanos().max(1);
    let between = interval.as_nanos().saturating_sub(1) / spacing;
    1 + u64::try_from(between).unwrap_or(u64::MAX - 1)
}

/// How long the processes of an interrupted run have to end after the
/// signal is passed on before they are killed: a shell's background jobs
/// ignore SIGINT, and the run must not leave them behind.
const KILL_GRACE: Duration = Duration::from_secs(1);

/// What a task that has not run since its last reading reports: zero for
/// every counter that reading measured, absent for the others.
fn idle_counters(measured: &Counters) -> Counters {
    let mut idle = Counters::default();
    for kind in ecosched_model::CounterKind::ALL {
        if measured.get(kind).is_some() {
            idle.set(kind, Some(0));
        }
    }
    idle
}

/// Settings of a managed run.
#[derive(Debug, Clone)]
pub struct LinuxOptions {
    /// Where the restore journal and the hint file live.
    pub state_dir: PathBuf,
    /// Name of the cgroup ecosched creates its runs under.
    pub cgroup_name: String,
    /// The program's parallelism, when the user knows it (a hint).
    pub parallelism: Option<u32>,
    /// A cpuset cgroup that owns the tasks (a Slurm job's, absolute path):
    /// another manager tracks the tasks by their cgroups, so none is moved,
    /// and a plan's managed CPUs become each task's affinity, cut to this
    /// cgroup's CPUs — the job's CPUs are never widened.
    pub confine: Option<PathBuf>,
}

impl Default for LinuxOptions {
    fn default() -> Self {
        LinuxOptions {
            state_dir: PathBuf::from(crate::journal::DEFAULT_STATE_DIR),
            cgroup_name: "ecosched".into(),
            parallelism: None,
            confine: None,
        }
    }
}

/// Where an attached platform (one of the daemon's groups) finds its
/// tasks: the root processes to follow, with their descendants, asked at
/// every look. The daemon decides membership (a cgroup's processes, a
/// user's or a command name's); the platform follows and manages.
pub type Members = Box<dyn FnMut() -> Vec<u32> + Send>;

/// What a finished run leaves: how the command ended and what undoing the
/// journal did.
#[derive(Debug)]
pub struct RunEnd {
    /// The command's exit status.
    pub status: ExitStatus,
    /// The signal that interrupted ecosched, if one did (it was passed on).
    pub interrupted_by: Option<i32>,
    /// Undoing the journal.
    pub restore: UndoReport,
    /// CPU time of every process of the run, exited ones included, from
    /// the run's own cgroup; `None` without one (see `cpu_source`).
    pub cgroup_cpu: Option<CgroupCpu>,
    /// Where the run's CPU time comes from, in words.
    pub cpu_source: String,
    /// Busy CPU seconds of the whole machine over the run (`/proc/stat`),
    /// what the run's CPU time is a share of.
    pub machine_busy_s: Option<f64>,
}

/// The live machine, managing one command and its descendants.
pub struct LinuxPlatform {
    root: FsRoot,
    mounts: MountTable,
    machine: LinuxTopology,
    topology: Arc<Topology>,
    journal: Journal,
    reader: TaskReader,
    meter: PowerMeter,
    cpustat: CpuStat,
    child: Option<Child>,
    status: Option<ExitStatus>,
    signal: Arc<AtomicUsize>,
    signal_ids: Vec<signal_hook::SigId>,
    started: Instant,
    run_start_epoch_s: f64,
    last_observe: Instant,
    tasks: Vec<TaskId>,
    known: BTreeSet<TaskId>,
    names: BTreeMap<TaskId, String>,
    /// The process of each known task, kept until its exit is reported.
    processes: BTreeMap<TaskId, ProcessId>,
    /// Counter deltas of each task read since the last observation.
    pending: BTreeMap<TaskId, Counters>,
    /// The latest reading of every task, kept until its exit is reported:
    /// what an observation shows of a task that has not run since.
    latest: BTreeMap<TaskId, TaskReading>,
    exited: BTreeSet<TaskId>,
    /// Tasks read as zombies ('Z'/'X') whose exit an observation has
    /// already reported: a zombie stays in `/proc` until reaped, and its
    /// exit must be reported once, not again when it vanishes.
    exit_reported: BTreeSet<TaskId>,
    /// The last full read of the tasks, and what it cost.
    last_read: Instant,
    read_cost: Duration,
    /// The last look at whether anything ran (a full read or not).
    last_look: Instant,
    /// The cgroup whose CPU time tells whether any managed task ran (the
    /// run's own; a daemon group's cgroup), and that time at the last full
    /// read. Sleeping tasks are the majority of most machines' threads:
    /// when the time has not moved, no task ran, exited or forked, so
    /// none of their files need reading (one file instead of thousands).
    activity: Option<RunCgroup>,
    activity_ns: Option<u64>,
    /// Attached mode: the members are all the processes there are (a
    /// cgroup's), not roots of trees ([`LinuxPlatform::follow_cgroup`]).
    exact_members: bool,
    /// ecosched changed what a read would show (affinity, cpusets, stopped
    /// tasks) since the last full read: read even if nothing ran.
    changed: bool,
    /// Looks that found nothing had run (for tests and benchmarks).
    skipped_reads: u64,
    cpuset: Option<ManagedCpuset>,
    /// The run's accounting cgroup (every process of the run).
    run_cgroup: Option<RunCgroup>,
    /// Why there is no accounting cgroup, when there is none.
    no_run_cgroup: Option<String>,
    /// Machine busy ticks when the command started.
    busy_ticks_start: Option<u64>,
    cgroup_name: String,
    gang: GangRunner,
    hint: HintFile,
    notices: Vec<String>,
    /// Why the load average could not be read, said once.
    loadavg_failed: bool,
    /// Attached mode: where the tasks are found instead of a child.
    members: Option<Members>,
    /// Attached mode: set to end the management (the daemon's groups).
    stop: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// The cgroup that owns the tasks, when they may not be moved.
    confine: Option<PathBuf>,
    /// The affinity confined tasks get (the last managed CPUs, cut to the
    /// owning cgroup's), applied to new tasks too.
    confined_cpus: Option<ecosched_model::CpuSet>,
}

impl std::fmt::Debug for LinuxPlatform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxPlatform")
            .field("machine", &self.machine.machine_name)
            .field("child", &self.child_pid())
            .field("tasks", &self.tasks.len())
            .finish_non_exhaustive()
    }
}

impl LinuxPlatform {
    /// Discover the machine and open the journal, counters and meters;
    /// nothing is started or changed yet, so a caller can check the
    /// policy's requirements against [`Platform::capabilities`] first.
    pub fn prepare(options: &LinuxOptions) -> Result<Self, LinuxError> {
        Self::prepare_with(options, Box::new(SystemPerf))
    }

    /// [`LinuxPlatform::prepare`] with a chosen perf backend (tests use a fake).
    pub fn prepare_with(
        options: &LinuxOptions,
        perf: Box<dyn PerfBackend>,
    ) -> Result<Self, LinuxError> {
        Self::prepare_with_pmu(options, perf, None)
    }

    /// [`LinuxPlatform::prepare_with`] knowing the PMU of a machine preset:
    /// when this CPU is the one `pmu` describes, its model-specific (raw)
    /// events are counted too (see [`crate::pmu`]).
    pub fn prepare_with_pmu(
        options: &LinuxOptions,
        perf: Box<dyn PerfBackend>,
        pmu: Option<&ecosched_model::PmuSpec>,
    ) -> Result<Self, LinuxError> {
        Self::prepare_on(FsRoot::live(), options, perf, pmu)
    }

    /// [`LinuxPlatform::prepare_with_pmu`] reading the CPU id (only) from
    /// `cpu_root`: tests pose as another CPU with a recorded cpuinfo.
    #[doc(hidden)]
    pub fn prepare_on(
        cpu_root: FsRoot,
        options: &LinuxOptions,
        perf: Box<dyn PerfBackend>,
        pmu: Option<&ecosched_model::PmuSpec>,
    ) -> Result<Self, LinuxError> {
        Self::prepare_tagged(cpu_root, options, perf, pmu, None)
    }

    /// Manage processes that already run instead of a started command: the
    /// daemon's groups. `tag` names this group's journal, hint file and
    /// cgroups apart from the other groups of the same process; `members`
    /// is asked for the group's root processes at every look; the
    /// management ends when `stop` is set (or on `SIGINT`/`SIGTERM`), and
    /// [`LinuxPlatform::release`] undoes it.
    pub fn attach(
        options: &LinuxOptions,
        tag: &str,
        perf: Box<dyn PerfBackend>,
        members: Members,
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) -> Result<Self, LinuxError> {
        let mut platform = Self::prepare_tagged(FsRoot::live(), options, perf, None, Some(tag))?;
        platform.members = Some(members);
        platform.stop = Some(stop);
        platform.run_start_epoch_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        platform.refresh_tasks();
        Ok(platform)
    }

    /// The members (see [`LinuxPlatform::attach`]) are exactly the
    /// processes of cgroup `dir` (absolute: a daemon group's directory),
    /// not those and their descendants: children are born in their
    /// parent's cgroup, so no walk of `/proc` is needed to find them, and
    /// one moved out of `dir` leaves the group. When `dir` accounts CPU
    /// time (a v1 `cpuacct` or a v2 directory) the tasks are also not read
    /// while none of them ran; the answer says whether it does.
    pub fn follow_cgroup(&mut self, dir: &Path) -> bool {
        self.exact_members = true;
        let rel = dir.to_string_lossy().trim_start_matches('/').to_string();
        self.activity = RunCgroup::accounting(&self.root, &rel);
        self.activity_ns = None;
        self.activity.is_some()
    }

    /// Undo everything an attached platform changed, and say what that did.
    pub fn release(mut self) -> UndoReport {
        self.journal.undo()
    }

    /// How many looks found that no task had run, so read none of them.
    #[doc(hidden)]
    pub fn skipped_reads(&self) -> u64 {
        self.skipped_reads
    }

    /// How many tasks are being managed now.
    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }

    fn prepare_tagged(
        cpu_root: FsRoot,
        options: &LinuxOptions,
        perf: Box<dyn PerfBackend>,
        pmu: Option<&ecosched_model::PmuSpec>,
        tag: Option<&str>,
    ) -> Result<Self, LinuxError> {
        let root = FsRoot::live();
        // Thousands of threads need thousands of descriptors (crate::limits).
        let nofile_notice = crate::limits::raise_nofile()
            .err()
            .map(|e| format!("open-file limit not raised, large programs may go unobserved: {e}"));
        let mounts = MountTable::read(&root)?;
        let machine = discover_with(&root, &mounts)?;
        let topology = Arc::new(machine.topology.clone());
        let journal = Journal::create_tagged(&options.state_dir, root.clone(), tag)?;
        let host = HostFacts::detect(&root)?;
        let mut pmu_notice = None;
        let (raw, matched) = match pmu {
            None => (Vec::new(), None),
            Some(spec) => match crate::pmu::cpuid(&cpu_root) {
                Ok(id) => match crate::pmu::raw_events(spec, &id) {
                    crate::pmu::RawEvents::Matched(events) => (events, Some(spec.clone())),
                    crate::pmu::RawEvents::NotOpened(why) => {
                        pmu_notice = Some(format!("model-specific PMU events not opened: {why}"));
                        (Vec::new(), None)
                    }
                },
                Err(e) => {
                    pmu_notice = Some(format!(
                        "model-specific PMU events not opened: this CPU's id is unknown ({e})"
                    ));
                    (Vec::new(), None)
                }
            },
        };
        let reader = TaskReader::with_pmu(root.clone(), perf, host, raw, matched);
        let meter = PowerMeter::open(&root, &topology)?;
        let cpustat = CpuStat::new(root.clone())?;
        let signal = Arc::new(AtomicUsize::new(0));
        let mut signal_ids = Vec::new();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let id = signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)
                .map_err(|e| LinuxError::Io {
                    path: PathBuf::from(format!("signal handler for signal {sig}")),
                    source: e,
                })?;
            signal_ids.push(id);
        }
        let hint_name = match tag {
            None => format!("hint-{}", std::process::id()),
            Some(tag) => format!("hint-{}-{tag}", std::process::id()),
        };
        let hint = HintFile::create(options.state_dir.join(hint_name), options.parallelism)?;
        let mut notices = Vec::new();
        let missing = &reader.availability().unavailable;
        if let Some((_, why)) = missing.first() {
            let kinds: Vec<String> = missing.iter().map(|(k, _)| format!("{k:?}")).collect();
            notices.push(format!(
                "counters unavailable, left absent: {} (first reason: {why})",
                kinds.join(", ")
            ));
        }
        notices.extend(pmu_notice);
        notices.extend(crate::journal::stale_notices(&options.state_dir, &root));
        notices.extend(nofile_notice);
        notices.extend(machine.notes.iter().cloned());
        if machine.cpufreq.is_empty() {
            notices.push(
                "frequency control unavailable: no cpufreq on this machine (sys/devices/system/cpu/cpufreq absent); frequency plans are refused"
                    .into(),
            );
        }
        notices.push(format!("power: {}", meter.describe()));
        Ok(LinuxPlatform {
            root,
            mounts,
            machine,
            topology,
            journal,
            reader,
            meter,
            cpustat,
            child: None,
            status: None,
            signal,
            signal_ids,
            started: Instant::now(),
            run_start_epoch_s: 0.0,
            last_observe: Instant::now(),
            tasks: Vec::new(),
            known: BTreeSet::new(),
            names: BTreeMap::new(),
            processes: BTreeMap::new(),
            pending: BTreeMap::new(),
            latest: BTreeMap::new(),
            exited: BTreeSet::new(),
            exit_reported: BTreeSet::new(),
            last_read: Instant::now(),
            read_cost: Duration::ZERO,
            last_look: Instant::now(),
            activity: None,
            activity_ns: None,
            exact_members: false,
            skipped_reads: 0,
            changed: false,
            cpuset: None,
            run_cgroup: None,
            no_run_cgroup: None,
            busy_ticks_start: None,
            cgroup_name: options.cgroup_name.clone(),
            gang: GangRunner::default(),
            hint,
            notices,
            loadavg_failed: false,
            members: None,
            stop: None,
            confine: options.confine.clone(),
            confined_cpus: None,
        })
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
    /// cgroup, and says so in [`RunEnd::cpu_source`].
    pub fn launch(
        &mut self,
        program: &Path,
        args: &[String],
        managed_cpus: Option<&ecosched_model::CpuSet>,
    ) -> Result<(), LinuxError> {
        if let Some(cpus) = managed_cpus {
            self.set_managed_cpus(cpus)?;
        }
        match self.create_run_cgroup() {
            Ok(cg) => {
                self.activity = Some(cg.clone());
                self.run_cgroup = Some(cg);
            }
            Err(why) => self.no_run_cgroup = Some(why),
        }
        let mut join = Vec::new();
        if let Some(cg) = &self.run_cgroup {
            join.push(self.root.path(&cg.join_file()));
        }
        if let Some(cpuset) = &self.cpuset {
            let same = self
                .run_cgroup
                .as_ref()
                .is_some_and(|cg| cg.dir() == cpuset.dir());
            if !same {
                join.push(self.root.path(&format!(
                    "{}/{}",
                    cpuset.dir(),
                    cpuset.mount().members()
                )));
            }
        }
        self.busy_ticks_start = crate::runcgroup::machine_busy_ticks(&self.root).ok();
        let child = spawn::command_in(program, args, &join)
            .env(HINT_ENV, self.hint.path())
            .spawn()
            .map_err(|e| LinuxError::Io {
                path: program.to_path_buf(),
                source: std::io::Error::new(e.kind(), format!("cannot start the command: {e}")),
            })?;
        self.started = Instant::now();
        self.last_observe = self.started;
        self.run_start_epoch_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.child = Some(child);
        self.refresh_tasks();
        Ok(())
    }

    /// The run's accounting cgroup: on cgroup v2 the cpuset cgroup itself
    /// (made now if the plan did not ask for one: a process is in one v2
    /// cgroup only), else a new one on the v1 `cpuacct` hierarchy. `Err`
    /// says why there is none.
    fn create_run_cgroup(&mut self) -> Result<RunCgroup, String> {
        let Some(mount) = AcctMount::find(&self.mounts) else {
            return Err("no cpuacct or cgroup2 mount in /proc/mounts".into());
        };
        if mount.version == AcctVersion::V2 {
            let cpuset_v2 = CpusetMount::find(&self.mounts, &self.root)
                .is_ok_and(|m| m.version == crate::cgroup::Version::V2);
            if cpuset_v2 {
                if self.cpuset.is_none() {
                    let cpuset_mount =
                        CpusetMount::find(&self.mounts, &self.root).map_err(|e| e.to_string())?;
                    self.cpuset = Some(
                        ManagedCpuset::create(
                            &mut self.journal,
                            cpuset_mount,
                            &self.cgroup_name.clone(),
                        )
                        .map_err(|e| e.to_string())?,
                    );
                }
                if let Some(cpuset) = &self.cpuset {
                    return Ok(RunCgroup::adopt(AcctVersion::V2, cpuset.dir()));
                }
            }
        }
        RunCgroup::create(&mut self.journal, &mount, &self.cgroup_name.clone())
            .map_err(|e| e.to_string())
    }

    /// The command's PID, once started.
    pub fn child_pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// One-line notices about what is missing or estimated; the caller
    /// prints them once.
    pub fn notices(&self) -> &[String] {
        &self.notices
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
        self.meter = PowerMeter::open_with(&self.root, &self.topology, params)?;
        let line = format!("power: {}", self.meter.describe());
        match self.notices.iter_mut().find(|n| n.starts_with("power: ")) {
            Some(n) => *n = line,
            None => self.notices.push(line),
        }
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
        let mut v = vec![
            ("tasks", self.tasks.len()),
            ("known", self.known.len()),
            ("names", self.names.len()),
            ("processes", self.processes.len()),
            ("pending", self.pending.len()),
            ("latest", self.latest.len()),
            ("exited", self.exited.len()),
            ("exit_reported", self.exit_reported.len()),
            ("gang", self.gang.tracked()),
            ("journal", self.journal.len()),
        ];
        v.extend(self.reader.map_sizes());
        v
    }

    /// How power is measured, in one line.
    pub fn power_description(&self) -> String {
        self.meter.describe()
    }

    /// Whether frequency can be controlled here, in words.
    pub fn frequency_description(&self) -> String {
        match self.machine.cpufreq.len() {
            0 => "unavailable: no cpufreq on this machine".into(),
            n => format!("cpufreq, {n} policies"),
        }
    }

    /// Read the run's CPU time from its cgroup, undo every change, pass on
    /// an interrupting signal to every process of the run (SIGKILL after
    /// `KILL_GRACE` for those that ignore it), wait for the command and
    /// say how it ended. `stop` also asks the command to end (`SIGTERM`): a
    /// run that failed does not leave it running unmanaged.
    pub fn finish(mut self, stop: bool) -> Result<RunEnd, LinuxError> {
        let interrupted_by = match self.signal.load(Ordering::SeqCst) {
            0 => None,
            sig => Some(sig as i32),
        };
        let Some(mut child) = self.child.take() else {
            let _ = self.journal.undo();
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
        // With no signal to pass on the command ends by itself: wait for it
        // before the undo. It stays confined to its end, and no unreaped
        // zombie holds the run's cgroup (rmdir would fail with EBUSY, and a
        // zombie cannot be moved out).
        if pass_on.is_none() && self.status.is_none() {
            self.status = Some(child.wait().map_err(|e| LinuxError::Io {
                path: PathBuf::from(format!("/proc/{}", child.id())),
                source: e,
            })?);
        }
        // Read before the undo removes the cgroup; after a normal exit
        // this holds every process's time, exited descendants included.
        let cgroup_cpu = self.run_cgroup.as_ref().map(|cg| cg.usage(&self.root));
        let busy_end = crate::runcgroup::machine_busy_ticks(&self.root).ok();
        // Every process of the run, not only the command: a shell's
        // background jobs would otherwise outlive it. Listed now, signalled
        // once the undo has thawed them and taken them out of the cgroups.
        let members = match (pass_on, &self.run_cgroup) {
            (Some(_), Some(cg)) => cg.members(&self.root).unwrap_or_else(|e| {
                eprintln!("ecosched: could not list every process of the run: {e}");
                Vec::new()
            }),
            _ => Vec::new(),
        };
        let restore = self.journal.undo();
        if let Some(signal) = pass_on {
            if self.status.is_none() {
                let _ = gang::signal(child.id(), signal);
            }
            crate::runcgroup::end_all(&self.root, &members, signal, KILL_GRACE);
        }
        let status = match self.status {
            Some(s) => s,
            None => child.wait().map_err(|e| LinuxError::Io {
                path: PathBuf::from(format!("/proc/{}", child.id())),
                source: e,
            })?,
        };
        let (cgroup_cpu, cpu_source) = match (cgroup_cpu, &self.run_cgroup) {
            (Some(Ok(c)), Some(cg)) => (
                Some(c),
                format!(
                    "the run's cgroup {} (every process, exited ones included)",
                    self.root.path(cg.dir()).display()
                ),
            ),
            (Some(Err(e)), _) => (
                None,
                format!("per-task counters (the run's cgroup could not be read: {e}); processes that exited between reads are missing"),
            ),
            _ => (
                None,
                format!(
                    "per-task counters (no accounting cgroup: {}); processes that exited between reads are missing",
                    self.no_run_cgroup.as_deref().unwrap_or("not started")
                ),
            ),
        };
        let host = *self.reader.host();
        let machine_busy_s = match (self.busy_ticks_start, busy_end) {
            (Some(a), Some(b)) => Some(host.ticks_to_s(b.saturating_sub(a))),
            _ => None,
        };
        Ok(RunEnd {
            status,
            interrupted_by,
            restore,
            cgroup_cpu,
            cpu_source,
            machine_busy_s,
        })
    }

    fn poll_child(&mut self) {
        if let (None, Some(child)) = (self.status, self.child.as_mut()) {
            if let Ok(Some(status)) = child.try_wait() {
                self.status = Some(status);
                // Its exit must be read even if nothing in the activity
                // cgroup ran after it: its parent, ecosched, is outside
                // the cgroup, and the exit's own CPU time may have been
                // booked before the last read.
                self.changed = true;
            }
        }
    }

    /// Add tasks the command has spawned since the last look.
    /// New tasks also join the managed cpuset: most are born in it, but
    /// one forked before the cpuset existed (or while tasks were being
    /// moved in) would otherwise escape it.
    fn refresh_tasks(&mut self) {
        let child = self.child_pid();
        let (roots, exact) = match (&mut self.members, child) {
            (Some(members), _) => (members(), self.exact_members),
            // Every process of a run is born in the run's cgroup: its
            // `cgroup.procs` (gang groups below it included) names them
            // all, where a walk of `/proc` reads every process of the
            // machine, thousands on a server. Without one (no root), or
            // when it cannot be read, the walk from the command.
            (None, Some(pid)) => {
                match self.run_cgroup.as_ref().map(|cg| cg.processes(&self.root)) {
                    Some(Ok(pids)) if !pids.is_empty() => (pids, true),
                    _ => (vec![pid], false),
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
        for id in found {
            if !self.known.insert(id) {
                continue;
            }
            self.tasks.push(id);
            if let Some(p) = self.reader.process_of(&id) {
                self.processes.insert(id, p);
            }
            self.journal_inherited_affinity(id);
            if self.gang.active() {
                let process = self.processes.get(&id).copied();
                match self.gang.adopt(&mut self.journal, id, process) {
                    Ok(()) | Err(LinuxError::Gone { .. }) => {}
                    Err(e) => self
                        .notices
                        .push(format!("task {id} could not leave its gang's cgroup: {e}")),
                }
            }
            if let Some(cpuset) = &self.cpuset {
                match cpuset.attach(&mut self.journal, id) {
                    Ok(()) | Err(LinuxError::Gone { .. }) => {}
                    Err(e) => self
                        .notices
                        .push(format!("task {id} could not join the managed cpuset: {e}")),
                }
            }
            if let Some(cpus) = self.confined_cpus.clone() {
                match self.set_affinity(id, &cpus) {
                    Ok(()) | Err(LinuxError::Gone { .. }) => {}
                    Err(e) => self.notices.push(format!(
                        "task {id} could not be confined to CPUs {cpus}: {e}"
                    )),
                }
            }
        }
    }

    /// A thread or process born of one whose affinity ecosched changed
    /// starts with the changed mask, and undoing only the changes ecosched
    /// made would leave it there (a Slurm job's worker forked after its
    /// parent was confined kept the confined CPUs after `job-end`). So its
    /// creator's journalled original is journalled for it, before anything
    /// else is done to it: the creator is its process's leader for a
    /// thread, its parent for a process. A task that set its own affinity
    /// between birth and discovery gets its creator's original back too.
    fn journal_inherited_affinity(&mut self, id: TaskId) {
        if !self.journal.changed_affinity() {
            return;
        }
        let creator = match self.processes.get(&id) {
            Some(p) if p.tgid != id.pid => Some(TaskId {
                pid: p.tgid,
                start_ticks: p.start_ticks,
            }),
            _ => self.reader.parent_of(id.pid),
        };
        let Some(before) = creator
            .and_then(|c| self.journal.affinity_before(c.pid, c.start_ticks))
            .cloned()
        else {
            return;
        };
        if let Err(e) = self.journal.record(Change::Affinity {
            tid: id.pid,
            start_ticks: id.start_ticks,
            before,
        }) {
            self.notices
                .push(format!("task {id} could not be journalled: {e}"));
        }
    }

    /// Whether no managed task can have run since the last full read: the
    /// activity cgroup's CPU time has not moved (running, forking and
    /// exiting all take CPU time in the task's own cgroup), ecosched changed
    /// nothing a read would show, no gang schedule is switching groups, and
    /// no zombie was reaped (its reaper's time is not the task's).
    /// A task that waits runnable for the whole gap without running would
    /// show its wait late, at the next read after it runs.
    fn nothing_ran(&mut self) -> bool {
        let Some(cg) = &self.activity else {
            return false;
        };
        let usage = cg.usage_ns(&self.root).ok();
        let idle = usage.is_some()
            && usage == self.activity_ns
            && !self.changed
            && !self.gang.active()
            && !self.a_zombie_vanished();
        if !idle {
            // Taken before the reads, so a task that runs during them is
            // caught by the next look.
            self.activity_ns = usage;
            self.changed = false;
        }
        idle
    }

    /// Whether a task last read as a zombie has since been reaped. Its
    /// reaping need not show in the activity cgroup's CPU time (a parent
    /// outside it, or time booked before the last read), and until a read
    /// finds it gone it stays listed. Zombies are few and short-lived, so
    /// this costs a `stat` or two.
    fn a_zombie_vanished(&self) -> bool {
        self.exit_reported
            .iter()
            .any(|id| !same_task(&self.root, id.pid, id.start_ticks))
    }

    /// Read every live task's counters and fold them into what the next
    /// observation reports; note the tasks that have exited. Nothing is
    /// read (but the activity cgroup) when no task ran since the last read.
    fn read_tasks(&mut self) {
        self.last_look = Instant::now();
        if self.nothing_ran() {
            self.skipped_reads += 1;
            return;
        }
        self.last_read = self.last_look;
        self.refresh_tasks();
        // A task left unchanged keeps its latest reading, reported with
        // zero counters at the observation unless it ran in between.
        let observation = self.reader.read_changed(&self.tasks);
        for r in observation.tasks {
            // A forked child execs: its name follows its program (a shell's
            // child first reads as `sh`, then as what it ran).
            let renamed = self
                .names
                .get(&r.id)
                .is_none_or(|n| n.rsplit_once(':').map(|(comm, _)| comm) != Some(r.comm.as_str()));
            if renamed {
                self.names.insert(r.id, format!("{}:{}", r.comm, r.id.pid));
            }
            self.pending
                .entry(r.id)
                .or_default()
                .accumulate(&r.counters);
            self.latest.insert(r.id, r);
        }
        let mut gone: BTreeSet<TaskId> = observation.gone.into_iter().collect();
        for (id, e) in observation.errors {
            // Not gone, but unreadable (permissions, a malformed file):
            // say so once and stop following it.
            self.notices
                .push(format!("task {id} is no longer observed: {e}"));
            gone.insert(id);
        }
        self.tasks.retain(|t| !gone.contains(t));
        self.gang.forget(&gone);
        self.exited.extend(gone);
        // Discovery included: it walks /proc and is most of the cost.
        self.read_cost = self.last_read.elapsed();
    }

    fn set_affinity(
        &mut self,
        task: TaskId,
        cpus: &ecosched_model::CpuSet,
    ) -> Result<(), LinuxError> {
        if !same_task(&self.root, task.pid, task.start_ticks) {
            return Err(LinuxError::Gone { pid: task.pid });
        }
        let before = affinity::get(task.pid)?;
        if &before == cpus {
            return Ok(());
        }
        self.journal.record(Change::Affinity {
            tid: task.pid,
            start_ticks: task.start_ticks,
            before,
        })?;
        self.reader.affinity_changed();
        self.changed = true;
        affinity::set(task.pid, cpus)
    }

    fn set_managed_cpus(&mut self, cpus: &ecosched_model::CpuSet) -> Result<(), LinuxError> {
        if let Some(dir) = self.confine.clone() {
            return self.set_confined_cpus(&dir, cpus);
        }
        if self.cpuset.is_none() {
            let mount = CpusetMount::find(&self.mounts, &self.root)?;
            self.cpuset = Some(ManagedCpuset::create(
                &mut self.journal,
                mount,
                &self.cgroup_name.clone(),
            )?);
        }
        let Some(cpuset) = &self.cpuset else {
            return Ok(());
        };
        cpuset.set_cpus(&mut self.journal, cpus)?;
        self.reader.affinity_changed();
        self.changed = true;
        self.attach_all()
    }

    /// Managed CPUs for tasks another manager owns: each task's affinity
    /// becomes `cpus` cut to the owning cgroup's CPUs, or all of those when
    /// the two do not meet (the policy sees the whole machine, the job has
    /// only its share). Affinity never leaves the cgroup's CPUs, so the
    /// job's allocation is never widened, and it is journalled like any
    /// affinity change.
    fn set_confined_cpus(
        &mut self,
        dir: &Path,
        cpus: &ecosched_model::CpuSet,
    ) -> Result<(), LinuxError> {
        let owned = confine_cpus(&self.root, dir)?;
        let cut = cpus.intersection(&owned);
        let target = if cut.is_empty() { owned } else { cut };
        for task in self.tasks.clone() {
            match self.set_affinity(task, &target) {
                Ok(()) | Err(LinuxError::Gone { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        self.confined_cpus = Some(target);
        Ok(())
    }

    /// The system load average, or `None` (said once) when it cannot be
    /// read.
    fn load_avg(&mut self) -> Option<LoadAvg> {
        match read_loadavg(&self.root) {
            Ok(l) => Some(LoadAvg {
                one: l.one,
                five: l.five,
                fifteen: l.fifteen,
                runnable: l.runnable,
                total: l.total,
            }),
            Err(e) => {
                if !self.loadavg_failed {
                    self.loadavg_failed = true;
                    self.notices
                        .push(format!("load average unavailable, left absent: {e}"));
                }
                None
            }
        }
    }

    fn gang_context(&mut self) -> (GangContext<'_>, &mut GangRunner) {
        let v2_cpuset_dir = self.cpuset.as_ref().and_then(|c| {
            (c.mount().version == crate::cgroup::Version::V2).then(|| c.dir().to_string())
        });
        let processes = &self.processes;
        (
            GangContext {
                journal: &mut self.journal,
                process_of: Box::new(move |t| processes.get(&t).copied()),
                base_name: format!("{}-{}", self.cgroup_name, std::process::id()),
                v2_cpuset_dir,
                mounts: &self.mounts,
            },
            &mut self.gang,
        )
    }

    /// Carry out a new gang schedule from now on (the end of one included).
    fn replace_gang_schedule(
        &mut self,
        schedule: ecosched_model::GangSchedule,
    ) -> Result<Vec<TaskId>, LinuxError> {
        if !schedule.is_end() && self.cpuset.is_none() {
            // On a pure cgroup v2 machine the groups live inside the run's
            // cgroup; make it now (with its parent's CPUs) so that a later
            // cpuset does not move the tasks out of their groups.
            if let Ok(mount) = CpusetMount::find(&self.mounts, &self.root) {
                if mount.version == crate::cgroup::Version::V2
                    && crate::freezer::FreezerMount::find(&self.mounts)
                        .is_some_and(|f| f.version == crate::freezer::FreezerVersion::V2)
                {
                    self.cpuset = Some(ManagedCpuset::create(
                        &mut self.journal,
                        mount,
                        &self.cgroup_name.clone(),
                    )?);
                    self.attach_all()?;
                }
            }
        }
        self.changed = true;
        let (mut ctx, gang) = self.gang_context();
        gang.replace(&mut ctx, schedule)
    }

    /// Switch gang slots if a boundary has passed.
    fn gang_tick(&mut self) -> Result<(), LinuxError> {
        if !self.gang.active() {
            return Ok(());
        }
        let (mut ctx, gang) = self.gang_context();
        gang.tick(&mut ctx)
    }

    fn attach_all(&mut self) -> Result<(), LinuxError> {
        let Some(cpuset) = &self.cpuset else {
            return Ok(());
        };
        for &task in &self.tasks {
            match cpuset.attach(&mut self.journal, task) {
                Ok(()) | Err(LinuxError::Gone { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn gang(&mut self, task: TaskId, action: GangAction) -> Result<(), LinuxError> {
        if !same_task(&self.root, task.pid, task.start_ticks) {
            return Err(LinuxError::Gone { pid: task.pid });
        }
        self.changed = true;
        match action {
            GangAction::Stop => {
                self.journal.record(Change::Stopped {
                    pid: task.pid,
                    start_ticks: task.start_ticks,
                })?;
                gang::stop(task.pid)
            }
            GangAction::Continue => gang::resume(task.pid),
        }
    }
}

/// The system load average of `root` (`proc/loadavg`).
fn read_loadavg(root: &FsRoot) -> Result<crate::procfs::LoadAvg, LinuxError> {
    let rel = "proc/loadavg";
    let text = root.read(rel, "load average")?;
    crate::procfs::loadavg::parse(&text)
        .map_err(|e| LinuxError::parse(&root.path(rel), &text, e.reason))
}

/// The CPUs of the cpuset cgroup `dir` (absolute): v1's
/// `cpuset.effective_cpus` or `cpuset.cpus` (or `cpus` when mounted
/// `noprefix`), v2's `cpuset.cpus.effective`; the first that is set.
fn confine_cpus(root: &FsRoot, dir: &Path) -> Result<ecosched_model::CpuSet, LinuxError> {
    let rel = dir.to_string_lossy().trim_start_matches('/').to_string();
    for file in [
        "cpuset.effective_cpus",
        "cpuset.cpus.effective",
        "cpuset.cpus",
        "cpus",
    ] {
        if let Some(set) = root.read_cpulist_opt(&format!("{rel}/{file}"))? {
            if !set.is_empty() {
                return Ok(set);
            }
        }
    }
    Err(LinuxError::Absent {
        path: dir.to_path_buf(),
        what: "the CPUs of the cpuset cgroup that owns the tasks".into(),
    })
}

/// Carry out a plan's frequency settings through cpufreq, journalling every
/// file before it is written. `policies` are index-aligned with the
/// topology's frequency domains.
///
/// A file that already holds the value is not written: policies re-send
/// their settings every interval, and writing `scaling_governor` again
/// restarts the governor (ondemand and conservative lose their sampling
/// history and step back to their starting frequency), while writing a
/// min/max or setspeed file makes cpufreq re-evaluate the policy.
pub fn apply_frequency(
    journal: &mut Journal,
    policies: &[CpufreqPolicy],
    frequency: &BTreeMap<FreqDomainId, FreqSetting>,
) -> Result<(), LinuxError> {
    for (&domain, setting) in frequency {
        let Some(policy) = policies.get(domain.index()) else {
            return Err(LinuxError::Absent {
                path: PathBuf::from("sys/devices/system/cpu/cpufreq"),
                what: format!("a cpufreq policy for frequency domain {domain}"),
            });
        };
        for write in cpufreq::writes_for(policy, setting)? {
            let current = journal.root().read_opt(&write.path)?;
            if current.as_deref() == Some(write.value.trim()) {
                continue;
            }
            journal.write_file(&write.path, &write.value, "root (cpufreq)")?;
        }
    }
    Ok(())
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
        Capabilities {
            counters: self.reader.availability().available.clone(),
            power: Some(self.meter.source()),
            affinity: true,
            frequency: !self.machine.cpufreq.is_empty(),
            gang: true,
        }
    }

    fn meter(&self) -> Meter {
        self.meter.meter()
    }

    fn apply(&mut self, plan: &Plan) -> Result<ApplyReport, PlatformError> {
        check_plan(plan, &self.topology, &self.machine.allowed)?;
        let unknown: Vec<String> = plan
            .task_cpus
            .keys()
            .chain(plan.gang.keys())
            .filter(|t| !self.known.contains(t))
            .map(|t| t.to_string())
            .collect();
        if !unknown.is_empty() {
            return Err(PlatformError::InvalidPlan(format!(
                "tasks {} are not managed by this run",
                unknown.join(", ")
            )));
        }
        if let Some(schedule) = &plan.gang_schedule {
            check_schedule(schedule, &|t| self.known.contains(t))
                .map_err(PlatformError::InvalidPlan)?;
        }
        if self.confine.is_some() && (!plan.gang.is_empty() || plan.gang_schedule.is_some()) {
            return Err(PlatformError::InvalidPlan(
                "gang control moves tasks between freezer cgroups or stops them, and these tasks belong to another manager's cgroup; use a policy without gangs".into(),
            ));
        }
        let mut report = ApplyReport::default();
        if let Some(cpus) = &plan.managed_cpus {
            self.set_managed_cpus(cpus).map_err(PlatformError::from)?;
        }
        for (&task, cpus) in &plan.task_cpus {
            match self.set_affinity(task, cpus) {
                Ok(()) => {}
                Err(LinuxError::Gone { .. }) => report.vanished.push(task),
                Err(e) => return Err(e.into()),
            }
        }
        apply_frequency(&mut self.journal, &self.machine.cpufreq, &plan.frequency)
            .map_err(PlatformError::from)?;
        for (&task, &action) in &plan.gang {
            match self.gang(task, action) {
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
    /// groups, every 10 ms to watch for the command's exit and signals,
    /// and now and then to read counters.
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
            let read_fits = due.is_none_or(|d| d.saturating_duration_since(now) > self.read_cost);
            if read_fits
                && now.duration_since(self.last_look) >= SUBSAMPLE
                && now.duration_since(self.last_read) >= read_spacing(self.read_cost)
            {
                self.read_tasks();
            }
            let now = Instant::now();
            // Without a command to see exit or a gang to switch (the
            // daemon's groups), only the stop flag is watched: waking ten
            // times less often is a tenth of an idle group's cost.
            let poll = if self.child.is_none() && !self.gang.active() {
                SUBSAMPLE
            } else {
                POLL
            };
            let mut wake = until.min(now + poll);
            if let Some(d) = due {
                wake = wake.min(d);
            }
            std::thread::sleep(wake.saturating_duration_since(now));
        }
    }

    fn observe(&mut self) -> Result<Snapshot, PlatformError> {
        self.read_tasks();
        let now = Instant::now();
        let interval_s = now.duration_since(self.last_observe).as_secs_f64();
        self.last_observe = now;
        let time_s = now.duration_since(self.started).as_secs_f64();
        let host = *self.reader.host();
        let run_start = self.run_start_epoch_s;
        let started_s = |id: &TaskId| (host.start_epoch_s(id.start_ticks) - run_start).max(0.0);
        let name = |names: &BTreeMap<TaskId, String>, id: &TaskId| {
            names.get(id).cloned().unwrap_or_else(|| id.pid.to_string())
        };
        let exited = std::mem::take(&mut self.exited);
        // Exited without a reading since the last observation.
        let unread: Vec<TaskId> = exited
            .iter()
            .filter(|id| !self.pending.contains_key(id) && !self.exit_reported.contains(id))
            .copied()
            .collect();
        let mut pending = std::mem::take(&mut self.pending);
        // Read since the last observation, or alive and not run since
        // their last reading (not read again: see `nothing_ran`), which
        // they report unchanged, counting nothing.
        let reported: BTreeSet<TaskId> = pending
            .keys()
            .chain(self.tasks.iter().filter(|t| self.latest.contains_key(t)))
            .filter(|t| !self.exit_reported.contains(t))
            .copied()
            .collect();
        let mut samples = Vec::with_capacity(reported.len() + unread.len());
        for id in reported {
            let Some(latest) = self.latest.get(&id) else {
                continue;
            };
            // A zombie's reading is its last sample: reported once, and
            // forgotten only when it vanishes.
            let gone = exited.contains(&id);
            let ends = gone || latest.state == TaskState::Exited;
            if ends && !gone {
                self.exit_reported.insert(id);
            }
            samples.push(TaskSample {
                id,
                process: latest.process,
                name: name(&self.names, &id),
                managed: true,
                state: if ends {
                    TaskState::Exited
                } else {
                    latest.state
                },
                cpu: Some(latest.cpu),
                allowed: latest.allowed.clone(),
                nice: latest.nice,
                started_s: started_s(&id),
                finished_s: ends.then_some(time_s),
                counters: pending
                    .remove(&id)
                    .unwrap_or_else(|| idle_counters(&latest.counters)),
            });
        }
        for id in unread {
            samples.push(TaskSample {
                id,
                process: self
                    .processes
                    .get(&id)
                    .copied()
                    .unwrap_or_else(|| id.as_process()),
                name: name(&self.names, &id),
                managed: true,
                state: TaskState::Exited,
                cpu: None,
                allowed: ecosched_model::CpuSet::new(),
                nice: 0,
                started_s: started_s(&id),
                finished_s: Some(time_s),
                counters: Counters::default(),
            });
        }
        let cpus = self.cpustat.sample().map_err(PlatformError::from)?;
        let power = self
            .meter
            .sample(interval_s, &cpus)
            .map_err(PlatformError::from)?;
        let mut warnings = Vec::new();
        let parallelism_hint = self.hint.read(&mut |w| warnings.push(w));
        self.notices.extend(warnings);
        // Exits are reported now: nothing about these tasks is kept.
        for id in &exited {
            self.exit_reported.remove(id);
            self.known.remove(id);
            self.names.remove(id);
            self.processes.remove(id);
            self.latest.remove(id);
        }
        let load_avg = self.load_avg();
        Ok(Snapshot {
            time_s,
            interval_s,
            topology: Arc::clone(&self.topology),
            tasks: samples,
            cpus,
            power,
            parallelism_hint,
            load_avg,
        })
    }

    fn finished(&self) -> bool {
        self.status.is_some()
            || self.signal.load(Ordering::SeqCst) != 0
            || self.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst))
    }
}

impl Drop for LinuxPlatform {
    /// Undo whatever is still journalled: this covers a panic and an early
    /// error return (`finish` has already undone a normal run).
    fn drop(&mut self) {
        let report = self.journal.undo();
        for failure in &report.failed {
            eprintln!("ecosched: could not restore: {failure}");
        }
        for id in self.signal_ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_confining_cgroups_cpus_are_read_from_its_cpuset() {
        let dir = tempfile::tempdir().unwrap();
        let job = dir.path().join("sys/fs/cgroup/cpuset/slurm_n1/uid_0/job_7");
        std::fs::create_dir_all(&job).unwrap();
        let root = FsRoot::recorded(dir.path());
        let at = Path::new("/sys/fs/cgroup/cpuset/slurm_n1/uid_0/job_7");
        // Not yet written by Slurm: a clear error naming the cgroup.
        let e = confine_cpus(&root, at).unwrap_err().to_string();
        assert!(e.contains("job_7"), "{e}");
        std::fs::write(job.join("cpuset.cpus"), "2-3\n").unwrap();
        assert_eq!(confine_cpus(&root, at).unwrap().to_list(), "2-3");
        // The effective CPUs win when the kernel offers them.
        std::fs::write(job.join("cpuset.effective_cpus"), "3\n").unwrap();
        assert_eq!(confine_cpus(&root, at).unwrap().to_list(), "3");
    }

    #[test]
    fn reads_between_observations_stay_within_the_duty() {
        let second = Duration::from_secs(1);
        // Cheap reads: one every SUBSAMPLE, the observation's included.
        assert_eq!(
            full_reads_per_interval(Duration::from_micros(50), second),
            10
        );
        // 0.25 ms reads may come every 250 ms (0.1 % of a core).
        assert_eq!(
            full_reads_per_interval(Duration::from_micros(250), second),
            4
        );
        // Dear reads: only the observation's.
        assert_eq!(full_reads_per_interval(Duration::from_millis(1), second), 1);
        assert_eq!(full_reads_per_interval(Duration::ZERO, SUBSAMPLE), 1);
        for us in (10..5000).step_by(10) {
            let cost = Duration::from_micros(us);
            let between = full_reads_per_interval(cost, second) - 1;
            assert!(cost * u32::try_from(between).unwrap() <= second / SUBSAMPLE_DUTY);
        }
    }

    #[test]
    fn a_task_that_did_not_run_counts_zero_of_what_it_measures() {
        let measured = Counters {
            on_cpu_ns: Some(5),
            migrations: Some(1),
            ..Counters::default()
        };
        let idle = idle_counters(&measured);
        assert_eq!(idle.on_cpu_ns, Some(0));
        assert_eq!(idle.migrations, Some(0));
        assert_eq!(idle.instructions, None);
    }
}
