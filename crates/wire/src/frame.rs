//! Whole RoCEv2 frames: Ethernet II + IPv4 + UDP + BTH + extension headers + payload + pad +
//! ICRC. The transport part of them is [`RoceRepr`].

use crate::bth;
use crate::error::{check_len, Result, WireError};
use crate::ethernet::{self, EthernetRepr, ETHERTYPE_IPV4};
use crate::icrc::{self, ICRC_LEN};
use crate::ipv4::{self, Ipv4Repr};
use crate::udp::{self, UdpRepr, ROCE_PORT};

pub use crate::peek::peek_bth;
pub use crate::roce::{pad_len, RoceRepr};

/// Offset of the IPv4 header in a frame.
pub const IPV4_OFFSET: usize = ethernet::HEADER_LEN;
/// Offset of the UDP header in a frame.
pub const UDP_OFFSET: usize = IPV4_OFFSET + ipv4::HEADER_LEN;
/// Offset of the BTH in a frame.
pub const BTH_OFFSET: usize = UDP_OFFSET + udp::HEADER_LEN;

/// Addressing of one RoCEv2 frame (Ethernet + IPv4 + UDP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FrameAddr {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    /// Entropy for ECMP; see [`crate::udp_entropy_port`]. The destination port is always 4791.
    pub udp_src_port: u16,
    /// The IPv4 TOS byte: DSCP in the top 6 bits, ECN in the low 2.
    pub dscp_ecn: u8,
    pub ttl: u8,
}

impl FrameAddr {
    /// The addresses of a frame answering one sent with these (an ACK, a CNP): source and
    /// destination MAC and IP swapped, the UDP source port, TOS byte and TTL kept.
    pub fn reversed(self) -> FrameAddr {
        FrameAddr {
            src_mac: self.dst_mac,
            dst_mac: self.src_mac,
            src_ip: self.dst_ip,
            dst_ip: self.src_ip,
            ..self
        }
    }
}

/// One whole RoCEv2 frame (without FCS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRepr<'a> {
    pub addr: FrameAddr,
    /// IPv4 identification field.
    pub ip_ident: u16,
    pub roce: RoceRepr<'a>,
}

impl<'a> FrameRepr<'a> {
    /// Frame length without FCS: 14 + 20 + 8 + 12 + ext + payload + pad + 4 (ICRC).
    pub fn buffer_len(&self) -> usize {
        BTH_OFFSET + self.roce.buffer_len() + ICRC_LEN
    }

    /// Writes the whole frame (pad count from payload length, IPv4 checksum, ICRC) into `buf`,
    /// which is cleared and resized; emits exactly `buffer_len()` bytes. Frames whose IP total
    /// length would exceed 65535 bytes are not representable (RoCE MTUs are ≤ 4096).
    pub fn emit(&self, buf: &mut Vec<u8>) {
        let len = self.buffer_len();
        self.lay_out(buf, len);
        let a = &self.addr;
        let udp_payload_len = self.roce.buffer_len() + ICRC_LEN;
        let (eth, rest) = buf.split_at_mut(IPV4_OFFSET);
        let eth_repr = EthernetRepr {
            dst: a.dst_mac,
            src: a.src_mac,
            ethertype: ETHERTYPE_IPV4,
        };
        eth_repr.emit(&mut ethernet::Packet::new_unchecked(eth));
        let (ip, rest) = rest.split_at_mut(ipv4::HEADER_LEN);
        Ipv4Repr {
            src: a.src_ip,
            dst: a.dst_ip,
            dscp_ecn: a.dscp_ecn,
            ident: self.ip_ident,
            ttl: a.ttl,
            payload_len: udp::HEADER_LEN + udp_payload_len,
        }
        .emit(&mut ipv4::Packet::new_unchecked(ip));
        let (udp_hdr, rest) = rest.split_at_mut(udp::HEADER_LEN);
        UdpRepr {
            src_port: a.udp_src_port,
            dst_port: ROCE_PORT,
            payload_len: udp_payload_len,
        }
        .emit(&mut udp::Packet::new_unchecked(udp_hdr));
        self.roce.emit_headers(&mut rest[..self.roce.headers_len()]);
        let icrc_off = len - ICRC_LEN;
        let crc = icrc::crc_in_place(buf, icrc_off);
        buf[icrc_off..].copy_from_slice(&crc.to_le_bytes());
    }

