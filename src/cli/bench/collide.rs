//! `reap bench collide`: every (body count, sort, compaction) configuration
//! of the collision demo from the same start, a per-frame breakdown, and the
//! candidate and contact sets checked equal across compaction choices.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};

use reap::collide::bench::{self, BenchRow, GRAPH_WARM_UP};
use reap::collide::output::Run;
use reap::collide::peer::{self, Plan};
use reap::collide::quality::{EnergyRun, Quality};
use reap::collide::{
    Body, CollideError, CollideSettings, Compaction, Engine, FrameStats, Frontier, Scenario, SortMethod, frame,
    run_frames, simulate,
};
use reap::compaction::{Algorithm, Backend, BackendKind, Fusion};

use super::compactions;
use super::peers::bullet::{CollidePeerArgs, Start, compare};
use crate::cli::backend::{AdapterArg, BackendChoice, OnBackend, Opened, with_backend};
use crate::cli::collide::{SimFlags, build, check_frames, parse_bodies, scenarios_help, settings, warm_up};

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
    #[command(flatten)]
    pub adapter: AdapterArg,
    // A `none` run that outgrows --max-frontier is reported here, not fatal.
    #[command(flatten)]
    pub sim: SimFlags,
    /// Frames to simulate (untimed, with `lookback` and the fast sort) before the measured ones, so
    /// that a pile has settled into contact; every configuration then starts from the settled state.
    #[arg(long, default_value_t = 0)]
    pub settle: u32,
    /// Folder for results.csv, results.json and report.md (created if missing).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run each fusable algorithm (lookback, chained, atomic) both fused into the expansion and as a
    /// separate pass (with --fusion auto).
    #[arg(long)]
    pub both_paths: bool,
    #[command(flatten)]
    pub peer: CollidePeerArgs,
    /// Ranks to split the scene over (CPU ranks, `--backend cpu`, or CUDA GPUs): each body count then runs
    /// the split beside one engine from the same start, timed, with every frame's results checked equal.
    #[arg(long, default_value_t = 1)]
    pub gpus: usize,
    /// With `--gpus N` on CUDA: the ghost exchanges to measure, a row each (`peer`, `nccl`; see `reap
    /// collide --help`). Default: the split's own (peer where the GPUs reach each other's memory).
    #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.parse::<reap::collide::split::GhostExchange>())]
    pub ghost_exchanges: Vec<reap::collide::split::GhostExchange>,
}

/// `reap bench collide`: every body count × sort × compaction choice, one
/// engine per body count, with the candidate and contact sets checked equal
/// across compaction choices.
pub fn run(args: CollideBenchArgs) -> Result<bool> {
    super::out_folder(args.out.as_deref(), &reap::report::BENCH_FILES)?;
    let sc: Scenario = args.scenario.parse()?;
    check_frames(args.frames)?;
    if args.bodies.is_empty() || args.algorithms.is_empty() || args.sorts.is_empty() {
        bail!("--bodies, --algorithms and --sorts each need at least one value");
    }
    if args.gpus != 1 {
        return super::collide_split::run(&args, sc);
    }
    if !args.ghost_exchanges.is_empty() {
        bail!("--ghost-exchanges measures a split over CUDA GPUs: add --backend cuda --gpus N, or drop it");
    }
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mut rows = Vec::new();
    let mut peers = Vec::new();
    let mut device = String::new();
    // `auto` falling back to the CPU says so once, not once per body count.
    let mut choice = args.backend;
    for &n in &args.bodies {
        let (kind, name, body_rows) =
            with_backend(choice, &args.adapter, BodiesBench { args: &args, scenario: sc, bodies: n })?;
        if kind == BackendKind::Cpu {
            choice = BackendChoice::Cpu;
        }
        device = name;
        rows.extend(body_rows);
        if !args.peer.peers.is_empty() {
            // The peers step the spawn itself, settling included, as reap's rows did.
            let (world, bodies) = build(sc, n, &args.sim)?;
            let start = Start {
                scenario: sc,
                world: &world,
                bodies: &bodies,
                seed: args.sim.seed,
                substeps: args.sim.solver(sc).0,
                plan: Plan { settle: args.settle, frames: args.frames },
                measure: &reference(&args, sc),
            };
            peers.extend(compare(&args.peer, &start)?);
        }
    }
    let mut md = bench::bench_report(&rows, &device, &command);
    println!("{}", bench::bench_table(&rows));
    if !peers.is_empty() {
        println!("beside other engines, their bodies measured by reap:\n{}", peer::table(&peers, &rows));
        md += &peer::markdown(&peers, &rows);
    }
    if let Some(dir) = &args.out {
        bench::write_bench(dir, &rows, &peers, &device, &command, &md)?;
        println!("wrote results.csv, results.json and report.md in {}", dir.display());
    }
    let diff = bench::disagreements(&rows);
    for d in &diff {
        eprintln!("error: {d}");
    }
    Ok(diff.is_empty())
}

