//! Datagram Extended Transport Header (8 bytes): Q_Key and source QP of a UD SEND.

use crate::error::{check_len, Result};
use crate::view::packet_view;

mod field {
    use core::ops::Range;
    pub const QKEY: Range<usize> = 0..4;
    /// Byte 4 is reserved.
    pub const SRC_QP: Range<usize> = 5..8;
}

/// Length of the DETH in bytes.
pub const HEADER_LEN: usize = field::SRC_QP.end;

packet_view! {
    /// Zero-copy view of a DETH.
    "deth"
}

impl<T: AsRef<[u8]>> Packet<T> {
    #[inline]
    pub fn qkey(&self) -> u32 {
        self.get(field::QKEY) as u32
    }

    /// 24-bit source QP number.
    #[inline]
    pub fn src_qp(&self) -> u32 {
        self.get(field::SRC_QP) as u32
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    #[inline]
    pub fn set_qkey(&mut self, v: u32) {
        self.set(field::QKEY, v.into());
    }

    /// Sets the 24-bit source QP (higher bits dropped) and clears the reserved byte.
    #[inline]
    pub fn set_src_qp(&mut self, v: u32) {
        self.set(4..8, u64::from(v & 0x00FF_FFFF));
    }
}

/// High-level DETH; the reserved byte is ignored on parse and zero on emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DethRepr {
    pub qkey: u32,
    pub src_qp: u32,
}

impl DethRepr {
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<DethRepr> {
        check_len("deth", HEADER_LEN, packet.b().len())?;
        Ok(DethRepr {
            qkey: packet.qkey(),
            src_qp: packet.src_qp(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_qkey(self.qkey);
        packet.set_src_qp(self.src_qp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WireError;

    // Q_Key 0x11111111 (the perftest UD default), source QP 0x000123.
    const BYTES: [u8; 8] = [0x11, 0x11, 0x11, 0x11, 0x00, 0x00, 0x01, 0x23];
    const REPR: DethRepr = DethRepr {
        qkey: 0x1111_1111,
        src_qp: 0x123,
    };

    #[test]
    fn parse_emit_real_bytes() {
        assert_eq!(
            DethRepr::parse(&Packet::new_checked(&BYTES[..]).unwrap()),
            Ok(REPR)
        );
        let mut buf = [0xFFu8; 8];
        REPR.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Packet::new_checked(&BYTES[..7]).unwrap_err(),
            WireError::Truncated {
                layer: "deth",
                need: 8,
                have: 7
            }
        );
    }
}
