//! Random operation mixes over a [`Pair`], with an oracle that knows what every byte must be.
//!
//! Every operation gets its own source and destination slots, so the expected memory after a
//! run does not depend on the order in which different QPs' operations land. The oracle checks:
//! every byte the transport writes lands where an operation targets and is already the byte that
//! operation must leave there (checked as it lands, see [`GuardedMemory::expect_landing`]);
//! every successfully completed operation's bytes are exactly right at the target (and atomics'
//! returned values at the initiator); completions arrive in post order per QP; nothing completes
//! twice; no byte outside a registered region was read or written; the run terminates with
//! either success or the spec's error completions (a retry-exceeded error, then flushes).

use std::collections::{BTreeMap, BTreeSet};

use rnic_sim::Rng;
use rnic_transport::{
    Access, AtomicArgs, Completion, Memory, MrKeys, RecvWr, RemoteAddr, SendWr, Sge, WcStatus,
    WrOpcode,
};

use crate::fabric::Impairments;
#[cfg(doc)]
use crate::guarded_memory::GuardedMemory;
use crate::pair::{Pair, QpParams};

/// Where every node's registered region starts and how long it is.
pub const MR_BASE: u64 = 0x1000_0000;
pub const MR_LEN: u64 = 64 << 20;
/// Bytes just outside the region that are filled with a pattern and must never change.
const GUARD_LEN: u64 = 4096;
const GUARD_BYTE: u8 = 0xA5;
/// What destination slots hold before an operation lands.
const UNWRITTEN: u8 = 0xEE;

/// The operations a workload mixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Write,
    WriteImm,
    Read,
    Send,
    SendImm,
    CompareSwap,
    FetchAdd,
}

impl OpKind {
    pub const ALL: [OpKind; 7] = [
        OpKind::Write,
        OpKind::WriteImm,
        OpKind::Read,
        OpKind::Send,
        OpKind::SendImm,
        OpKind::CompareSwap,
        OpKind::FetchAdd,
    ];

    fn is_atomic(self) -> bool {
        matches!(self, OpKind::CompareSwap | OpKind::FetchAdd)
    }

    /// Whether the target consumes a RECV (and so produces a receive completion).
    fn consumes_recv(self) -> bool {
        matches!(self, OpKind::Send | OpKind::SendImm | OpKind::WriteImm)
    }
}

/// One operation: `kind` of `len` bytes, posted by node `from` on QP pair `qp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpSpec {
    pub kind: OpKind,
    pub len: u32,
    pub from: usize,
    pub qp: usize,
}

/// A whole randomised run.
#[derive(Clone, Debug)]
pub struct Workload {
    pub seed: u64,
    pub impair: Impairments,
    pub params: QpParams,
    pub qp_pairs: usize,
    pub ops: Vec<OpSpec>,
}

/// What a run ended with (the oracle's checks have all passed if you hold one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub succeeded: usize,
    /// Error completions by status (the first error of a QP and the flushes after it).
    pub errors: BTreeMap<String, usize>,
    pub frames_sent: u64,
    pub end_ps: u64,
    pub verified_bytes: u64,
    /// Request packets sent again (go-back-N, timeouts, RNR retries), both nodes.
    pub retransmitted: u64,
    /// NAKs received by the requesters, both nodes.
    pub naks: u64,
    /// Local ACK timeouts that fired, both nodes.
    pub timeouts: u64,
    /// Bytes checked against their destination's expected contents as they landed.
    pub landed_bytes: u64,
}

/// One operation as placed in memory.
struct Placed {
    spec: OpSpec,
    wr_id: u64,
    /// Initiator-side buffer (source of WRITE/SEND, destination of READ, result of atomics).
    local: u64,
    /// Target-side buffer (destination of WRITE/SEND, source of READ, the atomic's word).
    remote: u64,
    /// Atomic: the word's initial value, the compare/add operand and the swap value.
    atomic: (u64, u64, u64),
    imm: u32,
}

/// Bump allocator over one node's region, 64-byte aligned slots.
struct Slots {
    next: u64,
}

impl Slots {
    fn take(&mut self, len: u64) -> Result<u64, String> {
        let at = self.next;
        self.next += len.max(8).div_ceil(64) * 64;
        if self.next > MR_BASE + MR_LEN {
            return Err("workload does not fit in the registered region".into());
        }
        Ok(at)
    }
}

