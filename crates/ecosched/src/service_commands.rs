//! `ecosched daemon` and `ecosched ctl`: wiring only. The daemon, its
//! control protocol and its exporter are `ecosched-service`'s.

use crate::cli::{CtlArgs, CtlCommand, DaemonArgs};
use crate::outcome::Outcome;
use crate::outcome::UsageError;
use anyhow::Result;
use ecosched_service::ctl::{self, Request};
use std::collections::BTreeMap;

/// `ecosched daemon`: runs until SIGTERM; with `--check-config FILE`,
/// judges FILE as start and reload do and exits.
pub fn daemon(args: &DaemonArgs) -> Result<Outcome> {
    if let Some(file) = &args.check_config {
        let vetted = ecosched_service::vet::load_vetted(file).map_err(|e| located_in(file, e))?;
        return Ok(Outcome::ok(vetted.summary(file)));
    }
    ecosched_service::daemon::run(&args.config).map_err(|e| located_in(&args.config, e))?;
    Ok(Outcome::ok(String::new()))
}

/// An error located in the configuration file `file` is the user's to fix
/// (exit 2, which the unit does not restart on); any other (the machine
/// could not be read) exits 1.
fn located_in(file: &std::path::Path, e: String) -> anyhow::Error {
    if e.starts_with(&file.display().to_string()) {
        anyhow::Error::new(UsageError(e))
    } else {
        anyhow::anyhow!(e)
    }
}

fn params(pairs: &[String]) -> Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(UsageError(format!("--param {p:?}: expected KEY=VALUE")).into()),
        })
        .collect()
}

/// `ecosched ctl …`: prints the daemon's answer as JSON.
pub fn ctl(args: &CtlArgs) -> Result<Outcome> {
    let request = match &args.command {
        CtlCommand::Status => Request::Status,
        CtlCommand::Reload => Request::Reload,
        CtlCommand::Groups => Request::Groups,
        CtlCommand::SetPolicy {
            group,
            policy,
            params: p,
        } => Request::SetPolicy {
            group: group.clone(),
            policy: policy.clone(),
            params: params(p)?,
        },
        CtlCommand::Pause { group } => Request::Pause {
            group: group.clone(),
        },
        CtlCommand::Resume { group } => Request::Resume {
            group: group.clone(),
        },
        CtlCommand::JobStart {
            id,
            cgroup,
            policy,
            params: p,
        } => Request::JobStart {
            id: id.clone(),
            cgroup: cgroup.clone(),
            policy: policy.clone(),
            params: params(p)?,
        },
        CtlCommand::JobEnd { id, .. } => Request::JobEnd { id: id.clone() },
        CtlCommand::History(h) => return crate::history_view::history(&args.socket, h),
    };
    let result = ctl::call(&args.socket, &request)?;
    if let CtlCommand::JobEnd { summary: true, .. } = &args.command {
        let line = result.get("summary").and_then(|s| s.as_str());
        return Ok(Outcome::ok(format!(
            "{}\n",
            line.unwrap_or("ecosched: no totals")
        )));
    }
    let text = match result {
        serde_json::Value::String(s) => format!("{s}\n"),
        other => format!("{}\n", serde_json::to_string_pretty(&other)?),
    };
    Ok(Outcome::ok(text))
}
