//! The check on captures built here from `rnic-wire` frames: every figure of a small
//! conversation worked out by hand, both pcap byte orders and pcapng reading alike, failures
//! and damage listed by frame number, and bad bytes of every kind never panicking.

use super::*;
use rnic_wire::{
    icrc, AethRepr, AethSyndrome, BthRepr, FrameAddr, FrameRepr, NakCode, Opcode, PcapWriter,
    RethRepr, RoceRepr,
};
use std::io::Cursor;

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

/// One RoCEv2 frame from `src` to `dst` for QP `qp`.
fn frame(src: [u8; 4], dst: [u8; 4], qp: u32, op: Opcode, psn: u32, payload: &[u8]) -> Vec<u8> {
    let bth = BthRepr {
        opcode: op,
        solicited: false,
        mig_req: false,
        pad_count: 0,
        tver: 0,
        pkey: 0xFFFF,
        fecn: false,
        becn: false,
        dest_qp: qp,
        ack_req: op.is_last() || op.is_only(),
        psn,
    };
    let mut buf = Vec::new();
    FrameRepr {
        addr: FrameAddr {
            src_ip: src,
            dst_ip: dst,
            udp_src_port: 0xC0DE,
            ttl: 64,
            ..FrameAddr::default()
        },
        ip_ident: 0,
        roce: RoceRepr::new(bth, payload).with_reth(op.has_reth().then_some(RethRepr {
            va: 0x1000,
            rkey: 5,
            dma_len: 3 * 1024,
        })),
    }
    .emit(&mut buf);
    buf
}

/// An ACK (or NAK) from B back to A's QP 0x11.
fn ack(psn: u32, syndrome: AethSyndrome) -> Vec<u8> {
    let f = frame(B, A, 0x11, Opcode::RcAck, psn, &[]);
    let repr = FrameRepr::parse(&f).unwrap();
    let roce = repr.roce.with_aeth(AethRepr { syndrome, msn: 0 });
    let mut out = Vec::new();
    FrameRepr { roce, ..repr }.emit(&mut out);
    out
}

fn positive() -> AethSyndrome {
    AethSyndrome::Ack { credits: 0x1F }
}

/// A WRITE of three 1 KiB packets, two one-packet WRITEs, a loss seen at the responder
/// (PSN 4 missing, 5 arrives), the NAK, the resend of 4 and 5, the ACK; times 1 µs apart.
fn conversation() -> Vec<(u64, Vec<u8>)> {
    let k = [0xAB; 1024];
    let w = |op, psn, p: &[u8]| frame(A, B, 0x22, op, psn, p);
    let frames = vec![
        w(Opcode::RcWriteFirst, 0, &k),
        w(Opcode::RcWriteMiddle, 1, &k),
        w(Opcode::RcWriteLast, 2, &k),
        ack(2, positive()),
        w(Opcode::RcWriteOnly, 3, &k[..100]),
        w(Opcode::RcWriteOnly, 5, &k[..100]),
        ack(4, AethSyndrome::Nak(NakCode::PsnSequenceError)),
        w(Opcode::RcWriteOnly, 4, &k[..100]),
        w(Opcode::RcWriteOnly, 5, &k[..100]),
        ack(5, positive()),
    ];
    frames
        .into_iter()
        .enumerate()
        .map(|(i, f)| ((i as u64 + 1) * 1_000, f))
        .collect()
}

/// A little-endian nanosecond pcap, as rnic writes.
fn pcap(frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    for (t_ns, f) in frames {
        w.write_packet(t_ns * 1_000, f).unwrap();
    }
    w.into_inner()
}

/// A big-endian microsecond pcap, written by hand; `snaplen` cuts the records.
fn pcap_be_us(frames: &[(u64, Vec<u8>)], snaplen: usize) -> Vec<u8> {
    let mut b = vec![0xa1, 0xb2, 0xc3, 0xd4, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0];
    b.extend_from_slice(&(snaplen as u32).to_be_bytes());
    b.extend_from_slice(&1u32.to_be_bytes());
    for (t_ns, f) in frames {
        let cap = f.len().min(snaplen);
        b.extend_from_slice(&((t_ns / 1_000_000_000) as u32).to_be_bytes());
        b.extend_from_slice(&((t_ns % 1_000_000_000 / 1_000) as u32).to_be_bytes());
        b.extend_from_slice(&(cap as u32).to_be_bytes());
        b.extend_from_slice(&(f.len() as u32).to_be_bytes());
        b.extend_from_slice(&f[..cap]);
    }
    b
}

fn ng_block(out: &mut Vec<u8>, kind: u32, body: &[u8]) {
    let len = 12 + body.len().div_ceil(4) * 4;
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(body);
    out.resize(out.len() + (4 - body.len() % 4) % 4, 0);
    out.extend_from_slice(&(len as u32).to_le_bytes());
}

