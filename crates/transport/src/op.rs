//! Which message an RC opcode belongs to and where in it; the opcode a requester packet gets.

use crate::wr::WrOpcode;
use rnic_wire::Opcode;

/// Kind of request message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReqKind {
    Send,
    Write,
    Read,
    Atomic,
}

/// Position of a packet in its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pos {
    First,
    Middle,
    Last,
    Only,
}

impl Pos {
    /// Position of packet `i` of an `n`-packet message.
    pub(crate) fn of(i: u32, n: u32) -> Pos {
        if n <= 1 {
            Pos::Only
        } else if i == 0 {
            Pos::First
        } else if i + 1 >= n {
            Pos::Last
        } else {
            Pos::Middle
        }
    }

    /// First or only packet: opens a message.
    pub(crate) fn starts(self) -> bool {
        matches!(self, Pos::First | Pos::Only)
    }

    /// Last or only packet: completes a message.
    pub(crate) fn ends(self) -> bool {
        matches!(self, Pos::Last | Pos::Only)
    }
}

/// Kind and position of an RC request opcode; `None` for responses and other transports.
pub(crate) fn classify_request(op: Opcode) -> Option<(ReqKind, Pos)> {
    use Opcode::*;
    Some(match op {
        RcSendFirst => (ReqKind::Send, Pos::First),
        RcSendMiddle => (ReqKind::Send, Pos::Middle),
        RcSendLast | RcSendLastImm | RcSendLastInv => (ReqKind::Send, Pos::Last),
        RcSendOnly | RcSendOnlyImm | RcSendOnlyInv => (ReqKind::Send, Pos::Only),
        RcWriteFirst => (ReqKind::Write, Pos::First),
        RcWriteMiddle => (ReqKind::Write, Pos::Middle),
        RcWriteLast | RcWriteLastImm => (ReqKind::Write, Pos::Last),
        RcWriteOnly | RcWriteOnlyImm => (ReqKind::Write, Pos::Only),
        RcReadRequest => (ReqKind::Read, Pos::Only),
        RcCompareSwap | RcFetchAdd => (ReqKind::Atomic, Pos::Only),
        _ => return None,
    })
}

/// True for the RC opcodes a responder sends (ACK, atomic ACK, READ responses).
pub(crate) fn is_rc_response(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        RcAck
            | RcAtomicAck
            | RcReadResponseFirst
            | RcReadResponseMiddle
            | RcReadResponseLast
            | RcReadResponseOnly
    )
}

/// The opcode of a request packet at `pos` of a message of work-request opcode `wr`.
/// READ and atomics are single packets whatever `pos` says.
pub(crate) fn request_opcode(wr: WrOpcode, pos: Pos) -> Opcode {
    use Opcode::*;
    match (wr, pos) {
        (WrOpcode::Read, _) => RcReadRequest,
        (WrOpcode::CompareSwap, _) => RcCompareSwap,
        (WrOpcode::FetchAdd, _) => RcFetchAdd,
        (WrOpcode::Send | WrOpcode::SendImm | WrOpcode::SendInv, Pos::First) => RcSendFirst,
        (WrOpcode::Send | WrOpcode::SendImm | WrOpcode::SendInv, Pos::Middle) => RcSendMiddle,
        (WrOpcode::Send, Pos::Last) => RcSendLast,
        (WrOpcode::Send, Pos::Only) => RcSendOnly,
        (WrOpcode::SendImm, Pos::Last) => RcSendLastImm,
        (WrOpcode::SendImm, Pos::Only) => RcSendOnlyImm,
        (WrOpcode::SendInv, Pos::Last) => RcSendLastInv,
        (WrOpcode::SendInv, Pos::Only) => RcSendOnlyInv,
        (WrOpcode::Write | WrOpcode::WriteImm, Pos::First) => RcWriteFirst,
        (WrOpcode::Write | WrOpcode::WriteImm, Pos::Middle) => RcWriteMiddle,
        (WrOpcode::Write, Pos::Last) => RcWriteLast,
        (WrOpcode::Write, Pos::Only) => RcWriteOnly,
        (WrOpcode::WriteImm, Pos::Last) => RcWriteLastImm,
        (WrOpcode::WriteImm, Pos::Only) => RcWriteOnlyImm,
    }
}

/// Packets (and PSNs) a message of `len_bytes` takes at `pmtu`: at least one.
pub fn packets_for(len_bytes: u64, pmtu: u32) -> u64 {
    let pmtu = u64::from(pmtu.max(1));
    len_bytes.div_ceil(pmtu).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions() {
        assert_eq!(Pos::of(0, 1), Pos::Only);
        assert_eq!(Pos::of(0, 3), Pos::First);
        assert_eq!(Pos::of(1, 3), Pos::Middle);
        assert_eq!(Pos::of(2, 3), Pos::Last);
        assert_eq!(packets_for(0, 256), 1);
        assert_eq!(packets_for(256, 256), 1);
        assert_eq!(packets_for(257, 256), 2);
    }

    #[test]
    fn request_opcodes_round_trip() {
        let wrs = [
            WrOpcode::Send,
            WrOpcode::SendImm,
            WrOpcode::SendInv,
            WrOpcode::Write,
            WrOpcode::WriteImm,
        ];
        for wr in wrs {
            for pos in [Pos::First, Pos::Middle, Pos::Last, Pos::Only] {
                let op = request_opcode(wr, pos);
                let (kind, p) = classify_request(op).unwrap();
                assert_eq!(p, pos, "{wr:?} {pos:?}");
                let want = if matches!(wr, WrOpcode::Write | WrOpcode::WriteImm) {
                    ReqKind::Write
                } else {
                    ReqKind::Send
                };
                assert_eq!(kind, want);
                assert_eq!(
                    op.has_reth(),
                    wr == WrOpcode::Write && pos.starts()
                        || wr == WrOpcode::WriteImm && pos.starts()
                );
                assert_eq!(
                    op.has_immdt(),
                    matches!(wr, WrOpcode::SendImm | WrOpcode::WriteImm) && pos.ends()
                );
                assert_eq!(op.has_ieth(), wr == WrOpcode::SendInv && pos.ends());
            }
        }
        assert!(classify_request(Opcode::RcAck).is_none());
        assert!(is_rc_response(Opcode::RcReadResponseMiddle));
        assert!(!is_rc_response(Opcode::UcSendOnly));
    }
}
