//! What a live run prints and writes: perftest's table (the simulator's printers) and the
//! simulator's JSON keys where they apply.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use rnic_model::result::{sorted_kept, LatencyStats, SizeResult, UnreliableResult};
use serde_json::json;

use super::oob::{BwReport, Verdict};
use super::session::Session;
use crate::report::text::{
    bw_header, bw_row, lat_dur_row, lat_row, output_figure_line, sample_list, Samples,
    RESULT_FMT_LAT, RESULT_FMT_LAT_DUR, RESULT_LINE,
};

/// Whether the bytes that travelled are the bytes that were sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    Verified,
    /// The first byte that differs from the pattern, from the buffer's start.
    Mismatch {
        offset: u64,
    },
    /// The peer is perftest: its payload has no pattern to check against.
    PeerIsPerftest,
}

impl Verification {
    /// A side's verdict before it has checked anything: `Verified` when the peer is rnic
    /// (whose bytes are known, so each check can only find a mismatch), else
    /// `PeerIsPerftest`.
    pub fn at_start(peer_is_rnic: bool) -> Verification {
        if peer_is_rnic {
            Verification::Verified
        } else {
            Verification::PeerIsPerftest
        }
    }

    /// This verdict with a later one (another size's, another check's) folded in: the
    /// first mismatch stands.
    pub fn or_first_mismatch(self, later: Verification) -> Verification {
        match (self, later) {
            (Verification::Mismatch { .. }, _) => self,
            (_, Verification::Mismatch { .. }) => later,
            _ => self,
        }
    }

    pub fn of(first_mismatch: Option<u64>) -> Verification {
        first_mismatch.map_or(Verification::Verified, |offset| Verification::Mismatch {
            offset,
        })
    }

    /// What the peer's verdict at the close says about the bytes this side sent (`None`:
    /// the peer is perftest, which gives none).
    pub fn from_peer(theirs: Option<Verdict>) -> Verification {
        match theirs {
            None | Some(Verdict::NothingChecked) => Verification::PeerIsPerftest,
            Some(Verdict::Verified) => Verification::Verified,
            Some(Verdict::Mismatch(offset)) => Verification::Mismatch { offset },
        }
    }

    /// What this side tells an rnic peer at the close.
    pub fn verdict(self) -> Verdict {
        match self {
            Verification::Verified => Verdict::Verified,
            Verification::Mismatch { offset } => Verdict::Mismatch(offset),
            Verification::PeerIsPerftest => Verdict::NothingChecked,
        }
    }

    /// The simulator's `status` values (`ok`, `corrupt`), and `unverified`.
    pub fn status(self) -> &'static str {
        match self {
            Verification::Verified => "ok",
            Verification::Mismatch { .. } => "corrupt",
            Verification::PeerIsPerftest => "unverified",
        }
    }
}

/// The figures of one live run.
#[derive(Debug, Clone)]
pub struct LiveResult {
    pub test: &'static str,
    /// The run's figures (the simulator's row of a size: rates, bandwidths, latencies).
    pub row: SizeResult,
    pub is_latency: bool,
    /// Whether the table has a row: not for a passive READ server, which measures nothing
    /// and, as perftest's `ib_read_lat` server, prints only the result line.
    pub measured: bool,
    pub verification: Verification,
    pub mtu_bytes: u32,
    /// `RC` or `UC`.
    pub connection: String,
    pub peer_is_rnic: bool,
    /// QPs the run used (`-q`).
    pub qps: usize,
    pub local_ip: String,
    pub peer_ip: String,
    pub retransmissions: u64,
    /// A bandwidth client's retransmissions up to its last measured completion (before the
    /// READ-back that verifies the bytes).
    pub write_retransmissions: Option<u64>,
    pub naks: u64,
    pub timeouts: u64,
    pub rx_refused: u64,
    /// UC/UD send-bw: the messages sent, received whole and lost (the simulator's
    /// `unreliable` object; `None` otherwise).
    pub unreliable: Option<UnreliableResult>,
    /// `-a`: each size's figures in turn (the run's own are the last size's, as perftest
    /// sends its server); empty otherwise.
    pub per_size: Vec<SizeResult>,
    /// A latency test in duration mode (`-D`): perftest's average, the window over the
    /// iterations in it (over 2 for a ping-pong), printed in its duration table.
    pub duration_t_avg_us: Option<f64>,
    /// Lines printed after the table (why `-a` stopped early).
    pub notes: Vec<String>,
    /// `--run_infinitely`: each interval's figures, in turn (printed as they ended).
    pub intervals: Vec<SizeResult>,
    /// Why the run did not complete all it was asked, though it has figures to report
    /// (status `incomplete` unless a byte was wrong; exit status 3).
    pub incomplete: Option<String>,
    /// `-b`: what this side's direction and the peer's carried (the row is their sum).
    pub bidirectional: Option<[BwReport; 2]>,
}

