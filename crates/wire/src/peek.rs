//! Cheap reads of a frame's headers for simulators and switches, which decide where a frame
//! goes and how long it takes before (or instead of) the transport parsing it in full.
//!
//! Neither function copies the frame or allocates, and neither computes the ICRC, the one cost
//! that grows with the frame: a frame they accept may still be corrupt. The endpoint's
//! [`FrameRepr::parse`] is what rejects it.

use core::ops::Range;

use crate::error::{check_len, Result, WireError};
use crate::ethernet::{self, ETHERTYPE_IPV4};
use crate::frame::{transport, BTH_OFFSET, IPV4_OFFSET, UDP_OFFSET};
use crate::opcode::Opcode;
use crate::roce::{checked_ext_len, checked_payload_len};
use crate::udp::{self, ROCE_PORT};
#[cfg(doc)]
use crate::FrameRepr;
use crate::{aeth, atomic_eth, bth, ipv4, reth};
use crate::{AethRepr, AtomicEthRepr, BthRepr, RethRepr};

/// The headers of a RoCEv2 frame a timing model or a switch acts on, read by [`peek_roce`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceHeaders {
    /// Where a switch forwards the frame.
    pub dst_mac: [u8; 6],
    pub dst_ip: [u8; 4],
    /// The flow entropy ECMP hashes (see [`crate::udp_entropy_port`]).
    pub udp_src_port: u16,
    pub bth: BthRepr,
    /// The remote buffer of a first/only WRITE or a READ request.
    pub reth: Option<RethRepr>,
    /// The remote word of a CMP&SWAP or FETCH&ADD (always 8 bytes).
    pub atomic_eth: Option<AtomicEthRepr>,
    /// The syndrome and MSN of an ACK, atomic ACK or first/last/only READ response.
    pub aeth: Option<AethRepr>,
    /// Offset of the first payload byte from the start of the frame, in bytes.
    pub payload_offset: usize,
    /// Payload bytes, pad and ICRC not included.
    pub payload_len: usize,
}

impl RoceHeaders {
    /// The payload's byte range in the frame `peek_roce` read.
    #[inline]
    pub fn payload_range(&self) -> Range<usize> {
        self.payload_offset..self.payload_offset + self.payload_len
    }
}

/// Reads the headers of a RoCEv2 frame without verifying its ICRC or IPv4 header checksum.
///
/// Every other check of [`FrameRepr::parse`] is made, by the same functions, so a malformed
/// frame is an error (never a panic) and the two return the same error for every frame whose
/// checksums are right: the IPv4 version, IHL, total length (Ethernet padding after the
/// datagram is ignored), fragment bits and protocol; UDP port 4791 and a length equal to the IP
/// payload; a known opcode, TVer 0, the opcode's extension headers present (an AETH's syndrome
/// valid); a pad count the opcode and payload allow. The payload length follows from the IP
/// total length, the opcode's extension headers and the pad count.
///
/// Cost: a few dozen loads and compares, whatever the payload size; no copy of the frame, no
/// allocation, no CRC. Use [`peek_bth`] when the BTH alone is enough.
pub fn peek_roce(frame: &[u8]) -> Result<RoceHeaders> {
    let transport = transport(frame, false, ROCE_PORT)?;
    let bth = BthRepr::parse(&bth::Packet::new_checked(transport)?)?;
    let op = bth.opcode;
    let ext = transport.get(bth::HEADER_LEN..).unwrap_or(&[]);
    let ext_len = checked_ext_len(op, ext.len())?;
    // In-bounds by `checked_ext_len`; a short slice would still be an error, not a panic.
    let at = |index| ext.get(ext_offset(op, index)..).unwrap_or(&[]);
    let reth = if op.has_reth() {
        Some(RethRepr::parse(&reth::Packet::new_unchecked(at(RETH)))?)
    } else {
        None
    };
    let atomic_eth = if op.has_atomic_eth() {
        Some(AtomicEthRepr::parse(&atomic_eth::Packet::new_unchecked(
            at(ATOMIC_ETH),
        ))?)
    } else {
        None
    };
    let aeth = if op.has_aeth() {
        Some(AethRepr::parse(&aeth::Packet::new_unchecked(at(AETH)))?)
    } else {
        None
    };
    let payload_len = checked_payload_len(&bth, ext.len() - ext_len)?;
    // `transport` checked that the frame holds the Ethernet, IPv4 and UDP headers.
    Ok(RoceHeaders {
        dst_mac: ethernet::Packet::new_unchecked(frame).dst(),
        dst_ip: ipv4::Packet::new_unchecked(&frame[IPV4_OFFSET..]).dst(),
        udp_src_port: udp::Packet::new_unchecked(&frame[UDP_OFFSET..]).src_port(),
        bth,
        reth,
        atomic_eth,
        aeth,
        payload_offset: BTH_OFFSET + bth::HEADER_LEN + ext_len,
        payload_len,
    })
}

/// Indices into [`Opcode::ext_headers`] of the headers the peek reads.
const RETH: usize = 1;
const ATOMIC_ETH: usize = 2;
const AETH: usize = 3;

/// Offset in bytes, from the end of the BTH, of extension header `index` of `op`.
#[inline]
fn ext_offset(op: Opcode, index: usize) -> usize {
    op.ext_offset(index)
}

/// Reads the BTH of a frame cheaply, without ICRC verification or extension-header parsing:
/// checks the frame is long enough, IPv4 (IHL 5) carrying UDP to port 4791, then parses the
/// BTH at offset 42. For timing models that need opcode/QP/PSN of frames they already trust;
/// lengths and extension headers are not checked (see [`peek_roce`]).
pub fn peek_bth(frame: &[u8]) -> Result<BthRepr> {
    check_len("bth", BTH_OFFSET + bth::HEADER_LEN, frame.len())?;
    let ethertype = ethernet::Packet::new_unchecked(frame).ethertype();
    if ethertype != ETHERTYPE_IPV4 {
        return Err(WireError::NotIpv4 { ethertype });
    }
    let ip = ipv4::Packet::new_unchecked(&frame[IPV4_OFFSET..]);
    if ip.version() != 4 {
        return Err(WireError::BadIpVersion(ip.version()));
    }
    if ip.ihl_words() != 5 {
        return Err(WireError::BadIpHeaderLen(ip.ihl_words()));
    }
    if ip.protocol() != ipv4::PROTOCOL_UDP {
        return Err(WireError::NotUdp {
            protocol: ip.protocol(),
        });
    }
    let dst_port = udp::Packet::new_unchecked(&frame[UDP_OFFSET..]).dst_port();
    if dst_port != ROCE_PORT {
        return Err(WireError::NotRoce { dst_port });
    }
    BthRepr::parse(&bth::Packet::new_unchecked(&frame[BTH_OFFSET..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peeked_header_indices_name_the_right_headers() {
        let names = Opcode::RcSendOnly.ext_headers().map(|(_, name, _)| name);
        assert_eq!(
            (names[RETH], names[ATOMIC_ETH], names[AETH]),
            ("reth", "atomic_eth", "aeth")
        );
    }

    #[test]
    fn ext_offsets_follow_wire_order() {
        assert_eq!(ext_offset(Opcode::RcWriteOnlyImm, RETH), 0);
        assert_eq!(ext_offset(Opcode::RcAtomicAck, AETH), 0);
        assert_eq!(ext_offset(Opcode::UdSendOnlyImm, 5), 8);
        assert_eq!(ext_offset(Opcode::RcAtomicAck, 5), 12);
    }
}