/// A little-endian pcapng: SHB, an Ethernet IDB with nanosecond timestamps, an IDB of another
/// link type (113, Linux cooked) with one frame on it first, then one EPB per frame and a
/// statistics block at the end.
fn pcapng(frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut b = Vec::new();
    let mut shb = 0x1A2B_3C4Du32.to_le_bytes().to_vec();
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    ng_block(&mut b, 0x0A0D_0D0A, &shb);
    // IDB 0: Ethernet, if_tsresol = 9 (option 9, length 1), end of options.
    let mut idb = vec![1, 0, 0, 0, 0, 0, 0, 0];
    idb.extend_from_slice(&[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
    ng_block(&mut b, 1, &idb);
    ng_block(&mut b, 1, &[113, 0, 0, 0, 0, 0, 0, 0]);
    let epb = |b: &mut Vec<u8>, iface: u32, t: u64, f: &[u8]| {
        let mut e = iface.to_le_bytes().to_vec();
        e.extend_from_slice(&((t >> 32) as u32).to_le_bytes());
        e.extend_from_slice(&(t as u32).to_le_bytes());
        e.extend_from_slice(&(f.len() as u32).to_le_bytes());
        e.extend_from_slice(&(f.len() as u32).to_le_bytes());
        e.extend_from_slice(f);
        e.resize(e.len().div_ceil(4) * 4, 0);
        ng_block(b, 6, &e);
    };
    epb(&mut b, 1, 0, &[0u8; 20]);
    for (t, f) in frames {
        epb(&mut b, 0, *t, f);
    }
    ng_block(&mut b, 5, &[0u8; 12]);
    b
}

fn check(bytes: &[u8]) -> Report {
    check_reader(Cursor::new(bytes), "t.pcap").unwrap()
}

fn flow<'a>(r: &'a Report, src: &str, qp: u32) -> &'a report::FlowReport {
    r.flows
        .iter()
        .find(|f| f.src_ip == src && f.dest_qp == qp)
        .unwrap_or_else(|| panic!("no flow {src} QP {qp}: {}", r.to_text()))
}

#[test]
fn a_conversation_worked_out_by_hand() {
    let r = check(&pcap(&conversation()));
    assert!(r.passed(), "{}", r.to_text());
    assert_eq!(
        (r.frames, r.roce_frames, r.roce_frames_verified),
        (10, 10, 10)
    );
    let w = flow(&r, "10.0.0.1", 0x22);
    assert_eq!(w.messages.write, 4, "{}", r.to_text());
    assert_eq!(w.payload_bytes, 3 * 1024 + 3 * 100);
    assert_eq!(w.repeated_payload_bytes, 100);
    assert_eq!((w.psn_gaps, w.psns_skipped), (1, 1));
    assert_eq!(w.retransmitted_packets, 2);
    assert_eq!(w.opcodes["0x0a RC RDMA_WRITE_ONLY"], 4);
    assert_eq!(w.pmtu_bytes, Some(1024));
    // Round trips: LAST 2 (frame 3) to ACK 2 (frame 4), 1 µs; WRITE 3 (frame 5) to the NAK
    // at 4 (frame 7), 2 µs; 4 sent once (frame 8) to ACK 5 (frame 10), 2 µs; 5 was sent twice.
    let rtt = w.rtt_us.unwrap();
    assert_eq!((rtt.samples, rtt.min, rtt.max), (3, 1.0, 2.0));
    assert_eq!(
        w.rtt_answered_by.as_deref(),
        Some("10.0.0.2 -> 10.0.0.1 QP 0x000011")
    );
    let back = flow(&r, "10.0.0.2", 0x11);
    assert_eq!(
        (back.acks, back.naks.psn_sequence_error, back.naks_total),
        (2, 1, 1)
    );
    assert_eq!(back.messages_total, 0);
    assert!(r
        .to_text()
        .ends_with("\nok: every RoCEv2 frame parsed and passed its ICRC: 10 of 10\n"));
    let json: serde_json::Value = serde_json::from_str(&r.to_json().unwrap()).unwrap();
    assert_eq!(json["flows"][0]["rtt_us"]["p50"], 2.0);
    assert_eq!(json["flows"][0]["payload_bytes"], 3372);
}

#[test]
fn a_corrupt_byte_fails_its_frame_by_number() {
    let mut frames = conversation();
    let f = &mut frames[4].1;
    let at = f.len() - 10;
    f[at] ^= 0x01;
    let r = check(&pcap(&frames));
    assert!(!r.passed());
    assert_eq!(r.roce_frames_failed, 1);
    assert_eq!(r.failures.len(), 1);
    assert_eq!(r.failures[0].frame, 5);
    assert!(
        r.failures[0].reason.starts_with("icrc: stated"),
        "{:?}",
        r.failures
    );
    assert!(
        r.verdict.starts_with("FAILED: 1 of 10 RoCEv2 frames") && r.verdict.ends_with("(frame 5)")
    );
    // The failed frame is not analysed: WRITE 3 is missing, a gap.
    assert_eq!(flow(&r, "10.0.0.1", 0x22).messages.write, 3);
}

#[test]
fn both_pcap_byte_orders_and_pcapng_read_the_same() {
    let frames = conversation();
    let le = check(&pcap(&frames));
    let be = check(&pcap_be_us(&frames, 65535));
    assert_eq!(be.format, "pcap (big-endian, microsecond timestamps)");
    assert_eq!(le.format, "pcap (little-endian, nanosecond timestamps)");
    assert_eq!(be.flows, le.flows);
    let ng = check(&pcapng(&frames));
    assert_eq!(ng.format, "pcapng");
    assert_eq!(ng.flows, le.flows);
    assert_eq!((ng.frames, ng.skipped_frames, ng.roce_frames), (11, 1, 10));
    assert!(ng.notes[0].contains("link type is 113"), "{:?}", ng.notes);
    assert!(ng.passed());
}

