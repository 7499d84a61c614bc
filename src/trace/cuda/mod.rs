//! The wavefront stages on the GPU: host side of `kernels/trace/wavefront.cu`.
//! Each [`Engine`] method is one launch, written the same way (function,
//! config, arguments in the kernel's order, a `// SAFETY:` note); stages are
//! timed by the GPU layer's [`Timer`] and read back once per frame. The
//! viewer's image leaves through [`Handoff`]: `kernels/trace/tonemap.cu`, then
//! one copy into page-locked memory.
//!
//! Over 600 lines, kept whole: one `Engine` method per kernel of
//! wavefront.cu, in the kernel file's order, so a reader holds the two side by
//! side; the site builds (`Build`) belong to the same launches. What a split
//! by samples adds to an engine lives in `samples.rs`.

mod samples;

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PinnedHostSlice, PushKernelArg, sys,
};

use std::collections::HashMap;

use crate::compaction::Algorithm;
use crate::compaction::cuda::site::{CudaSite, DeviceSite, SITE, SiteKernel};
use crate::compaction::cuda::{CudaBackend, CudaBuffer, CudaPredicate};
use crate::cuda_runtime::{self, FrameGraphs, GraphCounts, IEEE, Source, Spec, Timer, kernel_source, ptr as raw_ptr};
use crate::frontier::{DeviceLevel, Step};
use crate::trace::gpu::{GpuState, Indices};
use crate::trace::layout::CameraLayout;
use crate::trace::{
    BvhKind, DepthFirst, Engine, EngineSetup, FrameEnd, FramePath, FrontierRun, Graphs, Queue, Shading, Shard, StageId,
    TraceError, TraceResult, Words, Work,
};

/// The tracer's layouts (twins of layout.rs) and shared device functions.
pub const COMMON: Source = kernel_source!("trace/common.cuh");
/// Texture lookups (src/trace/texture.rs is their twin).
pub const TEXTURE: Source = kernel_source!("trace/texture.cuh", headers: &[COMMON]);
/// The BSDFs, light sampling and MIS weights (src/trace/bsdf.rs is its twin).
pub const BSDF: Source = kernel_source!("trace/bsdf.cuh", headers: &[COMMON]);
/// The 8-wide BVH's node test and leaves (src/trace/wide.rs is their twin).
pub const WIDE: Source = kernel_source!("trace/wide.cuh", headers: &[COMMON]);
/// The wavefront stages.
pub const WAVEFRONT: Source =
    kernel_source!("trace/wavefront.cu", headers: &[COMMON, TEXTURE, BSDF, WIDE, crate::frontier::CUDA_HEADER, SITE]);
/// The tracer's sums to the viewer's 8-bit sRGB image (src/trace/tonemap.rs is
/// its twin), with IEEE arithmetic so that it rounds as the CPU does.
pub const TONEMAP: Source = kernel_source!("trace/tonemap.cu", options: IEEE);
/// The tracer's kernel sources, for the compile-everything test.
pub const SOURCES: &[Source] = &[WAVEFRONT, TONEMAP];

/// wavefront.cu `TRACE_BLOCK`: also a fused site's tile of input items.
const BLOCK: u32 = 256;
/// Bytes of path state per pixel: seven float4 fields, the hit key, two u32 flags.
const PATH_BYTES: u64 = 7 * 16 + 8 + 2 * 4;
/// Blocks per SM of a launch over a frontier's device length (grid-stride
/// beyond them): a frontier's capacity can be tens of millions of slots,
/// most of them past the length, and empty blocks still cost launch time;
/// 32 a SM keep a million threads, enough that a level's items rarely queue
/// behind each other. The path queue's kernels do not need the cap: their
/// capacity is the pixel count, and a depth-first ray's cost varies too much
/// for one thread to take several in turn.
const STRIDED_BLOCKS_PER_SM: u32 = 32;

/// common.cuh `Scene`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct SceneArgs {
    nodes: u64,
    tris: u64,
    normals: u64,
    materials: u64,
    light_tris: u64,
    light_cdf: u64,
    light_count: u32,
    light_power: f32,
    env: [f32; 3],
    eps: f32,
    uvs: u64,
    textures: u64,
    texels: u64,
    wide_nodes: u64,
    wide_tris: u64,
}

/// common.cuh `Paths`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct PathArgs {
    origin: u64,
    dir: u64,
    throughput: u64,
    radiance: u64,
    hit: u64,
    shadow_dir: u64,
    shadow_radiance: u64,
    occluded: u64,
    flags: u64,
}

// SAFETY: plain repr(C) data laid out as common.cuh's structs of the same names.
unsafe impl DeviceRepr for SceneArgs {}
unsafe impl DeviceRepr for PathArgs {}
unsafe impl DeviceRepr for CameraLayout {}

