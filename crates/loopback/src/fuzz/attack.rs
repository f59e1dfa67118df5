//! The loop every live-QP fuzzer runs: a guarded pair and a seeded RNG, each forged frame
//! aimed at one end and injected there, a broken QP pair replaced, and at the end a second of
//! simulated time and the memory check. The fuzzers differ in what they forge and in the
//! real traffic they post, not in this.

use rnic_sim::Rng;
use rnic_transport::{MrKeys, QpState, RemoteAddr, SendWr, Sge, WrOpcode};

use super::arena::{check_memory, dest_qp, guarded_pair, inject, BASE, PMTU};
use crate::pair::{Pair, QpParams, A, B};

/// A fuzzing run's state: the pair under attack (guard bytes around its registered regions)
/// with each node's MR keys, the RNG every choice draws from, the frame being forged and the
/// payload forged frames take their bytes from.
pub(super) struct Attack {
    pub rng: Rng,
    pub pair: Pair,
    pub keys: Vec<MrKeys>,
    pub frame: Vec<u8>,
    pub payload: Vec<u8>,
}

/// Where a forged frame goes: node `dst`, QP `dest_qp`, and the PSNs it aims near (each
/// node's last request, [`Pair::last_request_psn`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Target {
    pub dst: usize,
    pub dest_qp: u32,
    pub near: [u32; 2],
}

impl Attack {
    /// A fresh guarded pair and RNG, both from `seed`.
    pub fn new(seed: u64) -> Result<Self, String> {
        let rng = Rng::new(seed);
        let (pair, keys) = guarded_pair(seed)?;
        Ok(Attack {
            rng,
            pair,
            keys,
            frame: Vec::with_capacity(4200),
            payload: (0..PMTU as usize + 64).map(|i| i as u8).collect(),
        })
    }

    /// Draws the end the next forged frame goes to, among the live pair `qps`.
    pub fn aim(&mut self, qps: (u32, u32)) -> Target {
        let dst = self.rng.gen_index(2);
        let dest_qp = dest_qp(&mut self.rng, dst, qps);
        // Requests aim at the responder's window (after the peer's last request); responses
        // at the requester's outstanding PSNs (around its own last request).
        let near = [self.pair.last_request_psn(B), self.pair.last_request_psn(A)];
        Target { dst, dest_qp, near }
    }

    /// What a forger draws from and writes to: the RNG, the nodes' keys, the payload bytes
    /// and the frame.
    pub fn forge_parts(&mut self) -> (&mut Rng, &[MrKeys], &[u8], &mut Vec<u8>) {
        (&mut self.rng, &self.keys, &self.payload, &mut self.frame)
    }

    /// Injects the forged frame at `dst`; whether the device refused it.
    pub fn inject(&mut self, dst: usize) -> bool {
        inject(&mut self.pair, &mut self.rng, dst, &self.frame)
    }

    /// Whether either QP of `qps` has left RTS.
    pub fn broken(&self, qps: (u32, u32)) -> bool {
        let broken = |n: usize, q: u32| self.pair.nodes[n].dev.qp_state(q) != Some(QpState::Rts);
        broken(A, qps.0) || broken(B, qps.1)
    }

    /// Replaces the broken pair `qps` by a fresh one connected with `params` (after
    /// `drain`, which runs once the old pair has had 200 µs to finish what it can).
    pub fn reconnect(
        &mut self,
        qps: (u32, u32),
        params: QpParams,
        drain: impl FnOnce(&mut Pair),
    ) -> Result<(u32, u32), String> {
        self.pair.run(self.pair.now_ps() + 200_000_000);
        drain(&mut self.pair);
        // Destroying may be refused while work is in flight; a leaked QP is harmless here.
        let _ = self.pair.nodes[A].dev.destroy_qp(qps.0);
        let _ = self.pair.nodes[B].dev.destroy_qp(qps.1);
        self.pair.connect(params).map_err(|e| e.to_string())
    }

    /// Ends the attack: a simulated second for what is in flight, `drain` (which may poll
    /// and count), then the memory check. Returns the frames the pair exchanged and the
    /// frames the devices dropped.
    pub fn finish(&mut self, drain: impl FnOnce(&mut Pair)) -> Result<(u64, u64), String> {
        self.pair.run(self.pair.now_ps() + 1_000_000_000);
        drain(&mut self.pair);
        let frames = self.pair.frames_sent();
        let dropped = self.pair.nodes.iter().map(|n| n.rx_dropped).sum::<u64>();
        check_memory(&self.pair)?;
        Ok((frames, dropped))
    }
}

/// A real, signaled work request from node `from` of `len` bytes at `BASE + off`, aimed at
/// the same offset in its peer's region (each with its node's key).
pub(super) fn real_wr(
    keys: &[MrKeys],
    from: usize,
    (off, len): (u64, u32),
    opcode: WrOpcode,
    wr_id: u64,
) -> SendWr {
    SendWr {
        wr_id,
        opcode,
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
    }
}
