//! Who is at the other end of a connection, so that the listeners can
//! count connections per peer ([`crate::admission`]): the user of a local
//! peer, the address of a remote one.
//!
//! On the control socket the kernel says who connected (`SO_PEERCRED`).
//! A TCP peer on this machine — loopback, or one of the machine's own
//! addresses — would otherwise share one address with every local user,
//! the scraper included, and one user's flood would count against all;
//! its socket is in this network namespace, so the kernel's socket table
//! names its owner. That is one `NETLINK_SOCK_DIAG` request for exactly
//! that socket (`inet_diag_req_v2` without `NLM_F_DUMP`, see the kernel's
//! `include/uapi/linux/inet_diag.h`), answered before `sendto` returns; a
//! remote peer has no socket here and is counted by its address.

use nix::sys::socket::{
    getsockopt, recv, sendto, socket, sockopt, AddressFamily, MsgFlags, NetlinkAddr, SockFlag,
    SockProtocol, SockType,
};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;

/// Who a connection comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    /// A process of this machine, by its user.
    Uid(u32),
    /// A remote host.
    Ip(IpAddr),
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Uid(u) => write!(f, "uid {u}"),
            Peer::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// The user that connected to a Unix socket; `None` when the kernel does
/// not say (then the connection is refused).
pub fn unix_peer(stream: &UnixStream) -> Option<Peer> {
    getsockopt(stream, sockopt::PeerCredentials)
        .ok()
        .map(|c| Peer::Uid(c.uid()))
}

/// Asks the kernel who owns local TCP sockets, through one netlink socket
/// kept for the listener's life (opened at the first question).
#[derive(Debug, Default)]
pub struct PeerLookup {
    diag: Option<OwnedFd>,
    sequence: u32,
}

impl PeerLookup {
    /// The peer of an accepted TCP connection: the owner of its socket
    /// when that socket is on this machine, else its address.
    pub fn tcp_peer(&mut self, stream: &TcpStream) -> Option<Peer> {
        let peer = unmapped(stream.peer_addr().ok()?);
        let local = unmapped(stream.local_addr().ok()?);
        Some(match self.local_owner(peer, local) {
            Some(uid) => Peer::Uid(uid),
            None => Peer::Ip(peer.ip()),
        })
    }

    /// The uid owning the TCP socket of this namespace whose own address
    /// is `at` and whose peer is `to`, if there is one.
    fn local_owner(&mut self, at: SocketAddr, to: SocketAddr) -> Option<u32> {
        if self.diag.is_none() {
            self.diag = socket(
                AddressFamily::Netlink,
                SockType::Datagram,
                SockFlag::SOCK_CLOEXEC,
                SockProtocol::NetlinkSockDiag,
            )
            .ok();
        }
        let fd = self.diag.as_ref()?.as_raw_fd();
        let mut answer = [0u8; 1024];
        // Nothing earlier may be taken for this answer.
        while recv(fd, &mut answer, MsgFlags::MSG_DONTWAIT).is_ok_and(|n| n > 0) {}
        self.sequence = self.sequence.wrapping_add(1);
        let request = diag_request(at, to, self.sequence)?;
        sendto(fd, &request, &NetlinkAddr::new(0, 0), MsgFlags::empty()).ok()?;
        // The kernel answers a single-socket request before `sendto`
        // returns.
        let n = recv(fd, &mut answer, MsgFlags::MSG_DONTWAIT).ok()?;
        diag_uid(answer.get(..n)?, self.sequence)
    }
}

/// An IPv4 peer of a dual-stack listener has an IPv4 socket of its own.
fn unmapped(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), v6.port()),
            None => a,
        },
        SocketAddr::V4(_) => a,
    }
}

const NLMSG_HDR: usize = 16;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 1;
const IPPROTO_TCP: u8 = 6;
/// `inet_diag_req_v2`: family, protocol, extensions, pad, states, then
/// `inet_diag_sockid` (48 bytes).
const REQ_LEN: usize = 8 + 48;
/// Where `idiag_uid` sits in `inet_diag_msg`: 4 bytes of family, state,
/// timer and retransmits, the 48-byte `inet_diag_sockid`, then expires,
/// rqueue and wqueue (4 bytes each).
const UID_AT: usize = 4 + 48 + 12;

