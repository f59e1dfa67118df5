//! `-b` of `rnic live write-bw`, `read-bw` and `atomic-bw`: perftest's bidirectional run. Both sides run
//! the client's loop at once, each to (read-bw: from) the other's buffers, with perftest's
//! handshakes around it: one before each size, one after each size of `-a`, then the
//! bandwidth reports; each side prints the sum of both directions, as perftest's
//! `print_full_bw_report` does, and says what each direction carried.
//!
//! Between two rnic endpoints each side checks the bytes that landed in its own buffers
//! (write-bw: what the peer wrote; read-bw: what its READs fetched) against the peer's
//! pattern, and the two verdicts cross at the close, so each side's verdict covers both
//! directions. A perftest peer's buffers hold random bytes: its traffic goes unchecked
//! (`status: unverified`).

use anyhow::bail;
use rnic_transport::{RemoteAddr, ServiceType};

use super::atomic_bw::{check_served, fetch_adds, ATOMIC_BYTES};
use super::bw::over_every_qp;
use super::bw::{
    bw_report, check_every_qp, keep_in_flight, one_sided_wr, remote_of, size_row, BwMeasured,
    HalvedBuffers, Verb,
};
use super::oob::{BwReport, CYCLE_BUFFER_BYTES};
use super::report::{LiveResult, Verification};
use super::session::{linger, Layout, Session, IDLE_TURN};
use super::{qp_pattern_seed, LiveOptions};

/// A bidirectional side's buffers: perftest's halves (see [`HalvedBuffers`]), the peer
/// told of the second ones (it WRITEs to them, or READs from them). perftest moves the
/// remote address through a page-sized cycle buffer for messages up to half a page, so
/// each buffer covers at least a page.
fn buffers(o: &LiveOptions) -> HalvedBuffers {
    HalvedBuffers::new(o.qps, o.size.max(u64::from(CYCLE_BUFFER_BYTES)))
}

/// One MR over both halves, the peer told of the second; read-bw's hold each QP's pattern
/// (whole, for perftest's moving addresses) before the peer can READ them.
fn layout(b: &HalvedBuffers, verb: Verb) -> Layout {
    Layout {
        served_pattern_bytes: if verb == Verb::Read { b.stride } else { 0 },
        ..b.layout(true)
    }
}

/// Where the peer's bytes land on this side: the advertised buffers under write-bw, the
/// sources (where the READs land) under read-bw.
fn landed(b: &HalvedBuffers, verb: Verb, qp: usize) -> u64 {
    match verb {
        Verb::Read => b.source(qp),
        _ => b.second(qp),
    }
}

pub fn run(o: &LiveOptions, verb: Verb) -> anyhow::Result<LiveResult> {
    if verb == Verb::Atomic {
        return run_atomics(o);
    }
    let buffers = buffers(o);
    let mut s = Session::open(o, &layout(&buffers, verb), false)?;
    if verb != Verb::Read {
        buffers.fill_sources(&mut s.ep.mem, o.size);
    }
    let (sizes, note) = o.sizes_at(s.pre.mtu_bytes);
    if let (Some(note), false) = (&note, s.pre.peer_is_rnic) {
        bail!(
            "{note}; a perftest peer's -b runs every size to 8 MiB, so the two sides would \
             leave step: give read-bw -a without -b, or -b with -s"
        );
    }
    let mut rows = Vec::new();
    for &size in &sizes {
        rows.push(one_size(&mut s, o, verb, (&buffers, size))?);
    }
    if o.service == ServiceType::Uc {
        // No ACK told the peer its last WRITEs arrived: take in what is still on its way.
        linger(&mut s.ep)?;
    }
    let last_size = sizes.last().copied().unwrap_or(o.size);
    let mine = if s.pre.peer_is_rnic {
        let qps = s.mine.len();
        check_every_qp(&s.ep.mem, qps, last_size, |qp| landed(&buffers, verb, qp))
    } else {
        Verification::PeerIsPerftest
    };
    let mut r = LiveResult::of_sizes(rows, o.all_sizes);
    r.notes.extend(note);
    s.finish_both_ways(r, mine)
}

/// `atomic-bw -b`: each side's atomics on the other's cells at once. Each side checks the
/// values its atomics fetched (each cell's last, against an rnic peer the pattern first)
/// and that its own cells gained exactly what the peer's atomics added: between rnic
/// sides each QP's count crosses after the reports, against perftest its reported
/// iterations shared out over the QPs (unknown in duration mode).
fn run_atomics(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let results_bytes = u64::from(o.tx_depth) * ATOMIC_BYTES;
    let b = HalvedBuffers::new(o.qps, results_bytes.max(u64::from(CYCLE_BUFFER_BYTES)));
    let layout = Layout {
        served_pattern_bytes: b.stride,
        ..b.layout(true)
    };
    let mut s = Session::open(o, &layout, false)?;
    let me = s.me();
    s.oob.keys(&me, &mut || s.ep.turn(IDLE_TURN))?;
    let done = fetch_adds(&mut s, o, |qp| b.source(qp))?;
    let row = exchange_reports(&mut s, "atomic-bw", ATOMIC_BYTES, &done.measured)?;
    let qps = s.mine.len();
    let served: Vec<Option<u64>> = if s.pre.peer_is_rnic {
        let counts = done.per_qp.iter().map(|&n| s.exchange_count(n).map(Some));
        counts.collect::<anyhow::Result<_>>()?
    } else {
        let theirs = row.bidirectional.map_or(0, |[_, theirs]| theirs.iters);
        vec![o.duration.is_none().then_some(theirs / qps as u64); qps]
    };
    let cells = over_every_qp(qps, b.stride, |qp| {
        let count = (served[qp], o.atomic.step());
        check_served(
            &s.ep.mem,
            (b.second(qp), b.stride),
            count,
            qp_pattern_seed(qp),
        )
    });
    s.finish_both_ways(row, done.verification.or_first_mismatch(cells))
}

