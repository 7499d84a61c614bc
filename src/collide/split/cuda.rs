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
//!    [`blocks`]) goes to that rank as a ghost (collide_halo): a body there
//!    whose box meets this body's has its centre in the grown box.
//! 3. **Broad and narrow phase,** each GPU as one engine runs them; a rank
//!    keeps the pairs and walls of its own bodies.
//! 4. **Solver,** the GPU engine's program of steps (`cuda/solve.rs`)
//!    enqueued on every rank; after a step that changes what only an owner
//!    knows, each owner packs the values its ghosts elsewhere need, one NCCL
//!    group of sends and receives carries them, and each rank unpacks them
//!    over its ghosts. The host waits for nothing between the steps.

use std::ops::Range;
use std::time::Instant;

use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg};

use super::{Holding, SplitStats, held_bodies, migrate};
use crate::collide::cpu::{Kept, Shared};
use crate::collide::cuda::{CudaCollide, CudaRanks, SPLIT, solve_setup, solve_substep};
use crate::collide::layout::{Body, Contact, World};
use crate::collide::{
    CollideError, CollideResult, CollideSettings, Engine, FrameStats, Frontier, StageId, Substep, stage,
};
use crate::compaction::cuda::{CudaBackend, CudaBuffer};
use crate::compaction::{Algorithm, Backend, Keep, Report};
use crate::cuda_runtime::nccl::{Comms, Move};
use crate::cuda_runtime::{self, Spec};

/// u32s of a body and of a contact: the widths collide_pack moves them in.
const BODY_WORDS: u32 = (std::mem::size_of::<Body>() / 4) as u32;
const CONTACT_WORDS: u32 = (std::mem::size_of::<Contact>() / 4) as u32;
/// split.cu's SPLIT_MISSING: no body of that spawn number here.
const MISSING: u32 = u32::MAX;

/// split.cu's kernels on one GPU.
struct Kernels {
    pack: CudaFunction,
    mine: CudaFunction,
    iota: CudaFunction,
    bound_for: CudaFunction,
    reach: CudaFunction,
    halo: CudaFunction,
    name_contacts: CudaFunction,
    place: CudaFunction,
    found: CudaFunction,
    place_contacts: CudaFunction,
    places_of: CudaFunction,
    ids_of: CudaFunction,
    mark: CudaFunction,
    marked_contacts: CudaFunction,
}

impl Kernels {
    fn new(b: &CudaBackend) -> CollideResult<Kernels> {
        let f = |name: &str| b.kernels().function(&SPLIT, &Spec::default(), name);
        Ok(Kernels {
            pack: f("collide_pack")?,
            mine: f("collide_mine")?,
            iota: f("collide_iota")?,
            bound_for: f("collide_bound_for")?,
            reach: f("collide_reach")?,
            halo: f("collide_halo")?,
            name_contacts: f("collide_name_contacts")?,
            place: f("collide_where")?,
            found: f("collide_found")?,
            place_contacts: f("collide_place_contacts")?,
            places_of: f("collide_places_of")?,
            ids_of: f("collide_ids_of")?,
            mark: f("collide_mark")?,
            marked_contacts: f("collide_marked_contacts")?,
        })
    }
}

/// A grid-stride launch over `count` items (at least one block).
fn over(count: u64) -> LaunchConfig {
    let blocks = count.div_ceil(256).clamp(1, 65_535) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
}

fn launched(r: Result<impl Sized, cudarc::driver::DriverError>, name: &'static str) -> CollideResult<()> {
    r.map(drop).map_err(|e| CollideError::Gpu(cuda_runtime::driver_error(name)(e)))
}

/// A u32 buffer of zeroes.
fn zeroed_u32(b: &CudaBackend, n: u64) -> CollideResult<CudaBuffer<u32>> {
    let out: CudaBuffer<u32> = b.alloc(n.max(1))?;
    // SAFETY: the range is the buffer's, on the backend's stream's device.
    let r = unsafe { cudarc::driver::sys::cuMemsetD32Async(out.ptr(), 0, n.max(1) as usize, b.stream().cu_stream()) };
    r.result().map_err(|e| CollideError::Gpu(cuda_runtime::driver_error("zeroing a table")(e)))?;
    Ok(out)
}

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
    /// The records of an exchange in flight (a body's worth each, at most).
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

