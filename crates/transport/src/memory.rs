//! The host memory seen by the transport.
//!
//! `Memory` is raw, unchecked byte storage (the simulated host DRAM). The transport never
//! calls it before the memory-region check in [`crate::mr`] has allowed the exact range, so an
//! implementation does not need to defend against hostile addresses: every address it sees lies
//! inside a registered region.

/// Raw host memory: byte addressed, 64-bit addresses.
pub trait Memory {
    /// Copies `out.len()` bytes starting at `addr` into `out`.
    fn read(&self, addr: u64, out: &mut [u8]);
    /// Copies `data` to `addr ..`.
    fn write(&mut self, addr: u64, data: &[u8]);
}
