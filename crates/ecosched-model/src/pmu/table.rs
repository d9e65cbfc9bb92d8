//! The built-in PMU tables: one data file per PMU (`pmu/*.toml` in this
//! crate, embedded at build time), each naming the CPUs it describes by
//! their pmu-events ids and the source of its counters and encodings.
//!
//! Both worlds read the same tables. A simulator machine preset names one
//! (`pmu = "core2"`), so `--observe linux` shows a policy that PMU's
//! events; `ecosched run` looks this CPU's id up here, so the raw events
//! it opens are the ones the table gives for this CPU. A user's own
//! machine file may instead write its PMU inline ([`named_or_inline`]).

use super::{PmuEvent, PmuSpec};
use crate::sample::CounterKind;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;

macro_rules! builtin_tables {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../../pmu/", $name, ".toml")))),*]
    };
}

/// The built-in tables: (name, TOML), the name being the file's stem.
pub const TABLES: &[(&str, &str)] = builtin_tables!(
    "core2",
    "nehalem",
    "k10",
    "skx",
    "icx",
    "spr",
    "alderlake",
    "zen2",
    "zen3",
    "zen4",
    "neoverse-n1",
);

/// One PMU as its data file describes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PmuTable {
    /// One line: the microarchitecture and its counters.
    pub description: String,
    /// Where the counters and encodings come from (the vendor manual's
    /// section, the kernel's pmu-events table), so each can be checked.
    pub source: String,
    /// The CPUs with this PMU, as the kernel's pmu-events map names them
    /// (`<vendor>-<family>-<model>` from `/proc/cpuinfo`, e.g.
    /// `GenuineIntel-6-0F`). Raw encodings are trusted only on these.
    pub cpuids: Vec<String>,
    /// General-purpose counters per CPU.
    pub counters: u32,
    /// Events counted on dedicated fixed counters.
    #[serde(default)]
    pub fixed: Vec<CounterKind>,
    /// Every hardware event the PMU can count for a task.
    pub events: Vec<PmuEvent>,
    /// resctrl monitoring IDs (RMIDs) of the CPU, where it has cache or
    /// memory-bandwidth monitoring ([`PmuSpec::rmids`]).
    #[serde(default)]
    pub rmids: Option<u32>,
}

/// Why a built-in table could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PmuTableError {
    /// No table has this name.
    #[error("no built-in PMU table is named {name:?}; the built-in ones are {known}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names there are, comma-separated.
        known: String,
    },
    /// A built-in table's file does not parse.
    #[error("built-in PMU table {name} (pmu/{name}.toml): {message}")]
    Malformed {
        /// The table.
        name: String,
        /// The parser's message, with line and column.
        message: String,
    },
}

impl PmuTable {
    /// The built-in table named `name`.
    pub fn builtin(name: &str) -> Result<PmuTable, PmuTableError> {
        let unknown = || PmuTableError::Unknown {
            name: name.to_string(),
            known: names(),
        };
        let (name, text) = TABLES
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(unknown)?;
        parse(name, text)
    }

    /// The built-in table that lists `cpuid`, with its name; `None` when
    /// no table knows this CPU.
    pub fn for_cpuid(cpuid: &str) -> Result<Option<(&'static str, PmuTable)>, PmuTableError> {
        for (name, text) in TABLES {
            let table = parse(name, text)?;
            if table.cpuids.iter().any(|c| c == cpuid) {
                return Ok(Some((name, table)));
            }
        }
        Ok(None)
    }

    /// The PMU as a machine carries it. `cpuid` is the CPU it was matched
    /// to, if any: only then does `LinuxPlatform` open the raw events.
    pub fn spec(&self, cpuid: Option<&str>) -> PmuSpec {
        PmuSpec {
            cpuid: cpuid.map(str::to_string),
            counters: self.counters,
            fixed: self.fixed.clone(),
            events: self.events.clone(),
            rmids: self.rmids,
        }
    }
}

