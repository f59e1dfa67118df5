//! Acceptance tests of csRNA's non-blocking QPC management (csRNA §4.3–§4.4) against the
//! FCFS baseline (§3), on the sans-IO managers alone: a model LRU store, a DMA engine that
//! returns reads in issue order after random delays, and the real requesters.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::csrna_fcfs_reference::FcfsQpcManager;
use proptest::prelude::*;
use rnic_model::nic::mech::csrna::*;

// ---------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------

/// LRU store of `cap` QPCs (front = least recently used).
#[derive(Debug, Clone)]
struct LruStore {
    cap: usize,
    lru: VecDeque<u32>,
}

impl LruStore {
    fn new(cap: usize) -> Self {
        LruStore {
            cap,
            lru: VecDeque::new(),
        }
    }
    fn with(cap: usize, qpns: &[u32]) -> Self {
        let mut s = Self::new(cap);
        for &q in qpns {
            s.insert(q);
        }
        s
    }
    fn insert(&mut self, qpn: u32) {
        self.evict(qpn);
        if self.cap == 0 {
            return;
        }
        if self.lru.len() >= self.cap {
            self.lru.pop_front();
        }
        self.lru.push_back(qpn);
    }
    fn evict(&mut self, qpn: u32) {
        self.lru.retain(|&q| q != qpn);
    }
}

impl QpcStore for LruStore {
    fn lookup(&mut self, qpn: u32) -> bool {
        if let Some(pos) = self.lru.iter().position(|&q| q == qpn) {
            self.lru.remove(pos);
            self.lru.push_back(qpn);
            true
        } else {
            false
        }
    }
    fn is_resident(&self, qpn: u32) -> bool {
        self.lru.contains(&qpn)
    }
}

/// Small deterministic PRNG for the harness's own decisions (splitmix64).
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Req {
    channel: Channel,
    qpn: u32,
    write: bool,
}

#[derive(Debug, Clone, Copy)]
struct Knobs {
    seed: u64,
    /// DMA latency is 1..=max_delay cycles (completions still in issue order).
    max_delay: u64,
    /// Percent chance per cycle of evicting a random resident QPC (other traffic).
    evict_pct: u64,
    /// Stream items released to the requesters per cycle: 0..=max_arrivals.
    max_arrivals: u64,
}

#[derive(Debug, Default)]
struct Outcome {
    /// (request id, response) in response order.
    answered: Vec<(usize, QpcResponse)>,
    /// QPNs of DMA reads, in issue order.
    posted: Vec<u32>,
    finished: bool,
    max_pf_online: usize,
    max_pf_offline: usize,
    max_prt: usize,
}

const CYCLE_LIMIT: u64 = 200_000;

/// Runs `stream` through requesters of type `R` and manager `mgr` until everything is
/// answered (or the cycle limit). `stepper` runs one manager cycle; `inspect` is called
/// after every cycle.
fn run<M, R>(
    mgr: &mut M,
    mut reqs: Vec<R>,
    store: &mut LruStore,
    stream: &[Req],
    k: Knobs,
    mut stepper: impl FnMut(&mut M, &mut LruStore) -> Vec<StepOutput>,
    mut inspect: impl FnMut(&M, &mut Outcome),
) -> Outcome
where
    M: QpcManager,
    R: QpcRequester<usize>,
{
    let mut rng = Rng(k.seed);
    let mut out = Outcome::default();
    let mut backlog: [VecDeque<usize>; NUM_CHANNELS] = Default::default();
    let mut next = 0;
    let mut dma: VecDeque<(u64, u32)> = VecDeque::new();
    let mut last_ready = 0;
    let mut now = 0;
    loop {
        let busy = next < stream.len()
            || backlog.iter().any(|b| !b.is_empty())
            || mgr.in_flight() > 0
            || !dma.is_empty();
        if !busy {
            out.finished = true;
            return out;
        }
        if now >= CYCLE_LIMIT {
            return out;
        }
        now += 1;
        // DMA completions, in issue order: the model fills the cache, then reports.
        while let Some(&(ready, qpn)) = dma.front() {
            if ready > now {
                break;
            }
            dma.pop_front();
            store.insert(qpn);
            mgr.dma_returned(qpn)
                .expect("in-order DMA completion accepted");
        }
        // Other traffic evicting a random QPC.
        if rng.below(100) < k.evict_pct && !store.lru.is_empty() {
            let victim = store.lru[rng.below(store.lru.len() as u64) as usize];
            store.evict(victim);
        }
        // Arrivals.
        for _ in 0..rng.below(k.max_arrivals + 1) {
            if next < stream.len() {
                backlog[stream[next].channel.number()].push_back(next);
                next += 1;
            }
        }
        // Each requester sends its oldest waiting work if it has a free index.
        for (c, b) in backlog.iter_mut().enumerate() {
            let Some(&id) = b.front() else { continue };
            // A stalled requester (no free index) keeps its work and retries next cycle.
            if let Ok(index) = reqs[c].request(id) {
                let r = stream[id];
                mgr.submit(QpcRequest {
                    qpn: r.qpn,
                    channel: r.channel,
                    index,
                    write: r.write,
                })
                .expect("a requester within its indices is never refused");
                b.pop_front();
            }
        }
        for o in stepper(mgr, store) {
            match o {
                StepOutput::Response(r) => {
                    let id = reqs[r.channel.number()]
                        .respond(r.index)
                        .expect("response matches an outstanding request");
                    out.answered.push((id, r));
                }
                StepOutput::PostDma { qpn } => {
                    let ready = (now + 1 + rng.below(k.max_delay)).max(last_ready);
                    last_ready = ready;
                    dma.push_back((ready, qpn));
                    out.posted.push(qpn);
                }
                StepOutput::Idle | StepOutput::Internal => {}
            }
        }
        inspect(mgr, &mut out);
    }
}

