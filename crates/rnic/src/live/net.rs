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
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use rnic_wire::{ETHERTYPE_IPV4, ROCE_PORT};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// Bytes of the Ethernet II header the engine's frames start with (the kernel adds its own).
pub const ETH_BYTES: usize = 14;
/// Receive buffer asked for (the kernel caps it at `net.core.rmem_max`).
const RCVBUF_BYTES: usize = 4 << 20;
/// Datagrams one batched system call (`sendmmsg`, `recvmmsg`) sends or receives at most.
pub const BATCH: usize = 64;
/// Datagrams a receive that does not wait (a spinning latency test's poll) takes at most.
pub const SPIN_BATCH: usize = 8;
/// Offset of the IPv4 identification field in an IPv4 header.
const IP_IDENT_AT: usize = 4;

/// Sends and receives the RoCEv2 datagrams of one local IPv4 address.
pub struct RoceSocket {
    local_ip: Ipv4Addr,
    tx: Socket,
    /// The raw receive socket (blocking; see [`RoceSocket::recv_batch`]).
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

/// Binds the UDP socket that claims `local_ip:4791` for this endpoint ([`RoceSocket`]).
fn claim_roce_port(local_ip: Ipv4Addr) -> anyhow::Result<UdpSocket> {
    UdpSocket::bind(SocketAddrV4::new(local_ip, ROCE_PORT)).map_err(|e| {
        anyhow::anyhow!(
            "cannot bind UDP {local_ip}:{ROCE_PORT} (RoCEv2's port): {e}; another endpoint \
             on this address? Two endpoints on one machine need two addresses, e.g. \
             --bind 127.0.0.1 and --bind 127.0.0.2"
        )
    })
}

impl RoceSocket {
    /// Opens the sockets of `local_ip`. Fails when another endpoint holds `local_ip:4791`.
    /// The port is claimed last, once the receive socket takes datagrams: whoever sees it
    /// bound (a peer started after this side, a test waiting to start the client) knows
    /// that a datagram sent from then on is received, not answered with port unreachable.
    pub fn open(local_ip: Ipv4Addr) -> anyhow::Result<RoceSocket> {
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
        let claim = claim_roce_port(local_ip)?;
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

    pub fn local_ip(&self) -> Ipv4Addr {
        self.local_ip
    }

    /// Sends the IPv4 datagram of an engine frame (`frame[ETH_BYTES..]`) to its destination
    /// (see [`RoceSocket::send_batch`]).
    pub fn send(&self, frame: &mut [u8]) -> io::Result<()> {
        self.send_batch(&mut [frame])
    }

    /// Sends the IPv4 datagrams of engine frames (`frame[ETH_BYTES..]`), in order, each to
    /// its destination, with one `sendmmsg` per [`BATCH`] frames (more when the kernel takes
    /// fewer). A frame whose IPv4 identification is 0 gets 1 and a new ICRC first: the
    /// kernel replaces a zero identification with its own, which the ICRC would not cover.
    /// Frames too short for an IPv4 header are skipped.
    pub fn send_batch<F: AsMut<[u8]>>(&self, frames: &mut [F]) -> io::Result<()> {
        for chunk in frames.chunks_mut(BATCH) {
            let nowhere = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0);
            let mut datagrams: [(&[u8], SocketAddrV4); BATCH] = [(&[], nowhere); BATCH];
            let mut n = 0;
            for frame in chunk.iter_mut() {
                if let Some(dst) = prepare(frame.as_mut())? {
                    datagrams[n] = (&frame.as_mut()[ETH_BYTES..], SocketAddrV4::new(dst, 0));
                    n += 1;
                }
            }
            send_all(n, |from| {
                sendmmsg_once(self.tx.as_raw_fd(), &datagrams[from..n])
            })?;
        }
        Ok(())
    }

