//! What RDMA CM (the kernel's `rdma_cm`, which librdmacm drives) adds to a CM REQ when it
//! connects IP addresses: the service id names the port space and the port the passive side
//! listens on, and the first 36 bytes of the REQ's private data are its address header
//! (version, IP version, the active side's port, then its source and destination addresses,
//! each in a 16-byte slot where an IPv4 address takes the last 4 bytes). The application's
//! own private data follows the header. The REP, RTU, DREQ and DREP carry no such header.
//!
//! `Packet<T>` is a zero-copy view of the header; [`CmaHeaderRepr`] parses and emits it for
//! IPv4 (an IPv6 header is refused naming its field: rnic speaks RoCEv2 over IPv4 only).

use crate::error::{check_len, Result, WireError};
use crate::view::packet_view;

/// Byte layout of the address header.
pub mod field {
    use core::ops::Range;
    pub const VERSION: usize = 0;
    /// IP version in the upper 4 bits.
    pub const IP_VERSION: usize = 1;
    /// The active side's port.
    pub const PORT: Range<usize> = 2..4;
    /// The source address slot; an IPv4 address sits in its last 4 bytes.
    pub const SRC_ADDR: Range<usize> = 4..20;
    pub const SRC_IPV4: Range<usize> = 16..20;
    pub const DST_ADDR: Range<usize> = 20..36;
    pub const DST_IPV4: Range<usize> = 32..36;
}

/// Length of the address header, bytes.
pub const HEADER_LEN: usize = field::DST_ADDR.end;
/// The header's version (the only one RDMA CM has).
pub const CMA_VERSION: u8 = 0x00;
/// RDMA CM's TCP port space (`RDMA_PS_TCP`), the one perftest's `-R` and most RC
/// applications use.
pub const PORT_SPACE_TCP: u16 = 0x0106;
/// RDMA CM's UDP port space (`RDMA_PS_UDP`): UD QPs, resolved by a SIDR exchange
/// (perftest's `-c UD -R`).
pub const PORT_SPACE_UDP: u16 = 0x0111;
/// The Q_Key RDMA CM gives the UD QPs of its UDP port space (`RDMA_UDP_QKEY`); a SIDR_REP
/// carries it.
pub const UDP_QKEY: u32 = 0x0123_4567;
/// The high bits every IP-based service id has (`RDMA_IB_IP_PS_*` above the port space).
const SERVICE_ID_PREFIX: u64 = 0x0000_0000_0100_0000;
const SERVICE_ID_PREFIX_MASK: u64 = 0xFFFF_FFFF_FF00_0000;

const LAYER: &str = "rdma cm header";

packet_view! {
    /// Zero-copy view of RDMA CM's address header at the start of a REQ's private data.
    "rdma cm header"
}

impl<T: AsRef<[u8]>> Packet<T> {
    #[inline]
    pub fn version(&self) -> u8 {
        self.b()[field::VERSION]
    }

    /// The IP version (4 or 6).
    #[inline]
    pub fn ip_version(&self) -> u8 {
        self.b()[field::IP_VERSION] >> 4
    }

    #[inline]
    pub fn port(&self) -> u16 {
        self.get(field::PORT) as u16
    }

    /// The last 4 bytes of the source address slot.
    #[inline]
    pub fn src_ipv4(&self) -> [u8; 4] {
        (self.get(field::SRC_IPV4) as u32).to_be_bytes()
    }

    /// The last 4 bytes of the destination address slot.
    #[inline]
    pub fn dst_ipv4(&self) -> [u8; 4] {
        (self.get(field::DST_IPV4) as u32).to_be_bytes()
    }
}

/// RDMA CM's address header of an IPv4 connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CmaHeaderRepr {
    /// The active side's port (its source port; the passive side's is in the service id).
    pub src_port: u16,
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
}