fn nb_requesters(ooo_cap: usize) -> Vec<NonBlockingRequester<usize>> {
    (0..NUM_CHANNELS)
        .map(|_| NonBlockingRequester::new(ooo_cap).unwrap())
        .collect()
}

fn fcfs_requesters(depth: usize) -> Vec<FcfsRequester<usize>> {
    (0..NUM_CHANNELS)
        .map(|_| FcfsRequester::new(depth).unwrap())
        .collect()
}

fn run_nb(ooo_cap: usize, store_cap: usize, stream: &[Req], k: Knobs) -> (Outcome, ManagerStats) {
    run_nb_with(ooo_cap, store_cap, stream, k, false)
}

/// `dual`: both units work in every cycle (`step_unit`), as with a dual-ported cache.
fn run_nb_with(
    ooo_cap: usize,
    store_cap: usize,
    stream: &[Req],
    k: Knobs,
    dual: bool,
) -> (Outcome, ManagerStats) {
    let mut mgr = NonBlockingQpcManager::new(QpcManagerConfig::new(ooo_cap).unwrap());
    let mut store = LruStore::new(store_cap);
    let stepper = move |m: &mut NonBlockingQpcManager, s: &mut LruStore| {
        if dual {
            vec![
                m.step_unit(Unit::Pending, s).expect("pending unit"),
                m.step_unit(Unit::Request, s).expect("request unit"),
            ]
        } else {
            vec![m.step(s).expect("step keeps its invariants")]
        }
    };
    let out = run(
        &mut mgr,
        nb_requesters(ooo_cap),
        &mut store,
        stream,
        k,
        stepper,
        |m, o| {
            if let Err(e) = m.check_invariants() {
                panic!("invariant: {e}");
            }
            let pf = m.pending_fifo();
            o.max_pf_online = o.max_pf_online.max(pf.online_len());
            o.max_pf_offline = o.max_pf_offline.max(pf.offline_len());
            o.max_prt = o.max_prt.max(m.pending_record_table().occupancy());
        },
    );
    (out, *mgr.stats())
}

fn run_fcfs(depth: usize, store_cap: usize, stream: &[Req], k: Knobs) -> (Outcome, ManagerStats) {
    let mut mgr = FcfsQpcManager::new(QpcManagerConfig::new(depth).unwrap());
    let mut store = LruStore::new(store_cap);
    let out = run(
        &mut mgr,
        fcfs_requesters(depth),
        &mut store,
        stream,
        k,
        |m, s| vec![m.step(s).expect("step")],
        |_, _| {},
    );
    (out, *mgr.stats())
}

/// Every request answered exactly once, with its own QPN and channel.
fn assert_complete(stream: &[Req], out: &Outcome) {
    assert!(out.finished, "did not drain within {CYCLE_LIMIT} cycles");
    let mut seen = HashSet::new();
    for (id, r) in &out.answered {
        assert!(seen.insert(*id), "request {id} answered twice");
        assert_eq!(r.qpn, stream[*id].qpn);
        assert_eq!(r.channel, stream[*id].channel);
        assert_eq!(r.write, stream[*id].write);
    }
    assert_eq!(seen.len(), stream.len(), "requests lost");
}

