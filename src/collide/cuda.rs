//! The collision stages on the GPU: host side of `kernels/collide/collide.cu`
//! and of the fast radix sort `kernels/collide/radix_sort.cu`. Each
//! [`Engine`] method enqueues its launches, each written the same way
//! (function, config, arguments in the kernel's order, a `// SAFETY:` note);
//! stages are timed by the GPU layer's [`Timer`], read once per frame, and
//! every count of a frame (the walk's lengths, candidates, contacts) is a
//! word of the driver's word array, read once in [`Engine::end_frame`].
//! Kernels over a device count are launched from the capacity (grid-stride,
//! at most [`RESIDENT_BLOCKS_PER_SM`] blocks per SM), so nothing inside a
//! frame waits for the host or the host for the device.
//!
//! Over 600 lines, kept whole: one `Engine` method per kernel of collide.cu,
//! side by side with it; the fast sort's host side is the only other part.

use std::collections::HashMap;
use std::sync::Arc;

use crate::compaction::cuda::site::{CudaSite, DeviceSite, SITE, SiteKernel};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};
use smart_default::SmartDefault;

use crate::collide::gpu::{BodyTree, Lists, body_count};
use crate::collide::layout::{Body, Contact, Node, World};
use crate::collide::{
    CONTACTS_PER_CANDIDATE, CollideError, CollideResult, Engine, FrameEnd, SortMethod, StageId, Substep, order, words,
};
use crate::compaction::cuda::runtime::WARP;
use crate::compaction::cuda::{CudaBackend, CudaBuffer};
use crate::compaction::{Algorithm, Backend};
use crate::cuda_runtime::{self, FrameGraphs, GraphCounts, IEEE, Source, Spec, Timer, kernel_source, ptr as raw_ptr};
use crate::frontier::{self, DeviceLevel, LevelWords, Step, host};
use crate::replay::{FramePath, Graphs};

mod colour;
mod rank;
mod solve;
mod warm;
use colour::{ColourArgs, Colouring};
pub(crate) use solve::CudaRanks;
pub(crate) use solve::{setup as solve_setup, substep as solve_substep};
use warm::WarmStart;

/// The layouts of layout.rs and the arithmetic of physics/ (mod.rs, broad.rs).
pub const COMMON: Source = kernel_source!("collide/common.cuh");
/// physics/narrow.rs and manifold.rs.
pub const NARROW: Source = kernel_source!("collide/narrow.cuh", headers: &[COMMON]);
/// physics/solver.rs and motion.rs.
pub const SOLVER: Source = kernel_source!("collide/solver.cuh", headers: &[COMMON]);
/// physics/colour.rs.
pub const COLOUR: Source = kernel_source!("collide/colour.cuh", headers: &[COMMON]);
/// The collision stages, compiled with IEEE arithmetic so that they match the
/// CPU engine bit for bit.
pub const COLLIDE: Source = kernel_source!(
    "collide/collide.cu",
    headers: &[COMMON, NARROW, SOLVER, COLOUR, frontier::CUDA_HEADER, WARP, SITE],
    options: IEEE
);
/// The fast radix sort (8-bit digits; integer only).
pub const RADIX_SORT: Source = kernel_source!("collide/radix_sort.cu");
/// The split collider's moves of bodies and contacts between GPUs (`collide::split::cuda`), with the
/// engine's arithmetic: its ownership test must be collide_narrow's.
pub const SPLIT: Source = kernel_source!("collide/split.cu", headers: &[COMMON], options: IEEE);
/// The collision demo's kernel sources, for the compile-everything test.
pub const SOURCES: &[Source] = &[COLLIDE, RADIX_SORT, SPLIT];

const BLOCK: u32 = 256;
/// Blocks per SM of a launch over a device count (grid-stride): enough to
/// fill the device, few enough that a level with an empty frontier costs
/// little more than the launch.
pub const RESIDENT_BLOCKS_PER_SM: u32 = 8;
/// Bytes of a contact's response (collide.cu `physics::Impulse`: four V3).
const RESPONSE_BYTES: u64 = 48;
/// Morton codes are 30 bits: the fast sort sorts those (passes of 8, 8, 8, 6
/// bits), which orders them as a sort of all 32 bits would.
const KEY_BITS: u32 = 30;
/// radix_sort.cu `RS_BLOCK` and `RS_RADIX`.
const RS_BLOCK: u32 = 256;
const RS_RADIX: u64 = 256;

// SAFETY: plain repr(C) data laid out as common.cuh's `World` (both sides assert 112 bytes).
unsafe impl DeviceRepr for World {}

/// Tuning of the fast radix sort (radix_sort.cu).
#[derive(Clone, Debug, SmartDefault)]
pub struct FastSortTuning {
    /// Keys per thread per tile (`RS_ITEMS`); a tile is 256 of these.
    #[default(8)]
    pub items: u32,
}

