//! The wavefront path tracer: the workload that removes dead rays after every
//! bounce, and dead traversal items after every breadth-first level, with the
//! compaction algorithm picked at run time.
//!
//! [`render`] reads like the algorithm (pbrt-v4's `Render()` is the model):
//! a list of named stages over two queues. The stages themselves live in an
//! [`Engine`]: `cpu.rs` runs them with rayon, `cuda.rs` launches the kernels of
//! `kernels/trace/wavefront.cu`; both take the same buffers in the same order.
//! The compaction sites call the library only through [`Backend::select`].
//!
//! Every path's random numbers depend on (pixel, sample, bounce) alone, and
//! closest hits are merged by an order-independent minimum, so every
//! compaction algorithm, stable or not, renders a bit-identical image on a
//! backend.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod layout;
pub mod output;
pub mod shading;
pub mod tonemap;

use std::time::Duration;

pub use crate::compaction::Compaction;
use crate::compaction::{Backend, Element, Keep, Report};

/// A dead queue slot (a path id) and a dead frontier item ((path << 32) | node).
pub const DEAD32: u32 = u32::MAX;
pub const DEAD64: u64 = u64::MAX;

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error(transparent)]
    Compaction(#[from] crate::compaction::Error),
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Gpu(#[from] crate::gpu::Error),
    #[error(transparent)]
    Scene(#[from] crate::scene::SceneError),
    #[error("{0}")]
    Settings(String),
    #[error(transparent)]
    Site(#[from] crate::compaction::SiteError),
    #[error(
        "the breadth-first frontier would need {items} items ({gib:.1} GiB) at level {level} of bounce {bounce}: \
         without compaction it doubles every level. Pick an algorithm with --compact-frontier, use \
         --traversal depth-first, or render fewer pixels"
    )]
    FrontierTooLarge { items: u64, gib: f64, level: u32, bounce: u32 },
    #[error("the scene needs {bytes} bytes of GPU memory ({what}) and the device has {free} free: use a smaller scene")]
    OutOfMemory { what: &'static str, bytes: u64, free: u64 },
    #[error("cannot write {path}: {why}")]
    Output { path: String, why: String },
}

impl From<crate::files::OutputError> for TraceError {
    fn from(e: crate::files::OutputError) -> Self {
        TraceError::Output { path: e.path, why: e.why }
    }
}

pub type TraceResult<T> = std::result::Result<T, TraceError>;

/// How rays find their closest hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Traversal {
    /// A frontier of (path, node) items processed level by level, compacted after each level.
    BreadthFirst,
    /// One stack per ray, nearer child first: the usual baseline.
    DepthFirst,
}

impl Traversal {
    pub const ALL: [Traversal; 2] = [Traversal::BreadthFirst, Traversal::DepthFirst];
    pub fn name(self) -> &'static str {
        match self {
            Traversal::BreadthFirst => "breadth-first",
            Traversal::DepthFirst => "depth-first",
        }
    }
}

impl std::str::FromStr for Traversal {
    type Err = TraceError;
    fn from_str(s: &str) -> TraceResult<Self> {
        Traversal::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| TraceError::Settings(format!("unknown traversal `{s}`: use breadth-first or depth-first")))
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct RenderSettings {
    pub width: u32,
    pub height: u32,
    /// Samples per pixel: one wavefront frame each.
    pub spp: u32,
    pub max_bounces: u32,
    pub traversal: Traversal,
    pub compact_paths: Compaction,
    pub compact_frontier: Compaction,
    pub seed: u32,
    /// The first frame's sample index: a progressive viewer continues where it left off.
    pub first_sample: u32,
    /// The most frontier items a level may hold (the `none` baseline grows without bound).
    pub max_frontier: u64,
}

impl RenderSettings {
    pub fn check(&self) -> TraceResult<()> {
        let bad = |s: &str| Err(TraceError::Settings(s.into()));
        if self.width == 0 || self.height == 0 {
            return bad("--width and --height must be at least 1");
        }
        if (self.width as u64) * (self.height as u64) >= DEAD32 as u64 {
            return bad("width x height must stay below 2^32 pixels");
        }
        if self.spp == 0 {
            return bad("--spp must be at least 1");
        }
        if self.max_bounces == 0 || self.max_bounces > 64 {
            return bad("--max-bounces must be between 1 and 64");
        }
        Ok(())
    }
    pub fn pixels(&self) -> u64 {
        self.width as u64 * self.height as u64
    }
}

/// Where a stage sits in the frame.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct StageId {
    pub name: &'static str,
    pub bounce: Option<u32>,
    pub level: Option<u32>,
}

