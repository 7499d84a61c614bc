//! The wavefront path tracer: the workload that removes dead rays after every
//! bounce, and dead traversal items after every breadth-first level, with the
//! compaction algorithm picked at run time.
//!
//! [`render`] reads like the algorithm (pbrt-v4's `Render()` is the model):
//! a list of named stages over two queues. The stages themselves live in an
//! [`Engine`]: `cpu/` runs them with rayon, `cuda/` launches the kernels of
//! `kernels/trace/wavefront.cu`; both take the same buffers in the same order.
//! The compaction sites call the library only through
//! [`Backend::select_counted`]: every length and count of a frame is a word
//! of one device array ([`frontier::WordAlloc`]), read by the host once after
//! the frame, so nothing inside a frame waits for the device. Breadth-first
//! traversal (`breadth_first.rs`) is the shared level loop of [`frontier`],
//! each expansion descending [`RenderSettings::descend`] BVH levels.
//!
//! Every path's random numbers depend on (pixel, sample, bounce) alone, and
//! closest hits are merged by an order-independent minimum, so every
//! compaction algorithm, stable or not, renders a bit-identical image on a
//! backend; and engines that each trace one [`Shard`] of the image (split-frame
//! rendering) sum to the single engine's image.
//!
//! Over 600 lines, kept whole: the pipeline ([`render`], the frame) and what
//! it is made of (settings, the frame's words, its stats, the `Engine` trait)
//! read together; the stages and traversals live in their own files.

mod breadth_first;
pub mod bsdf;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod error;
mod estimator;
#[cfg(any(feature = "cuda", feature = "wgpu"))]
mod gpu;
pub mod layout;
pub mod noise;
pub mod output;
mod settings;
pub mod shading;
mod shard;
pub mod split;
mod stats;
pub mod texture;
pub mod tonemap;
#[cfg(feature = "wgpu")]
pub mod wgpu;
pub mod wide;

use crate::clocks::Clock;
use crate::compaction::{Algorithm, Backend, BackendKind, Element, Keep, Lens};
pub use crate::compaction::{Compaction, Fusion, SitePath};
use crate::frontier::{self, Frontier, LevelWords, WordAlloc};
use crate::memory::{self, Limit};
pub use crate::replay::{FramePath, Graphs};

use breadth_first::{breadth_first, frame_that_fits};
pub use breadth_first::{frontier_guard, guard_frontier, levels, run_levels};
pub use error::{TraceError, TraceResult};
pub use estimator::Estimator;
pub use settings::*;
pub use shard::Shard;
pub use stats::*;

/// A dead queue slot (a path id) and a dead frontier item ((path << 32) | node).
pub const DEAD32: u32 = u32::MAX;
pub const DEAD64: u64 = u64::MAX;

