//! The collision stages on the CPU: the twin of `kernels/collide/`, one rayon
//! loop per kernel over the same buffers, each calling the function of the
//! same name in `physics/`. Candidates are appended through an atomic
//! counter as on the GPU (a block at a time); the solver gathers each body's
//! fixed-point sums instead of adding them with atomics. Integer sums are
//! order-free and the readbacks are sorted, so the results are those of the
//! GPU bit for bit. It is the reference the CUDA engine is checked against
//! and what runs without a GPU.
//!
//! Over 600 lines, kept whole: one `Engine` method per kernel of collide.cu,
//! side by side with it; the colouring is in cpu/colour.rs, the solver's
//! steps in cpu/solve.rs, and what a rank of a split collider needs
//! (`collide::split`) in cpu/rank.rs.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::AcqRel, Ordering::Relaxed};

use rayon::prelude::*;

use crate::clocks::HostClock;
use crate::collide::driver::CANDIDATE_SLOT_BYTES;
use crate::collide::layout::{Body, Contact, LEAF, Node, World, numbered, pack, unpack};
use crate::collide::physics::{Inertia, scale};
use crate::collide::{
    CollideError, CollideResult, DEAD64, Engine, FrameEnd, FramePath, SortMethod, StageId, Substep, order, physics,
    words,
};
use crate::compaction::{Backend, CpuBackend, Error};
use crate::frontier::{self, LevelWords, Step, host, status};
use crate::memory;

mod colour;
mod rank;
mod solve;
#[cfg(test)]
mod tests;

pub(crate) use rank::{Kept, Values};
pub(crate) use solve::{Ranks, Shared};
pub(crate) use solve::{setup as solve_setup, substep as solve_substep};

/// The CPU engine: bodies, tree and lists in host memory.
pub struct CpuCollide {
    backend: CpuBackend,
    world: World,
    bodies: Vec<Body>,
    /// Sorted Morton codes and the body id of each.
    keys: Vec<u32>,
    ids: Vec<u32>,
    /// Every body's box, from `codes`; the leaves copy them.
    boxes: Vec<([f32; 3], [f32; 3])>,
    /// `reorder`'s room: the bodies and boxes in their new order, and each
    /// body's new place.
    moved: Vec<Body>,
    moved_boxes: Vec<([f32; 3], [f32; 3])>,
    places: Vec<u32>,
    /// n - 1 internal nodes, then n leaves.
    nodes: Vec<Node>,
    /// Each node's parent; the root's is `u32::MAX`.
    parents: Vec<AtomicU32>,
    /// Arrivals per internal node during `refit`, and the boxes it writes
    /// (min xyz, max xyz as f32 bits).
    arrivals: Vec<AtomicU32>,
    bounds: Vec<[AtomicU32; 6]>,
    /// The candidate list (its length is the capacity).
    candidates: Vec<AtomicU64>,
    /// Candidates the last frame appended, from its words (for the readbacks).
    found: u64,
    contacts: Vec<Contact>,
    /// Both ends of every contact, `(contact << 1) | side` (0: a, 1: b),
    /// grouped by body: body i's are `ends[ends_of[i - 1]..ends_of[i]]` (a
    /// wall's ends sort after every body's and are never read).
    ends: Vec<u64>,
    ends_of: Vec<u32>,
    /// Each body's contact points left to the Jacobi pass (`collide_split`):
    /// its mass is split over them.
    counts: Vec<u32>,
    /// Each contact's colour (`physics::colour`; `OVERFLOW`: the Jacobi pass's).
    colour: Vec<u32>,
    /// Each movable body's pick of a colouring round.
    picks: Vec<u64>,
    /// Each body's colours so far, as bits.
    used: Vec<u32>,
    /// The coloured manifolds as (colour, first point, end), sorted; colour
    /// k's are `manifolds[colour_starts[k]..colour_starts[k + 1]]`.
    manifolds: Vec<(u32, u32, u32)>,
    colour_starts: Vec<usize>,
    /// Contacts left to the Jacobi pass.
    overflow: usize,

