//! Memory regions and the one check every memory access goes through.
//!
//! A region is registered with an address range, a protection domain and access flags; it gets
//! a key (lkey == rkey, like Linux rxe: index in the upper 24 bits, a key byte in the lower 8).
//! [`MrTable::check`] is the gate in front of [`crate::Memory`]: it validates key, PD, access
//! and bounds for a byte range, and it is called before every read or write the transport makes.

use crate::pd::PdId;
use core::fmt;
use core::ops::{BitOr, BitOrAssign};
use rustc_hash::FxHashMap;

/// Access rights of a memory region or QP (values as in libibverbs `ibv_access_flags`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Access(u8);

impl Access {
    /// The local HCA may write the region (RECV scatter, READ response and atomic result
    /// placement). Required by IB whenever REMOTE_WRITE or REMOTE_ATOMIC is asked for.
    pub const LOCAL_WRITE: Access = Access(1);
    /// Remote RDMA WRITE may target the region.
    pub const REMOTE_WRITE: Access = Access(2);
    /// Remote RDMA READ may read the region.
    pub const REMOTE_READ: Access = Access(4);
    /// Remote atomics may target the region.
    pub const REMOTE_ATOMIC: Access = Access(8);

    /// No rights beyond local read.
    pub const fn empty() -> Access {
        Access(0)
    }
    /// Every right.
    pub const fn all() -> Access {
        Access(0x0F)
    }
    /// The raw bits.
    pub const fn bits(self) -> u8 {
        self.0
    }
    /// Builds from raw bits, dropping unknown ones.
    pub const fn from_bits_truncate(bits: u8) -> Access {
        Access(bits & 0x0F)
    }
    /// Every right in `other` is also in `self`.
    pub const fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
    /// Both sets of rights.
    pub const fn union(self, other: Access) -> Access {
        Access(self.0 | other.0)
    }
    /// No right at all.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        self.union(rhs)
    }
}

impl BitOrAssign for Access {
    fn bitor_assign(&mut self, rhs: Access) {
        *self = self.union(rhs);
    }
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [(Access, &str); 4] = [
            (Access::LOCAL_WRITE, "LOCAL_WRITE"),
            (Access::REMOTE_WRITE, "REMOTE_WRITE"),
            (Access::REMOTE_READ, "REMOTE_READ"),
            (Access::REMOTE_ATOMIC, "REMOTE_ATOMIC"),
        ];
        let mut first = true;
        write!(f, "Access(")?;
        for (flag, name) in NAMES {
            if self.contains(flag) {
                if !first {
                    write!(f, " | ")?;
                }
                write!(f, "{name}")?;
                first = false;
            }
        }
        if first {
            write!(f, "empty")?;
        }
        write!(f, ")")
    }
}

/// Keys of a registered region. Equal, as in Linux rxe; kept apart so callers say which one
/// they mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MrKeys {
    pub lkey: u32,
    pub rkey: u32,
}

/// Why a memory access was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MrCheckError {
    /// No region has this key (never registered, deregistered, or invalidated).
    InvalidKey,
    /// The region belongs to another protection domain.
    PdMismatch,
    /// The region lacks a needed access right.
    AccessDenied,
    /// The byte range is not entirely inside the region.
    OutOfBounds,
}

/// One registered region.
#[derive(Debug, Clone)]
struct Mr {
    pd: PdId,
    addr: u64,
    len: u64,
    access: Access,
    /// Cleared by SEND with invalidate; an invalidated region refuses every access.
    valid: bool,
}

/// Every memory region of one device, by key.
#[derive(Debug, Default)]
pub struct MrTable {
    mrs: FxHashMap<u32, Mr>,
    /// Index of the next region (upper 24 bits of its key); never reused, so a stale key
    /// cannot match a later region.
    next_index: u32,
}

/// Largest region index (keys are `index << 8 | key byte`).
const MAX_MR_INDEX: u32 = 0x00FF_FFFF;

impl MrTable {
    pub fn new() -> MrTable {
        MrTable::default()
    }

    /// Number of live regions.
    pub fn len(&self) -> usize {
        self.mrs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.mrs.is_empty()
    }

