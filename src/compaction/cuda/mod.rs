//! The CUDA backend: cudarc host code over kernels in `kernels/compaction/`,
//! compiled by NVRTC for the device's own architecture on first use.
//!
//! Every call only enqueues work on the backend's stream: counts stay on the
//! device and stage times stay in events until the caller asks for them. The
//! counted calls (`select_counted`, …) take the length from the device too:
//! launches and scratch are sized from the capacity, and every kernel reads n
//! through its `Extent` (common.cuh). The `Backend` implementation, with each
//! call's checks and the dispatch by catalog name, is in backend.rs.

use std::marker::PhantomData;
use std::sync::Arc;

use std::collections::HashMap;
use std::sync::Mutex;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, sys};

use crate::compaction::{Algorithm, Error, PhaseTime, Report, Result};
use crate::cuda_runtime;

pub mod atomic;
mod backend;
pub mod billeter;
pub mod blelloch;
pub mod horn;
pub mod mark;
pub mod redzone;
pub mod roger;
pub mod runtime;
pub mod sengupta;
pub mod single_pass;
pub mod site;
pub mod sort;

use runtime::{Kernels, Stages, Variant, driver_error};

/// A device buffer of `len` elements of `T`.
pub struct CudaBuffer<T> {
    raw: CudaSlice<u8>,
    len: u64,
    _t: PhantomData<T>,
}

impl<T> CudaBuffer<T> {
    pub fn len(&self) -> u64 {
        self.len
    }
    /// Elements the allocation holds; `len` may be set anywhere up to it.
    pub fn capacity(&self) -> u64 {
        (self.raw.len() / std::mem::size_of::<T>().max(1)) as u64
    }
    /// Sets the length the library sees (a queue that shrinks and grows
    /// between calls keeps one allocation); the contents stay as they were.
    pub fn set_len(&mut self, len: u64) -> Result<()> {
        if len > self.capacity() {
            return Err(Error::LengthMismatch {
                what: "buffer length above its capacity",
                expected: self.capacity(),
                actual: len,
            });
        }
        self.len = len;
        Ok(())
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The raw device address, for kernel arguments.
    pub fn ptr(&self) -> u64 {
        if self.raw.is_empty() {
            return 0;
        }
        // Event tracking is off (one stream), so the guard has nothing to record.
        let (p, _guard) = self.raw.device_ptr(self.raw.stream());
        p
    }
}

/// A keep rule as CUDA source: it must define
/// `__device__ bool reap_predicate(const Elem& x, const unsigned long long* p)`,
/// where `Elem` is the element type (`unsigned`, `unsigned long long` or
/// `uint4`) and `p` points at `params`, so thresholds change without a recompile.
#[derive(Clone, Debug)]
pub struct CudaPredicate {
    pub source: Arc<str>,
    pub params: [u64; 2],
}

impl CudaPredicate {
    pub fn new(source: impl Into<Arc<str>>, params: [u64; 2]) -> Self {
        CudaPredicate { source: source.into(), params }
    }
}

/// The keep rule as every compaction kernel receives it (common.cuh `KeepArgs`;
/// keep the two in sync).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KeepArgs {
    pub flags: u64,
    pub sentinel: [u32; 8],
    pub param: [u64; 2],
}

// SAFETY: plain repr(C) data with the same layout as common.cuh's KeepArgs.
unsafe impl DeviceRepr for KeepArgs {}

/// Where a run's count is.
enum Count {
    /// A device word of the run's own.
    Device(CudaSlice<u64>),
    /// Known on the host (a sort's is its length).
    Host(u64),
    /// A counted call's: this word of the caller's lens buffer.
    Lens(u64),
}

/// A run on the GPU: the count in device memory and the stages' events.
pub struct CudaReport {
    count: Count,
    stages: Stages,
}

impl Report for CudaReport {
    fn count(&self) -> Result<u64> {
        match &self.count {
            Count::Device(c) => {
                let v = cuda_runtime::dtoh(c.stream(), c, "reading a count")?;
                Ok(v[0])
            }
            Count::Host(n) => Ok(*n),
            Count::Lens(word) => Err(Error::CountInLens { word: *word }),
        }
    }
    fn phases(&self) -> Result<Vec<PhaseTime>> {
        self.stages.times()
    }
    fn span(&self) -> Result<std::time::Duration> {
        self.stages.span()
    }
}

