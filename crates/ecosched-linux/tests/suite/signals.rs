//! The signal resolver against recorded trees (two resctrl trees, an Arm
//! PMU's sysfs events, the recorded Altra's cpuinfo) with a fake encoder
//! standing in for libpfm4, whose own encodings are checked in
//! `live::libpfm`.

use crate::support;
use ecosched_linux::perf::{Event, RawCode};
use ecosched_linux::signals::resctrl::{read_sum, RESCTRL};
use ecosched_linux::signals::{
    resolve, EncodedBy, EventEncoder, EventOverrides, FakeEncoder, Inputs, ResctrlInfo, Resolution,
    Resolved,
};
use ecosched_linux::FsRoot;
use ecosched_model::CounterKind;
use std::collections::BTreeMap;
use std::path::Path;

const SPR: &str = "GenuineIntel-6-8F";

/// What libpfm4 answers for the spr table's names (checked live).
fn spr_encoder() -> FakeEncoder {
    FakeEncoder::default()
        .with("L2_LINES_IN:ALL", RawCode::raw(0x1f25))
        .with("LONGEST_LAT_CACHE:MISS", RawCode::raw(0x412e))
}

fn run(
    cpuid: &str,
    encoder: Result<&dyn EventEncoder, String>,
    root: &FsRoot,
    overrides: &EventOverrides,
) -> Resolution {
    resolve(&Inputs {
        cpuid: Ok(cpuid.to_string()),
        encoder,
        root,
        resctrl: ResctrlInfo::detect(root),
        overrides,
    })
    .unwrap()
}

fn no_resctrl() -> FsRoot {
    FsRoot::recorded("/nonexistent-recording")
}

#[test]
fn sapphire_rapids_without_resctrl_gets_vendor_events_from_its_table() {
    let enc = spr_encoder();
    let r = run(SPR, Ok(&enc), &no_resctrl(), &EventOverrides::default());
    assert_eq!(r.table.as_deref(), Some("spr"));
    assert_eq!(
        r.kinds[&CounterKind::LinesIn],
        Resolved::Encoded {
            name: "L2_LINES_IN:ALL".into(),
            by: EncodedBy::Libpfm,
            code: RawCode::raw(0x1f25)
        }
    );
    assert!(matches!(
        r.kinds[&CounterKind::Instructions],
        Resolved::Generic { .. }
    ));
    let Resolved::Missing { why } = &r.kinds[&CounterKind::LlcOccupancy] else {
        panic!("{:?}", r.kinds[&CounterKind::LlcOccupancy])
    };
    assert!(why.contains("resctrl is not mounted"), "{why}");
    assert_eq!(
        r.perf_events(),
        vec![
            Event::Raw {
                kind: CounterKind::LinesIn,
                code: RawCode::raw(0x1f25)
            },
            Event::Raw {
                kind: CounterKind::MemTransactions,
                code: RawCode::raw(0x412e)
            },
        ]
    );
    let text = r.describe().join("\n");
    assert!(
        text.contains("lines_in: L2_LINES_IN:ALL via libpfm4 (r1f25)"),
        "{text}"
    );
}

#[test]
fn resctrl_with_mbm_serves_occupancy_and_memory_transactions_first() {
    let root = FsRoot::recorded(support::data("resctrl-goresctrl-xeon-4l3"));
    let info = ResctrlInfo::detect(&root).unwrap();
    assert_eq!(info.num_rmids, 192);
    assert_eq!(info.line_bytes, Some(64));
    let enc = spr_encoder();
    let r = run(SPR, Ok(&enc), &root, &EventOverrides::default());
    assert_eq!(
        r.resctrl_kinds(),
        vec![
            (CounterKind::MemTransactions, "mbm_total_bytes"),
            (CounterKind::LlcOccupancy, "llc_occupancy"),
        ]
    );
    assert_eq!(r.resctrl, Some(info));
    // Summed over the four L3 domains of the recording.
    assert_eq!(
        read_sum(&root, RESCTRL, "llc_occupancy").unwrap(),
        Some(32440320 + 28901376 + 34406400 + 31260672)
    );
    assert_eq!(
        read_sum(&root, RESCTRL, "mbm_total_bytes").unwrap(),
        Some(264830976 + 208404480 + 974782464 + 760479744)
    );
}

#[test]
fn occupancy_without_mbm_leaves_memory_transactions_to_the_pmu() {
    let root = FsRoot::recorded(support::data("resctrl-reconstructed-cmt-only"));
    let enc = spr_encoder();
    let r = run(SPR, Ok(&enc), &root, &EventOverrides::default());
    assert_eq!(
        r.kinds[&CounterKind::LlcOccupancy],
        Resolved::Resctrl {
            feature: "llc_occupancy"
        }
    );
    assert!(matches!(
        r.kinds[&CounterKind::MemTransactions],
        Resolved::Encoded {
            by: EncodedBy::Libpfm,
            ..
        }
    ));
    // A domain still `Unavailable` adds nothing; one with a value counts.
    assert_eq!(
        read_sum(&root, RESCTRL, "llc_occupancy").unwrap(),
        Some(1048576)
    );
    assert_eq!(read_sum(&root, RESCTRL, "mbm_total_bytes").unwrap(), None);
}

