//! `reap bench noise`: how noisy renders of a few sample counts are against a
//! high-spp reference of the same build ([`reap::trace::noise`] holds the
//! metrics and the reports). Run once before a light-transport change and
//! once after, passing the first run's noise.json as `--before`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use reap::scene;
use reap::trace::layout::{CameraLayout, Packed};
use reap::trace::noise::{self, Checkpoint, NoiseReport};
use reap::trace::{Compaction, Engine, RenderSettings, Traversal, output, render};

use crate::cli::backend::{AdapterArg, BackendChoice, OnBackend, Opened, TracerSetup, with_backend};

#[derive(clap::Args)]
pub struct NoiseArgs {
    /// A built-in scene's name (see `reap render --help`) or a path to an OBJ file.
    #[arg(long, default_value = "cornell")]
    pub scene: PathBuf,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    #[command(flatten)]
    pub adapter: AdapterArg,
    #[arg(long, default_value_t = 1920)]
    pub width: u32,
    #[arg(long, default_value_t = 1080)]
    pub height: u32,
    /// Sample counts measured, comma separated: one progressive render, measured at each.
    #[arg(long, value_delimiter = ',', default_value = "16,64,256")]
    pub spp: Vec<u32>,
    /// Samples per pixel of the reference; more than the largest --spp (16x or more keeps its noise small).
    #[arg(long, default_value_t = 4096)]
    pub reference_spp: u32,
    #[arg(long, default_value_t = 8)]
    pub max_bounces: u32,
    /// How each bounce gathers light: mis, light or bsdf (see `reap render --help`).
    #[arg(long, default_value = "mis", value_parser = crate::cli::render::parse_estimator)]
    pub estimator: reap::trace::Estimator,
    /// The test render's seed; the reference uses seed + 1, so their samples are independent.
    #[arg(long, default_value_t = 1)]
    pub seed: u32,
    /// Folder for noise.json, noise.csv and noise.md (created if missing).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A noise.json of an earlier build (same scene and size): shown as a "before" column with its commit.
    #[arg(long)]
    pub before: Option<PathBuf>,
}

/// Fails if a file `--out` would receive is one of `inputs`, through whatever
/// links (--out a link to the --before run's folder, say).
fn not_an_input(args: &NoiseArgs, inputs: &[PathBuf]) -> Result<()> {
    if let Some(dir) = &args.out {
        for file in noise::FILES {
            reap::files::check_output(&dir.join(file), inputs)?;
        }
    }
    Ok(())
}

/// What both renders share.
struct NoiseJob<'a> {
    args: &'a NoiseArgs,
    /// The loaded scene's name.
    scene: String,
    checkpoints: Vec<u32>,
    reference_seed: u32,
}

/// The traversal of both renders: the image does not depend on it (every mode
/// renders the same bits), and depth-first is the faster on a GPU.
const TRAVERSAL: Traversal = Traversal::DepthFirst;

pub fn run(args: NoiseArgs) -> Result<bool> {
    // Flags and paths first: a mistake must not cost a 4096-spp reference.
    let checkpoints = noise::checkpoints(&args.spp, args.reference_spp)?;
    super::out_folder(args.out.as_deref(), &noise::FILES)?;
    // The results must not replace --before or the scene (an existing file under its name is read).
    let named: Vec<PathBuf> = std::iter::once(args.scene.clone()).chain(args.before.clone()).collect();
    not_an_input(&args, &named)?;
    let sc = scene::load(&args.scene).with_context(|| format!("loading scene `{}`", args.scene.display()))?;
    not_an_input(&args, &sc.sources)?;
    for w in &sc.warnings {
        eprintln!("warning: {w}");
    }
    let before = match &args.before {
        Some(path) => Some(noise::read_before(path, &sc.name, args.width, args.height).context("--before")?),
        None => None,
    };
    reap::bvh::check_memory(sc.triangles.len(), reap::memory::Limit::host())?;
    let tree = reap::bvh::build(&sc.triangles);
    let packed = Packed::new(&sc, &tree);
    let camera = CameraLayout::new(&sc.camera, args.width, args.height);
    let job = NoiseJob { args: &args, scene: sc.name.clone(), checkpoints, reference_seed: args.seed.wrapping_add(1) };
    let report = with_backend(args.backend, &args.adapter, NoiseRun { job, packed, camera })?;
    print!("{}", noise::table(&report, before.as_ref()));
    if let Some(dir) = &args.out {
        noise::write(dir, &report, before.as_ref())?;
        println!("wrote noise.json, noise.csv and noise.md in {}", dir.display());
    }
    Ok(true)
}

/// Both renders, waiting for a backend.
struct NoiseRun<'a> {
    job: NoiseJob<'a>,
    packed: Packed,
    camera: CameraLayout,
}

