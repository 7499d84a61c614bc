//! Over 600 lines with its tests, kept whole: the engine and the tests of its stages.
//! The wavefront stages on the CPU: the twin of `kernels/trace/wavefront.cu`
//! (and of `tonemap.cu`), one rayon loop per kernel over the same buffers in
//! the same order, each calling the per-path function of the same name in
//! `shading.rs` or `tonemap.rs` (`shade_one` for `trace_shade`, as on the
//! GPU). It is the reference the GPU engine is checked against and what runs
//! without a GPU. The breadth-first kernels' twins and their tests are in
//! `breadth_first.rs`.

mod breadth_first;

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use glam::Vec4;
use rayon::prelude::*;

use crate::clocks::HostClock;
use crate::compaction::{CpuBackend, Error};
use crate::frontier::{Step, host};
use crate::trace::BvhKind;
use crate::trace::layout::{CameraLayout, Packed};
use crate::trace::shading::{
    PathMut, Paths, Shaded, shade_one, trace_accumulate, trace_camera, trace_depth_first, trace_nee,
};
use crate::trace::tonemap::tonemap;
use crate::trace::{
    DEAD32, DepthFirst, Engine, FrameEnd, FramePath, FrontierRun, Shading, Shard, StageId, TraceError, TraceResult,
    Work,
};

/// The CPU engine: the scene and the path state in host memory.
pub struct CpuEngine {
    backend: CpuBackend,
    scene: Packed,
    camera: CameraLayout,
    width: u32,
    height: u32,
    seed: u32,
    max_bounces: u32,
    /// The frame's sample, from `begin_frame`: the camera's rays are its.
    sample: u32,
    /// The pixels traced: path i is pixel `shard.base + i`.
    shard: Shard,
    /// Per-path state for at least `shard.count` paths (kept when a shard shrinks).
    paths: Paths,
    claims: Claims,
    /// One sum per pixel of the whole image, whatever the shard.
    sum: Vec<[f32; 4]>,
    /// A split by samples' held sums (its band of the running image): image-sized once used.
    held: Vec<[f32; 4]>,
    /// The image as shown (`rgba8`), rewritten from `sum` on each call.
    rgba: Vec<[u8; 4]>,
    clock: HostClock<StageId>,
    work: Option<Work<CpuEngine>>,
    /// The wide BVH's node range at each depth (breadth-first grouping sorts within it).
    wide_ranges: Vec<(u32, u32)>,
}

impl CpuEngine {
    /// An engine for `width` x `height` pixels (one path each, until
    /// [`Engine::set_shard`] narrows them) over `scene`, seen through `camera`. `seed` and `max_bounces` are the render's: the
    /// stages take them from here, as the GPU engine's do, so pass the values
    /// of the [`RenderSettings`](crate::trace::RenderSettings) given to `render`.
    pub fn new(
        backend: CpuBackend,
        scene: Packed,
        camera: CameraLayout,
        width: u32,
        height: u32,
        seed: u32,
        max_bounces: u32,
    ) -> Self {
        let pixels = width as usize * height as usize;
        let wide_ranges = scene.wide.level_ranges();
        CpuEngine {
            backend,
            scene,
            camera,
            width,
            height,
            seed,
            max_bounces,
            sample: 0,
            shard: Shard::whole(pixels as u64),
            paths: Paths::new(pixels),
            claims: Claims::new(pixels),
            sum: vec![[0.0; 4]; pixels],
            held: Vec::new(),
            rgba: vec![[0; 4]; pixels],
            clock: HostClock::default(),
            work: None,
            wide_ranges,
        }
    }

    /// The closest-hit key of each of the shard's paths as the last ray
    /// traversal left it: tests compare traversals with it.
    pub fn hits(&self) -> Vec<u64> {
        self.paths.hit[..self.shard.count as usize].iter().map(|h| h.load(Relaxed)).collect()
    }

    /// The per-pixel sums of the whole image (RGBA, A = samples), in place.
    pub fn sums(&self) -> &[[f32; 4]] {
        &self.sum
    }

    /// The sums for writing: a split-frame driver moves the sums of pixels
    /// that change owner between engines (copied to the new owner, zeroed at
    /// the old one so that the engines' sums still add up to the image).
    pub fn sums_mut(&mut self) -> &mut [[f32; 4]] {
        &mut self.sum
    }

