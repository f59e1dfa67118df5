//! The RoCEv2 invariant CRC: a CRC-32 over the fields routers do not change, so it survives
//! forwarding while still protecting the transport headers and payload end to end.
//!
//! CRC-32 (the zlib one) over eight 0xFF bytes (standing in for the IB LRH), the IPv4 header
//! with TOS, TTL and header checksum as all ones, the UDP header with its checksum as all ones,
//! the BTH with byte 4 (FECN/BECN, set by switches) as all ones, then everything after the BTH
//! up to the ICRC. Stored little-endian in the last 4 bytes of the IP datagram.

use std::sync::OnceLock;

use crate::error::{check_len, Result, WireError};
use crate::{bth, ethernet, ipv4, udp};

/// Length of the ICRC trailer in bytes.
pub const ICRC_LEN: usize = 4;

const IP_START: usize = ethernet::HEADER_LEN;
/// Bytes of IPv4 + UDP + BTH that enter the CRC with some fields masked.
const MASKED_LEN: usize = ipv4::HEADER_LEN + udp::HEADER_LEN + bth::HEADER_LEN;
/// Offset of the first byte after the BTH.
const BTH_END: usize = IP_START + MASKED_LEN;
/// Offsets inside the masked block that count as all ones: TOS, TTL, IP checksum (2),
/// UDP checksum (2), BTH byte 4.
const MASKED_BYTES: [usize; 7] = [1, 8, 10, 11, 26, 27, 28 + bth::ECN_BYTE];
/// Offsets from a frame's start of the IP datagram's bytes no receiver check covers: the UDP
/// checksum and the BTH's byte 4 (FECN, BECN, reserved), which the ICRC masks and nothing
/// else reads. TOS, TTL and the IPv4 checksum, masked too, are the IPv4 header checksum's.
const UNCHECKED: [usize; 3] = [IP_START + 26, IP_START + 27, IP_START + 28 + bth::ECN_BYTE];
/// The shortest IP datagram that can carry a BTH and an ICRC.
const MIN_IP_TOTAL: usize = MASKED_LEN + ICRC_LEN;

/// Finds the ICRC offset from the IPv4 total length (not from the frame end: Ethernet padding
/// may follow the datagram).
fn icrc_offset(frame: &[u8]) -> Result<usize> {
    check_len("ipv4", IP_START + ipv4::HEADER_LEN, frame.len())?;
    let ip = ipv4::Packet::new_unchecked(&frame[IP_START..]);
    if ip.version() != 4 {
        return Err(WireError::BadIpVersion(ip.version()));
    }
    if ip.ihl_words() != 5 {
        return Err(WireError::BadIpHeaderLen(ip.ihl_words()));
    }
    let total = usize::from(ip.total_len());
    let have = frame.len() - IP_START;
    if total > have {
        return Err(WireError::LengthMismatch {
            layer: "ipv4",
            field: "total_length",
            stated: total,
            actual: have,
        });
    }
    check_len("icrc", MIN_IP_TOTAL, total)?;
    Ok(IP_START + total - ICRC_LEN)
}

/// A fresh hasher, made once and cloned: `crc32fast::Hasher::new` asks the CPU for its
/// features on every call, about a sixth of this module's cost on 64-byte frames (every frame
/// is checksummed twice).
fn fresh_hasher() -> crc32fast::Hasher {
    static HASHER: OnceLock<crc32fast::Hasher> = OnceLock::new();
    HASHER.get_or_init(crc32fast::Hasher::new).clone()
}

/// The CRC over `frame[..icrc_off]`; the caller guarantees `BTH_END <= icrc_off <= len`.
pub(crate) fn crc_at(frame: &[u8], icrc_off: usize) -> u32 {
    let mut masked = [0u8; 8 + MASKED_LEN];
    masked[..8].fill(0xFF);
    if let Some(headers) = frame.get(IP_START..BTH_END) {
        masked[8..].copy_from_slice(headers);
    }
    for i in MASKED_BYTES {
        masked[8 + i] = 0xFF;
    }
    let mut hasher = fresh_hasher();
    hasher.update(&masked);
    hasher.update(frame.get(BTH_END..icrc_off).unwrap_or(&[]));
    hasher.finalize()
}

