//! The OpenMetrics exporter: every series the daemon publishes, declared
//! once here with its help text, in base units (joules, watts, hertz,
//! seconds), and served over HTTP (`GET /metrics`) by [`crate::exporter`].
//!
//! | series | labels | from |
//! |---|---|---|
//! | `ecosched_energy_joules_total` | zone, domain, source | the machine's meter, per RAPL domain / hwmon sensor / estimate |
//! | `ecosched_power_watts` | zone, domain, source | the same over the last sample |
//! | `ecosched_cpu_frequency_hertz` | cpu | `/proc/stat`-side CPU samples (cpufreq) |
//! | `ecosched_group_cpu_seconds_total` | group | the group's CPU time, exited processes included: its cgroup's count, or its processes' with their reaped children ([`crate::group_cpu`]) |
//! | `ecosched_group_energy_joules_total` | group, source | machine energy attributed by the activity model where the group's counters exist, else × its share of busy CPU time ([`crate::attribution`]) |
//! | `ecosched_group_tasks` | group | threads managed now |
//! | `ecosched_group_llc_misses_total` | group | the group's tasks' shared-cache misses, only where hardware counters are read |
//! | `ecosched_policy_decisions_total` | group, policy | control steps whose plan changed something |
//! | `ecosched_group_state` | group, state | 1 for the state the group is in, 0 for the others (`starting`, `running`, `paused`, `failed`, `waiting`): the daemon's view at each scan and control request |
//! | `ecosched_group_policy_info` | group, policy | 1: the policy the group runs |
//! | `ecosched_group_failures_total` | stage, cause | group workers that stopped on an error: before (`start`) or after (`run`) their first plan, by `policy`, `platform` or `daemon` |
//! | `ecosched_restore_failures_total` | – | changes an undo could not put back (a group's, or a dead predecessor's journal at start); their journals are kept |
//! | `ecosched_sample_errors_total` | – | machine samples (meter, CPU statistics) that failed |
//! | `ecosched_loop_heartbeat_timestamp_seconds` | – | when the daemon's loop (the one that pings systemd's watchdog) last went round |
//! | `ecosched_<family>_<statistic>` | group | each policy's typed statistics ([`crate::policy_series`]): `ecosched_pam_plans_total`, `ecosched_hilo_high_cpus` … (`ecosched policies` lists them) |
//! | `ecosched_observation_seconds_total` | – | CPU time the daemon itself has used |
//! | `ecosched_build_info` | version, revision, rustc | [`crate::build_info`] |
//! | `process_*` | – | the daemon's own process ([`crate::process_series`]) |
//!
//! `zone` is the name Kepler and node_exporter give a RAPL zone
//! (`package`, `core`, `uncore`, `dram`, `psys`; `platform` for a
//! whole-machine hwmon meter), `domain` the kernel's or driver's name of
//! the one measured (`package-0/dram`), and `source` is `rapl`, `hwmon` or
//! `estimate`; a meter is one or the other for the daemon's lifetime, so
//! estimates and measurements are never summed into one series. There are no pid or cmdline labels (their
//! cardinality grows without bound), and a group's series are removed when
//! the group ends.

use crate::attribution::{Charge, GroupAttribution};
pub use crate::labels::{
    BuildLabels, CpuLabels, FailureLabels, FloatCounter, FloatGauge, GroupLabels,
    GroupPolicyLabels, GroupSourceLabels, GroupStateLabels, ZoneLabels,
};
use crate::policy_series::PolicySeries;
use crate::process_series::ProcessCollector;
use crate::totals::SharedTotals;
use ecosched_linux::power::PowerMeter;
use ecosched_linux::{cpustat::CpuStat, FsRoot, LinuxError};
use ecosched_model::trace::TraceSink;
use ecosched_model::{Meter, Plan, PowerSource, ProcessId, Step, TaskState, TraceHeader};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

