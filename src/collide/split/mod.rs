//! The collision demo over several ranks (issue 49, item 2), each rank a
//! CPU engine in this process: what CI checks against one engine, bit for
//! bit, and the protocol a GPU per rank will follow (docs/MULTI_GPU.md).
//!
//! A frame:
//! 1. **Ownership.** Rank r owns the bodies whose Morton codes (of their
//!    place at the frame's start, the codes the engines sort) lie in its
//!    range; the ranges split the codes into equal counts. A body whose code
//!    left its rank's range migrates to the new owner, with last frame's
//!    contacts that name it (the warm start's impulses).
//! 2. **Halo.** Each rank's region is the boxes of chunks of its bodies in
//!    Morton order ([`halo::Region`]); every body of another rank whose swept
//!    box overlaps the region comes as a ghost. A candidate pair needs
//!    overlapping boxes, so every pair with a body the rank owns has both
//!    bodies there.
//! 3. **Broad and narrow phase,** per rank over its bodies and ghosts, as
//!    the engine runs them alone (the LBVH, the breadth-first pair walk with
//!    the frontier compacted by the library). A rank keeps the pairs and
//!    walls of its own bodies; a pair across two ranks is found by both,
//!    with the same contacts (the arithmetic is the same and the pair is
//!    named by its spawn numbers).
//! 4. **Solver,** in lockstep (`cpu::Ranks`): every step runs on each rank,
//!    and after a step that changes what only an owner knows (a colouring
//!    round's picks, a colour's impulses, a gather) each ghost takes its
//!    owner's value. The colouring and the solver's sums depend only on the
//!    set of contacts, the bodies and their spawn numbers, not on order, so
//!    the bodies step exactly as on one engine.

#[cfg(feature = "cuda")]
pub mod cuda;
pub mod halo;

use std::ops::Range;
use std::time::Instant;

use rayon::prelude::*;

use super::cpu::{self, CpuCollide, Ranks, Shared, Values};
use super::layout::{Body, Contact, World};
use super::{CollideError, CollideResult, CollideSettings, FrameStats, Frontier, StageId, Substep, physics, stage};

/// The most ranks a split collider holds in one process (the CPU ranks
/// share the cores; they run the protocol, not a speed-up).
pub const MAX_RANKS: usize = crate::trace::split::MAX_CPU_RANKS;

/// How far over an equal share of the bodies a rank may grow before the
/// ranges are split again.
pub const REBALANCE: f64 = 1.05;

/// How a split over GPUs carries its ghosts' values between the solver's
/// steps (about 240 times a frame): the frame's start moves bodies and
/// contacts through NCCL either way. A split takes `Peer` where every GPU
/// reaches every other's memory, `Nccl` otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GhostExchange {
    /// Each owner's kernel writes its records straight into the holder's
    /// memory (GPUs of one process with peer access, over NVLink), and
    /// events order the two streams: one launch and two event waits a step.
    Peer,
    /// A pack, one NCCL group of sends and receives, an unpack: what
    /// ranks without peer access (other processes, other hosts) would use.
    Nccl,
}

impl GhostExchange {
    pub const ALL: [GhostExchange; 2] = [GhostExchange::Peer, GhostExchange::Nccl];

    pub fn name(self) -> &'static str {
        match self {
            GhostExchange::Peer => "peer",
            GhostExchange::Nccl => "nccl",
        }
    }
}

impl std::str::FromStr for GhostExchange {
    type Err = CollideError;
    fn from_str(s: &str) -> CollideResult<Self> {
        GhostExchange::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| CollideError::Settings(format!("unknown ghost exchange {s:?}: use peer or nccl")))
    }
}

/// What a rank holds between frames, whatever its engine.
#[derive(Default)]
pub(crate) struct Holding {
    /// The bodies it owns (spawn numbers kept), as the last frame left them.
    pub owned: Vec<Body>,
    /// Last frame's contacts of the bodies it owns, by spawn number.
    pub previous: Vec<Contact>,
    /// The frame's Morton range.
    pub range: Range<u32>,
}

