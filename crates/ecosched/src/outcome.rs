//! What a command leaves for `main`: its text and verdict ([`Outcome`]), or
//! a mistake in the command line ([`UsageError`], exit status 2). Every
//! command module returns these; none needs another command's module.

/// What a command produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Text for stdout.
    pub stdout: String,
    /// The command ran but its verdict is negative (a validation check
    /// failed): exit status 1.
    pub failed: bool,
    /// An exit status to pass on instead (`ecosched run` exits with its
    /// command's).
    pub exit_code: Option<u8>,
}

impl Outcome {
    /// A successful command's text.
    pub fn ok(stdout: String) -> Outcome {
        Outcome {
            stdout,
            failed: false,
            exit_code: None,
        }
    }
}

/// A mistake in the command line found after clap parsed it. `main` exits
/// with the usage status (2) for these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}
