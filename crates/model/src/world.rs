//! The simulated world: nodes (host memory, the transport's `Device`, the NIC model), the
//! network, the application, the event queue — and the glue every unit shares: QPC and
//! translation dispatch, DMA to the context backing store, frames onto the wire, timers.

use std::fs::File;
use std::io::BufWriter;

use rnic_host::SparseMemory;
use rnic_sim::{EventQueue, TimePs};
use rnic_transport::{Device, RecvWr};
use rnic_wire::PcapWriter;

use super::event::{Ev, FramePool};
use super::host::driver::decode_rq_wqe;
use super::host::perftest::Perftest;
use super::net::topology::{frame_dst_node, Star};
use super::nic::latency_hiding::PREFETCH_INDEX;
use super::nic::qpc_manager::{Channel, QpcAction};
use super::nic::wqe_fetch::TX_JOB_INDEX;
use super::nic::{DmaToken, Nic, TransCont};
use super::params::{ModelParams, Placement};

/// One node: host memory, the protocol state, the NIC timing model.
pub struct Node {
    /// Host memory (real bytes).
    pub mem: SparseMemory,
    /// The transport: the protocol truth of this RNIC.
    pub dev: Device,
    /// The NIC microarchitecture.
    pub nic: Nic,
    /// Time of the earliest pending `Timer` event.
    pub timer_at: TimePs,
}

/// Test hooks (used by tests to prove that checks can fail).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hooks {
    /// Flip one payload byte of the n-th payload-carrying frame in the switch (and fix
    /// up the ICRC, so the corruption is invisible to the transport).
    pub corrupt_data_frame: Option<u64>,
}

/// The world.
pub struct World {
    /// Parameters.
    pub p: ModelParams,
    /// Pending events.
    pub q: EventQueue<Ev>,
    /// Nodes: 0 is the server, 1..=N the clients.
    pub nodes: Vec<Node>,
    /// The network.
    pub net: Star,
    /// Frames in flight.
    pub frames: FramePool,
    /// The application.
    pub app: Perftest,
    /// Capture of the server port.
    pub pcap: Option<PcapWriter<BufWriter<File>>>,
    /// Events processed.
    pub events: u64,
    /// Test hooks.
    pub hooks: Hooks,
    /// Data frames seen by the switch (for the corruption hook).
    pub data_frames_seen: u64,
    /// Scratch buffers (reused).
    pub scratch_qpns: Vec<u32>,
    scratch_dma: Vec<(u32, TimePs)>,
    /// First error writing the pcap.
    pub pcap_error: Option<String>,
    /// Payload bytes checked by the end-to-end oracle as they were placed.
    pub payload_checked: u64,
    /// Placed payloads that differed from their source.
    pub payload_mismatches: u64,
    /// The first of them.
    pub first_mismatch: Option<String>,
    pub(crate) scratch_bytes: Vec<u8>,
}

impl World {
    /// Assembles a world.
    pub fn new(p: ModelParams, nodes: Vec<Node>, net: Star, app: Perftest) -> World {
        World {
            p,
            q: EventQueue::new(),
            nodes,
            net,
            frames: FramePool::default(),
            app,
            pcap: None,
            events: 0,
            hooks: Hooks::default(),
            data_frames_seen: 0,
            scratch_qpns: Vec::new(),
            scratch_dma: Vec::new(),
            pcap_error: None,
            payload_checked: 0,
            payload_mismatches: 0,
            first_mismatch: None,
            scratch_bytes: Vec::new(),
        }
    }

    /// Processes events up to `until` (inclusive) or until none are left or `max_events`.
    /// Returns the time of the last event processed.
    pub fn run_until(&mut self, until: TimePs, max_events: u64) -> TimePs {
        let mut last = 0;
        while let Some((t, ev)) = self.q.pop_at_or_before(until) {
            last = t;
            self.events += 1;
            self.dispatch(t, ev);
            if self.events >= max_events || self.app.finished {
                break;
            }
        }
        last
    }

