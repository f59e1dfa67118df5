//! UDP header. RoCEv2 sends it with checksum 0 (the ICRC protects the transport instead).

use crate::error::{check_len, Result, WireError};
use crate::view::packet_view;

/// The IANA UDP destination port of RoCEv2.
pub const ROCE_PORT: u16 = 4791;

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

/// Length of the UDP header in bytes.
pub const HEADER_LEN: usize = field::CHECKSUM.end;

packet_view! {
    /// Zero-copy view of a UDP datagram. `new_checked` checks only the 8-byte header; the
    /// length field is checked by [`UdpRepr::parse`].
    "udp"
}

impl<T: AsRef<[u8]>> Packet<T> {
    #[inline]
    pub fn src_port(&self) -> u16 {
        self.get(field::SRC_PORT) as u16
    }

    #[inline]
    pub fn dst_port(&self) -> u16 {
        self.get(field::DST_PORT) as u16
    }

    /// Header plus payload, in bytes.
    #[inline]
    pub fn len(&self) -> u16 {
        self.get(field::LENGTH) as u16
    }

    /// Always false for a wrapped header; present because `len` is.
    #[inline]
    pub fn is_empty(&self) -> bool {
        false
    }

    #[inline]
    pub fn checksum(&self) -> u16 {
        self.get(field::CHECKSUM) as u16
    }

    /// The bytes the length field covers after the header, clamped to the buffer.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let end = usize::from(self.len()).min(self.b().len());
        self.b().get(HEADER_LEN..end).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    #[inline]
    pub fn set_src_port(&mut self, v: u16) {
        self.set(field::SRC_PORT, v.into());
    }

    #[inline]
    pub fn set_dst_port(&mut self, v: u16) {
        self.set(field::DST_PORT, v.into());
    }

    #[inline]
    pub fn set_len(&mut self, v: u16) {
        self.set(field::LENGTH, v.into());
    }

    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        self.set(field::CHECKSUM, v.into());
    }
}

/// High-level UDP header; the checksum is emitted as 0 and ignored on parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    /// Bytes after the UDP header (length field − 8).
    pub payload_len: usize,
}

impl UdpRepr {
    /// Checks that the length field covers the header and fits in the buffer. Any port is
    /// accepted here; the frame parser insists on [`ROCE_PORT`].
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<UdpRepr> {
        Ok(UdpRepr {
            payload_len: checked_payload_len(packet)?,
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header with checksum 0 (allowed for UDP over IPv4 and usual for RoCEv2).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len((HEADER_LEN + self.payload_len) as u16);
        packet.set_checksum(0);
    }
}

/// The checks of [`UdpRepr::parse`], returning the payload length in bytes; shared with the
/// frame peek.
#[inline]
pub(crate) fn checked_payload_len<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<usize> {
    let have = packet.b().len();
    check_len("udp", HEADER_LEN, have)?;
    let len = usize::from(packet.len());
    if len < HEADER_LEN || len > have {
        return Err(WireError::LengthMismatch {
            layer: "udp",
            field: "length",
            stated: len,
            actual: have,
        });
    }
    Ok(len - HEADER_LEN)
}

/// The UDP source port for a connection between local QP `lqpn` and remote QP `rqpn`: a 20-bit
/// flow label folded to 14 bits, in the range 0xC000–0xFFFF. Both directions of a connection
/// hash the same product, so ECMP keeps each connection on one path.
pub fn udp_entropy_port(lqpn: u32, rqpn: u32) -> u16 {
    let mut v = u64::from(lqpn) * u64::from(rqpn);
    v ^= v >> 20;
    v ^= v >> 40;
    let fl = v & 0xF_FFFF;
    (((fl & 0x3FFF) ^ ((fl & 0xF_C000) >> 14)) | 0xC000) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    // UDP header of a CNP captured from a ConnectX-4 Lx (source port 0).
    const BYTES: [u8; 8] = [0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00];
    const REPR: UdpRepr = UdpRepr {
        src_port: 0,
        dst_port: ROCE_PORT,
        payload_len: 32,
    };

    fn datagram() -> Vec<u8> {
        let mut b = BYTES.to_vec();
        b.resize(40, 0);
        b
    }

    #[test]
    fn parse_real_bytes() {
        let b = datagram();
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(UdpRepr::parse(&p).unwrap(), REPR);
        assert_eq!(p.payload().len(), 32);
    }

    #[test]
    fn emit_real_bytes() {
        let mut buf = [0xFFu8; 8];
        REPR.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn entropy_port_formula() {
        // Worked by hand: 0x11 * 0x12 = 0x132, no high bits, 0x132 | 0xC000.
        assert_eq!(udp_entropy_port(0x11, 0x12), 0xC132);
        assert_eq!(udp_entropy_port(0, 0x1234), 0xC000);
        assert_eq!(udp_entropy_port(7, 9), udp_entropy_port(9, 7));
        // v = 0xFFFFFE000001; v ^= v >> 20 -> 0xFFFFF1FFFFE1; v ^= v >> 40 -> ...FFFFF1E;
        // fl = 0xFFF1E: (0x3F1E ^ 0x3F) | 0xC000 = 0xFF21.
        assert_eq!(udp_entropy_port(0xFF_FFFF, 0xFF_FFFF), 0xFF21);
        for (l, r) in [(1, 1), (0x123, 0x456), (u32::MAX, u32::MAX)] {
            assert!(udp_entropy_port(l, r) >= 0xC000);
        }
    }

    #[test]
    fn truncated_and_length_mismatch() {
        assert_eq!(
            Packet::new_checked(&BYTES[..7]).unwrap_err(),
            WireError::Truncated {
                layer: "udp",
                need: 8,
                have: 7
            }
        );
        let b = datagram();
        let short = Packet::new_unchecked(&b[..39]);
        assert_eq!(
            UdpRepr::parse(&short),
            Err(WireError::LengthMismatch {
                layer: "udp",
                field: "length",
                stated: 40,
                actual: 39
            })
        );
        let mut b = datagram();
        b[5] = 7;
        assert!(matches!(
            UdpRepr::parse(&Packet::new_unchecked(&b[..])),
            Err(WireError::LengthMismatch { stated: 7, .. })
        ));
    }
}
