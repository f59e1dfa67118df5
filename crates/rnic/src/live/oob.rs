//! perftest's out-of-band exchange over TCP (its "Ethernet" data-exchange method, no RDMA
//! CM), byte for byte as perftest 4.5-0.17 (version string 6.06) writes it, so that
//! `ib_write_bw` and friends can be the other end. With `-R` the same sequence travels as
//! SENDs on a control QP ([`super::cm_perftest`]): each message one SEND, the QP keys as
//! perftest's binary record instead of text, and no closing `done`.
//!
//! Every exchange is symmetric: the client writes its message first and then reads the
//! server's, the server reads first. The sequence: version strings (16 bytes); page size and
//! cache line (4 bytes each, big-endian, both ≥ 5.32); the path MTU as perftest's
//! `sprintf("%d", enum ibv_mtu)` cut to 2 bytes (≥ 5.31); then the QP keys as 108-byte text
//! lines (`lid:out_reads:qpn:psn:rkey:vaddr:` 16 GID bytes `:srqn:`), as often as the test
//! program calls `ctx_hand_shake`; bandwidth tests end with five big-endian 8-byte report
//! fields and the 5 bytes `done\0`.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream, ToSocketAddrs};
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::atomic_bw::AtomicOp;
use super::cm_perftest::{decode_dest, encode_dest, ControlQueues};

/// perftest's version string as rnic sends it: "6.06" (what perftest 4.5-0.17 sends), then,
/// after the terminating NUL that perftest's string functions stop at, a mark that tells
/// another rnic that the payload follows rnic's pattern.
const VERSION: &[u8; 16] = b"6.06\0rnic-live\0\0";
/// Where rnic's version message carries the run's shape ([`RunShape`]), in the byte after
/// the mark's NUL: perftest reads the version up to the first NUL and never sees it; an rnic
/// peer whose shape differs is told at once, where perftest's exchange would wait for QPs
/// that never come, or one side would wait for traffic the other never sends.
const SHAPE_AT: usize = 15;
/// Where rnic's version message says an atomic test's atomic (`-A`), in the mark's NUL: 0
/// for no atomic test (and from an rnic that predates it), 1 FETCH_AND_ADD, 2
/// CMP_AND_SWAP. perftest's server never checks its memory, so its `-A` need not match;
/// an rnic server checks that its cells gained what the client's atomics add.
const ATOMIC_AT: usize = 14;
/// The shape byte's bit that says the side runs bidirectionally (`-b`).
const BIDIRECTIONAL_BIT: u8 = 0x80;
/// The shape byte's bit that says the side runs the traffic reversed (`--reversed`); the
/// QP count takes the bits below the two flags.
const REVERSED_BIT: u8 = 0x40;
const RNIC_MARK: &[u8] = b"rnic-live";
/// Bytes of one QP key line with a GID (perftest's KEY_MSG_SIZE_GID).
const KEY_MSG_BYTES: usize = 108;
/// perftest's cycle buffer, the page size this side announces: perftest's clients move the
/// remote address through this many bytes for messages up to half of it.
pub const CYCLE_BUFFER_BYTES: u32 = 4096;
/// How long a peer may take to answer one exchange before the run gives up.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);

/// One side's QP description (perftest's `struct pingpong_dest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dest {
    pub lid: u16,
    pub out_reads: u32,
    pub qpn: u32,
    pub psn: u32,
    pub rkey: u32,
    pub vaddr: u64,
    pub gid: [u8; 16],
    pub srqn: u32,
}

/// The RoCEv2 GID of an IPv4 address: the IPv4-mapped IPv6 address `::ffff:a.b.c.d`.
pub fn gid_of(ip: Ipv4Addr) -> [u8; 16] {
    ip.to_ipv6_mapped().octets()
}

