//! The `reap` command line: the algorithm catalog, the correctness suite, and
//! (as the workloads land) rendering, collision and benchmarks.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};

use reap::compaction::{Algorithm, Backend, BackendKind, CpuBackend, Operation};
use reap::verify::{self, Harness};

#[derive(Parser)]
#[command(
    name = "reap",
    version,
    about = "GPU stream compaction: every algorithm of the seed papers and the modern state of the art, swappable at run time",
    long_about = "reap implements every stream-compaction algorithm of its five seed papers (Billeter et al. 2009, \
                  Horn 2005, Sengupta et al. 2006, Roger et al. 2007, Bontes & Gain 2024) and the modern single-pass \
                  ones, on the CPU and the GPU, behind one API that picks the algorithm by name at run time.\n\n\
                  Run `reap algorithms` for the catalog and `reap verify` to check every algorithm against the \
                  sequential reference."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Print the algorithm catalog: name, properties, operations, backends, source.
    Algorithms,
    /// Run the correctness suite against the sequential reference; ends with `N passed, M failed`.
    Verify(VerifyArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BackendChoice {
    /// The fastest backend that works here.
    Auto,
    /// rayon on every core.
    Cpu,
}

#[derive(clap::Args)]
struct VerifyArgs {
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// A catalog name, or `all`.
    #[arg(long, default_value = "all")]
    algorithm: String,
    /// Operations to check (select, partition, scan, sort, remove); default all.
    #[arg(long, value_delimiter = ',')]
    operations: Vec<String>,
    /// Element counts, comma separated (default: sizes around every block boundary, up to 1,000,003).
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<u64>,
    /// Fractions kept (or removed, for Redzone), comma separated, each in [0, 1].
    #[arg(long, value_delimiter = ',')]
    densities: Vec<f64>,
    /// Element sizes in bytes: 4, 8, 16.
    #[arg(long, value_delimiter = ',', default_value = "4,8,16")]
    elements: Vec<usize>,
    #[arg(long, default_value_t = 0x5EED)]
    seed: u64,
    /// Print every case, not only failures.
    #[arg(long, short)]
    verbose: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        None => {
            print_catalog();
            println!();
            println!("usage: reap algorithms | reap verify [--backend cpu] [--algorithm NAME|all] ... (reap --help)");
            Ok(true)
        }
        Some(Command::Algorithms) => {
            print_catalog();
            Ok(true)
        }
        Some(Command::Verify(args)) => run_verify(args),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn backends_of(algorithm: Algorithm) -> Vec<&'static str> {
    let mut v = Vec::new();
    if CpuBackend::new().runs(algorithm) {
        v.push(BackendKind::Cpu.name());
    }
    v
}

fn print_catalog() {
    println!(
        "{:<27} {:<6} {:<8} {:<18} {:<34} {:<9} {}",
        "name", "stable", "in place", "consumes", "operations", "backends", "source"
    );
    for a in Algorithm::ALL {
        let ops: Vec<_> = Operation::ALL.iter().filter(|o| a.supports(**o)).map(|o| o.name()).collect();
        println!(
            "{:<27} {:<6} {:<8} {:<18} {:<34} {:<9} {}",
            a.name(),
            if a.stable() { "yes" } else { "no" },
            if a.in_place() { "yes" } else { "no" },
            a.consumes().name(),
            ops.join(","),
            backends_of(a).join(","),
            a.source()
        );
    }
}

fn run_verify(args: VerifyArgs) -> Result<bool> {
    let algorithms =
        if args.algorithm == "all" { Algorithm::ALL.to_vec() } else { vec![args.algorithm.parse::<Algorithm>()?] };
    let mut cfg = verify::Config::new(algorithms);
    if !args.operations.is_empty() {
        cfg.operations =
            args.operations
                .iter()
                .map(|s| {
                    Operation::ALL.into_iter().find(|o| o.name() == s).with_context(|| {
                        format!("unknown operation `{s}`; use select, partition, scan, sort or remove")
                    })
                })
                .collect::<Result<_>>()?;
    }
    if !args.sizes.is_empty() {
        cfg.sizes = args.sizes;
    }
    if !args.densities.is_empty() {
        if let Some(d) = args.densities.iter().find(|d| !(0.0..=1.0).contains(*d)) {
            bail!("density {d} is outside [0, 1]");
        }
        cfg.densities = args.densities;
    }
    if let Some(e) = args.elements.iter().find(|e| ![4, 8, 16].contains(*e)) {
        bail!("element size {e} is not supported; use 4, 8 or 16");
    }
    cfg.element_sizes = args.elements;
    cfg.seed = args.seed;
    match args.backend {
        BackendChoice::Auto | BackendChoice::Cpu => Ok(verify_on(&CpuBackend::new(), &cfg, args.verbose)),
    }
}

fn verify_on<B: Harness>(backend: &B, cfg: &verify::Config, verbose: bool) -> bool {
    println!("verifying on the {} backend (seed {:#x})", backend.kind().name(), cfg.seed);
    let mut per_alg: Vec<(Algorithm, u64, u64)> = Vec::new();
    let summary = verify::run(backend, cfg, |case, outcome| {
        match per_alg.last_mut() {
            Some((a, _, _)) if *a == case.algorithm => {}
            _ => {
                if let Some((a, p, f)) = per_alg.last() {
                    println!("  {:<27} {p} passed, {f} failed", a.name());
                }
                per_alg.push((case.algorithm, 0, 0));
            }
        }
        let entry = per_alg.last_mut().expect("pushed above");
        match outcome {
            Ok(()) => {
                entry.1 += 1;
                if verbose {
                    println!("    ok   {case}");
                }
            }
            Err(e) => {
                entry.2 += 1;
                println!("    FAIL {case}: {e}");
            }
        }
        let _ = std::io::stdout().flush();
    });
    if let Some((a, p, f)) = per_alg.last() {
        println!("  {:<27} {p} passed, {f} failed", a.name());
    }
    println!("{} passed, {} failed", summary.passed, summary.failed);
    summary.failed == 0
}
