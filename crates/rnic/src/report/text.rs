//! perftest's text output (Debian perftest 4.5: ib_write_bw, ib_write_lat and friends):
//! the test information block and the result table, with perftest's column headers and
//! printf layouts (tabs included), so scripts that parse perftest output parse ours.
//!
//! Left out: the `local address:` / `remote address:` / `GID:` lines (hardware identifiers
//! with no meaning here) and the CPU-utilization column.

use super::{perftest_gaps, perftest_sorted_kept, LongRun, PerfResult, SizeResult, MB};
use crate::config::Config;
use crate::perf::{PerfSpec, PerfTest, Verb};
use std::fmt::Write as _;

/// perftest's RESULT_LINE.
pub const RESULT_LINE: &str =
    "---------------------------------------------------------------------------------------";
/// perftest's RESULT_FMT.
pub const RESULT_FMT: &str =
    " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
/// perftest's RESULT_FMT_G (--report_gbits).
pub const RESULT_FMT_G: &str =
    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";
/// perftest's RESULT_FMT_LAT (note the trailing space).
pub const RESULT_FMT_LAT: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
/// perftest's RESULT_FMT_LAT_DUR (latency tests with -D).
pub const RESULT_FMT_LAT_DUR: &str = " #bytes        #iterations       t_avg[usec]    tps average";

/// perftest's name of the verb (testsStr).
pub(crate) fn verb_name(v: Verb) -> &'static str {
    match v {
        Verb::Send => "Send",
        Verb::Write => "RDMA_Write",
        Verb::Read => "RDMA_Read",
        Verb::Atomic => "Atomic",
    }
}

/// perftest's name of the QP service (`-c`): RC, UC or UD.
pub(crate) fn connection_type(cfg: &Config) -> &'static str {
    match cfg.qp.transport {
        crate::config::Transport::Rc => "RC",
        crate::config::Transport::Uc => "UC",
        crate::config::Transport::Ud => "UD",
    }
}

/// Whether the test's QPs take their receives from a shared receive queue (`host.use_srq`
/// on a SEND test), as perftest's information block says it.
pub(crate) fn uses_srq(spec: &PerfSpec, cfg: &Config) -> bool {
    cfg.host.use_srq && spec.test.verb() == Verb::Send
}

/// perftest's ON or OFF.
pub(crate) fn on_off(on: bool) -> &'static str {
    if on {
        "ON"
    } else {
        "OFF"
    }
}

/// Whether the QPs were connected by RDMA CM, as perftest's with -R: by MADs on the
/// simulated wire (host.connect = "cm", rnic's default, for RC QPs; UD pairs with
/// host.cm_ud, which -R sets; UC pairs are brought up directly); "direct" is perftest's
/// out-of-band exchange.
pub(crate) fn connected_by_cm(cfg: &Config) -> bool {
    rnic_model::host::cm::connects(cfg)
}

/// The TX depth and CQ moderation the information block shows, as perftest's
/// force_dependecies leaves them: a latency test keeps one operation in flight (the run's
/// depth is 1 whatever `-t` says); an iteration-mode bandwidth test has at most its
/// iterations in flight per QP (perftest lowers the depth to `-n`), and signals at least
/// once per depth (perftest lowers the moderation to the depth).
pub(crate) fn shown_depths(spec: &PerfSpec, cfg: &Config) -> (u32, u32) {
    if spec.test.is_latency() {
        return (1, 1);
    }
    let depth = match spec.duration_us {
        Some(_) => spec.tx_depth,
        None => spec
            .tx_depth
            .min(u32::try_from(spec.iters).unwrap_or(u32::MAX))
            .max(1),
    };
    (depth, cfg.host.cq_mod.min(depth))
}

/// The words of perftest's test title, in its order: the verb, the atomic's kind, `-b`, a
/// post list (bandwidth tests), `BW` or `Latency`, and `Test`. The information block joins
/// them by spaces, perftest's JSON report by underscores (`Atomic_FETCH_AND_ADD_BW_Test`).
pub(crate) fn title_words(
    verb: Verb,
    atomic: Option<&'static str>,
    bidirectional: bool,
    post_list: bool,
    latency: bool,
) -> Vec<&'static str> {
    let mut words = vec![verb_name(verb)];
    words.extend(atomic.filter(|_| verb == Verb::Atomic));
    if bidirectional {
        words.push("Bidirectional");
    }
    if post_list {
        words.push("Post List");
    }
    words.push(if latency { "Latency" } else { "BW" });
    words.push("Test");
    words
}