/// Runs `w` and checks every property; `Err` says which one failed.
pub fn run(w: &Workload) -> Result<Outcome, String> {
    run_with(w, |_| {})
}

/// [`run`], with `tamper` applied to the finished pair before the oracle looks: the tests use it
/// to show the oracle catches a wrong byte.
pub fn run_with(w: &Workload, tamper: impl FnOnce(&mut Pair)) -> Result<Outcome, String> {
    run_with_hooks(w, |_| {}, tamper)
}

/// [`run`], with `before` applied once every operation is posted (before anything is sent)
/// and `after` once the run ended, before the oracle looks.
pub fn run_with_hooks(
    w: &Workload,
    before: impl FnOnce(&mut Pair),
    after: impl FnOnce(&mut Pair),
) -> Result<Outcome, String> {
    w.impair.validate()?;
    let mut pair = Pair::new(w.seed, w.impair.clone());
    let mut keys: Vec<MrKeys> = Vec::new();
    for node in 0..2 {
        keys.push(
            pair.reg_mr(node, MR_BASE, MR_LEN, Access::all())
                .map_err(|e| format!("reg_mr: {e}"))?,
        );
        let guard = vec![GUARD_BYTE; GUARD_LEN as usize];
        pair.nodes[node]
            .mem
            .bytes
            .write(MR_BASE - GUARD_LEN, &guard);
        pair.nodes[node].mem.bytes.write(MR_BASE + MR_LEN, &guard);
    }
    let mut qps = Vec::new();
    for _ in 0..w.qp_pairs.max(1) {
        qps.push(
            pair.connect(w.params)
                .map_err(|e| format!("connect: {e}"))?,
        );
    }
    let qpn = |node: usize, qp: usize| if node == 0 { qps[qp].0 } else { qps[qp].1 };

    let mut rng = Rng::new(w.seed ^ 0x5151);
    let mut slots = [Slots { next: MR_BASE }, Slots { next: MR_BASE }];
    let mut placed = Vec::new();
    let mut recv_expect: BTreeMap<(usize, u32), Vec<usize>> = BTreeMap::new();
    for (i, spec) in w.ops.iter().enumerate() {
        let spec = OpSpec {
            qp: spec.qp % qps.len(),
            from: spec.from % 2,
            len: if spec.kind.is_atomic() { 8 } else { spec.len },
            ..*spec
        };
        let (me, peer) = (spec.from, 1 - spec.from);
        let len = u64::from(spec.len);
        let local = slots[me].take(len)?;
        let remote = slots[peer].take(len)?;
        let mut p = Placed {
            spec,
            wr_id: i as u64 + 1,
            local,
            remote,
            atomic: (rng.next_u64(), 0, rng.next_u64()),
            imm: rng.next_u32(),
        };
        p.atomic.1 = if rng.gen_bool(0.5) {
            p.atomic.0
        } else {
            rng.next_u64()
        };
        let data = prepare_memory(&mut pair, &p, &mut rng);
        expect_landing(&mut pair, &p, data);
        if spec.kind.consumes_recv() {
            let rq = qpn(peer, spec.qp);
            let sge = Sge {
                addr: remote,
                len: spec.len,
                lkey: keys[peer].lkey,
            };
            let sgl = if spec.kind == OpKind::WriteImm {
                vec![]
            } else {
                vec![sge]
            };
            pair.post_recv(peer, rq, RecvWr::new(p.wr_id, sgl))
                .map_err(|e| format!("post_recv: {e}"))?;
            recv_expect
                .entry((peer, rq))
                .or_default()
                .push(placed.len());
        }
        let wr = send_wr(&p, keys[me].lkey, keys[peer].rkey);
        pair.post_send(me, qpn(me, spec.qp), wr)
            .map_err(|e| format!("post_send of op {i}: {e}"))?;
        placed.push(p);
    }

    before(&mut pair);
    const LIMIT_PS: u64 = 60_000_000_000_000; // one virtual minute: far beyond any retry budget
    if !pair.run(LIMIT_PS) {
        return Err(format!("run did not terminate within {LIMIT_PS} ps"));
    }
    after(&mut pair);
    check(&mut pair, &placed, &recv_expect)
}

