//! Model-specific PMU events from a machine preset: when this CPU is the
//! one a preset's [`PmuSpec`] describes (same pmu-events CPU id, read from
//! `/proc/cpuinfo`), the preset's events that carry a raw
//! `perf_event_attr.config` are opened as `PERF_TYPE_RAW` ([`Event::Raw`]),
//! filling counters perf has no generic event for (lines into the L2,
//! memory-bus transactions: PAM's `L` and the activity vectors' bus
//! component). On another CPU the same encoding would count something else
//! entirely, so nothing is opened and the counters stay missing, named.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::perf::{Event, RawCode};
use crate::procfs::cpuinfo::parse_cpuid;
use ecosched_model::PmuSpec;

/// This machine's pmu-events CPU id (`GenuineIntel-6-0F`), from `proc/cpuinfo`.
pub fn cpuid(root: &FsRoot) -> Result<String, LinuxError> {
    let rel = "proc/cpuinfo";
    let text = root.read(rel, "CPU identification")?;
    parse_cpuid(&text).map_err(|e| LinuxError::parse(&root.path(rel), &text, e.reason))
}

/// Which raw events of `spec` to open on a CPU with id `cpuid`.
#[derive(Debug, Clone, PartialEq)]
pub enum RawEvents {
    /// The CPU matches: these events.
    Matched(Vec<Event>),
    /// Not opened, and why (for the start-up notice).
    NotOpened(String),
}

/// Match `spec` against this CPU's id.
pub fn raw_events(spec: &PmuSpec, cpuid: &str) -> RawEvents {
    let Some(want) = &spec.cpuid else {
        return RawEvents::NotOpened(
            "the machine preset's PMU names no CPU id, so its raw events cannot be trusted here"
                .into(),
        );
    };
    if want != cpuid {
        return RawEvents::NotOpened(format!(
            "this CPU is {cpuid}, the preset's raw events are for {want}"
        ));
    }
    RawEvents::Matched(
        spec.events
            .iter()
            .filter_map(|e| {
                e.raw.map(|config| Event::Raw {
                    kind: e.kind,
                    code: RawCode::raw(config),
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ecosched_model::{CounterKind, PmuEvent};

    fn core2() -> PmuSpec {
        PmuSpec {
            cpuid: Some("GenuineIntel-6-0F".into()),
            rmids: None,
            counters: 2,
            fixed: vec![],
            events: vec![
                PmuEvent {
                    kind: CounterKind::Instructions,
                    name: "instructions".into(),
                    raw: None,
                    via: ecosched_model::Via::Perf,
                },
                PmuEvent {
                    kind: CounterKind::LinesIn,
                    name: "L2_LINES_IN.SELF.ANY".into(),
                    raw: Some(0x7024),
                    via: ecosched_model::Via::Perf,
                },
            ],
        }
    }

    #[test]
    fn only_raw_events_of_a_matching_cpu_are_chosen() {
        assert_eq!(
            raw_events(&core2(), "GenuineIntel-6-0F"),
            RawEvents::Matched(vec![Event::Raw {
                kind: CounterKind::LinesIn,
                code: RawCode::raw(0x7024)
            }])
        );
        let RawEvents::NotOpened(why) = raw_events(&core2(), "GenuineIntel-6-A7") else {
            panic!()
        };
        assert!(
            why.contains("GenuineIntel-6-A7") && why.contains("6-0F"),
            "{why}"
        );
        let mut anonymous = core2();
        anonymous.cpuid = None;
        assert!(matches!(
            raw_events(&anonymous, "GenuineIntel-6-0F"),
            RawEvents::NotOpened(_)
        ));
    }

    #[test]
    fn the_cpu_id_is_read_through_the_root() {
        let root = FsRoot::recorded(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cpuinfo-core2-q6600"),
        );
        assert_eq!(cpuid(&root).unwrap(), "GenuineIntel-6-0F");
        let none = FsRoot::recorded("/nonexistent");
        assert!(cpuid(&none).unwrap_err().is_absent());
    }
}
