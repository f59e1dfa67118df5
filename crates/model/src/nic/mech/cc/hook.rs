//! The hook of congestion control: what the rest of the NIC sees of it.
//!
//! The NIC holds one [`AnyCc`], chosen once in `Nic::new` from `net.cc`: [`NoCc`], whose
//! every hook is a no-op (nothing is paced, no CNP is sent, a received CNP changes
//! nothing), or [`Dcqcn`]. The receive path tells it of CE-marked data and of CNPs, the TX
//! engine asks it before each request frame and tells it what left; its timers are NIC
//! events (`NicEv::Cc`, [`Ev`]), so they are deterministic. Further algorithms (HPCC,
//! TIMELY, Swift) are further kinds of [`AnyCc`] behind the same trait.
//!
//! Why an enum and not a `Box<dyn CongestionControl>`: the TX engine asks it for every
//! request frame; a match over the kinds is a direct call, and with `net.cc = "none"` one
//! predictable branch.

use rnic_sim::TimePs;

pub use super::dcqcn::Dcqcn;
use crate::params::cc::CcParams;

/// The events of congestion control (`NicEv::Cc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ev {
    /// A paced QP may send again: it re-enters the TX engine's queue.
    Wake { qpn: u32 },
    /// A QP's α period ended (`gen`: the timer's generation; a stale one does nothing).
    Alpha { qpn: u32, gen: u32 },
    /// A QP's rate-increase timer fired.
    Increase { qpn: u32, gen: u32 },
    /// A QP's rate-decrease check (`net.dcqcn.rate_decrease_interval_us` above 0).
    Decrease { qpn: u32, gen: u32 },
}

/// Timer events an algorithm asks for: (when, event).
pub type Timers = Vec<(TimePs, Ev)>;

/// Counters of congestion control in one NIC (reported only when it runs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CcStats {
    /// CNPs this NIC sent (notification point).
    pub cnps_sent: u64,
    /// CE-marked data packets that sent no CNP: one went out for their QP in the interval.
    pub cnps_paced: u64,
    /// CNPs this NIC received (reaction point).
    pub cnps_received: u64,
    /// Rate cuts (one per received CNP; with a rate-decrease interval, one per check that
    /// found a CNP since the last).
    pub rate_cuts: u64,
    /// Increase events in fast recovery.
    pub fast_recovery: u64,
    /// Increase events in additive increase.
    pub additive_increases: u64,
    /// Increase events in hyper increase.
    pub hyper_increases: u64,
    /// Times a QP was held back by its rate.
    pub deferrals: u64,
}

/// What the NIC tells congestion control and asks of it.
pub trait CongestionControl {
    /// Whether an algorithm runs.
    fn is_on(&self) -> bool;
    /// Notification point: a CE-marked data packet of local QP `qpn` arrived at `now`.
    /// Returns whether to send a CNP to the QP's peer now.
    fn data_marked(&mut self, qpn: u32, now: TimePs) -> bool;
    /// Reaction point: a CNP for local QP `qpn` arrived at `now`; pushes the timers it arms.
    fn cnp_received(&mut self, qpn: u32, now: TimePs, timers: &mut Timers);
    /// Whether `qpn` may send a request frame at `now`; if not, when it may (`Err`) and
    /// whether the caller must schedule its [`Ev::Wake`] (none pending yet).
    fn may_send(&mut self, qpn: u32, now: TimePs) -> Result<(), (TimePs, bool)>;
    /// A request frame of `qpn`, `wire_bytes` on the wire, left at `now`.
    fn sent(&mut self, qpn: u32, wire_bytes: u64, now: TimePs);
    /// One of its events at `now`; pushes the timers it arms. Returns a QP to put back into
    /// the TX engine's queue.
    fn on_event(&mut self, ev: Ev, now: TimePs, timers: &mut Timers) -> Option<u32>;
}

/// No congestion control.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoCc;

