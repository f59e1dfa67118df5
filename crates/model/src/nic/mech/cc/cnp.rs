//! The CNP a notification point sends (RoCEv2, InfiniBand Architecture Specification
//! Annex A17): BTH opcode 0x81 with BECN set, addressed to the sender's QP, 16 reserved
//! bytes and the ICRC; its Ethernet, IP and UDP addresses are the marked packet's, turned
//! around.

use rnic_wire::frame::{FrameAddr, FrameRepr};

/// DSCP 48 and Not-ECT: the CNP's TOS byte. The DSCP is the one NICs send CNPs with by
/// default (a ConnectX-4 Lx's captured CNP carries it), so switches can give CNPs a
/// priority of their own; Not-ECT, so a switch never marks a CNP.
pub const CNP_TOS: u8 = 48 << 2;

/// Writes into `buf` the CNP answering `marked` (a received RoCEv2 frame) for the sender's
/// QP `dest_qpn`. Returns `false`, writing nothing, if `marked` does not parse.
pub fn answer(marked: &[u8], dest_qpn: u32, buf: &mut Vec<u8>) -> bool {
    let Ok(f) = FrameRepr::parse(marked) else {
        return false;
    };
    let a = f.addr;
    let cnp = FrameRepr {
        addr: FrameAddr {
            dscp_ecn: CNP_TOS,
            ttl: a.ttl.max(64),
            ..a.reversed()
        },
        ip_ident: 0,
        roce: rnic_wire::cnp::cnp_repr(dest_qpn),
    };
    cnp.emit(buf);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use rnic_wire::Opcode;

    #[test]
    fn the_cnp_goes_back_to_the_sender_qp_and_verifies() {
        let data = FrameRepr {
            addr: FrameAddr {
                src_mac: [2, 0, 0, 0, 0, 1],
                dst_mac: [2, 0, 0, 0, 0, 2],
                src_ip: [10, 0, 0, 1],
                dst_ip: [10, 0, 0, 2],
                udp_src_port: 0xc123,
                dscp_ecn: 0b11,
                ttl: 63,
            },
            ip_ident: 7,
            roce: rnic_wire::cnp::cnp_repr(5),
        };
        let mut marked = Vec::new();
        data.emit(&mut marked);
        let mut buf = Vec::new();
        assert!(answer(&marked, 0x42, &mut buf));
        let cnp = FrameRepr::parse(&buf).expect("parses");
        assert_eq!(cnp.roce.bth.opcode, Opcode::Cnp);
        assert_eq!(cnp.roce.bth.dest_qp, 0x42);
        assert!(cnp.roce.bth.becn);
        assert_eq!(cnp.addr.dst_ip, [10, 0, 0, 1]);
        assert_eq!(cnp.addr.dst_mac, [2, 0, 0, 0, 0, 1]);
        assert_eq!(cnp.addr.dscp_ecn & 0b11, 0, "Not-ECT");
        assert_eq!(rnic_wire::icrc::verify(&buf), Ok(()));
        assert!(
            !answer(&[0; 10], 1, &mut buf),
            "a frame that does not parse"
        );
    }
}