const MB: f64 = 1_048_576.0;

impl LiveResult {
    /// `iters` messages of `size` bytes in `elapsed_s` seconds of wall time.
    pub fn bandwidth(test: &'static str, size: u64, iters: u64, elapsed_s: f64) -> LiveResult {
        // In floating point: a peer's report can carry any count.
        let bytes = size as f64 * iters as f64;
        let per_s = |x: f64| if elapsed_s > 0.0 { x / elapsed_s } else { 0.0 };
        let mut r = LiveResult::empty(test, size, iters, elapsed_s);
        r.row.bw_avg_mb_s = per_s(bytes) / MB;
        r.row.msg_rate_mops = per_s(iters as f64) / 1e6;
        r.row.goodput_gbps = per_s(bytes) * 8.0 / 1e9;
        r
    }

    /// A latency run whose side posted at `posts`: perftest's samples, the gaps between
    /// consecutive posts over `rtt_factor` (2 for a ping-pong, where a gap is a round trip;
    /// 1 for READ, whose completion is the answer), summarised as perftest's table does
    /// (without the two largest; `rc-pingpong`, whose tool prints a plain average, over all).
    pub fn latency(
        test: &'static str,
        size: u64,
        iters: u64,
        posts: &[std::time::Instant],
        rtt_factor: f64,
    ) -> LiveResult {
        let samples_us: Vec<f64> = posts
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64() * 1e6 / rtt_factor)
            .collect();
        // The run's time is the span of the posts: the samples times the factor they were
        // divided by (a fixed 2 doubled a READ run's time).
        let span_s = samples_us.iter().sum::<f64>() * rtt_factor * 1e-6;
        let mut r = LiveResult::empty(test, size, iters, span_s);
        r.is_latency = true;
        r.row.latency_us = match test {
            "rc-pingpong" => LatencyStats::from_samples_us(&samples_us),
            _ => LatencyStats::perftest_lat_of_gaps(&samples_us),
        };
        r.row.latency_samples_us = samples_us;
        r
    }

    fn empty(test: &'static str, size: u64, iters: u64, elapsed_s: f64) -> LiveResult {
        LiveResult {
            test,
            row: SizeResult {
                size_bytes: size,
                iterations: iters,
                simulated_time_us: elapsed_s * 1e6,
                ops_completed: iters,
                ..SizeResult::default()
            },
            is_latency: false,
            verification: Verification::Verified,
            mtu_bytes: 0,
            connection: String::new(),
            peer_is_rnic: false,
            qps: 1,
            local_ip: String::new(),
            peer_ip: String::new(),
            retransmissions: 0,
            write_retransmissions: None,
            naks: 0,
            timeouts: 0,
            rx_refused: 0,
            unreliable: None,
            per_size: Vec::new(),
            duration_t_avg_us: None,
            notes: Vec::new(),
            intervals: Vec::new(),
            incomplete: None,
            bidirectional: None,
            measured: true,
        }
    }

    /// The result of a run of one size or, with `-a` (`all_sizes`), of every size in turn
    /// (`sizes`, in order): the last size's figures with each size's row in `per_size`.
    pub fn of_sizes(mut sizes: Vec<LiveResult>, all_sizes: bool) -> LiveResult {
        let mut r = sizes.pop().expect("at least one size");
        if all_sizes {
            r.per_size = sizes.into_iter().map(|p| p.row).collect();
            r.per_size.push(r.row.clone());
        }
        r
    }

    /// A latency test's duration mode (`-D`): `iters` iterations completed in the window of
    /// `window_s` seconds; perftest reports their average, the window over the iterations
    /// over `rtt_factor` (2 for a ping-pong, where one is a round trip), and the iterations
    /// per second, with no samples.
    pub fn latency_for_duration(
        test: &'static str,
        size: u64,
        iters: u64,
        window_s: f64,
        rtt_factor: f64,
    ) -> LiveResult {
        let mut r = LiveResult::empty(test, size, iters, window_s);
        r.is_latency = true;
        let t_avg_us = if iters > 0 {
            window_s * 1e6 / rtt_factor / iters as f64
        } else {
            0.0
        };
        r.row.latency_us.avg = t_avg_us;
        r.row.msg_rate_mops = iters as f64 / window_s / 1e6;
        r.duration_t_avg_us = Some(t_avg_us);
        r
    }

    /// Takes the engine's counters and the session's facts.
    pub fn finish(&mut self, s: &mut Session, v: Verification) {
        let st = s.ep.dev.stats();
        self.verification = v;
        self.mtu_bytes = s.pre.mtu_bytes;
        self.connection = s.ep.service().name().to_ascii_uppercase();
        self.peer_is_rnic = s.pre.peer_is_rnic;
        self.qps = s.mine.len();
        self.local_ip = s.ep.local_ip().to_string();
        self.peer_ip = s.peer().ipv4().map(|ip| ip.to_string()).unwrap_or_default();
        self.retransmissions = st.retransmitted_packets;
        self.naks = st.naks_sent.total();
        self.timeouts = st.ack_timeouts;
        self.rx_refused = s.ep.rx_refused;
    }

    /// The table's header and rows (one per size with `-a`); a latency test's rows each
    /// after their samples with `samples` (`-H`, `-U`).
    fn print_table(
        &self,
        out: &mut dyn Write,
        report_gbits: bool,
        samples: Samples,
    ) -> std::io::Result<()> {
        if let Some(t_avg_us) = self.duration_t_avg_us {
            writeln!(out, "{RESULT_FMT_LAT_DUR}")?;
            write!(out, "{}", lat_dur_row(&self.row, t_avg_us))?;
        } else if self.is_latency {
            writeln!(out, "{RESULT_FMT_LAT}")?;
            for r in self.rows() {
                print_samples(out, &r.latency_samples_us, samples)?;
                write!(out, "{}", lat_row(r))?;
            }
        } else {
            writeln!(out, "{}", bw_header(report_gbits))?;
            for r in self.rows() {
                write!(out, "{}", bw_row(r, report_gbits))?;
            }
        }
        Ok(())
    }

    /// The table's rows: each size's with `-a`, else the run's own.
    pub fn rows(&self) -> &[SizeResult] {
        match self.per_size.is_empty() {
            true => std::slice::from_ref(&self.row),
            false => &self.per_size,
        }
    }

    /// perftest's `--output=FIGURE`: that figure of each row of the table, one line each
    /// (nothing from a passive READ server, which measures nothing).
    pub fn print_figures(
        &self,
        out: &mut dyn Write,
        figure: &str,
        report_gbits: bool,
    ) -> std::io::Result<()> {
        if !self.measured {
            return Ok(());
        }
        for r in self.rows() {
            let t_avg_us = self.duration_t_avg_us;
            write!(
                out,
                "{}",
                output_figure_line(figure, r, report_gbits, t_avg_us)
            )?;
        }
        Ok(())
    }

    /// perftest's table, a bandwidth test's in Gb/s with `report_gbits`, a latency test's
    /// with its samples listed as `samples` asks, then the summary.
    pub fn print(
        &self,
        out: &mut dyn Write,
        report_gbits: bool,
        samples: Samples,
    ) -> std::io::Result<()> {
        writeln!(out, "{RESULT_LINE}")?;
        // A passive READ server prints only the line, as perftest's.
        if self.measured {
            self.print_table(out, report_gbits, samples)?;
            writeln!(out, "{RESULT_LINE}")?;
        }
        self.print_summary(out)
    }

    /// `-b --report-both`: each direction under its own header, this side's ("Local
    /// results") then the peer's ("Remote results"), as perftest prints them after the
    /// summed table.
    pub fn print_directions(&self, out: &mut dyn Write, report_gbits: bool) -> std::io::Result<()> {
        let Some(directions) = &self.bidirectional else {
            return Ok(());
        };
        for (label, d) in ["Local", "Remote"].iter().zip(directions) {
            let row = SizeResult {
                size_bytes: d.size,
                iterations: d.iters,
                bw_peak_mb_s: d.bw_peak,
                bw_avg_mb_s: d.bw_avg,
                msg_rate_mops: d.msg_rate,
                ..SizeResult::default()
            };
            writeln!(out, "\n {label} results: \n{RESULT_LINE}")?;
            writeln!(out, "{}", bw_header(report_gbits))?;
            write!(out, "{}", bw_row(&row, report_gbits))?;
            writeln!(out, "{RESULT_LINE}")?;
        }
        Ok(())
    }

    /// What follows the table: `-b`'s directions, notes, the addresses, the counters and the
    /// verdict on the bytes, and over UC or UD the messages lost.
    pub fn print_summary(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if let Some([mine, theirs]) = &self.bidirectional {
            writeln!(
                out,
                " -b: {:.2} MB/s from this side, {:.2} MB/s from the peer; each row is their sum",
                mine.bw_avg, theirs.bw_avg
            )?;
        }
        for note in &self.notes {
            writeln!(out, " {note}")?;
        }
        let note = match self.verification {
            Verification::Verified => "every byte verified".to_string(),
            Verification::Mismatch { offset } => format!("DATA MISMATCH at byte {offset}"),
            Verification::PeerIsPerftest => "bytes not verified (the peer is perftest)".to_string(),
        };
        let qps = match self.qps {
            1 => String::new(),
            n => format!(", {n} QPs"),
        };
        writeln!(
            out,
            " {} ↔ {}, {}{qps}, MTU {}, {} retransmitted, {} NAKs, {} timeouts: {note}",
            self.local_ip,
            self.peer_ip,
            self.connection,
            self.mtu_bytes,
            self.retransmissions,
            self.naks,
            self.timeouts
        )?;
        if let Some(u) = &self.unreliable {
            writeln!(
                out,
                " {}: {} messages sent, {} received whole, {} lost ({} does not resend; the \
                 figures are over what arrived)",
                self.connection,
                u.messages_sent,
                u.messages_received,
                u.messages_lost,
                self.connection
            )?;
        }
        Ok(())
    }

    pub fn to_json(&self) -> serde_json::Value {
        let mut j = self.base_json();
        if let Some(u) = &self.unreliable {
            j["unreliable"] = serde_json::to_value(u).unwrap_or_default();
        }
        if !self.per_size.is_empty() {
            j["per_size"] = self.per_size.iter().map(size_json).collect();
        }
        if !self.intervals.is_empty() {
            j["intervals"] = self.intervals.iter().map(size_json).collect();
        }
        if !self.notes.is_empty() {
            j["notes"] = json!(self.notes);
        }
        if let Some(reason) = &self.incomplete {
            j["reason"] = json!(reason);
        }
        if let Some([mine, theirs]) = &self.bidirectional {
            j["bidirectional"] =
                json!({ "this_side": direction_json(mine), "peer": direction_json(theirs) });
        }
        j
    }

    /// The simulator's status: a wrong byte first, then a run that did not complete.
    pub fn status(&self) -> &'static str {
        match (self.verification, &self.incomplete) {
            (Verification::Mismatch { .. }, _) | (_, None) => self.verification.status(),
            (_, Some(_)) => crate::report::RunStatus::Incomplete.name(),
        }
    }

    fn base_json(&self) -> serde_json::Value {
        let mut j = size_json(&self.row);
        let rest = json!({
            "test": self.test,
            "status": self.status(),
            "bytes_verified": self.verification == Verification::Verified,
            "retransmissions": self.retransmissions,
            "retransmissions_before_read_back": self.write_retransmissions,
            "naks": self.naks,
            "timeouts": self.timeouts,
            "live": {
                "local_ip": self.local_ip,
                "peer_ip": self.peer_ip,
                "connection": self.connection,
                "mtu_bytes": self.mtu_bytes,
                "qps": self.qps,
                "peer_is_rnic": self.peer_is_rnic,
                "datagrams_refused": self.rx_refused,
            },
        });
        if let (Some(all), serde_json::Value::Object(rest)) = (j.as_object_mut(), rest) {
            all.extend(rest);
        }
        j
    }

    pub fn write_json(&self, path: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(&self.to_json())? + "\n";
        std::fs::write(path, text)
            .with_context(|| format!("cannot write --json {}", path.display()))
            .map_err(|e| crate::OutputError(format!("{e:#}")).into())
    }
}