/// The netlink message that asks for the one socket with own address `at`
/// and peer `to`; `None` when the two are not of one family.
fn diag_request(at: SocketAddr, to: SocketAddr, sequence: u32) -> Option<Vec<u8>> {
    let (family, src, dst): (u8, Vec<u8>, Vec<u8>) = match (at.ip(), to.ip()) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (2, a.octets().to_vec(), b.octets().to_vec()),
        (IpAddr::V6(a), IpAddr::V6(b)) => (10, a.octets().to_vec(), b.octets().to_vec()),
        _ => return None,
    };
    let len = NLMSG_HDR + REQ_LEN;
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&u32::try_from(len).ok()?.to_ne_bytes());
    m.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    m.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    m.extend_from_slice(&sequence.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel's
    m.extend_from_slice(&[family, IPPROTO_TCP, 0, 0]);
    m.extend_from_slice(&u32::MAX.to_ne_bytes()); // every state
    m.extend_from_slice(&at.port().to_be_bytes());
    m.extend_from_slice(&to.port().to_be_bytes());
    for addr in [&src, &dst] {
        let mut field = [0u8; 16];
        field.get_mut(..addr.len())?.copy_from_slice(addr);
        m.extend_from_slice(&field);
    }
    m.extend_from_slice(&0u32.to_ne_bytes()); // any interface
                                              // INET_DIAG_NOCOOKIE twice: any socket with that address pair.
    m.extend_from_slice(&u32::MAX.to_ne_bytes());
    m.extend_from_slice(&u32::MAX.to_ne_bytes());
    Some(m)
}

/// The owner in the `SOCK_DIAG_BY_FAMILY` answer to request `sequence`;
/// `None` for an error message (no such socket), another request's
/// answer or a short one.
fn diag_uid(answer: &[u8], sequence: u32) -> Option<u32> {
    let kind = u16::from_ne_bytes(answer.get(4..6)?.try_into().ok()?);
    let seq = u32::from_ne_bytes(answer.get(8..12)?.try_into().ok()?);
    if kind != SOCK_DIAG_BY_FAMILY || seq != sequence {
        return None;
    }
    let at = NLMSG_HDR + UID_AT;
    Some(u32::from_ne_bytes(answer.get(at..at + 4)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_loopback_peer_is_its_user_and_a_unix_peer_too() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let me = nix::unistd::geteuid().as_raw();
        let mut peers = PeerLookup::default();
        assert_eq!(peers.tcp_peer(&accepted), Some(Peer::Uid(me)));
        // The netlink socket is kept and asked again.
        assert_eq!(peers.tcp_peer(&accepted), Some(Peer::Uid(me)));
        let (a, _b) = UnixStream::pair().unwrap();
        assert_eq!(unix_peer(&a), Some(Peer::Uid(me)));
    }

    #[test]
    fn a_peer_with_no_socket_here_is_its_address() {
        let nobody: SocketAddr = "192.0.2.7:40000".parse().unwrap();
        let us: SocketAddr = "192.0.2.1:9864".parse().unwrap();
        assert_eq!(PeerLookup::default().local_owner(nobody, us), None);
    }

    #[test]
    fn the_request_asks_for_one_socket_by_its_addresses() {
        let at: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let to: SocketAddr = "127.0.0.2:9864".parse().unwrap();
        let m = diag_request(at, to, 7).unwrap();
        assert_eq!(&m[8..12], &7u32.to_ne_bytes());
        assert_eq!(m.len(), 72);
        assert_eq!(&m[16..18], &[2, 6]);
        assert_eq!(&m[24..26], &40000u16.to_be_bytes());
        assert_eq!(&m[26..28], &9864u16.to_be_bytes());
        assert_eq!(&m[28..32], &[127, 0, 0, 1]);
        assert_eq!(&m[44..48], &[127, 0, 0, 2]);
        let v6: SocketAddr = "[::1]:1".parse().unwrap();
        assert!(diag_request(at, v6, 1).is_none());
        assert_eq!(
            unmapped("[::ffff:127.0.0.1]:5".parse().unwrap()),
            "127.0.0.1:5".parse::<SocketAddr>().unwrap()
        );
    }

    #[test]
    fn an_error_answer_names_no_owner() {
        let mut error = vec![0u8; 36];
        error[4..6].copy_from_slice(&2u16.to_ne_bytes());
        assert_eq!(diag_uid(&error, 0), None);
        let mut found = vec![0u8; 88];
        found[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        found[8..12].copy_from_slice(&3u32.to_ne_bytes());
        found[80..84].copy_from_slice(&65534u32.to_ne_bytes());
        assert_eq!(diag_uid(&found, 3), Some(65534));
        assert_eq!(diag_uid(&found, 2), None);
    }
}
