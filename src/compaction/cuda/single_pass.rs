//! Host side of the single-pass kernels: `lookback` (decoupled look-back,
//! kernels/compaction/lookback.cu) and `chained` (kernels/compaction/chained.cu),
//! which share kernels/compaction/single_pass.cuh and differ only in how a
//! tile learns its prefix.

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use smart_default::SmartDefault;

use crate::compaction::cuda::runtime::{CHAINED, LOOKBACK, Source, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, Io, KeepArgs, raw_ptr};
use crate::compaction::{Error, Rejected, Result};

/// How a tile learns the prefix of the tiles before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chaining {
    /// Wait for the predecessor's inclusive prefix (seed 001 mod. 10.4).
    Chained,
    /// Decoupled look-back (Merrill & Garland 2016).
    Decoupled,
}

impl Chaining {
    fn source(self) -> &'static Source {
        match self {
            Chaining::Chained => &CHAINED,
            Chaining::Decoupled => &LOOKBACK,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Chaining::Chained => "chained",
            Chaining::Decoupled => "lookback",
        }
    }
}

/// How a thread's items come from global memory (`REAP_LOAD` in single_pass.cuh).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoadStyle {
    /// 16-byte loads, warp-striped, straight into registers.
    Vectorised,
    /// CUB's BLOCK_LOAD_WARP_TRANSPOSE: a warp's coalesced 16-byte loads go
    /// through shared memory, so each thread holds consecutive items.
    WarpTransposed,
    /// sm_90 bulk copies into a ring of three tiles in shared memory, one
    /// persistent block looping over tiles, each tile's count published as
    /// soon as it lands (kernels/compaction/single_pass_ring.cuh); the scan
    /// ranks a tile in place and publishes its sum the same way.
    BulkAsync,
}

impl LoadStyle {
    pub const ALL: [LoadStyle; 3] = [LoadStyle::Vectorised, LoadStyle::WarpTransposed, LoadStyle::BulkAsync];
    pub fn name(self) -> &'static str {
        match self {
            LoadStyle::Vectorised => "vectorised",
            LoadStyle::WarpTransposed => "warp-transposed",
            LoadStyle::BulkAsync => "bulk-async",
        }
    }
    /// The value of `REAP_LOAD` (`REAP_LOAD_*` in single_pass.cuh).
    fn define(self) -> u32 {
        match self {
            LoadStyle::Vectorised => 0,
            LoadStyle::WarpTransposed => 1,
            LoadStyle::BulkAsync => 2,
        }
    }
    /// Whether a device of this compute capability has the instructions.
    pub fn runs_on(self, compute_capability: (i32, i32)) -> bool {
        self != LoadStyle::BulkAsync || compute_capability.0 >= 9
    }
}

impl std::str::FromStr for LoadStyle {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        LoadStyle::ALL.into_iter().find(|l| l.name() == s).ok_or_else(|| Error::Tuning {
            algorithm: "lookback",
            why: format!("unknown load style `{s}`; use vectorised, warp-transposed or bulk-async"),
        })
    }
}

/// What the default table tells GPUs apart by.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuTraits {
    pub compute_capability: (i32, i32),
    /// Peak DRAM bandwidth, GB/s; 0 when unknown.
    pub dram_gbps: f64,
}

impl From<(i32, i32)> for GpuTraits {
    /// A device known only by its compute capability.
    fn from(compute_capability: (i32, i32)) -> Self {
        GpuTraits { compute_capability, dram_gbps: 0.0 }
    }
}

impl From<&crate::cuda_runtime::DeviceInfo> for GpuTraits {
    fn from(info: &crate::cuda_runtime::DeviceInfo) -> Self {
        GpuTraits { compute_capability: info.compute_capability, dram_gbps: info.dram_gbps }
    }
}

/// Peak DRAM bandwidth above which an sm_90 device counts as HBM3e (an H200
/// has 4.8 TB/s, an H100 SXM 3.35 TB/s).
const HBM3E_GBPS: f64 = 4000.0;

