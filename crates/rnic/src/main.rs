//! The `rnic` binary: see `rnic --help`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let status = rnic::cli::main_with(
        std::env::args_os(),
        &rnic::perf::ModelRunner,
        &mut stdout.lock(),
        &mut stderr.lock(),
    );
    ExitCode::from(status)
}
