//! The daemon's configuration file (`/etc/ecosched/ecosched.toml`): typed
//! TOML, unknown keys refused, every error located by file, line and column
//! so that a bad edit followed by `SIGHUP` says exactly what to fix while the
//! old configuration keeps running.
//!
//! ```toml
//! [daemon]
//! state_dir = "/run/ecosched"            # journals (restored at start)
//! socket = "/run/ecosched/ctl.sock"      # control socket, mode 0600
//! metrics = "127.0.0.1:9864"             # OpenMetrics; "" disables it
//! scan_interval_ms = 1000                # how often groups are looked for
//! power_model = "auto"                   # estimate's figures, as `run --power-model`
//!
//! [[group]]
//! name = "slurm"
//! cgroup = "/sys/fs/cgroup/cpuset/slurm/job_*"   # one group per job dir
//! policy = "static"
//! params = { cpus = "0-3" }
//!
//! [[group]]
//! name = "builds"
//! match = { user = "builder", command = "make" }
//! policy = "hilo"
//! interval_ms = 500
//! ```
//!
//! A policy and its parameters are checked by building the policy once at
//! load, so a bad parameter is refused at load time, not when a group
//! appears.

use ecosched_policy::Params;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

/// A configuration error, located in its file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{}: {message}", file.display(), location(*line, *column))]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line, when the error has a place in the file.
    pub line: Option<usize>,
    /// 1-based column.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

/// The whole configuration, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where journals live.
    pub state_dir: PathBuf,
    /// The control socket.
    pub socket: PathBuf,
    /// The exporter's address, if it is on.
    pub metrics: Option<SocketAddr>,
    /// How often cgroups and match rules are looked at.
    pub scan_interval: Duration,
    /// The estimate's figures where power is not measured, as `run
    /// --power-model` takes them (checked at load).
    pub power_model: String,
    /// The groups, in file order.
    pub groups: Vec<GroupSpec>,
    /// The `[events]` table: the event to count for a counter kind on
    /// this machine, in place of the built-in PMU tables' (see
    /// `ecosched_linux::signals`).
    pub events: ecosched_linux::signals::EventOverrides,
}

/// One configured group: what it manages and how.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSpec {
    /// Its name (also its label in the metrics).
    pub name: String,
    /// Which processes.
    pub source: Source,
    /// How.
    pub policy: PolicyChoice,
}

/// A policy and its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyChoice {
    /// The policy's name (see `ecosched policies`).
    pub name: String,
    /// Its parameters.
    pub params: Params,
    /// Control interval, when not the policy's own.
    pub interval: Option<Duration>,
}

impl PolicyChoice {
    /// Build the policy (checking its parameters).
    pub fn build(&self) -> Result<Box<dyn ecosched_policy::Policy>, ecosched_policy::PolicyError> {
        let policy = ecosched_policy::build(&self.name, &self.params)?;
        Ok(match self.interval {
            Some(interval) => Box::new(ecosched_policy::Retimed::new(policy, interval)),
            None => policy,
        })
    }
}

