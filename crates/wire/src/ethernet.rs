//! Ethernet II header (no VLAN tag, no FCS: frames are stored and captured without it).

use crate::error::{check_len, Result};
use crate::view::packet_view;

/// Ethertype of IPv4, the only network layer RoCEv2 frames here use.
pub const ETHERTYPE_IPV4: u16 = 0x0800;

pub(crate) mod field {
    use core::ops::Range;
    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
}

/// Length of the Ethernet II header in bytes.
pub const HEADER_LEN: usize = field::ETHERTYPE.end;
/// The frame check sequence a MAC appends on the wire, bytes (not in captures).
pub const FCS_LEN: usize = 4;
/// The shortest frame a MAC sends, without its FCS, bytes: IEEE 802.3's 64-byte minimum
/// less the FCS; a MAC pads shorter frames to it.
pub const MIN_FRAME_LEN: usize = 64 - FCS_LEN;

packet_view! {
    /// Zero-copy view of an Ethernet II frame: the header and the bytes after it.
    "ethernet"
}

impl<T: AsRef<[u8]>> Packet<T> {
    #[inline]
    pub fn dst(&self) -> [u8; 6] {
        mac(&self.b()[field::DST])
    }

    #[inline]
    pub fn src(&self) -> [u8; 6] {
        mac(&self.b()[field::SRC])
    }

    #[inline]
    pub fn ethertype(&self) -> u16 {
        self.get(field::ETHERTYPE) as u16
    }

    /// The bytes after the header.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.b()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    #[inline]
    pub fn set_dst(&mut self, mac: [u8; 6]) {
        self.b_mut()[field::DST].copy_from_slice(&mac);
    }

    #[inline]
    pub fn set_src(&mut self, mac: [u8; 6]) {
        self.b_mut()[field::SRC].copy_from_slice(&mac);
    }

    #[inline]
    pub fn set_ethertype(&mut self, ethertype: u16) {
        self.set(field::ETHERTYPE, ethertype.into());
    }
}

#[inline]
fn mac(bytes: &[u8]) -> [u8; 6] {
    let mut out = [0u8; 6];
    out.copy_from_slice(bytes);
    out
}

/// High-level Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EthernetRepr {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    pub ethertype: u16,
}

impl EthernetRepr {
    /// Reads the header; any ethertype is accepted here (the frame parser insists on IPv4).
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<EthernetRepr> {
        check_len("ethernet", HEADER_LEN, packet.b().len())?;
        Ok(EthernetRepr {
            dst: packet.dst(),
            src: packet.src(),
            ethertype: packet.ethertype(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_dst(self.dst);
        packet.set_src(self.src);
        packet.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WireError;

    // Ethernet header of a CNP captured from a ConnectX-4 Lx.
    const BYTES: [u8; 14] = [
        0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, 0x00,
    ];
    const REPR: EthernetRepr = EthernetRepr {
        dst: [0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2],
        src: [0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32],
        ethertype: ETHERTYPE_IPV4,
    };

    #[test]
    fn parse_real_bytes() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(EthernetRepr::parse(&p).unwrap(), REPR);
    }

    #[test]
    fn emit_real_bytes() {
        let mut buf = [0u8; 14];
        REPR.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
        assert_eq!(REPR.buffer_len(), 14);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Packet::new_checked(&BYTES[..13]).unwrap_err(),
            WireError::Truncated {
                layer: "ethernet",
                need: 14,
                have: 13
            }
        );
    }
}
