//! The split collider on GPUs: one CUDA engine per GPU, the protocol of
//! the CPU ranks (the module above) step for step, its exchanges carried
//! by NCCL.
//!
//! - **Ownership and halo** are the host's ([`migrate`], [`held_bodies`]):
//!   each frame a rank's engine loads its bodies and ghosts, and gives its
//!   bodies and contacts back after the solver. This is the part that does
//!   not scale yet (docs/MULTI_GPU.md measures it).
//! - **Broad and narrow phase** run on each GPU as one engine runs them; a
//!   rank keeps the pairs and walls of its own bodies (collide_narrow's and
//!   collide_walls' owned range).
//! - **The solver** is the GPU engine's program of steps (`cuda/solve.rs`)
//!   enqueued on every rank; after a step that changes what only an owner
//!   knows, each owner packs the values its ghosts elsewhere need
//!   (collide_pack), one NCCL group of sends and receives carries them,
//!   and each rank unpacks them over its ghosts (collide_unpack). The host
//!   waits for nothing between the steps.

use std::ops::Range;
use std::time::Instant;

use super::{Holding, Message, SplitStats, held_bodies, migrate};
use crate::collide::cpu::{Kept, Shared};
use crate::collide::cuda::{CudaCollide, CudaRanks, solve_setup, solve_substep};
use crate::collide::layout::{Body, Contact, World};
use crate::collide::{CollideError, CollideResult, CollideSettings, FrameStats, Frontier, StageId, Substep, stage};
use crate::compaction::Backend;
use crate::compaction::cuda::{CudaBackend, CudaBuffer};
use crate::cuda_runtime::nccl::{Comms, Move};

/// u32s of the largest record an exchange carries (a body).
const MOST_WORDS: u64 = (std::mem::size_of::<Body>() / 4) as u64;

/// One GPU's rank.
struct GpuRank {
    engine: CudaCollide,
    frontier: Option<Frontier<CudaCollide>>,
    hold: Holding,
    active: bool,
    /// Spawn numbers of the bodies it loaded this frame (owned, then ghosts).
    loaded: usize,
    /// What it sends: the places of its bodies other ranks hold as ghosts,
    /// by destination (ascending), and each destination's part.
    send: CudaBuffer<u32>,
    sends: Vec<(usize, Range<u32>)>,
    /// What it receives: its ghosts' places, by owner (ascending), and each owner's part.
    recv: CudaBuffer<u32>,
    recvs: Vec<(usize, Range<u32>)>,
    /// The records in flight, `MOST_WORDS` u32s a record at most.
    out: CudaBuffer<u32>,
    into: CudaBuffer<u32>,
}

/// The collider over one CUDA engine per GPU.
pub struct CudaSplit {
    world: World,
    ranks: Vec<GpuRank>,
    comms: Comms,
    bodies: u32,
    last: SplitStats,
}

impl CudaSplit {
    /// `bodies` (numbered by their order) over one rank per backend (one GPU each).
    pub fn new(world: World, bodies: &[Body], backends: Vec<CudaBackend>) -> CollideResult<CudaSplit> {
        let ranks = backends.len();
        if ranks < 2 {
            return Err(CollideError::Settings(format!("a split over GPUs takes 2 GPUs or more, not {ranks}")));
        }
        let most = super::super::scenario::MAX_BODIES;
        if bodies.is_empty() || bodies.len() > most as usize {
            return Err(CollideError::Settings(format!("the collider takes 1 to {most} bodies, not {}", bodies.len())));
        }
        let n = bodies.len() as u32;
        let numbered = super::super::layout::numbered(bodies);
        let mut out = Vec::new();
        for (r, backend) in backends.into_iter().enumerate() {
            let share = n as usize * r / ranks..n as usize * (r + 1) / ranks;
            let engine = CudaCollide::rank(backend, world)?;
            let b = engine.rank_backend();
            out.push(GpuRank {
                send: b.alloc(1)?,
                recv: b.alloc(1)?,
                out: b.alloc(1)?,
                into: b.alloc(1)?,
                engine,
                frontier: None,
                hold: Holding { owned: numbered[share].to_vec(), ..Default::default() },
                active: false,
                loaded: 0,
                sends: Vec::new(),
                recvs: Vec::new(),
            });
        }
        let streams = out.iter().map(|r| r.engine.stream().clone()).collect();
        let comms = Comms::new(streams).map_err(crate::compaction::Error::from)?;
        let mut split = CudaSplit { world, ranks: out, comms, bodies: n, last: SplitStats::default() };
        migrate(&mut split.holdings(), &world);
        Ok(split)
    }

