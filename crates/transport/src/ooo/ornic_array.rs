//! ORNIC's bitmap: per QP a cyclic array of `nodes` block nodes, each `(bitmap_block_id,
//! valid, all_1_flag)`, over the shared [`BlockPool`].
//!
//! Block `b` of the WQE (PSN offsets `b × M .. (b + 1) × M`) lives in node `b mod nodes`, so
//! any packet reaches its block in one array access: one cycle, whatever the loss. A node
//! takes a pool block when its first packet arrives; when the block fills up it goes back to
//! the pool at once and the node keeps only `all_1_flag`, so a QP stuck behind a lost packet
//! holds the head block, the few blocks still filling near the tail, and nothing between.

use super::{BlockId, BlockPool, ReceiveBitmap, Recorded};

/// One block node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Node {
    /// The pool block holding this node's bits (meaningful when `valid && !all_1`).
    block: BlockId,
    /// The node is in use for the current window.
    valid: bool,
    /// Every bit of the node's block was set; its pool block was returned.
    all_1: bool,
}

/// ORNIC's array of block nodes for one QP.
#[derive(Debug, Clone)]
pub struct OrnicArray {
    block_bits: u32,
    nodes: Vec<Node>,
    head: u32,
}

impl OrnicArray {
    /// `nodes` nodes of `block_bits`-bit blocks: a window of `nodes × block_bits` PSNs.
    pub fn new(block_bits: u32, nodes: u32) -> OrnicArray {
        OrnicArray {
            block_bits,
            nodes: vec![Node::default(); nodes.max(1) as usize],
            head: 0,
        }
    }

    fn node_of(&self, block: u32) -> usize {
        (block % self.nodes.len() as u32) as usize
    }

    /// Moves the head over received offsets, clearing the nodes it leaves behind.
    fn advance(&mut self, pool: &mut BlockPool) {
        while self.contains(self.head, pool) {
            self.head += 1;
            if self.head.is_multiple_of(self.block_bits) {
                let left = self.node_of(self.head / self.block_bits - 1);
                let n = std::mem::take(&mut self.nodes[left]);
                if n.valid && !n.all_1 {
                    pool.free(n.block);
                }
            }
        }
    }
}

impl ReceiveBitmap for OrnicArray {
    fn record(&mut self, offset: u32, pool: &mut BlockPool) -> Recorded {
        // One cycle: the node is addressed directly by the block number.
        const CYCLES: u32 = 1;
        if offset < self.head {
            return Recorded::Duplicate { cycles: CYCLES };
        }
        if offset >= self.limit() {
            return Recorded::OutOfWindow;
        }
        let block = offset / self.block_bits;
        let bit = offset % self.block_bits;
        let i = self.node_of(block);
        let mut n = self.nodes[i];
        if n.all_1 {
            return Recorded::Duplicate { cycles: CYCLES };
        }
        if !n.valid {
            let Some(id) = pool.alloc() else {
                return Recorded::PoolExhausted;
            };
            n = Node {
                block: id,
                valid: true,
                all_1: false,
            };
        }
        if !pool.set(n.block, bit) {
            self.nodes[i] = n;
            return Recorded::Duplicate { cycles: CYCLES };
        }
        if pool.is_full(n.block) {
            pool.free(n.block);
            n.all_1 = true;
        }
        self.nodes[i] = n;
        self.advance(pool);
        Recorded::New { cycles: CYCLES }
    }

    fn head(&self) -> u32 {
        self.head
    }

    fn contains(&self, offset: u32, pool: &BlockPool) -> bool {
        if offset < self.head {
            return true;
        }
        if offset >= self.limit() {
            return false;
        }
        let n = self.nodes[self.node_of(offset / self.block_bits)];
        n.valid && (n.all_1 || pool.get(n.block, offset % self.block_bits))
    }

    fn blocks_held(&self) -> u32 {
        self.nodes.iter().filter(|n| n.valid && !n.all_1).count() as u32
    }

    fn limit(&self) -> u32 {
        (self.head / self.block_bits + self.nodes.len() as u32) * self.block_bits
    }

    fn release(&mut self, pool: &mut BlockPool) {
        for n in &mut self.nodes {
            if n.valid && !n.all_1 {
                pool.free(n.block);
            }
            *n = Node::default();
        }
    }
}
