//! Service ID resolution (IBA Vol. 1 §12.11), what rdma_cm does for a UD QP (perftest's
//! `-c UD -R`): the client sends a SIDR_REQ to QP1 of the server's host, the server's CM
//! answers with a SIDR_REP carrying the QPN of the UD QP that serves the request and the
//! Q_Key its senders use. There is no RTU: the server's end is up once its REP is sent, the
//! client's once the REP arrives. A SIDR_REQ unanswered after the CM response timeout is
//! sent again (at most `max_retries` times, then the connection fails); the server answers
//! a repeated SIDR_REQ with its SIDR_REP again (the first was lost or is late).
//!
//! Each UD QP goes from RESET to RTS at once when its side of the exchange is done ([`Action::UdUp`]),
//! as rdma_cm brings a UD QP up when it is created: the server's toward the client's QP,
//! the client's toward the QP the REP names. The SIDR_REQ's private data carries the
//! connection's number between the two hosts (as the REQ's does) and the client's QPN,
//! which the server's QP needs as its address handle's QP (perftest's client sends it in a
//! SEND with immediate after the exchange; here it crosses in the request).

use rnic_sim::TimePs;
use rnic_wire::cm::{
    CmMessage, CmRepr, CmSidrRep, CmSidrReq, SIDR_REQ_PRIVATE_DATA_LEN, SIDR_STATUS_SUCCESS,
    SIDR_STATUS_UNSUPPORTED_ID,
};
use rnic_wire::cma::{ip_service_id, PORT_SPACE_UDP, UDP_QKEY};

use super::{cma_field, put_cma_private, Action, Agent, State, PORT};

/// The connection number and the client's QPN in a SIDR_REQ's private data, after
/// rdma_cm's header.
fn private_fields(r: &CmSidrReq) -> (u32, u32) {
    (cma_field(&r.private_data, 0), cma_field(&r.private_data, 1))
}

impl Agent {
    /// Client connection `conn`'s SIDR_REQ.
    pub(super) fn sidr_req(&self, conn: usize) -> CmRepr {
        let c = &self.conns[conn];
        let mut private_data = [0u8; SIDR_REQ_PRIVATE_DATA_LEN];
        let (index, ip) = (c.spec.index, self.params.ip);
        let fields = [index, c.spec.local_qpn];
        put_cma_private(&mut private_data, ip, c.spec.peer_ip, index, &fields);
        CmRepr {
            transaction_id: c.tid,
            message: CmMessage::SidrReq(CmSidrReq {
                request_id: self.comm_id(conn),
                pkey: 0xFFFF,
                service_id: ip_service_id(PORT_SPACE_UDP, PORT),
                private_data,
            }),
        }
    }

    /// A SIDR_REQ from `src`: the server binds the UD QP it prepared for the connection,
    /// brings it up toward the client's QP and answers (again, for a repeated request).
    pub(super) fn on_sidr_req(
        &mut self,
        now: TimePs,
        src: [u8; 4],
        tid: u64,
        r: &CmSidrReq,
        out: &mut Vec<Action>,
    ) {
        let (index, client_qpn) = private_fields(r);
        let conn = match self.listen.get(&(src, index)) {
            Some(&conn) if self.settled.is_none() && self.conns[conn].spec.sidr => conn,
            // Not ours, or late: every connection of the run is established.
            _ => {
                self.ignored += 1;
                return;
            }
        };
        let c = &mut self.conns[conn];
        let first = c.state == State::Idle;
        if first {
            c.tid = tid;
            c.remote_comm_id = r.request_id;
            c.state = State::Established;
            out.push(Action::UdUp {
                conn,
                remote_qpn: client_qpn,
                qkey: UDP_QKEY,
            });
        } else {
            self.resent += 1;
        }
        let rep = CmRepr {
            transaction_id: tid,
            message: CmMessage::SidrRep(CmSidrRep {
                request_id: r.request_id,
                status: SIDR_STATUS_SUCCESS,
                qpn: self.conns[conn].spec.local_qpn,
                service_id: r.service_id,
                qkey: UDP_QKEY,
            }),
        };
        self.send(now, conn, rep, false, out);
        if first {
            out.push(Action::Established {
                at: self.busy_until,
                conn,
            });
        }
    }