/// The GPU engine: the scene and path state in device memory, one stream.
pub struct CudaEngine {
    backend: CudaBackend,
    stream: Arc<CudaStream>,
    /// The image, shard and scene depths, as the wgpu engine keeps them.
    gpu: GpuState,
    camera: CameraLayout,
    scene: SceneArgs,
    /// State for `gpu.path_capacity` paths.
    paths: PathArgs,
    /// One float4 sum per pixel of the whole image, whatever the shard.
    sum: CudaSlice<u8>,
    // Owned so the addresses in `scene` and `paths` stay valid.
    _scene_buffers: Vec<CudaSlice<u8>>,
    _path_buffers: Vec<CudaSlice<u8>>,
    timer: Timer<StageId>,
    /// The frames recorded as CUDA graphs, by key.
    graphs: FrameGraphs<StageId>,
    /// The frame's sample index, one u32 that camera and shade read: set by
    /// `begin_frame` outside any graph, so a replayed frame draws its own sample.
    sample: CudaSlice<u32>,
    /// The wide depth-first kernel's next queue entry, zeroed before each launch (its warps fetch rays).
    fetch: CudaSlice<u32>,
    /// Nodes of the wide BVH (breadth-first names them in 24 bits).
    wide_nodes: usize,
    /// Counts changes of what the launches take from the engine (camera,
    /// shard, path buffers): part of every frame's key.
    generation: u64,
    /// Kernel functions by build and name, loaded once.
    functions: HashMap<(Build, &'static str), CudaFunction>,
    /// One fused site per algorithm (the frontier's and the queue's share it:
    /// their uses follow each other on the stream, and the scratch returns to
    /// zero after each).
    sites: HashMap<Algorithm, CudaSite>,
    /// Made by the first `rgba8` call: `reap render` never needs it.
    handoff: Option<Handoff>,
    /// A split by samples' buffers (`samples.rs`): made by its first round.
    samples: samples::SampleBuffers,
    work: Option<Work<CudaEngine>>,
}

/// The viewer's image on its way to the display: the 8-bit image on the
/// device and the page-locked host buffer it is copied into, allocated once
/// per engine, i.e. per image size. From pinned memory the copy is one DMA
/// enqueued on the stream, where a pageable destination would be staged
/// through the driver's bounce buffer; the host waits for it once, then hands
/// the bytes to wgpu.
///
/// Where the display adapter is this same GPU, sharing the image would skip
/// the host entirely (a Vulkan image's memory exported and imported with
/// `cuImportExternalMemory`). That cross-API interop needs wgpu-hal's Vulkan
/// internals and matching the two devices by UUID, and the headless NVIDIA
/// machines cannot present with their Vulkan driver anyway (their display is
/// lavapipe on the CPU), so it is left out: every adapter gets the host path.
struct Handoff {
    tonemap: CudaFunction,
    rgba: CudaSlice<u32>,
    staging: PinnedHostSlice<u32>,
}

impl Handoff {
    fn new(backend: &CudaBackend, pixels: usize) -> TraceResult<Self> {
        let tonemap = backend.kernels().function(&TONEMAP, &Spec::default(), "trace_tonemap")?;
        let stream = backend.stream();
        let rgba = stream.alloc_zeros::<u32>(pixels.max(1)).map_err(launch_err("allocating the display image"))?;
        // Flags 0, not cudarc's default write-combined memory: the host reads
        // this buffer, and reads of write-combined memory bypass the cache.
        // SAFETY: the memory starts uninitialised; `rgba8` reads it only after
        // a copy of the whole device image has landed in it.
        let staging = unsafe { stream.context().alloc_pinned_with_flags::<u32>(pixels.max(1), 0) }
            .map_err(launch_err("allocating page-locked memory for the display image"))?;
        Ok(Handoff { tonemap, rgba, staging })
    }
}

/// frontier::GroupSplit::first for the library's predicate kernels: an
/// item's node (its low word) less the base, bit p[0] of it clear.
const NODE_BIT_CLEAR: &str = "__device__ bool reap_predicate(const Elem& x, const unsigned long long* p) \
                              { return (((reap_word0(x) - (unsigned int)p[1]) >> p[0]) & 1u) == 0u; }";

/// wavefront.cu `sizeof(BfTile)`: the wide breadth-first step's dynamic
/// shared memory a block (its tile's rays, hits and ring of items).
const BF_TILE_BYTES: u32 = 18464;

/// Blocks per SM of a kernel whose warps fetch their work: all that can be resident (2048 threads).
const RESIDENT_BLOCKS_PER_SM: u32 = 8;

/// What one compiled wavefront module is specialised for: the frontier's and
/// the path queue's site kernels (wavefront.cu `REAP_SITE_FRONTIER`,
/// `REAP_SITE_PATHS`) and the fused expansion's descent (`TRACE_DESCEND`).
/// A stage asks for the build that changes it only, so a render compiles at
/// most three modules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Build {
    frontier: SiteKernel,
    paths: SiteKernel,
    descend: u32,
}

