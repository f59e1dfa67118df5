//! A reference first-come-first-served QPC manager for the property tests: csRNA §3
//! (Fig. 2) as a clock-free state machine behind the same [`QpcManager`] interface as the
//! non-blocking manager, so the two can be compared call for call. The model runs the timed
//! FCFS manager (`nic/qpc_manager/fcfs.rs`); this one exists only as the tests' oracle. With the
//! sans-IO interface as the non-blocking manager so the two can be swapped.
//!
//! Requests leave the channel arbiter in one order and are served strictly in that order. A
//! miss posts a DMA read and the manager then waits for it: every later request — hits on
//! other QPs included — stays in the request FIFOs until the context returns (head-of-line
//! blocking; in Fig. 2 QP6 misses and QP5 and QP4, both cached, wait behind it). Its
//! requesters keep their waiting information in FIFOs, which only works because responses
//! come back in request order (see [`FcfsRequester`](super::FcfsRequester)).

use rnic_model::nic::mech::csrna::ChannelArbiter;
use rnic_model::nic::mech::csrna::{
    DmaReturnError, ManagerError, ManagerStats, QpcManager, QpcManagerConfig, QpcRequest,
    QpcResponse, QpcStore, ServedBy, StepOutput, SubmitError,
};

/// The FCFS QPC manager.
#[derive(Debug, Clone)]
pub struct FcfsQpcManager {
    arbiter: ChannelArbiter,
    /// The missed request the manager is blocked on, with its sequence number.
    blocked_on: Option<(QpcRequest, u64)>,
    /// The read of `blocked_on` has been reported complete.
    dma_back: bool,
    stats: ManagerStats,
}

impl FcfsQpcManager {
    /// A manager for `cfg` (the request FIFOs are `cfg.req_fifo_depth()` deep).
    pub fn new(cfg: QpcManagerConfig) -> Self {
        FcfsQpcManager {
            arbiter: ChannelArbiter::new(cfg),
            blocked_on: None,
            dma_back: false,
            stats: ManagerStats::default(),
        }
    }

    fn respond(
        &mut self,
        req: QpcRequest,
        seq: u64,
        served_by: ServedBy,
    ) -> Result<StepOutput, ManagerError> {
        if !self.arbiter.complete(req.channel, req.index) {
            return Err(ManagerError::Invariant(format!(
                "answering {:?} index {} which is not outstanding",
                req.channel, req.index
            )));
        }
        self.stats.responses += 1;
        Ok(StepOutput::Response(QpcResponse {
            qpn: req.qpn,
            channel: req.channel,
            index: req.index,
            write: req.write,
            seq,
            served_by,
        }))
    }
}

impl QpcManager for FcfsQpcManager {
    fn submit(&mut self, req: QpcRequest) -> Result<(), SubmitError> {
        match self.arbiter.submit(req) {
            Ok(()) => {
                self.stats.submitted += 1;
                Ok(())
            }
            Err(e) => {
                if e == SubmitError::Backpressure {
                    self.stats.backpressured += 1;
                }
                Err(e)
            }
        }
    }

    fn step(&mut self, store: &mut dyn QpcStore) -> Result<StepOutput, ManagerError> {
        if let Some((req, seq)) = self.blocked_on {
            if !self.dma_back {
                self.stats.idle_steps += 1;
                return Ok(StepOutput::Idle);
            }
            self.blocked_on = None;
            self.dma_back = false;
            self.stats.dma_returned += 1;
            return self.respond(req, seq, ServedBy::DmaReturn);
        }
        let Some((req, seq)) = self.arbiter.arbitrate() else {
            self.stats.idle_steps += 1;
            return Ok(StepOutput::Idle);
        };
        if store.lookup(req.qpn) {
            self.stats.request_hits += 1;
            self.respond(req, seq, ServedBy::RequestHit)
        } else {
            self.stats.request_misses += 1;
            self.stats.dma_posted += 1;
            self.blocked_on = Some((req, seq));
            Ok(StepOutput::PostDma { qpn: req.qpn })
        }
    }

    fn dma_returned(&mut self, qpn: u32) -> Result<(), DmaReturnError> {
        match self.blocked_on {
            Some((req, _)) if !self.dma_back => {
                if req.qpn == qpn {
                    self.dma_back = true;
                    Ok(())
                } else {
                    Err(DmaReturnError::OutOfOrder {
                        qpn,
                        expected: req.qpn,
                    })
                }
            }
            _ => Err(DmaReturnError::NoneOutstanding { qpn }),
        }
    }

    fn has_work(&self) -> bool {
        match self.blocked_on {
            Some(_) => self.dma_back,
            None => self.arbiter.has_queued(),
        }
    }

    fn in_flight(&self) -> usize {
        self.arbiter.outstanding()
    }

    fn dma_outstanding(&self) -> usize {
        usize::from(self.blocked_on.is_some() && !self.dma_back)
    }

    fn stats(&self) -> &ManagerStats {
        &self.stats
    }
}
