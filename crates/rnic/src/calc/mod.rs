//! `rnic calc`: the closed-form numbers engineers size RDMA deployments with, computed the
//! way the papers state them, so a simulation can be checked against its back-of-envelope.
//!
//! * [`queue_depth`]: the long-distance RDMA paper's rule for the queue depth (outstanding
//!   packets per QP) that keeps a long link busy: QD = bandwidth × RTT / frame size.
//! * [`frame_bytes`]: the bytes one RoCEv2 packet occupies on an Ethernet link, header by
//!   header, from `rnic-wire`'s header lengths (the frame size the QD rule divides by).

mod decimal;

use decimal::Decimal;
use rnic_model::words::short_num;
use rnic_wire::Opcode;
use serde::Serialize;

/// One-way propagation in optical fibre, µs per km (light at about c / 1.47): the
/// long-distance RDMA paper's emulation uses 100 µs RTT per 10 km, i.e. 5 µs/km one way.
pub const FIBRE_US_PER_KM: f64 = 5.0;

/// Ethernet II header without a VLAN tag, bytes.
const ETHERNET_BYTES: u64 = rnic_wire::ethernet::HEADER_LEN as u64;
/// An 802.1Q tag, bytes (RoCE deployments carry one for PFC priority).
const VLAN_TAG_BYTES: u64 = 4;
/// The Ethernet frame check sequence, bytes (on the wire, not in rnic's captures).
const FCS_BYTES: u64 = rnic_wire::ethernet::FCS_LEN as u64;
/// The shortest Ethernet frame, FCS included: the MAC pads shorter ones (IEEE 802.3).
const MIN_FRAME_BYTES: u64 = rnic_wire::ethernet::MIN_FRAME_LEN as u64 + FCS_BYTES;
/// The longest frame `qd` takes, FCS included: rnic's config sets no Ethernet MTU (only
/// `qp.pmtu`, at most 4096 B of payload per packet), so the largest jumbo frame common
/// switches carry, 9,216 B, stands in for it.
const MAX_FRAME_BYTES: u64 = 9216;
/// The path MTUs RoCE allows, bytes: a packet's payload is at most the largest, and a FIRST
/// or MIDDLE packet carries exactly one.
const PMTUS: &[u64] = crate::config::schema::PMTUS;

/// The inputs of the queue-depth rule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QdInput {
    /// Line rate, Gbit/s.
    pub gbps: f64,
    /// Round-trip time, µs.
    pub rtt_us: f64,
    /// Bytes of one frame on the wire.
    pub frame_bytes: u64,
}

/// The queue-depth rule's answer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QdResult {
    /// What was asked.
    pub input: QdInput,
    /// Bytes in flight over one round trip: bandwidth × RTT.
    pub bytes_in_flight: f64,
    /// bandwidth × RTT / frame size, unrounded.
    pub exact: f64,
    /// The queue depth, rounded down as the paper states it (2991 for 100 Gbit/s, 100 km,
    /// 4178 B); one more packet covers the fraction. At least 1: a round trip that holds
    /// less than one frame still needs the frame outstanding, and a queue of 0 holds none.
    pub queue_depth: u64,
}