/// The GPUs a default shape is for, most specific first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArchClass {
    /// Compute capability 9.x with HBM3e (H200, GH200 144 GB): 1.4x an
    /// H100's bandwidth, so it wants more bytes in flight per SM.
    Sm90Hbm3e,
    /// Compute capability 9.x (H100, H200).
    Sm90,
    /// Every device.
    Any,
}

impl ArchClass {
    pub const ALL: [ArchClass; 3] = [ArchClass::Sm90Hbm3e, ArchClass::Sm90, ArchClass::Any];
    pub fn matches(self, gpu: impl Into<GpuTraits>) -> bool {
        let gpu = gpu.into();
        match self {
            ArchClass::Sm90Hbm3e => gpu.compute_capability.0 == 9 && gpu.dram_gbps >= HBM3E_GBPS,
            ArchClass::Sm90 => gpu.compute_capability.0 == 9,
            ArchClass::Any => true,
        }
    }
    /// The most specific class of a device.
    pub fn of(gpu: impl Into<GpuTraits>) -> ArchClass {
        let gpu = gpu.into();
        ArchClass::ALL.into_iter().find(|c| c.matches(gpu)).unwrap_or(ArchClass::Any)
    }
    pub fn name(self) -> &'static str {
        match self {
            ArchClass::Sm90Hbm3e => "Sm90Hbm3e",
            ArchClass::Sm90 => "Sm90",
            ArchClass::Any => "Any",
        }
    }
}

/// One compiled shape of the single-pass kernels (`REAP_BLOCK`, `REAP_VECS`,
/// `REAP_LOAD`, `REAP_DELAY` in single_pass.cuh).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Threads per block, a whole number of warps.
    pub block: u32,
    /// 16-byte vectors each thread loads per tile (items: vecs x 16 / element
    /// bytes, so an even count for 32-byte elements).
    pub vecs: u32,
    pub load: LoadStyle,
    /// Nanoseconds a look-back sleeps between polls of an unpublished tile; 0 spins.
    pub delay_ns: u32,
}

/// Static shared memory a block may use (CUDA's limit without opting in).
const SHARED_LIMIT: u32 = 48 * 1024;
/// Shared memory a block may opt in to on sm_90 (227 KiB), which the
/// bulk-async ring takes as dynamic shared memory.
const OPT_IN_SHARED_LIMIT: u32 = 227 * 1024;
/// Tiles in the bulk-async ring (`RING` in single_pass_ring.cuh).
const RING: u32 = 3;

