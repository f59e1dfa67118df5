//! The pseudo-ACK: the acknowledgement Remote would send for a PSN, built by the accelerator
//! from what it saw. Addressing is the request's, turned round (Remote's MAC and IP as
//! source, Local's as destination, the same UDP source port: RoCEv2's entropy port is a
//! function of both QPNs, symmetric, so Remote's ACKs carry the port of Local's requests);
//! the BTH names Local's QPN and the PSN, the AETH says ACK with unlimited credits (as
//! rnic's responders do) and Remote's MSN after that PSN.
//!
//! One field cannot be reproduced: the IPv4 identification, a counter of every frame the
//! sending host emits, which no device on the path can know. The accelerator numbers its own
//! frames; the IPv4 checksum and the ICRC (which covers the identification) follow from it.
//! Everything else is byte-exact to Remote's ACK (a test compares the two).

use rnic_wire::frame::{FrameAddr, FrameRepr, RoceRepr};
use rnic_wire::{AethRepr, AethSyndrome, BthRepr, Opcode, CREDITS_UNLIMITED};

/// What a pseudo-ACK of one connection is built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckTemplate {
    /// Remote to Local.
    pub addr: FrameAddr,
    /// The partition key of the connection's requests.
    pub pkey: u16,
}

impl AckTemplate {
    /// The template for the responses to a request frame (a whole frame, ICRC checked);
    /// `None` when it is not a valid RoCEv2 frame.
    pub fn from_request(frame: &[u8]) -> Option<AckTemplate> {
        let f = FrameRepr::parse(frame).ok()?;
        let a = f.addr;
        Some(AckTemplate {
            addr: FrameAddr {
                // rnic's hosts mark their ACKs as their requests (one address vector); an
                // ECN mark a switch set on the request is not Remote's to echo.
                dscp_ecn: a.dscp_ecn & !0x03 | (a.dscp_ecn & 0x03).min(2),
                ..a.reversed()
            },
            pkey: f.roce.bth.pkey,
        })
    }

    /// Writes the ACK of `psn` with MSN `msn` to Local QPN `local_qpn` into `buf`.
    pub fn emit(&self, local_qpn: u32, psn: u32, msn: u32, ip_ident: u16, buf: &mut Vec<u8>) {
        let bth = BthRepr {
            opcode: Opcode::RcAck,
            solicited: false,
            mig_req: false,
            pad_count: 0,
            tver: 0,
            pkey: self.pkey,
            fecn: false,
            becn: false,
            dest_qp: local_qpn,
            ack_req: false,
            psn,
        };
        let mut roce = RoceRepr::new(bth, &[]);
        roce.aeth = Some(AethRepr {
            syndrome: AethSyndrome::Ack {
                credits: CREDITS_UNLIMITED,
            },
            msn,
        });
        FrameRepr {
            addr: self.addr,
            ip_ident,
            roce,
        }
        .emit(buf);
    }
}