    fn dispatch(&mut self, now: TimePs, ev: Ev) {
        match ev {
            Ev::AppFill { node, core } => self.app_on_fill(node as usize, now, core),
            Ev::HostMmio { node, qpn, pi } => self.on_host_mmio(node as usize, now, qpn, pi, false),
            Ev::HostMmioRq { node, qpn, pi } => {
                self.on_host_mmio(node as usize, now, qpn, pi, true)
            }
            Ev::Doorbell { node, qpn, pi } => self.on_doorbell(node as usize, now, qpn, pi),
            Ev::DoorbellRq { node, qpn, pi } => self.on_doorbell_rq(node as usize, now, qpn, pi),
            Ev::Sched { node } => self.on_sched(node as usize, now),
            Ev::DmaArrive { node, slot } => self.on_dma_arrive(node as usize, now, slot),
            Ev::DmaDone { node, slot } => self.on_dma_done(node as usize, now, slot),
            Ev::TxJobReady { node, job } => self.on_tx_job_ready(node as usize, now, job),
            Ev::TxPost { node, job } => self.on_tx_post(node as usize, now, job),
            Ev::TxWake { node } => self.on_tx_wake(node as usize, now),
            Ev::SwitchIn { frame } => self.on_switch_in(now, frame),
            Ev::RxArrive { node, frame } => self.on_rx_arrive(node as usize, now, frame),
            Ev::RxHandle { node, frame } => self.on_rx_handle(node as usize, now, frame),
            Ev::Landed { node, qpn } => self.app_on_landed(node as usize, now, qpn),
            Ev::CqeLanded { node, cq } => self.app_on_cqe(node as usize, now, cq),
            Ev::Timer { node } => self.on_timer(node as usize, now),
            Ev::WindowOpen => self.app.window_pcie_busy[0] = Some(self.server_pcie_busy()),
            Ev::End => {
                self.app.window_pcie_busy[1] = Some(self.server_pcie_busy());
                self.app.finished = true;
            }
        }
    }

    // ---- QPC manager and translation dispatch -------------------------------------------

    /// Lets the QPC manager serve what it can and routes its outputs.
    pub(crate) fn qpc_pump(&mut self, n: usize, now: TimePs) {
        let nic = &mut self.nodes[n].nic;
        nic.qpc.pump(now, &mut nic.qpc_out);
        self.qpc_route(n, now);
    }

    fn qpc_route(&mut self, n: usize, now: TimePs) {
        let entry = self.p.nic.qpc_entry_bytes;
        let placement = self.p.nic.placement;
        let mut actions = std::mem::take(&mut self.nodes[n].nic.qpc_out.actions);
        let mut responses = std::mem::take(&mut self.nodes[n].nic.qpc_out.responses);
        for a in actions.drain(..) {
            match a {
                QpcAction::Fetch { qpn, at } => self.ctx_read(n, at, entry, DmaToken::QpcFill(qpn)),
                QpcAction::WriteBack { at, .. } => {
                    let nic = &mut self.nodes[n].nic;
                    match placement {
                        Placement::Host => {
                            nic.pcie.posted_write(at, entry);
                        }
                        Placement::Ddr => {
                            nic.ddr.write(at, entry);
                        }
                    }
                }
            }
        }
        for r in responses.drain(..) {
            match r.req.channel {
                // A latency-hiding prefetch: the context is cached now, nobody waits.
                Channel::Descriptor if r.req.index & PREFETCH_INDEX != 0 => {}
                Channel::Descriptor => self.wqe_fetch_issue(n, r.req.index, r.ready_at),
                Channel::Requester if r.req.index & TX_JOB_INDEX != 0 => self.q.push(
                    r.ready_at,
                    Ev::TxPost {
                        node: n as u32,
                        job: r.req.index & !TX_JOB_INDEX,
                    },
                ),
                Channel::Requester | Channel::Responder => {
                    self.rx_after_qpc(n, r.req.index, r.ready_at)
                }
            }
        }
        let out = &mut self.nodes[n].nic.qpc_out;
        out.actions = actions;
        out.responses = responses;
        self.sched_kick(n, now);
    }

    /// Lets the translation unit work and routes its outputs.
    pub(crate) fn trans_pump(&mut self, n: usize) {
        let nic = &mut self.nodes[n].nic;
        nic.trans.pump(&mut nic.trans_done, &mut nic.trans_fetch);
        self.trans_route(n);
    }

    fn trans_route(&mut self, n: usize) {
        let mut fetch = std::mem::take(&mut self.nodes[n].nic.trans_fetch);
        let mut done = std::mem::take(&mut self.nodes[n].nic.trans_done);
        for f in fetch.drain(..) {
            let bytes = self.nodes[n].nic.trans.entry_bytes(f.mpt);
            self.ctx_read(n, f.at, bytes, DmaToken::TransFill(f.lane));
        }
        for (c, t) in done.drain(..) {
            match c {
                TransCont::TxJob(job) => self.tx_job_translated(n, job, t),
                TransCont::Rx(frame) => self.q.push(
                    t,
                    Ev::RxHandle {
                        node: n as u32,
                        frame,
                    },
                ),
            }
        }
        let nic = &mut self.nodes[n].nic;
        nic.trans_fetch = fetch;
        nic.trans_done = done;
    }

