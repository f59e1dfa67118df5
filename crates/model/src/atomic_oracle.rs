//! The atomic oracle: every original value an ATOMIC ACKNOWLEDGE returns to a requester is
//! checked against the value its target held when the atomic executed.
//!
//! The application tells the oracle each atomic it posts (its operands, read from the WQE
//! it wrote); the NIC tells it each value the requester's transport wrote into its local
//! buffer, with the value the acknowledge carried on the wire. A responder executes a QP's
//! atomics in PSN order and the requester accepts their acknowledges in the same order, so
//! the k-th value a QP gets back answers its k-th atomic.
//!
//! * A target only one QP works on (every pair has its own buffer slot unless the pairs
//!   outnumber the slots): the oracle follows the target's value from its initial one,
//!   atomic by atomic. Each returned value must equal it exactly: fetch-and-add then adds,
//!   a compare-and-swap swaps exactly when the returned value equals its compare operand.
//!   At the end the target must hold the value after the returned atomics, or after some of
//!   the atomics posted behind them that executed without their acknowledge arriving.
//! * A target several QPs share: their atomics interleave in an order the requesters do
//!   not see. Fetch-and-adds of one addend: the returned values must be distinct, each
//!   `initial + k × add`, and with the final value form the whole sequence. Compare-and-
//!   swaps: each returned value must be the initial value or one a successful swap wrote,
//!   and so must the final value.
//!
//! Byte order: the AtomicAckETH carries the value big-endian (IBA); host memory holds it
//! little-endian (the model's convention, the responder's too). Both are checked, and only
//! these orders are accepted.

use std::collections::VecDeque;

use rnic_host::SparseMemory;
use rnic_transport::Memory;
use rustc_hash::FxHashMap;

/// One atomic's operands, as posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicOperands {
    /// Fetch-and-add (else compare-and-swap).
    pub fetch_add: bool,
    /// The addend (fetch-and-add) or the compare operand (compare-and-swap).
    pub compare_add: u64,
    /// The swap operand (compare-and-swap).
    pub swap: u64,
}

impl AtomicOperands {
    /// The target's value after this atomic found `v` there.
    fn apply(self, v: u64) -> u64 {
        if self.fetch_add {
            v.wrapping_add(self.compare_add)
        } else if v == self.compare_add {
            self.swap
        } else {
            v
        }
    }

    fn name(self) -> &'static str {
        if self.fetch_add {
            "FETCH_AND_ADD"
        } else {
            "CMP_AND_SWAP"
        }
    }

    fn describe(self) -> String {
        if self.fetch_add {
            format!("FETCH_AND_ADD add {}", self.compare_add)
        } else {
            format!(
                "CMP_AND_SWAP compare {} swap {}",
                self.compare_add, self.swap
            )
        }
    }
}

/// A target: 8 bytes of a node's memory.
#[derive(Debug, Clone)]
struct Target {
    node: usize,
    addr: u64,
    initial: u64,
    /// The requesters working on it.
    users: u32,
    /// One user: the value it holds after the returned atomics.
    value: u64,
    /// Several users: every (returned value, operands).
    returned: Vec<(u64, AtomicOperands)>,
}

/// A requester QP.
#[derive(Debug, Clone)]
struct Requester {
    /// Its local buffer (where returned values land).
    local: u64,
    /// Index of its target.
    target: usize,
    /// Posted atomics not answered yet, oldest first.
    pending: VecDeque<AtomicOperands>,
    /// Values returned and checked.
    returns: u64,
}

/// The atomic oracle.
#[derive(Debug, Default)]
pub struct AtomicOracle {
    requesters: FxHashMap<(usize, u32), Requester>,
    targets: Vec<Target>,
    target_of: FxHashMap<(usize, u64), usize>,
    /// Returned values checked (8 bytes each).
    pub checked: u64,
    /// Returned values that were wrong.
    pub mismatches: u64,
    /// The first of them.
    pub first_mismatch: Option<String>,
}

impl AtomicOracle {
    /// QP `qpn` of `node` posts atomics whose returned values land at `local`, on 8 bytes at
    /// `addr` of `target_node` that hold `initial` before any atomic.
    pub fn connect(
        &mut self,
        (node, qpn): (usize, u32),
        local: u64,
        (target_node, addr): (usize, u64),
        initial: u64,
    ) {
        let n = self.targets.len();
        let t = *self.target_of.entry((target_node, addr)).or_insert(n);
        if t == n {
            self.targets.push(Target {
                node: target_node,
                addr,
                initial,
                users: 0,
                value: initial,
                returned: Vec::new(),
            });
        }
        self.targets[t].users += 1;
        self.requesters.insert(
            (node, qpn),
            Requester {
                local,
                target: t,
                pending: VecDeque::new(),
                returns: 0,
            },
        );
    }

