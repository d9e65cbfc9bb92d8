//! The control socket: JSON lines over a Unix stream socket
//! (`/run/ecosched/ctl.sock`, mode 0600, so only root may steer the
//! machine). One request per line, one answer per line:
//!
//! ```text
//! → {"cmd":"pause","group":"builds"}
//! ← {"ok":true,"result":"group builds paused (its changes were undone)"}
//! → {"cmd":"pause","group":"nope"}
//! ← {"ok":false,"error":"no group \"nope\" (groups: builds, slurm/job_7)"}
//! ```
//!
//! Every step has a timeout: the client waits [`TIMEOUT`] for the answer,
//! the server waits as long for a request line and for the daemon's loop
//! to answer it, so a stuck peer costs a clear error, never a hang.
//!
//! What a client may hold is bounded: a request line is at most
//! [`LINE_MAX`] bytes (a longer one is answered with an error and the
//! connection closed, having read no more than the bound), and the socket
//! holds at most [`LIMITS`] connections, per user (`SO_PEERCRED`) and in
//! all, and none once the daemon's descriptors are down to its reserve
//! ([`crate::admission`]); a refused connection is answered with the reason
//! and closed.

use crate::admission::{Admission, Descriptors, Limits, Slot};
use crate::peer::unix_peer;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// How long either side waits for the other.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The longest request line read, in bytes.
pub const LINE_MAX: usize = 64 * 1024;

/// Connections the control socket holds: per user, and in all.
pub const LIMITS: Limits = Limits {
    per_peer: 32,
    total: 64,
};

/// One request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Request {
    /// The daemon's state.
    Status,
    /// Read the configuration file again: applied, or refused with the
    /// reason while the running one stays.
    Reload,
    /// Every group and how it is managed.
    Groups,
    /// Run `group` with another policy from now on.
    SetPolicy {
        /// The group.
        group: String,
        /// The policy.
        policy: String,
        /// Its parameters.
        #[serde(default)]
        params: BTreeMap<String, String>,
    },
    /// Stop managing `group` (undoing its changes) until resumed.
    Pause {
        /// The group.
        group: String,
    },
    /// Manage a paused group again.
    Resume {
        /// The group.
        group: String,
    },
    /// Manage a batch job's cgroup as group `job-ID` (Slurm's Prolog).
    JobStart {
        /// The job id.
        id: String,
        /// Its cgroup directory.
        cgroup: String,
        /// The policy.
        policy: String,
        /// Its parameters.
        #[serde(default)]
        params: BTreeMap<String, String>,
    },
    /// Job `ID` ended (Slurm's Epilog): stop managing it and answer its
    /// totals.
    JobEnd {
        /// The job id.
        id: String,
    },
    /// The last records of ended work, newest first.
    History {
        /// Only this group's (`job-ID` for a job).
        #[serde(default)]
        name: Option<String>,
        /// At most this many.
        #[serde(default)]
        limit: Option<usize>,
    },
}

/// One answer: `{"ok":true,"result":…}` or `{"ok":false,"error":"…"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Whether the request was carried out.
    pub ok: bool,
    /// What it returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Response {
    /// Done, with `result`.
    pub fn ok(result: serde_json::Value) -> Self {
        Response {
            ok: true,
            result: Some(result),
            error: None,
        }
    }

    /// Refused, with the reason.
    pub fn err(error: impl Into<String>) -> Self {
        Response {
            ok: false,
            result: None,
            error: Some(error.into()),
        }
    }
}

/// A request on its way to the daemon's loop, with where to answer.
pub type Envelope = (Request, mpsc::Sender<Response>);