/// The fast sort's second key and value buffers and its digit counts.
struct FastSort {
    keys: CudaBuffer<u32>,
    values: CudaBuffer<u32>,
    /// Per pass: digit-major tile histograms, then their exclusive scan.
    hist: CudaBuffer<u32>,
    offsets: CudaBuffer<u32>,
    tiles: u32,
    tuning: FastSortTuning,
    histogram: CudaFunction,
    scatter: CudaFunction,
}

struct Functions {
    codes: CudaFunction,
    reorder: CudaFunction,
    build: CudaFunction,
    refit: CudaFunction,
    pairs_init: CudaFunction,
    expand: CudaFunction,
    narrow: CudaFunction,
    walls: CudaFunction,
    count: CudaFunction,
    ends: CudaFunction,
    solve: CudaFunction,
    gather: CudaFunction,
    bouncing: CudaFunction,
    restitute: CudaFunction,
}

/// The most bodies: node indices (2n - 1 of them) and pair halves are u32, u32::MAX is reserved.
const MAX_BODIES: u64 = u32::MAX as u64 / 2;

/// The GPU engine: bodies, hierarchy, candidate and contact lists in device
/// memory, one stream (the backend's).
pub struct CudaCollide {
    backend: CudaBackend,
    stream: Arc<CudaStream>,
    /// The bodies and their hierarchy, as the wgpu engine holds them.
    tree: BodyTree<CudaBackend>,
    /// Arrivals per internal node during refit.
    flags: CudaBuffer<u32>,
    candidates: CudaSlice<u64>,
    /// Contacts, 64 bytes each, `CONTACTS_PER_CANDIDATE` slots per candidate slot.
    contacts: CudaSlice<u8>,
    /// The lists' size and the last frame's counts.
    lists: Lists,
    /// Each body's contact points this frame (its run of `ends`; the
    /// Jacobi pass splits its mass over the overflow's, `colouring.split`),
    /// their exclusive scan (each body's first slot in `ends`), and the
    /// scatter's cursors.
    counts: CudaBuffer<u32>,
    first: CudaBuffer<u32>,
    cursor: CudaBuffer<u32>,
    /// Each body's contacts that owe a bounce after the substeps.
    bouncing: CudaBuffer<u32>,
    /// Both ends of every contact grouped by body, `(contact << 1) | side`:
    /// two per contact slot.
    ends: CudaSlice<u32>,
    /// Each contact's response of the current pass (`physics::Impulse`, 48 bytes), one per contact slot.
    responses: CudaSlice<u8>,
    /// The last complete frame's contacts and the table that finds them.
    warm: WarmStart,
    /// The contacts' colours and what the coloured passes read.
    colouring: Colouring,
    fast: FastSort,
    timer: Timer<StageId>,
    /// The frames recorded as CUDA graphs, by key.
    graphs: FrameGraphs<StageId>,
    /// Counts changes of what the launches take from the engine (bodies, sort tuning): part of every frame's key.
    generation: u64,
    functions: Functions,
    /// collide_expand compiled with a fused pair site (`REAP_SITE_PAIRS`), by site kernel.
    fused_expand: HashMap<SiteKernel, CudaFunction>,
    /// One fused site per algorithm.
    sites: HashMap<Algorithm, CudaSite>,
    /// The frame's words (a device address, set as the frame begins): what the solver's steps read.
    words: u64,
    /// A split rank's part (`collide::split::cuda`, rank.rs): the Morton
    /// range of the bodies it owns (one engine: every code) and whether the
    /// solver runs outside the frame, in lockstep with the other ranks.
    owned: (u32, u32),
    lockstep: bool,
    /// A split rank's functions (rank.rs): its exchanges' pack and unpack, its counts.
    rank_functions: Option<rank::Functions>,
}

fn grid(n: u64) -> CollideResult<LaunchConfig> {
    Ok(cuda_runtime::grid(n, BLOCK)?)
}

/// A grid-stride launch over at most `capacity` items whose count is on the
/// device: blocks for the capacity, at most [`RESIDENT_BLOCKS_PER_SM`] per SM.
fn strided(capacity: u64, sms: u32) -> LaunchConfig {
    let most = sms.max(1) as u64 * RESIDENT_BLOCKS_PER_SM as u64;
    let blocks = capacity.div_ceil(BLOCK as u64).clamp(1, most) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
}

pub(crate) fn launch_err(name: &'static str) -> impl Fn(cudarc::driver::DriverError) -> CollideError {
    move |e| CollideError::Gpu(cuda_runtime::driver_error(name)(e))
}

/// Fails with a message that names `what` when `bytes` exceed the device's free memory.
fn check_free(stream: &Arc<CudaStream>, what: &'static str, bytes: u64) -> CollideResult<()> {
    let free = cuda_runtime::free_memory(stream)?;
    if bytes > free {
        return Err(CollideError::OutOfMemory { what, bytes, free });
    }
    Ok(())
}