    /// QP `qpn` of `node` posted an atomic with `ops`.
    pub fn posted(&mut self, node: usize, qpn: u32, ops: AtomicOperands) {
        if let Some(r) = self.requesters.get_mut(&(node, qpn)) {
            r.pending.push_back(ops);
        }
    }

    fn fail(&mut self, msg: impl FnOnce() -> String) {
        self.mismatches += 1;
        if self.first_mismatch.is_none() {
            self.first_mismatch = Some(msg());
        }
    }

    /// The transport of `node` accepted the ATOMIC ACKNOWLEDGE `psn` of QP `qpn`, whose
    /// AtomicAckETH held `wire`; `mem` is the node's memory after it wrote the value.
    pub fn returned(&mut self, node: usize, qpn: u32, psn: u32, wire: [u8; 8], mem: &SparseMemory) {
        let Some(r) = self.requesters.get_mut(&(node, qpn)) else {
            return;
        };
        let mut host = [0u8; 8];
        mem.read(r.local, &mut host);
        let Some(ops) = r.pending.pop_front() else {
            self.fail(|| {
                format!("node {node} QP {qpn} PSN {psn}: an atomic value returned with no atomic outstanding")
            });
            return;
        };
        r.returns += 1;
        self.checked += 8;
        let t = r.target;
        let on_wire = u64::from_be_bytes(wire);
        let got = u64::from_le_bytes(host);
        if on_wire != got {
            self.fail(|| {
                format!(
                    "node {node} QP {qpn} PSN {psn}: {} returned {got} into the requester's \
                     buffer (bytes {host:02x?}, little-endian) but the ATOMIC ACKNOWLEDGE \
                     carried {on_wire} (big-endian)",
                    ops.name()
                )
            });
        }
        let target = &mut self.targets[t];
        if target.users > 1 {
            target.returned.push((got, ops));
            return;
        }
        let want = target.value;
        target.value = ops.apply(want);
        let (tn, ta) = (target.node, target.addr);
        if got != want {
            self.fail(|| {
                format!(
                    "node {node} QP {qpn} PSN {psn}: {} returned {got}, but node {tn}'s \
                     target {ta:#x} held {want} when it executed",
                    ops.describe()
                )
            });
        }
    }

    /// Values returned to QP `qpn` of `node` and checked.
    pub fn returns(&self, node: usize, qpn: u32) -> u64 {
        self.requesters.get(&(node, qpn)).map_or(0, |r| r.returns)
    }

    /// Checks the final value of every target in `mems`: the reasons of those that are
    /// wrong.
    pub fn check_final(&self, mems: &[SparseMemory]) -> Vec<String> {
        let mut bad = Vec::new();
        // Each target's requesters, grouped in one pass (a target is not searched for among
        // every requester: a million QPs' run has a million of each).
        let mut users_of: Vec<Vec<(&(usize, u32), &Requester)>> =
            vec![Vec::new(); self.targets.len()];
        for (k, r) in &self.requesters {
            users_of[r.target].push((k, r));
        }
        for (t, mut users) in self.targets.iter().zip(users_of) {
            let mut b = [0u8; 8];
            mems[t.node].read(t.addr, &mut b);
            let fin = u64::from_le_bytes(b);
            users.sort_by_key(|(k, _)| **k);
            let where_ = format!("node {} target {:#x}", t.node, t.addr);
            if t.users == 1 {
                let Some(((n, q), r)) = users.first() else {
                    continue;
                };
                // The value after the returned atomics, or after some of those posted
                // behind them (executed, their acknowledge lost with the run's end).
                let mut v = t.value;
                let mut ok = fin == v;
                for ops in &r.pending {
                    v = ops.apply(v);
                    ok |= fin == v;
                }
                if !ok {
                    bad.push(format!(
                        "{where_} holds {fin} at the end (bytes {b:02x?}, little-endian), but \
                         after the {} atomic(s) QP {q} of node {n} got answers to it should hold \
                         {} (or what the {} posted behind them would make of it)",
                        r.returns,
                        t.value,
                        r.pending.len()
                    ));
                }
                continue;
            }
            let pending: u64 = users.iter().map(|(_, r)| r.pending.len() as u64).sum();
            if let Some(reason) = shared_check(t.initial, fin, &t.returned, pending) {
                bad.push(format!("{where_} ({} QPs): {reason}", t.users));
            }
        }
        bad
    }
}

