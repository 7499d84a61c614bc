//! The GPU collision demo: many rigid spheres and boxes, a linear BVH built
//! every frame, and a breadth-first traversal of (node, node) pairs whose
//! frontier is compacted after every level with the algorithm picked at run
//! time (seed 000 §1: "after each traversal step, the list of open nodes must
//! be pruned of invalid nodes, as otherwise an exponential explosion of nodes
//! takes place").
//!
//! [`frame`] reads like the algorithm: AABBs and Morton codes → radix sort →
//! LBVH (Karras 2012) → bottom-up bounds → pair traversal, level by level →
//! narrow phase → solver → integration. The stages live in an [`Engine`]:
//! `cpu.rs` runs them with rayon, `cuda.rs` launches `kernels/collide/`. Both
//! use the arithmetic of `physics.rs` in the same order (NVRTC compiles
//! without FMA contraction), so one state gives the same contacts on both.
//! The frontier is compacted only through [`Backend::select`].

pub mod bench;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod layout;
pub mod output;
pub mod physics;
pub mod scenario;

pub use crate::compaction::Compaction;
use crate::compaction::{Algorithm, Backend, Element, Keep, Operation, Report};
pub use layout::{Body, Contact, Node, World};
pub use scenario::Scenario;

/// A dead frontier slot. Live slots hold `(a << 32) | b`, two node indices.
pub const DEAD64: u64 = u64::MAX;

#[derive(Debug, thiserror::Error)]
pub enum CollideError {
    #[error(transparent)]
    Compaction(#[from] crate::compaction::Error),
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Gpu(#[from] crate::gpu::Error),
    #[error(transparent)]
    Site(#[from] crate::compaction::SiteError),
    #[error("{0}")]
    Settings(String),
    #[error(
        "the pair frontier would need {items} slots ({gib:.1} GiB) at level {level}: without compaction \
         every pair leaves four slots, dead or alive, and the frontier grows fourfold per level. Pick an \
         algorithm with --compact-pairs, or use fewer bodies"
    )]
    FrontierTooLarge { items: u64, gib: f64, level: u32 },
    #[error("{what} needs {bytes} bytes of GPU memory and the device has {free} free: use fewer bodies")]
    OutOfMemory { what: &'static str, bytes: u64, free: u64 },
    #[error("cannot write {path}: {why}")]
    Output { path: String, why: String },
}

impl From<crate::files::OutputError> for CollideError {
    fn from(e: crate::files::OutputError) -> Self {
        CollideError::Output { path: e.path, why: e.why }
    }
}

pub type CollideResult<T> = std::result::Result<T, CollideError>;

/// How the Morton codes are sorted before the hierarchy is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortMethod {
    /// The library's radix sort by repeated split (seed 000 §5.3), one split
    /// per key bit, with the named algorithm.
    Split(Algorithm),
    /// The fast radix sort: 8-bit digits (CUDA: Satish et al. 2009, local
    /// split sort per tile, then a scatter; CPU: rayon's parallel sort).
    Fast,
}

impl SortMethod {
    pub fn name(self) -> String {
        match self {
            SortMethod::Split(a) => format!("split:{}", a.name()),
            SortMethod::Fast => "fast".into(),
        }
    }

    /// `fast`, or a catalog algorithm that sorts on `backend` (written bare or
    /// as `split:NAME`).
    pub fn parse<B: Backend>(s: &str, backend: &B) -> CollideResult<Self> {
        if s == "fast" {
            return Ok(SortMethod::Fast);
        }
        let name = s.strip_prefix("split:").unwrap_or(s);
        let choices = || Self::choices(backend).join(", ");
        let a: Algorithm = name
            .parse()
            .map_err(|_| CollideError::Settings(format!("--sort: unknown sort `{s}`; use one of: {}", choices())))?;
        if !a.supports(Operation::Sort) || !backend.runs(a) {
            return Err(CollideError::Settings(format!(
                "--sort: `{name}` does not sort on the {} backend; use one of: {}",
                backend.kind().name(),
                choices()
            )));
        }
        Ok(SortMethod::Split(a))
    }

