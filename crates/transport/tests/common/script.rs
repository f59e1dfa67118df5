//! A scripted peer: builds the frames a peer of node A (10.0.0.1) or node B (10.0.0.2) would
//! send, and reads back what a device sends, so a test can play one side of a connection
//! packet by packet.

use super::Node;
use rnic_wire::*;

/// A BTH with AckReq set and the default P_Key.
pub fn bth(opcode: Opcode, dest_qp: u32, psn: u32) -> BthRepr {
    BthRepr {
        ack_req: true,
        ..BthRepr::new(opcode, dest_qp, psn)
    }
}

/// A packet with only a BTH.
pub fn roce(b: BthRepr) -> RoceRepr<'static> {
    RoceRepr::new(b, &[])
}

/// An ATOMIC ACKNOWLEDGE for `psn` of `dest_qp` (a positive AETH with `msn`) returning
/// the original value `orig`.
pub fn atomic_ack(dest_qp: u32, psn: u32, msn: u32, orig: u64) -> RoceRepr<'static> {
    let mut r = roce(bth(Opcode::RcAtomicAck, dest_qp, psn));
    r.aeth = Some(AethRepr {
        syndrome: AethSyndrome::Ack { credits: 0x1F },
        msn,
    });
    r.atomic_ack = Some(AtomicAckEthRepr { orig });
    r
}

/// A frame from A's address to B's.
pub fn frame_to_b(r: RoceRepr<'_>) -> Vec<u8> {
    let f = FrameRepr {
        addr: FrameAddr {
            src_mac: [2, 0, 0, 0, 0, 0xA],
            dst_mac: [2, 0, 0, 0, 0, 0xB],
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 0, 2],
            udp_src_port: 0xC000,
            dscp_ecn: 0,
            ttl: 64,
        },
        ip_ident: 0,
        roce: r,
    };
    let mut buf = Vec::new();
    f.emit(&mut buf);
    buf
}

/// A frame from B's address to A's.
pub fn frame_to_a(r: RoceRepr<'_>) -> Vec<u8> {
    let bytes = frame_to_b(r);
    let mut f = FrameRepr::parse(&bytes).unwrap();
    f.addr.src_ip = [10, 0, 0, 2];
    f.addr.dst_ip = [10, 0, 0, 1];
    let mut buf = Vec::new();
    f.emit(&mut buf);
    buf
}

/// Drains a node's transmissions and returns them parsed as (opcode, psn, syndrome).
pub fn responses(node: &mut Node) -> Vec<(Opcode, u32, Option<AethSyndrome>)> {
    sent_frames(node)
        .into_iter()
        .map(|f| (f.opcode, f.psn, f.syndrome))
        .collect()
}

/// One frame a device sent, as the scripted peer sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub opcode: Opcode,
    pub psn: u32,
    pub syndrome: Option<AethSyndrome>,
    /// RETH (VA, R_Key, DMA length).
    pub reth: Option<(u64, u32, u32)>,
    pub orig: Option<u64>,
    pub payload: Vec<u8>,
}

/// Drains a node's transmissions with everything a test may check.
pub fn sent_frames(node: &mut Node) -> Vec<Seen> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while node.dev.poll_transmit(0, &node.mem, &mut buf).is_some() {
        let f = FrameRepr::parse(&buf).unwrap();
        let r = f.roce;
        out.push(Seen {
            opcode: r.bth.opcode,
            psn: r.bth.psn,
            syndrome: r.aeth.map(|a| a.syndrome),
            reth: r.reth.map(|x| (x.va, x.rkey, x.dma_len)),
            orig: r.atomic_ack.map(|a| a.orig),
            payload: r.payload.to_vec(),
        });
    }
    out
}
