//! Host side of shaders/compaction/blelloch.wgsl: scan-then-scatter
//! compaction on Blelloch's work-efficient scan, as seed 001 modules
//! 10.3-10.4 and seed 002 §2.3 describe it; what CUDPP did (seed 000 Table
//! 3). The CUDA twin is `src/compaction/cuda/blelloch.rs`.
//!
//! Mark; the up-sweep over all n, multi-level: per-tile reduction trees in
//! workgroup memory (001 mod. 10.3), written back in place, each tile's total
//! going to the level above, one dispatch per level until a single tile
//! remains (001 mod. 10.4's hierarchical scan) ("up-sweep"); the down-sweep
//! back down the levels, each tile seeded with its prefix from the level
//! above ("down-sweep"); then each element scatters itself to its offset
//! ("scatter"). O(n) work.

use smart_default::SmartDefault;

use crate::compaction::wgpu::horn;
use crate::compaction::wgpu::runtime::{BLELLOCH, Params, Variant};
use crate::compaction::wgpu::{Bind, Io, KeepRule, Plan, WgpuBackend, groups_for};
use crate::compaction::{Error, Result};

/// Tuning of `blelloch` (WG in blelloch.wgsl).
#[derive(Clone, Debug, SmartDefault)]
pub struct BlellochTuning {
    /// Invocations per workgroup, a power of two up to 1024; a tile is twice
    /// this, two values per invocation as in 001's kernel.
    // 512-value tiles: three levels cover 2^27 values.
    #[default(256)]
    pub block: u32,
}

impl BlellochTuning {
    pub(super) fn block(&self) -> Result<u32> {
        if !self.block.is_power_of_two() || self.block > 1024 {
            return Err(Error::Tuning {
                algorithm: "blelloch",
                why: format!("block {} is not a power of two up to 1024", self.block),
            });
        }
        Ok(self.block)
    }
}

/// Exclusive scan, total to the count word: the tree is built in the output itself.
pub fn scan(b: &WgpuBackend, v: &Variant, io: &Io, plan: &mut Plan) -> Result<()> {
    horn::check_scan(v)?;
    let tree = Tree::new(b, v, io)?;
    plan.stage("up-sweep");
    tree.up_sweep(b, &io.input, &io.output, plan)?;
    plan.stage("down-sweep");
    tree.down_sweep(b, &io.output, plan)
}

/// Select, or with `split` partition: kept elements first, then the
/// rejected ones, both in input order.
pub fn compact(b: &WgpuBackend, rule: &KeepRule, io: &Io, split: bool, plan: &mut Plan) -> Result<()> {
    let tree = Tree::new(b, &horn::count_variant(b), io)?;
    let words = io.cap as u64 * 4;
    let (flags, offsets) = (b.raw_buffer("blelloch's flags", words)?, b.raw_buffer("blelloch's offsets", words)?);
    horn::mark(b, tree.block, rule, io, &flags, plan)?;
    // The up-sweep's top level writes the kept count, which the scatter reads.
    plan.stage("up-sweep");
    tree.up_sweep(b, &flags, &offsets, plan)?;
    plan.stage("down-sweep");
    tree.down_sweep(b, &offsets, plan)?;
    let f = b.pipeline(&BLELLOCH, &horn::move_variant(b, rule), "blelloch_scatter", &[("WG", tree.block)])?;
    // The flags binding takes the mark's u32 flags; `marks` (aux2) the offsets.
    let bind = Bind { flags: Some(flags), aux2: Some(offsets), ..io.bind() };
    let params = Params { split: split as u32, ..io.params() };
    plan.stage("scatter").dispatch(f, params, bind, groups_for(io.cap, tree.block));
    Ok(())
}

/// The levels of a multi-level tree scan over a call's leaves: level 0 is
/// the leaves themselves, level L + 1 holds one sum per tile of level L, up
/// to the first level that fits one tile. Sized for the capacity; the
/// shaders find the levels of the device length's tree.
struct Tree {
    variant: Variant,
    block: u32,
    /// (capacity, offset in `levels`) of levels 1.., in sums.
    above: Vec<(u32, u32)>,
    levels: ::wgpu::Buffer,
    io: Io,
}

impl Tree {
    /// The levels above a capacity of `io.cap` > 0 leaves, summed under `sv`.
    fn new(b: &WgpuBackend, sv: &Variant, io: &Io) -> Result<Tree> {
        let block = b.tuning.blelloch.block()?;
        let tile = 2 * block;
        let (mut above, mut m, mut at) = (Vec::new(), io.cap, 0u32);
        while m > tile {
            m = m.div_ceil(tile);
            above.push((m, at));
            at += m;
        }
        let levels = b.raw_buffer("blelloch's tree", at as u64 * sv.elem_bytes as u64)?;
        Ok(Tree { variant: sv.clone(), block, above, levels, io: io.clone() })
    }

    /// Level l's parameters: l, where it starts and where the level above starts.
    fn params(&self, l: usize) -> Params {
        let start = |l: usize| if l == 0 { 0 } else { self.above.get(l - 1).map_or(0, |&(_, at)| at) };
        Params { a: l as u32, b: start(l), c: start(l + 1), ..self.io.params() }
    }

    /// One workgroup per tile of level l's capacity.
    fn groups(&self, l: usize) -> u32 {
        let m = if l == 0 { self.io.cap } else { self.above[l - 1].0 };
        groups_for(m, 2 * self.block)
    }

    /// Records the up-sweep, bottom level first: reads the n leaves from
    /// `src`, writes level 0's partial sums to `dst` (n sums) and the grand
    /// total to the count word.
    fn up_sweep(&self, b: &WgpuBackend, src: &::wgpu::Buffer, dst: &::wgpu::Buffer, plan: &mut Plan) -> Result<()> {
        let f = b.pipeline(&BLELLOCH, &self.variant, "blelloch_up_sweep", &[("WG", self.block)])?;
        let bind =
            Bind { src: Some(src.clone()), dst: Some(dst.clone()), state: Some(self.levels.clone()), ..self.io.bind() };
        for l in 0..=self.above.len() {
            plan.dispatch(f.clone(), self.params(l), bind.clone(), self.groups(l));
        }
        Ok(())
    }

    /// Records the down-sweep, top level first: afterwards `dst` (level 0)
    /// holds the exclusive scan of the n leaves.
    fn down_sweep(&self, b: &WgpuBackend, dst: &::wgpu::Buffer, plan: &mut Plan) -> Result<()> {
        let f = b.pipeline(&BLELLOCH, &self.variant, "blelloch_down_sweep", &[("WG", self.block)])?;
        // The down-sweep reads no src: unbound, so dst may be any buffer.
        let bind = Bind { src: None, dst: Some(dst.clone()), state: Some(self.levels.clone()), ..self.io.bind() };
        for l in (0..=self.above.len()).rev() {
            plan.dispatch(f.clone(), self.params(l), bind.clone(), self.groups(l));
        }
        Ok(())
    }
}
