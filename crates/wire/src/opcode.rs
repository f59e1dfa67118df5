//! BTH opcodes: which extension headers each carries and whether it may carry payload.
//!
//! Byte 0 of the BTH: bits 7–5 select the transport (000 RC, 001 UC, 011 UD, 100 CNP), bits
//! 4–0 the operation. Only the opcodes this simulator sends are known; every other byte parses
//! as [`WireError::UnknownOpcode`].
//!
//! The vendor range 0xC0–0xFF holds rnic's encoding of the out-of-order WRITE of "ORNIC: A
//! High-Performance RDMA NIC with Out-of-Order Packet Direct Write Method for Multipath
//! Transmission" (Electronics 2025): data packets that carry their write address in a RETH
//! (FSpot) or none (Spot), each with a Last variant that ends the WQE, and an ACK and a bitmap
//! NAK that carry an [`crate::ooo_eth`] header after their AETH. A data packet's place in its
//! message is its PSN, not its opcode, so FSpot and Spot count as middle packets and the Last
//! packets as last ones.

use crate::error::{Result, WireError};

/// A known BTH opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Opcode {
    RcSendFirst = 0x00,
    RcSendMiddle = 0x01,
    RcSendLast = 0x02,
    RcSendLastImm = 0x03,
    RcSendOnly = 0x04,
    RcSendOnlyImm = 0x05,
    RcWriteFirst = 0x06,
    RcWriteMiddle = 0x07,
    RcWriteLast = 0x08,
    RcWriteLastImm = 0x09,
    RcWriteOnly = 0x0A,
    RcWriteOnlyImm = 0x0B,
    RcReadRequest = 0x0C,
    RcReadResponseFirst = 0x0D,
    RcReadResponseMiddle = 0x0E,
    RcReadResponseLast = 0x0F,
    RcReadResponseOnly = 0x10,
    RcAck = 0x11,
    RcAtomicAck = 0x12,
    RcCompareSwap = 0x13,
    RcFetchAdd = 0x14,
    RcSendLastInv = 0x16,
    RcSendOnlyInv = 0x17,
    UcSendFirst = 0x20,
    UcSendMiddle = 0x21,
    UcSendLast = 0x22,
    UcSendLastImm = 0x23,
    UcSendOnly = 0x24,
    UcSendOnlyImm = 0x25,
    UcWriteFirst = 0x26,
    UcWriteMiddle = 0x27,
    UcWriteLast = 0x28,
    UcWriteLastImm = 0x29,
    UcWriteOnly = 0x2A,
    UcWriteOnlyImm = 0x2B,
    UdSendOnly = 0x64,
    UdSendOnlyImm = 0x65,
    /// RoCEv2 Congestion Notification Packet: BTH (BECN set) and 16 reserved bytes.
    Cnp = 0x81,
    /// OOO WRITE FSpot: a data packet carrying its write address (RETH: the packet's VA, the
    /// R_Key, the WQE's length).
    OooWriteFspot = 0xC0,
    /// OOO WRITE Spot: a data packet without an address (the responder knows the start).
    OooWriteSpot = 0xC1,
    /// OOO WRITE Last carrying its address (RETH, as FSpot): ends the WQE.
    OooWriteLastFspot = 0xC2,
    /// OOO WRITE Last without an address: ends the WQE.
    OooWriteLast = 0xC3,
    /// OOO ACK: AETH (cumulative PSN in the BTH, MSN) + OOO ACK ETH (start-learnt flag).
    OooAck = 0xC4,
    /// OOO bitmap NAK: BTH PSN = first missing PSN, AETH (NAK), OOO ACK ETH with the missing
    /// PSNs of that bitmap block.
    OooNak = 0xC5,
    /// OOO READ request (RETH: the range's VA, R_Key, length; BTH PSN: the range's first
    /// response PSN): the whole WQE, or a missing range asked for again.
    OooReadRequest = 0xC6,
    /// OOO READ response: a payload at PSN `start + i`, placed by the requester from the
    /// start PSN and address it cached; no header beyond the BTH.
    OooReadResponse = 0xC7,
}

use Opcode::*;

