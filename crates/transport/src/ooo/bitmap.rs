//! The interface every receive-bitmap design offers, and the designs by name.

use super::{BlockPool, LinkedBlocks, ListAccess, OrnicArray, StaticBitmap};

/// What recording one packet did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// A new PSN, now recorded; `cycles` pointer accesses located its block.
    New { cycles: u32 },
    /// Already recorded (or below the head): a duplicate, nothing changed.
    Duplicate { cycles: u32 },
    /// Beyond the bitmap's reach: not recorded, the packet must be dropped and resent.
    OutOfWindow,
    /// The block pool is empty: not recorded, the packet must be dropped and resent (the
    /// bitmap degrades, it never corrupts).
    PoolExhausted,
}

impl Recorded {
    /// Pointer accesses spent locating the block (0 for a packet that was not recorded).
    pub fn cycles(self) -> u32 {
        match self {
            Recorded::New { cycles } | Recorded::Duplicate { cycles } => cycles,
            Recorded::OutOfWindow | Recorded::PoolExhausted => 0,
        }
    }

    /// The packet's payload may be written (new or duplicate: both are inside the window).
    pub fn accepted(self) -> bool {
        matches!(self, Recorded::New { .. } | Recorded::Duplicate { .. })
    }
}

/// A per-QP receive bitmap over PSN offsets from the start of one out-of-order WQE
/// (offset 0 is the WQE's first PSN).
pub trait ReceiveBitmap {
    /// Records PSN offset `offset`, taking blocks from `pool` as needed.
    fn record(&mut self, offset: u32, pool: &mut BlockPool) -> Recorded;
    /// The expected offset: every offset below it has been received.
    fn head(&self) -> u32;
    /// Whether `offset` has been received.
    fn contains(&self, offset: u32, pool: &BlockPool) -> bool;
    /// Blocks of the shared pool this QP holds now.
    fn blocks_held(&self) -> u32;
    /// The furthest offset (exclusive) the bitmap can record now.
    fn limit(&self) -> u32;
    /// The missing offsets in `[head, head + block_bits)` as a bit mask (bit i = head + i
    /// missing): what a NAK carries so that the sender resends exactly those packets.
    fn missing_mask(&self, block_bits: u32, pool: &BlockPool) -> u64 {
        let h = self.head();
        (0..block_bits.min(64))
            .filter(|&i| !self.contains(h + i, pool))
            .fold(0u64, |m, i| m | (1 << i))
    }
    /// Returns every block to `pool` (the WQE completed or the QP was reset).
    fn release(&mut self, pool: &mut BlockPool);
}

/// The bitmap designs, by the names the config and the reproduction use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitmapDesign {
    /// ORNIC: array of block nodes, full blocks freed early.
    Ornic,
    /// MELO with access to the middle of the list (from the head).
    MeloPlus,
    /// LEFT: MELO plus a last-hit cache pointer; misses traverse from the head.
    Left,
    /// LEFT+: LEFT whose misses traverse from the cache pointer, either way along the list.
    LeftPlus,
    /// MP-RDMA: a static OTD-wide bitmap per QP.
    MpRdma,
}

impl BitmapDesign {
    /// Every design, in the order tables print them (the ORNIC paper's Table 2 order, then
    /// MP-RDMA).
    pub const ALL: [BitmapDesign; 5] = [
        BitmapDesign::MeloPlus,
        BitmapDesign::Left,
        BitmapDesign::LeftPlus,
        BitmapDesign::Ornic,
        BitmapDesign::MpRdma,
    ];

    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            BitmapDesign::Ornic => "ORNIC",
            BitmapDesign::MeloPlus => "MELO+",
            BitmapDesign::Left => "LEFT",
            BitmapDesign::LeftPlus => "LEFT+",
            BitmapDesign::MpRdma => "MP-RDMA",
        }
    }

    /// A fresh bitmap of this design: `nodes` blocks of `block_bits` bits (the per-QP width),
    /// a static window of `otd` bits for MP-RDMA, and LEFT's cache-update threshold in
    /// blocks traversed.
    pub fn build(
        self,
        block_bits: u32,
        nodes: u32,
        otd: u32,
        cache_threshold_blocks: u32,
    ) -> Box<dyn ReceiveBitmap> {
        let list = |access| {
            Box::new(LinkedBlocks::new(
                block_bits,
                nodes,
                access,
                cache_threshold_blocks,
            )) as Box<dyn ReceiveBitmap>
        };
        match self {
            BitmapDesign::Ornic => Box::new(OrnicArray::new(block_bits, nodes)),
            BitmapDesign::MeloPlus => list(ListAccess::MeloPlus),
            BitmapDesign::Left => list(ListAccess::Left),
            BitmapDesign::LeftPlus => list(ListAccess::LeftPlus),
            BitmapDesign::MpRdma => Box::new(StaticBitmap::new(otd)),
        }
    }
}
