//! One captured Ethernet frame to what the analysis needs: is it RoCEv2, did it parse and
//! pass its ICRC, and if so its addresses and transport headers.
//!
//! Full frames go through `rnic-wire`'s [`FrameRepr::parse`] (every header, the IPv4 checksum
//! and the ICRC), so `rnic pcap check` judges real captures by the same code the simulator
//! trusts. Which frames count as RoCEv2:
//!
//! - UDP to port 4791: always, unless the datagram is empty (its UDP length and the IP
//!   length both say so); a frame that then fails is a failure, with the wire crate's reason.
//! - UDP to any other port (a deployment that moved RoCE, or a capture tool or Wireshark
//!   profile that labels the port otherwise): only when the whole frame parses as RoCEv2 on
//!   that port *and* its ICRC verifies ([`FrameRepr::parse_on_port`]). The ICRC is a CRC-32
//!   over the masked IPv4 and UDP headers (ports included), the BTH and the payload, so an
//!   unrelated datagram passes with odds of 1 in 2^32 after it has also passed the structural
//!   checks (UDP length equal to the IP payload, known opcode, TVer 0, the opcode's extension
//!   headers present, a valid pad count). A UDP frame that does not pass is not RoCEv2 and is
//!   never listed as a failure: it may be anything.
//!
//! 802.1Q / 802.1ad VLAN tags are removed first (real RoCE traffic is often tagged for PFC
//! priorities; the ICRC does not cover Ethernet). RoCEv2 over IPv6 is recognised but not
//! decoded (`rnic-wire` reads IPv4 only). A frame cut by the capture's snap length cannot have
//! its ICRC checked; its BTH (and AETH, RETH) are still read when captured, and it is counted
//! apart, neither passed nor failed.

use rnic_wire::{
    aeth, bth, reth, AethRepr, BthRepr, FrameRepr, Opcode, PfcRepr, WireError, ROCE_PORT,
};
use std::borrow::Cow;

const ETH_HEADER: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;
/// 802.1Q, 802.1ad and the older QinQ tag types.
const VLAN_TAGS: [u16; 3] = [0x8100, 0x88A8, 0x9100];
const IP_PROTO_UDP: u8 = 17;
const IPV4_HEADER: usize = 20;
const UDP_HEADER: usize = 8;
const ICRC_LEN: usize = 4;
/// IPv4 ECN codepoint "congestion experienced".
const ECN_CE: u8 = 0b11;

/// The headers of one RoCEv2 packet that the per-QP analysis uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RocePacket {
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub udp_src_port: u16,
    pub udp_dst_port: u16,
    /// The IPv4 ECN field was CE (a switch marked congestion).
    pub ecn_ce: bool,
    pub bth: BthRepr,
    pub aeth: Option<AethRepr>,
    /// DMA length of a READ request's (or first WRITE's) RETH, in bytes.
    pub reth_dma_len_bytes: Option<u32>,
    /// Payload bytes (pad and ICRC not included).
    pub payload_bytes: u64,
}

/// What one frame is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// Not RoCEv2 (another protocol, another UDP port, too short for a UDP header).
    NotRoce,
    /// An IEEE 802.1Qbb priority flow control frame (not RoCEv2): `pausing` when it pauses
    /// at least one priority (an XOFF), else it resumes them (an XON).
    Pfc { pausing: bool },
    /// RoCEv2 over IPv6: recognised (a UDP datagram to 4791 with a payload), not decoded.
    RoceIpv6,
    /// RoCEv2 that parsed and passed its ICRC.
    Verified(RocePacket),
    /// RoCEv2 cut by the snap length: headers as far as captured, ICRC not checked. `None`
    /// when not even the BTH was captured.
    Cut(Option<RocePacket>),
    /// RoCEv2 that failed to parse or failed its ICRC: the reason.
    Failed(String),
}