impl Build {
    /// The stages no site changes.
    const PLAIN: Build = Build { frontier: SiteKernel::Separate, paths: SiteKernel::Separate, descend: 2 };
    fn frontier(fuse: Option<Algorithm>, descend: u32) -> Build {
        match fuse.map(SiteKernel::of) {
            Some(k) if k != SiteKernel::Separate => Build { frontier: k, descend, ..Build::PLAIN },
            _ => Build::PLAIN,
        }
    }
    fn paths(fuse: Option<Algorithm>) -> Build {
        Build { paths: fuse.map_or(SiteKernel::Separate, SiteKernel::of), ..Build::PLAIN }
    }
    fn spec(&self) -> Spec {
        Spec::default().with(&[
            ("REAP_SITE_FRONTIER", self.frontier.define()),
            ("REAP_SITE_PATHS", self.paths.define()),
            ("TRACE_DESCEND", self.descend),
        ])
    }
    fn fused(&self) -> bool {
        self.frontier != SiteKernel::Separate || self.paths != SiteKernel::Separate
    }
}

fn grid(n: u64) -> TraceResult<LaunchConfig> {
    Ok(cuda_runtime::grid(n, BLOCK)?)
}

impl CudaEngine {
    pub fn new(backend: CudaBackend, setup: EngineSetup<'_>) -> TraceResult<Self> {
        let gpu = GpuState::new(&setup, Indices::U64)?;
        let (packed, pixels) = (setup.packed, gpu.image_pixels());
        let stream = backend.stream().clone();
        check_device_memory(packed, pixels, cuda_runtime::free_memory(&stream)?)?;
        let upload = |bytes: &[u8]| -> TraceResult<CudaSlice<u8>> {
            if bytes.is_empty() {
                return Ok(backend.zeroed(16)?);
            }
            Ok(cuda_runtime::htod(&stream, bytes, "uploading the scene")?)
        };
        let scene_buffers = vec![
            upload(bytemuck::cast_slice(&packed.nodes))?,
            upload(bytemuck::cast_slice(&packed.tris))?,
            upload(bytemuck::cast_slice(&packed.normals))?,
            upload(bytemuck::cast_slice(&packed.materials))?,
            upload(bytemuck::cast_slice(&packed.light_tris))?,
            upload(bytemuck::cast_slice(&packed.light_cdf))?,
            upload(bytemuck::cast_slice(&packed.uvs))?,
            upload(bytemuck::cast_slice(&packed.textures))?,
            upload(bytemuck::cast_slice(&packed.texels))?,
            upload(bytemuck::cast_slice(&packed.wide.nodes))?,
            upload(bytemuck::cast_slice(&packed.wide_tris))?,
        ];
        let p = |i: usize| raw_ptr(&scene_buffers[i]);
        let scene = SceneArgs {
            nodes: p(0),
            tris: p(1),
            normals: p(2),
            materials: p(3),
            light_tris: p(4),
            light_cdf: p(5),
            light_count: packed.light_tris.len() as u32,
            light_power: packed.light_power,
            env: packed.env,
            eps: packed.eps,
            uvs: p(6),
            textures: p(7),
            texels: p(8),
            wide_nodes: p(9),
            wide_tris: p(10),
        };
        let (path_buffers, paths) = alloc_paths(&backend, pixels)?;
        let sum = backend.zeroed(pixels.max(1) * 16)?;
        let timer = Timer::new(&stream);
        let sample = stream.alloc_zeros::<u32>(1).map_err(launch_err("allocating the sample word"))?;
        let fetch = stream.alloc_zeros::<u32>(1).map_err(launch_err("allocating the fetch word"))?;
        Ok(CudaEngine {
            stream,
            gpu,
            camera: setup.camera,
            scene,
            paths,
            sum,
            _scene_buffers: scene_buffers,
            _path_buffers: path_buffers,
            timer,
            graphs: FrameGraphs::default(),
            sample,
            fetch,
            wide_nodes: packed.wide.nodes.len(),
            generation: 0,
            functions: HashMap::new(),
            sites: HashMap::new(),
            handoff: None,
            samples: Default::default(),
            work: None,
            backend,
        })
    }
}

