//! `rnic pcap check` through the binary: on captures rnic writes (the figures equal what the
//! run reported), on a hand-built capture with a corrupt byte, on the same capture as pcapng,
//! on RoCEv2 to another UDP port, on files that are not captures, and against tshark's count
//! of InfiniBand frames when tshark is installed.

use rnic_wire::{icrc, BthRepr, FrameAddr, FrameRepr, Opcode, PcapWriter, RoceRepr};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn rnic(args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_rnic"))
        .args(args)
        .env("CI", "true")
        .output()
        .expect("run rnic");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rnic-pcap-check-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("JSON written")).expect("JSON")
}

/// Runs a perf test with `--pcap`, then checks the capture; returns both JSON results.
fn run_and_check(d: &Path, args: &[&str]) -> (Value, Value, Out) {
    let (pcap, run_json, check_json) = (d.join("c.pcap"), d.join("run.json"), d.join("chk.json"));
    let mut a = args.to_vec();
    a.extend(["--pcap", s(&pcap), "--json", s(&run_json)]);
    let run = rnic(&a);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let chk = rnic(&["pcap", "check", s(&pcap), "--json", s(&check_json)]);
    (json(&run_json), json(&check_json), chk)
}

fn sum(check: &Value, key: &str) -> u64 {
    check["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .map(|f| f.pointer(key).and_then(Value::as_u64).unwrap_or(0))
        .sum()
}

#[test]
fn send_bw_capture_checks_clean_with_the_runs_figures() {
    let d = scratch("send");
    let (run, chk, out) = run_and_check(&d, &["perf", "send-bw", "-s", "4096", "-n", "50"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(chk["status"], "ok");
    assert_eq!(chk["roce_frames"], chk["roce_frames_verified"]);
    assert_eq!(chk["roce_frames_failed"], 0);
    assert_eq!(sum(&chk, "/messages/send"), 50);
    assert_eq!(sum(&chk, "/messages_total"), 50);
    assert_eq!(
        sum(&chk, "/payload_bytes"),
        run["verified_bytes"].as_u64().unwrap()
    );
    assert_eq!(sum(&chk, "/payload_bytes"), 50 * 4096);
    assert_eq!(sum(&chk, "/retransmitted_packets"), 0);
    assert_eq!(sum(&chk, "/psn_gaps"), 0);
    // Every SEND asks for an ACK and is acknowledged.
    let req = &chk["flows"][0];
    assert_eq!(req["rtt_us"]["samples"], 50, "{}", out.stdout);
    assert!(req["rtt_us"]["min"].as_f64().unwrap() > 0.0);
    // 50 SENDs, 48 ACKs, 3 MADs: the receiver's first SEND waits for its receive buffer's
    // MPT and MTT entries, the SENDs behind it queue in the in-order receive lane, and
    // handled back to back two of their ACKs coalesce into later ones.
    assert!(out
        .stdout
        .trim_end()
        .ends_with("ok: every RoCEv2 frame parsed and passed its ICRC: 101 of 101"));
    // The server's port saw its QP's RDMA CM REQ, REP and RTU, in no flow.
    assert_eq!(chk["roce_cm_mads"], 3, "{}", out.stdout);
    assert!(out.stdout.contains("connection management: 3 MADs to QP1"));
}

#[test]
fn lossy_write_bw_capture_shows_the_retransmissions_and_naks() {
    let d = scratch("lossy");
    let (run, chk, out) = run_and_check(
        &d,
        &[
            "perf",
            "write-bw",
            "-s",
            "4096",
            "-n",
            "200",
            "--seed",
            "2",
            "--set",
            "net.impair.loss=0.02",
        ],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(chk["status"], "ok");
    assert_eq!(sum(&chk, "/messages/write"), 200, "{}", out.stdout);
    assert_eq!(
        sum(&chk, "/payload_bytes"),
        run["verified_bytes"].as_u64().unwrap()
    );
    let retx = sum(&chk, "/retransmitted_packets");
    let run_retx = run["retransmissions"].as_u64().unwrap();
    assert!(retx > 0 && retx <= run_retx, "{retx} of {run_retx}");
    assert!(sum(&chk, "/repeated_payload_bytes") > 0);
    let naks = sum(&chk, "/naks_total");
    assert!(naks > 0 && naks <= run["naks"].as_u64().unwrap(), "{naks}");
    assert_eq!(sum(&chk, "/naks/psn_sequence_error"), naks);
}

#[test]
fn read_bw_capture_counts_read_requests_and_responses() {
    let d = scratch("read");
    let (run, chk, out) = run_and_check(
        &d,
        &["perf", "read-bw", "-s", "10000", "-n", "20", "-m", "1024"],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(sum(&chk, "/messages/read_request"), 20);
    assert_eq!(sum(&chk, "/messages/read_response"), 20);
    assert_eq!(
        sum(&chk, "/payload_bytes"),
        run["verified_bytes"].as_u64().unwrap()
    );
    assert_eq!(sum(&chk, "/pmtu_bytes"), 1024);
}

/// Three frames built with the wire crate: SEND ONLY, WRITE ONLY, ACK.
fn hand_built() -> Vec<Vec<u8>> {
    let mk = |op: Opcode, psn: u32, payload: &[u8], src: [u8; 4], dst: [u8; 4]| {
        let bth = BthRepr {
            opcode: op,
            solicited: false,
            mig_req: false,
            pad_count: 0,
            tver: 0,
            pkey: 0xFFFF,
            fecn: false,
            becn: false,
            dest_qp: 0x40,
            ack_req: true,
            psn,
        };
        let mut buf = Vec::new();
        FrameRepr {
            addr: FrameAddr {
                src_ip: src,
                dst_ip: dst,
                udp_src_port: 0xC100,
                ttl: 64,
                ..FrameAddr::default()
            },
            ip_ident: 0,
            roce: RoceRepr::new(bth, payload),
        }
        .emit(&mut buf);
        buf
    };
    let (a, b) = ([192, 168, 0, 1], [192, 168, 0, 2]);
    vec![
        mk(Opcode::RcSendOnly, 1, b"hello, wire", a, b),
        mk(Opcode::RcWriteOnly, 2, &[0x5A; 300], a, b),
        mk(Opcode::RcAck, 2, &[], b, a),
    ]
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::new(std::fs::File::create(path).expect("create")).expect("pcap");
    for (i, f) in frames.iter().enumerate() {
        w.write_packet((i as u64 + 1) * 1_000_000, f)
            .expect("write");
    }
    w.flush().expect("flush");
}

#[test]
fn a_corrupted_byte_is_listed_by_frame_number_and_exits_1() {
    let d = scratch("corrupt");
    let mut frames = hand_built();
    frames[1][80] ^= 0x10; // a payload byte of the WRITE, frame 2
    let path = d.join("bad.pcap");
    write_pcap(&path, &frames);
    let out = rnic(&["pcap", "check", s(&path)]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("\nfailed frames:\n  frame 2: icrc: stated"),
        "{}",
        out.stdout
    );
    let last = out.stdout.trim_end().lines().last().unwrap_or("");
    assert_eq!(
        last,
        "FAILED: 1 of 3 RoCEv2 frames failed to parse or failed the ICRC (frame 2)"
    );
    assert!(
        out.stderr.contains("error: ") && out.stderr.contains("FAILED"),
        "{}",
        out.stderr
    );
    // JSON on standard output carries the same.
    let out = rnic(&["pcap", "check", s(&path), "--json", "-"]);
    assert_eq!(out.code, 1);
    let v: Value = serde_json::from_str(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["failures"][0]["frame"], 2);
    assert_eq!(v["status"], "failed");
}

/// Rewrites a classic pcap (as rnic writes it: little-endian, nanoseconds) as pcapng: SHB,
/// one Ethernet IDB with if_tsresol 9, one EPB per record.
fn pcap_to_pcapng(pcap: &[u8]) -> Vec<u8> {
    fn block(out: &mut Vec<u8>, kind: u32, body: &[u8]) {
        let padded = body.len().div_ceil(4) * 4;
        let len = (12 + padded) as u32;
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(body);
        out.resize(out.len() + padded - body.len(), 0);
        out.extend_from_slice(&len.to_le_bytes());
    }
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    assert_eq!(u32_at(pcap, 0), 0xA1B2_3C4D, "a nanosecond pcap");
    let mut out = Vec::new();
    let mut shb = 0x1A2B_3C4Du32.to_le_bytes().to_vec();
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&(-1i64).to_le_bytes());
    block(&mut out, 0x0A0D_0D0A, &shb);
    let mut idb = vec![1, 0, 0, 0];
    idb.extend_from_slice(&pcap[16..20]); // snaplen
    idb.extend_from_slice(&[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
    block(&mut out, 1, &idb);
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let ts = u64::from(u32_at(pcap, at)) * 1_000_000_000 + u64::from(u32_at(pcap, at + 4));
        let caplen = u32_at(pcap, at + 8) as usize;
        let mut epb = 0u32.to_le_bytes().to_vec();
        epb.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(ts as u32).to_le_bytes());
        epb.extend_from_slice(&pcap[at + 8..at + 16]);
        epb.extend_from_slice(&pcap[at + 16..at + 16 + caplen]);
        epb.resize(epb.len().div_ceil(4) * 4, 0);
        block(&mut out, 6, &epb);
        at += 16 + caplen;
    }
    out
}

#[test]
fn the_same_capture_as_pcapng_reads_the_same() {
    let d = scratch("pcapng");
    let (pcap, ng) = (d.join("c.pcap"), d.join("c.pcapng"));
    let run = rnic(&[
        "perf",
        "write-bw",
        "-s",
        "5000",
        "-n",
        "20",
        "-m",
        "1024",
        "--pcap",
        s(&pcap),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    std::fs::write(&ng, pcap_to_pcapng(&std::fs::read(&pcap).unwrap())).unwrap();
    let a = rnic(&["pcap", "check", s(&pcap), "--json", "-"]);
    let b = rnic(&["pcap", "check", s(&ng), "--json", "-"]);
    assert_eq!((a.code, b.code), (0, 0), "{}", b.stderr);
    let mut a: Value = serde_json::from_str(&a.stdout).unwrap();
    let mut b: Value = serde_json::from_str(&b.stdout).unwrap();
    assert_eq!(b["format"], "pcapng");
    for v in [&mut a, &mut b] {
        v["file"] = Value::Null;
        v["format"] = Value::Null;
    }
    assert_eq!(a, b);
    assert_eq!(sum(&a, "/messages/write"), 20);
}

#[test]
fn roce_to_another_udp_port_is_recognised_by_its_icrc() {
    let d = scratch("port");
    let mut frames = hand_built();
    for f in &mut frames {
        f[36..38].copy_from_slice(&4793u16.to_be_bytes());
        let crc = icrc::compute(f).unwrap();
        let n = f.len();
        f[n - 4..].copy_from_slice(&crc.to_le_bytes());
    }
    let path = d.join("port.pcap");
    write_pcap(&path, &frames);
    let out = rnic(&["pcap", "check", s(&path)]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("destination port 4793"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("note: RoCEv2 frames on UDP ports other than 4791 (3 to port 4793)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("messages     2 (send 1, write 1)"));
}

#[test]
fn files_that_are_not_captures_exit_2_naming_the_file() {
    let d = scratch("notpcap");
    let txt = d.join("notes.txt");
    std::fs::write(&txt, "not a capture at all\n").unwrap();
    let missing = d.join("missing.pcap");
    for (path, want) in [(&txt, "starts with 6e6f7420"), (&missing, "cannot open")] {
        let out = rnic(&["pcap", "check", s(path)]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr.contains(s(path)) && out.stderr.contains(want),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("expected a pcap"), "{}", out.stderr);
        assert!(!out.stderr.contains("panicked"));
    }
    // An unwritable --json is refused (exit 4) before the capture is even opened.
    let out = rnic(&["pcap", "check", s(&missing), "--json", "/proc/x/y.json"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert!(out.stderr.contains("/proc/x/y.json"), "{}", out.stderr);
}

#[test]
fn help_lists_the_exit_statuses_of_pcap_check() {
    let out = rnic(&["pcap", "check", "--help"]);
    assert_eq!(out.code, 0);
    for code in ["\n  0  ", "\n  1  ", "\n  2  ", "\n  3  ", "\n  4  "] {
        assert!(out.stdout.contains(code), "{}", out.stdout);
    }
}

/// Whether tshark can be run. When it is missing the tshark checks are skipped, unless
/// RNIC_REQUIRE_EXTERNAL_TOOLS=1 or CI is set: then missing it fails the test.
fn tshark_installed() -> bool {
    rnic_loopback::conformance::external_tool("tshark", &["--version"])
}

/// tshark, an independent decoder, counts the same RoCEv2 frames. Skipped when tshark is
/// missing, unless RNIC_REQUIRE_EXTERNAL_TOOLS=1 or CI is set.
#[test]
fn tshark_counts_the_same_roce_frames() {
    if !tshark_installed() {
        return;
    }
    let d = scratch("tshark");
    let pcap = d.join("t.pcap");
    let run = rnic(&[
        "perf",
        "read-bw",
        "-s",
        "6000",
        "-n",
        "30",
        "-m",
        "2048",
        "--pcap",
        s(&pcap),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ts = Command::new("tshark")
        .args([
            "-r",
            s(&pcap),
            "-Y",
            "infiniband",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .expect("tshark");
    assert!(
        ts.status.success(),
        "{}",
        String::from_utf8_lossy(&ts.stderr)
    );
    let tshark_frames = String::from_utf8_lossy(&ts.stdout).lines().count() as u64;
    let out = rnic(&["pcap", "check", s(&pcap), "--json", "-"]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(tshark_frames > 0);
    assert_eq!(v["roce_frames"].as_u64(), Some(tshark_frames));
    assert_eq!(v["roce_frames_verified"].as_u64(), Some(tshark_frames));
}

/// ORNIC's out-of-order WRITE (vendor opcodes 0xC0-0xC5), sprayed and lossy: `rnic pcap
/// check` names the opcodes, counts the WQEs as writes and the bitmap NAKs, every ICRC
/// verifies; tshark decodes the same frames' BTH (vendor opcodes are unknown to its
/// dissector) and calls none malformed.
#[test]
fn ornic_capture_checks_clean_and_tshark_calls_nothing_malformed() {
    let d = scratch("ornic");
    let (run, chk, out) = run_and_check(
        &d,
        &[
            "perf",
            "write-bw",
            "--profile",
            "ornic",
            "-s",
            "1048576",
            "-n",
            "5",
            "-t",
            "1",
            "--set",
            "net.spray.paths=4",
            "--set",
            "net.spray.mdd_ns=20000",
            "--set",
            "net.spray.policy=random",
            "--set",
            "net.impair.loss=0.01",
        ],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(chk["status"], "ok");
    assert_eq!(chk["roce_frames"], chk["roce_frames_verified"]);
    assert_eq!(chk["roce_frames_failed"], 0);
    assert_eq!(sum(&chk, "/messages/write"), 5);
    assert_eq!(sum(&chk, "/payload_bytes"), 5 << 20);
    assert_eq!(run["verified_bytes"].as_u64(), Some(5 << 20));
    assert!(sum(&chk, "/retransmitted_packets") > 0);
    assert!(
        out.stdout.contains("ORNIC OOO_WRITE_FSPOT"),
        "{}",
        out.stdout
    );
    if !tshark_installed() {
        return;
    }
    let ts = Command::new("tshark")
        .args([
            "-r",
            s(&d.join("c.pcap")),
            "-T",
            "fields",
            "-e",
            "infiniband.bth.opcode",
            "-e",
            "infiniband.bth.destqp",
            "-e",
            "_ws.malformed",
        ])
        .output()
        .expect("tshark");
    assert!(ts.status.success());
    let text = String::from_utf8_lossy(&ts.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(Some(lines.len() as u64), chk["roce_frames"].as_u64());
    for l in lines {
        let cols: Vec<&str> = l.split('\t').collect();
        let op: u8 = cols[0].parse().expect("opcode decoded");
        // The connection's RDMA CM MADs (UD SEND ONLY to QP1) come first; every data and
        // ACK frame after them is one of the out-of-order opcodes.
        let cm_mad = op == 0x64 && cols.get(1) == Some(&"0x000001");
        assert!((0xC0..=0xC7).contains(&op) || cm_mad, "{l}");
        assert_eq!(cols.get(2).copied().unwrap_or(""), "", "malformed: {l}");
    }
}

/// UC and UD captures of the model's runs check clean with the runs' own figures, and
/// tshark (when installed) decodes every UD frame's DETH with perftest's Q_Key.
#[test]
fn uc_and_ud_captures_check_clean() {
    for (c, test, per_msg) in [("UD", "send-bw", 1u64), ("UC", "write-bw", 4)] {
        let d = scratch(&format!("unreliable-{c}"));
        let size = if c == "UD" { "1024" } else { "4096" };
        let (run, chk, out) = run_and_check(
            &d,
            &["perf", test, "-c", c, "-s", size, "-n", "40", "-m", "1024"],
        );
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        assert_eq!(chk["status"], "ok");
        assert_eq!(chk["roce_frames_failed"], 0);
        assert_eq!(sum(&chk, "/messages_total"), 40, "{}", out.stdout);
        assert_eq!(chk["roce_frames"].as_u64(), Some(40 * per_msg));
        assert_eq!(
            sum(&chk, "/payload_bytes"),
            run["verified_bytes"].as_u64().unwrap()
        );
        let opcodes = if c == "UD" {
            "UD SEND_ONLY 40"
        } else {
            "UC RDMA_WRITE_FIRST 40"
        };
        assert!(out.stdout.contains(opcodes), "{}", out.stdout);
        if c == "UD" && tshark_installed() {
            let ts = Command::new("tshark")
                .args(["-r", s(&d.join("c.pcap")), "-T", "fields"])
                .args(["-e", "infiniband.deth.q_key", "-e", "_ws.malformed"])
                .output()
                .expect("tshark");
            let text = String::from_utf8_lossy(&ts.stdout).into_owned();
            assert_eq!(text.lines().count(), 40, "{text}");
            // One line per frame: the Q_Key (tshark prints it zero-padded), nothing malformed.
            let ok = |l: &str| {
                let mut f = l.split('\t');
                let key = f.next().unwrap_or("").trim_start_matches("0x");
                u64::from_str_radix(key, 16) == Ok(0x1111_1111) && f.next().unwrap_or("").is_empty()
            };
            assert!(text.lines().all(ok), "{text}");
        }
    }
}

/// A capture of other traffic (here ARP and TCP) is not "ok": nothing was checked. It exits
/// 3 with status `no_roce_frames` and says what the capture holds instead.
#[test]
fn a_capture_without_roce_exits_3_saying_what_it_holds() {
    let d = scratch("noroce");
    let mut arp = vec![0u8; 12];
    arp.extend_from_slice(&[0x08, 0x06]);
    arp.resize(42, 0);
    let mut tcp = vec![0u8; 12];
    tcp.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6]);
    tcp.resize(54, 0);
    let path = d.join("other.pcap");
    write_pcap(&path, &[arp, tcp.clone(), tcp]);
    let json_path = d.join("other.json");
    let out = rnic(&["pcap", "check", s(&path), "--json", s(&json_path)]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stdout.trim_end().ends_with(
            "no RoCEv2 frame found, so nothing was checked: its 3 frames are TCP 2, ARP 1"
        ),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("ok:"), "{}", out.stdout);
    let v = json(&json_path);
    assert_eq!(v["status"], "no_roce_frames");
    assert_eq!(v["non_roce_frames_by_type"]["TCP"], 2);
}

/// The book's pcap-check chapter damages one byte of a send-bw capture and quotes what
/// `rnic pcap check` then prints; its ICRC values had drifted from what the command prints.
/// This runs the chapter's `sh` block (the byte at offset 200 set to 0xff) and finds the
/// quoted `text` block in the output.
#[test]
fn the_books_damaged_capture_prints_what_the_book_quotes() {
    let chapter =
        std::fs::read_to_string(crate::common::repo_root().join("docs/book/src/pcap-check.md"))
            .expect("read pcap-check.md");
    for line in [
        "rnic perf send-bw -s 4096 -n 50 --pcap send.pcap",
        "printf '\\xff' | dd of=bad.pcap bs=1 seek=200 conv=notrunc status=none",
    ] {
        assert!(
            chapter.contains(line),
            "the chapter no longer runs {line:?}"
        );
    }
    let quoted = chapter
        .split("```text\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the chapter's text block");
    let d = scratch("book-damaged");
    let pcap = d.join("send.pcap");
    let run = rnic(&[
        "perf",
        "send-bw",
        "-s",
        "4096",
        "-n",
        "50",
        "--pcap",
        s(&pcap),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut bytes = std::fs::read(&pcap).expect("the capture");
    bytes[200] = 0xff;
    let bad = d.join("bad.pcap");
    std::fs::write(&bad, bytes).expect("write the damaged copy");
    let chk = rnic(&["pcap", "check", s(&bad)]);
    assert_eq!(chk.code, 1, "{}", chk.stderr);
    assert!(
        chk.stdout.contains(quoted),
        "the chapter quotes\n{quoted}\nbut the check printed\n{}",
        chk.stdout
    );
}

/// A capture whose RoCEv2 frames were all cut by the snap length before their ICRC checks
/// nothing: exit 3, as the book's table says, and both help texts name that case (they
/// named only a capture with no RoCEv2 frame at all).
#[test]
fn a_capture_cut_before_every_icrc_exits_3_as_the_help_says() {
    let d = scratch("snaplen");
    let path = d.join("cut.pcap");
    // A classic pcap with a snap length of 56: the BTH ends at byte 54, so each record keeps
    // its headers and not its ICRC, and says how long the frame was on the wire.
    let mut pcap: Vec<u8> = Vec::new();
    for field in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 56, 1] {
        pcap.extend_from_slice(&field.to_le_bytes());
    }
    let frames = hand_built();
    for (i, f) in [&frames[0], &frames[2]].into_iter().enumerate() {
        let record = [i as u32 + 1, 0, 56, f.len() as u32];
        for field in record {
            pcap.extend_from_slice(&field.to_le_bytes());
        }
        pcap.extend_from_slice(&f[..56]);
    }
    std::fs::write(&path, pcap).expect("write the capture");
    let out = rnic(&["pcap", "check", s(&path)]);
    assert_eq!(out.code, 3, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("no RoCEv2 frame could be checked"),
        "{}",
        out.stdout
    );
    let help = rnic(&["pcap", "check", "--help"]).stdout;
    let three = help.split("\n  3  ").nth(1).expect("exit 3 in the help");
    assert!(three.contains("snap"), "{help}");
    let help = rnic(&["--help"]).stdout;
    let three = help.split("\n  3  ").nth(1).expect("exit 3 in the help");
    assert!(three.contains("none it could check"), "{help}");
}
