//! Two transports joined by a [`Fabric`]: the smallest world in which RC runs end to end.
//!
//! [`Pair`] owns both devices, their host memories and the fabric, and advances virtual time
//! from event to event (a frame delivery or a transport timer): the transports have no clock of
//! their own, so this loop is their clock.

use std::io::Write;

use rnic_transport::{
    Access, AddressVector, Completion, CqId, Device, DeviceConfig, MrKeys, PdId, QpAttr, QpInit,
    RecvWr, SendWr, VerbsError,
};
use rnic_wire::{Opcode, PcapWriter};

use crate::fabric::{Fabric, Impairments};
use crate::guarded_memory::GuardedMemory;

/// Node indices of a pair.
pub const A: usize = 0;
pub const B: usize = 1;

/// One host with its RNIC's protocol state.
pub struct Node {
    pub dev: Device,
    pub mem: GuardedMemory,
    pub pd: PdId,
    pub cq: CqId,
    pub mac: [u8; 6],
    pub ip: [u8; 4],
    /// Frames the device refused (malformed, unknown QP, ...), counted by the harness.
    pub rx_dropped: u64,
}

/// QP attributes for [`Pair::connect`].
#[derive(Clone, Copy, Debug)]
pub struct QpParams {
    pub pmtu: u32,
    /// Local ACK timeout exponent: 4.096 µs × 2^timeout.
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub min_rnr_timer: u8,
    pub max_rd_atomic: u8,
    pub sq_depth: u32,
    pub rq_depth: u32,
    pub start_psn_a: u32,
    pub start_psn_b: u32,
    /// Go-back-N (RoCEv2), or an out-of-order mode (ORNIC, MP-RDMA: WRITE only).
    pub reliability: rnic_transport::ReliabilityMode,
}

impl Default for QpParams {
    fn default() -> Self {
        QpParams {
            pmtu: 1024,
            timeout: 3,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 1,
            max_rd_atomic: 4,
            sq_depth: 256,
            rq_depth: 256,
            start_psn_a: 0,
            start_psn_b: 0,
            reliability: rnic_transport::ReliabilityMode::GoBackN,
        }
    }
}

/// A capture of every frame either node sends, in pcap form.
pub type Capture = PcapWriter<Vec<u8>>;

/// Two nodes, a fabric, and virtual time.
pub struct Pair {
    pub nodes: [Node; 2],
    pub fabric: Fabric,
    now_ps: u64,
    buf: Vec<u8>,
    capture: Option<Capture>,
    frames_sent: u64,
    /// Frames to lose on purpose: the next frame node `.0` sends with opcode `.1`.
    drops: Vec<(usize, Opcode)>,
    /// PSN of the last request packet each node sent (what a forger would aim next to).
    last_request_psn: [u32; 2],
}

impl Pair {
    pub fn new(seed: u64, impair: Impairments) -> Self {
        let node = |i: u8| {
            let mac = [0x02, 0, 0, 0, 0, 0x0a + i];
            let ip = [10, 0, 0, 1 + i];
            let mut dev = Device::new(DeviceConfig {
                mac,
                ip,
                ..DeviceConfig::default()
            });
            let pd = dev.alloc_pd();
            let cq = dev
                .create_cq(1 << 16)
                .expect("a fresh device has room for a CQ");
            Node {
                dev,
                mem: GuardedMemory::new(),
                pd,
                cq,
                mac,
                ip,
                rx_dropped: 0,
            }
        };
        Pair {
            nodes: [node(0), node(1)],
            fabric: Fabric::new(seed, impair),
            now_ps: 0,
            buf: Vec::with_capacity(4200),
            capture: None,
            frames_sent: 0,
            drops: Vec::new(),
            last_request_psn: [0; 2],
        }
    }

    /// Starts recording every frame sent from now on.
    pub fn capture(&mut self) {
        self.capture = Some(PcapWriter::new(Vec::new()).expect("writing to a Vec cannot fail"));
    }

