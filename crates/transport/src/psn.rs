//! 24-bit packet sequence number arithmetic.
//!
//! PSNs wrap at 2^24. Two PSNs are compared by their signed distance in a half window
//! (2^23): `b` is "after" `a` when going forward from `a` to `b` is shorter than going back.
//! Every sender keeps fewer than 2^23 PSNs outstanding, so the comparison is never ambiguous.

/// Mask of the 24 PSN bits.
pub const PSN_MASK: u32 = 0x00FF_FFFF;
/// Half of the PSN space: the largest distance [`psn_diff`] can report going forward.
pub const PSN_HALF_WINDOW: u32 = 1 << 23;

/// `psn + n`, wrapped to 24 bits.
#[inline]
pub fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// `psn - n`, wrapped to 24 bits.
#[inline]
pub fn psn_sub(psn: u32, n: u32) -> u32 {
    psn.wrapping_sub(n) & PSN_MASK
}

/// Signed distance `a - b` in the half window: in `-2^23 ..= 2^23 - 1`.
#[inline]
pub fn psn_diff(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & PSN_MASK;
    // Sign-extend the 24-bit difference.
    ((d << 8) as i32) >> 8
}

/// `a` comes before `b`.
#[inline]
pub fn psn_lt(a: u32, b: u32) -> bool {
    psn_diff(a, b) < 0
}

/// `a` comes before `b` or equals it.
#[inline]
pub fn psn_le(a: u32, b: u32) -> bool {
    psn_diff(a, b) <= 0
}

/// `a` comes after `b`.
#[inline]
pub fn psn_gt(a: u32, b: u32) -> bool {
    psn_diff(a, b) > 0
}

/// `a` comes after `b` or equals it.
#[inline]
pub fn psn_ge(a: u32, b: u32) -> bool {
    psn_diff(a, b) >= 0
}

/// `psn` lies in the half-open range `[start, end)` (all wrapped; `end` after `start`).
#[inline]
pub fn psn_in(psn: u32, start: u32, end: u32) -> bool {
    psn_ge(psn, start) && psn_lt(psn, end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn wraps_at_24_bits() {
        assert_eq!(psn_add(0xFF_FFFF, 1), 0);
        assert_eq!(psn_add(0xFF_FFFE, 5), 3);
        assert_eq!(psn_sub(0, 1), 0xFF_FFFF);
        assert_eq!(psn_diff(0, 0xFF_FFFF), 1);
        assert_eq!(psn_diff(0xFF_FFFF, 0), -1);
        assert!(psn_lt(0xFF_FFFF, 0));
        assert!(psn_gt(2, 0xFF_FFF0));
        assert_eq!(psn_diff(PSN_HALF_WINDOW, 0), -(PSN_HALF_WINDOW as i32));
        assert_eq!(psn_diff(PSN_HALF_WINDOW - 1, 0), PSN_HALF_WINDOW as i32 - 1);
        assert!(psn_in(0, 0xFF_FFFE, 2));
        assert!(!psn_in(2, 0xFF_FFFE, 2));
    }

    proptest! {
        #[test]
        fn add_then_diff_is_identity(a in 0u32..=PSN_MASK, n in 0u32..PSN_HALF_WINDOW) {
            let b = psn_add(a, n);
            prop_assert!(b <= PSN_MASK);
            prop_assert_eq!(psn_diff(b, a), n as i32);
            prop_assert_eq!(psn_diff(a, b), -(n as i32));
            prop_assert_eq!(psn_sub(b, n), a);
            prop_assert_eq!(psn_le(a, b), true);
            prop_assert_eq!(psn_lt(a, b), n != 0);
        }

        #[test]
        fn order_is_antisymmetric(a in 0u32..=PSN_MASK, b in 0u32..=PSN_MASK) {
            let d = psn_diff(a, b);
            prop_assert!((-(PSN_HALF_WINDOW as i32)..PSN_HALF_WINDOW as i32).contains(&d));
            if d != -(PSN_HALF_WINDOW as i32) {
                prop_assert_eq!(psn_diff(b, a), -d);
                prop_assert_eq!(psn_lt(a, b), psn_gt(b, a));
            }
            prop_assert_eq!(psn_add(b, d as u32), a);
        }

        #[test]
        fn ignores_high_bits(a in any::<u32>(), n in 0u32..1000) {
            prop_assert_eq!(psn_add(a, n), psn_add(a & PSN_MASK, n));
            prop_assert_eq!(psn_diff(psn_add(a, n), a & PSN_MASK), n as i32);
        }
    }
}
