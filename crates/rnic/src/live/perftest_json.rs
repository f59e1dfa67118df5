//! perftest's JSON report of a live run (`--out_json`, `--out_json_file FILE`): the file
//! `rnic perf` writes (`report::perftest_json`: perftest 4.5's keys in its order, strings
//! quoted), filled from the run's figures and options, so that a script reading perftest's
//! file reads rnic live's.

use super::report::LiveResult;
use super::{LiveOptions, LiveTest};
use crate::perf::Verb;
use crate::report::perftest_json::{row_of, test_name, Report, Results, TestInfo};
use crate::report::text::{on_off, title_words};
use rnic_transport::ServiceType;

/// The verb a test runs (rc-pingpong, which has no such file, SENDs).
fn verb(test: LiveTest) -> Verb {
    match test {
        LiveTest::WriteBw | LiveTest::WriteLat => Verb::Write,
        LiveTest::ReadBw | LiveTest::ReadLat => Verb::Read,
        LiveTest::AtomicBw | LiveTest::AtomicLat => Verb::Atomic,
        LiveTest::SendBw | LiveTest::SendLat | LiveTest::RcPingpong => Verb::Send,
    }
}

/// perftest's name of the QP service.
fn connection_type(service: ServiceType) -> &'static str {
    match service {
        ServiceType::Rc => "RC",
        ServiceType::Uc => "UC",
        ServiceType::Ud => "UD",
    }
}

/// The report of run `r`, made with `o`; `None` from a passive READ server, which measures
/// nothing and, as perftest's, writes no report.
pub fn report(r: &LiveResult, o: &LiveOptions) -> Option<Report> {
    if !r.measured {
        return None;
    }
    let latency = o.test.is_latency();
    let rows = (r.rows().iter())
        .map(|row| row_of(row, latency, r.duration_t_avg_us, o.report_gbits))
        .collect();
    let verb = verb(o.test);
    let reads = matches!(verb, Verb::Read | Verb::Atomic);
    // A latency test keeps one operation in flight; rnic live signals every work request.
    let depth = if latency { 1 } else { o.tx_depth };
    // perftest names the receive depth of a SEND test on the side that receives: the server,
    // and both sides with -b.
    let receives = verb == Verb::Send && !latency && (o.host.is_none() || o.bidirectional);
    Some(Report {
        test_info: TestInfo {
            test: test_name(&title_words(
                verb,
                Some(o.atomic.perftest_name()),
                o.bidirectional,
                false,
                latency,
            )),
            dual_port: "OFF",
            device: "rnic-live",
            number_of_qps: u32::try_from(r.qps).unwrap_or(u32::MAX),
            transport_type: "IB",
            connection_type: connection_type(o.service),
            using_srq: on_off(o.use_srq),
            pcie_relax_order: "OFF",
            ibv_wr_api: "OFF",
            tx_depth: depth,
            post_list: None,
            recv_post_list: None,
            rx_depth: receives.then_some(o.rx_depth),
            cq_moderation: (!latency).then_some(1),
            mtu: r.mtu_bytes,
            link_type: "Ethernet",
            max_inline_data: (!reads).then_some(0),
            outstand_reads: reads.then(|| u8::try_from(o.out_reads).unwrap_or(u8::MAX)),
            rdma_cm_qps: on_off(o.rdma_cm),
            data_ex_method: if o.exchange_by_cm {
                "rdma_cm"
            } else {
                "Ethernet"
            },
        },
        results: Results::of(rows),
    })
}
