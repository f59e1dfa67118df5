//! ACK round-trip times: from a request packet that asks for an answer (AckReq set, a READ
//! request or an atomic) to the first packet of the other direction that answers its PSN: an
//! ACK or atomic ACK at or past it (ACKs are cumulative), a READ response at or past it, a
//! NAK past it (a sequence or RNR NAK at PSN n answers everything before n; a fatal NAK at n
//! answers n).
//!
//! Measured where the capture was taken: on the requester's port it is the round trip the
//! requester sees; on the responder's port it is the responder's turnaround.
//!
//! A request sent more than once gives no sample (Karn's rule: which copy was answered is
//! unknown), nor does one without a timestamp (pcapng simple packet blocks).
//!
//! RC headers carry no source QPN, so the answering flow is found by pairing: of the flows
//! from the destination back to the source that carry answers, the one with the same UDP
//! source port (Linux and rnic derive it from both QPNs, so both directions share it), else
//! the only one. When neither rule picks one flow the round trip is not measured, and the
//! report says why.

use super::sequence::psn_diff;
use super::{Flow, FlowKey};
use std::collections::{BTreeMap, VecDeque};

/// Requests waiting for their answer are capped (the oldest give no sample past it), so a
/// flow whose answers were never captured costs bounded memory and time.
const MAX_PENDING: usize = 1 << 16;

/// A request packet of interest to round trips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    pub frame: u64,
    pub time_ns: u64,
    pub psn: u32,
    /// The first time its PSN was seen (false: a retransmission).
    pub first: bool,
    /// It asks for an answer.
    pub answered: bool,
}

/// A packet of the other direction that answers every PSN up to `through_psn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub frame: u64,
    pub time_ns: u64,
    pub through_psn: u32,
}

/// How a flow's answers were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pairing {
    /// Answered by this flow.
    Paired(FlowKey),
    /// No flow back from the destination carries answers.
    NoReverse,
    /// This many flows back carry answers and none shares the UDP source port.
    Ambiguous(usize),
}

/// The answering flow of every flow that carries requests asking for answers.
pub fn pair(flows: &BTreeMap<FlowKey, Flow>) -> BTreeMap<FlowKey, Pairing> {
    let mut out = BTreeMap::new();
    for (key, flow) in flows.iter().filter(|(_, f)| f.has_requests()) {
        let back: Vec<(&FlowKey, &Flow)> = flows
            .iter()
            .filter(|(k, f)| k.src_ip == key.dst_ip && k.dst_ip == key.src_ip && f.has_answers())
            .collect();
        let port = flow.main_udp_src_port();
        let same_port: Vec<&FlowKey> = back
            .iter()
            .filter(|(_, f)| port.is_some() && f.main_udp_src_port() == port)
            .map(|(k, _)| *k)
            .collect();
        let pairing = match (same_port.as_slice(), back.as_slice()) {
            ([one], _) => Pairing::Paired(**one),
            (_, [(one, _)]) => Pairing::Paired(**one),
            (_, []) => Pairing::NoReverse,
            (_, many) => Pairing::Ambiguous(many.len()),
        };
        out.insert(*key, pairing);
    }
    out
}

/// Round-trip samples in microseconds, in capture order, from a flow's requests and the
/// answers of its pair.
pub fn samples_us(requests: &[Sent], answers: &[Answer]) -> Vec<f64> {
    let mut out = Vec::new();
    // (psn, time, still a valid sample)
    let mut pending: VecDeque<(u32, u64, bool)> = VecDeque::new();
    let (mut r, mut a) = (0, 0);
    while r < requests.len() || a < answers.len() {
        let take_request = match (requests.get(r), answers.get(a)) {
            (Some(s), Some(ans)) => s.frame < ans.frame,
            (Some(_), None) => true,
            _ => false,
        };
        if take_request {
            let s = requests[r];
            r += 1;
            if s.first {
                if s.answered {
                    if pending.len() == MAX_PENDING {
                        pending.pop_front();
                    }
                    // In PSN order: a hole filled late goes before the PSNs seen past it.
                    let at = pending.partition_point(|p| psn_diff(p.0, s.psn) < 0);
                    pending.insert(at, (s.psn, s.time_ns, s.time_ns != 0));
                }
            } else {
                for p in pending.iter_mut().filter(|p| p.0 == s.psn) {
                    p.2 = false;
                }
            }
            continue;
        }
        let ans = answers[a];
        a += 1;
        while let Some(&(psn, t, valid)) = pending.front() {
            if psn_diff(ans.through_psn, psn) < 0 {
                break;
            }
            pending.pop_front();
            if valid && ans.time_ns != 0 && ans.time_ns >= t {
                out.push((ans.time_ns - t) as f64 / 1_000.0);
            }
        }
    }
    out
}

/// Summary of round-trip samples, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RttSummary {
    pub samples: u64,
    pub min: f64,
    pub avg: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// Min, mean, nearest-rank p50 and p99, and max; `None` without samples.
pub fn summarize(samples: &[f64]) -> Option<RttSummary> {
    if samples.is_empty() {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = |p: f64| v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    Some(RttSummary {
        samples: v.len() as u64,
        min: v[0],
        avg: v.iter().sum::<f64>() / v.len() as f64,
        p50: rank(50.0),
        p99: rank(99.0),
        max: v[v.len() - 1],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(frame: u64, psn: u32, first: bool) -> Sent {
        Sent {
            frame,
            time_ns: frame * 1_000,
            psn,
            first,
            answered: true,
        }
    }

    fn ack(frame: u64, through_psn: u32) -> Answer {
        Answer {
            frame,
            time_ns: frame * 1_000,
            through_psn,
        }
    }

    #[test]
    fn cumulative_acks_and_karn() {
        // 1 and 2 answered by one ACK at frame 5; 3 retransmitted at 6: no sample for it.
        let req = [
            sent(1, 1, true),
            sent(2, 2, true),
            sent(3, 3, true),
            sent(6, 3, false),
        ];
        let ans = [ack(5, 2), ack(7, 3)];
        assert_eq!(samples_us(&req, &ans), [4.0, 3.0]);
        // A stale ACK answers nothing.
        assert_eq!(
            samples_us(&[sent(4, 10, true)], &[ack(5, 9), ack(8, 10)]),
            [4.0]
        );
    }

    #[test]
    fn percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = summarize(&v).unwrap();
        assert_eq!(
            (s.min, s.p50, s.p99, s.max, s.samples),
            (1.0, 50.0, 99.0, 100.0, 100)
        );
        assert!((s.avg - 50.5).abs() < 1e-9);
        assert_eq!(summarize(&[]), None);
    }
}
