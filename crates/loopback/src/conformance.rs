//! A scripted run that makes the transport emit every RC opcode it can produce — all SEND,
//! WRITE and READ variants, atomics and their ACKs, ACK and every NAK — captured as a pcap.
//!
//! The conformance tests hand the capture to independent judges (tshark's InfiniBand dissector
//! and scapy's ICRC) and compare what they decode with what we meant to send.

use std::collections::BTreeSet;
use std::process::Command;

use rnic_transport::{
    Access, AtomicArgs, MrKeys, RecvWr, RemoteAddr, SendWr, Sge, WcStatus, WrOpcode,
};
use rnic_wire::{AethSyndrome, FrameRepr, NakCode, Opcode};

use crate::fabric::Impairments;
use crate::pair::{Pair, QpParams, A, B};

/// Whether the suite must have its external judges (tshark, scapy): `scripts/test.sh` sets
/// `RNIC_REQUIRE_EXTERNAL_TOOLS=1`, and CI sets `CI`.
pub fn external_tools_required() -> bool {
    std::env::var_os("RNIC_REQUIRE_EXTERNAL_TOOLS").is_some_and(|v| v == "1")
        || std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false")
}

/// Whether `cmd args` runs and succeeds (a tool's version check or import). A missing tool
/// skips its check with a note on stderr, unless [`external_tools_required`]: then the
/// test fails, naming the script that installs it.
pub fn external_tool(cmd: &str, args: &[&str]) -> bool {
    let ok = Command::new(cmd)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok || !external_tools_required(),
        "`{cmd}` is required (RNIC_REQUIRE_EXTERNAL_TOOLS/CI) but not usable: run \
         scripts/install-test-deps.sh"
    );
    if !ok {
        eprintln!("skipping: `{cmd}` not installed (scripts/install-test-deps.sh installs it)");
    }
    ok
}

/// What we sent in one frame, as our own parser reads it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameSummary {
    pub opcode: u8,
    pub dest_qp: u32,
    pub psn: u32,
    pub reth: Option<(u64, u32, u32)>,
    /// AETH syndrome byte and MSN.
    pub aeth: Option<(u8, u32)>,
    /// AtomicETH: VA, R_Key, swap/add, compare.
    pub atomic: Option<(u64, u32, u64, u64)>,
    /// AtomicAckETH original remote data.
    pub atomic_orig: Option<u64>,
    pub payload_len: usize,
    /// DETH Q_Key and source QP (UD).
    pub deth: Option<(u32, u32)>,
}

/// The capture and what it should decode to.
pub struct ConformanceRun {
    pub pcap: Vec<u8>,
    pub frames: Vec<FrameSummary>,
}

impl ConformanceRun {
    pub fn opcodes(&self) -> BTreeSet<u8> {
        self.frames.iter().map(|f| f.opcode).collect()
    }

    /// AETH syndromes seen (ACK, RNR NAK, NAK codes).
    pub fn syndromes(&self) -> BTreeSet<u8> {
        self.frames
            .iter()
            .filter_map(|f| f.aeth.map(|(s, _)| s & 0xe0))
            .collect()
    }
}

/// Every RC opcode the transport can send.
pub const RC_OPCODES: [Opcode; 23] = [
    Opcode::RcSendFirst,
    Opcode::RcSendMiddle,
    Opcode::RcSendLast,
    Opcode::RcSendLastImm,
    Opcode::RcSendOnly,
    Opcode::RcSendOnlyImm,
    Opcode::RcWriteFirst,
    Opcode::RcWriteMiddle,
    Opcode::RcWriteLast,
    Opcode::RcWriteLastImm,
    Opcode::RcWriteOnly,
    Opcode::RcWriteOnlyImm,
    Opcode::RcReadRequest,
    Opcode::RcReadResponseFirst,
    Opcode::RcReadResponseMiddle,
    Opcode::RcReadResponseLast,
    Opcode::RcReadResponseOnly,
    Opcode::RcAck,
    Opcode::RcAtomicAck,
    Opcode::RcCompareSwap,
    Opcode::RcFetchAdd,
    Opcode::RcSendLastInv,
    Opcode::RcSendOnlyInv,
];

/// Every UC opcode (SEND and WRITE, first/middle/last/only, with immediate) and both UD
/// SENDs: the unreliable services' part of the run.
pub const UNRELIABLE_OPCODES: [Opcode; 14] = [
    Opcode::UcSendFirst,
    Opcode::UcSendMiddle,
    Opcode::UcSendLast,
    Opcode::UcSendLastImm,
    Opcode::UcSendOnly,
    Opcode::UcSendOnlyImm,
    Opcode::UcWriteFirst,
    Opcode::UcWriteMiddle,
    Opcode::UcWriteLast,
    Opcode::UcWriteLastImm,
    Opcode::UcWriteOnly,
    Opcode::UcWriteOnlyImm,
    Opcode::UdSendOnly,
    Opcode::UdSendOnlyImm,
];