impl Opcode {
    /// Every known opcode, in wire-value order (for tests and tables).
    pub const ALL: [Opcode; 46] = [
        RcSendFirst,
        RcSendMiddle,
        RcSendLast,
        RcSendLastImm,
        RcSendOnly,
        RcSendOnlyImm,
        RcWriteFirst,
        RcWriteMiddle,
        RcWriteLast,
        RcWriteLastImm,
        RcWriteOnly,
        RcWriteOnlyImm,
        RcReadRequest,
        RcReadResponseFirst,
        RcReadResponseMiddle,
        RcReadResponseLast,
        RcReadResponseOnly,
        RcAck,
        RcAtomicAck,
        RcCompareSwap,
        RcFetchAdd,
        RcSendLastInv,
        RcSendOnlyInv,
        UcSendFirst,
        UcSendMiddle,
        UcSendLast,
        UcSendLastImm,
        UcSendOnly,
        UcSendOnlyImm,
        UcWriteFirst,
        UcWriteMiddle,
        UcWriteLast,
        UcWriteLastImm,
        UcWriteOnly,
        UcWriteOnlyImm,
        UdSendOnly,
        UdSendOnlyImm,
        Cnp,
        OooWriteFspot,
        OooWriteSpot,
        OooWriteLastFspot,
        OooWriteLast,
        OooAck,
        OooNak,
        OooReadRequest,
        OooReadResponse,
    ];

    /// The out-of-order WRITE data packets (vendor opcodes 0xC0–0xC3).
    pub const OOO_DATA: [Opcode; 4] =
        [OooWriteFspot, OooWriteSpot, OooWriteLastFspot, OooWriteLast];

    /// Maps a wire byte to an opcode; bytes not in [`Opcode::ALL`] are `UnknownOpcode`.
    /// One load from a table built out of [`Opcode::ALL`] at compile time: every received
    /// frame is peeked several times, and the branchy match this replaces was not inlined.
    #[inline]
    pub fn from_u8(v: u8) -> Result<Opcode> {
        FROM_U8[usize::from(v)].ok_or(WireError::UnknownOpcode(v))
    }

    /// The wire byte.
    #[inline]
    pub fn as_u8(self) -> u8 {
        self as u8
    }

    #[inline]
    pub const fn has_deth(self) -> bool {
        matches!(self, UdSendOnly | UdSendOnlyImm)
    }

    /// RETH: first/only WRITE packets and the READ request.
    #[inline]
    pub const fn has_reth(self) -> bool {
        matches!(
            self,
            RcWriteFirst
                | RcWriteOnly
                | RcWriteOnlyImm
                | RcReadRequest
                | UcWriteFirst
                | UcWriteOnly
                | UcWriteOnlyImm
                | OooWriteFspot
                | OooWriteLastFspot
                | OooReadRequest
        )
    }

    #[inline]
    pub const fn has_atomic_eth(self) -> bool {
        matches!(self, RcCompareSwap | RcFetchAdd)
    }

    /// AETH: ACK, atomic ACK and the READ responses that begin or end a response.
    #[inline]
    pub const fn has_aeth(self) -> bool {
        matches!(
            self,
            RcReadResponseFirst
                | RcReadResponseLast
                | RcReadResponseOnly
                | RcAck
                | RcAtomicAck
                | OooAck
                | OooNak
        )
    }

    /// OOO ACK ETH: the out-of-order ACK and NAK.
    #[inline]
    pub const fn has_ooo_ack_eth(self) -> bool {
        matches!(self, OooAck | OooNak)
    }

    /// An out-of-order WRITE data packet or its ACK/NAK (the vendor opcodes).
    #[inline]
    pub const fn is_ooo(self) -> bool {
        matches!(
            self,
            OooWriteFspot
                | OooWriteSpot
                | OooWriteLastFspot
                | OooWriteLast
                | OooAck
                | OooNak
                | OooReadRequest
                | OooReadResponse
        )
    }

    #[inline]
    pub const fn has_atomic_ack_eth(self) -> bool {
        matches!(self, RcAtomicAck)
    }

    /// ImmDt: the "with immediate" last/only SEND and WRITE packets.
    #[inline]
    pub const fn has_immdt(self) -> bool {
        matches!(
            self,
            RcSendLastImm
                | RcSendOnlyImm
                | RcWriteLastImm
                | RcWriteOnlyImm
                | UcSendLastImm
                | UcSendOnlyImm
                | UcWriteLastImm
                | UcWriteOnlyImm
                | UdSendOnlyImm
        )
    }