/// One body count's runs, waiting for a backend: the backend's kind, the
/// device's name and the rows.
struct BodiesBench<'a> {
    args: &'a CollideBenchArgs,
    scenario: Scenario,
    bodies: u32,
}

impl OnBackend for BodiesBench<'_> {
    type Output = (BackendKind, String, Vec<BenchRow>);
    fn run<B: Opened>(self, backend: B) -> Result<Self::Output> {
        let (args, sc) = (self.args, self.scenario);
        let (kind, device) = (backend.kind(), backend.device());
        let configs = configs(args, &backend, sc)?;
        let (world, bodies) = build(sc, self.bodies, &args.sim)?;
        let mut engine = backend.collider(world, &bodies)?;
        engine.set_graphs(args.sim.graphs);
        let rows = bench_bodies(engine, args, sc, &bodies, &configs, kind.name(), &device)?;
        Ok((kind, device, rows))
    }
}

/// The (sort, compaction) configurations, each parsed on the backend that will run it.
pub(super) fn configs<B: Backend>(args: &CollideBenchArgs, backend: &B, sc: Scenario) -> Result<Vec<CollideSettings>> {
    let compactions = compactions(&args.algorithms, backend)?;
    let mut out = Vec::new();
    // With --both-paths an algorithm the backend fuses runs fused and as a separate pass.
    for sort in &args.sorts {
        for c in &compactions {
            let s = settings(backend, c.name(), sort, &args.sim, sc)?;
            match *c {
                Compaction::With(a)
                    if backend.kind().fuses(a) && args.sim.fusion == Fusion::Auto && args.both_paths =>
                {
                    out.push(s.clone());
                    out.push(CollideSettings { fusion: Fusion::Off, ..s });
                }
                _ => out.push(s),
            }
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
        let s = reference(args, sc);
        engine.set_bodies(start)?;
        eprintln!("{n} bodies: settling for {} frames", args.settle);
        // Untimed: no record is kept, so any --settle fits in memory.
        run_frames(&mut engine, &s, args.settle, |_| {})?;
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
        let (seed, colours) = (args.sim.seed, engine.world().colours);
        let run = Run { backend, device, scenario: sc.name(), bodies: n, seed, settings: s, colours };
        warm_up(&engine, s)?;
        // Every configuration steps the same start.
        engine.set_bodies(start)?;
        let row = match simulate(&mut engine, s, args.frames.saturating_add(GRAPH_WARM_UP), |_| {}) {
            Ok(all) => {
                let frames = &all[GRAPH_WARM_UP as usize..];
                let (sets, quality) = last_frame(&engine, frames)?;
                BenchRow::measured(&run, frames, sets, quality)
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
    let series = energy_series(&mut engine, start, args, sc)?;
    for r in &mut rows {
        r.energy = series.clone();
    }
    Ok(rows)
}

/// The untimed runs' settings (settling, the energy series): `lookback` and the fast sort.
pub(super) fn reference(args: &CollideBenchArgs, sc: Scenario) -> CollideSettings {
    let (substeps, iterations) = args.sim.solver(sc);
    CollideSettings {
        compact_pairs: Compaction::With(Algorithm::Lookback),
        sort: SortMethod::Fast,
        substeps,
        iterations,
        max_frontier: args.sim.max_frontier,
        max_candidates: args.sim.max_candidates,
        fusion: Default::default(),
        order: args.sim.body_order,
    }
}

/// The energy before the first frame and after each, stepping `start` again
/// untimed with `lookback` and the fast sort: every configuration steps the
/// same bodies, so this one run stands for them all, and reading the bodies
/// back every frame costs the measured runs nothing.
fn energy_series<E: Engine>(
    engine: &mut E,
    start: &[Body],
    args: &CollideBenchArgs,
    sc: Scenario,
) -> Result<EnergyRun> {
    let s = reference(args, sc);
    engine.set_bodies(start)?;
    let world = *engine.world();
    let mut f = Frontier::new(engine)?;
    let mut series = EnergyRun::new(&world);
    series.record(0, start, &world);
    for i in 0..args.frames {
        frame(engine, &s, &mut f, i)?;
        series.record(i + 1, &engine.bodies()?, &world);
    }
    Ok(series)
}

/// The hash of the last frame's candidate pairs and contacts, and its
/// quality figures (read back after timing, so they cost the measurement
/// nothing).
fn last_frame<E: Engine>(engine: &E, frames: &[FrameStats]) -> Result<(String, Quality)> {
    if frames.is_empty() {
        return Ok((String::new(), Quality::default()));
    }
    let contacts = engine.contact_list()?;
    let q = Quality::of(&engine.bodies()?, &contacts, engine.world());
    Ok((bench::set_hash(&engine.candidate_pairs()?, &contacts), q))
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
