//! QP creation parameters, modify_qp attributes and their ranges.

use crate::cq::CqId;
use crate::error::VerbsError;
use crate::mr::Access;
use crate::pd::PdId;
use crate::psn::PSN_MASK;

use super::state::QpState;

/// Parameters of create_qp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpInit {
    pub pd: PdId,
    pub send_cq: CqId,
    pub recv_cq: CqId,
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
}

/// Where the QP's packets go: the peer's addresses and the per-QP IP/UDP fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddressVector {
    pub dest_mac: [u8; 6],
    pub dest_ip: [u8; 4],
    /// UDP source port (ECMP entropy); `None` = `udp_entropy_port(local qpn, remote qpn)`.
    pub udp_src_port: Option<u16>,
    /// IPv4 DSCP (bits 7-2) and ECN (bits 1-0). Default 0x02: ECT(0), so switches may mark
    /// congestion instead of dropping, as RoCEv2 NICs do.
    pub dscp_ecn: u8,
    pub ttl: u8,
}

impl AddressVector {
    /// Peer at `dest_mac`/`dest_ip`, entropy source port, ECT(0), TTL 64.
    pub fn new(dest_mac: [u8; 6], dest_ip: [u8; 4]) -> AddressVector {
        AddressVector {
            dest_mac,
            dest_ip,
            udp_src_port: None,
            dscp_ecn: 0x02,
            ttl: 64,
        }
    }
}

impl Default for AddressVector {
    fn default() -> AddressVector {
        AddressVector::new([0; 6], [0; 4])
    }
}

/// Attributes of modify_qp: the target state and, per attribute, `Some` when it is given
/// (the IB attribute mask). Which ones each transition requires or accepts is the IB table in
/// (`qp/transition.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QpAttr {
    pub state: QpState,
    /// Physical port; must be 1.
    pub port: Option<u8>,
    /// P_Key value (this device has no P_Key table; 0xFFFF is the default full member).
    pub pkey: Option<u16>,
    /// Remote operations the responder allows (REMOTE_WRITE / REMOTE_READ / REMOTE_ATOMIC).
    pub access: Option<Access>,
    /// Path MTU in bytes: 256, 512, 1024, 2048 or 4096.
    pub path_mtu: Option<u32>,
    pub dest_qp_num: Option<u32>,
    /// First PSN the responder expects.
    pub rq_psn: Option<u32>,
    /// READs/atomics the responder keeps for duplicate replay (0..=128).
    pub max_dest_rd_atomic: Option<u8>,
    /// RNR timer code (0..=31) sent in RNR NAKs.
    pub min_rnr_timer: Option<u8>,
    pub av: Option<AddressVector>,
    /// First PSN the requester sends.
    pub sq_psn: Option<u32>,
    /// Local ACK timeout code: 4.096 µs × 2^timeout, 0 = infinite (0..=31).
    pub timeout: Option<u8>,
    /// Retries after timeouts and sequence errors (0..=7).
    pub retry_cnt: Option<u8>,
    /// Retries after RNR NAKs (0..=7, 7 = infinite).
    pub rnr_retry: Option<u8>,
    /// READs/atomics the requester keeps outstanding (0..=128).
    pub max_rd_atomic: Option<u8>,
    /// Vendor attribute: the requester's packet window, PSNs it may have sent and not yet
    /// had acknowledged (1..=`crate::MAX_OUTSTANDING_PSNS`; the queue depth some NICs
    /// let users configure). Default: the whole half of the PSN space.
    pub max_outstanding_psns: Option<u32>,
    /// Vendor attribute: inside a long message the requester sets AckReq on every this
    /// many packets (1..=2^23; default 16, as rxe); the last packet of a message and every
    /// READ and atomic always ask.
    pub ack_req_every: Option<u32>,
    /// UD QPs: the Q_Key a received datagram must carry, and the one this QP's datagrams
    /// carry (RESET -> INIT requires it for UD; RC and UC refuse it).
    pub qkey: Option<u32>,
}

/// Upper bound of max_rd_atomic / max_dest_rd_atomic (Linux rxe's RXE_MAX_QP_RD_ATOM).
pub const MAX_RD_ATOMIC: u8 = 128;

impl QpAttr {
    /// RESET -> INIT: port 1, default P_Key, the given remote access.
    pub fn to_init(access: Access) -> QpAttr {
        QpAttr {
            state: QpState::Init,
            port: Some(1),
            pkey: Some(0xFFFF),
            access: Some(access),
            ..QpAttr::default()
        }
    }

    /// INIT -> RTR with common defaults: 16 READ/atomic resources, RNR timer code 12
    /// (0.64 ms).
    pub fn to_rtr(av: AddressVector, path_mtu: u32, dest_qp_num: u32, rq_psn: u32) -> QpAttr {
        QpAttr {
            state: QpState::Rtr,
            av: Some(av),
            path_mtu: Some(path_mtu),
            dest_qp_num: Some(dest_qp_num),
            rq_psn: Some(rq_psn),
            max_dest_rd_atomic: Some(16),
            min_rnr_timer: Some(12),
            ..QpAttr::default()
        }
    }

