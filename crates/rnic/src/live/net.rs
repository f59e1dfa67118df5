//! The live endpoint's wire: RoCEv2 as IPv4 datagrams on real sockets.
//!
//! Why raw IPv4 sockets and not a UDP socket: the ICRC covers the IPv4 identification
//! field (IBA Annex A17 masks only TOS, TTL and the checksums), and a UDP socket lets the
//! kernel pick that field. Kernels up to 6.x wrote 0 into DF datagrams of unconnected
//! sockets, so the header could be rebuilt from addresses, ports and lengths; newer ones
//! (this machine's 6.18 among them) number every datagram, and the sender cannot know the
//! number its ICRC must cover, nor the receiver the number the peer's covered. So the engine's
//! own IPv4/UDP header goes on the wire (`IPPROTO_RAW`, the kernel fills in only the
//! checksum), and datagrams are read with their real header (`SOCK_RAW`/`IPPROTO_UDP`): the
//! ICRC is computed and checked over exactly the bytes that travel. A UDP socket bound to
//! `IP:4791` claims the port, so that the kernel does not answer the peer with ICMP port
//! unreachable and two endpoints cannot share an address; its copies are never read.

use std::io;
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use rnic_wire::{ETHERTYPE_IPV4, ROCE_PORT};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// Bytes of the Ethernet II header the engine's frames start with (the kernel adds its own).
pub const ETH_BYTES: usize = 14;
/// Receive buffer asked for (the kernel caps it at `net.core.rmem_max`).
const RCVBUF_BYTES: usize = 4 << 20;
/// `recv` flag: do not block (Linux's value).
const MSG_DONTWAIT: i32 = 0x40;
/// Offset of the IPv4 identification field in an IPv4 header.
const IP_IDENT_AT: usize = 4;

/// Sends and receives the RoCEv2 datagrams of one local IPv4 address.
pub struct RoceSocket {
    local_ip: Ipv4Addr,
    tx: Socket,
    /// The raw receive socket (blocking; see [`RoceSocket::recv_once`]).
    rx: Socket,
    /// Its receive timeout as last set.
    rx_timeout: std::cell::Cell<Option<Duration>>,
    _port_claim: UdpSocket,
}

/// Why the endpoint cannot open its sockets, with what to do about it.
fn open_error(what: &str, e: io::Error) -> anyhow::Error {
    if e.kind() == io::ErrorKind::PermissionDenied {
        anyhow::anyhow!(
            "cannot open the {what}: {e}. rnic live sends RoCEv2 as raw IPv4 datagrams (the \
             ICRC covers the IPv4 identification field, which a UDP socket leaves to the \
             kernel): run it as root or give it CAP_NET_RAW"
        )
    } else {
        anyhow::anyhow!("cannot open the {what}: {e}")
    }
}

