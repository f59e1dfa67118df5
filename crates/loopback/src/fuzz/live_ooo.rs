//! Fuzzing live out-of-order QPs (ORNIC, MP-RDMA) with well-formed but hostile packets.
//!
//! Two connected out-of-order QPs carry real OOO WRITE WQEs while forged frames are injected
//! at both ends: mostly the out-of-order opcodes (FSpot with addresses inside, at the edge of
//! and outside the registered region, right and wrong R_Keys; Spot and Last packets at PSNs
//! near and far from the WQE in flight, payloads of any length; ACKs and bitmap NAKs with
//! any PSN, flag and bitmap), the rest any opcode. Nothing may panic, and no byte outside a
//! registered region may be read or written.

use rnic_sim::Rng;
use rnic_transport::{
    MrKeys, OooParams, QpState, ReliabilityMode, RemoteAddr, SendWr, Sge, WrOpcode,
};
use rnic_wire::{OooAckEthRepr, Opcode};

use super::arena::{
    check_memory, dest_qp, emit_to, guarded_pair, hostile_psn, hostile_va, inject, payload_len,
    BASE, LEN, PMTU,
};
use crate::corpus::random_roce;
use crate::pair::{Pair, QpParams, A, B};

/// The out-of-order opcodes a forged frame mostly carries.
const OOO: [Opcode; 8] = [
    Opcode::OooWriteFspot,
    Opcode::OooWriteSpot,
    Opcode::OooWriteLastFspot,
    Opcode::OooWriteLast,
    Opcode::OooAck,
    Opcode::OooNak,
    Opcode::OooReadRequest,
    Opcode::OooReadResponse,
];

/// What a live out-of-order fuzzing run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveOooFuzzReport {
    pub inputs: u64,
    /// Frames the devices refused (counted by the harness).
    pub refused: u64,
    /// QP pairs connected because an earlier pair left RTS.
    pub reconnects: u64,
    pub real_ops_posted: u64,
    /// Real WRITE WQEs completed successfully.
    pub real_ops_completed: u64,
    pub frames_exchanged: u64,
}

/// Injects `inputs` hostile frames into QPs running `mode` (`mp_rdma`: MP-RDMA, else ORNIC).
/// `Err` names the first access outside a registered region or a guard byte that changed.
pub fn fuzz_live_ooo_qps(
    seed: u64,
    inputs: u64,
    mp_rdma: bool,
) -> Result<LiveOooFuzzReport, String> {
    let mut rng = Rng::new(seed);
    let (mut pair, keys) = guarded_pair(seed)?;
    // Short timers, so forged traffic meets every state: timeouts, turns, resends.
    let ooo = OooParams {
        ack_turn_ps: 2_000_000,
        timeout_ps: 20_000_000,
        ..OooParams::default()
    };
    let params = QpParams {
        pmtu: PMTU,
        reliability: if mp_rdma {
            ReliabilityMode::MpRdma(ooo)
        } else {
            ReliabilityMode::Ornic(ooo)
        },
        ..QpParams::default()
    };
    let mut qps = pair.connect(params).map_err(|e| e.to_string())?;
    let mut report = LiveOooFuzzReport::default();
    let mut frame = Vec::with_capacity(4200);
    let payload: Vec<u8> = (0..PMTU as usize + 64).map(|i| i as u8).collect();

    for _ in 0..inputs {
        report.inputs += 1;
        if rng.gen_bool(0.02) {
            post_write(&mut pair, &mut rng, qps, &keys);
            report.real_ops_posted += 1;
        }
        let dst = rng.gen_index(2);
        let dest_qp = dest_qp(&mut rng, dst, qps);
        let near = [pair.last_request_psn(B), pair.last_request_psn(A)];
        forge(&mut rng, &keys, dst, dest_qp, near, &payload, &mut frame);
        if inject(&mut pair, &mut rng, dst, &frame) {
            report.refused += 1;
        }
        report.real_ops_completed += count_done(&mut pair);
        let broken = |n: usize, q: u32| pair.nodes[n].dev.qp_state(q) != Some(QpState::Rts);
        if broken(A, qps.0) || broken(B, qps.1) {
            pair.run(pair.now_ps() + 200_000_000);
            report.real_ops_completed += count_done(&mut pair);
            let _ = pair.nodes[A].dev.destroy_qp(qps.0);
            let _ = pair.nodes[B].dev.destroy_qp(qps.1);
            qps = pair.connect(params).map_err(|e| e.to_string())?;
            report.reconnects += 1;
        }
    }
    pair.run(pair.now_ps() + 1_000_000_000);
    report.real_ops_completed += count_done(&mut pair);
    report.frames_exchanged = pair.frames_sent();
    report.refused += pair.nodes.iter().map(|n| n.rx_dropped).sum::<u64>();
    check_memory(&pair)?;
    Ok(report)
}