impl CongestionControl for NoCc {
    #[inline]
    fn is_on(&self) -> bool {
        false
    }
    #[inline]
    fn data_marked(&mut self, _qpn: u32, _now: TimePs) -> bool {
        false
    }
    #[inline]
    fn cnp_received(&mut self, _qpn: u32, _now: TimePs, _timers: &mut Timers) {}
    #[inline]
    fn may_send(&mut self, _qpn: u32, _now: TimePs) -> Result<(), (TimePs, bool)> {
        Ok(())
    }
    #[inline]
    fn sent(&mut self, _qpn: u32, _wire_bytes: u64, _now: TimePs) {}
    #[inline]
    fn on_event(&mut self, _ev: Ev, _now: TimePs, _timers: &mut Timers) -> Option<u32> {
        None
    }
}

/// The congestion control of one NIC, chosen once.
#[derive(Debug)]
pub enum AnyCc {
    /// `net.cc = "none"`.
    Off(NoCc),
    /// `net.cc = "dcqcn"`.
    Dcqcn(Box<Dcqcn>),
}

impl AnyCc {
    /// The algorithm `p` selects, on a port of `line_mbps`.
    pub fn new(p: CcParams, line_mbps: u64) -> Self {
        match p {
            CcParams::None => AnyCc::Off(NoCc),
            CcParams::Dcqcn(d) => AnyCc::Dcqcn(Box::new(Dcqcn::new(d, line_mbps as f64))),
        }
    }

    /// Its counters, when an algorithm runs.
    pub fn stats(&self) -> Option<CcStats> {
        match self {
            AnyCc::Off(_) => None,
            AnyCc::Dcqcn(d) => Some(d.stats),
        }
    }

    /// The rate trace, if one is taken, keeps at most `max_rows` rows (this NIC's share
    /// of the budget).
    pub fn cap_trace_rows(&mut self, max_rows: usize) {
        if let AnyCc::Dcqcn(d) = self {
            d.cap_trace_rows(max_rows);
        }
    }

    /// The run ended at `end`: the rate trace, if one is taken, samples up to it.
    pub fn end_trace(&mut self, end: TimePs) {
        if let AnyCc::Dcqcn(d) = self {
            d.end_trace(end);
        }
    }

    /// The rate trace's samples, when DCQCN runs and a trace is asked for.
    pub fn rate_samples(&self) -> Option<&super::rate_trace::RateSampler> {
        match self {
            AnyCc::Off(_) => None,
            AnyCc::Dcqcn(d) => d.rate_samples(),
        }
    }
}

macro_rules! each {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            AnyCc::Off($c) => $e,
            AnyCc::Dcqcn($c) => $e,
        }
    };
}

impl CongestionControl for AnyCc {
    #[inline]
    fn is_on(&self) -> bool {
        each!(self, c => c.is_on())
    }
    #[inline]
    fn data_marked(&mut self, qpn: u32, now: TimePs) -> bool {
        each!(self, c => c.data_marked(qpn, now))
    }
    #[inline]
    fn cnp_received(&mut self, qpn: u32, now: TimePs, timers: &mut Timers) {
        each!(self, c => c.cnp_received(qpn, now, timers))
    }
    #[inline]
    fn may_send(&mut self, qpn: u32, now: TimePs) -> Result<(), (TimePs, bool)> {
        each!(self, c => c.may_send(qpn, now))
    }
    #[inline]
    fn sent(&mut self, qpn: u32, wire_bytes: u64, now: TimePs) {
        each!(self, c => c.sent(qpn, wire_bytes, now))
    }
    #[inline]
    fn on_event(&mut self, ev: Ev, now: TimePs, timers: &mut Timers) -> Option<u32> {
        each!(self, c => c.on_event(ev, now, timers))
    }
}

impl crate::stats::Report for AnyCc {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        if let Some(s) = self.stats() {
            reg.record(prefix, &s);
        }
    }
}