#[test]
fn frames_cut_by_the_snap_length_are_analysed_but_not_verified() {
    let r = check(&pcap_be_us(&conversation(), 80));
    assert!(r.passed(), "{}", r.to_text());
    // ACK frames (62 bytes) fit; the 7 WRITE frames are cut.
    assert_eq!(
        (r.roce_frames_verified, r.roce_frames_cut_by_snaplen),
        (3, 7)
    );
    let w = flow(&r, "10.0.0.1", 0x22);
    assert_eq!((w.messages.write, w.payload_bytes), (4, 3372));
    assert!(r.verdict.contains("7 not checked"), "{}", r.verdict);
}

#[test]
fn roce_on_another_port_is_recognised_only_with_a_valid_icrc() {
    let mut moved = frame(A, B, 0x22, Opcode::RcSendOnly, 0, b"data");
    moved[36..38].copy_from_slice(&4792u16.to_be_bytes());
    let crc = icrc::compute(&moved).unwrap();
    let n = moved.len();
    moved[n - 4..].copy_from_slice(&crc.to_le_bytes());
    // The same frame relabelled without its ICRC recomputed is just UDP.
    let mut other = frame(A, B, 0x22, Opcode::RcSendOnly, 1, b"data");
    other[36..38].copy_from_slice(&4792u16.to_be_bytes());
    let r = check(&pcap(&[(1, moved), (2, other)]));
    assert!(r.passed());
    assert_eq!((r.roce_frames, r.non_roce_frames), (1, 1));
    assert_eq!(r.roce_frames_on_other_udp_ports, 1);
    assert_eq!(flow(&r, "10.0.0.1", 0x22).other_udp_dst_ports, [4792]);
    assert!(r.notes[0].contains("1 to port 4792"), "{:?}", r.notes);
}

#[test]
fn a_file_cut_short_is_damage_named_by_frame() {
    let file = pcap(&conversation());
    let r = check(&file[..file.len() - 5]);
    assert!(!r.passed());
    let last = r.failures.last().unwrap();
    assert_eq!(last.frame, 10);
    assert!(last.reason.contains("cut short"), "{}", last.reason);
    assert_eq!(r.roce_frames_verified, 9);
    assert!(r.verdict.contains("damaged"), "{}", r.verdict);
}

#[test]
fn not_a_capture_names_the_file_and_what_was_expected() {
    for bytes in [&b"{\"json\": true}"[..], b"", b"\xd4\xc3"] {
        let e = check_reader(Cursor::new(bytes), "x.json").unwrap_err();
        assert!(
            e.0.contains("x.json") && e.0.contains("expected a pcap"),
            "{e}"
        );
    }
    let e = check_path(Path::new("/nonexistent/c.pcap")).unwrap_err();
    assert!(e.0.contains("/nonexistent/c.pcap"), "{e}");
    // A valid magic and nothing else: the header is cut short.
    let e = check_reader(Cursor::new(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0]), "h.pcap").unwrap_err();
    assert!(e.0.contains("h.pcap") && e.0.contains("header"), "{e}");
    // A pcapng section header block whose byte-order magic is wrong says that (it said "the
    // header is neither pcap nor pcapng" of a block it had just read as pcapng).
    let mut shb = Vec::new();
    ng_block(
        &mut shb,
        0x0a0d_0d0a,
        &[
            0xef, 0xbe, 0xad, 0xde, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ],
    );
    let e = check_reader(Cursor::new(shb), "b.pcapng").unwrap_err();
    assert!(
        e.0.contains("byte-order magic is neither 1a2b3c4d nor 4d3c2b1a"),
        "{e}"
    );
}

/// A small deterministic generator for the bad-input tests.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn bad_bytes_never_panic() {
    let frames = conversation();
    let files = [pcap(&frames), pcap_be_us(&frames, 70), pcapng(&frames)];
    for file in &files {
        for len in 0..file.len() {
            let _ = check_reader(Cursor::new(&file[..len]), "t");
        }
    }
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    for i in 0..3_000 {
        let mut b = files[i % files.len()].clone();
        for _ in 0..1 + rng.next() % 8 {
            let at = (rng.next() % b.len() as u64) as usize;
            b[at] = rng.next() as u8;
        }
        let _ = check_reader(Cursor::new(&b), "t");
    }
    for _ in 0..300 {
        let len = (rng.next() % 4096) as usize;
        let mut b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Half of them behind a valid magic, so the record parsers see the noise.
        if len >= 4 && rng.next() & 1 == 0 {
            let magic: [u8; 4] = match rng.next() % 3 {
                0 => [0xd4, 0xc3, 0xb2, 0xa1],
                1 => [0xa1, 0xb2, 0x3c, 0x4d],
                _ => [0x0a, 0x0d, 0x0d, 0x0a],
            };
            b[..4].copy_from_slice(&magic);
        }
        let _ = check_reader(Cursor::new(&b), "t");
    }
}