    /// A SIDR_REP: the client's request is answered; on success its QP comes up toward the
    /// QP and Q_Key the reply names, otherwise the connection fails with the status.
    pub(super) fn on_sidr_rep(&mut self, now: TimePs, r: &CmSidrRep, out: &mut Vec<Action>) {
        let conn = match self.by_comm_id(r.request_id) {
            Some(conn)
                if self.settled.is_none()
                    && self.conns[conn].spec.sidr
                    && self.conns[conn].state == State::ReqSent =>
            {
                conn
            }
            // A repeated REP (the request went twice), or not ours.
            _ => {
                self.ignored += 1;
                return;
            }
        };
        let c = &mut self.conns[conn];
        c.deadline = None;
        if r.status != SIDR_STATUS_SUCCESS {
            let reason = format!(
                "the SIDR_REP for QP {:#x} (connection {} with {}) has status {} (not 0, \
                 success)",
                c.spec.local_qpn,
                c.spec.index,
                std::net::Ipv4Addr::from(c.spec.peer_ip),
                r.status
            );
            if r.status == SIDR_STATUS_UNSUPPORTED_ID {
                // The state stays ReqSent, so that `rejected` readies a new request.
                out.push(Action::NotListening { conn, reason });
                return;
            }
            c.state = State::Failed;
            out.push(Action::Failed {
                conn,
                reason,
                unanswered: false,
            });
            return;
        }
        c.state = State::Established;
        out.push(Action::UdUp {
            conn,
            remote_qpn: r.qpn,
            qkey: r.qkey,
        });
        out.push(Action::Established { at: now, conn });
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{params, sent, timer_due};
    use super::super::{ConnSpec, Params};
    use super::*;

    const C: [u8; 4] = [10, 0, 0, 2];
    const S: [u8; 4] = [10, 0, 0, 1];

    fn agent(ip: [u8; 4], qpn: u32, active: bool) -> Agent {
        let mut a = Agent::new(Params {
            max_retries: 1,
            ..params(ip)
        });
        a.add(ConnSpec {
            local_qpn: qpn,
            rq_psn: 0,
            peer_ip: if active { S } else { C },
            index: 0,
            active,
            sidr: true,
        });
        a
    }

    #[test]
    fn sidr_req_and_rep_bring_both_ud_qps_up_toward_each_other() {
        let (mut c, mut s) = (agent(C, 0x21, true), agent(S, 0x41, false));
        let mut out = Vec::new();
        c.connect(0, 0, &mut out);
        let req = sent(&out)[0];
        assert!(matches!(req.message, CmMessage::SidrReq(_)), "{req:?}");
        out.clear();
        s.handle(5_000_000, C, &req, &mut out);
        assert!(out.contains(&Action::UdUp {
            conn: 0,
            remote_qpn: 0x21,
            qkey: UDP_QKEY
        }));
        assert_eq!(s.state(0), State::Established);
        let rep = sent(&out)[0];
        let CmMessage::SidrRep(r) = rep.message else {
            panic!("a SIDR_REP: {rep:?}")
        };
        assert_eq!((r.qpn, r.qkey, r.status), (0x41, UDP_QKEY, 0));
        // The repeated request (its REP was lost) is answered again, once more up.
        out.clear();
        s.handle(6_000_000, C, &req, &mut out);
        assert_eq!(sent(&out), vec![rep]);
        assert!(!out.iter().any(|a| matches!(a, Action::UdUp { .. })));
        out.clear();
        c.handle(9_000_000, S, &rep, &mut out);
        assert!(out.contains(&Action::UdUp {
            conn: 0,
            remote_qpn: 0x41,
            qkey: UDP_QKEY
        }));
        assert_eq!(c.state(0), State::Established);
        // A repeated REP changes nothing.
        out.clear();
        c.handle(9_500_000, S, &rep, &mut out);
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(c.ignored, 1);
    }

    #[test]
    fn an_unanswered_sidr_req_is_resent_then_fails_and_a_bad_status_fails() {
        let mut c = agent(C, 0x21, true);
        let mut out = Vec::new();
        c.connect(0, 0, &mut out);
        let due = timer_due;
        let t = due(&out);
        out.clear();
        c.on_timer(t, 0, &mut out);
        assert!(matches!(sent(&out)[0].message, CmMessage::SidrReq(_)));
        let t = due(&out);
        out.clear();
        c.on_timer(t, 0, &mut out);
        let Some(Action::Failed { reason, .. }) = out.first() else {
            panic!("{out:?}")
        };
        assert!(
            reason.contains("no SIDR_REP") && reason.contains("2 SIDR_REQs"),
            "{reason}"
        );

        let mut c = agent(C, 0x21, true);
        out.clear();
        c.connect(0, 0, &mut out);
        let rep = |status| CmRepr {
            transaction_id: sent(&out)[0].transaction_id,
            message: CmMessage::SidrRep(CmSidrRep {
                request_id: 1,
                status,
                ..CmSidrRep::default()
            }),
        };
        let (not_yet, refused) = (rep(1), rep(2));
        out.clear();
        // Status 1: nothing listens yet; asked again once `rejected` readies it.
        c.handle(1, S, &not_yet, &mut out);
        let Some(Action::NotListening { reason, .. }) = out.first() else {
            panic!("{out:?}")
        };
        assert!(reason.contains("status 1"), "{reason}");
        c.rejected(0);
        out.clear();
        c.connect(2, 0, &mut out);
        assert!(
            matches!(sent(&out)[0].message, CmMessage::SidrReq(_)),
            "{out:?}"
        );
        // Status 2: refused for good.
        out.clear();
        c.handle(3, S, &refused, &mut out);
        let Some(Action::Failed {
            reason,
            unanswered: false,
            ..
        }) = out.first()
        else {
            panic!("{out:?}")
        };
        assert!(reason.contains("status 2"), "{reason}");
    }
}