/// Refuses a scene whose arrays and BVHs (`packed`), with path state,
/// queues and a generous breadth-first frontier for `pixels`, do not fit the
/// device's `free` bytes: before anything is uploaded.
pub fn check_device_memory(packed: &crate::trace::layout::Packed, pixels: u64, free: u64) -> TraceResult<()> {
    let need = packed.bytes().saturating_add(pixels.saturating_mul(PATH_BYTES + 16 + 2 * 4 + 3 * 2 * 8));
    if need > free {
        return Err(TraceError::OutOfMemory { what: "scene, BVH and path state", bytes: need, free });
    }
    Ok(())
}

/// Zeroed path state for `count` paths (common.cuh `Paths`): the buffers, to
/// own, and their addresses.
fn alloc_paths(backend: &CudaBackend, count: u64) -> TraceResult<(Vec<CudaSlice<u8>>, PathArgs)> {
    let field = |bytes: u64| backend.zeroed(count.max(1) * bytes);
    let buffers =
        vec![field(16)?, field(16)?, field(16)?, field(16)?, field(8)?, field(16)?, field(16)?, field(4)?, field(4)?];
    let q = |i: usize| raw_ptr(&buffers[i]);
    let paths = PathArgs {
        origin: q(0),
        dir: q(1),
        throughput: q(2),
        radiance: q(3),
        hit: q(4),
        shadow_dir: q(5),
        shadow_radiance: q(6),
        occluded: q(7),
        flags: q(8),
    };
    Ok((buffers, paths))
}

impl CudaEngine {
    /// The per-pixel sums of the whole image: `image_pixels` float4s (RGBA,
    /// A = samples) in a byte buffer, written by `trace_accumulate` on
    /// [`CudaEngine::stream`].
    pub fn sums(&self) -> &CudaSlice<u8> {
        &self.sum
    }

    /// The sums for writing (a split-frame driver moving the sums of pixels
    /// that change owner: copied to the new owner, zeroed at the old one).
    pub fn sums_mut(&mut self) -> &mut CudaSlice<u8> {
        &mut self.sum
    }

    /// The sums' device address: pixel p's float4 lies at `sums_ptr() + 16 * p`.
    pub fn sums_ptr(&self) -> u64 {
        raw_ptr(&self.sum)
    }

    /// The stream every stage of the engine runs on: a copy of the sums
    /// enqueued on it is ordered after the frames before it and before the
    /// frames after it.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

impl CudaEngine {
    /// The closest-hit key of each of the shard's paths as the last ray
    /// traversal left it (common.cuh `Paths::hit`): tests compare traversals with it.
    pub fn hits(&self) -> TraceResult<Vec<u64>> {
        let bytes = cuda_runtime::dtoh(&self.stream, &self._path_buffers[4], "reading the hit keys")?;
        let mut keys: Vec<u64> = bytemuck::pod_collect_to_vec(&bytes);
        keys.truncate(self.gpu.shard.count as usize);
        Ok(keys)
    }

    /// Frames streamed, captured and replayed so far.
    pub fn graph_counts(&self) -> GraphCounts {
        self.graphs.counts()
    }

    /// Timing events the host has recorded so far: one pair per stage it
    /// enqueued, none for a replayed frame (tests count the host's launches with it).
    pub fn host_events(&self) -> u64 {
        self.timer.records()
    }
}

fn launch_err(name: &'static str) -> impl Fn(cudarc::driver::DriverError) -> TraceError {
    move |e| TraceError::Gpu(cuda_runtime::driver_error(name)(e))
}

impl CudaEngine {
    /// Kernel `name` of the wavefront module built as `build` (compiled on first use).
    fn function(&mut self, build: Build, name: &'static str) -> TraceResult<CudaFunction> {
        if let Some(f) = self.functions.get(&(build, name)) {
            return Ok(f.clone());
        }
        let f = self.backend.kernels().function(&WAVEFRONT, &build.spec(), name)?;
        self.functions.insert((build, name), f.clone());
        Ok(f)
    }

    /// A fused use of `algorithm`'s site by kernel `f` (`name`, `shared`
    /// bytes of dynamic shared memory a block) over an input of at most
    /// `input` items, writing at most `capacity`: its arguments and its launch
    /// (a resident grid whose blocks loop over tiles).
    fn fused(
        &mut self,
        algorithm: Algorithm,
        f: &CudaFunction,
        name: &str,
        input: u64,
        capacity: u64,
        shared: u32,
    ) -> TraceResult<(DeviceSite, LaunchConfig)> {
        if !self.sites.contains_key(&algorithm) {
            let site = CudaSite::new(&self.backend, algorithm, true)?;
            self.sites.insert(algorithm, site);
        }
        let site = &self.sites[&algorithm];
        let tiles = input.div_ceil(BLOCK as u64);
        let args = site.bind(&self.backend, capacity, tiles)?;
        let grid = site.grid(&self.backend, f, name, BLOCK, shared, tiles)?;
        Ok((args, LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: shared }))
    }

