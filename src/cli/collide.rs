//! `reap collide`: the collision demo, headless. Builds a scenario, steps it
//! on the chosen backend with the chosen frontier compaction and sort, and
//! writes the per-frame timings and a summary table. `reap bench collide`
//! shares its scenario, settings and warm-up.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};

use reap::collide::output::{self, Run, Summary};
use reap::collide::quality::{self, EnergyRun, Quality};
use reap::collide::{
    Body, CollideSettings, Compaction, Engine, Live, Scenario, Simulation, SortMethod, World, scenario,
};
use reap::compaction::{Backend, BackendKind};

use super::backend::{AdapterArg, BackendChoice, OnBackend, Opened, with_backend};

/// Bodies when --bodies is not given: a GPU runs 100k interactively, a CPU 10k.
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

pub(super) fn scenarios_help() -> String {
    let mut s = String::from("Scenarios (and their solver: substeps x passes per substep):\n");
    for sc in Scenario::ALL {
        let (substeps, passes) = sc.solver();
        s.push_str(&format!("  {:<6} {} ({substeps} x {passes})\n", sc.name(), sc.describe()));
    }
    s
}

/// The simulation's flags that `reap collide` and `reap bench collide` share.
#[derive(clap::Args, Clone, Copy)]
pub struct SimFlags {
    /// Solver substeps per frame (1 to 64): each moves the bodies by 1/60 s over the count. Default: the
    /// scenario's (listed below).
    #[arg(long)]
    pub substeps: Option<u32>,
    /// Passes over the contacts per substep (1 to 64), each colour by colour (`--colours`), then a Jacobi pass
    /// over what did not fit. Default: the scenario's (listed below).
    #[arg(long)]
    pub iterations: Option<u32>,
    /// Colours of the contact graph (0 to 24): each pass solves the contacts colour by colour, no body twice
    /// in a colour, then a Jacobi pass the contacts that did not fit. 0: Jacobi alone. Default: 16.
    #[arg(long)]
    pub colours: Option<u32>,
    /// How penetrating contacts are pushed out: `split` moves the centres apart without touching the
    /// velocities; `soft` is Box2D v3's soft step (a 30 Hz spring through the velocities, the last pass of
    /// each substep a relax pass after the bodies move; `soft:HZ` another stiffness). Default: the scenario's.
    #[arg(long, value_parser = |s: &str| s.parse::<reap::collide::physics::Contacts>())]
    pub contacts: Option<reap::collide::physics::Contacts>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The most slots a frontier level may hold (the `none` baseline grows fourfold per level).
    #[arg(long, default_value_t = 1 << 28)]
    pub max_frontier: u64,
    /// The most candidate pairs a frame may find (each with room for two contact points, about 420 bytes
    /// with them): the lists grow with the bodies' speeds, and past this the run stops with an error that
    /// says so, rather than running out of memory.
    #[arg(long, default_value_t = reap::collide::DEFAULT_MAX_CANDIDATES)]
    pub max_candidates: u64,
    /// `auto` fuses a single-pass compaction (lookback, chained, atomic) into the pair expansion;
    /// `off` runs it as a separate pass after it, like every other algorithm.
    #[arg(long, alias = "fuse", default_value = "auto", value_parser = super::render::parse_fusion)]
    pub fusion: reap::compaction::Fusion,
    /// `morton` moves the bodies into the order of their sorted Morton codes every frame, so that the
    /// solver reads neighbours' bodies from neighbouring memory; `spawn` leaves them where they were
    /// spawned. Both step the bodies alike, bit for bit: only the speed differs.
    #[arg(long, default_value = "morton", value_parser = |s: &str| s.parse::<reap::collide::BodyOrder>())]
    pub body_order: reap::collide::BodyOrder,
    /// `auto` records a frame's launches as one CUDA graph the second time its configuration runs and
    /// replays it from then on (the host launches one graph a frame); `off` launches every stage from the
    /// host each frame.
    #[arg(long, default_value = "auto", value_parser = |s: &str| s.parse::<reap::replay::Graphs>())]
    pub graphs: reap::replay::Graphs,
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
    #[command(flatten)]
    pub adapter: AdapterArg,
    /// Algorithm that compacts the pair frontier after each traversal level, or `none` (dead slots stay,
    /// and the frontier grows fourfold per level).
    #[arg(long, default_value = "lookback")]
    pub compact_pairs: String,
    /// How the Morton codes are sorted: `fast` (8-bit digit radix sort) or `split:ALG` (the library's
    /// radix sort by repeated split with a catalog algorithm).
    #[arg(long, default_value = "fast")]
    pub sort: String,
    #[command(flatten)]
    pub sim: SimFlags,
    /// Per-frame timings (every stage and level, frontier sizes, counts): .json or .csv.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Ranks the scene is split over, by Morton ranges, with ghosts exchanged in lockstep (the results
    /// equal one engine's, bit for bit): one CUDA GPU each (`--backend cuda`; bodies move between GPUs
    /// through NCCL), or CPU ranks (`--backend cpu`), which share the cores and show the protocol, not a
    /// speed-up.
    #[arg(long, default_value_t = 1)]
    pub gpus: usize,
    /// How a split over CUDA GPUs carries its ghosts' values between the solver's steps: `peer` writes
    /// them straight into the other GPU's memory (GPUs with peer access; the default there), `nccl` sends
    /// them through NCCL. Both give the same bodies, bit for bit.
    #[arg(long, value_parser = |s: &str| s.parse::<reap::collide::split::GhostExchange>())]
    pub ghost_exchange: Option<reap::collide::split::GhostExchange>,
}

