//! One live RoCEv2 endpoint: the sans-IO transport engine (`rnic_transport::Device`) driven
//! by the real clock and a [`RoceSocket`], with its memory regions in process memory.

use std::fs::File;
use std::io::BufWriter;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use rnic_host::SparseMemory;
use rnic_transport::{
    service::DEFAULT_QKEY, Access, AddressVector, Completion, CqId, Device, DeviceConfig, MrKeys,
    PdId, QpAttr, QpInit, ServiceType, SrqId,
};
use rnic_wire::PcapWriter;

use super::net::RoceSocket;
use super::oob::Dest;

/// Largest frame the endpoint builds or accepts (4096-byte MTU plus headers, with room).
const FRAME_BYTES: usize = 9000;
/// Datagrams a turn receives (one `recvmmsg`) and sends (one `sendmmsg`) per system call.
const BATCH: usize = super::net::BATCH;
/// How long the passive side of `-R` waits for the peer's DREQs before it sends its own
/// (perftest's client sends them as it exits).
const PEER_DREQ_WAIT: Duration = Duration::from_secs(5);
/// Receive WQEs the QP can hold: perftest's receive depth of its SEND tests.
pub const RECV_DEPTH: u32 = 512;
/// The same over UC and UD (perftest's `UC_MAX_RX`): a SEND that finds no receive is lost
/// there, with no RNR NAK to make the sender wait, so perftest posts a receive for every
/// message up to this many.
pub const RECV_DEPTH_UNRELIABLE: u32 = 16_000;

/// Receive WQEs a QP of `service` keeps posted at most.
pub fn recv_depth(service: ServiceType) -> u32 {
    match service {
        ServiceType::Rc => RECV_DEPTH,
        ServiceType::Uc | ServiceType::Ud => RECV_DEPTH_UNRELIABLE,
    }
}

/// QP attributes of a live run, perftest's defaults where it has them.
#[derive(Debug, Clone, Copy)]
pub struct QpTuning {
    /// RC, UC or UD (perftest's `-c`); the ACK, retry and READ attributes below are RC's only.
    pub service: ServiceType,
    pub mtu_bytes: u32,
    /// Local ACK timeout code (perftest's default 14: 4.096 µs × 2^14 ≈ 67 ms).
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    /// PSNs the requester may have unacknowledged: the receive buffers of the two sockets
    /// hold about this many full frames, so a burst does not overrun them.
    pub window_psns: u32,
    pub sq_depth: u32,
    /// Receive WQEs the QP holds (at least its service's default receive depth, or `-r`).
    pub rq_depth: u32,
    /// READs and atomics this side answers at once (its `max_dest_rd_atomic`), told to the
    /// peer as perftest's `out_reads` (`-o`; [`MAX_OUT_READS`] by default).
    pub out_reads: u32,
    /// `--use-srq`: the depth of the shared receive queue every test QP takes its receives
    /// from (perftest's `rx_depth`); `None`: each QP has its own.
    pub srq_depth: Option<u32>,
    /// The traffic class (IPv4 TOS byte) of the QP's packets; `None`: the address
    /// vector's default ([`DEFAULT_TRAFFIC_CLASS`]).
    pub traffic_class: Option<u8>,
}

/// The traffic class of a QP's packets when no flag sets it: ECT(0), as the engine's
/// address vectors default to, so that switches may mark instead of drop.
pub const DEFAULT_TRAFFIC_CLASS: u8 = 0x02;

/// The most READs and atomics a live QP takes or keeps outstanding at once: what it
/// announces as its device's maximum (perftest's default `-o`).
pub const MAX_OUT_READS: u32 = 16;

/// Takes QP `qpn` of `dev` from RESET to RTS towards `peer` (see [`Endpoint::connect`]).
pub fn connect_qp(
    dev: &mut Device,
    qpn: u32,
    my_psn: u32,
    peer: &Dest,
    t: &QpTuning,
) -> anyhow::Result<()> {
    qp_to_init(dev, qpn, t)?;
    qp_to_rtr(dev, qpn, peer, t)?;
    qp_to_rts(dev, qpn, my_psn, peer.out_reads, t)
}

/// RESET → INIT with the service's own attribute set (UD: perftest's Q_Key instead of
/// access rights).
pub fn qp_to_init(dev: &mut Device, qpn: u32, t: &QpTuning) -> anyhow::Result<()> {
    qp_to_init_qkey(dev, qpn, t, DEFAULT_QKEY)
}

