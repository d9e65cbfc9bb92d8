//! Vendor PMU event names (`L2_LINES_IN:ALL`) encoded for
//! `perf_event_open(2)` by libpfm4, so that no encoding is written by hand
//! and the one written for a CPU is the one its PMU takes.
//!
//! libpfm4 is loaded at run time (`libpfm.so.4`): a machine without it
//! still runs ecosched, with the vendor events reported missing and why.
//! The library detects the running PMU itself; `LIBPFM_FORCE_PMU=<pmu>`
//! (e.g. `skx`, `amd64_fam19h_zen4`) makes it encode for another one,
//! which is how encodings for CPUs this machine is not are checked.
//!
//! This crate is the workspace's only foreign-function boundary: the
//! unsafe calls are confined to [`ffi`], each with the layout it relies on.

mod ffi;

pub use ffi::LibPfm;

/// An event as `perf_event_attr` takes it: the PMU's type and the config
/// words libpfm4 filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PerfEncoding {
    /// `perf_event_attr.type`: `PERF_TYPE_RAW` (4) for the core PMU, or
    /// the dynamic type of a named PMU (a hybrid CPU's `cpu_atom`).
    pub pmu_type: u32,
    /// `perf_event_attr.config`: event select, unit mask and modifiers.
    pub config: u64,
    /// `perf_event_attr.config1`: the extra register some events need
    /// (Intel's offcore-response matrix), else 0.
    pub config1: u64,
}

/// Why libpfm4 could not be used at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The shared library is not installed (or not loadable).
    #[error("libpfm4 ({library}) cannot be loaded: {source} (install the libpfm4 package)")]
    Missing {
        /// The library name asked for.
        library: &'static str,
        /// The loader's error.
        #[source]
        source: libloading::Error,
    },
    /// It loaded but lacks a function this crate calls.
    #[error("libpfm4 ({library}) lacks {symbol}: {source}")]
    Symbol {
        /// The library name.
        library: &'static str,
        /// The function.
        symbol: &'static str,
        /// The loader's error.
        #[source]
        source: libloading::Error,
    },
    /// `pfm_initialize` failed (no PMU it knows, or a bad
    /// `LIBPFM_FORCE_PMU`).
    #[error("libpfm4 could not start: {message}")]
    Initialize {
        /// libpfm4's own message (`pfm_strerror`).
        message: String,
    },
}

/// Why one event name could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("libpfm4 cannot encode {event:?}: {message}")]
pub struct EncodeError {
    /// The event string as given.
    pub event: String,
    /// libpfm4's message (`pfm_strerror`: "event not found", "invalid or
    /// missing unit mask", ...), or why the name was not passed to it.
    pub message: String,
}