/// Fills the operation's source and marks its destination unwritten; returns the source
/// bytes (a SEND/WRITE's at the initiator, a READ's at the target).
fn prepare_memory(pair: &mut Pair, p: &Placed, rng: &mut Rng) -> Vec<u8> {
    let (me, peer) = (p.spec.from, 1 - p.spec.from);
    let len = p.spec.len as usize;
    let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
    let unwritten = vec![UNWRITTEN; len];
    match p.spec.kind {
        OpKind::Read => {
            pair.nodes[peer].mem.bytes.write(p.remote, &data);
            pair.nodes[me].mem.bytes.write(p.local, &unwritten);
        }
        OpKind::CompareSwap | OpKind::FetchAdd => {
            pair.nodes[peer]
                .mem
                .bytes
                .write(p.remote, &p.atomic.0.to_le_bytes());
            pair.nodes[me].mem.bytes.write(p.local, &unwritten);
        }
        _ => {
            pair.nodes[me].mem.bytes.write(p.local, &data);
            pair.nodes[peer].mem.bytes.write(p.remote, &unwritten);
        }
    }
    data
}

/// Tells the memories what the operation's destinations must hold, so every write the
/// transport makes is checked as it lands: the source bytes for SEND/WRITE/READ, the
/// new word at an atomic's target and the original word at its initiator.
fn expect_landing(pair: &mut Pair, p: &Placed, data: Vec<u8>) {
    let (me, peer) = (p.spec.from, 1 - p.spec.from);
    let (init, cmp_add, swap) = p.atomic;
    let mut atomic = |after: u64| {
        pair.nodes[peer]
            .mem
            .expect_landing(p.remote, after.to_le_bytes().to_vec());
        pair.nodes[me]
            .mem
            .expect_landing(p.local, init.to_le_bytes().to_vec());
    };
    match p.spec.kind {
        OpKind::CompareSwap => atomic(if cmp_add == init { swap } else { init }),
        OpKind::FetchAdd => atomic(init.wrapping_add(cmp_add)),
        OpKind::Read => pair.nodes[me].mem.expect_landing(p.local, data),
        _ => pair.nodes[peer].mem.expect_landing(p.remote, data),
    }
}

fn send_wr(p: &Placed, lkey: u32, rkey: u32) -> SendWr {
    let sge = Sge {
        addr: p.local,
        len: p.spec.len,
        lkey,
    };
    let remote = RemoteAddr { va: p.remote, rkey };
    let opcode = match p.spec.kind {
        OpKind::Write => WrOpcode::Write,
        OpKind::WriteImm => WrOpcode::WriteImm,
        OpKind::Read => WrOpcode::Read,
        OpKind::Send => WrOpcode::Send,
        OpKind::SendImm => WrOpcode::SendImm,
        OpKind::CompareSwap => WrOpcode::CompareSwap,
        OpKind::FetchAdd => WrOpcode::FetchAdd,
    };
    let needs_remote = !matches!(p.spec.kind, OpKind::Send | OpKind::SendImm);
    SendWr {
        wr_id: p.wr_id,
        opcode,
        sgl: [sge].into(),
        signaled: true,
        solicited: false,
        imm: matches!(p.spec.kind, OpKind::WriteImm | OpKind::SendImm).then_some(p.imm),
        remote: needs_remote.then_some(remote),
        atomic: p.spec.kind.is_atomic().then_some(AtomicArgs {
            compare_add: p.atomic.1,
            swap: p.atomic.2,
        }),
        invalidate_rkey: None,
    }
}

/// What memory must hold after an operation succeeded.
struct Expected {
    /// Node and address of the operation's destination (the initiator's for READ).
    node: usize,
    addr: u64,
    bytes: Vec<u8>,
    /// Atomics: the initiator's result buffer and the original value it must hold.
    returned: Option<(u64, Vec<u8>)>,
}

/// The bytes the target (or, for READ and atomics, the initiator) must hold after success.
fn expected(pair: &Pair, p: &Placed) -> Expected {
    let (me, peer) = (p.spec.from, 1 - p.spec.from);
    let (init, cmp_add, swap) = p.atomic;
    let read = |node: usize, addr: u64| {
        let mut bytes = vec![0; p.spec.len as usize];
        pair.nodes[node].mem.bytes.read(addr, &mut bytes);
        bytes
    };
    let atomic = |after: u64| Expected {
        node: peer,
        addr: p.remote,
        bytes: after.to_le_bytes().to_vec(),
        returned: Some((p.local, init.to_le_bytes().to_vec())),
    };
    match p.spec.kind {
        OpKind::CompareSwap => atomic(if cmp_add == init { swap } else { init }),
        OpKind::FetchAdd => atomic(init.wrapping_add(cmp_add)),
        OpKind::Read => Expected {
            node: me,
            addr: p.local,
            bytes: read(peer, p.remote),
            returned: None,
        },
        _ => Expected {
            node: peer,
            addr: p.remote,
            bytes: read(me, p.local),
            returned: None,
        },
    }
}

