//! The signal resolver: for each counter kind (by meaning: lines into the
//! shared cache, memory transactions, LLC occupancy, …) where this machine
//! gets it, or why it cannot.
//!
//! Sources, tried in this order for each kind:
//! 1. the user's `[events]` override ([`overrides`]): what the operator
//!    writes wins, and a name libpfm4 cannot encode is an error before
//!    anything starts;
//! 2. resctrl monitoring ([`resctrl`]) where the kernel has it mounted:
//!    LLC occupancy from CMT, memory transactions from MBM's bytes divided
//!    by the line size;
//! 3. the built-in PMU table of this CPU (matched by its pmu-events id):
//!    a vendor name encoded by libpfm4 for the running PMU
//!    ([`encoder`]), a name the kernel lists under sysfs (Arm,
//!    [`sysfs_events`]), or a raw encoding written in the table, trusted
//!    only on the CPUs it lists;
//! 4. perf's generic events (instructions, cycles, LLC and L1D accesses
//!    and misses), which every PMU driver maps itself.
//!
//! ```text
//! encoder        names to perf encodings: libpfm4, raw:0x…, a fake
//! sysfs_events   kernel-named events under /sys/bus/event_source
//! resctrl        L3 monitoring: features, RMIDs, a group's readings
//! overrides      the [events] table, checked and located
//! resolve        the order above, giving a Resolution
//! ```

pub mod encoder;
pub mod overrides;
pub mod resctrl;
mod resolve;
pub mod sysfs_events;

pub use encoder::{EventEncoder, FakeEncoder};
pub use overrides::{EventOverrides, OverrideError};
pub use resctrl::ResctrlInfo;
pub use resolve::{resolve, resolve_live, Inputs};

use crate::perf::{Event, RawCode};
use ecosched_model::{CounterKind, PmuSpec};
use std::collections::BTreeMap;

/// Where a perf-counted kind's encoding comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodedBy {
    /// The user's `[events]` entry.
    Override,
    /// libpfm4, from the vendor name in the table.
    Libpfm,
    /// The kernel's sysfs event list of this PMU.
    Sysfs {
        /// The PMU (`armv8_pmuv3_0`).
        pmu: String,
    },
    /// The table's raw encoding, on a CPU the table lists.
    Table,
}

/// How one counter kind is had on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// A model-specific perf event.
    Encoded {
        /// The event's name as written (table or override).
        name: String,
        /// Who encoded it.
        by: EncodedBy,
        /// The encoding.
        code: RawCode,
    },
    /// One of perf's generic events.
    Generic {
        /// Its perf name.
        name: String,
    },
    /// resctrl monitoring of the task's monitoring group.
    Resctrl {
        /// The `mon_data` file (`llc_occupancy`, `mbm_total_bytes`).
        feature: &'static str,
    },
    /// Not on this machine.
    Missing {
        /// Why, for the start-up notice.
        why: String,
    },
}

/// Every hardware counter kind, resolved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resolution {
    /// The built-in table this CPU matched, by name.
    pub table: Option<String>,
    /// That table as a PMU (counters, fixed events), with the CPU id.
    pub pmu: Option<PmuSpec>,
    /// Each kind's source.
    pub kinds: BTreeMap<CounterKind, Resolved>,
    /// Why a source was passed over (libpfm4 missing, resctrl absent, an
    /// event the encoder refused): reported once at start.
    pub notes: Vec<String>,
    /// The resctrl monitoring on offer, when a kind uses it.
    pub resctrl: Option<ResctrlInfo>,
}

impl Resolution {
    /// The model-specific perf events to open.
    pub fn perf_events(&self) -> Vec<Event> {
        self.kinds
            .iter()
            .filter_map(|(kind, r)| match r {
                Resolved::Encoded { code, .. } => Some(Event::Raw {
                    kind: *kind,
                    code: *code,
                }),
                _ => None,
            })
            .collect()
    }

    /// The kinds read from resctrl, with their `mon_data` file.
    pub fn resctrl_kinds(&self) -> Vec<(CounterKind, &'static str)> {
        self.kinds
            .iter()
            .filter_map(|(kind, r)| match r {
                Resolved::Resctrl { feature } => Some((*kind, *feature)),
                _ => None,
            })
            .collect()
    }

    /// One line per kind (`lines_in: L2_LINES_IN:ALL via libpfm4 (r1ff1)`),
    /// then the notes: what `ecosched run` and `topology` print.
    pub fn describe(&self) -> Vec<String> {
        let mut out = vec![match &self.table {
            Some(t) => format!("PMU table: {t}"),
            None => "PMU table: none for this CPU".to_string(),
        }];
        for (kind, r) in &self.kinds {
            let kind = overrides::kind_name(*kind);
            out.push(match r {
                Resolved::Encoded { name, by, code } => {
                    let by = match by {
                        EncodedBy::Override => "the [events] override".to_string(),
                        EncodedBy::Libpfm => "libpfm4".to_string(),
                        EncodedBy::Sysfs { pmu } => format!("sysfs ({pmu})"),
                        EncodedBy::Table => "the table's raw encoding".to_string(),
                    };
                    format!("{kind}: {name} via {by} ({code})")
                }
                Resolved::Generic { name } => format!("{kind}: perf generic {name}"),
                Resolved::Resctrl { feature } => format!("{kind}: resctrl {feature}"),
                Resolved::Missing { why } => format!("{kind}: missing ({why})"),
            });
        }
        out.extend(self.notes.iter().cloned());
        out
    }
}
