//! The QP service type (IBA 9.8): reliable connection, unreliable connection or unreliable
//! datagram, chosen when the QP is created ([`crate::Device::create_qp_service`]).
//!
//! RC is the requester/responder pair of [`crate::requester`] and [`crate::responder`]. The
//! two unreliable services share one requester (`crate::unreliable_tx`: segmentation, no
//! ACK, a WQE completes when its last packet is on the wire) and each has its own receiver:
//! [`crate::uc`] (in-order PSNs, a gap drops the rest of the message, the receiver resumes
//! at the next FIRST/ONLY) and [`crate::ud`] (one-packet SENDs with a DETH, Q_Key check, a
//! 40-byte GRH area at the start of the receive buffer). This module holds what differs by
//! service in the verbs: which opcodes a service carries, which work requests it takes and
//! which attributes each modify_qp transition requires (IBA 1.4 table 91, the UC and UD
//! columns).

use crate::error::VerbsError;
use crate::op::{request_opcode, Pos};
use crate::qp::attr::AttrMask;
use crate::qp::state::QpState;
use crate::qp::transition;
use crate::wr::{SendWr, WrOpcode};
use rnic_wire::Opcode;

/// Default Q_Key of a UD QP when none is given (perftest's `DEF_QKEY`).
pub const DEFAULT_QKEY: u32 = 0x1111_1111;

/// The transport service of a QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ServiceType {
    /// Reliable connection: ACKs, retransmission, READ and atomics.
    #[default]
    Rc,
    /// Unreliable connection: SEND and WRITE, no ACK; a lost packet loses its message.
    Uc,
    /// Unreliable datagram: one-packet SENDs with a DETH (Q_Key, source QP), no ACK.
    Ud,
}

