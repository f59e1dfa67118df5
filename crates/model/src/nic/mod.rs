//! The NIC microarchitecture and its timing (one [`Nic`] per node).
//!
//! Transmit: [`doorbell`] → [`scheduler`] (round robin over active QPs) → QPC request to the
//! [`qpc_manager`] (descriptor channel; [`qpc_cache`] LRU) → [`wqe_fetch`] (DMA read of up to
//! `wqes_per_fetch` WQEs, decode) → [`translation`] (MPT/MTT caches) → payload DMA read
//! ([`dma`] over [`pcie`]) → QPC request on the requester channel → `post_send` to the
//! transport → [`tx_pipeline`] (the TX engine
//! pulls frames from the transport, packetized by PMTU) → Ethernet port.
//!
//! Receive: [`rx_pipeline`] (parse) → QPC (responder or requester channel) → translation of
//! RETH/AtomicETH targets → the transport's PSN and protection checks and data placement
//! (`handle_packet`) → payload DMA write, READ/atomic response data read, ACK generation →
//! [`cq`] (CQE DMA write). Its steps (`route_rx.rs`), like prefetching's router, are
//! functions of the parts they need (borrowed with `rx_parts!`), not methods of the `Nic`:
//! what a step asks of the rest of the NIC comes back as a value the `Nic` routes.
//!
//! csRNA switches, each one config field: `nic.qpc_manager` selects the FCFS
//! baseline or the non-blocking manager with its `nic.ooo_cap`-index requesters
//! ([`mech::csrna::nonblocking`] over [`mech::csrna`]); `nic.latency_hiding` lets the scheduler read
//! the SQ address from an on-chip table and issue the WQE read without waiting for the QPC
//! (the descriptor request becomes a prefetch, [`scheduler`]); `nic.qpc_placement` puts the
//! QPC/MPT/MTT backing store in host memory (PCIe) or on-board DDR ([`ddr`]).
//!
//! TX isolation switches ([`mech::isolation`]): `nic.tx_isolation` selects the baseline TX
//! architecture (shared WQE FIFO, run to completion, coupled backpressure, round robin) or
//! the TX-isolation paper's optimized-v1/v2 (separate WQE caching, slicing execution,
//! isolated backpressure, adaptive WRR), each part also switchable alone (`nic.iso_*`). The
//! TX path reaches them through two hooks chosen here once ([`ports::WqeAdmission`] for the
//! scheduler, [`ports::TxOrder`] for the TX engine), whose baseline kinds are no-ops; the TX
//! route's steps tell `Nic::iso` of the WQEs they hand on and start through
//! [`ports::TxIsolation`].
//!
//! Every unit has an initiation interval in NIC cycles, reports its counters, and every
//! on-chip structure reports its bytes ([`onchip`]).
//!
//! The units are grouped into four stages, each one field of the [`Nic`]: the memory path
//! ([`mem_path`]), the transmit path ([`tx_path`]), the receive path ([`rx_path`]) and the
//! host interface ([`host_if`]). A stage does what needs only its own units and hands back
//! the continuation it was given; the `Nic` carries it on (`route_mem.rs`, `route_tx.rs`,
//! and here for the receive route). The transmit route's steps are functions of the parts
//! each needs (`tx_path/route.rs`): `route_tx.rs` only builds their parts and carries out
//! what each asks of the rest of the NIC (a QPC or TX buffer pump, a QP's completions, the
//! timer).

/// The parts of `$nic` (a `Nic`) resource prefetching's router works with, borrowed field by
/// field so that the caller may borrow its other fields beside them.
macro_rules! pf_parts {
    ($nic:ident) => {
        $crate::nic::mech::prefetch::route::Parts {
            pf: &mut $nic.pf,
            mem: &mut $nic.mem,
            qps: &$nic.qps,
            p: &$nic.p,
        }
    };
}

/// The parts of `$nic` (a `Nic`) the receive route works with, borrowed field by field so
/// that the caller may borrow its other fields beside them.
macro_rules! rx_parts {
    ($nic:ident) => {
        $crate::nic::route_rx::Parts {
            rx: &mut $nic.rx,
            mem: &mut $nic.mem,
            dev: &mut $nic.dev,
            qps: &mut $nic.qps,
            host: &mut $nic.host,
            p: &$nic.p,
        }
    };
}

