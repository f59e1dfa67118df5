//! A flow's buffers checked against their sources, at the end of the run or, in a run of
//! flows, as soon as the flow completes ([`EarlyChecks`]): then its destination buffers are
//! freed, so that a run of thousands of flows holds the bytes of the flows in flight, not
//! of every flow it ran.

use rnic_host::SparseMemory;
use rnic_transport::Memory;

use super::build::Layout;
use crate::host::perftest::Perftest;
use crate::result::RunStatus;
use crate::verdict::Verdict;
use crate::workload::Verb;
use crate::world::World;

/// What the check of one flow's buffers found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BufferCheck {
    /// Bytes compared (and atomics' returned values, 8 bytes each).
    pub checked: u64,
    /// Destination buffers that held their copy, each compared over the bytes that must
    /// match: none at all for a 1-byte ping-pong that may have ended mid-iteration, whose
    /// one byte is its poll byte (left out), so a copy that arrived counts here even when
    /// `checked` stays 0.
    pub copies: u64,
    /// Buffers (or atomic pairs) that failed.
    pub bad: u64,
    /// The first failure.
    pub first_bad: Option<String>,
}

impl BufferCheck {
    fn note(&mut self, msg: String) {
        self.bad += 1;
        if self.first_bad.is_none() {
            self.first_bad = Some(msg);
        }
    }

    /// Records the findings in `verdict`: differences as corrupt; a flow `a` that moved
    /// nothing as incomplete (unless the run already has findings, `run_ok` false, which
    /// say why).
    pub(crate) fn record(self, a: &Perftest, run_ok: bool, verdict: &mut Verdict) {
        if self.bad > 0 {
            verdict.add(
                RunStatus::Corrupt,
                format!(
                    "{} buffer(s) failed verification; first: {}",
                    self.bad,
                    self.first_bad.unwrap_or_default()
                ),
            );
        }
        if self.checked == 0 && self.copies == 0 && verdict.status() == RunStatus::Ok && run_ok {
            let why = if a.spec.unreliable {
                "nothing was transferred, so nothing could be verified: every UC/UD message was \
                 lost (these services never retransmit; see `unreliable` in the JSON)"
            } else {
                "nothing was transferred, so nothing could be verified"
            };
            verdict.add(RunStatus::Incomplete, why.to_string());
        }
    }
}

/// The buffer checks of a run of flows that were done when their flow completed, and the
/// memory they gave back.
#[derive(Debug, Default)]
pub(crate) struct EarlyChecks {
    /// Per flow: its check, if it was done when the flow completed.
    by_flow: Vec<Option<BufferCheck>>,
    /// What the checks freed.
    pub stats: FlowMemory,
}

/// How a run of flows held its flows' received bytes: each flow that could be checked when
/// it completed was, and its destination buffers freed then (instead of kept to the end of
/// the run, about one byte of memory per byte moved).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowMemory {
    /// Flows whose buffers were checked when they completed, and freed.
    pub flows_released: u64,
    /// Bytes of host memory (page storage) freed with them.
    pub bytes_released: u64,
    /// Bytes of page storage every node's host memory still held at the end of the run
    /// (rings, CQs, the buffers of flows checked at the end).
    pub bytes_held_at_end: u64,
    /// Backed address ranges every node's host memory still held at the end of the run:
    /// the sources of READ flows and of flows checked at the end, one per node of such a
    /// flow.
    pub backed_ranges_at_end: u64,
}

impl EarlyChecks {
    /// For a run of `flows` flows, none checked yet.
    pub(crate) fn new(flows: usize) -> Self {
        EarlyChecks {
            by_flow: vec![None; flows],
            stats: FlowMemory::default(),
        }
    }

