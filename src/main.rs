//! The `reap` binary: parses the command line and hands it to [`cli`], one
//! module per command.

use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    // `reap … | head` should end quietly, as other command-line tools do,
    // rather than panic in println! when the pipe closes.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of one signal, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match cli::run(<cli::Cli as clap::Parser>::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