impl CmaHeaderRepr {
    /// Parses the header: version 0, IP version 4.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<CmaHeaderRepr> {
        check_len(LAYER, HEADER_LEN, packet.b().len())?;
        if packet.version() != CMA_VERSION {
            return Err(bad("version (0)", packet.version().into()));
        }
        if packet.ip_version() != 4 {
            return Err(bad(
                "IP version (4; rnic speaks RoCEv2 over IPv4 only)",
                packet.ip_version().into(),
            ));
        }
        Ok(CmaHeaderRepr {
            src_port: packet.port(),
            src_ip: packet.src_ipv4(),
            dst_ip: packet.dst_ipv4(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header (36 bytes) at the start of `buf`; the address slots' first 12 bytes
    /// are zero.
    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..HEADER_LEN];
        b.fill(0);
        b[field::VERSION] = CMA_VERSION;
        b[field::IP_VERSION] = 4 << 4;
        b[field::PORT].copy_from_slice(&self.src_port.to_be_bytes());
        b[field::SRC_IPV4].copy_from_slice(&self.src_ip);
        b[field::DST_IPV4].copy_from_slice(&self.dst_ip);
    }
}

fn bad(field: &'static str, value: u64) -> WireError {
    WireError::BadField {
        layer: LAYER,
        field,
        value,
    }
}

/// The service id of an RDMA CM listener on `port` in `port_space` (e.g.
/// [`PORT_SPACE_TCP`]).
pub fn ip_service_id(port_space: u16, port: u16) -> u64 {
    SERVICE_ID_PREFIX | u64::from(port_space) << 16 | u64::from(port)
}

/// The port space and port an IP-based service id names; another service id is refused
/// naming the field.
pub fn parse_ip_service_id(service_id: u64) -> Result<(u16, u16)> {
    if service_id & SERVICE_ID_PREFIX_MASK != SERVICE_ID_PREFIX {
        return Err(WireError::BadField {
            layer: "cm mad",
            field: "service id (RDMA CM's IP service ids are 0x00000000010PPPPP)",
            value: service_id,
        });
    }
    Ok(((service_id >> 16) as u16, service_id as u16))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header of a REQ that `ib_write_bw -R` on 10.47.0.2 sent to 10.47.0.1 (from
    /// source port 44613), as captured.
    const CAPTURED: [u8; 36] = [
        0x00, 0x40, 0xae, 0x45, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 47, 0, 2, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 10, 47, 0, 1,
    ];
    const REPR: CmaHeaderRepr = CmaHeaderRepr {
        src_port: 44613,
        src_ip: [10, 47, 0, 2],
        dst_ip: [10, 47, 0, 1],
    };

    #[test]
    fn parses_and_emits_a_captured_header() {
        let p = Packet::new_checked(&CAPTURED[..]).unwrap();
        assert_eq!(CmaHeaderRepr::parse(&p), Ok(REPR));
        let mut b = [0xEEu8; 40];
        REPR.emit(&mut b);
        assert_eq!(b[..36], CAPTURED);
        assert_eq!(
            b[36..],
            [0xEE; 4],
            "bytes after the header are the application's"
        );
    }

    #[test]
    fn bad_headers_are_errors_naming_the_field() {
        let mut v6 = CAPTURED;
        v6[1] = 0x60;
        let e = CmaHeaderRepr::parse(&Packet::new_unchecked(&v6[..])).unwrap_err();
        assert!(e.to_string().contains("IP version"), "{e}");
        let mut version = CAPTURED;
        version[0] = 1;
        let e = CmaHeaderRepr::parse(&Packet::new_unchecked(&version[..])).unwrap_err();
        assert!(e.to_string().contains("version (0)"), "{e}");
        let e = Packet::new_checked(&CAPTURED[..35]).unwrap_err();
        assert!(e.to_string().contains("rdma cm header: truncated"), "{e}");
    }

    #[test]
    fn service_ids_name_the_port_space_and_port() {
        // The captured REQ's service id: TCP port space, port 18777.
        assert_eq!(ip_service_id(PORT_SPACE_TCP, 18777), 0x0000_0000_0106_4959);
        assert_eq!(
            parse_ip_service_id(0x0000_0000_0106_4959),
            Ok((PORT_SPACE_TCP, 18777))
        );
        let e = parse_ip_service_id(0x0200_0000_0106_4959).unwrap_err();
        assert!(e.to_string().contains("service id"), "{e}");
    }
}
