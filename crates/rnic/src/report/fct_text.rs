//! A workload's results in text and CSV: the slowdown table by flow-size bucket printed
//! after the flows table, and two CSV files beside the JSON (`NAME-fct.csv`, one line per
//! flow; `NAME-fct-buckets.csv`, one per bucket).

use std::path::Path;

use crate::report::side_files::SideFile;

use rnic_model::traffic::fct::{self, WorkloadResult};

/// A size in bytes as the bucket edges read: 10KB, 1MB, ...
fn size(bytes: u64) -> String {
    match bytes {
        0 => "0".into(),
        b if b >= 1_000_000 && b.is_multiple_of(1_000_000) => format!("{}MB", b / 1_000_000),
        b if b >= 1_000 && b.is_multiple_of(1_000) => format!("{}KB", b / 1_000),
        b => format!("{b}B"),
    }
}

/// The bucket table.
pub fn render(w: &WorkloadResult) -> String {
    let mut s = format!(
        "workload {} at {} load of {} Gb/s ({}): {} of {} flows completed, every byte verified\n",
        w.cdf, w.load, w.host_link_gbps, w.pattern, w.flows_completed, w.flows_started
    );
    s.push_str(&format!(
        "{:>17} {:>7} {:>9} {:>9} {:>9} {:>12}\n",
        "size", "flows", "p50", "p95", "p99", "max_fct[us]"
    ));
    for b in &w.buckets {
        s.push_str(&format!(
            "{:>17} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>12.1}\n",
            format!("{}-{}", size(b.above_bytes), size(b.up_to_bytes)),
            b.flows,
            b.slowdown_p50,
            b.slowdown_p95,
            b.slowdown_p99,
            b.fct_max_us
        ));
    }
    // Where the FCT runs to the receiver's last byte (UC, UD, the WAN accelerator), say so;
    // over RC it runs to the sender's completion, as HPCC-style simulators report it.
    let to = if w.ideal_fct == fct::IDEAL_FCT_TO_LAST_BYTE_WORDS {
        " (both to the receiver's last byte)"
    } else {
        ""
    };
    s.push_str(&format!(
        "(slowdown = FCT / ideal FCT on the idle fabric{to}; sizes in decades)\n"
    ));
    s
}

/// Writes both CSV files and the figure beside `json` (paths: [`SideFile`]).
pub fn write_csv(w: &WorkloadResult, json: &Path) -> anyhow::Result<()> {
    let write = |f: SideFile, bytes: &[u8]| crate::report::json::write_file(&f.beside(json), bytes);
    write(SideFile::FctFlows, fct::flows_csv(&w.flows).as_bytes())?;
    write(
        SideFile::FctBuckets,
        fct::buckets_csv(&w.buckets).as_bytes(),
    )?;
    let svg = crate::sweep::plot::render_svg(&figure(w))?;
    write(SideFile::Slowdown, svg.as_bytes())?;
    Ok(())
}

/// Slowdown against flow size, as the HPCC paper draws it: the p50 and p99 lines over the
/// buckets, each point at its bucket's upper edge, both axes logarithmic (bytes in KB/MB).
pub fn figure(w: &WorkloadResult) -> crate::sweep::plot::PlotData {
    use crate::sweep::plot::{PlotData, Scale, Series};
    use rnic_model::quantity::Quantity;
    let line = |label: &str, pick: fn(&fct::SizeBucket) -> f64| Series {
        label: label.into(),
        points: w
            .buckets
            .iter()
            .map(|b| (b.up_to_bytes as f64, pick(b)))
            .collect(),
    };
    PlotData {
        title: "FCT slowdown vs flow size".into(),
        subtitle: Some(format!("{} at {} load ({})", w.cdf, w.load, w.pattern)),
        x: Quantity::new("flow size (bucket upper edge)", "bytes"),
        y: Quantity::new("slowdown (FCT / ideal FCT)", ""),
        series: vec![
            line("p50", |b| b.slowdown_p50),
            line("p99", |b| b.slowdown_p99),
        ],
        x_scale: Scale::Log,
        y_scale: Scale::Log,
        x_categories: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_decades() {
        assert_eq!(
            [0, 10_000, 100_000, 1_000_000, 30_000_000, 1_500].map(size),
            ["0", "10KB", "100KB", "1MB", "30MB", "1500B"].map(String::from)
        );
    }
}
