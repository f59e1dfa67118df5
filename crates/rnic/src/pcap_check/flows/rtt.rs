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
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Requests waiting for their answer are capped (the oldest give no sample past it), so a
/// flow whose answers were never captured costs bounded memory and time.
const MAX_PENDING: usize = 1 << 16;

/// A request packet of interest to round trips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    pub frame: u64,
    /// `None`: the record had no timestamp.
    pub time_ns: Option<u64>,
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
    /// `None`: the record had no timestamp.
    pub time_ns: Option<u64>,
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
    /// The flow back that the rules pick is picked by this many flows: an RC QP answers the
    /// one QP that sends it requests, so which of them it answers is unknown.
    Shared(FlowKey, usize),
}

/// Source and destination IP of a flow.
type Hosts = ([u8; 4], [u8; 4]);
/// How many flows, and the first of them.
type Counted = (usize, FlowKey);

/// The flows that carry answers, indexed by the hosts (and UDP source port) they go between,
/// so each flow with requests finds its pair without scanning every flow.
#[derive(Default)]
struct Answerers {
    /// Per (source IP, destination IP).
    by_hosts: HashMap<Hosts, Counted>,
    /// The same, per main UDP source port.
    by_port: HashMap<(Hosts, u16), Counted>,
}

impl Answerers {
    fn index(flows: &BTreeMap<FlowKey, Flow>) -> Answerers {
        let mut a = Answerers::default();
        for (k, f) in flows.iter().filter(|(_, f)| f.has_answers()) {
            let count = |e: &mut Counted| e.0 += 1;
            count(a.by_hosts.entry((k.src_ip, k.dst_ip)).or_insert((0, *k)));
            if let Some(port) = f.main_udp_src_port() {
                let e = a.by_port.entry(((k.src_ip, k.dst_ip), port));
                count(e.or_insert((0, *k)));
            }
        }
        a
    }

    /// The answering flow of the flow `key` whose main UDP source port is `port`.
    fn pick(&self, key: &FlowKey, port: Option<u16>) -> Pairing {
        let hosts = (key.dst_ip, key.src_ip);
        let same_port = port.and_then(|p| self.by_port.get(&(hosts, p)));
        match (same_port, self.by_hosts.get(&hosts)) {
            (Some(&(1, one)), _) | (_, Some(&(1, one))) => Pairing::Paired(one),
            (_, None) => Pairing::NoReverse,
            (_, Some(&(n, _))) => Pairing::Ambiguous(n),
        }
    }
}

/// The answering flow of every flow that carries requests asking for answers. Linear in the
/// number of flows (a capture may hold hundreds of thousands).
pub fn pair(flows: &BTreeMap<FlowKey, Flow>) -> BTreeMap<FlowKey, Pairing> {
    let answerers = Answerers::index(flows);
    let mut out: BTreeMap<FlowKey, Pairing> = flows
        .iter()
        .filter(|(_, f)| f.has_requests())
        .map(|(k, f)| (*k, answerers.pick(k, f.main_udp_src_port())))
        .collect();
    unshare(&mut out);
    out
}

/// Turns pairings with a flow back that several flows picked into [`Pairing::Shared`]: its
/// answers cannot be told apart (and measuring each flow against all of them would cost
/// flows × answers).
fn unshare(pairing: &mut BTreeMap<FlowKey, Pairing>) {
    let mut picked: HashMap<FlowKey, usize> = HashMap::new();
    for p in pairing.values() {
        if let Pairing::Paired(back) = p {
            *picked.entry(*back).or_default() += 1;
        }
    }
    for p in pairing.values_mut() {
        if let Pairing::Paired(back) = *p {
            let n = picked[&back];
            if n > 1 {
                *p = Pairing::Shared(back, n);
            }
        }
    }
}

