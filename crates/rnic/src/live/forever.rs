//! perftest's `--run_infinitely` for `write-bw` and `read-bw` clients: work requests kept
//! in flight until the user interrupts (SIGINT or SIGTERM), the bandwidth of every interval
//! of `-D` seconds printed as it ends, one row each, as perftest's `run_iter_bw_infinitely`
//! prints them (no BW peak: perftest measures none in this mode either). Unlike perftest,
//! which dies on the signal, the client then drains what is in flight and ends as any run
//! does: the READ-back that verifies the bytes against an rnic server, the closing
//! handshake, the table of the whole run and `--json` (its `intervals` each interval's row);
//! a second signal during that ends the process.

use std::cell::Cell;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::bail;
use rnic_model::result::SizeResult;
use rnic_transport::{Completion, SendWr};

use super::bw::{in_flight_while, size_row, BwMeasured};
use super::endpoint::Endpoint;
use super::session::Session;
use super::LiveOptions;
use crate::report::text::{bw_header, bw_row, output_figure_line, RESULT_LINE};

/// Set by the signal handler: the user asked the run to end.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_signal: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Makes SIGINT and SIGTERM end the run instead of the process (`catching`), or the
/// process again, as by default: a second Ctrl-C during the close still ends it.
fn catch_interrupts(catching: bool) -> anyhow::Result<()> {
    let handler = if catching {
        on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t
    } else {
        libc::SIG_DFL
    };
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        if unsafe { libc::signal(signal, handler) } == libc::SIG_ERR {
            bail!("--run_infinitely: cannot set the handling of signal {signal}");
        }
    }
    Ok(())
}

/// What an endless run measured: the whole run and each interval.
pub struct Forever {
    pub whole: BwMeasured,
    pub intervals: Vec<SizeResult>,
}

/// Keeps `o.tx_depth` work requests in flight on each QP until interrupted, printing each
/// `interval_s` interval's row to stdout as it ends; then waits for what is in flight.
pub fn keep_in_flight_forever(
    s: &mut Session,
    o: &LiveOptions,
    test: &'static str,
    interval_s: f64,
    mut wr_for: impl FnMut(usize, u64) -> SendWr,
    mut check: impl FnMut(&mut Endpoint, usize, &Completion) -> anyhow::Result<()>,
) -> anyhow::Result<Forever> {
    catch_interrupts(true)?;
    let mut out = std::io::stdout().lock();
    if o.output.is_none() {
        writeln!(out, "{RESULT_LINE}\n{}", bw_header(o.report_gbits))?;
    }
    out.flush()?;
    let start = Instant::now();
    let interval_start = Cell::new(Instant::now());
    let interval_ops = Cell::new(0u64);
    let mut intervals = Vec::new();
    let counts = in_flight_while(
        s,
        o,
        (&mut wr_for, &mut check),
        || !INTERRUPTED.load(Ordering::Relaxed),
        || interval_ops.set(interval_ops.get() + 1),
        |sending| {
            let elapsed_s = interval_start.get().elapsed().as_secs_f64();
            if !sending || elapsed_s < interval_s {
                return Ok(());
            }
            let m = BwMeasured {
                ops: interval_ops.get(),
                elapsed_s,
                peak: None,
                completed: interval_ops.get(),
            };
            let row = size_row(test, o.size, &m).row;
            let line = match o.output.as_deref() {
                Some(figure) => output_figure_line(figure, &row, o.report_gbits, None),
                None => bw_row(&row, o.report_gbits),
            };
            write!(out, "{line}")?;
            out.flush()?;
            intervals.push(row);
            interval_start.set(Instant::now());
            interval_ops.set(0);
            Ok(())
        },
    )?;
    catch_interrupts(false)?;
    let completed = counts.total_completed();
    Ok(Forever {
        whole: BwMeasured {
            ops: completed,
            elapsed_s: start.elapsed().as_secs_f64(),
            peak: None,
            completed,
        },
        intervals,
    })
}
