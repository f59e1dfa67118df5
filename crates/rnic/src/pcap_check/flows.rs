//! Per-QP analysis of decoded RoCEv2 packets.
//!
//! A flow is what one QP receives from one host: source IP → destination IP and the BTH's
//! destination QPN (RoCEv2 headers carry no source QPN on RC, so the pair of a connection is
//! two flows, one each way). For each flow: opcodes, completed messages, payload bytes, PSN
//! gaps and retransmissions of its request packets, ACKs and NAKs by syndrome, CNPs and
//! ECN marks; and the ACK round-trip time, which needs the flow the other way (see [`rtt`]).
//!
//! Whatever the capture point sees is judged as seen: a capture on the responder's port
//! shows a lost request as a gap followed by a backward PSN, one on the requester's port shows
//! the same loss only as repeated PSNs. Every PSN is counted once for messages and payload
//! bytes (the first time it is seen), so both captures give the messages the run completed.

use super::decode::{is_sequenced_request, RocePacket};
use rnic_wire::{AethSyndrome, NakCode, Opcode};
use std::collections::{BTreeMap, VecDeque};

pub mod rtt;
mod sequence;

use sequence::{Novelty, Sequence};

/// The smallest path MTU RoCE allows, in bytes.
const MIN_PMTU_BYTES: u64 = 256;

/// READ requests of unknown span kept until the path MTU is known (the oldest go past it);
/// as many as the PSN window [`Sequence`] keeps.
const MAX_UNRESOLVED_READS: usize = 1 << 14;

/// Identifies a flow: packets from `src_ip` to `dst_ip` for QP `dest_qp` there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowKey {
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub dest_qp: u32,
}

/// Completed messages of a flow, by kind: the packets that end one (ONLY or LAST opcodes,
/// READ requests, atomics), each PSN counted once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Messages {
    pub send: u64,
    pub write: u64,
    pub read_request: u64,
    /// READ responses whose ONLY or LAST packet was seen.
    pub read_response: u64,
    pub atomic: u64,
    pub atomic_ack: u64,
}

impl Messages {
    pub fn total(&self) -> u64 {
        self.send
            + self.write
            + self.read_request
            + self.read_response
            + self.atomic
            + self.atomic_ack
    }

    fn count(&mut self, op: Opcode) {
        use Opcode::*;
        let slot = match op {
            RcReadRequest | OooReadRequest => &mut self.read_request,
            RcReadResponseLast | RcReadResponseOnly => &mut self.read_response,
            RcCompareSwap | RcFetchAdd => &mut self.atomic,
            RcAtomicAck => &mut self.atomic_ack,
            _ if !(op.is_last() || op.is_only()) => return,
            RcWriteLast | RcWriteLastImm | RcWriteOnly | RcWriteOnlyImm | UcWriteLast
            | UcWriteLastImm | UcWriteOnly | UcWriteOnlyImm | OooWriteLast | OooWriteLastFspot => {
                &mut self.write
            }
            RcAck | Cnp | OooAck | OooNak => return,
            _ => &mut self.send,
        };
        *slot += 1;
    }
}

/// NAKs by syndrome (the AETH of ACK packets that are not positive).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Naks {
    pub psn_sequence_error: u64,
    /// Receiver not ready.
    pub rnr: u64,
    pub remote_access_error: u64,
    pub invalid_request: u64,
    pub remote_operational_error: u64,
    pub invalid_rd_request: u64,
}

impl Naks {
    pub fn total(&self) -> u64 {
        self.psn_sequence_error
            + self.rnr
            + self.remote_access_error
            + self.invalid_request
            + self.remote_operational_error
            + self.invalid_rd_request
    }
}

