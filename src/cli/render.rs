//! `reap render`: the wavefront path tracer, headless. Loads a scene, builds
//! its BVH, renders on the chosen backend with the chosen compaction at each
//! site, and writes the image, the timings and a summary table.

use std::path::PathBuf;

use anyhow::{Context, Result};

use reap::compaction::{Backend, BackendKind};
use reap::scene;
use reap::trace::layout::{CameraLayout, Packed};
use reap::trace::output::{self, Summary, Timings};
use reap::trace::split::{Renderer, SplitBy};
use reap::trace::tonemap::{Tone, ToneCurve};
use reap::trace::{Compaction, Engine, Estimator, RenderSettings, Traversal};
use reap::{bvh, files};

use super::backend::{AdapterArg, BackendChoice, OnBackend, Opened, TracerSetup, with_backend};
use super::progress::Progress;

/// How paths are traced: the flags `reap render` and `reap bench render` share.
#[derive(clap::Args, Clone, Copy)]
pub struct PathFlags {
    /// Scattering vertices per path, as pbrt-v4's maxdepth: each gets next-event estimation, and the
    /// ray leaving the last one is still traced for the light or sky it finds.
    #[arg(long, default_value_t = 8)]
    pub max_bounces: u32,
    /// Direct light at diffuse and glossy surfaces: mis (light and BSDF samples, power heuristic),
    /// light (light samples only) or bsdf (BSDF samples only). All three converge to the same image.
    #[arg(long, default_value = "mis", value_parser = parse_estimator)]
    pub estimator: Estimator,
}