/// Which processes a group manages.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// The processes of one cgroup directory (absolute path under a cgroup
    /// mount; any hierarchy).
    Cgroup(PathBuf),
    /// One group per directory matching `parent/prefix*` (Slurm's
    /// `job_*`): each is named `<group>/<dir>` and comes and goes with it.
    CgroupGlob {
        /// The directory holding the matching ones.
        parent: PathBuf,
        /// What their names start with.
        prefix: String,
    },
    /// Processes whose owner and/or command name match, with their
    /// descendants.
    Match {
        /// Owner (effective uid), if required.
        uid: Option<u32>,
        /// Command name (`comm`, at most 15 bytes), if required.
        command: Option<String>,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    daemon: RawDaemon,
    #[serde(default)]
    group: Vec<RawGroup>,
    #[serde(default)]
    events: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDaemon {
    state_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    metrics: Option<Spanned<String>>,
    scan_interval_ms: Option<Spanned<u64>>,
    power_model: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    name: Spanned<String>,
    cgroup: Option<Spanned<String>>,
    #[serde(rename = "match")]
    matching: Option<Spanned<RawMatch>>,
    policy: Spanned<String>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
    interval_ms: Option<Spanned<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatch {
    user: Option<String>,
    command: Option<String>,
}

/// The default control socket.
pub const DEFAULT_SOCKET: &str = "/run/ecosched/ctl.sock";
/// The default exporter address: loopback only.
pub const DEFAULT_METRICS: &str = "127.0.0.1:9864";

/// Whether `name` may name a group: it becomes a label, a file name part
/// and a cgroup name part.
pub fn valid_group_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Read and check the configuration file at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text =
        ecosched_model::user_file::read_text(path, ecosched_model::user_file::TEXT_MAX_BYTES)
            .map_err(|e| ConfigError {
                file: path.to_path_buf(),
                line: None,
                column: None,
                message: format!("cannot read it: {}", e.reason()),
            })?;
    parse(path, &text)
}

/// Check the configuration `text` (of file `file`, for the messages).
pub fn parse(file: &Path, text: &str) -> Result<Config, ConfigError> {
    let at = |span: Option<std::ops::Range<usize>>, message: String| {
        let (line, column) = match span {
            Some(s) => {
                let before = &text[..s.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                (Some(line), Some(column))
            }
            None => (None, None),
        };
        ConfigError {
            file: file.to_path_buf(),
            line,
            column,
            message,
        }
    };
    let raw: RawConfig =
        toml::from_str(text).map_err(|e| at(e.span(), e.message().trim().to_string()))?;
    let metrics = match &raw.daemon.metrics {
        None => Some(DEFAULT_METRICS.to_string()),
        Some(m) if m.get_ref().is_empty() => None,
        Some(m) => Some(m.get_ref().clone()),
    };
    let metrics = match metrics {
        None => None,
        Some(m) => Some(m.parse::<SocketAddr>().map_err(|e| {
            at(
                raw.daemon.metrics.as_ref().map(Spanned::span),
                format!("key `metrics`: {m:?} is not an address:port ({e})"),
            )
        })?),
    };
    let scan_interval = match &raw.daemon.scan_interval_ms {
        None => Duration::from_secs(1),
        Some(ms) if *ms.get_ref() == 0 => {
            return Err(at(
                Some(ms.span()),
                "key `scan_interval_ms`: must be at least 1".into(),
            ))
        }
        Some(ms) => Duration::from_millis(*ms.get_ref()),
    };
    let mut names = BTreeSet::new();
    let mut groups = Vec::new();
    for g in raw.group {
        let name = g.name.get_ref().clone();
        if !valid_group_name(&name) {
            return Err(at(
                Some(g.name.span()),
                format!("group name {name:?}: use 1 to 64 letters, digits, `-`, `_` or `.`"),
            ));
        }
        if !names.insert(name.clone()) {
            return Err(at(
                Some(g.name.span()),
                format!("group {name:?} is defined twice"),
            ));
        }
        let source = match (&g.cgroup, &g.matching) {
            (Some(c), None) => cgroup_source(c.get_ref())
                .map_err(|m| at(Some(c.span()), format!("group {name:?}: key `cgroup`: {m}")))?,
            (None, Some(m)) => match_source(m.get_ref())
                .map_err(|e| at(Some(m.span()), format!("group {name:?}: key `match`: {e}")))?,
            _ => {
                return Err(at(
                    Some(g.name.span()),
                    format!("group {name:?}: give exactly one of `cgroup` or `match`"),
                ))
            }
        };
        let mut params = Params::default();
        for (k, v) in &g.params {
            let value = match v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => {
                    return Err(at(
                        Some(g.policy.span()),
                        format!(
                            "group {name:?}: parameter `{k}`: expected a string, number or boolean, found {}",
                            other.type_str()
                        ),
                    ))
                }
            };
            params = params.with(k, value);
        }
        let interval = match &g.interval_ms {
            None => None,
            Some(ms) if *ms.get_ref() == 0 => {
                return Err(at(
                    Some(ms.span()),
                    format!("group {name:?}: key `interval_ms`: must be at least 1"),
                ))
            }
            Some(ms) => Some(Duration::from_millis(*ms.get_ref())),
        };
        let policy = PolicyChoice {
            name: g.policy.get_ref().clone(),
            params,
            interval,
        };
        policy
            .build()
            .map_err(|e| at(Some(g.policy.span()), format!("group {name:?}: {e}")))?;
        groups.push(GroupSpec {
            name,
            source,
            policy,
        });
    }
    let power_model = match &raw.daemon.power_model {
        None => crate::power_model::AUTO.to_string(),
        Some(v) => {
            crate::power_model::load(v.get_ref())
                .map_err(|e| at(Some(v.span()), format!("key `daemon.power_model`: {e}")))?;
            v.get_ref().clone()
        }
    };
    let events = ecosched_linux::signals::EventOverrides::from_table(file, &raw.events)
        .map_err(|e| at(None, format!("key `events.{}`: {}", e.key, e.message)))?;
    Ok(Config {
        events,
        state_dir: raw
            .daemon
            .state_dir
            .unwrap_or_else(|| PathBuf::from(ecosched_linux::journal::DEFAULT_STATE_DIR)),
        socket: raw
            .daemon
            .socket
            .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET)),
        metrics,
        scan_interval,
        power_model,
        groups,
    })
}

