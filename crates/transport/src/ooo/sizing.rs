//! The dimensions of the out-of-order receive structures, derived the way the ORNIC paper
//! derives them (its section 3.3 and 3.4):
//!
//! * OTD (OOO tolerance distance) = MDD × B / packet length: the furthest a packet can be
//!   overtaken when the paths' one-way delays differ by at most MDD at sending rate B.
//! * BDP window = B × RTT / packet length: the packets that keep arriving between a loss
//!   being detected and its retransmission arriving.
//! * Bitmap width = OTD + BDP window, in nodes of `block_bits`-bit blocks.
//! * Pool: `pool_blocks_per_qp` blocks per supported QP (an active QP holds at least two).
//!
//! The paper sets its registers to powers of two: 20 µs at 100 Gb/s with 4 KB packets is
//! 61.0 packets and it uses 64; 90 µs is 274.7 packets and it uses "about 256". Rounding each
//! to the nearest power of two gives both, so [`Sizing`] does that and keeps the exact
//! values beside the register values.

/// What the structures are sized from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizingInputs {
    /// Sending rate B, Gb/s.
    pub link_gbps: f64,
    /// Packet length used in the equations (the paper uses the PMTU), bytes.
    pub packet_bytes: u32,
    /// Largest one-way delay difference between paths (MDD), ns.
    pub mdd_ns: f64,
    /// Round trip the BDP window covers, ns.
    pub rtt_ns: f64,
    /// Bits per bitmap block (M).
    pub block_bits: u32,
    /// QPs the NIC supports.
    pub qps: u32,
    /// Pool blocks per supported QP.
    pub pool_blocks_per_qp: u32,
}

/// The derived dimensions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sizing {
    /// MDD × B / packet length, exact.
    pub otd_exact: f64,
    /// OTD register value, packets.
    pub otd: u32,
    /// B × RTT / packet length, exact.
    pub bdp_exact: f64,
    /// BDP window register value, packets.
    pub bdp_window: u32,
    /// OTD + BDP window, bits per QP.
    pub bitmap_width: u32,
    /// Block nodes per QP (N): the width in blocks.
    pub nodes: u32,
    /// Bits per block (M).
    pub block_bits: u32,
    /// Blocks in the shared pool.
    pub pool_blocks: u32,
    /// Width of a block id: log2 of the pool, rounded up.
    pub block_id_bits: u32,
    /// One node: block id + valid + all_1_flag.
    pub node_bits: u32,
    /// The pool's block storage, bits.
    pub pool_bits: u64,
    /// One QP's node array, bits.
    pub node_array_bits_per_qp: u64,
    /// Every QP's node array, bits.
    pub node_array_bits: u64,
    /// MP-RDMA's alternative: an OTD-wide static bitmap for every QP, bits.
    pub static_bitmap_bits: u64,
    /// A BDP-wide static bitmap for every QP (IRN's choice), bits.
    pub bdp_static_bits: u64,
}

/// The most packets an OTD or a BDP window may span: a quarter of the PSN space, so their
/// sum stays within the half a receiver can tell apart.
pub const MAX_WINDOW: u32 = 1 << 22;

/// The power of two nearest to `x` (ties go up); 1 for anything at or below 1.
pub fn nearest_pow2(x: f64) -> u32 {
    if x <= 1.0 {
        return 1;
    }
    if x >= f64::from(1u32 << 31) {
        return 1 << 31;
    }
    let lo = 2f64.powi(x.log2().floor() as i32);
    let hi = lo * 2.0;
    (if x - lo < hi - x { lo } else { hi }) as u32
}

impl Sizing {
    /// Derives every dimension from `inp`.
    pub fn derive(inp: &SizingInputs) -> Sizing {
        let bits_per_packet = f64::from(inp.packet_bytes) * 8.0;
        // Gb/s × ns = bits.
        let otd_exact = inp.link_gbps * inp.mdd_ns / bits_per_packet;
        let bdp_exact = inp.link_gbps * inp.rtt_ns / bits_per_packet;
        // A bitmap never spans more than half the PSN space (2^23), whatever the inputs.
        let otd = nearest_pow2(otd_exact).min(MAX_WINDOW);
        let bdp_window = nearest_pow2(bdp_exact).min(MAX_WINDOW);
        let bitmap_width = otd + bdp_window;
        let block_bits = inp.block_bits.max(1);
        let nodes = bitmap_width.div_ceil(block_bits);
        let pool_blocks = inp.qps.saturating_mul(inp.pool_blocks_per_qp);
        let block_id_bits = pool_blocks.max(2).next_power_of_two().trailing_zeros();
        let node_bits = block_id_bits + 2;
        let node_array_bits_per_qp = u64::from(nodes) * u64::from(node_bits);
        Sizing {
            otd_exact,
            otd,
            bdp_exact,
            bdp_window,
            bitmap_width,
            nodes,
            block_bits,
            pool_blocks,
            block_id_bits,
            node_bits,
            pool_bits: u64::from(pool_blocks) * u64::from(block_bits),
            node_array_bits_per_qp,
            node_array_bits: node_array_bits_per_qp * u64::from(inp.qps),
            static_bitmap_bits: u64::from(otd) * u64::from(inp.qps),
            bdp_static_bits: u64::from(bitmap_width) * u64::from(inp.qps),
        }
    }
}