/// Everything learnt about one flow.
#[derive(Debug, Clone, Default)]
pub struct Flow {
    pub frames: u64,
    /// Count per opcode byte.
    pub opcodes: BTreeMap<u8, u64>,
    pub messages: Messages,
    /// Payload bytes of SEND, WRITE and READ response packets, each PSN once.
    pub payload_bytes: u64,
    /// Payload bytes of packets seen again (retransmitted or replayed).
    pub repeated_payload_bytes: u64,
    /// Request packets whose PSN jumped forward past the next expected one.
    pub psn_gaps: u64,
    /// PSNs skipped by those jumps (never seen before the jump).
    pub psns_skipped: u64,
    /// Request packets with a PSN at or behind the highest seen (repeated or backward).
    pub retransmitted_packets: u64,
    /// READ responses and atomic ACKs with a PSN seen before (replays).
    pub repeated_responses: u64,
    /// Positive ACKs (opcode Acknowledge with an ACK syndrome).
    pub acks: u64,
    pub naks: Naks,
    pub cnps: u64,
    /// Frames whose IPv4 ECN field was CE.
    pub ecn_ce_frames: u64,
    /// Frames with the BTH's FECN bit.
    pub fecn_frames: u64,
    /// Frames per UDP source port (the connection's entropy; both directions of a Linux or
    /// rnic connection use the same one).
    pub udp_src_ports: BTreeMap<u16, u64>,
    /// Frames per UDP destination port other than 4791.
    pub other_udp_dst_ports: BTreeMap<u16, u64>,
    /// Capture time of the first and last frame that had one, in nanoseconds (pcapng simple
    /// packet blocks have none).
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
    /// Largest payload of a FIRST or MIDDLE packet: the path MTU (READ requests need it to
    /// know how many PSNs their response takes).
    pub pmtu_bytes: Option<u64>,
    requests: Sequence,
    /// READ requests seen before the path MTU was known, `(psn, length)`: their spans are
    /// taken once it is (see [`Sequence::resolve_span`]).
    unresolved_reads: VecDeque<(u32, u64)>,
    responses: Sequence,
    /// Round-trip material, matched with the other direction by [`rtt`].
    pub(crate) rtt_requests: Vec<rtt::Sent>,
    pub(crate) rtt_answers: Vec<rtt::Answer>,
}

/// Every flow of a capture, by key (so reports list them in a stable order).
#[derive(Debug, Default)]
pub struct Flows {
    pub flows: BTreeMap<FlowKey, Flow>,
    /// Path MTU seen in either direction between two hosts, for READ requests of a flow that
    /// carries no FIRST/MIDDLE packet itself.
    pmtu_by_hosts: BTreeMap<([u8; 4], [u8; 4]), u64>,
}

impl Flows {
    /// Adds packet `p` of frame `frame` captured at `time_ns` (`None`: the record has no
    /// timestamp, as a pcapng simple packet block).
    pub fn add(&mut self, frame: u64, time_ns: Option<u64>, p: &RocePacket) {
        let key = FlowKey {
            src_ip: p.src_ip,
            dst_ip: p.dst_ip,
            dest_qp: p.bth.dest_qp,
        };
        let op = p.bth.opcode;
        if (op.is_first() || op.is_middle()) && p.payload_bytes > 0 {
            let hosts = host_pair(p.src_ip, p.dst_ip);
            let m = self.pmtu_by_hosts.entry(hosts).or_insert(0);
            *m = (*m).max(p.payload_bytes);
        }
        let pmtu = self
            .pmtu_by_hosts
            .get(&host_pair(p.src_ip, p.dst_ip))
            .copied();
        let f = self.flows.entry(key).or_default();
        f.add(frame, time_ns, p, pmtu);
    }
}

fn host_pair(a: [u8; 4], b: [u8; 4]) -> ([u8; 4], [u8; 4]) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

impl Flow {
    fn add(&mut self, frame: u64, time_ns: Option<u64>, p: &RocePacket, pmtu: Option<u64>) {
        let op = p.bth.opcode;
        if time_ns.is_some() {
            self.first_ns = self.first_ns.or(time_ns);
            self.last_ns = time_ns;
        }
        self.frames += 1;
        *self.opcodes.entry(op.as_u8()).or_default() += 1;
        *self.udp_src_ports.entry(p.udp_src_port).or_default() += 1;
        if p.udp_dst_port != rnic_wire::ROCE_PORT {
            *self.other_udp_dst_ports.entry(p.udp_dst_port).or_default() += 1;
        }
        self.ecn_ce_frames += u64::from(p.ecn_ce);
        self.fecn_frames += u64::from(p.bth.fecn);
        if (op.is_first() || op.is_middle()) && p.payload_bytes > 0 {
            self.pmtu_bytes = Some(self.pmtu_bytes.unwrap_or(0).max(p.payload_bytes));
        }
        let pmtu = self.pmtu_bytes.or(pmtu);
        if op == Opcode::Cnp {
            self.cnps += 1;
        } else if op.has_deth() {
            // UD: many senders may share a destination QP, so PSNs are not sequenced.
            self.payload_bytes += p.payload_bytes;
            self.messages.count(op);
        } else if is_sequenced_request(op) {
            self.request(frame, time_ns, p, pmtu);
        } else {
            self.response(frame, time_ns, p);
        }
    }