/// The Q_Key of the run's UD QPs (perftest's default).
pub const UD_QKEY: u32 = 0x1111_1111;

const BASE: u64 = 0x4000_0000;
const LEN: u64 = 1 << 20;
const PMTU: u32 = 256;

fn sge(addr: u64, len: u32, lkey: u32) -> Vec<Sge> {
    vec![Sge { addr, len, lkey }]
}

fn wr(wr_id: u64, opcode: WrOpcode, sgl: Vec<Sge>) -> SendWr {
    SendWr {
        wr_id,
        opcode,
        sgl: sgl.into(),
        signaled: true,
        solicited: false,
        imm: None,
        remote: None,
        atomic: None,
        invalidate_rkey: None,
    }
}

/// Runs the script. `Err` names the step whose completion was not what the spec says.
pub fn run(seed: u64) -> Result<ConformanceRun, String> {
    let mut script = Script::new(seed).map_err(verbs)?;
    script.every_data_opcode()?;
    script.rnr_retry()?;
    script.oversized_send()?;
    script.bad_rkey()?;
    script.bad_recv_buffer()?;
    for service in [
        rnic_transport::ServiceType::Uc,
        rnic_transport::ServiceType::Ud,
    ] {
        script.unreliable_sends(service)?;
    }
    let pcap = script.pair.take_capture();
    let frames = summarize(&pcap)?;
    Ok(ConformanceRun { pcap, frames })
}

/// A verbs error as the step error the run returns.
fn verbs(e: rnic_transport::VerbsError) -> String {
    e.to_string()
}

/// The capturing pair and the MRs the script's steps share; each step connects a fresh QP
/// pair with `params`, so one step's error state never leaks into the next.
struct Script {
    pair: Pair,
    /// A's MR over its whole buffer (sources of sends, READ targets).
    ka: MrKeys,
    /// B's MR over its whole buffer (RECV buffers, WRITE/READ/atomic remote).
    kb: MrKeys,
    /// A second MR on B, for SEND with invalidate to invalidate.
    kb_inv: MrKeys,
    params: QpParams,
}

impl Script {
    /// Both nodes' memory registered and filled with a per-node pattern, capture on.
    fn new(seed: u64) -> Result<Self, rnic_transport::VerbsError> {
        let mut pair = Pair::new(seed, Impairments::clean(1_000_000));
        pair.capture();
        let ka = pair.reg_mr(A, BASE, LEN, Access::all())?;
        let kb = pair.reg_mr(B, BASE, LEN, Access::all())?;
        let kb_inv = pair.reg_mr(B, BASE + LEN, 4096, Access::all())?;
        for node in [A, B] {
            pair.nodes[node]
                .mem
                .bytes
                .fill_pattern(BASE, LEN, node as u64 + 1);
        }
        let params = QpParams {
            pmtu: PMTU,
            min_rnr_timer: 1,
            ..QpParams::default()
        };
        Ok(Self {
            pair,
            ka,
            kb,
            kb_inv,
            params,
        })
    }

    /// `len` bytes at the start of A's buffer.
    fn src(&self, len: u32) -> Vec<Sge> {
        sge(BASE, len, self.ka.lkey)
    }

    /// B's buffer at `off`, as a remote address.
    fn remote(&self, off: u64) -> RemoteAddr {
        RemoteAddr {
            va: BASE + off,
            rkey: self.kb.rkey,
        }
    }

