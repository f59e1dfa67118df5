//! The text table of a run of flows: one line per flow and a total line.

use super::RunStatus;
use rnic_model::flow_result::{FlowResult, FlowsResult};
use rnic_model::words::counted;
use std::fmt::Write as _;

/// The table's columns: heading, least width and whether the text is left-aligned. A
/// column widens to its longest cell, so a flow that starts an hour in (3.5e9 µs) or a name
/// longer than the heading keeps every column aligned.
const COLUMNS: [(&str, usize, bool); 15] = [
    ("flow", 5, true),
    ("test", 10, true),
    ("class", 5, false),
    ("tenant", 6, false),
    ("size[B]", 9, false),
    ("QPs", 5, false),
    ("ops", 10, false),
    ("time[us]", 11, false),
    ("Mops", 9, false),
    ("Gbit/s", 9, false),
    ("p50[us]", 9, false),
    ("p99[us]", 9, false),
    ("max[us]", 9, false),
    ("retx", 6, false),
    ("verified[B]", 13, false),
];

/// The table: per flow its test, class, tenant, size, QPs, operations, rate, goodput,
/// latency percentiles (µs), retransmissions, verified bytes and status; then the total.
///
/// A `[workload]` starts a flow per arrival, thousands in a fabric run, and each of them is
/// in the FCT summary (and, with `--json FILE`, a line of `FILE-fct.csv`): unless
/// `all_flows`, its flows that ended `ok` are one row, `workload`, so the table keeps to the
/// `[[flow]]`s and to any workload flow that did not end `ok`.
pub fn render(r: &FlowsResult, all_flows: bool) -> String {
    let folded = folded_flows(r, all_flows);
    let mut rows: Vec<(Vec<String>, String)> = r
        .flows
        .iter()
        .enumerate()
        .filter(|(i, _)| !folded.contains(i))
        .map(|(_, f)| {
            let cells = vec![
                f.name.clone(),
                f.test.clone(),
                f.class.clone(),
                f.tenant.to_string(),
                // A size mix shows its largest size.
                match f.size_mix {
                    Some(_) => format!("<={}", f.size_bytes),
                    None => f.size_bytes.to_string(),
                },
                f.qps.to_string(),
                f.ops_completed.to_string(),
                format!("{:.3}", f.measured_us),
                format!("{:.4}", f.msg_rate_mops),
                format!("{:.3}", f.goodput_gbps),
                format!("{:.3}", f.latency_us.p50),
                format!("{:.3}", f.latency_us.p99),
                format!("{:.3}", f.latency_us.max),
                f.retransmissions.to_string(),
                f.verified_bytes.to_string(),
            ];
            // A window that cannot stand for its flow is marked where the eye reads the
            // row's verdict; the note below the table gives the rate over the run.
            let status = match f.long_run {
                Some(_) => format!("{} (window not settled, see below)", f.status),
                None => f.status.to_string(),
            };
            (cells, status)
        })
        .collect();
    if let Some(row) = workload_row(r, &folded) {
        rows.push(row);
    }
    let t = &r.total;
    let total = vec![
        "total".to_string(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        r.flows.iter().map(|f| f.qps).sum::<u32>().to_string(),
        t.ops_completed.to_string(),
        format!("{:.3}", t.measured_us),
        format!("{:.4}", t.msg_rate_mops),
        format!("{:.3}", t.goodput_gbps),
        String::new(),
        String::new(),
        String::new(),
        t.retransmissions.to_string(),
        t.verified_bytes.to_string(),
    ];
    rows.push((total, r.status.to_string()));
    let heading: Vec<String> = COLUMNS.iter().map(|c| c.0.to_string()).collect();
    let widths: Vec<usize> = COLUMNS
        .iter()
        .enumerate()
        .map(|(i, &(_, least, _))| {
            rows.iter()
                .map(|(cells, _)| cells[i].chars().count())
                .fold(least, usize::max)
        })
        .collect();
    let rule = "-".repeat(widths.iter().sum::<usize>() + widths.len() - 1 + "status".len());
    let mut s = String::new();
    let _ = writeln!(s, "{rule}");
    write_row(&mut s, &heading, &widths, "status");
    for (cells, status) in &rows {
        write_row(&mut s, cells, &widths, status);
    }
    let _ = writeln!(s, "{rule}");
    for f in &r.flows {
        if let Some(note) = window_note(f) {
            let _ = writeln!(s, "{note}");
        }
    }
    s
}

/// Indices of the flows the table shows as one `workload` row: the workload's flows that
/// ended `ok`, none when `all_flows`.
fn folded_flows(r: &FlowsResult, all_flows: bool) -> std::collections::BTreeSet<usize> {
    let Some(w) = r.workload.as_ref().filter(|_| !all_flows) else {
        return Default::default();
    };
    let names: std::collections::HashSet<&str> = w.flows.iter().map(|f| f.name.as_str()).collect();
    r.flows
        .iter()
        .enumerate()
        .filter(|(_, f)| f.status == RunStatus::Ok && names.contains(f.name.as_str()))
        .map(|(i, _)| i)
        .collect()
}

/// The row that stands for the folded workload flows: their count in the status, their
/// largest size, and their sums (QPs, operations, retransmissions, verified bytes). Rates
/// and latencies are each flow's own (the FCT summary gives them by size).
fn workload_row(
    r: &FlowsResult,
    folded: &std::collections::BTreeSet<usize>,
) -> Option<(Vec<String>, String)> {
    let flows: Vec<&FlowResult> = folded.iter().map(|&i| &r.flows[i]).collect();
    let first = flows.first()?;
    let same = |cell: fn(&FlowResult) -> String| {
        let v = cell(first);
        if flows.iter().all(|f| cell(f) == v) {
            v
        } else {
            "mixed".to_string()
        }
    };
    let sum = |cell: fn(&FlowResult) -> u64| flows.iter().map(|f| cell(f)).sum::<u64>();
    let cells = vec![
        "workload".to_string(),
        same(|f| f.test.clone()),
        same(|f| f.class.clone()),
        same(|f| f.tenant.to_string()),
        format!(
            "<={}",
            flows.iter().map(|f| f.size_bytes).max().unwrap_or(0)
        ),
        sum(|f| u64::from(f.qps)).to_string(),
        sum(|f| f.ops_completed).to_string(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        sum(|f| f.retransmissions).to_string(),
        sum(|f| f.verified_bytes).to_string(),
    ];
    let n = flows.len();
    let status = format!(
        "ok ({}, in the FCT summary below; --all-flows lists each)",
        counted(n as u64, "flow")
    );
    Some((cells, status))
}

/// The note under the table for a duration flow whose window cannot stand for it: why,
/// its rate over the run, and a `duration_us` long enough.
fn window_note(f: &FlowResult) -> Option<String> {
    let l = f.long_run.as_ref()?;
    Some(format!(
        "flow {}: the window's figures do not stand for the flow ({}); over the run \
         ({:.3} ms) it held {:.3} Gbit/s, {:.4} Mops",
        f.name,
        f.window_reason
            .as_deref()
            .unwrap_or("the rate never settled"),
        l.time_us / 1e3,
        l.goodput_gbps,
        l.msg_rate_mops,
    ))
}

/// One line of the table: each cell padded to its column's width, then the status.
fn write_row(s: &mut String, cells: &[String], widths: &[usize], status: &str) {
    for (i, (cell, &w)) in cells.iter().zip(widths).enumerate() {
        let sep = if i == 0 { "" } else { " " };
        let _ = if COLUMNS[i].2 {
            write!(s, "{sep}{cell:<w$}")
        } else {
            write!(s, "{sep}{cell:>w$}")
        };
    }
    let _ = writeln!(s, "  {status}");
}

/// The one-line summary for standard error.
pub fn summary(r: &FlowsResult) -> String {
    let verified = r.flows.iter().filter(|f| f.bytes_verified).count();
    let n = r.flows.len();
    let mut s = format!(
        "rnic: {}, {} with every byte verified ({} B), {:.3} µs simulated, \
         {} events, seed {}, status {}",
        counted(n as u64, "flow"),
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
    use rnic_model::result::LongRun;

    /// A flow an hour in (3.5e9 µs) makes the span and its latencies wider than their
    /// headings: the columns widen, and every line keeps them aligned.
    #[test]
    fn columns_stay_aligned_whatever_the_widths() {
        let mut late = FlowResult {
            name: "late-flow-with-a-long-name".into(),
            test: "write-lat".into(),
            class: "ls".into(),
            start_us: 3.5e9,
            measured_us: 3_500_000_123.25,
            ..FlowResult::default()
        };
        late.latency_us.max = 3.5e9;
        let r = FlowsResult {
            flows: vec![FlowResult::default(), late],
            total: rnic_model::flow_result::FlowsTotal {
                measured_us: 3_500_000_123.25,
                ..Default::default()
            },
            ..FlowsResult::default()
        };
        let table = render(&r, false);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 6, "{table}");
        // The numeric columns (ops to verified[B]) are right-aligned: each cell of every
        // line ends where its heading does.
        let b = lines[1].as_bytes();
        let ends: Vec<usize> = (1..b.len())
            .filter(|&i| b[i] == b' ' && b[i - 1] != b' ')
            .collect();
        for (i, l) in lines[2..5].iter().enumerate() {
            let row = l.as_bytes();
            for (col, &end) in ends.iter().enumerate().take(15).skip(6) {
                // The total has no latency percentiles.
                if i == 2 && (10..13).contains(&col) {
                    continue;
                }
                assert!(
                    row[end - 1] != b' ' && row[end] == b' ',
                    "column {} of\n{table}",
                    col + 1
                );
            }
        }
        assert!(lines[3].contains(" 3500000123.250 ") && lines[3].contains(" 3500000000.000 "));
        // The rule widens with the columns (it stops short of the heading's last two
        // spaces, as it always has).
        assert_eq!(lines[0].len() + 2, lines[1].len(), "{table}");
    }

    /// A workload's flows that ended ok are one row with their sums; one that did not keeps
    /// its own row, as does a `[[flow]]`; `all_flows` lists every flow.
    #[test]
    fn workload_flows_that_ended_ok_are_one_row() {
        use rnic_model::traffic::fct::{FlowFct, WorkloadResult};
        let flow = |name: &str, size_bytes, status| FlowResult {
            name: name.into(),
            test: "write-bw".into(),
            size_bytes,
            qps: 1,
            ops_completed: 1,
            verified_bytes: size_bytes,
            status,
            ..FlowResult::default()
        };
        let r = FlowsResult {
            flows: vec![
                flow("mine", 64, RunStatus::Ok),
                flow("wl0", 1000, RunStatus::Ok),
                flow("wl1", 3000, RunStatus::Ok),
                flow("wl2", 500, RunStatus::Incomplete),
            ],
            workload: Some(WorkloadResult {
                flows: ["wl0", "wl1", "wl2"]
                    .map(|name| FlowFct {
                        name: name.into(),
                        ..FlowFct::default()
                    })
                    .to_vec(),
                ..WorkloadResult::default()
            }),
            ..FlowsResult::default()
        };
        let table = render(&r, false);
        let names: Vec<&str> = table
            .lines()
            .skip(2)
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(names[..4], ["mine", "wl2", "workload", "total"], "{table}");
        let row = table.lines().find(|l| l.starts_with("workload")).unwrap();
        assert!(
            row.contains(" <=3000 ") && row.contains(" 4000 ") && row.contains("ok (2 flows,"),
            "{table}"
        );
        let all = render(&r, true);
        assert!(all.lines().any(|l| l.starts_with("wl0 ")), "{all}");
        assert!(!all.contains("--all-flows"), "{all}");
    }

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

    #[test]
    fn an_unsettled_window_marks_its_row_and_gives_the_rate_over_the_run() {
        let marked = FlowResult {
            name: "lossy".into(),
            window_settled: Some(false),
            window_reason: Some("too short: duration_us = 430000 or longer".into()),
            long_run: Some(LongRun {
                time_us: 1216.0,
                goodput_gbps: 1.22,
                msg_rate_mops: 0.149,
                long_enough_duration_s: Some(0.43),
                ..LongRun::default()
            }),
            ..FlowResult::default()
        };
        let r = FlowsResult {
            flows: vec![FlowResult::default(), marked],
            ..FlowsResult::default()
        };
        let table = render(&r, false);
        let lines: Vec<&str> = table.lines().collect();
        assert!(
            lines[3].ends_with("(window not settled, see below)"),
            "{table}"
        );
        assert!(!lines[2].contains("window"), "{table}");
        let note = lines.last().copied().unwrap_or_default();
        assert_eq!(
            note,
            "flow lossy: the window's figures do not stand for the flow (too short: \
             duration_us = 430000 or longer); over the run (1.216 ms) it held 1.220 Gbit/s, \
             0.1490 Mops"
        );
    }
}
