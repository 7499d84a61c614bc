//! The GPU engine as one rank of a split collider (`collide::split::cuda`),
//! the twin of the CPU engine's rank (`cpu/rank.rs`): it takes a new set of
//! bodies each frame (those it owns, then ghosts), counts what it keeps, and
//! packs and unpacks the values its exchanges carry.

use std::ops::Range;

use cudarc::driver::{CudaFunction, PushKernelArg};

use super::{CudaCollide, FastSort, SPLIT, launch_err};
use crate::collide::cpu::{Kept, Shared};
use crate::collide::layout::{Body, Contact, World};
use crate::collide::{CollideResult, Engine, Graphs, words};
use crate::compaction::Backend;
use crate::compaction::cuda::CudaBackend;
use crate::cuda_runtime::{self, Spec, ptr as raw_ptr};

/// The kernels only a rank launches.
pub(super) struct Functions {
    pack: CudaFunction,
    unpack: CudaFunction,
    kept: CudaFunction,
}

/// u32s of one body's `what`, field by field (address, width): what an
/// exchange carries, a record per ghost.
pub(crate) type Fields = Vec<(u64, u32)>;

impl CudaCollide {
    /// An engine for a rank, on `backend`'s GPU: it holds nothing until
    /// [`CudaCollide::load`]. Frames stream (a rank's bodies change every
    /// frame, so a recorded one would not replay).
    pub(crate) fn rank(backend: CudaBackend, world: World) -> CollideResult<CudaCollide> {
        let f = |name: &str| backend.kernels().function(&SPLIT, &Spec::default(), name);
        let functions = Functions { pack: f("collide_pack")?, unpack: f("collide_unpack")?, kept: f("collide_kept")? };
        let mut e = CudaCollide::new(backend, world, &[Body::default()])?;
        e.rank_functions = Some(functions);
        e.lockstep = true;
        e.set_graphs(Graphs::Off);
        Ok(e)
    }

    /// The frame's bodies (at least one): those whose Morton codes lie in
    /// `owned`, then their ghosts, each keeping its spawn number; `previous`
    /// holds last frame's contacts of the bodies owned (named by spawn
    /// number, any order): the warm start finds them.
    pub(crate) fn load(&mut self, bodies: &[Body], owned: Range<u32>, previous: &[Contact]) -> CollideResult<()> {
        let n = bodies.len() as u64;
        self.fit_bodies(n)?;
        self.tree.bodies = self.backend.upload(bodies)?;
        self.fit_lists(n)?;
        let renamed = crate::collide::order::contacts_by_place(previous, bodies);
        self.warm.set_previous(&self.backend, &renamed)?;
        self.owned = (owned.start, owned.end);
        self.generation += 1;
        Ok(())
    }

    /// Readies the engine for a frame of `n` bodies that the caller writes
    /// on the device (those whose Morton codes lie in `owned`, then ghosts):
    /// the bodies' buffer's address, `n` bodies long.
    pub(crate) fn prepare(&mut self, n: u64, owned: Range<u32>) -> CollideResult<u64> {
        self.fit_bodies(n)?;
        if self.tree.bodies.capacity() < n {
            self.tree.bodies = self.backend.alloc(n + n / 8 + 1)?;
        }
        self.tree.bodies.set_len(n)?;
        self.fit_lists(n)?;
        self.owned = (owned.start, owned.end);
        self.generation += 1;
        Ok(self.tree.bodies.ptr())
    }

    /// Room for a settled scene's pairs of `n` bodies before their first
    /// frame (a frame redone for room costs a frame), with a quarter to
    /// spare: a rank's count wavers from frame to frame, and each growth
    /// allocates and clears gigabytes (at 4M bodies over two GPUs, 9.5 ms).
    fn fit_lists(&mut self, n: u64) -> CollideResult<()> {
        let lists = crate::collide::gpu::Lists::new(n);
        if self.lists.capacity < lists.capacity {
            self.set_candidate_capacity(lists.capacity + lists.capacity / 4)?;
        }
        Ok(())
    }

    /// Room for `count` previous contacts (named by this frame's places,
    /// before its reorder), which the caller writes on the device: their
    /// address. They replace what the last frame left.
    pub(crate) fn previous_slot(&mut self, count: u64) -> CollideResult<u64> {
        self.warm.reserve(&self.backend, count)
    }

    /// The bodies' and the contacts' device addresses, and the last frame's contact count.
    pub(crate) fn bodies_ptr(&self) -> u64 {
        self.tree.bodies.ptr()
    }
    pub(crate) fn contacts_ptr(&self) -> u64 {
        raw_ptr(&self.contacts)
    }
    pub(crate) fn contact_count(&self) -> u64 {
        self.lists.stored_contacts()
    }

    /// The Morton range of the bodies it owns this frame.
    pub(crate) fn owned_range(&self) -> (u32, u32) {
        self.owned
    }

