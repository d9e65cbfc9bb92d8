//! Checking that `ecosched restore` put back everything a killed
//! `ecosched` had changed, for the chaos tests (`live::chaos`): each
//! change its journal records (read before the restore) must be undone
//! where the thing changed still exists, and nothing of the run may be
//! left: no journal or hint file, no cgroup named after it, no task of it
//! confined or stopped.
//!
//! The journal is read as the JSON lines it is on disk (the header, then
//! one change a line), so that the check does not trust the code it
//! checks to say what was changed.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The changes recorded in every journal of `state`, as JSON objects (the
/// header lines left out). A torn last line is left out too: it was never
/// acted on.
pub fn journal_records(state: &Path) -> Vec<Value> {
    let Ok(dir) = std::fs::read_dir(state) else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("journal-"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| v.get("kind").is_some())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A journal path (relative to the root, as journals write them) on this
/// machine.
fn on_machine(path: &str) -> PathBuf {
    Path::new("/").join(path.trim_start_matches('/'))
}

/// The start time of task `tid` (field 22 of `/proc/<tid>/stat`), `None`
/// once it is gone.
fn start_ticks(tid: u32) -> Option<u64> {
    ecosched_testkit::live::stat_fields(tid)?
        .get(19)?
        .parse()
        .ok()
}

/// Whether the task a record names (`tid`/`pid` and `start_ticks`) is
/// still the same live task: a gone or reused PID, or a zombie, has
/// nothing to restore.
fn same_live_task(id: u32, ticks: Option<u64>) -> bool {
    !ecosched_testkit::live::has_exited(id) && ticks.is_none_or(|t| start_ticks(id) == Some(t))
}

/// What is not as it was before the run, for each change in `records`:
/// a live task's affinity not back to the recorded one, a file not back
/// to its recorded contents (unless it went with its cgroup), a created
/// cgroup still there, a moved task not back in its cgroup, a stopped
/// process still stopped.
pub fn not_undone(records: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    for r in records {
        let text = |k: &str| r[k].as_str().unwrap_or_default().to_string();
        let id = |k: &str| r[k].as_u64().unwrap_or(0) as u32;
        let ticks = r["start_ticks"].as_u64();
        match r["kind"].as_str().unwrap_or_default() {
            "affinity" => {
                let tid = id("tid");
                if same_live_task(tid, ticks) {
                    let now = ecosched_testkit::live::allowed_list(tid).unwrap_or_default();
                    if now != text("before") {
                        problems.push(format!("task {tid}: CPUs {now}, was {}", text("before")));
                    }
                }
            }
            "file" => {
                let path = on_machine(&text("path"));
                if let Ok(now) = std::fs::read_to_string(&path) {
                    if now.trim() != text("before").trim() {
                        problems.push(format!(
                            "{}: {:?}, was {:?}",
                            path.display(),
                            now.trim(),
                            text("before")
                        ));
                    }
                }
            }
            "cgroup_created" => {
                let dir = on_machine(&text("dir"));
                if dir.exists() {
                    problems.push(format!("cgroup {} left", dir.display()));
                }
            }
            "cgroup_moved" | "gang_moved" => {
                let tid = id("tid");
                let back_to = on_machine(&text("back_to"));
                let members = std::fs::read_to_string(&back_to).unwrap_or_default();
                if same_live_task(tid, ticks)
                    && !members.lines().any(|l| l.trim() == tid.to_string())
                {
                    problems.push(format!("task {tid} not back in {}", back_to.display()));
                }
            }
            "stopped" => {
                let pid = id("pid");
                let state = ecosched_testkit::live::stat_fields(pid)
                    .and_then(|f| f.first().cloned())
                    .unwrap_or_default();
                if same_live_task(pid, ticks) && (state == "T" || state == "t") {
                    problems.push(format!("process {pid} still stopped"));
                }
            }
            other => problems.push(format!("a change of unknown kind {other:?}: {r}")),
        }
    }
    problems
}

/// Every cgroup directory named `name` (a run's `ecosched-<pid>`) under
/// any mounted hierarchy: cgroup v1's controllers under `/sys/fs/cgroup/`,
/// cgroup2 at `/sys/fs/cgroup` or `/sys/fs/cgroup/unified`.
pub fn cgroups_named(name: &str) -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    let mut tops = vec![root.to_path_buf()];
    if let Ok(dir) = std::fs::read_dir(root) {
        tops.extend(dir.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    tops.into_iter()
        .map(|t| t.join(name))
        .filter(|p| p.is_dir())
        .collect()
}

/// What about the surviving command `pid` is not as it was before its
/// run: CPUs other than `cpus`, a cpuset other than `cpuset`, a cgroup of
/// the run, stopped or frozen.
pub fn task_not_back(pid: u32, cpus: &str, cpuset: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if ecosched_testkit::live::has_exited(pid) {
        return problems;
    }
    let now = ecosched_testkit::live::allowed_list(pid).unwrap_or_default();
    if now != cpus {
        problems.push(format!("command {pid}: CPUs {now}, was {cpus}"));
    }
    let set = std::fs::read_to_string(format!("/proc/{pid}/cpuset")).unwrap_or_default();
    if set.trim() != cpuset {
        problems.push(format!(
            "command {pid}: cpuset {}, was {cpuset}",
            set.trim()
        ));
    }
    let groups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    if groups.contains("ecosched") {
        problems.push(format!(
            "command {pid} still in a cgroup of the run: {groups}"
        ));
    }
    let state = ecosched_testkit::live::stat_fields(pid)
        .and_then(|f| f.first().cloned())
        .unwrap_or_default();
    if state == "T" || state == "t" {
        problems.push(format!("command {pid} stopped"));
    }
    if let Some((dir, file)) = ecosched_testkit::live::freezer_cgroup(pid) {
        if ecosched_testkit::live::is_frozen(&dir, file) == Some(true) {
            problems.push(format!("command {pid} frozen in {}", dir.display()));
        }
    }
    problems
}

/// The live processes other than `except` whose command line holds the
/// argument `token` (the command a run was given, before or after its
/// start trampoline's `exec`).
pub fn processes_with_arg(token: &str, except: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|&p| p != except && !ecosched_testkit::live::has_exited(p))
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == token.as_bytes()))
        })
        .collect()
}

/// The live processes whose environment holds `VAR=value`: a command and
/// everything it started, whatever their command lines.
pub fn processes_with_env(var: &str, value: &str) -> Vec<u32> {
    let entry = format!("{var}={value}");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|&p| !ecosched_testkit::live::has_exited(p))
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/environ"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == entry.as_bytes()))
        })
        .collect()
}