/// Bytes of the contact list for `capacity` candidate slots.
fn contact_bytes(capacity: u64) -> u64 {
    capacity * CONTACTS_PER_CANDIDATE * std::mem::size_of::<Contact>() as u64
}

/// collide.cu's `GATHER_*` bits: what collide_gather does to each body.
const GATHER_PASS: u32 = 1;
const GATHER_INTEGRATE: u32 = 2;
const GATHER_BEGIN: u32 = 4;
const GATHER_BOUNCES: u32 = 8;

/// The contact ends' buffer: two u32 per contact slot.
fn ends(stream: &Arc<CudaStream>, contacts: u64) -> CollideResult<CudaSlice<u32>> {
    stream.alloc_zeros::<u32>((2 * contacts).max(1) as usize).map_err(launch_err("allocating the contact ends"))
}

/// Enqueues zeroes over a u32 buffer (stream-ordered, no host wait).
fn zero_u32(stream: &CudaStream, b: &CudaBuffer<u32>) -> CollideResult<()> {
    // SAFETY: the range is the buffer's `len` u32s, inside its allocation of this stream's context.
    let r = unsafe { cudarc::driver::sys::cuMemsetD32Async(b.ptr(), 0, b.len() as usize, stream.cu_stream()) };
    r.result().map_err(|e| CollideError::Gpu(cuda_runtime::driver_error("zeroing the contact counts")(e)))
}

/// Enqueues zeroes over a buffer's `len` words (stream-ordered, no host wait).
fn zero_words(stream: &CudaStream, words: &CudaBuffer<u64>) -> CollideResult<()> {
    if words.len() == 0 {
        return Ok(());
    }
    // SAFETY: the range is the buffer's first `len` words, inside its allocation of this stream's context.
    let r =
        unsafe { cudarc::driver::sys::cuMemsetD32Async(words.ptr(), 0, 2 * words.len() as usize, stream.cu_stream()) };
    r.result().map_err(|e| CollideError::Gpu(cuda_runtime::driver_error("zeroing the frame's words")(e)))
}

impl CudaCollide {
    pub fn new(backend: CudaBackend, world: World, bodies: &[Body]) -> CollideResult<Self> {
        // Checked before the memory estimate that the count sizes.
        let n = body_count(bodies, MAX_BODIES)?;
        let stream = backend.stream().clone();
        let lists = Lists::new(n);
        let (capacity, contacts) = (lists.capacity, lists.contact_capacity());
        let tiles = n.div_ceil(RS_BLOCK as u64 * FastSortTuning::default().items as u64);
        // Bodies (twice, for Morton order, with their new places), keys and ids (twice, for the fast sort), the split sort's two
        // interleaved copies, nodes, parents, flags, counts, first slots,
        // cursors and bouncing counts, candidates, contacts with their ends and responses,
        // histograms, and an allowance for the driver's two pair frontiers (4
        // slots of 8 bytes per live pair, about 2n pairs a level).
        let need = n * (2 * 80 + 4 + 16 + 16 + 32 * 2 + 4 * 2 + 4 + 4 * 4 + 2 * 4 * 8 * 2)
            + capacity * 8
            + contacts * (64 + 2 * 4 + RESPONSE_BYTES)
            + n * colour::BODY_BYTES
            + contacts * colour::CONTACT_BYTES
            + warm::bytes(contacts)
            + 2 * RS_RADIX * tiles * 4;
        check_free(&stream, "the bodies, the hierarchy and the candidate and contact lists", need)?;
        let f = |name: &str| backend.kernels().function(&COLLIDE, &Spec::default(), name);
        let functions = Functions {
            codes: f("collide_codes")?,
            reorder: f("collide_reorder")?,
            build: f("collide_build")?,
            refit: f("collide_refit")?,
            pairs_init: f("collide_pairs_init")?,
            expand: f("collide_expand")?,
            narrow: f("collide_narrow")?,
            walls: f("collide_walls")?,
            count: f("collide_count")?,
            ends: f("collide_ends")?,
            solve: f("collide_solve")?,
            gather: f("collide_gather")?,
            bouncing: f("collide_bouncing")?,
            restitute: f("collide_restitute")?,
        };
        let fast = FastSort::new(&backend, n, FastSortTuning::default())?;
        let zeros = |len: u64, what: &'static str| stream.alloc_zeros::<u64>(len as usize).map_err(launch_err(what));
        let engine = CudaCollide {
            tree: BodyTree::new(&backend, world, bodies, MAX_BODIES)?,
            flags: backend.alloc((n - 1).max(1))?,
            candidates: zeros(capacity, "allocating the candidate list")?,
            contacts: backend.zeroed(contact_bytes(capacity))?,
            lists,
            counts: backend.alloc(n)?,
            first: backend.alloc(n)?,
            cursor: backend.alloc(n)?,
            bouncing: backend.alloc(n)?,
            ends: ends(&stream, contacts)?,
            responses: backend.zeroed(contacts * RESPONSE_BYTES)?,
            warm: WarmStart::new(&backend, contacts)?,
            colouring: Colouring::new(&backend, n, contacts)?,
            fast,
            timer: Timer::new(&stream),
            graphs: FrameGraphs::default(),
            generation: 0,
            functions,
            fused_expand: HashMap::new(),
            sites: HashMap::new(),
            words: 0,
            owned: (0, u32::MAX),
            lockstep: false,
            rank_functions: None,
            stream,
            backend,
        };
        Ok(engine)
    }