/// One CPU rank: its engine, what the driver keeps for it, and its bodies
/// between frames.
struct Rank {
    engine: CpuCollide,
    frontier: Option<Frontier<CpuCollide>>,
    hold: Holding,
    /// Whether it holds a body this frame (one owning none sits it out).
    active: bool,
    /// The frame's ghosts, grouped by owner: what [`Lockstep::share`]
    /// copies (one message from each owner).
    ghosts: Vec<Message>,
}

/// The ghosts a rank takes from one owner: their places here and the
/// owner's places of the same bodies, in one order.
pub(crate) struct Message {
    pub owner: usize,
    pub here: Vec<u32>,
    pub there: Vec<u32>,
}

/// What a split frame measured besides the frame itself.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct SplitStats {
    /// Bodies each rank owned.
    pub owned: Vec<u64>,
    /// Ghosts each rank held.
    pub ghosts: Vec<u64>,
    /// Bodies that changed rank at the frame's start.
    pub migrated: u64,
    /// Values each ghost took from its owner over the frame, summed over the ghosts.
    pub shared: u64,
    /// Steps after which the ghosts took their owners' values.
    pub exchanges: u64,
    /// The frame's start on GPUs, step by step (host wall clock, ms): what ownership and halo cost.
    pub parts: Vec<(String, f64)>,
}

/// The collider over `ranks` CPU engines.
pub struct SplitCollide {
    world: World,
    ranks: Vec<Rank>,
    bodies: u32,
    last: SplitStats,
}

impl SplitCollide {
    /// `bodies` (numbered by their order) over `ranks` ranks.
    pub fn new(world: World, bodies: &[Body], ranks: usize) -> CollideResult<SplitCollide> {
        if ranks == 0 || ranks > MAX_RANKS {
            return Err(CollideError::Settings(format!("a split collider takes 1 to {MAX_RANKS} ranks, not {ranks}")));
        }
        let most = super::scenario::MAX_BODIES;
        if bodies.is_empty() || bodies.len() > most as usize {
            return Err(CollideError::Settings(format!("the collider takes 1 to {most} bodies, not {}", bodies.len())));
        }
        let n = bodies.len() as u32;
        let numbered = super::layout::numbered(bodies);
        let mut out = SplitCollide { world, ranks: Vec::new(), bodies: n, last: SplitStats::default() };
        for r in 0..ranks {
            // Dealt out in spawn order, then to their ranges below.
            let share = n as usize * r / ranks..n as usize * (r + 1) / ranks;
            out.ranks.push(Rank {
                engine: CpuCollide::rank(world)?,
                frontier: None,
                hold: Holding { owned: numbered[share].to_vec(), ..Default::default() },
                active: false,
                ghosts: Vec::new(),
            });
        }
        migrate(&mut out.holdings(), &world);
        Ok(out)
    }

    /// The ranks' compaction backend (each rank's engine runs on one like it).
    pub fn backend(&self) -> &crate::compaction::CpuBackend {
        crate::collide::Engine::backend(&self.ranks[0].engine)
    }

    /// Replaces the bodies (same count), numbered in the order given; last
    /// frame's contacts are forgotten (warm starting begins again).
    pub fn set_bodies(&mut self, bodies: &[Body]) -> CollideResult<()> {
        if bodies.len() != self.bodies as usize {
            return Err(CollideError::Settings(format!("{} bodies for a collider of {}", bodies.len(), self.bodies)));
        }
        *self = SplitCollide::new(self.world, bodies, self.ranks.len())?;
        Ok(())
    }

    /// The last frame's ownership, halo and exchange counts.
    pub fn split_stats(&self) -> &SplitStats {
        &self.last
    }

