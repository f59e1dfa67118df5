//! The NIC's routing around its memory path ([`super::mem_path`]): where the QPC manager's
//! answers, the translation unit's finished jobs and completed reads go next, and the
//! transport's timers.

use rnic_sim::TimePs;
use rnic_transport::RecvWr;

use super::cx::NicCx;
use super::mech::cc::hook::CongestionControl;
use super::mech::prefetch::route::{self as prefetch, Ask};
use super::ports::{DmaToken, QpcCont, TransCont, TxOrder};
use super::Nic;
use crate::event::NicEv;
use crate::host::driver::decode_rq_wqe;

impl Nic {
    /// Lets the QPC manager serve what it can and routes its outputs.
    pub(crate) fn qpc_pump(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        self.mem.qpc.pump(now, &mut self.mem.qpc_out);
        self.qpc_route(now, cx);
    }

    /// Performs the QPC manager's memory actions and hands each answer to who waits for it.
    pub(crate) fn qpc_route(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        // Memory actions are rare (a miss, a write-back): most calls skip their buffer.
        if !self.mem.qpc_out.actions.is_empty() {
            self.mem.qpc_actions(&mut self.pf, cx);
        }
        let mut responses = std::mem::take(&mut self.mem.qpc_out.responses);
        for r in responses.drain(..) {
            if r.hit {
                self.pf.qpc_demand_hit(r.req.qpn);
            }
            match r.req.cont {
                // A latency-hiding prefetch: the context is cached now, nobody waits.
                QpcCont::Prefetch => {}
                QpcCont::Visit(visit) => self.wqe_fetch_issue(visit, r.ready_at, cx),
                QpcCont::TxJob(job) => cx.at(r.ready_at, NicEv::TxPost { job }),
                QpcCont::RxFrame(frame) => {
                    let ask = super::route_rx::after_qpc(rx_parts!(self), frame, r.ready_at, cx);
                    self.rx_ask(ask, now, cx);
                }
            }
        }
        self.mem.qpc_out.responses = responses;
        self.sched_kick(now, cx);
    }

    /// Lets the translation unit work and routes its outputs.
    pub(crate) fn trans_pump(&mut self, cx: &mut NicCx<'_>) {
        let mem = &mut self.mem;
        mem.trans.pump(&mut mem.trans_done, &mut mem.trans_fetch);
        self.trans_route(cx);
    }

    /// Reads the entries the translation lanes miss; hands finished jobs on.
    pub(crate) fn trans_route(&mut self, cx: &mut NicCx<'_>) {
        self.mem.trans_reads(&mut self.pf, cx);
        let mut done = std::mem::take(&mut self.mem.trans_done);
        for (c, t) in done.drain(..) {
            match c {
                TransCont::TxJob(job) => self.tx_job_translated(job, t, cx),
                TransCont::Rx(frame) => cx.at(t, NicEv::RxHandle { frame }),
                TransCont::RxSpan => {}
            }
        }
        self.mem.trans_done = done;
    }

    /// A read completed: its token names what follows.
    pub(crate) fn on_dma_done(&mut self, now: TimePs, slot: u32, cx: &mut NicCx<'_>) {
        let Some((token, len)) = self.mem.on_dma_done(now, slot, cx) else {
            return;
        };
        match token {
            DmaToken::QpcFill(qpn) => {
                self.pf.qpc_demand_filled(qpn);
                let mem = &mut self.mem;
                mem.qpc.on_fill(now, qpn, &mut mem.qpc_out);
                self.qpc_route(now, cx);
                prefetch::wqes_after_qpc(pf_parts!(self), qpn, now, cx);
            }
            DmaToken::TransFill { lane, read } => {
                self.pf.trans_demand_filled(read);
                let mem = &mut self.mem;
                mem.trans
                    .on_fill(lane, read, now, &mut mem.trans_done, &mut mem.trans_fetch);
                self.trans_route(cx);
            }
            DmaToken::Wqe(visit) => self.on_wqes_fetched(now, visit, cx),
            DmaToken::Payload(job) => self.on_tx_job_ready(now, job, cx),
            DmaToken::RqWqe(r) => self.on_rq_wqes(now, r, cx),
            DmaToken::ReadResp(qpn) => {
                // An atomic's response (its original value read) goes ahead as an ACK.
                self.tx_enlist_rx(qpn);
                self.tx_kick(now, cx);
            }
            DmaToken::Chunk { qpn, resp } => self.on_chunk(now, qpn, resp, len, cx),
            DmaToken::Prefetch(slot) => self.on_prefetch_read(now, slot, cx),
        }
    }

    /// Prefetch read `slot` arrived at `now`: the router takes it in, the NIC routes what
    /// that asks, then the router's chain goes on ([`prefetch::on_read_done`]).
    fn on_prefetch_read(&mut self, now: TimePs, slot: u32, cx: &mut NicCx<'_>) {
        let visits = &self.tx.fetch.visits;
        let arrived = prefetch::on_read_done(pf_parts!(self), visits, now, slot, cx);
        match arrived.ask {
            Ask::Nothing => {}
            Ask::QpcRoute => self.qpc_route(now, cx),
            Ask::TransRoute => self.trans_route(cx),
            Ask::Decode(visit) => self.on_wqes_fetched(now, visit, cx),
        }
        prefetch::after_read(pf_parts!(self), arrived.then, now, cx);
    }

    /// Receive WQEs arrived: decode them and give them to the transport (the QP's RQ, or the
    /// shared receive queue its ring holds).
    fn on_rq_wqes(&mut self, now: TimePs, r: u32, cx: &mut NicCx<'_>) {
        let wqe_bytes = self.p.nic.wqe_bytes;
        let Some((qpn, first, k)) = self.host.rq_reads.remove(r) else {
            return;
        };
        let qp = self.qps[qpn as usize];
        let srq = self.host.srq_of_ring(qpn);
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
            let wr = RecvWr { wr_id, sgl };
            let posted = match srq {
                Some(srq) => self.dev.post_srq_recv(srq, wr),
                None => self.dev.post_recv(qpn, wr),
            };
            if posted.is_err() {
                self.tx.fetch.stats.post_errors += 1;
            }
        }
        // Requests waiting for these WQEs go on.
        if super::route_rx::on_rq_landed(rx_parts!(self), qpn, k, now, cx.frames) {
            self.qpc_route(now, cx);
        }
        // A SEND may have been waiting for a receive WQE (RNR): let the QP transmit (its
        // ACK goes ahead).
        if self.dev.qp_wants_transmit(qpn) {
            self.tx_enlist_rx(qpn);
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
            if self.tx.rate.on() || self.cc.is_on() || self.tx.engine.order.orders_resends() {
                // The sweep pulls frames from any QP and would pass the rate limiter and
                // slicing execution (a WQE's last packet sent by the sweep would leave its
                // p_wqe in the slicing station for good, and its tenant waiting for it):
                // each QP with something to resend goes through the TX engine's queue
                // instead.
                for q in 0..self.qps.len() as u32 {
                    if self.dev.qp_wants_transmit(q) {
                        self.tx_enlist_rx(q);
                    }
                }
            } else {
                self.tx.engine.sweep = true;
            }
            self.tx_kick(now, cx);
            // Completions in error (retry exceeded) surface through the CQs.
            for q in self.host.cq_core_qpns() {
                self.cq_collect(now, q, cx);
            }
        }
        self.arm_timer(now, cx);
    }
}
