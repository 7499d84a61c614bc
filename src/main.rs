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
    // Parsed first: clap exits at once on --help or a bad flag, which would leave the folder behind.
    let args = <cli::Cli as clap::Parser>::parse();
    // Held to the end of main: the folder is removed as it drops.
    let _runtime_dir = cli::runtime_dir::ensure();
    // NVLink multicast off for every communicator reap makes, unless the user chose.
    #[cfg(feature = "cuda")]
    // SAFETY: before any thread starts, so nothing reads the environment meanwhile.
    unsafe {
        reap::cuda_runtime::nccl::set_defaults();
    }
    let result = cli::run(args);
    if let Err(e) = &result {
        eprintln!("error: {}", cli::message(e));
    }
    // An interrupted command kept its files, but did not finish: say so in the status.
    if let Some(signal) = cli::interrupt::received() {
        eprintln!("interrupted by signal {signal}; the files written so far are kept");
        return ExitCode::from(128u8.saturating_add(signal as u8));
    }
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(_) => ExitCode::from(2),
    }
}