/// A `cgroup` value: an absolute directory, optionally ending in `prefix*`.
pub fn cgroup_source(value: &str) -> Result<Source, String> {
    let path = Path::new(value);
    if !path.is_absolute() {
        return Err(format!(
            "{value:?} is not an absolute path (e.g. /sys/fs/cgroup/cpuset/batch)"
        ));
    }
    if path
        .components()
        .any(|c| c == std::path::Component::ParentDir)
    {
        return Err(format!("{value:?} may not contain `..`"));
    }
    let last = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    match last.find('*') {
        None if value.contains('*') => Err(format!(
            "{value:?}: `*` is allowed only at the end of the last component (job_*)"
        )),
        None => Ok(Source::Cgroup(path.to_path_buf())),
        Some(i) if i + 1 == last.len() => Ok(Source::CgroupGlob {
            parent: path.parent().unwrap_or(Path::new("/")).to_path_buf(),
            prefix: last[..i].to_string(),
        }),
        Some(_) => Err(format!(
            "{value:?}: `*` is allowed only at the end of the last component (job_*)"
        )),
    }
}

fn match_source(m: &RawMatch) -> Result<Source, String> {
    if m.user.is_none() && m.command.is_none() {
        return Err("give `user`, `command` or both".into());
    }
    let uid = match &m.user {
        None => None,
        Some(u) => Some(uid_of(u)?),
    };
    if let Some(c) = &m.command {
        // The kernel keeps 15 bytes of a command name (TASK_COMM_LEN - 1).
        if c.is_empty() || c.len() > 15 {
            return Err(format!(
                "command {c:?}: a command name has 1 to 15 bytes, as /proc/PID/comm shows it"
            ));
        }
    }
    Ok(Source::Match {
        uid,
        command: m.command.clone(),
    })
}

