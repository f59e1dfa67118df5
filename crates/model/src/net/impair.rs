//! The impairment element, placeable on any link direction: seeded loss, duplication,
//! bounded reordering (a frame is held back by 0..=depth slots, uniformly, a slot being a
//! full path-MTU frame's wire time, so it is overtaken by at most `depth` later full-size
//! frames and by more smaller ones: a hunt saw 64-byte frames at depth 1 overtaken by up
//! to 14), a fixed extra delay and byte corruption,
//! acting on data frames, acknowledgements or both (`net.impair.direction`); the others
//! pass untouched and draw nothing from its random stream.

use rnic_sim::{Rng, TimePs};
use rnic_wire::Opcode;

use super::element::{ElementStats, Emitted, Fate, LinkElement};
use crate::config::{ImpairConfig, ImpairDirection};

/// An impairment element.
#[derive(Debug, Clone)]
pub struct Impair {
    rng: Rng,
    loss: f64,
    dup: f64,
    depth: u32,
    corrupt: f64,
    direction: ImpairDirection,
    slot_ps: TimePs,
    extra_ps: TimePs,
    stats: ElementStats,
}

/// Whether a frame is a pure acknowledgement (ACK/NAK, atomic ACK, CNP, and the
/// out-of-order ACK and bitmap NAK: without them the reordering emulator shuffled ORNIC's
/// ACKs as if they were data).
pub(crate) fn is_ack(frame: &[u8]) -> bool {
    matches!(
        rnic_wire::peek_bth(frame).map(|b| b.opcode),
        Ok(Opcode::RcAck | Opcode::RcAtomicAck | Opcode::Cnp | Opcode::OooAck | Opcode::OooNak)
    )
}

/// Whether a frame is a connection manager's MAD (to QP1), which reordering emulators and
/// sprayers leave to the fabric's normal path: they act on the QPs' RDMA traffic.
pub(crate) fn is_cm_mad(frame: &[u8]) -> bool {
    rnic_wire::peek_bth(frame).is_ok_and(|b| b.dest_qp == rnic_wire::cm::GSI_QPN)
}

impl Impair {
    /// An element with the settings of `cfg` and its own RNG stream; `slot_ps` is the
    /// reordering unit (one MTU frame at line rate).
    pub fn new(rng: Rng, cfg: &ImpairConfig, slot_ps: TimePs) -> Self {
        Impair {
            rng,
            loss: cfg.loss,
            dup: cfg.dup,
            depth: cfg.reorder_depth,
            corrupt: cfg.corrupt,
            direction: cfg.direction,
            slot_ps,
            extra_ps: rnic_sim::ns(cfg.extra_delay_ns),
            stats: ElementStats::default(),
        }
    }

    /// Whether the element does anything.
    pub fn is_active(&self) -> bool {
        self.loss > 0.0
            || self.dup > 0.0
            || self.depth > 0
            || self.extra_ps > 0
            || self.corrupt > 0.0
    }

    fn applies_to(&self, frame: &[u8]) -> bool {
        match self.direction {
            ImpairDirection::Both => true,
            ImpairDirection::Data => !is_ack(frame),
            ImpairDirection::Acks => is_ack(frame),
        }
    }

    /// The byte of `frame` to flip: one a receiver's checks cover (the ICRC, or the IPv4
    /// header checksum where the ICRC masks), uniformly, so that the frame is dropped as the
    /// field says. Until 2026-12-02 it was any byte of the frame: a flip in a MAC address,
    /// the UDP checksum or the BTH's FECN/BECN byte (about 10 % of them) went through and
    /// was acknowledged (found by a pcap protocol hunt). Damage to the Ethernet header is a
    /// link FCS's to catch, which the frames here do not carry.
    fn corrupted_byte(&mut self, frame: &[u8]) -> usize {
        match rnic_wire::icrc::checked_len(frame) {
            0 => self.rng.gen_below(frame.len() as u64) as usize,
            n => rnic_wire::icrc::checked_byte(self.rng.gen_below(n as u64) as usize),
        }
    }
}

impl LinkElement for Impair {
    fn on_frame(&mut self, _now: TimePs, frame: &mut Vec<u8>, emit: &mut Vec<Emitted>) -> Fate {
        self.stats.frames += 1;
        if !self.applies_to(frame) {
            return Fate::default();
        }
        let mut fate = Fate {
            drop: false,
            delay_ps: self.extra_ps,
        };
        if self.loss > 0.0 && self.rng.gen_bool(self.loss) {
            self.stats.dropped += 1;
            fate.drop = true;
            return fate;
        }
        if self.depth > 0 {
            let k = self.rng.gen_below(u64::from(self.depth) + 1);
            if k > 0 {
                self.stats.delayed += 1;
            }
            fate.delay_ps += k * self.slot_ps;
        }
        if self.corrupt > 0.0 && self.rng.gen_bool(self.corrupt) && !frame.is_empty() {
            let at = self.corrupted_byte(frame);
            frame[at] ^= 0x5a;
            self.stats.corrupted += 1;
        }
        if self.dup > 0.0 && self.rng.gen_bool(self.dup) {
            self.stats.emitted += 1;
            emit.push(Emitted {
                bytes: frame.clone(),
                delay_ps: fate.delay_ps + self.slot_ps,
                back: false,
            });
        }
        fate
    }

    fn stats(&self) -> ElementStats {
        self.stats
    }
}