impl ServiceType {
    /// The lowercase name (`rc`, `uc`, `ud`).
    pub fn name(self) -> &'static str {
        match self {
            ServiceType::Rc => "rc",
            ServiceType::Uc => "uc",
            ServiceType::Ud => "ud",
        }
    }

    /// The BTH transport bits (opcode bits 7-5) of this service.
    fn transport_bits(self) -> u8 {
        match self {
            ServiceType::Rc => 0x00,
            ServiceType::Uc => 0x20,
            ServiceType::Ud => 0x60,
        }
    }

    /// A QP of this service takes packets with opcode `op` (RC: requests and responses, and
    /// the out-of-order opcodes; UC: its SEND/WRITE opcodes; UD: its two SEND opcodes).
    pub fn carries(self, op: Opcode) -> bool {
        // The out-of-order opcodes (vendor range) travel on RC QPs with an out-of-order
        // reliability mode.
        op != Opcode::Cnp
            && (op.as_u8() & 0xE0 == self.transport_bits()
                || self == ServiceType::Rc && op.is_ooo())
    }

    /// The opcode of a request packet at `pos` of a message of `wr` on this service: the RC
    /// opcode with the service's transport bits (UC uses the RC operation codes, IBA table
    /// 35), and UD's SEND ONLY (with immediate).
    pub(crate) fn request_opcode(self, wr: WrOpcode, pos: Pos) -> Opcode {
        let rc = request_opcode(wr, pos);
        match self {
            ServiceType::Rc => rc,
            ServiceType::Uc => Opcode::from_u8(rc.as_u8() | 0x20).unwrap_or(rc),
            ServiceType::Ud if wr == WrOpcode::SendImm => Opcode::UdSendOnlyImm,
            ServiceType::Ud => Opcode::UdSendOnly,
        }
    }

    /// Checks a send WR against what the service carries: UC has SEND and WRITE (with and
    /// without immediate), UD only SEND of at most one path MTU. RC takes everything.
    pub(crate) fn check_wr(self, wr: &SendWr, len: u64, pmtu: u32) -> Result<(), VerbsError> {
        let op = wr.opcode;
        match self {
            ServiceType::Rc => Ok(()),
            ServiceType::Uc => match op {
                WrOpcode::Send | WrOpcode::SendImm | WrOpcode::Write | WrOpcode::WriteImm => Ok(()),
                _ => Err(VerbsError::NotOnService {
                    op: wr_name(op),
                    service: "UC",
                    carries: "SEND, SEND with immediate, WRITE and WRITE with immediate; READ, \
                              atomics and SEND with invalidate need an RC QP",
                }),
            },
            ServiceType::Ud => {
                if !matches!(op, WrOpcode::Send | WrOpcode::SendImm) {
                    return Err(VerbsError::NotOnService {
                        op: wr_name(op),
                        service: "UD",
                        carries: "SEND and SEND with immediate; WRITE, READ and atomics need \
                                  an RC (or, for WRITE, a UC) QP",
                    });
                }
                if len > u64::from(pmtu) {
                    return Err(VerbsError::UdMessageTooLong { len, pmtu });
                }
                Ok(())
            }
        }
    }

    /// `(required, optional)` attributes of modify_qp `from -> to` for this service (IBA
    /// table 91). UC: RESET→INIT as RC; INIT→RTR needs the path (AV, MTU, destination QP, receive
    /// PSN); RTR→RTS only the send PSN: no ACK timer, retries, RNR or READ resources. UD:
    /// RESET→INIT needs the Q_Key instead of access rights; INIT→RTR needs nothing (rnic
    /// accepts AV, path MTU and destination QP there as the QP's one address handle: its
    /// UD QPs each talk to one peer, as perftest's do); RTR→RTS the send PSN.
    pub(crate) fn rules(self, from: QpState, to: QpState) -> Option<(AttrMask, AttrMask)> {
        use QpState::*;
        const E: AttrMask = AttrMask::EMPTY;
        let m = |bits: &[AttrMask]| bits.iter().fold(E, |a, b| a.union(*b));
        let uc = self == ServiceType::Uc;
        let send_opt = if uc {
            m(&[AttrMask::ACCESS])
        } else {
            m(&[AttrMask::QKEY])
        };
        match self {
            ServiceType::Rc => transition::rules(from, to),
            ServiceType::Uc | ServiceType::Ud => Some(match (from, to) {
                (_, Reset) | (_, Err) => (E, E),
                (Reset, Init) if uc => (m(&[AttrMask::PKEY, AttrMask::PORT, AttrMask::ACCESS]), E),
                (Reset, Init) => (m(&[AttrMask::PKEY, AttrMask::PORT, AttrMask::QKEY]), E),
                (Init, Init) if uc => (E, m(&[AttrMask::PKEY, AttrMask::PORT, AttrMask::ACCESS])),
                (Init, Init) => (E, m(&[AttrMask::PKEY, AttrMask::PORT, AttrMask::QKEY])),
                (Init, Rtr) if uc => (
                    m(&[
                        AttrMask::AV,
                        AttrMask::PATH_MTU,
                        AttrMask::DEST_QPN,
                        AttrMask::RQ_PSN,
                    ]),
                    m(&[AttrMask::PKEY, AttrMask::ACCESS]),
                ),
                (Init, Rtr) => (
                    E,
                    m(&[
                        AttrMask::PKEY,
                        AttrMask::QKEY,
                        AttrMask::AV,
                        AttrMask::PATH_MTU,
                        AttrMask::DEST_QPN,
                    ]),
                ),
                (Rtr, Rts) => (m(&[AttrMask::SQ_PSN]), send_opt),
                (Rts, Rts) | (Sqd, Rts) | (Sqe, Rts) => (E, send_opt),
                (Rts, Sqd) => (E, E),
                (Sqd, Sqd) if uc => (E, m(&[AttrMask::AV, AttrMask::PKEY, AttrMask::ACCESS])),
                (Sqd, Sqd) => (E, m(&[AttrMask::PKEY, AttrMask::QKEY])),
                _ => return None,
            }),
        }
    }
}

fn wr_name(op: WrOpcode) -> &'static str {
    match op {
        WrOpcode::Send => "SEND",
        WrOpcode::SendImm => "SEND with immediate",
        WrOpcode::SendInv => "SEND with invalidate",
        WrOpcode::Write => "WRITE",
        WrOpcode::WriteImm => "WRITE with immediate",
        WrOpcode::Read => "READ",
        WrOpcode::CompareSwap => "CMP&SWAP",
        WrOpcode::FetchAdd => "FETCH&ADD",
    }
}

