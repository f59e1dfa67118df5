//! RDMA Extended Transport Header (16 bytes): the remote buffer of a WRITE or READ.

use crate::error::{check_len, Result};
use crate::view::packet_view;

mod field {
    use core::ops::Range;
    pub const VA: Range<usize> = 0..8;
    pub const RKEY: Range<usize> = 8..12;
    pub const DMA_LEN: Range<usize> = 12..16;
}

/// Length of the RETH in bytes.
pub const HEADER_LEN: usize = field::DMA_LEN.end;

packet_view! {
    /// Zero-copy view of a RETH.
    "reth"
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Remote virtual address of the first byte.
    #[inline]
    pub fn va(&self) -> u64 {
        self.get(field::VA)
    }

    #[inline]
    pub fn rkey(&self) -> u32 {
        self.get(field::RKEY) as u32
    }

    /// Length of the whole message (not of this packet), in bytes.
    #[inline]
    pub fn dma_len(&self) -> u32 {
        self.get(field::DMA_LEN) as u32
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
    pub fn set_dma_len(&mut self, v: u32) {
        self.set(field::DMA_LEN, v.into());
    }
}

/// High-level RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RethRepr {
    pub va: u64,
    pub rkey: u32,
    /// Length of the whole message in bytes.
    pub dma_len: u32,
}

impl RethRepr {
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<RethRepr> {
        check_len("reth", HEADER_LEN, packet.b().len())?;
        Ok(RethRepr {
            va: packet.va(),
            rkey: packet.rkey(),
            dma_len: packet.dma_len(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_va(self.va);
        packet.set_rkey(self.rkey);
        packet.set_dma_len(self.dma_len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WireError;

    const BYTES: [u8; 16] = [
        0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x70, 0x00, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x00,
        0x00,
    ];
    const REPR: RethRepr = RethRepr {
        va: 0x7f12_3456_7000,
        rkey: 0xdead_beef,
        dma_len: 65536,
    };

    #[test]
    fn parse_emit_real_bytes() {
        assert_eq!(
            RethRepr::parse(&Packet::new_checked(&BYTES[..]).unwrap()),
            Ok(REPR)
        );
        let mut buf = [0u8; 16];
        REPR.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Packet::new_checked(&BYTES[..15]).unwrap_err(),
            WireError::Truncated {
                layer: "reth",
                need: 16,
                have: 15
            }
        );
        assert!(RethRepr::parse(&Packet::new_unchecked(&BYTES[..3])).is_err());
    }
}