    /// Each body's contact points with a bounce: the restitution pass splits its mass over them.
    bouncing: Vec<u32>,
    /// Each contact's `physics::contact_impulse` in the current pass.
    responses: Vec<physics::Impulse>,
    /// The last frame's contacts after its passes, sorted by (a, b, slot):
    /// what warm starting reads.
    previous: Vec<Contact>,
    clock: HostClock<StageId>,
    /// The Morton codes whose bodies this engine owns: all of them, unless
    /// it is one rank of a split collider (`collide::split`), whose other
    /// bodies are ghosts, copies of bodies other ranks own.
    owned: std::ops::Range<u32>,
    /// Whether each body is a ghost (its code outside `owned`), in the
    /// bodies' order; `moved_ghost` is `reorder`'s room.
    ghost: Vec<bool>,
    moved_ghost: Vec<bool>,
    /// Whether the solver runs outside the frame, in lockstep with the
    /// other ranks of a split collider: `solve` and `substep` then leave it.
    lockstep: bool,
}

/// Frontier slots a task of `expand` walks before it appends its candidates.
const EXPAND_BLOCK: usize = 1024;

impl CpuCollide {
    pub fn new(world: World, bodies: &[Body]) -> CollideResult<CpuCollide> {
        let n = bodies.len();
        if n == 0 || n > super::scenario::MAX_BODIES as usize {
            return Err(CollideError::Settings(format!(
                "the engine takes 1 to {} bodies, not {n}",
                super::scenario::MAX_BODIES
            )));
        }
        let capacity = (8 * n).max(1024);
        Ok(CpuCollide {
            backend: CpuBackend::new(),
            world,
            bodies: numbered(bodies),
            keys: vec![0; n],
            ids: vec![0; n],
            boxes: vec![([0.0; 3], [0.0; 3]); n],
            moved: Vec::new(),
            moved_boxes: Vec::new(),
            places: vec![0; n],
            nodes: vec![Node { min: [0.0; 3], left: 0, max: [0.0; 3], right: LEAF }; 2 * n - 1],
            parents: (0..2 * n - 1).map(|_| AtomicU32::new(u32::MAX)).collect(),
            arrivals: (0..n - 1).map(|_| AtomicU32::new(0)).collect(),
            bounds: (0..n - 1).map(|_| Default::default()).collect(),
            candidates: (0..capacity).map(|_| AtomicU64::new(DEAD64)).collect(),
            found: 0,
            contacts: Vec::new(),
            ends: Vec::new(),
            ends_of: vec![0; n],
            counts: vec![0; n],
            colour: Vec::new(),
            picks: vec![physics::colour::NO_PICK; n],
            used: vec![0; n],
            manifolds: Vec::new(),
            colour_starts: Vec::new(),
            overflow: 0,

            bouncing: vec![0; n],
            responses: Vec::new(),
            previous: Vec::new(),
            clock: HostClock::default(),
            owned: 0..u32::MAX,
            ghost: vec![false; n],
            moved_ghost: Vec::new(),
            lockstep: false,
        })
    }

    /// The node index of the first leaf: n - 1.
    fn first_leaf(&self) -> u32 {
        self.bodies.len() as u32 - 1
    }

    /// Groups the contacts' ends by body for the solver's gather.
    pub(super) fn index_contacts(&mut self) -> CollideResult<()> {
        if self.contacts.len() >= 1 << 31 {
            return Err(CollideError::Settings(format!("{} contacts: use fewer bodies", self.contacts.len())));
        }
        self.ends.clear();
        self.ends.par_extend(self.contacts.par_iter().enumerate().flat_map_iter(|(i, c)| {
            let i = i as u64;
            [((c.a as u64) << 32) | i << 1, ((c.b as u64) << 32) | i << 1 | 1]
        }));
        self.ends.par_sort_unstable();
        let ends = &self.ends;
        self.ends_of.par_iter_mut().enumerate().for_each(|(i, end)| {
            *end = ends.partition_point(|&e| (e >> 32) <= i as u64) as u32;
        });
        // Only the contact and side stay: the body is the group.
        self.ends.par_iter_mut().for_each(|e| *e &= u32::MAX as u64);
        Ok(())
    }

