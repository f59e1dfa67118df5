//! `[ooo]`: out-of-order (multipath) reliability, after "ORNIC: A High-Performance RDMA NIC
//! with Out-of-Order Packet Direct Write Method for Multipath Transmission". The defaults are
//! the paper's: 100 Gb/s paths differing by up to 20 µs, a 90 µs round trip (the 99th
//! percentile RTT of a commodity RDMA datacenter the paper cites), 16-bit bitmap blocks and
//! two pool blocks for each of 2048 QPs. Nothing here changes a go-back-N QP (the default).

use super::declare::config_section;
use super::schema::{float, uint, NS};

config_section! {
    /// Out-of-order reliability: the dimensions its receive bitmaps are sized from, with
    /// qp.reliability = "ornic" or "mp_rdma" (a go-back-N QP, the default, reads none of it).
    pub struct OooConfig in "ooo" {
        /// Largest one-way delay difference between the paths a flow is sprayed over (MDD);
        /// OTD = MDD x rate / PMTU, rounded to a power of two (the paper: 20 µs -> 64)
        mdd_ns: f64 = 20_000.0; "ns", NS;
        /// Round trip the BDP window covers: packets still arriving between a loss being
        /// detected and its retransmission (the paper: 90 µs -> about 256)
        rtt_ns: f64 = 90_000.0; "ns", float(1.0, 1e10);
        /// Bits of one bitmap block (the paper's M: 16)
        block_bits: u32 = 16; "bits", uint(1, 64);
        /// Out-of-order QPs the NIC supports, for sizing the shared block pool (the paper:
        /// 2048); a run that puts more on one NIC is refused
        qps: u32 = 2048; "QPs", uint(1, 65_536);
        /// Pool blocks per supported QP (the paper: an active QP holds at least two)
        pool_blocks_per_qp: u32 = 2; "blocks", uint(1, 64);
        /// LEFT and LEFT+: the cache pointer moves to a block reached by a walk that read more
        /// than this many blocks, the starting block counted (a walk's cycles; the ORNIC
        /// paper gives no value; rnic's choice)
        left_cache_threshold_blocks: u32 = 2; "blocks", uint(0, 1 << 20);
        /// ORNIC's ACK register-scheduler turn: a QP's ACK register goes out at most once per
        /// turn (the completion at once). The paper gives no value; rnic's choice: 10 µs,
        /// about 30 packet times at 100 Gb/s
        ack_turn_ns: f64 = 10_000.0; "ns", float(1.0, 1e10);
    }
}