/// Refuses a split collider where it does not run: `--gpus` beyond 1 takes CPU ranks or CUDA GPUs.
pub(super) fn check_split(gpus: usize, kind: BackendKind) -> Result<()> {
    if gpus == 0 {
        bail!("--gpus must be at least 1");
    }
    if gpus > 1 && kind == BackendKind::Wgpu {
        bail!(
            "--gpus {gpus} with the wgpu backend: the collision demo splits over CUDA GPUs (--backend cuda) or CPU \
             ranks (--backend cpu); wgpu has no collectives between adapters"
        );
    }
    if gpus > reap::collide::split::MAX_RANKS {
        bail!("--gpus {gpus}: a split collider holds at most {} ranks", reap::collide::split::MAX_RANKS);
    }
    Ok(())
}

pub(super) fn check_frames(frames: u32) -> Result<()> {
    if frames == 0 {
        bail!("--frames must be at least 1");
    }
    Ok(())
}

impl SimFlags {
    /// (substeps, passes per substep): the flags', else the scenario's defaults.
    pub fn solver(&self, sc: Scenario) -> (u32, u32) {
        let (substeps, iterations) = sc.solver();
        (self.substeps.unwrap_or(substeps), self.iterations.unwrap_or(iterations))
    }
}

pub(super) fn settings<B: Backend>(
    backend: &B,
    compact_pairs: &str,
    sort: &str,
    sim: &SimFlags,
    sc: Scenario,
) -> Result<CollideSettings> {
    let (substeps, iterations) = sim.solver(sc);
    let s = CollideSettings {
        compact_pairs: Compaction::parse(compact_pairs, backend, "compact-pairs")?,
        sort: SortMethod::parse(sort, backend)?,
        substeps,
        iterations,
        max_frontier: sim.max_frontier,
        max_candidates: sim.max_candidates,
        fusion: sim.fusion,
        order: sim.body_order,
    };
    s.check()?;
    Ok(s)
}

pub fn run(args: CollideArgs) -> Result<bool> {
    // Output path and plain arguments first: a bad flag must not cost a simulation.
    if let Some(out) = &args.out {
        output::check_timings_path(out)?;
    }
    let sc: Scenario = args.scenario.parse()?;
    check_frames(args.frames)?;

    let adapter = args.adapter.clone();
    with_backend(args.backend, &adapter, CollideRun { args, scenario: sc })
}

/// A simulation with its flags checked, waiting for a backend.
struct CollideRun {
    args: CollideArgs,
    scenario: Scenario,
}

impl OnBackend for CollideRun {
    type Output = bool;
    fn run<B: Opened>(self, backend: B) -> Result<bool> {
        let (args, sc) = (&self.args, self.scenario);
        let s = settings(&backend, &args.compact_pairs, &args.sort, &args.sim, sc)?;
        let n = args.bodies.unwrap_or(match backend.kind() {
            BackendKind::Cuda | BackendKind::Wgpu => DEFAULT_BODIES_CUDA,
            BackendKind::Cpu => DEFAULT_BODIES_CPU,
        });
        check_split(args.gpus, backend.kind())?;
        if args.ghost_exchange.is_some() && (args.gpus < 2 || backend.kind() != BackendKind::Cuda) {
            bail!("--ghost-exchange applies to a split over CUDA GPUs: add --backend cuda --gpus N, or drop it");
        }
        let (kind, device) = (backend.kind().name(), backend.device());
        let (world, bodies) = build(sc, n, &args.sim)?;
        if args.gpus > 1 {
            let device = match backend.kind() {
                BackendKind::Cpu => format!("{} CPU ranks ({device})", args.gpus),
                _ => format!("{} GPUs ({device} and its peers)", args.gpus),
            };
            let mut split = backend.split_collider(args.gpus, world, &bodies)?;
            if let Some(e) = args.ghost_exchange {
                split.set_ghost_exchange(e)?;
            }
            return go(split, args, sc, n, s, kind, &device);
        }
        let mut engine = backend.collider(world, &bodies)?;
        engine.set_graphs(args.sim.graphs);
        warm_up(&engine, &s)?;
        go(Live::new(engine)?, args, sc, n, s, kind, &device)
    }
}

