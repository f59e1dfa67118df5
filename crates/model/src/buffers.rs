//! Where a run's buffers lie: each pair's source and destination buffer slot, a budget of
//! distinct bytes per node, and UD's GRH area before each payload. The run builds the
//! buffers with it and the limits check the run against it.

use crate::config::Config;

/// Bytes of distinct buffers per node; pairs beyond share buffer slots (same pattern).
pub(crate) const BUFFER_BUDGET: u64 = 256 << 20;

/// Bytes between two pairs' buffers of `size`-byte messages.
pub fn buffer_stride(size: u64) -> u64 {
    align_up(size.max(8), 64)
}

/// Distinct buffer slots per node for `size`-byte messages on `qps` pairs (pair i uses slot
/// i mod slots).
pub fn buffer_slots(size: u64, qps: u32) -> u32 {
    (BUFFER_BUDGET / buffer_stride(size)).clamp(1, u64::from(qps.max(1))) as u32
}

/// `x` rounded up to a multiple of `a`.
pub fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// Bytes before the payload in every receive buffer: UD's 40-byte GRH area, else 0.
pub fn grh_bytes(cfg: &Config) -> u64 {
    if cfg.qp.transport == crate::config::Transport::Ud {
        rnic_transport::ud::GRH_BYTES as u64
    } else {
        0
    }
}
