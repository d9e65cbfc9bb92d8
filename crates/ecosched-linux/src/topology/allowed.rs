//! The CPUs this process may run on.
//!
//! On the running machine that is `proc/self/status` `Cpus_allowed_list`
//! (what `sched_getaffinity` returns). A recorded machine has no process, so
//! the recorded cpuset is found as hwloc finds it: the cpuset mount from
//! `proc/mounts` (cgroup v2 whose `cgroup.controllers` offers `cpuset`;
//! cgroup v1 with the `cpuset` option, whose files lack the `cpuset.`
//! prefix under `noprefix`; or the legacy `cpuset` filesystem), the
//! process's cgroup from `proc/self/cgroup` (falling back to
//! `proc/self/cpuset`), and in that directory `cpuset.cpus.effective` and
//! `cpuset.mems.effective` (v2), `cpuset.cpus` and `cpuset.mems` (v1, the
//! files hwloc reads) or `cpus` and `mems` (v1 `noprefix`, legacy). The
//! allowed memory nodes come from the same place (`Mems_allowed_list` live).
//! When none of that was recorded the answer is `None` (the caller uses
//! every online CPU).

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::mounts::MountTable;
use ecosched_model::CpuSet;
use std::collections::BTreeSet;

/// Which kind of cpuset hierarchy a mount is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mount {
    /// cgroup v2 with the cpuset controller.
    V2(String),
    /// cgroup v1 with the cpuset controller; `true` under `noprefix`.
    V1(String, bool),
    /// The legacy `cpuset` filesystem.
    Legacy(String),
}

/// What the process may use; `None` where the root does not tell.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowed {
    /// CPUs (`Cpus_allowed_list`, or the cpuset's CPUs).
    pub cpus: Option<CpuSet>,
    /// NUMA node ids (`Mems_allowed_list`, or the cpuset's mems).
    pub mems: Option<BTreeSet<u32>>,
}

fn parse_set(root: &FsRoot, rel: &str, text: &str) -> Result<CpuSet, LinuxError> {
    CpuSet::parse_list(text.trim())
        .map_err(|e| LinuxError::parse(&root.path(rel), text, e.to_string()))
}

fn node_ids(set: &CpuSet) -> BTreeSet<u32> {
    set.iter().map(|c| c.0).collect()
}

/// The allowed CPUs and memory nodes, as far as the root tells them;
/// `mounts` is the root's mount table.
pub fn read_allowed(root: &FsRoot, mounts: &MountTable) -> Result<Allowed, LinuxError> {
    if root.is_live() {
        if let Some(status) = root.read_opt("proc/self/status")? {
            let field = |key: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(key))
                    .map(str::to_string)
            };
            let cpus = match field("Cpus_allowed_list:") {
                Some(t) => Some(parse_set(root, "proc/self/status", &t)?),
                None => None,
            };
            let mems = match field("Mems_allowed_list:") {
                Some(t) => Some(node_ids(&parse_set(root, "proc/self/status", &t)?)),
                None => None,
            };
            if cpus.is_some() {
                return Ok(Allowed { cpus, mems });
            }
        }
    }
    let Some(mount) = find_mount(root, mounts)? else {
        return Ok(Allowed::default());
    };
    let Some(name) = cgroup_name(root, &mount)? else {
        return Ok(Allowed::default());
    };
    // hwloc reads `cpuset.cpus` (not `effective_cpus`) under cgroup v1.
    let (dir, cpus_file, mems_file) = match &mount {
        Mount::V2(d) => (d, "cpuset.cpus.effective", "cpuset.mems.effective"),
        Mount::V1(d, false) => (d, "cpuset.cpus", "cpuset.mems"),
        Mount::V1(d, true) | Mount::Legacy(d) => (d, "cpus", "mems"),
    };
    let base = format!("{}/{}", dir.trim_end_matches('/'), name.trim_matches('/'));
    let base = base.trim_end_matches('/').to_string();
    let read = |file: &str| -> Result<Option<CpuSet>, LinuxError> {
        let rel = format!("{base}/{file}");
        match root.read_opt(&rel)? {
            None => Ok(None),
            Some(text) => parse_set(root, &rel, &text).map(Some),
        }
    };
    Ok(Allowed {
        cpus: read(cpus_file)?,
        mems: read(mems_file)?.map(|s| node_ids(&s)),
    })
}

/// The first mount of the table that carries cpusets.
fn find_mount(root: &FsRoot, mounts: &MountTable) -> Result<Option<Mount>, LinuxError> {
    for m in mounts.mounts() {
        let dir = m.point.as_str();
        match m.fstype.as_str() {
            "cgroup2" => {
                let controllers = root
                    .read_opt(&format!("{}/cgroup.controllers", dir.trim_end_matches('/')))?
                    .unwrap_or_default();
                if controllers.split_whitespace().any(|c| c == "cpuset") {
                    return Ok(Some(Mount::V2(dir.to_string())));
                }
            }
            "cgroup" if m.has_option("cpuset") => {
                return Ok(Some(Mount::V1(dir.to_string(), m.has_option("noprefix"))));
            }
            "cpuset" => return Ok(Some(Mount::Legacy(dir.to_string()))),
            _ => {}
        }
    }
    Ok(None)
}

/// The process's cgroup path within `mount`.
fn cgroup_name(root: &FsRoot, mount: &Mount) -> Result<Option<String>, LinuxError> {
    if let Some(text) = root.read_opt("proc/self/cgroup")? {
        for line in text.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(_), Some(controllers), Some(path)) =
                (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let wanted = match mount {
                Mount::V2(_) => controllers.is_empty(),
                _ => controllers.split(',').any(|c| c == "cpuset"),
            };
            if wanted {
                return Ok(Some(path.to_string()));
            }
        }
    }
    root.read_opt("proc/self/cpuset")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    fn recorded_allowed(dir: &tempfile::TempDir) -> Allowed {
        let root = FsRoot::recorded(dir.path());
        read_allowed(&root, &MountTable::read(&root).unwrap()).unwrap()
    }

    #[test]
    fn cgroup_v2_needs_the_cpuset_controller_and_uses_the_v0_line() {
        let dir = tree(&[
            (
                "proc/mounts",
                "none /a cgroup2 rw 0 0\nnone /b cgroup2 rw 0 0\n",
            ),
            ("a/cgroup.controllers", "memory io"),
            ("b/cgroup.controllers", "cpu cpuset"),
            ("proc/self/cgroup", "0::/job/step\n"),
            ("b/job/step/cpuset.cpus.effective", "2-5\n"),
        ]);
        let allowed = recorded_allowed(&dir);
        assert_eq!(allowed.cpus.unwrap().to_list(), "2-5");
        assert_eq!(allowed.mems, None);
    }

    #[test]
    fn cgroup_v1_noprefix_and_missing_files() {
        let dir = tree(&[
            (
                "proc/mounts",
                "cpuset /dev/cpuset cgroup rw,cpuset,noprefix 0 0\n",
            ),
            ("proc/self/cpuset", "/x\n"),
            ("dev/cpuset/x/cpus", "0,3\n"),
            ("dev/cpuset/x/mems", "1-2\n"),
        ]);
        let allowed = recorded_allowed(&dir);
        assert_eq!(allowed.cpus.unwrap().to_list(), "0,3");
        assert_eq!(
            allowed.mems.unwrap().into_iter().collect::<Vec<_>>(),
            [1, 2]
        );
        let bare = tree(&[("proc/mounts", "cpuset /dev/cpuset cgroup rw,cpuset 0 0\n")]);
        assert_eq!(recorded_allowed(&bare), Allowed::default());
    }
}
