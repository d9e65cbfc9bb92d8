//! Other programs that manage the knobs ecosched turns: power daemons that
//! set cpufreq governors and energy-performance preferences, tuners that
//! pin or move tasks, and a `sched_ext` BPF scheduler that replaces the
//! kernel's placement. Two managers of one knob undo each other, so
//! `ecosched doctor` names each one found, running (a process of that
//! name under `/proc`) or enabled (a unit link in a systemd `*.wants`
//! directory under `/etc/systemd/system`), and what it would fight over.
//! A loaded `sched_ext` scheduler is read from `/sys/kernel/sched_ext`
//! (`state`, `root/ops`, kernel `Documentation/scheduler/sched-ext.rst`).

use crate::fsroot::FsRoot;
use serde::Serialize;

/// The managers looked for: name, process name as the kernel keeps it
/// (`comm`, cut to 15 bytes), systemd unit, what it changes.
const KNOWN: &[(&str, &str, &str, &str)] = &[
    (
        "tuned",
        "tuned",
        "tuned.service",
        "cpufreq governor and EPP, and CPU affinity of its profiles' tasks",
    ),
    (
        "power-profiles-daemon",
        "power-profiles-",
        "power-profiles-daemon.service",
        "EPP and the platform profile",
    ),
    (
        "tlp",
        "tlp",
        "tlp.service",
        "cpufreq governor, EPP and boost",
    ),
    (
        "auto-cpufreq",
        "auto-cpufreq",
        "auto-cpufreq.service",
        "cpufreq governor, EPP and boost",
    ),
    (
        "intel_lpmd",
        "intel_lpmd",
        "intel_lpmd.service",
        "which CPUs run tasks (it confines work to a few CPUs) and EPP",
    ),
    (
        "thermald",
        "thermald",
        "thermald.service",
        "the frequency ceiling (cpufreq limits, RAPL power limits)",
    ),
    (
        "system76-power",
        "system76-power",
        "com.system76.PowerDaemon.service",
        "cpufreq governor, EPP and boost",
    ),
];

/// The systemd unit of every manager looked for: the service's unit
/// conflicts with each (deploy/systemd/ecosched.service, `Conflicts=`).
pub fn units() -> impl Iterator<Item = &'static str> {
    KNOWN.iter().map(|(_, _, unit, _)| *unit)
}

/// At most this many `/proc` entries are looked at.
const MAX_PROCESSES: usize = 65_536;

/// One manager found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Manager {
    /// Its name (`tuned`, `sched_ext`).
    pub name: String,
    /// Whether it runs (a process of that name; a loaded scheduler).
    pub running: bool,
    /// The process found, when it is one.
    pub pid: Option<u32>,
    /// The unit link that enables it, absolute, where one exists.
    pub enabled_by: Option<String>,
    /// What it changes that ecosched changes too.
    pub conflicts_over: String,
}

/// Look for every known manager at `root`.
pub fn detect(root: &FsRoot) -> Vec<Manager> {
    let running = running_processes(root);
    let links = enabled_units(root);
    let mut out = Vec::new();
    for (name, comm, unit, over) in KNOWN {
        let pid = running.iter().find(|(_, c)| c == comm).map(|(p, _)| *p);
        let link = links
            .iter()
            .find(|(_, u)| u == unit)
            .map(|(l, _)| l.clone());
        if pid.is_some() || link.is_some() {
            out.push(Manager {
                name: (*name).to_string(),
                running: pid.is_some(),
                pid,
                enabled_by: link,
                conflicts_over: (*over).to_string(),
            });
        }
    }
    if let Some(ops) = sched_ext(root) {
        out.push(Manager {
            name: format!("sched_ext ({ops})"),
            running: true,
            pid: None,
            enabled_by: None,
            conflicts_over: "task placement: a BPF scheduler decides where tasks run, \
                             within the affinity ecosched sets"
                .into(),
        });
    }
    out
}

/// Every process's PID and name (`/proc/<pid>/comm`), bounded.
fn running_processes(root: &FsRoot) -> Vec<(u32, String)> {
    let Ok(entries) = root.list("proc") else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|e| e.parse::<u32>().ok())
        .take(MAX_PROCESSES)
        .filter_map(|pid| {
            let comm = root.read_opt(&format!("proc/{pid}/comm")).ok().flatten()?;
            Some((pid, comm.trim().to_string()))
        })
        .collect()
}

/// Every unit linked into an `etc/systemd/system/*.wants` directory: the
/// link's path and the unit's name.
fn enabled_units(root: &FsRoot) -> Vec<(String, String)> {
    let dir = "etc/systemd/system";
    let Ok(entries) = root.list(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for wants in entries.iter().filter(|e| e.ends_with(".wants")) {
        let rel = format!("{dir}/{wants}");
        for unit in root.list(&rel).unwrap_or_default() {
            out.push((
                root.path(&format!("{rel}/{unit}")).display().to_string(),
                unit,
            ));
        }
    }
    out
}

/// The loaded `sched_ext` scheduler's name, when one is enabled.
fn sched_ext(root: &FsRoot) -> Option<String> {
    let state = root.read_opt("sys/kernel/sched_ext/state").ok().flatten()?;
    if state.trim() != "enabled" {
        return None;
    }
    let ops = root
        .read_opt("sys/kernel/sched_ext/root/ops")
        .ok()
        .flatten()
        .map(|o| o.trim().to_string())
        .unwrap_or_else(|| "unnamed".into());
    Some(ops)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn write(dir: &std::path::Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn running_enabled_and_loaded_managers_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "proc/412/comm", "tuned\n");
        write(d, "proc/77/comm", "bash\n");
        write(d, "proc/90/comm", "power-profiles-\n");
        write(d, "proc/self/comm", "doctor\n");
        std::fs::create_dir_all(d.join("etc/systemd/system/multi-user.target.wants")).unwrap();
        std::os::unix::fs::symlink(
            "/lib/systemd/system/thermald.service",
            d.join("etc/systemd/system/multi-user.target.wants/thermald.service"),
        )
        .unwrap();
        write(
            d,
            "etc/systemd/system/graphical.target.wants/tuned.service",
            "",
        );
        write(d, "sys/kernel/sched_ext/state", "enabled\n");
        write(d, "sys/kernel/sched_ext/root/ops", "rusty\n");
        let found = detect(&FsRoot::recorded(d));
        let names: Vec<&str> = found.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "tuned",
                "power-profiles-daemon",
                "thermald",
                "sched_ext (rusty)"
            ]
        );
        assert_eq!(found[0].pid, Some(412));
        assert!(found[0]
            .enabled_by
            .as_deref()
            .unwrap()
            .ends_with("etc/systemd/system/graphical.target.wants/tuned.service"));
        assert!(found[0].conflicts_over.contains("governor"));
        assert!(found[1].running && found[1].enabled_by.is_none());
        assert!(!found[2].running && found[2].enabled_by.is_some());
        assert!(found[3].running && found[3].conflicts_over.contains("placement"));
    }

    #[test]
    fn a_disabled_sched_ext_and_no_managers_give_nothing() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "proc/1/comm", "systemd\n");
        write(dir.path(), "sys/kernel/sched_ext/state", "disabled\n");
        assert!(detect(&FsRoot::recorded(dir.path())).is_empty());
    }
}