pub mod cq;
pub mod cx;
pub mod ddr;
pub mod dma;
pub mod dma_arbiter;
pub mod doorbell;
pub mod host_if;
pub mod lru;
pub mod mech;
pub mod mem_path;
pub mod onchip;
pub mod payload_stream;
pub mod pcie;
pub mod ports;
pub mod qp_table;
pub mod qpc_cache;
pub mod qpc_manager;
pub mod rate_limiter;
mod route_mem;
mod route_rx;
mod route_tx;
pub mod rx_buffer;
pub mod rx_path;
pub mod rx_pipeline;
pub mod rx_sequence;
pub mod rx_translate;
pub mod rx_wait;
pub mod sched_wake;
pub mod scheduler;
pub mod translation;
pub mod tx_path;
pub mod tx_pipeline;
pub mod unit;
pub mod wqe_fetch;

use rnic_sim::TimePs;
use rnic_transport::Device;

use crate::config::QpcManager as QpcManagerKind;
use crate::event::NicEv;
use crate::params::ModelParams;

use cx::NicCx;
use dma_arbiter::ReadSource;
use host_if::HostIf;
use mech::cc::hook::AnyCc;
use mech::cc::route as cc;
use mech::csrna::nonblocking::NonBlocking;
use mech::isolation::{self, hooks::AnyTxOrder, Isolation};
use mech::prefetch::hook::AnyPrefetch;
use mech::prefetch::route as prefetch;
use mem_path::MemPath;
pub use ports::{DmaToken, QpcCont, TransCont};
pub use qp_table::QpHw;
use qpc_cache::QpcCache;
use qpc_manager::{any::AnyQpcManager, fcfs::Fcfs};
use rx_path::RxPath;
use tx_path::TxPath;

/// One node's NIC: its units, the transport (the protocol truth it drives) and its per-QP
/// records. It routes each unit's outputs to the next unit (`route_tx`, `route_rx`,
/// `route_mem`); the units themselves know only their own inputs and outputs.
pub struct Nic {
    /// Timing parameters.
    pub p: ModelParams,
    /// The transport: the protocol state of this RNIC.
    pub dev: Device,
    /// Time of the earliest pending `Timer` event.
    pub timer_at: TimePs,
    /// The memory path: PCIe, DDR, DMA, the QPC manager and the translation unit.
    pub mem: MemPath,
    /// The host interface: doorbells, CQEs, receive-WQE reads.
    pub host: HostIf,
    /// The transmit path: scheduler, WQE fetch, TX engine, rate limiter, payload streams.
    pub tx: TxPath<AnyTxOrder>,
    /// TX performance isolation: its WQE admission hook and waiting-time samples.
    pub iso: Isolation,
    /// Resource prefetching ([`mech::prefetch`]), behind its hook.
    pub pf: AnyPrefetch,
    /// Congestion control ([`mech::cc`], `net.cc`), behind its hook.
    pub cc: AnyCc,
    /// The receive path: RX parse, the receive buffer, the RC request sequence.
    pub rx: RxPath,
    /// Per-QP state, indexed by QPN.
    pub qps: Vec<QpHw>,
    scratch_qpns: Vec<u32>,
    scratch_trans: Vec<translation::TransJob<TransCont>>,
}

impl std::fmt::Debug for Nic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nic")
            .field("qps", &self.qps.len())
            .finish_non_exhaustive()
    }
}

