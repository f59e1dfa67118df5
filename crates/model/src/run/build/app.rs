//! The applications of a run: each flow's perftest with its test spec and host costs, the
//! source buffers' pattern bytes and the payload oracle that checks every delivered byte.

use rnic_host::SparseMemory;
use rnic_sim::TimePs;

use crate::config::Config;
use crate::flow::{FlowSpec, FlowsSpec};
use crate::host::core_set::CoreSet;
use crate::host::pattern;
use crate::host::perftest::{
    BwStart, Core, ErrorLog, HostCosts, Measurement, MrKeys, NodeApp, NodeApps, Pair, Perftest,
    PingPong, Proc, Procs, TestSpec, Window, WindowOpened,
};
use crate::host::steady::Steady;
use crate::oracle::{Delivery, MsgSizes, PayloadOracle};
use crate::params::ModelParams;
use crate::workload::Verb;

use super::connect::start_psn;
use super::FlowPlan;

/// The application's view of one node for flow `f`: the flow's cores of `app_cores` (busy
/// until the flow starts, if it starts later), its MR `keys` and its buffers.
pub(super) fn node_app(f: &FlowSpec, pl: &FlowPlan, app_cores: &[Core], keys: MrKeys) -> NodeApp {
    let own = pl.core_base..pl.core_base + f.cores as usize;
    let mut c = CoreSet::new(pl.core_base, app_cores[own].to_vec());
    for core in c.iter_mut() {
        core.busy = pl.start_ps;
    }
    NodeApp {
        cores: c,
        qps: Vec::new(),
        keys,
        src: pl.buf_base,
        dst: pl.buf_base + pl.layout.region,
        srq: None,
        cpu_busy_ps: 0,
    }
}

/// The payload oracle: each QP receives the bytes of its peer's source buffer slot, the
/// messages of the flow's size (or its size mix), numbered from the PSNs they carry.
pub(super) fn payload_oracle(
    cfg: &Config,
    seed: u64,
    spec: &FlowsSpec,
    plans: &[FlowPlan],
    flow_pairs: &[Vec<Pair>],
    n_nodes: usize,
) -> PayloadOracle {
    let mut oracle = PayloadOracle::new(seed, n_nodes);
    let delivery = if cfg.qp.transport == crate::config::Transport::Ud {
        Delivery::Datagram
    } else {
        Delivery::InOrder
    };
    for ((f, pl), pairs) in spec.flows.iter().zip(plans).zip(flow_pairs) {
        for (i, pr) in pairs.iter().enumerate() {
            let slot = pl.slot_base + pl.layout.slot(i as u32);
            let pmtu = f.profile(cfg, i as u32).pmtu;
            let mut sz = MsgSizes::Fixed(u64::from(pl.size32));
            if let Some(m) = &f.size_mix {
                let key = (u64::from(pl.slot_base) << 32) | i as u64;
                sz = MsgSizes::Mix(std::sync::Arc::new(m.clone()), key);
            }
            let (s, c) = (f.server as usize, pr.c_node as usize);
            // The payloads a QP receives carry its peer's PSNs (WRITE, SEND), or its own
            // for the responses to its READs.
            let (s_psn, c_psn) = (
                start_psn(cfg, seed, s, pr.s_qpn),
                start_psn(cfg, seed, c, pr.c_qpn),
            );
            let read = f.test.verb() == Verb::Read;
            let first = |own: u32, peer: u32| if read { own } else { peer };
            let sz2 = sz.clone();
            let d = delivery;
            oracle.connect((s, pr.s_qpn), (c, slot), pmtu, sz2, first(s_psn, c_psn), d);
            oracle.connect((c, pr.c_qpn), (s, slot), pmtu, sz, first(c_psn, s_psn), d);
        }
    }
    oracle
}

/// Every flow's application over its pairs and its view of the nodes, with the window
/// events their builds schedule; an atomic test's targets go to the oracle's atomics.
pub(super) fn applications(
    p: &ModelParams,
    spec: &FlowsSpec,
    plans: &[FlowPlan],
    flow_pairs: Vec<Vec<Pair>>,
    apps: Vec<NodeApps>,
    mems: &[SparseMemory],
    oracle: &mut PayloadOracle,
) -> (Vec<Perftest>, Vec<(TimePs, crate::event::Ev)>) {
    let mut perftests = Vec::with_capacity(spec.flows.len());
    let mut window_events = Vec::new();
    for (((f, pl), pairs), nodes_app) in spec.flows.iter().zip(plans).zip(flow_pairs).zip(apps) {
        let (app, events) = application(p, f, pl, pairs, nodes_app);
        if f.test.verb() == Verb::Atomic {
            connect_atomics(&app, mems, oracle);
        }
        perftests.push(app);
        window_events.extend(events);
    }
    (perftests, window_events)
}

