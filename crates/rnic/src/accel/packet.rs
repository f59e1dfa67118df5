//! Raw Ethernet frames on one interface: an AF_PACKET socket bound to it, in promiscuous
//! mode, that sees every frame arriving (not the ones it sends) and sends frames unchanged.
//!
//! Every frame read or written starts with a virtio-net header ([`VNET_HDR_BYTES`],
//! `PACKET_VNET_HDR`): on veth, TCP segments arrive with their checksum left to the
//! sender's offload (and, with TSO, as one super-frame of many segments). Without the header
//! a forwarded segment would leave with a checksum nobody fills in and the peer would drop
//! it (perftest's TCP exchange never connected through the bump); with it the kernel
//! finishes the checksum and the segmentation on the way out, as it would have.
//! Written against libc because no maintained crate binds AF_PACKET sockets to an interface
//! with the options a bump in the wire needs (promiscuous membership, outgoing frames
//! ignored); the unsafe calls are confined here.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Frames the Linux kernel hands a packet socket that the socket itself sent.
const PACKET_OUTGOING: u8 = 4;
/// `setsockopt` option: frames carry a `struct virtio_net_hdr` in front.
const PACKET_VNET_HDR: libc::c_int = 15;
/// Bytes of `struct virtio_net_hdr` in front of every frame; all zero means "nothing left
/// to the kernel" (a frame of the accelerator's own).
pub const VNET_HDR_BYTES: usize = 10;

/// An AF_PACKET socket on one interface, non-blocking.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    /// The interface's name (for messages).
    pub interface: String,
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

impl PacketSocket {
    /// Opens a socket on `interface` (in the calling thread's network namespace).
    pub fn open(interface: &str) -> io::Result<PacketSocket> {
        let name = CString::new(interface)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name"))?;
        // SAFETY: a NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no network interface named {interface}"),
            ));
        }
        let all = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket creation; the descriptor is owned at once.
        let fd = check(unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                i32::from(all),
            )
        })?;
        // SAFETY: `fd` is a new descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: all-zero is a valid sockaddr_ll.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = all;
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: a valid sockaddr_ll and its size.
        check(unsafe {
            libc::bind(
                fd.as_raw_fd(),
                std::ptr::addr_of!(sll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        })?;
        // SAFETY: all-zero is a valid packet_mreq.
        let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
        mreq.mr_ifindex = ifindex as i32;
        mreq.mr_type = libc::PACKET_MR_PROMISC as u16;
        // SAFETY: a valid packet_mreq and its size.
        check(unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_ADD_MEMBERSHIP,
                std::ptr::addr_of!(mreq).cast(),
                std::mem::size_of::<libc::packet_mreq>() as u32,
            )
        })?;
        let on: libc::c_int = 1;
        // SAFETY: a valid int and its size.
        check(unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                PACKET_VNET_HDR,
                std::ptr::addr_of!(on).cast(),
                std::mem::size_of::<libc::c_int>() as u32,
            )
        })?;
        Ok(PacketSocket {
            fd,
            interface: interface.to_string(),
        })
    }

    /// The next frame that arrived on the interface into `buf` (after its virtio-net
    /// header), its length with the header; `None` when none is waiting. Frames this host sent on the interface are skipped.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: all-zero is a valid sockaddr_ll.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: `buf` and `from` are valid for their given sizes.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_TRUNC,
                    std::ptr::addr_of_mut!(from).cast(),
                    &mut len,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            if from.sll_pkttype == PACKET_OUTGOING {
                continue;
            }
            let n = n as usize;
            if n > buf.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "a {n}-byte frame on {} exceeds the {}-byte buffer",
                        self.interface,
                        buf.len()
                    ),
                ));
            }
            return Ok(Some(n));
        }
    }

    /// Sends `frame` (a virtio-net header, then a whole Ethernet frame without FCS) out of
    /// the interface unchanged.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        loop {
            // SAFETY: `frame` is valid for its length.
            let n =
                unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
            if n >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                // The interface's queue is full: wait until it can take the frame.
                io::ErrorKind::WouldBlock => wait_writable(self.fd.as_raw_fd())?,
                _ => return Err(e),
            }
        }
    }

    /// Opens a socket on `interface` inside the named network namespace (`ip netns`): a
    /// thread enters the namespace and opens it; the socket stays bound to that namespace.
    pub fn open_in_netns(netns: &str, interface: &str) -> io::Result<PacketSocket> {
        let path = format!("/var/run/netns/{netns}");
        let interface = interface.to_string();
        std::thread::spawn(move || {
            let ns = std::fs::File::open(&path)?;
            // SAFETY: a namespace file descriptor; only this thread changes namespace.
            check(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) })?;
            PacketSocket::open(&interface)
        })
        .join()
        .map_err(|_| io::Error::other("namespace thread panicked"))?
    }

    /// The descriptor (to wait on several).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

fn wait_writable(fd: RawFd) -> io::Result<()> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    check(unsafe { libc::poll(&mut p, 1, 100) }).map(|_| ())
}

/// Waits until one of `sockets` has a frame or `timeout_ms` passes (-1: no limit); which
/// ones are readable.
pub fn wait_readable(sockets: &[&PacketSocket], timeout_ms: i32) -> io::Result<Vec<bool>> {
    let mut fds: Vec<libc::pollfd> = sockets
        .iter()
        .map(|s| libc::pollfd {
            fd: s.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `fds` is valid for its length.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(fds.iter().map(|p| p.revents & libc::POLLIN != 0).collect())
}
