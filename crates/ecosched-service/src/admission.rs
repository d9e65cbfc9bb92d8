//! Whether a listener takes one more connection: at most so many per peer
//! ([`crate::peer`]) and in total, and never once the daemon's open
//! descriptors reach its reserve — the descriptors its groups need to
//! observe and restore their tasks come before any client's. A refused
//! connection is closed at once; refusals are logged at most once a
//! minute per listener, so that a flood does not flood the log too.

use crate::peer::Peer;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How many connections a listener holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// From one peer at once.
    pub per_peer: usize,
    /// From everyone at once.
    pub total: usize,
}

/// Descriptors kept free for the daemon's own work: a quarter of the
/// open-file limit, and at least this many.
pub const RESERVE_MIN: u64 = 128;

/// The descriptors a process with open-file limit `limit` keeps free.
pub fn reserve(limit: u64) -> u64 {
    (limit / 4).max(RESERVE_MIN)
}

/// The process's open descriptors and its soft open-file limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptors {
    /// Open now.
    pub open: u64,
    /// `RLIMIT_NOFILE`'s soft limit.
    pub limit: u64,
}

impl Descriptors {
    /// This process's, from `/proc/self/fd` and `getrlimit`; `None` when
    /// either cannot be read.
    pub fn own() -> Option<Self> {
        let (limit, _) =
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).ok()?;
        let open = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
        Some(Descriptors { open, limit })
    }

    /// Whether one more connection would eat into the reserve.
    fn reserve_reached(self) -> bool {
        self.open.saturating_add(reserve(self.limit)) >= self.limit
    }
}

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Its peer holds as many as it may.
    Peer(Peer, usize),
    /// The listener holds as many as it may.
    Total(usize),
    /// The daemon's descriptors are down to the reserve.
    Descriptors(Descriptors),
    /// The peer could not be told.
    Unknown,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Peer(p, n) => write!(f, "{p} already holds {n} connections, its limit"),
            Refusal::Total(n) => write!(f, "{n} connections open, the limit"),
            Refusal::Descriptors(d) => write!(
                f,
                "{} of {} descriptors open; {} are kept for the daemon's groups",
                d.open,
                d.limit,
                reserve(d.limit)
            ),
            Refusal::Unknown => write!(f, "the peer could not be told"),
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    by_peer: HashMap<Peer, usize>,
    refused: usize,
    last_log: Option<Instant>,
}

/// A listener's connection counts.
#[derive(Debug, Clone)]
pub struct Admission {
    name: &'static str,
    limits: Limits,
    counts: Arc<Mutex<Counts>>,
}

/// A connection taken: it counts until dropped.
#[derive(Debug)]
pub struct Slot {
    peer: Peer,
    counts: Arc<Mutex<Counts>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.by_peer.get_mut(&self.peer) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                c.by_peer.remove(&self.peer);
            }
        }
    }
}

const LOG_EVERY: Duration = Duration::from_secs(60);

impl Admission {
    /// Counts for the listener `name` (in log lines) with `limits`.
    pub fn new(name: &'static str, limits: Limits) -> Self {
        Admission {
            name,
            limits,
            counts: Arc::default(),
        }
    }

    /// Take a connection from `peer` (`None`: unknown), given the
    /// daemon's `descriptors` (asked only when the counts allow it).
    pub fn admit(
        &self,
        peer: Option<Peer>,
        descriptors: impl FnOnce() -> Option<Descriptors>,
    ) -> Result<Slot, Refusal> {
        let mut c = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let refusal = match peer {
            None => Some(Refusal::Unknown),
            Some(p) => {
                let held = c.by_peer.get(&p).copied().unwrap_or(0);
                if held >= self.limits.per_peer {
                    Some(Refusal::Peer(p, held))
                } else if c.total >= self.limits.total {
                    Some(Refusal::Total(c.total))
                } else {
                    descriptors()
                        .filter(|d| d.reserve_reached())
                        .map(Refusal::Descriptors)
                }
            }
        };
        match (refusal, peer) {
            (None, Some(p)) => {
                c.total += 1;
                *c.by_peer.entry(p).or_insert(0) += 1;
                Ok(Slot {
                    peer: p,
                    counts: Arc::clone(&self.counts),
                })
            }
            (refusal, _) => {
                let refusal = refusal.unwrap_or(Refusal::Unknown);
                c.refused += 1;
                if c.last_log.is_none_or(|t| t.elapsed() >= LOG_EVERY) {
                    tracing::warn!(
                        "{}: refused {} connection(s) in the last minute, the last because {refusal}",
                        self.name, c.refused
                    );
                    c.refused = 0;
                    c.last_log = Some(Instant::now());
                }
                Err(refusal)
            }
        }
    }

    /// Connections held now.
    pub fn held(&self) -> usize {
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .total
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const LIMITS: Limits = Limits {
        per_peer: 2,
        total: 3,
    };

    fn plenty() -> Option<Descriptors> {
        Some(Descriptors {
            open: 10,
            limit: 1024,
        })
    }

    #[test]
    fn one_peer_cannot_take_another_s_place() {
        let a = Admission::new("test", LIMITS);
        let nobody = Some(Peer::Uid(65534));
        let root = Some(Peer::Uid(0));
        let s1 = a.admit(nobody, plenty).unwrap();
        let _s2 = a.admit(nobody, plenty).unwrap();
        assert_eq!(
            a.admit(nobody, plenty).unwrap_err(),
            Refusal::Peer(Peer::Uid(65534), 2)
        );
        let _s3 = a.admit(root, plenty).unwrap();
        assert_eq!(
            a.admit(Some(Peer::Ip([192, 0, 2, 1].into())), plenty)
                .unwrap_err(),
            Refusal::Total(3)
        );
        drop(s1);
        assert_eq!(a.held(), 2);
        let _s4 = a.admit(nobody, plenty).unwrap();
        assert_eq!(a.admit(None, plenty).unwrap_err(), Refusal::Unknown);
    }

    #[test]
    fn the_reserve_is_never_handed_to_clients() {
        assert_eq!(reserve(512), 128);
        assert_eq!(reserve(1 << 20), 1 << 18);
        let a = Admission::new("test", LIMITS);
        let low = Descriptors {
            open: 384,
            limit: 512,
        };
        assert_eq!(
            a.admit(Some(Peer::Uid(0)), || Some(low)).unwrap_err(),
            Refusal::Descriptors(low)
        );
        let room = Descriptors {
            open: 383,
            limit: 512,
        };
        assert!(a.admit(Some(Peer::Uid(0)), || Some(room)).is_ok());
        assert!(Descriptors::own().unwrap().open > 0);
        assert!(Refusal::Descriptors(low)
            .to_string()
            .contains("384 of 512 descriptors open; 128 are kept"));
    }
}