#[derive(clap::Args)]
#[command(after_help = scenes_help())]
pub struct RenderArgs {
    /// A built-in scene's name (listed below) or a path to an OBJ file (its MTL beside it).
    #[arg(long, default_value = "cornell")]
    pub scene: PathBuf,
    #[arg(long, default_value_t = 1280, value_parser = clap::value_parser!(u32).range(1..))]
    pub width: u32,
    #[arg(long, default_value_t = 720, value_parser = clap::value_parser!(u32).range(1..))]
    pub height: u32,
    /// Samples per pixel (one wavefront frame each).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub spp: u32,
    #[command(flatten)]
    pub path: PathFlags,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    #[command(flatten)]
    pub adapter: AdapterArg,
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
    #[arg(long, value_name = "K", default_value_t = reap::trace::DESCEND, value_parser = descend_range())]
    pub descend: u32,
    /// Wide BVH levels one breadth-first step descends per tile of 256 frontier items while its block
    /// keeps their rays (each ray read once a step, not once a level): 1 to 64, `all` (until the tile is
    /// done or holds 8 items per input item), or `auto` (one level, the fastest measured on an H200:
    /// docs/render/bf-block-h200).
    #[arg(long, value_name = "K", default_value = "auto", value_parser = parse_block_levels)]
    pub block_levels: reap::trace::BlockLevels,
    /// Breadth-first levels 1..=N of each bounce sorted by node before their expansion (0 to 8; wide BVH,
    /// one block level, a stable --compact-frontier): an LSD radix sort, one library partition per bit
    /// of the level's node numbers (Garanzha & Loop's node-major order).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=8))]
    pub group_levels: u32,
    /// `auto` fuses a single-pass compaction (lookback, chained, atomic) into the kernels that produce the
    /// items; `off` runs it as a separate pass after them, like every other algorithm.
    // `--fuse` was this flag's first name; `bench render` always said `--fusion`.
    #[arg(long, alias = "fuse", default_value = "auto", value_parser = parse_fusion)]
    pub fusion: reap::compaction::Fusion,
    /// `auto` records a frame's launches as one CUDA graph the second time its configuration runs and
    /// replays it from then on (the host launches one graph a frame); `off` launches every stage from the
    /// host each frame.
    #[arg(long, default_value = "auto", value_parser = |s: &str| s.parse::<reap::replay::Graphs>())]
    pub graphs: reap::replay::Graphs,
    /// The BVH both traversals walk: `binary`, or `wide`, 8 quantized children per 80-byte node
    /// (a breadth-first expansion then tests one node's children and emits up to 8; --descend is ignored).
    #[arg(long, default_value_t = reap::trace::BVH, value_parser = |s: &str| s.parse::<reap::trace::BvhKind>())]
    pub bvh: reap::trace::BvhKind,
    /// Split each frame across GPUs 0..N in bands of rows that follow the measured time (NCCL carries the
    /// moved rows and gathers the image; N CPU ranks with `--backend cpu`): the same image as one GPU.
    #[arg(long, default_value_t = 1)]
    pub gpus: usize,
    /// How --gpus N share the image: `rows`, each frame in bands of rows; or `samples`, each GPU traces
    /// the whole image for its own sample, and each adds every GPU's sample of its band in sample order (the
    /// same image; whole frames keep each GPU as busy as one alone, and a render of fewer samples than GPUs
    /// leaves some idle).
    #[arg(long, default_value = "rows", value_parser = |s: &str| s.parse::<reap::trace::split::SplitBy>())]
    pub split: reap::trace::split::SplitBy,
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

pub fn run(args: RenderArgs) -> Result<bool> {
    if args.gpus == 0 {
        anyhow::bail!("--gpus must be at least 1");
    }
    if let Some(place) = super::ranks::place()? {
        super::ranks::check_gpus(place, args.gpus)?;
        if place.ranks as u64 > args.height as u64 {
            anyhow::bail!("{} ranks split the image in bands of rows and it has {} rows", place.ranks, args.height);
        }
    }
    if args.gpus as u64 > args.height as u64 {
        anyhow::bail!("--gpus {} splits the image in bands of rows and it has {} rows", args.gpus, args.height);
    }
    check_split(&[args.split], args.gpus)?;
    // Output paths first: a bad path must not cost a render.
    let format = output::image_format(&args.out)?;
    if !args.exposure.is_finite() {
        anyhow::bail!("--exposure {} is not a number of stops", args.exposure);
    }
    if format == output::ImageFormat::Exr && args.tone() != Tone::CLAMP {
        anyhow::bail!("{} is an EXR (linear radiance): --exposure and --tonemap apply to PNG only", args.out.display());
    }
    if let Some(t) = &args.timings {
        output::timings_format(t)?;
    }
    for out in outputs(&args) {
        // An existing file under the scene's name is what `scene::load` reads.
        files::check_output(out, std::slice::from_ref(&args.scene))?;
    }
    let traversal: Traversal = args.traversal.parse()?;
    for (name, site) in [(&args.compact_paths, "compact-paths"), (&args.compact_frontier, "compact-frontier")] {
        Compaction::check_name(name, site)?;
    }
    // The backend opens before the scene loads: `--backend cuda` without a GPU costs no load.
    let adapter = args.adapter.clone();
    with_backend(args.backend, &adapter, RenderRun { args, traversal })
}

/// The files a render writes.
fn outputs(args: &RenderArgs) -> impl Iterator<Item = &std::path::Path> {
    std::iter::once(args.out.as_path()).chain(args.timings.as_deref())
}

/// Loads the scene and builds its BVH, refusing outputs that would replace
/// one of the files it was read from.
fn load(args: &RenderArgs) -> Result<(scene::Scene, bvh::Bvh, Packed)> {
    let t0 = std::time::Instant::now();
    let sc = scene::load(&args.scene).with_context(|| format!("loading scene `{}`", args.scene.display()))?;
    for out in outputs(args) {
        files::check_not_an_input(out, &sc.sources)?;
    }
    for w in &sc.warnings {
        eprintln!("warning: {w}");
    }
    if sc.skipped_triangles > 0 {
        eprintln!("warning: skipped {} degenerate or non-finite triangles", sc.skipped_triangles);
    }
    println!("scene {}: {} triangles, loaded in {:.2} s", sc.name, sc.triangles.len(), t0.elapsed().as_secs_f64());
    bvh::check_memory(sc.triangles.len(), reap::memory::Limit::host())?;
    let tree = bvh::build(&sc.triangles);
    println!(
        "BVH: {} nodes, depth {}, built in {:.1} ms (binned SAH, {} threads)",
        tree.nodes.len(),
        tree.depth,
        tree.build_time.as_secs_f64() * 1e3,
        rayon::current_num_threads()
    );
    let packed = Packed::new(&sc, &tree);
    let wide = &packed.wide;
    println!(
        "8-wide BVH: {} nodes, {} leaves, depth {}, built in {:.1} ms (obvhs PLOC + CWBVH)",
        wide.nodes.len(),
        wide.leaves,
        wide.depth,
        wide.build_time.as_secs_f64() * 1e3
    );
    Ok((sc, tree, packed))
}

/// A render with its flags checked, waiting for a backend.
struct RenderRun {
    args: RenderArgs,
    traversal: Traversal,
}

impl OnBackend for RenderRun {
    type Output = bool;
    fn run<B: Opened>(self, backend: B) -> Result<bool> {
        let RenderRun { mut args, traversal } = self;
        if args.first_run && backend.kind() == BackendKind::Cpu {
            // A few seconds on a laptop's cores rather than minutes.
            (args.width, args.height, args.spp) = (640, 360, 16);
            println!(
                "no CUDA GPU: rendering a smaller image on the CPU ({}x{}, {} spp)",
                args.width, args.height, args.spp
            );
        }
        let settings = settings(&args, traversal, &backend)?;
        let (scene, tree, packed) = load(&args)?;
        let camera = CameraLayout::new(&scene.camera, args.width, args.height);
        let wide = (packed.wide.nodes.len(), packed.wide.depth, packed.wide.build_time.as_secs_f64() * 1e3);
        let job = RenderJob { args: &args, scene: &scene, tree: &tree, wide };
        let (kind, device) = (backend.kind().name(), backend.device());
        let setup = TracerSetup {
            packed,
            camera,
            width: args.width,
            height: args.height,
            seed: args.seed,
            max_bounces: args.path.max_bounces,
        };
        if args.gpus == 1 && super::ranks::place()?.is_none() {
            let mut engine = backend.tracer(setup)?;
            engine.set_graphs(args.graphs);
            warm_up(&engine, &settings)?;
            return job.go(engine, settings, kind, &device);
        }
        let mut split = backend.split(args.gpus, setup, |e| {
            e.set_graphs(args.graphs);
            warm_up(e, &settings)
        })?;
        split.set_by(args.split)?;
        let ranks = split.ranks();
        let how = match args.split {
            SplitBy::Rows => "in bands of rows",
            SplitBy::Samples => "by samples, one a rank",
        };
        println!("split over {ranks} ranks {how}; collectives: {}", split.carrier());
        job.go(split, settings, kind, &format!("{device} x{ranks}"))
    }
}

/// `--split` (render, bench render): anything but rows shares the image between ranks, so it needs
/// several (--gpus, or the processes of `reap launch`); a list names each way once.
pub(super) fn check_split(split: &[SplitBy], gpus: usize) -> Result<()> {
    let ranks = super::ranks::place()?.map_or(gpus, |p| p.ranks);
    if let Some(by) = split.iter().find(|&&b| b != SplitBy::Rows).filter(|_| ranks < 2) {
        anyhow::bail!("--split {by} shares the image between GPUs: give --gpus 2 or more, or leave --split out");
    }
    if let Some(by) = split.iter().enumerate().find(|(i, b)| split[..*i].contains(b)).map(|(_, b)| b) {
        anyhow::bail!("--split names `{by}` twice: give each way once");
    }
    if split.is_empty() {
        anyhow::bail!("--split needs a way: rows or samples");
    }
    Ok(())
}

/// `--block-levels` (render, bench render, view): auto, all or 1 to 64.
pub(super) fn parse_block_levels(s: &str) -> std::result::Result<reap::trace::BlockLevels, String> {
    s.parse().map_err(|e: reap::trace::TraceError| e.to_string())
}

/// `--fusion` (every command that takes it): `auto` or `off`.
pub(super) fn parse_fusion(s: &str) -> std::result::Result<reap::compaction::Fusion, String> {
    s.parse().map_err(|e: reap::compaction::SiteError| e.to_string())
}

/// `--descend` (render, bench render, view): the levels one expansion may descend, checked
/// by clap so every command refuses the same values with the same message.
pub(super) fn descend_range() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=reap::trace::MAX_DESCEND as i64)
}