/// Why a control request failed on the client's side.
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    /// No daemon at the socket.
    #[error("no ecosched daemon is listening at {path} ({source}); is `ecosched daemon` running?")]
    NotRunning {
        /// The socket.
        path: PathBuf,
        /// The connect error.
        source: std::io::Error,
    },
    /// The socket is root's.
    #[error("{path}: permission denied: the control socket is root's (mode 0600)")]
    Permission {
        /// The socket.
        path: PathBuf,
    },
    /// Talking failed or timed out.
    #[error("{path}: {what}")]
    Io {
        /// The socket.
        path: PathBuf,
        /// What happened.
        what: String,
    },
    /// The daemon refused the request.
    #[error("the daemon refused: {0}")]
    Refused(String),
}

/// Send one request to the daemon at `socket` and return its result.
pub fn call(socket: &Path, request: &Request) -> Result<serde_json::Value, CtlError> {
    let io = |what: String| CtlError::Io {
        path: socket.to_path_buf(),
        what,
    };
    let mut stream = UnixStream::connect(socket).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => CtlError::Permission {
            path: socket.to_path_buf(),
        },
        _ => CtlError::NotRunning {
            path: socket.to_path_buf(),
            source: e,
        },
    })?;
    stream
        .set_read_timeout(Some(TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(TIMEOUT)))
        .map_err(|e| io(format!("cannot set timeouts: {e}")))?;
    let line = serde_json::to_string(request).map_err(|e| io(e.to_string()))?;
    writeln!(stream, "{line}").map_err(|e| io(format!("cannot send the request: {e}")))?;
    let mut answer = String::new();
    BufReader::new(&stream)
        .read_line(&mut answer)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                io(format!("no answer within {} s", TIMEOUT.as_secs()))
            }
            _ => io(format!("cannot read the answer: {e}")),
        })?;
    if answer.is_empty() {
        return Err(io(
            "the daemon closed the connection without answering".into()
        ));
    }
    let response: Response = serde_json::from_str(&answer)
        .map_err(|e| io(format!("malformed answer {answer:?}: {e}")))?;
    match (response.ok, response.error) {
        (true, _) => Ok(response.result.unwrap_or(serde_json::Value::Null)),
        (false, e) => Err(CtlError::Refused(
            e.unwrap_or_else(|| "no reason given".into()),
        )),
    }
}

