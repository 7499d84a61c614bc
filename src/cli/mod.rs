//! The `reap` command line: the algorithm catalog, the correctness suite, and
//! (as the workloads land) rendering, collision and benchmarks.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};

use reap::compaction::{Algorithm, Backend, BackendKind, CpuBackend, Operation};
use reap::verify::{self, Harness};

#[path = "bench/compaction.rs"]
mod bench_cmd;
#[path = "collide.rs"]
mod collide_cmd;
#[path = "bench/noise.rs"]
mod noise_cmd;
#[path = "render.rs"]
mod render_cmd;

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
    /// Measure algorithms beside the copy roofline.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Path-trace a scene headless (wavefront, compaction after every bounce and traversal level).
    Render(render_cmd::RenderArgs),
    /// Simulate colliding rigid bodies headless (LBVH + breadth-first pair traversal, the pair frontier
    /// compacted after every level); per-frame timings and a summary table.
    Collide(collide_cmd::CollideArgs),
    /// Open the interactive viewer: the progressive image (or with --collide the collision demo) and an
    /// overlay comparing compaction algorithms.
    View(ViewArgs),
}

#[derive(clap::Args)]
struct ViewArgs {
    /// A built-in scene's name (see `reap render --help`) or a path to an OBJ file.
    #[arg(long, default_value = "cornell")]
    scene: String,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// Render width in pixels (the window adds the overlay's panel).
    #[arg(long, default_value_t = 960)]
    width: u32,
    #[arg(long, default_value_t = 540)]
    height: u32,
    /// Exit after this many frames.
    #[arg(long)]
    frames: Option<u64>,
    /// Save the window, overlay included, as PNG at exit.
    #[arg(long)]
    screenshot: Option<std::path::PathBuf>,
    /// Start "compare all" at once: every algorithm at both sites for K frames each (after one
    /// warm-up frame), then a ranked chart.
    #[arg(long, value_name = "K")]
    compare_all: Option<u32>,
    /// Show the collision demo instead of the path tracer (the overlay switches between them).
    #[arg(long)]
    collide: bool,
    /// With --collide: the scenario (pile, drum or gas).
    #[arg(long, default_value = "pile", requires = "collide")]
    scenario: String,
    /// With --collide: how many bodies [default: 4000 on the CPU, 100000 with CUDA].
    #[arg(long, requires = "collide", value_parser = collide_cmd::parse_bodies)]
    bodies: Option<u32>,
    /// BVH levels one breadth-first expansion descends (1 to 5; fan-out 2^K).
    #[arg(long, value_name = "K", default_value_t = reap::trace::DESCEND)]
    descend: u32,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Time compaction (select or partition) for every algorithm, size, density and element size.
    Compaction(bench_cmd::BenchArgs),
    /// Write report.md and the plots again from a run's results.json, without measuring.
    Report {
        /// The --out folder of an earlier `reap bench compaction` run.
        dir: std::path::PathBuf,
    },
    /// Path-trace scenes with every traversal mode x compaction choice: Mrays/s and compaction's share.
    Render(render_cmd::RenderBenchArgs),
    /// Path tracer noise against a high-spp reference: relative RMSE, relMSE and fireflies per spp.
    Noise(noise_cmd::NoiseArgs),
    /// Collision demo per body count x sort x frontier compaction: per-frame breakdown, contacts checked equal.
    Collide(collide_cmd::CollideBenchArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BackendChoice {
    /// The fastest backend that works here.
    Auto,
    /// rayon on every core.
    Cpu,
    /// NVIDIA GPU through CUDA (driver + NVRTC).
    Cuda,
}

/// The CUDA backend when `choice` asks for it and it works; `auto` falls back
/// to the CPU with one line saying why, an explicit `cuda` that cannot run is an error.
#[cfg(feature = "cuda")]
fn open_cuda(choice: BackendChoice) -> Result<Option<reap::compaction::cuda::CudaBackend>> {
    use reap::compaction::cuda::CudaBackend;
    match choice {
        BackendChoice::Cpu => Ok(None),
        BackendChoice::Cuda => Ok(Some(CudaBackend::new(0)?)),
        BackendChoice::Auto => match CudaBackend::new(0) {
            Ok(b) => Ok(Some(b)),
            Err(e) => {
                eprintln!("note: using the CPU backend; CUDA is unavailable: {e}");
                Ok(None)
            }
        },
    }
}

/// Without the `cuda` feature there is no CUDA backend to open.
#[cfg(not(feature = "cuda"))]
fn open_cuda(choice: BackendChoice) -> Result<Option<std::convert::Infallible>> {
    if choice == BackendChoice::Cuda {
        bail!("this reap was built without the `cuda` feature; rebuild with default features or use --backend cpu");
    }
    Ok(None)
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
    /// Element counts, comma separated (default: sizes around every block boundary up to 1,000,003;
    /// on CUDA also 2^24+7, 2^28 and 2^31+2^24+4099). Sizes above 2^21 run a reduced matrix; sizes
    /// above 2^31 run only the counted select, partition and scan. Each size is also the capacity of
    /// the counted cases, whose lengths are 0, 1, cap-1, cap, below cap and above it.
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

pub fn main() -> ExitCode {
    // `reap … | head` should end quietly, as other command-line tools do,
    // rather than panic in println! when the pipe closes.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of one signal, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let outcome = match cli.command {
        // The main job: the viewer, or where no window can open, a render of the default scene.
        None => first_run(),
        Some(Command::Algorithms) => {
            print_catalog();
            Ok(true)
        }
        Some(Command::Verify(args)) => run_verify(args),
        Some(Command::Bench(BenchCommand::Compaction(args))) => bench_cmd::run_bench(args),
        Some(Command::Bench(BenchCommand::Report { dir })) => bench_cmd::rerun_report(&dir),
        Some(Command::Render(args)) => render_cmd::run(args),
        Some(Command::View(args)) => run_view(args),
        Some(Command::Bench(BenchCommand::Render(args))) => render_cmd::bench(args),
        Some(Command::Bench(BenchCommand::Noise(args))) => noise_cmd::run(args),
        Some(Command::Collide(args)) => collide_cmd::run(args),
        Some(Command::Bench(BenchCommand::Collide(args))) => collide_cmd::bench(args),
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

/// `reap` with no arguments: the viewer on the Cornell box; without a display,
/// the headless render it replaced, with one line saying so.
fn first_run() -> Result<bool> {
    #[cfg(feature = "viewer")]
    {
        let opts = reap::viewer::ViewOptions {
            scene: "cornell".into(),
            backend: None,
            width: 960,
            height: 540,
            frames: None,
            screenshot: None,
            compare_all: None,
            collide: None,
            descend: reap::trace::DESCEND,
        };
        match reap::viewer::run(opts) {
            Ok(()) => return Ok(true),
            Err(e) if e.is_no_display() => {
                println!(
                    "reap: cannot open the viewer ({e}); rendering render.png headless instead (see `reap render --help`)"
                )
            }
            Err(e) => return Err(e.into()),
        }
    }
    #[cfg(not(feature = "viewer"))]
    println!("reap: built without the viewer; rendering render.png headless (see `reap render --help`)");
    match Cli::try_parse_from(["reap", "render"]) {
        Ok(Cli { command: Some(Command::Render(mut args)) }) => {
            args.first_run = true;
            render_cmd::run(args)
        }
        _ => unreachable!("`reap render` parses with its defaults"),
    }
}

#[cfg(feature = "viewer")]
fn run_view(args: ViewArgs) -> Result<bool> {
    use reap::viewer::session::BackendKind;
    let backend = match args.backend {
        BackendChoice::Auto => None,
        BackendChoice::Cpu => Some(BackendKind::Cpu),
        BackendChoice::Cuda => Some(BackendKind::Cuda),
    };
    if let Some(p) = &args.screenshot {
        reap::trace::output::check_writable(p)?;
    }
    let collide = match args.collide {
        true => Some(reap::viewer::CollideOptions { scenario: args.scenario.parse()?, bodies: args.bodies }),
        false => None,
    };
    let opts = reap::viewer::ViewOptions {
        scene: args.scene,
        backend,
        width: args.width,
        height: args.height,
        frames: args.frames,
        screenshot: args.screenshot,
        compare_all: args.compare_all,
        collide,
        descend: args.descend,
    };
    match reap::viewer::run(opts) {
        Ok(()) => Ok(true),
        Err(e) if e.is_no_display() => bail!("{e}; `reap render` renders without a window"),
        Err(e) => Err(e.into()),
    }
}

#[cfg(not(feature = "viewer"))]
fn run_view(_args: ViewArgs) -> Result<bool> {
    bail!("this reap was built without the `viewer` feature; rebuild with default features, or use `reap render`")
}

fn backends_of(algorithm: Algorithm) -> Vec<&'static str> {
    let mut v = Vec::new();
    if CpuBackend::new().runs(algorithm) {
        v.push(BackendKind::Cpu.name());
    }
    #[cfg(feature = "cuda")]
    if reap::compaction::cuda::CudaBackend::implements(algorithm) {
        v.push(BackendKind::Cuda.name());
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
    let sizes_given = !args.sizes.is_empty();
    if sizes_given {
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
    if args.elements.is_empty() {
        bail!("--elements needs at least one of 4, 8, 16");
    }
    cfg.element_sizes = args.elements;
    cfg.seed = args.seed;
    #[allow(unused_variables, unreachable_code)]
    match open_cuda(args.backend)? {
        Some(cuda) => {
            #[cfg(feature = "cuda")]
            {
                println!("device: {} ({} SMs)", cuda.info.name, cuda.info.sms);
                if !sizes_given {
                    // The GPU suite also covers the sizes only a GPU checks quickly, and
                    // counted lengths past 2^31.
                    cfg.sizes.extend([(1 << 24) + 7, 1 << 28, verify::Config::ABOVE_2_31]);
                }
                return Ok(verify_on(&cuda, &cfg, args.verbose));
            }
            unreachable!("no CUDA backend without the cuda feature")
        }
        None => Ok(verify_on(&CpuBackend::new(), &cfg, args.verbose)),
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
