//! `reap render`: the wavefront path tracer, headless. Loads a scene, builds
//! its BVH, renders on the chosen backend with the chosen compaction at each
//! site, and writes the image, the timings and a summary table.

use std::path::PathBuf;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use reap::bvh;
use reap::compaction::{Backend, CpuBackend};
use reap::scene;
use reap::trace::layout::{CameraLayout, Packed};
use reap::trace::output::{self, Summary, Timings};
use reap::trace::tonemap::{Tone, ToneCurve};
use reap::trace::{Compaction, Engine, Estimator, RenderSettings, Traversal, cpu::CpuEngine, render};

use super::{BackendChoice, open_cuda};

#[derive(clap::Args)]
#[command(after_help = scenes_help())]
pub struct RenderArgs {
    /// A built-in scene's name (listed below) or a path to an OBJ file (its MTL beside it).
    #[arg(long, default_value = "cornell")]
    pub scene: String,
    #[arg(long, default_value_t = 1280)]
    pub width: u32,
    #[arg(long, default_value_t = 720)]
    pub height: u32,
    /// Samples per pixel (one wavefront frame each).
    #[arg(long, default_value_t = 64)]
    pub spp: u32,
    /// Scattering vertices per path, as pbrt-v4's maxdepth: each gets next-event estimation, and the
    /// ray leaving the last one is still traced for the light or sky it finds.
    #[arg(long, default_value_t = 8)]
    pub max_bounces: u32,
    /// Direct light at diffuse and glossy surfaces: mis (light and BSDF samples, power heuristic),
    /// light (light samples only) or bsdf (BSDF samples only). All three converge to the same image.
    #[arg(long, default_value = "mis", value_parser = parse_estimator)]
    pub estimator: Estimator,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// breadth-first (a compacted frontier of (path, node) items per level) or depth-first (a stack per ray).
    #[arg(long, default_value = "breadth-first")]
    pub traversal: String,
    /// Algorithm that removes dead paths after each bounce: a catalog name, or `none` (dead slots stay).
    #[arg(long, default_value = "lookback")]
    pub compact_paths: String,
    /// Algorithm that compacts the breadth-first frontier after each level, or `none`.
    #[arg(long, default_value = "lookback")]
    pub compact_frontier: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u32,
    /// The image: .png (8-bit sRGB) or .exr (linear radiance).
    #[arg(long, default_value = "render.png")]
    pub out: PathBuf,
    /// PNG only: multiply linear radiance by 2^EV before the tone curve.
    #[arg(long, value_name = "EV", default_value_t = 0.0, allow_negative_numbers = true)]
    pub exposure: f32,
    /// PNG only: the display curve: clamp (none; a furnace stays white), aces (Hill's ACES fit) or agx
    /// (AgX base).
    #[arg(long, default_value = "clamp", value_parser = |s: &str| s.parse::<ToneCurve>().map_err(|e| e.to_string()))]
    pub tonemap: ToneCurve,
    /// Timings per frame, bounce, level and stage: .json or .csv.
    #[arg(long)]
    pub timings: Option<PathBuf>,
    /// The most items a breadth-first frontier level may hold (the `none` baseline doubles per level).
    #[arg(long, default_value_t = 1 << 28)]
    pub max_frontier: u64,
    /// BVH levels one breadth-first expansion descends (1 to 5): each level's items fan out to 2^K
    /// slots, so a deeper descent makes fewer, fuller levels.
    #[arg(long, value_name = "K", default_value_t = reap::trace::DESCEND)]
    pub descend: u32,
    /// Set for `reap` with no arguments: on the CPU, render a smaller image so the first run is quick.
    #[arg(skip)]
    pub first_run: bool,
}

impl RenderArgs {
    fn tone(&self) -> Tone {
        Tone { exposure: self.exposure, curve: self.tonemap }
    }
}

fn scenes_help() -> String {
    let mut s = String::from("Built-in scenes:\n");
    for (name, what) in scene::BUILTINS {
        s.push_str(&format!("  {name:<18} {what}\n"));
    }
    s
}

