//! The text table of a run of flows: one line per flow and a total line.

use super::RunStatus;
use rnic_model::flow_result::FlowsResult;
use std::fmt::Write as _;

/// The table: per flow its test, class, tenant, size, QPs, operations, rate, goodput,
/// latency percentiles (µs), retransmissions, verified bytes and status; then the total.
pub fn render(r: &FlowsResult) -> String {
    let mut s = String::new();
    let w = r
        .flows
        .iter()
        .map(|f| f.name.len())
        .max()
        .unwrap_or(4)
        .max(5);
    let rule = "-".repeat(w + 140);
    let _ = writeln!(s, "{rule}");
    let _ = writeln!(
        s,
        "{:<w$} {:<10} {:>5} {:>6} {:>9} {:>5} {:>10} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>13}  status",
        "flow",
        "test",
        "class",
        "tenant",
        "size[B]",
        "QPs",
        "ops",
        "time[us]",
        "Mops",
        "Gbit/s",
        "p50[us]",
        "p99[us]",
        "max[us]",
        "retx",
        "verified[B]",
    );
    for f in &r.flows {
        let _ = writeln!(
            s,
            "{:<w$} {:<10} {:>5} {:>6} {:>9} {:>5} {:>10} {:>11.3} {:>9.4} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>6} {:>13}  {}",
            f.name,
            f.test,
            f.class,
            f.tenant,
            // A size mix shows its largest size.
            match f.size_mix {
                Some(_) => format!("<={}", f.size_bytes),
                None => f.size_bytes.to_string(),
            },
            f.qps,
            f.ops_completed,
            f.measured_us,
            f.msg_rate_mops,
            f.goodput_gbps,
            f.latency_us.p50,
            f.latency_us.p99,
            f.latency_us.max,
            f.retransmissions,
            f.verified_bytes,
            f.status
        );
    }
    let t = &r.total;
    let _ = writeln!(
        s,
        "{:<w$} {:<10} {:>5} {:>6} {:>9} {:>5} {:>10} {:>11.3} {:>9.4} {:>9.3} {:>9} {:>9} {:>9} {:>6} {:>13}  {}",
        "total",
        "",
        "",
        "",
        "",
        r.flows.iter().map(|f| f.qps).sum::<u32>(),
        t.ops_completed,
        t.measured_us,
        t.msg_rate_mops,
        t.goodput_gbps,
        "",
        "",
        "",
        t.retransmissions,
        t.verified_bytes,
        r.status
    );
    let _ = writeln!(s, "{rule}");
    s
}

/// The one-line summary for standard error.
pub fn summary(r: &FlowsResult) -> String {
    let verified = r.flows.iter().filter(|f| f.bytes_verified).count();
    let n = r.flows.len();
    let mut s = format!(
        "rnic: {n} flow{}, {} with every byte verified ({} B), {:.3} µs simulated, \
         {} events, seed {}, status {}",
        if n == 1 { "" } else { "s" },
        if n == 1 && verified == 1 {
            "it".to_string()
        } else {
            format!("{verified} of them")
        },
        r.total.verified_bytes,
        r.simulated_time_us,
        r.events,
        r.seed,
        r.status
    );
    if r.status != RunStatus::Ok {
        let _ = write!(s, ": {}", r.reason);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rnic_model::flow_result::FlowResult;

    #[test]
    fn the_summary_counts_flows_in_words_that_agree() {
        let verified = FlowResult {
            bytes_verified: true,
            ..FlowResult::default()
        };
        let mut r = FlowsResult {
            flows: vec![verified.clone()],
            ..FlowsResult::default()
        };
        assert!(summary(&r).starts_with("rnic: 1 flow, it with every byte verified"));
        r.flows.push(verified);
        assert!(summary(&r).starts_with("rnic: 2 flows, 2 of them with every byte verified"));
        r.flows.truncate(1);
        r.flows[0].bytes_verified = false;
        assert!(summary(&r).starts_with("rnic: 1 flow, 0 of them with every byte verified"));
    }
}