/// The title words of the test `spec` runs under `cfg`.
pub(crate) fn spec_title(spec: &PerfSpec, cfg: &Config) -> Vec<&'static str> {
    let t = spec.test;
    let both = spec.direction == crate::perf::Direction::Both;
    let atomic = Some(spec.atomic.perftest_name());
    title_words(
        t.verb(),
        atomic,
        both,
        shown_post_list(spec, cfg).is_some(),
        t.is_latency(),
    )
}

/// The post list the information block shows: perftest's, for bandwidth tests only (a note
/// on latency tests, which ignore it).
pub(crate) fn shown_post_list(spec: &PerfSpec, cfg: &Config) -> Option<u32> {
    (!spec.test.is_latency() && cfg.host.post_list > 1).then_some(cfg.host.post_list)
}

/// The receive post list the information block shows: SEND bandwidth tests, whose target
/// reposts its receives in lists (a note on other tests).
pub(crate) fn shown_recv_post_list(spec: &PerfSpec, cfg: &Config) -> Option<u32> {
    let t = spec.test;
    let used = t.verb() == Verb::Send && !t.is_latency() && cfg.host.recv_post_list > 1;
    used.then_some(cfg.host.recv_post_list)
}

/// The receive depth the information block shows. perftest prints the receive depth of
/// SEND tests on the receiving side, and with -b, where this block's side receives too; in
/// iteration mode at most -n, as it lowers it.
pub(crate) fn shown_rx_depth(spec: &PerfSpec, cfg: &Config) -> Option<u32> {
    let t = spec.test;
    let both = spec.direction == crate::perf::Direction::Both;
    if t.verb() != Verb::Send || t.is_latency() || !both {
        return None;
    }
    Some(match spec.duration_us {
        Some(_) => cfg.host.rx_depth,
        None => (cfg.host.rx_depth).min(u32::try_from(spec.iters).unwrap_or(u32::MAX)),
    })
}

/// The information block (ctx_print_test_info), ending with a dashed line.
pub fn test_info(spec: &PerfSpec, cfg: &Config) -> String {
    let mut o = String::new();
    let t = spec.test;
    let _ = writeln!(o, "{RESULT_LINE}");
    let _ = writeln!(o, "                    {}", spec_title(spec, cfg).join(" "));
    let _ = writeln!(o, " Dual-port       : OFF\t\tDevice         : rnic0");
    let _ = writeln!(o, " Number of qps   : {}\t\tTransport type : IB", spec.qps);
    let _ = writeln!(
        o,
        " Connection type : {}\t\tUsing SRQ      : {}",
        connection_type(cfg),
        on_off(uses_srq(spec, cfg))
    );
    let _ = writeln!(o, " PCIe relax order: OFF");
    let _ = writeln!(o, " ibv_wr* API     : OFF");
    let (depth, cq_mod) = shown_depths(spec, cfg);
    let _ = writeln!(o, " TX depth        : {depth}");
    if let Some(l) = shown_post_list(spec, cfg) {
        let _ = writeln!(o, " Post List       : {l}");
    }
    if let Some(l) = shown_recv_post_list(spec, cfg) {
        let _ = writeln!(o, " Recv Post List  : {l}");
    }
    if let Some(rx) = shown_rx_depth(spec, cfg) {
        let _ = writeln!(o, " RX depth        : {rx}");
    }
    if !t.is_latency() {
        // The run's own (-Q, host.cq_mod): perftest defaults to 100, rnic to 1.
        let _ = writeln!(o, " CQ Moderation   : {cq_mod}");
    }
    let _ = writeln!(o, " Mtu             : {}[B]", cfg.qp.pmtu);
    let _ = writeln!(o, " Link type       : Ethernet");
    if matches!(t.verb(), Verb::Read | Verb::Atomic) {
        let _ = writeln!(o, " Outstand reads  : {}", cfg.qp.max_rd_atomic);
    } else {
        let _ = writeln!(o, " Max inline data : {}[B]", cfg.host.inline_bytes);
    }
    let cm = connected_by_cm(cfg);
    let _ = writeln!(o, " rdma_cm QPs\t : {}", on_off(cm));
    let _ = writeln!(
        o,
        " Data ex. method : {}",
        if cm { "rdma_cm" } else { "Ethernet" }
    );
    let _ = writeln!(o, "{RESULT_LINE}");
    o
}

/// The bandwidth table header.
pub fn bw_header(report_gbits: bool) -> &'static str {
    if report_gbits {
        RESULT_FMT_G
    } else {
        RESULT_FMT
    }
}

