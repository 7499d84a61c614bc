//! What a render is asked for: the traversal, the BVH, the block and
//! descent levels, and the settings a frame runs with (checked before any
//! memory is taken), and what a GPU engine is made from. Split from `mod.rs`,
//! which holds the frame itself.

use super::*;

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
        parse_named(&Traversal::ALL, Traversal::name, "traversal", s)
    }
}

/// Which BVH the traversals walk (issue 28). Both hold the same triangles in
/// the same order, so both find the same hits, bit for bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BvhKind {
    /// Two children per node: one box test per node, descend levels per breadth-first expansion.
    #[default]
    Binary,
    /// Eight quantized children per 80-byte node ([`crate::bvh::wide`]): a breadth-first expansion
    /// tests one node's children and emits up to eight.
    Wide,
}

impl BvhKind {
    pub const ALL: [BvhKind; 2] = [BvhKind::Binary, BvhKind::Wide];
    pub fn name(self) -> &'static str {
        match self {
            BvhKind::Binary => "binary",
            BvhKind::Wide => "wide",
        }
    }
    /// Slots one breadth-first expansion writes per item: 2^descend, or one wide node's eight.
    pub fn fan(self, descend: u32) -> u64 {
        match self {
            BvhKind::Binary => 1 << descend,
            BvhKind::Wide => crate::bvh::wide::WIDTH as u64,
        }
    }
}

impl std::fmt::Display for BvhKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for BvhKind {
    type Err = TraceError;
    fn from_str(s: &str) -> TraceResult<Self> {
        parse_named(&BvhKind::ALL, BvhKind::name, "BVH kind", s)
    }
}

/// The choice of `all` named `s`, else an error that lists every name
/// ("use a, b or c"): the tracer's typed choices parse alike.
pub(super) fn parse_named<T: Copy>(all: &[T], name: fn(T) -> &'static str, what: &str, s: &str) -> TraceResult<T> {
    all.iter().copied().find(|t| name(*t) == s).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|t| name(*t)).collect();
        let list = match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(""),
        };
        TraceError::Settings(format!("unknown {what} `{s}`: use {list}"))
    })
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct RenderSettings {
    pub width: u32,
    pub height: u32,
    /// Samples per pixel: one wavefront frame each.
    pub spp: u32,
    /// Scattering vertices per path, as pbrt-v4's maxdepth: each of the N
    /// gets next-event estimation, and the ray leaving the N-th is still
    /// traced for the emitter or environment it finds, so a frame runs N + 1
    /// trace-and-shade stages.
    pub max_bounces: u32,
    /// How direct light is estimated at diffuse and glossy vertices.
    pub estimator: Estimator,
    pub traversal: Traversal,
    pub compact_paths: Compaction,
    pub compact_frontier: Compaction,
    pub seed: u32,
    /// The first frame's sample index: a progressive viewer continues where it left off.
    pub first_sample: u32,
    /// The most frontier items a level may hold (the `none` baseline grows without bound).
    pub max_frontier: u64,
    /// BVH levels one breadth-first expansion descends (fan-out 2^descend); the wide BVH's
    /// expansions descend one wide level (fan-out 8) and ignore it.
    pub descend: u32,
    /// The BVH both traversals walk.
    pub bvh: BvhKind,
    /// Whether the compaction sites may fuse into their producers
    /// (single-pass algorithms on a backend with fused sites).
    pub fusion: Fusion,
    /// Wide levels one breadth-first step descends while its block keeps the rays.
    pub block_levels: BlockLevels,
    /// Breadth-first levels 1..=N of each run sorted by node before their
    /// expansion (0: none; [`frontier::Grouping`]), on the wide BVH.
    pub group_levels: u32,
}

/// Wide BVH levels one breadth-first step descends per tile of frontier
/// items, the tile's rays loaded once and kept by its block across them
/// (issue 47; wavefront.cu `trace_bf_expand_wide`, wide.rs `trace_bf_wide_tile`).
/// One level is the classic expansion, every level through the compaction;
/// more read each ray once per step instead of once per level. `Auto` is
/// [`BLOCK_LEVELS`] where the backend has the block step (CPU, CUDA) and one
/// level on wgpu. The binary BVH's expansions take `--descend` instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockLevels {
    #[default]
    Auto,
    Levels(u32),
    /// Until the tile's items are done, or so many that they must go out.
    All,
}

/// The most wide levels `--block-levels K` takes (`all` has no bound).
pub const MAX_BLOCK_LEVELS: u32 = 64;

/// [`BlockLevels::Auto`] on the backends with the block step: one level
/// (measured on an H200, docs/render/bf-block-h200).
pub const BLOCK_LEVELS: BlockLevels = BlockLevels::Levels(1);

impl BlockLevels {
    /// The levels a step descends on a backend (`has_block_step`: CPU, CUDA),
    /// as the kernels take them (`u32::MAX`: all); an error where the
    /// backend has only the one-level expansion and more were asked for.
    pub fn resolve(self, has_block_step: bool) -> TraceResult<u32> {
        let levels = match self {
            BlockLevels::Auto if has_block_step => return BLOCK_LEVELS.resolve(true),
            BlockLevels::Auto => 1,
            BlockLevels::Levels(k) => k,
            BlockLevels::All => u32::MAX,
        };
        if levels > 1 && !has_block_step {
            return Err(TraceError::Settings(format!(
                "--block-levels {self}: this backend's breadth-first expansion descends one wide level per \
                 step (the block step runs on the CPU and CUDA); use --block-levels 1 or auto"
            )));
        }
        Ok(levels)
    }
}

