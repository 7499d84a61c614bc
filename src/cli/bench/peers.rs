//! `reap bench render --peers mitsuba`: per scene, the scene exported and
//! rendered by the peer, reap's converged reference, and reap's progressive
//! renders per traversal until they reach the peer's error
//! ([`reap::bench::peers`] holds the arithmetic and the reports). The peer
//! runs time-limited and bounded ([`process`]); a signal meanwhile stops it,
//! removes its temporary folder and ends the bench. [`bullet`] is the
//! collider's peer, run the same way.

pub mod bullet;
mod process;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use indicatif::ProgressBar;

use reap::bench::peers::driver::{self, Skipped};
use reap::bench::peers::mitsuba::{self, MitsubaRun};
use reap::bench::peers::{self, Peer, PeerCheckpoint, PeerOutcome, ReapCheckpoint, ReapRun, SceneComparison};
use reap::compaction::{BackendKind, Compaction, Fusion};
use reap::scene::export::{ExportFormat, ExportSettings};
use reap::trace::layout::{CameraLayout, Packed};
use reap::trace::noise;
use reap::trace::{BvhKind, Engine, RenderSettings, Traversal, output, render};

use super::render::RenderBenchArgs;
use crate::cli::backend::{OnBackend, Opened, TracerSetup, with_backend};

#[derive(clap::Args)]
pub struct PeerArgs {
    /// Renderers to compare with at equal error, comma separated: `mitsuba` (Mitsuba 3's Python package,
    /// run with $REAP_PYTHON or python3). pbrt-v4 has no package: README gives its manual step.
    #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.parse::<Peer>())]
    pub peers: Vec<Peer>,
    /// Samples per pixel of reap's converged reference (seed --seed + 1), rendered once per scene;
    /// at least 16x the largest --peer-spp keeps its own noise small.
    #[arg(long, default_value_t = 4096)]
    pub reference_spp: u32,
    /// The peer's sample counts, comma separated, each timed after an untimed warm-up render of the same
    /// count; reap is timed to the peer's relMSE at the largest.
    #[arg(long, value_delimiter = ',', default_value = "16,64,256")]
    pub peer_spp: Vec<u32>,
    /// Mitsuba's variant [default: cuda_ad_rgb when reap runs on CUDA, llvm_ad_rgb otherwise].
    #[arg(long)]
    pub mitsuba_variant: Option<String>,
    #[command(flatten)]
    pub timeout: PeerTimeout,
}

/// How long a peer may run: `bench render` and `bench collide` alike.
#[derive(clap::Args)]
pub struct PeerTimeout {
    /// Seconds the peer may take for one scene (all its renders of it, or all its frames of one body count)
    /// before it is killed and its row says it timed out.
    #[arg(
        long = "peer-timeout",
        value_name = "SECONDS",
        default_value_t = 3600,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub seconds: u64,
}

impl PeerTimeout {
    pub fn duration(&self) -> Duration {
        Duration::from_secs(self.seconds)
    }
}

impl PeerArgs {
    /// The flags checked before any scene loads; the peer's sample counts, sorted.
    pub fn check(&self, gpus: usize) -> Result<Vec<u32>> {
        if self.peers.is_empty() {
            return Ok(Vec::new());
        }
        if gpus > 1 {
            anyhow::bail!("--peers compares one device with one device: leave out --gpus");
        }
        noise::checkpoints(&self.peer_spp, self.reference_spp)
            .map_err(|e| anyhow::anyhow!("{}", e.to_string().replace("--spp", "--peer-spp")))
    }
}

/// Every `--peers` renderer against reap on one scene.
pub fn compare(
    args: &RenderBenchArgs,
    peer_spp: &[u32],
    sc: &reap::scene::Scene,
    packed: &Packed,
    traversals: &[Traversal],
) -> Result<Vec<SceneComparison>> {
    let mut out = Vec::new();
    for &peer in &args.peer.peers {
        let kind = with_backend(args.backend, &args.adapter, Kind)?;
        // Signals are caught only while the peer runs: they stop it and remove its folder, then the bench.
        let outcome = crate::cli::interrupt::catching(|| match peer {
            Peer::Mitsuba => run_mitsuba(args, peer_spp, sc, kind),
        });
        if crate::cli::interrupt::stopped() {
            anyhow::bail!("stopped by a signal while {} rendered {}; its process was killed", peer.name(), sc.name);
        }
        let (outcome, reference_wall_s, reference_mean, reap) = match outcome {
            // Nothing to compare with: reap's reference and renders, which only the peer needs, are skipped.
            Err(Skipped(why)) => {
                println!("{}: {} skipped: {why}; reap's reference is not rendered", sc.name, peer.name());
                (PeerOutcome::Skipped { why }, None, None, Vec::new())
            }
            Ok(run) => {
                let camera = CameraLayout::new(&sc.camera, args.width, args.height);
                let job = ReapSide { args, peer_spp, packed, camera, traversals, peer: &run };
                let (wall_s, mean, reap, scored) = with_backend(args.backend, &args.adapter, job)?;
                let outcome = match scored {
                    Ok(checkpoints) => {
                        PeerOutcome::Ran { version: run.version, variant: run.variant, load_s: run.load_s, checkpoints }
                    }
                    Err(why) => {
                        println!("{}: {} skipped: {why}", sc.name, peer.name());
                        PeerOutcome::Skipped { why }
                    }
                };
                (outcome, Some(wall_s), Some(mean), reap)
            }
        };
        out.push(SceneComparison {
            scene: sc.name.clone(),
            peer: peer.name().into(),
            peer_spp: peer_spp.to_vec(),
            width: args.width,
            height: args.height,
            max_bounces: args.path.max_bounces,
            reference_spp: args.peer.reference_spp,
            reference_seed: reference_seed(args),
            reference_wall_s,
            reference_mean,
            outcome,
            reap,
        });
    }
    Ok(out)
}

