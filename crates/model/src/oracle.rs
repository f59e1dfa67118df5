//! The end-to-end payload oracle, an observer attached to the run: every payload the
//! transport places (SEND/WRITE data, READ responses) must equal the bytes of the sender's
//! source buffer at the packet's offset in its message. The source bytes are a function of
//! the buffer and the offset ([`crate::host::pattern`]), so the oracle needs neither the
//! sender's memory nor anything inside the NIC; the application tells it when a poll byte
//! (the last byte of a ping-pong source) changes. Mismatches fail the run.

use rnic_wire::Opcode;

use std::sync::Arc;

use rnic_host::SparseMemory;
use rnic_sim::TimePs;

use crate::atomic_oracle::AtomicOracle;
use crate::host::pattern;
use crate::nic::cx::RxObserver;
use crate::size_mix::SizeMix;

const PSN_MASK: u32 = 0x00ff_ffff;

/// The sizes of a QP's operations.
#[derive(Debug, Clone)]
pub enum MsgSizes {
    /// Every operation has this many bytes.
    Fixed(u64),
    /// Operation k has the k-th draw of the mix for this pair key
    /// ([`crate::host::perftest::TestSpec::mix_key`]).
    Mix(Arc<SizeMix>, u64),
}

/// Where a QP's incoming payloads come from.
#[derive(Debug, Clone)]
struct Source {
    /// The peer node whose source buffer the payloads carry.
    peer: usize,
    /// The buffer slot on the peer.
    slot: u32,
    /// The QP's path MTU, bytes.
    pmtu: u64,
    /// Bytes of the QP's operations (a run's flows may differ in size).
    sizes: MsgSizes,
    /// First PSN of the operation the last placed payload belonged to.
    op_psn: u32,
    /// Its index among the QP's operations.
    op_k: u64,
    /// How the QP's payloads arrive: in PSN order, or as datagrams in any order.
    delivery: Delivery,
    /// Payload bytes placed on this QP and compared (a flow's share of `checked`).
    checked: u64,
    /// When the last of them was placed.
    last_placed_ps: Option<TimePs>,
}

/// How a QP's payloads may arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Delivery {
    /// RC and UC: placed in PSN order (a receiver drops what is behind), so an operation's
    /// start only moves forward and a payload behind it is a fault.
    #[default]
    InOrder,
    /// UD: every datagram is a one-packet message and the receiver checks no PSN, so
    /// datagrams the network reordered are placed in arrival order, each at the start of
    /// its own receive buffer: each is checked against its source from offset 0.
    Datagram,
}

/// The last byte of a source buffer a latency test rewrites each iteration (its poll byte):
/// its value now and every value it has held. Over UC and UD a ping-pong gives an iteration
/// up when its answer is late, and the late answer lands after the source has moved on:
/// its last byte is one the source held, not the one it holds (a UC `write-lat` whose host
/// took longer than `-u` was reported corrupt; found by a composition hunt).
#[derive(Debug, Clone, Copy, Default)]
struct LastByte {
    now: u8,
    held: [u64; 4],
}

impl LastByte {
    fn write(&mut self, v: u8) {
        self.now = v;
        self.held[usize::from(v / 64)] |= 1 << (v % 64);
    }

    fn once_held(&self, v: u8) -> bool {
        self.held[usize::from(v / 64)] & (1 << (v % 64)) != 0
    }
}

/// The payload oracle.
#[derive(Debug, Default)]
pub struct PayloadOracle {
    seed: u64,
    /// Per node, per QPN: where its payloads come from.
    sources: Vec<Vec<Option<Source>>>,
    /// Source bytes rewritten by the application: (node, slot) → last byte.
    last_bytes: rustc_hash::FxHashMap<(usize, u32), LastByte>,
    expected: Vec<u8>,
    /// Payload bytes checked as they were placed.
    pub checked: u64,
    /// Placed payloads that differed from their source.
    pub mismatches: u64,
    /// The first of them.
    pub first_mismatch: Option<String>,
    /// The values atomics return.
    pub atomics: AtomicOracle,
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

