//! Mutation fuzzing of the frame parser.
//!
//! Stable Rust has no libFuzzer here, so this is a deterministic mutation fuzzer: it starts from
//! valid frames of every opcode and damages them in ways that reach every check of
//! [`FrameRepr::parse`]. Half of the damaged frames get their IPv4 checksum and ICRC repaired, so
//! the parser's deeper checks (opcode, lengths, pad, extension headers) see them instead of the
//! ICRC check rejecting everything early. A panic anywhere fails the run; every input must end
//! as `Ok` or a typed `WireError`. An accepted frame must re-emit and re-parse to itself.

use std::collections::BTreeMap;

use rnic_sim::Rng;
use rnic_wire::{icrc, ipv4, FrameRepr, BTH_OFFSET};

use crate::corpus::random_frame;

/// What a fuzzing run saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParserFuzzReport {
    pub inputs: u64,
    pub accepted: u64,
    /// Rejections by error kind (the `WireError` variant name).
    pub rejected: BTreeMap<String, u64>,
}

/// Feeds `inputs` mutated frames to the parser. Returns an error naming the first input whose
/// accepted form does not survive a re-emit/re-parse round trip.
pub fn fuzz_parser(seed: u64, inputs: u64) -> Result<ParserFuzzReport, String> {
    let mut rng = Rng::new(seed);
    let mut report = ParserFuzzReport::default();
    let mut frame = Vec::with_capacity(4200);
    let mut again = Vec::with_capacity(4200);
    for n in 0..inputs {
        mutate_input(&mut rng, &mut frame);
        report.inputs += 1;
        match FrameRepr::parse(&frame) {
            Ok(repr) => {
                report.accepted += 1;
                repr.emit(&mut again);
                let reparsed = FrameRepr::parse(&again)
                    .map_err(|e| format!("input {n}: accepted frame re-emits unparsable: {e}"))?;
                if reparsed != repr {
                    return Err(format!("input {n}: accepted frame does not round-trip"));
                }
            }
            Err(e) => {
                let kind = format!("{e:?}");
                let kind = kind
                    .split([' ', '(', '{'])
                    .next()
                    .unwrap_or("?")
                    .to_string();
                *report.rejected.entry(kind).or_default() += 1;
            }
        }
    }
    Ok(report)
}

/// Writes one fuzz input into `frame`.
fn mutate_input(rng: &mut Rng, frame: &mut Vec<u8>) {
    let strategy = rng.gen_range(0..8);
    if strategy == 0 {
        // Pure noise, sometimes with a RoCEv2-looking prefix.
        let len = rng.gen_range(0..160) as usize;
        frame.clear();
        frame.extend((0..len).map(|_| rng.next_u64() as u8));
        return;
    }
    random_frame(rng, 600, frame);
    match strategy {
        1 => flip_bits(rng, frame, 0),
        2 => {
            let keep = rng.gen_range(0..frame.len() as u64 + 1) as usize;
            frame.truncate(keep);
        }
        3 => {
            let extra = rng.gen_range(1..64);
            frame.extend((0..extra).map(|_| rng.next_u64() as u8));
        }
        4 => {
            // Damage the headers, then repair the checksums so deeper checks run.
            flip_bits(rng, frame, BTH_OFFSET.saturating_sub(28));
            repair(frame);
        }
        5 => {
            // Any opcode byte, checksums repaired.
            if let Some(b) = frame.get_mut(BTH_OFFSET) {
                *b = rng.next_u64() as u8;
            }
            repair(frame);
        }
        6 => {
            // Lie about lengths (IP total length or UDP length), checksums repaired.
            let at = if rng.gen_bool(0.5) { 16 } else { 38 };
            let v = rng.gen_range(0..0x1_0000) as u16;
            if let Some(dst) = frame.get_mut(at..at + 2) {
                dst.copy_from_slice(&v.to_be_bytes());
            }
            repair(frame);
        }
        _ => {
            // Valid frame with only its ICRC damaged, or left valid.
            if rng.gen_bool(0.5) {
                if let Some(b) = frame.last_mut() {
                    *b ^= 1 << rng.gen_range(0..8);
                }
            }
        }
    }
}

fn flip_bits(rng: &mut Rng, frame: &mut [u8], from: usize) {
    if frame.len() <= from {
        return;
    }
    for _ in 0..rng.gen_range(1..5) {
        let at = rng.gen_range(from as u64..frame.len() as u64) as usize;
        frame[at] ^= 1 << rng.gen_range(0..8);
    }
}

/// Recomputes the IPv4 header checksum and the ICRC where the frame is long enough to hold them.
fn repair(frame: &mut [u8]) {
    if let Some(ip) = frame.get_mut(14..34) {
        ipv4::Packet::new_unchecked(ip).fill_checksum();
    }
    let Some(total) = frame
        .get(16..18)
        .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    else {
        return;
    };
    let icrc_end = 14 + total;
    if icrc_end >= BTH_OFFSET + 16 && icrc_end <= frame.len() {
        if let Ok(crc) = icrc::compute(&frame[..icrc_end]) {
            frame[icrc_end - 4..icrc_end].copy_from_slice(&crc.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_survives_and_reaches_deep_checks() {
        let report = fuzz_parser(1, 20_000).unwrap();
        assert_eq!(report.inputs, 20_000);
        assert!(report.accepted > 1_000, "{report:?}");
        for kind in ["Truncated", "BadIcrc", "UnknownOpcode", "LengthMismatch"] {
            assert!(
                report.rejected.contains_key(kind),
                "{kind} never hit: {report:?}"
            );
        }
    }
}