/// [`crc_at`] for a frame the caller may change: the eight bytes before the IPv4 header
/// (the end of the Ethernet header) and the masked fields are set to all ones where they
/// lie, the CRC runs over `frame[IP_START - 8..icrc_off]` in one pass, and every byte is
/// put back, so the frame is unchanged and the CRC is the one [`crc_at`] computes.
///
/// Why: building a frame is where it is writable. One pass instead of the copied masked
/// headers and then the rest saves the copy and a second CRC call with its final reduction
/// (crc32fast folds 16-byte blocks and reduces to 32 bits at the end of every call); the
/// receiver's check cannot change the frame it reads and keeps [`crc_at`]. The caller
/// guarantees `BTH_END <= icrc_off <= frame.len()`.
pub(crate) fn crc_in_place(frame: &mut [u8], icrc_off: usize) -> u32 {
    const LRH_AT: usize = IP_START - 8;
    // One bounds check; the masked offsets are constants into the array.
    let head: &mut [u8; 8 + MASKED_LEN] = (&mut frame[LRH_AT..BTH_END])
        .try_into()
        .expect("a 56-byte range");
    let saved = *head;
    head[..8].fill(0xFF);
    for i in MASKED_BYTES {
        head[8 + i] = 0xFF;
    }
    let mut hasher = fresh_hasher();
    hasher.update(&frame[LRH_AT..icrc_off]);
    frame[LRH_AT..BTH_END].copy_from_slice(&saved);
    hasher.finalize()
}

/// Computes the ICRC of a whole Ethernet frame (the stored ICRC itself is not read).
pub fn compute(frame: &[u8]) -> Result<u32> {
    let off = icrc_offset(frame)?;
    Ok(crc_at(frame, off))
}

/// Recomputes the ICRC of a frame whose covered bytes were changed and stores it (a test
/// hook that alters a frame in flight so that only an end-to-end check can notice).
pub fn reseal(frame: &mut [u8]) -> Result<()> {
    let off = icrc_offset(frame)?;
    let crc = crc_at(frame, off);
    frame[off..off + ICRC_LEN].copy_from_slice(&crc.to_le_bytes());
    Ok(())
}

/// The ICRC stored in the frame, read little-endian.
pub fn stated(frame: &[u8]) -> Result<u32> {
    let off = icrc_offset(frame)?;
    Ok(stated_at(frame, off))
}

/// The ICRC stored at `off` (from [`icrc_offset`]), read little-endian.
fn stated_at(frame: &[u8], off: usize) -> u32 {
    let mut le = [0u8; ICRC_LEN];
    le.copy_from_slice(frame.get(off..off + ICRC_LEN).unwrap_or(&[0; ICRC_LEN]));
    u32::from_le_bytes(le)
}

/// How many bytes of `frame` a receiver's checks cover (the ICRC, or the IPv4 header checksum
/// for the fields the ICRC masks): its IP datagram's but the [`UNCHECKED`] three; 0 if it
/// carries no RoCEv2 datagram. The Ethernet header is left to the link's FCS, which frames
/// here do not carry, and padding after the datagram to nothing.
pub fn checked_len(frame: &[u8]) -> usize {
    icrc_offset(frame).map_or(0, |at| at + ICRC_LEN - IP_START - UNCHECKED.len())
}

/// The offset from the frame's start of the `k`-th byte (from 0) a receiver's checks cover
/// (`k` below [`checked_len`]): a byte changed there makes the receiver drop the frame.
pub fn checked_byte(k: usize) -> usize {
    (UNCHECKED.iter()).fold(IP_START + k, |at, &u| if at >= u { at + 1 } else { at })
}

