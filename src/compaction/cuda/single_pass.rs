//! Host side of the single-pass kernels: `lookback` (decoupled look-back,
//! kernels/compaction/lookback.cu) and `chained` (kernels/compaction/chained.cu),
//! which share kernels/compaction/single_pass.cuh and differ only in how a
//! tile learns its prefix.

use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use smart_default::SmartDefault;

use crate::compaction::cuda::runtime::{CHAINED, LOOKBACK, Source, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, Io, KeepArgs, raw_ptr};
use crate::compaction::{Error, Result};

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

/// Tuning of the single-pass kernels (`REAP_BLOCK`, `REAP_VECS` in single_pass.cuh).
#[derive(Clone, Debug, SmartDefault)]
pub struct SinglePassTuning {
    /// Threads per block.
    // 128 threads x 8 vectors (16 KiB tiles) was the fastest of the shapes
    // swept on an H200 (64-512 threads, 2-8 vectors) at 2^22-2^28 u32.
    #[default(128)]
    pub block: u32,
    /// 16-byte vectors each thread loads per tile.
    #[default(8)]
    pub vecs: u32,
    /// Blocks of a counted launch, which loop over the tiles: 0 for as many
    /// as the device holds at once. A few make every block loop over many
    /// tiles at small sizes (tests, sanitizer runs).
    #[default(0)]
    pub counted_grid: u32,
}

impl SinglePassTuning {
    fn specialise(&self, v: &Variant) -> Variant {
        v.with(&[("REAP_BLOCK", self.block), ("REAP_VECS", self.vecs)])
    }
    /// Elements per tile.
    pub fn tile(&self, elem_bytes: u32) -> u64 {
        (self.block * self.vecs * (16 / elem_bytes)) as u64
    }
}

fn tiles(n: u64, tile: u64) -> Result<u32> {
    u32::try_from(n.div_ceil(tile))
        .map_err(|_| Error::Backend(format!("{n} elements need more than 2^32 tiles; raise the tile size")))
}

fn config(t: &SinglePassTuning, grid: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (t.block, 1, 1), shared_mem_bytes: 0 }
}

/// The grid of a single-pass launch over `tiles` tiles (of the capacity):
/// one block per tile with a host length; counted, at most the blocks that
/// are resident at once, which loop over the live tiles (single_pass.cuh
/// `TileLoop`). Such a launch draws tiles + grid tile ids from a 32-bit counter.
fn grid(
    b: &CudaBackend,
    t: &SinglePassTuning,
    io: &Io,
    f: &CudaFunction,
    name: &str,
    v: &Variant,
    tiles: u32,
) -> Result<u32> {
    if !io.ext.is_counted() {
        return Ok(tiles);
    }
    let resident = match t.counted_grid {
        0 => b.resident_blocks(f, name, v, t.block)?,
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

/// Select, or with `split` partition: kept elements first, then the
/// rejected ones, both in input order.
pub fn compact(
    b: &CudaBackend,
    c: Chaining,
    v: &Variant,
    keep: KeepArgs,
    io: Io,
    split: bool,
    st: &mut Stages,
) -> Result<()> {
    let t = &b.tuning.single_pass;
    let v = t.specialise(v);
    let tiles = tiles(io.ext.cap, t.tile(v.elem_bytes))?;
    let (words, epoch) = b.tile_states(tiles as u64)?;
    let counter = words;
    let state = words + 8;
    let name = format!("{}_{}", c.name(), if split { "partition" } else { "select" });
    let f = b.kernels().function(c.source(), &v, &name)?;
    let grid = grid(b, t, &io, &f, &name, &v, tiles)?;
    // Partition needs the kept total before any tile places a rejected element.
    let total = if split { Some(b.zeroed(8)?) } else { None };
    let kept_total = total.as_ref().map(raw_ptr).unwrap_or(0);
    if split {
        let f = b.kernels().function(c.source(), &v, &format!("{}_count", c.name()))?;
        let grid = (b.info.sms * 8).min(tiles);
        st.run("count", || {
            let mut l = b.stream().launch_builder(&f);
            l.arg(&io.ext).arg(&io.input).arg(&keep).arg(&kept_total);
            // SAFETY: matches `NAME_count(Extent, const Elem*, KeepArgs, u64*)`; input holds the extent's
            // capacity of elements (and `len`, if set, is one u64) and kept_total is a zeroed u64.
            unsafe { l.launch(config(t, grid)) }.map(drop).map_err(driver_error("launching count"))
        })?;
    }
    st.run("single-pass", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&io.ext).arg(&io.input).arg(&keep).arg(&io.output).arg(&io.count).arg(&state).arg(&counter);
        l.arg(&epoch);
        if split {
            l.arg(&kept_total);
        }
        // SAFETY: matches `NAME_select` / `NAME_partition` in single_pass.cuh; input and output hold the
        // capacity's elements, state a word per tile of it (older epochs read as invalid), counter is 0
        // between calls (the launch's last draw rewinds it), count is one u64.
        unsafe { l.launch(config(t, grid)) }.map(drop).map_err(driver_error("launching the single pass"))
    })?;
    drop(total); // freed in stream order, after the kernels
    Ok(())
}

pub fn scan(b: &CudaBackend, c: Chaining, v: &Variant, io: Io, st: &mut Stages) -> Result<()> {
    let t = &b.tuning.single_pass;
    let v = t.specialise(v);
    let tiles = tiles(io.ext.cap, t.tile(v.elem_bytes))?;
    let name = format!("{}_scan", c.name());
    let f = b.kernels().function(c.source(), &v, &name)?;
    let grid = grid(b, t, &io, &f, &name, &v, tiles)?;
    // Flags (u32 per tile), values (two u64 per tile), the tile counter.
    let scratch = st.run("init", || b.zeroed(tiles as u64 * 4 + tiles as u64 * 16 + 16))?;
    let flags = raw_ptr(&scratch);
    let values = (flags + tiles as u64 * 4).next_multiple_of(8);
    let counter = values + tiles as u64 * 16;
    st.run("single-pass", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&io.ext).arg(&io.input).arg(&io.output).arg(&io.count).arg(&flags).arg(&values).arg(&counter);
        // SAFETY: matches `NAME_scan(Extent, const Elem*, Elem*, u64*, u32*, u64*, u32*)`; the scratch holds
        // the flags, values and counter of every tile of the capacity, laid out above, zeroed.
        unsafe { l.launch(config(t, grid)) }.map(drop).map_err(driver_error("launching the scan"))
    })?;
    drop(scratch);
    Ok(())
}