#[test]
fn naks_are_counted_by_syndrome_and_reads_by_response() {
    let naks = [
        AethSyndrome::RnrNak { timer: 14 },
        AethSyndrome::Nak(NakCode::RemoteAccessError),
        AethSyndrome::Nak(NakCode::InvalidRequest),
        AethSyndrome::Nak(NakCode::RemoteOperationalError),
        AethSyndrome::Nak(NakCode::PsnSequenceError),
        AethSyndrome::Nak(NakCode::InvalidRdRequest),
    ];
    let mut frames: Vec<(u64, Vec<u8>)> = naks
        .iter()
        .enumerate()
        .map(|(i, s)| (i as u64, ack(i as u32, *s)))
        .collect();
    // A READ of 3 KiB at PSN 10 answered by FIRST, MIDDLE, LAST (1 KiB each), the LAST twice.
    let k = [7u8; 1024];
    frames.push((10, frame(A, B, 0x22, Opcode::RcReadRequest, 10, &[])));
    for (psn, op) in [
        (10, Opcode::RcReadResponseFirst),
        (11, Opcode::RcReadResponseMiddle),
        (12, Opcode::RcReadResponseLast),
        (12, Opcode::RcReadResponseLast),
    ] {
        frames.push((20 + u64::from(psn), frame(B, A, 0x11, op, psn, &k)));
    }
    // Now the MTU is known: the READ at 13 takes 13..15, so a SEND at 16 is in order and one
    // at 18 skips 17.
    frames.push((40, frame(A, B, 0x22, Opcode::RcReadRequest, 13, &[])));
    frames.push((41, frame(A, B, 0x22, Opcode::RcSendOnly, 16, b"next")));
    frames.push((42, frame(A, B, 0x22, Opcode::RcSendOnly, 18, b"skip")));
    let r = check(&pcap(&frames));
    let back = flow(&r, "10.0.0.2", 0x11);
    let n = back.naks;
    assert_eq!(
        [
            n.rnr,
            n.remote_access_error,
            n.invalid_request,
            n.remote_operational_error,
            n.psn_sequence_error,
            n.invalid_rd_request
        ],
        [1; 6]
    );
    assert_eq!((back.acks, back.naks_total), (0, 6));
    assert_eq!(back.messages.read_response, 1);
    assert_eq!((back.payload_bytes, back.repeated_responses), (3072, 1));
    let req = flow(&r, "10.0.0.1", 0x22);
    assert_eq!((req.messages.read_request, req.messages.send), (2, 2));
    assert_eq!(
        (req.psn_gaps, req.psns_skipped, req.retransmitted_packets),
        (1, 1, 0)
    );
    // Only the first READ was answered in the capture.
    assert_eq!(req.rtt_us.map(|r| r.samples), Some(1));
}

#[test]
fn records_larger_than_the_buffer_and_simple_packet_blocks() {
    // A 3 MiB record (not a frame any NIC sends, but a valid record) makes the reader grow
    // its buffer; one claiming 100 MiB is damage.
    let mut frames = conversation();
    frames.insert(0, (0, vec![0u8; 3 << 20]));
    let r = check(&pcap(&frames));
    assert!(r.passed(), "{:?}", r.failures);
    assert_eq!((r.frames, r.non_roce_frames, r.roce_frames), (11, 1, 10));
    let mut huge = pcap(&conversation()[..1]);
    huge[32..36].copy_from_slice(&(100u32 << 20).to_le_bytes());
    let r = check(&huge);
    assert!(!r.passed());
    assert!(
        r.failures[0].reason.contains("more than 16 MiB"),
        "{:?}",
        r.failures
    );
    // A simple packet block: interface 0, no timestamp.
    let f = &conversation()[0].1;
    let mut ng = pcapng(&[]);
    let mut spb = (f.len() as u32).to_le_bytes().to_vec();
    spb.extend_from_slice(f);
    ng_block(&mut ng, 3, &spb);
    let r = check(&ng);
    assert!(r.passed());
    assert_eq!((r.roce_frames_verified, r.frames), (1, 2));
    assert_eq!(r.flows[0].duration_us, 0.0);
}

#[test]
fn pfc_frames_are_counted_as_pauses_and_resumes() {
    let src = [0x02, 0x50, 0, 0, 0, 7];
    let xoff = rnic_wire::PfcRepr::xoff(src, 3, 0xffff).to_bytes().to_vec();
    let xon = rnic_wire::PfcRepr::xon(src, 3).to_bytes().to_vec();
    // A MAC control frame with another opcode (802.3x PAUSE) is not PFC.
    let mut pause_8023x = xoff.clone();
    pause_8023x[14..16].copy_from_slice(&1u16.to_be_bytes());
    let data = frame(A, B, 0x22, Opcode::RcSendOnly, 0, b"data");
    let r = check(&pcap(&[(1, xoff), (2, data), (3, xon), (4, pause_8023x)]));
    assert!(r.passed(), "{}", r.to_text());
    assert_eq!((r.roce_frames, r.non_roce_frames), (1, 3));
    assert_eq!((r.pfc_pause_frames, r.pfc_resume_frames), (1, 1));
    assert!(
        r.to_text()
            .contains("1 PAUSE frames (XOFF), 1 resumes (XON)"),
        "{}",
        r.to_text()
    );
}

