//! Reading a task's `/proc` files: re-read from offset 0 with `pread`
//! into a stack buffer, parsed in place, and the errors that mean the task
//! is gone told apart from the others.

use crate::error::LinuxError;
use crate::fsroot::FsRoot;
use crate::procfs;
use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// A `/proc` file re-read from offset 0: kept open, or (`file` `None`)
/// opened for each read and closed after it, to spare a descriptor.
pub(super) struct ProcFile {
    pub(super) path: PathBuf,
    file: Option<File>,
}

/// Bytes read onto the stack before falling back to the heap: enough for
/// the files read at every observation (a `stat` line is about 300 bytes,
/// `schedstat` 30), not for `status` (about 1.5 KiB, read on a task's
/// first reading only, and then twice). A buffer per file (two per
/// thread) spread thousands of buffers over memory, each read into a
/// cold one; this one stays in the cache, and is small to clear.
const STACK_READ: usize = 1024;

impl ProcFile {
    pub(super) fn open(root: &FsRoot, rel: &str, pid: u32) -> Result<ProcFile, LinuxError> {
        let path = root.path(rel);
        match File::open(&path) {
            Ok(file) => Ok(ProcFile {
                path,
                file: Some(file),
            }),
            Err(e) => Err(io_error(path, e, pid)),
        }
    }

    /// A file opened only while it is read.
    pub(super) fn transient(root: &FsRoot, rel: &str) -> ProcFile {
        ProcFile {
            path: root.path(rel),
            file: None,
        }
    }

    /// Re-read the whole file and parse it; a parse failure names the file.
    /// A short read is the end: `/proc` files are generated whole on each
    /// read from offset 0 (seq_file), so no second `pread` is needed to
    /// see end-of-file. A file that fills the buffer is read again from
    /// the start into one twice as large, never continued at an offset,
    /// which could join two generations of its text.
    pub(super) fn parse<T>(
        &mut self,
        pid: u32,
        parse: impl Fn(&str) -> Result<T, procfs::ProcParseError>,
    ) -> Result<T, LinuxError> {
        let opened;
        let file = match &self.file {
            Some(f) => f,
            None => {
                opened = File::open(&self.path).map_err(|e| io_error(self.path.clone(), e, pid))?;
                &opened
            }
        };
        let mut stack = [0u8; STACK_READ];
        let n = self.read_start(file, &mut stack, pid)?;
        if n < stack.len() {
            return self.parse_bytes(&stack[..n], parse);
        }
        let mut heap = vec![0u8; 2 * STACK_READ];
        loop {
            let n = self.read_start(file, &mut heap, pid)?;
            if n < heap.len() {
                return self.parse_bytes(&heap[..n], parse);
            }
            heap.resize(2 * heap.len(), 0);
        }
    }

    /// One `pread` from offset 0; the bytes read.
    fn read_start(&self, file: &File, buf: &mut [u8], pid: u32) -> Result<usize, LinuxError> {
        loop {
            match file.read_at(buf, 0) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_error(self.path.clone(), e, pid)),
            }
        }
    }

    fn parse_bytes<T>(
        &self,
        bytes: &[u8],
        parse: impl Fn(&str) -> Result<T, procfs::ProcParseError>,
    ) -> Result<T, LinuxError> {
        // `from_utf8` first: `from_utf8_lossy` walks the text in chunks and
        // costs a tenth of a busy thread's user-space time; only a command
        // name can hold bytes that are not UTF-8.
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(bytes),
        };
        parse(&text).map_err(|e| LinuxError::parse(&self.path, &text, e.reason))
    }
}

/// A task's `/proc` file, read whole; the task is [`LinuxError::Gone`] when
/// the file is absent or the task exited between the open and the read.
pub(super) fn read_task_file(
    root: &FsRoot,
    rel: &str,
    what: &str,
    pid: u32,
) -> Result<String, LinuxError> {
    root.read(rel, what).map_err(|e| match e {
        LinuxError::Absent { .. } => LinuxError::Gone { pid },
        e => gone_if_exited(e, pid),
    })
}

/// `ESRCH` reading a task's file: it exited after the file was opened
/// (seen in a walk of `/proc` while other processes exit).
pub(super) fn gone_if_exited(e: LinuxError, pid: u32) -> LinuxError {
    match e {
        LinuxError::Io { source, .. } if source.raw_os_error() == Some(nix::libc::ESRCH) => {
            LinuxError::Gone { pid }
        }
        e => e,
    }
}

/// `ENOENT`/`ESRCH` on a task's file means the task went away.
pub(super) fn io_error(path: PathBuf, e: std::io::Error, pid: u32) -> LinuxError {
    if e.kind() == ErrorKind::NotFound || e.raw_os_error() == Some(nix::libc::ESRCH) {
        LinuxError::Gone { pid }
    } else {
        LinuxError::from_io(&path, e, "root or CAP_SYS_PTRACE")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tasks::testing::{fixture, recorded_reader};
    use ecosched_model::TaskId;

    #[test]
    fn a_file_larger_than_the_stack_buffer_is_read_whole() {
        let dir = fixture();
        let status = dir.path().join("proc/100/task/101/status");
        let text = std::fs::read_to_string(&status).unwrap();
        // Past the stack buffer and past the first heap buffer, with the
        // line the reading needs at the end.
        let padding = format!("Padding:\t{}\n", "x".repeat(3 * STACK_READ));
        let long = text.replacen("Cpus_allowed_list:\t0-3\n", "", 1)
            + &padding
            + "Cpus_allowed_list:\t1-2\n";
        std::fs::write(&status, long).unwrap();
        let mut r = recorded_reader(&dir);
        let id = TaskId {
            pid: 101,
            start_ticks: 510,
        };
        let obs = r.read(&[id]);
        assert!(obs.errors.is_empty(), "{:?}", obs.errors);
        assert_eq!(obs.tasks[0].allowed.to_list(), "1-2");
    }

    #[test]
    fn a_task_that_exits_between_open_and_read_is_gone() {
        // What a walk of `/proc` meets while other processes exit: the
        // file opened, then the read answered ESRCH.
        let exited = LinuxError::Io {
            path: PathBuf::from("/proc/7/task/7/stat"),
            source: std::io::Error::from_raw_os_error(nix::libc::ESRCH),
        };
        assert!(matches!(
            gone_if_exited(exited, 7),
            LinuxError::Gone { pid: 7 }
        ));
        let other = LinuxError::Io {
            path: PathBuf::from("/proc/7/task/7/stat"),
            source: std::io::Error::from_raw_os_error(nix::libc::EIO),
        };
        assert!(matches!(gone_if_exited(other, 7), LinuxError::Io { .. }));
    }
}