    /// The pcap bytes recorded so far (empty if [`Pair::capture`] was not called).
    pub fn take_capture(&mut self) -> Vec<u8> {
        self.capture
            .take()
            .map(PcapWriter::into_inner)
            .unwrap_or_default()
    }

    /// Loses the next frame `node` sends with `opcode` (after it is captured), to force a NAK
    /// or a timeout deterministically.
    pub fn drop_next(&mut self, node: usize, opcode: Opcode) {
        self.drops.push((node, opcode));
    }

    /// PSN of the last request packet `node` sent.
    pub fn last_request_psn(&self, node: usize) -> u32 {
        self.last_request_psn[node]
    }

    pub fn now_ps(&self) -> u64 {
        self.now_ps
    }

    pub fn frames_sent(&self) -> u64 {
        self.frames_sent
    }

    /// Registers `[addr, addr + len)` on `node` in the node's PD and lets the guard allow it.
    pub fn reg_mr(
        &mut self,
        node: usize,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<MrKeys, VerbsError> {
        let n = &mut self.nodes[node];
        let keys = n.dev.reg_mr(n.pd, addr, len, access)?;
        n.mem.allow(addr, len);
        Ok(keys)
    }

    /// Creates one QP on each node and brings both to RTS, connected to each other.
    pub fn connect(&mut self, p: QpParams) -> Result<(u32, u32), VerbsError> {
        let create = |n: &mut Node| {
            n.dev.create_qp_with(
                QpInit {
                    pd: n.pd,
                    send_cq: n.cq,
                    recv_cq: n.cq,
                    max_send_wr: p.sq_depth,
                    max_recv_wr: p.rq_depth,
                },
                p.reliability,
            )
        };
        let qa = create(&mut self.nodes[A])?;
        let qb = create(&mut self.nodes[B])?;
        let access = Access::all();
        let ends = [
            (A, qa, qb, p.start_psn_b, p.start_psn_a),
            (B, qb, qa, p.start_psn_a, p.start_psn_b),
        ];
        for (me, qpn, peer_qpn, rq_psn, sq_psn) in ends {
            let peer = &self.nodes[1 - me];
            let av = AddressVector::new(peer.mac, peer.ip);
            let dev = &mut self.nodes[me].dev;
            dev.modify_qp(qpn, &QpAttr::to_init(access))?;
            let mut rtr = QpAttr::to_rtr(av, p.pmtu, peer_qpn, rq_psn);
            rtr.min_rnr_timer = Some(p.min_rnr_timer);
            rtr.max_dest_rd_atomic = Some(p.max_rd_atomic);
            dev.modify_qp(qpn, &rtr)?;
            let mut rts = QpAttr::to_rts(sq_psn);
            rts.timeout = Some(p.timeout);
            rts.retry_cnt = Some(p.retry_cnt);
            rts.rnr_retry = Some(p.rnr_retry);
            rts.max_rd_atomic = Some(p.max_rd_atomic);
            dev.modify_qp(qpn, &rts)?;
        }
        Ok((qa, qb))
    }

    /// A UC or UD QP on each node, to RTS towards the other with the attributes the
    /// service's transitions take (UD: Q_Key `qkey` on both, the peer as its address
    /// handle); `connect` for `ServiceType::Rc`.
    pub fn connect_service(
        &mut self,
        p: QpParams,
        service: rnic_transport::ServiceType,
        qkey: u32,
    ) -> Result<(u32, u32), VerbsError> {
        use rnic_transport::{ReliabilityMode, ServiceType};
        if service == ServiceType::Rc {
            return self.connect(p);
        }
        let create = |n: &mut Node| {
            let init = QpInit {
                pd: n.pd,
                send_cq: n.cq,
                recv_cq: n.cq,
                max_send_wr: p.sq_depth,
                max_recv_wr: p.rq_depth,
            };
            n.dev
                .create_qp_service(init, ReliabilityMode::GoBackN, service)
        };
        let qa = create(&mut self.nodes[A])?;
        let qb = create(&mut self.nodes[B])?;
        let ends = [
            (A, qa, qb, p.start_psn_b, p.start_psn_a),
            (B, qb, qa, p.start_psn_a, p.start_psn_b),
        ];
        for (me, qpn, peer_qpn, rq_psn, sq_psn) in ends {
            let peer = &self.nodes[1 - me];
            let av = AddressVector::new(peer.mac, peer.ip);
            let dev = &mut self.nodes[me].dev;
            dev.modify_qp(qpn, &QpAttr::init_for(service, Access::all(), qkey))?;
            dev.modify_qp(qpn, &QpAttr::rtr_for(service, av, p.pmtu, peer_qpn, rq_psn))?;
            dev.modify_qp(qpn, &QpAttr::rts_for(service, sq_psn))?;
        }
        Ok((qa, qb))
    }

    pub fn post_send(&mut self, node: usize, qpn: u32, wr: SendWr) -> Result<(), VerbsError> {
        self.nodes[node].dev.post_send(qpn, wr)
    }

    pub fn post_recv(&mut self, node: usize, qpn: u32, wr: RecvWr) -> Result<(), VerbsError> {
        self.nodes[node].dev.post_recv(qpn, wr)
    }

    /// Every completion `node` has produced since the last call.
    pub fn completions(&mut self, node: usize) -> Vec<Completion> {
        let n = &mut self.nodes[node];
        std::iter::from_fn(|| n.dev.poll_cq(n.cq)).collect()
    }

    /// Moves every frame both devices want to send into the fabric.
    fn transmit_all(&mut self) {
        for me in [A, B] {
            let n = &mut self.nodes[me];
            while let Some(meta) = n.dev.poll_transmit(self.now_ps, &n.mem, &mut self.buf) {
                self.frames_sent += 1;
                if meta.opcode.is_request() {
                    self.last_request_psn[me] = meta.psn;
                }
                if let Some(cap) = self.capture.as_mut() {
                    cap.write_packet(self.now_ps, &self.buf)
                        .expect("writing to a Vec cannot fail");
                }
                if let Some(i) = self.drops.iter().position(|&d| d == (me, meta.opcode)) {
                    self.drops.remove(i);
                    continue;
                }
                self.fabric.send(self.now_ps, 1 - me, &self.buf);
            }
        }
    }

    /// Advances to the next event and handles it. Returns false when nothing is left to do:
    /// no frame in flight, no timer armed, nothing to send.
    pub fn step(&mut self) -> bool {
        self.transmit_all();
        let timers = self.nodes.iter().filter_map(|n| n.dev.poll_timeout());
        let Some(next) = timers.chain(self.fabric.next_delivery_ps()).min() else {
            return false;
        };
        self.now_ps = self.now_ps.max(next);
        while let Some((dst, frame)) = self.fabric.pop_due(self.now_ps) {
            let n = &mut self.nodes[dst];
            if n.dev
                .handle_packet(self.now_ps, &frame, &mut n.mem)
                .is_err()
            {
                n.rx_dropped += 1;
            }
        }
        for n in &mut self.nodes {
            if n.dev.poll_timeout().is_some_and(|t| t <= self.now_ps) {
                n.dev.handle_timeout(self.now_ps);
            }
        }
        true
    }

    /// Runs until idle or until virtual time passes `limit_ps`. Returns true if it went idle.
    pub fn run(&mut self, limit_ps: u64) -> bool {
        while self.now_ps <= limit_ps {
            if !self.step() {
                return true;
            }
        }
        false
    }

    /// Writes the capture to `out` (for the demo and the conformance test).
    pub fn write_capture(&mut self, mut out: impl Write) -> std::io::Result<()> {
        out.write_all(&self.take_capture())
    }
}