/// perftest's `-U` and `-H` lists before a latency row (`gaps`: its samples in measurement
/// order): with `-U` every gap in order, then the gaps its summary keeps, sorted, then the
/// line and the header again, as perftest prints them.
fn print_samples(out: &mut dyn Write, gaps: &[f64], samples: Samples) -> std::io::Result<()> {
    if samples == Samples::Off {
        return Ok(());
    }
    if samples == Samples::Unsorted {
        write!(out, "{}", sample_list(gaps))?;
    }
    write!(out, "{}", sample_list(&sorted_kept(gaps)))?;
    writeln!(out, "{RESULT_LINE}\n{RESULT_FMT_LAT}")
}

/// One direction of a bidirectional run, as perftest's bandwidth report carries it.
fn direction_json(d: &BwReport) -> serde_json::Value {
    json!({
        "size_bytes": d.size,
        "iterations": d.iters,
        "bw_peak_mb_s": d.bw_peak,
        "bw_avg_mb_s": d.bw_avg,
        "msg_rate_mops": d.msg_rate,
    })
}

/// One size's figures with the simulator's keys for a size (live runs time the wall, so
/// `wall_time_us`): an entry of `per_size` (`-a`), and the start of a run's own JSON.
fn size_json(row: &SizeResult) -> serde_json::Value {
    let l = &row.latency_us;
    json!({
        "latency_us": {
            "min": l.min, "avg": l.avg, "p50": l.p50, "p99": l.p99,
            "p999": l.p999, "max": l.max, "stdev": l.stdev,
        },
        "size_bytes": row.size_bytes,
        "iterations": row.iterations,
        "ops_completed": row.ops_completed,
        "wall_time_us": row.simulated_time_us,
        "msg_rate_mops": row.msg_rate_mops,
        "goodput_gbps": row.goodput_gbps,
        "bw_avg_mb_s": row.bw_avg_mb_s,
        "bw_peak_mb_s": row.bw_peak_mb_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn an_incomplete_run_says_why_unless_a_byte_was_wrong() {
        let mut r = LiveResult::latency("rc-pingpong", 2, 2, &[Instant::now()], 2.0);
        r.verification = Verification::PeerIsPerftest;
        r.incomplete = Some("SEND 1 (the last) was not acknowledged".into());
        let j = r.to_json();
        assert_eq!(j["status"], "incomplete");
        assert_eq!(j["reason"], "SEND 1 (the last) was not acknowledged");
        r.verification = Verification::Mismatch { offset: 3 };
        assert_eq!(r.to_json()["status"], "corrupt");
        r.incomplete = None;
        r.verification = Verification::Verified;
        let j = r.to_json();
        assert_eq!((j["status"].as_str(), j.get("reason")), (Some("ok"), None));
    }

    #[test]
    fn a_latency_run_spans_its_posts_whatever_its_rtt_factor() {
        let t0 = Instant::now();
        let posts: Vec<Instant> = [0, 10, 20]
            .map(|us| t0 + Duration::from_micros(us))
            .to_vec();
        for (factor, sample) in [(1.0, 10.0), (2.0, 5.0)] {
            let r = LiveResult::latency("t", 2, 2, &posts, factor);
            for s in &r.row.latency_samples_us {
                assert!((s - sample).abs() < 1e-9, "factor {factor}: {s}");
            }
            let t = r.row.simulated_time_us;
            assert!((t - 20.0).abs() < 1e-9, "factor {factor}: {t} us");
        }
    }

    /// perftest's summary: the two largest gaps are left out of the average and the
    /// percentiles, and its max is the second largest.
    #[test]
    fn a_latency_summary_leaves_out_the_largest_two_as_perftest() {
        let t0 = Instant::now();
        let mut at = 0;
        let posts: Vec<Instant> = [0, 10, 10, 10, 10, 100, 200]
            .map(|gap_us| {
                at += gap_us;
                t0 + Duration::from_micros(at)
            })
            .to_vec();
        let l = LiveResult::latency("write-lat", 2, 7, &posts, 1.0)
            .row
            .latency_us;
        assert!(
            (l.avg - 10.0).abs() < 1e-9 && (l.max - 100.0).abs() < 1e-9,
            "{l:?}"
        );
        let all = LiveResult::latency("rc-pingpong", 2, 7, &posts, 1.0)
            .row
            .latency_us;
        assert!((all.avg - 340.0 / 6.0).abs() < 1e-9, "{all:?}");
    }

    #[test]
    fn the_first_mismatch_stands_whatever_comes_after() {
        let m = |offset| Verification::Mismatch { offset };
        for start in [true, false] {
            let v = Verification::at_start(start);
            assert_eq!(v.or_first_mismatch(v), v);
            assert_eq!(v.or_first_mismatch(m(3)), m(3));
            assert_eq!(m(3).or_first_mismatch(m(5)), m(3));
            assert_eq!(m(3).or_first_mismatch(v), m(3));
        }
    }

    #[test]
    fn a_passive_read_server_prints_only_perftests_result_line() {
        let mut r = LiveResult::latency("read-lat", 64, 5, &[], 1.0);
        let printed = |r: &LiveResult| {
            let mut out = Vec::new();
            r.print(&mut out, false, Samples::Off).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert!(printed(&r).contains("#bytes"));
        r.measured = false;
        let text = printed(&r);
        assert!(!text.contains("#bytes"), "{text}");
        assert_eq!(text.matches(RESULT_LINE.trim_end()).count(), 1, "{text}");
    }
}