impl Shape {
    pub const fn new(block: u32, vecs: u32, load: LoadStyle, delay_ns: u32) -> Shape {
        Shape { block, vecs, load, delay_ns }
    }
    /// The variant compiled for this shape.
    pub fn specialise(&self, v: &Variant) -> Variant {
        v.with(&[
            ("REAP_BLOCK", self.block),
            ("REAP_VECS", self.vecs),
            ("REAP_LOAD", self.load.define()),
            ("REAP_DELAY", self.delay_ns),
        ])
    }
    /// Threads of a select, partition or scan block: the tile's, and with
    /// the bulk-async ring one more warp, which draws tiles and looks back
    /// while the others count (`REAP_THREADS` in single_pass.cuh).
    pub fn threads(&self) -> u32 {
        self.block + if self.load == LoadStyle::BulkAsync { 32 } else { 0 }
    }
    /// Elements per tile.
    pub fn tile(&self, elem_bytes: u32) -> u64 {
        (self.block * self.vecs * 16 / elem_bytes) as u64
    }
    /// Shared memory of the select / partition kernels' tile staging: a warp-transposed
    /// load adds a padding vector per 8 (single_pass.cuh `STAGE_PAD`); bulk-async
    /// holds a ring of tiles.
    pub fn staging_bytes(&self) -> u32 {
        let vecs = self.block * self.vecs;
        16 * match self.load {
            LoadStyle::Vectorised => vecs,
            LoadStyle::WarpTransposed => vecs + vecs / 8,
            LoadStyle::BulkAsync => RING * vecs,
        }
    }
    /// Dynamic shared memory of a select / partition launch (the ring's).
    fn dynamic_bytes(&self) -> u32 {
        if self.load == LoadStyle::BulkAsync { self.staging_bytes() } else { 0 }
    }
    /// Whether the kernels can be built with this shape; says why not.
    pub fn check(&self) -> Result<()> {
        let bad = |why: String| Err(Error::Tuning { algorithm: "lookback", why });
        if self.block == 0 || !self.block.is_multiple_of(32) || self.threads() > 1024 {
            return bad(format!(
                "block {} is not a whole number of warps that fits in 1024 threads ({} loads add a look-back warp)",
                self.block,
                self.load.name()
            ));
        }
        if self.vecs == 0 {
            return bad("vecs 0: a thread must load at least one vector".into());
        }
        // The vectorised ranking packs each row's count of a warp (up to 128) into 8 bits of a u64.
        if self.load != LoadStyle::WarpTransposed && self.vecs > 8 {
            return bad(format!("vecs {}: {} loads take at most 8 vectors a thread", self.vecs, self.load.name()));
        }
        // Headroom for the kernels' other shared words (per-warp totals, the tile id, the prefix).
        let limit = if self.load == LoadStyle::BulkAsync { OPT_IN_SHARED_LIMIT } else { SHARED_LIMIT };
        if self.staging_bytes() + 1024 > limit {
            return bad(format!(
                "{} x {} vectors ({}) stage {} bytes, above the {limit}-byte shared memory of a block",
                self.block,
                self.vecs,
                self.load.name(),
                self.staging_bytes()
            ));
        }
        Ok(())
    }
    /// [`Shape::check`], and that a thread's vectors hold whole elements.
    pub fn check_for(&self, elem_bytes: u32) -> Result<()> {
        self.check()?;
        if !(self.vecs * 16).is_multiple_of(elem_bytes) {
            return Err(Error::Tuning {
                algorithm: "lookback",
                why: format!("vecs {}: {elem_bytes}-byte elements need an even number of 16-byte vectors", self.vecs),
            });
        }
        Ok(())
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{} {} delay {} ns", self.block, self.vecs, self.load.name(), self.delay_ns)
    }
}

/// One line of the default table: the shape for an element size on a class of GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShapeEntry {
    pub arch: ArchClass,
    pub elem_bytes: u32,
    pub shape: Shape,
}

const fn entry(arch: ArchClass, elem_bytes: u32, shape: Shape) -> ShapeEntry {
    ShapeEntry { arch, elem_bytes, shape }
}

/// The default shapes, searched in order: the first line whose class matches
/// the device and whose element size matches the call wins, so lines for a
/// class go above the `Any` line of the same size. `reap bench compaction
/// --sweep` prints its winners in this form.
pub const DEFAULT_SHAPES: &[ShapeEntry] = &[
    // On an H200, with the ring's look-back warp and unchecked full tiles,
    // 512 threads x 8 vectors (64 KiB tiles, one block of 192 KiB and 17
    // warps per SM) was the fastest of 12 ring shapes for every element size
    // at 2^26 and 2^28, 5-95 % kept: 77-90 % of copy, where the 256x8 ring
    // that led before these changes reached 67-80 % for 4 and 8 bytes
    // (docs/bench/issue48-h200/sweep). The same shape as the H100's lines,
    // by measurement, not by default: its own lines keep it so if either changes.
    entry(ArchClass::Sm90Hbm3e, 4, Shape::new(512, 8, LoadStyle::BulkAsync, 0)),
    entry(ArchClass::Sm90Hbm3e, 8, Shape::new(512, 8, LoadStyle::BulkAsync, 0)),
    entry(ArchClass::Sm90Hbm3e, 16, Shape::new(512, 8, LoadStyle::BulkAsync, 0)),
    entry(ArchClass::Sm90Hbm3e, 32, Shape::new(512, 8, LoadStyle::BulkAsync, 0)),
    // The bulk-async ring, 512 threads x 8 vectors (64 KiB tiles, one block
    // of 192 KiB per SM), fastest of 15 shapes on an H100 at 2^26-2^28
    // (docs/bench/ring-issue17): 85-98 % of copy at 2^28 against 66-80 % for
    // the register shapes swept before (384x6 for 4 bytes, 256x8 for 16).
    entry(ArchClass::Sm90, 4, Shape::new(512, 8, LoadStyle::BulkAsync, 0)),
    entry(ArchClass::Sm90, 8, Shape::new(512, 8, LoadStyle::BulkAsync, 0)),
    entry(ArchClass::Sm90, 16, Shape::new(512, 8, LoadStyle::BulkAsync, 0)),
    // The same 64 KiB tiles: 4 elements a thread.
    entry(ArchClass::Sm90, 32, Shape::new(512, 8, LoadStyle::BulkAsync, 0)),
    // 128 threads x 8 vectors (16 KiB tiles) was the fastest of the shapes
    // swept on an H200 (64-512 threads, 2-8 vectors) at 2^22-2^28 u32.
    entry(ArchClass::Any, 4, Shape::new(128, 8, LoadStyle::Vectorised, 0)),
    // Same shape as 4 bytes until a sweep per element size picks another.
    entry(ArchClass::Any, 8, Shape::new(128, 8, LoadStyle::Vectorised, 0)),
    // Same shape as 4 bytes until a sweep per element size picks another.
    entry(ArchClass::Any, 16, Shape::new(128, 8, LoadStyle::Vectorised, 0)),
    // Same shape as 4 bytes until a sweep per element size picks another.
    entry(ArchClass::Any, 32, Shape::new(128, 8, LoadStyle::Vectorised, 0)),
];