    /// The sums and the held sums, which a split by samples keeps its band of
    /// the running image in while the sums take each round's sample (made
    /// image-sized, zero, on first use).
    pub fn sums_and_held(&mut self) -> (&mut [[f32; 4]], &mut [[f32; 4]]) {
        if self.held.len() != self.sum.len() {
            self.held = vec![[0.0; 4]; self.sum.len()];
        }
        (&mut self.sum, &mut self.held)
    }
}

/// Every path's state for writing, in path order, without locks: each item
/// borrows a different index of every field.
fn paths_mut(p: &mut Paths) -> impl IndexedParallelIterator<Item = PathMut<'_>> {
    let fields = (
        p.origin.par_iter_mut(),
        p.dir.par_iter_mut(),
        p.throughput.par_iter_mut(),
        p.radiance.par_iter_mut(),
        p.hit.par_iter(),
        p.shadow_dir.par_iter_mut(),
        p.shadow_radiance.par_iter_mut(),
        p.occluded.par_iter(),
        p.flags.par_iter_mut(),
    );
    fields.into_par_iter().map(
        |(origin, dir, throughput, radiance, hit, shadow_dir, shadow_radiance, occluded, flags)| PathMut {
            origin,
            dir,
            throughput,
            radiance,
            hit,
            shadow_dir,
            shadow_radiance,
            occluded,
            flags,
        },
    )
}

/// Who holds each path's state during a stage that writes it through a queue.
///
/// A queue names every live path once (the camera writes each pixel once, and
/// compaction only drops entries), so on the GPU each thread
/// writes its path's state without locks. The engine's methods are safe and
/// take any queue, though, so rather than trust it, each entry claims its path
/// with one atomic swap of the stage's epoch: a path named twice is an error,
/// never two writers.
struct Claims {
    stamp: Vec<AtomicU32>,
    epoch: u32,
}

impl Claims {
    fn new(paths: usize) -> Self {
        Claims { stamp: (0..paths).map(|_| AtomicU32::new(0)).collect(), epoch: 0 }
    }
}

/// Raw pointers to the path state, handed out one path at a time by [`Claims`].
struct PathsView<'a> {
    origin: *mut Vec4,
    dir: *mut Vec4,
    throughput: *mut Vec4,
    radiance: *mut Vec4,
    hit: &'a [AtomicU64],
    shadow_dir: *mut Vec4,
    shadow_radiance: *mut Vec4,
    occluded: &'a [AtomicU32],
    flags: *mut u32,
    stamp: &'a [AtomicU32],
    epoch: u32,
    /// The shard's path count: slots past it (kept from a larger shard) hold no path of this frame.
    paths: usize,
    _paths: PhantomData<&'a mut Paths>,
}

// SAFETY: the pointers come from an exclusive borrow of the `Paths` held for
// 'a, and `claim` gives each slot to one caller only.
unsafe impl Send for PathsView<'_> {}
unsafe impl Sync for PathsView<'_> {}

impl<'a> PathsView<'a> {
    /// Opens a new epoch: each of the first `paths` paths can be claimed once until the view drops.
    fn new(p: &'a mut Paths, claims: &'a mut Claims, paths: usize) -> Self {
        claims.epoch = claims.epoch.wrapping_add(1);
        if claims.epoch == 0 {
            // After 2^32 stages: clear the stamps so no old one equals the new epoch.
            claims.stamp.iter_mut().for_each(|s| *s.get_mut() = 0);
            claims.epoch = 1;
        }
        PathsView {
            origin: p.origin.as_mut_ptr(),
            dir: p.dir.as_mut_ptr(),
            throughput: p.throughput.as_mut_ptr(),
            radiance: p.radiance.as_mut_ptr(),
            hit: &p.hit,
            shadow_dir: p.shadow_dir.as_mut_ptr(),
            shadow_radiance: p.shadow_radiance.as_mut_ptr(),
            occluded: &p.occluded,
            flags: p.flags.as_mut_ptr(),
            stamp: &claims.stamp,
            epoch: claims.epoch,
            paths: paths.min(claims.stamp.len()),
            _paths: PhantomData,
        }
    }

