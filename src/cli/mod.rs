//! The `reap` command line: the algorithm catalog, the correctness suite, the
//! two workloads (rendering, collision), the viewer and the benchmarks, one
//! module per command. This module holds the top-level parser and the
//! dispatch; [`backend`] opens the backend every command runs on.

use anyhow::Result;
use clap::{Parser, Subcommand};

mod algorithms;
mod backend;
mod bench;
mod collide;
pub mod interrupt;
mod launch;
mod progress;
pub mod ranks;
mod render;
pub mod runtime_dir;
mod scene;
mod sizes;
mod verify;
mod view;

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
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Print the algorithm catalog: name, properties, operations, backends, source.
    Algorithms,
    /// Run the correctness suite against the sequential reference; ends with `N passed, M failed`.
    Verify(verify::VerifyArgs),
    /// Measure algorithms beside the copy roofline.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Path-trace a scene headless (wavefront, compaction after every bounce and traversal level).
    Render(render::RenderArgs),
    /// Scene tools: `reap scene export` writes a scene for Mitsuba 3, pbrt-v4, or back as OBJ.
    #[command(subcommand)]
    Scene(scene::SceneCommand),
    /// Simulate colliding rigid bodies headless (LBVH + breadth-first pair traversal, the pair frontier
    /// compacted after every level); per-frame timings and a summary table.
    Collide(collide::CollideArgs),
    /// Open the interactive viewer: the progressive image (or with --collide the collision demo) and an
    /// overlay comparing compaction algorithms.
    View(view::ViewArgs),
    /// Run a command as N processes, one rank each (one GPU each on CUDA), started as separate hosts
    /// start theirs: `reap launch --ranks 2 -- bench compaction --backend cuda`. Each process may also be
    /// started by hand (or by a cluster's launcher) with REAP_RANK, REAP_RANKS and REAP_RENDEZVOUS set.
    Launch(launch::LaunchArgs),
}

/// Runs the parsed command: `Ok(false)` when it ran and found a failure (a
/// verify case, images or contacts that disagree), `Err` when it could not run.
pub fn run(cli: Cli) -> Result<bool> {
    if let Some(place) = ranks::place()? {
        let sharded = matches!(
            cli.command,
            Some(Command::Verify(_))
                | Some(Command::Render(_))
                | Some(Command::Bench(bench::BenchCommand::Compaction(_)))
                | Some(Command::Bench(bench::BenchCommand::Render(_)))
        );
        if !sharded {
            anyhow::bail!(
                "this process is rank {} of {} ({} is set): as ranks of several processes reap runs `verify`, \
                 `render`, `bench compaction` and `bench render`; unset REAP_RANK, REAP_RANKS and REAP_RENDEZVOUS for \
                 anything else",
                place.rank,
                place.ranks,
                reap::cluster::RANKS_VAR
            );
        }
    }
    match cli.command {
        // The main job: the viewer, or where no window can open, a render of the default scene.
        None => first_run(),
        Some(Command::Algorithms) => {
            algorithms::print_catalog();
            Ok(true)
        }
        Some(Command::Verify(args)) => verify::run(args),
        Some(Command::Bench(command)) => bench::run(command),
        Some(Command::Render(args)) => render::run(args),
        Some(Command::Scene(command)) => scene::run(command),
        Some(Command::Collide(args)) => collide::run(args),
        Some(Command::View(args)) => view::run(args),
        Some(Command::Launch(args)) => launch::run(args),
    }
}

/// An error and its causes on one line. A cause whose text its parent already
/// printed (`#[error("{0}")]` over an `io::Error` that is also its source) is
/// left out, so a system error is said once.
pub fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// `reap` with no arguments: the viewer on the Cornell box; without a display,
/// the headless render it replaced, with one line saying so.
fn first_run() -> Result<bool> {
    #[cfg(feature = "viewer")]
    match defaults("view") {
        Some(Command::View(args)) => {
            if view::first_run(args)? {
                return Ok(true);
            }
        }
        _ => unreachable!("`reap view` parses with its defaults"),
    }
    #[cfg(not(feature = "viewer"))]
    println!("reap: built without the viewer; rendering render.png headless (see `reap render --help`)");
    match defaults("render") {
        Some(Command::Render(mut args)) => {
            args.first_run = true;
            render::run(args)
        }
        _ => unreachable!("`reap render` parses with its defaults"),
    }
}

/// A subcommand as given with no flags: every argument at its default.
fn defaults(command: &str) -> Option<Command> {
    Cli::try_parse_from(["reap", command]).ok()?.command
}