/// The built-in tables' names, comma-separated.
fn names() -> String {
    TABLES
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse(name: &str, text: &str) -> Result<PmuTable, PmuTableError> {
    toml::from_str(text).map_err(|e| PmuTableError::Malformed {
        name: name.to_string(),
        message: e.to_string().trim().to_string(),
    })
}

/// For `#[serde(deserialize_with = "…")]` on an `Option<PmuSpec>` field of
/// a machine description: the PMU written as a built-in table's name
/// (`pmu = "core2"`), or inline as a table of [`PmuSpec`]'s fields for a
/// machine no built-in table describes. A named table carries no CPU id:
/// a simulated machine is matched to no real CPU.
pub fn named_or_inline<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PmuSpec>, D::Error> {
    d.deserialize_any(NamedOrInline).map(Some)
}

struct NamedOrInline;

impl<'de> Visitor<'de> for NamedOrInline {
    type Value = PmuSpec;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the name of a built-in PMU table ({}) or a table with counters and events",
            names()
        )
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<PmuSpec, E> {
        PmuTable::builtin(name)
            .map(|t| t.spec(None))
            .map_err(E::custom)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PmuSpec, A::Error> {
        PmuSpec::deserialize(de::value::MapAccessDeserializer::new(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn all() -> Vec<(&'static str, PmuTable)> {
        TABLES
            .iter()
            .map(|(n, _)| (*n, PmuTable::builtin(n).unwrap()))
            .collect()
    }

    #[test]
    fn every_table_parses_and_names_its_cpus_and_source() {
        for (name, t) in all() {
            assert!(!t.cpuids.is_empty(), "{name}: no cpuids");
            assert!(!t.source.trim().is_empty(), "{name}: no source");
            assert!(t.counters >= 1, "{name}: no general-purpose counter");
        }
    }

    /// A file in `pmu/` that is not listed is silently missing from the
    /// program; a name listed twice or with another file's text would
    /// shadow one.
    #[test]
    fn every_table_file_is_listed_and_every_listed_name_is_its_file() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("pmu");
        let files: BTreeSet<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        let listed: BTreeSet<String> = TABLES.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(listed.len(), TABLES.len(), "a table is listed twice");
        assert_eq!(files, listed, "pmu/*.toml against TABLES");
        for (name, text) in TABLES {
            let on_disk = std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap();
            assert_eq!(*text, on_disk, "{name}: its text is not pmu/{name}.toml");
        }
    }

    #[test]
    fn no_cpu_is_listed_by_two_tables() {
        let mut seen = BTreeSet::new();
        for (name, t) in all() {
            for id in &t.cpuids {
                assert!(seen.insert(id.clone()), "{name}: {id} is listed twice");
            }
        }
    }

    #[test]
    fn each_event_kind_appears_once_and_fixed_ones_are_events() {
        for (name, t) in all() {
            let kinds: BTreeSet<CounterKind> = t.events.iter().map(|e| e.kind).collect();
            assert_eq!(kinds.len(), t.events.len(), "{name}: a kind twice");
            for k in &t.fixed {
                assert!(kinds.contains(k), "{name}: fixed {k:?} is not an event");
            }
        }
    }

    #[test]
    fn a_cpu_finds_its_table_and_its_raw_events() {
        let (name, t) = PmuTable::for_cpuid("GenuineIntel-6-17").unwrap().unwrap();
        assert_eq!(name, "core2");
        let spec = t.spec(Some("GenuineIntel-6-17"));
        assert_eq!(spec.cpuid.as_deref(), Some("GenuineIntel-6-17"));
        assert_eq!(spec.event(CounterKind::LinesIn).unwrap().raw, Some(0x7024));
        assert_eq!(
            spec.event(CounterKind::MemTransactions).unwrap().raw,
            Some(0xE06F)
        );
        assert_eq!(
            PmuTable::for_cpuid("AuthenticAMD-16-09")
                .unwrap()
                .unwrap()
                .0,
            "k10"
        );
        assert!(PmuTable::for_cpuid("GenuineIntel-6-A7").unwrap().is_none());
    }

    #[test]
    fn an_unknown_name_lists_the_tables() {
        let e = PmuTable::builtin("core3").unwrap_err().to_string();
        assert!(
            e.contains("core3") && e.contains("core2, nehalem, k10, "),
            "{e}"
        );
    }

    #[derive(Debug, Deserialize)]
    struct Machine {
        #[serde(default, deserialize_with = "named_or_inline")]
        pmu: Option<PmuSpec>,
    }

    #[test]
    fn a_machine_names_a_table_or_writes_its_own() {
        let named: Machine = toml::from_str("pmu = \"nehalem\"").unwrap();
        let nehalem = PmuTable::builtin("nehalem").unwrap().spec(None);
        assert_eq!(named.pmu, Some(nehalem));
        let inline: Machine = toml::from_str(
            "[pmu]\ncounters = 3\nevents = [{ kind = \"cycles\", name = \"cycles\" }]\n",
        )
        .unwrap();
        let pmu = inline.pmu.unwrap();
        assert_eq!((pmu.counters, pmu.events.len(), pmu.cpuid), (3, 1, None));
        let none: Machine = toml::from_str("").unwrap();
        assert_eq!(none.pmu, None);
        let e = toml::from_str::<Machine>("pmu = \"core3\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("core3") && e.contains("core2"), "{e}");
        let e = toml::from_str::<Machine>("[pmu]\ncounters = 3\nevnts = []\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("evnts"), "{e}");
    }
}