    /// Registers `[addr, addr + len)`. Fails with `None` when the key space is exhausted.
    pub(crate) fn register(
        &mut self,
        pd: PdId,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Option<u32> {
        if self.next_index >= MAX_MR_INDEX {
            return None;
        }
        self.next_index += 1;
        let index = self.next_index;
        // The key byte varies so that keys look like hardware keys and a key with the right
        // index but a wrong key byte is refused.
        let key_byte = (index.wrapping_mul(0x9E) ^ 0x5A) & 0xFF;
        let key = (index << 8) | key_byte;
        self.mrs.insert(
            key,
            Mr {
                pd,
                addr,
                len,
                access,
                valid: true,
            },
        );
        Some(key)
    }

    /// Removes a region; false when the key is unknown.
    pub(crate) fn deregister(&mut self, key: u32) -> bool {
        self.mrs.remove(&key).is_some()
    }

    /// SEND with invalidate: the region stays registered but refuses every access until it
    /// is deregistered.
    pub(crate) fn invalidate(&mut self, rkey: u32, pd: PdId) -> Result<(), MrCheckError> {
        match self.mrs.get_mut(&rkey) {
            Some(mr) if mr.valid => {
                if mr.pd != pd {
                    return Err(MrCheckError::PdMismatch);
                }
                mr.valid = false;
                Ok(())
            }
            _ => Err(MrCheckError::InvalidKey),
        }
    }

    /// The gate in front of every memory access: may a QP of `pd` touch `[addr, addr + len)`
    /// through `key` with the rights in `need`? Local reads need no right (`Access::empty()`).
    /// A zero-length range still needs a valid key in the right PD.
    pub fn check(
        &self,
        key: u32,
        pd: PdId,
        addr: u64,
        len: u64,
        need: Access,
    ) -> Result<(), MrCheckError> {
        let mr = match self.mrs.get(&key) {
            Some(mr) if mr.valid => mr,
            _ => return Err(MrCheckError::InvalidKey),
        };
        if mr.pd != pd {
            return Err(MrCheckError::PdMismatch);
        }
        if !mr.access.contains(need) {
            return Err(MrCheckError::AccessDenied);
        }
        let end = addr.checked_add(len).ok_or(MrCheckError::OutOfBounds)?;
        // `mr.addr + mr.len` cannot overflow: registration refuses such regions.
        if addr < mr.addr || end > mr.addr + mr.len {
            return Err(MrCheckError::OutOfBounds);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_flags() {
        let a = Access::LOCAL_WRITE | Access::REMOTE_READ;
        assert!(a.contains(Access::REMOTE_READ));
        assert!(!a.contains(Access::REMOTE_WRITE));
        assert!(a.contains(Access::empty()));
        assert_eq!(format!("{a:?}"), "Access(LOCAL_WRITE | REMOTE_READ)");
        assert_eq!(format!("{:?}", Access::empty()), "Access(empty)");
        assert_eq!(Access::from_bits_truncate(0xFF), Access::all());
    }

    #[test]
    fn check_key_pd_access_bounds() {
        let mut t = MrTable::new();
        let pd = PdId(1);
        let k = t
            .register(
                pd,
                0x1000,
                0x100,
                Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            )
            .unwrap();
        assert_eq!(t.check(k, pd, 0x1000, 0x100, Access::REMOTE_WRITE), Ok(()));
        assert_eq!(t.check(k, pd, 0x10FF, 1, Access::empty()), Ok(()));
        assert_eq!(t.check(k, pd, 0x1100, 0, Access::empty()), Ok(()));
        assert_eq!(
            t.check(k, pd, 0x10FF, 2, Access::empty()),
            Err(MrCheckError::OutOfBounds)
        );
        assert_eq!(
            t.check(k, pd, 0xFFF, 1, Access::empty()),
            Err(MrCheckError::OutOfBounds)
        );
        assert_eq!(
            t.check(k, pd, u64::MAX - 1, 0x10, Access::empty()),
            Err(MrCheckError::OutOfBounds)
        );
        assert_eq!(
            t.check(k, pd, 0x1000, 8, Access::REMOTE_READ),
            Err(MrCheckError::AccessDenied)
        );
        assert_eq!(
            t.check(k, PdId(2), 0x1000, 8, Access::empty()),
            Err(MrCheckError::PdMismatch)
        );
        assert_eq!(
            t.check(k ^ 1, pd, 0x1000, 8, Access::empty()),
            Err(MrCheckError::InvalidKey)
        );
        assert_eq!(t.invalidate(k, PdId(2)), Err(MrCheckError::PdMismatch));
        assert_eq!(t.invalidate(k, pd), Ok(()));
        assert_eq!(
            t.check(k, pd, 0x1000, 8, Access::empty()),
            Err(MrCheckError::InvalidKey)
        );
        assert_eq!(t.invalidate(k, pd), Err(MrCheckError::InvalidKey));
        assert!(t.deregister(k));
        assert!(!t.deregister(k));
    }

    #[test]
    fn keys_are_unique() {
        let mut t = MrTable::new();
        let a = t.register(PdId(0), 0, 1, Access::empty()).unwrap();
        t.deregister(a);
        let b = t.register(PdId(0), 0, 1, Access::empty()).unwrap();
        assert_ne!(a, b);
        assert_eq!(
            t.check(a, PdId(0), 0, 1, Access::empty()),
            Err(MrCheckError::InvalidKey)
        );
    }
}
