//! The one loop every live-QP fuzzer runs: a guarded pair and a seeded RNG, each forged frame
//! aimed at one end and injected there, a broken QP pair replaced, and at the end a second of
//! simulated time and the memory check. The fuzzers are [`Mode`]s: they differ in how their
//! pair connects, the real traffic they post and the frames they forge (each mode's frame
//! generator), and in what a QP leaving RTS means; not in this loop.

use rnic_sim::Rng;
use rnic_transport::{MrKeys, QpState, RemoteAddr, SendWr, Sge, WrOpcode};

use super::arena::{check_memory, dest_qp, guarded_pair, inject, BASE, PMTU};
use crate::pair::{Pair, A, B};

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

    /// Replaces the broken pair `qps` by a fresh one of `mode` (after its drain, which runs
    /// once the old pair has had 200 µs to finish what it can).
    fn reconnect(&mut self, qps: (u32, u32), mode: &mut impl Mode) -> Result<(u32, u32), String> {
        self.pair.run(self.pair.now_ps() + 200_000_000);
        mode.drain(&mut self.pair);
        // Destroying may be refused while work is in flight; a leaked QP is harmless here.
        let _ = self.pair.nodes[A].dev.destroy_qp(qps.0);
        let _ = self.pair.nodes[B].dev.destroy_qp(qps.1);
        mode.connect(&mut self.pair)
    }

    /// Ends the attack: a simulated second for what is in flight, the mode's drain (which may
    /// poll and count), then the memory check. Returns the frames the pair exchanged and the
    /// frames the devices dropped.
    fn finish(&mut self, mode: &mut impl Mode) -> Result<(u64, u64), String> {
        self.pair.run(self.pair.now_ps() + 1_000_000_000);
        mode.drain(&mut self.pair);
        let frames = self.pair.frames_sent();
        let dropped = self.pair.nodes.iter().map(|n| n.rx_dropped).sum::<u64>();
        check_memory(&self.pair)?;
        Ok((frames, dropped))
    }
}

/// What one live fuzzer adds to the loop of [`run`]: its QP pair, its real traffic, its
/// frame generator and what it counts beside the loop's [`Counts`].
pub(super) trait Mode {
    /// Chance per input that a real operation is posted before the forged frame.
    const POST_CHANCE: f64;

    /// Creates and connects the QP pair under attack.
    fn connect(&mut self, pair: &mut Pair) -> Result<(u32, u32), String>;

    /// Posts one real operation, so forged frames meet work in flight.
    fn post_real_op(&mut self, at: &mut Attack, qps: (u32, u32));

    /// The mode's frame generator: forges the next hostile frame into `at.frame`.
    fn forge(&mut self, at: &mut Attack, t: Target);

    /// After each injection (the pair as the frame left it).
    fn after_inject(&mut self, _pair: &mut Pair) {}

    /// A QP of the pair left RTS: `Ok` replaces the pair, `Err` ends the run with it.
    fn on_broken(&mut self, _pair: &Pair, _qps: (u32, u32)) -> Result<(), String> {
        Ok(())
    }

    /// Polls what is left of a pair before it is replaced, and at the end of the run.
    fn drain(&mut self, _pair: &mut Pair) {}
}

/// What the loop of [`run`] counts for every mode.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub inputs: u64,
    /// Frames the devices refused (forged at injection, and any dropped by the end).
    pub refused: u64,
    /// QP pairs connected because an earlier pair left RTS.
    pub reconnects: u64,
    pub real_ops_posted: u64,
    pub frames_exchanged: u64,
}

/// Attacks a pair of `mode`'s QPs with `inputs` forged frames from `seed`. `Err` names the
/// first access outside a registered region, a changed guard byte, or what the mode refused.
pub(super) fn run<M: Mode>(seed: u64, inputs: u64, mode: &mut M) -> Result<Counts, String> {
    let mut at = Attack::new(seed)?;
    let mut qps = mode.connect(&mut at.pair)?;
    let mut counts = Counts::default();
    for _ in 0..inputs {
        counts.inputs += 1;
        if at.rng.gen_bool(M::POST_CHANCE) {
            mode.post_real_op(&mut at, qps);
            counts.real_ops_posted += 1;
        }
        let t = at.aim(qps);
        mode.forge(&mut at, t);
        if at.inject(t.dst) {
            counts.refused += 1;
        }
        mode.after_inject(&mut at.pair);
        if at.broken(qps) {
            mode.on_broken(&at.pair, qps)?;
            qps = at.reconnect(qps, mode)?;
            counts.reconnects += 1;
        }
    }
    let (frames, dropped) = at.finish(mode)?;
    counts.frames_exchanged = frames;
    counts.refused += dropped;
    Ok(counts)
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
