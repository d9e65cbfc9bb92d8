//! The integration tests of ecosched-linux, in one binary, by tier.
//!
//! Fast (the default; no root, no system packages: recorded machines and
//! hand-written trees under `tests/data`):
//! - `avcal`: `calibrate av` on the recorded Xeon E5345 behind a model PMU
//! - `cpufreq_actuation`: frequency plans written, journalled and undone
//! - `cpufreq_fixtures`: cpufreq policies read and write plans made
//! - `features`: `doctor`'s probes (power meters, cpufreq, resctrl,
//!   cgroups) on recorded machines and this VM's recording
//! - `hwloc_fixtures`: discovery on every machine hwloc recorded, against lstopo
//! - `limits`: the open-file limit raised to the hard one
//! - `pstate_actuation`: fixed frequencies on intel_pstate / amd-pstate-epp,
//!   pinned with EPP, journalled and undone
//! - `power`: power meters of recorded machines, measured or estimated
//! - `recorded_platform`: `LinuxPlatform` observes a recording, changes nothing
//! - `signals`: the signal resolver on recorded resctrl and Arm PMU trees
//! - `topology_machines`: discovery on machines hwloc did not record
//!
//! Live (`cargo test -- --ignored live::`; root, cgroups, real processes):
//! - `live`: see its module doc
//!
//! Child entries, started only by their parent test:
//! - `children`: the worker killed by the chaos test, the gang run killed
//!   by its restore test, the unprivileged RAPL reader, the file-limit check
//!
//! Shared helpers: `support` (recorded machines, copies, tarballs, child
//! processes, the live tests' turn; `support::lstopo` compares with hwloc).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod avcal;
mod children;
mod cpufreq_actuation;
mod cpufreq_fixtures;
mod features;
mod hwloc_fixtures;
mod limits;
mod live;
mod power;
mod pstate_actuation;
mod recorded_platform;
mod signals;
mod support;
mod topology_machines;