/// The stages of the wavefront tracer on one backend. Buffers are the
/// compaction backend's own, so compaction needs no copies. Every stage over
/// a queue or a frontier reads its length from a word of the frame's word
/// array (`words`, zeroed by `begin_frame`) and is launched for the buffer's
/// capacity: nothing inside a frame waits for the device.
pub trait Engine {
    type B: Backend;
    /// What times the stages.
    type Clock: Clock<StageId, Error: Into<TraceError>>;
    fn backend(&self) -> &Self::B;
    /// Pixels of the whole image (width × height): what the per-pixel sums,
    /// [`Engine::image`] and [`Engine::rgba8`] cover, whatever the shard.
    fn image_pixels(&self) -> u64;
    /// The pixels this engine traces ([`Shard::whole`] unless set).
    fn shard(&self) -> Shard;
    /// Traces only `shard`'s pixels from the next frame on: path i becomes
    /// pixel `shard.base + i`. Regrows the per-path state when the shard
    /// outgrows it (the queues follow at the next [`render`]); never touches
    /// the sums, which stay image-sized, so a caller moving a band's edge
    /// copies the moved pixels' sums between engines. A shard that is empty
    /// or passes the image is [`TraceError::ShardOutsideImage`].
    fn set_shard(&mut self, shard: Shard) -> TraceResult<()>;
    /// Paths per frame: the shard's pixels. Queues, path state and the
    /// frontier's first guess are sized from it.
    fn pixels(&self) -> u64 {
        self.shard().count
    }
    /// Levels of the BVH (a leaf root is 1): what bounds the breadth-first loop.
    fn bvh_depth(&self) -> u32;
    /// Whether the wide breadth-first step can descend several levels per
    /// tile ([`BlockLevels`]): the CPU's and CUDA's can, wgpu's one.
    fn has_block_step(&self) -> bool {
        true
    }
    /// The lowest and highest wide node number at each depth
    /// ([`crate::bvh::wide::WideBvh::level_ranges`]), for grouping levels by node.
    fn wide_ranges(&self) -> &[(u32, u32)];
    /// One split of a grouped frontier level ([`frontier::Grouping`]): the
    /// backend's counted stable partition by [`frontier::GroupSplit::first`].
    fn group_split(
        &mut self,
        _algorithm: Algorithm,
        _input: &Buf<Self, u64>,
        _split: frontier::GroupSplit,
        _output: &mut Buf<Self, u64>,
        _lens: Lens<'_, Self::B>,
    ) -> TraceResult<()>
    where
        Self: Sized,
    {
        Err(TraceError::Settings(
            "--group-levels: this backend does not sort the frontier by node (the CPU and CUDA do); use \
             --group-levels 0"
                .into(),
        ))
    }
    /// Whether the engine fuses `algorithm`'s compaction sites into their producers.
    fn fuses(&self, _algorithm: Algorithm) -> bool {
        false
    }
    fn alloc<T: Element>(&self, len: u64) -> TraceResult<Buf<Self, T>> {
        Ok(self.backend().alloc(len)?)
    }
    /// A queue's or a frontier's compaction: the backend's counted select
    /// with a sentinel. An engine that records its stages into one encoder
    /// records it there too (wgpu), rather than have the backend submit it.
    fn select_counted<T: Element>(
        &mut self,
        algorithm: Algorithm,
        input: &Buf<Self, T>,
        sentinel: T,
        output: &mut Buf<Self, T>,
        lens: Lens<'_, Self::B>,
    ) -> TraceResult<()>
    where
        Self: Sized,
    {
        self.backend().select_counted(algorithm, input, Keep::Sentinel(sentinel), output, lens)?;
        Ok(())
    }
    /// What the engine's buffers may take: free device memory on a GPU, the
    /// host's available memory on the CPU.
    fn memory_limit(&self) -> TraceResult<Limit>;
    /// The work buffers of [`render`], kept by the engine across frames and
    /// calls, so that the frontier's learned capacity survives them.
    fn work(&mut self) -> &mut Option<Work<Self>>
    where
        Self: Sized;

    fn clock(&mut self) -> &mut Self::Clock;
    /// Starts a frame of sample `sample`: zeroes the frame's words (one
    /// fill, no host copy). `key` names what the frame's launches depend on
    /// besides the engine's own state (settings, work buffers). An engine
    /// that records frames as CUDA graphs says how this one runs: when it
    /// replays a recorded graph ([`FramePath::Replayed`]) the caller enqueues
    /// no stage. `None`: the engine records no graphs.
    fn begin_frame(&mut self, words: &mut Words<Self>, sample: u32, key: u64) -> TraceResult<Option<FramePath>>;
    /// Runs `f` as the named stage, timing it.
    fn stage<R>(&mut self, id: StageId, f: impl FnOnce(&mut Self) -> TraceResult<R>) -> TraceResult<R>
    where
        Self: Sized,
    {
        crate::clocks::timed(self, Self::clock, id, f)
    }
    /// Ends a frame: the stages' times in ms and the frame's words, read
    /// back once each (on a GPU the frame's only two host waits). `None`
    /// when the frame was being captured and the capture failed: nothing of
    /// it ran, so the caller enqueues it again (it is then streamed).
    fn end_frame(&mut self, words: &Words<Self>) -> TraceResult<Option<FrameEnd>>;
    /// Abandons a frame whose enqueueing failed (a capture in progress is
    /// discarded).
    fn abort_frame(&mut self) {}
    /// Whether frames are recorded as CUDA graphs and replayed; an engine
    /// without graphs ignores it.
    fn set_graphs(&mut self, _graphs: Graphs) {}
    /// Levels of the 8-wide BVH (its root at 1).
    fn wide_depth(&self) -> u32;

