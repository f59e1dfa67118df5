//! IPv4 header, restricted to what RoCEv2 frames use: no options, no fragments, UDP inside.

use crate::error::{check_len, Result, WireError};
use crate::view::packet_view;

/// IP protocol number of UDP.
pub const PROTOCOL_UDP: u8 = 17;

mod field {
    use core::ops::Range;
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const TOTAL_LEN: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLAGS_FRAG: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC: Range<usize> = 12..16;
    pub const DST: Range<usize> = 16..20;
}

/// Length of the option-less IPv4 header in bytes.
pub const HEADER_LEN: usize = field::DST.end;

/// Don't-fragment flag in the flags/fragment-offset word: RoCE must never be fragmented.
const FLAG_DF: u16 = 0x4000;
/// More-fragments flag plus fragment offset: any of these set means a fragment.
const FRAGMENT_MASK: u16 = 0x3FFF;

packet_view! {
    /// Zero-copy view of an IPv4 header and what follows it. `new_checked` checks only the
    /// 20-byte header; version, IHL and total length are checked by [`Ipv4Repr::parse`].
    "ipv4"
}

impl<T: AsRef<[u8]>> Packet<T> {
    #[inline]
    pub fn version(&self) -> u8 {
        self.b()[field::VER_IHL] >> 4
    }

    /// Header length in 32-bit words.
    #[inline]
    pub fn ihl_words(&self) -> u8 {
        self.b()[field::VER_IHL] & 0x0F
    }

    #[inline]
    pub fn dscp_ecn(&self) -> u8 {
        self.b()[field::DSCP_ECN]
    }

    /// Header plus payload, in bytes.
    #[inline]
    pub fn total_len(&self) -> u16 {
        self.get(field::TOTAL_LEN) as u16
    }

    #[inline]
    pub fn ident(&self) -> u16 {
        self.get(field::IDENT) as u16
    }

    /// Flags (top 3 bits) and fragment offset (low 13 bits, 8-byte units).
    #[inline]
    pub fn flags_frag(&self) -> u16 {
        self.get(field::FLAGS_FRAG) as u16
    }

    #[inline]
    pub fn ttl(&self) -> u8 {
        self.b()[field::TTL]
    }

    #[inline]
    pub fn protocol(&self) -> u8 {
        self.b()[field::PROTOCOL]
    }

    #[inline]
    pub fn checksum(&self) -> u16 {
        self.get(field::CHECKSUM) as u16
    }

    #[inline]
    pub fn src(&self) -> [u8; 4] {
        addr(&self.b()[field::SRC])
    }

    #[inline]
    pub fn dst(&self) -> [u8; 4] {
        addr(&self.b()[field::DST])
    }

    /// True if the ones'-complement sum over the header, checksum included, is all ones.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum(&self.b()[..HEADER_LEN]) == 0
    }

    /// The bytes the total length covers after the header; clamped to the buffer, so Ethernet
    /// padding after the datagram is not included.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let end = usize::from(self.total_len()).min(self.b().len());
        self.b().get(HEADER_LEN..end).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets version and header length (in 32-bit words).
    #[inline]
    pub fn set_version_ihl(&mut self, version: u8, ihl_words: u8) {
        self.b_mut()[field::VER_IHL] = (version << 4) | (ihl_words & 0x0F);
    }

    #[inline]
    pub fn set_dscp_ecn(&mut self, v: u8) {
        self.b_mut()[field::DSCP_ECN] = v;
    }

    #[inline]
    pub fn set_total_len(&mut self, v: u16) {
        self.set(field::TOTAL_LEN, v.into());
    }

    #[inline]
    pub fn set_ident(&mut self, v: u16) {
        self.set(field::IDENT, v.into());
    }

    #[inline]
    pub fn set_flags_frag(&mut self, v: u16) {
        self.set(field::FLAGS_FRAG, v.into());
    }

    #[inline]
    pub fn set_ttl(&mut self, v: u8) {
        self.b_mut()[field::TTL] = v;
    }

    #[inline]
    pub fn set_protocol(&mut self, v: u8) {
        self.b_mut()[field::PROTOCOL] = v;
    }

    #[inline]
    pub fn set_checksum(&mut self, v: u16) {
        self.set(field::CHECKSUM, v.into());
    }

    #[inline]
    pub fn set_src(&mut self, a: [u8; 4]) {
        self.b_mut()[field::SRC].copy_from_slice(&a);
    }

    #[inline]
    pub fn set_dst(&mut self, a: [u8; 4]) {
        self.b_mut()[field::DST].copy_from_slice(&a);
    }

    /// Computes the header checksum over the other header fields and stores it.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let sum = checksum(&self.b()[..HEADER_LEN]);
        self.set_checksum(sum);
    }
}

