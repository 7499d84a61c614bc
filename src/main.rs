//! The `reap` command line: the algorithm catalog, the correctness suite, and
//! (as the workloads land) rendering, collision and benchmarks.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};

use reap::compaction::{Algorithm, Backend, BackendKind, CpuBackend, Operation};
use reap::verify::{self, Harness};

mod collide_cmd;
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
    Compaction(BenchArgs),
    /// Write report.md and the plots again from a run's results.json, without measuring.
    Report {
        /// The --out folder of an earlier `reap bench compaction` run.
        dir: std::path::PathBuf,
    },
    /// Path-trace scenes with every traversal mode x compaction choice: Mrays/s and compaction's share.
    Render(render_cmd::RenderBenchArgs),
    /// Collision demo per body count x sort x frontier compaction: per-frame breakdown, contacts checked equal.
    Collide(collide_cmd::CollideBenchArgs),
}

/// A count written plainly or as a power of two (`2^22`).
fn parse_count(s: &str) -> Result<u64, String> {
    let s = s.trim();
    if let Some(exp) = s.strip_prefix("2^") {
        let e: u32 = exp.parse().map_err(|_| format!("`{s}`: expected 2^K"))?;
        1u64.checked_shl(e).filter(|_| e < 64).ok_or_else(|| format!("`{s}` is too large"))
    } else {
        s.replace('_', "").parse().map_err(|_| format!("`{s}`: expected a count such as 1048576 or 2^20"))
    }
}

#[derive(clap::Args)]
struct BenchArgs {
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// A paper's experiment (repeatable, or comma separated): 000-fig3, 000-fig4, 000-table3, 000-table4,
    /// 000-table5, 003-table1, 002-s4, 004-fig4, or `all`. Presets fix algorithms, operation, sizes,
    /// densities and elements; --reps, --warmup and --seed still apply.
    #[arg(long, value_delimiter = ',')]
    preset: Vec<String>,
    /// Catalog names, comma separated, or `all`.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    algorithms: Vec<String>,
    /// select, partition, scan, sort, sort-pairs, or remove (seed 004: Redzone vs marking + select).
    #[arg(long, default_value = "select")]
    operation: String,
    /// Element counts (`2^22` or plain), comma separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_count, default_value = "2^22")]
    sizes: Vec<u64>,
    /// Fractions kept (removed, for `remove`), comma separated.
    #[arg(long, value_delimiter = ',', default_value = "0,0.1,0.25,0.5,0.75,0.9,1")]
    densities: Vec<f64>,
    /// Element sizes in bytes: 4, 8, 16.
    #[arg(long, value_delimiter = ',', default_value = "4")]
    elements: Vec<usize>,
    /// Timed repetitions per configuration (the median is reported, with min and max).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Untimed runs first (compilation, caches).
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Do not build or run the CUB peer.
    #[arg(long)]
    no_cub: bool,
    /// Folder for results.csv, results.json, report.md and the plots (created if missing).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
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

fn main() -> ExitCode {
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
        Some(Command::Bench(BenchCommand::Compaction(args))) => run_bench(args),
        Some(Command::Bench(BenchCommand::Report { dir })) => rerun_report(&dir),
        Some(Command::Render(args)) => render_cmd::run(args),
        Some(Command::View(args)) => run_view(args),
        Some(Command::Bench(BenchCommand::Render(args))) => render_cmd::bench(args),
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

fn run_bench(args: BenchArgs) -> Result<bool> {
    use reap::bench::{Job, Settings, presets};
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let chosen = presets::resolve(&args.preset)?;
    let series: Vec<Settings> = if chosen.is_empty() {
        let algorithms = if args.algorithms.iter().any(|a| a == "all") {
            Algorithm::ALL.to_vec()
        } else {
            args.algorithms.iter().map(|a| a.parse::<Algorithm>()).collect::<Result<_, _>>()?
        };
        let job = match args.operation.as_str() {
            "select" => Job::Compaction(Operation::Select),
            "partition" => Job::Compaction(Operation::Partition),
            "scan" => Job::Scan,
            "sort" => Job::Sort { pairs: false },
            "sort-pairs" => Job::Sort { pairs: true },
            "remove" => Job::Remove,
            other => bail!("--operation {other}: use select, partition, scan, sort, sort-pairs or remove"),
        };
        vec![Settings {
            preset: String::new(),
            job,
            algorithms,
            sizes: args.sizes.clone(),
            densities: args.densities.clone(),
            element_sizes: args.elements.clone(),
            reps: args.reps,
            warmup: args.warmup,
            seed: args.seed,
        }]
    } else {
        presets::series(&chosen, args.reps, args.warmup, args.seed)
    };
    for s in &series {
        s.check()?;
    }
    // Fail on an unwritable folder before measuring anything.
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stop = stop.clone();
        // A second handler cannot be installed (e.g. in tests calling twice); measuring still works.
        let _ = ctrlc::set_handler(move || stop.store(true, std::sync::atomic::Ordering::SeqCst));
    }
    let run = BenchRun {
        series: &series,
        presets: chosen.iter().map(|p| p.name.to_string()).collect(),
        out: args.out.as_deref(),
        cub: !args.no_cub,
        stop: &stop,
        command: &command,
    };
    #[allow(unused_variables, unreachable_code)]
    match open_cuda(args.backend)? {
        Some(cuda) => {
            #[cfg(feature = "cuda")]
            {
                bench_on(&cuda, &run)
            }
            #[cfg(not(feature = "cuda"))]
            unreachable!("no CUDA backend without the cuda feature")
        }
        None => bench_on(&CpuBackend::new(), &run),
    }
}

struct BenchRun<'a> {
    series: &'a [reap::bench::Settings],
    presets: Vec<String>,
    out: Option<&'a std::path::Path>,
    cub: bool,
    stop: &'a std::sync::atomic::AtomicBool,
    command: &'a str,
}

