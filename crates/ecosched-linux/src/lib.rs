//! # ecosched-linux
//!
//! The real-machine side of ecosched: everything that reads or writes the
//! kernel lives here, behind the same `Platform` trait the simulator
//! implements, so a policy cannot tell the two apart.
//!
//! Every reader takes an [`FsRoot`], so the crate is tested against recorded
//! machines; every change to the machine is journalled before it is made so
//! that it can be undone after a crash.

pub mod affinity;
pub mod avcal;
pub mod bench;
pub mod cgroup;
pub mod cpufreq;
pub mod cpustat;
pub mod error;
pub mod features;
pub mod freezer;
pub mod fsroot;
pub mod gang;
pub mod hints;
pub mod identity;
pub mod journal;
pub mod limits;
pub mod managers;
pub mod mounts;
pub mod offer;
#[cfg(test)]
mod parser_props;
pub mod perf;
pub mod platform;
pub mod pmu;
pub mod power;
pub mod procfs;
pub mod pstate;
pub mod run_cost;
pub mod runcgroup;
pub mod signals;
pub mod spawn;
pub mod switches;
pub mod tasks;
pub mod topology;

pub use error::LinuxError;
pub use fsroot::FsRoot;