pub fn run(mut args: RenderArgs) -> Result<bool> {
    // Output paths first: a bad path must not cost a render.
    let format = output::image_format(&args.out)?;
    if !args.exposure.is_finite() {
        anyhow::bail!("--exposure {} is not a number of stops", args.exposure);
    }
    if format == output::ImageFormat::Exr && args.tone() != Tone::CLAMP {
        anyhow::bail!("{} is an EXR (linear radiance): --exposure and --tonemap apply to PNG only", args.out.display());
    }
    output::check_writable(&args.out)?;
    if let Some(t) = &args.timings {
        output::timings_format(t)?;
        output::check_writable(t)?;
    }
    let traversal: Traversal = args.traversal.parse()?;

    let t0 = std::time::Instant::now();
    let sc = scene::load(&args.scene).with_context(|| format!("loading scene `{}`", args.scene))?;
    for w in &sc.warnings {
        eprintln!("warning: {w}");
    }
    if sc.skipped_triangles > 0 {
        eprintln!("warning: skipped {} degenerate or non-finite triangles", sc.skipped_triangles);
    }
    println!("scene {}: {} triangles, loaded in {:.2} s", sc.name, sc.triangles.len(), t0.elapsed().as_secs_f64());
    let tree = bvh::build(&sc.triangles);
    println!(
        "BVH: {} nodes, depth {}, built in {:.1} ms (binned SAH, {} threads)",
        tree.nodes.len(),
        tree.depth,
        tree.build_time.as_secs_f64() * 1e3,
        rayon::current_num_threads()
    );
    let packed = Packed::new(&sc, &tree);

    #[allow(unused_variables, unreachable_code)]
    match open_cuda(args.backend)? {
        Some(cuda) => {
            #[cfg(feature = "cuda")]
            {
                let camera = CameraLayout::new(&sc.camera, args.width, args.height);
                let ctx = RenderJob { args: &args, scene: &sc, tree: &tree, traversal };
                let device = cuda.info.name.clone();
                let settings = ctx.settings(&cuda)?;
                let engine = reap::trace::cuda::CudaEngine::new(
                    cuda,
                    &packed,
                    camera,
                    args.width,
                    args.height,
                    args.seed,
                    args.max_bounces,
                )?;
                return ctx.go(engine, settings, "cuda", &device);
            }
            unreachable!("no CUDA backend without the cuda feature")
        }
        None => {
            let cpu = CpuBackend::new();
            if args.first_run {
                // A few seconds on a laptop's cores rather than minutes.
                (args.width, args.height, args.spp) = (640, 360, 16);
                println!(
                    "no CUDA GPU: rendering a smaller image on the CPU ({}x{}, {} spp)",
                    args.width, args.height, args.spp
                );
            }
            let camera = CameraLayout::new(&sc.camera, args.width, args.height);
            let ctx = RenderJob { args: &args, scene: &sc, tree: &tree, traversal };
            let settings = ctx.settings(&cpu)?;
            let device = format!("CPU ({} threads)", rayon::current_num_threads());
            let engine = CpuEngine::new(cpu, packed, camera, args.width, args.height, args.seed, args.max_bounces);
            ctx.go(engine, settings, "cpu", &device)
        }
    }
}

/// `--estimator`: a catalog name of [`Estimator`].
pub(crate) fn parse_estimator(s: &str) -> std::result::Result<Estimator, String> {
    s.parse().map_err(|e: reap::trace::TraceError| e.to_string())
}

/// What the backend-independent half of a render needs.
struct RenderJob<'a> {
    args: &'a RenderArgs,
    scene: &'a scene::Scene,
    tree: &'a bvh::Bvh,
    traversal: Traversal,
}

impl RenderJob<'_> {
    fn settings<B: Backend>(&self, backend: &B) -> Result<RenderSettings> {
        let a = self.args;
        let s = RenderSettings {
            width: a.width,
            height: a.height,
            spp: a.spp,
            max_bounces: a.max_bounces,
            estimator: a.estimator,
            traversal: self.traversal,
            compact_paths: Compaction::parse(&a.compact_paths, backend, "compact-paths")?,
            compact_frontier: Compaction::parse(&a.compact_frontier, backend, "compact-frontier")?,
            seed: a.seed,
            first_sample: 0,
            max_frontier: a.max_frontier,
            descend: a.descend,
        };
        s.check()?;
        Ok(s)
    }

    fn go<E: Engine>(&self, mut engine: E, settings: RenderSettings, backend: &str, device: &str) -> Result<bool> {
        let a = self.args;
        println!(
            "rendering {}x{}, {} spp, {} bounces, {} estimator on {device}: {} traversal, paths compacted by {}, \
             frontier by {}",
            a.width,
            a.height,
            a.spp,
            a.max_bounces,
            settings.estimator,
            settings.traversal.name(),
            settings.compact_paths.name(),
            settings.compact_frontier.name()
        );
        warm_up(&engine, &settings)?;
        let bar = ProgressBar::new(a.spp as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} spp  {msg}  [{elapsed_precise} < {eta_precise}]")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let frames = render(&mut engine, &settings, |f| {
            bar.set_message(format!(
                "{:.2} ms/frame wall clock, {:.0} Mrays/s (stages {:.2} ms)",
                f.wall_ms,
                f.wall_mrays_per_s(),
                f.frame_ms
            ));
            bar.inc(1);
        })?;
        bar.finish_and_clear();
        let sum = engine.image()?;
        let hash = format!("{:016x}", output::hash(&sum));
        output::write_image(&a.out, &sum, a.width, a.height, a.tone())?;
        let summary = Summary::of(&frames);
        print!("{}", output::summary_table(&summary, &frames));
        println!("image hash {hash} written to {}", a.out.display());
        if let Some(path) = &a.timings {
            output::write_timings(
                path,
                &Timings {
                    reap_commit: reap::bench::output::GIT_COMMIT,
                    backend,
                    device,
                    scene: &self.scene.name,
                    triangles: self.scene.triangles.len(),
                    bvh_nodes: self.tree.nodes.len(),
                    bvh_depth: self.tree.depth,
                    bvh_build_ms: self.tree.build_time.as_secs_f64() * 1e3,
                    settings: &settings,
                    image_hash: hash,
                    summary,
                    frames: &frames,
                },
            )?;
            println!("timings written to {}", path.display());
        }
        Ok(true)
    }
}