    /// Gives the backend back (its compiled kernels with it), for the next engine.
    pub fn into_backend(self) -> CudaBackend {
        self.backend
    }

    /// Replaces the fast sort's tuning (recompiles its kernels on first use).
    pub fn set_fast_sort_tuning(&mut self, tuning: FastSortTuning) -> CollideResult<()> {
        self.fast = FastSort::new(&self.backend, self.tree.n as u64, tuning)?;
        self.generation += 1;
        Ok(())
    }

    /// Frames streamed, captured and replayed so far.
    pub fn graph_counts(&self) -> GraphCounts {
        self.graphs.counts()
    }

    /// Timing events the host has recorded so far: none for a replayed frame.
    pub fn host_events(&self) -> u64 {
        self.timer.records()
    }

    /// A complete frame's contacts become the previous ones (warm.rs), before the list is rewritten.
    fn keep_last_contacts(&mut self) {
        let count = self.lists.stored_contacts();
        self.warm.keep(&mut self.contacts, count);
    }

    /// Enqueues collide_gather: every body does `what` (collide.cu's
    /// `GATHER_*` bits) over the substep's world `w`.
    fn gather(&self, w: &World, what: u32) -> CollideResult<()> {
        let wp = self.words;
        let (bp, ep, fp, cp) = (self.tree.bodies.ptr(), raw_ptr(&self.ends), self.first.ptr(), self.counts.ptr());
        let (rp, ctp, kp) = (raw_ptr(&self.responses), raw_ptr(&self.contacts), self.bouncing.ptr());
        let (op, sp) = (raw_ptr(&self.colouring.colour), self.colouring.split.ptr());
        let mut l = self.stream.launch_builder(&self.functions.gather);
        l.arg(&bp).arg(&self.tree.n).arg(&ep).arg(&fp).arg(&cp).arg(&rp).arg(&ctp).arg(w).arg(&wp).arg(&what).arg(&kp);
        l.arg(&op).arg(&sp);
        // SAFETY: matches collide_gather(Body*, u32, const u32*, const u32*, const u32*, const Impulse*, const
        // Contact*, World, const u64*, u32, const u32*, const u32*, const u32*); bodies, first slots, counts,
        // bouncing and split hold n entries (bouncing is read with GATHER_BOUNCES only, after collide_bouncing
        // wrote it; split and the colours, one per contact slot, with GATHER_PASS, after solve's colouring);
        // with the frame's status clear, collide_ends filled each body's run first[i]..first[i] + counts[i] of
        // `ends` (two slots per contact slot) with contacts below the frame's count, whose responses and records
        // exist.
        unsafe { l.launch(grid(self.tree.n as u64)?) }.map(drop).map_err(launch_err("launching collide_gather"))
    }

    /// A grid-stride launch over a device count of at most `capacity`.
    fn strided(&self, capacity: u64) -> LaunchConfig {
        strided(capacity, self.backend.info.sms)
    }

    /// What the colouring's kernels read this frame.
    fn colour_args(&self, words: u64) -> CollideResult<ColourArgs> {
        Ok(ColourArgs {
            bodies: self.tree.bodies.ptr(),
            n: self.tree.n,
            contacts: raw_ptr(&self.contacts),
            ends: raw_ptr(&self.ends),
            first: self.first.ptr(),
            counts: self.counts.ptr(),
            words,
            contact_word: words::CONTACTS,
            over_contacts: self.strided(self.lists.contact_capacity()),
            over_bodies: grid(self.tree.n as u64)?,
        })
    }