    /// The candidates of the last frame that made it into the list.
    fn stored(&self) -> usize {
        (self.found as usize).min(self.candidates.len())
    }
}

/// Each body takes the sums of its contacts' responses of one pass: the
/// spec's fixed-point sums, gathered per body rather than added with
/// atomics (integer addition, wrapping as atomicAdd on an unsigned long
/// long, gives the same sums in any order).
///
/// With `overflow` (each contact's colour, each body's count of overflow
/// points), only the Jacobi pass's contacts count, and a body with none of
/// them takes nothing (collide_gather's GATHER_PASS).
pub(super) fn gather(
    bodies: &mut [Body],
    ends: &[u64],
    ends_of: &[u32],
    responses: &[physics::Impulse],
    overflow: Option<(&[u32], &[u32])>,
) {
    bodies.par_iter_mut().enumerate().for_each(|(i, b)| {
        if overflow.is_some_and(|(_, counts)| counts[i] == 0) {
            return;
        }
        let range = if i == 0 { 0 } else { ends_of[i - 1] as usize }..ends_of[i] as usize;
        let mut sum = [[0i64; 3]; 3];
        for &end in &ends[range] {
            if overflow.is_some_and(|(colour, _)| colour[(end >> 1) as usize] != physics::colour::OVERFLOW) {
                continue;
            }
            let r = &responses[(end >> 1) as usize];
            let (linear, angular, push) = if end & 1 == 0 {
                (scale(r.linear, -1.0), r.angular_a, scale(r.push, -1.0))
            } else {
                (r.linear, r.angular_b, r.push)
            };
            for (s, v) in sum.iter_mut().zip([linear, angular, push]) {
                for k in 0..3 {
                    s[k] = s[k].wrapping_add(physics::to_fixed(v[k]));
                }
            }
        }
        let [linear, angular, push] = sum.map(|s| s.map(physics::from_fixed));
        physics::apply(b, &Inertia::of(b), linear, angular, push);
    });
}

/// The last frame's contact with `c`'s key (a, b, slot), from `previous`
/// sorted by it: the contact collide.cu's `find_previous` finds in its hash
/// table (keys are unique in a frame).
pub(super) fn previous_contact<'a>(previous: &'a [Contact], c: &Contact) -> Option<&'a Contact> {
    let at = previous.binary_search_by_key(&(c.a, c.b, c.slot), |p| (p.a, p.b, p.slot)).ok()?;
    Some(&previous[at])
}

/// A buffer the caller sized too small for the stage.
fn too_short(what: &'static str, expected: usize, actual: usize) -> CollideError {
    CollideError::Compaction(Error::LengthMismatch { what, expected: expected as u64, actual: actual as u64 })
}

impl Engine for CpuCollide {
    type B = CpuBackend;
    type Clock = HostClock<StageId>;

    fn backend(&self) -> &CpuBackend {
        &self.backend
    }

    fn world(&self) -> &World {
        &self.world
    }

    fn len(&self) -> u32 {
        self.bodies.len() as u32
    }

    fn new_frontier(&self, capacity: u64) -> CollideResult<frontier::Frontier<CpuBackend>> {
        Ok(frontier::Frontier::new(&self.backend, capacity)?)
    }

    fn clock(&mut self) -> &mut HostClock<StageId> {
        &mut self.clock
    }

    fn begin_frame(&mut self, words: &mut Vec<u64>, len: u64, _key: u64) -> CollideResult<Option<FramePath>> {
        self.clock.clear();
        let len = usize::try_from(len)
            .map_err(|_| CollideError::Compaction(Error::Backend(format!("{len} words do not fit in memory"))))?;
        words.clear();
        words.resize(len, 0);
        Ok(None)
    }