    // ---- DMA ---------------------------------------------------------------------------

    /// Reads `len` bytes of host memory (over PCIe) from `at`; `token` says what follows.
    pub(crate) fn host_read(&mut self, n: usize, at: TimePs, len: u64, token: DmaToken) {
        let nic = &mut self.nodes[n].nic;
        if let Some((slot, first)) = nic.dma.read(at, len, token, &mut nic.pcie) {
            self.q.push(
                first,
                Ev::DmaArrive {
                    node: n as u32,
                    slot,
                },
            );
        }
    }

    /// Reads a QPC/MPT/MTT entry from its backing store (host memory or on-board DDR).
    pub(crate) fn ctx_read(&mut self, n: usize, at: TimePs, len: u64, token: DmaToken) {
        match self.p.nic.placement {
            Placement::Host => self.host_read(n, at, len, token),
            Placement::Ddr => {
                let nic = &mut self.nodes[n].nic;
                let (slot, done) = nic.dma.read_ddr(at, len, token, &mut nic.ddr);
                self.q.push(
                    done,
                    Ev::DmaDone {
                        node: n as u32,
                        slot,
                    },
                );
            }
        }
    }

    fn on_dma_arrive(&mut self, n: usize, now: TimePs, slot: u32) {
        let nic = &mut self.nodes[n].nic;
        let done = nic.dma.arrive(slot, now, &mut nic.pcie);
        self.q.push(
            done,
            Ev::DmaDone {
                node: n as u32,
                slot,
            },
        );
    }

    fn on_dma_done(&mut self, n: usize, now: TimePs, slot: u32) {
        let nic = &mut self.nodes[n].nic;
        let Some(token) = nic.dma.complete(slot) else {
            return;
        };
        let mut started = std::mem::take(&mut self.scratch_dma);
        nic.dma.issue_waiting(now, &mut nic.pcie, &mut started);
        for &(s, first) in &started {
            self.q.push(
                first,
                Ev::DmaArrive {
                    node: n as u32,
                    slot: s,
                },
            );
        }
        started.clear();
        self.scratch_dma = started;
        match token {
            DmaToken::QpcFill(qpn) => {
                let nic = &mut self.nodes[n].nic;
                nic.qpc.on_fill(now, qpn, &mut nic.qpc_out);
                self.qpc_route(n, now);
            }
            DmaToken::TransFill(lane) => {
                let nic = &mut self.nodes[n].nic;
                nic.trans
                    .on_fill(lane, now, &mut nic.trans_done, &mut nic.trans_fetch);
                self.trans_route(n);
            }
            DmaToken::Wqe(visit) => self.on_wqes_fetched(n, now, visit),
            DmaToken::Payload(job) => self.on_tx_job_ready(n, now, job),
            DmaToken::RqWqe(r) => self.on_rq_wqes(n, now, r),
            DmaToken::ReadResp(qpn) => {
                self.nodes[n].nic.tx_enlist(qpn);
                self.tx_kick(n, now);
            }
        }
    }

    /// Receive WQEs arrived: decode them and give them to the transport.
    fn on_rq_wqes(&mut self, n: usize, now: TimePs, r: u32) {
        let wqe_bytes = self.p.nic.wqe_bytes;
        let node = &mut self.nodes[n];
        let Some((qpn, first, k)) = node.nic.rq_reads.remove(r) else {
            return;
        };
        let qp = node.nic.qps[qpn as usize];
        let mut buf = [0u8; 64];
        for i in 0..k {
            let idx = first.wrapping_add(i) & qp.rq_mask;
            rnic_transport::Memory::read(
                &node.mem,
                qp.rq_base + u64::from(idx) * wqe_bytes,
                &mut buf,
            );
            let (wr_id, sge) = decode_rq_wqe(&buf);
            let sgl = if sge.len > 0 { vec![sge] } else { Vec::new() };
            if node.dev.post_recv(qpn, RecvWr { wr_id, sgl }).is_err() {
                node.nic.fetch.stats.post_errors += 1;
            }
        }
        // A SEND may have been waiting for a receive WQE (RNR): let the QP transmit.
        if node.dev.qp_wants_transmit(qpn) {
            node.nic.tx_enlist(qpn);
            self.tx_kick(n, now);
        }
    }

    // ---- network -----------------------------------------------------------------------

