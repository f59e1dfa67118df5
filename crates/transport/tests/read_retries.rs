//! How many retries a READ needs under random loss, against the geometric expectation.
//!
//! Every frame (request, response, either direction) is lost independently with
//! probability `p`. A READ retry succeeds when both the retried request and the response
//! at the oldest unacknowledged PSN arrive, so each retry fails with `q = 1 - (1 - p)²`:
//! - a one-packet READ needs `k` or more retries with probability `q^k`, `q / (1 - q)` on
//!   average;
//! - in an `n`-packet READ each later packet is lost first with `p` and then needs a
//!   geometric number of retries, so the mean is `q / (1 - q) + (n - 1) · p / (1 - p)²`.
//!
//! READs are issued one at a time, so every retry counted belongs to the READ in flight
//! (go-back-N over several outstanding READs charges one loss to all of them).

mod common;

use common::*;
use rnic_transport::*;

const PMTU: u32 = 1024;
const READS: u64 = 4000;

/// Retries (go-back-N restarts) each of `READS` READs of `npkts` packets needed.
fn retries_per_read(loss_pct: u64, npkts: u32, seed: u64) -> Vec<u64> {
    let mut p = Pair::new(QpParams {
        max_rd_atomic: 1,
        timeout: 3,
        ..QpParams::default()
    });
    let mut rng = seed;
    p.drop = Box::new(move |_| splitmix(&mut rng) % 100 < loss_pct);
    let len = npkts * PMTU;
    let data = p.b.mem.fill(BASE, len as usize, 1);
    let mut out = Vec::new();
    for i in 0..READS {
        let before = p.a.dev.stats().go_back_n;
        let wr = SendWr::read(i, vec![p.a.sge(BASE + (1 << 20), len)], p.b.remote(BASE));
        p.a.dev.post_send(p.a.qpn, wr).unwrap();
        p.run(1_000_000);
        let c = p.a.completions();
        assert_eq!(c.len(), 1);
        assert_eq!(
            c[0].status,
            WcStatus::Success,
            "READ {i} at {loss_pct} % loss"
        );
        assert!(p.a.mem.get(BASE + (1 << 20), len as usize) == data);
        out.push(p.a.dev.stats().go_back_n - before);
    }
    out
}

fn mean(v: &[u64]) -> f64 {
    v.iter().sum::<u64>() as f64 / v.len() as f64
}

#[test]
fn one_packet_read_retries_are_geometric() {
    for loss_pct in [1u64, 5, 10] {
        let p = loss_pct as f64 / 100.0;
        let q = 1.0 - (1.0 - p) * (1.0 - p);
        let r = retries_per_read(loss_pct, 1, 0x5EED + loss_pct);
        let n = r.len() as f64;
        // Mean of a geometric count: q / (1 - q), variance q / (1 - q)².
        let (want, sd) = (q / (1.0 - q), q.sqrt() / (1.0 - q) / n.sqrt());
        let got = mean(&r);
        eprintln!(
            "1-packet READ, {loss_pct:>2} % loss: {got:.4} retries per READ (geometric {want:.4}), \
             most {}",
            r.iter().max().unwrap()
        );
        assert!((got - want).abs() <= 4.0 * sd, "mean {got} vs {want}");
        // The tail: P(retries >= k) = q^k, within four binomial standard deviations.
        for k in 1..=3 {
            let share = r.iter().filter(|&&x| x >= k).count() as f64 / n;
            let want = q.powi(k as i32);
            let sd = (want * (1.0 - want) / n).sqrt();
            eprintln!("    P(retries >= {k}) = {share:.5} (geometric {want:.5})");
            assert!((share - want).abs() <= 4.0 * sd + 1.0 / n, "k={k}");
        }
    }
}

#[test]
fn multi_packet_read_retries_match_the_expectation() {
    let npkts = 16u32;
    for loss_pct in [1u64, 5, 10] {
        let p = loss_pct as f64 / 100.0;
        let q = 1.0 - (1.0 - p) * (1.0 - p);
        let want = q / (1.0 - q) + f64::from(npkts - 1) * p / ((1.0 - p) * (1.0 - p));
        let r = retries_per_read(loss_pct, npkts, 0xC0DE + loss_pct);
        let got = mean(&r[..(READS / 2) as usize]);
        eprintln!(
            "{npkts}-packet READ, {loss_pct:>2} % loss: {got:.4} retries per READ (expected {want:.4}), \
             most {}",
            r.iter().max().unwrap()
        );
        assert!(
            (got - want).abs() <= 0.15 * want,
            "mean {got} vs {want} at {loss_pct} %"
        );
    }
}