/// Checks the stored ICRC against the computed one (the IPv4 header is read once for both).
pub fn verify(frame: &[u8]) -> Result<()> {
    let off = icrc_offset(frame)?;
    let stated = stated_at(frame, off);
    let computed = crc_at(frame, off);
    if stated == computed {
        Ok(())
    } else {
        Err(WireError::BadIcrc { stated, computed })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cnp::tests::capture;

    #[test]
    fn seeded_form_is_equivalent() {
        // The notes: seeding the CRC state with 0xDEBB20E3 replaces the eight 0xFF bytes.
        let f = capture();
        let mut h = crc32fast::Hasher::new_with_initial(!0xDEBB_20E3);
        let mut masked = f[IP_START..BTH_END].to_vec();
        for i in MASKED_BYTES {
            masked[i] = 0xFF;
        }
        h.update(&masked);
        h.update(&f[BTH_END..70]);
        assert_eq!(h.finalize(), compute(&f).unwrap());
    }

    /// Every byte [`checked_byte`] names fails the ICRC or the IPv4 header checksum when
    /// flipped, and they are all the datagram's bytes but the three no check covers.
    #[test]
    fn a_flip_in_any_checked_byte_fails_a_check() {
        let f = capture();
        let n = checked_len(&f);
        let datagram = icrc_offset(&f).unwrap() + ICRC_LEN - IP_START;
        assert_eq!(n, datagram - 3);
        let at: Vec<usize> = (0..n).map(checked_byte).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
        assert_eq!((at[0], at[n - 1]), (IP_START, IP_START + datagram - 1));
        for (k, &i) in at.iter().enumerate() {
            assert!(!UNCHECKED.contains(&i), "byte {k} at {i}");
            let mut g = f.clone();
            g[i] ^= 0x5A;
            let ip_ok = crate::ipv4::Packet::new_unchecked(&g[IP_START..]).verify_checksum();
            assert!(verify(&g).is_err() || !ip_ok, "byte {k} at {i}");
        }
        assert_eq!(checked_len(&f[..IP_START + 4]), 0);
    }

    #[test]
    fn masked_fields_do_not_change_it() {
        let f = capture();
        for off in [15, 22, 24, 25, 40, 41, 46] {
            let mut g = f.clone();
            g[off] ^= 0x5A;
            assert_eq!(compute(&g), compute(&f), "offset {off}");
        }
        let mut g = f.clone();
        g[42] ^= 1;
        assert_eq!(
            verify(&g),
            Err(WireError::BadIcrc {
                stated: 0x2a00_fd82,
                computed: compute(&g).unwrap()
            })
        );
    }

    #[test]
    fn reseal_stores_the_changed_frames_icrc_before_any_padding() {
        let mut f = capture();
        f.extend_from_slice(&[0xEE; 10]);
        f[42] ^= 1;
        assert!(verify(&f).is_err());
        reseal(&mut f).unwrap();
        assert_eq!(verify(&f), Ok(()));
        assert_eq!(&f[f.len() - 10..], &[0xEE; 10], "the padding is left alone");
        assert!(reseal(&mut f[..33]).is_err());
    }

    #[test]
    fn in_place_crc_equals_the_copied_one_and_leaves_the_frame_unchanged() {
        let f = capture();
        let off = icrc_offset(&f).unwrap();
        for flip in [
            None,
            Some(6),
            Some(13),
            Some(15),
            Some(22),
            Some(40),
            Some(46),
            Some(60),
        ] {
            let mut g = f.clone();
            if let Some(i) = flip {
                g[i] ^= 0xA5;
            }
            let want = crc_at(&g, off);
            let before = g.clone();
            assert_eq!(crc_in_place(&mut g, off), want, "flip {flip:?}");
            assert_eq!(g, before, "flip {flip:?}: the frame is put back");
        }
    }

    #[test]
    fn ethernet_padding_is_ignored() {
        let mut f = capture();
        f.extend_from_slice(&[0xEE; 10]);
        assert_eq!(verify(&f), Ok(()));
    }

    #[test]
    fn errors() {
        let f = capture();
        assert!(matches!(
            compute(&f[..33]),
            Err(WireError::Truncated { .. })
        ));
        assert!(matches!(
            compute(&f[..73]),
            Err(WireError::LengthMismatch { .. })
        ));
        let mut g = f.clone();
        g[14] = 0x46;
        assert_eq!(compute(&g), Err(WireError::BadIpHeaderLen(6)));
        g[14] = 0x65;
        assert_eq!(compute(&g), Err(WireError::BadIpVersion(6)));
        let mut g = f.clone();
        g[17] = 43; // total length too short for BTH + ICRC
        assert!(matches!(
            compute(&g),
            Err(WireError::Truncated { layer: "icrc", .. })
        ));
    }
}
