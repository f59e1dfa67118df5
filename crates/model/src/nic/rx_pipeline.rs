//! The RX pipeline: parse (`rx_pkt_cycles` per frame) → QPC request (responder channel for
//! requests, requester channel for ACKs and responses) → translation of the RETH/AtomicETH
//! target (MPT + one MTT lookup per page of the whole message, on its first packet) → the
//! transport's checks and data placement (`handle_packet`). After it: the payload's DMA
//! write over PCIe, the READ/atomic response's data read, ACK generation by the TX engine,
//! CQEs. All stages are in order, so the transport sees each QP's packets in arrival order.

use rnic_sim::TimePs;
use rnic_wire::{peek_bth, Opcode, BTH_OFFSET};

use super::qpc_manager::{Channel, QpcRequest};
use super::translation::{TransJob, TransLane};
use super::unit::Unit;
use super::{DmaToken, TransCont};
use crate::event::Ev;
use crate::world::World;

/// Counters of the RX pipeline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RxStats {
    /// Frames received.
    pub frames: u64,
    /// Frames the transport dropped (malformed, bad PSN state, unknown QP, ...).
    pub dropped: u64,
    /// Payload bytes DMA-written into host memory.
    pub payload_bytes: u64,
}

/// The RX pipeline.
#[derive(Debug)]
pub struct RxPipeline {
    /// The parse stage.
    pub unit: Unit,
    /// Counters.
    pub stats: RxStats,
}

impl RxPipeline {
    /// A pipeline with II `rx_ps`.
    pub fn new(rx_ps: TimePs) -> Self {
        RxPipeline {
            unit: Unit::new(rx_ps),
            stats: RxStats::default(),
        }
    }
}

