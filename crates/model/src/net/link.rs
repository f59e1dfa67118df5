//! A point-to-point link: a fixed one-way propagation delay, given in ns or derived from a
//! length in km at 5 µs/km (light in fibre).

use rnic_sim::TimePs;

/// Propagation delay of light in fibre, ps per km.
pub const PS_PER_KM: u64 = 5_000_000;

/// A link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// One-way delay, ps.
    pub delay_ps: TimePs,
}

impl Link {
    /// A link with a delay in ps.
    pub fn new(delay_ps: TimePs) -> Self {
        Link { delay_ps }
    }

    /// A link of `km` kilometres of fibre.
    pub fn from_km(km: f64) -> Self {
        Link {
            delay_ps: (km * PS_PER_KM as f64).round().max(0.0) as TimePs,
        }
    }

    /// Arrival time of the last bit of a frame whose last bit left at `t`.
    pub fn arrive(&self, t: TimePs) -> TimePs {
        t + self.delay_ps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_km_is_fifty_us() {
        assert_eq!(Link::from_km(10.0).delay_ps, 50_000_000);
    }
}
