//! MP-RDMA's bitmap: one fixed window of OTD bits per QP, allocated with the QP (so it takes
//! nothing from a pool, and costs OTD bits for every QP whether it is busy or not). A packet
//! beyond the window is dropped: after a loss the window stays stuck at the missing PSN and
//! drops everything past it until the retransmission arrives.

use super::{BlockPool, ReceiveBitmap, Recorded};

/// A static ring of `width` bits for one QP.
#[derive(Debug, Clone)]
pub struct StaticBitmap {
    bits: Vec<bool>,
    head: u32,
}

impl StaticBitmap {
    /// A window of `width` PSNs.
    pub fn new(width: u32) -> StaticBitmap {
        StaticBitmap {
            bits: vec![false; width.max(1) as usize],
            head: 0,
        }
    }

    fn slot(&self, offset: u32) -> usize {
        offset as usize % self.bits.len()
    }
}

impl ReceiveBitmap for StaticBitmap {
    fn record(&mut self, offset: u32, _pool: &mut BlockPool) -> Recorded {
        if offset < self.head {
            return Recorded::Duplicate { cycles: 1 };
        }
        if offset >= self.limit() {
            return Recorded::OutOfWindow;
        }
        let s = self.slot(offset);
        if self.bits[s] {
            return Recorded::Duplicate { cycles: 1 };
        }
        self.bits[s] = true;
        while self.bits[self.slot(self.head)] {
            let h = self.slot(self.head);
            self.bits[h] = false;
            self.head += 1;
        }
        Recorded::New { cycles: 1 }
    }

    fn head(&self) -> u32 {
        self.head
    }

    fn contains(&self, offset: u32, _pool: &BlockPool) -> bool {
        offset < self.head || (offset < self.limit() && self.bits[self.slot(offset)])
    }

    fn blocks_held(&self) -> u32 {
        0
    }

    fn limit(&self) -> u32 {
        self.head + self.bits.len() as u32
    }

    fn release(&mut self, _pool: &mut BlockPool) {
        self.bits.iter_mut().for_each(|b| *b = false);
        self.head = 0;
    }
}