impl std::fmt::Display for BlockLevels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BlockLevels::Auto => f.write_str("auto"),
            BlockLevels::Levels(k) => write!(f, "{k}"),
            BlockLevels::All => f.write_str("all"),
        }
    }
}

impl std::str::FromStr for BlockLevels {
    type Err = TraceError;
    fn from_str(s: &str) -> TraceResult<Self> {
        match s {
            "auto" => Ok(BlockLevels::Auto),
            "all" => Ok(BlockLevels::All),
            _ => match s.parse::<u32>() {
                Ok(k) if (1..=MAX_BLOCK_LEVELS).contains(&k) => Ok(BlockLevels::Levels(k)),
                _ => Err(TraceError::Settings(format!(
                    "--block-levels `{s}`: use auto, all, or a number of wide levels from 1 to {MAX_BLOCK_LEVELS}"
                ))),
            },
        }
    }
}

/// The default of [`RenderSettings::descend`]: 2 levels, fan-out 4. Measured
/// on an H100 (sphereflake 1920x1080, 8 bounces, `lookback`; README): k = 1..5
/// gave 303, 370, 332, 216, 153 Mrays/s by wall clock. Deeper descents halve
/// the levels but write 2^k slots per item, most of them dead, which the
/// compaction then reads.
pub const DESCEND: u32 = 2;
/// The default of [`RenderSettings::bvh`] (`--bvh`): the wide BVH, faster for
/// both traversals on an H100 (`reap bench render`, 1920x1080, 8 bounces,
/// `lookback` fused; docs/render): sphereflake depth-first 1525.1 against
/// 1065.2 Mrays/s, breadth-first 953.8 against 465.6; cornell 4287.6 against
/// 3965.5 and 2949.0 against 2151.3.
pub const BVH: BvhKind = BvhKind::Wide;

/// The deepest descent per expansion (wavefront.cu `DESCEND_STACK` holds it).
pub const MAX_DESCEND: u32 = 5;

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
        if self.descend == 0 || self.descend > MAX_DESCEND {
            return bad("--descend must be between 1 and 5");
        }
        if self.group_levels > frontier::MAX_GROUPED as u32 {
            return bad("--group-levels must be between 0 and 8");
        }
        if self.group_levels > 0 && self.traversal == Traversal::BreadthFirst {
            if self.bvh != BvhKind::Wide {
                return bad("--group-levels groups the wide BVH's levels: add --bvh wide");
            }
            if !matches!(self.block_levels, BlockLevels::Auto | BlockLevels::Levels(1)) {
                return bad("--group-levels sorts one wide level a step: use --block-levels 1");
            }
            match self.compact_frontier {
                Compaction::With(a) if a.stable() => {}
                _ => {
                    return bad("--group-levels sorts a level by stable splits of the frontier's algorithm: give \
                         --compact-frontier a stable one (lookback, chained, blelloch, ...)");
                }
            }
        }
        Ok(())
    }
    pub fn pixels(&self) -> u64 {
        self.width as u64 * self.height as u64
    }
    /// Slots one breadth-first expansion writes per item.
    pub fn fan(&self) -> u64 {
        self.bvh.fan(self.descend)
    }
    /// Refuses an image whose per-pixel buffers do not fit `host` memory
    /// (the breadth-first frontier is sized, and checked, per frame).
    pub fn check_memory(&self, backend: BackendKind, host: Limit) -> TraceResult<()> {
        let per_pixel = match backend {
            BackendKind::Cpu => IMAGE_HOST_BYTES + PATH_HOST_BYTES,
            BackendKind::Cuda | BackendKind::Wgpu => IMAGE_HOST_BYTES,
        };
        let what = format!("an image of {}x{} pixels", self.width, self.height);
        memory::check(what, memory::times(self.pixels(), per_pixel), host, "lower --width and --height")?;
        Ok(())
    }
}

/// What a GPU engine is made for: the scene, the camera, the image's size
/// and the paths' seed and length. Both GPU engines' `new` take it, so a
/// caller describes the render once whichever backend traces it.
#[derive(Clone, Copy, Debug)]
pub struct EngineSetup<'a> {
    pub packed: &'a layout::Packed,
    pub camera: layout::CameraLayout,
    pub width: u32,
    pub height: u32,
    pub seed: u32,
    pub max_bounces: u32,
}

impl EngineSetup<'_> {
    pub fn pixels(&self) -> u64 {
        self.width as u64 * self.height as u64
    }
}

/// Host bytes per pixel on every backend: the running sum ([f32; 4]), the
/// 8-bit RGBA the PNG is written from, and its encoder's copy.
pub const IMAGE_HOST_BYTES: u64 = 16 + 4 + 4;
/// Host bytes per pixel the CPU engine adds: the path state (six Vec4, a u64
/// hit, two u32), the claim stamps and the two u32 queues.
pub const PATH_HOST_BYTES: u64 = 6 * 16 + 8 + 2 * 4 + 4 + 2 * 4;
