//! The bitmap block pool a device shares among its out-of-order QPs.
//!
//! The ORNIC paper sizes one pool for the whole NIC (4096 16-bit blocks for 2048 QPs: an
//! active QP holds at least two) and lets every QP take blocks from it on demand, which is
//! what makes freeing a full block early worth anything: the block goes back to the other
//! QPs at once. When the pool runs dry a QP's bitmap cannot record the packet, so the packet
//! is dropped and resent later (the bitmap degrades, it never corrupts).
//!
//! A device keeps one pool per block width (QPs created with different [`crate::OooParams`]
//! may use different widths); a QP holds a handle to its pool and gives its blocks back when
//! it is reset, errors out or is destroyed (`Drop` of its out-of-order state).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use super::BlockPool;

/// A handle to a device's shared pool.
pub type SharedPool = Rc<RefCell<BlockPool>>;

/// A device's pools, one per `(block bits, blocks)`; created on first use.
#[derive(Debug, Default)]
pub struct DevicePools {
    pools: BTreeMap<(u32, u32), SharedPool>,
}

impl DevicePools {
    /// The pool of `blocks` blocks of `block_bits` bits (clamped to 1..=64 bits, at least one
    /// block), shared with every QP that asks for the same.
    pub fn get(&mut self, block_bits: u32, blocks: u32) -> SharedPool {
        let key = (block_bits.clamp(1, 64), blocks.max(1));
        self.pools
            .entry(key)
            .or_insert_with(|| Rc::new(RefCell::new(BlockPool::new(key.1, key.0))))
            .clone()
    }

    /// Blocks in use over every pool (for tests and statistics).
    pub fn in_use(&self) -> u32 {
        self.pools.values().map(|p| p.borrow().in_use()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qps_asking_for_the_same_pool_share_it() {
        let mut d = DevicePools::default();
        let a = d.get(16, 4);
        let b = d.get(16, 4);
        let c = d.get(8, 4);
        let id = a.borrow_mut().alloc().unwrap();
        assert_eq!(b.borrow().in_use(), 1);
        assert_eq!(c.borrow().in_use(), 0);
        assert_eq!(d.in_use(), 1);
        b.borrow_mut().free(id);
        assert_eq!(d.in_use(), 0);
    }
}
