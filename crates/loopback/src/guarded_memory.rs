//! Host memory that knows which ranges are registered and records every access outside them.
//!
//! The transport promises that nothing outside a registered memory region is ever read or
//! written. The harness hands the transport this memory instead of a bare [`SparseMemory`], so
//! the promise is checked on every single access rather than only by comparing bytes afterwards.

use std::cell::RefCell;

use rnic_host::SparseMemory;
use rnic_transport::Memory;

/// A byte range `[start, start + len)` that a registered MR covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub len: u64,
}

impl Region {
    fn contains(&self, addr: u64, len: u64) -> bool {
        addr >= self.start
            && addr
                .checked_add(len)
                .is_some_and(|end| end <= self.start + self.len)
    }
}

/// An access the transport made outside every registered region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Violation {
    pub write: bool,
    pub addr: u64,
    pub len: u64,
}

/// [`SparseMemory`] plus the registered regions and the violations seen.
#[derive(Debug, Default)]
pub struct GuardedMemory {
    pub bytes: SparseMemory,
    regions: Vec<Region>,
    /// A `RefCell` because [`Memory::read`] takes `&self` and reads must be checked too.
    violations: RefCell<Vec<Violation>>,
}

impl GuardedMemory {
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks `[start, start + len)` as registered (call when the MR is registered).
    pub fn allow(&mut self, start: u64, len: u64) {
        self.regions.push(Region { start, len });
    }

    /// Every access made outside the registered regions so far.
    pub fn violations(&self) -> Vec<Violation> {
        self.violations.borrow().clone()
    }

    /// Records the access if it leaves every region; returns whether it is allowed.
    fn check(&self, write: bool, addr: u64, len: u64) -> bool {
        let allowed = len == 0 || self.regions.iter().any(|r| r.contains(addr, len));
        if !allowed {
            self.violations
                .borrow_mut()
                .push(Violation { write, addr, len });
        }
        allowed
    }
}

impl Memory for GuardedMemory {
    fn read(&self, addr: u64, out: &mut [u8]) {
        if self.check(false, addr, out.len() as u64) {
            self.bytes.read(addr, out);
        } else {
            out.fill(0xDB); // never leak bytes outside a region, even to a buggy caller
        }
    }

    fn write(&mut self, addr: u64, data: &[u8]) {
        if self.check(true, addr, data.len() as u64) {
            self.bytes.write(addr, data);
        }
    }
}