/// Tuning of the single-pass kernels: a shape per element size and class of GPU.
#[derive(Clone, Debug, SmartDefault)]
pub struct SinglePassTuning {
    /// Searched in order, see [`DEFAULT_SHAPES`].
    #[default(DEFAULT_SHAPES.to_vec())]
    pub shapes: Vec<ShapeEntry>,
    /// Blocks of a counted or bulk-async launch, which loop over the tiles:
    /// 0 for as many as the device holds at once. A few make every block loop over many
    /// tiles at small sizes (tests, sanitizer runs).
    #[default(0)]
    pub counted_grid: u32,
}

impl SinglePassTuning {
    /// The shape for `elem_bytes`-byte elements on this device (a
    /// `&DeviceInfo`, or a compute capability alone).
    pub fn shape(&self, elem_bytes: u32, gpu: impl Into<GpuTraits>) -> Result<Shape> {
        let gpu = gpu.into();
        let found = self.shapes.iter().find(|e| e.elem_bytes == elem_bytes && e.arch.matches(gpu));
        let shape = found.map(|e| e.shape).ok_or_else(|| Error::Tuning {
            algorithm: "lookback",
            why: format!("no shape for {elem_bytes}-byte elements in the single-pass tuning table"),
        })?;
        shape.check_for(elem_bytes)?;
        Ok(shape)
    }

    /// Sets `lookback.FIELD` (every element size) or `lookback.BYTES.FIELD`
    /// (`chained.` alike: the two share the table), FIELD one of block, vecs,
    /// load (vectorised, warp-transposed), delay (nanoseconds).
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let bad = |why: String| Error::Tuning { algorithm: "lookback", why };
        let mut parts = key.split('.').skip(1).collect::<Vec<_>>();
        let field = parts.pop().unwrap_or_default();
        let elem_bytes = match parts.as_slice() {
            [] => None,
            [bytes] => match bytes.parse::<u32>() {
                Ok(b) if self.shapes.iter().any(|e| e.elem_bytes == b) => Some(b),
                _ => return Err(bad(format!("`{key}`: `{bytes}` is not an element size of the table"))),
            },
            _ => return Err(bad(format!("`{key}`: expected lookback.FIELD or lookback.BYTES.FIELD"))),
        };
        let int = || value.parse::<u32>().map_err(|_| bad(format!("`{key}={value}`: expected a whole number")));
        match field {
            "block" => {
                let v = int()?;
                self.set_shape(elem_bytes, |s| s.block = v)
            }
            "vecs" => {
                let v = int()?;
                self.set_shape(elem_bytes, |s| s.vecs = v)
            }
            "delay" => {
                let v = int()?;
                self.set_shape(elem_bytes, |s| s.delay_ns = v)
            }
            "load" => {
                let v = value.parse::<LoadStyle>()?;
                self.set_shape(elem_bytes, |s| s.load = v)
            }
            _ => return Err(bad(format!("`{key}`: unknown field `{field}`; use block, vecs, load or delay"))),
        }
        Ok(())
    }

    /// Every shape used for one element size (all of them with `None`) from
    /// now on: the benchmark's sweep and `REAP_CUDA_TUNING` overrides.
    pub fn set_shape(&mut self, elem_bytes: Option<u32>, f: impl Fn(&mut Shape)) {
        for e in self.shapes.iter_mut().filter(|e| elem_bytes.is_none_or(|b| b == e.elem_bytes)) {
            f(&mut e.shape);
        }
    }
}