    fn holdings(&mut self) -> Vec<&mut Holding> {
        self.ranks.iter_mut().map(|r| &mut r.hold).collect()
    }

    /// One frame over every rank (see the module's steps). Its stats: the
    /// candidates and contacts of the whole scene (a pair across ranks
    /// counted once), stage times of the slowest rank's broad and narrow
    /// phase, the lockstep solver's as measured here.
    pub fn frame(&mut self, s: &CollideSettings, index: u32) -> CollideResult<FrameStats> {
        s.check()?;
        let clock = Instant::now();
        let w = self.world;
        let migrated = migrate(&mut self.holdings(), &w);
        self.load();
        let halo_ms = clock.elapsed().as_secs_f64() * 1e3;

        // Broad and narrow phase, each rank alone (a frame redone for room stays within its rank).
        let mut slowest: Option<FrameStats> = None;
        // Candidates and contacts a rank keeps, and of them those across two ranks (kept by both).
        let mut counts = cpu::Kept::default();
        for rank in self.ranks.iter_mut().filter(|r| r.active) {
            let f = match &mut rank.frontier {
                Some(f) => f,
                none => none.insert(Frontier::new(&rank.engine)?),
            };
            let st = super::frame(&mut rank.engine, s, f, index)?;
            counts += rank.engine.kept();
            if slowest.as_ref().is_none_or(|f| f.frame_ms < st.frame_ms) {
                slowest = Some(st);
            }
        }
        let mut stats = slowest.unwrap_or_default();
        stats.stages.retain(|(id, _)| id.name != stage::SOLVE && id.name != stage::SUBSTEP);
        stats.stages.insert(0, (StageId::frame(stage::HALO), halo_ms));
        stats.candidates = counts.candidates - counts.crossing_candidates / 2;
        stats.contacts = counts.contacts - counts.crossing_contacts / 2;

        self.index_ghosts();
        let mut lock = Lockstep { ranks: &mut self.ranks, shared: 0, exchanges: 0 };
        let t = Instant::now();
        cpu::solve_setup(&mut lock)?;
        stats.stages.push((StageId::frame(stage::SOLVE), t.elapsed().as_secs_f64() * 1e3));
        for index in 0..s.substeps {
            let t = Instant::now();
            let step = Substep { index, count: s.substeps, iterations: s.iterations };
            cpu::solve_substep(&mut lock, step, &self.world);
            stats.stages.push((StageId::level(stage::SUBSTEP, index), t.elapsed().as_secs_f64() * 1e3));
        }
        let (shared, exchanges) = (lock.shared, lock.exchanges);
        self.keep();
        stats.frame = index;
        stats.frame_ms = stats.stages.iter().map(|(_, t)| t).sum();
        stats.wall_ms = clock.elapsed().as_secs_f64() * 1e3;
        self.last = SplitStats {
            owned: self.ranks.iter().map(|r| r.hold.owned.len() as u64).collect(),
            ghosts: self.ranks.iter().map(|r| r.ghosts.iter().map(|m| m.here.len() as u64).sum()).collect(),
            migrated,
            shared,
            exchanges,
            parts: Vec::new(),
        };
        Ok(stats)
    }

    /// Finds each rank's ghosts (halo.rs) and loads its engine with its
    /// bodies and ghosts.
    fn load(&mut self) {
        let holds: Vec<&Holding> = self.ranks.iter().map(|r| &r.hold).collect();
        let held = held_bodies(&holds, &self.world);
        for (rank, held) in self.ranks.iter_mut().zip(held) {
            rank.active = !rank.hold.owned.is_empty();
            if rank.active {
                rank.engine.load(held, rank.hold.range.clone(), &rank.hold.previous);
            }
        }
    }