    /// The state of `path`, or an error if it is out of range or was claimed
    /// already in this view.
    fn claim(&self, path: u32) -> TraceResult<PathMut<'_>> {
        let i = path as usize;
        // Only atomicity matters here: of two swaps on one stamp, exactly one
        // sees the old epoch. The data itself is ordered by rayon's joins.
        if i >= self.paths || self.stamp[i].swap(self.epoch, Relaxed) == self.epoch {
            return Err(TraceError::Compaction(Error::Backend(format!(
                "a queue names path {path} twice, or a path past the last of {}: the stage that wrote it \
                 (the camera or a compaction) broke the queue",
                self.paths
            ))));
        }
        // SAFETY: every field holds `stamp.len()` >= `self.paths` elements, so `i` is in bounds; the swap above
        // succeeds once per path and view, so these are the only references to slot `i` while the
        // view (which holds the exclusive borrow of the fields) lives.
        unsafe {
            Ok(PathMut {
                origin: &mut *self.origin.add(i),
                dir: &mut *self.dir.add(i),
                throughput: &mut *self.throughput.add(i),
                radiance: &mut *self.radiance.add(i),
                hit: &self.hit[i],
                shadow_dir: &mut *self.shadow_dir.add(i),
                shadow_radiance: &mut *self.shadow_radiance.add(i),
                occluded: &self.occluded[i],
                flags: &mut *self.flags.add(i),
            })
        }
    }
}

/// A buffer the caller sized too small for the stage.
fn too_short(what: &'static str, expected: usize, actual: usize) -> TraceError {
    TraceError::Compaction(Error::LengthMismatch { what, expected: expected as u64, actual: actual as u64 })
}

/// How many items a stage over a queue or frontier reads: the length word,
/// clamped to the buffer's capacity (as the kernels clamp it).
fn n_of(words: &[u64], word: u64, capacity: usize) -> usize {
    words.get(word as usize).copied().unwrap_or(0).min(capacity as u64) as usize
}

/// Every word a stage names must exist.
fn check_words(words: &[u64], at: &[u64]) -> TraceResult<()> {
    match at.iter().find(|&&w| w as usize >= words.len()) {
        Some(&w) => Err(too_short("frame words", w as usize + 1, words.len())),
        None => Ok(()),
    }
}

impl Engine for CpuEngine {
    type B = CpuBackend;
    type Clock = HostClock<StageId>;

    fn backend(&self) -> &CpuBackend {
        &self.backend
    }

    fn image_pixels(&self) -> u64 {
        self.width as u64 * self.height as u64
    }

    fn shard(&self) -> Shard {
        self.shard
    }

    fn set_shard(&mut self, shard: Shard) -> TraceResult<()> {
        shard.check(self.image_pixels())?;
        let count = shard.count as usize;
        if self.paths.origin.len() < count {
            // Rewritten by the camera every frame: nothing to keep.
            self.paths = Paths::new(count);
            self.claims = Claims::new(count);
        }
        self.shard = shard;
        Ok(())
    }

    fn bvh_depth(&self) -> u32 {
        self.scene.depth
    }

    fn wide_ranges(&self) -> &[(u32, u32)] {
        &self.wide_ranges
    }

    fn group_split(
        &mut self,
        algorithm: crate::compaction::Algorithm,
        input: &Vec<u64>,
        split: crate::frontier::GroupSplit,
        output: &mut Vec<u64>,
        lens: crate::compaction::Lens<'_, CpuBackend>,
    ) -> TraceResult<()> {
        let first: &(dyn Fn(&u64) -> bool + Sync) = &move |item: &u64| split.first(*item);
        let keep = crate::compaction::Keep::Predicate(first);
        crate::compaction::Backend::partition_counted(&self.backend, algorithm, input, keep, output, lens)?;
        Ok(())
    }

    fn wide_depth(&self) -> u32 {
        self.scene.wide.depth
    }

    /// The CPU twin of the GPU's fused sites (`compaction::cpu::site`).
    fn fuses(&self, algorithm: crate::compaction::Algorithm) -> bool {
        crate::compaction::BackendKind::Cpu.fuses(algorithm)
    }

    fn memory_limit(&self) -> TraceResult<crate::memory::Limit> {
        Ok(crate::memory::Limit::host())
    }

    fn work(&mut self) -> &mut Option<Work<Self>> {
        &mut self.work
    }

    fn clock(&mut self) -> &mut HostClock<StageId> {
        &mut self.clock
    }

    fn begin_frame(&mut self, words: &mut Vec<u64>, sample: u32, _key: u64) -> TraceResult<Option<FramePath>> {
        self.sample = sample;
        self.clock.clear();
        words.fill(0);
        Ok(None)
    }

    fn end_frame(&mut self, words: &Vec<u64>) -> TraceResult<Option<FrameEnd>> {
        Ok(Some((self.clock.take(), words.clone())))
    }

