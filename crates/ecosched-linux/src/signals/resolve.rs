//! The resolver's order (see the module above) applied to each hardware
//! counter kind, from inputs a test can script: the CPU id, an encoder,
//! a filesystem root for sysfs, what resctrl offers, the user's overrides.

use super::encoder::{parse_raw, EventEncoder};
use super::overrides::{EventOverrides, OverrideError, OVERRIDABLE};
use super::resctrl::{ResctrlInfo, LLC_OCCUPANCY, MBM_TOTAL_BYTES};
use super::{sysfs_events, EncodedBy, Resolution, Resolved};
use crate::fsroot::FsRoot;
use crate::perf::Event;
use ecosched_model::{CounterKind, PmuEvent, PmuTable, Via};

/// What the resolver looks at.
pub struct Inputs<'a> {
    /// This CPU's pmu-events id, or why it is unknown.
    pub cpuid: Result<String, String>,
    /// libpfm4 (or a fake), or why it cannot be used.
    pub encoder: Result<&'a dyn EventEncoder, String>,
    /// Where sysfs event lists are read.
    pub root: &'a FsRoot,
    /// resctrl monitoring, or why there is none.
    pub resctrl: Result<ResctrlInfo, String>,
    /// The user's `[events]` table.
    pub overrides: &'a EventOverrides,
}

/// Resolve every hardware counter kind. Fails only on an override that
/// cannot be encoded: the user asked for that event, so running without it
/// would be wrong.
pub fn resolve(inputs: &Inputs<'_>) -> Result<Resolution, OverrideError> {
    let mut out = Resolution::default();
    let table = match &inputs.cpuid {
        Ok(id) => match PmuTable::for_cpuid(id) {
            Ok(Some((name, table))) => {
                out.table = Some(name.to_string());
                out.pmu = Some(table.spec(Some(id)));
                Some(table)
            }
            Ok(None) => {
                out.notes.push(format!(
                    "no built-in PMU table lists this CPU ({id}): model-specific events only from [events]"
                ));
                None
            }
            Err(e) => {
                out.notes.push(e.to_string());
                None
            }
        },
        Err(why) => {
            out.notes.push(format!("this CPU's id is unknown ({why})"));
            None
        }
    };
    let wants_encoder = table
        .iter()
        .flat_map(|t| &t.events)
        .any(|e| e.via == Via::Libpfm);
    if let (Err(why), true) = (&inputs.encoder, wants_encoder) {
        out.notes.push(format!("vendor events not encoded: {why}"));
    }
    let wants_resctrl = table
        .iter()
        .flat_map(|t| &t.events)
        .any(|e| e.via == Via::Resctrl);
    if let (Err(why), true) = (&inputs.resctrl, wants_resctrl) {
        out.notes.push(format!("resctrl monitoring unused: {why}"));
    }
    for kind in OVERRIDABLE.into_iter().chain([CounterKind::LlcOccupancy]) {
        let resolved = match inputs.overrides.events.get(&kind) {
            Some(text) => overridden(inputs, kind, text)?,
            None => by_machine(inputs, table.as_ref(), kind),
        };
        if matches!(resolved, Resolved::Resctrl { .. }) {
            out.resctrl = inputs.resctrl.clone().ok();
        }
        out.kinds.insert(kind, resolved);
    }
    Ok(out)
}

/// The user's event for `kind`, encoded, or the located error.
fn overridden(
    inputs: &Inputs<'_>,
    kind: CounterKind,
    text: &str,
) -> Result<Resolved, OverrideError> {
    let fail = |m: String| inputs.overrides.error(kind, m);
    let code = match parse_raw(text) {
        Some(raw) => raw.map_err(fail)?,
        None => {
            let encoder = inputs.encoder.as_ref().map_err(|why| fail(why.clone()))?;
            encoder
                .encode(text)
                .map_err(|m| fail(format!("libpfm4 cannot encode {text:?}: {m}")))?
        }
    };
    Ok(Resolved::Encoded {
        name: text.to_string(),
        by: EncodedBy::Override,
        code,
    })
}

/// `kind` from resctrl, the CPU's table, or perf's generic events, in that
/// order.
fn by_machine(inputs: &Inputs<'_>, table: Option<&PmuTable>, kind: CounterKind) -> Resolved {
    if let Ok(info) = &inputs.resctrl {
        match kind {
            CounterKind::LlcOccupancy if info.has(LLC_OCCUPANCY) => {
                return Resolved::Resctrl {
                    feature: LLC_OCCUPANCY,
                }
            }
            CounterKind::MemTransactions
                if info.has(MBM_TOTAL_BYTES) && info.line_bytes.is_some() =>
            {
                return Resolved::Resctrl {
                    feature: MBM_TOTAL_BYTES,
                }
            }
            _ => {}
        }
    }
    let mut why = Vec::new();
    match table.and_then(|t| t.events.iter().find(|e| e.kind == kind)) {
        Some(event) => match from_table(inputs, event) {
            Ok(r) => return r,
            Err(reason) => why.push(reason),
        },
        None if table.is_some() => why.push("the CPU's PMU table has no event for it".into()),
        None => why.push("no PMU table for this CPU".into()),
    }
    match generic(kind) {
        Some(name) => Resolved::Generic { name },
        None => Resolved::Missing {
            why: why.join("; "),
        },
    }
}

/// The table's event, had its way.
fn from_table(inputs: &Inputs<'_>, event: &PmuEvent) -> Result<Resolved, String> {
    let name = event.name.clone();
    match event.via {
        Via::Libpfm => {
            let encoder = inputs.encoder.as_ref().map_err(|why| why.clone())?;
            let code = encoder
                .encode(&name)
                .map_err(|m| format!("libpfm4 cannot encode {name}: {m}"))?;
            Ok(Resolved::Encoded {
                name,
                by: EncodedBy::Libpfm,
                code,
            })
        }
        Via::Sysfs => {
            let (pmu, code) = sysfs_events::lookup(inputs.root, &name)?;
            Ok(Resolved::Encoded {
                name,
                by: EncodedBy::Sysfs { pmu },
                code,
            })
        }
        Via::Resctrl => Err(match &inputs.resctrl {
            Ok(_) => format!("resctrl does not monitor {name} here"),
            Err(why) => why.clone(),
        }),
        Via::Perf => match event.raw {
            Some(config) => Ok(Resolved::Encoded {
                name,
                by: EncodedBy::Table,
                code: crate::perf::RawCode::raw(config),
            }),
            None => generic(event.kind)
                .map(|name| Resolved::Generic { name })
                .ok_or_else(|| format!("{name} is no perf generic event")),
        },
    }
}

/// perf's generic event for `kind`, if there is one.
fn generic(kind: CounterKind) -> Option<String> {
    Event::HARDWARE
        .into_iter()
        .find(|e| e.counter_kind() == kind)
        .map(Event::perf_name)
}

/// [`resolve`] on this machine (or a recorded one): its CPU id, libpfm4
/// if installed, resctrl if mounted.
pub fn resolve_live(
    root: &FsRoot,
    overrides: &EventOverrides,
) -> Result<Resolution, OverrideError> {
    let libpfm = ecosched_libpfm::LibPfm::load().map_err(|e| e.to_string());
    let encoder: Result<&dyn EventEncoder, String> = match &libpfm {
        Ok(lib) => Ok(lib),
        Err(why) => Err(why.clone()),
    };
    resolve(&Inputs {
        cpuid: crate::pmu::cpuid(root).map_err(|e| e.to_string()),
        encoder,
        root,
        resctrl: ResctrlInfo::detect(root),
        overrides,
    })
}