/// Requests of one QP are answered in the order the manager accepted them, and (a fortiori)
/// in submission order within one channel.
fn assert_per_qp_order(out: &Outcome) {
    let mut last_seq: HashMap<u32, u64> = HashMap::new();
    let mut last_id: HashMap<(u32, Channel), usize> = HashMap::new();
    for (id, r) in &out.answered {
        if let Some(&s) = last_seq.get(&r.qpn) {
            assert!(r.seq > s, "QP {} answered seq {} after {}", r.qpn, r.seq, s);
        }
        last_seq.insert(r.qpn, r.seq);
        if let Some(&p) = last_id.get(&(r.qpn, r.channel)) {
            assert!(
                *id > p,
                "QP {} channel {:?}: request {id} after {p}",
                r.qpn,
                r.channel
            );
        }
        last_id.insert((r.qpn, r.channel), *id);
    }
    // Sequence numbers are a permutation of 0..n.
    let mut seqs: Vec<u64> = out.answered.iter().map(|(_, r)| r.seq).collect();
    seqs.sort_unstable();
    assert!(seqs.iter().enumerate().all(|(i, &s)| s == i as u64));
}

fn arb_stream(max_len: usize, max_qps: u32, channels: usize) -> impl Strategy<Value = Vec<Req>> {
    prop::collection::vec((0..channels, 0..max_qps, any::<bool>()), 0..max_len).prop_map(|v| {
        v.into_iter()
            .map(|(c, qpn, write)| Req {
                channel: Channel::from_number(c).unwrap_or(Channel::Descriptor),
                qpn,
                write,
            })
            .collect()
    })
}

fn arb_knobs() -> impl Strategy<Value = Knobs> {
    (any::<u64>(), 1u64..60, 0u64..30, 1u64..4).prop_map(
        |(seed, max_delay, evict_pct, max_arrivals)| Knobs {
            seed,
            max_delay,
            evict_pct,
            max_arrivals,
        },
    )
}

