//! The ACK bench: out-of-order WRITE WQEs between the transport's [`OooRequester`] and
//! [`OooResponder`] over a sprayed channel, counting the ACK and NAK segments the responder
//! sends per WQE, and checking every byte at the end.
//!
//! Time runs in packet slots (one PMTU packet at the link rate); the requester sends at most
//! one packet per slot. Each segment (data one way, ACKs the other) takes the link's delay
//! plus one of `paths` path delays spread over the path delay difference, chosen at random
//! (random packet spraying, as `net.spray` does in the timed model).

use std::collections::BTreeMap;

use rnic_sim::Rng;
use rnic_transport::ooo::{AckPolicy, BitmapDesign, BlockPool, OooRequester, OooResponder};

use super::sizing_of;
use crate::config::Config;

/// One ACK-bench setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AckBenchSpec {
    pub design: BitmapDesign,
    pub policy: AckPolicy,
    pub wqe_bytes: u32,
    pub wqes: u32,
    /// Parallel paths the packets are sprayed over.
    pub paths: u32,
    /// Largest delay difference between the paths, ns.
    pub mdd_ns: f64,
}

/// What the ACK bench counted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AckBenchResult {
    pub wqes_completed: u32,
    pub data_packets: u64,
    pub acks: u64,
    pub naks: u64,
    pub address_carrying: u64,
    /// Every byte of every WQE arrived where it belongs.
    pub bytes_ok: bool,
    pub slots: u64,
}

impl AckBenchResult {
    /// ACK segments per WQE.
    pub fn acks_per_wqe(&self) -> f64 {
        self.acks as f64 / f64::from(self.wqes_completed.max(1))
    }
}

/// One packet time at the link rate, ps.
pub fn slot_ps(cfg: &Config) -> u64 {
    (f64::from(cfg.qp.pmtu) * 8.0 / cfg.eth.gbps * 1000.0).round() as u64
}

/// Runs `spec` under `cfg` (link rate, PMTU, link delay, `[ooo]` sizing, seed).
pub fn run_ack_bench(cfg: &Config, spec: &AckBenchSpec) -> AckBenchResult {
    let s = sizing_of(cfg);
    let slot = slot_ps(cfg).max(1);
    let to_slots = |ns: f64| (ns * 1000.0 / slot as f64).round() as u64;
    let base = to_slots(cfg.net.effective_link_delay_ns()).max(1);
    let spread = to_slots(spec.mdd_ns);
    let paths = u64::from(spec.paths.max(1));
    let path_delay = |p: u64| {
        if paths == 1 {
            0
        } else {
            spread * p / (paths - 1)
        }
    };
    let policy = match spec.policy {
        AckPolicy::Aggregated { turn_ps } => AckPolicy::Aggregated {
            turn_ps: turn_ps.div_ceil(slot).max(1),
        },
        p => p,
    };
    let total = u64::from(spec.wqe_bytes) * u64::from(spec.wqes);
    let mr_base = 1u64 << 32;
    let mut mem = vec![0u8; total as usize];
    let mut pool = BlockPool::new(s.pool_blocks, s.block_bits);
    let start_psn = 0x10_0000;
    let mut resp = OooResponder::new(
        spec.design,
        s.block_bits,
        s.nodes,
        s.otd,
        cfg.qp.pmtu,
        policy,
        mr_base,
        total,
        start_psn,
    );
    // RTT + OTD / B, in slots.
    let timeout = 2 * base + spread + u64::from(s.otd);
    // The requester keeps within what the receiver's bitmap can record.
    let window = match spec.design {
        BitmapDesign::MpRdma => s.otd,
        _ => s.bitmap_width,
    };
    let mut req = OooRequester::new(cfg.qp.pmtu, window, (timeout, 0), start_psn);
    let mut rng = Rng::new(cfg.sim.seed).fork(0x0AC0);
    let mut expect = Vec::with_capacity(total as usize);
    for k in 0..spec.wqes {
        let data: Vec<u8> = (0..spec.wqe_bytes).map(|_| rng.next_u32() as u8).collect();
        expect.extend_from_slice(&data);
        req.post_write(data, mr_base + u64::from(k) * u64::from(spec.wqe_bytes));
    }
    let mut to_resp = BTreeMap::new();
    let mut to_req = BTreeMap::new();
    let mut seq = 0u64;
    let mut now = 0u64;
    let limit = 64 * (total / u64::from(cfg.qp.pmtu) + 1) + 100 * timeout;
    while !req.idle() && now < limit {
        if let Some(seg) = req.poll_transmit(now) {
            seq += 1;
            let d = base + path_delay(rng.gen_below(paths));
            to_resp.insert((now + d, seq), seg);
        }
        while let Some(e) = to_resp.first_entry() {
            if e.key().0 > now {
                break;
            }
            resp.handle_segment(e.remove(), &mut pool, &mut mem);
        }
        while let Some(seg) = resp.poll_transmit(now) {
            seq += 1;
            let d = base + path_delay(rng.gen_below(paths));
            to_req.insert((now + d, seq), seg);
        }
        while let Some(e) = to_req.first_entry() {
            if e.key().0 > now {
                break;
            }
            req.handle_segment(now, e.remove());
        }
        req.handle_timeout(now);
        now += 1;
    }
    AckBenchResult {
        wqes_completed: resp.msn(),
        data_packets: req.stats.data_packets,
        acks: resp.stats.acks,
        naks: resp.stats.naks,
        address_carrying: req.stats.address_carrying,
        bytes_ok: req.idle() && mem == expect,
        slots: now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sprayed_wqes_arrive_whole_and_mp_rdma_acks_every_packet() {
        let cfg = Config::resolve("ornic", &[]).unwrap();
        let spec = |design, policy| AckBenchSpec {
            design,
            policy,
            wqe_bytes: 64 * 4096,
            wqes: 3,
            paths: 4,
            mdd_ns: 20_000.0,
        };
        let mp = run_ack_bench(&cfg, &spec(BitmapDesign::MpRdma, AckPolicy::PerPacket));
        assert!(mp.bytes_ok && mp.wqes_completed == 3, "{mp:?}");
        assert_eq!(mp.acks, mp.data_packets, "{mp:?}");
        let long = AckPolicy::Aggregated { turn_ps: 1 << 40 };
        let o = run_ack_bench(&cfg, &spec(BitmapDesign::Ornic, long));
        assert!(o.bytes_ok && o.acks == 3, "{o:?}");
        assert_eq!(o, run_ack_bench(&cfg, &spec(BitmapDesign::Ornic, long)));
    }
}
