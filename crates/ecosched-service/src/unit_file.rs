//! The shipped systemd unit (deploy/systemd/ecosched.service) against the
//! code it runs: it must conflict with every manager `ecosched doctor`
//! knows ([`ecosched_linux::managers::units`]), so the two lists cannot
//! drift apart; keep restarts off for a refused configuration (exit 2,
//! the status `ecosched daemon` gives it); and reload through the
//! synchronous `ctl reload`. `scripts/verify-unit` checks the rest with
//! systemd's own tools.

#![allow(clippy::unwrap_used)]

/// The unit's `KEY=` values, every occurrence, in file order.
fn values(unit: &str, key: &str) -> Vec<String> {
    let prefix = format!("{key}=");
    unit.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(str::to_string)
        .collect()
}

fn unit() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/systemd/ecosched.service"
    );
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn the_unit_conflicts_with_every_manager_doctor_knows() {
    let unit = unit();
    let conflicts: Vec<String> = values(&unit, "Conflicts")
        .iter()
        .flat_map(|v| v.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect();
    let missing: Vec<&str> = ecosched_linux::managers::units()
        .filter(|u| !conflicts.iter().any(|c| c == u))
        .collect();
    assert!(missing.is_empty(), "Conflicts= lacks {missing:?}");
    assert!(ecosched_linux::managers::units().count() >= 7);
}

#[test]
fn a_refused_configuration_is_not_restarted_and_reload_is_synchronous() {
    let unit = unit();
    assert_eq!(values(&unit, "RestartPreventExitStatus"), ["2"]);
    assert_eq!(
        values(&unit, "ExecReload"),
        ["/usr/bin/ecosched ctl reload"]
    );
    let start = values(&unit, "ExecStart");
    assert_eq!(start.len(), 1);
    assert!(
        start[0].starts_with("/usr/bin/ecosched daemon --config "),
        "{start:?}"
    );
    assert!(values(&unit, "ExecStopPost")[0].starts_with("/usr/bin/ecosched restore "));
}
