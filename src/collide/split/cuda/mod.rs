//! The split collider on GPUs: one CUDA engine per GPU, the protocol of
//! the CPU ranks (the module above) step for step, every body and contact
//! kept on the GPUs between frames. The host reads counts (to size buffers
//! and messages) and moves nothing else; NCCL carries every move.
//!
//! A frame, per rank (split.cu has the kernels):
//! 1. **Ownership.** The rank selects, with the library's select, the
//!    bodies it owned last frame (collide_mine's flags) and names its last
//!    contacts by spawn number. Each body whose Morton code left the rank's
//!    range goes to the rank whose range holds it, with the contacts that
//!    name it. The ranges stay until a rank holds [`super::REBALANCE`] times
//!    its share; then the host gathers everything once and splits them again.
//! 2. **Halo.** The largest reach of a body's box past its centre comes from
//!    every rank (collide_reach). Each owned body whose box, grown by that
//!    reach, meets another rank's range of codes (as aligned cubes of cells,
//!    [`rank`]'s `blocks`) goes to that rank as a ghost (collide_halo): a body there
//!    whose box meets this body's has its centre in the grown box.
//! 3. **Broad and narrow phase,** each GPU as one engine runs them; a rank
//!    keeps the pairs and walls of its own bodies.
//! 4. **Solver,** the GPU engine's program of steps (`cuda/solve.rs`)
//!    enqueued on every rank; after a step that changes what only an owner
//!    knows, each owner packs the values its ghosts elsewhere need, and each
//!    rank unpacks them over its ghosts. Between the two, either the packs
//!    write straight into the holders' memory, ordered by events
//!    ([`GhostExchange::Peer`], GPUs with peer access), or one NCCL group
//!    of sends and receives carries them ([`GhostExchange::Nccl`]). The host
//!    waits for nothing between the steps.
//!
//! This file holds the collider and its lockstep solver; `start.rs` the
//! frame's start (from the host, or on the GPUs); `rank.rs` each rank's
//! steps and split.cu's launches.

mod rank;
mod start;

use std::ops::Range;
use std::time::Instant;

use cudarc::driver::CudaEvent;

use super::{GhostExchange, Holding, SplitStats};
use crate::collide::cpu::{Kept, Shared};
use crate::collide::cuda::{CudaCollide, CudaRanks, launch_err, solve_setup, solve_substep};
use crate::collide::layout::{Body, Contact, World};
use crate::collide::{
    CollideError, CollideResult, CollideSettings, Engine, FrameStats, Frontier, StageId, Substep, stage,
};
use crate::compaction::Backend;
use crate::compaction::cuda::{CudaBackend, CudaBuffer};
use crate::cuda_runtime;
use crate::cuda_runtime::nccl::{Comms, Move};
use rank::{Kernels, each_rank, zeroed_u32};

/// One GPU's rank.
struct GpuRank {
    engine: CudaCollide,
    frontier: Option<Frontier<CudaCollide>>,
    k: Kernels,
    active: bool,
    /// Bodies it owns this frame (the first of its engine's bodies as loaded).
    owned: u32,
    /// After the frame's narrow phase: whether it owns each of its engine's bodies.
    mine: CudaBuffer<u8>,
    /// 0, 1, ...: what a select of places compacts; and the select's flags.
    iota: CudaBuffer<u32>,
    flags: CudaBuffer<u8>,
    /// The ranges' cuts (ranks + 1), and every other rank's range as cubes of cells (by rank; its own empty).
    cuts: CudaBuffer<u32>,
    blocks: Vec<(CudaBuffer<u32>, u32)>,
    /// A slot per spawn number: places (collide_where) and marks (collide_mark).
    place: CudaBuffer<u32>,
    mark: CudaBuffer<u32>,
    /// The ghosts it sends by destination and those it receives by owner:
    /// spawn numbers (set as the frame loads), places (after the broad
    /// phase), and each peer's part.
    sent_ids: CudaBuffer<u32>,
    send: CudaBuffer<u32>,
    sends: Vec<(usize, Range<u32>)>,
    recv_ids: CudaBuffer<u32>,
    recv: CudaBuffer<u32>,
    recvs: Vec<(usize, Range<u32>)>,
    /// The records of an exchange in flight (a body's worth each, at most):
    /// those it sends, and those it takes in two halves of `out`'s length,
    /// one for odd exchanges and one for even (a peer's pack then need not
    /// wait for this rank's unpack of the exchange before).
    out: CudaBuffer<u32>,
    into: CudaBuffer<u32>,
    /// The frame's start, in buffers kept between frames (each grows when
    /// it must; a frame that allocates and frees a gigabyte waits for the
    /// memory's mapping): the bodies it kept and its contacts by spawn
    /// number; its bodies after migration, and its contacts with the migrants'.
    own: CudaBuffer<Body>,
    named: CudaBuffer<Contact>,
    now: CudaBuffer<Body>,
    taken: CudaBuffer<Contact>,
    /// What the selects chose: the bodies it kept, the contacts it found.
    kept: CudaBuffer<u32>,
    found: CudaBuffer<u32>,
    /// By rank, what it sends there.
    peers: Vec<Peer>,
    /// collide_reach's word.
    most: CudaBuffer<u32>,
    /// A peer exchange's marks on its stream: its last step is done (its
    /// ghosts and `into` may be written), its packs are written.
    ready: CudaEvent,
    packed: CudaEvent,
}