    /// A launch over a buffer of `capacity` items whose length the kernel
    /// reads from a word: blocks for the capacity, at most
    /// [`STRIDED_BLOCKS_PER_SM`] per SM, the kernel's grid-stride loop covering
    /// the rest. Sized from what the host
    /// knows before the frame, so a launch never waits for a count.
    fn strided(&self, capacity: u64) -> TraceResult<LaunchConfig> {
        let mut cfg = grid(capacity)?;
        cfg.grid_dim.0 = cfg.grid_dim.0.min(self.backend.info.sms.max(1).saturating_mul(STRIDED_BLOCKS_PER_SM));
        Ok(cfg)
    }
}

impl Engine for CudaEngine {
    type B = CudaBackend;
    type Clock = Timer<StageId>;

    fn backend(&self) -> &CudaBackend {
        &self.backend
    }

    fn image_pixels(&self) -> u64 {
        self.gpu.image_pixels()
    }

    fn shard(&self) -> Shard {
        self.gpu.shard
    }

    fn set_shard(&mut self, shard: Shard) -> TraceResult<()> {
        // The old buffers' frees are stream-ordered, after every launch that used them.
        if let Some((buffers, paths)) = self.gpu.set_shard(shard, |room| alloc_paths(&self.backend, room))? {
            self._path_buffers = buffers;
            self.paths = paths;
        }
        self.generation += 1;
        Ok(())
    }

    fn bvh_depth(&self) -> u32 {
        self.gpu.depth
    }

    fn fuses(&self, algorithm: crate::compaction::Algorithm) -> bool {
        crate::compaction::BackendKind::Cuda.fuses(algorithm)
    }

    fn memory_limit(&self) -> TraceResult<crate::memory::Limit> {
        Ok(crate::memory::Limit::device(cuda_runtime::free_memory(&self.stream)?))
    }

    fn work(&mut self) -> &mut Option<Work<Self>> {
        &mut self.work
    }

    fn clock(&mut self) -> &mut Timer<StageId> {
        &mut self.timer
    }

    fn begin_frame(&mut self, words: &mut Words<Self>, sample: u32, key: u64) -> TraceResult<Option<FramePath>> {
        // The sample, before the graph (a memset: no host memory to stage, no wait).
        // SAFETY: the word is the engine's one-u32 allocation, written in stream order.
        let r = unsafe { sys::cuMemsetD32Async(raw_ptr(&self.sample), sample, 1, self.stream.cu_stream()) };
        r.result().map_err(launch_err("setting the frame's sample"))?;
        let key = crate::replay::key((key, self.generation, words.ptr()));
        let path = self.graphs.begin(key, &self.stream, &mut self.timer)?;
        if path == FramePath::Replayed {
            return Ok(Some(path));
        }
        // A frame's single-pass calls take the same tile-state epochs every time.
        self.backend.restart_tile_states()?;
        let bytes = words.capacity() as usize * 8;
        if bytes > 0 {
            // SAFETY: the range is the words buffer's own allocation; enqueued on
            // the stream every stage of the frame runs on, so it lands before them.
            let r = unsafe { sys::cuMemsetD8Async(words.ptr(), 0, bytes, self.stream.cu_stream()) };
            r.result().map_err(launch_err("clearing the frame's words"))?;
        }
        Ok(Some(path))
    }

    fn end_frame(&mut self, words: &Words<Self>) -> TraceResult<Option<FrameEnd>> {
        if !self.graphs.end(&self.stream, &mut self.timer)? {
            return Ok(None);
        }
        // The words are read after the last stage (accumulate), so this one
        // wait also completes the frame; the times are read once after it.
        let words = crate::compaction::Backend::download(&self.backend, words)?;
        let times = self.graphs.times(&self.timer)?;
        self.timer.clear();
        Ok(Some((times, words)))
    }

    fn abort_frame(&mut self) {
        self.graphs.abort(&self.stream, &mut self.timer);
    }

    fn set_graphs(&mut self, graphs: Graphs) {
        self.graphs.set_mode(graphs);
    }

    fn wide_ranges(&self) -> &[(u32, u32)] {
        &self.gpu.wide_ranges
    }

    fn group_split(
        &mut self,
        algorithm: Algorithm,
        input: &CudaBuffer<u64>,
        split: crate::frontier::GroupSplit,
        output: &mut CudaBuffer<u64>,
        lens: crate::compaction::Lens<'_, CudaBackend>,
    ) -> TraceResult<()> {
        let first = CudaPredicate::new(NODE_BIT_CLEAR, [split.bit as u64, split.base as u64]);
        crate::compaction::Backend::partition_counted(
            &self.backend,
            algorithm,
            input,
            crate::compaction::Keep::Predicate(&first),
            output,
            lens,
        )?;
        Ok(())
    }

