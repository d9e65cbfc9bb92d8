//! The label sets and value types of the exporter's series, shared by the
//! machine and group series (`metrics`) and the policies' own series
//! (`policy_series`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use std::sync::atomic::AtomicU64;

/// A counter of a real-valued quantity (joules, seconds).
pub type FloatCounter = Counter<f64, AtomicU64>;
/// A gauge of a real-valued quantity (watts, hertz).
pub type FloatGauge = Gauge<f64, AtomicU64>;

/// One meter domain.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ZoneLabels {
    /// What it covers, named as Kepler and node_exporter name RAPL zones:
    /// `package`, `core`, `uncore`, `dram`, `psys`, or `platform` (a
    /// whole-machine hwmon meter).
    pub zone: String,
    /// The domain as the kernel or driver names it (`package-0`,
    /// `package-1/dram`, `amd_energy Esocket0`, `package (estimated)`):
    /// one series per domain.
    pub domain: String,
    /// `rapl`, `hwmon` or `estimate`.
    pub source: String,
}

/// One CPU.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CpuLabels {
    /// The kernel's CPU number.
    pub cpu: String,
}

/// The build.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    /// The crate version.
    pub version: String,
    /// The git revision it was built from.
    pub revision: String,
    /// The compiler (`rustc --version`).
    pub rustc: String,
}

/// One group.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupLabels {
    /// The group's name.
    pub group: String,
}

/// One group's energy, by source.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupSourceLabels {
    /// The group's name.
    pub group: String,
    /// `rapl`, `hwmon` or `estimate`.
    pub source: String,
}

/// One group's decisions under one policy.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupPolicyLabels {
    /// The group's name.
    pub group: String,
    /// The policy.
    pub policy: String,
}

/// One group in one state.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GroupStateLabels {
    /// The group's name.
    pub group: String,
    /// `starting`, `running`, `paused`, `failed` or `waiting`.
    pub state: String,
}

/// A kind of group failure.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    /// `start` (before the policy's first plan was applied) or `run`.
    pub stage: String,
    /// `policy`, `platform` or `daemon`: what failed.
    pub cause: String,
}
