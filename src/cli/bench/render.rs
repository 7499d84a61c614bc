//! `reap bench render`: the path tracer on each scene with every traversal
//! mode x compaction choice, Mrays/s and compaction's share of the frame, the
//! images' hashes checked equal across compaction choices.

use std::path::PathBuf;

use anyhow::{Context, Result};
use indicatif::ProgressBar;

use reap::bvh;
use reap::compaction::{Compaction, Fusion};
use reap::scene;
use reap::trace::layout::{CameraLayout, Packed};
use reap::trace::output;
use reap::trace::split::{Renderer, SplitBy};
use reap::trace::{BlockLevels, BvhKind, RenderSettings, Traversal};

use super::compactions;
use crate::cli::backend::{AdapterArg, BackendChoice, OnBackend, Opened, TracerSetup, with_backend};
use crate::cli::render::PathFlags;

#[derive(clap::Args)]
pub struct RenderBenchArgs {
    /// Scenes, comma separated (built-in names or OBJ paths).
    #[arg(long, value_delimiter = ',', default_value = "cornell,sphereflake")]
    pub scenes: Vec<PathBuf>,
    #[arg(long, default_value_t = 1920, value_parser = clap::value_parser!(u32).range(1..))]
    pub width: u32,
    #[arg(long, default_value_t = 1080, value_parser = clap::value_parser!(u32).range(1..))]
    pub height: u32,
    /// Frames (one sample per pixel each) per configuration, after one warm-up frame.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub spp: u32,
    #[command(flatten)]
    pub path: PathFlags,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    #[command(flatten)]
    pub adapter: AdapterArg,
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
    #[arg(long, value_name = "K", default_value_t = reap::trace::DESCEND, value_parser = crate::cli::render::descend_range())]
    pub descend: u32,
    /// Wide levels a breadth-first step descends per tile (comma separated; each is a row of every
    /// wide breadth-first configuration): 1 to 64, `all` or `auto`.
    #[arg(long, value_name = "K", value_delimiter = ',', default_value = "auto", value_parser = crate::cli::render::parse_block_levels)]
    pub block_levels: Vec<reap::trace::BlockLevels>,
    /// Breadth-first levels sorted by node before their expansion, comma separated (each is a row of
    /// every wide breadth-first configuration at one block level with a stable algorithm): 0 to 8.
    #[arg(long, value_name = "N", value_delimiter = ',', default_value = "0")]
    pub group_levels: Vec<u32>,
    /// Fusion settings, comma separated: `auto` fuses the single-pass algorithms into the kernels that
    /// produce the items, `off` runs them as a separate pass; an algorithm that does not fuse runs once.
    #[arg(long, alias = "fuse", value_delimiter = ',', default_value = "auto,off", value_parser = crate::cli::render::parse_fusion)]
    pub fusion: Vec<Fusion>,
    /// `auto` records a frame's launches as one CUDA graph the second time its configuration runs and
    /// replays it from then on (the host launches one graph a frame); `off` launches every stage from the
    /// host each frame.
    #[arg(long, default_value = "auto", value_parser = |s: &str| s.parse::<reap::replay::Graphs>())]
    pub graphs: reap::replay::Graphs,
    /// BVH kinds, comma separated: `binary`, and `wide`, 8 quantized children per 80-byte node (a
    /// breadth-first expansion then tests one node's children and emits up to 8; --descend is ignored).
    #[arg(long, value_delimiter = ',', default_value = "binary,wide", value_parser = |s: &str| s.parse::<BvhKind>())]
    pub bvh: Vec<BvhKind>,
    /// Folder for results.csv, results.json and report.md.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Split each frame across GPUs 0..N (bands of rows that follow the measured time; N CPU ranks with
    /// `--backend cpu`); the rows' backend reads e.g. `cuda x2`.
    #[arg(long, default_value_t = 1)]
    pub gpus: usize,
    /// How --gpus N share the image, comma separated (a set of rows each): `rows`, each frame in bands of
    /// rows (rows read e.g. `cuda x2`); `samples`, each GPU a whole frame of its own sample, each GPU adding
    /// every GPU's sample of its band in sample order (rows read `cuda x2 samples`).
    #[arg(long, value_delimiter = ',', default_value = "rows", value_parser = |s: &str| s.parse::<SplitBy>())]
    pub split: Vec<SplitBy>,
    #[command(flatten)]
    pub peer: super::peers::PeerArgs,
}