impl StageId {
    pub fn frame(name: &'static str) -> Self {
        StageId { name, bounce: None, level: None }
    }
    pub fn bounce(name: &'static str, bounce: u32) -> Self {
        StageId { name, bounce: Some(bounce), level: None }
    }
    pub fn level(name: &'static str, bounce: u32, level: u32) -> Self {
        StageId { name, bounce: Some(bounce), level: Some(level) }
    }
    /// Whether the stage is one of the compaction sites.
    pub fn is_compaction(&self) -> bool {
        self.name.starts_with("compact")
    }
}

/// Stage names, one list so the reports and the overlay agree.
pub mod stage {
    pub const CAMERA: &str = "camera";
    pub const TRAVERSE: &str = "traverse";
    pub const FRONTIER_INIT: &str = "frontier init";
    pub const EXPAND: &str = "expand level";
    pub const COMPACT_FRONTIER: &str = "compact frontier";
    pub const SHADE: &str = "shade";
    pub const SHADOW_TRAVERSE: &str = "shadow traverse";
    pub const SHADOW_INIT: &str = "shadow frontier init";
    pub const SHADOW_EXPAND: &str = "shadow expand level";
    pub const COMPACT_SHADOW_FRONTIER: &str = "compact shadow frontier";
    pub const NEE: &str = "next-event";
    pub const COMPACT_PATHS: &str = "compact paths";
    pub const ACCUMULATE: &str = "accumulate";
}

/// One frame (one sample per pixel) as measured.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FrameStats {
    pub sample: u32,
    /// Every stage in order with its time in ms (device events on a GPU).
    pub stages: Vec<(StageId, f64)>,
    /// Queue length at the start of each bounce (dead slots included under `none`).
    pub queue: Vec<u64>,
    /// Paths alive after each bounce's shading.
    pub alive: Vec<u64>,
    /// Shadow rays cast in each bounce.
    pub shadow_rays: Vec<u64>,
    /// Per bounce, the frontier's size entering each level (breadth-first).
    pub frontier: Vec<Vec<u64>>,
    pub shadow_frontier: Vec<Vec<u64>>,
    /// Rays traced: paths entering each bounce plus shadow rays.
    pub rays: u64,
    /// Sum of the stages, ms (device events on a GPU).
    pub frame_ms: f64,
    /// Wall clock, ms: host time from the frame's start until its results
    /// are complete (after `end_frame` has waited for the device).
    pub wall_ms: f64,
}

impl FrameStats {
    pub fn compaction_ms(&self) -> f64 {
        // + 0.0: an empty f64 sum is -0.0, which would print as "-0.000".
        self.stages.iter().filter(|(s, _)| s.is_compaction()).map(|(_, t)| t).sum::<f64>() + 0.0
    }
    /// Rays per second by the summed stages.
    pub fn mrays_per_s(&self) -> f64 {
        crate::clocks::millions_per_s(self.rays as f64, self.frame_ms)
    }
    /// Rays per second by the wall clock.
    pub fn wall_mrays_per_s(&self) -> f64 {
        crate::clocks::millions_per_s(self.rays as f64, self.wall_ms)
    }
}

/// What an engine reports at a frame's end: each stage with its time in ms,
/// and the shade counters.
pub type FrameEnd = (Vec<(StageId, f64)>, Vec<u32>);

/// The stages of the wavefront tracer on one backend. Buffers are the
/// compaction backend's own, so compaction needs no copies.
pub trait Engine {
    type B: Backend;
    fn backend(&self) -> &Self::B;
    fn pixels(&self) -> u64;
    /// Levels of the BVH (a leaf root is 1): where a `none` frontier ends.
    fn bvh_depth(&self) -> u32;
    /// Sets a work buffer's length, growing its allocation when needed.
    fn resize<T: Element>(&self, buffer: &mut Buf<Self, T>, len: u64) -> TraceResult<()>;
    fn alloc<T: Element>(&self, len: u64) -> TraceResult<Buf<Self, T>> {
        Ok(self.backend().alloc(len)?)
    }

    /// Starts a frame: zeroes the per-bounce counters.
    fn begin_frame(&mut self) -> TraceResult<()>;
    /// Runs `f` as the named stage, timing it.
    fn stage<R>(&mut self, id: StageId, f: impl FnOnce(&mut Self) -> TraceResult<R>) -> TraceResult<R>;
    /// Ends a frame: the stages' times in ms and the shade counters
    /// ([alive, shadow rays] per bounce).
    fn end_frame(&mut self) -> TraceResult<FrameEnd>;