    /// After the broad phase (the engines have moved their bodies into
    /// Morton order): each ghost's owner and place there.
    fn index_ghosts(&mut self) {
        let mut place: std::collections::HashMap<u32, (usize, u32)> = Default::default();
        for (r, rank) in self.ranks.iter().enumerate().filter(|(_, r)| r.active) {
            let e = &rank.engine;
            for (i, b) in e.held().iter().enumerate().filter(|&(i, _)| !e.is_ghost(i)) {
                place.insert(b.id, (r, i as u32));
            }
        }
        let ranks = self.ranks.len();
        for rank in self.ranks.iter_mut().filter(|r| r.active) {
            let e = &rank.engine;
            let mut from: Vec<Message> =
                (0..ranks).map(|owner| Message { owner, here: Vec::new(), there: Vec::new() }).collect();
            for i in (0..e.held().len()).filter(|&i| e.is_ghost(i)) {
                let (owner, at) = place[&e.held()[i].id];
                from[owner].here.push(i as u32);
                from[owner].there.push(at);
            }
            from.retain(|m| !m.here.is_empty());
            rank.ghosts = from;
        }
    }

    /// After the solver: each rank's own bodies and contacts, for the next frame.
    fn keep(&mut self) {
        for rank in self.ranks.iter_mut().filter(|r| r.active) {
            let e = &rank.engine;
            rank.hold.owned = e.held().iter().enumerate().filter(|&(i, _)| !e.is_ghost(i)).map(|(_, b)| *b).collect();
            rank.hold.previous = e.previous_by_id();
        }
    }

    /// Every body, by spawn number.
    pub fn bodies(&self) -> CollideResult<Vec<Body>> {
        let mut out = vec![Body::default(); self.bodies as usize];
        for b in self.ranks.iter().flat_map(|r| &r.hold.owned) {
            out[b.id as usize] = *b;
        }
        Ok(out)
    }

    /// The last frame's contacts by spawn number, sorted by (a, b, slot); a
    /// contact across two ranks once.
    pub fn contact_list(&self) -> CollideResult<Vec<Contact>> {
        let active = self.ranks.iter().filter(|r| r.active);
        merged_contacts(active.map(|r| crate::collide::Engine::contact_list(&r.engine)))
    }

    /// The last frame's candidate pairs by spawn number, sorted; a pair across two ranks once.
    pub fn candidate_pairs(&self) -> CollideResult<Vec<u64>> {
        let active = self.ranks.iter().filter(|r| r.active);
        merged_pairs(active.map(|r| crate::collide::Engine::candidate_pairs(&r.engine)))
    }
}

impl super::Simulation for SplitCollide {
    fn world(&self) -> &World {
        &self.world
    }
    fn len(&self) -> u32 {
        self.bodies
    }
    fn ranks(&self) -> usize {
        self.ranks.len()
    }
    fn step(&mut self, s: &CollideSettings, index: u32) -> CollideResult<FrameStats> {
        self.frame(s, index)
    }
    fn bodies(&self) -> CollideResult<Vec<Body>> {
        SplitCollide::bodies(self)
    }
    fn contact_list(&self) -> CollideResult<Vec<Contact>> {
        SplitCollide::contact_list(self)
    }
    fn candidate_pairs(&self) -> CollideResult<Vec<u64>> {
        SplitCollide::candidate_pairs(self)
    }
    fn set_bodies(&mut self, bodies: &[Body]) -> CollideResult<()> {
        SplitCollide::set_bodies(self, bodies)
    }
    fn split_stats(&self) -> Option<&SplitStats> {
        Some(&self.last)
    }
}

impl SplitStats {
    /// One line for a run's summary.
    pub fn line(&self) -> String {
        let owned: u64 = self.owned.iter().sum();
        let ghosts: u64 = self.ghosts.iter().sum();
        format!(
            "split over {} ranks (last frame): owned {:?}, ghosts {:?} ({:.1} % of the bodies), {} migrated, {} \
             exchanges of {} ghost values",
            self.owned.len(),
            self.owned,
            self.ghosts,
            100.0 * ghosts as f64 / owned.max(1) as f64,
            self.migrated,
            self.exchanges,
            self.shared
        )
    }
}