/// A READ request from A to B at `psn` asking for `len` bytes.
fn read_request(psn: u32, len: u32) -> Vec<u8> {
    read_request_op(Opcode::RcReadRequest, psn, len)
}

/// A READ request (`op`: RC or out-of-order) from A to B at `psn` asking for `len` bytes.
fn read_request_op(op: Opcode, psn: u32, len: u32) -> Vec<u8> {
    let f = frame(A, B, 0x22, op, psn, &[]);
    let repr = FrameRepr::parse(&f).unwrap();
    let reth = RethRepr {
        va: 0x1000,
        rkey: 5,
        dma_len: len,
    };
    let roce = repr.roce.with_reth(Some(reth));
    let mut out = Vec::new();
    FrameRepr { roce, ..repr }.emit(&mut out);
    out
}

#[test]
fn a_read_re_requested_from_its_middle_on_the_requesters_port_is_a_repeat() {
    // The requester's port sees its READ requests before any response: two 3 KiB READs at
    // 10 (10..12) and 13 (13..15) leave before the path MTU is known. Response 11 is lost,
    // so the requester re-reads 2 KiB from 11 after LAST 12; the second READ's responses
    // arrive, then the re-read's. Two READs, one request sent again: the re-read is no
    // message of its own, and no round trip (its PSN was asked for before; the answer at 13
    // that follows it 1 µs later belongs to the READ at 13).
    let k = [7u8; 1024];
    let resp = |psn, op| frame(B, A, 0x11, op, psn, &k);
    let frames = vec![
        (10, read_request(10, 3072)),
        (11, read_request(13, 3072)),
        (20, resp(10, Opcode::RcReadResponseFirst)),
        (22, resp(12, Opcode::RcReadResponseLast)),
        (23, read_request(11, 2048)),
        (24, resp(13, Opcode::RcReadResponseFirst)),
        (25, resp(14, Opcode::RcReadResponseMiddle)),
        (26, resp(15, Opcode::RcReadResponseLast)),
        (30, resp(11, Opcode::RcReadResponseMiddle)),
        (31, resp(12, Opcode::RcReadResponseLast)),
    ];
    // Times above in µs.
    let frames: Vec<(u64, Vec<u8>)> = frames.into_iter().map(|(t, f)| (t * 1_000, f)).collect();
    let r = check(&pcap(&frames));
    assert!(r.passed(), "{}", r.to_text());
    let req = flow(&r, "10.0.0.1", 0x22);
    assert_eq!(
        (req.messages.read_request, req.retransmitted_packets),
        (2, 1),
        "{}",
        r.to_text()
    );
    assert_eq!((req.psn_gaps, req.psns_skipped), (0, 0));
    // READ 10 answered by FIRST 10 after 10 µs, READ 13 by FIRST 13 after 13 µs.
    let rtt = req.rtt_us.unwrap();
    assert_eq!(
        (rtt.samples, rtt.min, rtt.max),
        (2, 10.0, 13.0),
        "{}",
        r.to_text()
    );
}

#[test]
fn an_out_of_order_read_takes_its_psn_span_and_its_re_requests_are_repeats() {
    // ORNIC's OOO READ: the request's PSN is its range's first response PSN, one PSN per
    // path-MTU response (1 KiB here). Two 3 KiB READs at 10 and 13, the response at 11 lost,
    // the missing run asked for again from 11; the responses carry no end marker. Two
    // READs (not three), no gap (the READ at 13 follows 10..12), one request sent again, and
    // round trips only for the first requests: the re-request is answered by nothing of its
    // own (it counted as a message, read 0.29 us round trips off rnic's own captures, and
    // every READ's span as a gap).
    let k = [7u8; 1024];
    let req = |psn, len| read_request_op(Opcode::OooReadRequest, psn, len);
    let resp = |psn| frame(B, A, 0x11, Opcode::OooReadResponse, psn, &k);
    let frames: Vec<(u64, Vec<u8>)> = vec![
        (10, req(10, 3072)),
        (11, req(13, 3072)),
        (20, resp(10)),
        (22, resp(12)),
        (23, req(11, 1024)),
        (24, resp(13)),
        (25, resp(14)),
        (26, resp(15)),
        (30, resp(11)),
    ]
    .into_iter()
    .map(|(t, f)| (t * 1_000, f))
    .collect();
    let r = check(&pcap(&frames));
    assert!(r.passed(), "{}", r.to_text());
    let q = flow(&r, "10.0.0.1", 0x22);
    assert_eq!(
        (q.messages.read_request, q.retransmitted_packets),
        (2, 1),
        "{}",
        r.to_text()
    );
    assert_eq!((q.psn_gaps, q.psns_skipped), (0, 0), "{}", r.to_text());
    let rtt = q.rtt_us.unwrap();
    assert_eq!(
        (rtt.samples, rtt.min, rtt.max),
        (2, 10.0, 13.0),
        "{}",
        r.to_text()
    );
    // The responses' flow: every payload once, no message it could count, and no empty
    // list of kinds.
    let back = flow(&r, "10.0.0.2", 0x11);
    assert_eq!((back.payload_bytes, back.messages_total), (6 * 1024, 0));
    assert!(!r.to_text().contains("()"), "{}", r.to_text());
}