    /// A SEND, WRITE, READ request or atomic of an RC or UC QP.
    fn request(&mut self, frame: u64, time_ns: Option<u64>, p: &RocePacket, pmtu: Option<u64>) {
        let op = p.bth.opcode;
        let pmtu = pmtu.filter(|m| *m > 0);
        let read_span =
            |len: u64, m: u64| len.div_ceil(m).min(u64::from(sequence::PSN_MASK)) as u32;
        // READ requests seen before the path MTU was known take their spans now (on the
        // requester's port every READ leaves before its first response shows the MTU).
        if let Some(m) = pmtu {
            for (psn, len) in std::mem::take(&mut self.unresolved_reads) {
                self.requests.resolve_span(psn, read_span(len, m));
            }
        }
        // A READ request takes one PSN per response packet: its length over the path MTU,
        // learnt from FIRST/MIDDLE packets; unknown until one was seen, unless the READ fits
        // the smallest MTU (256 bytes). An unknown span makes the next jump no gap, and is
        // taken once the MTU is known.
        // (An out-of-order READ request names its range's first response PSN; its responses
        // take one PSN each, as an RC READ's.)
        let is_read = matches!(op, Opcode::RcReadRequest | Opcode::OooReadRequest);
        let span = if is_read {
            let len = u64::from(p.reth_dma_len_bytes.unwrap_or(0));
            if len <= MIN_PMTU_BYTES {
                Some(1)
            } else if let Some(m) = pmtu {
                Some(read_span(len, m))
            } else {
                if self.unresolved_reads.len() == MAX_UNRESOLVED_READS {
                    self.unresolved_reads.pop_front();
                }
                self.unresolved_reads.push_back((p.bth.psn, len));
                None
            }
        } else {
            Some(1)
        };
        let seen = self.requests.see(p.bth.psn, span);
        match seen {
            Novelty::New { skipped } => {
                if skipped > 0 {
                    self.psn_gaps += 1;
                    self.psns_skipped += u64::from(skipped);
                }
            }
            Novelty::Filled => self.retransmitted_packets += 1,
            Novelty::Repeated => self.retransmitted_packets += 1,
        }
        if seen.is_first_sight() {
            self.payload_bytes += p.payload_bytes;
            self.messages.count(op);
        } else {
            self.repeated_payload_bytes += p.payload_bytes;
        }
        let answered = p.bth.ack_req || is_read || op.has_atomic_eth();
        if answered || !seen.is_first_sight() {
            self.rtt_requests.push(rtt::Sent {
                frame,
                time_ns,
                psn: p.bth.psn,
                first: seen.is_first_sight(),
                answered,
            });
        }
    }

    /// An ACK, atomic ACK or READ response.
    fn response(&mut self, frame: u64, time_ns: Option<u64>, p: &RocePacket) {
        let op = p.bth.opcode;
        let psn = p.bth.psn;
        let mut through = Some(psn);
        if matches!(op, Opcode::OooAck | Opcode::OooNak) {
            // Out-of-order ACK / bitmap NAK: the PSN is the first one not yet received.
            if op == Opcode::OooAck {
                self.acks += 1;
            } else {
                self.naks.psn_sequence_error += 1;
            }
            through = Some(psn.wrapping_sub(1) & sequence::PSN_MASK);
        } else if op == Opcode::RcAck {
            match p.aeth.map(|a| a.syndrome) {
                Some(AethSyndrome::Ack { .. }) => self.acks += 1,
                Some(AethSyndrome::RnrNak { .. }) => {
                    self.naks.rnr += 1;
                    through = Some(psn.wrapping_sub(1) & sequence::PSN_MASK);
                }
                Some(AethSyndrome::Nak(code)) => {
                    let n = &mut self.naks;
                    match code {
                        NakCode::PsnSequenceError => {
                            n.psn_sequence_error += 1;
                            // The responder expects `psn`: everything before it arrived.
                            through = Some(psn.wrapping_sub(1) & sequence::PSN_MASK);
                        }
                        NakCode::InvalidRequest => n.invalid_request += 1,
                        NakCode::RemoteAccessError => n.remote_access_error += 1,
                        NakCode::RemoteOperationalError => n.remote_operational_error += 1,
                        NakCode::InvalidRdRequest => n.invalid_rd_request += 1,
                    }
                }
                None => through = None,
            }
        } else {
            let seen = self.responses.see(psn, Some(1));
            if seen.is_first_sight() {
                self.payload_bytes += p.payload_bytes;
                self.messages.count(op);
            } else {
                self.repeated_responses += 1;
                self.repeated_payload_bytes += p.payload_bytes;
            }
        }
        if let Some(through) = through {
            self.rtt_answers.push(rtt::Answer {
                frame,
                time_ns,
                through_psn: through,
            });
        }
    }

    /// The UDP source port most frames of the flow used.
    pub fn main_udp_src_port(&self) -> Option<u16> {
        self.udp_src_ports
            .iter()
            .max_by_key(|(port, n)| (**n, std::cmp::Reverse(**port)))
            .map(|(p, _)| *p)
    }

    /// Whether the flow carries requests (and so has round trips to measure).
    pub fn has_requests(&self) -> bool {
        self.rtt_requests.iter().any(|s| s.answered)
    }

    /// Whether the flow carries ACKs or responses.
    pub fn has_answers(&self) -> bool {
        !self.rtt_answers.is_empty()
    }
}