    fn holdings(&mut self) -> Vec<&mut Holding> {
        self.ranks.iter_mut().map(|r| &mut r.hold).collect()
    }

    /// Replaces the bodies (same count), numbered in the order given; last
    /// frame's contacts are forgotten (warm starting begins again).
    pub fn set_bodies(&mut self, bodies: &[Body]) -> CollideResult<()> {
        if bodies.len() != self.bodies as usize {
            return Err(CollideError::Settings(format!("{} bodies for a collider of {}", bodies.len(), self.bodies)));
        }
        let numbered = super::super::layout::numbered(bodies);
        let (n, r) = (numbered.len(), self.ranks.len());
        for (k, rank) in self.ranks.iter_mut().enumerate() {
            rank.hold = Holding { owned: numbered[n * k / r..n * (k + 1) / r].to_vec(), ..Default::default() };
        }
        let w = self.world;
        migrate(&mut self.holdings(), &w);
        Ok(())
    }

    /// The last frame's ownership, halo and exchange counts.
    pub fn split_stats(&self) -> &SplitStats {
        &self.last
    }

    /// One frame over every rank (the module's steps). Its stats as the CPU
    /// split's: the whole scene's candidates and contacts, the slowest
    /// rank's broad and narrow stages, the lockstep solver's wall clock.
    pub fn frame(&mut self, s: &CollideSettings, index: u32) -> CollideResult<FrameStats> {
        s.check()?;
        let clock = Instant::now();
        let w = self.world;
        let migrated = migrate(&mut self.holdings(), &w);
        let holds: Vec<&Holding> = self.ranks.iter().map(|r| &r.hold).collect();
        let held = held_bodies(&holds, &w);
        for (rank, held) in self.ranks.iter_mut().zip(&held) {
            rank.active = !rank.hold.owned.is_empty();
            rank.loaded = held.len();
            if rank.active {
                rank.engine.bind()?;
                rank.engine.load(held, rank.hold.range.clone(), &rank.hold.previous)?;
            }
        }
        let halo_ms = clock.elapsed().as_secs_f64() * 1e3;

        // Broad and narrow phase, each rank alone (a frame redone for room stays within its rank).
        let mut slowest: Option<FrameStats> = None;
        let mut counts = Kept::default();
        for rank in self.ranks.iter_mut().filter(|r| r.active) {
            rank.engine.bind()?;
            let f = match &mut rank.frontier {
                Some(f) => f,
                none => none.insert(Frontier::new(&rank.engine)?),
            };
            let st = crate::collide::frame(&mut rank.engine, s, f, index)?;
            counts += rank.engine.kept()?;
            if slowest.as_ref().is_none_or(|f| f.frame_ms < st.frame_ms) {
                slowest = Some(st);
            }
        }
        let mut stats = slowest.unwrap_or_default();
        stats.stages.retain(|(id, _)| id.name != stage::SOLVE && id.name != stage::SUBSTEP);
        stats.stages.insert(0, (StageId::frame(stage::HALO), halo_ms));
        stats.candidates = counts.candidates - counts.crossing_candidates / 2;
        stats.contacts = counts.contacts - counts.crossing_contacts / 2;

        let t = Instant::now();
        self.index_ghosts()?;
        stats.stages.push((StageId::frame(stage::GHOSTS), t.elapsed().as_secs_f64() * 1e3));
        let mut lock = Lockstep { ranks: &mut self.ranks, comms: &self.comms, shared: 0, exchanges: 0 };
        let t = Instant::now();
        solve_setup(&mut lock, &w)?;
        lock.wait()?;
        stats.stages.push((StageId::frame(stage::SOLVE), t.elapsed().as_secs_f64() * 1e3));
        for index in 0..s.substeps {
            let t = Instant::now();
            let step = Substep { index, count: s.substeps, iterations: s.iterations };
            solve_substep(&mut lock, step, &w)?;
            lock.wait()?;
            stats.stages.push((StageId::level(stage::SUBSTEP, index), t.elapsed().as_secs_f64() * 1e3));
        }
        let (shared, exchanges) = (lock.shared, lock.exchanges);
        let t = Instant::now();
        self.keep()?;
        stats.stages.push((StageId::frame(stage::KEEP), t.elapsed().as_secs_f64() * 1e3));
        stats.frame = index;
        stats.frame_ms = stats.stages.iter().map(|(_, t)| t).sum();
        stats.wall_ms = clock.elapsed().as_secs_f64() * 1e3;
        self.last = SplitStats {
            owned: self.ranks.iter().map(|r| r.hold.owned.len() as u64).collect(),
            ghosts: self.ranks.iter().map(|r| (r.loaded - r.hold.owned.len()) as u64).collect(),
            migrated,
            shared,
            exchanges,
        };
        Ok(stats)
    }

