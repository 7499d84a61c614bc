//! What the two GPU engines (`cuda.rs`, `wgpu.rs`) keep and check alike on
//! the host: the image and shard they trace, the scene's depths, and the
//! checks each stage makes before its launch. Their kernels, shaders and
//! launches stay twins; this is the host logic that was the same on both,
//! written once so that a rule changed for one holds for the other.

use crate::compaction::Backend;
use crate::frontier::Step;
use crate::trace::{BvhKind, DepthFirst, EngineSetup, FrontierRun, MAX_DESCEND, Shard, TraceError, TraceResult};

/// wavefront.cu and wavefront.wgsl `STACK`: keep in sync.
pub(crate) const STACK: u32 = 64;
/// wavefront.cu and wide.wgsl `WIDE_STACK`, groups of children the wide
/// depth-first stack holds: keep in sync.
pub(crate) const WIDE_STACK: u32 = 32;

/// How a backend's kernels index the frame's words and the frontier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Indices {
    /// CUDA's kernels.
    #[cfg(feature = "cuda")]
    U64,
    /// WGSL has no u64 index: a word is two u32s, so its index stays below 2^31.
    #[cfg(feature = "wgpu")]
    U32,
}

impl Indices {
    /// The first word index the kernels cannot reach.
    fn words(self) -> u64 {
        match self {
            #[cfg(feature = "cuda")]
            Indices::U64 => u64::MAX,
            #[cfg(feature = "wgpu")]
            Indices::U32 => u32::MAX as u64 / 2,
        }
    }
    /// The largest buffer capacity the kernels index.
    fn capacity(self) -> u64 {
        match self {
            #[cfg(feature = "cuda")]
            Indices::U64 => u64::MAX,
            #[cfg(feature = "wgpu")]
            Indices::U32 => u32::MAX as u64,
        }
    }
}

/// A GPU engine's image, shard and scene depths, and its stages' checks.
pub(crate) struct GpuState {
    pub width: u32,
    pub height: u32,
    pub seed: u32,
    pub max_bounces: u32,
    /// Levels of the binary BVH.
    pub depth: u32,
    /// Levels of the 8-wide BVH.
    pub wide_depth: u32,
    /// The wide BVH's node range at each depth (breadth-first grouping sorts within it).
    pub wide_ranges: Vec<(u32, u32)>,
    /// The pixels traced: path i is pixel `shard.base + i`.
    pub shard: Shard,
    /// Paths the path state holds: at least `shard.count` (kept when a shard shrinks).
    pub path_capacity: u64,
    indices: Indices,
}

impl GpuState {
    /// Refuses a scene the kernels cannot trace; the whole image is the first shard.
    pub fn new(setup: &EngineSetup<'_>, indices: Indices) -> TraceResult<Self> {
        setup.packed.check_gpu(STACK)?;
        let pixels = setup.pixels();
        Ok(GpuState {
            width: setup.width,
            height: setup.height,
            seed: setup.seed,
            max_bounces: setup.max_bounces,
            depth: setup.packed.depth,
            wide_depth: setup.packed.wide.depth,
            wide_ranges: setup.packed.wide.level_ranges(),
            shard: Shard::whole(pixels),
            path_capacity: pixels,
            indices,
        })
    }

    pub fn image_pixels(&self) -> u64 {
        self.width as u64 * self.height as u64
    }

    /// The shard as the kernels take it: `set_shard` keeps it inside the
    /// image, below 2^32 pixels, so both fit u32.
    pub fn shard32(&self) -> (u32, u32) {
        (self.shard.base as u32, self.shard.count as u32)
    }