/// The initiator's QP of each pair of atomic test `app` (the client in ping-pong latency
/// tests, the server otherwise) works on its peer's destination, whose initial value the
/// oracle takes from `mems`, and the values its atomics return land in its own.
pub(super) fn connect_atomics(app: &Perftest, mems: &[SparseMemory], oracle: &mut PayloadOracle) {
    let client_posts = app.spec.is_lat() && app.procs.list.is_empty();
    for (i, pr) in app.pairs.iter().enumerate() {
        let (s, c, i) = (app.server, pr.c_node as usize, i as u32);
        let ((node, qpn), peer) = if client_posts {
            ((c, pr.c_qpn), s)
        } else {
            ((s, pr.s_qpn), c)
        };
        let target = app.dst(peer, i);
        let mut b = [0u8; 8];
        rnic_transport::Memory::read(&mems[peer], target, &mut b);
        let initial = u64::from_le_bytes(b);
        oracle
            .atomics
            .connect((node, qpn), app.dst(node, i), (peer, target), initial);
    }
}

/// The application of flow `f` over its `pairs`, with the window events its build
/// schedules (a duration-mode flow's window opening and, for bandwidth tests, its end).
pub(super) fn application(
    p: &ModelParams,
    f: &FlowSpec,
    pl: &FlowPlan,
    pairs: Vec<Pair>,
    nodes: NodeApps,
) -> (Perftest, Vec<(TimePs, crate::event::Ev)>) {
    let lat = f.test.is_latency();
    let q = f.qps.max(1);
    let duration_mode = f.duration_us.is_some();
    // A flow's window starts no earlier than its start plus a fixed sim.warmup_us, if set;
    // without one, its -D window opens when its own rate has settled (host/steady.rs).
    let warmup_ps = pl.start_ps + p.warmup_ps.unwrap_or(0);
    let window = match f.duration_us {
        Some(d) => (warmup_ps, warmup_ps + rnic_sim::us(d)),
        None => (0, TimePs::MAX),
    };
    let detect = duration_mode && p.warmup_ps.is_none();
    let tx_depth = if lat { 1 } else { pl.tx_depth };
    // perftest measures the peak in iteration mode only (-D turns it off). Its stamps are
    // reserved up front, so millions of them carry no growth slack: one per post list and
    // one per CQE (a signaled WQE every cq_mod, each pair's last, and the warm-up's last).
    let peak = (p.host.bw_peak && !lat && pl.procs == 0 && !duration_mode).then(|| {
        let n = pairs.len() as u64;
        let (posts, cqes) =
            crate::host::bw_peak::stamps_per_pair(f.iters, p.host.post_list, p.host.cq_mod);
        crate::host::bw_peak::BwPeak::with_capacity(n * posts, n * cqes)
    });
    let mut app = Perftest {
        spec: test_spec(p, f, pl),
        costs: host_costs(p),
        window: Window {
            span_ps: window,
            duration_ps: window.1 - window.0,
            min_start_ps: window.0,
            // The give-up time leaves room for the window within the hour a run may simulate.
            steady: f.duration_us.filter(|_| detect).map(|d| {
                Steady::new(
                    p.settle.within_hour(d),
                    q as usize,
                    if lat { 1 } else { tx_depth },
                )
            }),
            opened: None,
            joint: false,
            ready: None,
            origin_ps: 0,
        },
        measure: Measurement {
            peak,
            ..Measurement::default()
        },
        errors: ErrorLog::default(),
        ping: PingPong {
            give_up_after_ps: pl.give_up_ps,
            ..PingPong::default()
        },
        procs: Procs::default(),
        bw_start: BwStart::default(),
        server: f.server as usize,
        pairs,
        nodes,
        finished: false,
        pairs_done: 0,
    };
    if let Some(s) = app.window.steady.as_mut() {
        if lat {
            // Latency tests have no initial posting: every completion from the flow's
            // start counts.
            s.arm(pl.start_ps);
        }
    }
    let waits = duration_mode && (p.warmup_rounds > 0 || detect);
    if waits {
        // The window opens when the warm-up rounds are done and the rate has settled (or
        // sim.warmup_us has passed): `Perftest::maybe_open`; bandwidth tests then schedule
        // their end.
        app.window.span_ps = (TimePs::MAX, TimePs::MAX);
        if p.warmup_rounds > 0 && lat {
            // With --procs each process counts its own warm-up rounds; without (pl.procs =
            // 0) a latency test counts its iterations instead (`Perftest::rounds_done`).
            app.procs.warming = pl.procs;
        } else if p.warmup_rounds > 0 {
            app.bw_start.warming_pairs = q as usize;
        }
    }
    if pl.procs > 0 {
        // Process p owns the pairs p, p + N, p + 2N, ...
        app.procs.list = (0..pl.procs)
            .map(|pr| Proc {
                pairs: (pr as u32..q).step_by(pl.procs).collect(),
                next: 0,
                rounds: 0,
            })
            .collect();
    }
    let mut events = Vec::new();
    if duration_mode && !waits {
        // A fixed warm-up alone: the window is known now. Latency tests stop at the first
        // iteration boundary after it instead of at an end event.
        if !lat {
            events.push((window.1, crate::event::Ev::End));
        }
        events.push((window.0, crate::event::Ev::WindowOpen));
        app.window.opened = Some(WindowOpened {
            at_ps: window.0,
            settled: true,
            reason: format!(
                "sim.warmup_us = {} µs set",
                p.warmup_ps.unwrap_or(0) as f64 / 1e6
            ),
        });
    }
    (app, events)
}