    fn wide_depth(&self) -> u32 {
        self.gpu.wide_depth
    }

    fn camera(&mut self, queue: &mut Queue<Self>, words: &mut Words<Self>, queue_len: u64) -> TraceResult<()> {
        let (base, count) = self.gpu.camera(&self.backend, queue, words, queue_len)?;
        let cfg = grid(count as u64)?;
        let (qp, wp) = (queue.ptr(), words.ptr());
        // The kernel reads the sample from the word begin_frame set.
        let sp = raw_ptr(&self.sample);
        let f = self.function(Build::PLAIN, "trace_camera")?;
        let mut l = self.stream.launch_builder(&f);
        l.arg(&self.paths)
            .arg(&self.camera)
            .arg(&self.gpu.width)
            .arg(&self.gpu.height)
            .arg(&base)
            .arg(&count)
            .arg(&sp)
            .arg(&self.gpu.seed)
            .arg(&qp)
            .arg(&wp)
            .arg(&queue_len);
        // SAFETY: matches trace_camera(Paths, Camera, u32, u32, u32, u32, const u32*, u32, u32*, u64*, u64); the
        // queue (checked above) and every path field (path_capacity) hold at least `count` entries,
        // `queue_len` is a word of the buffer.
        unsafe { l.launch(cfg) }.map(drop).map_err(launch_err("launching trace_camera"))
    }

    fn depth_first(&mut self, queue: &Queue<Self>, words: &Words<Self>, run: DepthFirst) -> TraceResult<()> {
        self.gpu.depth_first(&self.backend, words, &run)?;
        let DepthFirst { shadow, queue_len, bvh } = run;
        let capacity = queue.len();
        let (qp, sh, wp, next) = (queue.ptr(), shadow as u32, words.ptr(), raw_ptr(&self.fetch));
        let (name, cfg) = match bvh {
            BvhKind::Binary => ("trace_depth_first", grid(capacity)?),
            BvhKind::Wide => {
                // Its warps fetch rays from a counter that starts at 0 (a memset: captured with the frame).
                // SAFETY: the word is the engine's one-u32 allocation, written in stream order.
                let r = unsafe { sys::cuMemsetD32Async(next, 0, 1, self.stream.cu_stream()) };
                r.result().map_err(launch_err("clearing the fetch word"))?;
                let mut cfg = grid(capacity)?;
                cfg.grid_dim.0 =
                    cfg.grid_dim.0.min(self.backend.info.sms.max(1).saturating_mul(RESIDENT_BLOCKS_PER_SM));
                ("trace_depth_first_wide", cfg)
            }
        };
        let f = self.function(Build::PLAIN, name)?;
        let mut l = self.stream.launch_builder(&f);
        l.arg(&self.scene).arg(&self.paths).arg(&qp).arg(&capacity).arg(&sh).arg(&wp).arg(&queue_len);
        if bvh == BvhKind::Wide {
            l.arg(&next);
        }
        // SAFETY: matches trace_depth_first(Scene, Paths, const u32*, u64, u32, const u64*, u64), or
        // trace_depth_first_wide, the same and the fetch word (u32*); the kernels read at most `capacity`
        // queue entries, each a path id below the shard's count or DEAD32.
        unsafe { l.launch(cfg) }.map(drop).map_err(launch_err("launching the depth-first traversal"))
    }

    fn frontier_init(&mut self, step: Step<'_, CudaBackend, u32>, run: FrontierRun) -> TraceResult<()> {
        self.gpu.frontier_init(&self.backend, &step, &run)?;
        let (Step { at, input: queue, output: frontier, words }, FrontierRun { capacity, shadow, descend, fuse, .. }) =
            (step, run);
        let build = Build::frontier(fuse, descend);
        let f = self.function(build, "trace_bf_init")?;
        let (site, cfg) = match fuse.filter(|_| build.fused()) {
            Some(alg) => self.fused(alg, &f, "trace_bf_init", queue.len().min(capacity), capacity, 0)?,
            None => (DeviceSite::default(), grid(queue.len().min(capacity))?),
        };
        let (qp, sh, fp, wp, la) = (queue.ptr(), shadow as u32, frontier.ptr(), words.ptr(), DeviceLevel::from(at));
        let mut l = self.stream.launch_builder(&f);
        l.arg(&self.scene).arg(&self.paths).arg(&qp).arg(&sh).arg(&fp).arg(&capacity).arg(&wp).arg(&la).arg(&site);
        // SAFETY: matches trace_bf_init(Scene, Paths, const u32*, u32, u64*, u64, u64*, FrontierLevel, Site); the
        // kernel writes frontier[0, n) only when n <= capacity (fused: only below the capacity), and n (the
        // queue's length word) is at most the queue's length, so it reads no queue entry past it.
        unsafe { l.launch(cfg) }.map(drop).map_err(launch_err("launching trace_bf_init"))
    }

