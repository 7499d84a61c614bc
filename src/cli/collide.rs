//! `reap collide` and `reap bench collide`: the collision demo, headless.
//! Builds a scenario, steps it on the chosen backend with the chosen frontier
//! compaction and sort, and writes the per-frame timings and a summary table;
//! the benchmark runs every (body count, sort, compaction) configuration from
//! the same start and checks that they all find the same contacts.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};

use reap::collide::bench::{self, BenchRow};
use reap::collide::output::{self, Run, Summary};
use reap::collide::{
    Body, CollideError, CollideSettings, Compaction, Engine, FrameStats, Scenario, SortMethod, World, cpu::CpuCollide,
    scenario, simulate,
};
use reap::compaction::{Algorithm, Backend, CpuBackend};

use super::{BackendChoice, open_cuda};

/// Bodies when --bodies is not given: a GPU runs 100k interactively, a CPU 10k.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
const DEFAULT_BODIES_CUDA: u32 = 100_000;
const DEFAULT_BODIES_CPU: u32 = 10_000;

/// A body count: `10000`, `10_000`, `10k` or `1M`; at least 1.
pub fn parse_bodies(s: &str) -> Result<u32, String> {
    let t = s.trim().replace('_', "");
    let (digits, scale) = match t.strip_suffix(['k', 'K']) {
        Some(d) => (d, 1_000u64),
        None => match t.strip_suffix(['m', 'M']) {
            Some(d) => (d, 1_000_000),
            None => (t.as_str(), 1),
        },
    };
    let n: u64 = digits.parse().map_err(|_| format!("`{s}`: expected a body count such as 10000, 100k or 1M"))?;
    let n = n.checked_mul(scale).filter(|n| *n <= u32::MAX as u64).ok_or_else(|| format!("`{s}` is too large"))?;
    if n == 0 {
        return Err("--bodies must be at least 1".into());
    }
    Ok(n as u32)
}

fn scenarios_help() -> String {
    let mut s = String::from("Scenarios:\n");
    for sc in Scenario::ALL {
        s.push_str(&format!("  {:<6} {}\n", sc.name(), sc.describe()));
    }
    s
}