fn bench_on<B: reap::bench::Timed>(backend: &B, run: &BenchRun<'_>) -> Result<bool> {
    use reap::bench::{self, cub, output};
    use std::sync::atomic::Ordering;
    let platform = backend.platform();
    let total: u64 = run.series.iter().map(|s| s.planned(|a| backend.runs(a))).sum();
    println!("benchmarking on {} ({} rows; Ctrl-C stops and keeps what was measured)", platform.device, total);
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} rows, {elapsed} elapsed, ~{eta} left  {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.println(format!(
        "{:<27} {:<11} {:>5} {:>11} {:>6} {:>10} {:>10} {:>10} {:>7}  phases (ms)",
        "algorithm", "operation", "bytes", "n", "dens%", "median ms", "min ms", "max ms", "% copy"
    ));
    let stopped = || run.stop.load(Ordering::SeqCst);
    let mut rows: Vec<bench::Row> = Vec::new();
    for s in run.series {
        if stopped() {
            break;
        }
        bar.set_message(if s.preset.is_empty() { String::new() } else { s.preset.clone() });
        let measured = bench::run(backend, s, &stopped, &mut |r| {
            let phases: Vec<String> = r.phases.iter().map(|(n, t)| format!("{n} {t:.4}")).collect();
            bar.println(format!(
                "{:<27} {:<11} {:>5} {:>11} {:>6.1} {:>10.4} {:>10.4} {:>10.4} {:>7.1}  {}",
                r.algorithm,
                r.operation,
                r.element_bytes,
                r.n,
                r.density * 100.0,
                r.median_ms,
                r.min_ms,
                r.max_ms,
                r.pct_of_copy,
                phases.join(", ")
            ));
            bar.inc(1);
        });
        match measured {
            Ok(r) => rows.extend(r),
            Err(e) => {
                bar.abandon();
                // Keep what was measured before the error, then report it.
                if let Some(dir) = run.out {
                    output::write_atomically(&dir.join("results.csv"), bench::csv(&rows)?.as_bytes())?;
                }
                return Err(e.into());
            }
        }
        if let Some(dir) = run.out {
            output::write_atomically(&dir.join("results.csv"), bench::csv(&rows)?.as_bytes())?;
        }
    }
    bar.finish_and_clear();
    let complete = !stopped();
    if !complete {
        println!("stopped: {} rows measured", rows.len());
    }

    // The CUB peer: same configurations, same method, its own process.
    let peer = if !run.cub {
        cub::PeerStatus::Skipped { why: "--no-cub".into() }
    } else if !complete {
        cub::PeerStatus::Skipped { why: "the run was stopped".into() }
    } else {
        cub_peer(&platform, &mut rows, run)
    };
    if let cub::PeerStatus::Skipped { why } = &peer {
        println!("CUB peer skipped: {why}");
    }
    print_rows(&rows);

    if let Some(dir) = run.out {
        output::write_atomically(&dir.join("results.csv"), bench::csv(&rows)?.as_bytes())?;
        let json = output::results_json(&output::Results {
            reap_version: env!("CARGO_PKG_VERSION"),
            reap_commit: output::GIT_COMMIT,
            finished_unix_s: output::now_unix_s(),
            complete,
            command: run.command,
            platform: &platform,
            cub_peer: &peer,
            presets: &run.presets,
            settings: run.series,
            rows: &rows,
        })?;
        output::write_atomically(&dir.join("results.json"), json.as_bytes())?;
        let md = bench::report::markdown(&bench::report::Input {
            platform: &platform,
            peer: &peer,
            presets: &run.presets,
            rows: &rows,
            complete,
            command: run.command,
        });
        output::write_atomically(&dir.join("report.md"), md.as_bytes())?;
        let plots = bench::plot::all(dir, &rows)?;
        println!("wrote results.csv, results.json, report.md and {} plot files in {}", plots.len(), dir.display());
    }
    Ok(true)
}

