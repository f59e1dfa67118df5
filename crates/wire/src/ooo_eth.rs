//! Out-of-order ACK Extended Transport Header (12 bytes), rnic's encoding of the ACK and NAK
//! of "ORNIC: A High-Performance RDMA NIC with Out-of-Order Packet Direct Write Method for
//! Multipath Transmission" (Electronics 2025), which does not give their byte layout.
//!
//! It follows the AETH of an [`crate::Opcode::OooAck`] or [`crate::Opcode::OooNak`]:
//!
//! | bytes | field |
//! |---|---|
//! | 0 | flags: bit 7 = the responder learnt the WQE's start address, so the requester stops carrying the write address (FSpot → Spot); bits 6–0 reserved, sent as 0 |
//! | 1–3 | reserved, sent as 0 |
//! | 4–11 | bitmap: for a NAK, bit `i` set means PSN `BTH.PSN + i` is missing (one bitmap block of up to 64 bits); 0 in an ACK |
//!
//! Reserved bits are ignored on receipt (IBA's rule for reserved fields), so a later flag
//! does not make an older receiver drop the packet.

use crate::error::{check_len, Result};
use crate::view::packet_view;

mod field {
    use core::ops::Range;
    pub const FLAGS: Range<usize> = 0..1;
    pub const RESERVED: Range<usize> = 1..4;
    pub const BITMAP: Range<usize> = 4..12;
}

/// Length of the OOO ACK ETH in bytes.
pub const HEADER_LEN: usize = field::BITMAP.end;

/// Flags bit: the responder knows the WQE's start address.
pub const FLAG_START_LEARNT: u8 = 0x80;

packet_view! {
    /// Zero-copy view of an OOO ACK ETH.
    "ooo_ack_eth"
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// The raw flags byte.
    #[inline]
    pub fn flags(&self) -> u8 {
        self.get(field::FLAGS) as u8
    }

    /// The responder learnt the start address: stop carrying it.
    #[inline]
    pub fn start_learnt(&self) -> bool {
        self.flags() & FLAG_START_LEARNT != 0
    }

    /// Missing PSNs relative to the BTH PSN (NAK), 0 in an ACK.
    #[inline]
    pub fn bitmap(&self) -> u64 {
        self.get(field::BITMAP)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    #[inline]
    pub fn set_flags(&mut self, v: u8) {
        self.set(field::FLAGS, v.into());
    }

    #[inline]
    pub fn clear_reserved(&mut self) {
        self.set(field::RESERVED, 0);
    }

    #[inline]
    pub fn set_bitmap(&mut self, v: u64) {
        self.set(field::BITMAP, v);
    }
}

/// High-level OOO ACK ETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OooAckEthRepr {
    /// The responder learnt the WQE's start address (the "stop carrying the address" flag).
    pub start_learnt: bool,
    /// NAK: bit `i` set = PSN `BTH.PSN + i` missing.
    pub bitmap: u64,
}

impl OooAckEthRepr {
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<OooAckEthRepr> {
        check_len("ooo_ack_eth", HEADER_LEN, packet.b().len())?;
        Ok(OooAckEthRepr {
            start_learnt: packet.start_learnt(),
            bitmap: packet.bitmap(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_flags(if self.start_learnt {
            FLAG_START_LEARNT
        } else {
            0
        });
        packet.clear_reserved();
        packet.set_bitmap(self.bitmap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WireError;

    const BYTES: [u8; 12] = [
        0x80, 0, 0, 0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x05,
    ];
    const REPR: OooAckEthRepr = OooAckEthRepr {
        start_learnt: true,
        bitmap: 0x8005,
    };

    #[test]
    fn parse_emit_real_bytes() {
        assert_eq!(
            OooAckEthRepr::parse(&Packet::new_checked(&BYTES[..]).unwrap()),
            Ok(REPR)
        );
        let mut buf = [0xFFu8; 12];
        REPR.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn reserved_bits_are_ignored_on_receipt() {
        let mut b = BYTES;
        b[0] = 0x7F;
        b[2] = 0xAA;
        let r = OooAckEthRepr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert!(!r.start_learnt);
        assert_eq!(r.bitmap, 0x8005);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Packet::new_checked(&BYTES[..11]).unwrap_err(),
            WireError::Truncated {
                layer: "ooo_ack_eth",
                need: 12,
                have: 11
            }
        );
    }
}