/// Round-trip samples in microseconds, in capture order, from a flow's requests and the
/// answers of its pair.
pub fn samples_us(requests: &[Sent], answers: &[Answer]) -> Vec<f64> {
    let mut out = Vec::new();
    // (psn, time, still a valid sample)
    let mut pending: VecDeque<(u32, Option<u64>, bool)> = VecDeque::new();
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
                    pending.insert(at, (s.psn, s.time_ns, true));
                }
            } else {
                spoil(&mut pending, s.psn);
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
            if let (true, Some(sent), Some(back)) = (valid, t, ans.time_ns) {
                if back >= sent {
                    out.push((back - sent) as f64 / 1_000.0);
                }
            }
        }
    }
    out
}

/// Marks the pending request at `psn` as giving no sample (it was sent again). `pending` is in
/// PSN order, so the request is found by bisection: a flow can hold 65,536 pending requests
/// and as many retransmissions.
fn spoil(pending: &mut VecDeque<(u32, Option<u64>, bool)>, psn: u32) {
    let at = pending.partition_point(|p| psn_diff(p.0, psn) < 0);
    for p in pending.range_mut(at..).take_while(|p| p.0 == psn) {
        p.2 = false;
    }
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
            time_ns: Some(frame * 1_000),
            psn,
            first,
            answered: true,
        }
    }

    fn ack(frame: u64, through_psn: u32) -> Answer {
        Answer {
            frame,
            time_ns: Some(frame * 1_000),
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

    /// A flow from `src` to `dst` for QP `qp`: one request asking for an answer, or one answer.
    fn one_way(src: u8, dst: u8, qp: u32, answers: bool) -> (FlowKey, Flow) {
        let key = FlowKey {
            src_ip: [10, 0, 0, src],
            dst_ip: [10, 0, 0, dst],
            dest_qp: qp,
        };
        let mut f = Flow::default();
        if answers {
            f.rtt_answers.push(ack(2, 0));
        } else {
            f.rtt_requests.push(sent(1, 0, true));
        }
        (key, f)
    }

    #[test]
    fn a_flow_back_picked_by_two_flows_answers_neither() {
        let flows: BTreeMap<FlowKey, Flow> = [
            one_way(1, 2, 0x22, false),
            one_way(1, 2, 0x33, false),
            one_way(2, 1, 0x11, true),
            one_way(3, 1, 0x44, false),
            one_way(1, 3, 0x55, true),
        ]
        .into_iter()
        .collect();
        let p = pair(&flows);
        let back = one_way(2, 1, 0x11, true).0;
        assert_eq!(p[&one_way(1, 2, 0x22, false).0], Pairing::Shared(back, 2));
        assert_eq!(p[&one_way(1, 2, 0x33, false).0], Pairing::Shared(back, 2));
        let other = one_way(1, 3, 0x55, true).0;
        assert_eq!(p[&one_way(3, 1, 0x44, false).0], Pairing::Paired(other));
    }

    /// Pairing was flows × flows: 160,000 one-packet flows took minutes.
    #[test]
    fn pairing_is_linear_in_the_flows() {
        let flows: BTreeMap<FlowKey, Flow> = (0..60_000)
            .map(|qp| one_way(1, 2, qp, false))
            .chain([one_way(3, 4, 7, true)])
            .collect();
        let t = std::time::Instant::now();
        let p = pair(&flows);
        assert!(p.values().all(|p| *p == Pairing::NoReverse));
        let took = t.elapsed();
        assert!(took.as_secs_f64() < 2.0, "{took:?}");
    }

    /// Each retransmission scanned every pending request: 65,536 pending and 80,000
    /// retransmissions took seconds.
    #[test]
    fn retransmissions_find_their_pending_request_by_psn() {
        let n = MAX_PENDING as u64;
        let mut req: Vec<Sent> = (0..n).map(|i| sent(i + 1, i as u32, true)).collect();
        req.extend((0..80_000).map(|i| sent(n + 1 + i, (i % 1_000) as u32, false)));
        let t = std::time::Instant::now();
        // PSNs 0..1000 were sent again, the others once.
        let samples = samples_us(&req, &[ack(n + 100_000, n as u32 - 1)]);
        let took = t.elapsed();
        assert_eq!(samples.len() as u64, n - 1_000);
        assert!(took.as_secs_f64() < 0.5, "{took:?}");
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