#[derive(clap::Args)]
pub struct RenderBenchArgs {
    /// Scenes, comma separated (built-in names or OBJ paths).
    #[arg(long, value_delimiter = ',', default_value = "cornell,sphereflake")]
    pub scenes: Vec<String>,
    #[arg(long, default_value_t = 1920)]
    pub width: u32,
    #[arg(long, default_value_t = 1080)]
    pub height: u32,
    /// Frames (one sample per pixel each) per configuration, after one warm-up frame.
    #[arg(long, default_value_t = 4)]
    pub spp: u32,
    /// Scattering vertices per path, as pbrt-v4's maxdepth: each gets next-event estimation, and the
    /// ray leaving the last one is still traced for the light or sky it finds.
    #[arg(long, default_value_t = 8)]
    pub max_bounces: u32,
    /// Direct light at diffuse and glossy surfaces: mis (light and BSDF samples, power heuristic),
    /// light (light samples only) or bsdf (BSDF samples only). All three converge to the same image.
    #[arg(long, default_value = "mis", value_parser = parse_estimator)]
    pub estimator: Estimator,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Traversal modes, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "breadth-first,depth-first")]
    pub traversals: Vec<String>,
    /// Compaction choices (each used at both sites), comma separated: `all` is `none` and every
    /// algorithm the backend selects with.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub algorithms: Vec<String>,
    #[arg(long, default_value_t = 1)]
    pub seed: u32,
    #[arg(long, default_value_t = 1 << 28)]
    pub max_frontier: u64,
    /// BVH levels one breadth-first expansion descends (1 to 5; fan-out 2^K).
    #[arg(long, value_name = "K", default_value_t = reap::trace::DESCEND)]
    pub descend: u32,
    /// Folder for results.csv, results.json and report.md.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `reap bench render`: every traversal × compaction choice on each scene, one
/// engine per scene, with image hashes checked equal across compaction choices.
pub fn bench(args: RenderBenchArgs) -> Result<bool> {
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        output::check_writable(&dir.join("report.md"))?;
    }
    let traversals: Vec<Traversal> = args.traversals.iter().map(|t| t.parse()).collect::<Result<_, _>>()?;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mut rows = Vec::new();
    let mut device_name = String::new();
    for spec in &args.scenes {
        let sc = scene::load(spec).with_context(|| format!("loading scene `{spec}`"))?;
        let tree = bvh::build(&sc.triangles);
        println!(
            "scene {}: {} triangles; BVH {} nodes, depth {}, {:.1} ms",
            sc.name,
            sc.triangles.len(),
            tree.nodes.len(),
            tree.depth,
            tree.build_time.as_secs_f64() * 1e3
        );
        let packed = Packed::new(&sc, &tree);
        let camera = CameraLayout::new(&sc.camera, args.width, args.height);
        #[allow(unused_variables, unreachable_code)]
        match open_cuda(args.backend)? {
            Some(cuda) => {
                #[cfg(feature = "cuda")]
                {
                    device_name = cuda.info.name.clone();
                    let choices = choices(&args.algorithms, &cuda)?;
                    let engine = reap::trace::cuda::CudaEngine::new(
                        cuda,
                        &packed,
                        camera,
                        args.width,
                        args.height,
                        args.seed,
                        args.max_bounces,
                    )?;
                    rows.extend(bench_scene(engine, &args, &sc, &tree, &traversals, &choices, "cuda")?);
                    continue;
                }
                unreachable!("no CUDA backend without the cuda feature")
            }
            None => {
                let cpu = CpuBackend::new();
                device_name = format!("CPU ({} threads)", rayon::current_num_threads());
                let choices = choices(&args.algorithms, &cpu)?;
                let engine = CpuEngine::new(cpu, packed, camera, args.width, args.height, args.seed, args.max_bounces);
                rows.extend(bench_scene(engine, &args, &sc, &tree, &traversals, &choices, "cpu")?);
            }
        }
    }
    let identical = output::hashes_agree(&rows);
    let md = output::bench_report(&rows, &device_name, &command);
    println!("{}", output::bench_table(&rows));
    if let Some(dir) = &args.out {
        // `reap bench noise --out` into the same folder: the images' noise beside their speed.
        let md = match dir.join("noise.md").is_file() {
            true => md + "\nNoise against a high-spp reference (`reap bench noise`): [noise.md](noise.md).\n",
            false => md,
        };
        output::write_bench(dir, &rows, &md)?;
        println!("wrote results.csv, results.json and report.md in {}", dir.display());
    }
    if !identical {
        eprintln!("error: compaction choices rendered different images on one backend (see the hash column)");
    }
    Ok(identical)
}