impl core::str::FromStr for ServiceType {
    type Err = String;

    /// `rc`, `uc` or `ud`, any case (perftest's `-c RC|UC|UD`).
    fn from_str(s: &str) -> Result<ServiceType, String> {
        match s.to_ascii_lowercase().as_str() {
            "rc" => Ok(ServiceType::Rc),
            "uc" => Ok(ServiceType::Uc),
            "ud" => Ok(ServiceType::Ud),
            _ => Err(format!("unknown transport `{s}`: expected RC, UC or UD")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_by_service() {
        use ServiceType::*;
        assert_eq!(
            Uc.request_opcode(WrOpcode::Write, Pos::First),
            Opcode::UcWriteFirst
        );
        assert_eq!(
            Uc.request_opcode(WrOpcode::Send, Pos::Middle),
            Opcode::UcSendMiddle
        );
        assert_eq!(
            Uc.request_opcode(WrOpcode::WriteImm, Pos::Only),
            Opcode::UcWriteOnlyImm
        );
        assert_eq!(
            Uc.request_opcode(WrOpcode::SendImm, Pos::Last),
            Opcode::UcSendLastImm
        );
        assert_eq!(
            Ud.request_opcode(WrOpcode::Send, Pos::Only),
            Opcode::UdSendOnly
        );
        assert_eq!(
            Ud.request_opcode(WrOpcode::SendImm, Pos::Only),
            Opcode::UdSendOnlyImm
        );
        assert!(Uc.carries(Opcode::UcSendOnly) && !Uc.carries(Opcode::RcSendOnly));
        assert!(Ud.carries(Opcode::UdSendOnly) && !Ud.carries(Opcode::UcSendOnly));
        assert!(Rc.carries(Opcode::RcAck) && !Rc.carries(Opcode::UdSendOnly));
        assert!(!Rc.carries(Opcode::Cnp));
        for op in Opcode::ALL {
            let n = [Rc, Uc, Ud].iter().filter(|s| s.carries(op)).count();
            assert_eq!(n, usize::from(op != Opcode::Cnp), "{op:?}");
        }
    }

    #[test]
    fn work_requests_by_service() {
        let send = SendWr::send(1, vec![]);
        let mut read = SendWr::send(1, vec![]);
        read.opcode = WrOpcode::Read;
        let mut write = send.clone();
        write.opcode = WrOpcode::Write;
        assert!(ServiceType::Uc.check_wr(&write, 10_000, 1024).is_ok());
        let e = ServiceType::Uc.check_wr(&read, 8, 1024).unwrap_err();
        assert!(
            e.to_string().contains("READ") && e.to_string().contains("RC"),
            "{e}"
        );
        let e = ServiceType::Ud.check_wr(&write, 8, 1024).unwrap_err();
        assert!(e.to_string().contains("UD"), "{e}");
        assert!(ServiceType::Ud.check_wr(&send, 1024, 1024).is_ok());
        let e = ServiceType::Ud.check_wr(&send, 1025, 1024).unwrap_err();
        assert!(e.to_string().contains("path_mtu"), "{e}");
        assert_eq!("UD".parse::<ServiceType>(), Ok(ServiceType::Ud));
        assert!("XRC"
            .parse::<ServiceType>()
            .unwrap_err()
            .contains("RC, UC or UD"));
    }

    #[test]
    fn transitions_by_service() {
        use QpState::*;
        let (req, _) = ServiceType::Ud.rules(Reset, Init).unwrap();
        assert_eq!(
            req.minus(AttrMask::PORT.union(AttrMask::PKEY)).first_name(),
            Some("qkey")
        );
        let (req, opt) = ServiceType::Uc.rules(Rtr, Rts).unwrap();
        assert_eq!(req, AttrMask::SQ_PSN);
        assert_eq!(opt.minus(AttrMask::ACCESS), AttrMask::EMPTY);
        assert_eq!(ServiceType::Ud.rules(Init, Rtr).unwrap().0, AttrMask::EMPTY);
        assert!(ServiceType::Uc.rules(Init, Rts).is_none());
    }
}