/// One bandwidth row (REPORT_FMT, or REPORT_FMT_EXT for small Gb/s figures), with newline.
pub fn bw_row(r: &SizeResult, report_gbits: bool) -> String {
    let (peak, avg) = if report_gbits {
        let to_g = MB * 8.0 / 1e9;
        (r.bw_peak_mb_s * to_g, r.bw_avg_mb_s * to_g)
    } else {
        (r.bw_peak_mb_s, r.bw_avg_mb_s)
    };
    if report_gbits && avg < 0.1 {
        format!(
            " {:<7}    {}           {:<7.6}            {:<7.6}            {:<7.6}\n",
            r.size_bytes, r.iterations, peak, avg, r.msg_rate_mops
        )
    } else {
        format!(
            " {:<7}    {:<10}       {:<7.2}            {:<7.2}\t\t   {:<7.6}\n",
            r.size_bytes, r.iterations, peak, avg, r.msg_rate_mops
        )
    }
}

/// perftest's `--output=FIGURE` line for one row of the table, in place of the row: the
/// BW average (in the table's unit: MB/s, or Gb/s with `report_gbits`), the message rate
/// (Mpps) or the average latency (µs; `t_avg_us` under `-D`, as its row prints it), each
/// with perftest's `printf("%lf\n")`: six decimals, where the table rounds to two.
pub fn output_figure_line(
    figure: &str,
    r: &SizeResult,
    report_gbits: bool,
    t_avg_us: Option<f64>,
) -> String {
    let value = match figure {
        "bandwidth" if report_gbits => r.bw_avg_mb_s * MB * 8.0 / 1e9,
        "bandwidth" => r.bw_avg_mb_s,
        "message_rate" => r.msg_rate_mops,
        _ => t_avg_us.unwrap_or(r.latency_us.avg),
    };
    format!("{value:.6}\n")
}

/// One latency row (REPORT_FMT_LAT), with newline.
pub fn lat_row(r: &SizeResult) -> String {
    let l = &r.latency_us;
    format!(
        " {:<7} {}          {:<7.2}        {:<7.2}      {:<7.2}  \t       {:<7.2}     \t{:<7.2}\t\t{:<7.2} \t\t{:<7.2}\n",
        r.size_bytes, r.iterations, l.min, l.max, l.p50, l.avg, l.stdev, l.p99, l.p999
    )
}

/// One duration-mode latency row (REPORT_FMT_LAT_DUR) with average `t_avg_us` (see
/// [`duration_t_avg_us`]), with newline.
pub fn lat_dur_row(r: &SizeResult, t_avg_us: f64) -> String {
    format!(
        " {:<7}       {}            {:<7.2}        {:<7.2}\n",
        r.size_bytes,
        r.iterations,
        t_avg_us,
        r.msg_rate_mops * 1e6
    )
}

/// The average of a duration-mode (`-D`) latency test as perftest computes it: the
/// measurement window over the iterations completed in it, halved for the ping-pong tests
/// (WRITE and SEND, whose iteration is a round trip), not the mean of the samples: the
/// window also holds the part of the iteration it cuts off, so this is slightly larger.
/// csRNA's `--procs` test runs many processes at once, whose window is not one process's
/// iterations end to end: it keeps the samples' mean.
pub fn duration_t_avg_us(r: &SizeResult, spec: &PerfSpec) -> f64 {
    if spec.procs.is_some() || r.iterations == 0 {
        return r.latency_us.avg;
    }
    let rtt_factor = match spec.test.verb() {
        Verb::Write | Verb::Send => 2.0,
        Verb::Read | Verb::Atomic => 1.0,
    };
    r.simulated_time_us / rtt_factor / r.iterations as f64
}

/// Which latency samples the report lists before each row (perftest's -H and -U).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Samples {
    /// The summary rows only.
    #[default]
    Off,
    /// Every sample, sorted (`-H`).
    Sorted,
    /// Every sample in measurement order, then sorted (`-U`, which implies `-H`).
    Unsorted,
}

impl Samples {
    /// From the two flags.
    pub fn from_flags(histogram: bool, unsorted: bool) -> Samples {
        match (histogram, unsorted) {
            (_, true) => Samples::Unsorted,
            (true, false) => Samples::Sorted,
            (false, false) => Samples::Off,
        }
    }
}

/// perftest's sample list: a `#, usec` line, then `index, value` per sample (C's `%g`).
pub(crate) fn sample_list(samples: &[f64]) -> String {
    let mut o = String::from("#, usec\n");
    for (i, v) in samples.iter().enumerate() {
        let _ = writeln!(o, "{}, {}", i + 1, fmt_g(*v));
    }
    o
}