/// What a rank sends one rank at the frame's start: the places of its
/// migrants (for itself: those it keeps), of their contacts and of its
/// ghosts there, and the records in flight.
struct Peer {
    migrants: CudaBuffer<u32>,
    contacts: CudaBuffer<u32>,
    ghosts: CudaBuffer<u32>,
    migrants_out: CudaBuffer<u32>,
    contacts_out: CudaBuffer<u32>,
    ghosts_out: CudaBuffer<u32>,
}

/// What the frame's start carries between ranks: the migrants, their
/// contacts, the ghosts.
#[derive(Clone, Copy)]
enum Carried {
    Migrants,
    Contacts,
    Ghosts,
}

/// Which of a rank's place lists a select fills.
#[derive(Clone, Copy)]
enum Picked {
    Kept,
    Found,
    Migrants(usize),
    Contacts(usize),
    Ghosts(usize),
}

/// The collider over one CUDA engine per GPU.
pub struct CudaSplit {
    world: World,
    ranks: Vec<GpuRank>,
    comms: Comms,
    bodies: u32,
    /// Each rank's Morton range.
    ranges: Vec<Range<u32>>,
    /// Bodies and contacts on the host (the start, or a rebalance): the next frame loads them.
    holds: Option<Vec<Holding>>,
    last: SplitStats,
    /// The frame's start, step by step (host wall clock, ms).
    parts: Vec<(String, f64)>,
    /// How the solver's exchanges travel, and whether every GPU reaches every other's memory.
    exchange: GhostExchange,
    peers_reach: bool,
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
        let n = bodies.len() as u64;
        let mut out = Vec::new();
        for backend in backends {
            let engine = CudaCollide::rank(backend, world)?;
            let b = engine.rank_backend();
            let event = || engine.stream().context().new_event(None).map_err(launch_err("creating an event"));
            out.push(GpuRank {
                ready: event()?,
                packed: event()?,
                k: Kernels::new(b)?,
                mine: b.alloc(1)?,
                iota: b.alloc(1)?,
                flags: b.alloc(1)?,
                cuts: b.alloc(ranks as u64 + 1)?,
                blocks: Vec::new(),
                place: b.alloc(n)?,
                mark: zeroed_u32(b, n)?,
                sent_ids: b.alloc(1)?,
                send: b.alloc(1)?,
                recv_ids: b.alloc(1)?,
                recv: b.alloc(1)?,
                out: b.alloc(1)?,
                into: b.alloc(1)?,
                own: b.alloc(1)?,
                named: b.alloc(1)?,
                now: b.alloc(1)?,
                taken: b.alloc(1)?,
                kept: b.alloc(1)?,
                found: b.alloc(1)?,
                peers: (0..ranks).map(|_| Peer::new(b)).collect::<CollideResult<_>>()?,
                most: b.alloc(1)?,
                engine,
                frontier: None,
                active: false,
                owned: 0,
                sends: Vec::new(),
                recvs: Vec::new(),
            });
        }
        let mut peers_reach = true;
        for a in &out {
            for b in &out {
                let (a, b) = (a.engine.stream().context(), b.engine.stream().context());
                peers_reach &= cuda_runtime::enable_peer_access(a, b).map_err(crate::compaction::Error::from)?;
            }
        }
        let streams = out.iter().map(|r| r.engine.stream().clone()).collect();
        let comms = Comms::new(streams).map_err(crate::compaction::Error::from)?;
        let mut split = CudaSplit {
            world,
            ranks: out,
            comms,
            bodies: n as u32,
            ranges: Vec::new(),
            holds: None,
            last: SplitStats::default(),
            parts: Vec::new(),
            exchange: if peers_reach { GhostExchange::Peer } else { GhostExchange::Nccl },
            peers_reach,
        };
        split.connect()?;
        split.set_bodies(bodies)?;
        Ok(split)
    }

    /// NCCL connects two ranks at their first sends, a few ms for each
    /// size of message it splits over more channels: done here with a few
    /// megabytes each way, so that a frame pays only for what it moves.
    fn connect(&self) -> CollideResult<()> {
        const WORDS: u64 = 1 << 20;
        let ranks = self.ranks.len() as u64;
        let buffers: Vec<CudaBuffer<u32>> = self
            .ranks
            .iter()
            .map(|r| r.engine.bind().and_then(|_| zeroed_u32(r.engine.rank_backend(), WORDS * ranks)))
            .collect::<CollideResult<_>>()?;
        let mut moves = Vec::new();
        for (r, d) in (0..self.ranks.len()).flat_map(|r| (0..self.ranks.len()).map(move |d| (r, d))) {
            if r != d {
                let (src, dst) = (buffers[r].ptr() + d as u64 * WORDS * 4, buffers[d].ptr() + r as u64 * WORDS * 4);
                moves.push(Move { from: r, src, to: d, dst, bytes: WORDS * 4 });
            }
        }
        self.exchange(&moves)?;
        for rank in &self.ranks {
            cuda_runtime::synchronize(rank.engine.stream(), "connecting the ranks")?;
        }
        Ok(())
    }

    /// Replaces the bodies (same count), numbered in the order given; last
    /// frame's contacts are forgotten (warm starting begins again).
    pub fn set_bodies(&mut self, bodies: &[Body]) -> CollideResult<()> {
        if bodies.len() != self.bodies as usize {
            return Err(CollideError::Settings(format!("{} bodies for a collider of {}", bodies.len(), self.bodies)));
        }
        let numbered = super::super::layout::numbered(bodies);
        let (n, r) = (numbered.len(), self.ranks.len());
        // Dealt out in spawn order; the first frame moves them to their ranges.
        self.holds = Some(
            (0..r)
                .map(|k| Holding { owned: numbered[n * k / r..n * (k + 1) / r].to_vec(), ..Default::default() })
                .collect(),
        );
        Ok(())
    }

    /// How the solver's exchanges travel from now on ([`GhostExchange::Peer`]
    /// where every GPU reaches every other's memory, the default there).
    pub fn set_ghost_exchange(&mut self, e: GhostExchange) -> CollideResult<()> {
        if e == GhostExchange::Peer && !self.peers_reach {
            return Err(CollideError::Settings(
                "these GPUs cannot reach each other's memory (no peer access): use the nccl ghost exchange".into(),
            ));
        }
        self.exchange = e;
        Ok(())
    }

    /// How the solver's exchanges travel.
    pub fn ghost_exchange(&self) -> GhostExchange {
        self.exchange
    }

    /// The first rank's backend (its GPU).
    pub fn backend(&self) -> &CudaBackend {
        self.ranks[0].engine.rank_backend()
    }

    /// The last frame's ownership, halo and exchange counts.
    pub fn split_stats(&self) -> &SplitStats {
        &self.last
    }

    /// One frame over every rank (the module's steps). Its stats as the CPU
    /// split's: the whole scene's candidates and contacts, the slowest
    /// rank's broad and narrow stages, the steps between as host wall clock.
    pub fn frame(&mut self, s: &CollideSettings, index: u32) -> CollideResult<FrameStats> {
        s.check()?;
        let clock = Instant::now();
        let w = self.world;
        let migrated = match self.holds.take() {
            Some(holds) => self.load_from_host(holds)?,
            None => match self.hand_over()? {
                Some(migrated) => migrated,
                // A rank holds too many: gathered on the host and split again.
                None => {
                    let holds = self.gather()?;
                    self.load_from_host(holds)?
                }
            },
        };
        let halo_ms = clock.elapsed().as_secs_f64() * 1e3;

        // Broad and narrow phase, each rank alone and all at once, a host thread each (a frame redone for
        // room stays within its rank); then which bodies each owns, the exchanges' lists, the counts.
        let ranks = each_rank(&mut self.ranks, |_, rank| {
            if !rank.active {
                return Ok(None);
            }
            let f = match &mut rank.frontier {
                Some(f) => f,
                none => none.insert(Frontier::new(&rank.engine)?),
            };
            let st = crate::collide::frame(&mut rank.engine, s, f, index)?;
            let t = Instant::now();
            rank.index(&w)?;
            let kept = rank.engine.kept()?;
            rank.reserve(rank.engine.len(), rank.engine.contact_count() as u32)?;
            Ok(Some((st, kept, t.elapsed().as_secs_f64() * 1e3)))
        })?;
        let mut slowest: Option<FrameStats> = None;
        let mut counts = Kept::default();
        let mut ghosts_ms = 0.0f64;
        for (st, kept, ms) in ranks.into_iter().flatten() {
            counts += kept;
            ghosts_ms = ghosts_ms.max(ms);
            if slowest.as_ref().is_none_or(|f| f.frame_ms < st.frame_ms) {
                slowest = Some(st);
            }
        }
        let mut stats = slowest.unwrap_or_default();
        stats.stages.retain(|(id, _)| id.name != stage::SOLVE && id.name != stage::SUBSTEP);
        stats.stages.insert(0, (StageId::frame(stage::HALO), halo_ms));
        stats.stages.push((StageId::frame(stage::GHOSTS), ghosts_ms));
        stats.candidates = counts.candidates - counts.crossing_candidates / 2;
        stats.contacts = counts.contacts - counts.crossing_contacts / 2;

        let mut lock =
            Lockstep { ranks: &mut self.ranks, comms: &self.comms, exchange: self.exchange, shared: 0, exchanges: 0 };
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
        stats.frame = index;
        stats.frame_ms = stats.stages.iter().map(|(_, t)| t).sum();
        stats.wall_ms = clock.elapsed().as_secs_f64() * 1e3;
        self.last = SplitStats {
            owned: self.ranks.iter().map(|r| r.owned as u64).collect(),
            ghosts: self.ranks.iter().map(|r| if r.active { r.engine.len() - r.owned } else { 0 } as u64).collect(),
            migrated,
            shared,
            exchanges,
            parts: std::mem::take(&mut self.parts),
        };
        Ok(stats)
    }

    /// One NCCL group of the moves (nothing when there are none).
    fn exchange(&self, moves: &[Move]) -> CollideResult<()> {
        if moves.is_empty() {
            return Ok(());
        }
        Ok(self.comms.exchange(moves).map_err(crate::compaction::Error::from)?)
    }

    /// Every body, by spawn number.
    pub fn bodies(&self) -> CollideResult<Vec<Body>> {
        let mut out = vec![Body::default(); self.bodies as usize];
        if let Some(holds) = &self.holds {
            for b in holds.iter().flat_map(|h| &h.owned) {
                out[b.id as usize] = *b;
            }
            return Ok(out);
        }
        for rank in self.ranks.iter().filter(|r| r.active) {
            rank.engine.bind()?;
            let b = rank.engine.rank_backend();
            let (held, mine) = (rank.engine.held()?, b.download(&rank.mine)?);
            for (body, _) in held.iter().zip(&mine).filter(|(_, m)| **m != 0) {
                out[body.id as usize] = *body;
            }
        }
        Ok(out)
    }

    /// The last frame's contacts by spawn number, sorted by (a, b, slot); a
    /// contact across two ranks once.
    pub fn contact_list(&self) -> CollideResult<Vec<Contact>> {
        let active = self.ranks.iter().filter(|r| r.active);
        super::merged_contacts(active.map(|r| r.engine.bind().and_then(|_| r.engine.contact_list())))
    }

    /// The last frame's candidate pairs by spawn number, sorted; a pair across two ranks once.
    pub fn candidate_pairs(&self) -> CollideResult<Vec<u64>> {
        let active = self.ranks.iter().filter(|r| r.active);
        super::merged_pairs(active.map(|r| r.engine.bind().and_then(|_| r.engine.candidate_pairs())))
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
    fn ghost_exchange(&self) -> Option<GhostExchange> {
        Some(self.exchange)
    }
    fn set_ghost_exchange(&mut self, e: GhostExchange) -> CollideResult<()> {
        CudaSplit::set_ghost_exchange(self, e)
    }
}

