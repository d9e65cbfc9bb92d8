//! # ecosched-model
//!
//! The vocabulary every other ecosched crate speaks: CPU sets, topology,
//! task identity, per-task and per-CPU samples, snapshots, plans, traces,
//! capabilities and metrics. It never touches the operating system (but
//! for [`user_file`], the one bounded way every crate reads and writes the
//! files a user names), so policies built on it run unchanged against a
//! real machine or the simulator.
//!
//! ```
//! use ecosched_model::cpuset::CpuSet;
//!
//! let set = CpuSet::parse_list("0-3,8").unwrap();
//! assert_eq!(set.len(), 5);
//! assert_eq!(set.to_list(), "0-3,8");
//! ```

pub mod attribution;
pub mod avcal;
pub mod calibration;
pub mod capability;
pub mod cpuset;
pub mod metrics;
pub mod plan;
pub mod platform;
pub mod pmu;
pub mod sample;
pub mod schedule;
pub mod snapshot;
pub mod stats;
pub mod task;
pub mod topology;
pub mod trace;
pub mod user_file;

pub use calibration::Calibration;
pub use capability::{Capabilities, Need, Requirements, Shortfall, Verdict};
pub use cpuset::{CpuId, CpuSet};
pub use metrics::{Comparison, PatelComparison, PatelMetrics, RunMetrics, TaskMetrics};
pub use plan::{Epp, FreqSetting, GangAction, GangGroup, GangSchedule, GangSlot, Governor, Plan};
pub use platform::{ApplyReport, Platform, PlatformError};
pub use pmu::{PmuEvent, PmuSpec, PmuTable, Via};
pub use sample::{
    CoreTypeCounts, CounterKind, Counters, CpuSample, LoadAvg, Meter, PowerSample, PowerSource,
    TaskSample,
};
pub use snapshot::Snapshot;
pub use stats::{PolicyStats, StatKind, StatSpec, StatValue, TypedStats};
pub use task::{ProcessId, TaskId, TaskState};
pub use topology::{FreqDomainId, Topology};
pub use trace::{Step, Trace, TraceHeader};