    /// RTR -> RTS with common defaults: timeout code 14 (67 ms), retry_cnt 7, rnr_retry 7
    /// (infinite), 16 outstanding READs/atomics.
    pub fn to_rts(sq_psn: u32) -> QpAttr {
        QpAttr {
            state: QpState::Rts,
            sq_psn: Some(sq_psn),
            timeout: Some(14),
            retry_cnt: Some(7),
            rnr_retry: Some(7),
            max_rd_atomic: Some(16),
            ..QpAttr::default()
        }
    }

    /// The attribute mask: which attributes are given.
    pub(crate) fn mask(&self) -> AttrMask {
        let mut m = AttrMask::EMPTY;
        let flags = [
            (self.port.is_some(), AttrMask::PORT),
            (self.pkey.is_some(), AttrMask::PKEY),
            (self.access.is_some(), AttrMask::ACCESS),
            (self.path_mtu.is_some(), AttrMask::PATH_MTU),
            (self.dest_qp_num.is_some(), AttrMask::DEST_QPN),
            (self.rq_psn.is_some(), AttrMask::RQ_PSN),
            (
                self.max_dest_rd_atomic.is_some(),
                AttrMask::MAX_DEST_RD_ATOMIC,
            ),
            (self.min_rnr_timer.is_some(), AttrMask::MIN_RNR_TIMER),
            (self.av.is_some(), AttrMask::AV),
            (self.sq_psn.is_some(), AttrMask::SQ_PSN),
            (self.timeout.is_some(), AttrMask::TIMEOUT),
            (self.retry_cnt.is_some(), AttrMask::RETRY_CNT),
            (self.rnr_retry.is_some(), AttrMask::RNR_RETRY),
            (self.max_rd_atomic.is_some(), AttrMask::MAX_RD_ATOMIC),
            (
                self.max_outstanding_psns.is_some(),
                AttrMask::MAX_OUTSTANDING_PSNS,
            ),
            (self.ack_req_every.is_some(), AttrMask::ACK_REQ_EVERY),
            (self.qkey.is_some(), AttrMask::QKEY),
        ];
        for (given, bit) in flags {
            if given {
                m = m.union(bit);
            }
        }
        m
    }

    /// Checks the range of every given attribute.
    pub(crate) fn validate_ranges(&self) -> Result<(), VerbsError> {
        fn check(
            attr: &'static str,
            value: Option<u64>,
            ok: fn(u64) -> bool,
            range: &'static str,
        ) -> Result<(), VerbsError> {
            match value {
                Some(v) if !ok(v) => Err(VerbsError::AttrOutOfRange {
                    attr,
                    value: v,
                    range,
                }),
                _ => Ok(()),
            }
        }
        let u = |v: Option<u8>| v.map(u64::from);
        check("port", u(self.port), |v| v == 1, "1")?;
        check(
            "pkey",
            self.pkey.map(u64::from),
            |v| v & 0x7FFF != 0,
            "a P_Key with a non-zero low 15 bits",
        )?;
        check(
            "path_mtu",
            self.path_mtu.map(u64::from),
            |v| matches!(v, 256 | 512 | 1024 | 2048 | 4096),
            "256, 512, 1024, 2048 or 4096",
        )?;
        check(
            "dest_qp_num",
            self.dest_qp_num.map(u64::from),
            |v| v <= u64::from(PSN_MASK),
            "0..=0xFFFFFF",
        )?;
        check(
            "rq_psn",
            self.rq_psn.map(u64::from),
            |v| v <= u64::from(PSN_MASK),
            "0..=0xFFFFFF",
        )?;
        check(
            "sq_psn",
            self.sq_psn.map(u64::from),
            |v| v <= u64::from(PSN_MASK),
            "0..=0xFFFFFF",
        )?;
        check(
            "max_dest_rd_atomic",
            u(self.max_dest_rd_atomic),
            |v| v <= u64::from(MAX_RD_ATOMIC),
            "0..=128",
        )?;
        check(
            "max_rd_atomic",
            u(self.max_rd_atomic),
            |v| v <= u64::from(MAX_RD_ATOMIC),
            "0..=128",
        )?;
        check(
            "min_rnr_timer",
            u(self.min_rnr_timer),
            |v| v <= 31,
            "0..=31",
        )?;
        check("timeout", u(self.timeout), |v| v <= 31, "0..=31")?;
        check("retry_cnt", u(self.retry_cnt), |v| v <= 7, "0..=7")?;
        check(
            "max_outstanding_psns",
            self.max_outstanding_psns.map(u64::from),
            |v| v >= 1 && v <= u64::from(crate::requester::state::MAX_OUTSTANDING_PSNS),
            "1..=8388607",
        )?;
        check(
            "ack_req_every",
            self.ack_req_every.map(u64::from),
            |v| (1..=1 << 23).contains(&v),
            "1..=8388608",
        )?;
        check(
            "rnr_retry",
            u(self.rnr_retry),
            |v| v <= 7,
            "0..=7 (7 = infinite)",
        )?;
        Ok(())
    }
}