// ---------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Random streams, random QPs, random cache capacity (LRU), random DMA latencies and
    /// evictions: per-QP order kept, nothing lost or answered twice, PF and PRT within
    /// their sizes.
    #[test]
    fn non_blocking_keeps_order_loses_nothing_and_stays_in_bounds(
        ooo_cap in 1usize..9,
        store_cap in 0usize..12,
        max_qps in 1u32..24,
        stream in arb_stream(300, 24, 3),
        k in arb_knobs(),
    ) {
        let stream: Vec<Req> = stream
            .into_iter()
            .map(|r| Req { qpn: r.qpn % max_qps, ..r })
            .collect();
        let (out, stats) = run_nb(ooo_cap, store_cap, &stream, k);
        assert_complete(&stream, &out);
        assert_per_qp_order(&out);
        let fifo_cap = 3 * ooo_cap;
        prop_assert!(out.max_pf_online <= fifo_cap);
        prop_assert!(out.max_pf_offline <= fifo_cap);
        prop_assert!(out.max_prt <= 3 * ooo_cap);
        prop_assert!(stats.max_pf_occupancy as usize <= 2 * fifo_cap);
        prop_assert!(stats.max_prt_occupancy as usize <= 3 * ooo_cap);
        prop_assert_eq!(stats.responses as usize, stream.len());
        prop_assert_eq!(stats.dma_posted, stats.dma_returned);
        prop_assert_eq!(stats.dma_posted as usize, out.posted.len());
        prop_assert_eq!(stats.dma_posted, stats.request_misses + stats.conversions);
        prop_assert_eq!(stats.backpressured, 0);
    }

    /// Same properties when both units work in the same cycle (`step_unit`).
    #[test]
    fn dual_ported_units_keep_the_same_guarantees(
        ooo_cap in 1usize..9,
        store_cap in 0usize..12,
        stream in arb_stream(300, 16, 3),
        k in arb_knobs(),
    ) {
        let (out, stats) = run_nb_with(ooo_cap, store_cap, &stream, k, true);
        assert_complete(&stream, &out);
        assert_per_qp_order(&out);
        prop_assert!(out.max_pf_online.max(out.max_pf_offline) <= 3 * ooo_cap);
        prop_assert!(out.max_prt <= 3 * ooo_cap);
        prop_assert_eq!(stats.dma_posted, stats.dma_returned);
    }

    /// The FCFS baseline under the same conditions: strictly in acceptance order, nothing
    /// lost, at most one read outstanding.
    #[test]
    fn fcfs_answers_strictly_in_order(
        depth in 1usize..9,
        store_cap in 0usize..12,
        stream in arb_stream(200, 16, 3),
        k in arb_knobs(),
    ) {
        let (out, stats) = run_fcfs(depth, store_cap, &stream, k);
        assert_complete(&stream, &out);
        assert_per_qp_order(&out);
        for (i, (_, r)) in out.answered.iter().enumerate() {
            prop_assert_eq!(r.seq, i as u64);
        }
        prop_assert_eq!(stats.dma_posted, stats.request_misses);
    }

    /// With ooo_cap 1 and one channel there is one request in flight: the non-blocking
    /// manager answers in exactly the FCFS order and issues the same DMA reads.
    #[test]
    fn ooo_cap_1_single_channel_equals_fcfs(
        store_cap in 0usize..8,
        stream in arb_stream(200, 12, 1),
        k in arb_knobs(),
    ) {
        let (nb, _) = run_nb(1, store_cap, &stream, k);
        let (fc, _) = run_fcfs(1, store_cap, &stream, k);
        assert_complete(&stream, &nb);
        let ids = |o: &Outcome| o.answered.iter().map(|(id, r)| (*id, r.qpn, r.index)).collect::<Vec<_>>();
        prop_assert_eq!(ids(&nb), ids(&fc));
        prop_assert_eq!(nb.posted, fc.posted);
    }

    /// With ooo_cap 1 on three channels each channel has one request in flight, so each
    /// channel sees its responses in its request order under both managers (the managers may
    /// still interleave channels differently: the non-blocking one lets a hit on one
    /// channel pass a miss on another).
    #[test]
    fn ooo_cap_1_per_channel_order_equals_fcfs(
        store_cap in 0usize..8,
        stream in arb_stream(200, 12, 3),
        k in arb_knobs(),
    ) {
        let (nb, _) = run_nb(1, store_cap, &stream, k);
        let (fc, _) = run_fcfs(1, store_cap, &stream, k);
        assert_complete(&stream, &nb);
        assert_complete(&stream, &fc);
        for c in Channel::ALL {
            let per = |o: &Outcome| o.answered.iter().filter(|(_, r)| r.channel == c).map(|(id, _)| *id).collect::<Vec<_>>();
            prop_assert_eq!(per(&nb), per(&fc));
        }
    }

    /// Arbitrary call sequences, valid or not, never panic, never break an invariant, and
    /// never answer a request that is not outstanding.
    #[test]
    fn arbitrary_calls_never_panic(
        ooo_cap in 1usize..5,
        depth in 1usize..5,
        ops in prop::collection::vec((0u8..6, 0u8..3, 0u8..6, 0u32..6), 0..400),
    ) {
        let cfg = QpcManagerConfig::with_req_fifo_depth(ooo_cap, depth).unwrap();
        let mut nb = NonBlockingQpcManager::new(cfg);
        let mut fc = FcfsQpcManager::new(cfg);
        let mut store_nb = LruStore::new(3);
        let mut store_fc = LruStore::new(3);
        let mut out_nb: HashSet<(Channel, u8)> = HashSet::new();
        let mut out_fc: HashSet<(Channel, u8)> = HashSet::new();
        // DMA reads each manager asked for, oldest first.
        let mut reads_nb: VecDeque<u32> = VecDeque::new();
        let mut reads_fc: VecDeque<u32> = VecDeque::new();
        for (op, ch, idx, qpn) in ops {
            let channel = Channel::from_number(usize::from(ch)).unwrap_or(Channel::Descriptor);
            let req = QpcRequest { qpn, channel, index: idx, write: qpn % 2 == 0 };
            match op {
                0 => {
                    if nb.submit(req).is_ok() { prop_assert!(out_nb.insert((channel, idx))); }
                    if fc.submit(req).is_ok() { prop_assert!(out_fc.insert((channel, idx))); }
                }
                1 | 2 => {
                    match nb.step(&mut store_nb).unwrap() {
                        StepOutput::Response(r) => prop_assert!(out_nb.remove(&(r.channel, r.index))),
                        StepOutput::PostDma { qpn } => reads_nb.push_back(qpn),
                        _ => {}
                    }
                    match fc.step(&mut store_fc).unwrap() {
                        StepOutput::Response(r) => prop_assert!(out_fc.remove(&(r.channel, r.index))),
                        StepOutput::PostDma { qpn } => reads_fc.push_back(qpn),
                        _ => {}
                    }
                }
                3 => {
                    // The right completion (oldest read), as a well-behaved model would.
                    if let Some(q) = reads_nb.pop_front() {
                        store_nb.insert(q);
                        prop_assert!(nb.dma_returned(q).is_ok());
                    }
                    if let Some(q) = reads_fc.pop_front() {
                        store_fc.insert(q);
                        prop_assert!(fc.dma_returned(q).is_ok());
                    }
                }
                4 => {
                    // A possibly wrong completion: accepted only if it is the oldest read.
                    let ok_nb = reads_nb.front() == Some(&qpn);
                    prop_assert_eq!(nb.dma_returned(qpn).is_ok(), ok_nb);
                    if ok_nb { reads_nb.pop_front(); store_nb.insert(qpn); }
                    let ok_fc = reads_fc.front() == Some(&qpn);
                    prop_assert_eq!(fc.dma_returned(qpn).is_ok(), ok_fc);
                    if ok_fc { reads_fc.pop_front(); store_fc.insert(qpn); }
                }
                _ => {
                    // Other traffic filling or evicting contexts.
                    store_nb.insert(qpn);
                    store_fc.evict(qpn);
                }
            }
            prop_assert!(nb.check_invariants().is_ok(), "{:?}", nb.check_invariants());
            prop_assert_eq!(nb.in_flight(), out_nb.len());
            prop_assert_eq!(fc.in_flight(), out_fc.len());
            prop_assert_eq!(nb.dma_outstanding(), reads_nb.len());
            prop_assert_eq!(fc.dma_outstanding(), reads_fc.len());
        }
    }
}