/// Splits the Morton codes into one range per rank (equal counts, when
/// the last frame's ranges leave a rank [`REBALANCE`] times its share), and
/// moves each body (with its contacts) to the rank whose range holds its
/// code. Returns how many bodies changed rank.
pub(crate) fn migrate(ranks: &mut [&mut Holding], w: &World) -> u64 {
    let mut codes: Vec<u32> = ranks.iter().flat_map(|r| &r.owned).map(|b| physics::morton(b.pos, w)).collect();
    codes.par_sort_unstable();
    let r = ranks.len();
    // The ranges stay while no rank holds more than REBALANCE times an equal share (a body then
    // migrates only when it moves across one); past that they split the codes into equal counts.
    let kept: Vec<Range<u32>> = ranks.iter().map(|rank| rank.range.clone()).collect();
    let held =
        |range: &Range<u32>| codes.partition_point(|&c| c < range.end) - codes.partition_point(|&c| c < range.start);
    let covered = kept.first().is_some_and(|f| f.start == 0) && kept.last().is_some_and(|l| l.end == u32::MAX);
    let balanced = kept.iter().all(|range| held(range) as f64 <= codes.len() as f64 / r as f64 * REBALANCE);
    let ranges: Vec<Range<u32>> = if covered && balanced { kept } else { split_codes(&codes, r) };
    let owner = |b: &Body| {
        let code = physics::morton(b.pos, w);
        ranges.iter().position(|range| range.contains(&code)).unwrap_or(r - 1)
    };
    // What each rank sends each rank: its bodies, and its contacts of each (a contact across two
    // ranks is sent by both, and the receiver keeps one).
    let mut bodies: Vec<Vec<Body>> = vec![Vec::new(); r];
    let mut contacts: Vec<Vec<Contact>> = vec![Vec::new(); r];
    let mut migrated = 0;
    for (from, rank) in ranks.iter_mut().enumerate() {
        let dest: std::collections::HashMap<u32, usize> = rank.owned.iter().map(|b| (b.id, owner(b))).collect();
        for b in rank.owned.drain(..) {
            migrated += (dest[&b.id] != from) as u64;
            bodies[dest[&b.id]].push(b);
        }
        for c in rank.previous.drain(..) {
            let to_a = dest.get(&c.a).copied();
            let to_b = if physics::is_wall(c.b) { None } else { dest.get(&c.b).copied() };
            for to in [to_a, to_b.filter(|&t| Some(t) != to_a)].into_iter().flatten() {
                contacts[to].push(c);
            }
        }
    }
    for ((rank, range), (owned, mut previous)) in ranks.iter_mut().zip(ranges).zip(bodies.into_iter().zip(contacts)) {
        previous.sort_unstable_by_key(|c| (c.a, c.b, c.slot));
        previous.dedup_by_key(|c| (c.a, c.b, c.slot));
        rank.range = range;
        rank.owned = owned;
        rank.previous = previous;
    }
    migrated
}

/// Each rank's bodies for the frame (halo.rs): those it owns, then every
/// body of another rank whose swept box overlaps its region (its ghosts).
pub(crate) fn held_bodies(ranks: &[&Holding], w: &World) -> Vec<Vec<Body>> {
    let aabb = |b: &Body| physics::aabb(b, w);
    let regions: Vec<halo::Region> = ranks
        .par_iter()
        .map(|r| {
            let mut sorted: Vec<(u32, u32)> =
                r.owned.iter().enumerate().map(|(i, b)| (physics::morton(b.pos, w), i as u32)).collect();
            sorted.par_sort_unstable();
            let boxes: Vec<halo::Aabb> = sorted.iter().map(|&(_, i)| aabb(&r.owned[i as usize])).collect();
            halo::Region::of(&boxes)
        })
        .collect();
    (0..ranks.len())
        .map(|to| {
            let mut held = ranks[to].owned.clone();
            for (_, rank) in ranks.iter().enumerate().filter(|&(from, _)| from != to) {
                held.par_extend(rank.owned.par_iter().filter(|b| regions[to].overlaps(&aabb(b))).copied());
            }
            held
        })
        .collect()
}

