//! Host side of kernels/compaction/blelloch.cu: scan-then-scatter compaction
//! on Blelloch's work-efficient scan, as seed 001 modules 10.3-10.4 and seed
//! 002 §2.3 describe it; what CUDPP did (seed 000 Table 3).
//!
//! Mark; the up-sweep over all n, multi-level: per-tile reduction trees in
//! shared memory (001 mod. 10.3), written back in place, each tile's total
//! going to the level above, one launch per level until a single tile remains
//! (001 mod. 10.4's hierarchical scan) ("up-sweep"); the down-sweep back down
//! the levels, each tile seeded with its prefix from the level above
//! ("down-sweep"); then each kept element scatters itself to its offset
//! ("scatter"). O(n) work. Its CPU twin is src/compaction/cpu/blelloch.rs,
//! which sweeps the same tree level by level over the whole array.
//!
//! The tree scan also serves `roger`'s global sum.

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use smart_default::SmartDefault;

use crate::compaction::cuda::horn::{self, Sum};
use crate::compaction::cuda::runtime::{BLELLOCH, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, Extent, Io, KeepArgs, mark, raw_ptr};
use crate::compaction::{Error, Result};

/// Tuning of `blelloch` (`REAP_BLOCK` in blelloch.cu).
#[derive(Clone, Debug, SmartDefault)]
pub struct BlellochTuning {
    /// Threads per block, a power of two up to 1024; a tile is twice this,
    /// two values per thread as in 001's kernel.
    // 512-value tiles: three levels cover 2^27 values, four 2^36.
    #[default(256)]
    pub block: u32,
    /// The scatter (grid-stride) launches at most this many blocks per SM.
    #[default(16)]
    pub blocks_per_sm: u32,
}

impl BlellochTuning {
    pub(super) fn check(&self) -> Result<()> {
        if !self.block.is_power_of_two() || self.block > 1024 {
            return Err(Error::Tuning {
                algorithm: "blelloch",
                why: format!("block {} is not a power of two up to 1024", self.block),
            });
        }
        Ok(())
    }
    fn variant(&self, v: &Variant) -> Result<Variant> {
        self.check()?;
        Ok(horn::flag_variant(v).with(&[("REAP_BLOCK", self.block)]))
    }
    fn tile(&self) -> u64 {
        2 * self.block as u64
    }
}

/// Exclusive scan, total to `io.count`: the tree is built in the output itself.
pub fn scan(b: &CudaBackend, v: &Variant, io: Io, st: &mut Stages) -> Result<()> {
    let t = &b.tuning.blelloch;
    let tree = Tree::new(b, t, v, Sum::for_scan(v.elem_bytes)?, io.ext)?;
    st.run("up-sweep", || tree.up_sweep(b, io.input, false, io.output, io.count))?;
    st.run("down-sweep", || tree.down_sweep(b, io.output))?;
    Ok(())
}

/// Select, or with `split` partition: kept elements first, then the
/// rejected ones, both in input order.
pub fn compact(b: &CudaBackend, v: &Variant, keep: KeepArgs, io: Io, split: bool, st: &mut Stages) -> Result<()> {
    let (t, ext, cap) = (&b.tuning.blelloch, io.ext, io.ext.cap);
    let sum = Sum::for_count(cap);
    let tree = Tree::new(b, t, v, sum, ext)?;
    let (flag_buf, offset_buf) = (b.scratch(cap * 4)?, b.scratch(cap * sum.bytes())?);
    let (flags, offsets) = (raw_ptr(&flag_buf), raw_ptr(&offset_buf));
    mark::flags(b, v, keep, ext, io.input, flags, st)?;
    // The up-sweep's top level writes the kept count, which the scatter reads.
    st.run("up-sweep", || tree.up_sweep(b, flags, true, offsets, io.count))?;
    st.run("down-sweep", || tree.down_sweep(b, offsets))?;
    let f = b.kernels().function(&BLELLOCH, &tree.variant, &format!("blelloch_scatter_{}", sum.name()))?;
    st.run("scatter", || {
        let split = split as u32;
        let mut l = b.stream().launch_builder(&f);
        l.arg(&ext).arg(&io.input).arg(&flags).arg(&offsets).arg(&io.count).arg(&io.output).arg(&split);
        let cfg = b.grid_stride(cap, t.block, t.blocks_per_sm);
        // SAFETY: matches `blelloch_scatter_S(Extent, const Elem*, const u32*, const S*, const u64*, Elem*,
        // u32)`; input and output hold the capacity's elements, flags as many u32, offsets as many sums,
        // count one u64.
        unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching blelloch_scatter"))
    })?;
    drop((flag_buf, offset_buf, tree)); // freed in stream order, after the kernels
    Ok(())
}

