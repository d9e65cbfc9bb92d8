//! How a [`LinuxPlatform`](crate::platform::LinuxPlatform) is put
//! together: the settings a caller chooses, and the parts built from them
//! (machine, journal, task reader, sensors, hint file) with the start-up
//! notices about what is missing or estimated. Nothing on the machine is
//! changed here, so a caller can check a policy's requirements first.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::hints::HintFile;
use crate::journal::{self, Journal};
use crate::mounts::MountTable;
use crate::perf::{PerfBackend, SystemPerf};
use crate::platform::actuation::Actuator;
use crate::platform::attachment::{Attachment, Members};
use crate::platform::sensors::Sensors;
use crate::platform::signals::SignalWatch;
use crate::pmu;
use crate::signals::Resolution;
use crate::tasks::{HostFacts, TaskReader};
use crate::topology::{discover_with, LinuxTopology};
use ecosched_model::PmuSpec;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Settings of a managed run.
#[derive(Debug, Clone)]
pub struct LinuxOptions {
    /// Where the restore journal and the hint file live.
    pub state_dir: PathBuf,
    /// Name of the cgroup ecosched creates its runs under.
    pub cgroup_name: String,
    /// The program's parallelism, when the user knows it (a hint).
    pub parallelism: Option<u32>,
    /// Whether attached tasks stay in the cpuset they are in (the
    /// daemon's groups): a task in ecosched's own cpuset joins the run's
    /// cpuset, a child of it; a task in another (a Slurm job's, a systemd
    /// slice's, a container's) is never moved out, and a plan's managed
    /// CPUs become its affinity cut to that cpuset's CPUs — its allocation
    /// is never widened.
    pub stay_in_cpusets: bool,
}

impl Default for LinuxOptions {
    fn default() -> Self {
        LinuxOptions {
            state_dir: PathBuf::from(journal::DEFAULT_STATE_DIR),
            cgroup_name: "ecosched".into(),
            parallelism: None,
            stay_in_cpusets: false,
        }
    }
}

/// The one way to make a [`LinuxPlatform`](crate::platform::LinuxPlatform):
/// `LinuxPlatform::builder(root)`, the settings that differ from the
/// defaults, then `build()`.
pub struct LinuxPlatformBuilder {
    root: FsRoot,
    options: LinuxOptions,
    perf: Option<Box<dyn PerfBackend>>,
    pmu: Option<PmuSpec>,
    signals: Option<Resolution>,
    cpu_id_root: Option<FsRoot>,
    attach: Option<(String, Attachment)>,
}

impl std::fmt::Debug for LinuxPlatformBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxPlatformBuilder")
            .field("root", &self.root)
            .field("options", &self.options)
            .field("pmu", &self.pmu)
            .field("signals", &self.signals)
            .field("attach", &self.attach.as_ref().map(|(tag, _)| tag))
            .finish_non_exhaustive()
    }
}

/// What [`LinuxPlatformBuilder::assemble`] makes.
pub(super) struct Parts {
    pub(super) root: FsRoot,
    pub(super) machine: LinuxTopology,
    pub(super) reader: TaskReader,
    pub(super) actuator: Actuator,
    pub(super) sensors: Sensors,
    pub(super) signals: SignalWatch,
    pub(super) hint: HintFile,
    pub(super) notices: Vec<String>,
    pub(super) attachment: Option<Attachment>,
}

impl LinuxPlatformBuilder {
    /// A platform over `root` with the default settings: the live machine
    /// (`FsRoot::live()`), or a recorded one, which it observes and never
    /// changes.
    pub(super) fn new(root: FsRoot) -> Self {
        LinuxPlatformBuilder {
            root,
            options: LinuxOptions::default(),
            perf: None,
            pmu: None,
            signals: None,
            cpu_id_root: None,
            attach: None,
        }
    }

    /// Settings of the run (state directory, cgroup name, hint, owning
    /// cgroup).
    pub fn options(mut self, options: &LinuxOptions) -> Self {
        self.options = options.clone();
        self
    }

    /// Count with `perf` instead of the kernel's perf events (tests use a
    /// fake).
    pub fn perf(mut self, perf: Box<dyn PerfBackend>) -> Self {
        self.perf = Some(perf);
        self
    }

    /// The PMU of a machine preset: when this CPU is the one it describes,
    /// its model-specific (raw) events are counted too (see
    /// [`crate::pmu`]).
    pub fn pmu(mut self, pmu: Option<&PmuSpec>) -> Self {
        self.pmu = pmu.cloned();
        self
    }