fn reference_seed(args: &RenderBenchArgs) -> u32 {
    args.seed.wrapping_add(1)
}

/// The scene exported for Mitsuba into a temporary folder and rendered there.
fn run_mitsuba(
    args: &RenderBenchArgs,
    spp: &[u32],
    sc: &reap::scene::Scene,
    kind: BackendKind,
) -> Result<MitsubaRun, Skipped> {
    let dir = tempfile::tempdir().map_err(|e| Skipped(format!("no temporary folder for the export: {e}")))?;
    let settings = ExportSettings {
        width: args.width,
        height: args.height,
        spp: spp.last().copied().unwrap_or(1),
        max_bounces: args.path.max_bounces,
    };
    let scene_dir = dir.path().join("scene");
    let xml = reap::scene::export::export(sc, ExportFormat::Mitsuba, &settings, &scene_dir)
        .map_err(|e| Skipped(format!("exporting {} for Mitsuba failed: {e}", sc.name)))?;
    let work = dir.path().join("mitsuba");
    std::fs::create_dir_all(&work).map_err(|e| Skipped(format!("cannot make {}: {e}", work.display())))?;
    let variant =
        args.peer.mitsuba_variant.clone().unwrap_or_else(|| mitsuba::variant_for(kind == BackendKind::Cuda).into());
    let timeout = args.peer.timeout.duration();
    println!(
        "{}: Mitsuba ({variant}) renders {:?} spp, each after a warm-up render (at most {} s, --peer-timeout)",
        sc.name,
        spp,
        timeout.as_secs()
    );
    // Mitsuba's seed differs from both of reap's: its samples are independent of the reference's.
    let seed = args.seed.wrapping_add(2);
    let run = |command: &mut std::process::Command| process::run(command, timeout);
    mitsuba::render(&driver::python(), &xml, &variant, spp, seed, (args.width, args.height), &work, run)
}

/// The backend's kind, for Mitsuba's variant.
struct Kind;

impl OnBackend for Kind {
    type Output = BackendKind;
    fn run<B: Opened>(self, backend: B) -> Result<BackendKind> {
        Ok(backend.kind())
    }
}

/// reap's renders of one scene: the reference, the peer's images scored
/// against it, and the progressive render per traversal.
struct ReapSide<'a> {
    args: &'a RenderBenchArgs,
    peer_spp: &'a [u32],
    packed: &'a Packed,
    camera: CameraLayout,
    traversals: &'a [Traversal],
    peer: &'a MitsubaRun,
}

/// The reference's wall clock and mean, reap's runs, and the peer's checkpoints scored or why they
/// cannot be (a peer's image that cannot be scored is the peer's fault: its row says so).
type ReapResults = (f64, [f64; 3], Vec<ReapRun>, Result<Vec<PeerCheckpoint>, String>);

impl OnBackend for ReapSide<'_> {
    type Output = ReapResults;
    fn run<B: Opened>(self, backend: B) -> Result<ReapResults> {
        let a = self.args;
        let setup = |seed: u32| TracerSetup {
            packed: self.packed.clone(),
            camera: self.camera,
            width: a.width,
            height: a.height,
            seed,
            max_bounces: a.path.max_bounces,
        };
        let config = Config::of(a, &backend)?;
        // One engine at a time (an engine's seed is fixed when it is made): the GPU never holds two.
        let mut engine = backend.tracer(setup(reference_seed(a)))?;
        engine.set_graphs(a.graphs);
        let spp = a.peer.reference_spp;
        let s = config.settings(a, Traversal::DepthFirst, spp, 0, reference_seed(a));
        warm_up(&mut engine, &s)?;
        let bar = ProgressBar::new(spp as u64).with_message("reference");
        let clock = Instant::now();
        render(&mut engine, &s, |_| bar.inc(1))?;
        let reference_wall_s = clock.elapsed().as_secs_f64();
        bar.finish_and_clear();
        let reference = output::mean(&engine.image()?);
        drop(engine);
        println!("reference: {spp} spp in {reference_wall_s:.2} s");

        let scored: Result<Vec<_>, String> = self
            .peer
            .images
            .iter()
            .map(|i| {
                PeerCheckpoint::scored(i.spp, i.wall_s, i.warmup_s, &i.pixels, &reference).map_err(|e| {
                    format!("Mitsuba's {}-spp image cannot be scored against reap's reference: {e}", i.spp)
                })
            })
            .collect();
        let target = scored.as_ref().ok().and_then(|s| s.iter().max_by_key(|c| c.spp)).map(|c| c.rel_mse);
        let mut engine = B::another()?.tracer(setup(a.seed))?;
        engine.set_graphs(a.graphs);
        let mut runs = Vec::new();
        for &traversal in self.traversals {
            let checkpoints = progressive(&mut engine, a, &config, traversal, self.peer_spp, target, &reference)?;
            let reach = target.map(|t| peers::reach(&checkpoints, t));
            runs.push(ReapRun {
                traversal: traversal.name().into(),
                bvh: config.bvh.name().into(),
                compaction: config.compaction.name().into(),
                fusion: config.fusion.name().into(),
                checkpoints,
                reach,
            });
        }
        Ok((reference_wall_s, peers::mean_rgb(&reference), runs, scored))
    }
}