    /// QP `qpn` of `node` receives operations of `sizes` from `peer`'s source buffer `slot`
    /// (`from`: a slot number unique on `peer` across the run's flows), in packets of `pmtu`
    /// bytes whose PSNs start at `first_psn`, delivered as `delivery` says.
    pub fn connect(
        &mut self,
        (node, qpn): (usize, u32),
        (peer, slot): (usize, u32),
        pmtu: u32,
        sizes: MsgSizes,
        first_psn: u32,
        delivery: Delivery,
    ) {
        let v = &mut self.sources[node];
        if v.len() <= qpn as usize {
            crate::per_qp::grow_for(v, qpn as usize, || None);
        }
        v[qpn as usize] = Some(Source {
            peer,
            slot,
            pmtu: u64::from(pmtu.max(1)),
            sizes,
            op_psn: first_psn & PSN_MASK,
            op_k: 0,
            delivery,
            checked: 0,
            last_placed_ps: None,
        });
    }

    fn source(&self, node: usize, qpn: u32) -> Option<&Source> {
        self.sources
            .get(node)
            .and_then(|v| v.get(qpn as usize))
            .and_then(|s| s.as_ref())
    }

    /// Payload bytes QP `qpn` of `node` placed and compared: over UC and UD, what a flow's
    /// QP received (a sender's completion says nothing about arrival).
    pub fn checked_on(&self, node: usize, qpn: u32) -> u64 {
        self.source(node, qpn).map_or(0, |s| s.checked)
    }

    /// When QP `qpn` of `node` last placed a payload (none yet: `None`): over UC and UD, and
    /// behind the WAN accelerator, when a flow's receiver had its last byte (its sender's
    /// completion says nothing about arrival).
    pub fn last_placed_on(&self, node: usize, qpn: u32) -> Option<TimePs> {
        self.source(node, qpn).and_then(|s| s.last_placed_ps)
    }

    /// The application wrote `v` into the last byte of `node`'s source buffer `slot`.
    pub fn set_last_byte(&mut self, node: usize, slot: u32, v: u8) {
        self.last_bytes.entry((node, slot)).or_default().write(v);
    }

    fn fail(&mut self, msg: impl FnOnce() -> String) {
        self.mismatches += 1;
        if self.first_mismatch.is_none() {
            self.first_mismatch = Some(msg());
        }
    }
}

impl RxObserver for PayloadOracle {
    fn atomic_returned(
        &mut self,
        node: usize,
        qpn: u32,
        psn: u32,
        wire: [u8; 8],
        mem: &SparseMemory,
    ) {
        self.atomics.returned(node, qpn, psn, wire, mem);
    }

    /// The offset comes from PSNs alone, never from opcodes: the QP's operations have known
    /// sizes (one size, or the k-th draw of a mix), so operation k takes `npkts(k)` PSNs
    /// after operation k − 1, and a packet's offset is its PSN distance from its
    /// operation's first PSN × PMTU. Placement is in order, so the operation start only
    /// moves forward.
    fn placed(
        &mut self,
        now: TimePs,
        node: usize,
        qpn: u32,
        _op: Opcode,
        psn: u32,
        payload: &[u8],
    ) {
        let Some(src) = self
            .sources
            .get_mut(node)
            .and_then(|v| v.get_mut(qpn as usize))
            .and_then(|s| s.as_mut())
        else {
            return;
        };
        src.last_placed_ps = Some(now);
        let seed = self.seed;
        let pkts = |bytes: u64, pmtu: u64| bytes.max(1).div_ceil(pmtu).max(1) as u32;
        let ahead = psn.wrapping_sub(src.op_psn) & PSN_MASK;
        if src.delivery == Delivery::Datagram {
            // One packet per message, placed at its buffer's start whatever its PSN.
            let msg_bytes = match &src.sizes {
                MsgSizes::Fixed(bytes) => *bytes,
                MsgSizes::Mix(..) => payload.len() as u64,
            };
            src.checked += payload.len() as u64;
            let (peer, slot) = (src.peer, src.slot);
            self.check(node, qpn, psn, (peer, slot), 0, msg_bytes, payload);
            return;
        }
        if ahead > PSN_MASK / 2 {
            let start = src.op_psn;
            self.fail(|| {
                format!(
                    "node {node} QP {qpn} PSN {psn}: placed behind its operation's first PSN {start}"
                )
            });
            return;
        }
        let (in_op, msg_bytes) = match &src.sizes {
            MsgSizes::Fixed(bytes) => {
                let npkts = pkts(*bytes, src.pmtu);
                let whole_ops = ahead / npkts * npkts;
                src.op_psn = src.op_psn.wrapping_add(whole_ops) & PSN_MASK;
                (ahead - whole_ops, *bytes)
            }
            MsgSizes::Mix(mix, key) => {
                let mut ahead = ahead;
                let mut bytes = mix.draw(seed, *key, src.op_k);
                while ahead >= pkts(bytes, src.pmtu) {
                    let n = pkts(bytes, src.pmtu);
                    ahead -= n;
                    src.op_psn = src.op_psn.wrapping_add(n) & PSN_MASK;
                    src.op_k += 1;
                    bytes = mix.draw(seed, *key, src.op_k);
                }
                (ahead, bytes)
            }
        };
        let offset = u64::from(in_op) * src.pmtu;
        src.checked += payload.len() as u64;
        let (peer, slot) = (src.peer, src.slot);
        self.check(node, qpn, psn, (peer, slot), offset, msg_bytes, payload);
    }
}