/// The listening side, serving from a thread of its own.
#[derive(Debug)]
pub struct Server {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Listen at `path` (mode 0600) and pass each request to `to_daemon`.
    /// A socket file left by a dead daemon is replaced; a live daemon's is
    /// an error.
    pub fn start(path: &Path, to_daemon: mpsc::Sender<Envelope>) -> Result<Self, String> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(format!(
                    "{}: another ecosched daemon is listening there",
                    path.display()
                ));
            }
            std::fs::remove_file(path)
                .map_err(|e| format!("cannot remove the stale socket {}: {e}", path.display()))?;
        }
        let listener = UnixListener::bind(path)
            .map_err(|e| format!("cannot listen at {}: {e}", path.display()))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("cannot make {} mode 0600: {e}", path.display()))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop_t = Arc::clone(&stop);
        let admission = Admission::new("control socket", LIMITS);
        let thread = std::thread::Builder::new()
            .name("ctl".into())
            .spawn(move || {
                while !stop_t.load(Ordering::SeqCst) {
                    if !crate::exporter::readable(&listener) {
                        continue;
                    }
                    match listener.accept() {
                        Ok((stream, _)) => {
                            match admission.admit(unix_peer(&stream), Descriptors::own) {
                                Ok(slot) => {
                                    let tx = to_daemon.clone();
                                    // One thread per client: a slow one cannot hold up
                                    // another past its own timeout.
                                    let _ = std::thread::Builder::new()
                                        .name("ctl client".into())
                                        .spawn(move || serve(stream, &tx, slot));
                                }
                                Err(why) => refuse(&stream, &format!("connection refused: {why}")),
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) => {
                            tracing::warn!("control socket: {e}");
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                }
            })
            .map_err(|e| format!("cannot start the control thread: {e}"))?;
        Ok(Server {
            path: path.to_path_buf(),
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Answer `why` if the client's buffer takes it at once, and close.
fn refuse(stream: &UnixStream, why: &str) {
    if stream.set_nonblocking(true).is_ok() {
        if let Ok(text) = serde_json::to_string(&Response::err(why)) {
            let mut out = stream;
            let _ = out.write(format!("{text}\n").as_bytes());
        }
    }
}

/// One request line, at most [`LINE_MAX`] bytes.
#[derive(Debug, PartialEq)]
enum Line {
    /// A line (without its end).
    Text(String),
    /// Longer than the bound: the rest is left unread.
    TooLong,
    /// Not UTF-8.
    NotText,
    /// Hung up, timed out or failed.
    Gone,
}

/// Read one line, never more than [`LINE_MAX`] bytes and its end.
fn read_line(input: &mut impl BufRead) -> Line {
    let mut buf = Vec::new();
    let bound = LINE_MAX as u64 + 1;
    match input.take(bound).read_until(b'\n', &mut buf) {
        Ok(0) | Err(_) => Line::Gone,
        Ok(_) if buf.last() == Some(&b'\n') => {
            buf.pop();
            String::from_utf8(buf).map_or(Line::NotText, Line::Text)
        }
        Ok(n) if n as u64 >= bound => Line::TooLong,
        // The client ended the stream within a line.
        Ok(_) => String::from_utf8(buf).map_or(Line::NotText, Line::Text),
    }
}

fn serve(stream: UnixStream, to_daemon: &mpsc::Sender<Envelope>, slot: Slot) {
    if stream.set_nonblocking(false).is_err()
        || stream.set_read_timeout(Some(TIMEOUT)).is_err()
        || stream.set_write_timeout(Some(TIMEOUT)).is_err()
    {
        return;
    }
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut out = write_half;
    let mut input = BufReader::new(stream);
    loop {
        let (response, last) = match read_line(&mut input) {
            // Timed out or hung up: the client is gone.
            Line::Gone => break,
            Line::TooLong => (
                Response::err(format!(
                    "request line longer than {LINE_MAX} bytes; closing the connection"
                )),
                true,
            ),
            Line::NotText => (Response::err("the request line is not UTF-8"), false),
            Line::Text(line) if line.trim().is_empty() => continue,
            Line::Text(line) => (answer(&line, to_daemon), false),
        };
        let Ok(text) = serde_json::to_string(&response) else {
            break;
        };
        if writeln!(out, "{text}").is_err() || last {
            break;
        }
    }
    drop(slot);
}

/// The daemon's answer to one request line.
fn answer(line: &str, to_daemon: &mpsc::Sender<Envelope>) -> Response {
    match serde_json::from_str::<Request>(line) {
        Err(e) => Response::err(format!(
            "bad request {line:?}: {e} (expected e.g. {{\"cmd\":\"status\"}}; commands: status, reload, groups, set-policy, pause, resume, job-start, job-end)"
        )),
        Ok(request) => {
            let (tx, rx) = mpsc::channel();
            match to_daemon.send((request, tx)) {
                Err(_) => Response::err("the daemon is stopping"),
                Ok(()) => rx.recv_timeout(TIMEOUT).unwrap_or_else(|_| {
                    Response::err(format!(
                        "the daemon did not answer within {} s",
                        TIMEOUT.as_secs()
                    ))
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn requests_have_a_stable_wire_form() {
        let r: Request = serde_json::from_str(
            r#"{"cmd":"set-policy","group":"a","policy":"static","params":{"cpus":"0"}}"#,
        )
        .unwrap();
        assert_eq!(
            r,
            Request::SetPolicy {
                group: "a".into(),
                policy: "static".into(),
                params: [("cpus".to_string(), "0".to_string())].into()
            }
        );
        assert_eq!(
            serde_json::to_string(&Request::JobEnd { id: "7".into() }).unwrap(),
            r#"{"cmd":"job-end","id":"7"}"#
        );
        assert_eq!(
            serde_json::from_str::<Request>(r#"{"cmd":"reload"}"#).unwrap(),
            Request::Reload
        );
        assert!(serde_json::from_str::<Request>(r#"{"cmd":"reboot"}"#).is_err());
    }

    #[test]
    fn lines_are_read_up_to_the_bound() {
        let read = |bytes: &[u8]| read_line(&mut std::io::Cursor::new(bytes.to_vec()));
        assert_eq!(
            read(b"{\"cmd\":\"status\"}\nmore"),
            Line::Text("{\"cmd\":\"status\"}".into())
        );
        assert_eq!(read(b"last"), Line::Text("last".into()));
        assert_eq!(read(b""), Line::Gone);
        assert_eq!(read(b"\xff\n"), Line::NotText);
        let mut exact = vec![b'x'; LINE_MAX];
        exact.push(b'\n');
        assert!(matches!(read(&exact), Line::Text(t) if t.len() == LINE_MAX));
        assert_eq!(read(&vec![b'x'; LINE_MAX + 1]), Line::TooLong);
        // Only the bound is taken from the stream.
        let mut input = std::io::Cursor::new(vec![b'y'; 3 * LINE_MAX]);
        assert_eq!(read_line(&mut input), Line::TooLong);
        assert_eq!(input.position(), LINE_MAX as u64 + 1);
    }

    #[test]
    fn a_round_trip_a_bad_line_and_a_silent_daemon() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ctl.sock");
        let (tx, rx) = mpsc::channel::<Envelope>();
        let server = Server::start(&path, tx).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A second daemon on the same socket is refused.
        let (tx2, _rx2) = mpsc::channel::<Envelope>();
        assert!(Server::start(&path, tx2).unwrap_err().contains("another"));
        let answer = std::thread::spawn(move || {
            let (req, reply) = rx.recv().unwrap();
            assert_eq!(req, Request::Status);
            reply.send(Response::ok(serde_json::json!("fine"))).unwrap();
            rx
        });
        assert_eq!(call(&path, &Request::Status).unwrap(), "fine");
        let _rx = answer.join().unwrap();

        let mut s = UnixStream::connect(&path).unwrap();
        writeln!(s, "not json").unwrap();
        let mut line = String::new();
        BufReader::new(&s).read_line(&mut line).unwrap();
        let r: Response = serde_json::from_str(&line).unwrap();
        assert!(!r.ok && r.error.unwrap().contains("bad request"));
        // One user holds at most its share of connections; the next is
        // told why and closed.
        let held: Vec<UnixStream> = (0..LIMITS.per_peer)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let extra = UnixStream::connect(&path).unwrap();
        let mut line = String::new();
        BufReader::new(&extra).read_line(&mut line).unwrap();
        let r: Response = serde_json::from_str(&line).unwrap();
        assert!(r
            .error
            .unwrap()
            .contains("already holds 32 connections, its limit"));
        // Their places are given back when they close.
        drop(held);
        std::thread::sleep(Duration::from_millis(300));
        // A line past the bound: an error, then the connection closes.
        let mut s = UnixStream::connect(&path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut w = s.try_clone().unwrap();
        let sender = std::thread::spawn(move || {
            let _ = w.write_all(&vec![b'x'; 4 * LINE_MAX]);
        });
        let mut text = String::new();
        // The answer, then the end (or a reset: the rest went unread).
        BufReader::new(&s).read_line(&mut text).unwrap();
        let mut rest = [0u8; 16];
        assert!(!matches!(s.read(&mut rest), Ok(n) if n > 0));
        sender.join().unwrap();
        let r: Response = serde_json::from_str(text.trim()).unwrap();
        assert!(r.error.unwrap().contains("longer than 65536 bytes"));
        drop(server);
        assert!(!path.exists());
        assert!(matches!(
            call(&path, &Request::Status),
            Err(CtlError::NotRunning { .. })
        ));
    }
}