    /// Count each hardware kind the way the signal resolver found for this
    /// machine ([`crate::signals`]): its model-specific events are opened
    /// with their encodings, its table's counters shape the perf groups,
    /// and its sources are reported at start. Takes the place of
    /// [`Self::pmu`].
    pub fn signals(mut self, resolution: Resolution) -> Self {
        self.signals = Some(resolution);
        self
    }

    /// Read the CPU's id (only) from `root`: tests pose as another CPU
    /// with a recorded cpuinfo.
    #[doc(hidden)]
    pub fn cpu_id_root(mut self, root: FsRoot) -> Self {
        self.cpu_id_root = Some(root);
        self
    }

    /// Manage processes that already run instead of a started command:
    /// the daemon's groups. `tag` names this group's journal, hint file
    /// and cgroups apart from the other groups of the same process;
    /// `members` is asked for the group's root processes at every look;
    /// the management ends when `stop` is set (or on `SIGINT`/`SIGTERM`),
    /// and [`LinuxPlatform::release`](crate::platform::LinuxPlatform::release)
    /// undoes it.
    pub fn attach(mut self, tag: &str, members: Members, stop: Arc<AtomicBool>) -> Self {
        self.attach = Some((tag.to_string(), Attachment::new(members, stop)));
        self
    }

    /// Discover the machine and open the journal, counters and meters.
    pub(super) fn assemble(self) -> Result<Parts, LinuxError> {
        let root = self.root;
        let options = self.options;
        let (tag, attachment) = match self.attach {
            Some((tag, attachment)) => (Some(tag), Some(attachment)),
            None => (None, None),
        };
        // Thousands of threads need thousands of descriptors (crate::limits).
        let nofile_notice = crate::limits::raise_nofile()
            .err()
            .map(|e| format!("open-file limit not raised, large programs may go unobserved: {e}"));
        let mounts = MountTable::read(&root)?;
        let machine = discover_with(&root, &mounts)?;
        let journal = Journal::create_tagged(&options.state_dir, root.clone(), tag.as_deref())?;
        let host = HostFacts::detect(&root)?;
        let cpu_id_root = self.cpu_id_root.unwrap_or_else(|| root.clone());
        let (raw, matched, pmu_notice) = match &self.signals {
            Some(r) => (
                r.perf_events(),
                r.pmu.clone(),
                Some(format!("counter sources: {}", r.describe().join("; "))),
            ),
            None => raw_events(&cpu_id_root, self.pmu.as_ref()),
        };
        let perf = self.perf.unwrap_or_else(|| Box::new(SystemPerf));
        let reader = TaskReader::with_pmu(root.clone(), perf, host, raw, matched);
        let sensors = Sensors::open(&root, &machine.topology)?;
        let signals = SignalWatch::register(attachment.is_some())?;
        let hint_name = match &tag {
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
        notices.extend(journal::stale_notices(&options.state_dir, &root));
        notices.extend(nofile_notice);
        notices.extend(machine.notes.iter().cloned());
        if let Some(control) = crate::cpufreq::describe_control(&machine.cpufreq, &machine.pstate) {
            notices.push(format!("frequency control: {control}"));
        }
        if machine.cpufreq.is_empty() {
            notices.push(
                "frequency control unavailable: no cpufreq on this machine (sys/devices/system/cpu/cpufreq absent); frequency plans are refused"
                    .into(),
            );
        }
        if !root.is_live() {
            notices.push(format!(
                "{} is a recorded machine: it is observed, and plans that change anything are refused",
                root.dir().display()
            ));
        }
        notices.push(format!("power: {}", sensors.describe_power()));
        let actuator = Actuator::new(
            root.clone(),
            journal,
            mounts,
            options.cgroup_name,
            options.stay_in_cpusets,
        );
        Ok(Parts {
            root,
            machine,
            reader,
            actuator,
            sensors,
            signals,
            hint,
            notices,
            attachment,
        })
    }
}

/// The model-specific events of `pmu` when the CPU (its id read under
/// `cpu_id_root`) is the one it describes, that PMU, and why not otherwise.
fn raw_events(
    cpu_id_root: &FsRoot,
    pmu: Option<&PmuSpec>,
) -> (Vec<crate::perf::Event>, Option<PmuSpec>, Option<String>) {
    let Some(spec) = pmu else {
        return (Vec::new(), None, None);
    };
    match pmu::cpuid(cpu_id_root) {
        Ok(id) => match pmu::raw_events(spec, &id) {
            pmu::RawEvents::Matched(events) => (events, Some(spec.clone()), None),
            pmu::RawEvents::NotOpened(why) => (
                Vec::new(),
                None,
                Some(format!("model-specific PMU events not opened: {why}")),
            ),
        },
        Err(e) => (
            Vec::new(),
            None,
            Some(format!(
                "model-specific PMU events not opened: this CPU's id is unknown ({e})"
            )),
        ),
    }
}
