//! MELO+, LEFT and LEFT+: the bitmap as a linked list of pool blocks, as the ORNIC paper
//! describes and upgrades them for its comparison (its section 4.3).
//!
//! The list runs from the head block (holding the oldest missing PSN) to the tail block (the
//! newest); a packet beyond the tail links new blocks on. Hardware reaches a block through a
//! pointer, one clock cycle per pointer followed: the head and tail pointers reach their
//! blocks at once, a block in the middle costs a walk along the `next` pointers.
//! * MELO+ walks from the head.
//! * LEFT keeps a cache pointer too: a packet in the cached block costs one cycle; any other
//!   middle block is walked to from the head, and the cache moves to it when the walk
//!   traversed more than `cache_threshold_blocks` blocks (the starting block included: the
//!   blocks a walk reads are its cycles).
//! * LEFT+ walks to every other middle block from the cache pointer instead of the head
//!   pointer, as the paper words its upgrade ("access the corresponding bitmap block from the
//!   cache pointer instead of the header pointer"), in whichever direction the block lies:
//!   its list is linked both ways. (An earlier reading walked from the cache only to blocks
//!   beyond it and from the head to the others; see the Table 2 notes in
//!   the book's ORNIC chapter, `docs/book/src/repro/ornic.md`.)
//!
//! Full blocks stay in the list until the head passes them: behind a lost packet the list
//! grows towards the whole bitmap width.

use std::collections::VecDeque;

use super::{BlockId, BlockPool, ReceiveBitmap, Recorded};

/// How a linked-list bitmap reaches a block in the middle of its list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListAccess {
    /// Walk from the head pointer.
    MeloPlus,
    /// Cache pointer to a recently walked-to block; other blocks are walked to from the head.
    Left,
    /// As LEFT, but a block other than the cached one is walked to from the cache pointer,
    /// forwards or backwards (a list linked both ways); from the head while no cache is set.
    LeftPlus,
}

/// A linked list of pool blocks for one QP.
#[derive(Debug, Clone)]
pub struct LinkedBlocks {
    block_bits: u32,
    max_blocks: u32,
    access: ListAccess,
    cache_threshold_blocks: u32,
    /// Pool blocks from the head block (`head / block_bits`) on.
    list: VecDeque<BlockId>,
    head: u32,
    /// LEFT's cache pointer: the block number it points at.
    cache: Option<u32>,
}

impl LinkedBlocks {
    /// A list of at most `max_blocks` blocks of `block_bits` bits.
    pub fn new(
        block_bits: u32,
        max_blocks: u32,
        access: ListAccess,
        cache_threshold_blocks: u32,
    ) -> LinkedBlocks {
        LinkedBlocks {
            block_bits,
            max_blocks: max_blocks.max(1),
            access,
            cache_threshold_blocks,
            list: VecDeque::new(),
            head: 0,
            cache: None,
        }
    }

    fn head_block(&self) -> u32 {
        self.head / self.block_bits
    }

    /// Cycles to reach the existing block at list position `pos`, moving the cache pointer
    /// as the design does.
    fn locate(&mut self, pos: u32) -> u32 {
        let last = self.list.len() as u32 - 1;
        let block = self.head_block() + pos;
        if pos == 0 || pos == last {
            return 1;
        }
        if self.access != ListAccess::MeloPlus && self.cache == Some(block) {
            return 1;
        }
        // Walk: one cycle for the starting pointer, one per link followed. LEFT+ starts at
        // its cache pointer (a block in the list: `advance` clears it once the head passes
        // it), LEFT and MELO+ at the head.
        let from = match (self.access, self.cache) {
            (ListAccess::LeftPlus, Some(c)) => c.saturating_sub(self.head_block()),
            _ => 0,
        };
        // The blocks the walk traverses: the one the starting pointer names, then one per
        // link followed. It is what the walk costs (one cycle per block), and what LEFT
        // compares with its threshold ("the number of bitmap blocks to traverse").
        let traversed = pos.abs_diff(from) + 1;
        if self.access != ListAccess::MeloPlus && traversed > self.cache_threshold_blocks {
            self.cache = Some(block);
        }
        traversed
    }

    /// Moves the head over received offsets, unlinking and freeing the blocks it leaves.
    fn advance(&mut self, pool: &mut BlockPool) {
        while self.contains(self.head, pool) {
            self.head += 1;
            if self.head.is_multiple_of(self.block_bits) {
                if let Some(id) = self.list.pop_front() {
                    pool.free(id);
                }
                if self.cache.is_some_and(|c| c < self.head_block()) {
                    self.cache = None;
                }
            }
        }
    }
}

impl ReceiveBitmap for LinkedBlocks {
    fn record(&mut self, offset: u32, pool: &mut BlockPool) -> Recorded {
        if offset < self.head {
            return Recorded::Duplicate { cycles: 1 };
        }
        if offset >= self.limit() {
            return Recorded::OutOfWindow;
        }
        let pos = offset / self.block_bits - self.head_block();
        let len = self.list.len() as u32;
        let cycles = if pos >= len {
            // Link new blocks on through the tail pointer, one access each.
            for _ in len..=pos {
                let Some(id) = pool.alloc() else {
                    return Recorded::PoolExhausted;
                };
                self.list.push_back(id);
            }
            pos + 1 - len
        } else {
            self.locate(pos)
        };
        let id = self.list[pos as usize];
        if !pool.set(id, offset % self.block_bits) {
            return Recorded::Duplicate { cycles };
        }
        self.advance(pool);
        Recorded::New { cycles }
    }

    fn head(&self) -> u32 {
        self.head
    }

    fn contains(&self, offset: u32, pool: &BlockPool) -> bool {
        if offset < self.head {
            return true;
        }
        let pos = offset / self.block_bits - self.head_block();
        match self.list.get(pos as usize) {
            Some(&id) => pool.get(id, offset % self.block_bits),
            None => false,
        }
    }

    fn blocks_held(&self) -> u32 {
        self.list.len() as u32
    }

    fn limit(&self) -> u32 {
        (self.head_block() + self.max_blocks) * self.block_bits
    }

    fn release(&mut self, pool: &mut BlockPool) {
        for id in self.list.drain(..) {
            pool.free(id);
        }
        self.cache = None;
    }
}