    fn expand(&mut self, step: Step<'_, CudaBackend>, run: FrontierRun) -> TraceResult<()> {
        self.gpu.expand(&self.backend, &step, &run)?;
        if run.bvh == BvhKind::Wide {
            crate::trace::wide::check_breadth_first(self.wide_nodes)?;
        }
        let (Step { at, input, output, words }, FrontierRun { capacity, shadow, descend, bvh, fuse, block_levels }) =
            (step, run);
        // The wide kernels sit in every module (they do not depend on the descent).
        let build = Build::frontier(fuse, descend);
        // One wide level a step is the per-item expansion; more, the block step (a BfTile of shared memory).
        let (name, shared) = match bvh {
            BvhKind::Binary => ("trace_bf_expand", 0),
            BvhKind::Wide if block_levels <= 1 => ("trace_bf_expand_wide", 0),
            BvhKind::Wide => ("trace_bf_step_wide", BF_TILE_BYTES),
        };
        let f = self.function(build, name)?;
        if shared > 0 {
            // Above 48 KiB of shared memory a block needs the opt-in (the site stages 32 KiB beside the tile).
            f.set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)
                .map_err(launch_err("raising the breadth-first step's shared memory"))?;
        }
        let (site, mut cfg) = match fuse.filter(|_| build.fused()) {
            Some(alg) => self.fused(alg, &f, name, capacity, capacity, shared)?,
            None => (DeviceSite::default(), self.strided(capacity / run.fan())?),
        };
        cfg.shared_mem_bytes = shared;
        let (ip, op, sh, wp, la) = (input.ptr(), output.ptr(), shadow as u32, words.ptr(), DeviceLevel::from(at));
        let mut l = self.stream.launch_builder(&f);
        l.arg(&self.scene).arg(&self.paths).arg(&ip).arg(&op).arg(&capacity).arg(&sh);
        if name == "trace_bf_expand" {
            l.arg(&descend);
        } else if name == "trace_bf_step_wide" {
            l.arg(&block_levels);
        }
        l.arg(&wp).arg(&la).arg(&site);
        // SAFETY: matches trace_bf_expand(Scene, Paths, const u64*, u64*, u64, u32, u32, u64*, FrontierLevel,
        // Site), trace_bf_expand_wide, the same without the descent, or trace_bf_step_wide, the same with the
        // block's levels for the descent and BF_TILE_BYTES of dynamic shared memory (a BfTile); the kernel
        // clamps n to the capacity and writes output[0, n * fan) only when that fits it (fused: only slots
        // below the capacity); every live item names a path and a node of its BVH that exist (init and
        // earlier expansions wrote them; wide nodes below 2^24).
        unsafe { l.launch(cfg) }.map(drop).map_err(launch_err("launching the breadth-first expansion"))
    }

    fn shade(
        &mut self,
        queue: &Queue<Self>,
        next: &mut Queue<Self>,
        words: &mut Words<Self>,
        s: Shading,
    ) -> TraceResult<()> {
        // The kernel reads the sample begin_frame set (`s.sample` is the same number).
        let Shading { bounce, estimator, queue_len, counts, next_len, fuse, .. } = s;
        self.gpu.check_words(&self.backend, words, &[queue_len, counts.alive, counts.shadow, next_len])?;
        let capacity = queue.len().min(next.len());
        let build = Build::paths(fuse);
        let f = self.function(build, "trace_shade")?;
        let (site, cfg) = match fuse.filter(|_| build.fused()) {
            Some(alg) => self.fused(alg, &f, "trace_shade", capacity, next.len(), 0)?,
            None => (DeviceSite::default(), grid(capacity)?),
        };
        let (qp, np, wp) = (queue.ptr(), next.ptr(), words.ptr());
        let (estimator, (base, _), sp) = (estimator as u32, self.gpu.shard32(), raw_ptr(&self.sample));
        let mut l = self.stream.launch_builder(&f);
        l.arg(&self.scene)
            .arg(&self.paths)
            .arg(&qp)
            .arg(&np)
            .arg(&capacity)
            .arg(&sp)
            .arg(&bounce)
            .arg(&self.gpu.max_bounces)
            .arg(&estimator)
            .arg(&self.gpu.seed)
            .arg(&base)
            .arg(&wp)
            .arg(&queue_len)
            .arg(&counts.alive)
            .arg(&counts.shadow)
            .arg(&next_len)
            .arg(&site);
        // SAFETY: matches trace_shade(Scene, Paths, const u32*, u32*, u64, const u32*, u32, u32, u32, u32, u32, u64*,
        // u64, u64, u64, u64, Site); the kernel touches at most `capacity` entries of the queue and of `next`,
        // and the four words lie in the buffer (checked above).
        unsafe { l.launch(cfg) }.map(drop).map_err(launch_err("launching trace_shade"))
    }

    fn nee(&mut self, queue: &Queue<Self>, words: &Words<Self>, queue_len: u64) -> TraceResult<()> {
        self.gpu.check_words(&self.backend, words, &[queue_len])?;
        let capacity = queue.len();
        let (qp, wp) = (queue.ptr(), words.ptr());
        let f = self.function(Build::PLAIN, "trace_nee")?;
        let mut l = self.stream.launch_builder(&f);
        l.arg(&self.paths).arg(&qp).arg(&capacity).arg(&wp).arg(&queue_len);
        // SAFETY: matches trace_nee(Paths, const u32*, u64, const u64*, u64).
        unsafe { l.launch(grid(capacity)?) }.map(drop).map_err(launch_err("launching trace_nee"))
    }

    fn accumulate(&mut self, words: &Words<Self>) -> TraceResult<()> {
        self.gpu.check_words(&self.backend, words, &[crate::frontier::STATUS])?;
        let (base, count) = self.gpu.shard32();
        let (sp, wp) = (raw_ptr(&self.sum), words.ptr());
        let f = self.function(Build::PLAIN, "trace_accumulate")?;
        let mut l = self.stream.launch_builder(&f);
        l.arg(&self.paths).arg(&sp).arg(&base).arg(&count).arg(&wp);
        // SAFETY: matches trace_accumulate(Paths, float4*, u32, u32, const u64*); the sum holds the image's
        // float4s and the shard lies inside it (set_shard), the radiance holds `count` paths, and the words
        // their status word.
        unsafe { l.launch(grid(count as u64)?) }.map(drop).map_err(launch_err("launching trace_accumulate"))
    }

    fn reset(&mut self) -> TraceResult<()> {
        self.stream.memset_zeros(&mut self.sum).map_err(launch_err("clearing the image"))
    }

    fn set_camera(&mut self, camera: CameraLayout) {
        self.camera = camera;
        self.generation += 1;
    }

    fn image(&self) -> TraceResult<Vec<[f32; 4]>> {
        let bytes = cuda_runtime::dtoh(&self.stream, &self.sum, "reading the image")?;
        let mut out: Vec<[f32; 4]> = bytemuck::pod_collect_to_vec(&bytes);
        out.truncate(self.image_pixels() as usize);
        Ok(out)
    }

    fn rgba8(&mut self) -> TraceResult<&[[u8; 4]]> {
        let pixels = self.image_pixels() as usize;
        let h = match self.handoff.take() {
            Some(h) => h,
            None => Handoff::new(&self.backend, pixels)?,
        };
        let h = self.handoff.insert(h);
        let (sp, rp, n) = (raw_ptr(&self.sum), raw_ptr(&h.rgba), pixels as u32);
        let mut l = self.stream.launch_builder(&h.tonemap);
        l.arg(&sp).arg(&rp).arg(&n);
        // SAFETY: matches trace_tonemap(const float4*, uchar4*, u32); the sum holds `pixels` float4s and
        // `rgba` `pixels` words.
        unsafe { l.launch(grid(pixels as u64)?) }.map_err(launch_err("launching trace_tonemap"))?;
        // Enqueued behind the kernel on the same stream; into pinned memory it does not block the host.
        self.stream.memcpy_dtoh(&h.rgba, &mut h.staging).map_err(launch_err("reading the display image"))?;
        // The one wait of the hand-off: for the stream, so for the copy.
        let words = cuda_runtime::pinned(&self.stream, &h.staging, "waiting for the display image")?;
        Ok(bytemuck::cast_slice(&words[..pixels]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine refuses a scene its GPU cannot hold before it uploads
    /// anything, with the numbers and what to do instead (the built-in
    /// sphereflake-10m needs about 2.2 GB at 1080p: docs/render/bf-block-h200).
    #[test]
    fn a_gpu_too_small_for_the_scene_is_refused_clearly() {
        let scene = crate::scene::builtin("cornell").expect("cornell");
        let packed = crate::trace::layout::Packed::new(&scene, &crate::bvh::build(&scene.triangles));
        let pixels = 1920 * 1080;
        let need = packed.bytes() + pixels * (PATH_BYTES + 16 + 2 * 4 + 3 * 2 * 8);
        assert!(check_device_memory(&packed, pixels, need).is_ok());
        let err = check_device_memory(&packed, pixels, need - 1).expect_err("one byte short");
        let msg = err.to_string();
        assert!(matches!(err, TraceError::OutOfMemory { bytes, .. } if bytes == need), "{msg}");
        assert!(msg.contains(&format!("{need} bytes")) && msg.contains("--backend cpu"), "{msg}");
    }
}
