//! Files a user names on the command line or in a configuration: read with
//! a bound, written without following a link.
//!
//! ecosched often runs as root, and the files it is given (configuration,
//! scenario, machine and calibration files, power models, PMU tables, the
//! hint file a command writes) are input anyone could have prepared. A
//! FIFO would block a plain `read_to_string` forever (a signal handler that
//! only sets a flag never gets to run its check), and `/dev/zero` or an
//! endless file would grow memory without bound. So [`read_text`] opens the
//! file without blocking, accepts a regular file only, and reads at most
//! the limit it is given, failing with an error that names the file and
//! the limit.
//!
//! An output path (a trace, a JSON or CSV result, a report, an emitted
//! machine file) may be a symlink someone planted to make root overwrite
//! another file; [`create_output`] refuses to follow one (`O_NOFOLLOW` on
//! the last component) and never blocks on a FIFO.
//!
//! This is the one module of the model crate that touches the operating
//! system: every crate reads user files through it, so the bounds are the
//! same everywhere.

use nix::libc;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The bound of a configuration, scenario, machine, calibration, power
/// model or PMU table file: the largest shipped one is under 100 KiB, so
/// 16 MiB leaves room for generated files and still bounds memory.
pub const TEXT_MAX_BYTES: u64 = 16 << 20;

/// Why a user-named file could not be read or created.
#[derive(Debug, thiserror::Error)]
pub enum UserFileError {
    /// Opening or reading failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// A FIFO, device, socket or directory where a file was expected.
    #[error("{}: is a {kind}, not a regular file; ecosched reads only regular files (a {kind} could block or never end)", path.display())]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// Longer than the limit.
    #[error("{}: larger than the limit of {limit} bytes for this file; refused", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit, in bytes.
        limit: u64,
    },
    /// Not UTF-8 text.
    #[error("{}: not UTF-8 text (byte {offset})", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
        /// Where the first invalid byte is.
        offset: usize,
    },
    /// An output path that is a symbolic link.
    #[error("{}: is a symbolic link; ecosched does not write through links (remove it or choose another path)", path.display())]
    Symlink {
        /// The path.
        path: PathBuf,
    },
}

impl UserFileError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            UserFileError::Io { path, .. }
            | UserFileError::NotRegular { path, .. }
            | UserFileError::TooLarge { path, .. }
            | UserFileError::NotText { path, .. }
            | UserFileError::Symlink { path } => path,
        }
    }

    /// What is wrong, without the path (for errors that name the file
    /// themselves).
    pub fn reason(&self) -> String {
        let full = self.to_string();
        let prefix = format!("{}: ", self.path().display());
        full.strip_prefix(&prefix).unwrap_or(&full).to_string()
    }
}

fn io(path: &Path, source: std::io::Error) -> UserFileError {
    UserFileError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn kind_of(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "directory"
    } else if file_type.is_fifo() {
        "FIFO"
    } else if file_type.is_char_device() {
        "character device"
    } else if file_type.is_block_device() {
        "block device"
    } else if file_type.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

/// The bytes of the regular file `path`, at most `max_bytes` of them. The
/// file is opened non-blocking (a FIFO opens at once and is then refused),
/// and the read stops one byte past the bound, so a file that grows while
/// it is read (or a `/proc` file whose size says 0) is bounded too.
pub fn read_bytes(path: &Path, max_bytes: u64) -> Result<Vec<u8>, UserFileError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| io(path, e))?;
    let meta = file.metadata().map_err(|e| io(path, e))?;
    if !meta.file_type().is_file() {
        return Err(UserFileError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(meta.file_type()),
        });
    }
    if meta.len() > max_bytes {
        return Err(UserFileError::TooLarge {
            path: path.to_path_buf(),
            limit: max_bytes,
        });
    }
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io(path, e))?;
    if bytes.len() as u64 > max_bytes {
        return Err(UserFileError::TooLarge {
            path: path.to_path_buf(),
            limit: max_bytes,
        });
    }
    Ok(bytes)
}

/// The text of the regular file `path`, at most `max_bytes` long (see
/// [`read_bytes`]); refused when it is not UTF-8.
pub fn read_text(path: &Path, max_bytes: u64) -> Result<String, UserFileError> {
    String::from_utf8(read_bytes(path, max_bytes)?).map_err(|e| UserFileError::NotText {
        path: path.to_path_buf(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// Create (or truncate) the output file `path` for writing, mode 0644 less
/// the umask. A symbolic link at `path` is refused, not followed; opening
/// never blocks (a FIFO without a reader is an error, not a hang).
pub fn create_output(path: &Path) -> Result<File, UserFileError> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => UserFileError::Symlink {
                path: path.to_path_buf(),
            },
            _ => io(path, e),
        })?;
    Ok(file)
}

/// Write `contents` to the output file `path` (see [`create_output`]).
pub fn write_output(path: &Path, contents: impl AsRef<[u8]>) -> Result<(), UserFileError> {
    use std::io::Write;
    let mut file = create_output(path)?;
    file.write_all(contents.as_ref())
        .and_then(|()| file.flush())
        .map_err(|e| io(path, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_regular_file_is_read_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.toml");
        std::fs::write(&path, "x = 1\n").unwrap();
        assert_eq!(read_text(&path, 6).unwrap(), "x = 1\n");
        let err = read_text(&path, 5).unwrap_err().to_string();
        assert!(
            err.contains("a.toml") && err.contains("limit of 5 bytes"),
            "{err}"
        );
        std::fs::write(&path, b"ok\n\xff\n").unwrap();
        let err = read_text(&path, 100).unwrap_err().to_string();
        assert!(err.contains("not UTF-8") && err.contains("byte 3"), "{err}");
        let err = read_text(&dir.path().join("missing"), 100).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }

    #[test]
    fn a_fifo_is_refused_at_once_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("hint");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let started = Instant::now();
        let err = read_text(&fifo, TEXT_MAX_BYTES).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        let err = err.to_string();
        assert!(err.contains("hint") && err.contains("FIFO"), "{err}");
        // Nothing is read from a FIFO as an output either: no reader, no hang.
        let started = Instant::now();
        assert!(create_output(&fifo).is_err());
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn endless_devices_are_refused_with_the_path() {
        for dev in ["/dev/zero", "/dev/urandom"] {
            let err = read_text(Path::new(dev), 1 << 20).unwrap_err().to_string();
            assert!(
                err.contains(dev) && err.contains("character device"),
                "{err}"
            );
        }
        // A regular-looking file whose size says nothing (procfs) is cut
        // at the bound all the same.
        let err = read_text(Path::new("/proc/self/maps"), 8)
            .unwrap_err()
            .to_string();
        assert!(err.contains("limit of 8 bytes"), "{err}");
    }

    #[test]
    fn an_output_symlink_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let out = dir.path().join("trace.json");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        let err = write_output(&out, "x").unwrap_err().to_string();
        assert!(
            err.contains("trace.json") && err.contains("symbolic link"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        // A dangling link would create its target: refused as well.
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("made"), &dangling).unwrap();
        assert!(write_output(&dangling, "x").is_err());
        assert!(!dir.path().join("made").exists());
        // A plain path is created, then truncated on the next write.
        let plain = dir.path().join("out.csv");
        write_output(&plain, "long line\n").unwrap();
        write_output(&plain, "a\n").unwrap();
        assert_eq!(std::fs::read_to_string(&plain).unwrap(), "a\n");
    }
}
