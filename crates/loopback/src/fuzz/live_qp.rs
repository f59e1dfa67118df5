//! Fuzzing live QPs with well-formed but hostile packets.
//!
//! Two connected QPs carry real traffic while forged frames — valid headers and ICRC, hostile
//! contents: any opcode, PSNs around and far from the expected one, RETH and AtomicETH addresses
//! inside, at the edge of and outside the registered region, wrong and right R_Keys, huge DMA
//! lengths, every AETH syndrome — are injected at both ends. Nothing may panic, and no byte
//! outside a registered region may be read or written. A QP the attack drives into ERR is
//! destroyed and a fresh pair connected, so the attack keeps hitting live state.

use rnic_sim::Rng;
use rnic_transport::{MrKeys, WrOpcode};
use rnic_wire::Opcode;

use super::arena::{emit_to, hostile_psn, hostile_va, payload_len, LEN, PMTU};
use super::attack::{real_wr, run, Attack, Mode, Target};
use crate::conformance::RC_OPCODES;
use crate::corpus::random_roce;
use crate::pair::{Pair, QpParams, A, B};

/// What a live-QP fuzzing run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveQpFuzzReport {
    pub inputs: u64,
    /// Frames the devices refused (counted by the harness).
    pub refused: u64,
    /// QP pairs connected because an earlier pair was driven into ERR.
    pub reconnects: u64,
    pub real_ops_posted: u64,
    pub frames_exchanged: u64,
}

/// Injects `inputs` hostile frames. `Err` names the first access outside a registered region
/// or a guard byte that changed.
pub fn fuzz_live_qps(seed: u64, inputs: u64) -> Result<LiveQpFuzzReport, String> {
    let c = run(seed, inputs, &mut GoBackN)?;
    Ok(LiveQpFuzzReport {
        inputs: c.inputs,
        refused: c.refused,
        reconnects: c.reconnects,
        real_ops_posted: c.real_ops_posted,
        frames_exchanged: c.frames_exchanged,
    })
}

/// Go-back-N RC QPs with short timers and few retries, so the attack breaks them often.
struct GoBackN;

impl Mode for GoBackN {
    const POST_CHANCE: f64 = 0.05;

    fn connect(&mut self, pair: &mut Pair) -> Result<(u32, u32), String> {
        let params = QpParams {
            pmtu: PMTU,
            timeout: 1,
            retry_cnt: 2,
            rnr_retry: 1,
            ..QpParams::default()
        };
        pair.connect(params).map_err(|e| e.to_string())
    }

    fn post_real_op(&mut self, at: &mut Attack, qps: (u32, u32)) {
        post_real_op(&mut at.pair, &mut at.rng, qps, &at.keys);
    }

    fn forge(&mut self, at: &mut Attack, t: Target) {
        forge(at, t, &RC_OPCODES);
    }

    fn drain(&mut self, pair: &mut Pair) {
        pair.completions(A);
        pair.completions(B);
    }
}

/// Real traffic, so requesters have outstanding work for forged responses to hit.
fn post_real_op(pair: &mut Pair, rng: &mut Rng, qps: (u32, u32), keys: &[MrKeys]) {
    let from = rng.gen_index(2);
    let qpn = if from == A { qps.0 } else { qps.1 };
    let len = rng.gen_range(0..3 * u64::from(PMTU)) as u32;
    let off = rng.gen_range(0..LEN - 4 * u64::from(PMTU)) & !7;
    let opcode = [WrOpcode::Write, WrOpcode::Read, WrOpcode::FetchAdd][rng.gen_index(3)];
    let len = if opcode == WrOpcode::FetchAdd { 8 } else { len };
    let mut wr = real_wr(keys, from, (off, len), opcode, rng.next_u64());
    wr.atomic = (opcode == WrOpcode::FetchAdd).then_some(rnic_transport::AtomicArgs {
        compare_add: 1,
        swap: 0,
    });
    // A full send queue or a QP in ERR refuses the post; that is the verbs answer, not a bug.
    let _ = pair.post_send(from, qpn, wr);
}

/// A forged frame from the peer of `dst` to `dest_qp`, with hostile contents and a valid ICRC:
/// mostly one of `ops` (the service under attack), sometimes any opcode.
pub(super) fn forge(at: &mut Attack, t: Target, ops: &[Opcode]) {
    let (rng, keys, payload, out) = at.forge_parts();
    let Target { dst, dest_qp, near } = t;
    let opcode = if rng.gen_bool(0.85) {
        ops[rng.gen_index(ops.len())]
    } else {
        // RoCEv2's opcodes: the vendor (out-of-order) ones sort last in `ALL` and are
        // refused by a go-back-N QP at the opcode check; they are fuzzed against
        // out-of-order QPs by `live_ooo`.
        let roce = Opcode::ALL.iter().filter(|o| !o.is_ooo()).count();
        Opcode::ALL[rng.gen_index(roce)]
    };
    // For a request to `dst`, the PSN it expects follows the last request its peer sent; for a
    // response to `dst`, the PSNs it waits on are around its own last request.
    let base = if opcode.is_request() {
        near[1 - dst].wrapping_add(1)
    } else {
        near[dst]
    };
    let psn = hostile_psn(rng, base, 9, 4);
    let plen = payload_len(rng, payload);
    let mut roce = random_roce(rng, opcode, dest_qp, psn, &payload[..plen]);
    let rkey = |rng: &mut Rng| {
        if rng.gen_bool(0.6) {
            keys[dst].rkey
        } else {
            rng.next_u32()
        }
    };
    if let Some(r) = roce.reth.as_mut() {
        r.va = hostile_va(rng);
        r.rkey = rkey(rng);
        r.dma_len = match rng.gen_range(0..4) {
            0 => plen as u32,
            1 => u32::MAX - rng.gen_range(0..16) as u32,
            _ => rng.gen_range(0..8 * u64::from(PMTU)) as u32,
        };
    }
    if let Some(a) = roce.atomic_eth.as_mut() {
        a.va = hostile_va(rng);
        a.rkey = rkey(rng);
    }
    emit_to(dst, roce, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_attack_is_survived() {
        let r = fuzz_live_qps(3, 5_000).unwrap();
        assert_eq!(r.inputs, 5_000);
        assert!(r.reconnects > 10, "the attack should break QPs: {r:?}");
        assert!(r.refused > 100 && r.real_ops_posted > 100, "{r:?}");
    }
}