/// Builds (or reuses) and runs the CUB peer, joining its times to `rows`.
fn cub_peer(
    platform: &reap::bench::Platform,
    rows: &mut Vec<reap::bench::Row>,
    run: &BenchRun<'_>,
) -> reap::bench::cub::PeerStatus {
    use reap::bench::cub::{self, PeerStatus};
    let skipped = |why: String| PeerStatus::Skipped { why };
    let Some(arch) = platform.arch.clone() else {
        return skipped(format!("the {} backend has no CUB counterpart", platform.backend));
    };
    let Some(nvcc) = cub::find_nvcc() else {
        return skipped("nvcc not found on PATH, under CUDA_PATH / CUDA_HOME, or at /usr/local/cuda/bin".into());
    };
    let dir = run.out.map(|d| d.join(".cub-peer")).unwrap_or_else(|| std::env::temp_dir().join("reap-cub-peer"));
    println!("building the CUB peer with {} for {arch} in {} (cached)", nvcc.display(), dir.display());
    let binary = match cub::build(&nvcc, &dir, &arch) {
        Ok(b) => b,
        Err(e) => return skipped(e),
    };
    let jobs = cub::jobs(rows);
    let (reps, warmup, seed) = run.series.first().map(|s| (s.reps, s.warmup, s.seed)).unwrap_or((20, 3, 1));
    let bar = indicatif::ProgressBar::new(jobs.len() as u64);
    let result = cub::run(&binary, &jobs, reps, warmup, seed, &mut |p| {
        bar.println(format!(
            "{:<27} {:<11} {:>5} {:>11} {:>6.1} {:>10.4} {:>10.4} {:>10.4}",
            format!("cub-{}", p.op),
            "",
            p.elem,
            p.n,
            p.density * 100.0,
            p.median_ms,
            p.min_ms,
            p.max_ms
        ));
        bar.inc(1);
    });
    bar.finish_and_clear();
    match result {
        Ok((device, cub_version, cuda_runtime, peer_rows)) => {
            cub::join(rows, &peer_rows);
            let extra = cub::as_rows(&peer_rows, rows, &device);
            rows.extend(extra);
            PeerStatus::Ran {
                binary: binary.display().to_string(),
                nvcc: nvcc.display().to_string(),
                device,
                cub_version,
                cuda_runtime,
            }
        }
        Err(e) => skipped(e),
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

/// `reap bench report DIR`: the report and plots of a stored run, drawn again.
fn rerun_report(dir: &std::path::Path) -> Result<bool> {
    use reap::bench::{self, output};
    let stored = output::read_results(dir)?;
    let command = stored.command.unwrap_or_else(|| "(not recorded in results.json)".into());
    let md = bench::report::markdown(&bench::report::Input {
        platform: &stored.platform,
        peer: &stored.cub_peer,
        presets: &stored.presets,
        rows: &stored.rows,
        complete: stored.complete,
        command: &command,
    });
    output::write_atomically(&dir.join("report.md"), md.as_bytes())?;
    let plots = bench::plot::all(dir, &stored.rows)?;
    println!("wrote report.md and {} plot files in {} from its results.json", plots.len(), dir.display());
    Ok(true)
}

/// The measured rows as a plain table on stdout (the files under --out hold everything).
fn print_rows(rows: &[reap::bench::Row]) {
    println!(
        "{:<27} {:<11} {:>5} {:>11} {:>7} {:>11} {:>7} {:>7}  phases (ms)",
        "algorithm", "operation", "bytes", "n", "density", "median ms", "% copy", "vs CUB"
    );
    for r in rows.iter().filter(|r| r.backend != "cub") {
        let phases: Vec<String> = r.phases.iter().map(|(n, t)| format!("{n} {t:.4}")).collect();
        println!(
            "{:<27} {:<11} {:>5} {:>11} {:>7.3} {:>11.4} {:>7.1} {:>7}  {}",
            r.algorithm,
            r.operation,
            r.element_bytes,
            r.n,
            r.density,
            r.median_ms,
            r.pct_of_copy,
            r.vs_cub.map_or("-".to_string(), |v| format!("{v:.2}")),
            phases.join(", ")
        );
    }
}
