//! Connection setup by RDMA CM on the simulated wire (`host.connect = "cm"`): every QP pair's
//! REQ, REP and RTU cross the network and the server's capture (tshark decodes them as
//! InfiniBand CM, nothing malformed, ICRC valid); the figures equal those of `direct`
//! setup; a lost REQ or REP is sent again and the run still verifies every byte; with the
//! retries exhausted the run fails with an error naming the connection; the WAN accelerator
//! learns its connection from the MADs crossing it.

use crate::common::*;
use rnic_model::config::{parse_set, Config};
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;
use rnic_model::world::Hooks;
use rnic_model::{run_perf_detailed, RunOptions};
use rnic_wire::cm::{parse_cm_frame_from, CmMessage};

fn cfg(profile: &str, sets: &[&str]) -> Config {
    let sets: Vec<_> = sets.iter().map(|s| parse_set(s).unwrap()).collect();
    Config::resolve(profile, &sets).unwrap()
}

/// The frames of a classic pcap file.
fn pcap_frames(path: &std::path::Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).unwrap();
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= b.len() {
        let incl = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(b[at + 16..at + 16 + incl].to_vec());
        at += 16 + incl;
    }
    out
}

/// The CM MADs of a capture, each with its frame's number, and the first other frame's.
fn cm_mads(path: &std::path::Path) -> (Vec<(usize, rnic_wire::cm::CmRepr)>, Option<usize>) {
    let mut seen = Vec::new();
    let mut first_data = None;
    for (i, f) in pcap_frames(path).iter().enumerate() {
        match parse_cm_frame_from(f) {
            Ok((_, m)) => seen.push((i, m)),
            Err(_) => {
                first_data.get_or_insert(i);
            }
        }
    }
    (seen, first_data)
}

/// Runs `s` (4 pairs, 50 iterations) with the CM (`sets.0`, captured to `path`) and
/// without (`sets.1`): the CM sent `mads` MADs and the figures are the same. Returns the
/// capture's MADs and its first other frame.
fn cm_and_direct(
    mut s: rnic_model::workload::PerfSpec,
    path: &std::path::Path,
    sets: (&[&str], &[&str]),
    mads: u64,
) -> (Vec<(usize, rnic_wire::cm::CmRepr)>, Option<usize>) {
    s.iters = 50;
    s.pcap = Some(rnic_model::workload::PcapOut::of_server(path.to_path_buf()));
    let cm = run(&cfg("baseline", sets.0), &s).result;
    s.pcap = None;
    let direct = run(&cfg("baseline", sets.1), &s).result;
    figures_equal(&cm, &direct);
    assert_eq!(cm.stats["cm.connections"], 4);
    assert_eq!(cm.stats["cm.mads_sent"], mads);
    assert!(!direct.stats.contains_key("cm.connections"));
    cm_mads(path)
}