    fn end_frame(&mut self, words: &Vec<u64>) -> CollideResult<Option<FrameEnd>> {
        self.found = words[words::CANDIDATES as usize];
        Ok(Some((self.clock.take(), words.clone())))
    }

    fn codes(&mut self) -> CollideResult<()> {
        let (w, owned) = (&self.world, &self.owned);
        (&mut self.keys, &mut self.ids, &mut self.boxes, &mut self.ghost)
            .into_par_iter()
            .zip(&self.bodies)
            .enumerate()
            .for_each(|(i, ((key, id, aabb, ghost), b))| {
                *aabb = physics::aabb(b, w);
                *key = physics::morton(b.pos, w);
                *ghost = !owned.contains(key);
                *id = i as u32;
            });
        Ok(())
    }

    fn sort(&mut self, method: SortMethod) -> CollideResult<()> {
        match method {
            SortMethod::Split(alg) => {
                self.backend.radix_sort(alg, &mut self.keys, Some(&mut self.ids))?;
            }
            SortMethod::Fast => {
                // (code, id) pairs are unique, so an unstable sort orders them as a stable one would.
                let mut pairs: Vec<u64> =
                    self.keys.par_iter().zip(&self.ids).map(|(&k, &i)| ((k as u64) << 32) | i as u64).collect();
                pairs.par_sort_unstable();
                (&mut self.keys, &mut self.ids).into_par_iter().zip(&pairs).for_each(|((k, i), &p)| {
                    (*k, *i) = unpack(p);
                });
            }
        }
        Ok(())
    }

    fn reorder(&mut self) -> CollideResult<()> {
        // collide_reorder: body ids[i] (and its box) to place i, its new place in `places`.
        let (bodies, boxes, ids) = (&self.bodies, &self.boxes, &self.ids);
        self.moved.par_extend(ids.par_iter().map(|&id| bodies[id as usize]));
        self.moved_boxes.par_extend(ids.par_iter().map(|&id| boxes[id as usize]));
        let ghost = &self.ghost;
        self.moved_ghost.par_extend(ids.par_iter().map(|&id| ghost[id as usize]));
        std::mem::swap(&mut self.bodies, &mut self.moved);
        std::mem::swap(&mut self.boxes, &mut self.moved_boxes);
        std::mem::swap(&mut self.ghost, &mut self.moved_ghost);
        self.moved.clear();
        self.moved_boxes.clear();
        self.moved_ghost.clear();
        for (i, &id) in self.ids.iter().enumerate() {
            self.places[id as usize] = i as u32;
        }
        self.ids.par_iter_mut().enumerate().for_each(|(i, id)| *id = i as u32);
        // collide_warm_follow: the last frame's contacts name their bodies' new places (a pair keeps its
        // orientation: contacts name the lower spawn number first), sorted again for the search.
        let places = &self.places;
        self.previous.par_iter_mut().for_each(|c| {
            c.a = places[c.a as usize];
            if !physics::is_wall(c.b) {
                c.b = places[c.b as usize];
            }
        });
        self.previous.par_sort_unstable_by_key(|c| (c.a, c.b, c.slot));
        Ok(())
    }

    fn build(&mut self) -> CollideResult<()> {
        let first = self.first_leaf() as usize;
        let (internal, leaves) = self.nodes.split_at_mut(first);
        let (keys, ids, boxes, parents) = (&self.keys, &self.ids, &self.boxes, &self.parents);
        internal.par_iter_mut().enumerate().for_each(|(i, node)| {
            let (l, r) = physics::karras_node(keys, i);
            node.left = l;
            node.right = r;
            // Every node has one parent, so each slot is written once.
            parents[l as usize].store(i as u32, Relaxed);
            parents[r as usize].store(i as u32, Relaxed);
        });
        leaves.par_iter_mut().zip(ids).for_each(|(leaf, &id)| {
            let (min, max) = boxes[id as usize];
            *leaf = Node { min, left: id, max, right: LEAF };
        });
        parents[0].store(u32::MAX, Relaxed);
        Ok(())
    }

