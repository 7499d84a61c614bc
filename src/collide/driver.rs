//! The collider's frame driver: the words of a frame, the pair frontier and
//! level bound kept across frames, one frame (redone while something was
//! short) and a run of frames, over any [`Engine`]. Split from `mod.rs`,
//! which holds what a frame is made of (settings, stages, stats, the trait).

use super::layout::Contact;
use super::physics;
use super::{
    Algorithm, BodyOrder, Buf, CollideError, CollideResult, CollideSettings, Compaction, Engine, FrameEnd, FramePath,
    FrameStats, SitePath, StageId, Substep, stage, words,
};
use crate::frontier;
use crate::memory::{self, MemoryError};

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

/// About what one candidate slot costs with its contacts (the candidate, and
/// per contact point the contact, last frame's, its response, colour, place
/// in the colours' order, name and two ends): what `--max-candidates` is weighed in.
pub const CANDIDATE_SLOT_BYTES: u64 = 8 + CONTACTS_PER_CANDIDATE
    * (2 * std::mem::size_of::<Contact>() as u64 + std::mem::size_of::<physics::Impulse>() as u64 + 4 + 8 + 8 + 8);

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
        Ok(Frontier {
            pairs: None,
            words: e.alloc(len)?,
            bound: FIRST_BOUND,
            attempts: 0,
            id: crate::replay::fresh_id(),
        })
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
        self.id = crate::replay::fresh_id();
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
        crate::clocks::timed(
            self,
            |w| w.0.clock(),
            StageId::level(name, level),
            |w| {
                // Every level stage but expand is a library call (the compaction).
                if name != stage::EXPAND {
                    w.0.before_library()?;
                }
                f(w)
            },
        )
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
        // The engine's first list may be larger than the run allows.
        if e.candidate_capacity() > s.max_candidates {
            e.set_candidate_capacity(s.max_candidates)?;
        }
    }
    f.attempts = 0;
    let mut stalled = false;
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
        if status & frontier::status::STALLED != 0 {
            // A stable site gave up waiting (wgpu); the engine now compacts
            // separately, so a second stall would be an engine that did not.
            if stalled {
                return Err(CollideError::Settings("a fused site stalled twice: use --fusion off".into()));
            }
            stalled = true;
        }
        if status & frontier::status::CANDIDATES != 0 {
            // The contact list holds CONTACTS_PER_CANDIDATE per candidate slot.
            let contacts = w[words::CONTACTS as usize].div_ceil(CONTACTS_PER_CANDIDATE);
            let needed = w[words::CANDIDATES as usize].max(contacts);
            if needed > s.max_candidates {
                let max = s.max_candidates;
                return Err(CollideError::TooManyCandidates {
                    frame: index,
                    needed,
                    max,
                    slot_bytes: CANDIDATE_SLOT_BYTES,
                });
            }
            e.reserve_candidates(needed, s.max_candidates)?;
        }
    }
}

/// How the pair frontier's site runs on this engine under these settings.
pub fn pairs_site<E: Engine>(e: &E, s: &CollideSettings) -> Option<SitePath> {
    s.fusion.path(s.compact_pairs, matches!(s.compact_pairs, Compaction::With(a) if e.fuses(a)))
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
    let key = crate::replay::key((format!("{s:?}"), f.id, f.bound));
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
    if s.order == BodyOrder::Morton {
        e.stage(StageId::frame(stage::REORDER), |e| e.reorder())?;
    }
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
        names: frontier::Names { expand: stage::EXPAND, compact: stage::COMPACT_PAIRS, group: "group pairs" },
        group: None,
    };
    let fuse = if fused { compaction } else { None };
    frontier::run(&mut Walk(&mut *e, fuse), pairs, words, at, &plan)?;
    e.stage(StageId::frame(stage::NARROW), |e| e.narrow(words))?;
    e.stage(StageId::frame(stage::SOLVE), |e| e.solve(words))?;
    for index in 0..s.substeps {
        let step = Substep { index, count: s.substeps, iterations: s.iterations };
        e.stage(StageId::level(stage::SUBSTEP, index), |e| e.substep(step, words))?;
    }
    Ok(())
}

/// Runs `frames` frames and keeps no record of them (settling a pile):
/// `on_frame` sees each frame's stats as it ends.
pub fn run_frames<E: Engine>(
    e: &mut E,
    s: &CollideSettings,
    frames: u32,
    mut on_frame: impl FnMut(&FrameStats),
) -> CollideResult<()> {
    let mut f = Frontier::new(e)?;
    for i in 0..frames {
        on_frame(&frame(e, s, &mut f, i)?);
    }
    Ok(())
}