fn check(
    pair: &mut Pair,
    placed: &[Placed],
    recv_expect: &BTreeMap<(usize, u32), Vec<usize>>,
) -> Result<Outcome, String> {
    let mut out = Outcome {
        frames_sent: pair.frames_sent(),
        end_ps: pair.now_ps(),
        retransmitted: pair
            .nodes
            .iter()
            .map(|n| n.dev.stats().retransmitted_packets)
            .sum(),
        naks: pair
            .nodes
            .iter()
            .map(|n| n.dev.stats().naks_received.total())
            .sum(),
        timeouts: pair.nodes.iter().map(|n| n.dev.stats().ack_timeouts).sum(),
        landed_bytes: pair.nodes.iter().map(|n| n.mem.landed_bytes()).sum(),
        ..Outcome::default()
    };
    for node in 0..2 {
        if let Some(b) = pair.nodes[node].mem.bad_landings().first() {
            return Err(format!(
                "node {node}: a write put {:#04x} at {:#x}, where {} ({} bad writes)",
                b.got,
                b.addr,
                match b.want {
                    Some(w) => format!("its operation must leave {w:#04x}"),
                    None => "no operation writes".to_string(),
                },
                pair.nodes[node].mem.bad_landings().len()
            ));
        }
    }
    for node in 0..2 {
        let v = pair.nodes[node].mem.violations();
        if !v.is_empty() {
            return Err(format!(
                "node {node} accessed memory outside every MR: {v:?}"
            ));
        }
        for at in [MR_BASE - GUARD_LEN, MR_BASE + MR_LEN] {
            let mut g = vec![0; GUARD_LEN as usize];
            pair.nodes[node].mem.bytes.read(at, &mut g);
            if g.iter().any(|&b| b != GUARD_BYTE) {
                return Err(format!(
                    "node {node}: bytes outside the MR changed near {at:#x}"
                ));
            }
        }
    }
    let by_wr: BTreeMap<u64, &Placed> = placed.iter().map(|p| (p.wr_id, p)).collect();
    let mut send_done: BTreeSet<u64> = BTreeSet::new();
    let mut recv_done: BTreeSet<(usize, u64)> = BTreeSet::new();
    let mut last_per_qp: BTreeMap<(usize, u32), u64> = BTreeMap::new();
    let mut recv_seen: BTreeMap<(usize, u32), usize> = BTreeMap::new();
    for node in 0..2 {
        for c in pair.completions(node) {
            let is_recv = is_recv_completion(&c);
            if is_recv {
                check_recv(
                    pair,
                    node,
                    &c,
                    placed,
                    recv_expect,
                    &mut recv_seen,
                    &mut recv_done,
                )?;
                continue;
            }
            if !send_done.insert(c.wr_id) {
                return Err(format!("wr {} completed twice", c.wr_id));
            }
            let last = last_per_qp.entry((node, c.qpn)).or_insert(0);
            if c.wr_id <= *last {
                return Err(format!(
                    "qp {:#x}: wr {} completed after wr {}",
                    c.qpn, c.wr_id, last
                ));
            }
            *last = c.wr_id;
            let Some(p) = by_wr.get(&c.wr_id) else {
                return Err(format!("completion for unknown wr {}", c.wr_id));
            };
            if c.status != WcStatus::Success {
                *out.errors.entry(format!("{:?}", c.status)).or_default() += 1;
                continue;
            }
            out.succeeded += 1;
            let e = expected(pair, p);
            verify(pair, e.node, e.addr, &e.bytes, c.wr_id)?;
            out.verified_bytes += e.bytes.len() as u64;
            if let Some((at, want)) = e.returned {
                verify(pair, p.spec.from, at, &want, c.wr_id)?;
            }
        }
    }
    // Every op must have completed at its initiator: success, or an error per the spec.
    if send_done.len() != placed.len() {
        let missing: Vec<u64> = placed
            .iter()
            .map(|p| p.wr_id)
            .filter(|w| !send_done.contains(w))
            .take(8)
            .collect();
        return Err(format!(
            "{} of {} operations never completed (first: {missing:?})",
            placed.len() - send_done.len(),
            placed.len()
        ));
    }
    check_error_shape(&out)?;
    Ok(out)
}