impl Nic {
    /// Handles one of this NIC's events at `now`.
    pub fn handle(&mut self, now: TimePs, ev: NicEv, cx: &mut NicCx<'_>) {
        match ev {
            NicEv::Mmio { qpn, pi } => self.host.mmio(now, qpn, pi, false, &mut self.mem.pcie, cx),
            NicEv::MmioRq { qpn, pi } => self.host.mmio(now, qpn, pi, true, &mut self.mem.pcie, cx),
            NicEv::Doorbell { qpn, pi } => self.on_doorbell(now, qpn, pi, cx),
            NicEv::DoorbellRq { qpn, pi } => {
                let mem = &mut self.mem;
                let read = |t, len, slot| {
                    mem.host_read(t, len, DmaToken::RqWqe(slot), ReadSource::Wqe, cx);
                };
                self.host
                    .on_doorbell_rq((now, qpn, pi), &mut self.qps, &self.p, read);
            }
            NicEv::Sched => self.on_sched(now, cx),
            NicEv::DmaArrive { slot } => self.mem.on_dma_arrive(now, slot, cx),
            NicEv::DmaDone { slot } => self.on_dma_done(now, slot, cx),
            NicEv::TxJobReady { job } => self.on_tx_job_ready(now, job, cx),
            NicEv::TxPost { job } => self.on_tx_post(now, job, cx),
            NicEv::TxWake => {
                if self.tx.wake_due(now) {
                    self.on_tx_wake(now, cx);
                }
            }
            NicEv::TxLook => self.on_tx_look(now, cx),
            NicEv::RateWake { qpn } => {
                self.tx.rate.woke(qpn);
                self.tx_enlist(qpn);
                self.tx_kick(now, cx);
            }
            NicEv::RxArrive { frame } => {
                let ask = route_rx::on_arrive(rx_parts!(self), &mut self.cc, now, frame, cx);
                self.rx_ask(ask, now, cx);
            }
            NicEv::RxHandle { frame } => {
                let streams = &mut self.tx.streams;
                let handled = route_rx::on_handle(rx_parts!(self), streams, now, frame, cx);
                self.rx_handled(handled, now, cx);
            }
            NicEv::RxBufferLook => self.rx.on_buffer_look(now, cx),
            NicEv::Timer => self.on_timer(now, cx),
            NicEv::Prefetch(ev) => {
                let active = self.tx.sched.active();
                if let Some(visit) = prefetch::on_event(pf_parts!(self), active, now, ev, cx) {
                    self.on_wqes_fetched(now, visit, cx);
                }
            }
            NicEv::Cc(ev) => {
                if let Some(qpn) = cc::on_event(&mut self.cc, now, ev, cx) {
                    self.tx_enlist_rx(qpn);
                    self.tx_kick(now, cx);
                }
            }
        }
    }

    /// A NIC with the parameters `p` driving the transport `dev`.
    pub fn new(p: &ModelParams, dev: Device) -> Self {
        let n = &p.nic;
        let (pf, mirror) = AnyPrefetch::new(n.prefetch);
        Nic {
            p: p.clone(),
            dev,
            timer_at: TimePs::MAX,
            mem: MemPath::new(p, qpc_manager(p), pf.is_on()),
            host: HostIf::new(p),
            tx: TxPath::new(p, mirror, Isolation::tx_order(&n.iso)),
            iso: Isolation::new(n.iso, n.cycle_ps),
            pf,
            cc: AnyCc::new(p.cc, p.eth.mbps),
            rx: RxPath::new(p),
            qps: Vec::new(),
            scratch_qpns: Vec::new(),
            scratch_trans: Vec::new(),
        }
    }

    /// Registers a QP's rings and attributes (what creating the QP writes into its QPC).
    #[allow(clippy::too_many_arguments)]
    pub fn add_qp(
        &mut self,
        qpn: u32,
        sq_base: u64,
        sq_depth: u32,
        rq_base: u64,
        rq_depth: u32,
        core: u16,
        profile: &crate::workload::QpProfile,
    ) {
        let i = qpn as usize;
        if i >= self.qps.len() {
            self.qps.resize(i + 1, QpHw::default());
        }
        self.qps[i] = QpHw {
            sq_base,
            rq_base,
            sq_mask: sq_depth.next_power_of_two() - 1,
            rq_mask: rq_depth.next_power_of_two() - 1,
            core,
            valid: true,
            pmtu: profile.pmtu,
            tenant: profile.tenant,
            iso_tag: isolation::tenant::tag(false, profile.tenant, qpn),
            ..QpHw::default()
        };
        self.iso.reporting |= profile.tenant != 0;
        self.host.note_core(core, qpn);
    }

    /// Sets the class of QP `qpn` (LS when `ls`) in its tagged QPN.
    pub fn set_class(&mut self, qpn: u32, ls: bool) {
        if let Some(q) = self.qps.get_mut(qpn as usize) {
            q.iso_tag = isolation::tenant::tag(ls, q.tenant, qpn);
        }
    }