/// The GPU ranks in lockstep: each step is enqueued on every rank, each
/// exchange as packs (into the holders' memory, or for NCCL to carry) and
/// unpacks.
struct Lockstep<'a> {
    ranks: &'a mut [GpuRank],
    comms: &'a Comms,
    exchange: GhostExchange,
    shared: u64,
    exchanges: u64,
}

/// One owner's ghosts on one holder: its places in the owner's send list,
/// and in the holder's receive list.
struct Part {
    owner: usize,
    to: usize,
    at: Range<u32>,
    into: Range<u32>,
}

impl Lockstep<'_> {
    /// Every (owner, holder) pair's ghosts, the two lists checked against each other.
    fn parts(&self) -> CollideResult<Vec<Part>> {
        let mut parts = Vec::new();
        for (to, rank) in self.ranks.iter().enumerate() {
            for (owner, into) in &rank.recvs {
                let o = &self.ranks[*owner];
                let at = o.sends.iter().find(|s| s.0 == to).map(|s| s.1.clone());
                let at = at.ok_or_else(|| CollideError::Settings(format!("rank {owner} sends rank {to} nothing")))?;
                if at.len() != into.len() {
                    return Err(CollideError::Settings(format!(
                        "rank {owner} sends rank {to} {} ghosts, it takes {}",
                        at.len(),
                        into.len()
                    )));
                }
                parts.push(Part { owner: *owner, to, at, into: into.clone() });
            }
        }
        Ok(parts)
    }

    /// Waits for every rank's stream.
    fn wait(&self) -> CollideResult<()> {
        for rank in self.ranks.iter().filter(|r| r.active) {
            cuda_runtime::synchronize(rank.engine.stream(), "waiting for a rank's solver")?;
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
        let parts = self.parts()?;
        self.shared += parts.iter().map(|p| p.into.len() as u64).sum::<u64>();
        // This exchange's half of each rank's `into`.
        let half = |r: &GpuRank| r.into.ptr() + (self.exchanges % 2) * r.out.len() * 4;
        match self.exchange {
            GhostExchange::Nccl => {
                for rank in self.ranks.iter().filter(|r| r.active) {
                    let count = rank.sends.last().map_or(0, |s| s.1.end);
                    rank.engine.bind()?;
                    rank.engine.pack(what, rank.send.ptr(), count, rank.out.ptr())?;
                }
                let moves: Vec<Move> = parts
                    .iter()
                    .map(|p| Move {
                        from: p.owner,
                        src: self.ranks[p.owner].out.ptr() + p.at.start as u64 * bytes,
                        to: p.to,
                        dst: half(&self.ranks[p.to]) + p.into.start as u64 * bytes,
                        bytes: p.into.len() as u64 * bytes,
                    })
                    .collect();
                self.comms.exchange(&moves).map_err(crate::compaction::Error::from)?;
            }
            GhostExchange::Peer => {
                // A holder unpacks once every owner's pack is written. An owner writes the holder's half of
                // `into` that the exchange before last used: when the holder sends it records too, it unpacked
                // that one before packing those, which the owner waited for at the last exchange; otherwise the
                // owner waits for the holder's last step.
                let record = |e: &CudaEvent, r: &GpuRank| e.record(r.engine.stream()).map_err(launch_err("an event"));
                let wait = |r: &GpuRank, e: &CudaEvent| r.engine.stream().wait(e).map_err(launch_err("an event"));
                for r in self.ranks.iter().filter(|r| r.active) {
                    record(&r.ready, r)?;
                }
                for p in &parts {
                    let (o, to) = (&self.ranks[p.owner], &self.ranks[p.to]);
                    o.engine.bind()?;
                    if !parts.iter().any(|q| q.owner == p.to && q.to == p.owner) {
                        wait(o, &to.ready)?;
                    }
                    let places = o.send.ptr() + p.at.start as u64 * 4;
                    o.engine.pack(what, places, p.at.len() as u32, half(to) + p.into.start as u64 * bytes)?;
                }
                for r in self.ranks.iter().filter(|r| r.active) {
                    record(&r.packed, r)?;
                }
                for p in &parts {
                    wait(&self.ranks[p.to], &self.ranks[p.owner].packed)?;
                }
            }
        }
        for rank in self.ranks.iter().filter(|r| r.active) {
            let count = rank.recvs.last().map_or(0, |s| s.1.end);
            rank.engine.bind()?;
            rank.engine.unpack(what, rank.recv.ptr(), count, half(rank))?;
        }
        Ok(())
    }

    fn every_round(&self) -> bool {
        true
    }
}