    #[inline]
    pub const fn has_ieth(self) -> bool {
        matches!(self, RcSendLastInv | RcSendOnlyInv)
    }

    /// Definition of [`Opcode::has_payload`].
    const fn has_payload_by_kind(self) -> bool {
        !matches!(
            self,
            RcReadRequest
                | RcAck
                | RcAtomicAck
                | RcCompareSwap
                | RcFetchAdd
                | Cnp
                | OooAck
                | OooNak
                | OooReadRequest
        )
    }

    /// Definition of [`Opcode::is_request`].
    const fn is_request_by_kind(self) -> bool {
        !matches!(
            self,
            RcReadResponseFirst
                | RcReadResponseMiddle
                | RcReadResponseLast
                | RcReadResponseOnly
                | RcAck
                | RcAtomicAck
                | Cnp
                | OooAck
                | OooNak
                | OooReadResponse
        )
    }

    /// Definition of [`Opcode::is_first`].
    const fn is_first_by_kind(self) -> bool {
        matches!(
            self,
            RcSendFirst | RcWriteFirst | RcReadResponseFirst | UcSendFirst | UcWriteFirst
        )
    }

    /// Definition of [`Opcode::is_middle`].
    const fn is_middle_by_kind(self) -> bool {
        matches!(
            self,
            RcSendMiddle
                | RcWriteMiddle
                | RcReadResponseMiddle
                | UcSendMiddle
                | UcWriteMiddle
                | OooWriteFspot
                | OooWriteSpot
                | OooReadResponse
        )
    }

    /// Definition of [`Opcode::is_last`].
    const fn is_last_by_kind(self) -> bool {
        matches!(
            self,
            RcSendLast
                | RcSendLastImm
                | RcSendLastInv
                | RcWriteLast
                | RcWriteLastImm
                | RcReadResponseLast
                | UcSendLast
                | UcSendLastImm
                | UcWriteLast
                | UcWriteLastImm
                | OooWriteLastFspot
                | OooWriteLast
        )
    }

    /// May carry payload bytes: SEND, WRITE and READ response packets. READ requests, ACKs,
    /// atomics and CNPs carry none.
    ///
    /// This and the other packet-kind predicates read one byte of `KIND`, built at compile
    /// time from their definitions (`*_by_kind`): every frame asks several of them on its
    /// way, and the matches over sparse wire values compiled to chains of compares.
    #[inline]
    pub fn has_payload(self) -> bool {
        self.kind(KIND_PAYLOAD)
    }

    /// Sent by a requester: SEND, WRITE, READ request and atomic packets.
    #[inline]
    pub fn is_request(self) -> bool {
        self.kind(KIND_REQUEST)
    }

    /// First packet of a multi-packet message.
    #[inline]
    pub fn is_first(self) -> bool {
        self.kind(KIND_FIRST)
    }

    /// A middle packet (for the out-of-order WRITE: FSpot, Spot and READ responses).
    #[inline]
    pub fn is_middle(self) -> bool {
        self.kind(KIND_MIDDLE)
    }

    /// Last packet of a multi-packet message.
    #[inline]
    pub fn is_last(self) -> bool {
        self.kind(KIND_LAST)
    }

    /// Whether this opcode's [`KIND`] byte has `bit`.
    #[inline]
    fn kind(self, bit: u8) -> bool {
        KIND[self as usize] & bit != 0
    }

    /// The packet is a whole message by itself: the *ONLY opcodes and the single-packet
    /// operations (READ request, atomics, ACK, atomic ACK). False for CNP, which is not part of
    /// any message.
    #[inline]
    pub fn is_only(self) -> bool {
        self != Cnp && !self.is_first() && !self.is_middle() && !self.is_last()
    }

    /// Bytes between the BTH and the payload (for CNP: its 16 reserved bytes), from a table
    /// computed at compile time out of `Opcode::ext_headers`' lengths (this sits on every
    /// packet's path).
    #[inline]
    pub fn ext_headers_len(self) -> usize {
        usize::from(EXT_HEADERS_LEN[self as usize])
    }

