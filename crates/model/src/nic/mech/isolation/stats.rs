//! Per-class statistics of TX isolation: the LS waiting time the paper plots and per-tenant
//! bytes (the FIFOs' and the slicing station's counters are kept by the hooks that fill them,
//! [`super::admission`] and [`super::order`]).
//!
//! Waiting time: from the WQE being ready (decoded, and its payload — with streaming its
//! first packet's — in the NIC: it could be executed) to its first packet leaving the TX
//! engine. It holds the wait in the WQE FIFO behind WQEs that are not ready (the shared
//! FIFO's head-of-line blocking), the requester's QPC access, and the wait for the
//! transport (run to completion: whole messages of other QPs).

use rnic_sim::TimePs;

/// Waiting times of one class, ps.
#[derive(Debug, Default, Clone)]
pub struct Waits {
    samples_ps: Vec<TimePs>,
}

impl Waits {
    /// Adds one waiting time.
    pub fn push(&mut self, ps: TimePs) {
        self.samples_ps.push(ps);
    }

    /// Samples taken.
    pub fn len(&self) -> usize {
        self.samples_ps.len()
    }

    /// No samples.
    pub fn is_empty(&self) -> bool {
        self.samples_ps.is_empty()
    }

    /// The `q` quantile (0..=1, nearest rank), ps; 0 without samples.
    pub fn quantile_ps(&self, q: f64) -> TimePs {
        if self.samples_ps.is_empty() {
            return 0;
        }
        let mut v = self.samples_ps.clone();
        v.sort_unstable();
        let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
        v[rank - 1]
    }

    /// Mean, ps.
    pub fn mean_ps(&self) -> TimePs {
        if self.samples_ps.is_empty() {
            return 0;
        }
        self.samples_ps.iter().sum::<TimePs>() / self.samples_ps.len() as TimePs
    }

    /// Records `count`, `p50`, `p99`, `max` and `avg` under `prefix`, in ps and in NIC
    /// cycles of `cycle_ps` (rounded up: a wait of part of a cycle is a cycle).
    pub fn report(&self, prefix: &str, cycle_ps: TimePs, reg: &mut crate::stats::Registry) {
        reg.set(&format!("{prefix}.count"), self.len() as u64);
        let figures = [
            ("p50", self.quantile_ps(0.50)),
            ("p99", self.quantile_ps(0.99)),
            ("max", self.quantile_ps(1.0)),
            ("avg", self.mean_ps()),
        ];
        for (name, ps) in figures {
            reg.set(&format!("{prefix}.{name}_ps"), ps);
            reg.set(
                &format!("{prefix}.{name}_cycles"),
                ps.div_ceil(cycle_ps.max(1)),
            );
        }
    }
}

/// Waiting times and bytes of the isolation units.
#[derive(Debug, Default, Clone)]
pub struct IsoStats {
    /// LS waiting times.
    pub ls_wait: Waits,
    /// Their first part: ready until handed to the transport (the WQE FIFO's order and the
    /// requester's QPC access).
    pub ls_wait_fifo: Waits,
    /// Their second part: handed to the transport until the first packet left (the TX
    /// engine busy with other QPs' packets).
    pub ls_wait_engine: Waits,
    /// BS waiting times (same definition).
    pub bs_wait: Waits,
    /// LS WQEs' time from entering the NIC (decoded into the WQE buffer) to their first
    /// packet leaving the TX engine: the latency the paper's RTL records (from the WQE's
    /// write into its WQE cache to the transport's last packet descriptor of it; an LS
    /// message is one packet). It holds the payload read and the waiting time, and leaves
    /// out the time the WQE waits to be read at all (coupled backpressure).
    pub ls_in_nic: Waits,
    /// Payload bytes of first transmissions, per tenant.
    pub tenant_tx_bytes: Vec<u64>,
}

impl IsoStats {
    /// Counts `bytes` sent by `tenant`.
    pub fn sent(&mut self, tenant: u16, bytes: u64) {
        let t = usize::from(tenant);
        if self.tenant_tx_bytes.len() <= t {
            self.tenant_tx_bytes.resize(t + 1, 0);
        }
        self.tenant_tx_bytes[t] += bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let mut w = Waits::default();
        assert_eq!(w.quantile_ps(0.99), 0);
        for x in 1..=100 {
            w.push(x);
        }
        assert_eq!(w.quantile_ps(0.5), 50);
        assert_eq!(w.quantile_ps(0.99), 99);
        assert_eq!(w.quantile_ps(1.0), 100);
        assert_eq!(w.mean_ps(), 50);
    }
}