    /// Flow `f`, laid out as `layout`, just finished: if nothing can change its buffers or
    /// its check any more ([`settled`]), checks them now and frees its destination buffers
    /// on every node it uses, and for a WRITE or SEND flow drops the backing of its sources
    /// there (generated on read, never stored: nothing else to free; the flow's buffers are
    /// its own, no other flow reads them, its pairs that share a buffer slot are all done,
    /// and a requester reads no source of an acknowledged operation). A READ flow's sources
    /// stay backed: a duplicate request still on its way can make the responder read them
    /// again (the response is dropped, but a capture shows its bytes). The end of the run
    /// takes the check instead of doing it ([`EarlyChecks::take`]).
    pub(crate) fn flow_finished(&mut self, w: &mut World, layout: &Layout, f: usize) {
        let a = &w.apps[f];
        if !settled(a) || self.by_flow.get(f).is_none_or(Option::is_some) {
            return;
        }
        let unback = a.spec.test.verb() != Verb::Read;
        self.by_flow[f] = Some(check_buffers(w, a, layout));
        let nodes = std::iter::once(a.server).chain(a.pairs.iter().map(|p| p.c_node as usize));
        let mut nodes: Vec<usize> = nodes.collect();
        nodes.sort_unstable();
        nodes.dedup();
        for n in nodes {
            let (src, dst) = (w.apps[f].nodes[n].src, w.apps[f].nodes[n].dst);
            self.stats.bytes_released += w.mems[n].release(dst, dst + layout.region);
            if unback {
                w.mems[n].unback(src, dst + layout.region);
            }
        }
        self.stats.flows_released += 1;
    }

    /// Flow `f`'s check, if it was done when the flow completed.
    pub(crate) fn take(&mut self, f: usize) -> Option<BufferCheck> {
        self.by_flow.get_mut(f).and_then(Option::take)
    }
}

/// Whether finished flow `a` is settled: nothing after its end can change its buffers or
/// what its check compares. An RC bandwidth flow of iterations that met no error: its last
/// operation's data was placed before the completion that finished it (an ACK, or a READ's
/// last response, follows placement), the operations it counts are all complete, and no
/// later packet is placed (RC places no duplicate). UC/UD flows (a message may still be on
/// its way), duration flows (operations complete past the window), latency tests (the poll
/// byte) and flows that met errors are checked at the end of the run.
fn settled(a: &Perftest) -> bool {
    a.finished
        && a.errors.count == 0
        && !a.spec.unreliable
        && !a.spec.is_lat()
        && a.procs.list.is_empty()
        && !a.spec.duration_mode
        && matches!(a.spec.test.verb(), Verb::Write | Verb::Send | Verb::Read)
}

/// Checks every target of flow `a`: WRITE/SEND destinations equal the sender's source, READ
/// destinations equal the remote source, every completed atomic's returned value was checked.
pub(crate) fn check_buffers(w: &World, a: &Perftest, layout: &Layout) -> BufferCheck {
    let size = u64::from(a.spec.size_bytes);
    let mut found = BufferCheck::default();
    // Ping-pong latency tests are client-initiated; bandwidth and --procs tests server-initiated.
    let lat = a.spec.is_lat() && a.procs.list.is_empty();
    // A ping-pong that stopped mid-iteration may have set the poll byte (the last) of a
    // message that never arrived: compare the rest. So may a UC ping-pong whose last ping or
    // pong was lost (the poll byte counts iterations; the payload before it never changes).
    let cut = !(a.finished && a.errors.count == 0) || a.spec.unreliable;
    let len = if lat && cut && a.spec.test.verb() == Verb::Write {
        size.saturating_sub(1)
    } else {
        size
    };
    for (i, pr) in a.pairs.iter().enumerate() {
        let s = layout.slot(i as u32);
        let c = pr.c_node as usize;
        let src = |node: usize| a.nodes[node].src + u64::from(s) * layout.stride;
        let dst = |node: usize| a.nodes[node].dst + u64::from(s) * layout.stride;
        // Which (from node, to node) copies must hold.
        let mut copies: Vec<(usize, usize)> = Vec::new();
        let sv = a.server;
        // UC/UD lose messages by design: a destination holds its source only once a message
        // reached it whole (what arrived was checked packet by packet as it landed).
        let arrived = |node: usize| {
            let qpn = if node == sv { pr.s_qpn } else { pr.c_qpn };
            !a.spec.unreliable || super::unreliable::received(w, node, qpn) > 0
        };
        match (a.spec.test.verb(), lat) {
            (Verb::Write | Verb::Send, false) if pr.completed > 0 => copies.push((sv, c)),
            (Verb::Read, false) if pr.completed > 0 => copies.push((c, sv)),
            // Iterations complete in turn over the pairs: pair i has finished a ping and
            // its pong once more than i iterations are done.
            (Verb::Write | Verb::Send, true) if a.ping.iteration > i as u64 => {
                copies.push((c, sv));
                copies.push((sv, c));
            }
            (Verb::Read, true) if pr.completed > 0 => copies.push((sv, c)),
            (Verb::Atomic, _) if pr.posted > 0 => {
                // The initiator is the server in bw tests, the client in latency tests.
                // Every value its atomics returned was checked as it landed (and the
                // target's final value after the run, in `judge`): each completed atomic must
                // have had its value checked.
                let (init, qpn) = if lat { (c, pr.c_qpn) } else { (sv, pr.s_qpn) };
                let returns = w.oracle.atomics.returns(init, qpn);
                found.checked += 8 * returns;
                if returns < pr.completed {
                    found.note(format!(
                        "pair {i}: node {init} QP {qpn} completed {} atomic(s) but only \
                             {returns} returned a value that was checked",
                        pr.completed
                    ));
                }
            }
            _ => {}
        }
        // A size mix (bandwidth tests only): what the pair's completed operations wrote.
        let len = if a.spec.size_mix.is_some() {
            a.verified_len(i as u32)
        } else {
            len
        };
        copies.retain(|&(_, to)| arrived(to));
        // A node with a shared receive queue holds its SENDs in buffers of the SRQ's own,
        // checked below.
        copies.retain(|&(_, to)| a.nodes.get(to).is_none_or(|n| n.srq.is_none()));
        for (from, to) in copies {
            found.checked += len;
            found.copies += 1;
            // A UD receive starts with the 40-byte GRH area; the payload follows it.
            let to_addr = dst(to) + a.spec.grh_bytes;
            let diff = first_difference(&w.mems[from], src(from), &w.mems[to], to_addr, len);
            if let Some((at, want, got)) = diff {
                found.note(
                    format!(
                        "pair {i}: node {to} buffer {:#x} differs from node {from}'s source at byte {at} \
                         ({got:#04x} != {want:#04x})",
                        to_addr,
                    ),
                );
            }
        }
    }
    check_srq_buffers(w, a, (len, &mut found));
    found
}

