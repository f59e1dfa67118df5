//! The `rnic` command line: argument parsing ([`args`]) and the commands. [`main_with`] is the
//! whole program minus the process: arguments in, text out, exit status back, with the
//! simulation behind a [`PerfRunner`] so it can be tested without the model.

pub mod args;
mod calc;
mod pcap;
pub mod perftest_compat;

use crate::config::{self, show, Config, Override};
use crate::perf::{PerfRunner, RunInputs};
use crate::report::RunStatus;
use crate::report::{json, text, PerfResult};
use crate::scenario::{load_scenario, CliOverrides};
use crate::sweep::{self, SweepOptions};
use crate::{exit_status, output, progress, repro, OutputError, RunFailed};
use anyhow::Context as _;
use args::{Cli, Command, ConfigCmd, PerfCmd, ReproCmd, RunCmd, SweepCmd};
use clap::Parser as _;
use rnic_model::words::counted;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Runs the program: parses `args` (the first is the program name), runs the command,
/// writes to `out`/`err`, returns the exit status (see [`crate::exit`]).
pub fn main_with<I, T>(
    args: I,
    runner: &dyn PerfRunner,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let text = e.render().to_string();
            let _ = if e.use_stderr() {
                err.write_all(text.as_bytes())
            } else {
                out.write_all(text.as_bytes())
            };
            return u8::try_from(e.exit_code()).unwrap_or(2);
        }
    };
    let mut stdout = WatchedWriter {
        inner: out,
        error: None,
    };
    // A bar only on a terminal, not in CI, and not with --quiet; commands whose results go
    // to standard output (`--json -`) turn it off too.
    let progress = Progress {
        bar: !cli.quiet && sweep::progress_wanted(),
        quiet: cli.quiet,
    };
    let result = dispatch(cli.command, progress, runner, &mut stdout, err);
    // A failed write to standard output (other than the reader leaving) is an output error.
    let result = match (result, stdout.error.take()) {
        (Err(e), Some(io)) if !is_broken_pipe(&e) => Err(anyhow::Error::new(OutputError(format!(
            "cannot write to standard output: {io}"
        )))),
        (r, _) => r,
    };
    match result {
        Ok(()) => 0,
        // `rnic ... | head`: the reader left; stop quietly, as other command-line tools do.
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            let _ = write_error(&e, err);
            exit_status(&e)
        }
    }
}

/// Standard output that remembers its first write error, so the exit status can tell an
/// output that could not be written (exit 4) from the error it caused upstream.
struct WatchedWriter<'a> {
    inner: &'a mut dyn Write,
    error: Option<std::io::Error>,
}

