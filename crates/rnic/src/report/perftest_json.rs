//! perftest's JSON report (`--out_json --out_json_file=FILE`): the `test_info` block and
//! the `results` of perftest 4.5, with its key names and order, so scripts written for
//! perftest's file read ours. perftest writes its string values unquoted (not valid JSON);
//! rnic quotes them, so any JSON parser reads the file. With `-a` (several sizes) `results`
//! is a list with one entry per size; with one size it is an object, as perftest's.

use serde::Serialize;

use super::{PerfResult, SizeResult, MB};
use crate::config::Config;
use crate::perf::{PerfSpec, Verb};

/// The whole file.
#[derive(Debug, Serialize)]
pub struct Report {
    pub test_info: TestInfo,
    pub results: Results,
}

/// perftest's `test_info` block (ctx_print_test_info's JSON form).
#[derive(Debug, Serialize)]
pub struct TestInfo {
    pub test: String,
    #[serde(rename = "Dual_port")]
    pub dual_port: &'static str,
    #[serde(rename = "Device")]
    pub device: &'static str,
    #[serde(rename = "Number_of_qps")]
    pub number_of_qps: u32,
    #[serde(rename = "Transport_type")]
    pub transport_type: &'static str,
    #[serde(rename = "Connection_type")]
    pub connection_type: &'static str,
    #[serde(rename = "Using_SRQ")]
    pub using_srq: &'static str,
    #[serde(rename = "PCIe_relax_order")]
    pub pcie_relax_order: &'static str,
    #[serde(rename = "ibv_wr_API")]
    pub ibv_wr_api: &'static str,
    #[serde(rename = "TX_depth")]
    pub tx_depth: u32,
    #[serde(rename = "Post_List", skip_serializing_if = "Option::is_none")]
    pub post_list: Option<u32>,
    #[serde(rename = "Recv_Post_List", skip_serializing_if = "Option::is_none")]
    pub recv_post_list: Option<u32>,
    #[serde(rename = "RX_depth", skip_serializing_if = "Option::is_none")]
    pub rx_depth: Option<u32>,
    #[serde(rename = "CQ_Moderation", skip_serializing_if = "Option::is_none")]
    pub cq_moderation: Option<u32>,
    #[serde(rename = "Mtu")]
    pub mtu: u32,
    #[serde(rename = "Link_type")]
    pub link_type: &'static str,
    #[serde(rename = "Max_inline_data", skip_serializing_if = "Option::is_none")]
    pub max_inline_data: Option<u32>,
    #[serde(rename = "Outstand_reads", skip_serializing_if = "Option::is_none")]
    pub outstand_reads: Option<u8>,
    #[serde(rename = "rdma_cm_QPs")]
    pub rdma_cm_qps: &'static str,
    #[serde(rename = "Data_ex_method")]
    pub data_ex_method: &'static str,
}

/// One size's figures, or one per size.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Results {
    One(Row),
    PerSize(Vec<Row>),
}

/// One size's figures: bandwidth tests, latency tests, or latency tests with `-D`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Row {
    Bw {
        #[serde(rename = "MsgSize")]
        msg_size: u64,
        n_iterations: u64,
        /// MB/sec (MiB/s), or Gb/sec with --report_gbits, as the table.
        #[serde(rename = "BW_peak")]
        bw_peak: f64,
        #[serde(rename = "BW_average")]
        bw_average: f64,
        /// Mpps.
        #[serde(rename = "MsgRate")]
        msg_rate: f64,
    },
    Lat {
        #[serde(rename = "MsgSize")]
        msg_size: u64,
        n_iterations: u64,
        /// µs, as every latency figure here.
        t_min: f64,
        t_max: f64,
        t_typical: f64,
        t_avg: f64,
        t_stdev: f64,
        percentile_99: f64,
        #[serde(rename = "percentile_99.9")]
        percentile_99_9: f64,
    },
    LatDuration {
        #[serde(rename = "MsgSize")]
        msg_size: u64,
        n_iterations: u64,
        t_avg: f64,
    },
}