    /// `fast`, then every split sort the backend runs.
    pub fn choices<B: Backend>(backend: &B) -> Vec<String> {
        let algs = Algorithm::ALL.iter().filter(|a| a.supports(Operation::Sort) && backend.runs(**a));
        std::iter::once("fast".to_string()).chain(algs.map(|a| format!("split:{}", a.name()))).collect()
    }
}

impl serde::Serialize for SortMethod {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct CollideSettings {
    pub compact_pairs: Compaction,
    pub sort: SortMethod,
    /// Jacobi iterations of the contact solver per frame.
    pub iterations: u32,
    /// The most slots a frontier level may hold (the `none` baseline grows fourfold per level).
    pub max_frontier: u64,
}

impl CollideSettings {
    pub fn check(&self) -> CollideResult<()> {
        if self.iterations == 0 || self.iterations > 64 {
            return Err(CollideError::Settings("--iterations must be between 1 and 64".into()));
        }
        Ok(())
    }
}

/// Where a stage sits in the frame.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct StageId {
    pub name: &'static str,
    pub level: Option<u32>,
}

impl StageId {
    pub fn frame(name: &'static str) -> Self {
        StageId { name, level: None }
    }
    pub fn level(name: &'static str, level: u32) -> Self {
        StageId { name, level: Some(level) }
    }
    pub fn is_compaction(&self) -> bool {
        self.name == stage::COMPACT_PAIRS
    }
    /// The part of the frame the stage belongs to, for the per-frame breakdown.
    pub fn part(&self) -> Part {
        match self.name {
            stage::CODES | stage::SORT | stage::BUILD | stage::REFIT => Part::Build,
            stage::PAIRS_INIT | stage::EXPAND => Part::Traverse,
            stage::COMPACT_PAIRS => Part::Compact,
            stage::NARROW => Part::Narrow,
            _ => Part::Solve,
        }
    }
}

/// The frame's breakdown: LBVH build, pair traversal, its compaction, narrow
/// phase, solver + integration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    Build,
    Traverse,
    Compact,
    Narrow,
    Solve,
}

impl Part {
    pub const ALL: [Part; 5] = [Part::Build, Part::Traverse, Part::Compact, Part::Narrow, Part::Solve];
    pub fn name(self) -> &'static str {
        match self {
            Part::Build => "build",
            Part::Traverse => "traverse",
            Part::Compact => "compact",
            Part::Narrow => "narrow",
            Part::Solve => "solve",
        }
    }
}

/// Stage names, one list so the reports and the overlay agree.
pub mod stage {
    pub const CODES: &str = "aabb + morton";
    pub const SORT: &str = "sort";
    pub const BUILD: &str = "lbvh";
    pub const REFIT: &str = "bounds";
    pub const PAIRS_INIT: &str = "pairs init";
    pub const EXPAND: &str = "expand level";
    pub const COMPACT_PAIRS: &str = "compact pairs";
    pub const NARROW: &str = "narrow phase";
    pub const SOLVE: &str = "solve";
    pub const INTEGRATE: &str = "integrate";
}

/// One frame as measured.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FrameStats {
    pub frame: u32,
    /// Every stage in order with its time in ms (device events on a GPU).
    pub stages: Vec<(StageId, f64)>,
    /// Slots in the frontier entering each level (dead ones included under `none`).
    pub frontier: Vec<u64>,
    /// Live (overlapping, not leaf-leaf) pairs entering each level.
    pub live: Vec<u64>,
    /// Node pairs whose boxes were tested, summed over the levels.
    pub pairs_tested: u64,
    /// Leaf pairs with overlapping boxes: the broad phase's output.
    pub candidates: u64,
    /// Candidates whose shapes touch: the narrow phase's output.
    pub contacts: u64,
    /// Sum of the stages, ms (device events on a GPU).
    pub frame_ms: f64,
    /// Wall clock, ms: host time from the frame's start until its results
    /// are complete (after `end_frame` has waited for the device).
    pub wall_ms: f64,
}

impl FrameStats {
    pub fn part_ms(&self, part: Part) -> f64 {
        // + 0.0: an empty f64 sum is -0.0, which would print as "-0.000".
        self.stages.iter().filter(|(s, _)| s.part() == part).map(|(_, t)| t).sum::<f64>() + 0.0
    }
    /// LBVH build + breadth-first pair traversal (compaction included): the
    /// issue's 5 ms target.
    pub fn broad_ms(&self) -> f64 {
        self.part_ms(Part::Build) + self.part_ms(Part::Traverse) + self.part_ms(Part::Compact)
    }
}

