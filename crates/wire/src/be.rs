//! Big-endian field helpers shared by the header views.
//!
//! A field is a byte range of at most 8 bytes; reading folds it into a `u64`, writing stores the
//! low bytes of a `u64`. Callers slice with ranges whose end was checked by `new_checked`.

/// Reads a big-endian unsigned integer of `bytes.len()` (≤ 8) bytes.
#[inline]
pub(crate) fn read(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |acc, &b| (acc << 8) | u64::from(b))
}

/// Writes the low `bytes.len()` (≤ 8) bytes of `value`, big-endian; higher bits are dropped.
#[inline]
pub(crate) fn write(bytes: &mut [u8], value: u64) {
    for (i, b) in bytes.iter_mut().rev().enumerate() {
        *b = value.checked_shr(8 * i as u32).unwrap_or(0) as u8;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip_24_bit() {
        let mut b = [0u8; 3];
        super::write(&mut b, 0x12_3456_789a);
        assert_eq!(b, [0x56, 0x78, 0x9a]);
        assert_eq!(super::read(&b), 0x56789a);
    }
}