impl Peer {
    fn new(b: &CudaBackend) -> CollideResult<Peer> {
        Ok(Peer {
            migrants: b.alloc(1)?,
            contacts: b.alloc(1)?,
            ghosts: b.alloc(1)?,
            migrants_out: b.alloc(1)?,
            contacts_out: b.alloc(1)?,
            ghosts_out: b.alloc(1)?,
        })
    }
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

/// Runs `f` on every rank at once, a host thread each (its GPU's context
/// current there): a rank's selects wait for their counts, and the ranks'
/// waits overlap.
fn each_rank<T: Send>(
    ranks: &mut [GpuRank],
    f: impl Fn(usize, &mut GpuRank) -> CollideResult<T> + Sync,
) -> CollideResult<Vec<T>> {
    std::thread::scope(|scope| {
        let f = &f;
        let running: Vec<_> = ranks
            .iter_mut()
            .enumerate()
            .map(|(r, rank)| {
                scope.spawn(move || {
                    rank.engine.bind()?;
                    f(r, rank)
                })
            })
            .collect();
        running
            .into_iter()
            .map(|r| r.join().unwrap_or_else(|_| Err(CollideError::Settings("a rank's thread panicked".into()))))
            .collect()
    })
}

/// Room for `len` items in `buffer`: it grows (with room to spare) when it
/// holds fewer, and keeps its allocation otherwise.
fn room<T: crate::compaction::Element>(b: &CudaBackend, buffer: &mut CudaBuffer<T>, len: u64) -> CollideResult<()> {
    if buffer.capacity() < len.max(1) {
        *buffer = b.alloc(len.max(1) + len / 8)?;
    }
    Ok(buffer.set_len(len)?)
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
            out.push(GpuRank {
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
        };
        split.set_bodies(bodies)?;
        Ok(split)
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

    /// Loads every rank from bodies and contacts on the host (the first
    /// frame, or a rebalance): ownership and halo as the CPU ranks find
    /// them. Returns how many bodies changed rank.
    fn load_from_host(&mut self, mut holds: Vec<Holding>) -> CollideResult<u64> {
        let w = self.world;
        let migrated = migrate(&mut holds.iter_mut().collect::<Vec<_>>(), &w);
        let held = held_bodies(&holds.iter().collect::<Vec<_>>(), &w);
        let n = self.bodies as usize;
        let mut owner = vec![u32::MAX; n];
        for (r, h) in holds.iter().enumerate() {
            h.owned.iter().for_each(|b| owner[b.id as usize] = r as u32);
        }
        self.ranges = holds.iter().map(|h| h.range.clone()).collect();
        let ranks = self.ranks.len();
        // ids[to][owner]: the ghosts `to` takes from each owner, in the order it holds them.
        let ids: Vec<Vec<Vec<u32>>> = held
            .iter()
            .enumerate()
            .map(|(to, bodies)| {
                let mut from = vec![Vec::new(); ranks];
                for b in bodies.iter().filter(|b| owner[b.id as usize] != to as u32) {
                    from[owner[b.id as usize] as usize].push(b.id);
                }
                from
            })
            .collect();
        self.set_ranges()?;
        for (r, (rank, (h, held))) in self.ranks.iter_mut().zip(holds.iter().zip(&held)).enumerate() {
            rank.engine.bind()?;
            rank.active = !h.owned.is_empty();
            rank.owned = h.owned.len() as u32;
            let sent: Vec<(usize, &[u32])> = (0..ranks).map(|to| (to, ids[to][r].as_slice())).collect();
            let taken: Vec<(usize, &[u32])> = (0..ranks).map(|o| (o, ids[r][o].as_slice())).collect();
            rank.set_ids(&sent, &taken)?;
            if rank.active {
                rank.engine.load(held, h.range.clone(), &h.previous)?;
            }
        }
        Ok(migrated)
    }

    /// Uploads the ranges: each rank's cuts, and every other rank's range as cubes of cells.
    fn set_ranges(&mut self) -> CollideResult<()> {
        let cuts: Vec<u32> = self.ranges.iter().map(|r| r.start).chain([u32::MAX]).collect();
        let cubes: Vec<Vec<u32>> = self.ranges.iter().map(|r| blocks(r.clone())).collect();
        for (r, rank) in self.ranks.iter_mut().enumerate() {
            rank.engine.bind()?;
            let b = rank.engine.rank_backend();
            rank.cuts = b.upload(&cuts)?;
            rank.blocks = Vec::new();
            for (t, c) in cubes.iter().enumerate() {
                let c: &[u32] = if t == r || c.is_empty() { &[0, 0, 0, 0] } else { c };
                rank.blocks.push((b.upload(c)?, if t == r { 0 } else { c.len() as u32 / 4 }));
            }
        }
        Ok(())
    }

    /// The frame's start on the GPUs (the module's steps 1 and 2): migrants
    /// and their contacts to their new ranks, ghosts to the ranks whose
    /// ranges their boxes reach, every engine loaded. Returns how many
    /// bodies changed rank, or `None` when a rank would hold more than
    /// [`super::REBALANCE`] times its share (nothing has moved then).
    fn hand_over(&mut self) -> CollideResult<Option<u64>> {
        let ranks = self.ranks.len();
        let w = self.world;
        let mut clock = Instant::now();
        let mut lap = |parts: &mut Vec<(String, f64)>, name: &str| {
            parts.push((name.to_string(), clock.elapsed().as_secs_f64() * 1e3));
            clock = Instant::now();
        };
        // What each rank kept of the last frame (its bodies, its contacts by spawn number), and where
        // each of those bodies goes: moves[r][d] bodies from r to d.
        let sorted = each_rank(&mut self.ranks, |_, rank| {
            let (own, named) = (rank.keep()?, rank.name_contacts()?);
            let mut to = Vec::new();
            for d in 0..ranks {
                rank.bound_for(own, &w, d as u32)?;
                to.push(rank.select(own, Picked::Migrants(d))?);
            }
            Ok((own, named, to))
        })?;
        let named: Vec<u32> = sorted.iter().map(|s| s.1).collect();
        let moves: Vec<Vec<u32>> = sorted.into_iter().map(|s| s.2).collect();
        lap(&mut self.parts, "keep and sort out");
        let held: Vec<u64> = (0..ranks).map(|d| moves.iter().map(|m| m[d] as u64).sum()).collect();
        let most = self.bodies as f64 / ranks as f64 * super::REBALANCE;
        if held.iter().any(|&h| h as f64 > most) {
            return Ok(None);
        }
        let crossing = || (0..ranks).flat_map(|r| (0..ranks).filter(move |&d| d != r).map(move |d| (r, d)));
        let migrated: u64 = crossing().map(|(r, d)| moves[r][d] as u64).sum();

        // Each rank's bodies now: those it kept, then those it takes from each rank in order.
        for (d, rank) in self.ranks.iter_mut().enumerate() {
            rank.engine.bind()?;
            room(rank.engine.rank_backend(), &mut rank.now, held[d])?;
            rank.pack(rank.own.ptr(), BODY_WORDS, &rank.peers[d].migrants, moves[d][d], rank.now.ptr())?;
        }
        let now: Vec<u64> = self.ranks.iter().map(|r| r.now.ptr()).collect();
        let mut carried = Vec::new();
        let mut at = moves.iter().enumerate().map(|(d, m)| m[d] as u64).collect::<Vec<u64>>();
        for (r, d) in crossing().filter(|&(r, d)| moves[r][d] > 0) {
            let count = moves[r][d];
            let rank = &mut self.ranks[r];
            rank.engine.bind()?;
            let peer = &mut rank.peers[d];
            room(rank.engine.rank_backend(), &mut peer.migrants_out, count as u64 * BODY_WORDS as u64)?;
            let (src, places) = (peer.migrants_out.ptr(), &rank.peers[d].migrants);
            rank.pack(rank.own.ptr(), BODY_WORDS, places, count, src)?;
            carried.push(Move { from: r, src, to: d, dst: now[d] + at[d] * 80, bytes: count as u64 * 80 });
            at[d] += count as u64;
        }
        self.exchange(&carried)?;

        // The migrants' contacts, from the ranks they left (a contact between two ranks comes from both).
        let mut contacts = vec![vec![0u32; ranks]; ranks];
        for (r, d) in crossing().filter(|&(r, d)| moves[r][d] > 0) {
            let rank = &mut self.ranks[r];
            rank.engine.bind()?;
            let value = d as u32 + 1;
            rank.mark(d, moves[r][d], value)?;
            rank.marked_contacts(named[r], value)?;
            contacts[r][d] = rank.select(named[r], Picked::Contacts(d))?;
            rank.mark(d, moves[r][d], 0)?;
        }
        let mut taken = named.clone();
        for (d, rank) in self.ranks.iter_mut().enumerate() {
            let total = named[d] + (0..ranks).map(|r| contacts[r][d]).sum::<u32>();
            rank.engine.bind()?;
            room(rank.engine.rank_backend(), &mut rank.taken, total as u64)?;
            let bytes = named[d] as usize * 64;
            // SAFETY: both hold at least `named[d]` contacts on this rank's device.
            unsafe {
                let (to, from) = (rank.taken.ptr(), rank.named.ptr());
                cuda_runtime::copy_dtod(rank.engine.stream(), to, from, bytes, "keeping contacts")
            }?;
        }
        let into: Vec<u64> = self.ranks.iter().map(|r| r.taken.ptr()).collect();
        let mut carried = Vec::new();
        for (r, d) in crossing().filter(|&(r, d)| contacts[r][d] > 0) {
            let count = contacts[r][d];
            let rank = &mut self.ranks[r];
            rank.engine.bind()?;
            let peer = &mut rank.peers[d];
            room(rank.engine.rank_backend(), &mut peer.contacts_out, count as u64 * CONTACT_WORDS as u64)?;
            let (src, places) = (peer.contacts_out.ptr(), &rank.peers[d].contacts);
            rank.pack(rank.named.ptr(), CONTACT_WORDS, places, count, src)?;
            carried.push(Move { from: r, src, to: d, dst: into[d] + taken[d] as u64 * 64, bytes: count as u64 * 64 });
            taken[d] += count;
        }
        self.exchange(&carried)?;
        lap(&mut self.parts, "migrate");

        // The halo: each rank's bodies whose grown boxes reach another rank's range.
        let reaches = each_rank(&mut self.ranks, |r, rank| rank.reach(held[r] as u32, &w))?;
        // A margin for the rounding of the grown box's bounds.
        let reach = reaches.into_iter().fold(0.0f32, f32::max) * 1.001 + 1e-6;
        let ghosts = each_rank(&mut self.ranks, |r, rank| {
            let mut to = vec![0u32; ranks];
            for t in (0..ranks).filter(|&t| t != r && held[t] > 0) {
                rank.halo(held[r] as u32, &w, reach, t)?;
                to[t] = rank.select(held[r] as u32, Picked::Ghosts(t))?;
            }
            Ok(to)
        })?;
        lap(&mut self.parts, "halo");

        // Every engine loaded: its bodies, then its ghosts by owner.
        let mut clock = Instant::now();
        let mut lap = |parts: &mut Vec<(String, f64)>, name: &str| {
            parts.push((name.to_string(), clock.elapsed().as_secs_f64() * 1e3));
            clock = Instant::now();
        };
        let mut bodies_at = vec![0u64; ranks];
        for (t, rank) in self.ranks.iter_mut().enumerate() {
            rank.engine.bind()?;
            let n = held[t] + (0..ranks).map(|r| ghosts[r][t] as u64).sum::<u64>();
            rank.active = held[t] > 0;
            rank.owned = held[t] as u32;
            if !rank.active {
                continue;
            }
            bodies_at[t] = rank.engine.prepare(n, self.ranges[t].clone())?;
            // SAFETY: both hold at least held[t] bodies on this rank's device.
            unsafe {
                let (stream, from) = (rank.engine.stream(), rank.now.ptr());
                cuda_runtime::copy_dtod(stream, bodies_at[t], from, held[t] as usize * 80, "loading bodies")
            }?;
        }
        let mut carried = Vec::new();
        let mut at = held.clone();
        for (r, t) in crossing().filter(|&(r, t)| ghosts[r][t] > 0) {
            let count = ghosts[r][t];
            let rank = &mut self.ranks[r];
            rank.engine.bind()?;
            let peer = &mut rank.peers[t];
            room(rank.engine.rank_backend(), &mut peer.ghosts_out, count as u64 * BODY_WORDS as u64)?;
            let (src, places) = (peer.ghosts_out.ptr(), &rank.peers[t].ghosts);
            rank.pack(rank.now.ptr(), BODY_WORDS, places, count, src)?;
            carried.push(Move { from: r, src, to: t, dst: bodies_at[t] + at[t] * 80, bytes: count as u64 * 80 });
            at[t] += count as u64;
        }
        lap(&mut self.parts, "load: prepare");
        self.exchange(&carried)?;
        // The ghosts' spawn numbers on both sides, in one order: what the exchanges' lists are made of.
        for (r, rank) in self.ranks.iter_mut().enumerate() {
            rank.engine.bind()?;
            let sends: Vec<(usize, u64, u32, u64)> = (0..ranks)
                .filter(|&t| t != r)
                .map(|t| (t, rank.now.ptr(), ghosts[r][t], rank.peers[t].ghosts.ptr()))
                .collect();
            let mut at = held[r];
            let mut takes = Vec::new();
            for o in (0..ranks).filter(|&o| o != r) {
                takes.push((o, bodies_at[r] + at * 80, ghosts[o][r]));
                at += ghosts[o][r] as u64;
            }
            rank.ids_from_device(&sends, &takes)?;
        }
        lap(&mut self.parts, "load: ghosts");
        // Each rank's previous contacts, named by its bodies' places as loaded.
        each_rank(&mut self.ranks, |t, rank| if rank.active { rank.load_contacts(taken[t]) } else { Ok(()) })?;
        lap(&mut self.parts, "load: contacts");
        Ok(Some(migrated))
    }

    /// Everything on the host: each rank's bodies and contacts by spawn
    /// number (a rebalance loads them again).
    fn gather(&mut self) -> CollideResult<Vec<Holding>> {
        let mut holds = Vec::new();
        for (r, rank) in self.ranks.iter_mut().enumerate() {
            rank.engine.bind()?;
            let (count, c) = (rank.keep()?, rank.name_contacts()?);
            let b = rank.engine.rank_backend();
            let mut owned = b.download(&rank.own)?;
            owned.truncate(count as usize);
            let mut previous = b.download(&rank.named)?;
            previous.truncate(c as usize);
            holds.push(Holding { owned, previous, range: self.ranges[r].clone() });
        }
        Ok(holds)
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

/// The Morton codes of `range` as aligned cubes of cells, 4 u32 each (x, y,
/// z of the first cell, side): the largest aligned block at each step, so a
/// range cut at a coarse cell's boundary is a few dozen cubes.
fn blocks(range: Range<u32>) -> Vec<u32> {
    let (mut at, end) = (range.start as u64, (range.end as u64).min(1 << 30));
    let mut out = Vec::new();
    while at < end {
        let mut bits = 0;
        while bits + 3 <= 30 && at % (1 << (bits + 3)) == 0 && at + (1 << (bits + 3)) <= end {
            bits += 3;
        }
        // A block of 2^bits codes that is not a cube (bits not a multiple of 3) is never chosen: each
        // step takes a cube, and the next steps the rest.
        let axis = |shift: u32| {
            let mut v = 0u32;
            for i in 0..10 {
                v |= (((at >> (3 * i + shift)) & 1) as u32) << i;
            }
            v
        };
        out.extend_from_slice(&[axis(2), axis(1), axis(0), 1 << (bits / 3)]);
        at += 1 << bits;
    }
    out
}

impl GpuRank {
    /// The library's select over the first `n` of `flags`, into the list
    /// `which` names: how many it kept.
    fn select(&mut self, n: u32, which: Picked) -> CollideResult<u32> {
        self.iota_for(n)?;
        let GpuRank { engine, iota, flags, kept, found, peers, .. } = self;
        let out = match which {
            Picked::Kept => kept,
            Picked::Found => found,
            Picked::Migrants(d) => &mut peers[d].migrants,
            Picked::Contacts(d) => &mut peers[d].contacts,
            Picked::Ghosts(d) => &mut peers[d].ghosts,
        };
        let b = engine.rank_backend();
        room(b, out, n as u64)?;
        if n == 0 {
            return Ok(0);
        }
        flags.set_len(n as u64)?;
        let report = b.select(Algorithm::Lookback, iota, Keep::Flags(flags), out)?;
        Ok(report.count()? as u32)
    }

    /// `iota` holds 0..n at least (grown by collide_iota).
    fn iota_for(&mut self, n: u32) -> CollideResult<()> {
        if self.iota.capacity() < n as u64 {
            let room = n as u64 + n as u64 / 8 + 1;
            self.iota = self.engine.rank_backend().alloc(room)?;
            let (p, count) = (self.iota.ptr(), room as u32);
            let mut l = self.engine.stream().launch_builder(&self.k.iota);
            l.arg(&p).arg(&count);
            // SAFETY: matches collide_iota(u32*, u32); the buffer holds `room` u32s.
            launched(unsafe { l.launch(over(room)) }, "launching collide_iota")?;
        }
        Ok(self.iota.set_len(n as u64)?)
    }

    /// `flags` has room for `n` (its contents unspecified).
    fn flags_for(&mut self, n: u32) -> CollideResult<u64> {
        if self.flags.capacity() < n as u64 {
            self.flags = self.engine.rank_backend().alloc(n as u64 + n as u64 / 8 + 1)?;
        }
        self.flags.set_len(n as u64)?;
        Ok(self.flags.ptr())
    }

    fn stream(&self) -> &std::sync::Arc<CudaStream> {
        self.engine.stream()
    }

    /// Enqueues collide_pack: the `width`-u32 items of `field` at `places` into `records`.
    fn pack(&self, field: u64, width: u32, places: &CudaBuffer<u32>, count: u32, records: u64) -> CollideResult<()> {
        if count == 0 {
            return Ok(());
        }
        let (pp, zero) = (places.ptr(), 0u32);
        let mut l = self.stream().launch_builder(&self.k.pack);
        l.arg(&field).arg(&width).arg(&pp).arg(&count).arg(&records).arg(&width).arg(&zero);
        // SAFETY: matches collide_pack(const u32*, u32, const u32*, u32, u32*, u32, u32); `places` holds `count`
        // places of items in `field`, and `records` room for `count` items.
        launched(unsafe { l.launch(over(count as u64 * width as u64)) }, "launching collide_pack")
    }

    /// The bodies it owned after the last frame (collide_mine's flags), in
    /// the engine's order, into `own`: how many.
    fn keep(&mut self) -> CollideResult<u32> {
        if !self.active {
            return Ok(0);
        }
        let n = self.engine.len();
        self.flags_for(n)?;
        // SAFETY: `mine` and `flags` hold at least n bytes on this device.
        unsafe {
            let (stream, to, from) = (self.stream(), self.flags.ptr(), self.mine.ptr());
            cuda_runtime::copy_dtod(stream, to, from, n as usize, "copying flags")
        }?;
        let count = self.select(n, Picked::Kept)?;
        room(self.engine.rank_backend(), &mut self.own, count as u64)?;
        self.pack(self.engine.bodies_ptr(), BODY_WORDS, &self.kept, count, self.own.ptr())?;
        Ok(count)
    }

    /// Its last frame's contacts (after the solver), named by spawn number, into `named`: how many.
    fn name_contacts(&mut self) -> CollideResult<u32> {
        let count = if self.active { self.engine.contact_count() as u32 } else { 0 };
        room(self.engine.rank_backend(), &mut self.named, count as u64)?;
        if count > 0 {
            let (cp, bp, op) = (self.engine.contacts_ptr(), self.engine.bodies_ptr(), self.named.ptr());
            let mut l = self.stream().launch_builder(&self.k.name_contacts);
            l.arg(&cp).arg(&count).arg(&bp).arg(&op);
            // SAFETY: matches collide_name_contacts(const Contact*, u32, const Body*, Contact*); the engine's list
            // holds `count` contacts naming its bodies, and `named` room for them.
            launched(unsafe { l.launch(over(count as u64)) }, "launching collide_name_contacts")?;
        }
        Ok(count)
    }

    /// Flags the `count` bodies of `own` whose codes lie in rank d's range.
    fn bound_for(&mut self, count: u32, w: &World, d: u32) -> CollideResult<()> {
        let fp = self.flags_for(count)?;
        if count == 0 {
            return Ok(());
        }
        let (bp, cp) = (self.own.ptr(), self.cuts.ptr());
        let mut l = self.stream().launch_builder(&self.k.bound_for);
        l.arg(&bp).arg(&count).arg(w).arg(&cp).arg(&d).arg(&fp);
        // SAFETY: matches collide_bound_for(const Body*, u32, World, const u32*, u32, u8*); `own` holds `count`,
        // the cuts ranks + 1 (d < ranks), the flags `count`.
        launched(unsafe { l.launch(over(count as u64)) }, "launching collide_bound_for")
    }

    /// Marks (or with 0 unmarks) its `count` migrants to rank d in the mark table.
    fn mark(&self, d: usize, count: u32, value: u32) -> CollideResult<()> {
        if count == 0 {
            return Ok(());
        }
        let (bp, pp, mp) = (self.own.ptr(), self.peers[d].migrants.ptr(), self.mark.ptr());
        let mut l = self.stream().launch_builder(&self.k.mark);
        l.arg(&bp).arg(&pp).arg(&count).arg(&value).arg(&mp);
        // SAFETY: matches collide_mark(const Body*, const u32*, u32, u32, u32*); the places name bodies of `own`,
        // whose spawn numbers index the table (a slot per body of the scene).
        launched(unsafe { l.launch(over(count as u64)) }, "launching collide_mark")
    }

    /// Flags the `count` contacts of `named` that name a body marked `value`.
    fn marked_contacts(&mut self, count: u32, value: u32) -> CollideResult<()> {
        let fp = self.flags_for(count)?;
        if count == 0 {
            return Ok(());
        }
        let (cp, mp) = (self.named.ptr(), self.mark.ptr());
        let mut l = self.stream().launch_builder(&self.k.marked_contacts);
        l.arg(&cp).arg(&count).arg(&mp).arg(&value).arg(&fp);
        // SAFETY: matches collide_marked_contacts(const Contact*, u32, const u32*, u32, u8*); the contacts name
        // bodies (or walls) by spawn number, which index the table.
        launched(unsafe { l.launch(over(count as u64)) }, "launching collide_marked_contacts")
    }

    /// The largest reach of a box past its body's centre among the first `count` bodies of `now`.
    fn reach(&mut self, count: u32, w: &World) -> CollideResult<f32> {
        if count == 0 {
            return Ok(0.0);
        }
        // SAFETY: the word is this one-u32 allocation, on this stream's device.
        let r = unsafe { cudarc::driver::sys::cuMemsetD32Async(self.most.ptr(), 0, 1, self.stream().cu_stream()) };
        r.result().map_err(|e| CollideError::Gpu(cuda_runtime::driver_error("zeroing a word")(e)))?;
        let (bp, mp) = (self.now.ptr(), self.most.ptr());
        let mut l = self.stream().launch_builder(&self.k.reach);
        l.arg(&bp).arg(&count).arg(w).arg(&mp);
        // SAFETY: matches collide_reach(const Body*, u32, World, u32*); `now` holds `count`, `most` one u32.
        launched(unsafe { l.launch(over(count as u64)) }, "launching collide_reach")?;
        Ok(f32::from_bits(self.engine.rank_backend().download(&self.most)?[0]))
    }

    /// Flags the first `count` bodies of `now` whose boxes grown by `reach` meet rank t's range.
    fn halo(&mut self, count: u32, w: &World, reach: f32, t: usize) -> CollideResult<()> {
        let fp = self.flags_for(count)?;
        if count == 0 {
            return Ok(());
        }
        let (bp, cp, cubes) = (self.now.ptr(), self.blocks[t].0.ptr(), self.blocks[t].1);
        let mut l = self.stream().launch_builder(&self.k.halo);
        l.arg(&bp).arg(&count).arg(w).arg(&reach).arg(&cp).arg(&cubes).arg(&fp);
        // SAFETY: matches collide_halo(const Body*, u32, World, float, const uint4*, u32, u8*); the cubes' buffer
        // holds `cubes` uint4s (at least one), the flags `count`.
        launched(unsafe { l.launch(over(count as u64)) }, "launching collide_halo")
    }

    /// Sets the ghosts' spawn numbers from the host: `sent[t]` those it
    /// sends rank t, `taken[o]` those it takes from owner o, in order.
    fn set_ids(&mut self, sent: &[(usize, &[u32])], taken: &[(usize, &[u32])]) -> CollideResult<()> {
        let (sends, ids) = parts(sent);
        let (recvs, rids) = parts(taken);
        let b = self.engine.rank_backend();
        self.sent_ids = b.upload(if ids.is_empty() { &[0] } else { &ids })?;
        self.recv_ids = b.upload(if rids.is_empty() { &[0] } else { &rids })?;
        self.sends = sends;
        self.recvs = recvs;
        Ok(())
    }

    /// Sets the ghosts' spawn numbers on the device: `sends` as (rank,
    /// bodies, count, places) of the bodies it sends each rank, `takes` as
    /// (owner, first body, count) of the ghosts it took from each.
    fn ids_from_device(&mut self, sends: &[(usize, u64, u32, u64)], takes: &[(usize, u64, u32)]) -> CollideResult<()> {
        let b = self.engine.rank_backend();
        let total = |c: u32, acc: u64| acc + c as u64;
        self.sent_ids = b.alloc(sends.iter().fold(0, |a, s| total(s.2, a)).max(1))?;
        self.recv_ids = b.alloc(takes.iter().fold(0, |a, s| total(s.2, a)).max(1))?;
        self.sends.clear();
        self.recvs.clear();
        let mut at = 0u32;
        for &(t, bodies, count, places) in sends.iter().filter(|s| s.2 > 0) {
            self.ids_of(bodies, places, count, self.sent_ids.ptr() + at as u64 * 4)?;
            self.sends.push((t, at..at + count));
            at += count;
        }
        let mut at = 0u32;
        for &(o, bodies, count) in takes.iter().filter(|s| s.2 > 0) {
            self.ids_of(bodies, 0, count, self.recv_ids.ptr() + at as u64 * 4)?;
            self.recvs.push((o, at..at + count));
            at += count;
        }
        Ok(())
    }

    /// Enqueues collide_ids_of: the spawn numbers of `count` bodies (at `places`, or the first ones when 0).
    fn ids_of(&self, bodies: u64, places: u64, count: u32, ids: u64) -> CollideResult<()> {
        let mut l = self.stream().launch_builder(&self.k.ids_of);
        l.arg(&bodies).arg(&places).arg(&count).arg(&ids);
        // SAFETY: matches collide_ids_of(const Body*, const u32*, u32, u32*); the places (or the first `count`)
        // name bodies of the buffer, and `ids` has room for `count`.
        launched(unsafe { l.launch(over(count as u64)) }, "launching collide_ids_of")
    }

    /// Enqueues the place table of the engine's bodies (a slot per spawn number).
    fn place_table(&self) -> CollideResult<()> {
        let (n, pp, bp) = (self.engine.len(), self.place.ptr(), self.engine.bodies_ptr());
        // SAFETY: the table holds a u32 per body of the scene, on this stream's device.
        let r = unsafe {
            cudarc::driver::sys::cuMemsetD32Async(pp, MISSING, self.place.len() as usize, self.stream().cu_stream())
        };
        r.result().map_err(|e| CollideError::Gpu(cuda_runtime::driver_error("clearing the place table")(e)))?;
        let mut l = self.stream().launch_builder(&self.k.place);
        l.arg(&bp).arg(&n).arg(&pp);
        // SAFETY: matches collide_where(const Body*, u32, u32*); the engine holds n bodies whose spawn numbers
        // index the table.
        launched(unsafe { l.launch(over(n as u64)) }, "launching collide_where")
    }

    /// The previous contacts of the bodies loaded (the first `count` of
    /// `taken`): those whose bodies are both here, named by their places as
    /// loaded, into the engine's warm start.
    fn load_contacts(&mut self, count: u32) -> CollideResult<()> {
        self.place_table()?;
        let fp = self.flags_for(count)?;
        if count > 0 {
            let (cp, pp) = (self.taken.ptr(), self.place.ptr());
            let mut l = self.stream().launch_builder(&self.k.found);
            l.arg(&cp).arg(&count).arg(&pp).arg(&fp);
            // SAFETY: matches collide_found(const Contact*, u32, const u32*, u8*); the contacts name bodies by spawn
            // number, which index the table; the flags hold `count`.
            launched(unsafe { l.launch(over(count as u64)) }, "launching collide_found")?;
        }
        let found = self.select(count, Picked::Found)?;
        let slot = self.engine.previous_slot(found as u64)?;
        if found > 0 {
            let (cp, kp, pp) = (self.taken.ptr(), self.found.ptr(), self.place.ptr());
            let mut l = self.stream().launch_builder(&self.k.place_contacts);
            l.arg(&cp).arg(&kp).arg(&found).arg(&pp).arg(&slot);
            // SAFETY: matches collide_place_contacts(const Contact*, const u32*, u32, const u32*, Contact*);
            // `found` indices of contacts whose bodies are in the table, and the slot room for them.
            launched(unsafe { l.launch(over(found as u64)) }, "launching collide_place_contacts")?;
        }
        Ok(())
    }

    /// After the broad and narrow phase: which bodies it owns, and the
    /// exchanges' lists (the ghosts' places on both sides).
    fn index(&mut self, w: &World) -> CollideResult<()> {
        let n = self.engine.len() as u64;
        if self.mine.capacity() < n {
            self.mine = self.engine.rank_backend().alloc(n + n / 8 + 1)?;
        }
        self.mine.set_len(n)?;
        let (bp, mp, (lo, hi)) = (self.engine.bodies_ptr(), self.mine.ptr(), self.engine.owned_range());
        let count = n as u32;
        let mut l = self.stream().launch_builder(&self.k.mine);
        l.arg(&bp).arg(&count).arg(w).arg(&lo).arg(&hi).arg(&mp);
        // SAFETY: matches collide_mine(const Body*, u32, World, u32, u32, u8*); both hold n.
        launched(unsafe { l.launch(over(n)) }, "launching collide_mine")?;
        self.place_table()?;
        let b = self.engine.rank_backend();
        let (s, r) = (self.sends.last().map_or(0, |p| p.1.end), self.recvs.last().map_or(0, |p| p.1.end));
        self.send = b.alloc(s.max(1) as u64)?;
        self.recv = b.alloc(r.max(1) as u64)?;
        for (ids, places, count) in [(&self.sent_ids, &self.send, s), (&self.recv_ids, &self.recv, r)] {
            if count == 0 {
                continue;
            }
            let (tp, ip, pp) = (self.place.ptr(), ids.ptr(), places.ptr());
            let mut l = self.stream().launch_builder(&self.k.places_of);
            l.arg(&tp).arg(&ip).arg(&count).arg(&pp);
            // SAFETY: matches collide_places_of(const u32*, const u32*, u32, u32*); every id is a body of this
            // engine, whose place the table holds; `places` has room for `count`.
            launched(unsafe { l.launch(over(count as u64)) }, "launching collide_places_of")?;
        }
        let words = s.max(r).max(1) as u64 * BODY_WORDS as u64;
        if self.out.len() < words {
            self.out = b.alloc(words)?;
            self.into = b.alloc(words)?;
        }
        Ok(())
    }
}

/// Lists by peer, concatenated: each peer's part, and the whole.
fn parts(lists: &[(usize, &[u32])]) -> (Vec<(usize, Range<u32>)>, Vec<u32>) {
    let (mut parts, mut all) = (Vec::new(), Vec::new());
    for &(peer, list) in lists.iter().filter(|l| !l.1.is_empty()) {
        parts.push((peer, all.len() as u32..(all.len() + list.len()) as u32));
        all.extend_from_slice(list);
    }
    (parts, all)
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
        for rank in self.ranks.iter().filter(|r| r.active) {
            let count = rank.sends.last().map_or(0, |s| s.1.end);
            rank.engine.bind()?;
            rank.engine.pack(what, &rank.send, count, rank.out.ptr())?;
        }
        let mut moves = Vec::new();
        for (to, rank) in self.ranks.iter().enumerate() {
            for (owner, part) in &rank.recvs {
                let o = &self.ranks[*owner];
                let at = o.sends.iter().find(|s| s.0 == to).map(|s| s.1.clone());
                let at = at.ok_or_else(|| CollideError::Settings(format!("rank {owner} sends rank {to} nothing")))?;
                if at.len() != part.len() {
                    return Err(CollideError::Settings(format!(
                        "rank {owner} sends rank {to} {} ghosts, it takes {}",
                        at.len(),
                        part.len()
                    )));
                }
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

#[cfg(test)]
mod tests {
    use super::blocks;

    /// A code's cell (x, y, z): the inverse of physics::morton's interleave.
    fn cell(code: u32) -> [u32; 3] {
        let axis = |shift: u32| (0..10).fold(0, |v, i| v | (((code >> (3 * i + shift)) & 1) << i));
        [axis(2), axis(1), axis(0)]
    }

    /// The cubes of a range hold exactly its codes: each code inside lies
    /// in one cube, and none outside lies in any.
    #[test]
    fn a_ranges_cubes_hold_exactly_its_codes() {
        let ranges =
            [0..1 << 30, 4096..4096 + 8 * 512, 12_345..98_765, 1_000_000..1_000_001, (1 << 29) - 70_000..1 << 29];
        for range in ranges {
            let cubes = blocks(range.clone());
            assert!(cubes.len() / 4 <= 7 * 2 * 10, "{range:?}: {} cubes", cubes.len() / 4);
            let lo = range.start.saturating_sub(5000);
            let hi = range.end.saturating_add(5000).min(1 << 30);
            // The whole space is too many codes to walk: its ends and a stride through it.
            let step = ((hi - lo) / 200_000).max(1);
            for code in (lo..hi).step_by(step as usize).chain([range.start, range.end.saturating_sub(1)]) {
                let [x, y, z] = cell(code);
                let inside = cubes.chunks(4).filter(|c| {
                    x >= c[0] && x < c[0] + c[3] && y >= c[1] && y < c[1] + c[3] && z >= c[2] && z < c[2] + c[3]
                });
                assert_eq!(inside.count(), range.contains(&code) as usize, "{range:?}: code {code}");
            }
        }
    }
}