/// A run whose pairs the CM connected verified every byte and measured what the same run
/// with its pairs brought up directly did.
fn figures_equal(cm: &rnic_model::result::PerfResult, direct: &rnic_model::result::PerfResult) {
    assert_eq!(cm.status, RunStatus::Ok, "{}", cm.reason);
    assert!(cm.bytes_verified);
    for (a, b, what) in [
        (cm.msg_rate_mops, direct.msg_rate_mops, "rate"),
        (cm.simulated_time_us, direct.simulated_time_us, "time"),
        (cm.latency_us.avg, direct.latency_us.avg, "latency"),
        (cm.pcie_rd_util, direct.pcie_rd_util, "PCIe"),
    ] {
        assert_eq!(a, b, "{what}: cm {a} vs direct {b}");
    }
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rnic-cm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn each_pair_sends_req_rep_rtu_on_the_wire_and_the_figures_equal_direct_setup() {
    let path = tmp("cm.pcap");
    let write = spec(PerfTest::WriteBw, 4096, 4, 2);
    // Node 0 (the server) receives four REQs and RTUs and sends four REPs, before any data.
    let (seen, first_data) = cm_and_direct(write, &path, (&[], &["host.connect=direct"]), 12);
    let count =
        |pick: fn(&CmMessage) -> bool| seen.iter().filter(|(_, m)| pick(&m.message)).count();
    assert_eq!(count(|m| matches!(m, CmMessage::Req(_))), 4);
    assert_eq!(count(|m| matches!(m, CmMessage::Rep(_))), 4);
    assert_eq!(count(|m| matches!(m, CmMessage::Rtu(_))), 4);
    assert!(seen.iter().all(|(i, _)| Some(*i) < first_data));
    // Every REP answers its REQ's transaction with a QPN of the server's.
    for (_, m) in &seen {
        if let CmMessage::Rep(r) = m.message {
            assert!(seen
                .iter()
                .any(|(_, q)| matches!(q.message, CmMessage::Req(_))
                    && q.transaction_id == m.transaction_id));
            assert!(r.local_qpn >= 0x11);
        }
    }
    tshark_decodes_them_as_cm(&path);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// tshark (when installed) decodes the capture's MADs as InfiniBand CM REQ, REP and RTU,
/// with good IPv4 checksums and nothing malformed, and reads the ICRC each frame carries,
/// which is the one computed over the frame.
fn tshark_decodes_them_as_cm(path: &std::path::Path) {
    // Missing tshark skips the check, unless the suite requires it (scripts/test.sh and CI).
    if !rnic_loopback::conformance::external_tool("tshark", &["--version"]) {
        return;
    }
    let out = std::process::Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "-o", "ip.check_checksum:TRUE"])
        .args([
            "-Y",
            "infiniband.bth.destqp == 1",
            "-T",
            "fields",
            "-E",
            "separator=|",
        ])
        .args([
            "-e",
            "_ws.col.Info",
            "-e",
            "ip.checksum.status",
            "-e",
            "_ws.malformed",
        ])
        .args([
            "-e",
            "infiniband.invariant.crc",
            "-e",
            "infiniband.cm.req.ip_cm.private",
        ])
        .args([
            "-e",
            "infiniband.cm.req.maxcmretr",
            "-e",
            "infiniband.cm.req.pppmtu",
            "-e",
            "infiniband.cm.req.ip_cm.dip4",
        ])
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').collect()).collect();
    for attr in ["ConnectRequest", "ConnectReply", "ReadyToUse"] {
        let n = lines
            .iter()
            .filter(|l| l[0] == format!("CM: {attr}"))
            .count();
        assert_eq!(n, 4, "{attr}:\n{text}");
    }
    let mads: Vec<Vec<u8>> = pcap_frames(path)
        .into_iter()
        .filter(|f| parse_cm_frame_from(f).is_ok())
        .collect();
    assert_eq!(mads.len(), lines.len(), "{text}");
    for (l, f) in lines.iter().zip(&mads) {
        assert_eq!(l[1], "1", "IPv4 checksum good: {text}");
        assert_eq!(l[2], "", "malformed: {text}");
        let n = f.len();
        let carried = u32::from_le_bytes(f[n - 4..].try_into().unwrap());
        assert_eq!(rnic_wire::icrc::compute(f).unwrap(), carried);
        let shown = format!(
            "{:#010x}",
            u32::from_be_bytes(f[n - 4..].try_into().unwrap())
        );
        assert_eq!(l[3], shown, "{text}");
    }
    // Each client's REQs carry rdma_cm's header (Wireshark decodes it: the passive side's
    // address) and after it its connections' numbers, 0 and 1, as the consumer's private
    // data, the retries (15) and the path MTU (5 = 4096 B).
    let reqs: Vec<&Vec<&str>> = lines
        .iter()
        .filter(|l| l[0] == "CM: ConnectRequest")
        .collect();
    for k in ["00000000", "00000001"] {
        let n = reqs.iter().filter(|l| l[4].starts_with(k)).count();
        assert_eq!(n, 2, "connection {k}: {text}");
    }
    assert!(
        reqs.iter()
            .all(|l| l[7] == reqs[0][7] && l[7].starts_with("10.")),
        "{text}"
    );
    assert!(
        reqs.iter().all(|l| l[5] == "0x0f" && l[6] == "0x05"),
        "{text}"
    );
}

fn hooked(drop: [Option<u64>; 2], sets: &[&str]) -> anyhow::Result<rnic_model::ModelRun> {
    hooked_test(PerfTest::WriteBw, drop, sets)
}

