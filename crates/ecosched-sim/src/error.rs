//! Everything that can go wrong loading or running a simulation, with the
//! place (file, line, column, key) wherever there is one.

use std::fmt;

/// Where in an input file a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// File path, or `built-in scenario NAME`.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// Dotted key path (`tasks[2].profile`), when known.
    pub key: Option<String>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        if let Some(k) = &self.key {
            write!(f, " (key `{k}`)")?;
        }
        Ok(())
    }
}

/// A simulator error.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Malformed or invalid scenario input.
    #[error("{location}: {message}")]
    Input {
        /// Where.
        location: Location,
        /// What.
        message: String,
    },
    /// A machine description that breaks a physical invariant.
    #[error("invalid machine {machine:?}: {reason}")]
    InvalidMachine {
        /// Machine name.
        machine: String,
        /// What is wrong.
        reason: String,
    },
    /// No built-in scenario or file by that name.
    #[error("unknown scenario {name:?} (not a file, nor a built-in); built-in scenarios: {}", valid.join(", "))]
    UnknownScenario {
        /// Name given.
        name: String,
        /// Built-in names.
        valid: Vec<String>,
    },
    /// A user-named file refused before parsing (not a regular file, or
    /// over its size limit), or unreadable.
    #[error("cannot read {}", .0)]
    UserFile(#[from] ecosched_model::user_file::UserFileError),
    /// A file that could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// Path.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
}