/// `reap bench render`: every BVH × traversal × compaction choice on each scene, one
/// engine per scene, with image hashes checked equal across compaction choices.
pub fn run(args: RenderBenchArgs) -> Result<bool> {
    if args.gpus == 0 || args.gpus as u64 > args.height as u64 {
        anyhow::bail!("--gpus must be from 1 to the image's {} rows (bands of rows, one a rank)", args.height);
    }
    crate::cli::render::check_split(&args.split, args.gpus)?;
    let leads = crate::cli::ranks::leads();
    if let Some(place) = crate::cli::ranks::place()? {
        crate::cli::ranks::check_gpus(place, args.gpus)?;
        if place.ranks as u64 > args.height as u64 {
            anyhow::bail!("{} ranks split the image in bands of rows and it has {} rows", place.ranks, args.height);
        }
        if !args.peer.peers.is_empty() {
            anyhow::bail!("--peer renders beside one process: drop it when REAP_RANKS is set (reap launch)");
        }
    }
    // Rank 0's process writes the report; the other processes leave the folder alone.
    let args = RenderBenchArgs { out: args.out.filter(|_| leads), ..args };
    super::out_folder(args.out.as_deref(), &reap::report::BENCH_FILES)?;
    // An existing file under a scene's name is what `scene::load` reads.
    not_an_input(&args, &args.scenes)?;
    let traversals: Vec<Traversal> = args.traversals.iter().map(|t| t.parse()).collect::<Result<_, _>>()?;
    let peer_spp = args.peer.check(args.gpus)?;
    // Names and the backend before the first scene loads: a typo must not cost a large scene's load.
    for name in args.algorithms.iter().filter(|n| *n != "all") {
        Compaction::check_name(name, "algorithms")?;
    }
    if matches!(args.backend, BackendChoice::Cuda | BackendChoice::Wgpu) {
        with_backend(args.backend, &args.adapter, Probe)?;
    }
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mut rows = Vec::new();
    let mut device_name = String::new();
    let mut comparisons = Vec::new();
    for spec in &args.scenes {
        let sc = scene::load(spec).with_context(|| format!("loading scene `{}`", spec.display()))?;
        reap::bvh::check_memory(sc.triangles.len(), reap::memory::Limit::host())?;
        not_an_input(&args, &sc.sources)?;
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
        println!(
            "scene {}: 8-wide BVH {} nodes, depth {}, {:.1} ms (obvhs)",
            sc.name,
            packed.wide.nodes.len(),
            packed.wide.depth,
            packed.wide.build_time.as_secs_f64() * 1e3
        );
        let camera = CameraLayout::new(&sc.camera, args.width, args.height);
        // The peers render after the rows, from the same packed scene.
        let peer_packed = (!args.peer.peers.is_empty()).then(|| packed.clone());
        let job = SceneBench { args: &args, scene: &sc, tree: &tree, traversals: &traversals, packed, camera };
        let (device, scene_rows) = with_backend(args.backend, &args.adapter, job)?;
        device_name = device;
        rows.extend(scene_rows);
        if let Some(packed) = &peer_packed {
            comparisons.extend(super::peers::compare(&args, &peer_spp, &sc, packed, &traversals)?);
        }
    }
    let identical = output::hashes_agree(&rows);
    let mut md = output::bench_report(&rows, &device_name, &command);
    println!("{}", output::bench_table(&rows));
    let peers_report = (!comparisons.is_empty()).then(|| reap::bench::peers::PeersReport {
        reap_commit: reap::bench::output::GIT_COMMIT.into(),
        command: command.clone(),
        backend: rows.first().map(|r| r.backend.clone()).unwrap_or_default(),
        device: device_name.clone(),
        scenes: comparisons,
    });
    if let Some(report) = &peers_report {
        println!("peers at equal error (relMSE against reap's reference):\n{}", reap::bench::peers::table(report));
        md += &reap::bench::peers::markdown(report);
    }
    if let Some(dir) = &args.out {
        // `reap bench noise --out` into the same folder: the images' noise beside their speed.
        let md = match dir.join("noise.md").is_file() {
            true => md + "\nNoise against a high-spp reference (`reap bench noise`): [noise.md](noise.md).\n",
            false => md,
        };
        output::write_bench(dir, &rows, &md)?;
        println!("wrote results.csv, results.json and report.md in {}", dir.display());
        if let Some(report) = &peers_report {
            super::peers::write(dir, report)?;
            println!("wrote peers.csv and peers.json in {}", dir.display());
        }
    }
    if !identical {
        eprintln!("error: compaction choices rendered different images on one backend (see the hash column)");
    }
    Ok(identical)
}

