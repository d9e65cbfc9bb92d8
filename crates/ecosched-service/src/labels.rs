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

/// One meter zone (`package-0`, `psys`, `package (estimated)`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ZoneLabels {
    /// The zone.
    pub zone: String,
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
