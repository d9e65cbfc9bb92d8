//! The one error type of the Linux platform. It keeps apart the cases a
//! caller handles differently (`docs/design/architecture.md`, "Conventions
//! that hold across crates"):
//!
//! - `Absent`: the machine lacks the feature (no cpufreq, no RAPL, no PMU
//!   event) — degrade and say so;
//! - `Permission`: the feature is there but we may not use it — tell the
//!   user which capability is needed;
//! - `Gone`: the task exited between two reads — normal, not an error;
//! - `Parse`: a kernel file did not look as documented — name the file.

use std::path::{Path, PathBuf};

/// Why a Linux interface could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LinuxError {
    /// The file or interface does not exist on this machine.
    #[error("{path}: not present ({what})")]
    Absent {
        /// What was looked for.
        path: PathBuf,
        /// The feature it belongs to, in words.
        what: String,
    },
    /// Access refused; names the capability needed.
    #[error("{path}: permission denied; needs {capability}")]
    Permission {
        /// What was being touched.
        path: PathBuf,
        /// `root`, `CAP_SYS_NICE`, `CAP_PERFMON` …
        capability: String,
    },
    /// The task (or its directory) vanished while being read.
    #[error("task {pid} has exited")]
    Gone {
        /// Its PID.
        pid: u32,
    },
    /// A kernel file's contents were not as documented.
    #[error("{path}: cannot parse {content:?}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The offending text (trimmed to a line).
        content: String,
        /// What was expected.
        reason: String,
    },
    /// Writing to a recorded (not live) root.
    #[error("{root}: a recorded machine cannot be changed (not from this system)")]
    ReadOnly {
        /// The recorded root.
        root: PathBuf,
    },
    /// Any other I/O failure.
    #[error("{path}: {source}")]
    Io {
        /// What was being touched.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl LinuxError {
    /// Classify an I/O error on `path`; `capability` is what a permission
    /// failure there needs.
    pub fn from_io(path: &Path, source: std::io::Error, capability: &str) -> Self {
        match source.kind() {
            std::io::ErrorKind::PermissionDenied => LinuxError::Permission {
                path: path.to_path_buf(),
                capability: capability.to_string(),
            },
            _ => LinuxError::Io {
                path: path.to_path_buf(),
                source,
            },
        }
    }

    /// A parse failure on `path`.
    pub fn parse(path: &Path, content: &str, reason: impl Into<String>) -> Self {
        LinuxError::Parse {
            path: path.to_path_buf(),
            content: content
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(120)
                .collect(),
            reason: reason.into(),
        }
    }

    /// Whether this says the feature is missing (degrade rather than fail).
    pub fn is_absent(&self) -> bool {
        matches!(self, LinuxError::Absent { .. })
    }
}

impl From<LinuxError> for ecosched_model::PlatformError {
    fn from(e: LinuxError) -> Self {
        use ecosched_model::PlatformError as P;
        match e {
            LinuxError::Permission { path, capability } => P::Permission {
                path: path.display().to_string(),
                capability,
            },
            LinuxError::Io { path, source } => P::Io {
                path: path.display().to_string(),
                source,
            },
            LinuxError::Absent { .. } | LinuxError::ReadOnly { .. } => {
                P::Unsupported(e.to_string())
            }
            other => P::Io {
                path: String::new(),
                source: std::io::Error::other(other.to_string()),
            },
        }
    }
}
