//! DCQCN's notification point (the DCQCN paper, §3.2 "NP algorithm"): a receiving NIC
//! answers CE-marked data of a QP with a CNP to the sender's QP, at most one per QP per
//! interval, however many marked packets arrive in it.

use rnic_sim::TimePs;

/// The CNP pacing of one NIC's QPs.
#[derive(Debug, Default)]
pub struct CnpPacer {
    /// Per local QPN, when its last CNP went out.
    last_ps: Vec<Option<TimePs>>,
    interval_ps: TimePs,
}

impl CnpPacer {
    /// At most one CNP per QP in `interval_ps`.
    pub fn new(interval_ps: TimePs) -> Self {
        CnpPacer {
            last_ps: Vec::new(),
            interval_ps,
        }
    }

    /// A CE-marked data packet of local QP `qpn` arrived at `now`: whether a CNP goes out
    /// for it (none went in the last interval).
    pub fn marked(&mut self, qpn: u32, now: TimePs) -> bool {
        let i = qpn as usize;
        crate::per_qp::grow_for(&mut self.last_ps, i, || None);
        let due = self.last_ps[i].is_none_or(|t| now >= t.saturating_add(self.interval_ps));
        if due {
            self.last_ps[i] = Some(now);
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_cnp_per_qp_per_interval() {
        let mut p = CnpPacer::new(50_000_000);
        assert!(p.marked(3, 0));
        assert!(!p.marked(3, 49_999_999));
        assert!(p.marked(4, 10), "each QP is paced on its own");
        assert!(p.marked(3, 50_000_000));
    }

    proptest! {
        /// For any arrival times of marked packets, the CNPs of a QP are at least one
        /// interval apart, and a marked packet an interval after the last CNP gets one.
        #[test]
        fn cnps_are_an_interval_apart(
            mut times in proptest::collection::vec(0u64..1_000_000, 1..300),
            interval in 1u64..100_000,
        ) {
            times.sort_unstable();
            let mut p = CnpPacer::new(interval);
            let mut last: Option<u64> = None;
            for t in times {
                let sent = p.marked(0, t);
                let due = last.is_none_or(|l| t >= l + interval);
                prop_assert_eq!(sent, due);
                if sent {
                    last = Some(t);
                }
            }
        }
    }
}