impl CudaReport {
    /// The device word that holds the count, so the next launch can be sized
    /// from it without a host round trip (none for a sort, whose count is its
    /// length, or a counted call, whose count is in its lens word).
    pub fn device_count(&self) -> Option<&CudaSlice<u64>> {
        match &self.count {
            Count::Device(c) => Some(c),
            _ => None,
        }
    }
}

pub use crate::cuda_runtime::DeviceInfo;

/// Every CUDA algorithm's tuning, one plain struct per algorithm.
#[derive(Clone, Debug, Default)]
pub struct CudaTuning {
    pub single_pass: single_pass::SinglePassTuning,
    pub billeter: billeter::BilleterTuning,
    pub horn: horn::HornTuning,
    pub sengupta: sengupta::SenguptaTuning,
    pub blelloch: blelloch::BlellochTuning,
    pub roger: roger::RogerTuning,
    pub atomic: atomic::AtomicTuning,
    pub redzone: redzone::RedzoneTuning,
}

impl CudaTuning {
    /// Sets one tuning number by name, `algorithm.field` (e.g. `lookback.vecs`),
    /// so benchmarks can sweep them without a rebuild. The single-pass shape
    /// takes `lookback.FIELD` for every element size or `lookback.BYTES.FIELD`
    /// for one, FIELD one of block, vecs, load, delay ([`SinglePassTuning::set`]).
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let bad = |why: String| Error::Tuning { algorithm: "cuda", why };
        let int = || value.parse::<u32>().map_err(|_| bad(format!("`{key}={value}`: expected a whole number")));
        match key {
            "lookback.counted_grid" | "chained.counted_grid" => self.single_pass.counted_grid = int()?,
            _ if key.starts_with("lookback.") || key.starts_with("chained.") => {
                return self.single_pass.set(key, value);
            }
            "billeter.processors_per_sm" => self.billeter.processors_per_sm = int()?,
            "billeter.processors" => self.billeter.processors = Some(int()?),
            "billeter.warps_per_block" => self.billeter.warps_per_block = int()?,
            "billeter.unroll" => self.billeter.unroll = int()?,
            "billeter.staged_ratio" => {
                self.billeter.staged_ratio =
                    value.parse().map_err(|_| bad(format!("`{key}={value}`: expected a number")))?
            }
            "horn.block" => self.horn.block = int()?,
            "sengupta.degree_of_parallelism" => self.sengupta.degree_of_parallelism = int()? as u64,
            "sengupta.block" => self.sengupta.block = int()?,
            "blelloch.block" => self.blelloch.block = int()?,
            "roger.block" => self.roger.block = int()?,
            "atomic.block" => self.atomic.block = int()?,
            "atomic.items" => self.atomic.items = int()?,
            "redzone.block_threads" => self.redzone.block_threads = int()?,
            "redzone.grid_threads" => self.redzone.grid_threads = int()?,
            "redzone.items" => self.redzone.items = int()?,
            _ => return Err(bad(format!("unknown tuning key `{key}`; see CudaTuning::set for the list"))),
        }
        Ok(())
    }
}

/// How many elements a call covers (common.cuh `Extent`; keep the two in
/// sync): the capacity, which sizes launches and scratch, and for a counted
/// call the device address of the length word (0 for a host length).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Extent {
    pub cap: u64,
    pub len: u64,
}

// SAFETY: plain repr(C) data with the layout of common.cuh's Extent (a u64 and a pointer).
unsafe impl DeviceRepr for Extent {}

impl Extent {
    /// n elements, known on the host.
    pub fn host(n: u64) -> Extent {
        Extent { cap: n, len: 0 }
    }
    /// Whether the length is read on the device.
    pub fn is_counted(&self) -> bool {
        self.len != 0
    }
}

