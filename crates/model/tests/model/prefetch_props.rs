//! Property tests of the resource prefetcher alone ([`rnic_model::nic::mech::prefetch`]): a small
//! event-driven harness drives the prefetch queue, the ledger and an LRU cache with random
//! QP streams, windows, cache sizes and fill latencies, as the NIC does, and checks:
//! - every demand request is answered exactly once, and a QP's requests in the order made;
//! - nothing is lost: when the events run out, no request waits;
//! - every prefetch is accounted for: used in time (hit), waited for (late), evicted before
//!   use (useless), or still cached unused at the end;
//! - the caches never hold more than their capacity, and the WQE cache gives back the bytes
//!   it was given.

use std::collections::{BTreeMap, HashMap, VecDeque};

use proptest::prelude::*;
use rnic_model::nic::lru::{HashIndex, Lru};
use rnic_model::nic::mech::prefetch::ledger::{Ledger, Res};
use rnic_model::nic::mech::prefetch::queue::PrefetchQueue;
use rnic_model::nic::mech::prefetch::wqe_cache::WqeCache;

/// What an event in the harness does.
#[derive(Debug, Clone, Copy)]
enum Ev {
    /// The scheduler pops the head of its queue.
    Pop,
    /// A prefetch read of a QP's context arrives.
    PrefetchFill(u32),
    /// A demand read of a QP's context arrives.
    DemandFill(u32),
}

struct Harness {
    ring: VecDeque<u32>,
    queue: PrefetchQueue,
    ledger: Ledger,
    cache: Lru<HashIndex>,
    cap: usize,
    events: BTreeMap<(u64, u64), Ev>,
    seq: u64,
    /// Demand requests waiting for their entry, per QP, in the order made: request ids.
    waiting: HashMap<u32, VecDeque<u64>>,
    /// Answers, in order: (qpn, request id).
    answers: Vec<(u32, u64)>,
    next_req: u64,
    /// Requests made per QP, in order.
    made: HashMap<u32, Vec<u64>>,
    late_prefetches: u64,
}

impl Harness {
    fn at(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.events.insert((t, self.seq), ev);
    }

    fn insert(&mut self, qpn: u32) {
        if let Some(e) = self.cache.insert(u64::from(qpn), false) {
            self.ledger.evicted(Res::Qpc, e.key);
        }
        assert!(self.cache.len() <= self.cap, "cache over capacity");
    }

    fn answer_all(&mut self, qpn: u32) {
        if let Some(w) = self.waiting.remove(&qpn) {
            for id in w {
                self.answers.push((qpn, id));
            }
        }
    }

    fn poll(&mut self, now: u64, lat: &mut impl FnMut() -> u64) {
        while let Some(q) = self.queue.poll() {
            let cached = self.cache.contains(u64::from(q));
            if self.ledger.start_prefetch(Res::Qpc, u64::from(q), cached) {
                let t = now + lat();
                self.at(t, Ev::PrefetchFill(q));
            }
        }
    }
}

