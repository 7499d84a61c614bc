//! `reap view`: the interactive viewer (the progressive image, or the
//! collision demo) with the overlay comparing compaction algorithms.

use anyhow::{Result, bail};

use super::backend::BackendChoice;

#[derive(clap::Args)]
pub struct ViewArgs {
    /// A built-in scene's name (see `reap render --help`) or a path to an OBJ file.
    #[arg(long, default_value = "cornell")]
    scene: String,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// Render width in pixels (the window adds the overlay's panel).
    #[arg(long, default_value_t = 960, value_parser = clap::value_parser!(u32).range(1..))]
    width: u32,
    #[arg(long, default_value_t = 540, value_parser = clap::value_parser!(u32).range(1..))]
    height: u32,
    /// Exit after this many frames (at least 1).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    frames: Option<u64>,
    /// Draw into a texture on the best GPU for compute instead of a window (needs --frames): times
    /// the viewer's frames, overlay and draws where the computing GPU has no display.
    #[arg(long, requires = "frames")]
    offscreen: bool,
    /// Save the window, overlay included, as PNG at exit.
    #[arg(long)]
    screenshot: Option<std::path::PathBuf>,
    /// Start "compare all" at once: every algorithm at both sites for K frames each (after one
    /// warm-up frame), then a ranked chart.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    compare_all: Option<u32>,
    /// Show the collision demo instead of the path tracer (the overlay switches between them).
    #[arg(long)]
    collide: bool,
    /// With --collide: the scenario (pile, drum, gas or ramp).
    #[arg(long, default_value = "pile", requires = "collide")]
    scenario: String,
    /// With --collide: how many bodies [default: 4000 on the CPU, 100000 with CUDA].
    #[arg(long, requires = "collide", value_parser = super::collide::parse_bodies)]
    bodies: Option<u32>,
    /// BVH levels one breadth-first expansion descends (1 to 5; fan-out 2^K).
    #[arg(long, value_name = "K", default_value_t = reap::trace::DESCEND, value_parser = super::render::descend_range())]
    descend: u32,
    /// Wide BVH levels one breadth-first step descends per tile of 256 frontier items while its block
    /// keeps their rays (each ray read once a step, not once a level): 1 to 64, `all` (until the tile is
    /// done or holds 8 items per input item), or `auto` (one level, the fastest measured on an H200:
    /// docs/render/bf-block-h200).
    #[arg(long, value_name = "K", default_value = "auto", value_parser = super::render::parse_block_levels)]
    block_levels: reap::trace::BlockLevels,
    /// Breadth-first levels 1..=N of each bounce sorted by node before their expansion (0 to 8; wide BVH,
    /// one block level, a stable --compact-frontier): an LSD radix sort, one library partition per bit
    /// of the level's node numbers (Garanzha & Loop's node-major order).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=8))]
    group_levels: u32,
    /// The BVH the traversals start on: `binary` or the 8-wide `wide` (the overlay switches it).
    #[arg(long, default_value_t = reap::trace::BVH, value_parser = |s: &str| s.parse::<reap::trace::BvhKind>())]
    bvh: reap::trace::BvhKind,
    /// Split the path tracer's image across GPUs 0..N (bands of rows that follow the measured time); with
    /// --backend cpu or cuda, the collision demo over N CPU ranks or GPUs (wgpu steps it on one adapter).
    #[arg(long, default_value_t = 1)]
    gpus: usize,
}

/// The viewer with `reap view`'s defaults, for `reap` with no arguments:
/// `Ok(false)`, after a line saying so, where no window can open.
#[cfg(feature = "viewer")]
pub fn first_run(args: ViewArgs) -> Result<bool> {
    match reap::viewer::run(options(args)?) {
        Ok(()) => Ok(true),
        Err(e) if e.is_no_display() => {
            println!(
                "reap: cannot open the viewer ({e}); rendering render.png headless instead (see `reap render --help`)"
            );
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(feature = "viewer")]
pub fn run(args: ViewArgs) -> Result<bool> {
    if args.offscreen {
        reap::viewer::run_offscreen(options(args)?)?;
        return Ok(true);
    }
    match reap::viewer::run(options(args)?) {
        Ok(()) => Ok(true),
        Err(e) if e.is_no_display() => bail!("{e}; `reap render` renders without a window"),
        Err(e) => Err(e.into()),
    }
}

#[cfg(feature = "viewer")]
fn options(args: ViewArgs) -> Result<reap::viewer::ViewOptions> {
    use reap::viewer::session::BackendKind;
    let backend = match args.backend {
        BackendChoice::Auto => None,
        BackendChoice::Cpu => Some(BackendKind::Cpu),
        BackendChoice::Cuda => Some(BackendKind::Cuda),
        BackendChoice::Wgpu => Some(BackendKind::Wgpu),
    };
    if let Some(p) = &args.screenshot {
        // An existing file under the scene's name is what the viewer loads; the scene's MTL files
        // and textures are checked against it once loaded, before the screenshot is saved.
        reap::files::check_output(p, &[std::path::PathBuf::from(&args.scene)])?;
    }
    let collide = match args.collide {
        true => Some(reap::viewer::CollideOptions { scenario: args.scenario.parse()?, bodies: args.bodies }),
        false => None,
    };
    Ok(reap::viewer::ViewOptions {
        scene: args.scene,
        backend,
        width: args.width,
        height: args.height,
        frames: args.frames,
        screenshot: args.screenshot,
        compare_all: args.compare_all,
        collide,
        descend: args.descend,
        block_levels: args.block_levels,
        group_levels: args.group_levels,
        bvh: args.bvh,
        gpus: args.gpus,
    })
}

#[cfg(not(feature = "viewer"))]
pub fn run(_args: ViewArgs) -> Result<bool> {
    bail!("this reap was built without the `viewer` feature; rebuild with default features, or use `reap render`")
}