    /// LSD radix sort of the keys with the ids, 8 bits a pass (radix_sort.cu).
    fn fast_sort(&mut self) -> CollideResult<()> {
        let n = self.tree.n as u64;
        let fs = &mut self.fast;
        let tiles = fs.tiles;
        let cfg = LaunchConfig { grid_dim: (tiles, 1, 1), block_dim: (RS_BLOCK, 1, 1), shared_mem_bytes: 0 };
        let mut src = (self.tree.keys.ptr(), self.tree.ids.ptr());
        let mut dst = (fs.keys.ptr(), fs.values.ptr());
        let mut shift = 0;
        while shift < KEY_BITS {
            let bits = (KEY_BITS - shift).min(8);
            let entries = (1u64 << bits) * tiles as u64;
            fs.hist.set_len(entries)?;
            fs.offsets.set_len(entries)?;
            let hp = fs.hist.ptr();
            let mut l = self.stream.launch_builder(&fs.histogram);
            l.arg(&src.0).arg(&n).arg(&shift).arg(&bits).arg(&tiles).arg(&hp);
            // SAFETY: matches radix_histogram(const u32*, u64, u32, u32, u32, u32*); the keys hold n entries
            // and `hist` (1 << bits) * tiles, tiles = ceil(n / RS_TILE) with RS_TILE as compiled.
            unsafe { l.launch(cfg) }.map_err(launch_err("launching radix_histogram"))?;
            // The report's events and count are not needed: the pass's stage times it.
            self.backend.exclusive_scan(Algorithm::Lookback, &fs.hist, &mut fs.offsets)?;
            let op = fs.offsets.ptr();
            let mut l = self.stream.launch_builder(&fs.scatter);
            l.arg(&src.0).arg(&src.1).arg(&n).arg(&shift).arg(&bits).arg(&tiles).arg(&op).arg(&dst.0).arg(&dst.1);
            // SAFETY: matches radix_scatter(const u32*, const u32*, u64, u32, u32, u32, const u32*, u32*, u32*);
            // source and destination are distinct n-entry buffers, and the scanned offsets place every key
            // below n.
            unsafe { l.launch(cfg) }.map_err(launch_err("launching radix_scatter"))?;
            std::mem::swap(&mut src, &mut dst);
            shift += bits;
        }
        if src.0 != self.tree.keys.ptr() {
            // An odd number of passes left the result in the second buffers.
            let bytes = n as usize * 4;
            for (to, from) in [(self.tree.keys.ptr(), src.0), (self.tree.ids.ptr(), src.1)] {
                // SAFETY: both device ranges hold n u32s and do not overlap.
                unsafe { cuda_runtime::copy_dtod(&self.stream, to, from, bytes, "copying the sorted keys") }?;
            }
        }
        Ok(())
    }
}

impl FastSort {
    /// Sorts `n` keys from now on (at most the `n` it was made for).
    fn fit(&mut self, n: u64) -> CollideResult<()> {
        let tiles = n.div_ceil(RS_BLOCK as u64 * self.tuning.items as u64);
        self.tiles = u32::try_from(tiles).map_err(|_| CollideError::Settings(format!("{n} keys: too many tiles")))?;
        Ok(())
    }

    fn new(b: &CudaBackend, n: u64, t: FastSortTuning) -> CollideResult<Self> {
        if t.items == 0 || t.items > 32 {
            return Err(CollideError::Settings("fast sort: items per thread must be between 1 and 32".into()));
        }
        let tiles = n.div_ceil(RS_BLOCK as u64 * t.items as u64);
        let tiles = u32::try_from(tiles).map_err(|_| CollideError::Settings(format!("{n} keys: too many tiles")))?;
        let v = Spec::default().with(&[("RS_ITEMS", t.items)]);
        let entries = RS_RADIX * tiles as u64;
        Ok(FastSort {
            keys: b.alloc(n)?,
            values: b.alloc(n)?,
            hist: b.alloc(entries)?,
            offsets: b.alloc(entries)?,
            tiles,
            tuning: t,
            histogram: b.kernels().function(&RADIX_SORT, &v, "radix_histogram")?,
            scatter: b.kernels().function(&RADIX_SORT, &v, "radix_scatter")?,
        })
    }
}

impl Engine for CudaCollide {
    type B = CudaBackend;
    type Clock = Timer<StageId>;

    fn backend(&self) -> &CudaBackend {
        &self.backend
    }

    fn world(&self) -> &World {
        &self.tree.world
    }

    fn len(&self) -> u32 {
        self.tree.n
    }

    fn new_frontier(&self, capacity: u64) -> CollideResult<frontier::Frontier<CudaBackend>> {
        check_free(&self.stream, "the pair frontier", capacity.max(1).saturating_mul(2 * 8))?;
        Ok(frontier::Frontier::new(&self.backend, capacity)?)
    }

    fn clock(&mut self) -> &mut Timer<StageId> {
        &mut self.timer
    }