/// The compaction configuration of reap's equal-error renders: lookback,
/// fusion auto and the wide BVH, or the first the row flags name.
struct Config {
    compaction: Compaction,
    fusion: Fusion,
    bvh: BvhKind,
}

impl Config {
    fn of<B: Opened>(a: &RenderBenchArgs, backend: &B) -> Result<Config> {
        let named = a.algorithms.iter().find(|n| !matches!(n.as_str(), "all" | "none"));
        let compaction = Compaction::parse(named.map_or("lookback", |n| n.as_str()), backend, "algorithms")?;
        let fusion = a.fusion.first().copied().unwrap_or_default();
        let bvh = match a.bvh.contains(&BvhKind::Wide) {
            true => BvhKind::Wide,
            false => a.bvh.first().copied().unwrap_or(reap::trace::BVH),
        };
        Ok(Config { compaction, fusion, bvh })
    }

    fn settings(
        &self,
        a: &RenderBenchArgs,
        traversal: Traversal,
        spp: u32,
        first_sample: u32,
        seed: u32,
    ) -> RenderSettings {
        RenderSettings {
            width: a.width,
            height: a.height,
            spp,
            max_bounces: a.path.max_bounces,
            estimator: a.path.estimator,
            traversal,
            compact_paths: self.compaction,
            compact_frontier: self.compaction,
            seed,
            first_sample,
            max_frontier: a.max_frontier,
            descend: a.descend,
            block_levels: reap::trace::BlockLevels::Auto,
            group_levels: 0,
            bvh: self.bvh,
            fusion: self.fusion,
        }
    }
}

/// Two untimed frames of `s`'s configuration (the first compiles the kernels
/// and fills the allocator, the second records the frame's CUDA graph under
/// --graphs auto), then the sums cleared.
fn warm_up<E: Engine>(engine: &mut E, s: &RenderSettings) -> Result<()> {
    render(engine, &RenderSettings { spp: 2, first_sample: 0, ..s.clone() }, |_| {})?;
    engine.reset()?;
    Ok(())
}

/// reap from 1 spp with checkpoints 1, 2, 4, … (and the peer's counts) until
/// it has passed the peer's largest count and reached `target` there (only
/// the first without a peer).
fn progressive<E: Engine>(
    engine: &mut E,
    a: &RenderBenchArgs,
    config: &Config,
    traversal: Traversal,
    peer_spp: &[u32],
    target: Option<f64>,
    reference: &[[f32; 3]],
) -> Result<Vec<ReapCheckpoint>> {
    let most = peer_spp.last().copied().unwrap_or(1);
    warm_up(engine, &config.settings(a, traversal, 2, 0, a.seed))?;
    // At least the peer's largest count; more where reap has not reached its error by then.
    let bar = ProgressBar::new(most as u64).with_message(traversal.name());
    let (mut done, mut wall_s, mut device_ms) = (0, 0.0, 0.0);
    let mut checkpoints = Vec::new();
    for spp in peers::reap_checkpoints(peer_spp, a.peer.reference_spp) {
        let s = config.settings(a, traversal, spp - done, done, a.seed);
        let clock = Instant::now();
        let frames = render(engine, &s, |_| bar.inc(1))?;
        wall_s += clock.elapsed().as_secs_f64();
        device_ms += frames.iter().map(|f| f.frame_ms).sum::<f64>();
        done = spp;
        let m = noise::metrics(&output::mean(&engine.image()?), reference)?;
        checkpoints.push(ReapCheckpoint { spp, wall_s, device_ms, rel_mse: m.rel_mse, rel_rmse: m.rel_rmse });
        let stop = match target {
            Some(t) => peers::may_stop(spp, m.rel_mse, t, most),
            None => spp >= most,
        };
        if stop {
            break;
        }
    }
    bar.finish_and_clear();
    engine.reset()?;
    Ok(checkpoints)
}

/// Writes peers.json and peers.csv into `dir`.
pub fn write(dir: &Path, report: &peers::PeersReport) -> Result<()> {
    peers::write(dir, report).with_context(|| format!("writing peers.json and peers.csv in {}", dir.display()))
}