pub(super) fn build(sc: Scenario, n: u32, sim: &SimFlags) -> Result<(World, Vec<Body>)> {
    let t0 = std::time::Instant::now();
    let (mut world, bodies) =
        scenario::build(sc, n, sim.seed).with_context(|| format!("building scenario `{}`", sc.name()))?;
    if let Some(colours) = sim.colours {
        if colours > reap::collide::physics::colour::MAX_COLOURS {
            bail!("--colours must be between 0 and {}", reap::collide::physics::colour::MAX_COLOURS);
        }
        world.colours = colours;
    }
    if let Some(contacts) = sim.contacts {
        world.contact_hertz = contacts.hertz();
    }
    if world.contact_hertz > 0.0 && sim.iterations.unwrap_or(sc.solver().1) < 2 {
        bail!("soft contacts take a solve pass and a relax pass per substep: use --iterations 2 or more");
    }
    eprintln!("scenario {}: {n} bodies placed in {:.2} s", sc.name(), t0.elapsed().as_secs_f64());
    Ok((world, bodies))
}

fn go<S: Simulation>(
    mut sim: S,
    args: &CollideArgs,
    sc: Scenario,
    n: u32,
    s: CollideSettings,
    backend: &str,
    device: &str,
) -> Result<bool> {
    println!(
        "{} with {n} bodies on {device}: sort {}, pair frontier compacted by {}, solver {} substeps x {} passes of {} \
         colours, {} contacts, {} frames",
        sc.name(),
        s.sort.name(),
        s.compact_pairs.name(),
        s.substeps,
        s.iterations,
        sim.world().colours,
        reap::collide::physics::Contacts::of(sim.world()).name(),
        args.frames
    );
    let world = *sim.world();
    // The energy is read back between frames, at a few checkpoints only, so
    // that the frames' timings do not include the copies.
    let checkpoints = quality::checkpoints(args.frames);
    let mut energy = EnergyRun::new(&world);
    energy.record(0, &sim.bodies()?, &world);
    let bar = ProgressBar::new(args.frames as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} frames  {msg}  [{elapsed_precise} < {eta_precise}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // Sized by the first frame's record before more are kept.
    let mut records = reap::collide::Records::new(args.frames);
    for i in 0..args.frames {
        let f = sim.step(&s, i)?;
        bar.set_message(format!(
            "broad {:.3} ms, frame {:.3} ms summed ({:.3} wall clock), {} contacts",
            f.broad_ms(),
            f.frame_ms,
            f.wall_ms,
            f.contacts
        ));
        bar.inc(1);
        records.push(f)?;
        if checkpoints[1..].contains(&(i + 1)) {
            energy.record(i + 1, &sim.bodies()?, &world);
        }
    }
    bar.finish_and_clear();
    let frames = records.into_vec();
    let summary = Summary::of(&frames);
    print!("{}", output::summary_table(&summary, &frames));
    let q = Quality::of(&sim.bodies()?, &sim.contact_list()?, sim.world());
    println!("{}", q.line());
    println!("{}", energy.line());
    if let Some(split) = sim.split_stats() {
        println!("{}", split.line());
    }
    if let Some(path) = &args.out {
        let (seed, colours) = (args.sim.seed, sim.world().colours);
        let run = Run { backend, device, scenario: sc.name(), bodies: n, seed, settings: &s, colours };
        output::write_timings(path, &run, &frames)?;
        println!("timings written to {}", path.display());
    }
    Ok(true)
}

/// Compiles (NVRTC) and loads the compaction and split-sort kernels the run
/// will use, so frame 0 measures the frame rather than the compiler.
pub(super) fn warm_up<E: Engine>(engine: &E, s: &CollideSettings) -> Result<()> {
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