    fn refit(&mut self) -> CollideResult<()> {
        let first = self.first_leaf();
        if first == 0 {
            return Ok(());
        }
        let (nodes, parents, arrivals, bounds) = (&self.nodes, &self.parents, &self.arrivals, &self.bounds);
        arrivals.par_iter().for_each(|a| a.store(0, Relaxed));
        // The node as refit so far: leaves as built, internal boxes from `bounds`.
        let node = |i: u32| -> Node {
            let n = nodes[i as usize];
            if i >= first {
                return n;
            }
            let b = bounds[i as usize].each_ref().map(|x| f32::from_bits(x.load(Relaxed)));
            Node { min: [b[0], b[1], b[2]], max: [b[3], b[4], b[5]], ..n }
        };
        (first..2 * first + 1).into_par_iter().for_each(|leaf| {
            let mut i = parents[leaf as usize].load(Relaxed);
            while i != u32::MAX {
                // The first child to arrive stops; the second sees the first's
                // box (AcqRel: its stores happen before its increment) and
                // writes the union, whose stores its own increment further up
                // publishes the same way.
                if arrivals[i as usize].fetch_add(1, AcqRel) == 0 {
                    return;
                }
                let n = nodes[i as usize];
                let (min, max) = physics::union(&node(n.left), &node(n.right));
                for k in 0..3 {
                    bounds[i as usize][k].store(min[k].to_bits(), Relaxed);
                    bounds[i as usize][3 + k].store(max[k].to_bits(), Relaxed);
                }
                i = parents[i as usize].load(Relaxed);
            }
        });
        let bounds = &self.bounds;
        self.nodes[..first as usize].par_iter_mut().zip(bounds).for_each(|(n, b)| {
            let b = b.each_ref().map(|x| f32::from_bits(x.load(Relaxed)));
            n.min = [b[0], b[1], b[2]];
            n.max = [b[3], b[4], b[5]];
        });
        Ok(())
    }

    fn pairs_init(&mut self, frontier: &mut Vec<u64>, words: &mut Vec<u64>, at: LevelWords) -> CollideResult<()> {
        let root = self.bodies.len() >= 2;
        if root {
            frontier[0] = pack(0, 0);
        }
        words[at.len(0) as usize] = root as u64;
        words[at.live(0) as usize] = root as u64;
        Ok(())
    }

    fn fuses(&self, algorithm: crate::compaction::Algorithm) -> bool {
        crate::compaction::BackendKind::Cpu.fuses(algorithm)
    }

