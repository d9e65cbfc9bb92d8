//! The dashboard and rules in `deploy/` name only series the exporter
//! emits, and only states it publishes: a series renamed here fails this
//! test instead of leaving an empty panel or an alert that never fires.

#![allow(clippy::unwrap_used)]

use crate::labels::{CpuLabels, GroupLabels, GroupPolicyLabels, GroupSourceLabels, ZoneLabels};
use crate::metrics::{Metrics, GROUP_STATES};
use std::collections::BTreeSet;
use std::path::Path;

/// Every series name the exporter emits once each family has a series.
fn emitted() -> BTreeSet<String> {
    let m = Metrics::new();
    let g = GroupLabels { group: "g".into() };
    let zone = ZoneLabels {
        zone: "package".into(),
        domain: "package-0".into(),
        source: "rapl".into(),
    };
    m.energy.get_or_create(&zone).inc_by(1.0);
    m.power.get_or_create(&zone).set(1.0);
    m.frequency
        .get_or_create(&CpuLabels { cpu: "0".into() })
        .set(1.0);
    m.group_cpu.get_or_create(&g).inc_by(1.0);
    m.group_tasks.get_or_create(&g).set(1);
    m.group_llc_misses.get_or_create(&g).inc();
    m.group_energy
        .get_or_create(&GroupSourceLabels {
            group: "g".into(),
            source: "rapl".into(),
        })
        .inc_by(1.0);
    m.decisions
        .get_or_create(&GroupPolicyLabels {
            group: "g".into(),
            policy: "static".into(),
        })
        .inc();
    m.set_group_state("g", "running", "static", &[]);
    m.encode_classic()
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect()
}

/// The names in `text` that look like the exporter's (`ecosched_…`,
/// `process_…`), each with what follows it.
fn referenced(text: &str) -> Vec<(String, String)> {
    let bytes = text.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b':';
    let mut out = Vec::new();
    for prefix in ["ecosched_", "process_"] {
        for (at, _) in text.match_indices(prefix) {
            if at > 0 && ident(bytes[at - 1]) {
                continue;
            }
            let end = text[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(text.len(), |n| at + n);
            out.push((
                text[at..end].to_string(),
                text[end..].chars().take(80).collect(),
            ));
        }
    }
    out
}

fn deploy(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy")
        .join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_dashboard_and_the_rules_name_only_emitted_series_and_states() {
    let names = emitted();
    for name in ["process_cpu_seconds_total", "ecosched_build_info"] {
        assert!(names.contains(name), "{name} not among {names:?}");
    }
    for file in [
        "grafana/ecosched-dashboard.json",
        "prometheus/ecosched-rules.yml",
        "prometheus/tests/ecosched-rules-test.yml",
    ] {
        let text = deploy(file);
        let refs = referenced(&text);
        assert!(refs.len() > 5, "{file}: {refs:?}");
        for (name, after) in &refs {
            assert!(
                names.contains(name),
                "{file} names {name}, which the exporter does not emit ({names:?})"
            );
            // A state is one the daemon publishes.
            let after = after.replace("\\\"", "\"");
            if let Some(rest) = after.split("state=\"").nth(1) {
                let state = rest.split('"').next().unwrap_or("");
                assert!(GROUP_STATES.contains(&state), "{file}: state {state:?}");
            }
        }
    }
}

#[test]
fn a_name_the_exporter_lacks_is_found() {
    let refs = referenced(
        r#"{"expr": "rate(ecosched_energy_joule_total[5m]) / process_open_fds"} ecosched:x:y"#,
    );
    let names: Vec<&str> = refs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["ecosched_energy_joule_total", "process_open_fds"]);
    assert!(!emitted().contains("ecosched_energy_joule_total"));
}
