//! Invalidate Extended Transport Header (4 bytes): the R_Key a SEND with invalidate revokes.

use crate::error::{check_len, Result};
use crate::view::packet_view;

mod field {
    use core::ops::Range;
    pub const RKEY: Range<usize> = 0..4;
}

/// Length of the header in bytes.
pub const HEADER_LEN: usize = field::RKEY.end;

packet_view! {
    /// Zero-copy view of an IETH.
    "ieth"
}

impl<T: AsRef<[u8]>> Packet<T> {
    #[inline]
    pub fn rkey(&self) -> u32 {
        self.get(field::RKEY) as u32
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    #[inline]
    pub fn set_rkey(&mut self, v: u32) {
        self.set(field::RKEY, v.into());
    }
}

/// High-level IETH header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct IethRepr {
    pub rkey: u32,
}

impl IethRepr {
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<IethRepr> {
        check_len("ieth", HEADER_LEN, packet.b().len())?;
        Ok(IethRepr {
            rkey: packet.rkey(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_rkey(self.rkey);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WireError;

    const BYTES: [u8; 4] = [0x00, 0x00, 0x4a, 0x21];
    const REPR: IethRepr = IethRepr { rkey: 0x0000_4a21 };

    #[test]
    fn parse_emit_real_bytes() {
        assert_eq!(
            IethRepr::parse(&Packet::new_checked(&BYTES[..]).unwrap()),
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
                layer: "ieth",
                need: 4,
                have: 3
            }
        );
    }
}