    /// After the broad phase (each engine moved its bodies into Morton
    /// order): every rank's ghosts, by owner, and the places each owner
    /// sends, uploaded as the exchanges' lists.
    fn index_ghosts(&mut self) -> CollideResult<()> {
        let n = self.bodies as usize;
        let mut owner = vec![u32::MAX; n];
        for (r, rank) in self.ranks.iter().enumerate() {
            rank.hold.owned.iter().for_each(|b| owner[b.id as usize] = r as u32);
        }
        let mut held: Vec<Vec<Body>> = Vec::with_capacity(self.ranks.len());
        for rank in &self.ranks {
            rank.engine.bind()?;
            held.push(if rank.active { rank.engine.held()? } else { Vec::new() });
        }
        // Each owned body's place on its owner.
        let mut place = vec![0u32; n];
        for (r, bodies) in held.iter().enumerate() {
            for (i, b) in bodies.iter().enumerate().filter(|(_, b)| owner[b.id as usize] == r as u32) {
                place[b.id as usize] = i as u32;
            }
        }
        let ranks = self.ranks.len();
        // messages[to]: the ghosts `to` takes from each owner.
        let messages: Vec<Vec<Message>> = held
            .iter()
            .enumerate()
            .map(|(to, bodies)| {
                let mut from: Vec<Message> =
                    (0..ranks).map(|owner| Message { owner, here: Vec::new(), there: Vec::new() }).collect();
                for (i, b) in bodies.iter().enumerate().filter(|(_, b)| owner[b.id as usize] != to as u32) {
                    let o = owner[b.id as usize] as usize;
                    from[o].here.push(i as u32);
                    from[o].there.push(place[b.id as usize]);
                }
                from
            })
            .collect();
        for (r, rank) in self.ranks.iter_mut().enumerate() {
            let (mut send, mut recv) = (Vec::new(), Vec::new());
            rank.sends.clear();
            rank.recvs.clear();
            for (to, m) in messages.iter().enumerate() {
                let part = &m[r].there;
                if to != r && !part.is_empty() {
                    rank.sends.push((to, send.len() as u32..(send.len() + part.len()) as u32));
                    send.extend_from_slice(part);
                }
            }
            for m in messages[r].iter().filter(|m| m.owner != r && !m.here.is_empty()) {
                rank.recvs.push((m.owner, recv.len() as u32..(recv.len() + m.here.len()) as u32));
                recv.extend_from_slice(&m.here);
            }
            rank.engine.bind()?;
            let b = rank.engine.rank_backend();
            rank.send = b.upload(if send.is_empty() { &[0] } else { &send })?;
            rank.recv = b.upload(if recv.is_empty() { &[0] } else { &recv })?;
            let words = send.len().max(recv.len()).max(1) as u64 * MOST_WORDS;
            if rank.out.len() < words {
                rank.out = b.alloc(words)?;
                rank.into = b.alloc(words)?;
            }
        }
        Ok(())
    }