fn choices<B: Backend>(names: &[String], backend: &B) -> Result<Vec<Compaction>> {
    let mut out = Vec::new();
    for n in names {
        if n == "all" {
            for c in Compaction::choices(backend) {
                out.push(Compaction::parse(c, backend, "algorithms")?);
            }
        } else {
            out.push(Compaction::parse(n, backend, "algorithms")?);
        }
    }
    Ok(out)
}

fn bench_scene<E: Engine>(
    mut engine: E,
    args: &RenderBenchArgs,
    sc: &scene::Scene,
    tree: &bvh::Bvh,
    traversals: &[Traversal],
    choices: &[Compaction],
    backend: &str,
) -> Result<Vec<output::BenchRow>> {
    let mut rows = Vec::new();
    let bar = ProgressBar::new((traversals.len() * choices.len()) as u64);
    for &traversal in traversals {
        for &c in choices {
            bar.set_message(format!("{} {} {}", sc.name, traversal.name(), c.name()));
            let settings = RenderSettings {
                width: args.width,
                height: args.height,
                spp: args.spp,
                max_bounces: args.max_bounces,
                estimator: args.estimator,
                traversal,
                compact_paths: c,
                compact_frontier: c,
                seed: args.seed,
                first_sample: 0,
                max_frontier: args.max_frontier,
                descend: args.descend,
            };
            // One warm-up frame compiles the kernels and fills the allocator; then the measured frames.
            let warm = RenderSettings { spp: 1, ..settings.clone() };
            let outcome = reap::trace::render(&mut engine, &warm, |_| {})
                .and_then(|_| engine.reset())
                .and_then(|_| reap::trace::render(&mut engine, &settings, |_| {}));
            let row = match outcome {
                Ok(frames) => {
                    let sum = engine.image()?;
                    output::BenchRow::measured(
                        backend,
                        &sc.name,
                        sc.triangles.len(),
                        tree.depth,
                        &settings,
                        &frames,
                        &sum,
                    )
                }
                // The `none` frontier may outgrow memory on a deep BVH: that is a result, not a failure.
                Err(e @ reap::trace::TraceError::FrontierTooLarge { .. }) => output::BenchRow::failed(
                    backend,
                    &sc.name,
                    sc.triangles.len(),
                    tree.depth,
                    &settings,
                    e.to_string(),
                ),
                Err(e) => return Err(e.into()),
            };
            engine.reset()?;
            rows.push(row);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(rows)
}

/// Compiles (NVRTC) and loads the compaction kernels the render will use, so
/// the first frame's timings measure compaction rather than the compiler.
fn warm_up<E: Engine>(engine: &E, settings: &RenderSettings) -> Result<()> {
    use reap::compaction::{Keep, Report};
    use reap::trace::{DEAD32, DEAD64};
    let b = engine.backend();
    if let Compaction::With(alg) = settings.compact_paths {
        let (input, mut output) = (b.upload(&[DEAD32])?, b.alloc::<u32>(1)?);
        b.select(alg, &input, Keep::Sentinel(DEAD32), &mut output)?.count()?;
    }
    if let (Compaction::With(alg), Traversal::BreadthFirst) = (settings.compact_frontier, settings.traversal) {
        let (input, mut output) = (b.upload(&[DEAD64])?, b.alloc::<u64>(1)?);
        b.select(alg, &input, Keep::Sentinel(DEAD64), &mut output)?.count()?;
    }
    Ok(())
}
