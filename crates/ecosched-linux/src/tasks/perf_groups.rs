//! The perf groups a task's counters are read from: how the hardware
//! events are split into groups the PMU can count at once, and one open
//! group with its previous reading, from which deltas are taken.

use crate::perf::{scaled_delta, Event, EventProbe, GroupReading, PerfGroup};
use ecosched_model::{CounterKind, PmuSpec};
use std::collections::BTreeSet;

/// A perf group on one task and its previous reading.
pub(super) struct OpenGroup {
    pub(super) events: Vec<Event>,
    pub(super) group: Box<dyn PerfGroup>,
    pub(super) prev: Option<GroupReading>,
}

impl OpenGroup {
    /// Read the group now (`None` when the read fails).
    pub(super) fn read(&mut self) -> Option<GroupReading> {
        self.group.read().ok()
    }

    /// Hand `each` the scaled delta of every event from the previous
    /// reading to `now` (all `None` the first time or when the read
    /// failed), and keep `now` as the baseline. A callback, not a `Vec`:
    /// this runs for every thread that ran.
    pub(super) fn deltas(
        &mut self,
        now: Option<GroupReading>,
        mut each: impl FnMut(Event, Option<u64>),
    ) {
        for (i, e) in self.events.iter().enumerate() {
            let d = match (&self.prev, &now) {
                (Some(p), Some(n)) => scaled_delta(p, n, i),
                _ => None,
            };
            each(*e, d);
        }
        if now.is_some() {
            self.prev = now;
        }
    }
}