/// One size: perftest's handshake, this side's loop, with `-a` a handshake after it, then
/// the bandwidth reports; the row is the sum of both directions.
fn one_size(
    s: &mut Session,
    o: &LiveOptions,
    verb: Verb,
    (buffers, size): (&HalvedBuffers, u64),
) -> anyhow::Result<LiveResult> {
    let me = s.me();
    s.oob.keys(&me, &mut || s.ep.turn(IDLE_TURN))?;
    let remotes: Vec<RemoteAddr> = s.peers.iter().map(remote_of).collect();
    let lkey = me.rkey;
    let wr_for =
        |qp: usize, i| one_sided_wr(verb, i, (buffers.source(qp), size, lkey), remotes[qp]);
    let measured = keep_in_flight(s, o, wr_for, |_, _, _| Ok(()))?;
    // The peer's loop may run longer than this side's: the handshakes after it wait for it.
    if o.all_sizes {
        s.oob.keys_waiting(&me, &mut || s.ep.turn(IDLE_TURN))?;
    }
    exchange_reports(s, verb.test_name(), size, &measured)
}

/// The bandwidth reports of a bidirectional size: this side's `measured` operations of
/// `test` out, the peer's in (waiting for the peer's run to end, however long it takes);
/// returns the row of both directions.
pub(super) fn exchange_reports(
    s: &mut Session,
    test: &'static str,
    size: u64,
    measured: &BwMeasured,
) -> anyhow::Result<LiveResult> {
    let r = size_row(test, size, measured);
    let mine = bw_report(size, measured.ops, &r);
    let theirs = s
        .oob
        .bw_reports_waiting(&mine, &mut || s.ep.turn(IDLE_TURN))?;
    if !theirs.is_of_a_run() {
        // perftest's one-way server sends a report of a run it did not make (its report
        // is never filled in); rnic peers say whether they run -b in their version message.
        bail!(
            "-b/--bidirectional: the peer's report is of no run of its own ({} iterations of \
             {} bytes), so it runs without -b: give -b to both sides, as perftest needs",
            theirs.iters,
            theirs.size
        );
    }
    Ok(both_directions(r, mine, theirs))
}

/// `r`, this side's row, as perftest prints a bidirectional one: its own size, iterations
/// and time, the peak, average and message rate of both directions added, with what each
/// direction carried kept for the report.
fn both_directions(mut r: LiveResult, mine: BwReport, theirs: BwReport) -> LiveResult {
    r.row.bw_peak_mb_s = mine.bw_peak + theirs.bw_peak;
    r.row.bw_avg_mb_s = mine.bw_avg + theirs.bw_avg;
    r.row.msg_rate_mops = mine.msg_rate + theirs.msg_rate;
    r.row.goodput_gbps = r.row.bw_avg_mb_s * 1_048_576.0 * 8.0 / 1e9;
    r.bidirectional = Some([mine, theirs]);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bidirectional_row_adds_both_directions_and_keeps_each() {
        let mut r = LiveResult::bandwidth("write-bw", 65536, 5000, 0.5);
        r.row.bw_peak_mb_s = 700.0;
        let mine = BwReport {
            size: 65536,
            iters: 5000,
            bw_peak: 700.0,
            bw_avg: r.row.bw_avg_mb_s,
            msg_rate: r.row.msg_rate_mops,
        };
        let theirs = BwReport {
            bw_peak: 600.0,
            bw_avg: 500.0,
            msg_rate: 0.008,
            ..mine
        };
        let both = both_directions(r.clone(), mine, theirs);
        assert_eq!(both.row.bw_peak_mb_s, 1300.0);
        assert_eq!(both.row.bw_avg_mb_s, r.row.bw_avg_mb_s + 500.0);
        assert_eq!(both.row.msg_rate_mops, r.row.msg_rate_mops + 0.008);
        assert_eq!(both.row.iterations, 5000, "this side's own iterations");
        let gbps = (r.row.bw_avg_mb_s + 500.0) * 1_048_576.0 * 8.0 / 1e9;
        assert!((both.row.goodput_gbps - gbps).abs() < 1e-9);
        assert_eq!(both.bidirectional, Some([mine, theirs]));
    }

    #[test]
    fn the_peers_bytes_are_checked_where_they_land() {
        let o = |size| LiveOptions {
            size,
            qps: 2,
            ..crate::live::tests::options("write-bw --server").unwrap()
        };
        let b = buffers(&o(100));
        assert_eq!(b.stride, 4096, "at least perftest's cycle buffer");
        let layout = layout(&b, Verb::Read);
        assert_eq!(layout.served_pattern_bytes, 4096);
        assert_eq!(super::layout(&b, Verb::Write).served_pattern_bytes, 0);
        assert_eq!(layout.advertised, b.source(0) + 2 * 4096);
        assert_eq!(layout.advertised_for(1), b.second(1));
        assert_eq!(landed(&b, Verb::Write, 1), b.second(1));
        assert_eq!(landed(&b, Verb::Read, 1), b.source(1));
        assert_eq!(layout.mr_len, 4 * 4096);
        assert_eq!(buffers(&o(5000)).stride, 8192);
    }
}