/// perftest's test name: the information block's title words joined by underscores
/// ([`super::text::title_words`]).
pub fn test_name(words: &[&str]) -> String {
    words.join("_").replace(' ', "_")
}

/// One row of the simulator's result.
fn row(r: &SizeResult, spec: &PerfSpec, report_gbits: bool) -> Row {
    let t_avg_us = (spec.duration_us.is_some()).then(|| super::text::duration_t_avg_us(r, spec));
    row_of(r, spec.test.is_latency(), t_avg_us, report_gbits)
}

/// One size's row: a bandwidth test's (in Gb/s with `report_gbits`), a latency test's, or
/// with `t_avg_us` (`-D`) a latency test's duration row.
pub fn row_of(r: &SizeResult, latency: bool, t_avg_us: Option<f64>, report_gbits: bool) -> Row {
    let l = &r.latency_us;
    match (latency, t_avg_us) {
        (true, None) => Row::Lat {
            msg_size: r.size_bytes,
            n_iterations: r.iterations,
            t_min: l.min,
            t_max: l.max,
            t_typical: l.p50,
            t_avg: l.avg,
            t_stdev: l.stdev,
            percentile_99: l.p99,
            percentile_99_9: l.p999,
        },
        (true, Some(t_avg)) => Row::LatDuration {
            msg_size: r.size_bytes,
            n_iterations: r.iterations,
            t_avg,
        },
        (false, _) => {
            let to = if report_gbits { MB * 8.0 / 1e9 } else { 1.0 };
            Row::Bw {
                msg_size: r.size_bytes,
                n_iterations: r.iterations,
                bw_peak: r.bw_peak_mb_s * to,
                bw_average: r.bw_avg_mb_s * to,
                msg_rate: r.msg_rate_mops,
            }
        }
    }
}

/// The report of `result`, run as `spec` under `cfg`.
pub fn report(result: &PerfResult, spec: &PerfSpec, cfg: &Config, report_gbits: bool) -> Report {
    let lat = spec.test.is_latency();
    let reads = matches!(spec.test.verb(), Verb::Read | Verb::Atomic);
    // As the information block says it.
    let cm = super::text::connected_by_cm(cfg);
    let (depth, cq_mod) = super::text::shown_depths(spec, cfg);
    let rows: Vec<Row> = result
        .rows()
        .iter()
        .map(|r| row(r, spec, report_gbits))
        .collect();
    Report {
        test_info: TestInfo {
            test: test_name(&super::text::spec_title(spec, cfg)),
            dual_port: "OFF",
            device: "rnic0",
            number_of_qps: spec.qps,
            transport_type: "IB",
            connection_type: super::text::connection_type(cfg),
            using_srq: super::text::on_off(super::text::uses_srq(spec, cfg)),
            pcie_relax_order: "OFF",
            ibv_wr_api: "OFF",
            tx_depth: depth,
            post_list: super::text::shown_post_list(spec, cfg),
            recv_post_list: super::text::shown_recv_post_list(spec, cfg),
            rx_depth: super::text::shown_rx_depth(spec, cfg),
            cq_moderation: (!lat).then_some(cq_mod),
            mtu: cfg.qp.pmtu,
            link_type: "Ethernet",
            max_inline_data: (!reads).then_some(cfg.host.inline_bytes),
            outstand_reads: reads.then_some(cfg.qp.max_rd_atomic),
            rdma_cm_qps: super::text::on_off(cm),
            data_ex_method: if cm { "rdma_cm" } else { "Ethernet" },
        },
        results: Results::of(rows),
    }
}

impl Results {
    /// One row as an object, several (`-a`) as a list, as perftest writes them.
    pub fn of(mut rows: Vec<Row>) -> Results {
        match rows.len() {
            1 => Results::One(rows.remove(0)),
            _ => Results::PerSize(rows),
        }
    }
}

impl Report {
    /// The file's text: pretty JSON and a final newline.
    pub fn to_text(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serializes") + "\n"
    }
}