    fn camera(&mut self, queue: &mut Vec<u32>, words: &mut Vec<u64>, queue_len: u64) -> TraceResult<()> {
        // u32 as the kernel's arguments: set_shard keeps the shard inside the image, below 2^32 pixels.
        let (base, count) = (self.shard.base as u32, self.shard.count as usize);
        if queue.len() < count {
            return Err(too_short("camera queue", count, queue.len()));
        }
        check_words(words, &[queue_len])?;
        let (cam, width, height, seed, sample) = (&self.camera, self.width, self.height, self.seed, self.sample);
        paths_mut(&mut self.paths).zip(&mut queue[..count]).enumerate().for_each(|(i, (p, q))| {
            trace_camera(p, cam, width, height, base, sample, seed, i as u32);
            *q = i as u32;
        });
        words[queue_len as usize] = count as u64;
        Ok(())
    }

    fn depth_first(&mut self, queue: &Vec<u32>, words: &Vec<u64>, run: DepthFirst) -> TraceResult<()> {
        let DepthFirst { shadow, queue_len, bvh } = run;
        let n = n_of(words, queue_len, queue.len());
        let (s, p) = (&self.scene, &self.paths);
        let trace = match bvh {
            BvhKind::Binary => trace_depth_first,
            BvhKind::Wide => crate::trace::wide::trace_depth_first_wide,
        };
        queue[..n].par_iter().for_each_init(Vec::new, |stack, &path| {
            if path != DEAD32 {
                trace(s, p, path, shadow, stack);
            }
        });
        Ok(())
    }

    fn frontier_init(&mut self, step: Step<'_, CpuBackend, u32>, run: FrontierRun) -> TraceResult<()> {
        self.bf_init(step, run)
    }

    fn expand(&mut self, step: Step<'_, CpuBackend>, run: FrontierRun) -> TraceResult<()> {
        self.bf_expand(step, run)
    }