/// `--estimator`: a catalog name of [`Estimator`].
pub(super) fn parse_estimator(s: &str) -> std::result::Result<Estimator, String> {
    s.parse().map_err(|e: reap::trace::TraceError| e.to_string())
}

/// What the backend-independent half of a render needs.
struct RenderJob<'a> {
    args: &'a RenderArgs,
    scene: &'a scene::Scene,
    tree: &'a bvh::Bvh,
    /// The 8-wide BVH's nodes, depth and build time (ms), for the timings.
    wide: (usize, u32, f64),
}

/// The settings the flags ask for, checked against `backend`.
fn settings<B: Backend>(a: &RenderArgs, traversal: Traversal, backend: &B) -> Result<RenderSettings> {
    let s = RenderSettings {
        width: a.width,
        height: a.height,
        spp: a.spp,
        max_bounces: a.path.max_bounces,
        estimator: a.path.estimator,
        traversal,
        compact_paths: Compaction::parse(&a.compact_paths, backend, "compact-paths")?,
        compact_frontier: Compaction::parse(&a.compact_frontier, backend, "compact-frontier")?,
        seed: a.seed,
        first_sample: 0,
        max_frontier: a.max_frontier,
        descend: a.descend,
        block_levels: a.block_levels,
        group_levels: a.group_levels,
        bvh: a.bvh,
        fusion: a.fusion,
    };
    s.check()?;
    s.check_memory(backend.kind(), reap::memory::Limit::host())?;
    Ok(s)
}