#[test]
fn without_libpfm_vendor_events_are_missing_and_say_why() {
    let r = run(
        "AuthenticAMD-25-11",
        Err("libpfm4 (libpfm.so.4) cannot be loaded".into()),
        &no_resctrl(),
        &EventOverrides::default(),
    );
    assert_eq!(r.table.as_deref(), Some("zen4"));
    let Resolved::Missing { why } = &r.kinds[&CounterKind::LinesIn] else {
        panic!()
    };
    assert!(why.contains("libpfm.so.4"), "{why}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("vendor events not encoded")),
        "{:?}",
        r.notes
    );
    // What the encoder refuses is missing too, with its message.
    let r = run(
        "AuthenticAMD-25-11",
        Ok(&FakeEncoder::default()),
        &no_resctrl(),
        &EventOverrides::default(),
    );
    let Resolved::Missing { why } = &r.kinds[&CounterKind::MemTransactions] else {
        panic!()
    };
    assert!(
        why.contains("ANY_DATA_CACHE_FILLS_FROM_SYSTEM") && why.contains("event not found"),
        "{why}"
    );
}

#[test]
fn core2_raw_encodings_are_used_on_their_cpu_and_nothing_on_an_unknown_one() {
    let enc = FakeEncoder::default();
    let r = run(
        "GenuineIntel-6-0F",
        Ok(&enc),
        &no_resctrl(),
        &EventOverrides::default(),
    );
    assert_eq!(
        r.kinds[&CounterKind::LinesIn],
        Resolved::Encoded {
            name: "L2_LINES_IN.SELF.ANY".into(),
            by: EncodedBy::Table,
            code: RawCode::raw(0x7024)
        }
    );
    let r = run(
        "GenuineIntel-6-A7",
        Ok(&enc),
        &no_resctrl(),
        &EventOverrides::default(),
    );
    assert_eq!(r.table, None);
    let Resolved::Missing { why } = &r.kinds[&CounterKind::LinesIn] else {
        panic!()
    };
    assert!(why.contains("no PMU table"), "{why}");
    assert!(matches!(
        r.kinds[&CounterKind::LlcMisses],
        Resolved::Generic { .. }
    ));
}

#[test]
fn neoverse_n1_events_come_from_the_kernels_sysfs_names() {
    // The recorded Altra's cpuinfo names the table.
    let altra = tempfile::tempdir().unwrap();
    support::unpack_tar_bz2(
        &support::data("topology/ampere-altra-2p-q64-30.tar.bz2"),
        altra.path(),
        &|parts| parts.iter().any(|p| p == "cpuinfo"),
    );
    let cpuinfo = FsRoot::recorded(altra.path().join("ampere-altra-2p-q64-30"));
    let id = ecosched_linux::pmu::cpuid(&cpuinfo).unwrap();
    assert_eq!(id, "0x00000000410fd0c0");
    let root = FsRoot::recorded(support::data("sysfs-events-neoverse-n1"));
    let r = run(
        &id,
        Err("not needed".into()),
        &root,
        &EventOverrides::default(),
    );
    assert_eq!(r.table.as_deref(), Some("neoverse-n1"));
    let sysfs = |config| Resolved::Encoded {
        name: String::new(),
        by: EncodedBy::Sysfs {
            pmu: "armv8_pmuv3_0".into(),
        },
        code: RawCode {
            pmu_type: 8,
            config,
            config1: 0,
        },
    };
    let strip = |r: &Resolved| match r {
        Resolved::Encoded { by, code, .. } => Resolved::Encoded {
            name: String::new(),
            by: by.clone(),
            code: *code,
        },
        other => other.clone(),
    };
    assert_eq!(strip(&r.kinds[&CounterKind::LinesIn]), sysfs(0x17));
    assert_eq!(strip(&r.kinds[&CounterKind::MemTransactions]), sysfs(0x19));
    assert_eq!(strip(&r.kinds[&CounterKind::LlcMisses]), sysfs(0x2a));
    assert!(matches!(
        r.kinds[&CounterKind::LlcOccupancy],
        Resolved::Missing { .. }
    ));
    // libpfm4 is not asked for anything on this table.
    assert!(
        !r.notes.iter().any(|n| n.contains("not needed")),
        "{:?}",
        r.notes
    );
}

fn overrides(pairs: &[(&str, &str)]) -> EventOverrides {
    let table: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    EventOverrides::from_table(Path::new("/etc/ecosched/run.toml"), &table).unwrap()
}

#[test]
fn an_override_wins_and_a_wrong_one_is_a_located_error() {
    let enc = spr_encoder();
    let root = FsRoot::recorded(support::data("resctrl-goresctrl-xeon-4l3"));
    let o = overrides(&[
        ("mem_transactions", "raw:0x412e"),
        ("lines_in", "L2_LINES_IN:ALL"),
    ]);
    let r = run(SPR, Ok(&enc), &root, &o);
    assert_eq!(
        r.kinds[&CounterKind::MemTransactions],
        Resolved::Encoded {
            name: "raw:0x412e".into(),
            by: EncodedBy::Override,
            code: RawCode::raw(0x412e)
        }
    );
    assert!(matches!(
        r.kinds[&CounterKind::LinesIn],
        Resolved::Encoded {
            by: EncodedBy::Override,
            ..
        }
    ));
    let bad = overrides(&[("lines_in", "L2_LINES_INN:ALL")]);
    let e = resolve(&Inputs {
        cpuid: Ok(SPR.into()),
        encoder: Ok(&enc),
        root: &root,
        resctrl: ResctrlInfo::detect(&root),
        overrides: &bad,
    })
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "/etc/ecosched/run.toml: key `events.lines_in`: libpfm4 cannot encode \"L2_LINES_INN:ALL\": event not found"
    );
    let e = resolve(&Inputs {
        cpuid: Ok(SPR.into()),
        encoder: Err("libpfm4 (libpfm.so.4) cannot be loaded".into()),
        root: &root,
        resctrl: ResctrlInfo::detect(&root),
        overrides: &bad,
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("events.lines_in") && e.contains("cannot be loaded"),
        "{e}"
    );
}
