//! Application hints: how a running program tells ecosched its parallelism
//! (Richling et al., PIK 32(2), 2009, §IV-B: with a hint the spare core is
//! not needed).
//!
//! Protocol. `ecosched run` gives the program the path of a hint file in the
//! environment variable [`HINT_ENV`]. The program writes its expected
//! number of runnable threads there as one decimal integer (e.g. `4\n`),
//! whenever it changes — best by writing a temporary file next to it and
//! renaming it over, so that ecosched never reads half a write. ecosched
//! reads the file once per control interval. A missing or empty file means
//! "no hint"; anything else that is not an integer ≥ 1 is ignored with one
//! warning naming the file and the content. `ecosched run --parallelism N`
//! writes the first value itself.

use crate::error::LinuxError;
use ecosched_model::user_file::UserFileError;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// The environment variable that names the hint file.
pub const HINT_ENV: &str = "ECOSCHED_HINT_FILE";

/// The most of a hint file ecosched reads: one number and a newline fit in
/// a few bytes; 4 KiB allows comments of editors and still bounds a read.
pub const HINT_MAX_BYTES: u64 = 4096;

/// Parse a hint file's contents: `Ok(None)` for empty.
pub fn parse(text: &str) -> Result<Option<u32>, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    match t.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(format!(
            "expected a whole number of threads ≥ 1, found {t:?}"
        )),
    }
}

/// The hint file of one run.
#[derive(Debug)]
pub struct HintFile {
    path: PathBuf,
    last_bad: Option<String>,
}

impl HintFile {
    /// Create the hint file at `path`, holding `initial` when given.
    pub fn create(path: PathBuf, initial: Option<u32>) -> Result<Self, LinuxError> {
        let text = initial.map(|n| format!("{n}\n")).unwrap_or_default();
        std::fs::write(&path, text)
            .map_err(|e| LinuxError::from_io(&path, e, "write access to the state directory"))?;
        Ok(HintFile {
            path,
            last_bad: None,
        })
    }

    /// The file the program writes to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current hint; a bad value is reported once (per distinct value)
    /// through `warn` and treated as no hint. The program may replace the
    /// file with anything (a FIFO, a link to `/dev/zero`): it is read
    /// without blocking and at most [`HINT_MAX_BYTES`] of it, and anything
    /// else is a bad value.
    pub fn read(&mut self, warn: &mut dyn FnMut(String)) -> Option<u32> {
        let text = match ecosched_model::user_file::read_text(&self.path, HINT_MAX_BYTES) {
            Ok(text) => text,
            Err(UserFileError::Io { source, .. }) if source.kind() == ErrorKind::NotFound => {
                String::new()
            }
            Err(e) => format!("<{}>", e.reason()),
        };
        match parse(&text) {
            Ok(v) => {
                self.last_bad = None;
                v
            }
            Err(e) => {
                if self.last_bad.as_deref() != Some(text.trim()) {
                    warn(format!("{}: {e}; ignoring the hint", self.path.display()));
                    self.last_bad = Some(text.trim().to_string());
                }
                None
            }
        }
    }
}

impl Drop for HintFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_hint_file_replaced_by_a_fifo_or_dev_zero_is_a_bad_value_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let mut hint = HintFile::create(dir.path().join("hint"), Some(2)).unwrap();
        std::fs::remove_file(hint.path()).unwrap();
        nix::unistd::mkfifo(hint.path(), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let mut warnings = Vec::new();
        assert_eq!(hint.read(&mut |w| warnings.push(w)), None);
        std::fs::remove_file(hint.path()).unwrap();
        std::os::unix::fs::symlink("/dev/zero", hint.path()).unwrap();
        assert_eq!(hint.read(&mut |w| warnings.push(w)), None);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("FIFO"), "{warnings:?}");
        assert!(warnings[1].contains("character device"), "{warnings:?}");
        std::fs::remove_file(hint.path()).unwrap();
        assert_eq!(
            hint.read(&mut |w| warnings.push(w)),
            None,
            "a missing file is no hint"
        );
        assert_eq!(warnings.len(), 2);
    }

    #[test]
    fn parses_numbers_and_refuses_the_rest() {
        assert_eq!(parse("4\n"), Ok(Some(4)));
        assert_eq!(parse("  \n"), Ok(None));
        assert!(parse("0").is_err());
        assert!(parse("four").unwrap_err().contains("\"four\""));
        assert!(parse("-2").is_err());
    }

    #[test]
    fn a_bad_value_is_reported_once_and_a_good_one_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut hint = HintFile::create(dir.path().join("hint"), Some(2)).unwrap();
        let mut warnings = Vec::new();
        assert_eq!(hint.read(&mut |w| warnings.push(w)), Some(2));
        std::fs::write(hint.path(), "lots").unwrap();
        assert_eq!(hint.read(&mut |w| warnings.push(w)), None);
        assert_eq!(hint.read(&mut |w| warnings.push(w)), None);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        std::fs::write(hint.path(), "6\n").unwrap();
        assert_eq!(hint.read(&mut |w| warnings.push(w)), Some(6));
        let path = hint.path().to_path_buf();
        drop(hint);
        assert!(
            !path.exists(),
            "the hint file is removed at the end of the run"
        );
    }
}
