//! Judging a change before the daemon accepts it: a configuration at load,
//! reload or `--check-config` ([`load_vetted`], one path for the three),
//! `ctl set-policy` and `job-start` are each dry-run against
//! this machine — the policy's verdict ([`Requirements::verdict`], the one
//! `ecosched run` and `ecosched doctor` give) and its first plan from this
//! machine's topology (CPUs that exist and are usable here, frequencies
//! it has) — so that a change that cannot work is refused with its reason
//! while what runs keeps running, instead of being accepted and failing in
//! its worker.
//!
//! [`Requirements::verdict`]: ecosched_model::Requirements::verdict

use crate::config::{Config, PolicyChoice};
use ecosched_linux::signals::Resolution;
use ecosched_model::platform::check_plan;
use ecosched_model::{Capabilities, CpuSet, Topology};
use std::path::Path;

/// What a change is judged against: what this machine offers a policy.
#[derive(Debug, Clone)]
pub struct Machine {
    /// Counters, energy, affinity and frequency control, as `doctor`
    /// finds them.
    pub capabilities: Capabilities,
    /// The machine's topology.
    pub topology: Topology,
    /// The CPUs the daemon may use (its own cpuset).
    pub allowed: CpuSet,
    /// Whether cpufreq is there to set frequencies with.
    pub cpufreq: bool,
}

impl Machine {
    /// This machine, its counters opened the way `signals` found.
    pub fn live(signals: &Resolution) -> Result<Self, String> {
        let root = ecosched_linux::FsRoot::live();
        let machine = ecosched_linux::topology::discover(&root)
            .map_err(|e| format!("cannot read this machine's topology: {e}"))?;
        let offer = ecosched_linux::offer::offered_live(signals)
            .map_err(|e| format!("cannot tell what this machine offers: {e}"))?;
        Ok(Machine {
            capabilities: offer.capabilities,
            cpufreq: !machine.cpufreq.is_empty(),
            allowed: machine.allowed,
            topology: machine.topology,
        })
    }

    /// Whether `choice` can run here: `Err` says why not, in the words
    /// `ecosched run` uses.
    pub fn judge(&self, choice: &PolicyChoice) -> Result<(), String> {
        self.refusal(choice).map_err(|(_, why)| why)
    }

    /// [`Machine::judge`], naming the configuration key at fault:
    /// `policy` when the policy cannot run here, `params` when its
    /// parameters cannot work here.
    fn refusal(&self, choice: &PolicyChoice) -> Result<(), (&'static str, String)> {
        let params = |why: String| ("params", why);
        let mut policy = choice.build().map_err(|e| params(e.to_string()))?;
        let verdict = policy.requirements().verdict(&self.capabilities);
        if let Some(refusal) = verdict.refusal(&choice.name) {
            return Err(("policy", refusal));
        }
        let first = policy
            .init(&self.topology)
            .map_err(|e| params(format!("policy {}: {e}", choice.name)))?;
        check_plan(&first, &self.topology, &self.allowed).map_err(|e| {
            params(format!(
                "policy {}: its first plan cannot be carried out on this machine: {e}",
                choice.name
            ))
        })?;
        if !first.frequency.is_empty() && !self.cpufreq {
            return Err(params(format!(
                "policy {}: its first plan sets frequencies, but this machine has no cpufreq",
                choice.name
            )));
        }
        Ok(())
    }

    /// Every group of `config` (read from `path`) judged: the first that
    /// cannot run here refuses the whole configuration, naming its file,
    /// group and key, before any group starts or changes.
    pub fn judge_config(&self, config: &Config, path: &Path) -> Result<(), String> {
        for g in &config.groups {
            self.refusal(&g.policy).map_err(|(key, why)| {
                format!("{}: group {:?}: key `{key}`: {why}", path.display(), g.name)
            })?;
        }
        Ok(())
    }
}

/// Every group of `config` (read from `path`) judged on this machine, its
/// counters opened the way `signals` found ([`Machine::judge_config`]);
/// a configuration without groups needs no look at the machine.
pub fn judge_config(config: &Config, path: &Path, signals: &Resolution) -> Result<(), String> {
    if config.groups.is_empty() {
        return Ok(());
    }
    Machine::live(signals)?.judge_config(config, path)
}

/// A configuration read from its file and judged on this machine, with
/// where each counter comes from: what start, reload and `ecosched daemon
/// --check-config` accept or refuse a file by, so that a file the check
/// passes is one the daemon takes.
#[derive(Debug)]
pub struct Vetted {
    /// The configuration.
    pub config: Config,
    /// Where each counter kind comes from with its `[events]`.
    pub signals: Resolution,
}

/// Read the configuration at `path` and judge it: its syntax and keys
/// ([`crate::config::load`], located by file, line and column), its
/// `[events]` against this machine's PMU, and every group's policy
/// ([`judge_config`], located by file, group and key).
pub fn load_vetted(path: &Path) -> Result<Vetted, String> {
    let config = crate::config::load(path).map_err(|e| e.to_string())?;
    let signals = resolve_signals(&config)?;
    judge_config(&config, path, &signals)?;
    Ok(Vetted { config, signals })
}