/// An Ethernet frame of EtherType `ethertype` whose next bytes are `rest`.
fn eth(ethertype: u16, rest: &[u8]) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(rest);
    f
}

/// An IPv4 frame of protocol `proto` (20-byte header, then 20 bytes of zeros).
fn ipv4(proto: u8) -> Vec<u8> {
    let mut ip = vec![0x45, 0, 0, 40, 0, 0, 0, 0, 64, proto];
    ip.resize(40, 0);
    eth(0x0800, &ip)
}

/// TCP 10, IPv6 4, ARP 4, times 1 µs apart.
fn no_roce_traffic() -> Vec<(u64, Vec<u8>)> {
    let mut frames = vec![ipv4(6); 10];
    frames.extend(vec![eth(0x86DD, &[0x60; 60]); 4]);
    frames.extend(vec![eth(0x0806, &[0; 28]); 4]);
    frames
        .into_iter()
        .enumerate()
        .map(|(i, f)| ((i as u64 + 1) * 1_000, f))
        .collect()
}

/// Frames all of one kind are said so, without the count after the kind that read as part
/// of it ("its 2 frames are too short for Ethernet 2").
#[test]
fn a_capture_of_one_kind_of_frame_says_they_are_all_of_it() {
    let runts: Vec<(u64, Vec<u8>)> = (1..=2).map(|i| (i * 1_000, vec![0u8; 10])).collect();
    let r = check(&pcap(&runts));
    assert_eq!(
        r.verdict,
        "no RoCEv2 frame found, so nothing was checked: its 2 frames are all too short for \
         Ethernet"
    );
}

#[test]
fn a_capture_without_roce_says_so_and_what_it_holds_instead() {
    let r = check(&pcap(&no_roce_traffic()));
    assert_eq!(r.status, "no_roce_frames");
    assert!(!r.passed() && r.found_no_roce());
    assert_eq!(
        r.verdict,
        "no RoCEv2 frame found, so nothing was checked: its 18 frames are TCP 10, ARP 4, IPv6 4"
    );
    assert!(!r.verdict.contains("ok"), "{}", r.verdict);
    let by_type: Vec<(&str, u64)> = r
        .non_roce_frames_by_type
        .iter()
        .map(|(k, n)| (k.as_str(), *n))
        .collect();
    assert_eq!(by_type, [("ARP", 4), ("IPv6", 4), ("TCP", 10)]);
    assert!(
        r.to_text()
            .contains("not RoCEv2 18 (TCP 10, ARP 4, IPv6 4)"),
        "{}",
        r.to_text()
    );
    // A header and no records; a pcapng whose packets name no interface block.
    let empty = check(&pcap(&[]));
    assert_eq!(empty.status, "no_roce_frames");
    assert!(
        empty.verdict.ends_with("the capture holds no frames"),
        "{}",
        empty.verdict
    );
    let mut ng = Vec::new();
    let mut shb = 0x1A2B_3C4Du32.to_le_bytes().to_vec();
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    ng_block(&mut ng, 0x0A0D_0D0A, &shb);
    let f = frame(A, B, 0x22, Opcode::RcSendOnly, 0, b"hi");
    let mut epb = vec![0u8; 12];
    epb.extend_from_slice(&(f.len() as u32).to_le_bytes());
    epb.extend_from_slice(&(f.len() as u32).to_le_bytes());
    epb.extend_from_slice(&f);
    epb.resize(epb.len().div_ceil(4) * 4, 0);
    ng_block(&mut ng, 6, &epb);
    let r = check(&ng);
    assert_eq!((r.status, r.skipped_frames), ("no_roce_frames", 1));
    assert!(
        r.verdict
            .ends_with("its one frame was skipped (see the notes)"),
        "{}",
        r.verdict
    );
}

#[test]
fn timestamps_that_go_backwards_are_noted() {
    let mut frames = conversation();
    frames[3].0 = 500;
    let r = check(&pcap(&frames));
    assert_eq!(r.frames_earlier_than_the_one_before, 1);
    assert!(
        r.notes.iter().any(|n| n.starts_with(
            "1 frame has a timestamp earlier than the frame before it (the first: frame 4)"
        )),
        "{:?}",
        r.notes
    );
    assert_eq!(
        check(&pcap(&conversation())).frames_earlier_than_the_one_before,
        0
    );
}