    fn expand(&mut self, step: Step<'_, CpuBackend>, fuse: Option<crate::compaction::Algorithm>) -> CollideResult<()> {
        let Step { at, input, output: out, words } = step;
        let m = host::n(words, at).min(input.len() as u64);
        let first = self.first_leaf();
        let (nodes, candidates) = (&self.nodes, &self.candidates);
        let found = AtomicU64::new(words[words::CANDIDATES as usize]);
        // Stores a thread's candidates at room claimed with one atomic add: the
        // list's order is free (it is read sorted). Past the capacity only the
        // count grows: the status then says so, and the driver reserves room
        // and redoes the frame.
        let store = |found_here: &[u64]| {
            if !found_here.is_empty() {
                let at = found.fetch_add(found_here.len() as u64, Relaxed) as usize;
                for (slot, &c) in candidates.iter().skip(at).zip(found_here) {
                    slot.store(c, Relaxed);
                }
            }
        };
        if let Some(alg) = fuse {
            // The fused site (twin of collide_expand's): the live child pairs
            // of each pair, in slot order, straight to their compacted places.
            let expand = |i: u64, emit: &mut crate::compaction::cpu::site::Emit<'_, u64>| {
                let mut found_here = [0u64; 4];
                let mut nc = 0;
                let slots = expand_pair(nodes, first, input[i as usize], &mut |c| {
                    found_here[nc] = c;
                    nc += 1;
                });
                store(&found_here[..nc]);
                slots.iter().filter(|&&s| s != DEAD64).for_each(|&s| emit.push(s));
            };
            let site = crate::compaction::cpu::site::CpuSite::new(&self.backend, alg, true)?;
            let candidates_of = crate::compaction::cpu::site::Candidates { per_item: 4, dead: DEAD64 };
            let report = site.produce(&self.backend, m, candidates_of, &expand, &mut out[..])?;
            let total = crate::compaction::Report::count(&report)?;
            close_candidates(words, found.into_inner(), candidates.len());
            host::close(words, at, total, out.len() as u64);
            return Ok(());
        }
        if !host::fits(words, at, m, 4, out.len() as u64) {
            return Ok(());
        }
        let m = m as usize;
        // A block of pairs gathers its candidates, then claims room for them
        // with one atomic add: one add per candidate would make every thread
        // fight over the counter.
        let live: u64 = out[..4 * m]
            .par_chunks_mut(4 * EXPAND_BLOCK)
            .zip(input[..m].par_chunks(EXPAND_BLOCK))
            .map_init(Vec::new, |found_here, (out, pairs)| {
                found_here.clear();
                let mut live = 0;
                for (slots, &p) in out.chunks_exact_mut(4).zip(pairs) {
                    slots.copy_from_slice(&expand_pair(nodes, first, p, &mut |c| found_here.push(c)));
                    live += slots.iter().filter(|&&s| s != DEAD64).count() as u64;
                }
                store(found_here);
                live
            })
            .sum();
        close_candidates(words, found.into_inner(), candidates.len());
        host::count_live(words, at, live);
        Ok(())
    }

    fn candidate_capacity(&self) -> u64 {
        self.candidates.len() as u64
    }

    fn set_candidate_capacity(&mut self, n: u64) -> CollideResult<()> {
        // Checked against the host's memory with room for the contacts, and
        // allocated fallibly: a list no machine holds is an error, not an abort.
        let n = n.max(1);
        let what = format!("the candidate and contact lists ({n} slots)");
        let change = "lower --max-candidates, or use fewer or slower bodies";
        let need = memory::times(n, CANDIDATE_SLOT_BYTES);
        self.candidates = Vec::new(); // the old list goes before the new one comes
        self.candidates = memory::vec_with(n, need, &what, change, || AtomicU64::new(DEAD64))?;
        self.found = 0;
        Ok(())
    }

    fn narrow(&mut self, words: &mut Vec<u64>) -> CollideResult<()> {
        if !host::ok(words) {
            self.contacts.clear();
            return Ok(()); // the frame is redone: its candidates are incomplete
        }
        let (bodies, w, ghost) = (&self.bodies, &self.world, &self.ghost);
        let stored = (words[words::CANDIDATES as usize] as usize).min(self.candidates.len());
        // A rank of a split collider keeps the pairs and walls of the bodies
        // it owns: two ghosts' pair is their owners' (`collide::split`).
        self.contacts = self.candidates[..stored]
            .par_iter()
            .map(|p| unpack(p.load(Relaxed)))
            .filter(|&(a, b)| !(ghost[a as usize] && ghost[b as usize]))
            .flat_map_iter(|(a, b)| {
                let (a, b) = order::pair_by_id(a, b, bodies);
                let (found, count) = physics::collide(a, &bodies[a as usize], b, &bodies[b as usize], w);
                found.into_iter().take(count)
            })
            .collect();
        self.contacts.par_extend(bodies.par_iter().enumerate().filter(|&(i, _)| !ghost[i]).flat_map_iter(|(i, b)| {
            let (found, count) = physics::wall_contacts(i as u32, b, w);
            found.into_iter().take(count)
        }));
        words[words::CONTACTS as usize] = self.contacts.len() as u64;
        Ok(())
    }

    fn solve(&mut self, words: &Vec<u64>) -> CollideResult<()> {
        if !host::ok(words) || self.lockstep {
            return Ok(()); // the frame is redone (the bodies stay as they were), or solved in lockstep
        }
        solve::setup(self)
    }

    fn substep(&mut self, step: Substep, words: &Vec<u64>) -> CollideResult<()> {
        if !host::ok(words) || self.lockstep {
            return Ok(());
        }
        solve::substep(self, step, &self.world.clone());
        Ok(())
    }

    fn bodies(&self) -> CollideResult<Vec<Body>> {
        Ok(order::bodies_by_id(&self.bodies))
    }

    fn set_bodies(&mut self, bodies: &[Body]) -> CollideResult<()> {
        if bodies.len() != self.bodies.len() {
            return Err(too_short("bodies", self.bodies.len(), bodies.len()));
        }
        self.bodies = numbered(bodies);
        // New bodies: the last frame's impulses are not theirs.
        self.previous.clear();
        Ok(())
    }

    fn candidate_pairs(&self) -> CollideResult<Vec<u64>> {
        let ghost = &self.ghost;
        let ghosts = |p: u64| ghost[unpack(p).0 as usize] && ghost[unpack(p).1 as usize];
        let pairs: Vec<u64> =
            self.candidates[..self.stored()].iter().map(|p| p.load(Relaxed)).filter(|&p| !ghosts(p)).collect();
        Ok(order::pairs_by_id(&pairs, &self.bodies))
    }

    fn contact_list(&self) -> CollideResult<Vec<Contact>> {
        Ok(order::contacts_by_id(self.contacts.clone(), &self.bodies))
    }

    fn nodes(&self) -> CollideResult<Vec<Node>> {
        Ok(order::nodes_by_id(self.nodes.clone(), &self.bodies))
    }
}