/// Runs `frames` frames and returns the record of each; `on_frame` sees each
/// frame's stats as it ends.
pub fn simulate<E: Engine>(
    e: &mut E,
    s: &CollideSettings,
    frames: u32,
    mut on_frame: impl FnMut(&FrameStats),
) -> CollideResult<Vec<FrameStats>> {
    let mut f = Frontier::new(e)?;
    let mut out = Records::new(frames);
    for i in 0..frames {
        let st = frame(e, s, &mut f, i)?;
        on_frame(&st);
        out.push(st)?;
    }
    Ok(out.into_vec())
}

/// What steps a scene frame by frame: one engine with its pair frontier
/// ([`Live`]), or the ranks of a split collider (`collide::split`).
pub trait Simulation {
    fn world(&self) -> &super::World;
    /// Number of bodies.
    fn len(&self) -> u32;
    /// Ranks the scene is split over (1 for one engine).
    fn ranks(&self) -> usize {
        1
    }
    fn step(&mut self, s: &CollideSettings, index: u32) -> CollideResult<FrameStats>;
    /// Every body, by spawn number.
    fn bodies(&self) -> CollideResult<Vec<super::Body>>;
    /// The last frame's contacts by spawn number, sorted by (a, b, slot).
    fn contact_list(&self) -> CollideResult<Vec<Contact>>;
    /// The last frame's candidate pairs by spawn number, sorted.
    fn candidate_pairs(&self) -> CollideResult<Vec<u64>>;
    /// Replaces the bodies (same count), numbered in the order given; the
    /// last frame's contacts are forgotten.
    fn set_bodies(&mut self, bodies: &[super::Body]) -> CollideResult<()>;
    /// A split collider's last frame: ownership, ghosts, exchanges.
    fn split_stats(&self) -> Option<&super::split::SplitStats> {
        None
    }
    /// How a split over GPUs carries its ghosts' values; `None` where ranks share memory or nothing is split.
    fn ghost_exchange(&self) -> Option<super::split::GhostExchange> {
        None
    }
    /// How a split over GPUs carries its ghosts' values (a split over CUDA GPUs only).
    fn set_ghost_exchange(&mut self, e: super::split::GhostExchange) -> super::CollideResult<()> {
        Err(super::CollideError::Settings(format!(
            "the ghost exchange {} applies to a split over CUDA GPUs (--backend cuda --gpus N)",
            e.name()
        )))
    }
}

/// An engine and the pair frontier that belongs to it.
pub struct Live<E: Engine> {
    pub engine: E,
    pub frontier: Frontier<E>,
}

impl<E: Engine> Live<E> {
    pub fn new(engine: E) -> CollideResult<Self> {
        let frontier = Frontier::new(&engine)?;
        Ok(Live { engine, frontier })
    }
}

impl<E: Engine> Simulation for Live<E> {
    fn world(&self) -> &super::World {
        self.engine.world()
    }
    fn len(&self) -> u32 {
        self.engine.len()
    }
    fn step(&mut self, s: &CollideSettings, index: u32) -> CollideResult<FrameStats> {
        frame(&mut self.engine, s, &mut self.frontier, index)
    }
    fn bodies(&self) -> CollideResult<Vec<super::Body>> {
        self.engine.bodies()
    }
    fn contact_list(&self) -> CollideResult<Vec<Contact>> {
        self.engine.contact_list()
    }
    fn candidate_pairs(&self) -> CollideResult<Vec<u64>> {
        self.engine.candidate_pairs()
    }
    fn set_bodies(&mut self, bodies: &[super::Body]) -> CollideResult<()> {
        self.engine.set_bodies(bodies)
    }
}

/// One record per frame, for a run of a known length: the first record's
/// size, times the frames, is checked against the host's memory before more
/// is kept, so a `--frames` no machine holds is an error, not an abort.
pub struct Records {
    frames: u32,
    kept: Vec<FrameStats>,
}

impl Records {
    pub fn new(frames: u32) -> Self {
        Records { frames, kept: Vec::new() }
    }

    pub fn push(&mut self, record: FrameStats) -> CollideResult<()> {
        if self.kept.is_empty() {
            let each = record.bytes();
            let what = format!("the records of {} frames ({each} bytes each)", self.frames);
            let need = memory::times(self.frames.into(), each);
            let change = "lower --frames";
            memory::check(what.as_str(), need, memory::Limit::host(), change)?;
            self.kept.try_reserve_exact(self.frames as usize).map_err(|_| MemoryError::AllocationFailed {
                what,
                need,
                change: change.into(),
            })?;
        }
        self.kept.push(record);
        Ok(())
    }

    pub fn as_slice(&self) -> &[FrameStats] {
        &self.kept
    }

    pub fn into_vec(self) -> Vec<FrameStats> {
        self.kept
    }
}