/// Device addresses of one call.
#[derive(Clone, Copy, Debug)]
pub struct Io {
    pub ext: Extent,
    pub input: u64,
    pub output: u64,
    /// One u64 on the device, zeroed: the count (or a scan's total) goes here.
    pub count: u64,
}

/// The single-pass kernels' tile states, kept across calls (see single_pass.cuh).
#[derive(Default)]
struct TileStates {
    buffer: Option<CudaSlice<u8>>,
    tiles: u64,
    epoch: u32,
}

/// The CUDA backend on one device and one stream.
pub struct CudaBackend {
    tile_states: Mutex<TileStates>,
    /// Resident blocks per kernel specialisation (persistent grids), asked of the driver once.
    resident: Mutex<HashMap<(String, Variant), u32>>,
    stream: Arc<CudaStream>,
    kernels: Kernels,
    pub info: DeviceInfo,
    pub tuning: CudaTuning,
}

impl CudaBackend {
    /// Opens device `ordinal`, or says what is missing.
    pub fn new(ordinal: usize) -> Result<Self> {
        let cuda_runtime::Device { stream, info, kernels, .. } = cuda_runtime::Device::open(ordinal)?;
        let mut tuning = CudaTuning::default();
        // `REAP_CUDA_TUNING="lookback.vecs=8,atomic.items=8"` overrides defaults for experiments.
        crate::compaction::backend::tuning_from_env("REAP_CUDA_TUNING", "cuda", |k, v| tuning.set(k, v))?;
        Ok(CudaBackend { tile_states: Default::default(), resident: Default::default(), stream, kernels, info, tuning })
    }

    /// Whether [`CudaBackend::tuning`] builds and runs on this GPU for every
    /// element size in `element_sizes`; says which number does not. Checked once, up front, a
    /// wrong value is one error rather than a failure of every call that uses it.
    pub fn check_tuning(&self, element_sizes: &[usize]) -> Result<()> {
        let t = &self.tuning;
        for &es in element_sizes {
            let shape = t.single_pass.shape(es as u32, &self.info)?;
            single_pass::check_arch(self, &shape)?;
        }
        t.blelloch.check()?;
        t.roger.check()?;
        Ok(())
    }