/// QD = bandwidth × RTT / frame size. Errors name the flag and the fix.
pub fn queue_depth(input: QdInput) -> Result<QdResult, String> {
    in_range("--gbps", input.gbps, gbps_range(), "Gbit/s", "as eth.gbps")?;
    in_range(
        "--rtt-us",
        input.rtt_us,
        (MIN_RTT_US, MAX_RTT_US),
        "µs",
        "one clock tick to twice the longest one-way delay a link takes",
    )?;
    if input.frame_bytes == 0 {
        return Err(
            "--frame-bytes 0: give the frame size in bytes, e.g. --frame-bytes 4178 \
                    (`rnic calc frame --payload-bytes 4096 --vlan` shows where it comes from)"
                .into(),
        );
    }
    if input.frame_bytes < MIN_FRAME_BYTES {
        return Err(format!(
            "--frame-bytes {}: an Ethernet frame is at least {MIN_FRAME_BYTES} B with its \
             FCS (the MAC pads a shorter one, as `rnic calc frame` shows); give the frame's \
             bytes on the link, e.g. --frame-bytes 4178",
            input.frame_bytes
        ));
    }
    if input.frame_bytes > MAX_FRAME_BYTES {
        return Err(format!(
            "--frame-bytes {}: more than 9,216 B, the largest Ethernet jumbo frame rnic takes \
             (its config sets no Ethernet MTU; qp.pmtu caps a RoCE packet's payload at 4096 B, \
             a 4178 B frame with its RETH and an 802.1Q tag, as `rnic calc frame` shows); give \
             the frame's bytes on the link, e.g. --frame-bytes 4178",
            input.frame_bytes
        ));
    }
    let (bytes_in_flight, exact) = exact_quotients(input).unwrap_or_else(|| {
        let bytes = input.gbps * 1e9 / 8.0 * input.rtt_us * 1e-6;
        (bytes, bytes / input.frame_bytes as f64)
    });
    // The ranges keep the depth under 2^53 (2.5e13 B in flight at most), where every whole
    // f64 is exact, so the floor printed is the floor of the quotient, digit for digit.
    if exact.is_nan() || exact >= EXACT_INTEGERS {
        return Err(format!(
            "the queue depth would be {} frames ({} Gbit/s × {} µs / {} B), more than the \
             ranges allow: give a line rate, round trip or frame size a link can have",
            short_num(exact),
            short_num(input.gbps),
            short_num(input.rtt_us),
            input.frame_bytes
        ));
    }
    Ok(QdResult {
        input,
        bytes_in_flight,
        exact,
        queue_depth: floor_of_depth(input).unwrap_or(exact.floor() as u64).max(1),
    })
}

/// Bits in flight, bandwidth × RTT, on the inputs as typed (Gbit/s × µs × 1000); `None`
/// where the decimals overflow 128 bits, far outside the ranges.
fn bits_in_flight(input: QdInput) -> Option<Decimal> {
    Decimal::of(input.gbps)?
        .times(Decimal::of(input.rtt_us)?)?
        .times(Decimal::whole(1000))
}

/// ⌊bandwidth × RTT / frame size⌋ on the inputs as typed, so that a depth on a whole number
/// is that number.
fn floor_of_depth(input: QdInput) -> Option<u64> {
    let frame_bits = input.frame_bytes.checked_mul(8)?;
    u64::try_from(bits_in_flight(input)?.floor_div(frame_bits)?).ok()
}

/// The bytes in flight and the unrounded depth, from the inputs as typed: a figure on a
/// whole number is that number in the JSON too (it said 332.99999999999994 beside a depth
/// of 333; found by an output-consistency hunt).
fn exact_quotients(input: QdInput) -> Option<(f64, f64)> {
    let bits = bits_in_flight(input)?;
    let frame_bits = input.frame_bytes.checked_mul(8)?;
    Some((bits.div_to_f64(8)?, bits.div_to_f64(frame_bits)?))
}

/// 2^53: from here on an f64 no longer holds every whole number, so a depth this large
/// could not be printed as the exact floor it claims to be.
const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0;

/// The longest distance `qd` takes, km: a million, the most rnic's links model
/// (`net.link_km`, `net.wan_km`), 25 times round the Earth.
pub const MAX_KM: f64 = 1e6;
/// The shortest distance `qd` takes, km: a metre (shorter is a patch cable, whose round
/// trip --rtt-us gives better).
pub const MIN_KM: f64 = 1e-3;
/// The largest one-way delay per km `qd` takes, µs: a thousand times fibre's; with
/// [`MAX_KM`] it keeps the round trip finite.
pub const MAX_US_PER_KM: f64 = 1000.0 * FIBRE_US_PER_KM;
/// The smallest one-way delay per km, µs: light in vacuum takes 3.336 µs per km, and
/// nothing carries a signal faster.
pub const MIN_US_PER_KM: f64 = 3.33;
/// The shortest round trip, µs: one picosecond, the simulator's clock tick.
pub const MIN_RTT_US: f64 = 1e-6;
/// The longest round trip, µs: 20 s, twice the longest one-way delay a link in the config
/// takes (`net.link_delay_ns` and a topology link's `delay_ns`, 10 s).
pub const MAX_RTT_US: f64 = 2.0 * crate::config::schema::MAX_DELAY_NS / 1000.0;

/// The line rates `--gbps` takes, Gbit/s: those of `eth.gbps`, the link rate a run models.
pub fn gbps_range() -> (f64, f64) {
    crate::config::schema::declared_range("eth.gbps").expect("eth.gbps is declared with a range")
}