/// Compiles the select module of `shape` ahead of its first call (the
/// benchmark's sweep compiles its grid on every core before timing it).
pub fn compile(b: &CudaBackend, c: Chaining, v: &Variant, shape: &Shape) -> Result<()> {
    let v = shape.specialise(v);
    b.kernels().function(c.source(), &v, &format!("{}_select", c.name()))?;
    Ok(())
}

fn tiles(n: u64, tile: u64) -> Result<u32> {
    u32::try_from(n.div_ceil(tile))
        .map_err(|_| Error::Backend(format!("{n} elements need more than 2^32 tiles; raise the tile size")))
}

/// The shape's load style must run on this device (bulk-async: sm_90 on).
pub(super) fn check_arch(b: &CudaBackend, t: &Shape) -> Result<()> {
    if t.load.runs_on(b.info.compute_capability) {
        return Ok(());
    }
    let (major, minor) = b.info.compute_capability;
    Err(Error::Tuning {
        algorithm: "lookback",
        why: format!(
            "{} loads need compute capability 9.0 or newer (this GPU has {major}.{minor}); use vectorised",
            t.load.name()
        ),
    })
}

/// The launch's dynamic shared memory (the ring's), which the function is
/// allowed past the default 48 KiB first.
fn dynamic_shared(t: &Shape, f: &CudaFunction) -> Result<u32> {
    let shared = t.dynamic_bytes();
    if shared > 0 {
        f.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)
            .map_err(driver_error("raising the ring's shared memory"))?;
    }
    Ok(shared)
}

/// A select, partition or scan launch: [`Shape::threads`] a block.
fn config(s: &Shape, grid: u32, shared_mem_bytes: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (s.threads(), 1, 1), shared_mem_bytes }
}

/// The grid of a single-pass launch over `tiles` tiles (of the capacity):
/// one block per tile with a host length; counted, or in the bulk-async
/// style, at most the blocks that are resident at once, which loop over the
/// live tiles (single_pass.cuh `TileLoop`, single_pass_ring.cuh). Such a
/// launch draws tiles + grid tile ids from a 32-bit counter.
fn grid(b: &CudaBackend, s: &Shape, io: &Io, f: &CudaFunction, name: &str, v: &Variant, tiles: u32) -> Result<u32> {
    if !io.ext.is_counted() && s.load != LoadStyle::BulkAsync {
        return Ok(tiles);
    }
    let resident = match b.tuning.single_pass.counted_grid {
        0 => b.resident_blocks(f, name, v, s.threads(), s.dynamic_bytes())?,
        blocks => blocks,
    };
    let grid = resident.min(tiles);
    if tiles.checked_add(grid).is_none() {
        return Err(Error::Backend(format!(
            "{tiles} tiles and {grid} blocks overflow the 32-bit tile counter; raise the tile size"
        )));
    }
    Ok(grid)
}