/// The levels of a multi-level tree scan over the extent's leaves: level 0
/// is the leaves themselves, level L + 1 holds one sum per tile of level L,
/// up to the first level that fits one tile. Sized for the capacity; the
/// kernels find the levels of the device length's tree (blelloch.cu).
pub(super) struct Tree {
    variant: Variant,
    sum: Sum,
    block: u32,
    /// (length, device address) of levels 1.., in `_levels`.
    levels: Vec<(u64, u64)>,
    leaves: Extent,
    _levels: CudaSlice<u8>,
}

impl Tree {
    /// Allocates the levels above a capacity of `leaves.cap` > 0 leaves.
    pub(super) fn new(b: &CudaBackend, t: &BlellochTuning, v: &Variant, sum: Sum, leaves: Extent) -> Result<Tree> {
        let variant = t.variant(v)?;
        let mut lens = Vec::new();
        let mut m = leaves.cap;
        while m > t.tile() {
            m = m.div_ceil(t.tile());
            lens.push(m);
        }
        let buf = b.scratch(lens.iter().sum::<u64>() * sum.bytes())?;
        let mut at = raw_ptr(&buf);
        let levels = lens
            .into_iter()
            .map(|m| {
                let level = (m, at);
                at += m * sum.bytes();
                level
            })
            .collect();
        Ok(Tree { variant, sum, block: t.block, levels, leaves, _levels: buf })
    }

    /// (capacity, address) of level `l`, where level 0 is `leaves`.
    fn level(&self, l: usize, leaves: u64) -> (u64, u64) {
        if l == 0 { (self.leaves.cap, leaves) } else { self.levels[l - 1] }
    }

    /// Level `l + 1`'s address, where level `l`'s tile totals go, or null at the capacity's top.
    fn above(&self, l: usize) -> u64 {
        self.levels.get(l).map_or(0, |&(_, at)| at)
    }

    fn config(&self, m: u64) -> LaunchConfig {
        // One block per tile, up to the grid's limit; the kernels loop over the rest.
        let tiles = m.div_ceil(2 * self.block as u64).clamp(1, i32::MAX as u64);
        LaunchConfig { grid_dim: (tiles as u32, 1, 1), block_dim: (self.block, 1, 1), shared_mem_bytes: 0 }
    }

    /// Enqueues the up-sweep, bottom level first: reads n values at `src`
    /// (u32 flags when `flags`, else sums), writes level 0's partial sums to
    /// `dst` (n sums) and the grand total to `count` (one u64).
    pub(super) fn up_sweep(&self, b: &CudaBackend, src: u64, flags: bool, dst: u64, count: u64) -> Result<()> {
        let s = self.sum.name();
        let first = b.kernels().function(
            &BLELLOCH,
            &self.variant,
            &format!("blelloch_up_sweep_{}_{s}", if flags { "u32" } else { s }),
        )?;
        let above = b.kernels().function(&BLELLOCH, &self.variant, &format!("blelloch_up_sweep_{s}_{s}"))?;
        for l in 0..=self.levels.len() {
            let (m, tree) = self.level(l, dst);
            let (f, input) = if l == 0 { (&first, src) } else { (&above, tree) };
            // Tile totals go to the level above; n's top level writes the count instead.
            let (sums, level) = (self.above(l), l as u32);
            let mut lb = b.stream().launch_builder(f);
            lb.arg(&self.leaves).arg(&level).arg(&input).arg(&tree).arg(&sums).arg(&count);
            // SAFETY: matches `blelloch_up_sweep_IN_S(Extent, u32, const IN*, S*, S*, u64*)`; input and tree
            // hold level l's capacity of values (the same buffer above level 0: each tile reads all of its
            // values before writing), sums one sum per tile of it (null only at the capacity's top, which
            // is n's top too when it is reached), count one u64.
            unsafe { lb.launch(self.config(m)) }.map_err(driver_error("launching blelloch_up_sweep"))?;
        }
        Ok(())
    }

    /// Enqueues the down-sweep, top level first: afterwards `dst` (level 0)
    /// holds the exclusive scan of the n values.
    pub(super) fn down_sweep(&self, b: &CudaBackend, dst: u64) -> Result<()> {
        let f = b.kernels().function(&BLELLOCH, &self.variant, &format!("blelloch_down_sweep_{}", self.sum.name()))?;
        for l in (0..=self.levels.len()).rev() {
            let (m, tree) = self.level(l, dst);
            // Below n's top, the level above is finished; its words are each tile's prefix.
            let (prefix, level) = (self.above(l), l as u32);
            let mut lb = b.stream().launch_builder(&f);
            lb.arg(&self.leaves).arg(&level).arg(&tree).arg(&prefix);
            // SAFETY: matches `blelloch_down_sweep_S(Extent, u32, S*, const S*)`; tree holds level l's capacity
            // of sums, prefix one sum per tile of it in another buffer (null only at the capacity's top).
            unsafe { lb.launch(self.config(m)) }.map_err(driver_error("launching blelloch_down_sweep"))?;
        }
        Ok(())
    }
}
