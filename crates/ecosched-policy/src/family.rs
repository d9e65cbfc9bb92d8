//! What a catalogue entry is: a family of policies sharing one typed
//! parameter struct, one typed statistics struct and one paper, and its
//! variants.
//!
//! ```text
//! Family (hilo)        params: HiloParams::SPEC   stats: HiloStats::SPEC
//!   ├─ Variant hilo            defaults: —
//!   ├─ Variant hilo-nospare    defaults: spare=0
//!   └─ Variant hilo-ondemand   defaults: spare=0, frequencies left to ondemand
//! ```
//!
//! A family's [`PolicyKind`] says where it runs: on one machine (Linux or
//! the simulator), across the nodes of a simulated cluster, or as a search
//! over the simulator. Callers ask the kind instead of matching names.

use crate::params::{ParamDefault, ParamSpec, Params, TypedParams};
use crate::{Policy, PolicyError};
use ecosched_model::{Requirements, StatSpec};

/// Where a policy runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyKind {
    /// Decides from one machine's snapshots: runs on Linux and in the
    /// simulator alike.
    Local,
    /// Balances across the nodes of a cluster scenario (simulator).
    Cluster,
    /// Searches static configurations by simulating each (simulator,
    /// `compare` only).
    Search,
}

impl PolicyKind {
    /// Its name in listings.
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Local => "local",
            PolicyKind::Cluster => "cluster",
            PolicyKind::Search => "search",
        }
    }
}

/// Policies that share one parameter struct, one statistics struct and one
/// paper.
#[derive(Debug)]
pub struct Family {
    /// Its name (the first variant's, or a group name such as `governors`).
    pub name: &'static str,
    /// One line: what it is.
    pub title: &'static str,
    /// Where it comes from: paper and section, or the kernel.
    pub source: &'static str,
    /// What it decides and from which signals, for the policy reference.
    pub decides: &'static str,
    /// Where it runs.
    pub kind: PolicyKind,
    /// Its parameters, in groups (a wrapper's own first, then those it
    /// passes on).
    pub params: &'static [&'static [ParamSpec]],
    /// Its statistics.
    pub stats: &'static [StatSpec],
    /// The policies of the family.
    pub variants: &'static [Variant],
}

/// How a variant is built from its parameters.
pub type Builder = fn(&'static Variant, &Params) -> Result<Box<dyn Policy>, PolicyError>;

/// One policy: a family's code with some defaults of its own.
#[derive(Debug)]
pub struct Variant {
    /// Registry name (`--policy NAME`).
    pub name: &'static str,
    /// One line: how it differs within its family.
    pub summary: &'static str,
    /// Defaults that differ from the family's.
    pub defaults: &'static [(&'static str, &'static str)],
    /// Family parameters this variant does not take.
    pub without: &'static [&'static str],
    /// Values for the parameters it requires, used only to show what it
    /// needs from a machine (`ecosched policies`).
    pub example: &'static [(&'static str, &'static str)],
    /// Build it.
    pub build: Builder,
}

impl Variant {
    /// `params` checked against this variant's spec and typed.
    pub fn typed<T: TypedParams>(&self, params: &Params) -> Result<T, PolicyError> {
        let resolved = params.resolve(self.name, T::SPEC, self.defaults, self.without)?;
        T::from_resolved(&resolved)
    }

    /// Whether this variant takes `key`.
    pub fn takes(&self, family: &Family, key: &str) -> bool {
        !self.without.contains(&key) && family.params.iter().any(|g| g.iter().any(|s| s.key == key))
    }

    /// The default of `key` for this variant, as text: its own, or the
    /// family's.
    pub fn default_of(&self, spec: &ParamSpec) -> ParamDefault {
        match self.defaults.iter().find(|(k, _)| *k == spec.key) {
            Some((_, v)) => ParamDefault::Value(v),
            None => spec.default,
        }
    }
}

/// What a policy needs of a machine, for listings: the requirements it
/// declares when built with its defaults, and where it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Needs {
    /// Where it runs.
    pub kind: PolicyKind,
    /// What it reads and sets (`None` for a search, which builds no
    /// policy).
    pub requirements: Option<Requirements>,
}