    fn begin_frame(&mut self, words: &mut CudaBuffer<u64>, len: u64, key: u64) -> CollideResult<Option<FramePath>> {
        // Before the contact list is rewritten: a complete frame's contacts become the previous ones (a
        // redone frame keeps what the last complete one left: `pending` is false then). Host work only, so
        // a replayed frame's buffers are swapped as a streamed frame's are.
        self.keep_last_contacts();
        self.warm.set_count(&self.stream)?;
        if words.capacity() < len {
            *words = self.backend.alloc(len)?;
        }
        words.set_len(len)?;
        self.words = words.ptr();
        let buffers = [
            words.ptr(),
            raw_ptr(&self.contacts),
            raw_ptr(&self.candidates),
            raw_ptr(&self.ends),
            raw_ptr(&self.responses),
            self.lists.capacity,
        ];
        let colouring = self.colouring.addresses();
        let key = crate::replay::key((key, buffers, self.warm.addresses(), colouring, self.generation));
        let path = self.graphs.begin(key, &self.stream, &mut self.timer)?;
        if path == FramePath::Replayed {
            return Ok(Some(path));
        }
        // A frame's single-pass calls take the same tile-state epochs every time.
        self.backend.restart_tile_states()?;
        zero_words(&self.stream, words)?;
        Ok(Some(path))
    }

    fn end_frame(&mut self, words: &CudaBuffer<u64>) -> CollideResult<Option<FrameEnd>> {
        if !self.graphs.end(&self.stream, &mut self.timer)? {
            return Ok(None);
        }
        // The frame's two host waits: the words (the copy returns when the
        // frame's work before it is done), then the stage times.
        let w = self.backend.download(words)?;
        let times = self.graphs.times(&self.timer)?;
        self.timer.clear();
        self.lists.frame_ended(&w);
        self.warm.frame_ended(host::ok(&w));
        Ok(Some((times, w)))
    }

    fn abort_frame(&mut self) {
        self.graphs.abort(&self.stream, &mut self.timer);
    }

    fn set_graphs(&mut self, graphs: Graphs) {
        self.graphs.set_mode(graphs);
    }

    fn codes(&mut self) -> CollideResult<()> {
        let (bp, kp, ip) = (self.tree.bodies.ptr(), self.tree.keys.ptr(), self.tree.ids.ptr());
        let mut l = self.stream.launch_builder(&self.functions.codes);
        l.arg(&bp).arg(&self.tree.n).arg(&self.tree.world).arg(&kp).arg(&ip);
        // SAFETY: matches collide_codes(const Body*, u32, World, u32*, u32*); bodies, keys and ids hold n entries.
        unsafe { l.launch(grid(self.tree.n as u64)?) }.map(drop).map_err(launch_err("launching collide_codes"))
    }

    fn sort(&mut self, method: SortMethod) -> CollideResult<()> {
        match method {
            SortMethod::Split(a) => {
                self.backend.radix_sort(a, &mut self.tree.keys, Some(&mut self.tree.ids))?;
                Ok(())
            }
            SortMethod::Fast => self.fast_sort(),
        }
    }

    fn reorder(&mut self) -> CollideResult<()> {
        let t = &self.tree;
        let (bp, ip, mp, rp) = (t.bodies.ptr(), t.ids.ptr(), t.moved.ptr(), t.places.ptr());
        let mut l = self.stream.launch_builder(&self.functions.reorder);
        l.arg(&bp).arg(&t.n).arg(&ip).arg(&mp).arg(&rp);
        // SAFETY: matches collide_reorder(const Body*, u32, u32*, Body*, u32*); bodies, ids, moved and places hold
        // n entries, and the sorted ids are a permutation of 0..n.
        unsafe { l.launch(grid(t.n as u64)?) }.map_err(launch_err("launching collide_reorder"))?;
        let bytes = t.n as usize * std::mem::size_of::<Body>();
        // SAFETY: both ranges hold n bodies, distinct allocations of this stream's context.
        unsafe { cuda_runtime::copy_dtod(&self.stream, bp, mp, bytes, "moving the bodies into Morton order") }?;
        self.warm.follow(&self.stream, rp, self.strided(self.warm.capacity()))
    }

    fn build(&mut self) -> CollideResult<()> {
        let (kp, ip, bp) = (self.tree.keys.ptr(), self.tree.ids.ptr(), self.tree.bodies.ptr());
        let (np, pp, fp) = (self.tree.nodes.ptr(), self.tree.parent.ptr(), self.flags.ptr());
        let mut l = self.stream.launch_builder(&self.functions.build);
        l.arg(&kp).arg(&ip).arg(&bp).arg(&self.tree.n).arg(&self.tree.world).arg(&np).arg(&pp).arg(&fp);
        // SAFETY: matches collide_build(const u32*, const u32*, const Body*, u32, Node*, u32*, u32*); keys and ids
        // hold n entries (ids below n), nodes and parents 2n - 1, flags n - 1 (at least 1).
        unsafe { l.launch(grid(self.tree.n as u64)?) }.map(drop).map_err(launch_err("launching collide_build"))
    }