// ---------------------------------------------------------------------------------------
// Targeted scenarios
// ---------------------------------------------------------------------------------------

fn req(qpn: u32, channel: Channel, index: u8) -> QpcRequest {
    QpcRequest {
        qpn,
        channel,
        index,
        write: false,
    }
}

fn step<M: QpcManager>(m: &mut M, s: &mut LruStore) -> StepOutput {
    m.step(s).expect("step")
}

fn resp(qpn: u32, channel: Channel, index: u8, seq: u64, served_by: ServedBy) -> StepOutput {
    StepOutput::Response(QpcResponse {
        qpn,
        channel,
        index,
        write: false,
        seq,
        served_by,
    })
}

/// Fig. 2: QP6 misses, QP5 and QP4 are cached. FCFS answers nothing until QPC6 is back;
/// the non-blocking manager answers QP5 and QP4 first.
#[test]
fn fig2_fcfs_blocks_hits_behind_a_miss() {
    let cfg = QpcManagerConfig::new(4).unwrap();
    let ch = Channel::Requester;

    let mut fc = FcfsQpcManager::new(cfg);
    let mut s = LruStore::with(300, &[5, 4]);
    for (i, q) in [6, 5, 4].into_iter().enumerate() {
        fc.submit(req(q, ch, i as u8)).unwrap();
    }
    assert_eq!(step(&mut fc, &mut s), StepOutput::PostDma { qpn: 6 });
    assert_eq!(step(&mut fc, &mut s), StepOutput::Idle);
    assert_eq!(step(&mut fc, &mut s), StepOutput::Idle);
    assert!(!fc.has_work());
    s.insert(6);
    fc.dma_returned(6).unwrap();
    assert_eq!(
        step(&mut fc, &mut s),
        resp(6, ch, 0, 0, ServedBy::DmaReturn)
    );
    assert_eq!(
        step(&mut fc, &mut s),
        resp(5, ch, 1, 1, ServedBy::RequestHit)
    );
    assert_eq!(
        step(&mut fc, &mut s),
        resp(4, ch, 2, 2, ServedBy::RequestHit)
    );

    let mut nb = NonBlockingQpcManager::new(cfg);
    let mut s = LruStore::with(300, &[5, 4]);
    for (i, q) in [6, 5, 4].into_iter().enumerate() {
        nb.submit(req(q, ch, i as u8)).unwrap();
    }
    assert_eq!(step(&mut nb, &mut s), StepOutput::PostDma { qpn: 6 });
    assert_eq!(
        step(&mut nb, &mut s),
        resp(5, ch, 1, 1, ServedBy::RequestHit)
    );
    assert_eq!(
        step(&mut nb, &mut s),
        resp(4, ch, 2, 2, ServedBy::RequestHit)
    );
    assert_eq!(step(&mut nb, &mut s), StepOutput::Idle);
    assert!(!nb.has_work());
    s.insert(6);
    nb.dma_returned(6).unwrap();
    assert!(nb.has_work());
    assert_eq!(
        step(&mut nb, &mut s),
        resp(6, ch, 0, 0, ServedBy::DmaReturn)
    );
    assert_eq!(nb.in_flight(), 0);
    nb.check_invariants().unwrap();
}