impl PayloadOracle {
    /// Compares `payload`, placed at `offset` of a `msg_bytes` message, with `peer`'s
    /// source buffer `slot` (its last byte as the application last wrote it).
    #[allow(clippy::too_many_arguments)]
    fn check(
        &mut self,
        node: usize,
        qpn: u32,
        psn: u32,
        (peer, slot): (usize, u32),
        offset: u64,
        msg_bytes: u64,
        payload: &[u8],
    ) {
        let mut want = std::mem::take(&mut self.expected);
        want.resize(payload.len(), 0);
        pattern::fill(
            pattern::buffer_seed(self.seed, peer, slot),
            offset,
            &mut want,
        );
        let last = msg_bytes.max(1) - 1;
        // Only latency tests rewrite a source's last byte: the map is empty otherwise.
        let rewritten = (!self.last_bytes.is_empty())
            .then(|| self.last_bytes.get(&(peer, slot)))
            .flatten();
        if let Some(b) = rewritten {
            if (offset..offset + payload.len() as u64).contains(&last) {
                let at = (last - offset) as usize;
                // The value it holds, or one it held for a late answer.
                want[at] = if b.once_held(payload[at]) {
                    payload[at]
                } else {
                    b.now
                };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The source's bytes at `offset` of node `peer`'s buffer `slot`, `len` of them.
    fn source_bytes(seed: u64, (peer, slot): (usize, u32), offset: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0; len];
        pattern::fill(pattern::buffer_seed(seed, peer, slot), offset, &mut b);
        b
    }

    /// A QP's last placement is stamped with the time it was placed (a UC or UD workload
    /// flow's FCT runs to it); a QP that placed nothing has no stamp.
    #[test]
    fn a_qp_s_last_placement_is_stamped_with_its_time() {
        let mut o = PayloadOracle::new(7, 2);
        o.connect(
            (1, 5),
            (0, 3),
            4096,
            MsgSizes::Fixed(8192),
            100,
            Delivery::InOrder,
        );
        assert_eq!(o.last_placed_on(1, 5), None);
        let first = source_bytes(7, (0, 3), 0, 4096);
        o.placed(2_000, 1, 5, Opcode::UcWriteFirst, 100, &first);
        assert_eq!(o.last_placed_on(1, 5), Some(2_000));
        let last = source_bytes(7, (0, 3), 4096, 4096);
        o.placed(2_350, 1, 5, Opcode::UcWriteLast, 101, &last);
        assert_eq!(o.last_placed_on(1, 5), Some(2_350));
        assert_eq!((o.checked_on(1, 5), o.mismatches), (8192, 0));
        assert_eq!(o.last_placed_on(0, 5), None);
        assert_eq!(o.last_placed_on(1, 6), None);
    }

    /// A latency test rewrites its source's last byte each iteration: a payload carrying
    /// the value it holds passes, and so does a late one carrying a value it held; a value
    /// it never held is a mismatch.
    #[test]
    fn a_late_answer_carries_a_poll_byte_its_source_once_held() {
        let mut o = PayloadOracle::new(7, 2);
        o.connect(
            (1, 5),
            (0, 3),
            4096,
            MsgSizes::Fixed(2),
            100,
            Delivery::InOrder,
        );
        let with_last = |v: u8| {
            let mut b = source_bytes(7, (0, 3), 0, 2);
            b[1] = v;
            b
        };
        for v in [1, 2, 3] {
            o.set_last_byte(0, 3, v);
        }
        for (psn, v) in [(100, 3), (101, 1), (102, 200)] {
            o.placed(1_000, 1, 5, Opcode::UcWriteOnly, psn, &with_last(v));
        }
        assert_eq!(
            o.mismatches, 1,
            "only the byte never held: {:?}",
            o.first_mismatch
        );
    }
}
