//! The end-to-end payload oracle, an observer attached to the run: every payload the
//! transport places (SEND/WRITE data, READ responses) must equal the bytes of the sender's
//! source buffer at the packet's offset in its message. The source bytes are a function of
//! the buffer and the offset ([`crate::host::pattern`]), so the oracle needs neither the
//! sender's memory nor anything inside the NIC; the application tells it when a poll byte
//! (the last byte of a ping-pong source) changes. Mismatches fail the run.

use rnic_wire::Opcode;

use crate::host::pattern;
use crate::nic::cx::RxObserver;

const PSN_MASK: u32 = 0x00ff_ffff;

/// Where a QP's incoming payloads come from.
#[derive(Debug, Clone, Copy)]
struct Source {
    /// The peer node whose source buffer the payloads carry.
    peer: usize,
    /// The buffer slot on the peer.
    slot: u32,
    /// The QP's path MTU, bytes.
    pmtu: u64,
    /// Bytes of every operation on the QP (a run's flows may differ in size).
    msg_bytes: u64,
    /// First PSN of the operation the last placed payload belonged to.
    op_psn: u32,
}

/// The payload oracle.
#[derive(Debug, Default)]
pub struct PayloadOracle {
    seed: u64,
    /// Per node, per QPN: where its payloads come from.
    sources: Vec<Vec<Option<Source>>>,
    /// Source bytes rewritten by the application: (node, slot) → last byte.
    last_bytes: rustc_hash::FxHashMap<(usize, u32), u8>,
    expected: Vec<u8>,
    /// Payload bytes checked as they were placed.
    pub checked: u64,
    /// Placed payloads that differed from their source.
    pub mismatches: u64,
    /// The first of them.
    pub first_mismatch: Option<String>,
}

impl PayloadOracle {
    /// An oracle for a run seeded `seed` over `nodes` nodes.
    pub fn new(seed: u64, nodes: usize) -> Self {
        PayloadOracle {
            seed,
            sources: vec![Vec::new(); nodes],
            ..PayloadOracle::default()
        }
    }

    /// QP `qpn` of `node` receives `msg_bytes`-byte operations from `peer`'s source buffer
    /// `slot` (a number unique on `peer` across the run's flows), in packets of `pmtu`
    /// bytes.
    pub fn connect(
        &mut self,
        node: usize,
        qpn: u32,
        peer: usize,
        slot: u32,
        pmtu: u32,
        msg_bytes: u64,
    ) {
        let v = &mut self.sources[node];
        if v.len() <= qpn as usize {
            v.resize(qpn as usize + 1, None);
        }
        v[qpn as usize] = Some(Source {
            peer,
            slot,
            pmtu: u64::from(pmtu.max(1)),
            msg_bytes,
            op_psn: 0,
        });
    }

    /// The application wrote `v` into the last byte of `node`'s source buffer `slot`.
    pub fn set_last_byte(&mut self, node: usize, slot: u32, v: u8) {
        self.last_bytes.insert((node, slot), v);
    }

    fn fail(&mut self, msg: impl FnOnce() -> String) {
        self.mismatches += 1;
        if self.first_mismatch.is_none() {
            self.first_mismatch = Some(msg());
        }
    }
}

impl RxObserver for PayloadOracle {
    /// The offset comes from PSNs alone, never from opcodes: every operation of a QP has
    /// the same size, so each takes `npkts` PSNs from 0 on, and a packet's offset is its
    /// PSN distance from its operation's first PSN × PMTU. Placement is in order, so the
    /// operation start only moves forward.
    fn placed(&mut self, node: usize, qpn: u32, _op: Opcode, psn: u32, payload: &[u8]) {
        let Some(src) = self
            .sources
            .get_mut(node)
            .and_then(|v| v.get_mut(qpn as usize))
            .and_then(|s| s.as_mut())
        else {
            return;
        };
        let npkts = src.msg_bytes.max(1).div_ceil(src.pmtu).max(1) as u32;
        let ahead = psn.wrapping_sub(src.op_psn) & PSN_MASK;
        if ahead > PSN_MASK / 2 {
            let start = src.op_psn;
            self.fail(|| {
                format!(
                    "node {node} QP {qpn} PSN {psn}: placed behind its operation's first PSN {start}"
                )
            });
            return;
        }
        let whole_ops = ahead / npkts * npkts;
        src.op_psn = src.op_psn.wrapping_add(whole_ops) & PSN_MASK;
        let offset = u64::from(ahead - whole_ops) * src.pmtu;
        let (peer, slot, msg_bytes) = (src.peer, src.slot, src.msg_bytes);
        let mut want = std::mem::take(&mut self.expected);
        want.resize(payload.len(), 0);
        pattern::fill(
            pattern::buffer_seed(self.seed, peer, slot),
            offset,
            &mut want,
        );
        let last = msg_bytes.max(1) - 1;
        if let Some(&v) = self.last_bytes.get(&(peer, slot)) {
            if (offset..offset + payload.len() as u64).contains(&last) {
                want[(last - offset) as usize] = v;
            }
        }
        self.checked += payload.len() as u64;
        if want != payload {
            let at = want
                .iter()
                .zip(payload)
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            let (got, exp) = (payload[at], want[at]);
            self.fail(|| {
                format!(
                    "node {node} QP {qpn} PSN {psn}: placed payload differs from node {peer}'s source at byte {} ({got:#04x} != {exp:#04x})",
                    offset + at as u64
                )
            });
        }
        self.expected = want;
    }
}