    /// 1. Every data opcode, one lost WRITE MIDDLE forcing a PSN-sequence NAK and go-back-N.
    fn every_data_opcode(&mut self) -> Result<(), String> {
        let (qa, qb) = self.pair.connect(self.params).map_err(verbs)?;
        for i in 0..8 {
            let r = RecvWr::new(100 + i, sge(BASE + 0x8_0000 + i * 4096, 4096, self.kb.lkey));
            self.pair.post_recv(B, qb, r).map_err(verbs)?;
        }
        let mut id = 0;
        let mut post = |pair: &mut Pair, mut w: SendWr| {
            id += 1;
            w.wr_id = id;
            pair.post_send(A, qa, w).map_err(verbs)
        };
        let pair = &mut self.pair;
        let src = |len: u32| sge(BASE, len, self.ka.lkey);
        let remote = |off: u64| RemoteAddr {
            va: BASE + off,
            rkey: self.kb.rkey,
        };
        post(pair, wr(0, WrOpcode::Send, src(0)))?;
        post(pair, wr(0, WrOpcode::Send, src(700)))?;
        let mut w = wr(0, WrOpcode::SendImm, src(100));
        w.imm = Some(0xdead_beef);
        post(pair, w.clone())?;
        w.sgl = src(700).into();
        post(pair, w)?;
        let mut w = wr(0, WrOpcode::SendInv, src(100));
        w.invalidate_rkey = Some(self.kb_inv.rkey);
        post(pair, w.clone())?;
        let kb_inv2 = pair
            .reg_mr(B, BASE + LEN + 4096, 4096, Access::all())
            .map_err(verbs)?;
        w.sgl = src(700).into();
        w.invalidate_rkey = Some(kb_inv2.rkey);
        post(pair, w)?;
        pair.drop_next(A, Opcode::RcWriteMiddle);
        for (op, len, off) in [
            (WrOpcode::Write, 100, 0x1000),
            (WrOpcode::Write, 700, 0x2000),
        ] {
            let mut w = wr(0, op, src(len));
            w.remote = Some(remote(off));
            post(pair, w)?;
        }
        for (len, off) in [(50, 0x3000), (700, 0x4000)] {
            let mut w = wr(0, WrOpcode::WriteImm, src(len));
            w.remote = Some(remote(off));
            w.imm = Some(7);
            post(pair, w)?;
        }
        for (len, off) in [(100u32, 0x5000u64), (700, 0x6000)] {
            let mut w = wr(
                0,
                WrOpcode::Read,
                sge(BASE + 0x7_0000 + off, len, self.ka.lkey),
            );
            w.remote = Some(remote(off));
            post(pair, w)?;
        }
        for op in [WrOpcode::CompareSwap, WrOpcode::FetchAdd] {
            let mut w = wr(0, op, sge(BASE + 0x9_0000, 8, self.ka.lkey));
            w.remote = Some(remote(0x9000));
            w.atomic = Some(AtomicArgs {
                compare_add: 3,
                swap: 4,
            });
            post(pair, w)?;
        }
        pair.run(u64::MAX);
        expect_all(pair, A, WcStatus::Success, "data opcodes")
    }

    /// 2. RNR NAK: a SEND before any RECV, then the RECV; the retry succeeds.
    fn rnr_retry(&mut self) -> Result<(), String> {
        let (qa, qb) = self.pair.connect(self.params).map_err(verbs)?;
        let w = wr(1, WrOpcode::Send, self.src(10));
        self.pair.post_send(A, qa, w).map_err(verbs)?;
        let until = self.pair.now_ps() + 30_000_000; // 30 µs: a few RNR retries at 10 µs
        self.pair.run(until);
        let r = RecvWr::new(1, sge(BASE + 0xA_0000, 64, self.kb.lkey));
        self.pair.post_recv(B, qb, r).map_err(verbs)?;
        self.pair.run(u64::MAX);
        expect_all(&mut self.pair, A, WcStatus::Success, "RNR retry")
    }

    /// 3. NAK invalid request: a SEND longer than the posted RECV.
    fn oversized_send(&mut self) -> Result<(), String> {
        let r = RecvWr::new(1, sge(BASE + 0xB_0000, 10, self.kb.lkey));
        self.send_into(r, 100, WcStatus::RemInvReqErr, "oversized SEND")
    }

    /// 4. NAK remote access error: a WRITE with a wrong rkey.
    fn bad_rkey(&mut self) -> Result<(), String> {
        let (qa, _) = self.pair.connect(self.params).map_err(verbs)?;
        let mut w = wr(1, WrOpcode::Write, self.src(100));
        w.remote = Some(RemoteAddr {
            va: BASE,
            rkey: self.kb.rkey ^ 0x5a5a,
        });
        self.pair.post_send(A, qa, w).map_err(verbs)?;
        self.pair.run(u64::MAX);
        expect_all(&mut self.pair, A, WcStatus::RemAccessErr, "bad rkey")
    }

    /// 5. NAK remote operational error: the RECV's own buffer fails its protection check.
    fn bad_recv_buffer(&mut self) -> Result<(), String> {
        let r = RecvWr::new(1, sge(BASE, 64, self.kb.lkey ^ 0x77));
        self.send_into(r, 10, WcStatus::RemOpErr, "bad RECV buffer")
    }

