//! Atomic Extended Transport Header (28 bytes): target and operands of CMP&SWAP / FETCH&ADD.

use crate::error::{check_len, Result};
use crate::view::packet_view;

mod field {
    use core::ops::Range;
    pub const VA: Range<usize> = 0..8;
    pub const RKEY: Range<usize> = 8..12;
    pub const SWAP_ADD: Range<usize> = 12..20;
    pub const COMPARE: Range<usize> = 20..28;
}

/// Length of the AtomicETH in bytes.
pub const HEADER_LEN: usize = field::COMPARE.end;

packet_view! {
    /// Zero-copy view of an AtomicETH.
    "atomic_eth"
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Remote virtual address of the 8-byte target (8-byte aligned by the requester).
    #[inline]
    pub fn va(&self) -> u64 {
        self.get(field::VA)
    }

    #[inline]
    pub fn rkey(&self) -> u32 {
        self.get(field::RKEY) as u32
    }

    /// Swap value (CMP&SWAP) or addend (FETCH&ADD).
    #[inline]
    pub fn swap_add(&self) -> u64 {
        self.get(field::SWAP_ADD)
    }

    /// Compare value (CMP&SWAP only; zero for FETCH&ADD).
    #[inline]
    pub fn compare(&self) -> u64 {
        self.get(field::COMPARE)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    #[inline]
    pub fn set_va(&mut self, v: u64) {
        self.set(field::VA, v);
    }

    #[inline]
    pub fn set_rkey(&mut self, v: u32) {
        self.set(field::RKEY, v.into());
    }

    #[inline]
    pub fn set_swap_add(&mut self, v: u64) {
        self.set(field::SWAP_ADD, v);
    }

    #[inline]
    pub fn set_compare(&mut self, v: u64) {
        self.set(field::COMPARE, v);
    }
}

/// High-level AtomicETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AtomicEthRepr {
    pub va: u64,
    pub rkey: u32,
    pub swap_add: u64,
    pub compare: u64,
}

impl AtomicEthRepr {
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<AtomicEthRepr> {
        check_len("atomic_eth", HEADER_LEN, packet.b().len())?;
        Ok(AtomicEthRepr {
            va: packet.va(),
            rkey: packet.rkey(),
            swap_add: packet.swap_add(),
            compare: packet.compare(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_va(self.va);
        packet.set_rkey(self.rkey);
        packet.set_swap_add(self.swap_add);
        packet.set_compare(self.compare);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WireError;

    const BYTES: [u8; 28] = [
        0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x08, // va
        0x00, 0x00, 0x12, 0x34, // rkey
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, // swap
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // compare
    ];
    const REPR: AtomicEthRepr = AtomicEthRepr {
        va: 0x1000_0008,
        rkey: 0x1234,
        swap_add: 2,
        compare: 1,
    };

    #[test]
    fn parse_emit_real_bytes() {
        assert_eq!(
            AtomicEthRepr::parse(&Packet::new_checked(&BYTES[..]).unwrap()),
            Ok(REPR)
        );
        let mut buf = [0u8; 28];
        REPR.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Packet::new_checked(&BYTES[..27]).unwrap_err(),
            WireError::Truncated {
                layer: "atomic_eth",
                need: 28,
                have: 27
            }
        );
    }
}