/// Where each counter kind comes from on this machine with `config`'s
/// `[events]`: an entry libpfm4 cannot encode refuses the configuration,
/// naming its file and key.
fn resolve_signals(config: &Config) -> Result<Resolution, String> {
    ecosched_linux::signals::resolve_live(&ecosched_linux::FsRoot::live(), &config.events)
        .map_err(|e| e.to_string())
}

impl Vetted {
    /// What the daemon would run with this configuration, in a few lines:
    /// `ecosched daemon --check-config` prints it.
    pub fn summary(&self, path: &Path) -> String {
        let c = &self.config;
        let metrics = c
            .metrics
            .map_or_else(|| "off".to_string(), |a| format!("http://{a}/metrics"));
        let mut out = format!(
            "{}: ok: {} group(s); state_dir {}, socket {}, metrics {metrics}, scan every {} ms, power_model {}\n",
            path.display(),
            c.groups.len(),
            c.state_dir.display(),
            c.socket.display(),
            c.scan_interval.as_millis(),
            c.power_model,
        );
        for g in &c.groups {
            out.push_str(&format!("  group {}: policy {}\n", g.name, g.policy.name));
        }
        out.push_str(&format!(
            "  counter sources: {}\n",
            self.signals.describe().join("; ")
        ));
        out
    }
}

/// A reload that would stop every group is refused: an empty or
/// truncated file (a half-written edit, a deploy that emptied it) must not
/// end every group's management. A daemon with no groups (one that only
/// manages Slurm jobs) may reload another groupless file.
pub fn check_reload(running: &Config, next: &Config, path: &Path) -> Result<(), String> {
    if next.groups.is_empty() && !running.groups.is_empty() {
        return Err(format!(
            "{}: no group is configured; reloading it would stop every running group (to stop them, pause them with `ecosched ctl pause` or restart the daemon with this file)",
            path.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ecosched_model::CounterKind;
    use ecosched_policy::Params;

    /// A 2-CPU machine like CI's VM: affinity, no counters, no cpufreq.
    fn vm() -> Machine {
        let topology = ecosched_testkit::machines::flat(2, &[2_000_000]);
        Machine {
            capabilities: Capabilities {
                counters: Default::default(),
                power: None,
                affinity: true,
                frequency: false,
                gang: true,
            },
            allowed: topology.online_cpus(),
            topology,
            cpufreq: false,
        }
    }

    fn choice(name: &str, params: &[(&str, &str)]) -> PolicyChoice {
        let mut p = Params::default();
        for (k, v) in params {
            p = p.with(k, v);
        }
        PolicyChoice {
            name: name.into(),
            params: p,
            interval: None,
        }
    }

    #[test]
    fn cpus_that_do_not_exist_and_missing_counters_are_refused() {
        let m = vm();
        m.judge(&choice("static", &[("cpus", "1")])).unwrap();
        let e = m.judge(&choice("static", &[("cpus", "7")])).unwrap_err();
        assert!(e.contains("cpus") && e.contains('7'), "{e}");
        let e = m.judge(&choice("static", &[("cpus", "99")])).unwrap_err();
        assert!(e.contains("99"), "{e}");
        let e = m.judge(&choice("wca", &[])).unwrap_err();
        assert!(e.contains("wca cannot run on this machine"), "{e}");
        let e = m.judge(&choice("patel1", &[])).unwrap_err();
        assert!(e.contains("patel1"), "{e}");
        // With the counters it needs, wca is accepted.
        let mut with = vm();
        with.capabilities.counters = [
            CounterKind::Instructions,
            CounterKind::Cycles,
            CounterKind::LlcReferences,
            CounterKind::LlcMisses,
            CounterKind::OnCpuTime,
        ]
        .into_iter()
        .collect();
        with.judge(&choice("wca", &[])).unwrap();
    }

    #[test]
    fn a_configuration_is_refused_naming_the_key_at_fault() {
        let path = Path::new("/etc/ecosched/ecosched.toml");
        let group = |policy: &str| {
            format!("[[group]]\nname = \"a\"\nmatch = {{ command = \"x\" }}\n{policy}\n")
        };
        let c = crate::config::parse(path, &group("policy = \"wca\"")).unwrap();
        let e = vm().judge_config(&c, path).unwrap_err();
        assert!(
            e.starts_with(
                "/etc/ecosched/ecosched.toml: group \"a\": key `policy`: policy wca cannot run"
            ),
            "{e}"
        );
        let text = group("policy = \"static\"\nparams = { cpus = \"99\" }");
        let c = crate::config::parse(path, &text).unwrap();
        let e = vm().judge_config(&c, path).unwrap_err();
        assert!(e.contains("key `params`") && e.contains("99"), "{e}");
    }

    #[test]
    fn a_reload_without_groups_is_refused_while_groups_run() {
        let path = Path::new("/etc/ecosched/ecosched.toml");
        let running = crate::config::parse(
            path,
            "[[group]]\nname = \"a\"\nmatch = { command = \"x\" }\npolicy = \"static\"\nparams = { cpus = \"0\" }\n",
        )
        .unwrap();
        let empty = crate::config::parse(path, "").unwrap();
        let e = check_reload(&running, &empty, path).unwrap_err();
        assert!(e.contains("ecosched.toml: no group"), "{e}");
        check_reload(&empty, &empty, path).unwrap();
        check_reload(&running, &running, path).unwrap();
    }
}