/// `test` over 2 pairs, 40 × 1 KiB each, with MADs `drop` lost (counted from 1) and a short
/// CM response timeout.
fn hooked_test(
    test: PerfTest,
    drop: [Option<u64>; 2],
    sets: &[&str],
) -> anyhow::Result<rnic_model::ModelRun> {
    let mut s = spec(test, 1024, 2, 1);
    s.iters = 40;
    let opts = RunOptions {
        hooks: Hooks {
            drop_cm_mads: drop,
            ..Hooks::default()
        },
    };
    let mut all = vec!["host.cm_response_timeout=8"];
    all.extend_from_slice(sets);
    run_perf_detailed(&cfg("baseline", &all), &s, &opts).map(|mut v| v.remove(0))
}

#[test]
fn a_lost_req_or_rep_is_sent_again_and_every_byte_arrives() {
    let clean = hooked([None, None], &[]).unwrap().result;
    // MAD 1 is the first REQ; MAD 3 is the first REP (the client sends both REQs first).
    for (drop, what) in [
        ([Some(1), None], "REQ"),
        ([Some(3), None], "REP"),
        ([Some(1), Some(4)], "REQ and REP"),
    ] {
        repaired(&hooked(drop, &[]).unwrap().result, &clean, what);
    }
}

/// A run that lost `what` sent it again and verified every byte, its setup a response
/// timeout (1.05 ms) longer than `clean`'s; what is measured did not change.
fn repaired(
    r: &rnic_model::result::PerfResult,
    clean: &rnic_model::result::PerfResult,
    what: &str,
) {
    assert_eq!(r.status, RunStatus::Ok, "{what}: {}", r.reason);
    assert!(r.bytes_verified, "{what}");
    assert_eq!(r.verified_bytes, 2 * 40 * 1024, "{what}");
    assert!(r.stats["cm.resent"] >= 1, "{what}: nothing was sent again");
    assert!(
        r.stats["cm.done_ps"] > clean.stats["cm.done_ps"] + 1_000_000_000,
        "{what}"
    );
    assert_eq!(r.msg_rate_mops, clean.msg_rate_mops, "{what}");
}

#[test]
fn duplicated_mads_after_setup_meet_the_settled_managers_and_every_byte_arrives() {
    // Every frame twice: each duplicate REP is answered with the RTU again, each duplicate
    // REQ and RTU ignored; the last RTU's duplicate arrives after every connection is up,
    // when the managers have given their setup state back (`cm::settled`).
    let r = hooked([None, None], &["net.impair.dup=1"]).unwrap().result;
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    assert!(r.bytes_verified);
    assert_eq!(r.verified_bytes, 2 * 40 * 1024);
    // 2 pairs: 2 REQs, 2 REPs, 2 RTUs and an RTU again per duplicate REP.
    assert_eq!(r.stats["cm.mads_sent"], 8, "{:?}", r.stats);
    // The duplicate REQs and RTUs (the RTUs sent again, and their duplicates, too).
    assert!(r.stats["cm.ignored"] >= 4, "{:?}", r.stats);
    assert_eq!(r.stats["cm.resent"], 0);
}

#[test]
fn with_the_retries_exhausted_the_run_is_incomplete_naming_the_connection() {
    // Setup cannot succeed when every frame is lost: the run ends incomplete (exit 3), its
    // reason the connection that failed, as any run that could not do what was asked.
    let r = hooked(
        [None, None],
        &["net.impair.loss=1", "host.cm_max_retries=2"],
    )
    .expect("a judged run, not an error")
    .result;
    assert_eq!(r.status, RunStatus::Incomplete, "{}", r.reason);
    assert_eq!(r.ops_completed, 0);
    let msg = r.reason;
    assert!(msg.contains("RDMA CM connection setup failed"), "{msg}");
    assert!(msg.contains("no REP for QP"), "{msg}");
    assert!(msg.contains("after 3 REQs"), "{msg}");
    assert!(msg.contains("host.cm_max_retries = 2"), "{msg}");
}

#[test]
fn the_wan_accelerator_learns_its_connection_from_the_mads_crossing_it() {
    let c = cfg("wan", &["net.wan_km=2", "net.wan_accel=true"]);
    let mut s = spec(PerfTest::WriteBw, 512, 1, 1);
    s.iters = 400;
    let r = run(&c, &s).result;
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    assert_eq!(r.stats["net.wan_accel.learned"], 1);
    assert!(r.stats["net.wan_accel.pseudo_acks"] >= 400);
    // Learning from CM needs CM on the wire.
    let direct = cfg("wan", &["net.wan_accel=true", "host.connect=direct"]);
    let e = run_perf_detailed(&direct, &s, &RunOptions::default()).unwrap_err();
    assert!(format!("{e}").contains("host.connect"), "{e}");
}