/// Select, or with a `split` layout partition: kept elements first, then the
/// rejected ones, in input order (a count pass first: the kept total places
/// them) or reversed from the end (`Rejected::Reversed`: no count pass).
pub fn compact(
    b: &CudaBackend,
    c: Chaining,
    v: &Variant,
    keep: KeepArgs,
    io: Io,
    split: Option<Rejected>,
    st: &mut Stages,
) -> Result<()> {
    let t = &b.tuning.single_pass.shape(v.elem_bytes, &b.info)?;
    check_arch(b, t)?;
    let v = t.specialise(v);
    let tiles = tiles(io.ext.cap, t.tile(v.elem_bytes))?;
    let (words, epoch) = b.tile_states(tiles as u64)?;
    let counter = words;
    let state = words + 8;
    let entry = match split {
        None => "select",
        Some(Rejected::InOrder) => "partition",
        Some(Rejected::Reversed) => "partition_reversed",
    };
    let name = format!("{}_{entry}", c.name());
    let f = b.kernels().function(c.source(), &v, &name)?;
    let shared = dynamic_shared(t, &f)?;
    let grid = grid(b, t, &io, &f, &name, &v, tiles)?;
    // Partition needs the kept total before any tile places a rejected element.
    let in_order = split == Some(Rejected::InOrder);
    let total = if in_order { Some(b.zeroed(8)?) } else { None };
    let kept_total = total.as_ref().map(raw_ptr).unwrap_or(0);
    if in_order {
        let f = b.kernels().function(c.source(), &v, &format!("{}_count", c.name()))?;
        let grid = (b.info.sms * 8).min(tiles);
        st.run("count", || {
            let mut l = b.stream().launch_builder(&f);
            l.arg(&io.ext).arg(&io.input).arg(&keep).arg(&kept_total);
            // SAFETY: matches `NAME_count(Extent, const Elem*, KeepArgs, u64*)`; input holds the extent's
            // capacity of elements (and `len`, if set, is one u64) and kept_total is a zeroed u64.
            // The count kernel has no look-back warp: the tile's threads alone.
            let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (t.block, 1, 1), shared_mem_bytes: 0 };
            unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching count"))
        })?;
    }
    st.run("single-pass", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&io.ext).arg(&io.input).arg(&keep).arg(&io.output).arg(&io.count).arg(&state).arg(&counter);
        l.arg(&epoch);
        if in_order {
            l.arg(&kept_total);
        }
        // SAFETY: matches `NAME_select` / `NAME_partition` / `NAME_partition_reversed` in single_pass.cuh; input and output hold the
        // capacity's elements, state a word per tile of it (older epochs read as invalid), counter is 0
        // between calls (the launch's last draw rewinds it), count is one u64.
        unsafe { l.launch(config(t, grid, shared)) }.map(drop).map_err(driver_error("launching the single pass"))
    })?;
    drop(total); // freed in stream order, after the kernels
    Ok(())
}

/// A sharded scan's carry: `count` device words from `words` (the totals of
/// the ranks before this one), added to every output of the scan.
#[derive(Clone, Copy, Debug, Default)]
pub struct Carry {
    pub words: u64,
    pub count: u32,
}

pub fn scan(b: &CudaBackend, c: Chaining, v: &Variant, io: Io, carry: Carry, st: &mut Stages) -> Result<()> {
    let t = &b.tuning.single_pass.shape(v.elem_bytes, &b.info)?;
    check_arch(b, t)?;
    let v = t.specialise(v);
    let tiles = tiles(io.ext.cap, t.tile(v.elem_bytes))?;
    let name = format!("{}_scan", c.name());
    let f = b.kernels().function(c.source(), &v, &name)?;
    let shared = dynamic_shared(t, &f)?;
    let grid = grid(b, t, &io, &f, &name, &v, tiles)?;
    // Flags (u32 per tile), values (two u64 per tile), the tile counter.
    let scratch = st.run("init", || b.zeroed(tiles as u64 * 4 + tiles as u64 * 16 + 16))?;
    let flags = raw_ptr(&scratch);
    let values = (flags + tiles as u64 * 4).next_multiple_of(8);
    let counter = values + tiles as u64 * 16;
    st.run("single-pass", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&io.ext).arg(&io.input).arg(&io.output).arg(&io.count).arg(&flags).arg(&values).arg(&counter);
        l.arg(&carry.words).arg(&carry.count);
        // SAFETY: matches `NAME_scan(Extent, const Elem*, Elem*, u64*, u32*, u64*, u32*, const u64*, u32)`;
        // the scratch holds the flags, values and counter of every tile of the capacity, laid out above,
        // zeroed; the carry's words are the caller's (none when its count is 0).
        unsafe { l.launch(config(t, grid, shared)) }.map(drop).map_err(driver_error("launching the scan"))
    })?;
    drop(scratch);
    Ok(())
}