    fn camera(&mut self, sample: u32, queue: &mut Buf<Self, u32>) -> TraceResult<()>;
    fn depth_first(&mut self, queue: &Buf<Self, u32>, shadow: bool) -> TraceResult<()>;
    fn frontier_init(&mut self, queue: &Buf<Self, u32>, shadow: bool, frontier: &mut Buf<Self, u64>)
    -> TraceResult<()>;
    /// `out` holds twice the frontier's length.
    fn expand(&mut self, frontier: &Buf<Self, u64>, shadow: bool, out: &mut Buf<Self, u64>) -> TraceResult<()>;
    fn shade(&mut self, queue: &Buf<Self, u32>, next: &mut Buf<Self, u32>, sample: u32, bounce: u32)
    -> TraceResult<()>;
    fn nee(&mut self, queue: &Buf<Self, u32>) -> TraceResult<()>;
    fn accumulate(&mut self) -> TraceResult<()>;
    /// Clears the per-pixel sums (a new view, or the next run of a benchmark).
    fn reset(&mut self) -> TraceResult<()>;
    /// Moves the camera (the caller resets the sums).
    fn set_camera(&mut self, camera: crate::trace::layout::CameraLayout);
    /// The per-pixel sums of radiance and sample counts (RGBA, A = samples).
    fn image(&self) -> TraceResult<Vec<[f32; 4]>>;
    /// The image as the viewer shows it: per pixel the mean radiance,
    /// clamped and sRGB-encoded to 8 bits, alpha opaque ([`tonemap`]). Computed
    /// where the sums live (`kernels/trace/tonemap.cu` on a GPU), so that only
    /// these 4 bytes a pixel cross to the host.
    fn rgba8(&mut self) -> TraceResult<&[[u8; 4]]>;
}

/// A buffer of an engine's compaction backend.
pub type Buf<E, T> = <<E as Engine>::B as Backend>::Buffer<T>;

fn len<E: Engine + ?Sized, T: Element>(e: &E, b: &Buf<E, T>) -> u64 {
    e.backend().len(b)
}

/// The work buffers of a render, kept across frames.
struct Queues<E: Engine> {
    queue: Buf<E, u32>,
    next: Buf<E, u32>,
    frontier: Buf<E, u64>,
    expanded: Buf<E, u64>,
}

/// Renders `settings.spp` frames; `on_frame` sees each frame's stats as it ends.
pub fn render<E: Engine>(
    engine: &mut E,
    settings: &RenderSettings,
    mut on_frame: impl FnMut(&FrameStats),
) -> TraceResult<Vec<FrameStats>> {
    settings.check()?;
    let pixels = engine.pixels();
    if pixels != settings.pixels() {
        return Err(TraceError::Settings(format!(
            "the engine was made for {pixels} pixels and the settings ask for {}",
            settings.pixels()
        )));
    }
    let mut q = Queues::<E> {
        queue: engine.alloc(pixels)?,
        next: engine.alloc(pixels)?,
        frontier: engine.alloc(pixels)?,
        expanded: engine.alloc(2 * pixels)?,
    };
    let mut frames = Vec::new();
    for sample in settings.first_sample..settings.first_sample + settings.spp {
        let f = frame(engine, settings, &mut q, sample)?;
        on_frame(&f);
        frames.push(f);
    }
    Ok(frames)
}