/// Refuses `x` for `flag` outside `[min, max]` (in `unit`; `why` says where the range
/// comes from), naming both ends, with every number short enough to read.
pub fn in_range(
    flag: &str,
    x: f64,
    (min, max): (f64, f64),
    unit: &str,
    why: &str,
) -> Result<(), String> {
    if x.is_finite() && x >= min && x <= max {
        return Ok(());
    }
    Err(format!(
        "{flag} {}: give a value from {} to {} {unit} ({why})",
        short_num(x),
        short_num(min),
        short_num(max)
    ))
}

/// Round trip over `km` of fibre at `us_per_km` one way, µs.
pub fn rtt_us(km: f64, us_per_km: f64) -> Result<f64, String> {
    in_range(
        "--km",
        km,
        (MIN_KM, MAX_KM),
        "km",
        "a metre to the most net.link_km and net.wan_km take; or give --rtt-us",
    )?;
    in_range(
        "--us-per-km",
        us_per_km,
        (MIN_US_PER_KM, MAX_US_PER_KM),
        "µs per km",
        "light in vacuum to a thousand times fibre's 5; or give --rtt-us",
    )?;
    // The product of the decimals as typed (2 × 0.1 km × 4.9 µs/km is 0.98 µs, where
    // floating point gives 0.9800000000000001); the float product where they overflow.
    let rtt = Decimal::of(km)
        .zip(Decimal::of(us_per_km))
        .and_then(|(km, us)| Decimal::whole(2).times(km)?.times(us))
        .map_or(2.0 * km * us_per_km, Decimal::to_f64);
    if rtt > MAX_RTT_US {
        return Err(format!(
            "--km {} at --us-per-km {} is a round trip of {} µs, more than {} µs (twice the \
             longest one-way delay a link takes): give a shorter distance or delay",
            short_num(km),
            short_num(us_per_km),
            short_num(rtt),
            short_num(MAX_RTT_US)
        ));
    }
    Ok(rtt)
}

/// One part of a frame and its size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FramePart {
    /// The header's (or payload's) name.
    pub name: &'static str,
    /// Bytes.
    pub bytes: u64,
}

/// A RoCEv2 frame's size on the wire, part by part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FrameSize {
    /// The opcode the packet carries.
    pub opcode: String,
    /// Each part in wire order.
    pub parts: Vec<FramePart>,
    /// Their sum: the frame from destination MAC to FCS.
    pub frame_bytes: u64,
}

/// The opcodes `rnic calc frame --opcode` knows, by the names it accepts: every RC packet
/// a RoCEv2 link carries (UC's have the same headers, UD's SEND adds a DETH).
/// `read-response` is the MIDDLE packet (no AETH), as it was before the others were named.
pub const FRAME_OPCODES: [(&str, Opcode); 23] = [
    ("write-first", Opcode::RcWriteFirst),
    ("write-middle", Opcode::RcWriteMiddle),
    ("write-last", Opcode::RcWriteLast),
    ("write-last-imm", Opcode::RcWriteLastImm),
    ("write-only", Opcode::RcWriteOnly),
    ("write-only-imm", Opcode::RcWriteOnlyImm),
    ("send-first", Opcode::RcSendFirst),
    ("send-middle", Opcode::RcSendMiddle),
    ("send-last", Opcode::RcSendLast),
    ("send-last-imm", Opcode::RcSendLastImm),
    ("send-only", Opcode::RcSendOnly),
    ("send-only-imm", Opcode::RcSendOnlyImm),
    ("send-last-inv", Opcode::RcSendLastInv),
    ("send-only-inv", Opcode::RcSendOnlyInv),
    ("read-request", Opcode::RcReadRequest),
    ("read-response", Opcode::RcReadResponseMiddle),
    ("read-response-first", Opcode::RcReadResponseFirst),
    ("read-response-middle", Opcode::RcReadResponseMiddle),
    ("read-response-last", Opcode::RcReadResponseLast),
    ("read-response-only", Opcode::RcReadResponseOnly),
    ("atomic", Opcode::RcFetchAdd),
    ("atomic-ack", Opcode::RcAtomicAck),
    ("ack", Opcode::RcAck),
];

