//! The modify_qp calls that connect a QP, shared by both ways of connecting
//! (`host.connect`): "direct" makes all three at build time, "cm" makes INIT at build time
//! and RTR and RTS when the connection manager's MADs say so.

use rnic_transport::{Access, AddressVector, Device, QpAttr, ServiceType};

use crate::config::QpConfig;
use crate::net::addr::{node_ip, node_mac};
use crate::workload::QpProfile;

fn err(what: &str, node: usize, qpn: u32, e: rnic_transport::VerbsError) -> anyhow::Error {
    anyhow::anyhow!("modify_qp {what} (node {node}, QP {qpn}): {e:?}")
}

/// RESET → INIT.
pub(crate) fn to_init(dev: &mut Device, node: usize, qpn: u32) -> anyhow::Result<()> {
    dev.modify_qp(qpn, &QpAttr::to_init(Access::all()))
        .map_err(|e| err("INIT", node, qpn, e))
}

/// INIT → RTR toward QP `rqpn` of node `peer`, whose first PSN is `rq_psn`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn to_rtr(
    dev: &mut Device,
    qc: &QpConfig,
    profile: &QpProfile,
    node: usize,
    qpn: u32,
    peer: usize,
    rqpn: u32,
    rq_psn: u32,
) -> anyhow::Result<()> {
    let av = AddressVector {
        dscp_ecn: qc.traffic_class,
        ttl: qc.hop_limit,
        ..AddressVector::new(node_mac(peer), node_ip(peer))
    };
    let mut rtr = QpAttr::to_rtr(av, profile.pmtu, rqpn, rq_psn);
    rtr.max_dest_rd_atomic = Some(qc.max_rd_atomic);
    rtr.min_rnr_timer = Some(qc.min_rnr_timer);
    dev.modify_qp(qpn, &rtr)
        .map_err(|e| err("RTR", node, qpn, e))
}

/// RTR → RTS, sending from PSN `sq_psn`.
pub(crate) fn to_rts(
    dev: &mut Device,
    qc: &QpConfig,
    profile: &QpProfile,
    node: usize,
    qpn: u32,
    sq_psn: u32,
) -> anyhow::Result<()> {
    let mut rts = QpAttr::to_rts(sq_psn);
    rts.timeout = Some(qc.timeout);
    rts.retry_cnt = Some(qc.retry_cnt);
    rts.rnr_retry = Some(qc.rnr_retry);
    rts.max_rd_atomic = Some(qc.max_rd_atomic);
    rts.max_outstanding_psns = Some(profile.window_psns);
    rts.ack_req_every = Some(profile.ack_req_every);
    dev.modify_qp(qpn, &rts)
        .map_err(|e| err("RTS", node, qpn, e))
}

/// UC and UD QPs to RTS with the attributes their transitions take (no ACK timer,
/// retries or READ resources; UD: the Q_Key `qkey` and the peer as the QP's one address
/// handle).
#[allow(clippy::too_many_arguments)]
pub(crate) fn unreliable_up(
    dev: &mut Device,
    service: ServiceType,
    profile: &QpProfile,
    qpn: u32,
    av: AddressVector,
    rqpn: u32,
    (sq_psn, rq_psn): (u32, u32),
    qkey: u32,
) -> Result<(), (&'static str, rnic_transport::VerbsError)> {
    let init = QpAttr::init_for(service, Access::all(), qkey);
    dev.modify_qp(qpn, &init).map_err(|x| ("INIT", x))?;
    let rtr = QpAttr::rtr_for(service, av, profile.pmtu, rqpn, rq_psn);
    dev.modify_qp(qpn, &rtr).map_err(|x| ("RTR", x))?;
    let rts = QpAttr::rts_for(service, sq_psn);
    dev.modify_qp(qpn, &rts).map_err(|x| ("RTS", x))?;
    Ok(())
}

/// A UD QP (`node`'s `qpn`, in RESET) to RTS as its SIDR exchange says: toward QP
/// `remote.1` of node `remote.0` with Q_Key `qkey`, sending from `psns.0`.
pub(crate) fn ud_up(
    dev: &mut Device,
    qc: &QpConfig,
    profile: &QpProfile,
    (node, qpn): (usize, u32),
    remote: (usize, u32),
    qkey: u32,
    psns: (u32, u32),
) -> anyhow::Result<()> {
    let av = AddressVector {
        dscp_ecn: qc.traffic_class,
        ttl: qc.hop_limit,
        ..AddressVector::new(node_mac(remote.0), node_ip(remote.0))
    };
    unreliable_up(dev, ServiceType::Ud, profile, qpn, av, remote.1, psns, qkey)
        .map_err(|(what, e)| err(what, node, qpn, e))
}
