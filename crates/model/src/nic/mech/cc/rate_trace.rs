//! The rate trace (`net.trace_interval_us` with `net.cc = "dcqcn"`): every interval, each
//! QP's reaction-point state — current rate, target rate, α — as a CSV file beside the
//! queue trace (`rnic run`/`rnic perf --json FILE` write FILE-rates.csv).
//!
//! It samples at the queue trace's instants (multiples of the interval from time 0) and,
//! like the queue trace, adds no event: a QP's state is a step function that changes only
//! inside DCQCN's hooks, so each hook first takes the samples due before its time from the
//! state as it stands, and the end of the run takes the rest.

use rnic_sim::TimePs;

/// One QP's reaction point at one sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSample {
    /// The sample's index: it was taken at `index × interval`.
    pub index: u64,
    /// The QP.
    pub qpn: u32,
    /// Its current rate, Mb/s.
    pub rate_mbps: f64,
    /// Its target rate, Mb/s.
    pub target_mbps: f64,
    /// Its α.
    pub alpha: f64,
}

/// The samples one NIC has taken so far.
#[derive(Debug, Clone, PartialEq)]
pub struct RateSampler {
    interval_ps: TimePs,
    /// The next sample's index.
    next: u64,
    samples: Vec<RateSample>,
    /// Most rows it keeps (its NIC's share of [`crate::params::trace::TRACE_ROW_BUDGET`]):
    /// a sample due once they are reached is not taken, nor any after it.
    max_rows: usize,
    /// The first sample not taken for the cap, if one was due.
    cut_at: Option<u64>,
}

impl RateSampler {
    /// A sampler every `interval_ps`, if it is above 0.
    pub fn new(interval_ps: TimePs) -> Option<Self> {
        (interval_ps > 0).then_some(RateSampler {
            interval_ps,
            next: 0,
            samples: Vec::new(),
            max_rows: crate::params::trace::TRACE_ROW_BUDGET,
            cut_at: None,
        })
    }

    /// Keeps at most `max_rows` rows.
    pub fn cap_rows(&mut self, max_rows: usize) {
        self.max_rows = max_rows;
    }

    /// Whether a sample is due before `now`.
    #[inline]
    pub fn due_before(&self, now: TimePs) -> bool {
        self.cut_at.is_none() && self.next.saturating_mul(self.interval_ps) < now
    }

    /// Takes the samples due before `now` (the state has not changed at `now` yet):
    /// `state(t)` gives each QP's (qpn, rate, target, α) at time `t`.
    pub fn take_before<I>(&mut self, now: TimePs, state: impl Fn(TimePs) -> I)
    where
        I: Iterator<Item = (u32, f64, f64, f64)>,
    {
        while self.due_before(now) {
            self.take(&state);
        }
    }

    /// The run ended at `end`: the samples up to it, `end` included.
    pub fn finish<I>(&mut self, end: TimePs, state: impl Fn(TimePs) -> I)
    where
        I: Iterator<Item = (u32, f64, f64, f64)>,
    {
        self.take_before(end, &state);
        if self.cut_at.is_none() && self.next * self.interval_ps == end {
            self.take(&state);
        }
    }

    fn take<I>(&mut self, state: &impl Fn(TimePs) -> I)
    where
        I: Iterator<Item = (u32, f64, f64, f64)>,
    {
        let index = self.next;
        if self.samples.len() >= self.max_rows {
            self.cut_at = Some(index);
            return;
        }
        for (qpn, rate_mbps, target_mbps, alpha) in state(index * self.interval_ps) {
            self.samples.push(RateSample {
                index,
                qpn,
                rate_mbps,
                target_mbps,
                alpha,
            });
        }
        self.next += 1;
    }

    /// The samples taken, in time order, QPs in order within a sample.
    pub fn samples(&self) -> &[RateSample] {
        &self.samples
    }
}

/// The rate trace of a run: every NIC's samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RateTrace {
    /// The sampling interval, ps.
    pub interval_ps: TimePs,
    /// (node, sample), ordered by time, then node, then QP.
    pub rows: Vec<(u32, RateSample)>,
    /// The first sample index not taken: a NIC reached its share of the row budget, and
    /// the trace ends there for every NIC.
    pub cut_at: Option<u64>,
}