impl RoceSocket {
    /// Opens the sockets of `local_ip`. Fails when another endpoint holds `local_ip:4791`.
    pub fn open(local_ip: Ipv4Addr) -> anyhow::Result<RoceSocket> {
        let claim = UdpSocket::bind(SocketAddrV4::new(local_ip, ROCE_PORT)).map_err(|e| {
            anyhow::anyhow!(
                "cannot bind UDP {local_ip}:{ROCE_PORT} (RoCEv2's port): {e}; another endpoint \
                 on this address? Two endpoints on one machine need two addresses, e.g. \
                 --bind 127.0.0.1 and --bind 127.0.0.2"
            )
        })?;
        let tx = Socket::new(
            Domain::IPV4,
            Type::RAW,
            Some(Protocol::from(libc_ipproto_raw())),
        )
        .map_err(|e| open_error("raw IPv4 send socket", e))?;
        let rx = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::UDP))
            .map_err(|e| open_error("raw IPv4 receive socket", e))?;
        rx.bind(&SockAddr::from(SocketAddrV4::new(local_ip, 0)))?;
        // Best effort: a smaller buffer only means more loss under bursts, which RC repairs.
        let _ = rx.set_recv_buffer_size(RCVBUF_BYTES);
        let _ = tx.set_send_buffer_size(RCVBUF_BYTES);
        Ok(RoceSocket {
            local_ip,
            tx,
            rx,
            rx_timeout: std::cell::Cell::new(None),
            _port_claim: claim,
        })
    }

    /// Sets the receive timeout of blocking receives, with a system call only when it
    /// changes (the event loop asks for the same wait turn after turn).
    fn set_timeout(&self, wait: Duration) -> io::Result<()> {
        if self.rx_timeout.get() != Some(wait) {
            self.rx.set_read_timeout(Some(wait))?;
            self.rx_timeout.set(Some(wait));
        }
        Ok(())
    }

    /// One `recv`: blocking up to the socket's timeout, or, for `dont_wait`, with
    /// `MSG_DONTWAIT`, so that draining a batch needs no mode switch.
    fn recv_once(&self, buf: &mut [u8], dont_wait: bool) -> io::Result<usize> {
        let flags = if dont_wait { MSG_DONTWAIT } else { 0 };
        // SAFETY: `[u8]` and `[MaybeUninit<u8>]` have the same layout, and `recv` only
        // writes initialised bytes into the buffer, so `buf` stays initialised.
        let uninit = unsafe { &mut *(buf as *mut [u8] as *mut [MaybeUninit<u8>]) };
        self.rx.recv_with_flags(uninit, flags)
    }

    pub fn local_ip(&self) -> Ipv4Addr {
        self.local_ip
    }

    /// Sends the IPv4 datagram of an engine frame (`frame[ETH_BYTES..]`) to its destination.
    /// A frame whose IPv4 identification is 0 gets 1 and a new ICRC first: the kernel
    /// replaces a zero identification with its own, which the ICRC would not cover.
    pub fn send(&self, frame: &mut [u8]) -> io::Result<()> {
        let Some(ip) = frame.get(ETH_BYTES..) else {
            return Ok(());
        };
        if ip.len() < 20 {
            return Ok(());
        }
        let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
        if ip[IP_IDENT_AT] == 0 && ip[IP_IDENT_AT + 1] == 0 {
            let mut hdr = rnic_wire::ipv4::Packet::new_unchecked(&mut frame[ETH_BYTES..]);
            hdr.set_ident(1);
            hdr.fill_checksum();
            rnic_wire::icrc::reseal(frame).map_err(io::Error::other)?;
        }
        let to = SockAddr::from(SocketAddrV4::new(dst, 0));
        loop {
            match self.tx.send_to(&frame[ETH_BYTES..], &to) {
                Ok(_) => return Ok(()),
                // The send buffer is full: the datagram waits for room rather than being lost.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) if e.raw_os_error() == Some(105) => std::thread::yield_now(), // ENOBUFS
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits up to `wait` (0: does not wait) for a RoCEv2 datagram to this address and writes
    /// it into `buf` as an engine frame: an Ethernet header, then the datagram as received.
    /// Returns the frame's length, or `None` when nothing came in time. Datagrams to other
    /// addresses or ports (the raw socket sees every UDP datagram to the address) are skipped.
    pub fn recv(&self, buf: &mut [u8], wait: Duration) -> io::Result<Option<usize>> {
        loop {
            if !wait.is_zero() {
                self.set_timeout(wait)?;
            }
            let got = self.recv_once(&mut buf[ETH_BYTES..], wait.is_zero());
            let n = match got {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(None)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if is_roce_to(self.local_ip, &buf[ETH_BYTES..ETH_BYTES + n]) {
                put_ethernet_header(buf);
                return Ok(Some(ETH_BYTES + n));
            }
        }
    }
}

/// The IPv4 datagram `ip` is UDP to `local_ip`, port 4791 (its length is checked before any
/// field is read; the engine checks everything else).
pub fn is_roce_to(local_ip: Ipv4Addr, ip: &[u8]) -> bool {
    let Some(&vihl) = ip.first() else {
        return false;
    };
    let ihl = usize::from(vihl & 0x0F) * 4;
    ihl >= 20
        && ip.len() >= ihl + 8
        && vihl >> 4 == 4
        && ip[9] == 17
        && ip[16..20] == local_ip.octets()
        && u16::from_be_bytes([ip[ihl + 2], ip[ihl + 3]]) == ROCE_PORT
}

/// Writes the Ethernet header the engine's frames start with into `buf[..ETH_BYTES]` (the
/// MAC addresses are zero: the engine does not read them).
pub fn put_ethernet_header(buf: &mut [u8]) {
    buf[..12].fill(0);
    buf[12..ETH_BYTES].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
}

/// `IPPROTO_RAW` (255): a raw socket that sends the caller's whole IPv4 header.
fn libc_ipproto_raw() -> i32 {
    255
}