/// Successful completions polled from both nodes.
fn count_done(pair: &mut Pair) -> u64 {
    [A, B]
        .into_iter()
        .map(|n| {
            pair.completions(n)
                .iter()
                .filter(|c| c.status == rnic_transport::WcStatus::Success)
                .count() as u64
        })
        .sum()
}

/// A real OOO WRITE or READ, so requesters have a WQE in flight for forged ACKs, NAKs and
/// READ responses to hit.
fn post_write(pair: &mut Pair, rng: &mut Rng, qps: (u32, u32), keys: &[MrKeys]) {
    let from = rng.gen_index(2);
    let qpn = if from == A { qps.0 } else { qps.1 };
    let len = rng.gen_range(0..40 * u64::from(PMTU)) as u32;
    let off = rng.gen_range(0..LEN - 41 * u64::from(PMTU)) & !7;
    let wr = SendWr {
        wr_id: rng.next_u64(),
        opcode: if rng.gen_bool(0.5) {
            WrOpcode::Write
        } else {
            WrOpcode::Read
        },
        sgl: [Sge {
            addr: BASE + off,
            len,
            lkey: keys[from].lkey,
        }]
        .into(),
        signaled: true,
        remote: Some(RemoteAddr {
            va: BASE + off,
            rkey: keys[1 - from].rkey,
        }),
        ..SendWr::default()
    };
    // A full send queue or a QP in ERR refuses the post; that is the verbs answer.
    let _ = pair.post_send(from, qpn, wr);
}

/// A forged frame from the peer of `dst` to `dest_qp`, with hostile contents and a valid ICRC.
fn forge(
    rng: &mut Rng,
    keys: &[MrKeys],
    dst: usize,
    dest_qp: u32,
    near: [u32; 2],
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    let opcode = if rng.gen_bool(0.85) {
        OOO[rng.gen_index(OOO.len())]
    } else {
        Opcode::ALL[rng.gen_index(Opcode::ALL.len())]
    };
    let base = if opcode.is_request() {
        near[1 - dst].wrapping_add(1)
    } else {
        near[dst]
    };
    let psn = hostile_psn(rng, base, 80, 40);
    let plen = payload_len(rng, payload);
    let mut roce = random_roce(rng, opcode, dest_qp, psn, &payload[..plen]);
    if let Some(r) = roce.reth.as_mut() {
        r.va = hostile_va(rng);
        r.rkey = if rng.gen_bool(0.6) {
            keys[dst].rkey
        } else {
            rng.next_u32()
        };
        r.dma_len = rng.next_u32();
    }
    if opcode.has_ooo_ack_eth() {
        roce.ooo_ack = Some(OooAckEthRepr {
            start_learnt: rng.gen_bool(0.5),
            bitmap: match rng.gen_range(0..3) {
                0 => rng.next_u64(),
                1 => 1,
                _ => u64::MAX,
            },
        });
    }
    emit_to(dst, roce, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_attack_on_ornic_and_mp_rdma_qps_is_survived() {
        for mp in [false, true] {
            let r = fuzz_live_ooo_qps(5, 20_000, mp).unwrap();
            assert_eq!(r.inputs, 20_000);
            assert!(r.refused > 1_000, "{r:?}");
            assert!(r.real_ops_posted > 100, "{r:?}");
            assert!(r.frames_exchanged > 1_000, "real traffic must flow: {r:?}");
        }
    }
}
