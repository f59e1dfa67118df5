//! The RDMA CM exchange of a connection (REQ from the requester, REP from the responder,
//! RTU), built as RoCEv2 frames through `rnic-wire`. rnic's hosts connect their QPs with
//! `modify_qp` and send no CM on the simulated wire yet; a network element that learns
//! connections from CM (the WAN accelerator) is handed these frames at setup, before any
//! traffic, and parses them as it would parse them on the wire.

use rnic_wire::cm::{cm_frame, ipv4_gid, CmMessage, CmRep, CmRepr, CmReq, CmRtu};
use rnic_wire::FrameAddr;

use super::element::Connection;
use super::topology::{ip_node, node_mac};

/// The CM exchange of `c`: REQ, REP, RTU.
pub fn cm_exchange(c: &Connection) -> [Vec<u8>; 3] {
    let mac = |ip: [u8; 4]| ip_node(ip).map_or([0; 6], node_mac);
    let addr = |from: [u8; 4], to: [u8; 4]| FrameAddr {
        src_mac: mac(from),
        dst_mac: mac(to),
        src_ip: from,
        dst_ip: to,
        udp_src_port: rnic_wire::udp_entropy_port(rnic_wire::cm::GSI_QPN, rnic_wire::cm::GSI_QPN),
        dscp_ecn: 0,
        ttl: 64,
    };
    // One transaction per connection; the communication ids name each side's QP.
    let tid = u64::from(c.requester_qpn) << 24 | u64::from(c.responder_qpn);
    let (req_id, rep_id) = (c.requester_qpn, c.responder_qpn);
    let req = CmRepr {
        transaction_id: tid,
        message: CmMessage::Req(CmReq {
            local_comm_id: req_id,
            local_qpn: c.requester_qpn,
            starting_psn: c.start_psn,
            pkey: 0xFFFF,
            path_mtu: 5,
            retry_count: 7,
            rnr_retry_count: 7,
            max_cm_retries: 15,
            local_gid: ipv4_gid(c.requester_ip),
            remote_gid: ipv4_gid(c.responder_ip),
            hop_limit: 64,
            ..CmReq::default()
        }),
    };
    let rep = CmRepr {
        transaction_id: tid,
        message: CmMessage::Rep(CmRep {
            local_comm_id: rep_id,
            remote_comm_id: req_id,
            local_qpn: c.responder_qpn,
            starting_psn: c.responder_start_psn,
            rnr_retry_count: 7,
            ..CmRep::default()
        }),
    };
    let rtu = CmRepr {
        transaction_id: tid,
        message: CmMessage::Rtu(CmRtu {
            local_comm_id: req_id,
            remote_comm_id: rep_id,
        }),
    };
    let mut out: [Vec<u8>; 3] = Default::default();
    cm_frame(
        addr(c.requester_ip, c.responder_ip),
        0,
        0,
        &req,
        &mut out[0],
    );
    cm_frame(
        addr(c.responder_ip, c.requester_ip),
        0,
        0,
        &rep,
        &mut out[1],
    );
    cm_frame(
        addr(c.requester_ip, c.responder_ip),
        1,
        1,
        &rtu,
        &mut out[2],
    );
    out
}
