//! libpfm4's encodings for CPUs this machine is not, through
//! `LIBPFM_FORCE_PMU` (the library's own test mode): each vendor event the
//! tables name against the vendor's published event select and unit mask,
//! and every libpfm-named event of every table against its PMU. libpfm4
//! reads the variable once per process, so each PMU is encoded in a child
//! process of its own (`children::libpfm_encode`).

use crate::support;
use ecosched_model::{PmuTable, Via};
use std::collections::BTreeMap;

/// The libpfm4 PMU each table's events are encoded for.
const PMU_OF_TABLE: [(&str, &str); 7] = [
    ("skx", "skx"),
    ("icx", "icx"),
    ("spr", "spr"),
    ("zen2", "amd64_fam17h_zen2"),
    ("zen3", "amd64_fam19h_zen3"),
    ("zen4", "amd64_fam19h_zen4"),
    // Tables that name no libpfm4 event: Core 2, Nehalem and K10 (raw
    // encodings or none), Alder Lake (raw: libpfm4 4.13 has no
    // Alder Lake PMU), Neoverse N1 (sysfs names).
    ("core2", ""),
];

/// `event -> (type, config, config1)`, or the error text, for `events`
/// encoded as libpfm4 does for `pmu`.
fn encode_for(pmu: &str, events: &[&str]) -> BTreeMap<String, Result<(u32, u64, u64), String>> {
    let out = support::child("libpfm_encode")
        .arg("--nocapture")
        .env("LIBPFM_FORCE_PMU", pmu)
        .env("LIBPFM_EVENTS", events.join("\n"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{pmu}: child failed\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ENCODED "))
        .map(|l| {
            let (name, rest) = l.split_once('\t').unwrap();
            let value = match rest.strip_prefix("error ") {
                Some(e) => Err(e.to_string()),
                None => {
                    let n: Vec<u64> = rest
                        .split(' ')
                        .map(|x| u64::from_str_radix(x, 16).unwrap())
                        .collect();
                    Ok((u32::try_from(n[0]).unwrap(), n[1], n[2]))
                }
            };
            (name.to_string(), value)
        })
        .collect::<BTreeMap<_, _>>();
    for event in events {
        assert!(
            got.contains_key(*event),
            "{pmu}: {event} not encoded\n{stdout}"
        );
    }
    got
}

/// The child's side: encode `LIBPFM_EVENTS` (one a line) and print each.
pub fn encode_child() {
    let lib = ecosched_libpfm::LibPfm::load().unwrap();
    for name in std::env::var("LIBPFM_EVENTS").unwrap().lines() {
        match lib.encode(name) {
            Ok(e) => println!(
                "ENCODED {name}\t{:x} {:x} {:x}",
                e.pmu_type, e.config, e.config1
            ),
            Err(e) => println!("ENCODED {name}\terror {}", e.message),
        }
    }
}

/// `PERF_TYPE_RAW`: a forced PMU is the core PMU.
const RAW: u32 = 4;

/// (PMU, event, vendor config = umask << 8 | event select, where it is
/// published).
const VENDOR: [(&str, &str, u64, &str); 12] = [
    ("skx", "L2_LINES_IN:ALL", 0x1ff1, "Intel perfmon SKX skylakex_core.json: L2_LINES_IN.ALL EventCode 0xF1 UMask 0x1F"),
    ("skx", "LONGEST_LAT_CACHE:MISS", 0x412e, "Intel SDM vol. 3B table 20-1 (architectural LLC misses): event 0x2E umask 0x41"),
    ("icx", "L2_LINES_IN:ALL", 0x1ff1, "Intel perfmon ICX icelakex_core.json: L2_LINES_IN.ALL EventCode 0xF1 UMask 0x1F"),
    ("icx", "LONGEST_LAT_CACHE:MISS", 0x412e, "Intel SDM vol. 3B table 20-1: event 0x2E umask 0x41"),
    ("spr", "L2_LINES_IN:ALL", 0x1f25, "Intel perfmon SPR sapphirerapids_core.json: L2_LINES_IN.ALL EventCode 0x25 UMask 0x1F"),
    ("spr", "LONGEST_LAT_CACHE:MISS", 0x412e, "Intel SDM vol. 3B table 20-1: event 0x2E umask 0x41"),
    ("amd64_fam17h_zen2", "CORE_TO_L2_CACHEABLE_REQUEST_ACCESS_STATUS:LS_RD_BLK_C:IC_FILL_MISS", 0x0964, "AMD PPR 17h model 31h PMCx064 UnitMask bits 3 (LsRdBlkC) and 0 (IcFillMiss); kernel amdzen2/cache.json l2_cache_req_stat.ic_dc_miss_in_l2 0x64 umask 0x09"),
    ("amd64_fam17h_zen2", "DATA_CACHE_REFILLS_FROM_SYSTEM:LS_MABRESP_LCL_DRAM:LS_MABRESP_RMT_DRAM", 0x4843, "AMD PPR 17h model 31h PMCx043 UnitMask bits 3 (LsMabRespLclDram) and 6 (LsMabRespRmtDram)"),
    ("amd64_fam19h_zen3", "CORE_TO_L2_CACHEABLE_REQUEST_ACCESS_STATUS:LS_RD_BLK_C:IC_FILL_MISS", 0x0964, "AMD PPR 19h model 01h PMCx064 UnitMask 0x09; kernel amdzen3/cache.json l2_cache_req_stat.ic_dc_miss_in_l2"),
    ("amd64_fam19h_zen3", "ANY_DATA_CACHE_FILLS_FROM_SYSTEM:MEM_IO_LCL:MEM_IO_RMT", 0x4844, "AMD PPR 19h model 01h PMCx044 UnitMask bits 3 (MemIoLcl) and 6 (MemIoRmt)"),
    ("amd64_fam19h_zen4", "CORE_TO_L2_CACHEABLE_REQUEST_ACCESS_STATUS:LS_RD_BLK_C:IC_FILL_MISS", 0x0964, "AMD PPR 19h model 11h PMCx064 UnitMask 0x09; kernel amdzen4/cache.json l2_cache_req_stat.ic_dc_miss_in_l2"),
    ("amd64_fam19h_zen4", "ANY_DATA_CACHE_FILLS_FROM_SYSTEM:DRAM_IO_NEAR:DRAM_IO_FAR", 0x4844, "AMD PPR 19h model 11h PMCx044 UnitMask bits 3 (DramIoNear) and 6 (DramIoFar)"),
];

/// libpfm4 encodes each vendor event for its forced PMU as the vendor
/// publishes it. Live tier: it needs the Debian package libpfm4
/// (`scripts/install-test-deps`), which a plain `cargo test` does not have.
#[test]
#[ignore = "live: libpfm4"]
fn forced_pmus_encode_as_the_vendors_publish() {
    let mut by_pmu: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (pmu, event, _, _) in VENDOR {
        by_pmu.entry(pmu).or_default().push(event);
    }
    let families = by_pmu.len();
    assert!(families >= 6, "{families} CPU families");
    for (pmu, events) in by_pmu {
        let got = encode_for(pmu, &events);
        for (p, event, config, source) in VENDOR.iter().filter(|v| v.0 == pmu) {
            // For perf, libpfm4 leaves the privilege and enable bits to
            // the kernel: the config is the vendor's umask and select.
            let (ty, cfg, cfg1) = got[*event]
                .clone()
                .unwrap_or_else(|e| panic!("{p} {event}: {e}"));
            assert_eq!(
                (ty, cfg, cfg1),
                (RAW, *config, 0),
                "{p} {event}: vendor {config:#x} ({source}), libpfm4 {cfg:#x}"
            );
        }
    }
    // A name the PMU lacks is refused with libpfm4's message.
    let got = encode_for("spr", &["L2_LINES_INN:ALL"]);
    assert_eq!(got["L2_LINES_INN:ALL"], Err("event not found".to_string()));
}

/// Every libpfm4-named event of every built-in PMU table encodes for its
/// PMU. Live tier for the same reason: it needs libpfm4 installed.
#[test]
#[ignore = "live: libpfm4"]
fn every_libpfm_event_of_every_table_encodes_for_its_pmu() {
    let pmus: BTreeMap<&str, &str> = PMU_OF_TABLE.into_iter().collect();
    for (name, _) in ecosched_model::pmu::table::TABLES {
        let table = PmuTable::builtin(name).unwrap();
        let events: Vec<&str> = table
            .events
            .iter()
            .filter(|e| e.via == Via::Libpfm)
            .map(|e| e.name.as_str())
            .collect();
        if events.is_empty() {
            continue;
        }
        let pmu = pmus
            .get(name)
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| panic!("table {name} names libpfm4 events but no PMU here"));
        for (event, result) in encode_for(pmu, &events) {
            let (ty, config, _) = result.unwrap_or_else(|e| panic!("{name} ({pmu}) {event}: {e}"));
            assert_eq!(ty, RAW, "{name} {event}");
            assert_ne!(config & 0xff, 0, "{name} {event}: no event select");
        }
    }
}
