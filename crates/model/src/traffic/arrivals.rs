//! Open-loop flow arrivals: every host starts flows as a Poisson process whose rate makes
//! its offered load `load` of its link (mean flow size × arrivals per second = load × link
//! rate), each to a destination drawn uniformly among the other hosts, with a size drawn
//! from the distribution — the all-to-all workload of flow-completion-time studies (the
//! HPCC paper's traffic generator works the same way).

use rnic_sim::{Rng, TimePs};

use super::cdf::SizeCdf;

/// One flow to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// When it starts, ps.
    pub at_ps: TimePs,
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Bytes to move.
    pub bytes: u64,
}

/// The flows `hosts` hosts (at least 2) start within `span_ps` at `load` (0 to 1) of
/// `link_gbps`, in start order (ties by host), drawn from `rng`. The drawing stops once
/// it holds more than `limit` flows (the caller refuses a workload that large; a tiny flow
/// size over a long span would otherwise draw without bound).
pub fn poisson_all_to_all(
    cdf: &SizeCdf,
    hosts: u32,
    load: f64,
    link_gbps: f64,
    span_ps: TimePs,
    rng: &Rng,
    limit: usize,
) -> Vec<Arrival> {
    assert!(
        hosts >= 2 && load > 0.0 && load <= 1.0,
        "checked by the caller"
    );
    // Mean gap between one host's flows: mean bits over the bits per ps it may offer.
    let mean_gap_ps = cdf.mean_bytes() * 8.0 / (load * link_gbps * 1e-3);
    let mut flows = Vec::new();
    for src in 0..hosts {
        let mut r = rng.fork(0x5000 + src as u64);
        let mut t = 0.0f64;
        loop {
            t += -(1.0 - r.gen_f64()).ln() * mean_gap_ps;
            if t >= span_ps as f64 || flows.len() > limit {
                break;
            }
            let other = r.gen_below(hosts as u64 - 1) as u32;
            flows.push(Arrival {
                at_ps: t as TimePs,
                src,
                dst: if other >= src { other + 1 } else { other },
                bytes: cdf.draw(&mut r),
            });
        }
    }
    flows.sort_by_key(|f| (f.at_ps, f.src));
    flows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn web() -> SizeCdf {
        let path = format!(
            "{}/../../workloads/websearch.cdf",
            env!("CARGO_MANIFEST_DIR")
        );
        SizeCdf::read(std::path::Path::new(&path)).unwrap()
    }

    #[test]
    fn the_offered_load_is_the_target_and_no_host_sends_to_itself() {
        let cdf = web();
        let span_ps: TimePs = 2_000_000_000_000; // 2 s
        let flows = poisson_all_to_all(&cdf, 16, 0.5, 100.0, span_ps, &Rng::new(9), usize::MAX);
        assert!(flows.iter().all(|f| f.src != f.dst && f.dst < 16));
        assert!(flows.windows(2).all(|w| w[0].at_ps <= w[1].at_ps));
        let offered_gbps =
            flows.iter().map(|f| f.bytes as f64 * 8.0).sum::<f64>() / (span_ps as f64 * 1e-3);
        let target = 16.0 * 0.5 * 100.0;
        // WebSearch's heavy tail: 2 s of 16 hosts is ~20,000 flows; within 5 %.
        assert!((offered_gbps / target - 1.0).abs() < 0.05, "{offered_gbps}");
        let to_each: Vec<usize> = (0..16)
            .map(|d| flows.iter().filter(|f| f.dst == d).count())
            .collect();
        let mean = flows.len() as f64 / 16.0;
        assert!(
            to_each.iter().all(|&n| (n as f64 / mean - 1.0).abs() < 0.1),
            "{to_each:?}"
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_flows() {
        let cdf = web();
        let draw =
            |seed| poisson_all_to_all(&cdf, 4, 0.3, 100.0, 10_000_000_000, &Rng::new(seed), 99);
        let (a, b) = (draw(1), draw(1));
        assert_eq!(a, b);
        assert!(!a.is_empty());
    }
}
