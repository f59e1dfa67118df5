//! The NIC's routing around its memories: the QPC manager's and the translation unit's
//! outputs, DMA reads of host memory or on-board DDR and their completions, and the
//! transport's timers.

use rnic_sim::TimePs;
use rnic_transport::RecvWr;

use super::cx::NicCx;
use super::dma_arbiter::ReadSource;
use super::mech::cc::hook::CongestionControl;
use super::ports::{DmaToken, QpcCont, TransCont, TxOrder};
use super::qpc_manager::QpcAction;
use super::translation::{TransLane, TransRead};
use super::Nic;
use crate::event::NicEv;
use crate::host::driver::decode_rq_wqe;
use crate::params::Placement;

impl Nic {
    /// Lets the QPC manager serve what it can and routes its outputs.
    pub(crate) fn qpc_pump(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        self.qpc.pump(now, &mut self.qpc_out);
        self.qpc_route(now, cx);
    }

    /// Performs the QPC manager's memory actions and hands each answer to who waits for it.
    pub(crate) fn qpc_route(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        // Memory actions are rare (a miss, a write-back): most calls skip their buffer.
        if !self.qpc_out.actions.is_empty() {
            self.qpc_actions(cx);
        }
        let mut responses = std::mem::take(&mut self.qpc_out.responses);
        for r in responses.drain(..) {
            if r.hit {
                self.pf.qpc_demand_hit(r.req.qpn);
            }
            match r.req.cont {
                // A latency-hiding prefetch: the context is cached now, nobody waits.
                QpcCont::Prefetch => {}
                QpcCont::Visit(visit) => self.wqe_fetch_issue(visit, r.ready_at, cx),
                QpcCont::TxJob(job) => cx.at(r.ready_at, NicEv::TxPost { job }),
                QpcCont::RxFrame(frame) => self.rx_after_qpc(frame, r.ready_at, cx),
            }
        }
        self.qpc_out.responses = responses;
        self.sched_kick(now, cx);
    }

    /// Performs the QPC manager's memory actions (reads of missed contexts, write-backs).
    fn qpc_actions(&mut self, cx: &mut NicCx<'_>) {
        let entry = self.p.nic.qpc_entry_bytes;
        let placement = self.p.nic.placement;
        let mut actions = std::mem::take(&mut self.qpc_out.actions);
        for a in actions.drain(..) {
            match a {
                QpcAction::Fetch { qpn, at } => {
                    // A prefetch of this context in flight answers the miss (late).
                    if self.pf.qpc_demand_miss(qpn) {
                        self.ctx_read(at, entry, DmaToken::QpcFill(qpn), cx);
                    }
                }
                QpcAction::WriteBack { at, .. } => match placement {
                    Placement::Host => {
                        self.pcie.posted_write(at, entry);
                    }
                    Placement::Ddr => {
                        self.ddr.write(at, entry);
                    }
                },
            }
        }
        self.qpc_out.actions = actions;
    }

    /// Lets the translation unit work and routes its outputs.
    pub(crate) fn trans_pump(&mut self, cx: &mut NicCx<'_>) {
        self.trans.pump(&mut self.trans_done, &mut self.trans_fetch);
        self.trans_route(cx);
    }

    /// Reads the entries the translation lanes miss; hands finished jobs on.
    pub(crate) fn trans_route(&mut self, cx: &mut NicCx<'_>) {
        self.pf.trans_observed(&mut self.trans.observed);
        // Reads of missed entries are rare: most calls skip their buffer.
        if !self.trans_fetch.is_empty() {
            let mut fetch = std::mem::take(&mut self.trans_fetch);
            let mut reads = std::mem::take(&mut self.scratch_reads);
            for f in fetch.drain(..) {
                // Prefetching keeps back the lines whose prefetch is in flight.
                self.pf.trans_demand_reads(f, &mut reads);
                for read in reads.drain(..) {
                    self.trans_read(f.at, f.lane, read, cx);
                }
            }
            self.scratch_reads = reads;
            self.trans_fetch = fetch;
        }
        let mut done = std::mem::take(&mut self.trans_done);
        for (c, t) in done.drain(..) {
            match c {
                TransCont::TxJob(job) => self.tx_job_translated(job, t, cx),
                TransCont::Rx(frame) => cx.at(t, NicEv::RxHandle { frame }),
                TransCont::RxSpan => {}
            }
        }
        self.trans_done = done;
    }

    /// Reads `read` for `lane` from its backing store from `at`.
    fn trans_read(&mut self, at: TimePs, lane: TransLane, read: TransRead, cx: &mut NicCx<'_>) {
        let bytes = self.trans.read_bytes(read);
        self.ctx_read(at, bytes, DmaToken::TransFill { lane, read }, cx);
    }

    /// Reads `len` bytes of host memory (over PCIe) for `source` from `at`; `token` says
    /// what follows.
    pub(crate) fn host_read(
        &mut self,
        at: TimePs,
        len: u64,
        token: DmaToken,
        source: ReadSource,
        cx: &mut NicCx<'_>,
    ) {
        if let Some((slot, first)) = self.dma.read(at, len, token, source, &mut self.pcie) {
            cx.at(first, NicEv::DmaArrive { slot });
        }
    }

