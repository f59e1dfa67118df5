//! Protection domains: the scope inside which a QP may use a memory region.

/// Handle of a protection domain. A QP and every MR it touches must share one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PdId(pub u32);