    fn refit(&mut self) -> CollideResult<()> {
        if self.tree.n < 2 {
            return Ok(()); // the only node is a leaf
        }
        let (pp, np, fp) = (self.tree.parent.ptr(), self.tree.nodes.ptr(), self.flags.ptr());
        let mut l = self.stream.launch_builder(&self.functions.refit);
        l.arg(&pp).arg(&np).arg(&fp).arg(&self.tree.n);
        // SAFETY: matches collide_refit(const u32*, Node*, u32*, u32); build linked every node to a parent
        // below n - 1 (or none) and cleared the n - 1 flags.
        unsafe { l.launch(grid(self.tree.n as u64)?) }.map(drop).map_err(launch_err("launching collide_refit"))
    }

    fn pairs_init(
        &mut self,
        frontier: &mut CudaBuffer<u64>,
        words: &mut CudaBuffer<u64>,
        at: LevelWords,
    ) -> CollideResult<()> {
        let (fp, wp, write_root) = (frontier.ptr(), words.ptr(), (self.tree.n >= 2) as u32);
        let (len_word, live_word) = (at.len(0), at.live(0));
        let mut l = self.stream.launch_builder(&self.functions.pairs_init);
        l.arg(&fp).arg(&write_root).arg(&wp).arg(&len_word).arg(&live_word);
        // SAFETY: matches collide_pairs_init(u64*, u32, u64*, u64, u64); the frontier holds at least one slot
        // (frontier::Frontier's capacity is at least 1) and both words lie in the frame's array.
        unsafe { l.launch(grid(1)?) }.map(drop).map_err(launch_err("launching collide_pairs_init"))
    }

    fn fuses(&self, algorithm: Algorithm) -> bool {
        crate::compaction::BackendKind::Cuda.fuses(algorithm)
    }