impl RenderJob<'_> {
    fn go<R: Renderer>(&self, mut engine: R, settings: RenderSettings, backend: &str, device: &str) -> Result<bool> {
        let a = self.args;
        println!(
            "rendering {}x{}, {} spp, {} bounces, {} estimator on {device}: {} traversal, paths compacted by {}, \
             frontier by {}",
            a.width,
            a.height,
            a.spp,
            a.path.max_bounces,
            settings.estimator,
            settings.traversal.name(),
            settings.compact_paths.name(),
            settings.compact_frontier.name()
        );
        let bar = Progress::new(
            a.spp as u64,
            "{bar:40} {pos}/{len} spp  {msg}  [{elapsed_precise} < {eta_precise}]",
            "render",
            "spp",
        );
        let frames = engine.render_frames(&settings, &mut |f| {
            bar.set_message(format!(
                "{:.2} ms/frame wall clock, {:.0} Mrays/s (stages {:.2} ms)",
                f.wall_ms,
                f.wall_mrays_per_s(),
                f.frame_ms
            ));
            bar.inc(f.samples() as u64);
        })?;
        bar.finish_and_clear();
        let sum = engine.sums()?;
        if !super::ranks::leads() {
            // A rank of several processes: rank 0 gathered the image and writes it.
            println!("rendered this rank's share; rank 0 writes the image");
            return Ok(true);
        }
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
                    wide_nodes: self.wide.0,
                    wide_depth: self.wide.1,
                    wide_build_ms: self.wide.2,
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