/// Classifies and decodes one Ethernet frame of original length `orig_len` bytes, of which
/// `data` was captured.
pub fn decode(data: &[u8], orig_len: u32) -> Decoded {
    let frame = strip_vlan_tags(data);
    let f: &[u8] = &frame;
    let Some(ethertype) = be16(f, 12) else {
        return Decoded::NotRoce;
    };
    if ethertype == rnic_wire::pfc::ETHERTYPE_MAC_CONTROL {
        return match rnic_wire::pfc::Packet::new_checked(f).and_then(|p| PfcRepr::parse(&p)) {
            Ok(r) => Decoded::Pfc {
                pausing: r.quanta.iter().any(|q| q.is_some_and(|t| t > 0)),
            },
            Err(_) => Decoded::NotRoce,
        };
    }
    if ethertype == ETHERTYPE_IPV6 {
        // Fixed header: next header at 6, UDP after 40 bytes (extension headers not followed).
        let udp = ETH_HEADER + 40;
        let carries = be16(f, ETH_HEADER + 4).is_some_and(|n| usize::from(n) > UDP_HEADER)
            || be16(f, udp + 4).is_some_and(|n| usize::from(n) > UDP_HEADER);
        let is_roce = f.get(ETH_HEADER + 6) == Some(&IP_PROTO_UDP)
            && be16(f, udp + 2) == Some(ROCE_PORT)
            && carries;
        return if is_roce {
            Decoded::RoceIpv6
        } else {
            Decoded::NotRoce
        };
    }
    if ethertype != ETHERTYPE_IPV4 {
        return Decoded::NotRoce;
    }
    let Some(ip) = f.get(ETH_HEADER..) else {
        return Decoded::NotRoce;
    };
    let (Some(&ver_ihl), Some(&proto), Some(frag)) = (ip.first(), ip.get(9), be16(ip, 6)) else {
        return Decoded::NotRoce;
    };
    if let Some(reason) = damaged_roce_header(ip) {
        return Decoded::Failed(reason);
    }
    // A later IPv4 fragment has no UDP header to read.
    if proto != IP_PROTO_UDP || frag & 0x1FFF != 0 {
        return Decoded::NotRoce;
    }
    let udp = usize::from(ver_ihl & 0x0F) * 4;
    let Some(dst_port) = be16(ip, udp + 2) else {
        return Decoded::NotRoce;
    };
    let ip_total = usize::from(be16(ip, 2).unwrap_or(0));
    if is_empty_udp(ip, udp, ip_total) {
        return Decoded::NotRoce;
    }
    let cut = ETH_HEADER + ip_total > f.len() && f.len() < orig_len as usize;
    if dst_port == ROCE_PORT {
        if cut {
            return Decoded::Cut(read_cut(f, ip_total));
        }
        return match FrameRepr::parse(f) {
            Ok(r) => Decoded::Verified(packet(&r, f)),
            Err(e) => Decoded::Failed(failure_reason(e, f)),
        };
    }
    // Another port: RoCEv2 only if the whole frame verifies (see the module comment).
    if cut {
        return Decoded::NotRoce;
    }
    match FrameRepr::parse_on_port(f, dst_port) {
        Ok(r) => Decoded::Verified(packet(&r, f)),
        Err(_) => Decoded::NotRoce,
    }
}

/// Why the IPv4 header `ip` fails its checksum, when it may carry RoCEv2: a header whose
/// checksum fails cannot be trusted to say its protocol, length or fragment offset, so a
/// RoCEv2 frame with one damaged byte there would pass as TCP or plain UDP. It may be RoCEv2
/// when port 4791 stands where the UDP destination port is, after the header as stated or
/// after the 20 bytes every RoCEv2 header has. Other frames with a bad checksum stay plain
/// traffic (not the check's to judge); a header not captured whole is not checked.
fn damaged_roce_header(ip: &[u8]) -> Option<String> {
    let stated_len = usize::from(ip.first()? & 0x0F) * 4;
    let header = ip.get(..stated_len.max(IPV4_HEADER))?;
    let stated = be16(header, 10)?;
    let computed = ipv4_checksum(header);
    if stated == computed {
        return None;
    }
    let port_at = |len: usize| be16(ip, len + 2) == Some(ROCE_PORT);
    (port_at(stated_len) || port_at(IPV4_HEADER)).then(|| {
        format!(
            "ipv4: header checksum is {stated:#06x}, the header's bytes give {computed:#06x}: \
             the header is damaged (UDP port 4791 follows it)"
        )
    })
}