    /// On a fresh QP pair, posts `recv` on B, then a `len`-byte SEND from A, and expects
    /// every completion on A to be `status`.
    fn send_into(
        &mut self,
        recv: RecvWr,
        len: u32,
        status: WcStatus,
        step: &str,
    ) -> Result<(), String> {
        let (qa, qb) = self.pair.connect(self.params).map_err(verbs)?;
        self.pair.post_recv(B, qb, recv).map_err(verbs)?;
        let w = wr(1, WrOpcode::Send, self.src(len));
        self.pair.post_send(A, qa, w).map_err(verbs)?;
        self.pair.run(u64::MAX);
        expect_all(&mut self.pair, A, status, step)
    }

    /// Steps 6 (UC: every SEND and WRITE opcode, no ACK) and 7 (UD: SEND ONLY with and
    /// without immediate, DETH, GRH area in the receive), one `service` at a time.
    fn unreliable_sends(&mut self, service: rnic_transport::ServiceType) -> Result<(), String> {
        let ud = service == rnic_transport::ServiceType::Ud;
        let (qa, qb) = self
            .pair
            .connect_service(self.params, service, UD_QKEY)
            .map_err(verbs)?;
        for i in 0..4 {
            let r = RecvWr::new(200 + i, sge(BASE + 0xC_0000 + i * 4096, 4096, self.kb.lkey));
            self.pair.post_recv(B, qb, r).map_err(verbs)?;
        }
        let lens: &[u32] = if ud { &[100, PMTU] } else { &[100, 700] };
        let mut ops = vec![WrOpcode::Send, WrOpcode::SendImm];
        if !ud {
            ops.extend([WrOpcode::Write, WrOpcode::WriteImm]);
        }
        let mut n = 0;
        for op in ops {
            for (k, &len) in lens.iter().enumerate() {
                let mut w = wr(0, op, self.src(len));
                w.imm = matches!(op, WrOpcode::SendImm | WrOpcode::WriteImm).then_some(9);
                w.remote = op
                    .needs_remote()
                    .then(|| self.remote(0xD000 + k as u64 * 0x1000));
                n += 1;
                w.wr_id = n;
                // Two SEND/SEND-with-immediate pairs per service: UD only has two SENDs.
                if ud && k == 1 && op == WrOpcode::SendImm {
                    continue;
                }
                self.pair.post_send(A, qa, w).map_err(verbs)?;
            }
        }
        self.pair.run(u64::MAX);
        expect_all(&mut self.pair, A, WcStatus::Success, "UC/UD sends")
    }
}

/// Drains `node`'s completions and checks each has `status`, except flushes after an error.
fn expect_all(pair: &mut Pair, node: usize, status: WcStatus, step: &str) -> Result<(), String> {
    let got = pair.completions(node);
    if got.is_empty() {
        return Err(format!("{step}: no completion"));
    }
    for c in got {
        if c.status != status && c.status != WcStatus::WrFlushErr {
            return Err(format!(
                "{step}: wr {} completed {:?}, want {status:?}",
                c.wr_id, c.status
            ));
        }
    }
    pair.completions(1 - node); // receive completions are not what this step checks
    Ok(())
}

/// Reads our own pcap back (classic format, as `PcapWriter` writes it) and parses each frame.
fn summarize(pcap: &[u8]) -> Result<Vec<FrameSummary>, String> {
    let mut out = Vec::new();
    let mut at = 24; // global header
    while at + 16 <= pcap.len() {
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap_or([0; 4])) as usize;
        let frame = pcap
            .get(at + 16..at + 16 + incl)
            .ok_or("truncated pcap record")?;
        let f = FrameRepr::parse(frame).map_err(|e| format!("our own frame: {e}"))?;
        let r = f.roce;
        out.push(FrameSummary {
            opcode: r.bth.opcode.as_u8(),
            dest_qp: r.bth.dest_qp,
            psn: r.bth.psn,
            reth: r.reth.map(|x| (x.va, x.rkey, x.dma_len)),
            aeth: r.aeth.map(|a| (syndrome_byte(a.syndrome), a.msn)),
            atomic: r.atomic_eth.map(|a| (a.va, a.rkey, a.swap_add, a.compare)),
            atomic_orig: r.atomic_ack.map(|a| a.orig),
            payload_len: r.payload.len(),
            deth: r.deth.map(|d| (d.qkey, d.src_qp)),
        });
        at += 16 + incl;
    }
    Ok(out)
}

/// The AETH syndrome as the byte on the wire.
pub fn syndrome_byte(s: AethSyndrome) -> u8 {
    match s {
        AethSyndrome::Ack { credits } => credits & 0x1f,
        AethSyndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
        AethSyndrome::Nak(code) => {
            0x60 | match code {
                NakCode::PsnSequenceError => 0,
                NakCode::InvalidRequest => 1,
                NakCode::RemoteAccessError => 2,
                NakCode::RemoteOperationalError => 3,
                NakCode::InvalidRdRequest => 4,
            }
        }
    }
}