/// RESET → INIT as [`qp_to_init`], a UD QP with Q_Key `qkey` (RDMA CM's for its UDP port
/// space).
pub fn qp_to_init_qkey(dev: &mut Device, qpn: u32, t: &QpTuning, qkey: u32) -> anyhow::Result<()> {
    dev.modify_qp(qpn, &QpAttr::init_for(t.service, Access::all(), qkey))?;
    Ok(())
}

/// INIT → RTR towards `peer`'s QP, expecting its first PSN, taking `t.out_reads` READs and
/// atomics at once as perftest's RTR takes its own `out_reads` (UD: the peer as its one
/// address handle, no receive PSN).
pub fn qp_to_rtr(dev: &mut Device, qpn: u32, peer: &Dest, t: &QpTuning) -> anyhow::Result<()> {
    let peer_ip = peer.ipv4()?;
    let av = AddressVector {
        dscp_ecn: t.traffic_class.unwrap_or(DEFAULT_TRAFFIC_CLASS),
        ..AddressVector::new([0x02, 0, 0, 0, 0, 0x02], peer_ip.octets())
    };
    let mut rtr = QpAttr::rtr_for(t.service, av, t.mtu_bytes, peer.qpn, peer.psn);
    if t.service == ServiceType::Rc {
        rtr.max_dest_rd_atomic = Some(t.out_reads.clamp(1, MAX_OUT_READS) as u8);
    }
    dev.modify_qp(qpn, &rtr)?;
    Ok(())
}

/// RTR → RTS sending from `my_psn`; for RC with perftest's ACK timeout, retries, RNR
/// retries and the READs the peer takes, `peer_out_reads` (UC: no ACKs, retries, RNR or
/// READs).
pub fn qp_to_rts(
    dev: &mut Device,
    qpn: u32,
    my_psn: u32,
    peer_out_reads: u32,
    t: &QpTuning,
) -> anyhow::Result<()> {
    let mut rts = QpAttr::rts_for(t.service, my_psn);
    if t.service == ServiceType::Rc {
        rts.timeout = Some(t.timeout);
        rts.retry_cnt = Some(t.retry_cnt);
        rts.rnr_retry = Some(t.rnr_retry);
        rts.max_rd_atomic = Some(peer_out_reads.clamp(1, MAX_OUT_READS) as u8);
        rts.max_outstanding_psns = Some(t.window_psns);
    }
    dev.modify_qp(qpn, &rts)?;
    Ok(())
}

/// A QP of `t`'s service on `pd` whose work completes on `cq`, with room for `t`'s send
/// queue and the service's receives.
/// On `srq` when given.
fn new_qp(
    dev: &mut Device,
    (pd, cq, srq): (PdId, CqId, Option<SrqId>),
    t: &QpTuning,
) -> anyhow::Result<u32> {
    let init = QpInit {
        pd,
        send_cq: cq,
        recv_cq: cq,
        max_send_wr: t.sq_depth,
        max_recv_wr: t.sq_depth.max(t.rq_depth),
    };
    let reliability = DeviceConfig::default().reliability;
    let qpn = dev.create_qp_service(init, reliability, t.service)?;
    if let Some(srq) = srq {
        dev.set_qp_srq(qpn, srq)?;
    }
    Ok(qpn)
}

/// The engine, its memory and its wire.
pub struct Endpoint {
    pub dev: Device,
    pub mem: SparseMemory,
    pub pd: PdId,
    pub cq: CqId,
    /// The QP [`Endpoint::open`] made: the test's (the first of `-q`'s), or `-R`'s.
    pub qpn: u32,
    sock: RoceSocket,
    start: Instant,
    /// Frames received in one call, and their lengths.
    rx: Vec<Vec<u8>>,
    rx_lens: Vec<usize>,
    /// Frames the engine built for one send call, and when it built each (for the capture).
    tx: Vec<Vec<u8>>,
    tx_at: Vec<u64>,
    pcap: Option<PcapWriter<BufWriter<File>>>,
    /// Frames the engine refused (bad ICRC, unknown QP, ...): hostile or stray traffic.
    pub rx_refused: u64,
    /// The connection manager of `-R`, answering the CM MADs that reach QP1.
    pub cm: Option<super::cm::LiveCm>,
    /// `-R`'s control QP, served every turn.
    pub control: Option<super::cm_perftest::ControlQp>,
    /// `--use-srq`: the shared receive queue of the test's QPs (not the control QP's).
    pub srq: Option<SrqId>,
}