    /// Camera rays of the frame's sample (the one `begin_frame` was given)
    /// into every path (path i through pixel `shard.base + i`); the queue
    /// holds every path and `words[queue_len]` becomes the shard's pixel count.
    fn camera(&mut self, queue: &mut Queue<Self>, words: &mut Words<Self>, queue_len: u64) -> TraceResult<()>;
    /// Each queued ray's closest hit (any hit, for shadow rays), one stack per ray.
    fn depth_first(&mut self, queue: &Queue<Self>, words: &Words<Self>, run: DepthFirst) -> TraceResult<()>;
    /// Level 0 of the breadth-first loop, a step whose input is the queue:
    /// one item per queued path whose ray enters the root's box, dead
    /// otherwise, into `output[..n]`; the level's length and live count into
    /// `words[at.output_len]` and `words[at.output_live]` (`at.input_len`
    /// holds n). Writes nothing when n exceeds `run.capacity` (an overflow,
    /// [`frontier::status`]).
    fn frontier_init(&mut self, step: frontier::Step<'_, Self::B, u32>, run: FrontierRun) -> TraceResult<()>;
    /// One level: each item descends `run.descend` BVH levels, intersecting
    /// the leaves it meets and emitting the internal nodes it reaches at that
    /// depth into its 2^descend slots of `output` (the rules of
    /// [`frontier::Levels`]).
    fn expand(&mut self, step: frontier::Step<'_, Self::B>, run: FrontierRun) -> TraceResult<()>;
    /// Shades the queue's paths into `next` (dead slots where a path ended)
    /// and adds the paths still alive and the shadow rays cast to their words.
    fn shade(
        &mut self,
        queue: &Queue<Self>,
        next: &mut Queue<Self>,
        words: &mut Words<Self>,
        s: Shading,
    ) -> TraceResult<()>;
    fn nee(&mut self, queue: &Queue<Self>, words: &Words<Self>, queue_len: u64) -> TraceResult<()>;
    /// The sample into the shard's per-pixel sums (path i into pixel
    /// `shard.base + i`), unless the frame's status says it failed (it is
    /// then redone or reported).
    fn accumulate(&mut self, words: &Words<Self>) -> TraceResult<()>;
    /// Clears every per-pixel sum of the image, inside the shard and out (a
    /// new view, or the next run of a benchmark).
    fn reset(&mut self) -> TraceResult<()>;
    /// Moves the camera (the caller resets the sums).
    fn set_camera(&mut self, camera: crate::trace::layout::CameraLayout);
    /// The per-pixel sums of radiance and sample counts (RGBA, A = samples)
    /// of the whole image: outside the shard they hold whatever was put there
    /// (zero on a fresh engine).
    fn image(&self) -> TraceResult<Vec<[f32; 4]>>;
    /// The image as the viewer shows it: per pixel the mean radiance,
    /// clamped and sRGB-encoded to 8 bits, alpha opaque ([`tonemap`]). Computed
    /// where the sums live (`kernels/trace/tonemap.cu` on a GPU), so that only
    /// these 4 bytes a pixel cross to the host.
    fn rgba8(&mut self) -> TraceResult<&[[u8; 4]]>;
}

/// A buffer of an engine's compaction backend.
pub type Buf<E, T> = <<E as Engine>::B as Backend>::Buffer<T>;
/// A queue of path ids ([`DEAD32`] for a dead slot).
pub type Queue<E> = Buf<E, u32>;
/// The frame's word array.
pub type Words<E> = Buf<E, u64>;

/// Where shading adds its counts (wavefront.cu `trace_shade`'s two words).
#[derive(Clone, Copy, Debug)]
pub struct ShadeWords {
    pub alive: u64,
    pub shadow: u64,
}

/// One bounce's shading: wavefront.cu `trace_shade`'s scalars, in its order.
#[derive(Clone, Copy, Debug)]
pub struct Shading {
    pub sample: u32,
    pub bounce: u32,
    pub estimator: Estimator,
    /// The queue's length word.
    pub queue_len: u64,
    pub counts: ShadeWords,
    /// Where a fused path site writes the next queue's length.
    pub next_len: u64,
    /// The path queue's algorithm when its site is fused into shading: the
    /// kernel then writes only the live paths to `next`, compacted.
    pub fuse: Option<Algorithm>,
}

/// One depth-first traversal: `trace_depth_first`'s scalars, in its order.
#[derive(Clone, Copy, Debug)]
pub struct DepthFirst {
    /// Shadow rays: any hit ends the ray.
    pub shadow: bool,
    /// The queue's length word.
    pub queue_len: u64,
    pub bvh: BvhKind,
}

/// One breadth-first run (a bounce's rays or its shadow rays):
/// `trace_bf_init`'s and `trace_bf_expand`'s scalars, in their order (init
/// reads no `descend`).
#[derive(Clone, Copy, Debug)]
pub struct FrontierRun {
    /// Items each frontier buffer holds.
    pub capacity: u64,
    pub shadow: bool,
    /// BVH levels one expansion descends (fan-out 2^descend; the wide BVH's one wide level, fan-out 8).
    pub descend: u32,
    pub bvh: BvhKind,
    /// The frontier's algorithm when its site is fused into init and expand:
    /// they then write only live items, compacted, and no pass follows.
    pub fuse: Option<Algorithm>,
    /// Wide levels one step descends per tile ([`BlockLevels::resolve`]; `u32::MAX`: all).
    pub block_levels: u32,
}

impl FrontierRun {
    /// Slots one expansion writes per item.
    pub fn fan(&self) -> u64 {
        self.bvh.fan(self.descend)
    }
}

/// The words of one bounce.
#[derive(Clone, Copy, Debug)]
struct BounceWords {
    /// The queue's length entering the bounce.
    queue: u64,
    /// Where compacting the live paths writes the next bounce's queue length.
    next: u64,
    counts: ShadeWords,
    /// The breadth-first runs (rays, shadow rays).
    rays: Option<(LevelWords, LevelWords)>,
}

/// Every word of a frame: what each stage reads and writes, and what the
/// stats are computed from after the frame.
struct FrameWords {
    bounces: Vec<BounceWords>,
    used: u64,
}

impl FrameWords {
    fn plan(s: &RenderSettings, levels: u32) -> Self {
        let mut a = WordAlloc::default();
        let mut queue = a.take(1);
        let mut bounces = Vec::new();
        // max_bounces scattering stages and one last for the emission found
        for _ in 0..=s.max_bounces {
            // Under `none` the queue keeps its dead slots and its length.
            let next = match s.compact_paths {
                Compaction::None => queue,
                Compaction::With(_) => a.take(1),
            };
            let counts = ShadeWords { alive: a.take(1), shadow: a.take(1) };
            let rays = match s.traversal {
                Traversal::DepthFirst => None,
                Traversal::BreadthFirst => Some((a.levels(levels), a.levels(levels))),
            };
            bounces.push(BounceWords { queue, next, counts, rays });
            queue = next;
        }
        FrameWords { bounces, used: a.used() }
    }
}

/// The work buffers of a render, kept by the engine across frames and calls
/// ([`Engine::work`]).
pub struct Work<E: Engine> {
    queue: Buf<E, u32>,
    next: Buf<E, u32>,
    /// The frame's words (their count varies with the settings: regrown when short).
    words: Buf<E, u64>,
    frontier: Option<Frontier<E::B>>,
    /// Slots past the frontier's capacity that are poisoned when it is
    /// allocated and can be checked after a frame (tests; 0 in renders).
    guard: u64,
    /// Names these buffers in a frame's key: new whenever one is made.
    id: u64,
}

impl<E: Engine> Work<E> {
    fn new(e: &E, capacity: u64) -> TraceResult<Self> {
        let (queue, next, words) = (e.alloc(capacity)?, e.alloc(capacity)?, e.alloc(0)?);
        Ok(Work { queue, next, words, frontier: None, guard: 0, id: crate::replay::fresh_id() })
    }
    /// After a buffer was made: frames keyed by the old ones are not replayed.
    fn renew(&mut self) {
        self.id = crate::replay::fresh_id();
    }
}

/// The key of a frame under `s` on the work buffers `w` (with the engine's
/// own state, what the frame's launches depend on): the settings but the
/// sample range, which reaches the kernels through a device word.
fn frame_key<E: Engine>(s: &RenderSettings, w: &Work<E>) -> u64 {
    let s = RenderSettings { spp: 0, first_sample: 0, ..s.clone() };
    // Debug covers every field, so a field added later is in the key too.
    crate::replay::key((format!("{s:?}"), w.id))
}

/// The engine's work buffers, made on first use, and remade when the
/// engine's shard outgrows the queues: with an eighth to spare (a split's
/// bands move by a few rows a frame) and the frontier kept, so its learned
/// capacity survives the move and the next frame is not redone.
fn work<E: Engine>(e: &mut E) -> TraceResult<Work<E>> {
    match e.work().take() {
        Some(w) if e.backend().len(&w.queue) >= e.pixels() => Ok(w),
        Some(w) => {
            let (guard, frontier) = (w.guard, w.frontier);
            drop((w.queue, w.next)); // freed before the new queues are made
            let room = (e.pixels() + e.pixels() / 8).min(e.image_pixels()).max(e.pixels());
            Ok(Work { guard, frontier, ..Work::new(e, room)? })
        }
        None => Work::new(e, e.pixels()),
    }
}

/// Renders `settings.spp` frames; `on_frame` sees each frame's stats as it ends.
pub fn render<E: Engine>(
    engine: &mut E,
    settings: &RenderSettings,
    mut on_frame: impl FnMut(&FrameStats),
) -> TraceResult<Vec<FrameStats>> {
    settings.check()?;
    // The image's size, not the shard's: every engine of a split frame renders with the same settings.
    let pixels = engine.image_pixels();
    if pixels != settings.pixels() {
        return Err(TraceError::Settings(format!(
            "the engine was made for {pixels} pixels and the settings ask for {}",
            settings.pixels()
        )));
    }
    let mut w = work(engine)?;
    let mut frames = Vec::new();
    let mut run = || {
        for sample in settings.first_sample..settings.first_sample + settings.spp {
            let f = frame_that_fits(engine, settings, &mut w, sample)?;
            on_frame(&f);
            frames.push(f);
        }
        Ok(())
    };
    let r: TraceResult<()> = run();
    *engine.work() = Some(w);
    r.map(|()| frames)
}

/// One sample per pixel: camera rays, then per bounce { traverse → shade →
/// shadow rays → next-event → compact the live paths }, then one last
/// traverse → shade that only counts what the last scattered rays found,
/// then accumulate.
/// Every length is a word; the host reads the words and the stage times once,
/// after the frame.
fn frame<E: Engine>(
    e: &mut E,
    s: &RenderSettings,
    w: &mut Work<E>,
    sample: u32,
) -> TraceResult<(FrameStats, Vec<u64>)> {
    let mut stats = FrameStats { sample, samples: 1, ..Default::default() };
    let clock = std::time::Instant::now();
    let fw = FrameWords::plan(s, run_levels(e, s));
    if e.backend().len(&w.words) < fw.used {
        w.words = e.alloc(fw.used)?;
        w.renew();
    }
    let key = frame_key(s, w);
    let (stages, words) = loop {
        let path = e.begin_frame(&mut w.words, sample, key)?;
        stats.graph = path;
        if path != Some(FramePath::Replayed) {
            if let Err(err) = enqueue(e, s, w, &fw, sample) {
                e.abort_frame();
                if path == Some(FramePath::Captured) {
                    continue; // the key is refused now: streamed
                }
                return Err(err);
            }
        }
        match e.end_frame(&w.words)? {
            Some(end) => break end,
            None => continue, // the capture failed and nothing ran: streamed
        }
    };
    stats.wall_ms = ms(clock.elapsed());
    let word = |i: u64| words.get(i as usize).copied().unwrap_or(0);
    stats.queue = fw.bounces.iter().map(|b| word(b.queue)).take_while(|&n| n > 0).collect();
    let bounces = &fw.bounces[..stats.queue.len()];
    stats.alive = bounces.iter().map(|b| word(b.counts.alive)).collect();
    stats.shadow_rays = bounces.iter().map(|b| word(b.counts.shadow)).collect();
    // A fused frontier's levels hold only live items in their length words.
    let compacted = frontier_site(e, s) == Some(SitePath::Separate);
    stats.paths_site = paths_site(e, s);
    stats.frontier_site = if s.traversal == Traversal::BreadthFirst { frontier_site(e, s) } else { None };
    for b in bounces {
        let (rays, shadows) = match b.rays {
            Some((r, sh)) => (r.sizes(&words, compacted), sh.sizes(&words, compacted)),
            None => (Vec::new(), Vec::new()),
        };
        stats.frontier.push(rays);
        stats.shadow_frontier.push(shadows);
    }
    // Under `none` the queue keeps dead slots: count rays from the live paths (the shard's camera rays first).
    let pixels = e.pixels();
    let live_in: Vec<u64> = (0..bounces.len()).map(|b| if b == 0 { pixels } else { stats.alive[b - 1] }).collect();
    stats.rays = live_in.iter().sum::<u64>() + stats.shadow_rays.iter().sum::<u64>();
    stats.frame_ms = stages.iter().map(|(_, t)| t).sum();
    stats.stages = stages;
    Ok((stats, words))
}

/// Enqueues one frame's stages (see [`frame`]); the queues end in the roles
/// they began in, so every frame of a configuration launches on the same
/// addresses (a recorded graph stays valid).
fn enqueue<E: Engine>(e: &mut E, s: &RenderSettings, w: &mut Work<E>, fw: &FrameWords, sample: u32) -> TraceResult<()> {
    let first = fw.bounces[0].queue;
    let mut swapped = false;
    e.stage(StageId::frame(stage::CAMERA), |e| e.camera(&mut w.queue, &mut w.words, first))?;
    for (bounce, bw) in fw.bounces.iter().enumerate() {
        let bounce = bounce as u32;
        // Closest hits.
        match bw.rays {
            None => e.stage(StageId::bounce(stage::TRAVERSE, bounce), |e| {
                e.depth_first(&w.queue, &w.words, DepthFirst { shadow: false, queue_len: bw.queue, bvh: s.bvh })
            })?,
            Some((rays, _)) => breadth_first(e, s, w, bounce, bw.queue, rays, false)?,
        }
        let paths = paths_site(e, s);
        let fuse = match (paths, s.compact_paths) {
            (Some(SitePath::Fused), Compaction::With(alg)) => Some(alg),
            _ => None,
        };
        let shading = Shading {
            sample,
            bounce,
            estimator: s.estimator,
            queue_len: bw.queue,
            counts: bw.counts,
            next_len: bw.next,
            fuse,
        };
        e.stage(StageId::bounce(stage::SHADE, bounce), |e| e.shade(&w.queue, &mut w.next, &mut w.words, shading))?;
        if bounce == s.max_bounces {
            break; // the last stage casts no shadow rays and ends every path
        }
        // Shadow rays of next-event estimation, then their light.
        match bw.rays {
            None => e.stage(StageId::bounce(stage::SHADOW_TRAVERSE, bounce), |e| {
                e.depth_first(&w.queue, &w.words, DepthFirst { shadow: true, queue_len: bw.queue, bvh: s.bvh })
            })?,
            Some((_, shadows)) => breadth_first(e, s, w, bounce, bw.queue, shadows, true)?,
        }
        e.stage(StageId::bounce(stage::NEE, bounce), |e| e.nee(&w.queue, &w.words, bw.queue))?;
        // Dead paths leave the queue.
        match s.compact_paths {
            // Shading already wrote the live paths, compacted, and their count.
            _ if fuse.is_some() => swap_queues(w, &mut swapped),
            Compaction::None => swap_queues(w, &mut swapped),
            // Compacted from `next` back into the queue: no swap.
            Compaction::With(alg) => e.stage(StageId::bounce(stage::COMPACT_PATHS, bounce), |e| {
                let lens = Lens { words: &mut w.words, input: bw.queue, output: bw.next };
                e.select_counted(alg, &w.next, DEAD32, &mut w.queue, lens)
            })?,
        }
    }
    e.stage(StageId::frame(stage::ACCUMULATE), |e| e.accumulate(&w.words))?;
    if swapped {
        swap_queues(w, &mut swapped);
    }
    Ok(())
}

fn swap_queues<E: Engine>(w: &mut Work<E>, swapped: &mut bool) {
    std::mem::swap(&mut w.queue, &mut w.next);
    *swapped = !*swapped;
}

/// How the path queue's site runs on this engine under these settings.
pub fn paths_site<E: Engine>(e: &E, s: &RenderSettings) -> Option<SitePath> {
    site_path(e, s.fusion, s.compact_paths)
}

/// How the breadth-first frontier's site runs on this engine under these settings.
pub fn frontier_site<E: Engine>(e: &E, s: &RenderSettings) -> Option<SitePath> {
    site_path(e, s.fusion, s.compact_frontier)
}

fn site_path<E: Engine>(e: &E, fusion: Fusion, compaction: Compaction) -> Option<SitePath> {
    fusion.path(compaction, matches!(compaction, Compaction::With(a) if e.fuses(a)))
}

pub use crate::clocks::ms;