/// The ones'-complement checksum of IPv4 header `h`, its own checksum field taken as zero.
fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .enumerate()
        .filter(|(i, _)| *i != 5)
        .map(|(_, w)| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// Whether the UDP datagram at `udp` of IPv4 packet `ip` (total length `ip_total`) carries
/// nothing: both its UDP length and the IPv4 total length say so. No RoCEv2 packet is empty
/// (Wireshark hands an empty datagram to no dissector either), so it is plain UDP; a datagram
/// of which only one length says so is damaged, and judged as RoCEv2 by its port.
fn is_empty_udp(ip: &[u8], udp: usize, ip_total: usize) -> bool {
    be16(ip, udp + 4).is_some_and(|n| usize::from(n) <= UDP_HEADER) && ip_total <= udp + UDP_HEADER
}

/// Why frame `f` failed, in words: the wire crate's reason, except where it names a field by
/// its Rust name and a hexadecimal count ("field payload_len has invalid value 0x10" for
/// bytes after an ACK's headers).
fn failure_reason(e: WireError, f: &[u8]) -> String {
    match e {
        WireError::BadField {
            layer: "roce",
            field: "payload_len",
            value,
        } => {
            let op = f.get(ETH_HEADER + IPV4_HEADER + UDP_HEADER).copied();
            let bytes = rnic_model::words::counted(value, "byte");
            format!(
                "roce: {} carries no payload, but the frame has {bytes} after its headers",
                super::report::opcode_name(op.unwrap_or(0))
            )
        }
        e => e.to_string(),
    }
}

/// The frame without its VLAN tags (at most two, as QinQ stacks them), borrowed when it had
/// none.
fn strip_vlan_tags(data: &[u8]) -> Cow<'_, [u8]> {
    let mut tags = 0;
    while tags < 2 && be16(data, 12 + 4 * tags).is_some_and(|t| VLAN_TAGS.contains(&t)) {
        tags += 1;
    }
    if tags == 0 {
        return Cow::Borrowed(data);
    }
    let mut v = Vec::with_capacity(data.len() - 4 * tags);
    v.extend_from_slice(&data[..12]);
    v.extend_from_slice(data.get(12 + 4 * tags..).unwrap_or(&[]));
    Cow::Owned(v)
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
        *b.get(at + 2)?,
        *b.get(at + 3)?,
    ]))
}

fn ip4(b: &[u8], at: usize) -> [u8; 4] {
    let mut a = [0; 4];
    if let Some(s) = b.get(at..at + 4) {
        a.copy_from_slice(s);
    }
    a
}

/// The analysis's view of a parsed frame `f`.
fn packet(r: &FrameRepr<'_>, f: &[u8]) -> RocePacket {
    RocePacket {
        src_ip: r.addr.src_ip,
        dst_ip: r.addr.dst_ip,
        udp_src_port: r.addr.udp_src_port,
        udp_dst_port: be16(f, ETH_HEADER + IPV4_HEADER + 2).unwrap_or(ROCE_PORT),
        ecn_ce: r.addr.dscp_ecn & 0b11 == ECN_CE,
        bth: r.roce.bth,
        aeth: r.roce.aeth,
        reth_dma_len_bytes: r.roce.reth.map(|x| x.dma_len),
        payload_bytes: r.roce.payload.len() as u64,
    }
}

