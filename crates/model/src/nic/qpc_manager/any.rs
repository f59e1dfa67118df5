//! The NIC's QPC manager as a closed set of kinds.
//!
//! Why an enum and not a `Box<dyn QpcManager>`: the pipeline calls the manager three or
//! more times per packet (`accepting`, `submit`, `pump`); through a vtable each call is an
//! indirect call that cannot be inlined. A match over the two kinds is a direct, inlinable
//! call, and the run is the same.

use rnic_sim::TimePs;

use super::fcfs::Fcfs;
use super::{Channel, QpcJob, QpcManager, QpcManagerStats, QpcOutputs};
use crate::nic::mech::csrna::nonblocking::NonBlocking;
use crate::nic::qpc_cache::QpcCache;

/// One of the QPC manager kinds (`nic.qpc_manager`). Neither is boxed: a NIC holds exactly
/// one, so the larger variant's size costs nothing, and a box would put back the indirection
/// this type removes.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum AnyQpcManager {
    /// First come, first served: one blocking FIFO.
    Fcfs(Fcfs),
    /// Non-blocking requesters (csRNA).
    NonBlocking(NonBlocking),
}

/// Calls the method in `$call` on whichever manager `$self` holds (as `$m`).
macro_rules! delegate {
    ($self:ident, $m:ident => $call:expr) => {
        match $self {
            AnyQpcManager::Fcfs($m) => $call,
            AnyQpcManager::NonBlocking($m) => $call,
        }
    };
}

/// The [`QpcManager`] methods, inherent so that callers need not import the trait (as with
/// the trait object this replaces).
impl AnyQpcManager {
    #[inline]
    pub fn submit(&mut self, req: QpcJob) {
        delegate!(self, m => m.submit(req))
    }
    #[inline]
    pub fn queued(&self, channel: Channel) -> u32 {
        delegate!(self, m => m.queued(channel))
    }
    #[inline]
    pub fn accepting(&self, channel: Channel) -> bool {
        delegate!(self, m => m.accepting(channel))
    }
    #[inline]
    pub fn pump(&mut self, now: TimePs, out: &mut QpcOutputs) {
        delegate!(self, m => m.pump(now, out))
    }
    #[inline]
    pub fn on_fill(&mut self, now: TimePs, qpn: u32, out: &mut QpcOutputs) {
        delegate!(self, m => m.on_fill(now, qpn, out))
    }
    pub fn stats(&self) -> QpcManagerStats {
        delegate!(self, m => m.stats())
    }
    pub fn cache(&self) -> &QpcCache {
        delegate!(self, m => m.cache())
    }
    pub fn cache_mut(&mut self) -> &mut QpcCache {
        delegate!(self, m => m.cache_mut())
    }
    pub fn onchip(&self) -> Vec<(&'static str, u64)> {
        delegate!(self, m => m.onchip())
    }
}