#[inline]
fn addr(bytes: &[u8]) -> [u8; 4] {
    let mut out = [0u8; 4];
    out.copy_from_slice(bytes);
    out
}

/// RFC 1071 Internet checksum: the complement of the ones'-complement sum of 16-bit words.
///
/// Whole words first, then an odd last byte as the high half of a word: with the header's
/// constant length the word loop unrolls into ten loads (it ran once per emitted and once
/// per received frame, byte by byte).
fn checksum(bytes: &[u8]) -> u16 {
    let words = bytes.chunks_exact(2);
    let odd = words.remainder().first().map_or(0, |&b| u32::from(b) << 8);
    let mut sum: u32 = words
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>()
        + odd;
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// The checks of [`Ipv4Repr::parse`] (the header checksum only if `verify_checksum`), returning
/// the payload length in bytes; shared with the frame peek, which skips the checksum.
#[inline]
pub(crate) fn checked_payload_len<T: AsRef<[u8]> + ?Sized>(
    packet: &Packet<&T>,
    verify_checksum: bool,
) -> Result<usize> {
    let have = packet.b().len();
    check_len("ipv4", HEADER_LEN, have)?;
    if packet.version() != 4 {
        return Err(WireError::BadIpVersion(packet.version()));
    }
    if packet.ihl_words() != 5 {
        return Err(WireError::BadIpHeaderLen(packet.ihl_words()));
    }
    let total = usize::from(packet.total_len());
    if total < HEADER_LEN || total > have {
        return Err(WireError::LengthMismatch {
            layer: "ipv4",
            field: "total_length",
            stated: total,
            actual: have,
        });
    }
    if verify_checksum && !packet.verify_checksum() {
        return Err(WireError::BadIpChecksum);
    }
    let frag = packet.flags_frag() & FRAGMENT_MASK;
    if frag != 0 {
        return Err(WireError::BadField {
            layer: "ipv4",
            field: "fragment",
            value: frag.into(),
        });
    }
    if packet.protocol() != PROTOCOL_UDP {
        return Err(WireError::NotUdp {
            protocol: packet.protocol(),
        });
    }
    Ok(total - HEADER_LEN)
}

/// High-level IPv4 header of a RoCEv2 frame: protocol UDP, DF set, no options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Ipv4Repr {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    /// DSCP (top 6 bits) and ECN (low 2 bits): the whole former TOS byte.
    pub dscp_ecn: u8,
    pub ident: u16,
    pub ttl: u8,
    /// Bytes after the IPv4 header (total length − 20).
    pub payload_len: usize,
}