    fn shade(&mut self, queue: &Vec<u32>, next: &mut Vec<u32>, words: &mut Vec<u64>, s: Shading) -> TraceResult<()> {
        let Shading { sample, bounce, estimator, queue_len, counts, next_len, fuse } = s;
        check_words(words, &[queue_len, counts.alive, counts.shadow, next_len])?;
        let n = n_of(words, queue_len, queue.len());
        if next.len() < n {
            return Err(too_short("next queue", n, next.len()));
        }
        let (s, seed, max_bounces, base) = (&self.scene, self.seed, self.max_bounces, self.shard.base as u32);
        let view = PathsView::new(&mut self.paths, &mut self.claims, self.shard.count as usize);
        if let Some(alg) = fuse {
            // The fused path site (twin of trace_shade's): only the live paths go to `next`, compacted.
            use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
            let (alive, shadows) = (AtomicU64::new(0), AtomicU64::new(0));
            // The first claim that failed (a path queued twice): the error the separate path returns.
            let failed = std::sync::Mutex::new(None);
            let shade = |i: u64, emit: &mut crate::compaction::cpu::site::Emit<'_, u32>| {
                let path = queue[i as usize];
                if path == DEAD32 {
                    return;
                }
                let claim = match view.claim(path) {
                    Ok(c) => c,
                    Err(e) => {
                        failed.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                        return;
                    }
                };
                let r = shade_one(s, claim, path, sample, bounce, max_bounces, estimator, seed, base);
                alive.fetch_add(r.alive as u64, Relaxed);
                shadows.fetch_add(r.shadow as u64, Relaxed);
                if r.alive {
                    emit.push(path);
                }
            };
            let site = crate::compaction::cpu::site::CpuSite::new(&self.backend, alg, true)?;
            let candidates = crate::compaction::cpu::site::Candidates { per_item: 1, dead: DEAD32 };
            let report = site.produce(&self.backend, n as u64, candidates, &shade, next)?;
            if let Some(e) = failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
                return Err(e);
            }
            words[next_len as usize] = crate::compaction::Report::count(&report)?;
            words[counts.alive as usize] += alive.into_inner();
            words[counts.shadow as usize] += shadows.into_inner();
            return Ok(());
        }
        let (alive, shadows) = queue[..n]
            .par_iter()
            .zip(next[..n].par_iter_mut())
            .map(|(&path, next)| {
                let mut r = Shaded::default();
                if path != DEAD32 {
                    r = shade_one(s, view.claim(path)?, path, sample, bounce, max_bounces, estimator, seed, base);
                }
                *next = if r.alive { path } else { DEAD32 };
                Ok::<_, TraceError>((r.alive as u64, r.shadow as u64))
            })
            .try_reduce(|| (0, 0), |a, b| Ok((a.0 + b.0, a.1 + b.1)))?;
        words[counts.alive as usize] += alive;
        words[counts.shadow as usize] += shadows;
        Ok(())
    }

    fn nee(&mut self, queue: &Vec<u32>, words: &Vec<u64>, queue_len: u64) -> TraceResult<()> {
        let n = n_of(words, queue_len, queue.len());
        let view = PathsView::new(&mut self.paths, &mut self.claims, self.shard.count as usize);
        queue[..n].par_iter().filter(|&&path| path != DEAD32).try_for_each(|&path| {
            trace_nee(view.claim(path)?);
            Ok(())
        })
    }

    fn accumulate(&mut self, words: &Vec<u64>) -> TraceResult<()> {
        // A failed frame is redone or reported, never summed.
        if !host::ok(words) {
            return Ok(());
        }
        let (base, count) = (self.shard.base as usize, self.shard.count as usize);
        let sums = &mut self.sum[base..base + count];
        sums.par_iter_mut().zip(&self.paths.radiance[..count]).for_each(|(sum, &l)| trace_accumulate(sum, l));
        Ok(())
    }

    fn reset(&mut self) -> TraceResult<()> {
        self.sum.fill([0.0; 4]);
        Ok(())
    }

    fn set_camera(&mut self, camera: CameraLayout) {
        self.camera = camera;
    }

    fn image(&self) -> TraceResult<Vec<[f32; 4]>> {
        Ok(self.sum.clone())
    }

    fn rgba8(&mut self) -> TraceResult<&[[u8; 4]]> {
        tonemap(&self.sum, &mut self.rgba);
        Ok(&self.rgba)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Compaction, DESCEND, Estimator, RenderSettings, ShadeWords, Traversal, render};

    /// A depth-first traversal of the test queue's binary BVH.
    pub(super) fn depth_first(shadow: bool) -> DepthFirst {
        DepthFirst { shadow, queue_len: Q, bvh: BvhKind::Binary }
    }

    pub(super) fn engine(scene: &str, width: u32, height: u32, max_bounces: u32) -> CpuEngine {
        let scene = crate::scene::builtin(scene).expect("a built-in scene loads");
        let bvh = crate::bvh::build(&scene.triangles);
        let packed = Packed::new(&scene, &bvh);
        let camera = CameraLayout::new(&scene.camera, width, height);
        CpuEngine::new(CpuBackend::new(), packed, camera, width, height, SEED, max_bounces)
    }

    const SEED: u32 = 7;
    /// Test words of a queue's length and of shading's counts (0 and 1 are the status's).
    pub(super) const Q: u64 = 2;
    /// A bounce's shading of sample 0 into the test words.
    pub(super) fn shading(bounce: u32) -> Shading {
        let counts = ShadeWords { alive: 3, shadow: 4 };
        Shading { sample: 0, bounce, estimator: Estimator::Mis, queue_len: Q, counts, next_len: Q, fuse: None }
    }

    pub(super) fn settings(
        width: u32,
        height: u32,
        spp: u32,
        max_bounces: u32,
        traversal: Traversal,
    ) -> RenderSettings {
        RenderSettings {
            width,
            height,
            spp,
            max_bounces,
            estimator: Estimator::Mis,
            traversal,
            compact_paths: Compaction::None,
            compact_frontier: Compaction::None,
            seed: SEED,
            first_sample: 0,
            max_frontier: 1 << 26,
            descend: DESCEND,
            block_levels: crate::trace::BlockLevels::Auto,
            group_levels: 0,
            bvh: BvhKind::Binary,
            fusion: Default::default(),
        }
    }

    pub(super) fn compaction(name: &str) -> Compaction {
        Compaction::parse(name, &CpuBackend::new(), "test").expect("a catalog algorithm")
    }

    /// Per-pixel mean radiance (sum / samples).
    fn means(image: &[[f32; 4]]) -> Vec<[f32; 3]> {
        image.iter().map(|p| [p[0] / p[3], p[1] / p[3], p[2] / p[3]]).collect()
    }

    /// A diffuse sphere of albedo 1 under a sky of 1 and no light: every path
    /// ends in the sky with weight 1, so every pixel must come out 1.
    #[test]
    fn furnace_renders_one_in_every_pixel() {
        for traversal in Traversal::ALL {
            let mut e = engine("furnace", 32, 32, 16);
            let s = RenderSettings {
                compact_paths: compaction("lookback"),
                compact_frontier: compaction("lookback"),
                ..settings(32, 32, 64, 16, traversal)
            };
            render(&mut e, &s, |_| {}).expect("furnace renders");
            let image = e.image().expect("the image reads back");
            assert!(image.iter().all(|p| p[3] == 64.0), "{traversal:?}: every pixel got 64 samples");
            let m = means(&image);
            let avg = m.iter().flatten().sum::<f32>() / (3 * m.len()) as f32;
            assert!((avg - 1.0).abs() < 1e-3, "{traversal:?}: mean radiance {avg}, expected 1");
            // The sphere is convex and its albedo exactly 1: no path may lose or gain energy.
            let worst = m.iter().flatten().map(|v| (v - 1.0).abs()).fold(0.0f32, f32::max);
            assert!(worst < 1e-3, "{traversal:?}: a pixel is off 1 by {worst}");
        }
    }

    /// A render's image as bits, and each frame's (alive, shadow rays) per bounce.
    pub(super) type Rendered = (Vec<[u32; 4]>, Vec<(Vec<u64>, Vec<u64>)>);

    pub(super) fn render_bits(s: &RenderSettings) -> Rendered {
        render_scene_bits("cornell", s)
    }

    pub(super) fn render_scene_bits(scene: &str, s: &RenderSettings) -> Rendered {
        let mut e = engine(scene, s.width, s.height, s.max_bounces);
        let frames = render(&mut e, s, |_| {}).expect("the scene renders");
        let image = e.image().expect("the image reads back");
        let bits = image.iter().map(|p| p.map(f32::to_bits)).collect();
        (bits, frames.into_iter().map(|f| (f.alive, f.shadow_rays)).collect())
    }

    /// Random numbers depend on (pixel, sample, bounce) and hits merge by an
    /// order-free minimum, so neither the compaction algorithm (stable or not)
    /// nor the traversal may change a single bit of the image.
    #[test]
    fn every_compaction_algorithm_renders_the_same_image() {
        let backend = CpuBackend::new();
        let mut reference = None;
        for bvh in BvhKind::ALL {
            for traversal in Traversal::ALL {
                for name in Compaction::choices(&backend) {
                    let c = compaction(name);
                    let s = RenderSettings {
                        compact_paths: c,
                        compact_frontier: c,
                        bvh,
                        ..settings(32, 32, 4, 8, traversal)
                    };
                    let got = render_bits(&s);
                    let what = format!("{traversal:?} on the {} BVH with {name}", bvh.name());
                    match &reference {
                        None => reference = Some((got, what)),
                        Some((want, first)) => {
                            assert!(got.0 == want.0, "{what} renders another image than {first}");
                            assert_eq!(got.1, want.1, "{what}: other per-bounce counts than {first}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn cornell_box_is_lit() {
        let mut e = engine("cornell", 32, 32, 8);
        let frames = render(&mut e, &settings(32, 32, 4, 8, Traversal::DepthFirst), |_| {}).expect("cornell renders");
        let m = means(&e.image().expect("the image reads back"));
        assert!(m.iter().flatten().all(|v| v.is_finite() && *v >= 0.0), "radiance must be finite and non-negative");
        let avg = m.iter().flatten().sum::<f32>() / (3 * m.len()) as f32;
        assert!(avg > 0.01, "the Cornell box comes out black (mean {avg})");
        let f = &frames[0];
        assert_eq!(f.queue[0], 32 * 32);
        assert!(f.shadow_rays[0] > 0 && f.alive[0] > 0 && f.rays > f.queue[0], "{f:?}");
    }

    /// The per-path stages write without locks; a queue naming a path twice
    /// must be refused, not become two writers of one path.
    #[test]
    fn a_queue_naming_a_path_twice_is_an_error_not_a_race() {
        let mut e = engine("cornell", 8, 8, 4);
        let mut queue = vec![0; 64];
        let mut words = vec![0; 8];
        e.camera(&mut queue, &mut words, Q).expect("camera");
        e.depth_first(&queue, &words, depth_first(false)).expect("depth-first");
        queue[5] = 3;
        let mut next = vec![0; 64];
        assert!(e.shade(&queue, &mut next, &mut words, shading(0)).is_err());
        let two = vec![0, 0, 2];
        assert!(e.nee(&[DEAD32, 64].to_vec(), &two, Q).is_err(), "a path id past the last pixel");
        // A fresh stage accepts every path again.
        queue[5] = 5;
        e.shade(&queue, &mut next, &mut words, shading(0)).expect("a queue of distinct paths shades");
    }
}
