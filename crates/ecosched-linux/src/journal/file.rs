//! The journal's on-disk form: JSON lines, a header naming the ecosched
//! that wrote it, then one record per change. The file is created without
//! ever truncating one, each record is appended and synced (`fdatasync`)
//! before its change is made, and a compacted journal replaces the old
//! file whole (written beside it, synced, renamed over it).

use crate::error::LinuxError;
use ecosched_model::CpuSet;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The format version this ecosched writes and reads.
pub const VERSION: u32 = 1;

/// One change, with what undoes it. Paths are relative to the root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A thread's affinity was changed from `before`.
    Affinity {
        /// Thread id.
        tid: u32,
        /// Its start time, so a reused PID is never touched.
        start_ticks: u64,
        /// The original CPU set.
        before: CpuSet,
    },
    /// A kernel file (cpufreq, cgroup) was overwritten.
    File {
        /// The file.
        path: String,
        /// Its original contents.
        before: String,
    },
    /// A cgroup directory was created; undo moves what is left in it to
    /// `parent` (the cgroup its tasks would otherwise be in) and removes it.
    CgroupCreated {
        /// The new cgroup.
        dir: String,
        /// Where leftover tasks go.
        parent: String,
        /// The membership file (`tasks` on v1, `cgroup.procs` on v2).
        members: String,
    },
    /// A task was moved out of a cgroup; undo moves it back.
    CgroupMoved {
        /// Thread (v1) or process (v2) id.
        tid: u32,
        /// Its start time.
        start_ticks: u64,
        /// The membership file of the cgroup it came from.
        back_to: String,
    },
    /// A task was moved between freezer cgroups for a gang schedule (a
    /// hierarchy of its own on v1, so kept apart from the cpuset moves of
    /// the same task); undo moves it back.
    GangMoved {
        /// Thread (v1) or process (v2) id.
        tid: u32,
        /// Its start time.
        start_ticks: u64,
        /// The membership file of the cgroup it came from.
        back_to: String,
    },
    /// A process was stopped for gang control; undo continues it.
    Stopped {
        /// Process id.
        pid: u32,
        /// Its start time.
        start_ticks: u64,
    },
}

impl Change {
    /// What identifies "the same thing" for deduplication.
    pub fn key(&self) -> String {
        match self {
            Change::Affinity {
                tid, start_ticks, ..
            } => format!("affinity {tid}@{start_ticks}"),
            Change::File { path, .. } => format!("file {path}"),
            Change::CgroupCreated { dir, .. } => format!("cgroup {dir}"),
            Change::CgroupMoved {
                tid, start_ticks, ..
            } => format!("moved {tid}@{start_ticks}"),
            Change::GangMoved {
                tid, start_ticks, ..
            } => format!("gang-moved {tid}@{start_ticks}"),
            Change::Stopped { pid, start_ticks } => format!("stopped {pid}@{start_ticks}"),
        }
    }
}

/// The first line of a journal: which ecosched wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Format version.
    pub version: u32,
    /// The ecosched that wrote it.
    pub owner_pid: u32,
    /// Its start time, so a reused PID is not taken for it.
    pub owner_start_ticks: u64,
}

/// A journal's text, read back: the header, the records that parsed (with
/// their 1-based line numbers) and a warning for every line that did not.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedJournal {
    /// The header, `None` when the file is empty or holds only a torn
    /// header (killed while creating it: nothing was changed yet).
    pub header: Option<Header>,
    /// The records, oldest first.
    pub changes: Vec<(usize, Change)>,
    /// One line per skipped record.
    pub warnings: Vec<String>,
}