    /// Bytes of each on-chip structure ([`onchip::bytes`]).
    pub fn onchip(&self, p: &ModelParams) -> std::collections::BTreeMap<String, u64> {
        let iso = self.iso.onchip(p.nic.wqe_bytes);
        onchip::bytes(&self.mem, &self.qps, &self.host, &self.pf, iso, p)
    }
}

/// What the receive route ([`route_rx`]) asks of the rest of the NIC, carried out in the
/// order it asks it.
impl Nic {
    /// Routes a receive step's [`route_rx::Ask`].
    fn rx_ask(&mut self, ask: route_rx::Ask, now: TimePs, cx: &mut NicCx<'_>) {
        match ask {
            route_rx::Ask::Nothing => {}
            route_rx::Ask::QpcPump => self.qpc_pump(now, cx),
            route_rx::Ask::TransPump => self.trans_pump(cx),
        }
    }

    /// Routes what the transport's handling of a frame asks, then arms its timer.
    fn rx_handled(&mut self, h: route_rx::Handled, now: TimePs, cx: &mut NicCx<'_>) {
        if let Some(qpn) = h.fill {
            self.stream_fill(qpn, true, now, cx);
        }
        if let Some(qpn) = h.enlist {
            self.tx_enlist_rx(qpn);
            self.tx_kick(now, cx);
        }
        if let Some(qpn) = h.collect {
            self.cq_collect(now, qpn, cx);
        }
        self.arm_timer(now, cx);
    }

    /// Moves the completions of `qpn`'s CQs from the transport into CQEs at `now`
    /// ([`route_rx::CqRun`]): a QP whose completion is in error stops sending first, and
    /// the QPs that finished send WRs are activated again.
    pub(crate) fn cq_collect(&mut self, now: TimePs, qpn: u32, cx: &mut NicCx<'_>) {
        let Some(mut run) = route_rx::CqRun::new(&self.qps, qpn) else {
            return;
        };
        let mut activate = std::mem::take(&mut self.scratch_qpns);
        let mut freed = false;
        while let Some(failed) = run.step(rx_parts!(self), &mut activate, now, cx) {
            // The QP is in error: what it had not sent never will be.
            if self.tx_buffer_release(failed, u64::MAX) {
                freed = true;
            }
            self.streams_reset(failed, now, cx);
            self.tx_kick(now, cx);
        }
        if freed {
            self.tx_buffer_pump(now, cx);
        }
        run.finish(&self.dev, &mut self.qps, &mut activate);
        for &a in &activate {
            // Room under max_outstanding_wqes_per_qp may reactivate the QP.
            self.sched_activate(a, now, cx);
        }
        activate.clear();
        self.scratch_qpns = activate;
    }
}

/// The QPC manager `nic.qpc_manager` names: the FCFS baseline or csRNA's non-blocking one.
fn qpc_manager(p: &ModelParams) -> AnyQpcManager {
    let n = &p.nic;
    let cache = QpcCache::new(n.qpc_cache_entries, n.qpc_entry_bytes);
    match n.qpc_manager {
        QpcManagerKind::Fcfs => {
            AnyQpcManager::Fcfs(Fcfs::new(cache, n.qpc_lookup_ps, n.qpc_fifo_depth))
        }
        QpcManagerKind::Nonblocking => AnyQpcManager::NonBlocking(NonBlocking::new(
            cache,
            [n.descriptor_ooo_cap, n.ooo_cap, n.ooo_cap],
            n.cycle_ps,
            n.qpc_lookup_ps,
        )),
    }
}

impl crate::stats::Report for Nic {
    /// Every unit's counters, each under its own name.
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        let at = |unit: &str| format!("{prefix}.{unit}");
        self.mem.report(prefix, reg);
        self.host.report(prefix, reg);
        self.tx.report(prefix, reg);
        self.iso.report(&self.tx.engine.order, &at("iso"), reg);
        self.pf.report(&at("prefetch"), reg);
        self.cc.report(&at("cc"), reg);
        self.rx.report(prefix, reg);
    }
}