#[test]
fn a_cut_record_is_worded_without_contradiction_or_rust_values() {
    // One whole non-RoCE frame, then a record cut short: no "0 of 0 ... failed".
    let file = pcap(&no_roce_traffic()[..2]);
    let r = check(&file[..file.len() - 3]);
    assert_eq!(r.status, "failed");
    assert_eq!(
        r.verdict,
        "FAILED: the file is damaged: reading stopped after frame 1, and no RoCEv2 frame came \
         before it (frame 2)"
    );
    // RoCEv2 frames before the damage: how many, and that they passed.
    let file = pcap(&conversation());
    let r = check(&file[..file.len() - 5]);
    assert!(
        r.verdict.starts_with(
            "FAILED: the file is damaged: reading stopped after frame 9; the 9 RoCEv2 frames \
             before it parsed and passed their ICRC"
        ),
        "{}",
        r.verdict
    );
    // Damage of every kind is described in words, never as the parser's Rust values.
    let header = check_reader(Cursor::new(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0]), "h.pcap").unwrap_err();
    let whole = pcap(&conversation());
    let mut texts = vec![header.0];
    for cut in [30, 60, whole.len() - 1] {
        texts.push(check(&whole[..cut]).to_text());
    }
    for t in texts {
        assert!(
            !t.contains("Incomplete(") && !t.contains("NomError") && !t.contains(" 0 of 0 "),
            "{t}"
        );
    }
}

/// An IPv6 frame from fe80::1 to fe80::2 of a UDP datagram to 4791 carrying `payload`.
fn ipv6_roce(payload: &[u8]) -> Vec<u8> {
    let len = (8 + payload.len()) as u16;
    let mut ip = vec![0x60, 0, 0, 0];
    ip.extend_from_slice(&len.to_be_bytes());
    ip.extend_from_slice(&[17, 64]);
    for host in [1, 2] {
        ip.extend_from_slice(&[0xfe, 0x80]);
        ip.extend_from_slice(&[0; 13]);
        ip.push(host);
    }
    ip.extend_from_slice(&[0xC0, 0x00, 0x12, 0xB7]);
    ip.extend_from_slice(&len.to_be_bytes());
    ip.extend_from_slice(&[0, 0]);
    ip.extend_from_slice(payload);
    eth(0x86DD, &ip)
}

/// A capture whose RoCEv2 frames were all cut by the snap length, or are all IPv6, checked
/// nothing: it passed, exit 0, saying "0 of 1 (1 not checked)".
#[test]
fn a_capture_where_no_roce_frame_could_be_checked_is_not_ok() {
    let write = frame(A, B, 0x22, Opcode::RcWriteOnly, 5, &[0; 64]);
    let r = check(&pcap_be_us(&[(1_000, write)], 50));
    assert!(!r.passed() && r.found_no_roce(), "{}", r.to_text());
    assert_eq!(r.status, "no_roce_frame_checked");
    assert_eq!(
        r.verdict,
        "no RoCEv2 frame could be checked, so nothing was: its 1 RoCEv2 frame was cut by the \
         snap length before its ICRC"
    );
    let r = check(&pcap(&vec![(1_000, ipv6_roce(&[0; 16])); 2]));
    assert!(r.found_no_roce(), "{}", r.to_text());
    assert!(r
        .verdict
        .ends_with("its 2 RoCEv2 frames are all over IPv6, which is not decoded"));
}

/// An empty UDP datagram to port 4791 is no RoCEv2 packet (Wireshark hands it to no
/// dissector): it counted as an IPv6 RoCEv2 frame, and over IPv4 as a failed one.
#[test]
fn an_empty_datagram_to_4791_is_not_roce() {
    let r = check(&pcap(&[(1_000, ipv6_roce(&[]))]));
    assert_eq!(
        (r.roce_frames, r.non_roce_frames),
        (0, 1),
        "{}",
        r.to_text()
    );
    let mut v4 = frame(A, B, 0x22, Opcode::RcSendOnly, 0, &[]);
    v4.truncate(14 + 20 + 8);
    v4[16..18].copy_from_slice(&28u16.to_be_bytes());
    v4[38..40].copy_from_slice(&8u16.to_be_bytes());
    let sum = ipv4_checksum(&v4[14..34]);
    v4[24..26].copy_from_slice(&sum.to_be_bytes());
    let r = check(&pcap(&[(1_000, v4)]));
    assert_eq!(
        (r.roce_frames, r.non_roce_frames),
        (0, 1),
        "{}",
        r.to_text()
    );
    assert!(r.found_no_roce());
    // One frame in the singular ("its 1 frames are UDP 1" before).
    assert!(r.verdict.ends_with("its one frame is UDP"), "{}", r.verdict);
}

/// The IPv4 header checksum of `header` (its checksum field included as it stands).
fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut h = header.to_vec();
    h[10..12].fill(0);
    let sum: u32 = h
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    let folded = (sum & 0xFFFF) + (sum >> 16);
    !(((folded & 0xFFFF) + (folded >> 16)) as u16)
}

/// One damaged byte of a RoCEv2 frame's IPv4 header (fragment offset, header length,
/// protocol) made it plain UDP or TCP, and the check passed without it; the header checksum
/// was verified only after the frame was taken for RoCEv2.
#[test]
fn a_damaged_ipv4_header_fails_its_roce_frame() {
    let good = frame(A, B, 0x22, Opcode::RcSendOnly, 0, b"data");
    for (at, byte) in [(14 + 7, 0x01), (14, 0x44), (14 + 9, 0x06)] {
        let mut f = good.clone();
        f[at] = byte;
        let r = check(&pcap(&[(1_000, good.clone()), (2_000, f)]));
        assert_eq!(r.roce_frames_failed, 1, "byte {at}: {}", r.to_text());
        assert_eq!(r.failures[0].frame, 2);
        assert!(
            r.failures[0].reason.contains("header checksum"),
            "{}",
            r.failures[0].reason
        );
    }
    // TCP with a bad checksum is not the check's to judge.
    let r = check(&pcap(&[(1_000, good), (2_000, ipv4(6))]));
    assert!(r.passed(), "{}", r.to_text());
}