impl Endpoint {
    /// An engine on `ip` with one QP of `t`'s service (in RESET), writing `pcap` when given.
    pub fn open(ip: Ipv4Addr, t: &QpTuning, pcap: Option<&Path>) -> anyhow::Result<Endpoint> {
        let sock = RoceSocket::open(ip)?;
        let mut dev = Device::new(DeviceConfig {
            ip: ip.octets(),
            ..DeviceConfig::default()
        });
        let pd = dev.alloc_pd();
        let cq = dev.create_cq(1 << 16)?;
        let srq = t.srq_depth.map(|d| dev.create_srq(d)).transpose()?;
        let qpn = new_qp(&mut dev, (pd, cq, srq), t)?;
        let pcap = match pcap {
            Some(p) => {
                let f = File::create(p)
                    .with_context(|| format!("cannot create --pcap {}", p.display()))?;
                Some(PcapWriter::new(BufWriter::new(f))?)
            }
            None => None,
        };
        Ok(Endpoint {
            dev,
            mem: SparseMemory::new(),
            pd,
            cq,
            qpn,
            sock,
            start: Instant::now(),
            rx: vec![vec![0; FRAME_BYTES]; BATCH],
            rx_lens: vec![0; BATCH],
            tx: (0..BATCH)
                .map(|_| Vec::with_capacity(FRAME_BYTES))
                .collect(),
            tx_at: vec![0; BATCH],
            pcap,
            rx_refused: 0,
            cm: None,
            control: None,
            srq,
        })
    }

    /// One more QP of `t`'s service (in RESET) on the endpoint's PD and CQ (`-q`); returns its
    /// number.
    pub fn create_qp(&mut self, t: &QpTuning) -> anyhow::Result<u32> {
        new_qp(&mut self.dev, (self.pd, self.cq, self.srq), t)
    }

    /// The QP's service (RC, UC or UD).
    pub fn service(&self) -> ServiceType {
        self.dev.qp_service(self.qpn).unwrap_or(ServiceType::Rc)
    }

    pub fn local_ip(&self) -> Ipv4Addr {
        self.sock.local_ip()
    }

    /// Registers `[addr, addr + len)` with every access right.
    pub fn reg_mr(&mut self, addr: u64, len: u64) -> anyhow::Result<MrKeys> {
        Ok(self.dev.reg_mr(self.pd, addr, len, Access::all())?)
    }

    /// Real time since the endpoint opened, in the engine's unit (picoseconds).
    pub fn now_ps(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64 * 1000
    }

    /// RESET → INIT → RTR → RTS towards `peer`, as perftest's `ctx_connect` does: the
    /// requester starts at `my_psn`, the responder expects the peer's PSN.
    pub fn connect(&mut self, my_psn: u32, peer: &Dest, t: &QpTuning) -> anyhow::Result<()> {
        connect_qp(&mut self.dev, self.qpn, my_psn, peer, t)
    }

    /// One turn of the event loop: sends every frame the engine has, waits up to `wait` (less
    /// when a protocol timer is due sooner) for datagrams and hands them in, then fires the
    /// timers that are due and sends what all that produced.
    pub fn turn(&mut self, wait: Duration) -> anyhow::Result<()> {
        self.turn_leaving(wait)?;
        self.transmit_all()
    }

    /// A spinning turn ([`Endpoint::turn`] without waiting) that leaves the frames its
    /// datagrams produced (the ACK of a message that came) to the next turn's first send:
    /// a ping-pong side that answers at once sends that ACK and its own message with one
    /// `sendmmsg`, and a side still waiting sends it on its next turn, a loop later.
    pub fn spin_turn(&mut self) -> anyhow::Result<()> {
        self.turn_leaving(Duration::ZERO)
    }