/// Bit set of modify_qp attributes (the IB attribute mask, for the attributes RC uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AttrMask(u32);

impl AttrMask {
    pub const EMPTY: AttrMask = AttrMask(0);
    pub const PORT: AttrMask = AttrMask(1 << 0);
    pub const PKEY: AttrMask = AttrMask(1 << 1);
    pub const ACCESS: AttrMask = AttrMask(1 << 2);
    pub const PATH_MTU: AttrMask = AttrMask(1 << 3);
    pub const DEST_QPN: AttrMask = AttrMask(1 << 4);
    pub const RQ_PSN: AttrMask = AttrMask(1 << 5);
    pub const MAX_DEST_RD_ATOMIC: AttrMask = AttrMask(1 << 6);
    pub const MIN_RNR_TIMER: AttrMask = AttrMask(1 << 7);
    pub const AV: AttrMask = AttrMask(1 << 8);
    pub const SQ_PSN: AttrMask = AttrMask(1 << 9);
    pub const TIMEOUT: AttrMask = AttrMask(1 << 10);
    pub const RETRY_CNT: AttrMask = AttrMask(1 << 11);
    pub const RNR_RETRY: AttrMask = AttrMask(1 << 12);
    pub const MAX_RD_ATOMIC: AttrMask = AttrMask(1 << 13);
    pub const MAX_OUTSTANDING_PSNS: AttrMask = AttrMask(1 << 14);
    pub const ACK_REQ_EVERY: AttrMask = AttrMask(1 << 15);
    /// UD only: the QP's Q_Key.
    pub const QKEY: AttrMask = AttrMask(1 << 16);

    const NAMES: [&'static str; 17] = [
        "port",
        "pkey",
        "access",
        "path_mtu",
        "dest_qp_num",
        "rq_psn",
        "max_dest_rd_atomic",
        "min_rnr_timer",
        "av",
        "sq_psn",
        "timeout",
        "retry_cnt",
        "rnr_retry",
        "max_rd_atomic",
        "max_outstanding_psns",
        "ack_req_every",
        "qkey",
    ];

    pub const fn union(self, other: AttrMask) -> AttrMask {
        AttrMask(self.0 | other.0)
    }

    /// Bits of `self` not in `other`.
    pub const fn minus(self, other: AttrMask) -> AttrMask {
        AttrMask(self.0 & !other.0)
    }

    /// Name of the lowest attribute in the set.
    pub fn first_name(self) -> Option<&'static str> {
        if self.0 == 0 {
            return None;
        }
        Self::NAMES.get(self.0.trailing_zeros() as usize).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_name_the_attribute() {
        let bad = QpAttr {
            path_mtu: Some(1500),
            ..QpAttr::default()
        };
        assert_eq!(
            bad.validate_ranges(),
            Err(VerbsError::AttrOutOfRange {
                attr: "path_mtu",
                value: 1500,
                range: "256, 512, 1024, 2048 or 4096"
            })
        );
        let bad = QpAttr {
            retry_cnt: Some(8),
            ..QpAttr::default()
        };
        assert!(matches!(
            bad.validate_ranges(),
            Err(VerbsError::AttrOutOfRange {
                attr: "retry_cnt",
                ..
            })
        ));
        let bad = QpAttr {
            rq_psn: Some(1 << 24),
            ..QpAttr::default()
        };
        assert!(matches!(
            bad.validate_ranges(),
            Err(VerbsError::AttrOutOfRange { attr: "rq_psn", .. })
        ));
        assert!(QpAttr::to_rts(5).validate_ranges().is_ok());
        let e = format!(
            "{}",
            QpAttr {
                rnr_retry: Some(9),
                ..QpAttr::default()
            }
            .validate_ranges()
            .unwrap_err()
        );
        assert!(e.contains("rnr_retry") && e.contains("0..=7"), "{e}");
    }

    #[test]
    fn mask_names() {
        let m = QpAttr::to_init(Access::empty()).mask();
        assert_eq!(
            m,
            AttrMask::PORT.union(AttrMask::PKEY).union(AttrMask::ACCESS)
        );
        assert_eq!(m.minus(AttrMask::PORT).first_name(), Some("pkey"));
        assert_eq!(AttrMask::EMPTY.first_name(), None);
        assert_eq!(AttrMask::MAX_RD_ATOMIC.first_name(), Some("max_rd_atomic"));
    }
}