/// A user name or numeric uid.
fn uid_of(user: &str) -> Result<u32, String> {
    if let Ok(uid) = user.parse::<u32>() {
        return Ok(uid);
    }
    match nix::unistd::User::from_name(user) {
        Ok(Some(u)) => Ok(u.uid.as_raw()),
        Ok(None) => Err(format!("user {user:?} does not exist on this machine")),
        Err(e) => Err(format!("cannot look up user {user:?}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_events_table_is_checked_and_a_wrong_key_is_located() {
        let c = check("[events]\nlines_in = \"L2_LINES_IN:ALL\"\n").unwrap();
        assert_eq!(
            c.events.events[&ecosched_model::CounterKind::LinesIn],
            "L2_LINES_IN:ALL"
        );
        let e = check("[events]\nlines_inn = \"L2_LINES_IN:ALL\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.toml: key `events.lines_inn`: not a counter kind"),
            "{e}"
        );
    }

    fn check(text: &str) -> Result<Config, ConfigError> {
        parse(Path::new("t.toml"), text)
    }

    #[test]
    fn the_power_model_is_checked_at_load() {
        assert_eq!(check("").unwrap().power_model, "auto");
        let c = check("[daemon]\npower_model = \"q6600\"\n").unwrap();
        assert_eq!(c.power_model, "q6600");
        let e = check("[daemon]\npower_model = \"xeon\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.toml:2:15: key `daemon.power_model`: xeon: neither"),
            "{e}"
        );
    }

    #[test]
    fn a_full_config_is_read() {
        let c = check(
            r#"
[daemon]
state_dir = "/tmp/x"
metrics = "127.0.0.1:9999"

[[group]]
name = "jobs"
cgroup = "/sys/fs/cgroup/cpuset/slurm/job_*"
policy = "static"
params = { cpus = "0" }

[[group]]
name = "root-make"
match = { user = "root", command = "make" }
policy = "static"
params = { cpus = "0" }
interval_ms = 250
"#,
        )
        .unwrap();
        assert_eq!(c.metrics, Some("127.0.0.1:9999".parse().unwrap()));
        assert_eq!(c.socket, PathBuf::from(DEFAULT_SOCKET));
        assert_eq!(
            c.groups[0].source,
            Source::CgroupGlob {
                parent: "/sys/fs/cgroup/cpuset/slurm".into(),
                prefix: "job_".into()
            }
        );
        assert_eq!(
            c.groups[1].source,
            Source::Match {
                uid: Some(0),
                command: Some("make".into())
            }
        );
        assert_eq!(
            c.groups[1].policy.interval,
            Some(Duration::from_millis(250))
        );
    }

    #[test]
    fn errors_are_located() {
        let e =
            check("[[group]]\nname = \"a\"\ncgroup = \"/x\"\npolicy = \"nosuch\"\n").unwrap_err();
        assert_eq!((e.line, e.column), (Some(4), Some(10)));
        assert!(
            e.to_string().starts_with("t.toml:4:10: group \"a\": "),
            "{e}"
        );
        assert!(e.to_string().contains("nosuch"), "{e}");

        let e = check("[daemon]\nbogus = 1\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("bogus"), "{e}");

        let e =
            check("[[group]]\nname = \"a\"\ncgroup = \"rel\"\npolicy = \"static\"\n").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("absolute"), "{e}");

        let e = check(
            "[[group]]\nname = \"a\"\nmatch = { user = \"no-such-user-xyz\" }\npolicy = \"static\"\n",
        )
        .unwrap_err();
        assert!(e.message.contains("does not exist"), "{e}");

        let e =
            check("[[group]]\nname = \"a b\"\ncgroup = \"/x\"\npolicy = \"static\"\n").unwrap_err();
        assert_eq!(e.line, Some(2));
    }

    #[test]
    fn a_bad_parameter_is_refused_at_load() {
        let e = check(
            "[[group]]\nname = \"a\"\ncgroup = \"/x\"\npolicy = \"static\"\nparams = { cpus = \"zz\" }\n",
        )
        .unwrap_err();
        assert_eq!(e.line, Some(4));
    }

    #[test]
    fn groups_need_exactly_one_source_and_unique_names() {
        let e = check("[[group]]\nname = \"a\"\npolicy = \"static\"\n").unwrap_err();
        assert!(e.message.contains("exactly one"), "{e}");
        let twice = "[[group]]\nname = \"a\"\ncgroup = \"/x\"\npolicy = \"static\"\nparams = { cpus = \"0\" }\n";
        let e = check(&format!("{twice}{twice}")).unwrap_err();
        assert!(e.message.contains("defined twice"), "{e}");
        assert_eq!(e.line, Some(7));
    }

    #[test]
    fn globs_only_at_the_end() {
        assert!(cgroup_source("/a/*/b").is_err());
        assert!(cgroup_source("/a/j*x").is_err());
        assert_eq!(
            cgroup_source("/a/b").unwrap(),
            Source::Cgroup("/a/b".into())
        );
    }

    /// Every file under `dir` (recursively), skipping build output.
    fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() && e.file_name() != "target" {
                files_under(&p, out);
            } else if p.is_file() {
                out.push(p);
            }
        }
    }

    #[test]
    fn the_shipped_example_loads_and_names_no_process_the_project_runs() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let c = load(&repo.join("deploy/ecosched.toml")).unwrap();
        let commands: Vec<String> = c
            .groups
            .iter()
            .filter_map(|g| match &g.source {
                Source::Match { command, .. } => command.clone(),
                _ => None,
            })
            .collect();
        assert!(!commands.is_empty());
        // A daemon running the example on a developer's or CI machine
        // must not manage what the scripts and tests start.
        let mut files = Vec::new();
        files_under(&repo.join("scripts"), &mut files);
        files_under(&repo.join("tests"), &mut files);
        for dir in std::fs::read_dir(repo.join("crates")).unwrap().flatten() {
            files_under(&dir.path(), &mut files);
        }
        for f in files {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            for c in &commands {
                assert!(
                    !text.contains(c.as_str()),
                    "{} names {c:?}, the example's match rule",
                    f.display()
                );
            }
        }
    }
}