    /// Offset in bytes, from the end of the BTH, of extension header `index` of
    /// [`Opcode::ext_headers`] (where it would start if the opcode has none), from a table
    /// computed at compile time (the peek reads three of them per frame).
    #[inline]
    pub(crate) fn ext_offset(self, index: usize) -> usize {
        usize::from(EXT_OFFSETS[self as usize][index])
    }

    /// Every extension header in wire order as (present for this opcode, layer name, length
    /// in bytes); CNP's reserved block counts as one. The one table the lengths, the parser's
    /// truncation errors and the peek's offsets all come from.
    #[inline]
    pub(crate) const fn ext_headers(self) -> [(bool, &'static str, usize); 9] {
        use crate::{aeth, atomic_ack_eth, atomic_eth, cnp, deth, ieth, immdt, ooo_eth, reth};
        [
            (self.has_deth(), "deth", deth::HEADER_LEN),
            (self.has_reth(), "reth", reth::HEADER_LEN),
            (self.has_atomic_eth(), "atomic_eth", atomic_eth::HEADER_LEN),
            (self.has_aeth(), "aeth", aeth::HEADER_LEN),
            (
                self.has_atomic_ack_eth(),
                "atomic_ack_eth",
                atomic_ack_eth::HEADER_LEN,
            ),
            (self.has_immdt(), "immdt", immdt::HEADER_LEN),
            (self.has_ieth(), "ieth", ieth::HEADER_LEN),
            (matches!(self, Cnp), "cnp", cnp::HEADER_LEN),
            (self.has_ooo_ack_eth(), "ooo_ack_eth", ooo_eth::HEADER_LEN),
        ]
    }
}

/// Number of extension headers [`Opcode::ext_headers`] lists.
const EXT_HEADERS: usize = 9;

/// Offsets of each opcode's extension headers from the end of the BTH, by wire value; the
/// last column is their total length (see [`Opcode::ext_offset`]).
const EXT_OFFSETS: [[u8; EXT_HEADERS + 1]; 256] = {
    let mut t = [[0u8; EXT_HEADERS + 1]; 256];
    let mut i = 0;
    while i < Opcode::ALL.len() {
        let op = Opcode::ALL[i];
        let headers = op.ext_headers();
        let mut offset = 0;
        let mut h = 0;
        while h < EXT_HEADERS {
            t[op as usize][h] = offset as u8;
            if headers[h].0 {
                offset += headers[h].2;
            }
            h += 1;
        }
        t[op as usize][EXT_HEADERS] = offset as u8;
        i += 1;
    }
    t
};

/// Extension-header bytes of each opcode, by wire value.
const EXT_HEADERS_LEN: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = EXT_OFFSETS[i][EXT_HEADERS];
        i += 1;
    }
    t
};

/// Bits of [`KIND`].
const KIND_PAYLOAD: u8 = 1;
const KIND_REQUEST: u8 = 2;
const KIND_FIRST: u8 = 4;
const KIND_MIDDLE: u8 = 8;
const KIND_LAST: u8 = 16;

/// The packet-kind predicates of each opcode, by wire value (0 for unknown bytes, which
/// never become an [`Opcode`]), from their `*_by_kind` definitions.
const KIND: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < Opcode::ALL.len() {
        let op = Opcode::ALL[i];
        let bits = [
            (op.has_payload_by_kind(), KIND_PAYLOAD),
            (op.is_request_by_kind(), KIND_REQUEST),
            (op.is_first_by_kind(), KIND_FIRST),
            (op.is_middle_by_kind(), KIND_MIDDLE),
            (op.is_last_by_kind(), KIND_LAST),
        ];
        let mut b = 0;
        while b < bits.len() {
            if bits[b].0 {
                t[op as usize] |= bits[b].1;
            }
            b += 1;
        }
        i += 1;
    }
    t
};

/// The opcode of each wire byte (`None`: unknown), from [`Opcode::ALL`].
const FROM_U8: [Option<Opcode>; 256] = {
    let mut t = [None; 256];
    let mut i = 0;
    while i < Opcode::ALL.len() {
        t[Opcode::ALL[i] as usize] = Some(Opcode::ALL[i]);
        i += 1;
    }
    t
};

impl From<Opcode> for u8 {
    fn from(op: Opcode) -> u8 {
        op as u8
    }
}

