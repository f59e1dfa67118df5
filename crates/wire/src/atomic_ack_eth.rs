//! Atomic ACK Extended Transport Header (8 bytes): the value the target held before the atomic.

use crate::error::{check_len, Result};
use crate::view::packet_view;

mod field {
    use core::ops::Range;
    pub const ORIG: Range<usize> = 0..8;
}

/// Length of the AtomicAckETH in bytes.
pub const HEADER_LEN: usize = field::ORIG.end;

packet_view! {
    /// Zero-copy view of an AtomicAckETH.
    "atomic_ack_eth"
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Original remote data, returned to the requester.
    #[inline]
    pub fn orig(&self) -> u64 {
        self.get(field::ORIG)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    #[inline]
    pub fn set_orig(&mut self, v: u64) {
        self.set(field::ORIG, v);
    }
}

/// High-level AtomicAckETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AtomicAckEthRepr {
    pub orig: u64,
}

impl AtomicAckEthRepr {
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<AtomicAckEthRepr> {
        check_len("atomic_ack_eth", HEADER_LEN, packet.b().len())?;
        Ok(AtomicAckEthRepr {
            orig: packet.orig(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_orig(self.orig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WireError;

    const BYTES: [u8; 8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];
    const REPR: AtomicAckEthRepr = AtomicAckEthRepr {
        orig: 0x0123_4567_89ab_cdef,
    };

    #[test]
    fn parse_emit_real_bytes() {
        assert_eq!(
            AtomicAckEthRepr::parse(&Packet::new_checked(&BYTES[..]).unwrap()),
            Ok(REPR)
        );
        let mut buf = [0u8; 8];
        REPR.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Packet::new_checked(&BYTES[..7]).unwrap_err(),
            WireError::Truncated {
                layer: "atomic_ack_eth",
                need: 8,
                have: 7
            }
        );
    }
}