/// C1: a waiting FIFO cannot take the non-blocking manager's out-of-order responses; the
/// index + waiting SRAM requester can.
#[test]
fn fig2_out_of_order_responses_need_the_non_blocking_requester() {
    let cfg = QpcManagerConfig::new(4).unwrap();
    let ch = Channel::Requester;
    let mut fifo_req = FcfsRequester::new(4).unwrap();
    let mut sram_req = NonBlockingRequester::new(4).unwrap();
    let mut nb = NonBlockingQpcManager::new(cfg);
    let mut s = LruStore::with(300, &[5, 4]);
    for q in [6u32, 5, 4] {
        let i = fifo_req.request(q).unwrap();
        assert_eq!(sram_req.request(q).unwrap(), i);
        nb.submit(req(q, ch, i)).unwrap();
    }
    assert_eq!(step(&mut nb, &mut s), StepOutput::PostDma { qpn: 6 });
    let StepOutput::Response(r) = step(&mut nb, &mut s) else {
        panic!("QP5 hit expected")
    };
    assert_eq!(
        fifo_req.respond(r.index),
        Err(RequesterError::OutOfOrder {
            expected: 0,
            got: 1
        })
    );
    assert_eq!(sram_req.respond(r.index), Ok(5));
}

/// Algorithm 2: QP 7's read returns, the context is evicted before the QP's second request
/// is checked, so that Type 2 element misses and becomes Type 1 with a new DMA read.
#[test]
fn type2_becomes_type1_after_eviction() {
    let cfg = QpcManagerConfig::new(4).unwrap();
    let mut nb = NonBlockingQpcManager::new(cfg);
    let mut s = LruStore::new(300);
    nb.submit(req(7, Channel::Descriptor, 0)).unwrap();
    nb.submit(req(7, Channel::Requester, 0)).unwrap();
    assert_eq!(step(&mut nb, &mut s), StepOutput::PostDma { qpn: 7 });
    assert_eq!(step(&mut nb, &mut s), StepOutput::Internal); // Type 2 parked
    let e = *nb.pending_record_table().get(7).unwrap();
    assert_eq!((e.pnd_cnt, e.dma_rtn), (2, false));
    nb.check_invariants().unwrap();

    // Read returns; the model fills the cache, then something else evicts QPC 7.
    s.insert(7);
    nb.dma_returned(7).unwrap();
    s.evict(7);
    assert_eq!(
        step(&mut nb, &mut s),
        resp(7, Channel::Descriptor, 0, 0, ServedBy::DmaReturn)
    );
    let e = *nb.pending_record_table().get(7).unwrap();
    assert_eq!((e.pnd_cnt, e.dma_rtn), (1, true));
    // The traversal finds the Type 2 element eligible but missing: convert.
    assert_eq!(step(&mut nb, &mut s), StepOutput::PostDma { qpn: 7 });
    assert_eq!(nb.stats().conversions, 1);
    let el = nb.pending_fifo().iter().next().copied().unwrap();
    assert!(el.dma_posted);
    assert!(!nb.pending_record_table().get(7).unwrap().dma_rtn);
    nb.check_invariants().unwrap();
    // Nothing to do until the new read returns: no stale answer.
    assert_eq!(step(&mut nb, &mut s), StepOutput::Idle);
    assert!(!nb.has_work());
    s.insert(7);
    nb.dma_returned(7).unwrap();
    assert_eq!(
        step(&mut nb, &mut s),
        resp(7, Channel::Requester, 0, 1, ServedBy::DmaReturn)
    );
    assert_eq!(nb.pending_record_table().occupancy(), 0);
    assert!(nb.pending_fifo().is_empty());
    assert_eq!(nb.in_flight(), 0);
}

