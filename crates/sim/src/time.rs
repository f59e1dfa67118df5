//! Simulated time.
//!
//! Time is an integer count of picoseconds. Integers keep runs deterministic
//! (no floating-point drift when durations are summed millions of times) and a
//! picosecond is fine enough for the fastest thing we model: one byte at
//! 100 Gbps takes 80 ps, one cycle at 1 GHz takes 1000 ps. A `u64` of
//! picoseconds spans about 213 days, far beyond any run.
//!
//! Floating-point helpers (`ns`, `us`, `ms`, `cycles`) exist for configuration
//! values written by people; they round to the nearest picosecond once, at the
//! boundary, so the simulation itself never sees a float.

/// A point in simulated time, or a duration, in picoseconds.
pub type TimePs = u64;

/// Picoseconds in one nanosecond.
pub const PS_PER_NS: u64 = 1_000;
/// Picoseconds in one microsecond.
pub const PS_PER_US: u64 = 1_000_000;
/// Picoseconds in one millisecond.
pub const PS_PER_MS: u64 = 1_000_000_000;
/// Picoseconds in one second.
pub const PS_PER_S: u64 = 1_000_000_000_000;

/// Converts a float count of `unit_ps` units to picoseconds, rounded to nearest.
///
/// Negative values and NaN become 0 and values beyond `u64::MAX` saturate: a
/// float-to-int `as` cast saturates in Rust, which is the documented behaviour
/// we want for a configuration typo rather than a panic.
fn scaled(x: f64, unit_ps: u64) -> TimePs {
    (x * unit_ps as f64).round() as TimePs
}

/// `x` nanoseconds in picoseconds, rounded to the nearest picosecond.
pub fn ns(x: f64) -> TimePs {
    scaled(x, PS_PER_NS)
}

/// `x` microseconds in picoseconds, rounded to the nearest picosecond.
pub fn us(x: f64) -> TimePs {
    scaled(x, PS_PER_US)
}

/// `x` milliseconds in picoseconds, rounded to the nearest picosecond.
pub fn ms(x: f64) -> TimePs {
    scaled(x, PS_PER_MS)
}

/// `x` seconds in picoseconds, rounded to the nearest picosecond.
pub fn secs(x: f64) -> TimePs {
    scaled(x, PS_PER_S)
}

/// Duration of `n` cycles of a clock running at `clock_ghz`, rounded to the
/// nearest picosecond.
///
/// The rounding happens on the total, not per cycle, so `cycles(3, 3.0)` is
/// exactly 1000 ps even though one 3 GHz cycle is 333.33 ps. A non-positive or
/// NaN clock yields 0 or saturates (see [`ns`]); callers validate clocks when
/// loading configuration.
pub fn cycles(n: u64, clock_ghz: f64) -> TimePs {
    (n as f64 * PS_PER_NS as f64 / clock_ghz).round() as TimePs
}

/// Picoseconds as float nanoseconds (for reports).
pub fn to_ns(t_ps: TimePs) -> f64 {
    t_ps as f64 / PS_PER_NS as f64
}

/// Picoseconds as float microseconds (for reports).
pub fn to_us(t_ps: TimePs) -> f64 {
    t_ps as f64 / PS_PER_US as f64
}

/// Picoseconds as float milliseconds (for reports).
pub fn to_ms(t_ps: TimePs) -> f64 {
    t_ps as f64 / PS_PER_MS as f64
}

/// Picoseconds as float seconds (for reports and rates).
pub fn to_s(t_ps: TimePs) -> f64 {
    t_ps as f64 / PS_PER_S as f64
}

/// Time to serialize `bytes` onto a channel of `gbps` gigabits per second, in
/// picoseconds: `bytes * 8000 / gbps`, computed exactly in integers.
///
/// Rounding: **up** to the next whole picosecond. A transfer is finished only
/// when its last bit is out, so rounding up never lets a channel go faster than
/// its rate; the error is under 1 ps per transfer. The common rates need no
/// rounding at all (100 Gbps: 80 ps/byte, 25 Gbps: 320 ps/byte, 128 Gbps: 62.5
/// ps/byte so only odd byte counts round by 0.5 ps).
///
/// A rate of 0 means "infinitely slow" and returns `TimePs::MAX` rather than
/// dividing by zero; results beyond `TimePs::MAX` saturate.
pub fn bytes_time_ps(bytes: u64, gbps: u64) -> TimePs {
    // 8 bits/byte * 1000 ps/ns: b bytes at g Gbit/s = 8b/g ns = 8000b/g ps.
    div_ceil_sat(u128::from(bytes) * 8_000, u128::from(gbps))
}