/// Every series, cheap to clone (the families are shared).
#[derive(Debug, Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    /// `ecosched_energy_joules_total`.
    pub energy: Family<ZoneLabels, FloatCounter>,
    /// `ecosched_power_watts`.
    pub power: Family<ZoneLabels, FloatGauge>,
    /// `ecosched_cpu_frequency_hertz`.
    pub frequency: Family<CpuLabels, FloatGauge>,
    /// `ecosched_group_cpu_seconds_total`.
    pub group_cpu: Family<GroupLabels, FloatCounter>,
    /// `ecosched_group_energy_joules_total`.
    pub group_energy: Family<GroupSourceLabels, FloatCounter>,
    /// `ecosched_group_tasks`.
    pub group_tasks: Family<GroupLabels, Gauge>,
    /// `ecosched_group_llc_misses_total`.
    pub group_llc_misses: Family<GroupLabels, Counter>,
    /// `ecosched_policy_decisions_total`.
    pub decisions: Family<GroupPolicyLabels, Counter>,
    /// `ecosched_observation_seconds_total`.
    pub observation: FloatCounter,
    /// `ecosched_group_state`.
    pub group_state: Family<GroupStateLabels, Gauge>,
    /// `ecosched_group_policy_info`.
    pub group_policy: Family<GroupPolicyLabels, Gauge>,
    /// `ecosched_group_failures_total`.
    pub failures: Family<FailureLabels, Counter>,
    /// `ecosched_restore_failures_total`.
    pub restore_failures: Counter,
    /// `ecosched_sample_errors_total`.
    pub sample_errors: Counter,
    /// `ecosched_loop_heartbeat_timestamp_seconds`.
    pub heartbeat: FloatGauge,
    /// Every policy's statistics.
    pub policies: PolicySeries,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Declare every series.
    pub fn new() -> Self {
        let mut r = Registry::default();
        let energy = Family::default();
        r.register(
            "ecosched_energy_joules",
            "Energy used, per meter zone, since the daemon started; source says whether it is measured (rapl, hwmon) or estimated from utilisation",
            energy.clone(),
        );
        let power = Family::default();
        r.register(
            "ecosched_power_watts",
            "Mean power over the last sample, per meter zone (same sources as ecosched_energy_joules_total)",
            power.clone(),
        );
        let frequency = Family::default();
        r.register(
            "ecosched_cpu_frequency_hertz",
            "Current frequency of each CPU, where cpufreq reports it",
            frequency.clone(),
        );
        let group_cpu = Family::default();
        r.register(
            "ecosched_group_cpu_seconds",
            "On-CPU time of the managed group's tasks",
            group_cpu.clone(),
        );
        let group_energy = Family::default();
        r.register(
            "ecosched_group_energy_joules",
            "Machine energy attributed to the group (an attribution, not a measurement of the group): by the activity model (a least-squares fit of machine power on the group's instructions, cycles, LLC misses) where the group's hardware counters are read and the fit has enough intervals, else by its share of the busy CPU time over each interval",
            group_energy.clone(),
        );
        let group_tasks = Family::default();
        r.register(
            "ecosched_group_tasks",
            "Threads the group manages now",
            group_tasks.clone(),
        );
        let group_llc_misses = Family::default();
        r.register(
            "ecosched_group_llc_misses",
            "Shared-cache (LLC) misses of the group's tasks, the memory-bus component of their activity vector; absent where hardware counters cannot be read",
            group_llc_misses.clone(),
        );
        let decisions = Family::default();
        r.register(
            "ecosched_policy_decisions",
            "Control steps whose plan changed something, per group and policy",
            decisions.clone(),
        );
        let observation = FloatCounter::default();
        r.register(
            "ecosched_observation_seconds",
            "CPU time the daemon itself has used (observing, deciding, exporting): its own cost",
            observation.clone(),
        );
        let group_state = Family::default();
        r.register(
            "ecosched_group_state",
            "1 for the state each group is in, 0 for the others: starting, running, paused (by ctl pause), failed (its worker stopped on an error; its changes were undone), waiting",
            group_state.clone(),
        );
        let group_policy = Family::default();
        r.register(
            "ecosched_group_policy_info",
            "The policy each group runs (always 1)",
            group_policy.clone(),
        );
        let failures = Family::<FailureLabels, Counter>::default();
        for stage in ["start", "run"] {
            for cause in FAILURE_CAUSES {
                // Every series exists from the start, at 0, so that a rate
                // or an alert sees the first failure.
                failures
                    .get_or_create(&FailureLabels {
                        stage: stage.into(),
                        cause: cause.into(),
                    })
                    .inc_by(0);
            }
        }
        r.register(
            "ecosched_group_failures",
            "Group workers that stopped on an error, before their policy's first plan was applied (stage start) or after (run), by what failed (policy, platform, daemon)",
            failures.clone(),
        );
        let restore_failures = Counter::default();
        r.register(
            "ecosched_restore_failures",
            "Changes an undo could not put back, a group's or a dead predecessor's; their journals are kept for `ecosched restore`",
            restore_failures.clone(),
        );
        let sample_errors = Counter::default();
        r.register(
            "ecosched_sample_errors",
            "Machine samples (power meter, CPU statistics) that failed",
            sample_errors.clone(),
        );
        let heartbeat = FloatGauge::default();
        r.register(
            "ecosched_loop_heartbeat_timestamp_seconds",
            "When the daemon's loop last went round, in seconds since the Unix epoch: it answers the control socket, rescans groups and pings systemd's watchdog; the exporter answers from a thread of its own, so a scrape still succeeds while the loop is stuck",
            heartbeat.clone(),
        );
        // A gauge at 1 rather than an OpenMetrics `info`: Prometheus's own
        // text parser (and `promtool check metrics`) knows no `info` type.
        let build = Family::<BuildLabels, Gauge>::default();
        build
            .get_or_create(&BuildLabels {
                version: crate::build_info::VERSION.to_string(),
                revision: crate::build_info::REVISION.to_string(),
                rustc: crate::build_info::RUSTC.to_string(),
            })
            .set(1);
        r.register("ecosched_build_info", "The running ecosched", build);
        r.register_collector(Box::new(ProcessCollector::own()));
        let policies = PolicySeries::register(&mut r);
        Metrics {
            registry: Arc::new(r),
            energy,
            power,
            frequency,
            group_cpu,
            group_energy,
            group_tasks,
            group_llc_misses,
            decisions,
            observation,
            group_state,
            group_policy,
            failures,
            restore_failures,
            sample_errors,
            heartbeat,
            policies,
        }
    }

    /// Record that the daemon's loop went round now.
    pub fn beat(&self) {
        if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            self.heartbeat.set(t.as_secs_f64());
        }
    }

    /// Publish that group `group` is in `state` running `policy`, and no
    /// longer runs any of `former` policies.
    pub fn set_group_state(&self, group: &str, state: &str, policy: &str, former: &[String]) {
        for s in GROUP_STATES {
            self.group_state
                .get_or_create(&GroupStateLabels {
                    group: group.to_string(),
                    state: s.to_string(),
                })
                .set(i64::from(s == state));
        }
        for p in former.iter().filter(|p| *p != policy) {
            self.group_policy.remove(&GroupPolicyLabels {
                group: group.to_string(),
                policy: p.clone(),
            });
        }
        self.group_policy
            .get_or_create(&GroupPolicyLabels {
                group: group.to_string(),
                policy: policy.to_string(),
            })
            .set(1);
    }

    /// Count a group worker that stopped on an error.
    pub fn count_failure(&self, stage: &str, cause: &str) {
        self.failures
            .get_or_create(&FailureLabels {
                stage: stage.to_string(),
                cause: cause.to_string(),
            })
            .inc();
    }

    /// The OpenMetrics text of every series now.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }

    /// The same series in Prometheus's classic text format (0.0.4), for
    /// clients that do not ask for OpenMetrics (`curl`, `promtool check
    /// metrics`): there a counter's HELP and TYPE name carries `_total`,
    /// as the sample does, and there is no `# EOF`.
    pub fn encode_classic(&self) -> Result<String, std::fmt::Error> {
        Ok(openmetrics_to_classic(&self.encode()?))
    }

    /// Drop every series of group `group` (it ended or vanished).
    pub fn forget_group(&self, group: &str, policies: &[String]) {
        let g = GroupLabels {
            group: group.to_string(),
        };
        self.group_cpu.remove(&g);
        self.group_tasks.remove(&g);
        self.group_llc_misses.remove(&g);
        for state in GROUP_STATES {
            self.group_state.remove(&GroupStateLabels {
                group: group.to_string(),
                state: state.to_string(),
            });
        }
        for source in SOURCES {
            self.group_energy.remove(&GroupSourceLabels {
                group: group.to_string(),
                source: source.to_string(),
            });
        }
        for policy in policies {
            self.forget_policy(group, policy);
        }
        self.policies.forget_group(group);
    }

    /// Drop a group's decisions under a policy, and its policy info.
    pub fn forget_policy(&self, group: &str, policy: &str) {
        let labels = GroupPolicyLabels {
            group: group.to_string(),
            policy: policy.to_string(),
        };
        self.decisions.remove(&labels);
        self.group_policy.remove(&labels);
    }
}