/// One sample per pixel: camera rays, then per bounce { traverse → shade →
/// shadow rays → next-event → compact the live paths }, then accumulate.
fn frame<E: Engine>(e: &mut E, s: &RenderSettings, q: &mut Queues<E>, sample: u32) -> TraceResult<FrameStats> {
    let mut stats = FrameStats { sample, ..Default::default() };
    let clock = std::time::Instant::now();
    e.begin_frame()?;
    let pixels = e.pixels();
    e.resize(&mut q.queue, pixels)?;
    e.stage(StageId::frame(stage::CAMERA), |e| e.camera(sample, &mut q.queue))?;
    for bounce in 0..s.max_bounces {
        let n = len(e, &q.queue);
        if n == 0 {
            break;
        }
        stats.queue.push(n);
        // Closest hits.
        match s.traversal {
            Traversal::DepthFirst => {
                e.stage(StageId::bounce(stage::TRAVERSE, bounce), |e| e.depth_first(&q.queue, false))?;
                stats.frontier.push(Vec::new());
            }
            Traversal::BreadthFirst => {
                let sizes = breadth_first(e, s, q, bounce, false)?;
                stats.frontier.push(sizes);
            }
        }
        e.resize(&mut q.next, n)?;
        e.stage(StageId::bounce(stage::SHADE, bounce), |e| e.shade(&q.queue, &mut q.next, sample, bounce))?;
        // Shadow rays of next-event estimation, then their light.
        match s.traversal {
            Traversal::DepthFirst => {
                e.stage(StageId::bounce(stage::SHADOW_TRAVERSE, bounce), |e| e.depth_first(&q.queue, true))?;
                stats.shadow_frontier.push(Vec::new());
            }
            Traversal::BreadthFirst => {
                let sizes = breadth_first(e, s, q, bounce, true)?;
                stats.shadow_frontier.push(sizes);
            }
        }
        e.stage(StageId::bounce(stage::NEE, bounce), |e| e.nee(&q.queue))?;
        // Dead paths leave the queue.
        match s.compact_paths {
            Compaction::None => std::mem::swap(&mut q.queue, &mut q.next),
            Compaction::With(alg) => {
                e.resize(&mut q.queue, n)?;
                let kept = e.stage(StageId::bounce(stage::COMPACT_PATHS, bounce), |e| {
                    let r = e.backend().select(alg, &q.next, Keep::Sentinel(DEAD32), &mut q.queue)?;
                    Ok(r.count()?)
                })?;
                e.resize(&mut q.queue, kept)?;
            }
        }
    }
    e.stage(StageId::frame(stage::ACCUMULATE), |e| e.accumulate())?;
    let (stages, counters) = e.end_frame()?;
    stats.wall_ms = ms(clock.elapsed());
    let bounces = stats.queue.len();
    stats.alive = (0..bounces).map(|b| counters.get(2 * b).copied().unwrap_or(0) as u64).collect();
    stats.shadow_rays = (0..bounces).map(|b| counters.get(2 * b + 1).copied().unwrap_or(0) as u64).collect();
    // Under `none` the queue keeps dead slots: count rays from the live paths.
    let live_in: Vec<u64> = (0..bounces).map(|b| if b == 0 { pixels } else { stats.alive[b - 1] }).collect();
    stats.rays = live_in.iter().sum::<u64>() + stats.shadow_rays.iter().sum::<u64>();
    stats.frame_ms = stages.iter().map(|(_, t)| t).sum();
    stats.stages = stages;
    Ok(stats)
}

/// Breadth-first traversal of the queued paths' rays (or shadow rays): level
/// by level, each item's children that its ray enters go to the next
/// frontier, which is then compacted. Returns the frontier size per level.
fn breadth_first<E: Engine>(
    e: &mut E,
    s: &RenderSettings,
    q: &mut Queues<E>,
    bounce: u32,
    shadow: bool,
) -> TraceResult<Vec<u64>> {
    let (init, expand, compact) = if shadow {
        (stage::SHADOW_INIT, stage::SHADOW_EXPAND, stage::COMPACT_SHADOW_FRONTIER)
    } else {
        (stage::FRONTIER_INIT, stage::EXPAND, stage::COMPACT_FRONTIER)
    };
    let n = len(e, &q.queue);
    e.resize(&mut q.frontier, n)?;
    e.stage(StageId::bounce(init, bounce), |e| e.frontier_init(&q.queue, shadow, &mut q.frontier))?;
    let mut sizes = Vec::new();
    // Level 0's items are the roots; compacting them first drops the rays that miss the scene.
    let mut m = compact_frontier(e, s, q, bounce, 0, compact)?;
    let mut level = 0;
    while m > 0 {
        sizes.push(m);
        if 2 * m > s.max_frontier {
            let gib = (2 * m * 8) as f64 / (1u64 << 30) as f64;
            return Err(TraceError::FrontierTooLarge { items: 2 * m, gib, level, bounce });
        }
        e.resize(&mut q.expanded, 2 * m)?;
        e.stage(StageId::level(expand, bounce, level), |e| e.expand(&q.frontier, shadow, &mut q.expanded))?;
        std::mem::swap(&mut q.frontier, &mut q.expanded);
        level += 1;
        m = compact_frontier(e, s, q, bounce, level, compact)?;
    }
    Ok(sizes)
}

/// Compacts `q.frontier` in place (through `q.expanded`); returns its new length.
fn compact_frontier<E: Engine>(
    e: &mut E,
    s: &RenderSettings,
    q: &mut Queues<E>,
    bounce: u32,
    level: u32,
    name: &'static str,
) -> TraceResult<u64> {
    let m = len(e, &q.frontier);
    match s.compact_frontier {
        // Dead items stay: the next level reads and doubles them, and the
        // frontier ends only when a level holds no live item, which `none`
        // cannot see without a count; it stops at the tree's depth instead.
        Compaction::None => Ok(if level >= e.bvh_depth() { 0 } else { m }),
        Compaction::With(alg) => {
            e.resize(&mut q.expanded, m)?;
            let kept = e.stage(StageId::level(name, bounce, level), |e| {
                let r = e.backend().select(alg, &q.frontier, Keep::Sentinel(DEAD64), &mut q.expanded)?;
                Ok(r.count()?)
            })?;
            std::mem::swap(&mut q.frontier, &mut q.expanded);
            e.resize(&mut q.frontier, kept)?;
            Ok(kept)
        }
    }
}

/// Time in ms, for stats.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