/// Like [`bytes_time_ps`] for rates that are not whole Gbps (e.g. 12.5 Gbps =
/// 12 500 Mbps): `bytes * 8_000_000 / mbps` ps, rounded up, exact.
pub fn bytes_time_ps_mbps(bytes: u64, mbps: u64) -> TimePs {
    div_ceil_sat(u128::from(bytes) * 8_000_000, u128::from(mbps))
}

/// Serialisation time of `bytes` at `mbps`, ps, rounded up: the same value as
/// [`bytes_time_ps_mbps`] with 64-bit arithmetic on the hot path (u128 beyond 2^40 bytes).
/// Every serial resource (a link, a port, a PCIe lane) charges its frames with it.
#[inline]
pub fn ser_ps(bytes: u64, mbps: u64) -> TimePs {
    if bytes < (1 << 40) && mbps > 0 {
        (bytes * 8_000_000).div_ceil(mbps)
    } else {
        bytes_time_ps_mbps(bytes, mbps)
    }
}

/// `ceil(num / den)` saturated to `u64`; `den == 0` gives `u64::MAX`.
fn div_ceil_sat(num: u128, den: u128) -> TimePs {
    if den == 0 {
        return TimePs::MAX;
    }
    TimePs::try_from(num.div_ceil(den)).unwrap_or(TimePs::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_helpers_round_to_nearest_ps() {
        assert_eq!(ns(1.0), 1_000);
        assert_eq!(ns(0.0004), 0);
        assert_eq!(ns(0.0006), 1);
        assert_eq!(us(1.5), 1_500_000);
        assert_eq!(ms(2.0), 2_000_000_000);
        assert_eq!(secs(1.0), PS_PER_S);
        // 0.1 is not representable; rounding makes it exact anyway.
        assert_eq!(ns(0.1) * 10, ns(1.0));
    }

    #[test]
    fn float_helpers_saturate_instead_of_panicking() {
        assert_eq!(ns(-5.0), 0);
        assert_eq!(ns(f64::NAN), 0);
        assert_eq!(secs(1e30), u64::MAX);
    }

    #[test]
    fn cycles_round_on_the_total() {
        assert_eq!(cycles(1, 1.0), 1_000);
        assert_eq!(cycles(16, 1.0), 16_000);
        assert_eq!(cycles(3, 3.0), 1_000);
        assert_eq!(cycles(1, 3.0), 333);
        assert_eq!(cycles(2, 3.0), 667);
        assert_eq!(cycles(5, 0.25), 20_000);
    }

    #[test]
    fn conversions_to_float() {
        assert_eq!(to_ns(1_500), 1.5);
        assert_eq!(to_us(2_500_000), 2.5);
        assert_eq!(to_ms(PS_PER_MS * 3), 3.0);
        assert_eq!(to_s(PS_PER_S / 4), 0.25);
    }

    #[test]
    fn serialization_time_is_exact() {
        assert_eq!(bytes_time_ps(1, 100), 80);
        assert_eq!(bytes_time_ps(1500, 100), 120_000);
        assert_eq!(bytes_time_ps(64, 25), 20_480);
        // 128 Gbps (PCIe default): 62.5 ps/byte, odd counts round up.
        assert_eq!(bytes_time_ps(2, 128), 125);
        assert_eq!(bytes_time_ps(1, 128), 63);
        assert_eq!(bytes_time_ps(0, 100), 0);
        assert_eq!(bytes_time_ps(1, 0), u64::MAX);
        assert_eq!(bytes_time_ps(u64::MAX, 1), u64::MAX);
        assert_eq!(bytes_time_ps_mbps(1, 12_500), 640);
        assert_eq!(bytes_time_ps_mbps(1500, 100_000), bytes_time_ps(1500, 100));
    }

    #[test]
    fn serialization_time_never_undershoots() {
        for gbps in [1u64, 3, 7, 25, 40, 100, 128, 200, 400] {
            for bytes in [1u64, 2, 3, 63, 64, 1023, 4096, 9000] {
                let t = bytes_time_ps(bytes, gbps);
                let exact = bytes as f64 * 8000.0 / gbps as f64;
                assert!(t as f64 >= exact && (t as f64) < exact + 1.0);
            }
        }
    }
}