    /// Sizes every per-body buffer for `n` bodies: they grow (with room to
    /// spare) when they hold fewer, and keep their allocations otherwise.
    fn fit_bodies(&mut self, n: u64) -> CollideResult<()> {
        let room = n + n / 8 + 1;
        let b = &self.backend;
        let t = &mut self.tree;
        if t.keys.capacity() < n {
            t.keys = b.alloc(room)?;
            t.ids = b.alloc(room)?;
            t.moved = b.alloc(room)?;
            t.places = b.alloc(room)?;
            t.nodes = b.alloc(2 * room - 1)?;
            t.parent = b.alloc(2 * room - 1)?;
            self.flags = b.alloc(room)?;
            self.counts = b.alloc(room)?;
            self.first = b.alloc(room)?;
            self.cursor = b.alloc(room)?;
            self.bouncing = b.alloc(room)?;
            self.fast = FastSort::new(b, room, self.fast.tuning.clone())?;
        }
        for buffer in [&mut t.keys, &mut t.ids, &mut t.places, &mut self.counts, &mut self.first] {
            buffer.set_len(n)?;
        }
        for buffer in [&mut self.cursor, &mut self.bouncing, &mut self.fast.keys, &mut self.fast.values] {
            buffer.set_len(n)?;
        }
        t.moved.set_len(n)?;
        t.nodes.set_len(2 * n - 1)?;
        t.parent.set_len(2 * n - 1)?;
        self.flags.set_len((n - 1).max(1))?;
        self.fast.fit(n)?;
        self.colouring.fit_bodies(b, n, room)?;
        t.n = n as u32;
        Ok(())
    }

    /// The bodies in the engine's order (owned and ghosts).
    pub(crate) fn held(&self) -> CollideResult<Vec<Body>> {
        self.tree.in_engine(&self.backend)
    }

    /// The candidates and contacts this rank keeps (`cpu/rank.rs` `kept`),
    /// read after the frame's narrow phase and before its solver.
    pub(crate) fn kept(&self) -> CollideResult<Kept> {
        let f = self.rank_functions.as_ref().expect("a rank's engine has its functions");
        let out = self.backend.zeroed(4 * 8)?;
        let (bp, cand, ctp, op) =
            (self.tree.bodies.ptr(), raw_ptr(&self.candidates), raw_ptr(&self.contacts), raw_ptr(&out));
        let (wp, cand_word, contact_word) = (self.words, words::CANDIDATES, words::CONTACTS);
        let over = self.strided(self.lists.capacity.max(self.lists.contact_capacity()));
        let mut l = self.stream.launch_builder(&f.kept);
        l.arg(&bp).arg(&self.tree.world).arg(&cand).arg(&self.lists.capacity).arg(&ctp).arg(&wp).arg(&cand_word);
        l.arg(&contact_word).arg(&self.owned.0).arg(&self.owned.1).arg(&op);
        // SAFETY: matches collide_kept(const Body*, World, const u64*, u64, const Contact*, const u64*, u64, u64,
        // u32, u32, u64*); the frame ended with its status clear, so its words count candidates (read up to the
        // capacity) and contacts in the lists, naming bodies below n; `out` holds 4 u64s.
        unsafe { l.launch(over) }.map_err(launch_err("launching collide_kept"))?;
        let k: Vec<u64> = bytemuck::pod_collect_to_vec(&cuda_runtime::dtoh(&self.stream, &out, "reading counts")?);
        Ok(Kept { candidates: k[0], crossing_candidates: k[1], contacts: k[2], crossing_contacts: k[3] })
    }

    /// The device fields of `what`, one record's worth per body.
    pub(crate) fn fields(&self, what: Shared) -> Fields {
        match what {
            Shared::Bodies => vec![(self.tree.bodies.ptr(), (std::mem::size_of::<Body>() / 4) as u32)],
            Shared::Picks => vec![(self.colouring.picks.ptr(), 2), (self.colouring.used.ptr(), 1)],
            Shared::Counts => vec![(self.colouring.split.ptr(), 1)],
            Shared::Bouncing => vec![(self.bouncing.ptr(), 1)],
        }
    }

    /// Enqueues the records of `what` of the `count` bodies at `places` (a
    /// device list of u32) into `records` (on this GPU or, with peer access,
    /// another); `unpack` the reverse.
    pub(crate) fn pack(&self, what: Shared, places: u64, count: u32, records: u64) -> CollideResult<()> {
        self.records(what, places, count, records, false)
    }

    pub(crate) fn unpack(&self, what: Shared, places: u64, count: u32, records: u64) -> CollideResult<()> {
        self.records(what, places, count, records, true)
    }

    fn records(&self, what: Shared, pp: u64, count: u32, records: u64, un: bool) -> CollideResult<()> {
        if count == 0 {
            return Ok(());
        }
        let f = self.rank_functions.as_ref().expect("a rank's engine has its functions");
        let fields = self.fields(what);
        let stride: u32 = fields.iter().map(|f| f.1).sum();
        let mut offset = 0u32;
        for (field, width) in fields {
            let mut l = self.stream.launch_builder(if un { &f.unpack } else { &f.pack });
            l.arg(&field).arg(&width).arg(&pp).arg(&count).arg(&records).arg(&stride).arg(&offset);
            // SAFETY: matches collide_pack(const u32*, u32, const u32*, u32, u32*, u32, u32) and collide_unpack(u32*,
            // u32, const u32*, u32, const u32*, u32, u32); `places` holds `count` places below n, the field `width`
            // u32s per body for n bodies, and `records` (the split's buffer, on this GPU or a peer this context
            // reaches) `count` records of `stride` u32s.
            unsafe { l.launch(self.strided(count as u64 * width as u64)) }
                .map_err(launch_err("launching collide_pack"))?;
            offset += width;
        }
        Ok(())
    }

    /// Its stream's context, made current on this thread (a process holds a
    /// context per GPU; raw driver calls act on the current one).
    pub(crate) fn bind(&self) -> CollideResult<()> {
        self.stream.context().bind_to_thread().map_err(launch_err("binding a GPU's context"))
    }

    /// Its stream, for the exchanges' collectives.
    pub(crate) fn stream(&self) -> &std::sync::Arc<cudarc::driver::CudaStream> {
        &self.stream
    }

    /// Its backend (the rank's GPU).
    pub(crate) fn rank_backend(&self) -> &CudaBackend {
        Engine::backend(self)
    }
}
