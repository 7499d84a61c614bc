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
//! use the arithmetic of `physics/` in the same order (NVRTC compiles
//! without FMA contraction), so one state gives the same contacts on both.
//! The pair walk is the shared breadth-first loop ([`crate::frontier`]): the
//! frontier is compacted only through [`Backend::select_counted`], every
//! length and count of a frame lives in one array of device words, and the
//! host reads them once, after the frame (a GPU frame waits on the device
//! twice: the words and the stage times).

pub mod bench;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod driver;
#[cfg(any(feature = "cuda", feature = "wgpu"))]
mod gpu;
pub mod layout;
pub mod order;
pub mod output;
pub mod peer;
pub mod physics;
pub mod quality;
pub mod scenario;
pub mod split;
#[cfg(feature = "wgpu")]
pub mod wgpu;

use crate::clocks::Clock;
use crate::compaction::{Algorithm, Backend, Element, Operation};
pub use crate::compaction::{Compaction, Fusion, SitePath};
use crate::frontier;
pub use crate::replay::{FramePath, Graphs};
pub use driver::{
    BOUND_MARGIN, CONTACTS_PER_CANDIDATE, FIRST_BOUND, Frontier, Live, Records, Simulation, frame, pairs_site,
    run_frames, simulate,
};
pub use layout::{Body, Contact, Node, World};
pub use order::BodyOrder;
pub use scenario::Scenario;

/// A dead frontier slot. Live slots hold `(a << 32) | b`, two node indices.
pub const DEAD64: u64 = u64::MAX;