/// The stages of the collision pipeline on one backend. The engine owns the
/// bodies, the tree, the candidate and contact lists; the driver owns the
/// pair frontier, so that compaction is visible here and nowhere else.
pub trait Engine {
    type B: Backend;
    fn backend(&self) -> &Self::B;
    fn world(&self) -> &World;
    /// Number of bodies.
    fn len(&self) -> u32;
    /// Sets a work buffer's length, growing its allocation when needed.
    fn resize<T: Element>(&self, buffer: &mut Buf<Self, T>, len: u64) -> CollideResult<()>;
    fn alloc<T: Element>(&self, len: u64) -> CollideResult<Buf<Self, T>> {
        Ok(self.backend().alloc(len)?)
    }

    /// Starts a frame: zeroes the counters.
    fn begin_frame(&mut self) -> CollideResult<()>;
    /// Runs `f` as the named stage, timing it.
    fn stage<R>(&mut self, id: StageId, f: impl FnOnce(&mut Self) -> CollideResult<R>) -> CollideResult<R>;
    /// Ends a frame: the stages' times in ms.
    fn end_frame(&mut self) -> CollideResult<Vec<(StageId, f64)>>;

    /// Each body's AABB and the Morton code of its centre (30 bits, world
    /// bounds), with ids = 0..n.
    fn codes(&mut self) -> CollideResult<()>;
    /// Sorts the codes, the ids moving with them.
    fn sort(&mut self, method: SortMethod) -> CollideResult<()>;
    /// Karras 2012: the internal nodes' children and parents from the sorted
    /// codes, in one parallel pass; the leaves' boxes from their bodies.
    fn build(&mut self) -> CollideResult<()>;
    /// The internal nodes' boxes, bottom-up.
    fn refit(&mut self) -> CollideResult<()>;
    /// The frontier becomes [(root, root)] (empty under two bodies); clears
    /// the candidate list.
    fn pairs_init(&mut self, frontier: &mut Buf<Self, u64>) -> CollideResult<()>;
    /// One level: every pair's child pairs whose boxes overlap go to
    /// `out[4i..4i+4]` (dead slots are [`DEAD64`]); leaf-leaf ones go to the
    /// candidate list instead. `out` holds four times the frontier's length.
    fn expand(&mut self, frontier: &Buf<Self, u64>, out: &mut Buf<Self, u64>) -> CollideResult<()>;
    /// Live slots the last `expand` wrote (what `none` ends on).
    fn live(&mut self) -> CollideResult<u64>;
    /// Candidates emitted since `pairs_init` (may exceed the capacity).
    fn candidates(&mut self) -> CollideResult<u64>;
    fn candidate_capacity(&self) -> u64;
    /// Grows the candidate list (and the contact list with it) to hold `n`.
    fn reserve_candidates(&mut self, n: u64) -> CollideResult<()>;
    /// Exact shape tests of the candidates; returns the contacts found.
    fn narrow(&mut self) -> CollideResult<u64>;
    /// Gravity, then `iterations` Jacobi passes over the contacts.
    fn solve(&mut self, iterations: u32) -> CollideResult<()>;
    /// Positions from velocities; walls, floor and drum.
    fn integrate(&mut self) -> CollideResult<()>;

    /// Reading back, for tests, the viewer and the reports.
    fn bodies(&self) -> CollideResult<Vec<Body>>;
    /// Replaces the bodies (same count): a test runs both backends from one state.
    fn set_bodies(&mut self, bodies: &[Body]) -> CollideResult<()>;
    /// The candidate pairs `(a << 32) | b`, a < b body ids, sorted.
    fn candidate_pairs(&self) -> CollideResult<Vec<u64>>;
    /// The contacts, sorted by (a, b).
    fn contact_list(&self) -> CollideResult<Vec<Contact>>;
    /// The hierarchy: n - 1 internal nodes, then n leaves.
    fn nodes(&self) -> CollideResult<Vec<Node>>;
}

/// A buffer of an engine's compaction backend.
pub type Buf<E, T> = <<E as Engine>::B as Backend>::Buffer<T>;

/// The frontier's two buffers, kept across frames.
pub struct Frontier<E: Engine + ?Sized> {
    pairs: Buf<E, u64>,
    expanded: Buf<E, u64>,
}