impl RateTrace {
    /// The trace of the nodes' samplers (`None`: no node traces).
    pub fn of<'a>(nodes: impl Iterator<Item = Option<&'a RateSampler>>) -> Option<Self> {
        let mut interval_ps = None;
        let mut rows = Vec::new();
        let mut cut_at: Option<u64> = None;
        for (node, s) in nodes.enumerate() {
            let Some(s) = s else { continue };
            interval_ps = Some(s.interval_ps);
            rows.extend(s.samples().iter().map(|&r| (node as u32, r)));
            cut_at = cut_at.into_iter().chain(s.cut_at).min();
        }
        if let Some(end) = cut_at {
            rows.retain(|(_, r)| r.index < end);
        }
        // Each node's samples are in time order: a stable sort by time keeps node, then QP.
        rows.sort_by_key(|&(_, r)| r.index);
        Some(RateTrace {
            interval_ps: interval_ps?,
            rows,
            cut_at,
        })
    }

    /// The CSV file: `time_us,node,qpn,rate_gbps,target_gbps,alpha`, one line per QP with
    /// DCQCN state per sample.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("time_us,node,qpn,rate_gbps,target_gbps,alpha\n");
        for (node, r) in &self.rows {
            let t_us = (r.index * self.interval_ps) as f64 / 1e6;
            out.push_str(&format!(
                "{t_us},{node},{},{},{},{}\n",
                r.qpn,
                r.rate_mbps / 1e3,
                r.target_mbps / 1e3,
                r.alpha
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A QP whose rate is 100 before 25 ps and 50 from then on.
    fn one_qp(t: TimePs) -> std::iter::Once<(u32, f64, f64, f64)> {
        let rate = if t < 25 { 100.0 } else { 50.0 };
        std::iter::once((3, rate, 100.0, 0.5))
    }

    #[test]
    fn samples_before_a_change_see_the_old_state_and_the_end_is_included() {
        assert!(RateSampler::new(0).is_none(), "interval 0: no trace");
        let mut s = RateSampler::new(10).unwrap();
        // A hook at 25 ps takes the samples at 0, 10 and 20.
        s.take_before(25, one_qp);
        s.take_before(25, one_qp);
        assert_eq!(s.samples().len(), 3);
        assert!(
            !s.due_before(30),
            "the sample at 30 waits for time to pass 30"
        );
        s.finish(40, one_qp);
        let rates: Vec<f64> = s.samples().iter().map(|r| r.rate_mbps).collect();
        assert_eq!(rates, vec![100.0, 100.0, 100.0, 50.0, 50.0]);
        let idx: Vec<u64> = s.samples().iter().map(|r| r.index).collect();
        assert_eq!(idx, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn the_csv_orders_rows_by_time_then_node() {
        let mut a = RateSampler::new(1_000_000).unwrap();
        a.finish(1_000_000, one_qp);
        let mut b = RateSampler::new(1_000_000).unwrap();
        b.finish(1_500_000, |_| std::iter::once((7, 25_000.0, 50_000.0, 1.0)));
        let t = RateTrace::of([Some(&a), None, Some(&b)].into_iter()).unwrap();
        assert_eq!(
            t.to_csv(),
            "time_us,node,qpn,rate_gbps,target_gbps,alpha\n\
             0,0,3,0.1,0.1,0.5\n0,2,7,25,50,1\n1,0,3,0.05,0.1,0.5\n1,2,7,25,50,1\n"
        );
        assert!(RateTrace::of([None].into_iter()).is_none());
    }

    #[test]
    fn a_sampler_stops_at_its_rows_and_the_trace_ends_there_for_every_nic() {
        let two_qps = |_| [(1, 10.0, 10.0, 0.0), (2, 20.0, 20.0, 0.0)].into_iter();
        let mut small = RateSampler::new(10).unwrap();
        small.cap_rows(3);
        small.finish(100, two_qps);
        // Samples 0 and 1 fill 4 rows; sample 2 is the first not taken, and no hook asks
        // for more.
        assert_eq!(small.samples().len(), 4);
        assert!(!small.due_before(1000));
        let mut big = RateSampler::new(10).unwrap();
        big.finish(100, one_qp);
        let t = RateTrace::of([Some(&big), Some(&small)].into_iter()).unwrap();
        assert_eq!(t.cut_at, Some(2));
        assert!(t.rows.iter().all(|(_, r)| r.index < 2));
        assert_eq!(t.rows.len(), 2 + 4);
        let whole = RateTrace::of([Some(&big)].into_iter()).unwrap();
        assert_eq!((whole.cut_at, whole.rows.len()), (None, 11));
    }
}