fn be32(b: &[u8], o: usize) -> u32 {
    b.get(o..o + 4)
        .map_or(0, |s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn be64(b: &[u8], o: usize) -> u64 {
    (u64::from(be32(b, o)) << 32) | u64::from(be32(b, o + 4))
}

/// Payload bytes of a RoCEv2 frame (from the IP total length), 0 if malformed.
pub fn payload_len(frame: &[u8], op: Opcode, pad: u8) -> u64 {
    let ip_total = frame
        .get(16..18)
        .map_or(0, |s| u16::from_be_bytes([s[0], s[1]]) as usize);
    ip_total
        .saturating_sub(20 + 8 + 12 + op.ext_headers_len() + usize::from(pad) + 4)
        .try_into()
        .unwrap_or(0)
}

impl World {
    /// A frame's last bit reaches node `n` at `now`.
    pub(crate) fn on_rx_arrive(&mut self, n: usize, now: TimePs, frame: u32) {
        if n == 0 {
            self.pcap_frame(now, frame);
        }
        let nic = &mut self.nodes[n].nic;
        let t = nic.rx.unit.serve(now);
        nic.rx.stats.frames += 1;
        let bytes = self.frames.get(frame);
        let known = match peek_bth(bytes) {
            Ok(bth) if nic.qps.get(bth.dest_qp as usize).is_some_and(|q| q.valid) => Some(bth),
            _ => None,
        };
        match known {
            Some(bth) => {
                let channel = if bth.opcode.is_request() {
                    Channel::Responder
                } else {
                    Channel::Requester
                };
                nic.qpc.submit(QpcRequest {
                    qpn: bth.dest_qp,
                    channel,
                    index: frame,
                    at: t,
                });
                self.qpc_pump(n, now);
            }
            // Not ours to time: the transport parses, counts and drops it.
            None => self.q.push(
                t,
                Ev::RxHandle {
                    node: n as u32,
                    frame,
                },
            ),
        }
    }

    /// The QPC of a received frame is ready at `at`: translate its target, if any.
    pub(crate) fn rx_after_qpc(&mut self, n: usize, frame: u32, at: TimePs) {
        let bytes = self.frames.get(frame);
        let mut job = TransJob {
            key: 0,
            va: 0,
            len: 0,
            needs: false,
            cont: TransCont::Rx(frame),
            at,
        };
        if let Ok(bth) = peek_bth(bytes) {
            let o = BTH_OFFSET + 12;
            if bth.opcode.has_reth() {
                job.va = be64(bytes, o);
                job.key = be32(bytes, o + 8);
                job.len = u64::from(be32(bytes, o + 12));
                job.needs = true;
            } else if bth.opcode.has_atomic_eth() {
                job.va = be64(bytes, o);
                job.key = be32(bytes, o + 8);
                job.len = 8;
                job.needs = true;
            }
        }
        self.nodes[n].nic.trans.submit(TransLane::Rx, job);
        self.trans_pump(n);
    }

    /// The transport handles a received frame at `now`.
    pub(crate) fn on_rx_handle(&mut self, n: usize, now: TimePs, frame: u32) {
        let node = &mut self.nodes[n];
        let bytes = self.frames.get(frame);
        let bth = peek_bth(bytes).ok();
        let before = not_placed_count(node.dev.stats());
        let res = node.dev.handle_packet(now, bytes, &mut node.mem);
        let placed = res.is_ok() && not_placed_count(node.dev.stats()) == before;
        let (op, qpn, plen, dma_len) = match bth {
            Some(b) => (
                Some(b.opcode),
                b.dest_qp,
                payload_len(bytes, b.opcode, b.pad_count),
                if b.opcode.has_reth() {
                    u64::from(be32(bytes, BTH_OFFSET + 12 + 12))
                } else {
                    0
                },
            ),
            None => (None, 0, 0, 0),
        };
        if let (Some(b), true) = (bth, placed && plen > 0) {
            self.check_payload(n, frame, b.opcode, b.psn, qpn, plen);
        }
        self.frames.release(frame);
        let node = &mut self.nodes[n];
        let nic = &mut node.nic;
        if res.is_err() {
            nic.rx.stats.dropped += 1;
        }
        let mut enlist = true;
        if let (Some(op), true) = (op, res.is_ok()) {
            match op {
                Opcode::RcReadRequest => {
                    enlist = false;
                    self.host_read(n, now, dma_len.max(1), DmaToken::ReadResp(qpn));
                }
                Opcode::RcCompareSwap | Opcode::RcFetchAdd => {
                    enlist = false;
                    let nic = &mut self.nodes[n].nic;
                    nic.pcie.posted_write(now, 8);
                    self.host_read(n, now, 8, DmaToken::ReadResp(qpn));
                }
                Opcode::RcAtomicAck => {
                    nic.pcie.posted_write(now, 8);
                }
                _ if plen > 0 => {
                    nic.rx.stats.payload_bytes += plen;
                    let land = nic.pcie.posted_write(now, plen);
                    let is_write_end = matches!(
                        op,
                        Opcode::RcWriteOnly
                            | Opcode::RcWriteLast
                            | Opcode::RcWriteOnlyImm
                            | Opcode::RcWriteLastImm
                    );
                    if nic.watch_writes && is_write_end {
                        self.q.push(
                            land,
                            Ev::Landed {
                                node: n as u32,
                                qpn,
                            },
                        );
                    }
                }
                _ => {}
            }
        }
        let node = &mut self.nodes[n];
        if enlist && op.is_some() && node.dev.qp_wants_transmit(qpn) {
            node.nic.tx_enlist(qpn);
            self.tx_kick(n, now);
        }
        if op.is_some() {
            self.cq_collect(n, now, qpn);
        }
        self.arm_timer(n, now);
    }
}

/// Transport counters that grow when a received packet is not placed (dropped, duplicate,
/// NAKed).
fn not_placed_count(s: &rnic_transport::TransportStats) -> u64 {
    s.drops.total() + s.duplicate_requests + s.naks_sent.total() + s.duplicate_responses
}

impl World {
    /// The end-to-end payload oracle: every placed SEND/WRITE/READ-response payload must
    /// equal the bytes of the sender's source buffer at the packet's offset in its message
    /// (all messages of a pair carry the same source buffer). Mismatches fail the run.
    ///
    /// The offset comes from PSNs alone, never from opcodes: every operation of a run has
    /// the same size, so each takes `npkts` PSNs from 0 on, and a packet's offset is its
    /// PSN distance from its operation's first PSN × PMTU. Placement is in order, so the
    /// operation start only moves forward (`rx_msg_psn`).
    fn check_payload(&mut self, n: usize, frame: u32, op: Opcode, psn: u32, qpn: u32, plen: u64) {
        const PSN_MASK: u32 = 0x00ff_ffff;
        let pmtu = u64::from(self.p.pmtu);
        let npkts = u64::from(self.app.size.max(1)).div_ceil(pmtu).max(1) as u32;
        let Some(qp) = self.nodes[n].nic.qps.get_mut(qpn as usize) else {
            return;
        };
        let ahead = psn.wrapping_sub(qp.rx_msg_psn) & PSN_MASK;
        if ahead > PSN_MASK / 2 {
            self.payload_mismatches += 1;
            let start = qp.rx_msg_psn;
            self.first_mismatch.get_or_insert_with(|| {
                format!(
                    "node {n} QP {qpn} PSN {psn}: placed behind its operation's first PSN {start}"
                )
            });
            return;
        }
        let whole_ops = ahead / npkts * npkts;
        qp.rx_msg_psn = qp.rx_msg_psn.wrapping_add(whole_ops) & PSN_MASK;
        let index = u64::from(ahead - whole_ops);
        let Some(hq) = self.app.nodes[n].qps.get(qpn as usize).copied() else {
            return;
        };
        let pair = self.app.pairs[hq.pair as usize];
        let peer = if n == 0 { pair.c_node as usize } else { 0 };
        let src = self.app.src(peer, hq.pair) + index * pmtu;
        let bytes = self.frames.get(frame);
        let off = BTH_OFFSET + 12 + op.ext_headers_len();
        let Some(got) = bytes.get(off..off + plen as usize) else {
            return;
        };
        let mut want = std::mem::take(&mut self.scratch_bytes);
        want.resize(plen as usize, 0);
        rnic_transport::Memory::read(&self.nodes[peer].mem, src, &mut want);
        self.payload_checked += plen;
        if want != got {
            let at = want.iter().zip(got).position(|(a, b)| a != b).unwrap_or(0);
            self.payload_mismatches += 1;
            self.first_mismatch.get_or_insert_with(|| {
                format!(
                    "node {n} QP {qpn} PSN {psn}: placed payload differs from node {peer}'s source at byte {} ({:#04x} != {:#04x})",
                    index * pmtu + at as u64,
                    got[at],
                    want[at]
                )
            });
        }
        self.scratch_bytes = want;
    }
}
