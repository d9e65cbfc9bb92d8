//! The thin Slurm side: `squeue`, `sinfo` and `scontrol` run as commands
//! (no C plugin, no library binding), their output parsed by pure
//! functions tested on literal text.

use std::process::Command;

/// A Slurm command failed.
#[derive(Debug, thiserror::Error)]
#[error("`{command}`: {what}")]
pub struct SlurmError {
    /// The command line.
    pub command: String,
    /// What happened.
    pub what: String,
}

/// A running job, as `squeue` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningJob {
    /// Its id.
    pub id: String,
    /// Its owner.
    pub user: String,
    /// Its nodes, expanded.
    pub nodes: Vec<String>,
    /// Its name.
    pub name: String,
    /// Its comment (`--comment`).
    pub comment: String,
}

/// A node's advisor-relevant settings, as `sinfo` shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// Its name.
    pub name: String,
    /// Its active features.
    pub features: Vec<String>,
    /// Its weight.
    pub weight: u32,
}

fn run(program: &str, args: &[&str]) -> Result<String, SlurmError> {
    let command = format!("{program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| SlurmError {
            command: command.clone(),
            what: format!("cannot run it: {e}"),
        })?;
    if !out.status.success() {
        return Err(SlurmError {
            command,
            what: format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    String::from_utf8(out.stdout).map_err(|e| SlurmError {
        command,
        what: format!("output is not UTF-8: {e}"),
    })
}

/// The `squeue` format [`parse_squeue`] reads: the name and comment last,
/// the comment taking any `|` it contains.
pub const SQUEUE_FORMAT: &str = "%i|%u|%N|%j|%k";

/// Every running job.
pub fn running_jobs() -> Result<Vec<RunningJob>, SlurmError> {
    let text = run("squeue", &["-h", "-t", "R", "-o", SQUEUE_FORMAT])?;
    let mut jobs = parse_squeue(&text).map_err(|what| SlurmError {
        command: format!("squeue -o {SQUEUE_FORMAT}"),
        what,
    })?;
    for j in &mut jobs {
        if j.nodes.iter().any(|n| n.contains('[')) {
            let list = j.nodes.join(",");
            j.nodes = run("scontrol", &["show", "hostnames", &list])?
                .lines()
                .map(str::to_string)
                .collect();
        }
    }
    Ok(jobs)
}

/// Parse `squeue -h -o "%i|%u|%N|%j|%k"`. Node lists stay compressed
/// (`n[1-2]`) where Slurm compressed them; a comment of `(null)` is empty.
pub fn parse_squeue(text: &str) -> Result<Vec<RunningJob>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, line)| {
            let f: Vec<&str> = line.splitn(5, '|').collect();
            let [id, user, nodes, name, comment] = f[..] else {
                return Err(format!(
                    "line {}: {line:?}: expected 5 fields id|user|nodes|name|comment",
                    i + 1
                ));
            };
            Ok(RunningJob {
                id: id.trim().to_string(),
                user: user.trim().to_string(),
                nodes: split_hostlist(nodes.trim()),
                name: name.to_string(),
                comment: if comment == "(null)" {
                    String::new()
                } else {
                    comment.to_string()
                },
            })
        })
        .collect()
}

/// Split a node list at the commas outside brackets (`n[1-2],m3`).
fn split_hostlist(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in list.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(list[start..i].to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < list.len() {
        out.push(list[start..].to_string());
    }
    out
}

/// Every node's active features and weight.
pub fn nodes() -> Result<Vec<NodeInfo>, SlurmError> {
    let text = run("sinfo", &["-h", "-N", "-o", "%N|%b|%w"])?;
    parse_sinfo(&text).map_err(|what| SlurmError {
        command: "sinfo -h -N -o %N|%b|%w".into(),
        what,
    })
}

/// Parse `sinfo -h -N -o "%N|%b|%w"` (one line per node and partition;
/// the first line of a node wins). No features is `(null)`.
pub fn parse_sinfo(text: &str) -> Result<Vec<NodeInfo>, String> {
    let mut out: Vec<NodeInfo> = Vec::new();
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let f: Vec<&str> = line.split('|').collect();
        let [name, features, weight] = f[..] else {
            return Err(format!(
                "line {}: {line:?}: expected 3 fields node|features|weight",
                i + 1
            ));
        };
        let weight = weight
            .trim()
            .parse::<u32>()
            .map_err(|e| format!("line {}: weight {weight:?}: {e}", i + 1))?;
        if out.iter().any(|n| n.name == name.trim()) {
            continue;
        }
        out.push(NodeInfo {
            name: name.trim().to_string(),
            features: match features.trim() {
                "(null)" | "" => Vec::new(),
                f => f.split(',').map(str::to_string).collect(),
            },
            weight,
        });
    }
    Ok(out)
}