/// Under `host.use_srq` each node's SENDs land in the shared receive queue's buffers,
/// whichever QP took them: each buffer that took a SEND must hold one whole, the source of
/// the pair whose QP completed it last (`SrqRing::last_pair`, then the completions in the
/// CQ rings that no core polled before the run ended), or of another pair with a QP on the
/// node, whose SEND landed after the last completion (at the end of a run a datagram may
/// land whose completion is not written yet). A buffer whose receive a SEND still arriving
/// holds (a `-D` window closes mid-message) holds that SEND's first bytes, as many as its
/// QP placed, and after them what it held before. Which QP received which bytes the payload
/// oracle checks as they land.
fn check_srq_buffers(w: &World, a: &Perftest, (len, found): (u64, &mut BufferCheck)) {
    for (node, app) in a.nodes.iter_with_node() {
        let Some(srq) = &app.srq else { continue };
        let mut last_pair = srq.last_pair.clone();
        for (wr_id, pair) in a.nodes[node].unpolled_recvs(&w.mems[node]) {
            if let Some(last) = last_pair.get_mut(wr_id as usize) {
                *last = pair;
            }
        }
        // The pairs with a QP on the node, each with its peer's node: the senders here.
        let senders: Vec<(u32, usize)> = (a.pairs.iter().enumerate())
            .filter(|(_, pr)| node == a.server || pr.c_node as usize == node)
            .map(|(i, pr)| {
                let from = if node == a.server {
                    pr.c_node as usize
                } else {
                    a.server
                };
                (i as u32, from)
            })
            .collect();
        // The SENDs still arriving: (their receive's buffer, their sender, bytes placed).
        let open: Vec<(u64, (u32, usize), u64)> = (senders.iter())
            .filter_map(|&(p, from)| {
                let pr = &a.pairs[p as usize];
                let qpn = if node == a.server { pr.s_qpn } else { pr.c_qpn };
                let (wr_id, placed) = w.nics[node].dev.open_send(qpn)?;
                Some((wr_id, (p, from), u64::from(placed).min(len)))
            })
            .collect();
        let source = |(pair, from): (u32, usize)| (from, a.nodes[from].src_buffer(&a.spec, pair));
        for (b, &last) in last_pair.iter().enumerate() {
            let recorded = senders.iter().find(|&&(p, _)| p == last).copied();
            let to_addr = a.dst(node, b as u32) + a.spec.grh_bytes;
            // `n` bytes from `skip` on against `sender`'s source.
            let differs_at = |sender, skip: u64, n: u64| {
                let (from, src) = source(sender);
                let d =
                    first_difference(&w.mems[from], src + skip, &w.mems[node], to_addr + skip, n);
                d.map(|(at, want, got)| (sender.0, at + skip, want, got))
            };
            if let Some(&(_, arriving, placed)) = open.iter().find(|o| o.0 == b as u64) {
                let mut bad = differs_at(arriving, 0, placed);
                found.checked += placed;
                if let Some(r) = recorded.filter(|_| bad.is_none()) {
                    bad = differs_at(r, placed, len - placed);
                    found.checked += len - placed;
                }
                found.copies += 1;
                if let Some((p, at, want, got)) = bad {
                    found.note(format!(
                        "node {node} shared receive buffer {b} ({to_addr:#x}), taking pair \
                         {}'s SEND ({placed} bytes placed): against pair {p}'s source, byte \
                         {at} is {got:#04x}, not {want:#04x}",
                        arriving.0
                    ));
                }
                continue;
            }
            let Some(recorded) = recorded else {
                continue;
            };
            found.checked += len;
            found.copies += 1;
            let Some((_, at, want, got)) = differs_at(recorded, 0, len) else {
                continue;
            };
            if senders.iter().any(|&s| differs_at(s, 0, len).is_none()) {
                continue;
            }
            found.note(format!(
                "node {node} shared receive buffer {b} ({to_addr:#x}) holds no sender's SEND: \
                 against pair {last}'s source, byte {at} is {got:#04x}, not {want:#04x}"
            ));
        }
    }
}