impl Dest {
    /// perftest's KEY_PRINT_FMT_GID, NUL-terminated, 108 bytes.
    pub fn encode(&self) -> [u8; KEY_MSG_BYTES] {
        use std::fmt::Write as _;
        let mut s = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid, self.out_reads, self.qpn, self.psn, self.rkey, self.vaddr
        );
        for b in self.gid {
            let _ = write!(s, "{b:02x}:");
        }
        let _ = write!(s, "{:08x}:", self.srqn);
        let mut out = [0u8; KEY_MSG_BYTES];
        let n = s.len().min(KEY_MSG_BYTES - 1);
        out[..n].copy_from_slice(&s.as_bytes()[..n]);
        out
    }

    /// Parses a key line; every field must be hexadecimal and in range.
    pub fn decode(msg: &[u8]) -> anyhow::Result<Dest> {
        let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
        let text = std::str::from_utf8(&msg[..end]).context("the peer's QP keys are not text")?;
        let fields: Vec<&str> = text.split(':').collect();
        if fields.len() < 23 {
            bail!(
                "the peer's QP keys have {} fields, want 23: {text:?}",
                fields.len()
            );
        }
        let hex = |i: usize, what: &str, max: u64| -> anyhow::Result<u64> {
            let v = u64::from_str_radix(fields[i], 16)
                .with_context(|| format!("the peer's {what} {:?} is not hexadecimal", fields[i]))?;
            if v > max {
                bail!("the peer's {what} {v:#x} is out of range (max {max:#x})");
            }
            Ok(v)
        };
        let mut gid = [0u8; 16];
        for (k, g) in gid.iter_mut().enumerate() {
            *g = hex(6 + k, "GID byte", 0xFF)? as u8;
        }
        Ok(Dest {
            lid: hex(0, "LID", 0xFFFF)? as u16,
            out_reads: hex(1, "out_reads", 0xFFFF)? as u32,
            qpn: hex(2, "QPN", 0xFF_FFFF)? as u32,
            psn: hex(3, "PSN", 0xFF_FFFF)? as u32,
            rkey: hex(4, "rkey", u64::from(u32::MAX))? as u32,
            vaddr: hex(5, "vaddr", u64::MAX)?,
            gid,
            srqn: hex(22, "SRQN", u64::from(u32::MAX))? as u32,
        })
    }

    /// The peer's IPv4 address from its GID; IPv6 GIDs are refused.
    pub fn ipv4(&self) -> anyhow::Result<Ipv4Addr> {
        let v6 = std::net::Ipv6Addr::from(self.gid);
        v6.to_ipv4_mapped().with_context(|| {
            format!("the peer's GID {v6} is not an IPv4-mapped address: rnic live speaks RoCEv2 over IPv4 only")
        })
    }
}

/// What the peer said before the QP keys.
#[derive(Debug, Clone, Copy)]
pub struct Preamble {
    /// The peer is rnic (its payload follows rnic's pattern).
    pub peer_is_rnic: bool,
    /// The path MTU both sides use, bytes: the smaller of the two.
    pub mtu_bytes: u32,
}

/// What both sides of a run must agree on and perftest's exchange cannot tell: the QPs
/// (`-q`), whether both directions carry traffic (`-b`), whether the server sends
/// (`--reversed`), and an atomic test's atomic (`-A`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunShape {
    pub qps: u32,
    pub bidirectional: bool,
    pub reversed: bool,
    /// The atomic of an atomic test (`None`: not an atomic test).
    pub atomic: Option<AtomicOp>,
}

impl RunShape {
    /// The shape byte of rnic's version message (0 if the QP count does not fit its bits).
    fn encode(self) -> u8 {
        let qps = u8::try_from(self.qps)
            .ok()
            .filter(|&q| q < REVERSED_BIT)
            .unwrap_or(0);
        if qps == 0 {
            return 0;
        }
        let bit = |on: bool, bit: u8| if on { bit } else { 0 };
        qps | bit(self.bidirectional, BIDIRECTIONAL_BIT) | bit(self.reversed, REVERSED_BIT)
    }

    /// This side's version message: perftest's, rnic's mark, the shape and the atomic.
    fn version(self) -> [u8; 16] {
        let mut version = *VERSION;
        version[SHAPE_AT] = self.encode();
        version[ATOMIC_AT] = match self.atomic {
            None => 0,
            Some(AtomicOp::FetchAdd) => 1,
            Some(AtomicOp::CmpSwap) => 2,
        };
        version
    }

    /// An rnic peer's shape (from `theirs`, its version message: its shape byte, 0 from an
    /// rnic without one, and its atomic byte) must be this side's.
    fn check_peer(self, peer_is_rnic: bool, theirs: &[u8]) -> anyhow::Result<()> {
        if !peer_is_rnic {
            return Ok(());
        }
        self.check_atomic(theirs.get(ATOMIC_AT).copied().unwrap_or(0))?;
        let Some(byte) = theirs.get(SHAPE_AT).copied().filter(|&b| b != 0) else {
            return Ok(());
        };
        let q = u32::from(byte & !(BIDIRECTIONAL_BIT | REVERSED_BIT));
        if q != self.qps {
            bail!(
                "-q/--qp {}: the peer runs {q} QPs; give both sides the same -q, as perftest needs",
                self.qps
            );
        }
        same_flag(
            "-b/--bidirectional",
            self.bidirectional,
            byte & BIDIRECTIONAL_BIT != 0,
        )?;
        same_flag("--reversed", self.reversed, byte & REVERSED_BIT != 0)
    }