impl TryFrom<u8> for Opcode {
    type Error = WireError;
    fn try_from(v: u8) -> Result<Opcode> {
        Opcode::from_u8(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_table_answers_as_the_definitions() {
        for op in Opcode::ALL {
            assert_eq!(op.has_payload(), op.has_payload_by_kind(), "{op:?}");
            assert_eq!(op.is_request(), op.is_request_by_kind(), "{op:?}");
            assert_eq!(op.is_first(), op.is_first_by_kind(), "{op:?}");
            assert_eq!(op.is_middle(), op.is_middle_by_kind(), "{op:?}");
            assert_eq!(op.is_last(), op.is_last_by_kind(), "{op:?}");
        }
    }

    #[test]
    fn every_byte_maps_back_or_is_unknown() {
        let mut known = 0;
        for v in 0..=255u8 {
            match Opcode::from_u8(v) {
                Ok(op) => {
                    assert_eq!(op.as_u8(), v);
                    known += 1;
                }
                Err(e) => assert_eq!(e, WireError::UnknownOpcode(v)),
            }
        }
        assert_eq!(known, Opcode::ALL.len());
        assert!(Opcode::ALL.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(Opcode::from_u8(0x15), Err(WireError::UnknownOpcode(0x15)));
        assert_eq!(Opcode::from_u8(0xC0), Ok(OooWriteFspot));
        assert_eq!(Opcode::from_u8(0xC7), Ok(OooReadResponse));
        assert_eq!(Opcode::from_u8(0xC8), Err(WireError::UnknownOpcode(0xC8)));
    }

    #[test]
    fn extension_header_lengths() {
        assert_eq!(RcSendMiddle.ext_headers_len(), 0);
        assert_eq!(RcWriteFirst.ext_headers_len(), 16);
        assert_eq!(RcWriteOnlyImm.ext_headers_len(), 20);
        assert_eq!(RcReadRequest.ext_headers_len(), 16);
        assert_eq!(RcReadResponseMiddle.ext_headers_len(), 0);
        assert_eq!(RcReadResponseOnly.ext_headers_len(), 4);
        assert_eq!(RcAtomicAck.ext_headers_len(), 12);
        assert_eq!(RcCompareSwap.ext_headers_len(), 28);
        assert_eq!(RcSendOnlyInv.ext_headers_len(), 4);
        assert_eq!(UdSendOnlyImm.ext_headers_len(), 12);
        assert_eq!(Cnp.ext_headers_len(), 16);
        assert_eq!(OooWriteFspot.ext_headers_len(), 16);
        assert_eq!(OooWriteLastFspot.ext_headers_len(), 16);
        assert_eq!(OooWriteSpot.ext_headers_len(), 0);
        assert_eq!(OooWriteLast.ext_headers_len(), 0);
        assert_eq!(OooAck.ext_headers_len(), 16);
        assert_eq!(OooNak.ext_headers_len(), 16);
        assert_eq!(OooReadRequest.ext_headers_len(), 16);
        assert_eq!(OooReadResponse.ext_headers_len(), 0);
        assert!(OooReadRequest.is_request() && !OooReadRequest.has_payload());
        assert!(!OooReadResponse.is_request() && OooReadResponse.has_payload());
    }

    #[test]
    fn message_position_is_exactly_one_of_four() {
        for op in Opcode::ALL {
            let listed: usize = op
                .ext_headers()
                .iter()
                .filter(|(has, _, _)| *has)
                .map(|(_, _, len)| len)
                .sum();
            assert_eq!(op.ext_headers_len(), listed, "{op:?}");
            let n = [op.is_first(), op.is_middle(), op.is_last(), op.is_only()]
                .iter()
                .filter(|b| **b)
                .count();
            assert_eq!(n, usize::from(op != Cnp), "{op:?}");
        }
        assert!(RcReadRequest.is_only() && RcReadRequest.is_request());
        assert!(!RcReadResponseLast.is_request() && RcReadResponseLast.is_last());
    }

    #[test]
    fn uc_mirrors_rc() {
        for op in Opcode::ALL
            .iter()
            .filter(|o| (0x20..0x40).contains(&o.as_u8()))
        {
            let rc = Opcode::from_u8(op.as_u8() - 0x20).unwrap();
            assert_eq!(op.ext_headers_len(), rc.ext_headers_len());
            assert_eq!(op.has_payload(), rc.has_payload());
            assert_eq!(op.is_last(), rc.is_last());
        }
    }
}
