//! Validated settings: the raw strings of `cli.rs` turned into checked
//! values (policy names that exist, `--param` pairs routed to the policies
//! that take them, a baseline that is among the compared policies), so the
//! commands never see an unchecked argument.
//!
//! Loading the scenario is left to the commands: it reads files, and its
//! errors carry their own file and line.

use crate::cli::{CompareArgs, SimArgs};
use crate::outcome::usage;
use anyhow::{Context, Result};
use ecosched_policy::{find, Family, Params, Variant};

/// One `--param [policy:]key=value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamArg {
    /// The policy it is for, when scoped.
    pub scope: Option<String>,
    /// Key.
    pub key: String,
    /// Value.
    pub value: String,
}

impl ParamArg {
    /// Parse `key=value` or `policy:key=value`. Only the part before the
    /// first `=` is searched for the scope, so values may contain `:`.
    pub fn parse(arg: &str) -> Result<ParamArg> {
        let Some((lhs, value)) = arg.split_once('=') else {
            return Err(usage(format!(
                "--param {arg:?}: expected key=value or policy:key=value (e.g. --param freq_mhz=1600)"
            )));
        };
        let (scope, key) = match lhs.split_once(':') {
            Some((p, k)) => (Some(p.trim().to_string()), k.trim()),
            None => (None, lhs.trim()),
        };
        if key.is_empty() || scope.as_deref().is_some_and(str::is_empty) {
            return Err(usage(format!(
                "--param {arg:?}: the key{} is empty; expected key=value or policy:key=value",
                if scope.as_deref().is_some_and(str::is_empty) {
                    " or policy"
                } else {
                    ""
                }
            )));
        }
        Ok(ParamArg {
            scope,
            key: key.to_string(),
            value: value.trim().to_string(),
        })
    }
}

/// Checked `ecosched sim` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SimSettings {
    /// Scenario name or file.
    pub scenario: String,
    /// Policy name (known to the catalogue).
    pub policy: String,
    /// Its parameters.
    pub params: Params,
    /// Seed override.
    pub seed: Option<u64>,
    /// Where to stream the trace, if anywhere.
    pub trace: Option<std::path::PathBuf>,
    /// What the policy is shown.
    pub observe: ecosched_sim::Observe,
    /// JSON output.
    pub json: bool,
}

/// Checked `ecosched compare` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareSettings {
    /// Scenario name or file.
    pub scenario: String,
    /// Policies in the order given, each with its parameters.
    pub policies: Vec<(String, Params)>,
    /// The baseline (one of `policies`).
    pub baseline: String,
    /// Seed override.
    pub seed: Option<u64>,
    /// What the policies are shown.
    pub observe: ecosched_sim::Observe,
    /// JSON output.
    pub json: bool,
    /// Repeat over this many seeds and report means and deviations.
    pub seeds: Option<u32>,
}

/// The catalogue entry for `name`, or the library's "unknown policy" error
/// listing the valid ones.
fn policy_info(name: &str) -> Result<(&'static Family, &'static Variant)> {
    Ok(find(name)?)
}

/// Check the parameters once so that a missing, unknown or malformed one is
/// reported before any simulation starts.
fn check_builds(name: &str, params: &Params) -> Result<()> {
    ecosched_policy::check(name, params).with_context(|| format!("policy {name}"))
}

impl SimSettings {
    /// Check `ecosched sim`'s arguments.
    pub fn from_args(args: &SimArgs) -> Result<SimSettings> {
        let (policy, params) = one_policy(&args.policy, &args.params)?;
        Ok(SimSettings {
            scenario: args.scenario.clone(),
            policy,
            params,
            seed: args.seed,
            trace: args.trace.clone(),
            observe: args.observe,
            json: args.json,
        })
    }
}

