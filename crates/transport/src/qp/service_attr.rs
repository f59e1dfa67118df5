//! The modify_qp attributes of a service's connection steps: what every caller that
//! brings a UC or UD QP up would otherwise spell out field by field, and get wrong one
//! field at a time (the unreliable transitions refuse the RC attributes).

use super::attr::{AddressVector, QpAttr};
use crate::mr::Access;
use crate::service::ServiceType;

impl QpAttr {
    /// RESET -> INIT for `service`: RC and UC as [`QpAttr::to_init`] with `access`; UD
    /// carries the Q_Key `qkey` instead of access rights (UD has no remote operations, its
    /// transition refuses them). `qkey` is ignored for RC and UC.
    pub fn init_for(service: ServiceType, access: Access, qkey: u32) -> QpAttr {
        let rc_init = QpAttr::to_init(access);
        match service {
            ServiceType::Rc | ServiceType::Uc => rc_init,
            ServiceType::Ud => QpAttr {
                access: None,
                qkey: Some(qkey),
                ..rc_init
            },
        }
    }

    /// INIT -> RTR for `service`: RC as [`QpAttr::to_rtr`]; UC the path and receive PSN
    /// only (no READ resources, no RNR timer: UC has neither); UD the path as its one
    /// address handle, without a receive PSN (datagrams are not sequenced).
    pub fn rtr_for(
        service: ServiceType,
        av: AddressVector,
        path_mtu: u32,
        dest_qp_num: u32,
        rq_psn: u32,
    ) -> QpAttr {
        let rc_rtr = QpAttr::to_rtr(av, path_mtu, dest_qp_num, rq_psn);
        if service == ServiceType::Rc {
            return rc_rtr;
        }
        QpAttr {
            max_dest_rd_atomic: None,
            min_rnr_timer: None,
            rq_psn: (service == ServiceType::Uc).then_some(rq_psn),
            ..rc_rtr
        }
    }

    /// RTR -> RTS for `service`: RC as [`QpAttr::to_rts`]; UC and UD the send PSN only
    /// (no ACK timer, retries or READ resources).
    pub fn rts_for(service: ServiceType, sq_psn: u32) -> QpAttr {
        let rc_rts = QpAttr::to_rts(sq_psn);
        if service == ServiceType::Rc {
            return rc_rts;
        }
        QpAttr {
            timeout: None,
            retry_cnt: None,
            rnr_retry: None,
            max_rd_atomic: None,
            ..rc_rts
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qp::QpState;

    /// Every step's attribute set is one the service's transition accepts: all required
    /// attributes given, nothing outside required + optional.
    #[test]
    fn each_service_step_gives_what_its_transition_takes() {
        let av = AddressVector::new([2, 0, 0, 0, 0, 1], [10, 0, 0, 1]);
        for service in [ServiceType::Rc, ServiceType::Uc, ServiceType::Ud] {
            let steps = [
                (QpState::Reset, QpAttr::init_for(service, Access::all(), 7)),
                (QpState::Init, QpAttr::rtr_for(service, av, 1024, 9, 100)),
                (QpState::Rtr, QpAttr::rts_for(service, 200)),
            ];
            for (from, attr) in steps {
                let (required, optional) = service.rules(from, attr.state).unwrap();
                let given = attr.mask();
                let missing = required.minus(given).first_name();
                assert_eq!(missing, None, "{service:?} {from:?} lacks it");
                let extra = given.minus(required.union(optional)).first_name();
                assert_eq!(extra, None, "{service:?} {from:?} gives it");
            }
        }
    }

    #[test]
    fn rc_steps_are_the_rc_defaults_and_ud_carries_its_qkey() {
        let av = AddressVector::default();
        let rc = ServiceType::Rc;
        assert_eq!(
            QpAttr::init_for(rc, Access::all(), 7),
            QpAttr::to_init(Access::all())
        );
        assert_eq!(
            QpAttr::rtr_for(rc, av, 1024, 9, 1),
            QpAttr::to_rtr(av, 1024, 9, 1)
        );
        assert_eq!(QpAttr::rts_for(rc, 5), QpAttr::to_rts(5));
        let ud = QpAttr::init_for(ServiceType::Ud, Access::all(), 7);
        assert_eq!((ud.qkey, ud.access), (Some(7), None));
        assert_eq!(
            QpAttr::rtr_for(ServiceType::Ud, av, 1024, 9, 1).rq_psn,
            None
        );
    }
}
