//! The shared pool of bitmap blocks every QP allocates from (MELO's idea, kept by LEFT and
//! ORNIC): `count` blocks of `bits` bits, handed out and returned by id.

/// Index of a block in the pool (12 bits wide for the ORNIC paper's 4096 blocks).
pub type BlockId = u32;

/// A pool of equal bitmap blocks with a free list.
#[derive(Debug, Clone)]
pub struct BlockPool {
    bits: u32,
    words: Vec<u64>,
    free: Vec<BlockId>,
    in_use: u32,
    peak_in_use: u32,
}

impl BlockPool {
    /// `count` blocks of `bits` bits each (1 to 64).
    pub fn new(count: u32, bits: u32) -> BlockPool {
        assert!((1..=64).contains(&bits), "block width {bits} not in 1..=64");
        BlockPool {
            bits,
            words: vec![0; count as usize],
            // Popped from the end: block 0 is handed out first.
            free: (0..count).rev().collect(),
            in_use: 0,
            peak_in_use: 0,
        }
    }

    /// Bits per block.
    pub fn block_bits(&self) -> u32 {
        self.bits
    }

    /// A cleared block, or `None` when the pool is empty.
    pub fn alloc(&mut self) -> Option<BlockId> {
        let id = self.free.pop()?;
        self.words[id as usize] = 0;
        self.in_use += 1;
        self.peak_in_use = self.peak_in_use.max(self.in_use);
        Some(id)
    }

    /// Returns `id` to the pool.
    pub fn free(&mut self, id: BlockId) {
        debug_assert!(!self.free.contains(&id), "block {id} freed twice");
        self.free.push(id);
        self.in_use -= 1;
    }

    /// Sets bit `bit` of block `id`; returns whether it was clear.
    pub fn set(&mut self, id: BlockId, bit: u32) -> bool {
        let w = &mut self.words[id as usize];
        let was_clear = *w & (1 << bit) == 0;
        *w |= 1 << bit;
        was_clear
    }

    /// Whether bit `bit` of block `id` is set.
    pub fn get(&self, id: BlockId, bit: u32) -> bool {
        self.words[id as usize] & (1 << bit) != 0
    }

    /// Whether every bit of block `id` is set.
    pub fn is_full(&self, id: BlockId) -> bool {
        let all = if self.bits == 64 {
            u64::MAX
        } else {
            (1u64 << self.bits) - 1
        };
        self.words[id as usize] == all
    }

    /// Blocks handed out now.
    pub fn in_use(&self) -> u32 {
        self.in_use
    }

    /// The most blocks handed out at once.
    pub fn peak_in_use(&self) -> u32 {
        self.peak_in_use
    }

    /// Blocks free now.
    pub fn available(&self) -> u32 {
        self.free.len() as u32
    }
}