impl CompareSettings {
    /// Check `ecosched compare`'s arguments.
    pub fn from_args(args: &CompareArgs) -> Result<CompareSettings> {
        let mut names: Vec<String> = Vec::new();
        for raw in &args.policies {
            let name = raw.trim();
            if name.is_empty() {
                return Err(usage(format!(
                    "--policies {:?}: empty policy name",
                    args.policies.join(",")
                )));
            }
            policy_info(name)?;
            if names.iter().any(|n| n == name) {
                return Err(usage(format!("--policies: {name:?} is listed twice")));
            }
            names.push(name.to_string());
        }
        if names.is_empty() {
            return Err(usage("--policies: give at least one policy"));
        }
        let baseline = match &args.baseline {
            None => names[0].clone(),
            Some(b) => {
                let b = b.trim();
                if !names.iter().any(|n| n == b) {
                    return Err(usage(format!(
                        "--baseline {b:?} must be one of the compared policies ({})",
                        names.join(", ")
                    )));
                }
                b.to_string()
            }
        };
        let parsed = args
            .params
            .iter()
            .map(|raw| ParamArg::parse(raw))
            .collect::<Result<Vec<_>>>()?;
        let mut policies: Vec<(String, Params)> = names
            .iter()
            .map(|n| (n.clone(), Params::default()))
            .collect();
        // Unscoped first, then scoped, so `policy:key=v` overrides `key=v`.
        for p in parsed.iter().filter(|p| p.scope.is_none()) {
            let mut taken = false;
            for (name, params) in &mut policies {
                let (family, variant) = policy_info(name)?;
                if variant.takes(family, &p.key) {
                    *params = std::mem::take(params).with(&p.key, &p.value);
                    taken = true;
                }
            }
            if !taken {
                return Err(usage(format!(
                    "--param {}={}: none of the compared policies takes {:?} ({})",
                    p.key,
                    p.value,
                    p.key,
                    describe_params(&names)
                )));
            }
        }
        for p in parsed.iter().filter(|p| p.scope.is_some()) {
            let scope = p.scope.as_deref().unwrap_or_default();
            let Some((_, params)) = policies.iter_mut().find(|(n, _)| n == scope) else {
                return Err(usage(format!(
                    "--param {scope}:{}={}: {scope:?} is not among the compared policies ({})",
                    p.key,
                    p.value,
                    names.join(", ")
                )));
            };
            *params = std::mem::take(params).with(&p.key, &p.value);
        }
        for (name, params) in &policies {
            check_builds(name, params)?;
        }
        Ok(CompareSettings {
            scenario: args.scenario.clone(),
            policies,
            baseline,
            seed: args.seed,
            observe: args.observe,
            json: args.json,
            seeds: args.seeds,
        })
    }
}

/// A policy name and its `--param`s, checked: the policy exists, every
/// parameter is its own and the policy builds with them.
pub fn one_policy(name: &str, raw_params: &[String]) -> Result<(String, Params)> {
    let policy = name.trim().to_string();
    policy_info(&policy)?;
    let mut params = Params::default();
    for raw in raw_params {
        let p = ParamArg::parse(raw)?;
        if let Some(scope) = &p.scope {
            if *scope != policy {
                return Err(usage(format!(
                    "--param {raw:?} is for policy {scope:?}, but the policy run is {policy:?}"
                )));
            }
        }
        params = params.with(&p.key, p.value);
    }
    check_builds(&policy, &params)?;
    Ok((policy, params))
}

/// `ecosched run`'s checked settings.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Policy.
    pub policy: String,
    /// Its parameters.
    pub params: Params,
    /// Control interval override.
    pub interval: Option<std::time::Duration>,
    /// Platform options.
    pub options: ecosched_linux::platform::LinuxOptions,
    /// The command.
    pub command: Vec<String>,
    /// Where to stream the trace, if anywhere.
    pub trace: Option<std::path::PathBuf>,
    /// JSON output.
    pub json: bool,
    /// The `[events]` table of `--config`, checked.
    pub events: ecosched_linux::signals::EventOverrides,
}

/// A run configuration file: only an `[events]` table so far.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RunConfigFile {
    #[serde(default)]
    events: std::collections::BTreeMap<String, String>,
}

