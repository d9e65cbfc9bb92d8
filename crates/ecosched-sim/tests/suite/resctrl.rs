//! LLC occupancy and memory traffic through resctrl under `--observe
//! linux`: shown only where the machine's PMU has them `via = "resctrl"`,
//! exact (no multiplexing), and only for tasks holding one of the CPU's
//! monitoring IDs; `--observe full` always shows occupancy.

use ecosched_model::{CounterKind as K, Plan, Platform, PmuEvent, Snapshot, Via};
use ecosched_sim::{Observe, Scenario, SimPlatform};
use std::collections::BTreeSet;
use std::time::Duration;

/// Two hmmer-like and two soplex-like tasks on the Q6600 whose PMU also
/// has resctrl's cache occupancy (`occupancy`) and, in place of its bus
/// event, memory-bandwidth monitoring (`mbm`), with `rmids` monitoring IDs.
fn q6600_with(occupancy: bool, mbm: bool, rmids: Option<u32>) -> Scenario {
    let mut scenario = Scenario::load("merkel-2hmmer-2soplex").unwrap();
    let mut spec = scenario.machine.spec.clone();
    let pmu = spec.pmu.as_mut().unwrap();
    let resctrl = |kind, name: &str| PmuEvent {
        kind,
        name: name.into(),
        raw: None,
        via: Via::Resctrl,
    };
    if occupancy {
        pmu.events.push(resctrl(K::LlcOccupancy, "llc_occupancy"));
    }
    if mbm {
        // In place of the Core 2's bus event.
        pmu.events.retain(|e| e.kind != K::MemTransactions);
        pmu.events
            .push(resctrl(K::MemTransactions, "mbm_total_bytes"));
    }
    pmu.rmids = rmids;
    scenario.machine = std::sync::Arc::new(ecosched_sim::Machine::build(spec).unwrap());
    scenario
}

/// The snapshot after `ms` of the scenario, observed as `mode` for a
/// policy that wants `counters`.
fn after(scenario: &Scenario, mode: Observe, counters: &[K], ms: u64) -> Snapshot {
    let mut sim = SimPlatform::new(scenario, 1).unwrap();
    sim.observe_as(mode, &counters.iter().copied().collect::<BTreeSet<_>>());
    sim.apply(&Plan::unchanged()).unwrap();
    sim.advance(Duration::from_millis(ms)).unwrap();
    sim.observe().unwrap()
}

const L2_BYTES: u64 = 4 << 20;

#[test]
fn occupancy_is_shown_where_resctrl_monitors_the_cache() {
    let wanted = [K::LlcOccupancy, K::MemTransactions];
    let s = after(&q6600_with(true, true, None), Observe::Linux, &wanted, 200);
    assert_eq!(s.tasks.len(), 4);
    for t in &s.tasks {
        let held = t.counters.llc_occupancy.unwrap();
        assert!(held > 0 && held <= L2_BYTES, "{}: {held}", t.name);
        assert!(t.counters.mem_transactions.unwrap() > 0, "{}", t.name);
    }
    // Two tasks share each 4 MiB L2: together they hold no more than it.
    let total: u64 = s
        .tasks
        .iter()
        .filter_map(|t| t.counters.llc_occupancy)
        .sum();
    assert!(total <= 2 * L2_BYTES, "{total}");
}

#[test]
fn without_resctrl_in_the_pmu_linux_shows_no_occupancy() {
    let wanted = [K::LlcOccupancy, K::MemTransactions];
    let s = after(
        &q6600_with(false, false, None),
        Observe::Linux,
        &wanted,
        200,
    );
    assert!(s.tasks.iter().all(|t| t.counters.llc_occupancy.is_none()));
    // Simulator truth has it always.
    let full = after(&q6600_with(false, false, None), Observe::Full, &[], 200);
    assert!(full
        .tasks
        .iter()
        .all(|t| t.counters.llc_occupancy.is_some()));
}

#[test]
fn memory_traffic_from_mbm_is_not_multiplexed() {
    // Truth and the Linux view agree exactly: resctrl takes no perf counter.
    let s = after(
        &q6600_with(false, true, None),
        Observe::Linux,
        &[K::MemTransactions],
        200,
    );
    let full = after(&q6600_with(false, true, None), Observe::Full, &[], 200);
    let by_name = |s: &Snapshot| {
        let mut v: Vec<(String, Option<u64>)> = s
            .tasks
            .iter()
            .map(|t| (t.name.clone(), t.counters.mem_transactions))
            .collect();
        v.sort();
        v
    };
    assert_eq!(by_name(&s), by_name(&full));
}

#[test]
fn tasks_beyond_the_monitoring_ids_read_no_resctrl_events() {
    // Three RMIDs: one is the default group's, two go to the first tasks.
    let wanted = [K::LlcOccupancy, K::MemTransactions];
    let s = after(
        &q6600_with(true, true, Some(3)),
        Observe::Linux,
        &wanted,
        200,
    );
    let monitored = s
        .tasks
        .iter()
        .filter(|t| t.counters.llc_occupancy.is_some())
        .count();
    assert_eq!(monitored, 2);
    for t in &s.tasks {
        assert_eq!(
            t.counters.llc_occupancy.is_some(),
            t.counters.mem_transactions.is_some(),
            "{}",
            t.name
        );
    }
}