/// One pair of the walk (collide.cu `expand_one`): its four child-pair slots
/// by the spec's slot rules (dead ones DEAD64); each leaf-leaf pair whose
/// boxes overlap goes to `found` (bodies in increasing order) instead.
fn expand_pair(nodes: &[Node], first_leaf: u32, p: u64, found: &mut dyn FnMut(u64)) -> [u64; 4] {
    let mut slots = [DEAD64; 4];
    if p == DEAD64 {
        return slots;
    }
    let internal = |x: u32| x < first_leaf;
    let mut test = |x: u32, y: u32| -> u64 {
        let (a, b) = (&nodes[x as usize], &nodes[y as usize]);
        if !physics::overlap(a, b) {
            return DEAD64;
        }
        if internal(x) || internal(y) {
            return pack(x, y);
        }
        found(pack(a.left.min(b.left), a.left.max(b.left)));
        DEAD64
    };
    let (a, b) = unpack(p);
    if a == b {
        let n = nodes[a as usize];
        let (l, r) = (n.left, n.right);
        if internal(l) {
            slots[0] = pack(l, l);
        }
        if internal(r) {
            slots[1] = pack(r, r);
        }
        slots[2] = test(l, r);
    } else {
        let children = |x: u32| {
            let n = nodes[x as usize];
            if internal(x) { [n.left, n.right] } else { [x, u32::MAX] }
        };
        let (ca, cb) = (children(a), children(b));
        for (k, slot) in slots.iter_mut().enumerate() {
            let (x, y) = (ca[k / 2], cb[k % 2]);
            if x != u32::MAX && y != u32::MAX {
                *slot = test(x, y);
            }
        }
    }
    slots
}

/// The candidates found this level into the words; more than the list holds sets the status.
fn close_candidates(words: &mut [u64], found: u64, capacity: usize) {
    words[words::CANDIDATES as usize] = found;
    if found > capacity as u64 {
        words[frontier::STATUS as usize] |= status::CANDIDATES;
    }
}