/// See [`Metrics::encode_classic`].
fn openmetrics_to_classic(text: &str) -> String {
    let counters: std::collections::HashSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if line == "# EOF" {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|prefix| {
            let rest = line.strip_prefix(prefix)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(name)
                .then(|| format!("{prefix}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

const SOURCES: [&str; 3] = ["rapl", "hwmon", "estimate"];

/// The values of `ecosched_group_state`'s `state` label.
pub const GROUP_STATES: [&str; 5] = ["starting", "running", "paused", "failed", "waiting"];

/// The values of `ecosched_group_failures_total`'s `cause` label.
pub const FAILURE_CAUSES: [&str; 3] = ["policy", "platform", "daemon"];

/// The `source` label of a meter: one value for its whole life.
pub fn source_label(meter: &PowerMeter) -> &'static str {
    match meter.source() {
        PowerSource::Estimated => "estimate",
        PowerSource::Measured if meter.describe().contains("RAPL") => "rapl",
        PowerSource::Measured => "hwmon",
    }
}

/// The source of one zone of a measured meter: RAPL zones are named
/// `package-N[/part]`, `psys`; anything else comes from hwmon.
fn zone_source(meter_source: &'static str, zone: &str) -> &'static str {
    match meter_source {
        "estimate" => "estimate",
        _ if zone.starts_with("package-") || zone.starts_with("psys") => "rapl",
        _ => "hwmon",
    }
}

/// The `zone` label of meter domain `domain`: the name Kepler and
/// node_exporter's RAPL collector give it. RAPL domains are `package-N`,
/// `package-N/part` (`core`, `uncore`, `dram`) and `psys`; hwmon domains
/// are `driver sensor`, the ACPI power meter covering the whole machine
/// and the others ([`ecosched_linux::power`]'s hwmon table) the packages.
pub fn zone_of(domain: &str) -> String {
    if let Some(rest) = domain.strip_prefix("package-") {
        return match rest.split_once('/') {
            Some((_, part)) => part.to_string(),
            None => "package".to_string(),
        };
    }
    let driver = domain.split(' ').next().unwrap_or(domain);
    match driver {
        "package" => "package".to_string(),
        "psys" => "psys".to_string(),
        "power_meter" => "platform".to_string(),
        "amd_energy" | "zenpower" | "fam15h_power" => "package".to_string(),
        _ => domain.to_string(),
    }
}

/// The machine-wide series: the meter, the CPUs, the daemon's own cost.
#[derive(Debug)]
pub struct MachineSampler {
    meter: PowerMeter,
    source: &'static str,
    cpustat: CpuStat,
    last: Instant,
    own_cpu_s: f64,
}

impl MachineSampler {
    /// Open the machine's meter and CPU statistics; where nothing
    /// measures power, the estimate takes its figures from `power_model`
    /// (see [`crate::power_model`]).
    pub fn open(power_model: crate::power_model::Choice) -> Result<Self, LinuxError> {
        let root = FsRoot::live();
        let machine = ecosched_linux::topology::discover(&root)?;
        let cpuinfo = root.read_opt("proc/cpuinfo")?.unwrap_or_default();
        let identity =
            crate::power_model::identity(&machine.machine_name, &cpuinfo, &machine.topology);
        let params = power_model.resolve(&identity, &machine.topology);
        let meter = PowerMeter::open_with(&root, &machine.topology, params)?;
        let source = source_label(&meter);
        Ok(MachineSampler {
            meter,
            source,
            cpustat: CpuStat::new(root)?,
            last: Instant::now(),
            own_cpu_s: own_cpu_s(),
        })
    }

    /// How power is measured, in one line.
    pub fn describe(&self) -> String {
        self.meter.describe()
    }

    /// The `source` label this machine's energy carries.
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// Read the meter, the CPUs and the daemon's CPU time into `m`.
    pub fn sample(&mut self, m: &Metrics) -> Result<(), LinuxError> {
        let interval_s = self.last.elapsed().as_secs_f64();
        self.last = Instant::now();
        let cpus = self.cpustat.sample()?;
        self.meter.sample(interval_s, &cpus)?;
        for d in self.meter.domains() {
            let labels = ZoneLabels {
                zone: zone_of(&d.name),
                domain: d.name.clone(),
                source: zone_source(self.source, &d.name).to_string(),
            };
            if let Some(j) = d.energy_j.filter(|j| j.is_finite() && *j >= 0.0) {
                m.energy.get_or_create(&labels).inc_by(j);
                if interval_s > 0.0 {
                    m.power.get_or_create(&labels).set(j / interval_s);
                }
            }
        }
        for c in &cpus {
            if let Some(khz) = c.freq_khz {
                m.frequency
                    .get_or_create(&CpuLabels {
                        cpu: c.id.to_string(),
                    })
                    .set(khz as f64 * 1e3);
            }
        }
        let now = own_cpu_s();
        m.observation.inc_by((now - self.own_cpu_s).max(0.0));
        self.own_cpu_s = now;
        Ok(())
    }
}

/// User plus system CPU time of this process, in seconds.
fn own_cpu_s() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        }
        Err(_) => 0.0,
    }
}

/// Where one group's control loop reports: its steps become the group's
/// series and its totals (for its record when it ends).
#[derive(Debug)]
pub struct GroupSink {
    totals: SharedTotals,
    metrics: Metrics,
    group: String,
    policy: String,
    /// The policy's family, which names its statistics' series.
    family: &'static str,
    /// The counters already published.
    published: BTreeMap<String, f64>,
    source: &'static str,
    meter: Meter,
    attribution: GroupAttribution,
}

impl GroupSink {
    /// Report group `group`, run by `policy`, attributing energy of a meter
    /// labelled `source`, into its series and `totals`.
    pub fn new(
        metrics: Metrics,
        group: &str,
        policy: &str,
        source: &'static str,
        totals: SharedTotals,
    ) -> Self {
        if let Ok(mut t) = totals.lock() {
            t.policy = policy.to_string();
        }
        GroupSink {
            totals,
            metrics,
            group: group.to_string(),
            policy: policy.to_string(),
            family: ecosched_policy::find(policy).map_or("", |(f, _)| f.name),
            published: BTreeMap::new(),
            source,
            meter: Meter::Package,
            attribution: GroupAttribution::default(),
        }
    }
}

impl TraceSink for GroupSink {
    fn begin(&mut self, header: &TraceHeader, initial: &Plan) -> std::io::Result<()> {
        self.meter = header.meter;
        // The series exists from the group's start, at 0 when the first
        // plan changed nothing.
        let decisions = self.metrics.decisions.get_or_create(&GroupPolicyLabels {
            group: self.group.clone(),
            policy: self.policy.clone(),
        });
        if !initial.is_empty() {
            decisions.inc();
            if let Ok(mut t) = self.totals.lock() {
                t.decisions += 1;
            }
        }
        Ok(())
    }

    fn step(&mut self, step: &Step) -> std::io::Result<()> {
        let s = &step.snapshot;
        let g = GroupLabels {
            group: self.group.clone(),
        };
        let mut totals = self
            .totals
            .lock()
            .map_err(|_| std::io::Error::other("the group's totals are poisoned"))?;
        // The group's cgroup or its processes' reaped children count the
        // time of processes no read saw (see `crate::group_cpu`); the
        // tasks' own counters are the fallback.
        let members: BTreeSet<ProcessId> = s.tasks.iter().map(|t| t.process).collect();
        let members: Vec<ProcessId> = members.into_iter().collect();
        let counted = totals.cpu.as_mut().and_then(|c| c.advance(&members));
        let cpu_s: f64 = counted.unwrap_or_else(|| {
            s.tasks
                .iter()
                .filter_map(|t| t.counters.on_cpu_ns)
                .map(|ns| ns as f64 / 1e9)
                .sum()
        });
        totals.cpu_s += cpu_s;
        self.metrics.group_cpu.get_or_create(&g).inc_by(cpu_s);
        // Only where the counters exist: no series is better than a zero
        // that looks measured.
        let misses: Vec<u64> = s
            .tasks
            .iter()
            .filter_map(|t| t.counters.llc_misses)
            .collect();
        if !misses.is_empty() {
            self.metrics
                .group_llc_misses
                .get_or_create(&g)
                .inc_by(misses.iter().sum());
        }
        let alive = s
            .tasks
            .iter()
            .filter(|t| t.state != TaskState::Exited)
            .count();
        self.metrics
            .group_tasks
            .get_or_create(&g)
            .set(i64::try_from(alive).unwrap_or(i64::MAX));
        // Attribution (crate::attribution): by the activity model where
        // the group's counters exist, else by its share of busy CPU time.
        let busy_s: f64 = s.cpus.iter().map(|c| c.utilisation).sum::<f64>() * s.interval_s;
        if let Some(j) = s.power.energy_j(self.meter) {
            let counters: Vec<&ecosched_model::Counters> =
                s.tasks.iter().map(|t| &t.counters).collect();
            if let Some(charge) = self
                .attribution
                .charge(j, s.interval_s, busy_s, cpu_s, &counters)
            {
                let joules = match charge {
                    Charge::Activity(j) => {
                        totals.charged.0 += 1;
                        j
                    }
                    Charge::CpuTime(j) => {
                        totals.charged.1 += 1;
                        j
                    }
                };
                *totals.energy_j.get_or_insert(0.0) += joules;
                self.metrics
                    .group_energy
                    .get_or_create(&GroupSourceLabels {
                        group: self.group.clone(),
                        source: self.source.to_string(),
                    })
                    .inc_by(joules);
            }
        }
        if !step.stats.is_empty() {
            totals.stats = serde_json::to_value(&step.stats).unwrap_or_default();
        }
        if !step.plan.is_empty() {
            totals.decisions += 1;
            self.metrics
                .decisions
                .get_or_create(&GroupPolicyLabels {
                    group: self.group.clone(),
                    policy: self.policy.clone(),
                })
                .inc();
        }
        self.metrics
            .policies
            .record(self.family, &self.group, &step.stats, &mut self.published);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn series_have_base_unit_names_and_groups_leave_none_behind() {
        let m = Metrics::new();
        let g = GroupLabels { group: "a".into() };
        m.group_cpu.get_or_create(&g).inc_by(1.5);
        m.group_tasks.get_or_create(&g).set(3);
        m.group_llc_misses.get_or_create(&g).inc_by(7);
        m.decisions
            .get_or_create(&GroupPolicyLabels {
                group: "a".into(),
                policy: "static".into(),
            })
            .inc();
        m.energy
            .get_or_create(&ZoneLabels {
                zone: zone_of("package (estimated)"),
                domain: "package (estimated)".into(),
                source: "estimate".into(),
            })
            .inc_by(2.0);
        m.set_group_state("a", "running", "static", &["hilo".into()]);
        m.count_failure("start", "policy");
        m.restore_failures.inc();
        let text = m.encode().unwrap();
        for line in [
            "ecosched_group_cpu_seconds_total{group=\"a\"} 1.5",
            "ecosched_group_tasks{group=\"a\"} 3",
            "ecosched_group_llc_misses_total{group=\"a\"} 7",
            "ecosched_policy_decisions_total{group=\"a\",policy=\"static\"} 1",
            "ecosched_energy_joules_total{zone=\"package\",domain=\"package (estimated)\",source=\"estimate\"} 2.0",
            "ecosched_observation_seconds_total 0.0",
            "ecosched_group_state{group=\"a\",state=\"running\"} 1",
            "ecosched_group_state{group=\"a\",state=\"failed\"} 0",
            "ecosched_group_policy_info{group=\"a\",policy=\"static\"} 1",
            "ecosched_group_failures_total{stage=\"start\",cause=\"policy\"} 1",
            "ecosched_group_failures_total{stage=\"run\",cause=\"platform\"} 0",
            "ecosched_restore_failures_total 1",
            "ecosched_sample_errors_total 0",
            "ecosched_loop_heartbeat_timestamp_seconds 0.0",
            "process_cpu_seconds_total ",
            "process_open_fds ",
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
        let build = format!(
            "ecosched_build_info{{version=\"{}\",revision=\"{}\",rustc=\"{}\"}} 1",
            crate::build_info::VERSION,
            crate::build_info::REVISION,
            crate::build_info::RUSTC
        );
        assert!(text.contains(&build), "{build} missing from\n{text}");
        // The policy it left is gone; the daemon-wide counters stay.
        m.set_group_state("a", "paused", "hilo", &["static".into()]);
        let text = m.encode().unwrap();
        assert!(text.contains("ecosched_group_policy_info{group=\"a\",policy=\"hilo\"} 1"));
        assert!(!text.contains("ecosched_group_policy_info{group=\"a\",policy=\"static\"}"));
        assert!(text.contains("ecosched_group_state{group=\"a\",state=\"paused\"} 1"));
        m.forget_group("a", &["static".into(), "hilo".into()]);
        let text = m.encode().unwrap();
        assert!(!text.contains("group=\"a\""), "{text}");
        assert!(text.contains("ecosched_restore_failures_total 1"));
    }

    #[test]
    fn the_classic_format_names_counters_with_total() {
        let m = Metrics::new();
        // prometheus-client leaves families without series out entirely.
        m.group_tasks
            .get_or_create(&GroupLabels { group: "a".into() })
            .set(1);
        let text = m.encode_classic().unwrap();
        assert!(text.contains("# TYPE ecosched_observation_seconds_total counter\n"));
        assert!(text.contains("# HELP ecosched_observation_seconds_total CPU time"));
        assert!(text.contains("# TYPE ecosched_group_tasks gauge\n"));
        assert!(!text.contains("# EOF"));
    }

    #[test]
    fn zones_are_named_as_kepler_and_node_exporter_name_them() {
        for (domain, zone) in [
            ("package-0", "package"),
            ("package-1-die-0", "package"),
            ("package-0/dram", "dram"),
            ("package-1/core", "core"),
            ("package-0/uncore", "uncore"),
            ("psys", "psys"),
            ("package (estimated)", "package"),
            ("amd_energy Esocket0", "package"),
            ("zenpower SVI2_P_Core + SVI2_P_SoC", "package"),
            ("power_meter power1_average", "platform"),
        ] {
            assert_eq!(zone_of(domain), zone, "{domain}");
        }
    }

    #[test]
    fn zones_keep_their_source() {
        assert_eq!(zone_source("rapl", "package-0/dram"), "rapl");
        assert_eq!(zone_source("hwmon", "amd_energy Esocket0"), "hwmon");
        assert_eq!(zone_source("estimate", "package (estimated)"), "estimate");
    }
}