impl<E: Engine> Frontier<E> {
    pub fn new(e: &E) -> CollideResult<Self> {
        Ok(Frontier { pairs: e.alloc(1)?, expanded: e.alloc(4)? })
    }
}

/// One time step: build the tree, find the pairs, resolve the contacts, move.
pub fn frame<E: Engine>(e: &mut E, s: &CollideSettings, f: &mut Frontier<E>, index: u32) -> CollideResult<FrameStats> {
    s.check()?;
    let mut stats = FrameStats { frame: index, ..Default::default() };
    let clock = std::time::Instant::now();
    e.begin_frame()?;
    e.stage(StageId::frame(stage::CODES), |e| e.codes())?;
    e.stage(StageId::frame(stage::SORT), |e| e.sort(s.sort))?;
    e.stage(StageId::frame(stage::BUILD), |e| e.build())?;
    e.stage(StageId::frame(stage::REFIT), |e| e.refit())?;
    loop {
        stats.frontier.clear();
        stats.live.clear();
        broad_phase(e, s, f, &mut stats)?;
        let found = e.candidates()?;
        if found <= e.candidate_capacity() {
            stats.candidates = found;
            break;
        }
        // The list overflowed: grow it and walk the tree again (rare: the
        // capacity only grows).
        e.reserve_candidates(found)?;
    }
    stats.contacts = e.stage(StageId::frame(stage::NARROW), |e| e.narrow())?;
    e.stage(StageId::frame(stage::SOLVE), |e| e.solve(s.iterations))?;
    e.stage(StageId::frame(stage::INTEGRATE), |e| e.integrate())?;
    stats.stages = e.end_frame()?;
    stats.wall_ms = clock.elapsed().as_secs_f64() * 1e3;
    stats.pairs_tested = stats.live.iter().sum();
    stats.frame_ms = stats.stages.iter().map(|(_, t)| t).sum();
    Ok(stats)
}

/// The breadth-first pair traversal: level by level, every live pair's
/// overlapping child pairs go to the next frontier, which is then compacted.
fn broad_phase<E: Engine>(
    e: &mut E,
    s: &CollideSettings,
    f: &mut Frontier<E>,
    stats: &mut FrameStats,
) -> CollideResult<()> {
    e.resize(&mut f.pairs, 1)?;
    e.stage(StageId::frame(stage::PAIRS_INIT), |e| e.pairs_init(&mut f.pairs))?;
    let mut m = e.backend().len(&f.pairs);
    let mut live = m;
    let mut level = 0;
    while live > 0 {
        stats.frontier.push(m);
        stats.live.push(live);
        if 4 * m > s.max_frontier {
            let gib = (4 * m * 8) as f64 / (1u64 << 30) as f64;
            return Err(CollideError::FrontierTooLarge { items: 4 * m, gib, level });
        }
        e.resize(&mut f.expanded, 4 * m)?;
        e.stage(StageId::level(stage::EXPAND, level), |e| e.expand(&f.pairs, &mut f.expanded))?;
        std::mem::swap(&mut f.pairs, &mut f.expanded);
        level += 1;
        match s.compact_pairs {
            // Dead slots stay and are read (and quadrupled) by the next level;
            // the frontier ends when a level writes no live slot.
            Compaction::None => {
                m = 4 * m;
                live = e.live()?;
            }
            Compaction::With(alg) => {
                e.resize(&mut f.expanded, 4 * m)?;
                let kept = e.stage(StageId::level(stage::COMPACT_PAIRS, level), |e| {
                    let r = e.backend().select(alg, &f.pairs, Keep::Sentinel(DEAD64), &mut f.expanded)?;
                    Ok(r.count()?)
                })?;
                std::mem::swap(&mut f.pairs, &mut f.expanded);
                e.resize(&mut f.pairs, kept)?;
                m = kept;
                live = kept;
            }
        }
    }
    Ok(())
}

/// Runs `frames` frames; `on_frame` sees each frame's stats as it ends.
pub fn simulate<E: Engine>(
    e: &mut E,
    s: &CollideSettings,
    frames: u32,
    mut on_frame: impl FnMut(&FrameStats),
) -> CollideResult<Vec<FrameStats>> {
    let mut f = Frontier::new(e)?;
    let mut out = Vec::with_capacity(frames as usize);
    for i in 0..frames {
        let st = frame(e, s, &mut f, i)?;
        on_frame(&st);
        out.push(st);
    }
    Ok(out)
}
