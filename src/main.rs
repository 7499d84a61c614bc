//! The `reap` binary; the command line lives in [`cli`].

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