#[derive(Debug, thiserror::Error)]
pub enum CollideError {
    #[error(transparent)]
    Compaction(#[from] crate::compaction::Error),
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Gpu(#[from] crate::cuda_runtime::Error),
    #[error(transparent)]
    Site(#[from] crate::compaction::SiteError),
    #[error("{0}")]
    Settings(String),
    #[error(
        "the pair frontier would need {items} slots ({gib:.1} GiB) at level {level}, more than --max-frontier \
         {max}: {advice}"
    )]
    FrontierTooLarge { items: u64, gib: f64, level: u32, max: u64, advice: String },
    #[error(
        "frame {frame} found {needed} candidate pairs, more than --max-candidates {max}: raise --max-candidates \
         (each slot takes about {slot_bytes} bytes of memory with its contacts) or use fewer or slower bodies"
    )]
    TooManyCandidates { frame: u32, needed: u64, max: u64, slot_bytes: u64 },
    #[error("{what} needs {bytes} bytes of GPU memory and the device has {free} free: use fewer bodies")]
    OutOfMemory { what: &'static str, bytes: u64, free: u64 },
    #[error(transparent)]
    Output(#[from] crate::files::OutputError),
    #[error(transparent)]
    Memory(#[from] crate::memory::MemoryError),
}

impl From<std::convert::Infallible> for CollideError {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
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

/// `--max-candidates`' default: 2^28 slots, about 100 GiB with their
/// contacts, more than the GPUs reap runs on hold (their free memory is
/// checked too); on the CPU the host's memory is the bound.
pub const DEFAULT_MAX_CANDIDATES: u64 = 1 << 28;

#[derive(Clone, Debug, serde::Serialize)]
pub struct CollideSettings {
    pub compact_pairs: Compaction,
    pub sort: SortMethod,
    /// Substeps of the solver per frame (each moves the bodies by dt / substeps).
    pub substeps: u32,
    /// Passes over the contacts per substep (colour by colour, then the
    /// overflow's Jacobi pass: `physics::colour`).
    pub iterations: u32,
    /// The most slots a frontier level may hold (the `none` baseline grows fourfold per level).
    pub max_frontier: u64,
    /// The most candidate pairs a frame's list may hold (each slot with room
    /// for `driver::CONTACTS_PER_CANDIDATE` contact points): the lists grow
    /// with the bodies' speeds (their reach), and past this a frame is a
    /// [`CollideError::TooManyCandidates`], not an allocation that fails.
    pub max_candidates: u64,
    /// Whether the pair frontier's site may fuse into the expansion.
    pub fusion: Fusion,
    /// Where the bodies live between frames: moved into Morton order after
    /// every sort ([`Engine::reorder`]), or left where they were spawned.
    pub order: BodyOrder,
}

impl CollideSettings {
    pub fn check(&self) -> CollideResult<()> {
        if self.substeps == 0 || self.substeps > 64 {
            return Err(CollideError::Settings("--substeps must be between 1 and 64".into()));
        }
        if self.iterations == 0 || self.iterations > 64 {
            return Err(CollideError::Settings("--iterations must be between 1 and 64".into()));
        }
        if self.max_candidates == 0 {
            return Err(CollideError::Settings("--max-candidates must be at least 1".into()));
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
            stage::HALO | stage::GHOSTS | stage::CODES | stage::SORT | stage::REORDER | stage::BUILD | stage::REFIT => {
                Part::Build
            }
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
    /// A split collider's ownership, migration and ghosts (`collide::split`).
    pub const HALO: &str = "migrate + halo";
    /// A split over GPUs: which bodies a rank owns, the exchanges' lists, the counts (`split::cuda`).
    pub const GHOSTS: &str = "ghost lists";
    pub const CODES: &str = "aabb + morton";
    pub const SORT: &str = "sort";
    /// The bodies moved into the sorted codes' order ([`super::BodyOrder::Morton`]).
    pub const REORDER: &str = "morton order";
    pub const BUILD: &str = "lbvh";
    pub const REFIT: &str = "bounds";
    pub const PAIRS_INIT: &str = "pairs init";
    pub const EXPAND: &str = "expand level";
    pub const COMPACT_PAIRS: &str = "compact pairs";
    pub const NARROW: &str = "narrow phase";
    /// The solver's setup: contact counts, contacts grouped by body, warm start.
    pub const SOLVE: &str = "solve";
    /// One substep: gravity, held impulses, passes, motion (a level per substep).
    pub const SUBSTEP: &str = "substep";
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
    /// How the pair frontier's site ran (`None`: no compaction).
    pub pairs_site: Option<SitePath>,
    /// How the frame reached the device on an engine that records frames as
    /// CUDA graphs (`None` on the CPU).
    pub graph: Option<FramePath>,
}

impl FrameStats {
    /// Host bytes this record holds, its vectors included: what keeping one
    /// record per frame costs.
    pub fn bytes(&self) -> u64 {
        let vecs = self.stages.capacity() * std::mem::size_of::<(StageId, f64)>()
            + (self.frontier.capacity() + self.live.capacity()) * std::mem::size_of::<u64>();
        (std::mem::size_of::<Self>() + vecs) as u64
    }

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
/// pair frontier and the frame's words (every count of a frame, one `u64`
/// array of the backend: see [`words`]), so that compaction and every length
/// are visible here. Kernels read their lengths from the words: nothing of a
/// frame is read on the host before [`Engine::end_frame`].
pub trait Engine {
    type B: Backend;
    /// What times the stages.
    type Clock: Clock<StageId, Error: Into<CollideError>>;
    fn backend(&self) -> &Self::B;
    fn world(&self) -> &World;
    /// Number of bodies.
    fn len(&self) -> u32;
    fn alloc<T: Element>(&self, len: u64) -> CollideResult<Buf<Self, T>> {
        Ok(self.backend().alloc(len)?)
    }
    /// The pair frontier's two buffers of `capacity` slots (refused when the
    /// device lacks the memory).
    fn new_frontier(&self, capacity: u64) -> CollideResult<frontier::Frontier<Self::B>>;

    fn clock(&mut self) -> &mut Self::Clock;
    /// Starts a frame: `words` holds at least `len` words (grown if needed),
    /// all zero (a memset on a GPU). `key` names what the frame's launches
    /// depend on besides the engine's own state (settings, frontier, bound).
    /// An engine that records frames as CUDA graphs says how this one runs:
    /// when it replays a recorded graph ([`FramePath::Replayed`]) the caller
    /// enqueues no stage. `None`: the engine records no graphs.
    fn begin_frame(&mut self, words: &mut Buf<Self, u64>, len: u64, key: u64) -> CollideResult<Option<FramePath>>;
    /// Runs `f` as the named stage, timing it.
    fn stage<R>(&mut self, id: StageId, f: impl FnOnce(&mut Self) -> CollideResult<R>) -> CollideResult<R> {
        crate::clocks::timed(self, Self::clock, id, f)
    }
    /// Ends a frame: waits for it once, reads the words once and the stage
    /// times once (a GPU frame's only two host waits). `None` when the frame
    /// was being captured and the capture failed: nothing of it ran, so the
    /// caller enqueues it again (it is then streamed).
    fn end_frame(&mut self, words: &Buf<Self, u64>) -> CollideResult<Option<FrameEnd>>;
    /// Abandons a frame whose enqueueing failed (a capture in progress is discarded).
    fn abort_frame(&mut self) {}
    /// Whether frames are recorded as CUDA graphs and replayed; an engine
    /// without graphs ignores it.
    fn set_graphs(&mut self, _graphs: Graphs) {}

    /// Each body's AABB and the Morton code of its centre (30 bits, world
    /// bounds), with ids = 0..n.
    fn codes(&mut self) -> CollideResult<()>;
    /// Sorts the codes, the ids moving with them.
    fn sort(&mut self, method: SortMethod) -> CollideResult<()>;
    /// Moves the bodies into the sorted codes' order ([`BodyOrder::Morton`]):
    /// body `ids[i]` goes to `i`, ids become 0..n, and the last frame's
    /// contacts follow their bodies (warm start finds them). Run right after
    /// [`Engine::sort`]; on a frame that is redone the order is already
    /// sorted and nothing moves.
    fn reorder(&mut self) -> CollideResult<()>;
    /// Karras 2012: the internal nodes' children and parents from the sorted
    /// codes, in one parallel pass; the leaves' boxes from their bodies.
    fn build(&mut self) -> CollideResult<()>;
    /// The internal nodes' boxes, bottom-up.
    fn refit(&mut self) -> CollideResult<()>;
    /// Level 0 of the pair walk: `frontier[0] = (root, root)` and its length
    /// and live words 1 (both 0 under two bodies).
    fn pairs_init(
        &mut self,
        frontier: &mut Buf<Self, u64>,
        words: &mut Buf<Self, u64>,
        at: frontier::LevelWords,
    ) -> CollideResult<()>;
    /// One level (the loop's rules, `frontier.rs` [`frontier::Levels`]): each
    /// of the n input pairs writes its child pairs whose boxes overlap to
    /// `output[4i..4i+4]` (dead slots [`DEAD64`]), or nothing at all when 4n
    /// slots do not fit the capacity; leaf-leaf pairs are appended to the
    /// candidate list instead (written below its capacity, counted in
    /// `words[words::CANDIDATES]` always, an overflow sets
    /// [`frontier::status::CANDIDATES`]).
    /// `fuse`: the pair frontier's algorithm when its site is fused into the
    /// expansion, which then writes only the live pairs, compacted.
    fn expand(&mut self, step: frontier::Step<'_, Self::B>, fuse: Option<Algorithm>) -> CollideResult<()>;
    /// Called inside a stage just before it calls the library (the pair
    /// frontier's compaction): an engine that holds back recorded work
    /// submits it here, so that the library's own submission follows it.
    fn before_library(&mut self) -> CollideResult<()> {
        Ok(())
    }
    /// Whether the engine fuses `algorithm`'s compaction sites into their producers.
    fn fuses(&self, _algorithm: Algorithm) -> bool {
        false
    }
    fn candidate_capacity(&self) -> u64;
    /// Replaces the candidate list (and the contact list with it) by one of
    /// `n` slots; its contents are lost.
    fn set_candidate_capacity(&mut self, n: u64) -> CollideResult<()>;
    /// Grows the candidate list to hold `n`, with an eighth to spare (up to
    /// `max`) so that a slowly growing contact set does not redo every frame.
    fn reserve_candidates(&mut self, n: u64, max: u64) -> CollideResult<()> {
        if n <= self.candidate_capacity() {
            return Ok(());
        }
        self.set_candidate_capacity((n + n / 8).min(max).max(n))
    }
    /// Exact shape tests of the stored candidates (their count from the
    /// words); the contacts found are counted in `words[words::CONTACTS]`.
    fn narrow(&mut self, words: &mut Buf<Self, u64>) -> CollideResult<()>;
    /// The solver's setup for the frame's contacts: the contacts' ends
    /// grouped by body (what the passes gather), the contact graph's colours
    /// (`physics::colour`) and each body's overflow points (its mass split),
    /// and each contact's impulses from the last frame (warm start); nothing
    /// when the frame's status is set.
    fn solve(&mut self, words: &Buf<Self, u64>) -> CollideResult<()>;
    /// One substep (`physics::solver`): gravity and the impulses the contacts
    /// held, `step.solve_passes` passes (colour by colour, then the overflow's
    /// Jacobi pass), then positions from velocities (walls, floor and drum),
    /// then with soft contacts one relax pass (`step.relaxes`), all over
    /// `step.world`'s dt; nothing when the frame's status is set.
    fn substep(&mut self, step: Substep, words: &Buf<Self, u64>) -> CollideResult<()>;

    /// Reading back, for tests, the viewer and the reports (after a frame),
    /// in spawn order ([`Body::id`]) whatever order the engine keeps.
    fn bodies(&self) -> CollideResult<Vec<Body>>;
    /// Replaces the bodies (same count), numbered in the order given: a test
    /// runs both backends from one state. The last frame's contacts are
    /// forgotten (warm start begins again).
    fn set_bodies(&mut self, bodies: &[Body]) -> CollideResult<()>;
    /// The candidate pairs `(a << 32) | b`, a < b spawn numbers, sorted.
    fn candidate_pairs(&self) -> CollideResult<Vec<u64>>;
    /// The contacts naming their bodies by spawn number, sorted by (a, b, slot).
    fn contact_list(&self) -> CollideResult<Vec<Contact>>;
    /// The hierarchy: n - 1 internal nodes, then n leaves (naming their
    /// bodies by spawn number).
    fn nodes(&self) -> CollideResult<Vec<Node>>;
}

/// One substep of a frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Substep {
    /// 0 for the frame's first.
    pub index: u32,
    /// Substeps in the frame.
    pub count: u32,
    /// Passes in it.
    pub iterations: u32,
}

impl Substep {
    pub fn last(&self) -> bool {
        self.index + 1 == self.count
    }
    /// The passes before the bodies move: all of them with split-impulse
    /// contacts; with soft ones (`World::contact_hertz`) all but the last
    /// (at least one), the last being the relax pass after the move.
    pub fn solve_passes(&self, w: &World) -> u32 {
        if self.relaxes(w) { self.iterations.saturating_sub(1).max(1) } else { self.iterations }
    }
    /// Whether one relax pass follows the move (Box2D's soft step: it takes
    /// back the speed the solve passes' push-out gave).
    pub fn relaxes(&self, w: &World) -> bool {
        w.contact_hertz > 0.0
    }
    /// The world with the substep's time step (computed once, on the host,
    /// so that every engine steps by the same f32).
    pub fn world(&self, w: &World) -> World {
        World { dt: w.dt / self.count as f32, ..*w }
    }
}

/// A buffer of an engine's compaction backend.
pub type Buf<E, T> = <<E as Engine>::B as Backend>::Buffer<T>;

/// What an engine reports at a frame's end: each stage with its time in ms,
/// and the frame's words.
pub type FrameEnd = (Vec<(StageId, f64)>, Vec<u64>);

/// The collider's words of a frame, after the loop's status and needed size
/// (`frontier::WordAlloc` hands them out in this order; collide.cu receives
/// the indices as arguments).
pub mod words {
    /// Candidates appended since pairs_init (may exceed the list's capacity).
    pub const CANDIDATES: u64 = crate::frontier::FIRST_FREE;
    /// Contacts the narrow phase found.
    pub const CONTACTS: u64 = crate::frontier::FIRST_FREE + 1;
}
