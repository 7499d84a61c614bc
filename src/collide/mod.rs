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
pub mod layout;
pub mod output;
pub mod physics;
pub mod quality;
pub mod scenario;

use crate::clocks::Clock;
use crate::compaction::{Algorithm, Backend, Element, Operation};
pub use crate::compaction::{Compaction, Fusion, SitePath};
use crate::frontier;
pub use crate::frontier::{FramePath, Graphs};
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
        "the pair frontier would need {items} slots ({gib:.1} GiB) at level {level}, more than --max-frontier \
         {max}: {advice}"
    )]
    FrontierTooLarge { items: u64, gib: f64, level: u32, max: u64, advice: String },
    #[error("{what} needs {bytes} bytes of GPU memory and the device has {free} free: use fewer bodies")]
    OutOfMemory { what: &'static str, bytes: u64, free: u64 },
    #[error(transparent)]
    Output(#[from] crate::files::OutputError),
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

#[derive(Clone, Debug, serde::Serialize)]
pub struct CollideSettings {
    pub compact_pairs: Compaction,
    pub sort: SortMethod,
    /// Jacobi iterations of the contact solver per frame.
    pub iterations: u32,
    /// The most slots a frontier level may hold (the `none` baseline grows fourfold per level).
    pub max_frontier: u64,
    /// Whether the pair frontier's site may fuse into the expansion.
    pub fusion: Fusion,
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
    /// How the pair frontier's site ran (`None`: no compaction).
    pub pairs_site: Option<SitePath>,
    /// How the frame reached the device on an engine that records frames as
    /// CUDA graphs (`None` on the CPU).
    pub graph: Option<FramePath>,
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
    /// Whether the engine fuses compaction sites into their producers.
    fn fuses(&self) -> bool {
        false
    }
    fn candidate_capacity(&self) -> u64;
    /// Replaces the candidate list (and the contact list with it) by one of
    /// `n` slots; its contents are lost.
    fn set_candidate_capacity(&mut self, n: u64) -> CollideResult<()>;
    /// Grows the candidate list to hold `n`, with an eighth to spare so that
    /// a slowly growing contact set does not redo every frame.
    fn reserve_candidates(&mut self, n: u64) -> CollideResult<()> {
        if n <= self.candidate_capacity() {
            return Ok(());
        }
        self.set_candidate_capacity(n + n / 8)
    }
    /// Exact shape tests of the stored candidates (their count from the
    /// words); the contacts found are counted in `words[words::CONTACTS]`.
    fn narrow(&mut self, words: &mut Buf<Self, u64>) -> CollideResult<()>;
    /// Gravity, then `iterations` Jacobi passes over the contacts; nothing
    /// when the frame's status is set.
    fn solve(&mut self, iterations: u32, words: &Buf<Self, u64>) -> CollideResult<()>;
    /// Positions from velocities; walls, floor and drum; nothing when the
    /// frame's status is set.
    fn integrate(&mut self, words: &Buf<Self, u64>) -> CollideResult<()>;

    /// Reading back, for tests, the viewer and the reports (after a frame).
    fn bodies(&self) -> CollideResult<Vec<Body>>;
    /// Replaces the bodies (same count): a test runs both backends from one state.
    fn set_bodies(&mut self, bodies: &[Body]) -> CollideResult<()>;
    /// The candidate pairs `(a << 32) | b`, a < b body ids, sorted.
    fn candidate_pairs(&self) -> CollideResult<Vec<u64>>;
    /// The contacts, sorted by (a, b, slot).
    fn contact_list(&self) -> CollideResult<Vec<Contact>>;
    /// The hierarchy: n - 1 internal nodes, then n leaves.
    fn nodes(&self) -> CollideResult<Vec<Node>>;
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

/// The words of a frame whose walk is bounded by `levels`: the level words
/// and the array's length.
fn layout(levels: u32) -> (frontier::LevelWords, u64) {
    let mut alloc = frontier::WordAlloc::default();
    let (candidates, contacts) = (alloc.take(1), alloc.take(1));
    debug_assert_eq!((candidates, contacts), (words::CANDIDATES, words::CONTACTS));
    let at = alloc.levels(levels);
    (at, alloc.used())
}

/// Contact slots per candidate slot: a box pair may give up to
/// `physics::MAX_POINTS`, most pairs give one; a frame with more contacts sets
/// the candidates' status and is redone with room for them.
pub const CONTACTS_PER_CANDIDATE: u64 = 2;

/// The first frame's level bound: deeper than any LBVH of 30-bit codes over
/// bodies spread in space needs (a deeper one is redone with a larger bound).
pub const FIRST_BOUND: u32 = 64;
/// Levels past the last frame's depth that a frame may walk before it is
/// redone with a larger bound: bodies move little between frames.
pub const BOUND_MARGIN: u32 = 4;
/// No tree of u32 node indices is deeper: a bound past it is a bug.
const MOST_LEVELS: u32 = 1 << 16;

/// What the driver keeps across frames: the pair frontier (its capacity only
/// grows), the frame's words, and the level bound.
pub struct Frontier<E: Engine + ?Sized> {
    pairs: Option<frontier::Frontier<E::B>>,
    words: Buf<E, u64>,
    /// The next frame's bound on expansions.
    bound: u32,
    /// Attempts the last frame took (1 unless it was redone).
    attempts: u32,
    /// Names the pair frontier's buffers in a frame's key: new whenever they are made.
    id: u64,
}

impl<E: Engine> Frontier<E> {
    pub fn new(e: &E) -> CollideResult<Self> {
        let (_, len) = layout(FIRST_BOUND);
        Ok(Frontier { pairs: None, words: e.alloc(len)?, bound: FIRST_BOUND, attempts: 0, id: frontier::fresh_id() })
    }
    /// Slots per frontier buffer (0 before the first frame).
    pub fn capacity(&self) -> u64 {
        self.pairs.as_ref().map_or(0, |p| p.capacity())
    }
    /// The next frame's level bound.
    pub fn bound(&self) -> u32 {
        self.bound
    }
    /// Sets the next frame's level bound (a frame that needs more is redone).
    pub fn set_bound(&mut self, levels: u32) {
        self.bound = levels.clamp(1, MOST_LEVELS);
    }
    /// Replaces the frontier by one of `capacity` slots (a frame that needs
    /// more grows it and is redone).
    pub fn set_capacity(&mut self, e: &E, capacity: u64) -> CollideResult<()> {
        self.pairs = None; // free the old buffers first
        self.pairs = Some(e.new_frontier(capacity)?);
        self.id = frontier::fresh_id();
        Ok(())
    }
    /// How many times the last frame ran (1 unless it was redone).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

/// The loop's view of an engine: its expand and its stage timer.
struct Walk<'a, E: Engine>(&'a mut E, Option<Algorithm>);

impl<E: Engine> frontier::Levels for Walk<'_, E> {
    type B = E::B;
    type Error = CollideError;
    fn backend(&self) -> &E::B {
        self.0.backend()
    }
    fn level_stage(
        &mut self,
        name: &'static str,
        level: u32,
        f: &mut dyn FnMut(&mut Self) -> CollideResult<()>,
    ) -> CollideResult<()> {
        crate::clocks::timed(self, |w| w.0.clock(), StageId::level(name, level), f)
    }
    fn expand(&mut self, step: frontier::Step<'_, E::B>) -> CollideResult<()> {
        self.0.expand(step, self.1)
    }
}

/// Frontier slots for `n` bodies before any frame asks for more: about two
/// live pairs per body at the widest level, four slots each.
fn initial_capacity(n: u32) -> u64 {
    (8 * n as u64).max(1024)
}

/// One time step: build the tree, find the pairs, resolve the contacts, move.
///
/// The whole frame is enqueued without reading anything back; `end_frame`
/// then reads the words once. A frame whose frontier overflowed, whose walk
/// did not end within the bound, or whose candidate list overflowed did not
/// move a body (those stages check the status on the device): the driver
/// grows what was short and runs it again from the start.
pub fn frame<E: Engine>(e: &mut E, s: &CollideSettings, f: &mut Frontier<E>, index: u32) -> CollideResult<FrameStats> {
    s.check()?;
    let clock = std::time::Instant::now();
    if f.pairs.is_none() {
        f.set_capacity(e, initial_capacity(e.len()).min(s.max_frontier))?;
    }
    f.attempts = 0;
    loop {
        f.attempts += 1;
        let (at, len) = layout(f.bound);
        let (graph, (stages, w)) = enqueue_frame(e, s, f, at, len)?;
        let status = w[frontier::STATUS as usize];
        if status == 0 {
            // The next bound follows the depth this frame reached, with hysteresis: it shrinks only when
            // the walk ends more than two margins short of it, so that a settled scene keeps one bound
            // (one recorded graph) while its depth wavers by a level.
            let depth = at.live_counts(&w).len() as u32;
            if depth + BOUND_MARGIN > f.bound || depth + 2 * BOUND_MARGIN < f.bound {
                f.bound = (depth + BOUND_MARGIN).min(MOST_LEVELS);
            }
            let live = at.live_counts(&w);
            let mut stats = FrameStats {
                frame: index,
                // A fused site's levels hold only live pairs in their length words.
                frontier: at.sizes(&w, pairs_site(e, s) == Some(SitePath::Separate)),
                pairs_site: pairs_site(e, s),
                pairs_tested: live.iter().sum(),
                live,
                candidates: w[words::CANDIDATES as usize],
                contacts: w[words::CONTACTS as usize],
                graph,
                ..Default::default()
            };
            stats.frame_ms = stages.iter().map(|(_, t)| t).sum();
            stats.stages = stages;
            // From the first attempt's start: a redone frame's wall clock says so.
            stats.wall_ms = clock.elapsed().as_secs_f64() * 1e3;
            return Ok(stats);
        }
        if status & frontier::status::OVERFLOW != 0 {
            let needed = w[frontier::NEEDED as usize];
            if needed > s.max_frontier {
                // The overflowing expand left no live pair: it was the level after the last live one.
                let level = at.live_counts(&w).len().saturating_sub(1) as u32;
                let gib = (needed * 8) as f64 / (1u64 << 30) as f64;
                let advice = frontier::past_max_advice(
                    s.compact_pairs != Compaction::None,
                    "--compact-pairs",
                    "use fewer bodies",
                );
                return Err(CollideError::FrontierTooLarge { items: needed, gib, level, max: s.max_frontier, advice });
            }
            // Twice the old capacity when that is more: `none` grows fourfold a level.
            let grown = needed.max(2 * f.capacity()).min(s.max_frontier);
            if f.set_capacity(e, grown).is_err() {
                f.set_capacity(e, needed)?;
            }
        }
        if status & frontier::status::UNFINISHED != 0 {
            if f.bound >= MOST_LEVELS {
                return Err(CollideError::Settings(format!("the pair walk did not end in {MOST_LEVELS} levels")));
            }
            f.set_bound(2 * f.bound);
        }
        if status & frontier::status::CANDIDATES != 0 {
            // The contact list holds CONTACTS_PER_CANDIDATE per candidate slot.
            let contacts = w[words::CONTACTS as usize].div_ceil(CONTACTS_PER_CANDIDATE);
            e.reserve_candidates(w[words::CANDIDATES as usize].max(contacts))?;
        }
    }
}

/// How the pair frontier's site runs on this engine under these settings.
pub fn pairs_site<E: Engine>(e: &E, s: &CollideSettings) -> Option<SitePath> {
    s.fusion.path(s.compact_pairs, e.fuses())
}

/// Runs one attempt at a frame with the walk bounded by `at`: begins it
/// (an engine with graphs may replay it), enqueues its stages, ends it; the
/// frame's path, stage times and words. A failed capture runs it again, streamed.
fn enqueue_frame<E: Engine>(
    e: &mut E,
    s: &CollideSettings,
    f: &mut Frontier<E>,
    at: frontier::LevelWords,
    len: u64,
) -> CollideResult<(Option<FramePath>, FrameEnd)> {
    // Debug covers every setting, so a field added later is in the key too.
    let key = frontier::key((format!("{s:?}"), f.id, f.bound));
    loop {
        let path = e.begin_frame(&mut f.words, len, key)?;
        if path != Some(FramePath::Replayed) {
            if let Err(err) = enqueue(e, s, f, at) {
                e.abort_frame();
                if path == Some(FramePath::Captured) {
                    continue; // the key is refused now: streamed
                }
                return Err(err);
            }
        }
        if let Some(end) = e.end_frame(&f.words)? {
            return Ok((path, end));
        }
    }
}

/// Enqueues one frame's stages (see [`frame`]).
fn enqueue<E: Engine>(
    e: &mut E,
    s: &CollideSettings,
    f: &mut Frontier<E>,
    at: frontier::LevelWords,
) -> CollideResult<()> {
    let Frontier { pairs, words, .. } = f;
    let pairs = pairs.as_mut().ok_or_else(|| CollideError::Settings("the frontier has no buffers".into()))?;
    e.stage(StageId::frame(stage::CODES), |e| e.codes())?;
    e.stage(StageId::frame(stage::SORT), |e| e.sort(s.sort))?;
    e.stage(StageId::frame(stage::BUILD), |e| e.build())?;
    e.stage(StageId::frame(stage::REFIT), |e| e.refit())?;
    e.stage(StageId::frame(stage::PAIRS_INIT), |e| e.pairs_init(pairs.front_mut(), words, at))?;
    let fused = pairs_site(e, s) == Some(SitePath::Fused);
    let compaction = match s.compact_pairs {
        Compaction::None => None,
        Compaction::With(alg) => Some(alg),
    };
    let plan = frontier::Plan {
        levels: at.levels(),
        compaction,
        fused,
        names: frontier::Names { expand: stage::EXPAND, compact: stage::COMPACT_PAIRS },
    };
    let fuse = if fused { compaction } else { None };
    frontier::run(&mut Walk(&mut *e, fuse), pairs, words, at, &plan)?;
    e.stage(StageId::frame(stage::NARROW), |e| e.narrow(words))?;
    e.stage(StageId::frame(stage::SOLVE), |e| e.solve(s.iterations, words))?;
    e.stage(StageId::frame(stage::INTEGRATE), |e| e.integrate(words))
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
