//! Fuzzing live out-of-order QPs (ORNIC, MP-RDMA) with well-formed but hostile packets.
//!
//! Two connected out-of-order QPs carry real OOO WRITE WQEs while forged frames are injected
//! at both ends: mostly the out-of-order opcodes (FSpot with addresses inside, at the edge of
//! and outside the registered region, right and wrong R_Keys; Spot and Last packets at PSNs
//! near and far from the WQE in flight, payloads of any length; ACKs and bitmap NAKs with
//! any PSN, flag and bitmap), the rest any opcode. Nothing may panic, and no byte outside a
//! registered region may be read or written.

use rnic_sim::Rng;
use rnic_transport::{MrKeys, OooParams, ReliabilityMode, WrOpcode};
use rnic_wire::{OooAckEthRepr, Opcode};

use super::arena::{emit_to, hostile_psn, hostile_va, payload_len, LEN, PMTU};
use super::attack::{real_wr, run, Attack, Mode, Target};
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
    let mut mode = OutOfOrder {
        mp_rdma,
        completed: 0,
    };
    let c = run(seed, inputs, &mut mode)?;
    Ok(LiveOooFuzzReport {
        inputs: c.inputs,
        refused: c.refused,
        reconnects: c.reconnects,
        real_ops_posted: c.real_ops_posted,
        real_ops_completed: mode.completed,
        frames_exchanged: c.frames_exchanged,
    })
}

/// ORNIC (or MP-RDMA) QPs with short timers, so forged traffic meets every state: timeouts,
/// turns, resends; counting the real WQEs that complete.
struct OutOfOrder {
    mp_rdma: bool,
    completed: u64,
}

impl Mode for OutOfOrder {
    const POST_CHANCE: f64 = 0.02;

    fn connect(&mut self, pair: &mut Pair) -> Result<(u32, u32), String> {
        let ooo = OooParams {
            ack_turn_ps: 2_000_000,
            timeout_ps: 20_000_000,
            ..OooParams::default()
        };
        let params = QpParams {
            pmtu: PMTU,
            reliability: if self.mp_rdma {
                ReliabilityMode::MpRdma(ooo)
            } else {
                ReliabilityMode::Ornic(ooo)
            },
            ..QpParams::default()
        };
        pair.connect(params).map_err(|e| e.to_string())
    }

    fn post_real_op(&mut self, at: &mut Attack, qps: (u32, u32)) {
        post_write(&mut at.pair, &mut at.rng, qps, &at.keys);
    }

    fn forge(&mut self, at: &mut Attack, t: Target) {
        forge(at, t);
    }

    fn after_inject(&mut self, pair: &mut Pair) {
        self.completed += count_done(pair);
    }

    fn drain(&mut self, pair: &mut Pair) {
        self.completed += count_done(pair);
    }
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
    let wr_id = rng.next_u64();
    let opcode = if rng.gen_bool(0.5) {
        WrOpcode::Write
    } else {
        WrOpcode::Read
    };
    let wr = real_wr(keys, from, (off, len), opcode, wr_id);
    // A full send queue or a QP in ERR refuses the post; that is the verbs answer.
    let _ = pair.post_send(from, qpn, wr);
}

/// A forged frame from the peer of `dst` to `dest_qp`, with hostile contents and a valid ICRC.
fn forge(at: &mut Attack, t: Target) {
    let (rng, keys, payload, out) = at.forge_parts();
    let Target { dst, dest_qp, near } = t;
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