impl OnBackend for NoiseRun<'_> {
    type Output = NoiseReport;
    fn run<B: Opened>(self, backend: B) -> Result<NoiseReport> {
        let a = self.job.args;
        let (kind, device) = (backend.kind().name(), backend.device());
        // Each engine owns its backend; the first is the one already open.
        let mut first = Some(backend);
        let make = |seed: u32| {
            let backend = match first.take() {
                Some(b) => b,
                None => B::another()?,
            };
            backend.tracer(TracerSetup {
                packed: self.packed.clone(),
                camera: self.camera,
                width: a.width,
                height: a.height,
                seed,
                max_bounces: a.max_bounces,
            })
        };
        self.job.measure(make, kind, &device)
    }
}

impl NoiseJob<'_> {
    fn settings<E: Engine>(&self, engine: &E, spp: u32, first_sample: u32, seed: u32) -> Result<RenderSettings> {
        let a = self.args;
        let lookback = Compaction::parse("lookback", engine.backend(), "compact-paths")?;
        let s = RenderSettings {
            width: a.width,
            height: a.height,
            spp,
            max_bounces: a.max_bounces,
            estimator: a.estimator,
            traversal: TRAVERSAL,
            compact_paths: lookback,
            compact_frontier: lookback,
            seed,
            first_sample,
            max_frontier: 1 << 28,
            fusion: Default::default(),
            descend: reap::trace::DESCEND,
            block_levels: reap::trace::BlockLevels::Auto,
            group_levels: 0,
            bvh: reap::trace::BVH,
        };
        s.check()?;
        Ok(s)
    }

    /// The reference, then the test render measured at each checkpoint. One
    /// engine at a time (an engine's seed is fixed when it is made), so the
    /// GPU never holds two.
    fn measure<E: Engine>(
        &self,
        mut make: impl FnMut(u32) -> Result<E>,
        backend: &str,
        device: &str,
    ) -> Result<NoiseReport> {
        let a = self.args;
        let test_seed = a.seed;
        let most = self.checkpoints[self.checkpoints.len() - 1];
        println!(
            "{}x{}, {} bounces on {device}: reference {} spp (seed {}), test {:?} spp (seed {test_seed})",
            a.width, a.height, a.max_bounces, a.reference_spp, self.reference_seed, self.checkpoints
        );

        let mut engine = make(self.reference_seed)?;
        let one = self.settings(&engine, 1, 0, self.reference_seed)?;
        warm_up(&mut engine, one)?;
        let all = self.settings(&engine, a.reference_spp, 0, self.reference_seed)?;
        let bar = progress(a.reference_spp, "reference");
        let clock = Instant::now();
        render(&mut engine, &all, |_| bar.inc(1))?;
        let reference_wall_s = clock.elapsed().as_secs_f64();
        bar.finish_and_clear();
        let reference = output::mean(&engine.image()?);
        drop(engine);

        let mut engine = make(test_seed)?;
        let one = self.settings(&engine, 1, 0, test_seed)?;
        warm_up(&mut engine, one)?;
        let bar = progress(most, "test");
        let mut checkpoints = Vec::new();
        let (mut done, mut wall_s) = (0, 0.0);
        for &spp in &self.checkpoints {
            // The sums keep accumulating: render only the samples since the last checkpoint.
            let s = self.settings(&engine, spp - done, done, test_seed)?;
            let clock = Instant::now();
            render(&mut engine, &s, |_| bar.inc(1))?;
            wall_s += clock.elapsed().as_secs_f64();
            done = spp;
            let m = noise::metrics(&output::mean(&engine.image()?), &reference)?;
            checkpoints.push(Checkpoint::new(spp, a.reference_spp, wall_s, m));
        }
        bar.finish_and_clear();
        Ok(NoiseReport {
            reap_version: env!("CARGO_PKG_VERSION").into(),
            reap_commit: reap::bench::output::GIT_COMMIT.into(),
            finished_unix_s: reap::bench::output::now_unix_s(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            backend: backend.into(),
            device: device.into(),
            scene: self.scene.clone(),
            width: a.width,
            height: a.height,
            max_bounces: a.max_bounces,
            estimator: a.estimator.name().into(),
            traversal: TRAVERSAL.name().into(),
            reference_spp: a.reference_spp,
            reference_seed: self.reference_seed,
            test_seed,
            reference_wall_s,
            firefly_rule: noise::firefly_rule(),
            checkpoints,
        })
    }
}

/// One frame that compiles the kernels and fills the allocator, then cleared,
/// so the timed renders measure rendering.
fn warm_up<E: Engine>(engine: &mut E, one: RenderSettings) -> Result<()> {
    render(engine, &one, |_| {})?;
    engine.reset()?;
    Ok(())
}

fn progress(spp: u32, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(spp as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} spp  {msg}  [{elapsed_precise} < {eta_precise}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(what.to_string());
    bar
}