/// What flow `f`'s test is, from its spec, its plan and the run's parameters.
pub(super) fn test_spec(p: &ModelParams, f: &FlowSpec, pl: &FlowPlan) -> TestSpec {
    let lat = f.test.is_latency();
    TestSpec {
        test: f.test,
        atomic: f.atomic,
        size_bytes: pl.size32,
        size_mix: f.size_mix.clone().map(std::sync::Arc::new),
        seed: p.seed,
        iters: f.iters.max(1),
        tx_depth: if lat { 1 } else { pl.tx_depth },
        inline_bytes: p.host.inline_bytes,
        post_list: if lat || pl.procs > 0 {
            1
        } else {
            p.host.post_list
        },
        cq_mod: if lat || pl.procs > 0 {
            1
        } else {
            p.host.cq_mod
        },
        // perftest's warm-up session: a tx depth per QP, or one post list.
        warm_up_ops: match (
            p.host.perform_warm_up && !lat && pl.procs == 0,
            p.host.post_list,
        ) {
            (false, _) => 0,
            (true, 1) => u64::from(pl.tx_depth),
            (true, l) => u64::from(l),
        },
        rx_depth: pl.rx_depth,
        recv_post_list: p.host.recv_post_list,
        stride_bytes: pl.layout.stride,
        wqe_bytes: p.nic.wqe_bytes,
        duration_mode: f.duration_us.is_some(),
        unreliable: pl.unreliable,
        grh_bytes: pl.grh_bytes,
        slots: pl.layout.slots,
        slot_base: pl.slot_base,
        warmup_rounds: p.warmup_rounds,
    }
}

/// The host's CPU costs of the application's verbs.
pub(super) fn host_costs(p: &ModelParams) -> HostCosts {
    HostCosts {
        post_send_ps: p.host.post_send_ps,
        wqe_prep_ps: p.host.wqe_prep_ps,
        poll_cq_ps: p.host.poll_cq_ps,
        cq_event_ps: p.host.cq_event_ps,
        mem_latency_ps: p.host.mem_latency_ps,
        latency_gap_ps: p.host.latency_gap_ps,
        sw_prefetch: p.nic.prefetch.sw,
    }
}

/// Writes the pattern bytes (`host/pattern.rs`) of every source buffer slot a flow's pairs
/// use, in 64 KiB pieces, so a large message needs no second copy. A slot's pattern is
/// seeded by its run-wide number, so no two flows' buffers look alike.
pub(super) fn fill_sources(
    mems: &mut [SparseMemory],
    pairs: &[Pair],
    server: usize,
    pl: &FlowPlan,
    seed: u64,
) {
    let layout = &pl.layout;
    let words = (layout.slots as usize).div_ceil(64);
    let mut used: Vec<Vec<u64>> = vec![vec![0u64; words]; mems.len()];
    for (i, pr) in pairs.iter().enumerate() {
        let s = layout.slot(i as u32) as usize;
        used[server][s / 64] |= 1 << (s % 64);
        used[pr.c_node as usize][s / 64] |= 1 << (s % 64);
    }
    // The bytes are generated when read (see `pattern::SourceBuffers`), not written here.
    for (ni, (mem, used)) in mems.iter_mut().zip(used).enumerate() {
        if used.iter().all(|&w| w == 0) {
            continue;
        }
        let src = pattern::SourceBuffers {
            base: pl.buf_base,
            stride: layout.stride,
            size: u64::from(pl.size32),
            run_seed: seed,
            node: ni,
            slot_base: pl.slot_base,
            used,
        };
        let end = pl.buf_base + u64::from(layout.slots) * layout.stride;
        mem.back(pl.buf_base, end, std::sync::Arc::new(src));
    }
}
