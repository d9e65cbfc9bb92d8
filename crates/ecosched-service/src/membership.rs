//! Which processes belong to a group, read from the kernel: a cgroup's
//! `cgroup.procs` (v1 and v2 alike), or a walk of `/proc` for a match rule
//! (owner from the `/proc/PID` directory's uid, name from `/proc/PID/comm`).
//! The platform follows the descendants of what is found here.
//!
//! Some processes are never roots: PID 1 and the daemon itself (a rule
//! matching `user = "root"` would otherwise take the whole machine, the
//! daemon included, as descendants of init).

use crate::config::Source;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The processes of cgroup `dir` and of the cgroups below it (a Slurm job's
/// tasks live in its `step_*` children), or `None` when the cgroup is gone.
/// Slurm's step daemons share their step's cgroup but are Slurm's, not the
/// job's, so `slurmstepd` is left out.
pub fn cgroup_procs(dir: &Path) -> Option<Vec<u32>> {
    let text = std::fs::read_to_string(dir.join("cgroup.procs")).ok()?;
    let mut out: Vec<u32> = text
        .lines()
        .filter_map(|l| l.trim().parse::<u32>().ok())
        .filter(|&p| allowed_root(p) && !slurm_daemon(p))
        .collect();
    for (_, child) in glob_dirs(dir, "") {
        // A child that vanished meanwhile has no processes.
        out.extend(cgroup_procs(&child).unwrap_or_default());
    }
    Some(out)
}

fn slurm_daemon(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == "slurmstepd")
}

/// The directories under `parent` whose names start with `prefix`, sorted.
pub fn glob_dirs(parent: &Path, prefix: &str) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut out: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            name.starts_with(prefix).then(|| (name, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// Processes under `proc_dir` matching the owner and command name.
pub fn matching(proc_dir: &Path, uid: Option<u32>, command: Option<&str>) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(proc_dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.filter_map(Result::ok) {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if !allowed_root(pid) {
            continue;
        }
        if let Some(want) = uid {
            // A process that exited meanwhile simply does not match.
            match e.metadata() {
                Ok(m) if m.uid() == want => {}
                _ => continue,
            }
        }
        if let Some(want) = command {
            match std::fs::read_to_string(e.path().join("comm")) {
                Ok(c) if c.trim_end_matches('\n') == want => {}
                _ => continue,
            }
        }
        out.push(pid);
    }
    out.sort_unstable();
    out
}

fn allowed_root(pid: u32) -> bool {
    pid != 1 && pid != std::process::id()
}

/// The roots of one group, looked up at most once per `every` (the
/// platform asks at every counter read, ten times a second).
#[derive(Debug)]
pub struct Lookup {
    source: Source,
    every: Duration,
    last: Option<Instant>,
    roots: Vec<u32>,
}

impl Lookup {
    /// Look up `source` (a single cgroup or a match rule) at most every
    /// `every`.
    pub fn new(source: Source, every: Duration) -> Self {
        Lookup {
            source,
            every,
            last: None,
            roots: Vec::new(),
        }
    }

    /// The group's root processes now.
    pub fn roots(&mut self) -> Vec<u32> {
        if self.last.is_none_or(|t| t.elapsed() >= self.every) {
            self.last = Some(Instant::now());
            self.roots = match &self.source {
                Source::Cgroup(dir) => cgroup_procs(dir).unwrap_or_default(),
                Source::Match { uid, command } => {
                    matching(Path::new("/proc"), *uid, command.as_deref())
                }
                // A glob is expanded by the daemon into single cgroups.
                Source::CgroupGlob { .. } => Vec::new(),
            };
        }
        self.roots.clone()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn matching_by_name_and_owner() {
        let dir = tempfile::tempdir().unwrap();
        for (pid, comm) in [("100", "make\n"), ("101", "cc1\n"), ("1", "make\n")] {
            std::fs::create_dir(dir.path().join(pid)).unwrap();
            std::fs::write(dir.path().join(pid).join("comm"), comm).unwrap();
        }
        std::fs::create_dir(dir.path().join("self")).unwrap();
        let me = std::fs::metadata(dir.path()).unwrap().uid();
        assert_eq!(matching(dir.path(), None, Some("make")), vec![100]);
        assert_eq!(matching(dir.path(), Some(me), None), vec![100, 101]);
        assert!(matching(dir.path(), Some(me + 1), None).is_empty());
    }

    #[test]
    fn cgroup_members_and_globs() {
        let dir = tempfile::tempdir().unwrap();
        for job in ["job_1", "job_2", "other"] {
            std::fs::create_dir(dir.path().join(job)).unwrap();
        }
        std::fs::write(dir.path().join("job_1/cgroup.procs"), "5\n7\n").unwrap();
        let found: Vec<String> = glob_dirs(dir.path(), "job_")
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(found, ["job_1", "job_2"]);
        assert_eq!(cgroup_procs(&dir.path().join("job_1")), Some(vec![5, 7]));
        assert_eq!(cgroup_procs(&dir.path().join("gone")), None);
        // A Slurm job's tasks are in its steps' cgroups.
        for (step, procs) in [("step_batch", "9\n"), ("step_extern", "11\n")] {
            std::fs::create_dir(dir.path().join("job_2").join(step)).unwrap();
            std::fs::write(
                dir.path().join("job_2").join(step).join("cgroup.procs"),
                procs,
            )
            .unwrap();
        }
        std::fs::write(dir.path().join("job_2/cgroup.procs"), "").unwrap();
        assert_eq!(cgroup_procs(&dir.path().join("job_2")), Some(vec![9, 11]));
    }
}