    /// After the solver: each rank's own bodies and contacts, for the next frame.
    fn keep(&mut self) -> CollideResult<()> {
        for rank in self.ranks.iter_mut().filter(|r| r.active) {
            rank.engine.bind()?;
            let held = rank.engine.held()?;
            let ids: std::collections::HashSet<u32> = rank.hold.owned.iter().map(|b| b.id).collect();
            rank.hold.owned = held.iter().filter(|b| ids.contains(&b.id)).copied().collect();
            rank.hold.previous = rank.engine.previous_by_id(&held)?;
        }
        Ok(())
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
        let mut out: Vec<Contact> = Vec::new();
        for rank in self.ranks.iter().filter(|r| r.active) {
            rank.engine.bind()?;
            out.extend(crate::collide::Engine::contact_list(&rank.engine)?);
        }
        out.sort_unstable_by_key(|c| (c.a, c.b, c.slot));
        out.dedup_by_key(|c| (c.a, c.b, c.slot));
        Ok(out)
    }

    /// The last frame's candidate pairs by spawn number, sorted; a pair across two ranks once.
    pub fn candidate_pairs(&self) -> CollideResult<Vec<u64>> {
        let mut out: Vec<u64> = Vec::new();
        for rank in self.ranks.iter().filter(|r| r.active) {
            rank.engine.bind()?;
            out.extend(crate::collide::Engine::candidate_pairs(&rank.engine)?);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}

impl crate::collide::Simulation for CudaSplit {
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
        CudaSplit::bodies(self)
    }
    fn contact_list(&self) -> CollideResult<Vec<Contact>> {
        CudaSplit::contact_list(self)
    }
    fn candidate_pairs(&self) -> CollideResult<Vec<u64>> {
        CudaSplit::candidate_pairs(self)
    }
    fn set_bodies(&mut self, bodies: &[Body]) -> CollideResult<()> {
        CudaSplit::set_bodies(self, bodies)
    }
    fn split_stats(&self) -> Option<&SplitStats> {
        Some(&self.last)
    }
}

/// The GPU ranks in lockstep: each step is enqueued on every rank, each
/// exchange as packs, one NCCL group, unpacks.
struct Lockstep<'a> {
    ranks: &'a mut [GpuRank],
    comms: &'a Comms,
    shared: u64,
    exchanges: u64,
}

impl Lockstep<'_> {
    /// Waits for every rank's stream.
    fn wait(&self) -> CollideResult<()> {
        for rank in self.ranks.iter().filter(|r| r.active) {
            crate::cuda_runtime::synchronize(rank.engine.stream(), "waiting for a rank's solver")?;
        }
        Ok(())
    }
}

impl CudaRanks for Lockstep<'_> {
    fn each(&mut self, f: &mut dyn FnMut(&mut CudaCollide) -> CollideResult<()>) -> CollideResult<()> {
        for rank in self.ranks.iter_mut().filter(|r| r.active) {
            rank.engine.bind()?;
            f(&mut rank.engine)?;
        }
        Ok(())
    }

    fn share(&mut self, what: Shared) -> CollideResult<()> {
        self.exchanges += 1;
        let Some(first) = self.ranks.iter().find(|r| r.active) else { return Ok(()) };
        let stride: u64 = first.engine.fields(what).iter().map(|f| f.1 as u64).sum();
        let bytes = 4 * stride;
        for rank in self.ranks.iter().filter(|r| r.active) {
            let count = rank.sends.last().map_or(0, |s| s.1.end);
            rank.engine.bind()?;
            rank.engine.pack(what, &rank.send, count, rank.out.ptr())?;
        }
        let mut moves = Vec::new();
        for (to, rank) in self.ranks.iter().enumerate() {
            for (owner, part) in &rank.recvs {
                let o = &self.ranks[*owner];
                let at =
                    o.sends.iter().find(|s| s.0 == to).map(|s| s.1.clone()).expect("an owner sends what a rank takes");
                debug_assert_eq!(at.len(), part.len());
                moves.push(Move {
                    from: *owner,
                    src: o.out.ptr() + at.start as u64 * bytes,
                    to,
                    dst: rank.into.ptr() + part.start as u64 * bytes,
                    bytes: part.len() as u64 * bytes,
                });
                self.shared += part.len() as u64;
            }
        }
        self.comms.exchange(&moves).map_err(crate::compaction::Error::from)?;
        for rank in self.ranks.iter().filter(|r| r.active) {
            let count = rank.recvs.last().map_or(0, |s| s.1.end);
            rank.engine.bind()?;
            rank.engine.unpack(what, &rank.recv, count, rank.into.ptr())?;
        }
        Ok(())
    }

    fn every_round(&self) -> bool {
        true
    }
}