    /// An atomic test's atomic must be the peer's (`theirs`, its atomic byte; 0 when the
    /// peer runs no atomic test or does not say), or the server's check of its cells fails.
    fn check_atomic(self, theirs: u8) -> anyhow::Result<()> {
        let theirs = match theirs {
            1 => AtomicOp::FetchAdd,
            2 => AtomicOp::CmpSwap,
            _ => return Ok(()),
        };
        match self.atomic {
            Some(mine) if mine != theirs => bail!(
                "-A/--atomic_type {}: the peer runs {}; give both sides the same -A, so that \
                 the server's check of its memory expects what the client's atomics do",
                mine.perftest_name(),
                theirs.perftest_name()
            ),
            _ => Ok(()),
        }
    }
}

/// A flag both sides must give, `mine` here and `theirs` at the peer.
fn same_flag(flag: &str, mine: bool, theirs: bool) -> anyhow::Result<()> {
    if mine == theirs {
        return Ok(());
    }
    let (with, without) = match mine {
        true => ("this side", "the peer"),
        false => ("the peer", "this side"),
    };
    bail!(
        "{flag}: {with} runs it and {without} does not; give both sides {flag}, as perftest needs"
    )
}

/// The exchange's path: perftest's TCP connection, or (`-R`) the control QP's queues.
enum Channel {
    Tcp(TcpStream),
    Control(Rc<RefCell<ControlQueues>>),
}

/// The connection of the exchange.
pub struct Oob {
    channel: Channel,
    is_client: bool,
}

/// perftest's `enum ibv_mtu` code of an MTU in bytes (256 → 1 … 4096 → 5).
pub fn mtu_code(bytes: u32) -> u8 {
    (bytes.trailing_zeros().saturating_sub(7)) as u8
}

/// The IPv4 address of `HOST` (a name or an address) at `port`: one that does not resolve,
/// or only to IPv6, is bad input (exit 2) naming it.
pub fn resolve_ipv4(host: &str, port: u16) -> Result<SocketAddrV4, crate::UsageError> {
    let addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| crate::UsageError(format!("HOST {host}: cannot resolve it ({e})")))?;
    addrs
        .filter_map(|a| match a {
            SocketAddr::V4(v4) => Some(v4),
            SocketAddr::V6(_) => None,
        })
        .next()
        .ok_or_else(|| {
            crate::UsageError(format!(
                "HOST {host} has no IPv4 address: rnic live speaks RoCEv2 over IPv4 only"
            ))
        })
}