    /// Whether the CUDA backend has the algorithm (no device needed to ask).
    pub fn implements(algorithm: Algorithm) -> bool {
        // The sequential reference and Bernabé's stencil are CPU algorithms.
        !matches!(algorithm, Algorithm::Sequential | Algorithm::Stencil)
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub fn kernels(&self) -> &Kernels {
        &self.kernels
    }

    /// Stream-ordered scratch of `bytes` bytes (freed, in order, when dropped).
    pub fn scratch(&self, bytes: u64) -> Result<CudaSlice<u8>> {
        // SAFETY: scratch is written by kernels before it is read.
        unsafe { self.stream.alloc::<u8>(bytes.max(1) as usize) }.map_err(driver_error("allocating scratch"))
    }

    /// Stream-ordered zeroed scratch.
    pub fn zeroed(&self, bytes: u64) -> Result<CudaSlice<u8>> {
        self.stream.alloc_zeros::<u8>(bytes.max(1) as usize).map_err(driver_error("allocating scratch"))
    }

    /// Times a device-to-device copy of `bytes` bytes (the roofline: it reads
    /// and writes each byte once), median of `reps` after a warm-up.
    pub fn time_copy(&self, bytes: u64, reps: usize) -> Result<std::time::Duration> {
        let (src, dst) = (self.zeroed(bytes)?, self.scratch(bytes)?);
        let (ps, pd) = (raw_ptr(&src), raw_ptr(&dst));
        let mut times = Vec::with_capacity(reps);
        for rep in 0..=reps {
            let mut st = Stages::new(&self.stream);
            st.run("copy", || {
                // SAFETY: two distinct allocations of `bytes` bytes each.
                let r = unsafe { sys::cuMemcpyDtoDAsync_v2(pd, ps, bytes as usize, self.stream.cu_stream()) };
                r.result().map_err(driver_error("copying"))
            })?;
            let t = st.span()?;
            if rep > 0 {
                times.push(t);
            }
        }
        times.sort();
        Ok(times[times.len() / 2])
    }

    /// The device address of a tile-state buffer for `tiles` tiles (a u32
    /// tile counter, padded to 8 bytes, then a word per tile) and this call's
    /// epoch. Words from earlier calls carry older epochs, so nothing is
    /// cleared per call; the buffer is zeroed only when new or when the
    /// 16-bit epoch wraps. Calls are ordered on the one stream, so reuse is safe.
    pub(crate) fn tile_states(&self, tiles: u64) -> Result<(u64, u32)> {
        let mut s = self.tile_states.lock().unwrap_or_else(|p| p.into_inner());
        if s.buffer.is_none() || s.tiles < tiles {
            if cuda_runtime::graph::capturing(&self.stream) {
                // A buffer made now would be the graph's memory, gone after the frame.
                return Err(Error::Backend(
                    "the tile states would grow while a frame is being captured into a graph".into(),
                ));
            }
            let cap = tiles.max(1 << 16).next_power_of_two();
            s.buffer = Some(self.zeroed(8 + cap * 8)?);
            s.tiles = cap;
            s.epoch = 0;
        }
        s.epoch += 1;
        if s.epoch > 0xffff {
            let buf = s.buffer.as_mut().expect("allocated above");
            self.stream.memset_zeros(buf).map_err(driver_error("clearing tile states"))?;
            s.epoch = 1;
        }
        Ok((raw_ptr(s.buffer.as_ref().expect("allocated above")), s.epoch))
    }

    /// Starts the tile-state epochs over: the buffer is cleared in stream
    /// order and the next call takes epoch 1. A workload calls it at the
    /// start of each frame, so that a frame's calls take the same epochs
    /// every time and the frame can be recorded once and replayed as a CUDA
    /// graph (a replay's states then carry the epochs the recording passed).
    pub fn restart_tile_states(&self) -> Result<()> {
        let mut s = self.tile_states.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(buf) = s.buffer.as_mut() {
            self.stream.memset_zeros(buf).map_err(driver_error("clearing tile states"))?;
        }
        s.epoch = 0;
        Ok(())
    }

    /// How many blocks of `f` (named `name`, specialised as `v`, launched
    /// with `block` threads and no dynamic shared memory) the whole device
    /// holds at once: the grid of a persistent launch.
    pub(crate) fn resident_blocks(
        &self,
        f: &CudaFunction,
        name: &str,
        v: &Variant,
        block: u32,
        dynamic_shared: u32,
    ) -> Result<u32> {
        let mut cache = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&blocks) = cache.get(&(name.to_string(), v.clone())) {
            return Ok(blocks);
        }
        let per_sm = f
            .occupancy_max_active_blocks_per_multiprocessor(block, dynamic_shared as usize, None)
            .map_err(driver_error("asking the occupancy of a kernel"))?;
        let blocks = per_sm.max(1).saturating_mul(self.info.sms.max(1));
        cache.insert((name.to_string(), v.clone()), blocks);
        Ok(blocks)
    }

    /// A grid-stride launch of `block` threads per block over `cap` items:
    /// enough blocks to fill every SM `blocks_per_sm` times over, no more;
    /// the kernels loop over the rest.
    pub(crate) fn grid_stride(&self, cap: u64, block: u32, blocks_per_sm: u32) -> LaunchConfig {
        let blocks = cap.div_ceil(block as u64).clamp(1, self.info.sms as u64 * blocks_per_sm.max(1) as u64);
        LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (block, 1, 1), shared_mem_bytes: 0 }
    }

    pub fn synchronize(&self) -> Result<()> {
        Ok(cuda_runtime::synchronize(&self.stream, "synchronising")?)
    }
}

pub(crate) use crate::cuda_runtime::ptr as raw_ptr;

/// Keeps elements whose first 32-bit word is below `params[0]`: the
/// predicate the verify suite and the benchmarks run.
pub const WORD_BELOW: &str = "__device__ bool reap_predicate(const Elem& x, const unsigned long long* p) \
                              { return (unsigned long long)reap_word0(x) < p[0]; }";
