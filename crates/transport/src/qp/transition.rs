//! The IB modify_qp transition table for RC QPs (IBA 1.4 table 91 / Linux `qp_state_table`):
//! which state changes exist and which attributes each requires and accepts.

use super::attr::AttrMask;
use super::state::QpState;

/// `(required, optional)` attributes of `from -> to`, or `None` if there is no such
/// transition. Every state can go to RESET and to ERR without attributes.
pub(crate) fn rules(from: QpState, to: QpState) -> Option<(AttrMask, AttrMask)> {
    use QpState::*;
    const E: AttrMask = AttrMask::EMPTY;
    let m = |bits: &[AttrMask]| bits.iter().fold(E, |a, b| a.union(*b));
    Some(match (from, to) {
        (_, Reset) | (_, Err) => (E, E),
        (Reset, Init) => (m(&[AttrMask::PKEY, AttrMask::PORT, AttrMask::ACCESS]), E),
        (Init, Init) => (E, m(&[AttrMask::PKEY, AttrMask::PORT, AttrMask::ACCESS])),
        (Init, Rtr) => (
            m(&[
                AttrMask::AV,
                AttrMask::PATH_MTU,
                AttrMask::DEST_QPN,
                AttrMask::RQ_PSN,
                AttrMask::MAX_DEST_RD_ATOMIC,
                AttrMask::MIN_RNR_TIMER,
            ]),
            m(&[AttrMask::PKEY, AttrMask::ACCESS]),
        ),
        (Rtr, Rts) => (
            m(&[
                AttrMask::SQ_PSN,
                AttrMask::TIMEOUT,
                AttrMask::RETRY_CNT,
                AttrMask::RNR_RETRY,
                AttrMask::MAX_RD_ATOMIC,
            ]),
            m(&[
                AttrMask::ACCESS,
                AttrMask::MIN_RNR_TIMER,
                AttrMask::MAX_OUTSTANDING_PSNS,
                AttrMask::ACK_REQ_EVERY,
            ]),
        ),
        (Rts, Rts) | (Sqd, Rts) | (Sqe, Rts) => (
            E,
            m(&[
                AttrMask::ACCESS,
                AttrMask::MIN_RNR_TIMER,
                AttrMask::MAX_OUTSTANDING_PSNS,
                AttrMask::ACK_REQ_EVERY,
            ]),
        ),
        (Rts, Sqd) => (E, E),
        (Sqd, Sqd) => (
            E,
            m(&[
                AttrMask::AV,
                AttrMask::PKEY,
                AttrMask::PORT,
                AttrMask::ACCESS,
                AttrMask::MIN_RNR_TIMER,
                AttrMask::MAX_RD_ATOMIC,
                AttrMask::MAX_DEST_RD_ATOMIC,
                AttrMask::TIMEOUT,
                AttrMask::RETRY_CNT,
                AttrMask::RNR_RETRY,
            ]),
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use QpState::*;

    #[test]
    fn table_shape() {
        let all = [Reset, Init, Rtr, Rts, Sqd, Sqe, Err];
        for s in all {
            assert!(rules(s, Reset).is_some());
            assert!(rules(s, Err).is_some());
        }
        assert!(rules(Reset, Rtr).is_none());
        assert!(rules(Init, Rts).is_none());
        assert!(rules(Rtr, Rtr).is_none());
        assert!(rules(Err, Rts).is_none());
        assert!(rules(Rts, Init).is_none());
        let (req, _) = rules(Init, Rtr).unwrap();
        assert_eq!(req.first_name(), Some("path_mtu"));
    }
}