    /// Reads a QPC/MPT/MTT entry from its backing store (host memory or on-board DDR).
    pub(crate) fn ctx_read(&mut self, at: TimePs, len: u64, token: DmaToken, cx: &mut NicCx<'_>) {
        match self.p.nic.placement {
            Placement::Host => self.host_read(at, len, token, ReadSource::Context, cx),
            Placement::Ddr => {
                let (slot, done) = self.dma.read_ddr(at, len, token, &mut self.ddr);
                cx.at(done, NicEv::DmaDone { slot });
            }
        }
    }

    pub(crate) fn on_dma_arrive(&mut self, now: TimePs, slot: u32, cx: &mut NicCx<'_>) {
        let done = self.dma.arrive(slot, now, &mut self.pcie);
        cx.at(done, NicEv::DmaDone { slot });
    }

    pub(crate) fn on_dma_done(&mut self, now: TimePs, slot: u32, cx: &mut NicCx<'_>) {
        let Some((token, len)) = self.dma.complete(slot, now) else {
            return;
        };
        let mut started = std::mem::take(&mut self.scratch_dma);
        self.dma.issue_waiting(now, &mut self.pcie, &mut started);
        for &(s, first) in &started {
            cx.at(first, NicEv::DmaArrive { slot: s });
        }
        started.clear();
        self.scratch_dma = started;
        match token {
            DmaToken::QpcFill(qpn) => {
                self.pf.qpc_demand_filled(qpn);
                self.qpc.on_fill(now, qpn, &mut self.qpc_out);
                self.qpc_route(now, cx);
                self.prefetch_wqes_after_qpc(qpn, now, cx);
            }
            DmaToken::TransFill { lane, read } => {
                self.pf.trans_demand_filled(read);
                self.trans
                    .on_fill(lane, read, now, &mut self.trans_done, &mut self.trans_fetch);
                self.trans_route(cx);
            }
            DmaToken::Wqe(visit) => self.on_wqes_fetched(now, visit, cx),
            DmaToken::Payload(job) => self.on_tx_job_ready(now, job, cx),
            DmaToken::RqWqe(r) => self.on_rq_wqes(now, r, cx),
            DmaToken::ReadResp(qpn) => {
                self.tx_enlist(qpn);
                self.tx_kick(now, cx);
            }
            DmaToken::Chunk { qpn, resp } => self.on_chunk(now, qpn, resp, len, cx),
            DmaToken::Prefetch(slot) => self.on_prefetch_done(now, slot, cx),
        }
    }

    /// Receive WQEs arrived: decode them and give them to the transport.
    fn on_rq_wqes(&mut self, now: TimePs, r: u32, cx: &mut NicCx<'_>) {
        let wqe_bytes = self.p.nic.wqe_bytes;
        let Some((qpn, first, k)) = self.rq_reads.remove(r) else {
            return;
        };
        let qp = self.qps[qpn as usize];
        let mut buf = [0u8; 64];
        for i in 0..k {
            let idx = first.wrapping_add(i) & qp.rq_mask;
            rnic_transport::Memory::read(
                &*cx.mem,
                qp.rq_base + u64::from(idx) * wqe_bytes,
                &mut buf,
            );
            let (wr_id, sge) = decode_rq_wqe(&buf);
            let sgl = if sge.len > 0 { vec![sge] } else { Vec::new() };
            if self.dev.post_recv(qpn, RecvWr { wr_id, sgl }).is_err() {
                self.fetch.stats.post_errors += 1;
            }
        }
        // A SEND may have been waiting for a receive WQE (RNR): let the QP transmit.
        if self.dev.qp_wants_transmit(qpn) {
            self.tx_enlist(qpn);
            self.tx_kick(now, cx);
        }
    }

    /// Schedules a `Timer` for the transport's earliest deadline, if it is new.
    pub(crate) fn arm_timer(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        if let Some(d) = self.dev.poll_timeout() {
            let d = d.max(now);
            if d < self.timer_at {
                self.timer_at = d;
                cx.at(d, NicEv::Timer);
            }
        }
    }

    pub(crate) fn on_timer(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        if self.timer_at <= now {
            self.timer_at = TimePs::MAX;
        }
        if self.dev.poll_timeout().is_some_and(|d| d <= now) {
            self.dev.handle_timeout(now);
            if self.rate.on() || self.cc.is_on() || self.tx.order.orders_resends() {
                // The sweep pulls frames from any QP and would pass the rate limiter and
                // slicing execution (a WQE's last packet sent by the sweep would leave its
                // p_wqe in the slicing station for good, and its tenant waiting for it):
                // each QP with something to resend goes through the TX engine's queue
                // instead.
                for q in 0..self.qps.len() as u32 {
                    if self.dev.qp_wants_transmit(q) {
                        self.tx_enlist(q);
                    }
                }
            } else {
                self.tx.sweep = true;
            }
            self.tx_kick(now, cx);
            // Completions in error (retry exceeded) surface through the CQs.
            for q in self.cq_core_qpns() {
                self.cq_collect(now, q, cx);
            }
        }
        self.arm_timer(now, cx);
    }
}
