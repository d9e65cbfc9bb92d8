//! The exporter's HTTP side: `GET /metrics` (and `/`) answer the metrics
//! text, one request per connection (`Connection: close`), which is all a
//! Prometheus scrape needs.
//!
//! Nothing a client does reaches another client or the daemon's groups:
//!
//! - every connection is served by a thread of its own, so a client that
//!   sends slowly or never reads its answer holds only its own thread;
//! - each has [`HEAD_DEADLINE`] to send its request (at most
//!   [`HEAD_MAX`] bytes) and [`ANSWER_DEADLINE`] to take the answer, then
//!   it is closed;
//! - [`LIMITS`] bound connections per peer (a local user, by uid, or a
//!   remote address: [`crate::peer`]) and in total, and none is taken once
//!   the daemon's descriptors are down to its reserve
//!   ([`crate::admission`]); a refused connection gets `503` and is closed.

use crate::admission::{Admission, Descriptors, Limits, Slot};
use crate::metrics::Metrics;
use crate::peer::PeerLookup;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Connections the exporter holds: per peer, and in all.
pub const LIMITS: Limits = Limits {
    per_peer: 8,
    total: 64,
};

/// How long a client has to send its request's head.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(5);

/// How long a client has to take its answer.
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(5);

/// The largest request head read.
pub const HEAD_MAX: usize = 8 * 1024;

/// The content type of the OpenMetrics text format.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of Prometheus's classic text format.
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A connection's thread needs little stack: the answer is on the heap.
const CLIENT_STACK: usize = 256 * 1024;

/// How often the listening thread looks at its stop flag.
const STOP_CHECK: u16 = 100;