/// Reads the headers of a frame cut by the snap length: IPv4 without options, BTH, and the
/// AETH or RETH when captured; the payload length follows from the IPv4 total length.
fn read_cut(f: &[u8], ip_total: usize) -> Option<RocePacket> {
    let ip = f.get(ETH_HEADER..)?;
    if ip.first()? & 0x0F != 5 {
        return None;
    }
    let bth_at = ETH_HEADER + IPV4_HEADER + UDP_HEADER;
    let bth = BthRepr::parse(&bth::Packet::new_checked(f.get(bth_at..)?).ok()?).ok()?;
    let ext_at = bth_at + bth::HEADER_LEN;
    let op = bth.opcode;
    // Both headers come first after the BTH for the opcodes that carry them (no DETH there).
    let aeth = op
        .has_aeth()
        .then(|| f.get(ext_at..))
        .flatten()
        .and_then(|b| aeth::Packet::new_checked(b).ok())
        .and_then(|p| AethRepr::parse(&p).ok());
    let reth_dma_len_bytes = if op.has_reth() && f.len() >= ext_at + reth::HEADER_LEN {
        be32(f, ext_at + 12)
    } else {
        None
    };
    let fixed = IPV4_HEADER
        + UDP_HEADER
        + bth::HEADER_LEN
        + op.ext_headers_len()
        + usize::from(bth.pad_count)
        + ICRC_LEN;
    Some(RocePacket {
        src_ip: ip4(ip, 12),
        dst_ip: ip4(ip, 16),
        udp_src_port: be16(ip, IPV4_HEADER).unwrap_or(0),
        udp_dst_port: ROCE_PORT,
        ecn_ce: ip.get(1).is_some_and(|t| t & 0b11 == ECN_CE),
        bth,
        aeth,
        reth_dma_len_bytes,
        payload_bytes: if op.has_payload() {
            ip_total.saturating_sub(fixed) as u64
        } else {
            0
        },
    })
}

/// Whether `op` is a packet of the RC/UC request stream whose PSNs are sequenced (UD and CNP
/// are not).
pub fn is_sequenced_request(op: Opcode) -> bool {
    op.is_request() && !op.has_deth()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rnic_wire::{FrameAddr, RethRepr, RoceRepr};

    fn frame(op: Opcode, payload: &[u8]) -> Vec<u8> {
        let bth = BthRepr {
            opcode: op,
            solicited: false,
            mig_req: false,
            pad_count: 0,
            tver: 0,
            pkey: 0xFFFF,
            fecn: false,
            becn: false,
            dest_qp: 0x12,
            ack_req: true,
            psn: 7,
        };
        let mut buf = Vec::new();
        FrameRepr {
            addr: FrameAddr {
                src_ip: [10, 0, 0, 1],
                dst_ip: [10, 0, 0, 2],
                udp_src_port: 0xC001,
                ttl: 64,
                dscp_ecn: 0b11,
                ..FrameAddr::default()
            },
            ip_ident: 1,
            roce: RoceRepr::new(bth, payload).with_reth(RethRepr {
                va: 0,
                rkey: 1,
                dma_len: 1000,
            }),
        }
        .emit(&mut buf);
        buf
    }

    #[test]
    fn verified_vlan_tagged_and_cut_frames() {
        let f = frame(Opcode::RcWriteFirst, &[1; 256]);
        let Decoded::Verified(p) = decode(&f, f.len() as u32) else {
            panic!("not verified");
        };
        assert_eq!((p.payload_bytes, p.bth.psn, p.ecn_ce), (256, 7, true));
        assert_eq!(p.reth_dma_len_bytes, Some(1000));
        let mut tagged = f[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0x60, 0x05]);
        tagged.extend_from_slice(&f[12..]);
        assert_eq!(decode(&tagged, tagged.len() as u32), Decoded::Verified(p));
        let Decoded::Cut(Some(c)) = decode(&f[..100], f.len() as u32) else {
            panic!("not cut");
        };
        assert_eq!(c, p);
        assert_eq!(decode(&f[..50], f.len() as u32), Decoded::Cut(None));
    }

    #[test]
    fn failures_and_other_ports() {
        let mut f = frame(Opcode::RcSendOnly, b"abcd");
        let n = f.len();
        f[n - 6] ^= 1;
        assert!(matches!(decode(&f, n as u32), Decoded::Failed(r) if r.contains("icrc")));
        // Relabelled to port 5000 without a matching ICRC: not RoCE, not a failure.
        f[36..38].copy_from_slice(&5000u16.to_be_bytes());
        assert_eq!(decode(&f, n as u32), Decoded::NotRoce);
        assert_eq!(decode(&[0; 10], 10), Decoded::NotRoce);
        assert_eq!(decode(&[], 0), Decoded::NotRoce);
    }
}
