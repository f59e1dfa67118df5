//! Immediate Data Extended Transport Header (4 bytes): 32 bits handed to the receiver's completion.

use crate::error::{check_len, Result};
use crate::view::packet_view;

mod field {
    use core::ops::Range;
    pub const IMM: Range<usize> = 0..4;
}

/// Length of the header in bytes.
pub const HEADER_LEN: usize = field::IMM.end;

packet_view! {
    /// Zero-copy view of an ImmDt header.
    "immdt"
}

impl<T: AsRef<[u8]>> Packet<T> {
    #[inline]
    pub fn imm(&self) -> u32 {
        self.get(field::IMM) as u32
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    #[inline]
    pub fn set_imm(&mut self, v: u32) {
        self.set(field::IMM, v.into());
    }
}

/// High-level ImmDt header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ImmDtRepr {
    pub imm: u32,
}

impl ImmDtRepr {
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<ImmDtRepr> {
        check_len("immdt", HEADER_LEN, packet.b().len())?;
        Ok(ImmDtRepr { imm: packet.imm() })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_imm(self.imm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WireError;

    const BYTES: [u8; 4] = [0xca, 0xfe, 0xf0, 0x0d];
    const REPR: ImmDtRepr = ImmDtRepr { imm: 0xcafe_f00d };

    #[test]
    fn parse_emit_real_bytes() {
        assert_eq!(
            ImmDtRepr::parse(&Packet::new_checked(&BYTES[..]).unwrap()),
            Ok(REPR)
        );
        let mut buf = [0u8; 4];
        REPR.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Packet::new_checked(&BYTES[..3]).unwrap_err(),
            WireError::Truncated {
                layer: "immdt",
                need: 4,
                have: 3
            }
        );
    }
}