/// Parse a journal's bytes. Never panics, whatever they hold. A corrupt
/// line in the middle (bad JSON, or bytes that are not UTF-8) is skipped
/// with a warning naming its line and why: the records around it are still
/// good, and each was written whole before its change was made. A last
/// line without its newline was torn by a kill mid-write, so its change was
/// never made, and it is reported as such. Only an unreadable header
/// followed by records is an error: without it the owner cannot be checked.
pub fn parse(bytes: &[u8]) -> Result<ParsedJournal, String> {
    let ends_whole = bytes.ends_with(b"\n");
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let lines: Vec<&[u8]> = if bytes.is_empty() {
        Vec::new()
    } else {
        body.split(|b| *b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .collect()
    };
    let last = lines.len();
    let mut out = ParsedJournal {
        header: None,
        changes: Vec::new(),
        warnings: Vec::new(),
    };
    let Some((first, rest)) = lines.split_first() else {
        return Ok(out);
    };
    match serde_json::from_slice::<Header>(first) {
        Ok(h) if h.version == VERSION => out.header = Some(h),
        Ok(h) => {
            return Err(format!(
                "line 1: journal format version {} (this ecosched reads {VERSION})",
                h.version
            ))
        }
        Err(_) if last == 1 && !ends_whole => {
            out.warnings.push(
                "line 1: torn header (killed while creating the journal; nothing was changed)"
                    .into(),
            );
            return Ok(out);
        }
        Err(e) => return Err(format!("line 1: not a journal header: {e}")),
    }
    for (i, line) in rest.iter().enumerate() {
        let n = i + 2;
        let record = std::str::from_utf8(line)
            .map_err(|e| format!("not UTF-8 (byte {})", e.valid_up_to()))
            .and_then(|l| serde_json::from_str::<Change>(l).map_err(|e| e.to_string()));
        match record {
            Ok(c) => out.changes.push((n, c)),
            Err(_) if n == last && !ends_whole => out.warnings.push(format!(
                "line {n}: torn last record (killed while writing it; that change was never made)"
            )),
            Err(e) => out.warnings.push(format!(
                "line {n}: corrupt record skipped ({e}); the others are restored"
            )),
        }
    }
    Ok(out)
}

/// The I/O error of a journal file, naming what writing one needs.
pub(super) fn io_err(path: &Path, e: std::io::Error) -> LinuxError {
    LinuxError::from_io(path, e, "root (to write the restore journal)")
}

/// A journal file open for appending.
#[derive(Debug)]
pub(super) struct JournalFile {
    path: PathBuf,
    file: File,
}

impl JournalFile {
    /// Create `path` holding `header` alone, synced with its directory
    /// entry. Never truncates: a journal with this name is a killed run's
    /// (its PID was reused) and still holds what to put back. The header
    /// line is returned for rewrites.
    pub(super) fn create(path: &Path, header: &Header) -> Result<(Self, String), LinuxError> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => io_err(
                    path,
                    std::io::Error::other(
                        "a journal of an earlier run with this PID is still there; run `ecosched restore` first",
                    ),
                ),
                _ => io_err(path, e),
            })?;
        let line = serde_json::to_string(header).map_err(|e| io_err(path, e.into()))?;
        writeln!(file, "{line}").map_err(|e| io_err(path, e))?;
        file.sync_all().map_err(|e| io_err(path, e))?;
        sync_dir(path)?;
        Ok((
            JournalFile {
                path: path.to_path_buf(),
                file,
            },
            line,
        ))
    }

    /// Append `change` and wait until it is on disk.
    pub(super) fn append(&mut self, change: &Change) -> Result<(), LinuxError> {
        let line = serde_json::to_string(change).map_err(|e| io_err(&self.path, e.into()))?;
        writeln!(self.file, "{line}").map_err(|e| io_err(&self.path, e))?;
        self.file.sync_data().map_err(|e| io_err(&self.path, e))
    }

    /// Replace the file with `header` and `changes`. The new file is
    /// complete and synced before it replaces the old one, so `ecosched
    /// restore` after a kill finds one or the other, never a part. Its
    /// name starts with a dot while it is written, which restore does not
    /// read.
    pub(super) fn rewrite(&mut self, header: &str, changes: &[Change]) -> Result<(), LinuxError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("journal");
        let tmp = dir.join(format!(".{name}.compacting"));
        let _ = std::fs::remove_file(&tmp);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| io_err(&tmp, e))?;
        let mut text = format!("{header}\n");
        for change in changes {
            let line = serde_json::to_string(change).map_err(|e| io_err(&tmp, e.into()))?;
            text.push_str(&line);
            text.push('\n');
        }
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| io_err(&tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| io_err(&self.path, e))?;
        sync_dir(&self.path)?;
        self.file = file;
        Ok(())
    }
}

/// Make the directory entry of `path` durable.
fn sync_dir(path: &Path) -> Result<(), LinuxError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err(dir, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::journal::trust::AllowedPaths;
    use crate::mounts::MountTable;

    #[test]
    fn a_torn_last_line_or_header_is_reported_not_refused() {
        let p = parse(b"{\"version\":1,\"owner_pid\":7,\"owner_start_ticks\":5}\n{\"kind\":\"fi")
            .unwrap();
        assert_eq!(p.changes.len(), 0);
        assert!(p.warnings[0].contains("torn last record"), "{p:?}");
        let p = parse(b"{\"version\":1,\"own").unwrap();
        assert_eq!(p.header, None);
        assert!(p.warnings[0].contains("torn header"), "{p:?}");
        assert!(parse(b"garbage\n{}\n").unwrap_err().contains("line 1"));
        assert!(
            parse(b"{\"version\":9,\"owner_pid\":7,\"owner_start_ticks\":5}\n")
                .unwrap_err()
                .contains("version 9")
        );
    }

    proptest::proptest! {
        #[test]
        fn parsing_random_text_never_panics(text in "\\PC{0,400}") {
            let _ = parse(text.as_bytes());
        }

        #[test]
        fn parsing_random_bytes_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn parsing_damaged_journals_never_panics(cut in 0usize..400, noise in proptest::collection::vec(proptest::num::u8::ANY, 0..40)) {
            let good = "{\"version\":1,\"owner_pid\":7,\"owner_start_ticks\":5}\n\
                {\"kind\":\"affinity\",\"tid\":9,\"start_ticks\":3,\"before\":\"0-3\"}\n\
                {\"kind\":\"stopped\",\"pid\":9,\"start_ticks\":3}\n";
            let mut bytes = good.as_bytes()[..cut.min(good.len())].to_vec();
            bytes.extend(noise);
            if let Ok(p) = parse(&bytes) {
                let mounts = AllowedPaths::from_mounts(&MountTable::parse("cgroup /sys/fs/cgroup/cpuset cgroup rw 0 0\n"));
                for (_, c) in &p.changes {
                    let _ = mounts.check(c);
                }
            }
        }
    }
}
