//! Connecting the QP pairs: each pair's attributes, its starting PSNs, the reliability mode
//! and the service type, through verbs or (with `host.connect = "cm"`) the connection
//! managers.

use rnic_sim::Rng;
use rnic_transport::AddressVector;

use crate::config::Config;
use crate::flow::FlowSpec;
use crate::host::cm::modify::{to_init, to_rtr, to_rts, unreliable_up};
use crate::host::cm::ConnectionManager;
use crate::host::perftest::Pair;
use crate::net::addr::{node_ip, node_mac};
use crate::nic::Nic;
use crate::workload::QpProfile;

/// Brings flow `f`'s `pairs` up: through the RDMA CM when there is one (both QPs to INIT
/// now; the pair's client sends the REQ, as perftest's client calls rdma_connect), else
/// directly, each QP to RTS at build time.
pub(super) fn connect_pairs(
    cfg: &Config,
    seed: u64,
    f: &FlowSpec,
    pairs: &[Pair],
    nodes: &mut [(rnic_transport::PdId, Nic)],
    mut cm: Option<&mut ConnectionManager>,
) -> anyhow::Result<()> {
    for (i, pr) in pairs.iter().enumerate() {
        let prof = f.profile(cfg, i as u32);
        let c = pr.c_node as usize;
        let s = f.server as usize;
        match cm.as_deref_mut() {
            Some(cm) => {
                // A UD QP stays in RESET until its SIDR exchange brings it up at once.
                let ud = cfg.qp.transport == crate::config::Transport::Ud;
                if !ud {
                    to_init(&mut nodes[s].1.dev, s, pr.s_qpn)?;
                    to_init(&mut nodes[c].1.dev, c, pr.c_qpn)?;
                }
                cm.add_pair(
                    (c, pr.c_qpn, start_psn(cfg, seed, c, pr.c_qpn)),
                    (s, pr.s_qpn, start_psn(cfg, seed, s, pr.s_qpn)),
                    prof,
                    ud,
                );
            }
            None => {
                let (sq, cq) = ((s, pr.s_qpn), (c, pr.c_qpn));
                connect(nodes, cfg, &prof, seed, sq, cq)?;
                connect(nodes, cfg, &prof, seed, cq, sq)?;
            }
        }
    }
    Ok(())
}

/// The transport's reliability mode for a configured one; the out-of-order modes are sized
/// from the link, the PMTU and `[ooo]` (OTD, bitmap nodes, the requester's timeout of
/// RTT + OTD / B).
pub(super) fn reliability(
    r: crate::config::Reliability,
    cfg: &Config,
) -> rnic_transport::ReliabilityMode {
    use rnic_transport::{OooParams, ReliabilityMode};
    let params = || {
        let s = crate::nic::mech::ornic::sizing_of(cfg);
        let packet_ps = f64::from(cfg.qp.pmtu) * 8.0 / cfg.eth.gbps * 1000.0;
        OooParams {
            block_bits: s.block_bits,
            nodes: s.nodes,
            otd: s.otd,
            // One pool for the NIC's out-of-order QPs: `ooo.qps` × `ooo.pool_blocks_per_qp`
            // (the paper: 4096 for 2048 QPs).
            pool_blocks: s.pool_blocks,
            ack_turn_ps: (cfg.ooo.ack_turn_ns * 1000.0).round().max(1.0) as u64,
            timeout_ps: (cfg.ooo.rtt_ns * 1000.0 + f64::from(s.otd) * packet_ps).round() as u64,
            packet_ps: packet_ps.round() as u64,
        }
    };
    match r {
        crate::config::Reliability::Gbn => ReliabilityMode::GoBackN,
        crate::config::Reliability::Ornic => ReliabilityMode::Ornic(params()),
        crate::config::Reliability::MpRdma => ReliabilityMode::MpRdma(params()),
    }
}

/// The transport's service type for the configured `qp.transport`.
pub(super) fn service(t: crate::config::Transport) -> rnic_transport::ServiceType {
    match t {
        crate::config::Transport::Rc => rnic_transport::ServiceType::Rc,
        crate::config::Transport::Uc => rnic_transport::ServiceType::Uc,
        crate::config::Transport::Ud => rnic_transport::ServiceType::Ud,
    }
}

/// The fork of the run's seed that draws the QPs' first PSNs.
pub(super) const PSN_STREAM: u64 = 0x5053_4E00;

/// The first PSN QP `qpn` of `node` sends from (`qp.start_psn`): 24 random bits drawn, as
/// rdma_cm and perftest draw them, from a stream of the run's seed of its own, so the
/// other random streams do not move; or a fixed PSN.
pub(crate) fn start_psn(cfg: &Config, seed: u64, node: usize, qpn: u32) -> u32 {
    match cfg.qp.start_psn {
        crate::config::StartPsn::Zero => 0,
        crate::config::StartPsn::NearWrap => 0x00FF_FF00,
        crate::config::StartPsn::Random => {
            let id = ((node as u64) << 32) | u64::from(qpn);
            Rng::new(seed).fork(PSN_STREAM).fork(id).next_u32() & 0x00FF_FFFF
        }
    }
}

/// Takes QP `qpn` of node `a` to RTS with the attributes of `profile`, connected to `rqpn`
/// on node `b` (`host.connect = "direct"`: modify_qp at build time, nothing on the wire);
/// each sends from its [`start_psn`].
pub(super) fn connect(
    nodes: &mut [(rnic_transport::PdId, Nic)],
    cfg: &Config,
    profile: &QpProfile,
    seed: u64,
    (a, qpn): (usize, u32),
    (b, rqpn): (usize, u32),
) -> anyhow::Result<()> {
    let (sq_psn, rq_psn) = (start_psn(cfg, seed, a, qpn), start_psn(cfg, seed, b, rqpn));
    let dev = &mut nodes[a].1.dev;
    let qc = &cfg.qp;
    if qc.transport != crate::config::Transport::Rc {
        let av = AddressVector {
            dscp_ecn: qc.traffic_class,
            ttl: qc.hop_limit,
            ..AddressVector::new(node_mac(b), node_ip(b))
        };
        let qkey = rnic_transport::service::DEFAULT_QKEY;
        let service = service(qc.transport);
        return unreliable_up(dev, service, profile, qpn, av, rqpn, (sq_psn, rq_psn), qkey)
            .map_err(|(what, x)| anyhow::anyhow!("modify_qp {what} (node {a}, QP {qpn}): {x:?}"));
    }
    to_init(dev, a, qpn)?;
    to_rtr(dev, qc, profile, a, qpn, b, rqpn, rq_psn)?;
    to_rts(dev, qc, profile, a, qpn, sq_psn)
}
