//! Host side of kernels/compaction/roger.cu: the hierarchical stream
//! reduction of seed 003 §III (Roger, Assarsson, Holzschuch 2007).
//!
//! Mark; blocks of s elements, each reduced on its own (§III-B): a prefix sum
//! of its empty elements ("sum inside blocks"), then for each output position
//! the improved dichotomic search of Fig. 5 ("dichotomic search"); a scan of
//! the blocks' empty counts, blelloch.cu's tree scan, gives each block's
//! displacement (§III-C, Fig. 6: "global sum"); each block's run is then moved
//! into place ("concatenation", line drawing in the paper). O(n + n log s)
//! work. Phase names follow Fig. 10; its CPU twin is src/compaction/cpu/roger.rs.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use smart_default::SmartDefault;

use crate::compaction::cuda::blelloch::Tree;
use crate::compaction::cuda::horn::{self, Sum};
use crate::compaction::cuda::runtime::{ROGER, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, Extent, Io, KeepArgs, mark, raw_ptr};
use crate::compaction::{Error, Result};

/// Tuning of `roger` (`REAP_S` in roger.cu).
#[derive(Clone, Debug, SmartDefault)]
pub struct RogerTuning {
    /// Elements per block, s, 1 to 1024: one CUDA block of s threads
    /// (rounded up to whole warps) works on each. 003 §V-A (Fig. 11) found
    /// 64 best up to 16M elements.
    #[default(64)]
    pub block: u32,
}

impl RogerTuning {
    pub(super) fn check(&self) -> Result<()> {
        if !(1..=1024).contains(&self.block) {
            return Err(Error::Tuning {
                algorithm: "roger",
                why: format!("the block size s must be 1 to 1024, not {}", self.block),
            });
        }
        Ok(())
    }
}

/// Select, or with `split` partition: kept elements first, then the
/// rejected ones, both in input order. Each block also gathers its rejected
/// elements after its kept ones, with the same search on the mirrored prefix sum.
pub fn compact(b: &CudaBackend, v: &Variant, keep: KeepArgs, io: Io, split: bool, st: &mut Stages) -> Result<()> {
    let (t, ext, cap) = (&b.tuning.roger, io.ext, io.ext.cap);
    t.check()?;
    let s = t.block;
    let rv = horn::flag_variant(v).with(&[("REAP_S", s)]);
    let blocks = cap.div_ceil(s as u64);
    // Block counts and their scan reach n: u64 sums from 2^32 elements on.
    let sum = Sum::for_count(cap);
    let bufs = [
        b.scratch(cap * 4)?,                   // flags
        b.scratch(cap * 4)?,                   // pSum
        b.scratch(cap * v.elem_bytes as u64)?, // the reduced blocks
        b.scratch(blocks * sum.bytes())?,      // empty elements per block
        b.scratch(blocks * sum.bytes())?,      // empty elements before each block
        b.scratch(8)?,                         // all empty elements (the global sum's top level writes it)
        b.scratch(8)?,                         // a counted call's number of blocks
    ];
    let [flags, psum, reduced, counts, empty_before, empty_total, blocks_word] = bufs.each_ref().map(raw_ptr);
    // The global sum runs over the blocks: counted, their number is on the device too.
    let (block_ext, blocks_len) = if ext.is_counted() {
        (Extent { cap: blocks, len: blocks_word }, blocks_word)
    } else {
        (Extent::host(blocks), 0)
    };
    let tree = Tree::new(b, &b.tuning.blelloch, v, sum, block_ext)?;
    let split = split as u32;
    // One CUDA block per block of s, up to the grid's limit; the kernels loop over the rest.
    let cfg = LaunchConfig {
        grid_dim: (blocks.min(i32::MAX as u64) as u32, 1, 1),
        block_dim: (s.next_multiple_of(32), 1, 1),
        shared_mem_bytes: 0,
    };

    mark::flags(b, v, keep, ext, io.input, flags, st)?;
    let f = b.kernels().function(&ROGER, &rv, &format!("roger_sum_inside_blocks_{}", sum.name()))?;
    st.run("sum inside blocks", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&ext).arg(&flags).arg(&psum).arg(&counts).arg(&blocks_len);
        // SAFETY: matches `roger_sum_inside_blocks_S(Extent, const u32*, u32*, S*, u64*)`; flags and psum
        // hold the capacity's u32, counts one sum per block of it, blocks_len one u64 or null.
        unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching roger_sum_inside_blocks"))
    })?;
    let f = b.kernels().function(&ROGER, &rv, "roger_dichotomic_search")?;
    st.run("dichotomic search", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&ext).arg(&io.input).arg(&flags).arg(&psum).arg(&reduced).arg(&split);
        // SAFETY: matches `roger_dichotomic_search(Extent, const Elem*, const u32*, const u32*, Elem*, u32)`;
        // input and reduced hold the capacity's elements, flags and psum as many u32.
        unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching roger_dichotomic_search"))
    })?;
    st.run("global sum", || {
        tree.up_sweep(b, counts, false, empty_before, empty_total)?;
        tree.down_sweep(b, empty_before)
    })?;
    let f = b.kernels().function(&ROGER, &rv, &format!("roger_concatenation_{}", sum.name()))?;
    st.run("concatenation", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&ext).arg(&reduced).arg(&counts).arg(&empty_before).arg(&empty_total).arg(&io.output).arg(&io.count);
        l.arg(&split);
        // SAFETY: matches `roger_concatenation_S(Extent, const Elem*, const S*, const S*, const u64*, Elem*,
        // u64*, u32)`; reduced and output hold the capacity's elements, counts and empty_before one sum per
        // block of it, empty_total and count one u64 each.
        unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching roger_concatenation"))
    })?;
    drop((bufs, tree)); // freed in stream order, after the kernels
    Ok(())
}
