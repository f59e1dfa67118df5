//! RoCEv2 Congestion Notification Packet: a BTH with opcode 0x81 and BECN set, addressed to the
//! QP whose traffic was ECN-marked, followed by 16 reserved bytes and the ICRC.

use crate::bth::BthRepr;
use crate::frame::RoceRepr;
use crate::opcode::Opcode;
use crate::view::packet_view;

mod field {
    use core::ops::Range;
    pub const RESERVED: Range<usize> = 0..16;
}

/// Length of the reserved block after the BTH, in bytes.
pub const HEADER_LEN: usize = field::RESERVED.end;

packet_view! {
    /// Zero-copy view of the reserved block of a CNP.
    "cnp"
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// The reserved bytes: sent as zeros, ignored on receive.
    #[inline]
    pub fn reserved(&self) -> &[u8] {
        &self.b()[field::RESERVED]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    #[inline]
    pub fn clear_reserved(&mut self) {
        self.buffer.as_mut()[field::RESERVED].fill(0);
    }
}

/// The CNP a notification point sends back for ECN-marked traffic towards `dest_qp` (the
/// sender's QP): P_Key default, BECN set, PSN 0, no payload — as a ConnectX-4 Lx sends it.
pub fn cnp_repr(dest_qp: u32) -> RoceRepr<'static> {
    RoceRepr::new(
        BthRepr {
            becn: true,
            ..BthRepr::new(Opcode::Cnp, dest_qp, 0)
        },
        &[],
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::frame::{FrameAddr, FrameRepr};
    use crate::{icrc, WireError};

    /// A CNP captured from a ConnectX-4 Lx.
    pub(crate) const CAPTURE_HEX: &str = "e41d2dab2bc27cfe90643b32080045c2003c718c400040119161\
        0a0011010a001201000012b7002800008100ffff4000011800000000\
        0000000000000000000000000000000082fd002a";

    pub(crate) fn capture() -> Vec<u8> {
        let h = CAPTURE_HEX.as_bytes();
        h.chunks(2)
            .map(|c| u8::from_str_radix(core::str::from_utf8(c).unwrap(), 16).unwrap())
            .collect()
    }

    fn capture_repr() -> FrameRepr<'static> {
        FrameRepr {
            addr: FrameAddr {
                dst_mac: [0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2],
                src_mac: [0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32],
                src_ip: [10, 0, 17, 1],
                dst_ip: [10, 0, 18, 1],
                udp_src_port: 0,
                dscp_ecn: 0xc2,
                ttl: 64,
            },
            ip_ident: 0x718c,
            roce: cnp_repr(0x118),
        }
    }

    #[test]
    fn capture_icrc_matches() {
        let f = capture();
        assert_eq!(f.len(), 74);
        assert_eq!(icrc::compute(&f), Ok(0x2a00_fd82));
        assert_eq!(&f[70..], &[0x82, 0xfd, 0x00, 0x2a]);
        assert_eq!(icrc::verify(&f), Ok(()));
    }

    #[test]
    fn capture_parses_to_cnp() {
        let f = capture();
        assert_eq!(FrameRepr::parse(&f), Ok(capture_repr()));
    }

    #[test]
    fn cnp_repr_emits_the_capture_exactly() {
        let mut buf = Vec::new();
        capture_repr().emit(&mut buf);
        assert_eq!(buf, capture());
        assert_eq!(capture_repr().buffer_len(), 74);
    }

    #[test]
    fn reserved_bytes_are_ignored_but_covered_by_icrc() {
        let mut f = capture();
        f[60] = 1;
        assert!(matches!(
            FrameRepr::parse(&f),
            Err(WireError::BadIcrc { .. })
        ));
        let crc = icrc::compute(&f).unwrap();
        f[70..].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(FrameRepr::parse(&f), Ok(capture_repr()));
        assert_eq!(Packet::new_checked(&f[54..70]).unwrap().reserved()[6], 1);
    }

    #[test]
    fn truncated_reserved_block() {
        assert_eq!(
            Packet::new_checked(&[0u8; 15][..]).unwrap_err(),
            WireError::Truncated {
                layer: "cnp",
                need: 16,
                have: 15
            }
        );
    }
}