#[test]
fn nic_frame_counters_leave_out_the_cm_mads_the_host_sends_and_takes() {
    // The connection managers' MADs go from host to host past the NICs' TX engines, so the
    // RX side must not count them either: without loss every frame a NIC sent is a frame a
    // NIC received. The MADs have their own count: three per connection (REQ, REP, RTU).
    let mut s = spec(PerfTest::WriteBw, 4096, 4, 2);
    s.iters = 20;
    let r = run(&cfg("baseline", &[]), &s);
    assert_eq!(r.result.status, RunStatus::Ok, "{}", r.result.reason);
    let sum = |name: &str| r.nodes.iter().map(|n| counter(n, name)).sum::<u64>();
    assert_eq!(sum("nic.tx.frames"), sum("nic.rx.frames"));
    assert_eq!(sum("nic.rx.cm_mads"), 3 * 4);
}

/// UD pairs with `host.cm_ud` (perftest -c UD -R): each pair's SIDR_REQ and SIDR_REP cross
/// the network before any data (no REQ, REP or RTU), the REP names a server QP and RDMA
/// CM's UDP Q_Key, tshark decodes both as CM service id resolution with nothing malformed,
/// and the figures equal those of UD pairs brought up directly.
#[test]
fn ud_pairs_are_resolved_by_sidr_on_the_wire_and_the_figures_equal_direct_setup() {
    // Not in `tmp`'s folder, which the REQ test removes when it is done.
    let path = std::env::temp_dir().join(format!("rnic-sidr-{}.pcap", std::process::id()));
    let send = spec(PerfTest::SendBw, 1024, 4, 2);
    let ud = ["qp.transport=ud"];
    let sets: (&[&str], &[&str]) = (&["qp.transport=ud", "host.cm_ud=true"], &ud);
    let (seen, first_data) = cm_and_direct(send, &path, sets, 8);
    assert_eq!(seen.len(), 8, "{seen:?}");
    let reqs = seen
        .iter()
        .filter(|(_, m)| matches!(m.message, CmMessage::SidrReq(_)))
        .count();
    assert_eq!(reqs, 4);
    assert!(seen.iter().all(|(i, _)| Some(*i) < first_data));
    for (_, m) in &seen {
        if let CmMessage::SidrRep(r) = m.message {
            assert_eq!((r.status, r.qkey), (0, rnic_wire::cma::UDP_QKEY));
            assert!(r.qpn >= 0x11);
            assert!(seen.iter().any(|(_, q)| matches!(
                q.message,
                CmMessage::SidrReq(q) if q.request_id == r.request_id && q.service_id == r.service_id
            )));
        }
    }
    if rnic_loopback::conformance::external_tool("tshark", &["--version"]) {
        let out = std::process::Command::new("tshark")
            .args([
                "-r",
                path.to_str().unwrap(),
                "-Y",
                "infiniband.bth.destqp == 1",
            ])
            .args(["-T", "fields", "-E", "separator=|"])
            .args(["-e", "_ws.col.Info", "-e", "_ws.malformed"])
            .output()
            .expect("tshark runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 8, "{text}");
        let n = |info: &str| lines.iter().filter(|l| **l == info).count();
        assert_eq!(n("CM: ServiceIDResReq|"), 4, "{text}");
        assert_eq!(n("CM: ServiceIDResReqResp|"), 4, "{text}");
    }
    let _ = std::fs::remove_file(&path);
}

/// A lost SIDR_REQ or SIDR_REP: the client sends the request again after the response
/// timeout, the server answers it again, and the run verifies every byte with the figures
/// of a clean setup.
#[test]
fn a_lost_sidr_req_or_rep_is_sent_again_and_every_byte_arrives() {
    let sets = ["qp.transport=ud", "host.cm_ud=true"];
    let run = |drop| hooked_test(PerfTest::SendBw, drop, &sets).unwrap().result;
    let clean = run([None, None]);
    assert_eq!(clean.stats["cm.resent"], 0);
    // MADs 1 and 2 are the SIDR_REQs, 3 the first SIDR_REP.
    for (drop, what) in [([Some(1), None], "SIDR_REQ"), ([Some(3), None], "SIDR_REP")] {
        repaired(&run(drop), &clean, what);
    }
}