/// C's `%g`: six significant digits, trailing zeros dropped, exponent form outside
/// 1e-4..1e6.
pub fn fmt_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let exp = v.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        let s = format!("{v:.5e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = trim_zeros(m);
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    trim_zeros(&format!("{v:.decimals$}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// The whole perftest-style report: information block, table header, one row per size,
/// closing line. With `samples`, each latency row is preceded by its sample list(s) and
/// the header again, as perftest prints them.
pub fn render(
    result: &PerfResult,
    spec: &PerfSpec,
    cfg: &Config,
    report_gbits: bool,
    samples: Samples,
) -> String {
    let mut o = test_info(spec, cfg);
    let lat = spec.test.is_latency();
    let dur = spec.duration_us.is_some();
    let header = match (lat, dur) {
        (true, false) => RESULT_FMT_LAT,
        (true, true) => RESULT_FMT_LAT_DUR,
        (false, _) => bw_header(report_gbits),
    };
    let _ = writeln!(o, "{header}");
    for row in result.rows() {
        // perftest lists samples only in iteration mode (its duration-mode report keeps no
        // samples): under -U the gaps between consecutive posts in measurement order, then
        // (-U implies -H) the ones its summary keeps, sorted, without the largest two. A
        // `--procs` run's summary keeps every sample (`duration_t_avg_us`), so it lists
        // them all.
        if lat && !dur && samples != Samples::Off {
            let all = &row.latency_samples_us;
            let (unsorted, sorted) = if spec.procs.is_some() {
                let mut sorted = all.clone();
                sorted.sort_by(f64::total_cmp);
                (&all[..], sorted)
            } else {
                (perftest_gaps(all), perftest_sorted_kept(all))
            };
            if samples == Samples::Unsorted {
                o.push_str(&sample_list(unsorted));
            }
            o.push_str(&sample_list(&sorted));
            let _ = writeln!(o, "{RESULT_LINE}");
            let _ = writeln!(o, "{header}");
        }
        let mut line = match (lat, dur) {
            (true, false) => lat_row(&row),
            (true, true) => lat_dur_row(&row, duration_t_avg_us(&row, spec)),
            (false, _) => bw_row(&row, report_gbits),
        };
        if let Some(l) = &row.long_run {
            line.pop();
            line.push_str(&long_run_mark(l, spec, report_gbits));
            line.push('\n');
        }
        o.push_str(&line);
    }
    let _ = writeln!(o, "{RESULT_LINE}");
    o
}

/// `-b --report-both`: after the summed table, each direction's row under its own header
/// (the server's WRITEs to the clients, then the clients' to the server), each over its
/// own measured time.
pub fn directions(result: &PerfResult, report_gbits: bool) -> String {
    let mut o = String::new();
    for (label, row) in ["server to clients", "clients to server"]
        .iter()
        .zip(&result.directions)
    {
        let _ = writeln!(o, " {label}:");
        let _ = writeln!(o, "{}", bw_header(report_gbits));
        o.push_str(&bw_row(row, report_gbits));
    }
    if !o.is_empty() {
        let _ = writeln!(o, "{RESULT_LINE}");
    }
    o
}

/// The statistics registry, one `name value` line per counter, names aligned.
pub fn stats(result: &PerfResult) -> String {
    let w = result.stats.keys().map(|k| k.len()).max().unwrap_or(0);
    let mut o = String::new();
    for (k, v) in &result.stats {
        let _ = writeln!(o, "{k:<w$}  {v}");
    }
    o
}

/// A one-line summary of what perftest does not print, for stderr.
pub fn summary(result: &PerfResult) -> String {
    let verified = if result.bytes_verified {
        format!("{} payload bytes verified", result.verified_bytes)
    } else {
        "payload NOT verified".to_string()
    };
    let status = if result.status == super::RunStatus::Ok {
        String::new()
    } else {
        format!("; status {}", result.status)
    };
    format!(
        "rnic: {} simulated {:.3} us, {} events, {:.3} s wall; {} retransmissions, {} NAKs, {} timeouts; {}; seed {}, profile {}{}",
        result.test,
        result.simulated_time_us,
        result.events,
        result.wall_seconds,
        result.retransmissions,
        result.naks,
        result.timeouts,
        verified,
        result.seed,
        result.profile,
        status
    )
}

/// `-D` runs: when the measurement window opened and why, for stderr after the summary
/// (`None` in iteration mode).
pub fn window_line(result: &PerfResult) -> Option<String> {
    let at = result.window_open_us?;
    let why = result.window_reason.as_deref().unwrap_or("");
    Some(format!("rnic: window opened at {at:.3} µs: {why}"))
}

/// UC/UD runs: the messages sent, received and lost, for stderr after the summary (`None`
/// for RC runs).
pub fn unreliable_line(result: &PerfResult) -> Option<String> {
    result.unreliable.as_ref().map(unreliable_text)
}

/// The messages a UC/UD run sent, received and lost, by cause (also for runs of flows).
/// The receivers count the causes they saw; the rest of the lost messages never reached a
/// receiver as a message it began (their first packet, or the whole datagram, was lost on
/// the wire) or were still open when the run ended, so the causes add up to the lost count.
pub fn unreliable_text(u: &rnic_model::result::UnreliableResult) -> String {
    let seen = u.uc_messages_abandoned + u.no_recv_messages + u.qkey_mismatches + u.recv_errors;
    format!(
        "rnic: {}: {} messages sent, {} received whole, {} lost (UC messages abandoned after \
         a lost or reordered packet {}, no receive posted {}, Q_Key mismatches {}, receive \
         errors {}, not begun by the receiver (first packet lost or overtaken on the wire) \
         or unfinished at the end {}; ping-pong iterations given up {}); what arrived was \
         verified",
        u.transport.to_uppercase(),
        u.messages_sent,
        u.messages_received,
        u.messages_lost,
        u.uc_messages_abandoned,
        u.no_recv_messages,
        u.qkey_mismatches,
        u.recv_errors,
        u.messages_lost.saturating_sub(seen),
        u.iterations_given_up
    ) + &late_answers(u)
}

/// A ping-pong that gave up more iterations than it lost messages: the answers of at least
/// that many came after the give-up time (`-u`), late, not lost (a lost message gives up
/// at most one iteration; the run refuses a give-up shorter than the least round trip, and
/// the NIC's and host's own time come on top of that). The same count as send-lat's
/// verdict (`run::unreliable::judge_late_answers`), which makes such a send-lat incomplete.
fn late_answers(u: &rnic_model::result::UnreliableResult) -> String {
    let late = u.iterations_given_up.saturating_sub(u.messages_lost);
    if late == 0 {
        return String::new();
    }
    let lost = match u.messages_lost {
        0 => "no message was lost".to_string(),
        n => format!("only {n} message(s) were lost"),
    };
    format!(
        "\nrnic: note: {} ping-pong iteration(s) given up though {lost}: the answers of at \
         least {late} came after the give-up time, the local ACK timeout (-u, qp.timeout); \
         raise -u for their latencies",
        u.iterations_given_up
    )
}

/// Runs whose WAN accelerator resent frames on the long link (`None` otherwise): its
/// pseudo-ACKs complete the sender's WRITEs before the far end has them, so a lossy link
/// leaves the table as fast as a clean one (97.58 Gb/s either way at 1 % loss, the far end
/// done 47.8 ms later), which a hunt read as the loss hidden. Says how many frames it
/// resent and when the far end had the last byte.
pub fn accel_resends_note(result: &PerfResult) -> Option<String> {
    let stat = |k: &str| result.stats.get(&format!("net.wan_accel.{k}")).copied();
    let resent = stat("retransmitted").filter(|&n| n > 0)?;
    let drained_us = stat("drained_ps").unwrap_or(0) as f64 / 1e6;
    let end = match stat("gave_up_frames").filter(|&n| n > 0) {
        // A far end that never answered: the accelerator dropped what it held.
        Some(dropped) => format!(
            "it gave up {dropped} frames the far end never acknowledged, after {} rounds \
             without an answer, so their pseudo-ACKed WRITEs were not delivered",
            rnic_model::net::wan_accel::MAX_STALLED_ROUNDS
        ),
        None => format!(
            "the far end acknowledged the last of them at {drained_us:.3} µs of simulated time"
        ),
    };
    Some(format!(
        "rnic: note: the WAN accelerator resent {resent} frames on the long link; the table's \
         figures count the sender's completions, which came from the accelerator's \
         pseudo-ACKs, and {end} (net.wan_accel.* in --stats)"
    ))
}

/// Runs whose WAN accelerator acknowledged nothing though requests crossed it (`None`
/// otherwise): it accelerates go-back-N RC WRITEs alone, so ORNIC's out-of-order WRITEs, UC,
/// READs, SENDs and atomics pass it as they are; a run of them with `net.wan_accel = true`
/// ran as without it, and said nothing (found by a composition hunt).
pub fn accel_idle_note(result: &PerfResult) -> Option<String> {
    let stat = |k: &str| result.stats.get(&format!("net.wan_accel.{k}")).copied();
    let passed = stat("passed").filter(|&n| n > 0)?;
    if stat("pseudo_acks") != Some(0) {
        return None;
    }
    Some(format!(
        "rnic: note: the WAN accelerator acknowledged nothing: it accelerates go-back-N RC \
         WRITEs, and the {passed} requests that crossed it passed as they were (READs, SENDs, \
         atomics, UC and ORNIC's out-of-order WRITEs always do, WRITEs while its buffer, \
         net.wan_accel_buffer_bytes, is full or before it has learned their connection), so \
         the run is the long link's without it (net.wan_accel.* in --stats)"
    ))
}

/// Runs whose switches dropped frames for lack of buffer (`None` otherwise): the figures
/// are a lossy fabric's; RoCEv2 is deployed lossless, which `net.pfc` models. Under flow
/// control the fix is a larger buffer, named by the field each switch takes it from
/// (`buffer_fields`, asked only then, since it plans the topology again:
/// `net.switch_buffer_bytes`, or a topology file's own `buffer_bytes`, which
/// `net.switch_buffer_bytes` does not change).
pub fn drops_note(
    result: &PerfResult,
    buffer_fields: impl FnOnce() -> Vec<String>,
) -> Option<String> {
    let drops = result.stats.get("net.switch_drops").copied().unwrap_or(0);
    if drops == 0 {
        return None;
    }
    let pfc_on = result.stats.contains_key("net.pfc.pauses");
    Some(if pfc_on {
        let fields = buffer_fields();
        let buffers = if fields.is_empty() {
            "net.switch_buffer_bytes".to_string()
        } else {
            fields.join("; ")
        };
        format!(
            "rnic: note: switches dropped {drops} frames with flow control on: an output \
             buffer filled before the ingresses feeding it passed net.pfc_xoff_bytes plus \
             their headroom (the frames on the wire, and those a NIC already handed to its \
             port, when the PAUSE leaves): raise the switch buffers ({buffers}) or lower \
             net.pfc_xoff_bytes"
        )
    } else if let Some(u) = &result.unreliable {
        // UC and UD resend nothing: a dropped frame's message is lost.
        format!(
            "rnic: note: switches dropped {drops} frames for lack of buffer (a lossy fabric: \
             {} never resends, so their messages are lost, counted in the {} line); RoCEv2 \
             fabrics usually run lossless: --set net.pfc=true",
            u.transport.to_uppercase(),
            u.transport.to_uppercase()
        )
    } else {
        format!(
            "rnic: note: switches dropped {drops} frames for lack of buffer (a lossy fabric: \
             the figures include go-back-N and timeout recovery); RoCEv2 fabrics usually run \
             lossless: --set net.pfc=true"
        )
    })
}

/// Runs whose NICs dropped received frames because their receive buffer was full (`None`
/// otherwise): the link brought frames faster than PCIe took their payload to the host.
pub fn rx_buffer_note(result: &PerfResult) -> Option<String> {
    let drops: u64 = result
        .stats
        .iter()
        .filter(|(k, _)| k.ends_with(".nic.rx_buffer.drops"))
        .map(|(_, v)| *v)
        .sum();
    if drops == 0 {
        return None;
    }
    let pfc_on = result.stats.contains_key("net.pfc.pauses");
    Some(if pfc_on {
        format!(
            "rnic: note: NICs dropped {drops} received frames with flow control on: the \
             receive buffer filled beyond the XOFF level plus its headroom before the pause \
             held the sender; raise nic.rx_pfc_headroom_bytes or nic.rx_buffer_bytes"
        )
    } else {
        format!(
            "rnic: note: NICs dropped {drops} received frames for lack of receive buffer \
             (nic.rx_buffer_bytes): the links brought data faster than PCIe took it to the \
             host, and go-back-N recovered them; a lossless fabric pauses instead: --set \
             net.pfc=true"
        )
    })
}

/// Runs with ECN marking and PFC on per-port buffers whose XOFF level is at or below the
/// marking threshold (the defaults: 256 KiB against 400 KB): an ingress then pauses its
/// sender before a queue it alone feeds reaches kmin, so DCQCN hears little and PFC does
/// the work. The defaults stay (moving them would move every recorded PFC run); the note
/// says so, and `net.switch_buffer = "shared"` derives levels that mark first.
pub fn pfc_before_ecn_note(cfg: &rnic_model::config::Config) -> Option<String> {
    let net = &cfg.net;
    let per_port = net.switch_buffer == rnic_model::config::SwitchBufferMode::PerPort;
    (per_port && net.pfc && net.ecn.enabled && net.pfc_xoff_bytes <= net.ecn.kmin_bytes).then(
        || {
            format!(
                "rnic: note: net.pfc_xoff_bytes = {} is not above net.ecn.kmin_bytes = {}: an \
             ingress pauses its sender before a queue it alone feeds is marked, so PFC acts \
             before ECN; raise net.pfc_xoff_bytes (and the buffer) above kmin, lower kmin, or \
             use net.switch_buffer = \"shared\", whose derived levels mark first",
                net.pfc_xoff_bytes, net.ecn.kmin_bytes
            )
        },
    )
}

/// Runs on `net.topology = "back_to_back"` that set a switch's fields (`None` otherwise):
/// the two NICs share one cable and no switch, so the switch's latency, buffer and PFC
/// levels changed nothing there, in silence. A note, not a refusal: a sweep's `[set]` may
/// share them with its points on a switched topology.
pub fn switchless_note(cfg: &rnic_model::config::Config) -> Option<String> {
    let (net, base) = (&cfg.net, rnic_model::config::NetConfig::default());
    if net.topology != "back_to_back" {
        return None;
    }
    let buffer = |b| match b {
        rnic_model::config::SwitchBufferMode::PerPort => "\"per_port\"".to_string(),
        rnic_model::config::SwitchBufferMode::Shared => "\"shared\"".to_string(),
    };
    // Each field as it is and as the baseline has it.
    macro_rules! field {
        ($f:ident) => {
            (stringify!($f), net.$f.to_string(), base.$f.to_string())
        };
    }
    let fields = [
        field!(switch_latency_ns),
        field!(switch_buffer_bytes),
        (
            "switch_buffer",
            buffer(net.switch_buffer),
            buffer(base.switch_buffer),
        ),
        field!(pfc_xoff_bytes),
        field!(pfc_xon_bytes),
    ];
    let set: Vec<String> = fields
        .into_iter()
        .filter(|(_, now, baseline)| now != baseline)
        .map(|(k, now, _)| format!("net.{k} = {now}"))
        .collect();
    let verb = rnic_model::words::agree(set.len() as u64, "has", "have");
    (!set.is_empty()).then(|| {
        format!(
            "rnic: note: {} {verb} no effect: net.topology = \"back_to_back\" joins the two \
             NICs by one cable, with no switch (each NIC's receive buffer is \
             nic.rx_buffer_bytes, its PFC levels nic.rx_pfc_*)",
            set.join(", ")
        )
    })
}

/// The notes a run's config alone calls for, whatever it measured: PFC that pauses before ECN
/// marks, switch fields on a switchless cable, a burst without a rate. `rnic perf`, `rnic run`
/// and each point of `rnic sweep` (which says them once, with how many points they concern).
pub fn config_notes(cfg: &rnic_model::config::Config) -> Vec<String> {
    [
        pfc_before_ecn_note(cfg),
        switchless_note(cfg),
        burst_without_rate_note(cfg),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// `flag`, an RC QP's retry setting, given to a run of `test` over an unreliable service
/// (`None` for RC): a UC or UD QP waits for no acknowledgement and resends nothing, so the
/// setting changes nothing (perftest takes it there in silence). Except the timeout
/// (`timeout`) in a UC/UD ping-pong (write-lat, send-lat): it is when the client gives up
/// an iteration whose ping or pong was lost (`None` then too).
pub fn retry_no_effect_note(
    (flag, timeout): (&str, bool),
    test: crate::perf::PerfTest,
    transport: rnic_model::config::Transport,
) -> Option<String> {
    use crate::perf::PerfTest;
    use rnic_model::config::Transport;
    if timeout && matches!(test, PerfTest::WriteLat | PerfTest::SendLat) {
        return None;
    }
    let test = test.name();
    let service = match transport {
        Transport::Rc => return None,
        Transport::Uc => "UC",
        Transport::Ud => "UD",
    };
    Some(format!(
        "rnic: {flag} has no effect on {test} over {service} (-c, qp.transport): an \
         unreliable QP waits for no acknowledgement and resends nothing"
    ))
}

/// Runs that give the rate limiter a burst but no rate (`None` otherwise): with
/// `qp.rate_limit_gbps = 0` no QP is limited, so `qp.rate_limit_burst_bytes` changed nothing
/// in silence (`--burst_size` without `--rate_limit` is refused; a sweep's `[set]` may share
/// the burst with points of a rate, so here a note).
pub fn burst_without_rate_note(cfg: &rnic_model::config::Config) -> Option<String> {
    let qp = &cfg.qp;
    (qp.rate_limit_gbps == 0.0 && qp.rate_limit_burst_bytes > 0).then(|| {
        format!(
            "rnic: note: qp.rate_limit_burst_bytes = {} has no effect: qp.rate_limit_gbps = 0, \
             no QP is rate limited (set a rate with --set qp.rate_limit_gbps=GBPS, or \
             perf's --rate_limit)",
            qp.rate_limit_burst_bytes
        )
    })
}

/// Runs with flow control on a topology whose routes let pauses wait on each other round
/// a cycle of links (`None` otherwise): a PFC deadlock is possible there, whether or not
/// this run's traffic met it.
pub fn pfc_cycle_note(result: &PerfResult) -> Option<String> {
    let links = result
        .stats
        .get("net.pfc.buffer_cycle_links")
        .copied()
        .unwrap_or(0);
    (links > 0).then(|| {
        format!(
            "rnic: note: with net.pfc on, this topology's routes form a cyclic buffer \
             dependency ({links} link directions whose buffers can each wait on the next): \
             pauses can then hold each other forever (a PFC deadlock), which traffic crossing \
             the cycle all at once can trigger; route so that every path climbs then \
             descends (a tree, or leaf-spine), or keep the traffic off the cycle"
        )
    })
}

/// The mark at the end of a table row whose `-D` window cannot stand for the run: the rate
/// over the run in the row's unit and a `-D` long enough, so the row is not read as the
/// answer (perftest prints text after its figures too, its CPU utilisation).
pub fn long_run_mark(l: &LongRun, spec: &PerfSpec, report_gbits: bool) -> String {
    let rate = if spec.test.is_latency() {
        let rtt_factor = match spec.test.verb() {
            Verb::Write | Verb::Send => 2.0,
            Verb::Read | Verb::Atomic => 1.0,
        };
        let t_avg = l.time_us / rtt_factor / l.ops_completed.max(1) as f64;
        format!("t_avg {t_avg:.2} usec")
    } else if report_gbits {
        format!("{:.2} Gb/sec", l.bw_avg_mb_s * MB * 8.0 / 1e9)
    } else {
        format!("{:.2} MB/sec", l.bw_avg_mb_s)
    };
    let longer = l
        .long_enough_duration_s
        .filter(|_| !l.window_long_enough)
        .map(|d| format!("; -D {d} or longer"))
        .unwrap_or_default();
    format!(
        "   [window not settled: {rate}, {:.6} Mpps over the run ({:.3} ms){longer}]",
        l.msg_rate_mops,
        l.time_us / 1e3
    )
}

/// The warning of a `-D` run whose window cannot stand for the run (`None` otherwise): its
/// rate never settled, or the window is too short for the retransmission timeouts the run
/// saw. The figures are measured anyway, so this is not an error; it gives the rate over
/// the run beside the window's and says what to change.
pub fn window_warning(result: &PerfResult) -> Option<String> {
    if result.window_settled != Some(false) {
        return None;
    }
    let mut o = String::from("rnic: warning: the -D window's figures do not stand for the run: ");
    let l = result.long_run.as_ref();
    let reason = result.window_reason.as_deref().unwrap_or("");
    let above_wire = |c: &&str| c.starts_with(rnic_model::verdict::ABOVE_WIRE);
    if let Some(above) = reason.split("; ").find(above_wire) {
        // Settled and long enough for its stalls, but shorter than its completions' bursts.
        if l.is_none_or(|l| l.rate_settled && l.window_long_enough) {
            let _ = write!(o, "{above}. Give it a longer -D.");
            return Some(o);
        }
    }
    if l.is_none_or(|l| !l.rate_settled) {
        o.push_str(
            "the rate never settled (still in its start-up transient, or varying by nature, \
             as under loss)",
        );
    }
    if let Some(l) = l {
        if !l.window_long_enough {
            if !l.rate_settled {
                o.push_str(", and ");
            }
            let _ = write!(
                o,
                "the window is too short for the {} the run saw",
                l.stalls()
            );
        }
        let _ = write!(
            o,
            ". The window measured {:.2} Gb/s; over the run, from the first post to the \
             window's end ({:.3} ms), it held {:.2} Gb/s ({:.6} Mpps).",
            result.goodput_gbps,
            l.time_us / 1e3,
            l.goodput_gbps,
            l.msg_rate_mops
        );
        if let Some(d) = l.long_enough_duration_s.filter(|_| !l.window_long_enough) {
            let _ = write!(o, " Give -D {d} or longer.");
            return Some(o);
        }
    } else {
        o.push_str("; the window was measured anyway.");
    }
    o.push_str(
        " Give it longer (--set sim.settle_max_windows=N, sim.max_warmup_us=N), accept more \
         spread (--set sim.settle_tolerance=F) or fix the warm-up (--set sim.warmup_us=N)",
    );
    Some(o)
}

/// Just the test name as perftest titles it, e.g. `RDMA_Write BW`.
pub fn title(test: PerfTest) -> String {
    format!(
        "{} {}",
        verb_name(test.verb()),
        if test.is_latency() { "Latency" } else { "BW" }
    )
}