/// The first offset at which `len` bytes at `a` in `ma` and at `b` in `mb` differ, compared
/// in 64 KiB pieces (a large message needs no copy of its own), with both bytes. `b`'s
/// stored pages are compared where they lie.
fn first_difference(
    ma: &SparseMemory,
    a: u64,
    mb: &SparseMemory,
    b: u64,
    len: u64,
) -> Option<(u64, u8, u8)> {
    let mut x = vec![0u8; (64 << 10).min(len as usize)];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(x.len() as u64) as usize;
        ma.read(a + done, &mut x[..n]);
        if let Some(i) = mb.first_difference_from(b + done, &x[..n]) {
            let mut got = [0u8];
            mb.read(b + done + i as u64, &mut got);
            return Some((done + i as u64, x[i], got[0]));
        }
        done += n as u64;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two memories holding the same 200 KiB at different addresses.
    fn twins() -> (SparseMemory, SparseMemory, Vec<u8>) {
        let bytes: Vec<u8> = (0..200 << 10)
            .map(|i: u32| (i * 7 + i / 251) as u8)
            .collect();
        let (mut a, mut b) = (SparseMemory::new(), SparseMemory::new());
        a.write(0x1000, &bytes);
        b.write(0x9_0003, &bytes);
        (a, b, bytes)
    }

    #[test]
    fn equal_buffers_have_no_difference() {
        let (a, b, bytes) = twins();
        let len = bytes.len() as u64;
        assert_eq!(first_difference(&a, 0x1000, &b, 0x9_0003, len), None);
    }

    #[test]
    fn one_changed_byte_is_found_with_its_offset_and_both_values() {
        let (a, mut b, bytes) = twins();
        // In the third 64 KiB piece: earlier pieces compare equal, this one does not.
        let at = 150_001u64;
        let want = bytes[at as usize];
        b.write(0x9_0003 + at, &[want ^ 0x5a]);
        let len = bytes.len() as u64;
        assert_eq!(
            first_difference(&a, 0x1000, &b, 0x9_0003, len),
            Some((at, want, want ^ 0x5a))
        );
        // The last byte too.
        let (a, mut b, _) = twins();
        let last = len - 1;
        let want = bytes[last as usize];
        b.write(0x9_0003 + last, &[!want]);
        assert_eq!(
            first_difference(&a, 0x1000, &b, 0x9_0003, len),
            Some((last, want, !want))
        );
    }
}