/// The `[events]` table of the run configuration at `path`.
fn run_events(path: &std::path::Path) -> Result<ecosched_linux::signals::EventOverrides> {
    let text =
        ecosched_model::user_file::read_text(path, ecosched_model::user_file::TEXT_MAX_BYTES)
            .map_err(|e| {
                usage(format!(
                    "{}: cannot read it: {}",
                    path.display(),
                    e.reason()
                ))
            })?;
    let file: RunConfigFile = toml::from_str(&text)
        .map_err(|e| usage(format!("{}: {}", path.display(), e.to_string().trim())))?;
    ecosched_linux::signals::EventOverrides::from_table(path, &file.events)
        .map_err(|e| usage(e.to_string()))
}

impl RunSettings {
    /// Check `ecosched run`'s arguments.
    pub fn from_args(args: &crate::cli::RunArgs) -> Result<RunSettings> {
        let (policy, params) = one_policy(&args.policy, &args.params)?;
        let interval = match args.interval_ms {
            Some(0) => return Err(usage("--interval-ms must be at least 1")),
            Some(ms) => Some(std::time::Duration::from_millis(ms)),
            None => None,
        };
        if args.parallelism == Some(0) {
            return Err(usage("--parallelism must be at least 1"));
        }
        if !args.cgroup_name.starts_with("ecosched") || args.cgroup_name.contains('/') {
            return Err(usage(format!(
                "--cgroup-name {:?} must be a single directory name starting with `ecosched` (how `ecosched restore` knows a run's cgroups from others)",
                args.cgroup_name
            )));
        }
        check_state_dir(&args.state_dir)?;
        let events = match &args.config {
            Some(path) => run_events(path)?,
            None => ecosched_linux::signals::EventOverrides::default(),
        };
        Ok(RunSettings {
            policy,
            params,
            interval,
            options: ecosched_linux::platform::LinuxOptions {
                state_dir: args.state_dir.clone(),
                cgroup_name: args.cgroup_name.clone(),
                parallelism: args.parallelism,
                stay_in_cpusets: false,
            },
            command: args.command.clone(),
            trace: args.trace.clone(),
            json: args.json,
            events,
        })
    }
}