fn run(qps: Vec<u32>, rounds: usize, window: u32, cap: u32, lats: Vec<u64>) -> Harness {
    let mut li = 0usize;
    let mut lat = || {
        li += 1;
        lats[li % lats.len()]
    };
    let mut h = Harness {
        ring: VecDeque::new(),
        queue: PrefetchQueue::new(window),
        ledger: Ledger::default(),
        cache: Lru::new(cap),
        cap: cap as usize,
        events: BTreeMap::new(),
        seq: 0,
        waiting: HashMap::new(),
        answers: Vec::new(),
        next_req: 0,
        made: HashMap::new(),
        late_prefetches: 0,
    };
    // Visits left per QP (a QP with work goes back to the tail after its visit).
    let mut left: HashMap<u32, usize> = HashMap::new();
    for &q in &qps {
        if left.insert(q, rounds).is_none() {
            h.ring.push_back(q);
            h.queue.pushed(q);
        }
    }
    h.poll(0, &mut lat);
    h.at(1, Ev::Pop);
    while let Some(((now, _), ev)) = h.events.pop_first() {
        match ev {
            Ev::Pop => {
                let Some(q) = h.ring.pop_front() else {
                    continue;
                };
                h.queue.popped();
                let id = h.next_req;
                h.next_req += 1;
                h.made.entry(q).or_default().push(id);
                let n = left.get_mut(&q).unwrap();
                *n -= 1;
                if *n > 0 {
                    h.ring.push_back(q);
                    h.queue.pushed(q);
                }
                let waits = h.waiting.get(&q).is_some_and(|w| !w.is_empty());
                if !waits && h.cache.touch(u64::from(q), false) {
                    h.ledger.demand_hit(Res::Qpc, u64::from(q));
                    h.answers.push((q, id));
                } else {
                    // A miss, or a request behind an earlier one of the same QP: it waits.
                    h.waiting.entry(q).or_default().push_back(id);
                    if !waits {
                        // `false`: its prefetch is in flight and answers it (late).
                        if h.ledger.demand_miss(Res::Qpc, u64::from(q), 1) {
                            let t = now + lat();
                            h.at(t, Ev::DemandFill(q));
                        }
                    }
                }
                h.poll(now, &mut lat);
                if !h.ring.is_empty() {
                    h.at(now + 3, Ev::Pop);
                }
            }
            Ev::PrefetchFill(q) => {
                let waiters = h.ledger.prefetch_filled(Res::Qpc, u64::from(q));
                h.insert(q);
                if waiters != 0 {
                    h.late_prefetches += 1;
                    h.answer_all(q);
                }
            }
            Ev::DemandFill(q) => {
                h.ledger.demand_filled(Res::Qpc, u64::from(q));
                h.insert(q);
                h.answer_all(q);
            }
        }
    }
    h
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn prefetcher_answers_every_request_once_in_order_and_accounts_for_every_prefetch(
        qps in proptest::collection::vec(0u32..40, 1..60),
        rounds in 1usize..6,
        window in 0u32..12,
        cap in 0u32..24,
        lats in proptest::collection::vec(1u64..200, 1..8),
    ) {
        let h = run(qps, rounds, window, cap, lats);
        // Nothing lost: every request made was answered, exactly once.
        let made: usize = h.made.values().map(Vec::len).sum();
        prop_assert_eq!(h.answers.len(), made);
        prop_assert!(h.waiting.values().all(|w| w.is_empty()));
        // Per QP, answers in the order the requests were made.
        let mut per: HashMap<u32, Vec<u64>> = HashMap::new();
        for &(q, id) in &h.answers {
            per.entry(q).or_default().push(id);
        }
        for (q, ids) in &h.made {
            prop_assert_eq!(per.get(q), Some(ids), "QP {} answered out of order", q);
        }
        // Every prefetch: hit, late, useless, or still unused at the end.
        let s = *h.ledger.stats(Res::Qpc);
        let unused = h.ledger.unused_keys(Res::Qpc).len() as u64;
        prop_assert_eq!(s.late, h.late_prefetches);
        prop_assert_eq!(s.issued, s.hits + s.late + s.useless + unused, "{:?}", s);
        // An unused prefetched entry is still in the cache (else it was counted useless).
        for k in h.ledger.unused_keys(Res::Qpc) {
            prop_assert!(h.cache.contains(k));
        }
        prop_assert!(h.cache.len() <= cap as usize);
        prop_assert_eq!(h.ledger.prefetches_in_flight(), 0);
    }

    #[test]
    fn wqe_cache_keeps_its_capacity_and_the_bytes(
        ops in proptest::collection::vec((0u32..8, 0u32..16, any::<bool>()), 1..300),
        cap in 0u32..20,
    ) {
        let mut c = WqeCache::new(cap);
        let mut model: HashMap<(u32, u32), Vec<u8>> = HashMap::new();
        let mut evicted_total = 0u64;
        for (i, (q, idx, take)) in ops.into_iter().enumerate() {
            if take {
                let got = c.take(q, idx);
                let want = model.remove(&(q, idx));
                // An entry is either given back with its bytes or was evicted.
                if let Some(g) = &got {
                    prop_assert_eq!(Some(g), want.as_ref());
                }
            } else {
                let bytes = vec![(i % 251) as u8, q as u8, idx as u8];
                evicted_total += c.insert(q, idx, bytes.clone());
                model.insert((q, idx), bytes);
                model.retain(|k, _| c.contains(k.0, k.1));
            }
            prop_assert!(c.len() <= cap as usize);
        }
        if cap == 0 {
            prop_assert!(c.is_empty());
        }
        let _ = evicted_total;
    }

    #[test]
    fn prefetch_queue_stays_within_the_window_of_the_head(
        ops in proptest::collection::vec(0u8..3, 1..300),
        window in 0u32..10,
    ) {
        let mut q = PrefetchQueue::new(window);
        let mut ring: VecDeque<u32> = VecDeque::new();
        let mut polled: VecDeque<u32> = VecDeque::new();
        let mut next = 0u32;
        for op in ops {
            match op {
                0 => {
                    ring.push_back(next);
                    q.pushed(next);
                    next += 1;
                }
                1 => {
                    if let Some(h) = ring.pop_front() {
                        q.popped();
                        if polled.front() == Some(&h) {
                            polled.pop_front();
                        }
                    }
                }
                _ => {
                    while let Some(p) = q.poll() {
                        // The polled QP is within `window` positions of the head.
                        let pos = ring.iter().position(|&x| x == p);
                        prop_assert!(pos.is_some_and(|i| i < window as usize), "{p} at {pos:?}");
                        polled.push_back(p);
                    }
                }
            }
            prop_assert_eq!(q.mirrored(), ring.len());
            prop_assert!(polled.len() <= window as usize);
        }
    }
}