    fn expand(&mut self, step: Step<'_, CudaBackend>, fuse: Option<Algorithm>) -> CollideResult<()> {
        let Step { at, input, output, words } = step;
        // The kernel reads n from the words; both buffers hold `capacity` slots.
        let capacity = input.len().min(output.len());
        let kernel = fuse.map_or(SiteKernel::Separate, SiteKernel::of);
        let (f, site, cfg) = if kernel == SiteKernel::Separate {
            (self.functions.expand.clone(), DeviceSite::default(), self.strided(capacity / 4))
        } else {
            let alg = fuse.expect("a fused kernel comes from an algorithm");
            if !self.fused_expand.contains_key(&kernel) {
                let spec = Spec::default().with(&[("REAP_SITE_PAIRS", kernel.define())]);
                let f = self.backend.kernels().function(&COLLIDE, &spec, "collide_expand")?;
                self.fused_expand.insert(kernel, f);
            }
            if !self.sites.contains_key(&alg) {
                self.sites.insert(alg, CudaSite::new(&self.backend, alg, true)?);
            }
            let f = self.fused_expand[&kernel].clone();
            let site = &self.sites[&alg];
            let tiles = capacity.div_ceil(BLOCK as u64);
            let args = site.bind(&self.backend, capacity, tiles)?;
            let grid = site.grid(&self.backend, &f, "collide_expand", BLOCK, 0, tiles)?;
            (f, args, LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 })
        };
        let (np, ip, op, wp) = (self.tree.nodes.ptr(), input.ptr(), output.ptr(), words.ptr());
        let cand = raw_ptr(&self.candidates);
        let (level, cand_word) = (DeviceLevel::from(at), words::CANDIDATES);
        let mut l = self.stream.launch_builder(&f);
        l.arg(&np)
            .arg(&ip)
            .arg(&capacity)
            .arg(&level)
            .arg(&op)
            .arg(&cand)
            .arg(&self.lists.capacity)
            .arg(&wp)
            .arg(&cand_word);
        l.arg(&site);
        // SAFETY: matches collide_expand(const Node*, const u64*, u64, FrontierLevel, u64*, u64*, u64, u64*, u64,
        // Site); input and output hold `capacity` slots and the kernel reads at most that many and writes 4n
        // only when 4n <= capacity (fused: only slots below the capacity); the candidate list holds
        // `self.lists.capacity` (writes past it are skipped); every word index lies in the frame's array; every live
        // slot names two nodes of this hierarchy.
        unsafe { l.launch(cfg) }.map(drop).map_err(launch_err("launching collide_expand"))
    }

    fn candidate_capacity(&self) -> u64 {
        self.lists.capacity
    }

    fn set_candidate_capacity(&mut self, n: u64) -> CollideResult<()> {
        let lists = Lists::resized(n.max(1));
        let (capacity, contacts) = (lists.capacity, lists.contact_capacity());
        let contact_bytes = contact_bytes(capacity);
        // The last complete frame's contacts outlive the lists, for its redone successor to warm start from.
        self.keep_last_contacts();
        // Free the old lists before asking for the new ones.
        self.candidates = self.stream.alloc_zeros::<u64>(1).map_err(launch_err("shrinking candidates"))?;
        self.contacts = self.backend.zeroed(1)?;
        check_free(&self.stream, "the candidate and contact lists", capacity * 8 + contact_bytes)?;
        self.candidates =
            self.stream.alloc_zeros::<u64>(capacity as usize).map_err(launch_err("growing candidates"))?;
        self.contacts = self.backend.zeroed(contact_bytes)?;
        self.ends = ends(&self.stream, 1)?;
        self.responses = self.backend.zeroed(1)?;
        check_free(&self.stream, "the solver's contact ends and responses", contacts * 56)?;
        self.ends = ends(&self.stream, contacts)?;
        self.responses = self.backend.zeroed(contacts * RESPONSE_BYTES)?;
        self.colouring.resize(&self.stream, contacts)?;
        self.lists = lists;
        self.warm.resize(&self.backend, contacts)
    }

    fn narrow(&mut self, words: &mut CudaBuffer<u64>) -> CollideResult<()> {
        let (bp, cand, ctp, wp) =
            (self.tree.bodies.ptr(), raw_ptr(&self.candidates), raw_ptr(&self.contacts), words.ptr());
        let (cand_word, contact_word) = (words::CANDIDATES, words::CONTACTS);
        let contact_capacity = self.lists.contact_capacity();
        let mut l = self.stream.launch_builder(&self.functions.narrow);
        l.arg(&bp).arg(&self.tree.world).arg(&cand).arg(&self.lists.capacity).arg(&ctp).arg(&contact_capacity);
        l.arg(&wp).arg(&cand_word).arg(&contact_word).arg(&self.owned.0).arg(&self.owned.1);
        // SAFETY: matches collide_narrow(const Body*, World, const u64*, u64, Contact*, u64, u64*, u64, u64, u32,
        // u32); the
        // kernel reads at most `capacity` candidates, written this frame and naming bodies below n; it writes
        // contacts only below `contact_capacity`, the list's length; both words lie in the frame's array.
        unsafe { l.launch(self.strided(self.lists.capacity)) }.map_err(launch_err("launching collide_narrow"))?;
        let mut l = self.stream.launch_builder(&self.functions.walls);
        l.arg(&bp).arg(&self.tree.n).arg(&self.tree.world).arg(&ctp).arg(&contact_capacity).arg(&wp).arg(&contact_word);
        l.arg(&self.owned.0).arg(&self.owned.1);
        // SAFETY: matches collide_walls(const Body*, u32, World, Contact*, u64, u64*, u64, u32, u32); the bodies hold n
        // entries; contacts are written only below `contact_capacity`; the word lies in the frame's array.
        unsafe { l.launch(self.strided(self.tree.n as u64)) }.map(drop).map_err(launch_err("launching collide_walls"))
    }

    fn solve(&mut self, words: &CudaBuffer<u64>) -> CollideResult<()> {
        self.words = words.ptr();
        if self.lockstep {
            return Ok(()); // a split rank: the split runs the solver's steps on every rank
        }
        let world = self.tree.world;
        solve::setup(self, &world)
    }

    fn substep(&mut self, step: Substep, words: &CudaBuffer<u64>) -> CollideResult<()> {
        self.words = words.ptr();
        if self.lockstep {
            return Ok(());
        }
        let world = self.tree.world;
        solve::substep(self, step, &world)
    }

    fn bodies(&self) -> CollideResult<Vec<Body>> {
        self.tree.bodies_by_id(&self.backend)
    }

    fn set_bodies(&mut self, bodies: &[Body]) -> CollideResult<()> {
        self.tree.set_bodies(&self.backend, bodies)?;
        self.generation += 1;
        // New bodies: the last frame's impulses are not theirs.
        self.warm.clear();
        Ok(())
    }

    fn candidate_pairs(&self) -> CollideResult<Vec<u64>> {
        let count = self.lists.stored_candidates() as usize;
        if count == 0 {
            return Ok(Vec::new());
        }
        let pairs = cuda_runtime::dtoh(&self.stream, &self.candidates.slice(..count), "reading candidates")?;
        Ok(order::pairs_by_id(&pairs, &self.tree.in_engine(&self.backend)?))
    }

    fn contact_list(&self) -> CollideResult<Vec<Contact>> {
        let count = self.lists.stored_contacts() as usize;
        if count == 0 {
            return Ok(Vec::new());
        }
        let bytes = count * std::mem::size_of::<Contact>();
        let raw = cuda_runtime::dtoh(&self.stream, &self.contacts.slice(..bytes), "reading contacts")?;
        let contacts: Vec<Contact> = bytemuck::pod_collect_to_vec(&raw);
        Ok(order::contacts_by_id(contacts, &self.tree.in_engine(&self.backend)?))
    }

    fn nodes(&self) -> CollideResult<Vec<Node>> {
        self.tree.nodes_by_id(&self.backend)
    }
}
