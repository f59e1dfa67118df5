//! Fuzzing live UC and UD QPs: the live-QP attack of [`super::live_qp`] aimed at the
//! unreliable services. Two UC (or UD) QPs carry real SENDs and WRITEs while forged frames,
//! mostly of the service's own opcodes (UC SEND/WRITE first/middle/last/only with
//! immediate; UD SEND ONLY with a DETH whose Q_Key is usually right), with PSNs around and
//! far from the expected one, hostile RETHs and payloads up to past the PMTU, are injected
//! at both ends. Nothing may panic, no byte outside a registered region may be read or
//! written, and the QPs must stay in RTS: the unreliable services drop what they refuse and
//! never go to ERR for a peer's packet.

use rnic_sim::Rng;
use rnic_transport::{MrKeys, QpState, RecvWr, ServiceType, Sge, WrOpcode};
use rnic_wire::{FrameRepr, Opcode};

use super::arena::{BASE, LEN, PMTU};
use super::attack::{real_wr, run, Attack, Mode, Target};
use super::live_qp::forge;
use crate::conformance::{UD_QKEY, UNRELIABLE_OPCODES};
use crate::pair::{Pair, QpParams, A, B};

/// What an unreliable-service fuzzing run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnreliableFuzzReport {
    pub inputs: u64,
    /// Frames the devices refused (forged and real).
    pub refused: u64,
    pub real_ops_posted: u64,
    /// Messages the two receivers took whole (real and forged).
    pub messages_received: u64,
    pub frames_exchanged: u64,
}

/// Injects `inputs` hostile frames into a UC or UD pair (`service`). `Err` names the first
/// access outside a registered region, a changed guard byte or a QP that left RTS.
pub fn fuzz_unreliable_qps(
    seed: u64,
    inputs: u64,
    service: ServiceType,
) -> Result<UnreliableFuzzReport, String> {
    let ops = UNRELIABLE_OPCODES
        .iter()
        .copied()
        .filter(|op| service.carries(*op))
        .collect();
    let mut mode = Unreliable {
        service,
        ops,
        qps: (0, 0),
        messages_received: 0,
    };
    let c = run(seed, inputs, &mut mode)?;
    Ok(UnreliableFuzzReport {
        inputs: c.inputs,
        refused: c.refused,
        real_ops_posted: c.real_ops_posted,
        messages_received: mode.messages_received,
        frames_exchanged: c.frames_exchanged,
    })
}

/// A UC or UD pair, attacked mostly with its service's opcodes; a QP leaving RTS is a
/// failure, not a pair to replace.
struct Unreliable {
    service: ServiceType,
    /// The service's own opcodes, which forged frames mostly carry.
    ops: Vec<Opcode>,
    /// The pair, for the messages its receivers count.
    qps: (u32, u32),
    messages_received: u64,
}

impl Mode for Unreliable {
    const POST_CHANCE: f64 = 0.05;

    fn connect(&mut self, pair: &mut Pair) -> Result<(u32, u32), String> {
        let params = QpParams {
            pmtu: PMTU,
            ..QpParams::default()
        };
        self.qps = pair
            .connect_service(params, self.service, UD_QKEY)
            .map_err(|e| e.to_string())?;
        Ok(self.qps)
    }

    fn post_real_op(&mut self, at: &mut Attack, qps: (u32, u32)) {
        post_real_op(&mut at.pair, &mut at.rng, qps, &at.keys, self.service);
    }

    /// The live-QP frame generator over the service's opcodes; mostly with the right Q_Key,
    /// so UD's checks past the Q_Key are reached.
    fn forge(&mut self, at: &mut Attack, t: Target) {
        forge(at, t, &self.ops);
        if at.rng.gen_bool(0.7) {
            set_qkey(&mut at.frame, UD_QKEY);
        }
    }

    fn on_broken(&mut self, pair: &Pair, qps: (u32, u32)) -> Result<(), String> {
        for (n, q) in [(A, qps.0), (B, qps.1)] {
            let st = pair.nodes[n].dev.qp_state(q);
            if st != Some(QpState::Rts) {
                return Err(format!("node {n} QP {q:#x} left RTS: {st:?}"));
            }
        }
        Ok(())
    }

    fn drain(&mut self, pair: &mut Pair) {
        let (a, b) = self.qps;
        self.messages_received = [(A, a), (B, b)]
            .iter()
            .map(|&(n, q)| pair.nodes[n].dev.qp_messages_received(q))
            .sum();
    }
}

/// Rewrites the DETH Q_Key of a forged UD frame (re-emitted so the ICRC stays valid);
/// other frames are left alone.
fn set_qkey(frame: &mut Vec<u8>, qkey: u32) {
    let Ok(f) = FrameRepr::parse(frame) else {
        return;
    };
    let Some(mut d) = f.roce.deth else {
        return;
    };
    d.qkey = qkey;
    let payload = f.roce.payload.to_vec();
    let roce = f.roce.with_deth(d);
    let roce = rnic_wire::RoceRepr {
        payload: &payload,
        ..roce
    };
    let out = FrameRepr { roce, ..f };
    let mut buf = Vec::with_capacity(frame.len());
    out.emit(&mut buf);
    *frame = buf;
}

/// Real traffic: SENDs (with a receive posted at the peer, which the attack may consume
/// first) and, on UC, WRITEs.
fn post_real_op(
    pair: &mut Pair,
    rng: &mut Rng,
    qps: (u32, u32),
    keys: &[MrKeys],
    service: ServiceType,
) {
    let from = rng.gen_index(2);
    let (qpn, peer_qpn) = if from == A { qps } else { (qps.1, qps.0) };
    let max = if service == ServiceType::Ud {
        u64::from(PMTU)
    } else {
        3 * u64::from(PMTU)
    };
    let len = rng.gen_range(0..max + 1) as u32;
    let off = rng.gen_range(0..LEN - 4 * u64::from(PMTU)) & !7;
    let write = service == ServiceType::Uc && rng.gen_bool(0.5);
    if !write {
        let r = RecvWr::new(
            rng.next_u64(),
            vec![Sge {
                addr: BASE + off,
                len: 40 + 3 * PMTU,
                lkey: keys[1 - from].lkey,
            }],
        );
        let _ = pair.post_recv(1 - from, peer_qpn, r);
    }
    let wr_id = rng.next_u64();
    let opcode = if write {
        WrOpcode::Write
    } else {
        WrOpcode::Send
    };
    let mut wr = real_wr(keys, from, (off, len), opcode, wr_id);
    if !write {
        wr.remote = None;
    }
    // A full send queue refuses the post; that is the verbs answer, not a bug.
    let _ = pair.post_send(from, qpn, wr);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_attacks_on_uc_and_ud_are_survived() {
        for service in [ServiceType::Uc, ServiceType::Ud] {
            let r = fuzz_unreliable_qps(5, 5_000, service).unwrap();
            assert_eq!(r.inputs, 5_000);
            assert!(
                r.refused > 100 && r.real_ops_posted > 100,
                "{service:?} {r:?}"
            );
            assert!(r.messages_received > 50, "{service:?} {r:?}");
        }
    }
}