/// The traversal meets a younger request of a QP after an older one was written back in the
/// same pass (the QP's read returned in between): the younger one must wait for the next
/// pass (the per-pass `blocked` flag), or it would overtake the older one.
#[test]
fn same_qp_order_across_a_traversal_pass() {
    let cfg = QpcManagerConfig::new(4).unwrap();
    let mut nb = NonBlockingQpcManager::new(cfg);
    let mut s = LruStore::new(300);
    let (p, q) = (1u32, 2u32);
    let d = Channel::Descriptor;
    // L = [p1 (T1), q1 (T1), q2 (T2), p2 (T2), q3 (T2)]
    for (i, qpn) in [p, q, q, p].into_iter().enumerate() {
        nb.submit(req(qpn, d, i as u8)).unwrap();
    }
    let mut outs: Vec<StepOutput> = (0..4).map(|_| step(&mut nb, &mut s)).collect();
    nb.submit(req(q, Channel::Responder, 0)).unwrap();
    outs.push(step(&mut nb, &mut s));
    assert_eq!(outs[0], StepOutput::PostDma { qpn: p });
    assert_eq!(outs[1], StepOutput::PostDma { qpn: q });
    assert!(outs[2..].iter().all(|o| *o == StepOutput::Internal));

    s.insert(p);
    nb.dma_returned(p).unwrap();
    assert_eq!(step(&mut nb, &mut s), resp(p, d, 0, 0, ServedBy::DmaReturn));
    // Traversal: q1 (Type 1) written back, q2 written back (q's read outstanding),
    // p2 served; then nothing has dma_rtn set.
    assert_eq!(step(&mut nb, &mut s), StepOutput::Internal);
    assert_eq!(step(&mut nb, &mut s), StepOutput::Internal);
    assert_eq!(
        step(&mut nb, &mut s),
        resp(p, d, 3, 3, ServedBy::PendingHit)
    );
    assert!(!nb.has_work());

    s.insert(q);
    nb.dma_returned(q).unwrap();
    assert_eq!(step(&mut nb, &mut s), resp(q, d, 1, 1, ServedBy::DmaReturn));
    // q3 is at the traversal cursor, q2 (older) behind it: q3 must be written back.
    assert_eq!(step(&mut nb, &mut s), StepOutput::Internal);
    // Next pass: q2 then q3.
    assert_eq!(
        step(&mut nb, &mut s),
        resp(q, d, 2, 2, ServedBy::PendingHit)
    );
    assert_eq!(
        step(&mut nb, &mut s),
        resp(q, Channel::Responder, 0, 4, ServedBy::PendingHit)
    );
    assert!(nb.stats().swaps >= 1);
    assert_eq!(nb.in_flight(), 0);
    nb.check_invariants().unwrap();
}

/// A request of a QP with pending requests waits behind them even if the QPC is cached.
#[test]
fn cached_qp_with_pending_requests_still_queues() {
    let cfg = QpcManagerConfig::new(2).unwrap();
    let mut nb = NonBlockingQpcManager::new(cfg);
    let mut s = LruStore::new(10);
    nb.submit(req(3, Channel::Descriptor, 0)).unwrap();
    assert_eq!(step(&mut nb, &mut s), StepOutput::PostDma { qpn: 3 });
    s.insert(3); // e.g. a prefetch filled it before the read was reported
    nb.submit(req(3, Channel::Responder, 1)).unwrap();
    assert_eq!(step(&mut nb, &mut s), StepOutput::Internal);
    assert_eq!(nb.stats().request_ordered, 1);
    nb.dma_returned(3).unwrap();
    assert_eq!(
        step(&mut nb, &mut s),
        resp(3, Channel::Descriptor, 0, 0, ServedBy::DmaReturn)
    );
    assert_eq!(
        step(&mut nb, &mut s),
        resp(3, Channel::Responder, 1, 1, ServedBy::PendingHit)
    );
}