    /// Waits up to `wait` (0: does not wait) for RoCEv2 datagrams to this address and writes
    /// them into `frames` as engine frames, in arrival order: an Ethernet header, then the
    /// datagram as received; `lens` gets each frame's length. One `recvmmsg` takes what the
    /// socket holds, up to `frames.len()` datagrams, waiting for the first only. Returns how
    /// many frames were written (0: nothing came in time). Datagrams to other addresses or
    /// ports (the raw socket sees every UDP datagram to the address) are skipped.
    pub fn recv_batch(
        &self,
        frames: &mut [Vec<u8>],
        lens: &mut [usize],
        wait: Duration,
    ) -> io::Result<usize> {
        let flags = if wait.is_zero() {
            libc::MSG_DONTWAIT
        } else {
            self.set_timeout(wait)?;
            libc::MSG_WAITFORONE
        };
        // A poll that does not wait takes at most SPIN_BATCH: it runs again at once.
        let all = frames.len().min(lens.len());
        let n = if wait.is_zero() {
            all.min(SPIN_BATCH)
        } else {
            all
        };
        let (frames, lens) = (&mut frames[..n], &mut lens[..n]);
        loop {
            let got = match recvmmsg_once(self.rx.as_raw_fd(), frames, ETH_BYTES, lens, flags) {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(0)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let mut kept = 0;
            for i in 0..got {
                let n = lens[i];
                if is_roce_to(self.local_ip, &frames[i][ETH_BYTES..ETH_BYTES + n]) {
                    put_ethernet_header(&mut frames[i]);
                    frames.swap(kept, i);
                    lens[kept] = ETH_BYTES + n;
                    kept += 1;
                }
            }
            // Only strays came: look again, as a wait for RoCEv2 datagrams would.
            if kept > 0 || got == 0 {
                return Ok(kept);
            }
        }
    }

    /// Waits up to `wait` (0: does not wait) for one RoCEv2 datagram to this address and
    /// writes it into `buf` as an engine frame (see [`RoceSocket::recv_batch`]); returns its
    /// length, or `None` when nothing came in time.
    pub fn recv(&self, buf: &mut Vec<u8>, wait: Duration) -> io::Result<Option<usize>> {
        let mut lens = [0];
        let got = self.recv_batch(std::slice::from_mut(buf), &mut lens, wait)?;
        Ok((got > 0).then_some(lens[0]))
    }
}

/// Gives an engine frame with an IPv4 identification of 0 the identification 1 and a new
/// ICRC (see [`RoceSocket::send_batch`]); returns its destination, `None` for a frame too
/// short to carry an IPv4 header.
fn prepare(frame: &mut [u8]) -> io::Result<Option<Ipv4Addr>> {
    let Some(ip) = frame.get(ETH_BYTES..) else {
        return Ok(None);
    };
    if ip.len() < 20 {
        return Ok(None);
    }
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    if ip[IP_IDENT_AT] == 0 && ip[IP_IDENT_AT + 1] == 0 {
        let mut hdr = rnic_wire::ipv4::Packet::new_unchecked(&mut frame[ETH_BYTES..]);
        hdr.set_ident(1);
        hdr.fill_checksum();
        rnic_wire::icrc::reseal(frame).map_err(io::Error::other)?;
    }
    Ok(Some(dst))
}

/// Hands `count` datagrams to `call` (one batched send from the given index on, returning
/// how many the kernel took) until all went: a call that takes fewer is followed by one for
/// the rest, and a full send buffer (`EAGAIN`, `ENOBUFS`) is waited out rather than a
/// datagram lost.
pub fn send_all(count: usize, mut call: impl FnMut(usize) -> io::Result<usize>) -> io::Result<()> {
    let mut sent = 0;
    while sent < count {
        match call(sent) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => std::thread::yield_now(),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One `sendmmsg` of `datagrams` (bytes, destination; a raw socket ignores the port) on
/// socket `fd`, at most [`BATCH`] of them; returns how many the kernel took.
pub fn sendmmsg_once(fd: RawFd, datagrams: &[(&[u8], SocketAddrV4)]) -> io::Result<usize> {
    let n = datagrams.len().min(BATCH);
    // SAFETY: all-zero bytes are valid values of these plain C structs.
    let mut addrs: [libc::sockaddr_in; BATCH] = unsafe { std::mem::zeroed() };
    let mut iovs: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for (i, (bytes, dst)) in datagrams[..n].iter().enumerate() {
        addrs[i].sin_family = libc::AF_INET as libc::sa_family_t;
        addrs[i].sin_port = dst.port().to_be();
        addrs[i].sin_addr.s_addr = u32::from_ne_bytes(dst.ip().octets());
        iovs[i].iov_base = bytes.as_ptr() as *mut libc::c_void;
        iovs[i].iov_len = bytes.len();
        let h = &mut msgs[i].msg_hdr;
        h.msg_name = (&mut addrs[i] as *mut libc::sockaddr_in).cast();
        h.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        h.msg_iov = &mut iovs[i];
        h.msg_iovlen = 1;
    }
    // SAFETY: `msgs[..n]` point at `addrs` and `iovs`, which outlive the call, and the
    // iovecs at `datagrams`' bytes, which the kernel only reads.
    let r = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), n as libc::c_uint, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// One `recvmmsg` on socket `fd` (`flags`: `MSG_DONTWAIT`, or `MSG_WAITFORONE` to wait for
/// the first datagram only) into `bufs[i][at..]`, at most [`BATCH`] datagrams, their
/// lengths into `lens`; returns how many came. A datagram longer than its buffer is cut.
pub fn recvmmsg_once(
    fd: RawFd,
    bufs: &mut [Vec<u8>],
    at: usize,
    lens: &mut [usize],
    flags: i32,
) -> io::Result<usize> {
    use std::mem::MaybeUninit;
    let n = bufs.len().min(lens.len()).min(BATCH);
    // Only the `n` headers the call uses are written: a spinning poll passes a few, and
    // zeroing all [`BATCH`] on every poll was 7 % of a latency test's CPU.
    let mut iovs = [MaybeUninit::<libc::iovec>::uninit(); BATCH];
    let mut msgs = [MaybeUninit::<libc::mmsghdr>::uninit(); BATCH];
    for (i, buf) in bufs[..n].iter_mut().enumerate() {
        let room = buf.get_mut(at..).unwrap_or_default();
        let iov = iovs[i].write(libc::iovec {
            iov_base: room.as_mut_ptr().cast(),
            iov_len: room.len(),
        });
        // SAFETY: all-zero bytes are a valid value of this plain C struct.
        let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
        m.msg_hdr.msg_iov = iov;
        m.msg_hdr.msg_iovlen = 1;
        msgs[i].write(m);
    }
    // SAFETY: the first `n` headers are initialised; their iovecs point into `bufs`,
    // borrowed mutably for the call; the kernel writes at most `iov_len` bytes into each.
    let r = unsafe {
        libc::recvmmsg(
            fd,
            msgs.as_mut_ptr().cast::<libc::mmsghdr>(),
            n as libc::c_uint,
            flags,
            std::ptr::null_mut(),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let got = r as usize;
    for (len, m) in lens.iter_mut().zip(&msgs[..got]) {
        // SAFETY: the kernel returned `got` <= `n`, and the first `n` are initialised.
        *len = unsafe { m.assume_init_ref() }.msg_len as usize;
    }
    Ok(got)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A send the kernel takes in parts (3 datagrams a call, once a full buffer) goes on
    /// from where the last call stopped until every datagram went.
    #[test]
    fn send_all_resumes_partial_sends() {
        let mut froms = Vec::new();
        let mut full_once = true;
        send_all(10, |from| {
            froms.push(from);
            if from == 3 && std::mem::take(&mut full_once) {
                return Err(io::Error::from(io::ErrorKind::WouldBlock));
            }
            Ok((10 - from).min(3))
        })
        .unwrap();
        assert_eq!(froms, [0, 3, 3, 6, 9]);
        let err = send_all(2, |_| Err(io::Error::from(io::ErrorKind::PermissionDenied)));
        assert_eq!(err.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    }

    /// More datagrams than one call carries go out in order over several `sendmmsg`s, and
    /// come back in order over several `recvmmsg`s, each taking at most its buffers, every
    /// payload at the asked offset.
    #[test]
    fn batches_larger_than_one_call_keep_their_order() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let to = match rx.local_addr().unwrap() {
            std::net::SocketAddr::V4(a) => a,
            other => panic!("{other}"),
        };
        let payloads: Vec<Vec<u8>> = (0..100u8).map(|i| vec![i; 1 + usize::from(i)]).collect();
        let datagrams: Vec<(&[u8], SocketAddrV4)> =
            payloads.iter().map(|p| (p.as_slice(), to)).collect();
        let mut calls = Vec::new();
        send_all(datagrams.len(), |from| {
            calls.push(from);
            sendmmsg_once(tx.as_raw_fd(), &datagrams[from..])
        })
        .unwrap();
        assert!(calls.len() >= 2 && calls[1] <= BATCH, "{calls:?}");
        let (mut bufs, mut lens) = (vec![vec![0xEE; 200]; 32], [0; 32]);
        let mut got = Vec::new();
        while got.len() < payloads.len() {
            let n = recvmmsg_once(
                rx.as_raw_fd(),
                &mut bufs,
                7,
                &mut lens,
                libc::MSG_WAITFORONE,
            )
            .unwrap();
            assert!((1..=32).contains(&n));
            for (buf, &len) in bufs.iter().zip(&lens[..n]) {
                assert_eq!(buf[..7], [0xEE; 7]);
                got.push(buf[7..7 + len].to_vec());
            }
        }
        assert_eq!(got, payloads);
        let none = recvmmsg_once(rx.as_raw_fd(), &mut bufs, 0, &mut lens, libc::MSG_DONTWAIT);
        assert_eq!(none.unwrap_err().kind(), io::ErrorKind::WouldBlock);
    }
}