#[derive(clap::Args)]
#[command(after_help = scenarios_help())]
pub struct CollideArgs {
    /// The scenario (listed below).
    #[arg(long, default_value = "pile")]
    pub scenario: String,
    /// Number of bodies (`100k` and `1M` work too); default 100000 on CUDA, 10000 on the CPU.
    #[arg(long, value_parser = parse_bodies)]
    pub bodies: Option<u32>,
    /// Frames to simulate; the summary's means leave out frame 0 (a warm-up) when there are more.
    #[arg(long, default_value_t = 100)]
    pub frames: u32,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Algorithm that compacts the pair frontier after each traversal level, or `none` (dead slots stay,
    /// and the frontier grows fourfold per level).
    #[arg(long, default_value = "lookback")]
    pub compact_pairs: String,
    /// How the Morton codes are sorted: `fast` (8-bit digit radix sort) or `split:ALG` (the library's
    /// radix sort by repeated split with a catalog algorithm).
    #[arg(long, default_value = "fast")]
    pub sort: String,
    /// Jacobi iterations of the contact solver per frame (1 to 64).
    #[arg(long, default_value_t = 4)]
    pub iterations: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The most slots a frontier level may hold (the `none` baseline grows fourfold per level).
    #[arg(long, default_value_t = 1 << 28)]
    pub max_frontier: u64,
    /// Per-frame timings (every stage and level, frontier sizes, counts): .json or .csv.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn check_frames(frames: u32) -> Result<()> {
    if frames == 0 {
        bail!("--frames must be at least 1");
    }
    Ok(())
}

fn settings<B: Backend>(
    backend: &B,
    compact_pairs: &str,
    sort: &str,
    iterations: u32,
    max_frontier: u64,
) -> Result<CollideSettings> {
    let s = CollideSettings {
        compact_pairs: Compaction::parse(compact_pairs, backend, "compact-pairs")?,
        sort: SortMethod::parse(sort, backend)?,
        iterations,
        max_frontier,
    };
    s.check()?;
    Ok(s)
}

fn cpu_device() -> String {
    format!("CPU ({} threads)", rayon::current_num_threads())
}

pub fn run(args: CollideArgs) -> Result<bool> {
    // Output path and plain arguments first: a bad flag must not cost a simulation.
    if let Some(out) = &args.out {
        output::check_timings_path(out)?;
    }
    let sc: Scenario = args.scenario.parse()?;
    check_frames(args.frames)?;

    #[allow(unused_variables, unreachable_code)]
    match open_cuda(args.backend)? {
        Some(cuda) => {
            #[cfg(feature = "cuda")]
            {
                let device = cuda.info.name.clone();
                let s = settings(&cuda, &args.compact_pairs, &args.sort, args.iterations, args.max_frontier)?;
                let n = args.bodies.unwrap_or(DEFAULT_BODIES_CUDA);
                let (world, bodies) = build(sc, n, args.seed)?;
                let engine = reap::collide::cuda::CudaCollide::new(cuda, world, &bodies)?;
                return go(engine, &args, sc, n, s, "cuda", &device);
            }
            unreachable!("no CUDA backend without the cuda feature")
        }
        None => {
            let cpu = CpuBackend::new();
            let s = settings(&cpu, &args.compact_pairs, &args.sort, args.iterations, args.max_frontier)?;
            let n = args.bodies.unwrap_or(DEFAULT_BODIES_CPU);
            let (world, bodies) = build(sc, n, args.seed)?;
            let engine = CpuCollide::new(world, &bodies)?;
            go(engine, &args, sc, n, s, "cpu", &cpu_device())
        }
    }
}

fn build(sc: Scenario, n: u32, seed: u64) -> Result<(World, Vec<Body>)> {
    let t0 = std::time::Instant::now();
    let built = scenario::build(sc, n, seed).with_context(|| format!("building scenario `{}`", sc.name()))?;
    eprintln!("scenario {}: {n} bodies placed in {:.2} s", sc.name(), t0.elapsed().as_secs_f64());
    Ok(built)
}

fn go<E: Engine>(
    mut engine: E,
    args: &CollideArgs,
    sc: Scenario,
    n: u32,
    s: CollideSettings,
    backend: &str,
    device: &str,
) -> Result<bool> {
    println!(
        "{} with {n} bodies on {device}: sort {}, pair frontier compacted by {}, {} solver iterations, {} frames",
        sc.name(),
        s.sort.name(),
        s.compact_pairs.name(),
        s.iterations,
        args.frames
    );
    warm_up(&engine, &s)?;
    let bar = ProgressBar::new(args.frames as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} frames  {msg}  [{elapsed_precise} < {eta_precise}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let frames = simulate(&mut engine, &s, args.frames, |f| {
        bar.set_message(format!(
            "broad {:.3} ms, frame {:.3} ms summed ({:.3} wall clock), {} contacts",
            f.broad_ms(),
            f.frame_ms,
            f.wall_ms,
            f.contacts
        ));
        bar.inc(1);
    });
    bar.finish_and_clear();
    let frames = frames?;
    let summary = Summary::of(&frames);
    print!("{}", output::summary_table(&summary, &frames));
    if let Some(path) = &args.out {
        let run = Run { backend, device, scenario: sc.name(), bodies: n, seed: args.seed, settings: &s };
        output::write_timings(path, &run, &frames)?;
        println!("timings written to {}", path.display());
    }
    Ok(true)
}

/// Compiles (NVRTC) and loads the compaction and split-sort kernels the run
/// will use, so frame 0 measures the frame rather than the compiler.
fn warm_up<E: Engine>(engine: &E, s: &CollideSettings) -> Result<()> {
    use reap::collide::DEAD64;
    use reap::compaction::{Keep, Report};
    let b = engine.backend();
    if let Compaction::With(alg) = s.compact_pairs {
        let (input, mut out) = (b.upload(&[DEAD64, 7])?, b.alloc::<u64>(2)?);
        b.select(alg, &input, Keep::Sentinel(DEAD64), &mut out)?.count()?;
    }
    if let SortMethod::Split(alg) = s.sort {
        let (mut keys, mut ids) = (b.upload(&[3u32, 1])?, b.upload(&[0u32, 1])?);
        b.radix_sort(alg, &mut keys, Some(&mut ids))?.count()?;
    }
    Ok(())
}

#[derive(clap::Args)]
#[command(after_help = scenarios_help())]
pub struct CollideBenchArgs {
    /// The scenario (listed below).
    #[arg(long, default_value = "pile")]
    pub scenario: String,
    /// Body counts, comma separated (`100k`, `1M` work too).
    #[arg(long, value_delimiter = ',', value_parser = parse_bodies, default_value = "10000,100000,1000000")]
    pub bodies: Vec<u32>,
    /// Frontier compaction choices, comma separated: `all` is `none` and every algorithm the backend
    /// selects with.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub algorithms: Vec<String>,
    /// Sort methods, comma separated: `fast` and `split:ALG`.
    #[arg(long, value_delimiter = ',', default_value = "fast,split:lookback")]
    pub sorts: Vec<String>,
    /// Frames per configuration, each from the same start; frame 0 is a warm-up left out of the means.
    #[arg(long, default_value_t = 10)]
    pub frames: u32,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    #[arg(long, default_value_t = 4)]
    pub iterations: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The most slots a frontier level may hold; a `none` run that outgrows it is reported, not fatal.
    #[arg(long, default_value_t = 1 << 28)]
    pub max_frontier: u64,
    /// Frames to simulate (untimed, with `lookback` and the fast sort) before the measured ones, so
    /// that a pile has settled into contact; every configuration then starts from the settled state.
    #[arg(long, default_value_t = 0)]
    pub settle: u32,
    /// Folder for results.csv, results.json and report.md (created if missing).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `reap bench collide`: every body count × sort × compaction choice, one
/// engine per body count, with the candidate and contact sets checked equal
/// across compaction choices.
pub fn bench(args: CollideBenchArgs) -> Result<bool> {
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        output::check_writable(&dir.join("report.md"))?;
    }
    let sc: Scenario = args.scenario.parse()?;
    check_frames(args.frames)?;
    if args.bodies.is_empty() || args.algorithms.is_empty() || args.sorts.is_empty() {
        bail!("--bodies, --algorithms and --sorts each need at least one value");
    }
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mut rows = Vec::new();
    let mut device = String::new();
    // `auto` falling back to the CPU says so once, not once per body count.
    let mut choice = args.backend;
    for &n in &args.bodies {
        #[allow(unused_variables, unreachable_code)]
        match open_cuda(choice)? {
            Some(cuda) => {
                #[cfg(feature = "cuda")]
                {
                    device = cuda.info.name.clone();
                    let configs = configs(&args, &cuda)?;
                    let (world, bodies) = build(sc, n, args.seed)?;
                    let engine = reap::collide::cuda::CudaCollide::new(cuda, world, &bodies)?;
                    rows.extend(bench_bodies(engine, &args, sc, &bodies, &configs, "cuda", &device)?);
                    continue;
                }
                unreachable!("no CUDA backend without the cuda feature")
            }
            None => {
                choice = BackendChoice::Cpu;
                let cpu = CpuBackend::new();
                device = cpu_device();
                let configs = configs(&args, &cpu)?;
                let (world, bodies) = build(sc, n, args.seed)?;
                let engine = CpuCollide::new(world, &bodies)?;
                rows.extend(bench_bodies(engine, &args, sc, &bodies, &configs, "cpu", &device)?);
            }
        }
    }
    let md = bench::bench_report(&rows, &device, &command);
    println!("{}", bench::bench_table(&rows));
    if let Some(dir) = &args.out {
        bench::write_bench(dir, &rows, &device, &command, &md)?;
        println!("wrote results.csv, results.json and report.md in {}", dir.display());
    }
    let diff = bench::disagreements(&rows);
    for d in &diff {
        eprintln!("error: {d}");
    }
    Ok(diff.is_empty())
}

/// The (sort, compaction) configurations, each parsed on the backend that will run it.
fn configs<B: Backend>(args: &CollideBenchArgs, backend: &B) -> Result<Vec<CollideSettings>> {
    let mut compactions = Vec::new();
    for name in &args.algorithms {
        if name == "all" {
            for c in Compaction::choices(backend) {
                compactions.push(Compaction::parse(c, backend, "algorithms")?);
            }
        } else {
            compactions.push(Compaction::parse(name, backend, "algorithms")?);
        }
    }
    let mut out = Vec::new();
    for sort in &args.sorts {
        for c in &compactions {
            out.push(settings(backend, c.name(), sort, args.iterations, args.max_frontier)?);
        }
    }
    Ok(out)
}

fn bench_bodies<E: Engine>(
    mut engine: E,
    args: &CollideBenchArgs,
    sc: Scenario,
    start: &[Body],
    configs: &[CollideSettings],
    backend: &str,
    device: &str,
) -> Result<Vec<BenchRow>> {
    let n = start.len() as u32;
    let settled;
    let start = if args.settle > 0 {
        let s = CollideSettings {
            compact_pairs: Compaction::With(Algorithm::Lookback),
            sort: SortMethod::Fast,
            iterations: args.iterations,
            max_frontier: args.max_frontier,
        };
        engine.set_bodies(start)?;
        eprintln!("{n} bodies: settling for {} frames", args.settle);
        simulate(&mut engine, &s, args.settle, |_| {})?;
        settled = engine.bodies()?;
        &settled[..]
    } else {
        start
    };
    let mut rows = Vec::new();
    let bar = ProgressBar::new(configs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} configurations  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    for s in configs {
        bar.set_message(format!("{n} bodies, sort {}, {}", s.sort.name(), s.compact_pairs.name()));
        let run = Run { backend, device, scenario: sc.name(), bodies: n, seed: args.seed, settings: s };
        warm_up(&engine, s)?;
        // Every configuration steps the same start.
        engine.set_bodies(start)?;
        let row = match simulate(&mut engine, s, args.frames, |_| {}) {
            Ok(frames) => {
                let sets = last_frame_sets(&engine, &frames)?;
                BenchRow::measured(&run, &frames, sets)
            }
            // Without compaction the frontier grows fourfold per level: running out is a result.
            Err(e @ (CollideError::FrontierTooLarge { .. } | CollideError::OutOfMemory { .. }))
                if s.compact_pairs == Compaction::None =>
            {
                BenchRow::failed(&run, args.frames, e.to_string())
            }
            Err(e) => {
                bar.abandon();
                return Err(e).with_context(|| {
                    format!("{n} bodies, sort {}, compaction {}", s.sort.name(), s.compact_pairs.name())
                });
            }
        };
        bar.println(single_line(&row));
        rows.push(row);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(rows)
}

/// The hash of the last frame's candidate pairs and contacts (read back after
/// timing, so it costs the measurement nothing).
fn last_frame_sets<E: Engine>(engine: &E, frames: &[FrameStats]) -> Result<String> {
    if frames.is_empty() {
        return Ok(String::new());
    }
    Ok(bench::set_hash(&engine.candidate_pairs()?, &engine.contact_list()?))
}

fn single_line(r: &BenchRow) -> String {
    match &r.error {
        Some(e) => format!("{:>8} {:<21} {:<27} did not run: {e}", r.bodies, r.sort, r.compaction),
        None => format!(
            "{:>8} {:<21} {:<27} broad {:>9.3} ms  frame {:>9.3} ms summed, {:>9.3} ms wall  {:.0} candidates, \
             {:.0} contacts",
            r.bodies, r.sort, r.compaction, r.broad_ms, r.frame_ms, r.wall_ms, r.candidates, r.contacts
        ),
    }
}