/// The classic pcap link type field was read whole: Ethernet with bits above the low 16
/// (libpcap's FCS length, reserved bits) read as link type 65535 and every frame was skipped.
#[test]
fn the_link_type_field_is_its_low_16_bits_and_an_fcs_is_removed() {
    let with_field = |field: u32, fcs: usize| {
        let frames: Vec<(u64, Vec<u8>)> = conversation()
            .into_iter()
            .map(|(t, mut f)| {
                f.extend(std::iter::repeat_n(0xEE, fcs));
                (t, f)
            })
            .collect();
        let mut b = pcap_be_us(&frames, 65_535);
        b[20..24].copy_from_slice(&field.to_be_bytes());
        check(&b)
    };
    for field in [0x1000_0001, 0x0001_0001, 0x3000_0001] {
        let r = with_field(field, 0);
        assert!(r.passed(), "{field:#x}: {}", r.to_text());
        assert_eq!(r.roce_frames_verified, 10);
    }
    // "FCS length present", 2 words: each frame ends in 4 bytes of FCS.
    let r = with_field(0x2400_0001, 4);
    assert!(r.passed(), "{}", r.to_text());
    assert_eq!(r.roce_frames_verified, 10);
}

/// An enhanced packet block whose captured length runs past the block's own end was reported
/// as the file ending inside it (cut short), though the file went on.
#[test]
fn a_packet_length_past_its_block_is_a_corrupt_block_not_a_short_file() {
    let mut b = pcapng(&conversation());
    let mut at = 0;
    for _ in 0..4 {
        at += u32::from_le_bytes(b[at + 4..at + 8].try_into().unwrap()) as usize;
    }
    // The fifth block is the first frame's EPB; its captured length is at 8 + 12.
    b[at + 20..at + 24].copy_from_slice(&5_000u32.to_le_bytes());
    let r = check(&b);
    assert!(!r.passed());
    let damage = &r.failures.last().unwrap().reason;
    assert!(
        damage.contains("the block there is corrupt") && !damage.contains("cut short"),
        "{damage}"
    );
}

/// A simple packet block (no timestamp) among enhanced packet blocks gave its flow a
/// duration of decades: its "no timestamp" was taken as time 0.
#[test]
fn a_frame_without_a_timestamp_leaves_its_flow_times_alone() {
    let mut b = pcapng(&conversation());
    let f = frame(A, B, 0x22, Opcode::RcWriteOnly, 6, &[0xAB; 100]);
    let mut spb = (f.len() as u32).to_le_bytes().to_vec();
    spb.extend_from_slice(&f);
    ng_block(&mut b, 3, &spb);
    let r = check(&b);
    assert!(r.passed(), "{}", r.to_text());
    let w = flow(&r, "10.0.0.1", 0x22);
    assert_eq!(w.frames, 8);
    // The WRITE frames are 1, 2, 3, 5, 6, 8, 9 µs into the capture, the SPB has no time.
    assert!((w.duration_us - 8.0).abs() < 1e-9, "{}", w.duration_us);
    assert_eq!(w.rtt_us.map(|r| r.samples), Some(3));
}

/// Bytes after the headers of an opcode that carries no payload were reported as "roce:
/// field payload_len has invalid value 0x10".
#[test]
fn bytes_after_an_ack_are_named_in_words() {
    let f = frame(B, A, 0x11, Opcode::RcAck, 1, &[0; 20]);
    let r = check(&pcap(&[(1_000, f)]));
    assert_eq!(
        r.failures[0].reason,
        "roce: RC ACKNOWLEDGE carries no payload, but the frame has 20 bytes after its headers",
        "{}",
        r.to_text()
    );
}

/// Odd container fields (a pcap version other than 2.4, a fraction of a second of a second
/// or more, a captured length above the length on the wire or the snap length) were taken
/// without a word; they are noted, and the frames still checked.
#[test]
fn odd_container_fields_are_noted_not_failed() {
    let mut b = pcap_be_us(&conversation(), 65_535);
    b[6..8].copy_from_slice(&3u16.to_be_bytes());
    b[28..32].copy_from_slice(&2_000_000u32.to_be_bytes());
    let len = u32::from_be_bytes(b[32..36].try_into().unwrap());
    b[36..40].copy_from_slice(&(len - 1).to_be_bytes());
    b[16..20].copy_from_slice(&(len - 2).to_be_bytes());
    let r = check(&b);
    assert!(r.passed(), "{}", r.to_text());
    let notes = r.notes.join("\n");
    for said in [
        "its file header has a pcap version other than 2.4",
        "frame 1 has a captured length above the length on the wire",
        "frame 1 has a timestamp fraction of a second of one second or more",
        "frame 1 has a captured length above the header's snap length",
    ] {
        assert!(notes.contains(said), "{said}: {notes}");
    }
}