impl Write for WatchedWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf).inspect_err(|e| {
            self.error
                .get_or_insert_with(|| std::io::Error::new(e.kind(), e.to_string()));
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().inspect_err(|e| {
            self.error
                .get_or_insert_with(|| std::io::Error::new(e.kind(), e.to_string()));
        })
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Prints `error: ...` and one `caused by:` line per underlying error.
pub fn write_error(e: &anyhow::Error, err: &mut dyn Write) -> std::io::Result<()> {
    let mut chain = e.chain();
    if let Some(top) = chain.next() {
        writeln!(err, "error: {top}")?;
    }
    for cause in chain {
        writeln!(err, "  caused by: {cause}")?;
    }
    Ok(())
}

/// What progress a command may show on standard error.
#[derive(Debug, Clone, Copy)]
struct Progress {
    /// Draw a progress bar ([`sweep::progress_wanted`] and no `--quiet`).
    bar: bool,
    /// `--quiet`: no progress lines either.
    quiet: bool,
}

fn dispatch(
    cmd: Command,
    progress: Progress,
    runner: &dyn PerfRunner,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    match cmd {
        Command::Perf(c) => cmd_perf(*c, progress, runner, out, err),
        Command::Config(ConfigCmd::Show { profile, set }) => cmd_config_show(profile, &set, out),
        Command::Config(ConfigCmd::Profiles) => cmd_profiles(out),
        Command::Run(c) => cmd_run(c, progress, runner, out, err),
        Command::Sweep(c) => cmd_sweep(c, progress, runner, out, err),
        Command::Demo(c) => {
            let text = demo(c.seed)?;
            out.write_all(text.as_bytes())?;
            Ok(())
        }
        Command::Repro(c) => cmd_repro(c, progress, runner, out, err),
        Command::Pcap(args::PcapCmd::Check(c)) => pcap::check(&c, out, err),
        Command::Calc(c) => calc::run(c, out),
        Command::Accel(c) => crate::accel::run(&c, out),
        Command::Live(c) => crate::live::run(&c, out),
    }
}

/// The loopback demo: every RC operation over an impaired in-memory fabric, bytes verified.
fn demo(seed: u64) -> anyhow::Result<String> {
    rnic_loopback::demo::run_demo(seed).map_err(|e| anyhow::anyhow!("loopback demo failed: {e}"))
}

/// `rnic perf`: perftest's flags checked as perftest checks them (notes for flags with no
/// effect, usage errors for combinations it refuses), then the run, its table or figure, the
/// optional perftest JSON, and the verifier's verdict.
fn cmd_perf(
    c: PerfCmd,
    progress: Progress,
    runner: &dyn PerfRunner,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    note_flags_without_effect(&c, err)?;
    check_output_figure(&c)?;
    check_tos(&c)?;
    check_use_srq(&c)?;
    check_limits_have_a_figure(&c)?;
    check_post_list(&c, err)?;
    if c.perform_warm_up && c.test.is_latency() {
        writeln!(
            err,
            "rnic: --perform_warm_up has no effect on {}: as in perftest, only bandwidth tests warm up",
            c.test.name()
        )?;
    }
    let inputs = perf_inputs(&c)?;
    if c.rdma_cm {
        rdma_cm_service(&inputs)?;
    }
    let out_json = c
        .out_json_file
        .clone()
        .or_else(|| c.out_json.then(|| PathBuf::from("perftest_out.json")));
    check_outputs_distinct(
        &[
            ("--json", c.sim.json.as_deref()),
            ("--out_json_file", out_json.as_deref()),
            ("--pcap", c.pcap.as_deref()),
        ],
        c.sim.json.as_deref(),
        &inputs,
        false,
        Vec::new(),
    )?;
    if let Some(path) = &out_json {
        output::check_file("--out_json_file", path)?;
    }
    let r = run_and_report(
        &inputs,
        c.sim.json.as_deref(),
        out_json.as_deref(),
        progress.bar,
        c.output.as_deref(),
        runner,
        out,
        err,
    )?;
    perftest_verdict(&c, &r)
}

/// Notes on standard error for the compatibility flags rnic accepts but does not model, and
/// for flags the chosen test ignores (perftest ignores them too, silently).
fn note_flags_without_effect(c: &PerfCmd, err: &mut dyn Write) -> anyhow::Result<()> {
    for note in c.compat.check()? {
        writeln!(err, "{note}")?;
    }
    for (flag, why) in no_effect_flags(c) {
        writeln!(
            err,
            "rnic: {flag} has no effect on {}: {why}",
            c.test.name()
        )?;
    }
    if c.no_peak && c.test.is_latency() {
        writeln!(
            err,
            "rnic: -N/--noPeak has no effect on {}: only bandwidth tests report a BW peak",
            c.test.name()
        )?;
    }
    Ok(())
}

/// perftest's `--output` names a figure the test measures: bandwidth tests give the
/// bandwidth or the message rate, latency tests the latency. It prints one figure instead
/// of the table, so the JSON on standard output, and what prints into or after the table,
/// would have nowhere to go: refused, not dropped.
fn check_output_figure(c: &PerfCmd) -> anyhow::Result<()> {
    match (c.output.as_deref(), c.test.is_latency()) {
        (Some(figure @ ("bandwidth" | "message_rate")), true) => {
            anyhow::bail!(crate::UsageError(format!(
                "--output={figure}: {} is a latency test, which reports latency only; give \
                 --output=latency, or a bandwidth test (e.g. {})",
                c.test.name(),
                c.test.name().replace("-lat", "-bw")
            )))
        }
        (Some("latency"), false) => anyhow::bail!(crate::UsageError(format!(
            "--output=latency: {} is a bandwidth test, which reports bandwidth and message \
             rate; give --output=bandwidth or --output=message_rate, or a latency test (e.g. {})",
            c.test.name(),
            c.test.name().replace("-bw", "-lat")
        ))),
        _ => {}
    }
    let Some(figure) = c.output.as_deref() else {
        return Ok(());
    };
    if c.sim.json.as_deref() == Some(Path::new("-")) {
        anyhow::bail!(crate::UsageError(format!(
            "--output={figure} prints its figure on standard output, which --json - \
             takes for the JSON: give --json a file, or leave out one of them"
        )));
    }
    let table_only = [
        (c.stats, "--stats"),
        (c.report_both, "--report-both"),
        (c.report_histogram, "-H/--report-histogram"),
        (c.report_unsorted, "-U/--report-unsorted"),
    ];
    if let Some((_, flag)) = table_only.into_iter().find(|&(given, _)| given) {
        anyhow::bail!(crate::UsageError(format!(
            "{flag} prints into the table, which --output={figure} replaces by one \
             figure: leave out one of them (--json FILE also writes the counters and \
             each direction)"
        )));
    }
    Ok(())
}

/// `-T/--tos` is RDMA CM's type of service: perftest takes it with `-R` only, and drops
/// `--tclass` then; both set the same traffic class here, so giving both is refused rather
/// than one silently winning.
fn check_tos(c: &PerfCmd) -> anyhow::Result<()> {
    let Some(tos) = c.tos else { return Ok(()) };
    if !c.rdma_cm {
        anyhow::bail!(crate::UsageError(format!(
            "-T/--tos {tos}: the TOS of an RDMA CM connection, with -R/--rdma_cm only, as \
             perftest takes it; without -R, --tclass sets every frame's TOS byte"
        )));
    }
    if let Some(tclass) = c.tclass {
        anyhow::bail!(crate::UsageError(format!(
            "--tclass {tclass}: with -R/--rdma_cm the connection's TOS is -T/--tos ({tos}), as \
             perftest's: give one of them"
        )));
    }
    Ok(())
}

/// `--use-srq` shares receives, which only SEND tests post (perftest: "Using SRQ only
/// available in SEND tests").
fn check_use_srq(c: &PerfCmd) -> anyhow::Result<()> {
    use rnic_model::workload::Verb;
    if c.use_srq && c.test.verb() != Verb::Send {
        anyhow::bail!(crate::UsageError(format!(
            "--use-srq: send-bw and send-lat have it, not {} (only SEND tests post receives), \
             as perftest",
            c.test.name()
        )));
    }
    Ok(())
}

/// perftest's verifier judges the BW average and the message rate of bandwidth tests; a
/// latency test reports neither, so a limit there could only be checked against a figure
/// its table never shows.
fn check_limits_have_a_figure(c: &PerfCmd) -> anyhow::Result<()> {
    if !c.test.is_latency() {
        return Ok(());
    }
    let flag = match (c.limit_bw, c.limit_msgrate) {
        (Some(_), _) => Some("-w/--limit_bw"),
        (None, Some(_)) => Some("-y/--limit_msgrate"),
        (None, None) => None,
    };
    if let Some(flag) = flag {
        anyhow::bail!(crate::UsageError(format!(
            "{flag}: {} is a latency test, which reports no bandwidth or message rate \
             for the limit to judge (perftest checks it on bandwidth tests only); leave \
             it out, or run a bandwidth test (e.g. {})",
            c.test.name(),
            c.test.name().replace("-lat", "-bw")
        )));
    }
    Ok(())
}

/// perftest's force_dependecies: a post list without -Q sets the CQ moderation to its size
/// (a note says so); with -Q the list must be a multiple of it.
fn check_post_list(c: &PerfCmd, err: &mut dyn Write) -> anyhow::Result<()> {
    if let Some(l) = c.list_sets_cq_mod() {
        writeln!(
            err,
            "rnic: -l/--post_list {l} without -Q/--cq-mod: CQ moderation will be the size of \
             the post list, {l}, as perftest sets it"
        )?;
    }
    if let (Some(l), Some(q)) = (c.post_list, c.cq_mod) {
        if l > 1 && !c.test.is_latency() && l % q != 0 {
            anyhow::bail!(crate::UsageError(format!(
                "-l/--post_list {l} with -Q/--cq-mod {q}: the post list size must be a \
                 multiple of the CQ moderation, as perftest requires (it signals the last WQE \
                 of a list); give a -Q that divides {l}, or leave -Q out to signal once per list"
            )));
        }
    }
    Ok(())
}

/// What the run is made of: the profile (baseline unless `--profile`), the rate limiter's
/// fields then `--set` (which wins), the seed, perftest's options and the pcap path.
fn perf_inputs(c: &PerfCmd) -> anyhow::Result<RunInputs> {
    let mut sets = c.rate_limit_sets()?;
    sets.extend(c.config_sets()?);
    Ok(RunInputs {
        profile: c
            .sim
            .profile
            .clone()
            .unwrap_or_else(|| "baseline".to_string()),
        sets,
        seed: c.sim.seed,
        seed_from: "--seed",
        perf: c.options(),
        pcap: c.pcap.clone(),
        pcap_node: c.pcap_node,
    })
}

/// `--out_json`/`--out_json_file`: the result in perftest's own JSON format, at `path`.
fn write_perftest_json(
    path: &Path,
    r: &PerfResult,
    spec: &crate::perf::PerfSpec,
    cfg: &Config,
    report_gbits: bool,
) -> anyhow::Result<()> {
    let report = crate::report::perftest_json::report(r, spec, cfg, report_gbits);
    crate::output::write_named("--out_json_file", path, report.to_text().as_bytes())?;
    Ok(())
}

/// `-R/--rdma_cm` with the run's QP service: librdmacm connects no UC QP, so perftest exits
/// on `-c UC -R` and rnic refuses it (it ran UC pairs brought up directly in silence); RC
/// pairs are connected by REQ, REP and RTU, UD pairs resolved by SIDR_REQ and SIDR_REP.
fn rdma_cm_service(inputs: &RunInputs) -> anyhow::Result<()> {
    use rnic_model::config::Transport;
    let Ok((cfg, _)) = inputs.resolve() else {
        // The run reports its own configuration error.
        return Ok(());
    };
    if cfg.qp.transport == Transport::Uc {
        anyhow::bail!(crate::UsageError(
            "-R/--rdma_cm with UC QPs (-c/--connection UC, qp.transport): librdmacm does not \
             connect UC QPs, and perftest exits ('UC is not supported in librdmacm'); leave \
             out -R (rnic brings UC pairs up directly) or run RC"
                .to_string()
        ));
    }
    Ok(())
}

/// perftest's verifier (`-w`/`-y`: below the limit is a failure, exit status 1), on the
/// figures of the table (`--output`'s figure is printed by [`run_and_report`]).
fn perftest_verdict(c: &PerfCmd, r: &PerfResult) -> anyhow::Result<()> {
    let unit = if c.report_gbits { "Gbit/s" } else { "MiB/s" };
    // The table's BW average: MiB/s, or Gbit/s as perftest converts it.
    let in_unit = |mb_s: f64| {
        if c.report_gbits {
            mb_s * crate::model::result::MB * 8.0 / 1e9
        } else {
            mb_s
        }
    };
    let rows = r.rows();
    // perftest's verifier passes when any row of the table meets the limit (with -a, any
    // size; it accumulates the verdict over the sizes).
    let best_bw = rows
        .iter()
        .map(|row| in_unit(row.bw_avg_mb_s))
        .fold(f64::NEG_INFINITY, f64::max);
    let best_rate = rows
        .iter()
        .map(|row| row.msg_rate_mops)
        .fold(f64::NEG_INFINITY, f64::max);
    let what = if rows.len() > 1 {
        "best of the sizes' "
    } else {
        ""
    };
    // A limit as the user wrote it (1e300, not its 301 digits).
    let shown = rnic_model::config::schema::shown_number;
    if let Some(limit) = c.limit_bw.filter(|&l| best_bw < l).map(shown) {
        anyhow::bail!(
            "the {what}BW average {best_bw:.2} {unit} is below the -w/--limit_bw {limit} {unit}"
        );
    }
    if let Some(limit) = c.limit_msgrate.filter(|&l| best_rate < l).map(shown) {
        anyhow::bail!(
            "the {what}message rate {best_rate:.6} Mpps is below the -y/--limit_msgrate \
             {limit} Mpps"
        );
    }
    Ok(())
}

/// Resolves, runs, prints perftest's table, or `--output`'s `figure` in its place (unless
/// JSON goes to stdout), and writes JSON, and perftest's JSON at `perftest_json`
/// (`--out_json_file`), whatever the status; a progress bar when `bar` and the JSON does
/// not go to stdout. Returns the result of a run that ended `ok`.
#[allow(clippy::too_many_arguments)]
pub fn run_and_report(
    inputs: &RunInputs,
    json_path: Option<&Path>,
    perftest_json: Option<&Path>,
    bar: bool,
    figure: Option<&str>,
    runner: &dyn PerfRunner,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<PerfResult> {
    let (cfg, spec) = inputs.resolve()?;
    runner.check(&cfg, &spec)?;
    crate::report::side_files::check_trace_has_a_file(&cfg, json_path)?;
    let json_to_stdout = json_path.is_some_and(|p| p == Path::new("-"));
    // The samples of -H/-U are listed in the table, which the JSON replaces on standard
    // output, and the JSON holds no list of them: refused, not dropped.
    let listed = [
        (
            inputs.perf.report_unsorted,
            "-U/--report-unsorted (perf.report_unsorted)",
        ),
        (
            inputs.perf.report_histogram,
            "-H/--report-histogram (perf.report_histogram)",
        ),
    ];
    if let Some((_, flag)) = listed
        .into_iter()
        .find(|&(given, _)| given && json_to_stdout)
    {
        return Err(crate::UsageError(format!(
            "{flag} lists the samples in the table, which --json - replaces on standard \
             output, and the JSON holds no list of them: give --json a file, or leave it out"
        ))
        .into());
    }
    if let Some(path) = json_path.filter(|_| !json_to_stdout) {
        output::check_file("JSON output", path)?;
        crate::report::side_files::check_writable(path, &cfg, false)?;
    }
    if let Some(capture) = &spec.pcap {
        output::check_file("pcap", &capture.path)?;
    }
    // Under -D perftest keeps no samples, so -H/-U list none: a note says so, for
    // `rnic perf`'s flags and a scenario's [perf] keys alike.
    if spec.duration_us.is_some() && spec.test.is_latency() {
        for (_, flag) in listed.into_iter().filter(|&(given, _)| given) {
            writeln!(
                err,
                "rnic: {flag} has no effect on {}: under -D/--duration (perf.duration) \
                 perftest keeps no samples, so none are listed (run iterations, -n or \
                 perf.iters, for them)",
                spec.test.name()
            )?;
        }
    }
    for note in latency_test_notes(&inputs.perf, spec.test)
        .into_iter()
        .chain(unreliable_notes(inputs, &cfg, spec.test))
        .chain(rnic_model::limits::short_timeout_note(&cfg, &spec))
    {
        writeln!(err, "{note}")?;
    }
    // perftest measures no BW peak under -D and warns: so does rnic, for `rnic perf`'s -D
    // and a scenario's perf.duration alike (the scenario's table printed 0.00 unexplained).
    if spec.duration_us.is_some() && !spec.test.is_latency() && cfg.host.bw_peak {
        writeln!(
            err,
            "rnic: the BW peak is not measured in duration mode (-D), as in perftest: its \
             column reads 0.00; run iterations (-n) for it"
        )?;
    }
    if let Some(note) = idle_clients_note(&spec) {
        writeln!(err, "{note}")?;
    }
    let show_progress = bar && !json_to_stdout;
    let result = progress::execute_with_bar(runner, &cfg, &spec, &inputs.profile, show_progress)?;
    if let Some(figure) = figure.filter(|_| !json_to_stdout) {
        // One figure per row of the table (each size of -a), as perftest prints one per
        // size, with its printf("%lf\n", ...): six decimals, where the table rounds to two.
        // An incomplete run's too, as its table would show what completed.
        for row in &result.rows() {
            let t_avg_us = spec
                .duration_us
                .map(|_| text::duration_t_avg_us(row, &spec));
            let line = text::output_figure_line(figure, row, inputs.perf.report_gbits, t_avg_us);
            write!(out, "{line}")?
        }
    } else if !json_to_stdout {
        let samples =
            text::Samples::from_flags(inputs.perf.report_histogram, inputs.perf.report_unsorted);
        out.write_all(
            text::render(&result, &spec, &cfg, inputs.perf.report_gbits, samples).as_bytes(),
        )?;
        if inputs.perf.report_both {
            out.write_all(text::directions(&result, inputs.perf.report_gbits).as_bytes())?;
        }
        if inputs.perf.stats {
            out.write_all(text::stats(&result).as_bytes())?;
        }
    }
    if let Some(path) = json_path {
        let s = json::to_json(&result)?;
        if json_to_stdout {
            out.write_all(s.as_bytes())?;
        } else {
            json::write_file(path, s.as_bytes())?;
            crate::report::queues_csv::write(
                result.queue_trace.as_ref(),
                result.rate_trace.as_ref(),
                path,
            )?;
        }
    }
    if let Some(path) = perftest_json {
        write_perftest_json(path, &result, &spec, &cfg, inputs.perf.report_gbits)?;
    }
    writeln!(err, "{}", text::summary(&result))?;
    for line in [
        text::window_line(&result),
        text::unreliable_line(&result),
        text::window_warning(&result),
        text::drops_note(&result, || switch_buffer_fields(&cfg, &result)),
        text::accel_resends_note(&result),
        text::accel_idle_note(&result),
        text::pfc_cycle_note(&result),
    ]
    .into_iter()
    .flatten()
    .chain(crate::report::queues_csv::cut_warnings(
        result.queue_trace.as_ref(),
        result.rate_trace.as_ref(),
    ))
    .chain(text::config_notes(&cfg))
    .chain(text::rx_buffer_note(&result))
    {
        writeln!(err, "{line}")?;
    }
    if result.status != RunStatus::Ok {
        return Err(RunFailed {
            status: result.status,
            reason: result.reason.clone(),
        }
        .into());
    }
    Ok(result)
}

/// The flags given to `c` that its test does not use, each with why (perftest takes them and
/// they change nothing there either): a note each instead of taking them in silence.
fn no_effect_flags(c: &PerfCmd) -> Vec<(&'static str, &'static str)> {
    use rnic_model::workload::{PerfTest, Verb};
    let verb = c.test.verb();
    let lat = c.test.is_latency();
    let one_at_a_time =
        "a latency test posts and polls one operation at a time (bandwidth tests take it)";
    [
        (
            c.inline_recv.is_some() && verb != Verb::Send,
            "--inline_recv",
            "only received SENDs ride in their CQE",
        ),
        (
            c.inline_size.is_some() && matches!(verb, Verb::Read | Verb::Atomic),
            "-I/--inline_size",
            "only SEND and WRITE payloads are posted inline",
        ),
        (lat && c.cq_mod.is_some(), "-Q/--cq-mod", one_at_a_time),
        (
            lat && c.post_list.is_some(),
            "-l/--post_list",
            one_at_a_time,
        ),
        (
            c.rx_depth.is_some() && c.test != PerfTest::SendBw,
            "-r/--rx-depth",
            "only send-bw's target keeps receives posted to that depth",
        ),
        (
            c.latency_gap.is_some() && !lat,
            "--latency_gap",
            "it idles a latency test between iterations",
        ),
        (
            c.outs.is_some() && matches!(verb, Verb::Write | Verb::Send),
            "-o/--outs",
            "it bounds outstanding READs and atomics",
        ),
        (
            c.recv_post_list.is_some() && c.test != PerfTest::SendBw,
            "--recv_post_list",
            "only send-bw's target reposts receives",
        ),
    ]
    .into_iter()
    .filter(|&(given, _, _)| given)
    .map(|(_, flag, why)| (flag, why))
    .collect()
}

/// The perftest options a latency test does not read, for `rnic perf`'s flags and a
/// scenario's `[perf]` keys alike: a scenario's `tx_depth` and `report_gbits` ran a latency
/// test in silence (the flag `-t` had a note; `--report_gbits` had none either).
fn latency_test_notes(perf: &crate::perf::PerfOptions, test: crate::perf::PerfTest) -> Vec<String> {
    if !test.is_latency() {
        return Vec::new();
    }
    [
        (
            perf.tx_depth.is_some(),
            "-t/--tx-depth (perf.tx_depth)",
            "a latency test has one operation in flight (perftest's latency tests have no -t)",
        ),
        (
            perf.report_gbits,
            "--report_gbits (perf.report_gbits)",
            "a latency test reports latency, not bandwidth",
        ),
    ]
    .into_iter()
    .filter(|&(given, _, _)| given)
    .map(|(_, flag, why)| format!("rnic: {flag} has no effect on {}: {why}", test.name()))
    .collect()
}

/// `-u` and `--retry_count` (or `--set qp.retry_cnt`) time out and resend what an RC QP
/// sent: a UC or UD QP waits for no acknowledgement and resends nothing, so over one they
/// change nothing (perftest takes them there in silence, and so did rnic).
fn unreliable_notes(inputs: &RunInputs, cfg: &Config, test: crate::perf::PerfTest) -> Vec<String> {
    let retry = inputs.sets.iter().any(|o| o.key == "qp.retry_cnt");
    [
        (
            inputs.perf.qp_timeout.is_some(),
            ("-u/--qp-timeout (perf.qp_timeout)", true),
        ),
        (retry, ("--retry_count (qp.retry_cnt)", false)),
    ]
    .into_iter()
    .filter(|&(given, _)| given)
    .filter_map(|(_, flag)| text::retry_no_effect_note(flag, test, cfg.qp.transport))
    .collect()
}

/// A run with fewer QPs than clients (`None` otherwise): the QPs go round robin over the
/// clients, so the clients past the `-q`-th have none and send and receive nothing; an
/// incast of `--clients N --reversed` with fewer QPs has fewer senders than it says.
fn idle_clients_note(spec: &crate::perf::PerfSpec) -> Option<String> {
    let (qps, clients) = (spec.qps.max(1), spec.clients.max(1));
    (qps < clients).then(|| {
        let idle = if clients - qps == 1 {
            format!("client {clients} has no QP and takes")
        } else {
            format!("clients {}..{clients} have no QP and take", qps + 1)
        };
        format!(
            "rnic: note: --clients {clients} with -q {qps}: the QPs go round robin over the \
             clients, so {idle} no part; give -q {clients} (or more) to use every client"
        )
    })
}

/// The field each switch of the run's topology takes its buffer from, for the drop note's
/// fix (empty when the topology cannot be planned again, which the run already did).
fn switch_buffer_fields(cfg: &Config, result: &PerfResult) -> Vec<String> {
    let nodes = result.clients.max(1) as usize + 1;
    rnic_model::net::topology::switch_buffers(cfg, nodes)
        .map(|switches| switches.into_iter().map(|s| s.field).collect())
        .unwrap_or_default()
}

fn cmd_config_show(
    profile: Option<String>,
    set: &[Override],
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    config::check_repeated(set, "--set")?;
    let profile = profile.unwrap_or_else(|| "baseline".to_string());
    let cfg = Config::resolve(&profile, set)?;
    out.write_all(show::render(&cfg, &profile, set)?.as_bytes())?;
    Ok(())
}

fn cmd_profiles(out: &mut dyn Write) -> anyhow::Result<()> {
    let w = config::PROFILES
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(0);
    for p in config::PROFILES {
        writeln!(out, "{:<w$}  {}", p.name, p.description)?;
    }
    Ok(())
}

fn cmd_run(
    c: RunCmd,
    progress: Progress,
    runner: &dyn PerfRunner,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    let scenario = load_scenario(&c.scenario)?;
    // A flag that would change nothing is refused, not ignored: without a [workload] every
    // row is already listed (a [perf] scenario has one result, each [[flow]] its own row).
    if c.all_flows && scenario.workload.is_none() {
        anyhow::bail!(crate::UsageError(format!(
            "--all-flows lists a [workload]'s flows one row each; scenario {} has no [workload], \
             so every row is already listed",
            c.scenario.display()
        )));
    }
    let cli = CliOverrides {
        profile: c.sim.profile.clone(),
        seed: c.sim.seed,
        set: c.sim.set.clone(),
    };
    let origin = c.scenario.display().to_string();
    let mut inputs = scenario
        .base
        .inputs(&cli)
        .with_context(|| format!("in scenario file {origin}"))?;
    inputs.pcap = c.pcap.clone().or(scenario.pcap.clone());
    inputs.pcap_node = c.pcap_node.or(scenario.pcap_node);
    let json_path: Option<PathBuf> = c.sim.json.clone().or(scenario.json.clone());
    check_outputs_distinct(
        &[
            (
                "the JSON output (--json or [output] json)",
                json_path.as_deref(),
            ),
            ("the pcap (--pcap or [output] pcap)", inputs.pcap.as_deref()),
        ],
        json_path.as_deref(),
        &inputs,
        scenario.flows.is_some() && scenario.workload.is_some(),
        scenario_files(&c.scenario, &scenario),
    )?;
    // A scenario's [output] paths come with its layout (`out/x.json`): their directories are
    // made; a path given by flag must name an existing directory (as tcpdump -w).
    for (flag, from_file, what) in [
        (&c.sim.json, &scenario.json, "JSON output"),
        (&c.pcap, &scenario.pcap, "pcap"),
    ] {
        if let (None, Some(path)) = (flag, from_file) {
            if path != Path::new("-") {
                output::create_parent(what, path)?;
            }
        }
    }
    writeln!(err, "rnic: scenario {}", scenario.name)?;
    if let Some(flows) = &scenario.flows {
        return run_flows_and_report(
            (&scenario.name, flows, scenario.workload.as_ref()),
            &inputs,
            json_path.as_deref(),
            FlowsText {
                bar: progress.bar,
                all_flows: c.all_flows,
            },
            runner,
            out,
            err,
        )
        .with_context(|| format!("scenario {origin}"));
    }
    run_and_report(
        &inputs,
        json_path.as_deref(),
        None,
        progress.bar,
        None,
        runner,
        out,
        err,
    )
    .map(|_| ())
    .with_context(|| format!("scenario {origin}"))
}

/// The files a scenario run reads besides its config's: the scenario file and a
/// `[workload]`'s flow-size distribution.
fn scenario_files(path: &Path, scenario: &crate::scenario::Scenario) -> Vec<(String, PathBuf)> {
    let mut files = vec![("the scenario file".to_string(), path.to_path_buf())];
    if let Some(w) = &scenario.workload {
        files.push((
            "the workload's CDF file (workload.cdf)".into(),
            w.cdf.clone(),
        ));
    }
    files
}

/// Refuses two of a command's outputs naming one file: those it names (`named`, flag and
/// path) and the side files written beside the JSON file `json` (the traces; with
/// `workload`, a workload's CSVs and figure), which would otherwise replace another output
/// in silence. Refuses too any of them landing on an input: `files` (the scenario file, a
/// workload's CDF) or the topology file the config names. A config that does not resolve
/// has no side files or topology here: the run refuses it.
fn check_outputs_distinct(
    named: &[(&str, Option<&Path>)],
    json: Option<&Path>,
    inputs: &RunInputs,
    workload: bool,
    mut files: Vec<(String, PathBuf)>,
) -> Result<(), crate::UsageError> {
    let cfg = inputs.config().ok();
    let side = match (json.filter(|p| *p != Path::new("-")), &cfg) {
        (Some(json), Some(cfg)) => crate::report::side_files::labelled(json, cfg, workload),
        _ => Vec::new(),
    };
    let mut all = named.to_vec();
    all.extend(
        side.iter()
            .map(|(what, p)| (what.as_str(), Some(p.as_path()))),
    );
    output::check_distinct(&all)?;
    files.extend(cfg.as_ref().and_then(topology_file));
    output::check_not_inputs(&all, &files)
}

/// The topology file `net.topology` names, if it names one rather than a built-in wiring:
/// an input the outputs must spare.
fn topology_file(cfg: &Config) -> Option<(String, PathBuf)> {
    let t = &cfg.net.topology;
    names_topology_file(t).then(|| {
        (
            "the topology file (net.topology)".to_string(),
            PathBuf::from(t),
        )
    })
}

/// Whether a `net.topology` value names a topology file, by the field's own rule.
fn names_topology_file(value: &str) -> bool {
    rnic_model::config::schema::names_a_file("net.topology", value)
}

/// What a run of flows shows on the terminal.
#[derive(Debug, Clone, Copy)]
struct FlowsText {
    /// A progress bar while it runs.
    bar: bool,
    /// Every workload flow's row (`--all-flows`), not one row for those that ended ok.
    all_flows: bool,
}

/// A scenario of `[[flow]]`s: resolves them under the config, runs them concurrently,
/// prints the per-flow table (unless JSON goes to stdout) and writes the JSON.
fn run_flows_and_report(
    (name, flows, workload): (
        &str,
        &[crate::flows::FlowOptions],
        Option<&crate::traffic::WorkloadOptions>,
    ),
    inputs: &RunInputs,
    json_path: Option<&Path>,
    text: FlowsText,
    runner: &dyn PerfRunner,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    let run = crate::flows_run::FlowsRun::prepare(inputs, flows, workload)?;
    run.check(runner)?;
    let (cfg, spec) = (&run.cfg, &run.spec);
    crate::report::side_files::check_trace_has_a_file(cfg, json_path)?;
    let json_to_stdout = json_path.is_some_and(|p| p == Path::new("-"));
    if let Some(path) = json_path.filter(|_| !json_to_stdout) {
        output::check_file("JSON output", path)?;
        crate::report::side_files::check_writable(path, cfg, run.workload.is_some())?;
    }
    if let Some(capture) = &spec.pcap {
        output::check_file("pcap", &capture.path)?;
        for note in crate::flows::uncaptured_flow_notes(spec)? {
            writeln!(err, "{note}")?;
        }
    }
    let start = std::time::Instant::now();
    // A bar only on a terminal, and never with the JSON on stdout.
    let mut result = if !text.bar || json_to_stdout {
        runner.run_flows(cfg, spec)?
    } else {
        let mut progress = crate::progress::RunProgress::new(true);
        let r = runner.run_flows_with_progress(cfg, spec, &mut |p| progress.update(p));
        progress.finish();
        r?
    };
    run.finish(&mut result, name, &inputs.profile, start)?;
    if !json_to_stdout {
        out.write_all(crate::report::flows_text::render(&result, text.all_flows).as_bytes())?;
        if let Some(w) = &result.workload {
            out.write_all(crate::report::fct_text::render(w).as_bytes())?;
        }
    }
    if let (Some(w), Some(path)) = (&result.workload, json_path.filter(|_| !json_to_stdout)) {
        crate::report::fct_text::write_csv(w, path)?;
    }
    if let Some(path) = json_path.filter(|_| !json_to_stdout) {
        crate::report::queues_csv::write(
            result.queue_trace.as_ref(),
            result.rate_trace.as_ref(),
            path,
        )?;
    }
    if let Some(path) = json_path {
        let mut s = serde_json::to_string_pretty(&result)?;
        s.push('\n');
        if json_to_stdout {
            out.write_all(s.as_bytes())?;
        } else {
            json::write_file(path, s.as_bytes())?;
        }
    }
    writeln!(err, "{}", crate::report::flows_text::summary(&result))?;
    if let Some(u) = &result.unreliable {
        writeln!(err, "{}", text::unreliable_text(u))?;
    }
    let traces = (result.queue_trace.as_ref(), result.rate_trace.as_ref());
    for note in crate::report::queues_csv::cut_warnings(traces.0, traces.1)
        .into_iter()
        .chain(text::config_notes(cfg))
    {
        writeln!(err, "{note}")?;
    }
    if result.status != RunStatus::Ok {
        return Err(RunFailed {
            status: result.status,
            reason: result.reason.clone(),
        }
        .into());
    }
    Ok(())
}

fn sweep_options(c: &SweepCmd, progress: Progress, json_to_stdout: bool) -> SweepOptions {
    SweepOptions {
        jobs: c.jobs.map(|j| j as usize).unwrap_or(0),
        out_dir: c.out.clone(),
        progress: progress.bar && !json_to_stdout,
        quiet: progress.quiet,
        allow_large: c.allow_large,
        shard: c.shard,
    }
}

/// `rnic sweep`: every check (grid size, points, outputs) before the first point runs; the
/// table, JSON and summary after; then the worst point status decides the exit status.
fn cmd_sweep(
    mut c: SweepCmd,
    progress: Progress,
    runner: &dyn PerfRunner,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    let path = match (c.merge.take(), c.sweep.clone()) {
        (Some(args::SweepSubCmd::Merge(m)), _) => return cmd_sweep_merge(m, out, err),
        (None, Some(path)) => path,
        (None, None) => anyhow::bail!(crate::UsageError(
            "give a sweep file (rnic sweep FILE) or `merge` (rnic sweep merge DIR...)".into()
        )),
    };
    let sw = sweep::load_sweep(&path)?;
    let cli = CliOverrides {
        profile: c.profile.clone(),
        seed: c.seed,
        set: c.set.clone(),
    };
    // `--json -` puts the results on standard output instead of the table, as for perf.
    let json_to_stdout = c.json.as_deref() == Some(Path::new("-"));
    let opts = sweep_options(&c, progress, json_to_stdout);
    if let Some(path) = c.json.as_deref().filter(|_| !json_to_stdout) {
        // The sweep writes <name>.csv, .json, .partial.csv, the plots <name>-<metric>.* and
        // shard files <name>.shard-* in --out: --json there would replace one (or be).
        // Compared where they land, so `o/../o/x.json` or a symlink to `o` is `o` too.
        let json = output::resolved(path);
        let file = json.file_name().map(|f| f.to_string_lossy().into_owned());
        let clashes = json.parent() == Some(output::resolved(&c.out).as_path())
            && file.is_some_and(|f| {
                f.starts_with(&format!("{}.", sw.name)) || f.starts_with(&format!("{}-", sw.name))
            });
        if clashes {
            anyhow::bail!(crate::UsageError(format!(
                "--json {}: the sweep writes its own files <name>.csv, .json and the plots \
                 (name `{}`) in --out {}, and this one would overwrite or be overwritten by \
                 one of them; name another file",
                path.display(),
                sw.name,
                c.out.display()
            )));
        }
    }
    check_sweep_spares_inputs(&c, &path, &sw, &cli)?;
    let plan = sweep::Plan::new(&sw, &cli, runner, &opts)?;
    plan.check_traces_nothing()?;
    for note in sw.notes() {
        writeln!(err, "rnic: note: {note}")?;
    }
    for note in plan.config_notes() {
        writeln!(err, "{note}")?;
    }
    if let Some(path) = c.json.as_deref().filter(|_| !json_to_stdout) {
        output::check_file("sweep JSON output", path)?;
    }
    let start = std::time::Instant::now();
    let outcome = plan.run(runner, err)?;
    let results: Vec<&sweep::PointResult> = outcome.results.iter().map(|(_, r)| r).collect();
    match c.json.as_deref() {
        Some(_) if json_to_stdout => {
            let mut s = serde_json::to_string_pretty(&results)?;
            s.push('\n');
            out.write_all(s.as_bytes())?;
        }
        Some(path) => json::write_json(path, &results)?,
        None => {}
    }
    if !json_to_stdout {
        write_sweep_table(&sw, &outcome, out)?;
    }
    for note in &outcome.notes {
        writeln!(err, "rnic: note: {note}")?;
    }
    match c.shard {
        Some(s) => writeln!(
            err,
            "rnic: sweep {}, {s}: {} in {:.2} s; wrote {} and {}; when every shard \
             is done, `rnic sweep merge DIR...` writes the sweep's CSV, JSON and plots",
            sw.name,
            counted(outcome.points as u64, "point"),
            start.elapsed().as_secs_f64(),
            outcome.csv.display(),
            outcome.json.display(),
        )?,
        None => writeln!(
            err,
            "rnic: sweep {}: {} in {:.2} s; wrote {}, {} and {} plot files",
            sw.name,
            counted(outcome.points as u64, "point"),
            start.elapsed().as_secs_f64(),
            outcome.csv.display(),
            outcome.json.display(),
            outcome.plots.len()
        )?,
    }
    match outcome.failure() {
        Some(f) => Err(f.into()),
        None => Ok(()),
    }
}

/// Refuses a sweep output (`--json`, or one of the files it writes in `--out`) that lands
/// on a file the sweep reads: the sweep file, the base config's topology file, a
/// `[workload]`'s CDF, or a topology or CDF file an axis names.
fn check_sweep_spares_inputs(
    c: &SweepCmd,
    path: &Path,
    sw: &sweep::Sweep,
    cli: &CliOverrides,
) -> anyhow::Result<()> {
    let mut files = vec![("the sweep file".to_string(), path.to_path_buf())];
    let base = sw.base.inputs(cli).ok().and_then(|i| i.config().ok());
    files.extend(base.as_ref().and_then(topology_file));
    let cdf = |v: &toml::Value| {
        let s = v.as_str()?;
        Some((
            "a workload's CDF file (workload.cdf)".to_string(),
            PathBuf::from(s),
        ))
    };
    files.extend(
        sw.workload
            .as_ref()
            .and_then(|w| w.get("cdf"))
            .and_then(cdf),
    );
    for axis in &sw.axes {
        for v in axis.values.iter().filter_map(|v| v.as_str()) {
            match &axis.target {
                sweep::AxisTarget::Config(k) if k == "net.topology" && names_topology_file(v) => {
                    files.push(("a topology file (axis net.topology)".into(), v.into()))
                }
                sweep::AxisTarget::Workload(k) if k == "cdf" => {
                    files.push(("a workload's CDF file (axis workload.cdf)".into(), v.into()))
                }
                _ => {}
            }
        }
    }
    let written = sweep::output_files(sw, &c.out, c.shard);
    let mut outputs = vec![("--json", c.json.as_deref())];
    outputs.extend(written.iter().map(|f| ("--out", Some(f.as_path()))));
    Ok(output::check_not_inputs(&outputs, &files)?)
}

/// `rnic sweep merge`: the shards' files checked and merged; the table and summary as for a
/// sweep, and the same exit status.
fn cmd_sweep_merge(
    m: args::SweepMergeCmd,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    let (sw, outcome) = sweep::merge(&m.dirs, &m.out, err)?;
    write_sweep_table(&sw, &outcome, out)?;
    for note in &outcome.notes {
        writeln!(err, "rnic: note: {note}")?;
    }
    writeln!(
        err,
        "rnic: sweep merge {}: wrote {}, {} and {} plot files",
        sw.name,
        outcome.csv.display(),
        outcome.json.display(),
        outcome.plots.len()
    )?;
    match outcome.failure() {
        Some(f) => Err(f.into()),
        None => Ok(()),
    }
}

/// An aligned table of each point's axis values and plotted metrics.
fn write_sweep_table(
    sw: &sweep::Sweep,
    outcome: &sweep::SweepOutcome,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header: Vec<String> = sw.axes.iter().map(|a| a.key.clone()).collect();
    header.extend(sw.metrics.iter().cloned());
    header.extend(["status".to_string(), "reason".to_string()]);
    rows.push(header);
    for (p, r) in &outcome.results {
        let mut row: Vec<String> = p.values.iter().map(sweep::value_text).collect();
        for m in &sw.metrics {
            row.push(match r.metric(m) {
                Some(crate::report::Metric::Float(v)) => format!("{v:.3}"),
                Some(v) => v.to_string(),
                None => "-".to_string(),
            });
        }
        row.push(r.status().name().to_string());
        row.push(r.reason().replace('\n', " "));
        rows.push(row);
    }
    // Numbers right-aligned; status and the free-text reason (the last two) left-aligned.
    let cols = rows[0].len();
    let widths: Vec<usize> = (0..cols)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i + 2 >= cols {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        writeln!(out, "{}", line.join("  ").trim_end())?;
    }
    Ok(())
}

fn cmd_repro(
    c: ReproCmd,
    progress: Progress,
    runner: &dyn PerfRunner,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    // Listing runs and writes nothing, and --check resolves the points without running
    // or writing any: a flag for running (--out, -j, the global --quiet, which silences a
    // run's progress) taken there would be ignored, so it is refused.
    let listing = matches!(c.id.as_deref(), None | Some("list"));
    let mode = if listing {
        "`rnic repro list` (and `rnic repro` alone) only lists the experiments"
    } else {
        "--check resolves every point without simulating"
    };
    let unused = [
        (
            listing && c.check,
            "--check",
            "name an experiment, a paper or `all` to check (e.g. rnic repro csrna --check)",
        ),
        (
            (listing || c.check) && c.out.is_some(),
            "--out",
            "it writes no file: leave --out out, or run an experiment (e.g. rnic repro \
             csrna-peak --out DIR)",
        ),
        (
            (listing || c.check) && c.jobs.is_some(),
            "-j/--jobs",
            "it runs no points: leave -j out, or run an experiment (e.g. rnic repro \
             csrna-peak -j 2)",
        ),
        (
            (listing || c.check) && c.strict,
            "--strict",
            "it judges no claim: leave --strict out, or run an experiment (e.g. rnic repro \
             csrna-peak --strict)",
        ),
        (
            (listing || c.check) && c.sensitivity,
            "--sensitivity",
            "it runs no experiment: leave --sensitivity out, or run one (e.g. rnic repro \
             isolation-linerate --sensitivity)",
        ),
        (
            (listing || c.check) && progress.quiet,
            "--quiet",
            "it prints no progress to silence (its lines on standard output are the \
             results): leave --quiet out, or run an experiment (e.g. rnic repro csrna-peak \
             --quiet)",
        ),
    ];
    if let Some((_, flag, fix)) = unused.into_iter().find(|&(given, _, _)| given) {
        anyhow::bail!(crate::UsageError(format!(
            "{flag} has no effect here: {mode}; {fix}"
        )));
    }
    let opts = repro::ReproOptions {
        jobs: c.jobs.map(|j| j as usize).unwrap_or(0),
        out_dir: c.out.unwrap_or_else(|| PathBuf::from("out/repro")),
        progress: progress.bar,
        quiet: progress.quiet,
    };
    let judging = repro::Judging {
        strict: c.strict,
        sensitivity: c.sensitivity,
    };
    repro::command(c.id.as_deref(), c.check, judging, runner, &opts, out, err)
}

#[cfg(test)]
mod tests;