/// Checks a target several QPs share, holding `initial` first and `fin` at the end, whose
/// atomics returned `returned`, with `pending` more posted but not answered.
fn shared_check(
    initial: u64,
    fin: u64,
    returned: &[(u64, AtomicOperands)],
    pending: u64,
) -> Option<String> {
    let adds: Vec<u64> = returned
        .iter()
        .filter(|(_, o)| o.fetch_add)
        .map(|(_, o)| o.compare_add)
        .collect();
    if adds.len() == returned.len() && adds.windows(2).all(|w| w[0] == w[1]) {
        let Some(&add) = adds.first() else {
            return (fin != initial && pending == 0).then(|| {
                format!("holds {fin} at the end, {initial} before, with no atomic executed")
            });
        };
        if add == 0 {
            return returned.iter().find(|(v, _)| *v != initial).map(|(v, _)| {
                format!("FETCH_AND_ADD add 0 returned {v}, the target held {initial}")
            });
        }
        // The k-th executed fetch-and-add returns initial + k × add.
        let index = |v: u64| {
            let d = v.wrapping_sub(initial);
            d.is_multiple_of(add).then_some(d / add)
        };
        let Some(executed) = index(fin) else {
            return Some(format!(
                "holds {fin} at the end, not {initial} + k × {add} for any k"
            ));
        };
        let n = returned.len() as u64;
        if executed < n || executed > n + pending {
            return Some(format!(
                "holds {fin} at the end: {executed} FETCH_AND_ADD(s) of {add} executed, but {n} \
                 returned and {pending} more were posted"
            ));
        }
        let mut seen: Vec<u64> = Vec::with_capacity(returned.len());
        for &(v, _) in returned {
            match index(v) {
                Some(k) if k < executed => seen.push(k),
                _ => {
                    return Some(format!(
                        "FETCH_AND_ADD add {add} returned {v}, not {initial} + k × {add} for \
                         k below the {executed} executed"
                    ))
                }
            }
        }
        seen.sort_unstable();
        if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
            return Some(format!(
                "two FETCH_AND_ADDs returned the same value {}",
                initial.wrapping_add(w[0].wrapping_mul(add))
            ));
        }
        return None;
    }
    // Compare-and-swaps (or a mix): the values the target can have held.
    let mut held: Vec<u64> = vec![initial];
    held.extend(returned.iter().filter_map(|&(v, o)| {
        if o.fetch_add {
            Some(o.apply(v))
        } else {
            (v == o.compare_add).then_some(o.swap)
        }
    }));
    held.sort_unstable();
    let could = |v: u64| held.binary_search(&v).is_ok();
    if let Some((v, o)) = returned.iter().find(|(v, _)| !could(*v)) {
        return Some(format!(
            "{} returned {v}, a value the target never held (neither its initial {initial} nor \
             one a returned atomic wrote)",
            o.describe()
        ));
    }
    if pending == 0 && !could(fin) {
        return Some(format!(
            "holds {fin} at the end, a value no returned atomic wrote (initial {initial})"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAA: AtomicOperands = AtomicOperands {
        fetch_add: true,
        compare_add: 1,
        swap: 0,
    };

    fn cas(k: u64) -> AtomicOperands {
        AtomicOperands {
            fetch_add: false,
            compare_add: k,
            swap: k + 1,
        }
    }

    /// An oracle over `qps` QPs of node 0 (local buffers 0x100 + 64 × q) on node 1's 8
    /// bytes at 0x1000 (shared when `shared`, else 0x1000 + 64 × q), and the memories.
    fn setup(qps: u32, shared: bool) -> (AtomicOracle, Vec<SparseMemory>) {
        let mut o = AtomicOracle::default();
        for q in 0..qps {
            let addr = if shared {
                0x1000
            } else {
                0x1000 + 64 * u64::from(q)
            };
            o.connect((0, q), 0x100 + 64 * u64::from(q), (1, addr), 0);
        }
        (o, vec![SparseMemory::new(), SparseMemory::new()])
    }

    /// The requester's transport writes `v` (little-endian) and the wire carried `wire`.
    fn ret(o: &mut AtomicOracle, m: &mut [SparseMemory], q: u32, v: u64, wire: u64) {
        m[0].write(0x100 + 64 * u64::from(q), &v.to_le_bytes());
        o.returned(0, q, 7, wire.to_be_bytes(), &m[0]);
    }

    fn set_final(m: &mut [SparseMemory], addr: u64, v: u64) {
        m[1].write(addr, &v.to_le_bytes());
    }

    #[test]
    fn the_right_values_pass() {
        for ops in [FAA, cas(0)] {
            let (mut o, mut m) = setup(1, false);
            for k in 0..5 {
                let op = if ops.fetch_add { FAA } else { cas(k) };
                o.posted(0, 0, op);
                ret(&mut o, &mut m, 0, k, k);
            }
            set_final(&mut m, 0x1000, 5);
            assert_eq!(o.mismatches, 0, "{:?}", o.first_mismatch);
            assert_eq!(o.check_final(&m), Vec::<String>::new());
            assert_eq!((o.checked, o.returns(0, 0)), (40, 5));
        }
    }

    #[test]
    fn a_wrong_returned_value_fails() {
        let (mut o, mut m) = setup(1, false);
        for k in 0..3 {
            o.posted(0, 0, FAA);
            // The second returns 2: the atomic executed twice, or the value is wrong.
            let v = if k == 1 { 2 } else { k };
            ret(&mut o, &mut m, 0, v, v);
        }
        assert_eq!(o.mismatches, 1);
        let m1 = o.first_mismatch.clone().unwrap();
        assert!(
            m1.contains("QP 0") && m1.contains("FETCH_AND_ADD add 1 returned 2"),
            "{m1}"
        );
        assert!(m1.contains("held 1"), "{m1}");
    }

    #[test]
    fn a_value_in_the_wrong_byte_order_fails() {
        let (mut o, mut m) = setup(1, false);
        o.posted(0, 0, FAA);
        o.posted(0, 0, FAA);
        ret(&mut o, &mut m, 0, 0, 0);
        // Host memory holds 1 big-endian: the wire says 1, the buffer says 1 << 56.
        m[0].write(0x100, &1u64.to_be_bytes());
        o.returned(0, 0, 8, 1u64.to_be_bytes(), &m[0]);
        assert_eq!(o.mismatches, 2, "{:?}", o.first_mismatch);
        assert!(o.first_mismatch.unwrap().contains("big-endian"));
    }

    #[test]
    fn a_failed_compare_and_swap_changes_nothing() {
        let (mut o, mut m) = setup(1, false);
        o.posted(0, 0, cas(0));
        ret(&mut o, &mut m, 0, 0, 0);
        // Compare 5 against 1: fails, returns 1, the target keeps 1.
        o.posted(0, 0, cas(5));
        ret(&mut o, &mut m, 0, 1, 1);
        o.posted(0, 0, cas(1));
        ret(&mut o, &mut m, 0, 1, 1);
        assert_eq!(o.mismatches, 0, "{:?}", o.first_mismatch);
        set_final(&mut m, 0x1000, 2);
        assert!(o.check_final(&m).is_empty());
        // A final value the swaps cannot explain.
        set_final(&mut m, 0x1000, 6);
        assert_eq!(o.check_final(&m).len(), 1);
    }

    #[test]
    fn the_final_value_may_include_unanswered_atomics_only() {
        let (mut o, mut m) = setup(1, false);
        for _ in 0..4 {
            o.posted(0, 0, FAA);
        }
        ret(&mut o, &mut m, 0, 0, 0);
        for (fin, ok) in [(0, false), (1, true), (3, true), (4, true), (5, false)] {
            set_final(&mut m, 0x1000, fin);
            assert_eq!(o.check_final(&m).is_empty(), ok, "final {fin}");
        }
    }

    #[test]
    fn a_shared_fetch_and_add_target_returns_the_whole_sequence() {
        let (mut o, mut m) = setup(3, true);
        // Three QPs' atomics interleaved at the target: 0..6 in some order.
        let order = [(0, 0), (1, 1), (2, 2), (1, 3), (0, 4), (2, 5)];
        for &(q, v) in &order {
            o.posted(0, q, FAA);
            ret(&mut o, &mut m, q, v, v);
        }
        set_final(&mut m, 0x1000, 6);
        assert!(o.check_final(&m).is_empty(), "{:?}", o.check_final(&m));
        // One executed twice: the final value counts seven.
        set_final(&mut m, 0x1000, 7);
        assert_eq!(o.check_final(&m).len(), 1);
        // Two returned the same value.
        let (mut o, mut m) = setup(2, true);
        for &(q, v) in &[(0, 0), (1, 0)] {
            o.posted(0, q, FAA);
            ret(&mut o, &mut m, q, v, v);
        }
        set_final(&mut m, 0x1000, 2);
        let bad = o.check_final(&m);
        assert!(bad[0].contains("same value 0"), "{bad:?}");
    }

    #[test]
    fn a_shared_compare_and_swap_target_is_consistent() {
        let (mut o, mut m) = setup(2, true);
        // QP 0 swaps 0 → 1; QP 1's compare 0 then fails, returning 1.
        o.posted(0, 0, cas(0));
        ret(&mut o, &mut m, 0, 0, 0);
        o.posted(0, 1, cas(0));
        ret(&mut o, &mut m, 1, 1, 1);
        set_final(&mut m, 0x1000, 1);
        assert!(o.check_final(&m).is_empty());
        // A value nothing wrote.
        let (mut o, mut m) = setup(2, true);
        o.posted(0, 0, cas(0));
        ret(&mut o, &mut m, 0, 9, 9);
        set_final(&mut m, 0x1000, 0);
        assert_eq!(o.check_final(&m).len(), 1);
    }
}
