//! Host memory that knows which ranges are registered and records every access outside them.
//!
//! The transport promises that nothing outside a registered memory region is ever read or
//! written. The harness hands the transport this memory instead of a bare [`SparseMemory`], so
//! the promise is checked on every single access rather than only by comparing bytes afterwards.
//!
//! It can also check every write as it lands ([`GuardedMemory::expect_landing`]): the harness
//! says which bytes each operation's destination must end up holding, and every byte the
//! transport writes must be one of those, with exactly that value. A payload placed at the
//! wrong offset, or a wrong payload that a later retransmission overwrites, is caught at the
//! moment it lands, which comparing the final buffers cannot see.

use std::cell::RefCell;
use std::collections::BTreeMap;

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

/// A write whose bytes are not what the destination must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadLanding {
    /// Address of the first wrong byte.
    pub addr: u64,
    /// The byte written there, and the one expected (`None`: no operation targets it).
    pub got: u8,
    pub want: Option<u8>,
}

/// [`SparseMemory`] plus the registered regions and the violations seen.
#[derive(Debug, Default)]
pub struct GuardedMemory {
    pub bytes: SparseMemory,
    regions: Vec<Region>,
    /// A `RefCell` because [`Memory::read`] takes `&self` and reads must be checked too.
    violations: RefCell<Vec<Violation>>,
    /// Expected final contents by start address (disjoint ranges); writes are checked
    /// against them once any is set.
    landing: BTreeMap<u64, Vec<u8>>,
    bad_landings: Vec<BadLanding>,
    landed_bytes: u64,
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

    /// From now on every write must put exactly `bytes` at `addr..`, byte for byte
    /// (ranges of different calls must not overlap).
    pub fn expect_landing(&mut self, addr: u64, bytes: Vec<u8>) {
        if !bytes.is_empty() {
            self.landing.insert(addr, bytes);
        }
    }

    /// Writes that put a byte no operation expects, first wrong byte of each.
    pub fn bad_landings(&self) -> &[BadLanding] {
        &self.bad_landings
    }

    /// Bytes written and checked against the expected contents as they landed.
    pub fn landed_bytes(&self) -> u64 {
        self.landed_bytes
    }

    /// Checks one write against the expected contents.
    fn check_landing(&mut self, addr: u64, data: &[u8]) {
        if self.landing.is_empty() {
            return;
        }
        for (i, &got) in data.iter().enumerate() {
            let at = addr + i as u64;
            let want = self
                .landing
                .range(..=at)
                .next_back()
                .and_then(|(&start, bytes)| bytes.get((at - start) as usize).copied());
            if want != Some(got) {
                self.bad_landings.push(BadLanding {
                    addr: at,
                    got,
                    want,
                });
                return;
            }
        }
        self.landed_bytes += data.len() as u64;
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
            self.check_landing(addr, data);
            self.bytes.write(addr, data);
        }
    }
}