impl Ipv4Repr {
    /// Checks version 4, IHL 5, total length within the buffer, header checksum, no
    /// fragmentation and protocol UDP.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Ipv4Repr> {
        let payload_len = checked_payload_len(packet, true)?;
        Ok(Ipv4Repr {
            src: packet.src(),
            dst: packet.dst(),
            dscp_ecn: packet.dscp_ecn(),
            ident: packet.ident(),
            ttl: packet.ttl(),
            payload_len,
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header with its checksum. `payload_len` must fit the 16-bit total length;
    /// larger values are truncated (RoCE payloads are bounded by the MTU).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_version_ihl(4, 5);
        packet.set_dscp_ecn(self.dscp_ecn);
        packet.set_total_len((HEADER_LEN + self.payload_len) as u16);
        packet.set_ident(self.ident);
        packet.set_flags_frag(FLAG_DF);
        packet.set_ttl(self.ttl);
        packet.set_protocol(PROTOCOL_UDP);
        packet.set_src(self.src);
        packet.set_dst(self.dst);
        packet.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_matches_the_bytewise_sum_at_every_length() {
        let data: Vec<u8> = (0..21u32).map(|i| (i * 37 + 200) as u8).collect();
        for n in 0..=data.len() {
            let mut sum: u32 = 0;
            for (i, &b) in data[..n].iter().enumerate() {
                sum += u32::from(b) << if i % 2 == 0 { 8 } else { 0 };
            }
            while sum > 0xFFFF {
                sum = (sum & 0xFFFF) + (sum >> 16);
            }
            assert_eq!(checksum(&data[..n]), !(sum as u16), "{n} bytes");
        }
    }

    // IPv4 header of a CNP captured from a ConnectX-4 Lx, plus the
    // 40 bytes it covers (zeros here: only the header matters).
    fn bytes() -> Vec<u8> {
        let mut b = vec![
            0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00,
            0x11, 0x01, 0x0a, 0x00, 0x12, 0x01,
        ];
        b.resize(60, 0);
        b
    }

    const REPR: Ipv4Repr = Ipv4Repr {
        src: [10, 0, 17, 1],
        dst: [10, 0, 18, 1],
        dscp_ecn: 0xc2,
        ident: 0x718c,
        ttl: 64,
        payload_len: 40,
    };

    fn parse(b: &[u8]) -> Result<Ipv4Repr> {
        Ipv4Repr::parse(&Packet::new_checked(b)?)
    }

    #[test]
    fn parse_real_bytes() {
        assert_eq!(parse(&bytes()).unwrap(), REPR);
        assert_eq!(Packet::new_unchecked(&bytes()[..]).payload().len(), 40);
    }

    #[test]
    fn emit_real_bytes() {
        let mut buf = vec![0u8; 60];
        REPR.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, bytes());
    }

    #[test]
    fn ethernet_padding_after_datagram_is_ignored() {
        let mut b = bytes();
        b.extend_from_slice(&[0xAA; 6]);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p).unwrap(), REPR);
        assert_eq!(p.payload().len(), 40);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            parse(&bytes()[..19]),
            Err(WireError::Truncated {
                layer: "ipv4",
                need: 20,
                have: 19
            })
        );
        assert_eq!(
            parse(&bytes()[..59]),
            Err(WireError::LengthMismatch {
                layer: "ipv4",
                field: "total_length",
                stated: 60,
                actual: 59
            })
        );
    }

    /// Changes one header byte and refreshes the checksum, so only the intended check fires.
    fn with(offset: usize, value: u8) -> Vec<u8> {
        let mut b = bytes();
        b[offset] = value;
        Packet::new_unchecked(&mut b[..]).fill_checksum();
        b
    }

    #[test]
    fn bad_fields() {
        assert_eq!(parse(&with(0, 0x65)), Err(WireError::BadIpVersion(6)));
        assert_eq!(parse(&with(0, 0x46)), Err(WireError::BadIpHeaderLen(6)));
        assert_eq!(parse(&with(9, 6)), Err(WireError::NotUdp { protocol: 6 }));
        assert!(matches!(
            parse(&with(6, 0x20)),
            Err(WireError::BadField {
                field: "fragment",
                ..
            })
        ));
        assert!(matches!(
            parse(&with(3, 19)),
            Err(WireError::LengthMismatch { stated: 19, .. })
        ));
        let mut b = bytes();
        b[8] = 63; // TTL changed without fixing the checksum
        assert_eq!(parse(&b), Err(WireError::BadIpChecksum));
    }
}