    /// [`Endpoint::turn`] up to, not including, its last send.
    fn turn_leaving(&mut self, wait: Duration) -> anyhow::Result<()> {
        self.transmit_all()?;
        // A timer due within `wait` fires up to `wait` late (a turn waits 1 ms at most, the
        // ACK timeout is 67 ms): one receive timeout for every turn, set once.
        let timer_due = self.dev.poll_timeout().is_some_and(|t| t <= self.now_ps());
        let wait = if timer_due { Duration::ZERO } else { wait };
        let got = self
            .sock
            .recv_batch(&mut self.rx, &mut self.rx_lens, wait)?;
        for i in 0..got {
            let n = self.rx_lens[i];
            let now = self.now_ps();
            let frame = &self.rx[i][..n];
            if let Some(p) = self.pcap.as_mut() {
                p.write_packet(now, frame)?;
            }
            if let Some(mad) = super::cm::mad_of(frame) {
                self.take_mad(mad);
            } else if self.dev.handle_packet(now, frame, &mut self.mem).is_err() {
                self.rx_refused += 1;
            }
        }
        self.serve_cm()?;
        if let Some(c) = self.control.as_mut() {
            c.serve(&mut self.dev, &mut self.mem)?;
        }
        let now = self.now_ps();
        if self.dev.poll_timeout().is_some_and(|t| t <= now) {
            self.dev.handle_timeout(now);
        }
        Ok(())
    }

    /// Hands a MAD that reached QP1 to the connection manager (none: a stray, refused).
    fn take_mad(&mut self, mad: super::cm::MadArrival) {
        match self.cm.as_mut() {
            Some(cm) => cm.inbox.push_back(mad),
            None => self.rx_refused += 1,
        }
    }

    /// Lets the connection manager handle the MADs that arrived and its timer.
    fn serve_cm(&mut self) -> anyhow::Result<()> {
        if let Some(mut cm) = self.cm.take() {
            let r = cm.serve(self);
            self.cm = Some(cm);
            r?;
        }
        Ok(())
    }

    /// Sends a whole frame built outside the engine (a CM MAD), captured as the engine's.
    pub fn send_frame(&mut self, frame: &mut [u8]) -> anyhow::Result<()> {
        let now = self.now_ps();
        self.send_captured(now, frame)
    }

    /// Sends `frame` and records it in the capture, if any, at `now`.
    fn send_captured(&mut self, now: u64, frame: &mut [u8]) -> anyhow::Result<()> {
        self.sock.send(frame)?;
        if let Some(p) = self.pcap.as_mut() {
            p.write_packet(now, frame)?;
        }
        Ok(())
    }

    /// Sends every frame the engine has, [`BATCH`] per `sendmmsg`, in the engine's order,
    /// and captures each (after its batch went) with the time it was built.
    fn transmit_all(&mut self) -> anyhow::Result<()> {
        loop {
            let mut n = 0;
            while n < BATCH {
                let now = self.now_ps();
                if self
                    .dev
                    .poll_transmit(now, &self.mem, &mut self.tx[n])
                    .is_none()
                {
                    break;
                }
                self.tx_at[n] = now;
                n += 1;
            }
            if n == 0 {
                return Ok(());
            }
            self.sock.send_batch(&mut self.tx[..n])?;
            if let Some(p) = self.pcap.as_mut() {
                for (frame, &at) in self.tx[..n].iter().zip(&self.tx_at) {
                    p.write_packet(at, frame)?;
                }
            }
            if n < BATCH {
                return Ok(());
            }
        }
    }

    /// The next completion, if any.
    pub fn poll_cq(&mut self) -> Option<Completion> {
        self.dev.poll_cq(self.cq)
    }

    /// Ends the run: the RDMA CM connections are torn down (DREQ and DREP, after the
    /// control QP's last message is through), then the capture is flushed.
    pub fn finish(&mut self) -> anyhow::Result<()> {
        if self.cm.is_some() {
            let start = Instant::now();
            while !self.control.as_ref().is_none_or(|c| c.idle()) {
                // The peer closed the control connection (its DREQ came): it needs nothing
                // more on it, and a SEND whose ACK was lost has no QP left to reach.
                let control = super::cm_perftest::CONTROL_CONN;
                if self.cm.as_ref().is_some_and(|cm| cm.closed(control)) {
                    break;
                }
                if start.elapsed() > super::session::STALL {
                    anyhow::bail!(
                        "the control QP's last message was not through within {} s",
                        super::session::STALL.as_secs()
                    );
                }
                self.turn(super::session::IDLE_TURN)?;
            }
            // The ACKs of what arrived last go out before the DREQs.
            super::session::linger(self)?;
            super::cm::disconnect(self, PEER_DREQ_WAIT)?;
        }
        if let Some(p) = self.pcap.take() {
            let mut w = p.into_inner();
            std::io::Write::flush(&mut w)?;
        }
        Ok(())
    }
}