    /// Makes `buf` the frame's `len` (its `buffer_len()`) bytes with the payload in place and
    /// every other byte zero (the headers are written over them, the pad stays zero).
    ///
    /// Why not zero the whole frame and copy the payload over it: at a 4 KiB MTU that zeroed
    /// 4 KiB per data packet only to overwrite them (8 % of a fabric run's instructions as
    /// counted, docs/speed.md's payload round).
    fn lay_out(&self, buf: &mut Vec<u8>, len: usize) {
        buf.clear();
        buf.resize(BTH_OFFSET + self.roce.headers_len(), 0);
        buf.extend_from_slice(self.roce.payload);
        buf.resize(len, 0);
    }

    /// Parses and checks a frame: every header, lengths from IP total length (Ethernet padding
    /// after it is ignored), opcode-specific headers present, ICRC verified (last, so header
    /// errors are reported by name).
    #[inline]
    pub fn parse(frame: &'a [u8]) -> Result<FrameRepr<'a>> {
        Self::parse_on_port(frame, ROCE_PORT)
    }

    /// [`FrameRepr::parse`] for RoCEv2 carried to UDP destination port `dst_port` instead of
    /// 4791: deployments that moved RoCE to another port, or captures whose tool labelled the
    /// port wrongly, are still whole RoCEv2 frames. Every check is the same; a frame to any
    /// other port is [`WireError::NotRoce`]. The ICRC covers the UDP ports, so a frame that
    /// verifies here was built for `dst_port`.
    #[inline]
    pub fn parse_on_port(frame: &'a [u8], dst_port: u16) -> Result<FrameRepr<'a>> {
        let roce = RoceRepr::parse(transport(frame, true, dst_port)?)?;
        icrc::verify(frame)?;
        // Checked by `transport`: the frame holds all three headers.
        let eth = ethernet::Packet::new_unchecked(frame);
        let ip = ipv4::Packet::new_unchecked(&frame[IPV4_OFFSET..]);
        let udp = udp::Packet::new_unchecked(&frame[UDP_OFFSET..]);
        let addr = FrameAddr {
            src_mac: eth.src(),
            dst_mac: eth.dst(),
            src_ip: ip.src(),
            dst_ip: ip.dst(),
            udp_src_port: udp.src_port(),
            dscp_ecn: ip.dscp_ecn(),
            ttl: ip.ttl(),
        };
        Ok(FrameRepr {
            addr,
            ip_ident: ip.ident(),
            roce,
        })
    }
}

/// The transport part of a frame, BTH up to (not including) the ICRC, after every check
/// [`FrameRepr::parse`] makes of the layers below it: IPv4 ethertype; IPv4 version, IHL, total
/// length within the frame, fragment bits, protocol UDP and, if `verify_ip_checksum`, the
/// header checksum; UDP length equal to the IP payload and destination port `roce_port` (4791
/// but for [`FrameRepr::parse_on_port`]); room for a BTH and the ICRC. Shared by
/// [`FrameRepr::parse`] and [`crate::peek_roce`] so both accept the same frames.
#[inline]
pub(crate) fn transport(frame: &[u8], verify_ip_checksum: bool, roce_port: u16) -> Result<&[u8]> {
    let ethertype = ethernet::Packet::new_checked(frame)?.ethertype();
    if ethertype != ETHERTYPE_IPV4 {
        return Err(WireError::NotIpv4 { ethertype });
    }
    let ip_bytes = frame.get(IPV4_OFFSET..).unwrap_or(&[]);
    let ip_payload_len =
        ipv4::checked_payload_len(&ipv4::Packet::new_checked(ip_bytes)?, verify_ip_checksum)?;
    let udp_bytes = ip_bytes
        .get(ipv4::HEADER_LEN..ipv4::HEADER_LEN + ip_payload_len)
        .unwrap_or(&[]);
    let udp = udp::Packet::new_checked(udp_bytes)?;
    let udp_len = udp::HEADER_LEN + udp::checked_payload_len(&udp)?;
    if udp_len != udp_bytes.len() {
        return Err(WireError::LengthMismatch {
            layer: "udp",
            field: "length",
            stated: udp_len,
            actual: udp_bytes.len(),
        });
    }
    if udp.dst_port() != roce_port {
        return Err(WireError::NotRoce {
            dst_port: udp.dst_port(),
        });
    }
    let transport = udp_bytes.get(udp::HEADER_LEN..).unwrap_or(&[]);
    check_len("icrc", bth::HEADER_LEN + ICRC_LEN, transport.len())?;
    Ok(transport.get(..transport.len() - ICRC_LEN).unwrap_or(&[]))
}
