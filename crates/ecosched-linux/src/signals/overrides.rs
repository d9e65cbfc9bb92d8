//! A user's `[events]` table (in `ecosched run --config` or the daemon's
//! configuration): the event to count for a counter kind on this machine,
//! replacing what the built-in tables say. A value is a libpfm4 event name
//! (`L2_LINES_IN:ALL`) or a raw encoding (`raw:0x1ff1`).
//!
//! ```toml
//! [events]
//! lines_in = "L2_LINES_IN:ALL"
//! mem_transactions = "raw:0x412e"
//! ```

use ecosched_model::CounterKind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The counter kinds an override may name: the hardware events perf
/// counts (LLC occupancy is a resctrl level, the software ones are read
/// from procfs).
pub const OVERRIDABLE: [CounterKind; 8] = CounterKind::PERF_HARDWARE;

/// The `[events]` table of one configuration file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventOverrides {
    /// The file the table is in, for error messages.
    pub file: PathBuf,
    /// Event text per kind, as written.
    pub events: BTreeMap<CounterKind, String>,
}

/// A bad `[events]` entry, located.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: key `events.{key}`: {message}", file.display())]
pub struct OverrideError {
    /// The configuration file.
    pub file: PathBuf,
    /// The key under `[events]`.
    pub key: String,
    /// What is wrong (libpfm4's own message for an event it cannot encode).
    pub message: String,
}

impl EventOverrides {
    /// Check an `[events]` table as read from `file`: every key a counter
    /// kind perf counts, every value a non-empty string.
    pub fn from_table(
        file: &Path,
        table: &BTreeMap<String, String>,
    ) -> Result<EventOverrides, OverrideError> {
        let mut events = BTreeMap::new();
        for (key, value) in table {
            let fail = |message: String| OverrideError {
                file: file.to_path_buf(),
                key: key.clone(),
                message,
            };
            let kind = OVERRIDABLE
                .into_iter()
                .find(|k| kind_name(*k) == *key)
                .ok_or_else(|| {
                    let names: Vec<String> = OVERRIDABLE.into_iter().map(kind_name).collect();
                    fail(format!(
                        "not a counter kind perf counts; the kinds are {}",
                        names.join(", ")
                    ))
                })?;
            let value = value.trim();
            if value.is_empty() {
                return Err(fail("the event is empty".into()));
            }
            events.insert(kind, value.to_string());
        }
        Ok(EventOverrides {
            file: file.to_path_buf(),
            events,
        })
    }

    /// The error for `kind`'s entry.
    pub fn error(&self, kind: CounterKind, message: String) -> OverrideError {
        OverrideError {
            file: self.file.clone(),
            key: kind_name(kind),
            message,
        }
    }
}

/// A kind's name as configuration files write it (`lines_in`).
pub fn kind_name(kind: CounterKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{kind:?}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn table(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn keys_are_kinds_and_a_wrong_one_is_located() {
        let f = Path::new("/etc/ecosched/run.toml");
        let o = EventOverrides::from_table(f, &table(&[("lines_in", "L2_LINES_IN:ALL")])).unwrap();
        assert_eq!(o.events[&CounterKind::LinesIn], "L2_LINES_IN:ALL");
        let e = EventOverrides::from_table(f, &table(&[("lines_inn", "X")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/etc/ecosched/run.toml: key `events.lines_inn`: not a counter kind")
                && e.contains("mem_transactions"),
            "{e}"
        );
        let e = EventOverrides::from_table(f, &table(&[("llc_occupancy", "X")])).unwrap_err();
        assert_eq!(e.key, "llc_occupancy");
        let e = EventOverrides::from_table(f, &table(&[("cycles", " ")])).unwrap_err();
        assert!(e.message.contains("empty"), "{e}");
    }
}