    /// Frame `frame` is handed to node `n`'s port at `at`.
    pub(crate) fn net_send(&mut self, n: usize, frame: u32, at: TimePs) {
        let len = self.frames.get(frame).len();
        let (start, end) = self.net.nic_ports[n].send(at, len);
        if n == 0 {
            self.pcap_frame(start, frame);
        }
        let arrive = self.net.link.arrive(end);
        let verdict = self.net.up_impair[n].as_mut().map(|e| e.judge());
        match verdict {
            Some(v) if v.drop => self.frames.release(frame),
            Some(v) => {
                self.q.push(arrive + v.delay_ps, Ev::SwitchIn { frame });
                if v.dup {
                    let d = self.frames.duplicate(frame);
                    self.q.push(
                        arrive + v.delay_ps + v.dup_delay_ps,
                        Ev::SwitchIn { frame: d },
                    );
                }
            }
            None => self.q.push(arrive, Ev::SwitchIn { frame }),
        }
    }

    fn on_switch_in(&mut self, now: TimePs, frame: u32) {
        let Some(dst) = frame_dst_node(self.frames.get(frame)).filter(|&d| d < self.nodes.len())
        else {
            self.frames.release(frame);
            return;
        };
        self.maybe_corrupt(frame);
        let len = self.frames.get(frame).len();
        let Some((_, end)) = self.net.switch.forward(now, dst, len) else {
            self.frames.release(frame);
            return;
        };
        let arrive = self.net.link.arrive(end);
        let verdict = self.net.down_impair[dst].as_mut().map(|e| e.judge());
        let node = dst as u32;
        match verdict {
            Some(v) if v.drop => self.frames.release(frame),
            Some(v) => {
                self.q
                    .push(arrive + v.delay_ps, Ev::RxArrive { node, frame });
                if v.dup {
                    let d = self.frames.duplicate(frame);
                    self.q.push(
                        arrive + v.delay_ps + v.dup_delay_ps,
                        Ev::RxArrive { node, frame: d },
                    );
                }
            }
            None => self.q.push(arrive, Ev::RxArrive { node, frame }),
        }
    }

    fn maybe_corrupt(&mut self, frame: u32) {
        let Some(target) = self.hooks.corrupt_data_frame else {
            return;
        };
        let bytes = self.frames.get(frame);
        let Ok(bth) = rnic_wire::peek_bth(bytes) else {
            return;
        };
        if !bth.opcode.has_payload() {
            return;
        }
        let plen = super::nic::rx_pipeline::payload_len(bytes, bth.opcode, bth.pad_count);
        if plen == 0 {
            return;
        }
        self.data_frames_seen += 1;
        if self.data_frames_seen != target {
            return;
        }
        let off = rnic_wire::BTH_OFFSET + 12 + bth.opcode.ext_headers_len();
        let buf = self.frames.buf_mut(frame);
        buf[off] ^= 0x5a;
        if let Ok(c) = rnic_wire::icrc::compute(buf) {
            let l = buf.len();
            buf[l - 4..].copy_from_slice(&c.to_le_bytes());
        }
    }

    /// Writes a frame of node 0's port into the capture.
    pub(crate) fn pcap_frame(&mut self, t: TimePs, frame: u32) {
        if let Some(w) = self.pcap.as_mut() {
            if let Err(e) = w.write_packet(t, self.frames.get(frame)) {
                self.pcap_error.get_or_insert_with(|| e.to_string());
            }
        }
    }

    // ---- timers ------------------------------------------------------------------------

    /// Schedules a `Timer` for the transport's earliest deadline, if it is new.
    pub(crate) fn arm_timer(&mut self, n: usize, now: TimePs) {
        let node = &mut self.nodes[n];
        if let Some(d) = node.dev.poll_timeout() {
            let d = d.max(now);
            if d < node.timer_at {
                node.timer_at = d;
                self.q.push(d, Ev::Timer { node: n as u32 });
            }
        }
    }

    fn on_timer(&mut self, n: usize, now: TimePs) {
        let node = &mut self.nodes[n];
        if node.timer_at <= now {
            node.timer_at = TimePs::MAX;
        }
        if node.dev.poll_timeout().is_some_and(|d| d <= now) {
            node.dev.handle_timeout(now);
            node.nic.tx.sweep = true;
            self.tx_kick(n, now);
            // Completions in error (retry exceeded) surface through the CQs.
            let qpns: Vec<u32> = self.nodes[n].nic.cq_core_qpns();
            for q in qpns {
                self.cq_collect(n, now, q);
            }
        }
        self.arm_timer(n, now);
    }
}