/// The exporter, listening from a thread of its own.
#[derive(Debug)]
pub struct Exporter {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Exporter {
    /// Listen on `addr` and serve `metrics`.
    pub fn start(addr: SocketAddr, metrics: Metrics) -> Result<Self, String> {
        let listener = listen_tcp(addr)
            .map_err(|e| format!("cannot listen on {addr} for the metrics exporter: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("metrics exporter on {addr}: {e}"))?;
        let addr = listener.local_addr().unwrap_or(addr);
        let stop = Arc::new(AtomicBool::new(false));
        let stop_t = Arc::clone(&stop);
        let admission = Admission::new("metrics exporter", LIMITS);
        let thread = std::thread::Builder::new()
            .name("exporter".into())
            .spawn(move || listen(&listener, &admission, &metrics, &stop_t))
            .map_err(|e| format!("cannot start the exporter thread: {e}"))?;
        Ok(Exporter {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A listening socket on `addr` whose queue of connections waiting to be
/// accepted is as long as the kernel allows (`net.core.somaxconn`), not
/// the 128 of `TcpListener::bind`: a flood of connections the exporter
/// refuses one by one must not fill the queue between two accepts, or the
/// kernel drops a scraper's SYN and its connect waits a second to retry.
fn listen_tcp(addr: SocketAddr) -> std::io::Result<TcpListener> {
    use nix::sys::socket::{
        bind, listen, setsockopt, socket, sockopt, AddressFamily, Backlog, SockFlag, SockType,
        SockaddrStorage,
    };
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::Inet,
        SocketAddr::V6(_) => AddressFamily::Inet6,
    };
    let fd = socket(family, SockType::Stream, SockFlag::SOCK_CLOEXEC, None)?;
    setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    bind(fd.as_raw_fd(), &SockaddrStorage::from(addr))?;
    listen(&fd, Backlog::MAXCONN)?;
    Ok(TcpListener::from(fd))
}

/// Wait up to [`STOP_CHECK`] ms for `fd` to be readable (a connection to
/// accept, a request to read).
pub(crate) fn readable(fd: impl AsFd) -> bool {
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::from(STOP_CHECK)).is_ok_and(|n| n > 0)
}

fn listen(listener: &TcpListener, admission: &Admission, metrics: &Metrics, stop: &AtomicBool) {
    let mut peers = PeerLookup::default();
    while !stop.load(Ordering::SeqCst) {
        if !readable(listener) {
            continue;
        }
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => {
                // Out of descriptors (EMFILE) or an aborted connection:
                // the pending ones wait in the backlog meanwhile.
                tracing::warn!("metrics exporter: {e}");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        match admission.admit(peers.tcp_peer(&stream), Descriptors::own) {
            Ok(slot) => {
                let metrics = metrics.clone();
                let spawned = std::thread::Builder::new()
                    .name("metrics client".into())
                    .stack_size(CLIENT_STACK)
                    .spawn(move || serve(stream, &metrics, slot));
                if let Err(e) = spawned {
                    tracing::error!("metrics exporter: cannot start a client thread: {e}");
                }
            }
            Err(why) => refuse(stream, &format!("refused: {why}\n")),
        }
    }
}

/// Answer 503 if the client's buffer takes it at once, and close.
fn refuse(stream: TcpStream, why: &str) {
    if stream.set_nonblocking(true).is_ok() {
        let _ = (&stream).write(answer("503 Service Unavailable", "text/plain", why).as_bytes());
    }
}

/// An HTTP/1.1 answer with its body.
fn answer(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    /// `GET /metrics` or `GET /`, in OpenMetrics or not.
    Metrics { openmetrics: bool },
    /// Anything else.
    Other,
}

/// Read a request head within the deadline; `None` when the client sent
/// none in time, hung up, or sent more than [`HEAD_MAX`] bytes without
/// ending it.
fn read_head(stream: &mut TcpStream) -> Option<String> {
    let start = Instant::now();
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    loop {
        let left = HEAD_DEADLINE.checked_sub(start.elapsed())?;
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .ok()?;
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(buf.get(..n)?);
        let text = String::from_utf8_lossy(&head);
        if text.contains("\r\n\r\n") || text.contains("\n\n") {
            return Some(text.into_owned());
        }
        if head.len() > HEAD_MAX {
            return None;
        }
    }
}

/// What the head asks for.
fn parse_head(head: &str) -> Asked {
    let mut lines = head.lines();
    let mut first = lines.next().unwrap_or("").split_whitespace();
    let (method, target) = (first.next(), first.next());
    let path = target.and_then(|t| t.split('?').next());
    if method != Some("GET") || !matches!(path, Some("/metrics" | "/")) {
        return Asked::Other;
    }
    // Content negotiation: OpenMetrics for whoever asks for it (Prometheus
    // does), the classic format otherwise.
    let openmetrics = lines.any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("accept") && v.contains("application/openmetrics-text")
        })
    });
    Asked::Metrics { openmetrics }
}

/// Serve one client, holding its `slot` until it is closed.
fn serve(mut stream: TcpStream, metrics: &Metrics, slot: Slot) {
    let Some(head) = read_head(&mut stream) else {
        return;
    };
    let text = match parse_head(&head) {
        Asked::Metrics { openmetrics } => {
            let (encoded, content_type) = if openmetrics {
                (metrics.encode(), CONTENT_TYPE)
            } else {
                (metrics.encode_classic(), CLASSIC_CONTENT_TYPE)
            };
            match encoded {
                Ok(body) => answer("200 OK", content_type, &body),
                Err(e) => answer(
                    "500 Internal Server Error",
                    "text/plain",
                    &format!("cannot encode the metrics: {e}\n"),
                ),
            }
        }
        Asked::Other => answer(
            "404 Not Found",
            "text/plain",
            "only GET /metrics is served\n",
        ),
    };
    write_within(&mut stream, text.as_bytes(), ANSWER_DEADLINE);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    drop(slot);
}

/// Write `bytes` unless the client takes longer than `deadline` in all.
fn write_within(stream: &mut TcpStream, mut bytes: &[u8], deadline: Duration) {
    let start = Instant::now();
    while !bytes.is_empty() {
        let Some(left) = deadline.checked_sub(start.elapsed()) else {
            return;
        };
        if stream
            .set_write_timeout(Some(left.max(Duration::from_millis(1))))
            .is_err()
        {
            return;
        }
        match stream.write(bytes) {
            Ok(0) | Err(_) => return,
            Ok(n) => bytes = bytes.get(n..).unwrap_or(&[]),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn get(addr: SocketAddr, accept: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        // A refused connection may be closed before the request is sent.
        let _ = write!(s, "GET /metrics HTTP/1.1\r\nHost: t\r\n{accept}\r\n");
        // Up to the end, or a reset when the server closed a connection
        // whose request it did not read (a refused one).
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = s.read(&mut buf) {
            bytes.extend_from_slice(&buf[..n]);
        }
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn heads_ask_for_metrics_in_either_format() {
        assert_eq!(
            parse_head("GET /metrics?x=1 HTTP/1.1\r\nAccept: application/openmetrics-text; version=1.0.0\r\n\r\n"),
            Asked::Metrics { openmetrics: true }
        );
        assert_eq!(
            parse_head("GET / HTTP/1.0\r\n\r\n"),
            Asked::Metrics { openmetrics: false }
        );
        assert_eq!(parse_head("POST /metrics HTTP/1.1\r\n\r\n"), Asked::Other);
        assert_eq!(parse_head("GET /etc HTTP/1.1\r\n\r\n"), Asked::Other);
        assert_eq!(parse_head(""), Asked::Other);
    }

    #[test]
    fn a_mute_client_does_not_delay_a_scrape_and_a_peer_is_held_to_its_limit() {
        let exporter = Exporter::start("127.0.0.1:0".parse().unwrap(), Metrics::new()).unwrap();
        let addr = exporter.addr();
        // A client that asks again and again and never reads.
        let mut mute = TcpStream::connect(addr).unwrap();
        mute.set_write_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        for _ in 0..5000 {
            if mute.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").is_err() {
                break;
            }
        }
        let start = Instant::now();
        let text = get(addr, "Accept: application/openmetrics-text\r\n");
        assert!(start.elapsed() < Duration::from_secs(1));
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(
            text.contains(CONTENT_TYPE) && text.ends_with("# EOF\n"),
            "{text}"
        );
        // More silent connections than this user may hold.
        let idle: Vec<TcpStream> = (0..2 * LIMITS.per_peer)
            .filter_map(|_| TcpStream::connect(addr).ok())
            .collect();
        assert!(idle.len() > LIMITS.per_peer);
        // The same user is refused at its limit, with a reason.
        let refused = get(addr, "");
        assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
        assert!(refused.contains("its limit"), "{refused}");
        drop(idle);
        drop(mute);
        std::thread::sleep(Duration::from_millis(300));
        let classic = get(addr, "");
        assert!(classic.contains(CLASSIC_CONTENT_TYPE), "{classic}");
    }
}