/// Misuse is reported, not panicked on, and leaves the manager unchanged.
#[test]
fn errors_instead_of_panics() {
    assert_eq!(QpcManagerConfig::new(0), Err(ConfigError::OooCap(0)));
    assert_eq!(QpcManagerConfig::new(257), Err(ConfigError::OooCap(257)));
    assert!(QpcManagerConfig::new(256).is_ok());
    let cfg = QpcManagerConfig::with_req_fifo_depth(2, 1).unwrap();
    for mgr in [
        &mut NonBlockingQpcManager::new(cfg) as &mut dyn QpcManager,
        &mut FcfsQpcManager::new(cfg),
    ] {
        let mut s = LruStore::new(4);
        assert_eq!(
            mgr.dma_returned(9),
            Err(DmaReturnError::NoneOutstanding { qpn: 9 })
        );
        assert_eq!(
            mgr.submit(req(1, Channel::Descriptor, 2)),
            Err(SubmitError::IndexOutOfRange {
                index: 2,
                ooo_cap: 2
            })
        );
        mgr.submit(req(1, Channel::Descriptor, 0)).unwrap();
        assert_eq!(
            mgr.submit(req(1, Channel::Descriptor, 0)),
            Err(SubmitError::IndexInFlight {
                channel: Channel::Descriptor,
                index: 0
            })
        );
        assert_eq!(
            mgr.submit(req(2, Channel::Descriptor, 1)),
            Err(SubmitError::Backpressure)
        );
        assert_eq!(mgr.stats().backpressured, 1);
        assert_eq!(mgr.step(&mut s), Ok(StepOutput::PostDma { qpn: 1 }));
        assert_eq!(
            mgr.dma_returned(2),
            Err(DmaReturnError::OutOfOrder {
                qpn: 2,
                expected: 1
            })
        );
        assert_eq!(mgr.dma_outstanding(), 1);
        assert_eq!(mgr.in_flight(), 1);
        mgr.dma_returned(1).unwrap();
        assert_eq!(
            mgr.dma_returned(1),
            Err(DmaReturnError::NoneOutstanding { qpn: 1 })
        );
        assert!(matches!(mgr.step(&mut s), Ok(StepOutput::Response(_))));
        assert_eq!(mgr.step(&mut s), Ok(StepOutput::Idle));
        assert_eq!(mgr.in_flight(), 0);
    }
}

/// Same workload, FCFS vs non-blocking, 40 QPs over a 30-entry cache and 500-cycle reads:
/// the non-blocking manager drains it in far fewer cycles (the effect behind Fig. 1b and
/// Fig. 7a).
#[test]
fn non_blocking_beats_fcfs_when_the_cache_thrashes() {
    let stream: Vec<Req> = (0..3000u32)
        .map(|i| Req {
            channel: Channel::from_number((i % 3) as usize).unwrap_or(Channel::Descriptor),
            qpn: (i * 7919) % 40,
            write: false,
        })
        .collect();
    let mut fc = FcfsQpcManager::new(QpcManagerConfig::new(16).unwrap());
    let mut nb = NonBlockingQpcManager::new(QpcManagerConfig::new(16).unwrap());
    let t_fc = cycles_to_drain(&mut fc, fcfs_requesters(16), &stream);
    let t_nb = cycles_to_drain(&mut nb, nb_requesters(16), &stream);
    assert!(
        t_nb * 2 < t_fc,
        "non-blocking {t_nb} cycles vs FCFS {t_fc} cycles"
    );
    nb.check_invariants().unwrap();
}

/// Drains `stream` with a fixed 500-cycle DMA latency and a 30-entry cache over 40 QPs;
/// returns the number of cycles.
fn cycles_to_drain<M, R>(mgr: &mut M, mut reqs: Vec<R>, stream: &[Req]) -> u64
where
    M: QpcManager,
    R: QpcRequester<usize>,
{
    let mut store = LruStore::new(30);
    let mut backlog: [VecDeque<usize>; NUM_CHANNELS] = Default::default();
    for (id, r) in stream.iter().enumerate() {
        backlog[r.channel.number()].push_back(id);
    }
    let mut dma: VecDeque<(u64, u32)> = VecDeque::new();
    let mut answered = 0;
    let mut now = 0u64;
    while answered < stream.len() && now < 10_000_000 {
        now += 1;
        while let Some(&(ready, qpn)) = dma.front() {
            if ready > now {
                break;
            }
            dma.pop_front();
            store.insert(qpn);
            mgr.dma_returned(qpn).unwrap();
        }
        for (c, b) in backlog.iter_mut().enumerate() {
            if let Some(&id) = b.front() {
                if let Ok(index) = reqs[c].request(id) {
                    let r = stream[id];
                    mgr.submit(QpcRequest {
                        qpn: r.qpn,
                        channel: r.channel,
                        index,
                        write: false,
                    })
                    .unwrap();
                    b.pop_front();
                }
            }
        }
        match mgr.step(&mut store).unwrap() {
            StepOutput::Response(r) => {
                reqs[r.channel.number()].respond(r.index).unwrap();
                answered += 1;
            }
            StepOutput::PostDma { qpn } => dma.push_back((now + 500, qpn)),
            _ => {}
        }
    }
    assert_eq!(answered, stream.len());
    now
}