/// The peers' files beside the bench's own, as `reap::bench::peers::write` names them.
const PEER_FILES: [&str; 2] = ["peers.csv", "peers.json"];

/// Fails if a file `--out` may receive is one of `inputs` (a scene, its MTL files, its textures),
/// or is not a regular file: checked before any row is measured, so nothing is lost or replaced.
fn not_an_input(args: &RenderBenchArgs, inputs: &[PathBuf]) -> Result<()> {
    if let Some(dir) = &args.out {
        for file in reap::report::BENCH_FILES.into_iter().chain(PEER_FILES) {
            reap::files::check_output(&dir.join(file), inputs)?;
        }
    }
    Ok(())
}

/// Opens the backend and does nothing: `--backend cuda` without a GPU fails
/// before any scene loads.
struct Probe;

impl OnBackend for Probe {
    type Output = ();
    fn run<B: Opened>(self, _backend: B) -> Result<()> {
        Ok(())
    }
}

/// One scene's runs, waiting for a backend: the device's name and the rows.
struct SceneBench<'a> {
    args: &'a RenderBenchArgs,
    scene: &'a scene::Scene,
    tree: &'a bvh::Bvh,
    traversals: &'a [Traversal],
    packed: Packed,
    camera: CameraLayout,
}

impl OnBackend for SceneBench<'_> {
    type Output = (String, Vec<output::BenchRow>);
    fn run<B: Opened>(self, backend: B) -> Result<Self::Output> {
        let a = self.args;
        let device = backend.device();
        let choices = compactions(&a.algorithms, &backend)?;
        let kind = backend.kind().name();
        let depths = Depths { binary: self.tree.depth, wide: self.packed.wide.depth };
        let setup = TracerSetup {
            packed: self.packed,
            camera: self.camera,
            width: a.width,
            height: a.height,
            seed: a.seed,
            max_bounces: a.path.max_bounces,
        };
        if a.gpus == 1 && crate::cli::ranks::place()?.is_none() {
            let mut engine = backend.tracer(setup)?;
            let rows = bench_scene(&mut engine, a, self.scene, depths, self.traversals, &choices, kind)?;
            return Ok((device, rows));
        }
        let mut split = backend.split(a.gpus, setup, |_| Ok(()))?;
        let ranks = split.ranks();
        println!("split over {ranks} ranks; collectives: {}", split.carrier());
        let mut rows = Vec::new();
        for &by in &a.split {
            split.set_by(by)?;
            let label = match by {
                SplitBy::Rows => format!("{kind} x{ranks}"),
                SplitBy::Samples => format!("{kind} x{ranks} samples"),
            };
            rows.extend(bench_scene(&mut split, a, self.scene, depths, self.traversals, &choices, &label)?);
        }
        Ok((format!("{device} x{ranks}"), rows))
    }
}

/// A split's warm-up past the first two frames: frames until its bands stop
/// moving (at most [`SETTLE_FRAMES`]), then one that records the frame's graph
/// for the settled bands, so the measured frames see the steady state a long
/// render does. One engine, and a split by samples, are settled at once.
fn settle<R: Renderer>(engine: &mut R, settings: &RenderSettings) -> reap::trace::TraceResult<()> {
    let one = RenderSettings { spp: engine.samples_per_frame(), ..settings.clone() };
    let mut extra = 0;
    while !engine.settled() && extra < SETTLE_FRAMES {
        engine.render_frames(&one, &mut |_| {})?;
        extra += 1;
    }
    if extra > 0 {
        engine.render_frames(&one, &mut |_| {})?;
    }
    Ok(())
}

/// The most warm-up frames a split gets for its bands to settle.
const SETTLE_FRAMES: u32 = 6;

/// The depth of each BVH kind of a scene, for its rows.
#[derive(Clone, Copy)]
struct Depths {
    binary: u32,
    wide: u32,
}