/// How a task's hardware events are split into perf groups. A group is
/// scheduled onto the PMU all or nothing, and the kernel refuses one that
/// could never fit (EINVAL), so events go in groups the PMU can count at
/// once, and the kernel rotates the groups:
/// - on a CPU a machine preset describes, its fixed-counter events ride in
///   every group and the others fill its general-purpose counters, each
///   cache's references beside its misses ([`PmuSpec::multiplex_groups`]);
/// - elsewhere, pairs that policies read as ratios share a group
///   (instructions with cycles, each cache's references with its misses),
///   which fits any PMU with two counters.
///
/// `only` narrows the events to those kinds (instructions and cycles are
/// always kept); `None` opens every usable one.
pub fn hardware_groups(
    probe: &EventProbe,
    raw: &[Event],
    pmu: Option<&PmuSpec>,
    only: Option<&BTreeSet<CounterKind>>,
) -> Vec<Vec<Event>> {
    let keep = |e: &Event| {
        let k = e.counter_kind();
        let asked = match only {
            None => true,
            Some(o) => o.contains(&k),
        };
        asked || matches!(k, CounterKind::Instructions | CounterKind::Cycles)
    };
    let generic: Vec<Event> = probe
        .usable(&Event::HARDWARE)
        .into_iter()
        .filter(keep)
        .collect();
    let raw: Vec<Event> = probe.usable(raw).into_iter().filter(keep).collect();
    let event_of = |k: CounterKind| {
        generic
            .iter()
            .chain(&raw)
            .copied()
            .find(|e| e.counter_kind() == k)
    };
    if let Some(pmu) = pmu {
        let kinds: Vec<CounterKind> = generic
            .iter()
            .chain(&raw)
            .map(|e| e.counter_kind())
            .collect();
        return pmu
            .multiplex_groups(&kinds)
            .into_iter()
            .map(|g| g.into_iter().filter_map(event_of).collect::<Vec<Event>>())
            .filter(|g| !g.is_empty())
            .collect();
    }
    let pairs = [
        [CounterKind::Instructions, CounterKind::Cycles],
        [CounterKind::LlcReferences, CounterKind::LlcMisses],
        [CounterKind::L1dReferences, CounterKind::L1dMisses],
    ];
    let mut groups: Vec<Vec<Event>> = pairs
        .iter()
        .map(|pair| {
            pair.iter()
                .filter_map(|&k| event_of(k))
                .collect::<Vec<Event>>()
        })
        .filter(|g| !g.is_empty())
        .collect();
    groups.extend(raw.iter().map(|&e| vec![e]));
    groups
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::fsroot::FsRoot;
    use crate::perf::{probe_events_with, FakePerf};
    use crate::tasks::testing::{fixture, host, reader_with};
    use crate::tasks::TaskReader;
    use ecosched_model::TaskId;

    /// The simulator's `q6600` preset's PMU, as far as this test needs it.
    fn core2_pmu() -> ecosched_model::PmuSpec {
        ecosched_model::PmuSpec {
            cpuid: Some("GenuineIntel-6-0F".into()),
            rmids: None,
            counters: 2,
            fixed: vec![CounterKind::Instructions, CounterKind::Cycles],
            events: vec![
                ecosched_model::PmuEvent {
                    kind: CounterKind::Instructions,
                    name: "instructions".into(),
                    raw: None,
                    via: ecosched_model::Via::Perf,
                },
                ecosched_model::PmuEvent {
                    kind: CounterKind::LinesIn,
                    name: "L2_LINES_IN.SELF.ANY".into(),
                    raw: Some(0x7024),
                    via: ecosched_model::Via::Perf,
                },
            ],
        }
    }

    fn raw_for(cpuinfo_root: &std::path::Path) -> Vec<Event> {
        let id = crate::pmu::cpuid(&FsRoot::recorded(cpuinfo_root)).unwrap();
        match crate::pmu::raw_events(&core2_pmu(), &id) {
            crate::pmu::RawEvents::Matched(e) => e,
            crate::pmu::RawEvents::NotOpened(_) => Vec::new(),
        }
    }

    #[test]
    fn hardware_counters_are_scaled_for_multiplexing() {
        let dir = fixture();
        let fake = FakePerf::new();
        let mut r = reader_with(&dir, &fake);
        assert!(r.availability().has(CounterKind::Instructions));
        let id = TaskId {
            pid: 100,
            start_ticks: 500,
        };
        assert_eq!(r.read(&[id]).tasks[0].counters.instructions, None);
        assert_eq!(
            fake.open_groups(100),
            4,
            "a software group and three hardware pairs"
        );
        fake.add(100, Event::Instructions, 1_000);
        fake.add(100, Event::Cycles, 2_000);
        fake.add(100, Event::LlcMisses, 10);
        fake.advance(100, 4_000, 1_000);
        // The task ran: its schedstat moved.
        let schedstat = dir.path().join("proc/100/task/100/schedstat");
        std::fs::write(&schedstat, "5000 200 4\n").unwrap();
        let c = r.read(&[id]).tasks.remove(0).counters;
        assert_eq!(c.instructions, Some(4_000));
        assert_eq!(c.cycles, Some(8_000));
        assert_eq!(c.llc_misses, Some(40));
        assert_eq!(c.llc_references, Some(0));
        assert_eq!(c.cpi(), Some(2.0));
        // Enabled but never on the PMU: no estimate rather than zero.
        fake.advance(100, 1_000, 0);
        std::fs::write(&schedstat, "6000 200 5\n").unwrap();
        let c = r.read(&[id]).tasks.remove(0).counters;
        assert_eq!((c.instructions, c.migrations), (None, Some(0)));
    }

    #[test]
    fn hardware_events_are_grouped_to_fit_the_pmu() {
        let lines_in = Event::Raw {
            kind: CounterKind::LinesIn,
            code: crate::perf::RawCode::raw(0x7024),
        };
        let fake = FakePerf::new();
        let probe = probe_events_with(&fake, &[lines_in]);
        // Core 2: instructions and cycles on fixed counters ride in every
        // group; two general-purpose counters take the rest in turns, each
        // cache's references beside its misses.
        let groups = hardware_groups(&probe, &[lines_in], Some(&core2_pmu()), None);
        assert_eq!(groups.len(), 3, "{groups:?}");
        for g in &groups {
            assert!(
                g.starts_with(&[Event::Instructions, Event::Cycles]),
                "{g:?}"
            );
            assert!(g.len() <= 4, "{g:?}");
        }
        assert_eq!(
            groups[0][2..],
            [Event::LlcReferences, Event::LlcMisses],
            "{groups:?}"
        );
        // Only what a policy reads: LLC misses alone need one group.
        let only: BTreeSet<CounterKind> = [CounterKind::LlcMisses].into();
        let groups = hardware_groups(&probe, &[lines_in], Some(&core2_pmu()), Some(&only));
        assert_eq!(
            groups,
            vec![vec![Event::Instructions, Event::Cycles, Event::LlcMisses]]
        );
        // No preset for this CPU: pairs, which fit any two-counter PMU.
        let groups = hardware_groups(&probe, &[], None, None);
        assert_eq!(groups.len(), 3);
        assert!(groups.iter().all(|g| g.len() == 2), "{groups:?}");
    }

    #[test]
    fn on_a_matching_cpu_raw_events_are_opened_with_their_config_and_fill_counters() {
        let dir = fixture();
        let q6600 =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cpuinfo-core2-q6600");
        let raw = raw_for(&q6600);
        let lines_in = Event::Raw {
            kind: CounterKind::LinesIn,
            code: crate::perf::RawCode::raw(0x7024),
        };
        assert_eq!(raw, vec![lines_in]);
        let fake = FakePerf::new();
        let mut r = TaskReader::with_raw_events(
            FsRoot::recorded(dir.path()),
            Box::new(fake.clone()),
            host(),
            raw,
        );
        assert!(r.availability().has(CounterKind::LinesIn));
        assert!(!r.availability().has(CounterKind::MemTransactions));
        let id = TaskId {
            pid: 100,
            start_ticks: 500,
        };
        assert_eq!(
            r.read(&[id]).tasks[0].counters.lines_in,
            None,
            "no baseline"
        );
        assert!(fake.opened(100, lines_in), "opened as PERF_TYPE_RAW 0x7024");
        assert_eq!(
            fake.open_groups(100),
            5,
            "software, three hardware pairs and the raw group"
        );
        fake.add(100, lines_in, 1234);
        fake.advance(100, 2_000, 2_000);
        std::fs::write(
            dir.path().join("proc/100/task/100/schedstat"),
            "5000 200 4\n",
        )
        .unwrap();
        let c = r.read(&[id]).tasks.remove(0).counters;
        assert_eq!(c.lines_in, Some(1234));
        assert_eq!(c.mem_transactions, None);
    }

    #[test]
    fn on_another_cpu_raw_events_are_not_opened_and_the_counter_stays_missing() {
        let dir = fixture();
        // This development VM's CPU (family 6, model 0xA7).
        let vm = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(vm.path().join("proc")).unwrap();
        std::fs::write(
            vm.path().join("proc/cpuinfo"),
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 167\n",
        )
        .unwrap();
        let raw = raw_for(vm.path());
        assert!(raw.is_empty());
        let fake = FakePerf::new();
        let mut r = TaskReader::with_raw_events(
            FsRoot::recorded(dir.path()),
            Box::new(fake.clone()),
            host(),
            raw,
        );
        r.read(&[TaskId {
            pid: 100,
            start_ticks: 500,
        }]);
        assert_eq!(fake.open_groups(100), 4, "no raw group");
        assert!(!r.availability().has(CounterKind::LinesIn));
        let needs = ecosched_model::Requirements {
            counters: [CounterKind::LinesIn].into(),
            ..Default::default()
        };
        let caps = ecosched_model::Capabilities {
            counters: r.availability().available.clone(),
            power: None,
            affinity: true,
            frequency: false,
            gang: true,
        };
        assert!(needs
            .missing(&caps)
            .join(";")
            .contains("lines into the last-level cache (lines_in)"));
        let why: Vec<_> = r
            .availability()
            .unavailable
            .iter()
            .filter(|(k, _)| *k == CounterKind::LinesIn)
            .collect();
        assert!(why[0].1.contains("model-specific event"), "{why:?}");
    }
}
