//! `rnic calc [qd|frame]`: the command line of [`crate::calc`] (text or JSON out).

use super::args::{CalcCmd, CalcFrameCmd, CalcQdCmd, CalcWhat};
use crate::calc::{self, QdInput, FRAME_OPCODES};
use crate::report::json;
use crate::{output, UsageError};
use rnic_model::words::{counted, short_num};
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

/// What `rnic calc` alone prints: everything it can compute, with an example each.
const LIST: &str = "\
rnic calc computes, in closed form:
  qd      queue depth that keeps a link busy: bandwidth × RTT / frame size
            rnic calc qd --gbps 100 --km 100 --frame-bytes 4178
  frame   bytes of one RoCEv2 packet on an Ethernet link, header by header
            rnic calc frame --payload-bytes 4096 --opcode write-first --vlan
`rnic calc WHAT --help` lists each one's flags.
";

pub(super) fn run(c: CalcCmd, out: &mut dyn Write) -> anyhow::Result<()> {
    match c.what {
        None => Ok(out.write_all(LIST.as_bytes())?),
        Some(CalcWhat::Qd(q)) => qd(&q, out),
        Some(CalcWhat::Frame(f)) => frame(&f, out),
    }
}

fn qd(c: &CalcQdCmd, out: &mut dyn Write) -> anyhow::Result<()> {
    let (rtt_us, rtt_from) = match (c.km, c.rtt_us) {
        (Some(km), _) => {
            let us_per_km = c.us_per_km.unwrap_or(calc::FIBRE_US_PER_KM);
            (
                calc::rtt_us(km, us_per_km).map_err(UsageError)?,
                format!("2 × {} km × {} µs/km", short_num(km), short_num(us_per_km)),
            )
        }
        // The delay per km only turns --km into a round trip: beside a given round trip it
        // would change nothing, so it is refused rather than ignored.
        (None, Some(_)) if c.us_per_km.is_some() => {
            return Err(UsageError(
                "--us-per-km turns --km into a round trip, but --rtt-us gives the round trip \
                 itself, so it would change nothing: leave out --us-per-km, or give --km \
                 instead of --rtt-us"
                    .into(),
            )
            .into())
        }
        (None, Some(rtt)) => (rtt, "--rtt-us".to_string()),
        // clap's group asks for one of them first; kept for callers that build the command.
        (None, None) => return Err(UsageError("--km or --rtt-us is required".into()).into()),
    };
    let r = calc::queue_depth(QdInput {
        gbps: c.gbps,
        rtt_us,
        frame_bytes: c.frame_bytes,
    })
    .map_err(UsageError)?;
    let mut t = String::new();
    writeln!(t, "queue depth      {}", counted(r.queue_depth, "frame"))?;
    let rounding = if r.exact < 1.0 {
        "under one frame: at least 1"
    } else {
        "rounded down"
    };
    writeln!(
        t,
        "                 = {} Gbit/s × {} µs / ({} B × 8) = {:.3}, {rounding}",
        short_num(c.gbps),
        short_num(rtt_us),
        c.frame_bytes,
        r.exact
    )?;
    writeln!(t, "round trip       {} µs ({rtt_from})", short_num(rtt_us))?;
    writeln!(
        t,
        "bytes in flight  {:.0} B ({:.3} MB)",
        r.bytes_in_flight,
        r.bytes_in_flight / 1e6
    )?;
    emit(c.json.as_deref(), &r, &t, out)
}

fn frame(c: &CalcFrameCmd, out: &mut dyn Write) -> anyhow::Result<()> {
    let Some(&(_, opcode)) = FRAME_OPCODES.iter().find(|(n, _)| *n == c.opcode) else {
        return Err(UsageError(format!("--opcode {}: not a known opcode", c.opcode)).into());
    };
    let f = calc::frame_bytes(opcode, c.payload_bytes, c.vlan).map_err(UsageError)?;
    let mut t = String::new();
    for p in &f.parts {
        writeln!(t, "{:<18} {:>8} B", p.name, p.bytes)?;
    }
    writeln!(t, "{:<18} {:>8} B  ({})", "frame", f.frame_bytes, f.opcode)?;
    emit(c.json.as_deref(), &f, &t, out)
}

/// Text to `out`, and JSON to a file or (`-`) to `out` instead of the text.
fn emit<T: serde::Serialize>(
    json_path: Option<&Path>,
    value: &T,
    text: &str,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let to_stdout = json_path == Some(Path::new("-"));
    if let Some(path) = json_path.filter(|_| !to_stdout) {
        output::check_file("JSON output", path)?;
    }
    let mut s = serde_json::to_string_pretty(value)?;
    s.push('\n');
    if to_stdout {
        out.write_all(s.as_bytes())?;
        return Ok(());
    }
    out.write_all(text.as_bytes())?;
    if let Some(path) = json_path {
        json::write_file(path, s.as_bytes())?;
    }
    Ok(())
}