    /// Moves to `shard`: checked against the image first, then, where it
    /// outgrows the path state, `grow` makes state for more paths (an eighth
    /// to spare: a split's bands move by a few rows a frame) and its result
    /// is returned for the engine to keep. A failed `grow` leaves all as it was.
    pub fn set_shard<R>(&mut self, shard: Shard, grow: impl FnOnce(u64) -> TraceResult<R>) -> TraceResult<Option<R>> {
        shard.check(self.image_pixels())?;
        let mut grown = None;
        if shard.count > self.path_capacity {
            let room = (shard.count + shard.count / 8).min(self.image_pixels()).max(shard.count);
            grown = Some(grow(room)?);
            self.path_capacity = room;
        }
        self.shard = shard;
        Ok(grown)
    }

    /// The words a stage names must lie in the frame's word buffer, where the kernels reach them.
    pub fn check_words<B: Backend>(&self, b: &B, words: &B::Buffer<u64>, at: &[u64]) -> TraceResult<()> {
        match at.iter().find(|&&w| w >= b.len(words) || w >= self.indices.words()) {
            Some(&w) => Err(TraceError::Compaction(crate::compaction::Error::LengthMismatch {
                what: "frame words",
                expected: w + 1,
                actual: b.len(words),
            })),
            None => Ok(()),
        }
    }

    /// The camera stage's checks (its length word, a queue slot per pixel of
    /// the shard); returns the shard as [`GpuState::shard32`] gives it.
    pub fn camera<B: Backend>(
        &self,
        b: &B,
        queue: &B::Buffer<u32>,
        words: &B::Buffer<u64>,
        queue_len: u64,
    ) -> TraceResult<(u32, u32)> {
        self.check_words(b, words, &[queue_len])?;
        if b.len(queue) < self.shard.count {
            return Err(TraceError::Settings("the camera's queue holds fewer entries than the shard's pixels".into()));
        }
        Ok(self.shard32())
    }

    /// Depth-first's checks: its length word, and for the wide BVH a stack
    /// that holds one group of children per level.
    pub fn depth_first<B: Backend>(&self, b: &B, words: &B::Buffer<u64>, run: &DepthFirst) -> TraceResult<()> {
        self.check_words(b, words, &[run.queue_len])?;
        if run.bvh == BvhKind::Wide && self.wide_depth > WIDE_STACK {
            return Err(TraceError::Settings(format!(
                "the 8-wide BVH is {} levels deep and the GPU's depth-first stack holds {WIDE_STACK}: \
                 use --bvh binary or --traversal breadth-first",
                self.wide_depth
            )));
        }
        Ok(())
    }

    /// Breadth-first init's checks: its level's words, and a frontier of the run's capacity.
    pub fn frontier_init<B: Backend>(&self, b: &B, step: &Step<'_, B, u32>, run: &FrontierRun) -> TraceResult<()> {
        self.check_words(b, step.words, &step.at.words())?;
        if b.len(step.output) < run.capacity {
            return Err(TraceError::Settings("the frontier holds fewer items than its capacity".into()));
        }
        self.check_capacity(run.capacity)
    }

    /// An expansion's checks: its level's words, both frontier buffers of
    /// the run's capacity, a descent the kernels' stack holds.
    pub fn expand<B: Backend>(&self, b: &B, step: &Step<'_, B>, run: &FrontierRun) -> TraceResult<()> {
        self.check_words(b, step.words, &step.at.words())?;
        if b.len(step.input) < run.capacity || b.len(step.output) < run.capacity {
            return Err(TraceError::Settings("a frontier buffer holds fewer items than its capacity".into()));
        }
        if run.descend == 0 || run.descend > MAX_DESCEND {
            return Err(TraceError::Settings(format!("descend {} is outside 1..={MAX_DESCEND}", run.descend)));
        }
        self.check_capacity(run.capacity)
    }

    fn check_capacity(&self, capacity: u64) -> TraceResult<()> {
        if capacity > self.indices.capacity() {
            return Err(TraceError::Settings(format!(
                "a frontier of {capacity} items: this backend's kernels index at most {}",
                self.indices.capacity()
            )));
        }
        Ok(())
    }
}