/// "fixed takes freq_mhz; performance takes none" for error messages.
fn describe_params(names: &[String]) -> String {
    names
        .iter()
        .map(|n| {
            let keys: Vec<&str> = find(n)
                .map(|(family, variant)| {
                    family
                        .params
                        .iter()
                        .flat_map(|g| g.iter())
                        .map(|s| s.key)
                        .filter(|k| variant.takes(family, k))
                        .collect()
                })
                .unwrap_or_default();
            if keys.is_empty() {
                format!("{n} takes none")
            } else {
                format!("{n} takes {}", keys.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `key=value, …` for a policy's parameters, for human output.
pub fn params_label(params: &Params) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `--state-dir` must be a directory or be creatable as one: a file there
/// (or on the way there) is named, rather than the OS's "File exists".
fn check_state_dir(dir: &std::path::Path) -> Result<()> {
    for ancestor in dir.ancestors() {
        match std::fs::metadata(ancestor) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) if ancestor == dir => {
                return Err(usage(format!(
                    "--state-dir {}: not a directory (it is a file); give a directory for the restore journal",
                    dir.display()
                )))
            }
            Ok(_) => {
                return Err(usage(format!(
                    "--state-dir {}: {} is not a directory, so it cannot be created",
                    dir.display(),
                    ancestor.display()
                )))
            }
            Err(_) => continue,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compare(
        policies: &[&str],
        baseline: Option<&str>,
        params: &[&str],
    ) -> Result<CompareSettings> {
        CompareSettings::from_args(&CompareArgs {
            scenario: "s".into(),
            policies: policies.iter().map(|s| s.to_string()).collect(),
            baseline: baseline.map(str::to_string),
            params: params.iter().map(|s| s.to_string()).collect(),
            seed: None,
            observe: ecosched_sim::Observe::Linux,
            json: false,
            seeds: None,
            report: None,
        })
    }

    fn value(params: &Params, key: &str) -> Option<String> {
        params.value(key).map(String::from)
    }

    #[test]
    fn param_arg_forms() {
        let p = ParamArg::parse("freq_mhz=1600").unwrap();
        assert_eq!(
            (p.scope, p.key.as_str(), p.value.as_str()),
            (None, "freq_mhz", "1600")
        );
        let p = ParamArg::parse("static:cpus=0-1").unwrap();
        assert_eq!(p.scope.as_deref(), Some("static"));
        assert_eq!(p.key, "cpus");
        let p = ParamArg::parse("k=a:b=c").unwrap();
        assert_eq!(
            (p.scope, p.key.as_str(), p.value.as_str()),
            (None, "k", "a:b=c")
        );
        let err = ParamArg::parse("freq_mhz").unwrap_err().to_string();
        assert!(err.contains("expected key=value"), "{err}");
        assert!(ParamArg::parse("=3").is_err());
        assert!(ParamArg::parse(":k=3").is_err());
    }

    #[test]
    fn unscoped_param_goes_only_to_policies_that_take_it() {
        let s = compare(&["performance", "fixed"], None, &["freq_mhz=1600"]).unwrap();
        assert_eq!(s.baseline, "performance");
        assert_eq!(value(&s.policies[0].1, "freq_mhz"), None);
        assert_eq!(value(&s.policies[1].1, "freq_mhz").as_deref(), Some("1600"));
    }

    #[test]
    fn scoped_param_overrides_unscoped() {
        let s = compare(
            &["fixed", "static"],
            Some("static"),
            &["static:freq_mhz=2400", "freq_mhz=1600", "cpus=0-1"],
        )
        .unwrap();
        assert_eq!(value(&s.policies[0].1, "freq_mhz").as_deref(), Some("1600"));
        assert_eq!(value(&s.policies[1].1, "freq_mhz").as_deref(), Some("2400"));
        assert_eq!(value(&s.policies[1].1, "cpus").as_deref(), Some("0-1"));
        assert_eq!(s.baseline, "static");
    }

    #[test]
    fn compare_rejects_bad_input() {
        let err = |p: &[&str], b: Option<&str>, params: &[&str]| {
            format!("{:#}", compare(p, b, params).unwrap_err())
        };
        assert!(err(&["performance", "nope"], None, &[]).contains("ondemand"));
        assert!(err(&["performance", "ondemand"], None, &["freq_mhz=1600"])
            .contains("none of the compared"));
        assert!(err(&["performance", "ondemand"], Some("fixed"), &[]).contains("must be one of"));
        assert!(err(&["performance", "performance"], None, &[]).contains("twice"));
        assert!(err(&["performance", ""], None, &[]).contains("empty"));
        assert!(err(&["performance", "fixed"], None, &["static:cpus=0"]).contains("not among"));
        assert!(
            err(&["performance", "fixed"], None, &[]).contains("freq_mhz"),
            "missing param is caught early"
        );
    }

    #[test]
    fn sim_checks_policy_and_scope() {
        let sim = |policy: &str, params: &[&str]| {
            SimSettings::from_args(&SimArgs {
                scenario: "s".into(),
                machine: None,
                policy: policy.into(),
                params: params.iter().map(|s| s.to_string()).collect(),
                seed: Some(3),
                observe: ecosched_sim::Observe::Linux,
                trace: None,
                trace_format: None,
                json: true,
                report: None,
                timeseries: None,
            })
        };
        let s = sim("fixed", &["fixed:freq_mhz=1600"]).unwrap();
        assert_eq!(value(&s.params, "freq_mhz").as_deref(), Some("1600"));
        assert_eq!(s.seed, Some(3));
        assert!(
            format!("{:#}", sim("fixed", &["static:cpus=0"]).unwrap_err())
                .contains("is for policy")
        );
        assert!(format!("{:#}", sim("nope", &[]).unwrap_err()).contains("performance"));
        assert!(format!("{:#}", sim("performance", &["x=1"]).unwrap_err()).contains("no parameter"));
    }
}