/// The ranks' contacts (each by spawn number) as one list sorted by (a, b,
/// slot): a contact across two ranks, found by both, once.
pub(crate) fn merged_contacts(ranks: impl Iterator<Item = CollideResult<Vec<Contact>>>) -> CollideResult<Vec<Contact>> {
    let mut out: Vec<Contact> = Vec::new();
    for contacts in ranks {
        out.extend(contacts?);
    }
    out.sort_unstable_by_key(|c| (c.a, c.b, c.slot));
    out.dedup_by_key(|c| (c.a, c.b, c.slot));
    Ok(out)
}

/// The ranks' candidate pairs (each by spawn number) as one sorted list: a pair across two ranks once.
pub(crate) fn merged_pairs(ranks: impl Iterator<Item = CollideResult<Vec<u64>>>) -> CollideResult<Vec<u64>> {
    let mut out: Vec<u64> = Vec::new();
    for pairs in ranks {
        out.extend(pairs?);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Ranges of `codes` (sorted) for `r` ranks: equal counts, each cut moved
/// to the coarsest Morton cell boundary that keeps every rank within half
/// of [`REBALANCE`]'s margin. A cut at a coarse cell's boundary is a flat
/// face in space; a cut at any code leaves a ragged boundary, and a larger
/// halo on both sides of it.
fn split_codes(codes: &[u32], r: usize) -> Vec<Range<u32>> {
    let quantile = |k: usize| {
        if k == 0 {
            0
        } else if k == r {
            u32::MAX
        } else {
            codes[codes.len() * k / r]
        }
    };
    let cut = |k: usize, bits: u32| {
        let q = quantile(k);
        if k == 0 || k == r { q } else { ((q as u64 + (1 << bits >> 1)) >> bits << bits).min(u32::MAX as u64) as u32 }
    };
    let most = codes.len() as f64 / r as f64 * (1.0 + (REBALANCE - 1.0) / 2.0);
    let held = |lo: u32, hi: u32| codes.partition_point(|&c| c < hi) - codes.partition_point(|&c| c < lo);
    (0..=30u32)
        .rev()
        .map(|bits| (0..=r).map(|k| cut(k, bits)).collect::<Vec<u32>>())
        .find(|cuts| cuts.windows(2).all(|w| w[0] <= w[1] && held(w[0], w[1]) as f64 <= most))
        .unwrap_or_else(|| (0..=r).map(quantile).collect())
        .windows(2)
        .map(|w| w[0]..w[1])
        .collect()
}

/// The ranks of this process in lockstep: a step runs on each, then the
/// ghosts take their owners' values (here a copy; between processes or GPUs
/// one message per pair of ranks).
struct Lockstep<'a> {
    ranks: &'a mut [Rank],
    shared: u64,
    exchanges: u64,
}

impl Ranks for Lockstep<'_> {
    fn each(&mut self, f: &mut dyn FnMut(&mut CpuCollide)) {
        for rank in self.ranks.iter_mut().filter(|r| r.active) {
            f(&mut rank.engine);
        }
    }

    fn share(&mut self, what: Shared) {
        self.exchanges += 1;
        for to in 0..self.ranks.len() {
            if !self.ranks[to].active {
                continue;
            }
            for k in 0..self.ranks[to].ghosts.len() {
                let m = &self.ranks[to].ghosts[k];
                let values: Values = self.ranks[m.owner].engine.values(what, &m.there);
                let rank = &mut self.ranks[to];
                rank.engine.take(what, &rank.ghosts[k].here, &values);
                self.shared += rank.ghosts[k].here.len() as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests;