/// Set node `name`'s available and active features and its weight.
pub fn update_node(name: &str, features: &[String], weight: u32) -> Result<(), SlurmError> {
    let list = features.join(",");
    run(
        "scontrol",
        &[
            "update",
            &format!("NodeName={name}"),
            &format!("AvailableFeatures={list}"),
            &format!("ActiveFeatures={list}"),
            &format!("Weight={weight}"),
        ],
    )
    .map(|_| ())
}

/// Requeue job `id` (only for jobs that opted in: `--requeue`).
pub fn requeue(id: &str) -> Result<(), SlurmError> {
    run("scontrol", &["requeue", id]).map(|_| ())
}

/// Where a job the advisor requeued stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requeued {
    /// Still leaving its node (completing or being requeued): the node is
    /// not free yet.
    Leaving,
    /// Pending only for the begin time Slurm gives every requeued job (two
    /// minutes later).
    Waiting,
    /// Anything else (running again, ended, gone): nothing left to do.
    Settled,
}

/// Read how a requeued job stands from `squeue`'s `%T %r`.
pub fn requeued_state(id: &str) -> Result<Requeued, SlurmError> {
    let state = run("squeue", &["-h", "-j", id, "-o", "%T %r"])?;
    Ok(parse_requeued(&state))
}

fn parse_requeued(state: &str) -> Requeued {
    match state.trim() {
        "PENDING BeginTime" => Requeued::Waiting,
        s if s.starts_with("COMPLETING") || s.starts_with("REQUEUE") => Requeued::Leaving,
        _ => Requeued::Settled,
    }
}

/// Let requeued job `id` start at once: the advisor moved it, it did not
/// fail, so the begin-time delay of a failed job does not apply.
pub fn release_requeued(id: &str) -> Result<(), SlurmError> {
    run(
        "scontrol",
        &["update", &format!("JobId={id}"), "StartTime=now"],
    )
    .map(|_| ())
}

/// Whether job `id` may be requeued (`Requeue=1` in `scontrol show job`).
pub fn requeueable(id: &str) -> Result<bool, SlurmError> {
    let text = run("scontrol", &["show", "job", "-o", id])?;
    Ok(text.split_whitespace().any(|w| w == "Requeue=1"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn requeued_states_are_read() {
        assert_eq!(parse_requeued("PENDING BeginTime\n"), Requeued::Waiting);
        assert_eq!(parse_requeued("COMPLETING None"), Requeued::Leaving);
        assert_eq!(parse_requeued("REQUEUED None"), Requeued::Leaving);
        assert_eq!(parse_requeued("RUNNING None"), Requeued::Settled);
        assert_eq!(parse_requeued(""), Requeued::Settled);
    }

    #[test]
    fn squeue_lines_are_read() {
        let jobs =
            parse_squeue("12|root|n1|stream|ecosched:class=mem\n13|ann|n[2-3],m1|my|job|(null)\n")
                .unwrap();
        assert_eq!(jobs[0].nodes, ["n1"]);
        assert_eq!(jobs[0].comment, "ecosched:class=mem");
        assert_eq!(jobs[1].nodes, ["n[2-3]", "m1"]);
        // The name is the fourth field; a `|` after it belongs to the comment.
        assert_eq!(jobs[1].name, "my");
        assert_eq!(jobs[1].comment, "job|(null)");
        let e = parse_squeue("12|root\n").unwrap_err();
        assert!(e.starts_with("line 1:"), "{e}");
    }

    #[test]
    fn sinfo_lines_are_read_once_per_node() {
        let nodes = parse_sinfo("n1|(null)|1\nn2|gpu,eco_take_mem|3\nn1|(null)|1\n").unwrap();
        assert_eq!(nodes.len(), 2);
        assert!(nodes[0].features.is_empty());
        assert_eq!(nodes[1].features, ["gpu", "eco_take_mem"]);
        assert_eq!(nodes[1].weight, 3);
        assert!(parse_sinfo("n1|x|heavy\n").unwrap_err().contains("weight"));
    }
}