/// The name `--opcode` takes for `opcode` (the most specific where two name it: a READ
/// response's middle packet is `read-response-middle`, not `read-response`), as answers and
/// errors say it.
fn opcode_name(opcode: Opcode) -> &'static str {
    FRAME_OPCODES
        .iter()
        .rev()
        .find(|&&(_, op)| op == opcode)
        .map_or("RoCEv2", |&(name, _)| name)
}

/// The `--opcode` names of the LAST and ONLY packets of `opcode`'s kind of message (WRITE,
/// SEND or READ response): what a payload shorter than the path MTU is carried in.
fn message_end_names(opcode: Opcode) -> &'static str {
    match opcode {
        Opcode::RcReadResponseFirst | Opcode::RcReadResponseMiddle => {
            "read-response-last or read-response-only"
        }
        Opcode::RcSendFirst | Opcode::RcSendMiddle => "send-last or send-only",
        _ => "write-last or write-only",
    }
}

/// The bytes a RoCEv2 (IPv4) packet of `opcode` with `payload_bytes` occupies on the link:
/// Ethernet (+ 802.1Q tag if `vlan`), IPv4, UDP, BTH, the opcode's extension headers, the
/// payload padded to 4 bytes, ICRC and FCS, and the MAC's pad up to the 64-byte minimum
/// frame. A packet carries at most one path MTU (4096 B at most), and a FIRST or MIDDLE
/// packet exactly one.
pub fn frame_bytes(opcode: Opcode, payload_bytes: u64, vlan: bool) -> Result<FrameSize, String> {
    if payload_bytes > 0 && !opcode.has_payload() {
        return Err(format!(
            "--payload-bytes {payload_bytes}: {} carries no payload; give 0 or a \
             data-carrying --opcode",
            opcode_name(opcode)
        ));
    }
    let max_pmtu = PMTUS[PMTUS.len() - 1];
    if payload_bytes > max_pmtu {
        return Err(format!(
            "--payload-bytes {payload_bytes}: one RoCEv2 packet carries at most one path MTU, \
             {max_pmtu} bytes at most (a longer message is cut into packets of the path MTU): \
             give one packet's payload"
        ));
    }
    if (opcode.is_first() || opcode.is_middle()) && !PMTUS.contains(&payload_bytes) {
        let pmtus: Vec<String> = PMTUS.iter().map(u64::to_string).collect();
        return Err(format!(
            "--payload-bytes {payload_bytes}: a {} packet carries exactly one path MTU \
             ({} bytes); a shorter payload ends a message (a LAST or ONLY packet: --opcode \
             {})",
            opcode_name(opcode),
            pmtus.join(", "),
            message_end_names(opcode)
        ));
    }
    let mut parts = vec![FramePart {
        name: "Ethernet",
        bytes: ETHERNET_BYTES,
    }];
    if vlan {
        parts.push(FramePart {
            name: "802.1Q tag",
            bytes: VLAN_TAG_BYTES,
        });
    }
    parts.extend([
        FramePart {
            name: "IPv4",
            bytes: rnic_wire::ipv4::HEADER_LEN as u64,
        },
        FramePart {
            name: "UDP",
            bytes: rnic_wire::udp::HEADER_LEN as u64,
        },
        FramePart {
            name: "BTH",
            bytes: rnic_wire::bth::HEADER_LEN as u64,
        },
    ]);
    let ext = opcode.ext_headers_len() as u64;
    if ext > 0 {
        parts.push(FramePart {
            name: "extension headers",
            bytes: ext,
        });
    }
    if payload_bytes > 0 {
        parts.push(FramePart {
            name: "payload",
            bytes: payload_bytes,
        });
    }
    let pad = (4 - payload_bytes % 4) % 4;
    if pad > 0 {
        parts.push(FramePart {
            name: "pad",
            bytes: pad,
        });
    }
    parts.push(FramePart {
        name: "ICRC",
        bytes: rnic_wire::icrc::ICRC_LEN as u64,
    });
    let short =
        MIN_FRAME_BYTES.saturating_sub(parts.iter().map(|p| p.bytes).sum::<u64>() + FCS_BYTES);
    if short > 0 {
        parts.push(FramePart {
            name: "Ethernet pad",
            bytes: short,
        });
    }
    parts.push(FramePart {
        name: "FCS",
        bytes: FCS_BYTES,
    });
    Ok(FrameSize {
        opcode: opcode_name(opcode).to_string(),
        frame_bytes: parts.iter().map(|p| p.bytes).sum(),
        parts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_queue_depth_for_100_km() {
        let rtt = rtt_us(100.0, FIBRE_US_PER_KM).unwrap();
        assert_eq!(rtt, 1000.0);
        let r = queue_depth(QdInput {
            gbps: 100.0,
            rtt_us: rtt,
            frame_bytes: 4178,
        })
        .unwrap();
        assert_eq!(r.queue_depth, 2991);
        assert!((r.exact - 2991.862).abs() < 1e-3, "{}", r.exact);
        assert_eq!(r.bytes_in_flight, 12_500_000.0);
    }

    /// 100 Gbit/s × 33.3 µs / (1250 B × 8) is 333 exactly; in floating point the quotient
    /// is 332.99999999999994, and the depth printed was 332. Through `--km` too: 2 × 3.33 km
    /// × 5 µs/km, and 2 × 0.1 km × 4.9 µs/km, whose float product is 0.9800000000000001.
    #[test]
    fn a_depth_on_a_whole_number_is_that_number() {
        let depth = |gbps, rtt_us, frame_bytes| {
            queue_depth(QdInput {
                gbps,
                rtt_us,
                frame_bytes,
            })
            .unwrap()
            .queue_depth
        };
        assert_eq!(depth(100.0, 33.3, 1250), 333);
        assert_eq!(depth(200.0, 33.3, 1500), 555);
        assert_eq!(depth(100.0, rtt_us(3.33, 5.0).unwrap(), 1250), 333);
        let rtt = rtt_us(0.1, 4.9).unwrap();
        assert_eq!(rtt.to_string(), "0.98");
        assert_eq!(depth(100.0, rtt, 1225), 10);
        assert_eq!(depth(10.0, rtt, 1225), 1);
        // Just below a whole number stays below it.
        assert_eq!(depth(100.0, 33.299, 1250), 332);
        // The JSON's unrounded figures say the same: 333 and 416,250 B, not
        // 332.99999999999994 and 416249.99999999994.
        let qd = |gbps, rtt_us, frame_bytes| {
            let input = QdInput {
                gbps,
                rtt_us,
                frame_bytes,
            };
            queue_depth(input).unwrap()
        };
        let r = qd(100.0, 33.3, 1250);
        assert_eq!((r.exact, r.bytes_in_flight), (333.0, 416_250.0));
        let r = qd(33.3, 8_200_000.0, 1000);
        assert_eq!((r.exact, r.queue_depth), (34_132_500.0, 34_132_500));
    }

    #[test]
    fn a_4096_byte_write_first_with_a_vlan_tag_is_the_papers_4178_bytes() {
        let f = frame_bytes(Opcode::RcWriteFirst, 4096, true).unwrap();
        assert_eq!(f.frame_bytes, 4178);
        let f = frame_bytes(Opcode::RcWriteMiddle, 4096, false).unwrap();
        assert_eq!(f.frame_bytes, 14 + 20 + 8 + 12 + 4096 + 4 + 4);
        let ack = frame_bytes(Opcode::RcAck, 0, false).unwrap();
        assert_eq!(ack.frame_bytes, 14 + 20 + 8 + 12 + 4 + 4 + 4);
        let odd = frame_bytes(Opcode::RcSendOnly, 1, false).unwrap();
        assert_eq!(odd.frame_bytes, 14 + 20 + 8 + 12 + 1 + 3 + 4 + 4);
    }

    #[test]
    fn a_short_frame_is_padded_to_the_ethernet_minimum() {
        // 14 + 20 + 8 + 12 + 4 + 4 = 62 B: the MAC pads it to 64 B (60 + FCS) on the link.
        let f = frame_bytes(Opcode::RcSendOnly, 0, false).unwrap();
        assert_eq!(f.frame_bytes, 64);
        assert!(f
            .parts
            .iter()
            .any(|p| p.name == "Ethernet pad" && p.bytes == 2));
        // Already 66 B: nothing added.
        let f = frame_bytes(Opcode::RcSendOnly, 1, false).unwrap();
        assert_eq!(f.frame_bytes, 66);
    }

    #[test]
    fn a_packet_carries_at_most_one_path_mtu_and_first_or_middle_exactly_one() {
        let e = frame_bytes(Opcode::RcWriteOnly, 5000, false).unwrap_err();
        assert!(
            e.contains("--payload-bytes 5000") && e.contains("4096"),
            "{e}"
        );
        for op in [
            Opcode::RcWriteFirst,
            Opcode::RcWriteMiddle,
            Opcode::RcSendFirst,
            Opcode::RcReadResponseMiddle,
        ] {
            let e = frame_bytes(op, 100, false).unwrap_err();
            assert!(
                e.contains("--payload-bytes 100") && e.contains("path MTU"),
                "{e}"
            );
            assert!(frame_bytes(op, 1024, false).is_ok());
        }
        assert!(frame_bytes(Opcode::RcWriteOnly, 100, false).is_ok());
    }

    /// A short payload on a FIRST or MIDDLE packet is refused with the opcodes that end a
    /// message of the same kind: a READ response's hint named WRITE and SEND packets.
    #[test]
    fn a_short_first_or_middle_names_its_own_last_and_only() {
        for (op, names) in [
            (Opcode::RcWriteMiddle, "--opcode write-last or write-only"),
            (Opcode::RcSendFirst, "--opcode send-last or send-only"),
            (
                Opcode::RcReadResponseMiddle,
                "--opcode read-response-last or read-response-only",
            ),
            (
                Opcode::RcReadResponseFirst,
                "--opcode read-response-last or read-response-only",
            ),
        ] {
            let e = frame_bytes(op, 100, false).unwrap_err();
            assert!(e.contains(names), "{op:?}: {e}");
        }
    }

    /// Answers and errors name the opcode as `--opcode` takes it, not by the wire crate's
    /// type name (they said `RcWriteFirst` and `RcAck`).
    #[test]
    fn the_opcode_is_named_as_the_flag_takes_it() {
        let f = frame_bytes(Opcode::RcWriteFirst, 1024, false).unwrap();
        assert_eq!(f.opcode, "write-first");
        let f = frame_bytes(Opcode::RcReadResponseMiddle, 1024, false).unwrap();
        assert_eq!(f.opcode, "read-response-middle");
        let e = frame_bytes(Opcode::RcAck, 10, false).unwrap_err();
        assert!(e.contains(": ack carries no payload"), "{e}");
        let e = frame_bytes(Opcode::RcSendMiddle, 10, false).unwrap_err();
        assert!(e.contains("a send-middle packet carries"), "{e}");
    }

    /// Every opcode a RoCEv2 link carries, by the name `--opcode` takes, against its size
    /// added up by hand: Ethernet 14, IPv4 20, UDP 8, BTH 12, its extension headers
    /// (RETH 16, AETH 4, ImmDt 4, AtomicETH 28, AtomicAckETH 8), payload and pad, ICRC 4,
    /// FCS 4.
    #[test]
    fn every_opcode_by_name_has_its_headers() {
        let base = 14 + 20 + 8 + 12 + 4 + 4;
        for (name, payload, bytes) in [
            ("send-middle", 1024, base + 1024),
            ("send-last", 100, base + 100),
            ("send-last-imm", 100, base + 4 + 100),
            ("send-last-inv", 100, base + 4 + 100),
            ("send-only-inv", 100, base + 4 + 100),
            ("send-only-imm", 100, base + 4 + 100),
            ("write-only-imm", 64, base + 16 + 4 + 64),
            ("write-last-imm", 64, base + 4 + 64),
            ("read-request", 0, base + 16),
            ("read-response-first", 4096, base + 4 + 4096),
            ("read-response-middle", 4096, base + 4096),
            ("read-response-last", 100, base + 4 + 100),
            ("read-response-only", 100, base + 4 + 100),
            ("atomic", 0, base + 28),
            ("atomic-ack", 0, base + 4 + 8),
        ] {
            let (_, op) = FRAME_OPCODES
                .iter()
                .find(|(n, _)| *n == name)
                .unwrap_or_else(|| panic!("--opcode {name} is missing"));
            let f = frame_bytes(*op, payload, false).unwrap();
            assert_eq!(f.frame_bytes, bytes, "{name}");
        }
    }

    /// `--opcode` names every RC WRITE and SEND packet, with immediate or invalidate too, as
    /// the book says (`send-last-imm`, `send-last-inv` and `send-only-inv` were missing).
    #[test]
    fn every_rc_write_and_send_opcode_has_a_name() {
        let named: Vec<Opcode> = FRAME_OPCODES.iter().map(|&(_, op)| op).collect();
        for op in Opcode::ALL {
            let write_or_send = matches!(op.as_u8(), 0x00..=0x0B | 0x16 | 0x17);
            if write_or_send {
                assert!(named.contains(&op), "{op:?} has no --opcode name");
            }
        }
    }

    /// `--gbps 1e-308` (and `--km`, `--rtt-us`, `--us-per-km` the same) was taken and
    /// echoed as a 300-digit decimal; `--gbps 1e12 --km 1e6` printed a depth past 2^53 as
    /// an exact floor whose last digits were float noise.
    #[test]
    fn inputs_outside_plausible_ranges_are_refused_in_short_numbers() {
        let ok = QdInput {
            gbps: 100.0,
            rtt_us: 1000.0,
            frame_bytes: 4178,
        };
        for (e, flag) in [
            (
                queue_depth(QdInput { gbps: 1e-308, ..ok }).map(|_| ()),
                "--gbps 1e-308:",
            ),
            (
                queue_depth(QdInput { gbps: 5e-324, ..ok }).map(|_| ()),
                "--gbps 5e-324:",
            ),
            (
                queue_depth(QdInput { gbps: 1e308, ..ok }).map(|_| ()),
                "--gbps 1e308:",
            ),
            (
                queue_depth(QdInput { gbps: 1e12, ..ok }).map(|_| ()),
                "--gbps 1e12:",
            ),
            (
                queue_depth(QdInput {
                    rtt_us: 1e-308,
                    ..ok
                })
                .map(|_| ()),
                "--rtt-us 1e-308:",
            ),
            (rtt_us(1e-308, 5.0).map(|_| ()), "--km 1e-308:"),
            (rtt_us(10.0, 1e-308).map(|_| ()), "--us-per-km 1e-308:"),
        ] {
            let e = e.unwrap_err();
            assert!(e.contains(flag) && e.contains("give a value from"), "{e}");
            assert!(e.len() < 200, "{e}");
        }
        // The largest depth the ranges allow stays where whole f64s are exact.
        let (_, max_gbps) = gbps_range();
        let r = queue_depth(QdInput {
            gbps: max_gbps,
            rtt_us: MAX_RTT_US,
            frame_bytes: MIN_FRAME_BYTES,
        })
        .unwrap();
        assert!(r.exact < EXACT_INTEGERS, "{}", r.exact);
        assert_eq!(r.queue_depth, 390_625_000_000);
    }

    #[test]
    fn bad_inputs_name_the_flag() {
        let ok = QdInput {
            gbps: 100.0,
            rtt_us: 1000.0,
            frame_bytes: 4178,
        };
        let e = queue_depth(QdInput { gbps: 0.0, ..ok }).unwrap_err();
        assert!(e.contains("--gbps"), "{e}");
        let e = queue_depth(QdInput {
            frame_bytes: 0,
            ..ok
        })
        .unwrap_err();
        assert!(e.contains("--frame-bytes"), "{e}");
        let e = queue_depth(QdInput {
            rtt_us: f64::NAN,
            ..ok
        })
        .unwrap_err();
        assert!(e.contains("--rtt-us"), "{e}");
        // Past the ranges: refused naming the flag and both ends, in short numbers.
        let e = queue_depth(QdInput { gbps: 1e30, ..ok }).unwrap_err();
        assert!(
            e.contains("--gbps 1e30: give a value from 0.001 to 10000 Gbit/s"),
            "{e}"
        );
        let e = queue_depth(QdInput { rtt_us: 1e31, ..ok }).unwrap_err();
        assert!(
            e.contains("--rtt-us 1e31") && e.contains("to 20000000 µs"),
            "{e}"
        );
        let big = queue_depth(QdInput {
            gbps: 10_000.0,
            rtt_us: 1e7,
            frame_bytes: 64,
        })
        .unwrap();
        assert_eq!(big.queue_depth, 195_312_500_000);
        assert!(rtt_us(-1.0, 5.0).unwrap_err().contains("--km"));
        assert!(rtt_us(10.0, 0.0).unwrap_err().contains("--us-per-km"));
        assert!(rtt_us(1e6, 5000.0)
            .unwrap_err()
            .contains("round trip of 1e10 µs"));
        let e = frame_bytes(Opcode::RcAck, 8, false).unwrap_err();
        assert!(e.contains("--payload-bytes"), "{e}");
    }
}