fn is_recv_completion(c: &Completion) -> bool {
    matches!(
        c.opcode,
        rnic_transport::WcOpcode::Recv | rnic_transport::WcOpcode::RecvRdmaWithImm
    )
}

fn check_recv(
    pair: &Pair,
    node: usize,
    c: &Completion,
    placed: &[Placed],
    recv_expect: &BTreeMap<(usize, u32), Vec<usize>>,
    recv_seen: &mut BTreeMap<(usize, u32), usize>,
    recv_done: &mut BTreeSet<(usize, u64)>,
) -> Result<(), String> {
    if !recv_done.insert((node, c.wr_id)) {
        return Err(format!(
            "recv wr {} on node {node} completed twice",
            c.wr_id
        ));
    }
    let seen = recv_seen.entry((node, c.qpn)).or_insert(0);
    let order = recv_expect
        .get(&(node, c.qpn))
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let Some(&idx) = order.get(*seen) else {
        return Err(format!("qp {:#x}: unexpected receive completion", c.qpn));
    };
    *seen += 1;
    let p = &placed[idx];
    if p.wr_id != c.wr_id {
        return Err(format!(
            "qp {:#x}: recv wr {} completed out of order",
            c.qpn, c.wr_id
        ));
    }
    if c.status != WcStatus::Success {
        return Ok(()); // flushed after an error: the requester side reports the cause
    }
    if matches!(p.spec.kind, OpKind::SendImm | OpKind::WriteImm) && c.imm != Some(p.imm) {
        return Err(format!(
            "recv wr {}: immediate {:?}, want {:#x}",
            c.wr_id, c.imm, p.imm
        ));
    }
    if c.byte_len != p.spec.len && p.spec.kind != OpKind::WriteImm {
        return Err(format!(
            "recv wr {}: byte_len {} want {}",
            c.wr_id, c.byte_len, p.spec.len
        ));
    }
    let e = expected(pair, p);
    verify(pair, e.node, e.addr, &e.bytes, c.wr_id)
}

fn verify(pair: &Pair, node: usize, at: u64, want: &[u8], wr_id: u64) -> Result<(), String> {
    let mut got = vec![0; want.len()];
    pair.nodes[node].mem.bytes.read(at, &mut got);
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(i) => Err(format!(
            "wr {wr_id}: byte {i} at node {node} addr {:#x} is {:#04x}, want {:#04x}",
            at + i as u64,
            got[i],
            want[i]
        )),
    }
}

/// Errors must look like the spec's: only retry exhaustion (or RNR exhaustion) starts an error,
/// and whatever follows it on that QP is flushed.
fn check_error_shape(out: &Outcome) -> Result<(), String> {
    for status in out.errors.keys() {
        if !["RetryExcErr", "RnrRetryExcErr", "WrFlushErr"].contains(&status.as_str()) {
            return Err(format!(
                "unexpected error completion {status}: {:?}",
                out.errors
            ));
        }
    }
    Ok(())
}

/// A random workload for property tests and the demo.
pub fn random_workload(seed: u64, n_ops: usize, impair: Impairments) -> Workload {
    let mut rng = Rng::new(seed);
    let pmtu = [256, 512, 1024, 2048, 4096][rng.gen_index(5)];
    let wrap = rng.gen_bool(0.3);
    let mut params = QpParams {
        pmtu,
        ..QpParams::default()
    };
    if wrap {
        params.start_psn_a = 0xff_ffff - rng.gen_range(0..64) as u32;
        params.start_psn_b = 0xff_ffff - rng.gen_range(0..64) as u32;
    }
    let sizes = [0, 1, 7, pmtu - 1, pmtu, pmtu + 1, 3 * pmtu + 5, 64 << 10];
    let ops = (0..n_ops)
        .map(|_| OpSpec {
            kind: OpKind::ALL[rng.gen_index(OpKind::ALL.len())],
            len: if rng.gen_bool(0.5) {
                sizes[rng.gen_index(sizes.len())]
            } else {
                rng.gen_range(0..20_000) as u32
            },
            from: rng.gen_index(2),
            qp: rng.gen_index(3),
        })
        .collect();
    Workload {
        seed,
        impair,
        params,
        qp_pairs: 1 + rng.gen_index(3),
        ops,
    }
}