impl Oob {
    /// Connects to a server, from `bind` when given; gives up after `timeout`.
    pub fn connect(
        host: &str,
        port: u16,
        bind: Option<Ipv4Addr>,
        timeout: Duration,
    ) -> anyhow::Result<Oob> {
        let addr = resolve_ipv4(host, port)?;
        // A server started a moment ago may not listen yet: refused connections are tried
        // again until `timeout`, then reported.
        let start = Instant::now();
        let stream: TcpStream = loop {
            let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
            if let Some(ip) = bind {
                sock.bind(&SocketAddrV4::new(ip, 0).into())
                    .with_context(|| format!("cannot bind the TCP socket to {ip}"))?;
            }
            match sock.connect_timeout(&addr.into(), timeout) {
                Ok(()) => break sock.into(),
                Err(e)
                    if e.kind() == io::ErrorKind::ConnectionRefused
                        && start.elapsed() < timeout =>
                {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => {
                    return Err(super::peer_failed(format!(
                        "cannot connect to the server at {addr} within {} s ({e}; perftest's \
                         exchange port: is `rnic live --server` or ib_*_bw running there?)",
                        timeout.as_secs()
                    )))
                }
            }
        };
        stream.set_nodelay(true)?;
        Ok(Oob {
            channel: Channel::Tcp(stream),
            is_client: true,
        })
    }

    /// The exchange over `-R`'s control QP, whose queues the endpoint serves.
    pub fn over_control(queues: Rc<RefCell<ControlQueues>>, is_client: bool) -> Oob {
        Oob {
            channel: Channel::Control(queues),
            is_client,
        }
    }

    /// The TCP stream (`what` needs it: the control QP has none).
    fn stream(&mut self, what: &str) -> anyhow::Result<&mut TcpStream> {
        match &mut self.channel {
            Channel::Tcp(s) => Ok(s),
            Channel::Control(_) => bail!("{what} needs perftest's TCP exchange, not -R"),
        }
    }

    /// Sends one message.
    fn write_msg(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        match &mut self.channel {
            Channel::Tcp(s) => s.write_all(bytes).map_err(closed_or)?,
            Channel::Control(q) => q.borrow_mut().outbox.push_back(bytes.to_vec()),
        }
        Ok(())
    }

    /// This side's QP keys as the path carries them (text over TCP, binary over `-R`).
    fn encode_keys(&self, d: &Dest) -> Vec<u8> {
        match self.channel {
            Channel::Tcp(_) => d.encode().to_vec(),
            Channel::Control(_) => encode_dest(d).to_vec(),
        }
    }

    fn decode_keys(&self, b: &[u8]) -> anyhow::Result<Dest> {
        match self.channel {
            Channel::Tcp(_) => Dest::decode(b),
            Channel::Control(_) => decode_dest(b),
        }
    }

    /// Listens on `bind:port` (all addresses without `bind`) and takes one client.
    pub fn accept(bind: Option<Ipv4Addr>, port: u16) -> anyhow::Result<Oob> {
        let ip = bind.unwrap_or(Ipv4Addr::UNSPECIFIED);
        let listener = TcpListener::bind(SocketAddrV4::new(ip, port))
            .with_context(|| format!("cannot listen on {ip}:{port}"))?;
        let (stream, _) = listener.accept()?;
        stream.set_nodelay(true)?;
        Ok(Oob {
            channel: Channel::Tcp(stream),
            is_client: false,
        })
    }

    /// The local IPv4 address of the connection: the address the route to the peer uses.
    pub fn local_ip(&mut self) -> anyhow::Result<Ipv4Addr> {
        match self.stream("the local address")?.local_addr()? {
            SocketAddr::V4(a) => Ok(*a.ip()),
            SocketAddr::V6(a) => bail!(
                "the exchange connection is IPv6 ({a}): rnic live speaks RoCEv2 over IPv4 only"
            ),
        }
    }

    /// Writes `mine` and reads as many bytes from the peer, in perftest's order, calling
    /// `pump` while it waits so the RoCE engine keeps answering.
    pub fn exchange(
        &mut self,
        mine: &[u8],
        pump: &mut dyn FnMut() -> anyhow::Result<()>,
    ) -> anyhow::Result<Vec<u8>> {
        self.exchange_within(mine, pump, Some(EXCHANGE_TIMEOUT))
    }

    /// [`Oob::exchange`] that waits for the peer up to `timeout` (`None`: until it answers
    /// or closes the connection).
    fn exchange_within(
        &mut self,
        mine: &[u8],
        pump: &mut dyn FnMut() -> anyhow::Result<()>,
        timeout: Option<Duration>,
    ) -> anyhow::Result<Vec<u8>> {
        if self.is_client {
            self.write_msg(mine)?;
            self.read_exact(mine.len(), pump, timeout)
        } else {
            let theirs = self.read_exact(mine.len(), pump, timeout)?;
            self.write_msg(mine)?;
            Ok(theirs)
        }
    }

    fn read_exact(
        &mut self,
        n: usize,
        pump: &mut dyn FnMut() -> anyhow::Result<()>,
        timeout: Option<Duration>,
    ) -> anyhow::Result<Vec<u8>> {
        match &mut self.channel {
            Channel::Tcp(stream) => read_stream(stream, n, pump, timeout),
            Channel::Control(q) => read_control(q, n, pump, timeout),
        }
    }

    /// Whether the peer has written something this side has not read yet (or closed the
    /// connection): its next exchange message, sent once it is done with the test.
    pub fn peer_has_written(&self) -> anyhow::Result<bool> {
        let stream = match &self.channel {
            Channel::Tcp(s) => s,
            Channel::Control(q) => return Ok(!q.borrow().inbox.is_empty()),
        };
        let mut byte = [0u8; 1];
        stream.set_nonblocking(true)?;
        let r = stream.peek(&mut byte);
        stream.set_nonblocking(false)?;
        match r {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes `bytes` as they are (ibv_rc_pingpong's closing `done`).
    pub fn write_raw(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.stream("ibv_rc_pingpong's exchange")?
            .write_all(bytes)?;
        Ok(())
    }

    /// Reads exactly `n` bytes, waiting up to the exchange timeout.
    pub fn read_raw(&mut self, n: usize) -> anyhow::Result<Vec<u8>> {
        self.read_raw_pumping(n, &mut idle_wait)
    }

    /// [`Oob::read_raw`], calling `pump` while it waits (the peer may need an ACK resent).
    pub fn read_raw_pumping(
        &mut self,
        n: usize,
        pump: &mut dyn FnMut() -> anyhow::Result<()>,
    ) -> anyhow::Result<Vec<u8>> {
        let stream = self.stream("ibv_rc_pingpong's exchange")?;
        read_stream(stream, n, pump, Some(EXCHANGE_TIMEOUT))
    }

    /// Versions, page size and cache line, path MTU (`mtu_bytes` is this side's).
    pub fn preamble(
        &mut self,
        (mtu_bytes, shape): (u32, RunShape),
        idle: &mut dyn FnMut() -> anyhow::Result<()>,
    ) -> anyhow::Result<Preamble> {
        let theirs = self.exchange(&shape.version(), idle)?;
        let peer_is_rnic = theirs.windows(RNIC_MARK.len()).any(|w| w == RNIC_MARK);
        shape.check_peer(peer_is_rnic, &theirs)?;
        let version_end = theirs.iter().position(|&b| b == 0).unwrap_or(theirs.len());
        let version: f64 = std::str::from_utf8(&theirs[..version_end])
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0.0);
        if version < 5.33 {
            bail!(
                "the peer's perftest version {:?} is older than 5.33: rnic live speaks the exchange of perftest 4.5-0.17 (version 6.06)",
                String::from_utf8_lossy(&theirs[..version_end])
            );
        }
        self.exchange(&CYCLE_BUFFER_BYTES.to_be_bytes(), idle)?;
        self.exchange(&64u32.to_be_bytes(), idle)?; // cache line
        let mine = [b'0' + mtu_code(mtu_bytes), 0];
        let theirs = self.exchange(&mine, idle)?;
        let peer_code = (theirs[0] as char).to_digit(10).unwrap_or(0) as u8;
        let mtu_bytes = if (1..=5).contains(&peer_code) {
            mtu_bytes.min(128 << peer_code)
        } else {
            mtu_bytes
        };
        Ok(Preamble {
            peer_is_rnic,
            mtu_bytes,
        })
    }

    /// One `ctx_hand_shake`: this side's keys out, the peer's in.
    pub fn keys(
        &mut self,
        mine: &Dest,
        pump: &mut dyn FnMut() -> anyhow::Result<()>,
    ) -> anyhow::Result<Dest> {
        let theirs = self.exchange(&self.encode_keys(mine), pump)?;
        self.decode_keys(&theirs)
    }

    /// [`Oob::keys`] without a time limit: the server waits in it while the client runs.
    pub fn keys_waiting(
        &mut self,
        mine: &Dest,
        pump: &mut dyn FnMut() -> anyhow::Result<()>,
    ) -> anyhow::Result<Dest> {
        let theirs = self.exchange_within(&self.encode_keys(mine), pump, None)?;
        self.decode_keys(&theirs)
    }

    /// `xchg_bw_reports`: size, iterations, peak and average MB/s, Mpps; returns the peer's.
    pub fn bw_reports(
        &mut self,
        mine: &BwReport,
        idle: &mut dyn FnMut() -> anyhow::Result<()>,
    ) -> anyhow::Result<BwReport> {
        self.bw_reports_within(mine, idle, Some(EXCHANGE_TIMEOUT))
    }

    /// [`Oob::bw_reports`] that waits for the peer's first field without a time limit:
    /// a bidirectional side exchanges them when its own run ends, whatever the peer's
    /// still takes.
    pub fn bw_reports_waiting(
        &mut self,
        mine: &BwReport,
        idle: &mut dyn FnMut() -> anyhow::Result<()>,
    ) -> anyhow::Result<BwReport> {
        self.bw_reports_within(mine, idle, None)
    }

    fn bw_reports_within(
        &mut self,
        mine: &BwReport,
        idle: &mut dyn FnMut() -> anyhow::Result<()>,
        first_timeout: Option<Duration>,
    ) -> anyhow::Result<BwReport> {
        let mut timeout = first_timeout;
        let mut field = |v: [u8; 8]| -> anyhow::Result<[u8; 8]> {
            let t = self.exchange_within(&v, idle, timeout)?;
            timeout = Some(EXCHANGE_TIMEOUT);
            Ok(t.try_into().expect("8 bytes were read"))
        };
        Ok(BwReport {
            size: u64::from_be_bytes(field(mine.size.to_be_bytes())?),
            iters: u64::from_be_bytes(field(mine.iters.to_be_bytes())?),
            bw_peak: f64::from_be_bytes(field(mine.bw_peak.to_be_bytes())?),
            bw_avg: f64::from_be_bytes(field(mine.bw_avg.to_be_bytes())?),
            msg_rate: f64::from_be_bytes(field(mine.msg_rate.to_be_bytes())?),
        })
    }

    /// `ctx_close_connection`: a last key exchange, then `done\0`, calling `pump` while it
    /// waits (the peer may still need an ACK resent). Between two rnic endpoints
    /// (`verdict` given) each side's verdict on the bytes it checked goes across after the
    /// keys (see [`Verdict`]); returns the peer's.
    pub fn close(
        &mut self,
        mine: &Dest,
        pump: &mut dyn FnMut() -> anyhow::Result<()>,
        verdict: Option<Verdict>,
    ) -> anyhow::Result<Option<Verdict>> {
        self.close_within(mine, pump, verdict, Some(EXCHANGE_TIMEOUT))
    }

    /// [`Oob::close`] that waits for the peer's closing handshake without a time limit (a
    /// server whose client runs the test), until the peer answers or drops the connection.
    pub fn close_waiting(
        &mut self,
        mine: &Dest,
        pump: &mut dyn FnMut() -> anyhow::Result<()>,
        verdict: Option<Verdict>,
    ) -> anyhow::Result<Option<Verdict>> {
        self.close_within(mine, pump, verdict, None)
    }

    fn close_within(
        &mut self,
        mine: &Dest,
        pump: &mut dyn FnMut() -> anyhow::Result<()>,
        verdict: Option<Verdict>,
        timeout: Option<Duration>,
    ) -> anyhow::Result<Option<Verdict>> {
        let theirs = self.exchange_within(&self.encode_keys(mine), pump, timeout)?;
        self.decode_keys(&theirs)?;
        let theirs = match verdict {
            Some(v) => {
                let t = self.exchange(&v.encode(), pump)?;
                Some(Verdict::decode(&t)?)
            }
            None => None,
        };
        if let Channel::Tcp(stream) = &mut self.channel {
            stream.write_all(b"done\0")?;
        }
        Ok(theirs)
    }
}

/// Reads exactly `n` bytes from `stream`, calling `pump` while none are there.
fn read_stream(
    stream: &mut TcpStream,
    n: usize,
    pump: &mut dyn FnMut() -> anyhow::Result<()>,
    timeout: Option<Duration>,
) -> anyhow::Result<Vec<u8>> {
    let mut got = vec![0u8; n];
    let mut have = 0;
    let start = Instant::now();
    stream.set_nonblocking(true)?;
    let r = loop {
        if have == n {
            break Ok(got);
        }
        match stream.read(&mut got[have..]) {
            Ok(0) => {
                break Err(super::peer_failed(format!(
                    "the peer closed the exchange connection{PEER_SAYS_WHY}"
                )))
            }
            Ok(k) => have += k,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if let Some(t) = timeout.filter(|t| start.elapsed() > *t) {
                    break Err(super::peer_failed(format!(
                        "the peer did not answer the exchange within {} s",
                        t.as_secs()
                    )));
                }
                if let Err(e) = pump() {
                    break Err(e);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(closed_or(e)),
        }
    };
    stream.set_nonblocking(false)?;
    r
}

/// Where a peer that went away says why: it refused something of this side's, or ended.
const PEER_SAYS_WHY: &str = ": it may have refused or ended the run; its own output says why";

/// The error of a failed read or write on the exchange connection: a peer that went away
/// (a reset, a broken pipe) is told as a closed connection, whichever of them the kernel
/// saw first, as the end of the stream is.
fn closed_or(e: io::Error) -> anyhow::Error {
    match e.kind() {
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => super::peer_failed(format!(
            "the peer closed the exchange connection ({e}){PEER_SAYS_WHY}"
        )),
        _ => e.into(),
    }
}

/// Takes the next message of `-R`'s control QP, which must be `n` bytes (perftest sends
/// each item of the exchange as one SEND), calling `pump` (which turns the endpoint that
/// serves the QP) until it is there.
fn read_control(
    queues: &Rc<RefCell<ControlQueues>>,
    n: usize,
    pump: &mut dyn FnMut() -> anyhow::Result<()>,
    timeout: Option<Duration>,
) -> anyhow::Result<Vec<u8>> {
    let start = Instant::now();
    loop {
        {
            let mut q = queues.borrow_mut();
            if let Some(why) = q.failure.take() {
                return Err(super::peer_failed(why));
            }
            if let Some(msg) = q.inbox.pop_front() {
                if msg.len() != n {
                    bail!(
                        "the peer's message on the control QP has {} bytes, want {n} (the exchanges are \
                         out of step)",
                        msg.len()
                    );
                }
                return Ok(msg);
            }
        }
        if let Some(t) = timeout.filter(|t| start.elapsed() > *t) {
            return Err(super::peer_failed(format!(
                "the peer did not answer the exchange on the control QP within {} s",
                t.as_secs()
            )));
        }
        pump()?;
    }
}

/// What an exchange with no engine to turn does while it waits: sleep a little.
fn idle_wait() -> anyhow::Result<()> {
    std::thread::sleep(Duration::from_micros(200));
    Ok(())
}

/// What one rnic endpoint found when it checked the bytes it received, told to its rnic peer
/// at the close (8 bytes, big-endian): the side that only sends learns from it whether what it
/// sent arrived intact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every byte checked was right.
    Verified,
    /// This side checked nothing (it only sent).
    NothingChecked,
    /// The first wrong byte, counted from the start of what this side checked.
    Mismatch(u64),
}

const VERDICT_VERIFIED: u64 = u64::MAX;
const VERDICT_NOTHING_CHECKED: u64 = u64::MAX - 1;

impl Verdict {
    fn encode(self) -> [u8; 8] {
        let code = match self {
            Verdict::Verified => VERDICT_VERIFIED,
            Verdict::NothingChecked => VERDICT_NOTHING_CHECKED,
            Verdict::Mismatch(at) => at.min(VERDICT_NOTHING_CHECKED - 1),
        };
        code.to_be_bytes()
    }

    fn decode(bytes: &[u8]) -> anyhow::Result<Verdict> {
        let Ok(code) = <[u8; 8]>::try_from(bytes) else {
            bail!("the peer's verdict has {} bytes, want 8", bytes.len());
        };
        Ok(match u64::from_be_bytes(code) {
            VERDICT_VERIFIED => Verdict::Verified,
            VERDICT_NOTHING_CHECKED => Verdict::NothingChecked,
            at => Verdict::Mismatch(at),
        })
    }
}

/// perftest's `struct bw_report_data` as exchanged (MB = 2^20 bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BwReport {
    pub size: u64,
    pub iters: u64,
    pub bw_peak: f64,
    pub bw_avg: f64,
    pub msg_rate: f64,
}

impl BwReport {
    /// Whether the report can be of a run: at least one operation, of a size rnic live
    /// runs. perftest sends one it never filled in (whatever its stack held) where its side
    /// ran nothing: a one-way server to a `-b` client, a client given `--reversed` alone.
    pub fn is_of_a_run(&self) -> bool {
        self.iters > 0 && (1..=super::MAX_SIZE).contains(&self.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// perftest's unfilled reports, as two runs against rxe sent them, are no runs; any
    /// size and count a peer can run is one, whatever this side's `-s`.
    #[test]
    fn a_report_of_garbage_or_of_nothing_is_no_run() {
        let report = |size, iters| BwReport {
            size,
            iters,
            ..BwReport::default()
        };
        assert!(report(4096, 20).is_of_a_run());
        assert!(report(2, 1).is_of_a_run());
        assert!(!report(140_727_529_879_316, 140_464_698_544_410).is_of_a_run());
        assert!(!report(0, 0).is_of_a_run());
        assert!(!report(4096, 0).is_of_a_run());
    }

    fn shape(qps: u32, bidirectional: bool) -> RunShape {
        RunShape {
            qps,
            bidirectional,
            reversed: false,
            atomic: None,
        }
    }

    /// An atomic test's `-A` must be the peer's: an rnic server's check of its cells expects
    /// what its own `-A` adds (a CMP_AND_SWAP client against a FETCH_AND_ADD server was a
    /// DATA MISMATCH at byte 0 on the server). A side without an atomic test, or an older
    /// rnic, says 0 and is not checked.
    #[test]
    fn an_rnic_peer_with_another_atomic_is_refused_naming_a() {
        let atomic = |op| RunShape {
            atomic: op,
            ..shape(1, false)
        };
        let (add, swap) = (
            atomic(Some(AtomicOp::FetchAdd)),
            atomic(Some(AtomicOp::CmpSwap)),
        );
        assert!(add.check_peer(true, &add.version()).is_ok());
        let e = swap
            .check_peer(true, &add.version())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("-A/--atomic_type CMP_AND_SWAP: the peer runs FETCH_AND_ADD"),
            "{e}"
        );
        assert!(add.check_peer(true, &atomic(None).version()).is_ok());
        assert!(add.check_peer(true, VERSION).is_ok());
        assert!(atomic(None).check_peer(true, &swap.version()).is_ok());
        // perftest's version message says nothing past its NUL.
        assert!(swap.check_peer(false, &add.version()).is_ok());
        assert_eq!(VERSION[ATOMIC_AT], 0, "the mark's NUL is the atomic byte");
    }

    #[test]
    fn an_rnic_peer_with_another_qp_count_is_refused_naming_q() {
        let peer = |s: RunShape| s.version();
        assert!(shape(2, false)
            .check_peer(true, &peer(shape(2, false)))
            .is_ok());
        let e = shape(1, false).check_peer(true, &peer(shape(2, false)));
        let e = e.unwrap_err().to_string();
        assert!(e.starts_with("-q/--qp 1: the peer runs 2 QPs"), "{e}");
        // perftest's byte there is not a shape, and an older rnic sends 0.
        let byte = |b: u8| {
            let mut v = *VERSION;
            v[SHAPE_AT] = b;
            v
        };
        assert!(shape(1, false).check_peer(false, &byte(7)).is_ok());
        assert!(shape(1, true).check_peer(true, &byte(0)).is_ok());
        assert_eq!(
            VERSION[SHAPE_AT], 0,
            "the version message keeps the byte free"
        );
    }

    #[test]
    fn an_rnic_peer_that_differs_in_b_is_refused_naming_it() {
        let peer = |s: RunShape| s.version();
        assert!(shape(3, true)
            .check_peer(true, &peer(shape(3, true)))
            .is_ok());
        for (mine, theirs, says) in [
            (true, false, "this side runs it and the peer does not"),
            (false, true, "the peer runs it and this side does not"),
        ] {
            let e = shape(2, mine).check_peer(true, &peer(shape(2, theirs)));
            let e = e.unwrap_err().to_string();
            assert!(e.starts_with(&format!("-b/--bidirectional: {says}")), "{e}");
        }
        // The count and the bit do not mix: 16 QPs, one way and both ways.
        assert_eq!(shape(16, false).encode(), 16);
        assert_eq!(shape(16, true).encode(), 16 | BIDIRECTIONAL_BIT);
    }

    #[test]
    fn an_rnic_peer_that_differs_in_reversed_is_refused_naming_it() {
        let reversed = RunShape {
            reversed: true,
            ..shape(16, false)
        };
        assert_eq!(reversed.encode(), 16 | REVERSED_BIT);
        assert!(reversed.check_peer(true, &reversed.version()).is_ok());
        let plain = shape(16, false);
        let e = plain.check_peer(true, &reversed.version()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--reversed: the peer runs it and this side does not"),
            "{e}"
        );
    }

    #[test]
    fn a_control_message_of_the_wrong_length_says_the_exchanges_are_out_of_step() {
        let queues = Rc::new(RefCell::new(ControlQueues::default()));
        queues.borrow_mut().inbox.push_back(vec![0; 3]);
        let err = read_control(&queues, 56, &mut idle_wait, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the peer's message on the control QP has 3 bytes, want 56 (the exchanges are out \
             of step)"
        );
    }

    #[test]
    fn key_line_has_perftests_length_and_round_trips() {
        let d = Dest {
            lid: 0,
            out_reads: 16,
            qpn: 0x11,
            psn: 0xABCDEF,
            rkey: 0x1234,
            vaddr: 0x7f00_0000_1000,
            gid: gid_of(Ipv4Addr::new(127, 0, 0, 2)),
            srqn: 0,
        };
        let msg = d.encode();
        let text_len = msg.iter().position(|&b| b == 0).unwrap();
        assert_eq!(text_len, KEY_MSG_BYTES - 1, "107 characters and a NUL");
        assert!(std::str::from_utf8(&msg[..text_len]).unwrap().starts_with(
            "0000:0010:000011:abcdef:00001234:00007f0000001000:00:00:00:00:00:00:00:00:00:00:ff:ff:7f:00:00:02:00000000:"
        ));
        assert_eq!(Dest::decode(&msg).unwrap(), d);
        assert_eq!(d.ipv4().unwrap(), Ipv4Addr::new(127, 0, 0, 2));
    }

    #[test]
    fn bad_key_lines_are_errors_naming_the_field() {
        let mut msg = Dest::default().encode();
        msg[0] = b'z';
        assert!(Dest::decode(&msg).unwrap_err().to_string().contains("LID"));
        assert!(Dest::decode(b"1:2:3\0").is_err());
        let v6 = Dest {
            gid: [0x20, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            ..Dest::default()
        };
        assert!(v6.ipv4().unwrap_err().to_string().contains("IPv4 only"));
    }

    #[test]
    fn mtu_codes_are_perftests() {
        assert_eq!([256, 512, 1024, 2048, 4096].map(mtu_code), [1, 2, 3, 4, 5]);
    }
}