fn bench_scene<R: Renderer>(
    engine: &mut R,
    args: &RenderBenchArgs,
    sc: &scene::Scene,
    depths: Depths,
    traversals: &[Traversal],
    choices: &[Compaction],
    backend: &str,
) -> Result<Vec<output::BenchRow>> {
    let mut rows = Vec::new();
    engine.use_graphs(args.graphs);
    let runs = with_fusion(choices, &args.fusion, &|a| engine.fuses_sites(a));
    // Block levels change only the wide breadth-first step: the other configurations run the first.
    let first_levels = args.block_levels.first().copied().unwrap_or_default();
    // Grouping, the wide breadth-first runs of one level a step (others run ungrouped).
    let one_level = |k: BlockLevels| matches!(k, BlockLevels::Auto | BlockLevels::Levels(1));
    let configs: Vec<(BvhKind, Traversal, BlockLevels, u32)> = args
        .bvh
        .iter()
        .flat_map(|&b| traversals.iter().map(move |&t| (b, t)))
        .flat_map(|(b, t)| match (b, t) {
            (BvhKind::Wide, Traversal::BreadthFirst) => args
                .block_levels
                .iter()
                .flat_map(|&k| match one_level(k) {
                    true => args.group_levels.iter().map(|&g| (b, t, k, g)).collect::<Vec<_>>(),
                    false => vec![(b, t, k, 0)],
                })
                .collect(),
            _ => vec![(b, t, first_levels, 0)],
        })
        .collect();
    let bar = ProgressBar::new((configs.len() * runs.len()) as u64);
    for &(bvh, traversal, block_levels, group) in &configs {
        let depth = match bvh {
            BvhKind::Binary => depths.binary,
            BvhKind::Wide => depths.wide,
        };
        for &(c, fusion) in &runs {
            // Grouping sorts by stable splits: an unstable algorithm's rows run ungrouped.
            let group_levels = match c {
                Compaction::With(a) if a.stable() => group,
                _ => 0,
            };
            if group > 0 && group_levels == 0 {
                continue;
            }
            let levels = format!("block levels {block_levels}, grouped {group_levels}");
            let what = [sc.name.as_str(), bvh.name(), traversal.name(), c.name(), fusion.name(), &levels];
            bar.set_message(what.join(" "));
            let settings = RenderSettings {
                width: args.width,
                height: args.height,
                spp: args.spp,
                max_bounces: args.path.max_bounces,
                estimator: args.path.estimator,
                traversal,
                compact_paths: c,
                compact_frontier: c,
                seed: args.seed,
                first_sample: 0,
                max_frontier: args.max_frontier,
                descend: args.descend,
                block_levels,
                group_levels,
                bvh,
                fusion,
            };
            // Warm-up frames compile the kernels and fill the allocator (the first), and record the
            // frame's CUDA graph (the second, under --graphs auto), on every rank of a split by samples
            // too; then the measured frames.
            let warm = RenderSettings { spp: 2 * engine.samples_per_frame(), ..settings.clone() };
            let outcome = engine
                .render_frames(&warm, &mut |_| {})
                .and_then(|_| settle(engine, &settings))
                .and_then(|_| engine.reset_sums())
                .and_then(|_| engine.render_frames(&settings, &mut |_| {}));
            let row = match outcome {
                Ok(frames) => {
                    let sum = engine.sums()?;
                    output::BenchRow::measured(backend, &sc.name, sc.triangles.len(), depth, &settings, &frames, &sum)
                }
                // The `none` frontier may outgrow memory on a deep BVH: that is a result, not a failure.
                Err(e @ reap::trace::TraceError::FrontierTooLarge { .. }) => {
                    output::BenchRow::failed(backend, &sc.name, sc.triangles.len(), depth, &settings, e.to_string())
                }
                Err(e) => return Err(e.into()),
            };
            engine.reset_sums()?;
            rows.push(row);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok(rows)
}

/// Every compaction choice with each fusion setting that changes what runs:
/// both for an algorithm the engine fuses, the first one alone for the rest.
fn with_fusion(
    choices: &[Compaction],
    fusions: &[Fusion],
    fuses: &dyn Fn(reap::compaction::Algorithm) -> bool,
) -> Vec<(Compaction, Fusion)> {
    let first = fusions.first().copied().unwrap_or_default();
    let mut runs = Vec::new();
    for &c in choices {
        match c {
            Compaction::With(a) if fuses(a) => runs.extend(fusions.iter().map(|&f| (c, f))),
            _ => runs.push((c, first)),
        }
    }
    runs.dedup();
    runs
}
