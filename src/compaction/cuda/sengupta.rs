//! Host side of kernels/compaction/sengupta.cu: the work-efficient,
//! step-efficient hybrid scan of seed 002 §2.4 under Horn's compaction, as
//! 002 §4 runs it.
//!
//! Mark; reduce (002 Algorithm 3), one launch per level, each level kept,
//! until at most the degree of parallelism partial sums remain ("reduce");
//! Horn's scan over those, horn.cu's passes ("horn scan"); the down-sweep
//! (002 Algorithm 4), one launch per level back to an inclusive scan of all n
//! ("down-sweep"); then Horn's gather by dichotomic search (seed 003 §II,
//! horn.cu). The scan is O(n) work, the gather still O(n log n). Its CPU twin
//! is src/compaction/cpu/sengupta.rs.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use smart_default::SmartDefault;

use crate::compaction::Result;
use crate::compaction::cuda::horn::{self, HornTuning, Source, Sum};
use crate::compaction::cuda::runtime::{SENGUPTA, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, Extent, Io, KeepArgs, mark, raw_ptr};

/// Tuning of `sengupta` (`REAP_BLOCK` in sengupta.cu and, for its Horn
/// passes and gather, in horn.cu).
#[derive(Clone, Debug, SmartDefault)]
pub struct SenguptaTuning {
    /// The reduce stops once at most this many partial sums remain; Horn's
    /// scan runs over them. 002 §4 found compaction fastest after about 10
    /// reduce steps at 2^20 elements, i.e. at 1024 partial sums; the default
    /// keeps that pass structure, the same as the CPU twin's, rather than the
    /// tens of thousands of threads a modern GPU keeps resident. Values below
    /// 1 count as 1 (reduce all the way, as Blelloch).
    #[default(1024)]
    pub degree_of_parallelism: u64,
    /// Threads per block.
    #[default(256)]
    pub block: u32,
    /// Grid-stride kernels launch at most this many blocks per SM.
    #[default(16)]
    pub blocks_per_sm: u32,
}

impl SenguptaTuning {
    fn horn(&self) -> HornTuning {
        HornTuning { block: self.block, blocks_per_sm: self.blocks_per_sm }
    }
}

/// Exclusive scan, total to `io.count`: the hybrid scan of the input shifted
/// right by one slot, written straight into the output.
pub fn scan(b: &CudaBackend, v: &Variant, io: Io, st: &mut Stages) -> Result<()> {
    let t = &b.tuning.sengupta;
    let sum = Sum::for_scan(v.elem_bytes)?;
    hybrid_scan(b, t, v, sum, io.ext, Source::Shifted(io.input), io.output, Some(io.count), st)
}

/// Select, or with `split` partition: kept elements first, then the
/// rejected ones, both in input order.
pub fn compact(b: &CudaBackend, v: &Variant, keep: KeepArgs, io: Io, split: bool, st: &mut Stages) -> Result<()> {
    let (t, ext) = (&b.tuning.sengupta, io.ext);
    let sum = Sum::for_count(ext.cap);
    let (flags, sums) = (b.scratch(ext.cap * 4)?, b.scratch(ext.cap * sum.bytes())?);
    mark::flags(b, v, keep, ext, io.input, raw_ptr(&flags), st)?;
    hybrid_scan(b, t, v, sum, ext, Source::Flags(raw_ptr(&flags)), raw_ptr(&sums), None, st)?;
    st.run("dichotomic search", || {
        horn::gather(b, &t.horn(), v, sum, ext, io.input, raw_ptr(&sums), io.output, io.count, split)
    })?;
    drop((flags, sums)); // freed in stream order, after the kernels
    Ok(())
}

/// Enqueues the hybrid scan (002 §2.4): the inclusive scan of `x` (n values,
/// capacity > 0) into `out` (n sums), timed as the paper's three stages.
/// With `total`, `x` is shifted and the exclusive scan's total goes there too.
///
/// Levels, scratch and launches are sized from the capacity; the kernels skip
/// the levels a counted call's n does not need (sengupta.cu). The last level n
/// needs lands in `top`, and Horn's scan runs over it, or over x itself when n
/// needs no level: with a host length the host knows which and enqueues that
/// one; counted, it enqueues both, and `sengupta_plan` gives each its length
/// on the device (0 for the one n does not use).
#[allow(clippy::too_many_arguments)]
fn hybrid_scan(
    b: &CudaBackend,
    t: &SenguptaTuning,
    v: &Variant,
    sum: Sum,
    ext: Extent,
    x: Source,
    out: u64,
    total: Option<u64>,
    st: &mut Stages,
) -> Result<()> {
    let ht = t.horn();
    let sv = horn::flag_variant(v).with(&[("REAP_BLOCK", t.block)]);
    let (p, cap) = (t.degree_of_parallelism.max(1), ext.cap);
    // lens[d] is the length of the paper's a_{d+1} (for the capacity):
    // a_d[i] = a_{d-1}[2i] + a_{d-1}[2i + 1].
    let mut lens = Vec::new();
    let mut len = cap;
    while len > p {
        len = len.div_ceil(2);
        lens.push(len);
    }
    // What Horn's scan covers: x itself (at most p values), or `top` (the
    // last level, at most p values and at most the first level's length).
    let direct = cap.min(p);
    let top = lens.first().map_or(0, |&l| l.min(p));
    // The levels back to back, then `top`, its scan, and Horn's other buffer.
    let words: u64 = lens.iter().sum::<u64>() + 2 * top + direct;
    let scratch = b.scratch(words * sum.bytes())?;
    let mut at = raw_ptr(&scratch);
    let level: Vec<u64> = lens
        .iter()
        .map(|&l| {
            let p = at;
            at += l * sum.bytes();
            p
        })
        .collect();
    let (top_in, top_scan, tmp) = (at, at + top * sum.bytes(), at + 2 * top * sum.bytes());
    // Which Horn scans run, over what.
    let counted = ext.is_counted() && !lens.is_empty();
    let plan = if counted { Some(b.scratch(16)?) } else { None };
    let (direct_ext, top_ext) = match (&plan, lens.last()) {
        (Some(plan), _) => {
            (Some(Extent { cap: direct, len: raw_ptr(plan) }), Some(Extent { cap: top, len: raw_ptr(plan) + 8 }))
        }
        // A host length needing no level, or a counted capacity that never does.
        (None, None) => (Some(ext), None),
        (None, Some(&last)) => (None, Some(Extent::host(last))),
    };

    let reduce = b.kernels().function(&SENGUPTA, &sv, &format!("sengupta_reduce_{}_{}", x.name(sum), sum.name()))?;
    let reduce_up = b.kernels().function(&SENGUPTA, &sv, &format!("sengupta_reduce_{0}_{0}", sum.name()))?;
    let f_plan = match plan {
        Some(_) => Some(b.kernels().function(&SENGUPTA, &sv, "sengupta_plan")?),
        None => None,
    };
    st.run("reduce", || {
        if let (Some(plan), Some(f_plan)) = (&plan, &f_plan) {
            let plan = raw_ptr(plan);
            let mut l = b.stream().launch_builder(f_plan);
            l.arg(&ext).arg(&p).arg(&plan);
            let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: matches `sengupta_plan(Extent, u64, u64*)`; plan is two u64 of scratch.
            unsafe { l.launch(one) }.map_err(driver_error("launching sengupta_plan"))?;
        }
        for (d, (&next, &len)) in level.iter().zip(&lens).enumerate() {
            // Level 1 reads x; each later level the one below it.
            let (f, src, shift) = if d == 0 { (&reduce, x.ptr(), x.shift()) } else { (&reduce_up, level[d - 1], 0) };
            let d = d as u32;
            let mut l = b.stream().launch_builder(f);
            l.arg(&ext).arg(&d).arg(&p).arg(&src).arg(&shift).arg(&next).arg(&top_in);
            // SAFETY: matches `sengupta_reduce_IN_S(Extent, u32, u64, const IN*, u32, S*, S*)`; src holds the
            // level below (the capacity's values of x, or lens[d - 1] sums), next lens[d] sums and top_in
            // `top` >= the kernel's last level, both in another buffer.
            unsafe { l.launch(ht.config(b, len)) }.map_err(driver_error("launching sengupta_reduce"))?;
        }
        Ok(())
    })?;

    st.run("horn scan", || {
        if let Some(e) = direct_ext {
            horn::hillis_steele(b, &ht, v, sum, e, x, out, tmp)?;
        }
        if let Some(e) = top_ext {
            horn::hillis_steele(b, &ht, v, sum, e, Source::Values(top_in), top_scan, tmp)?;
        }
        Ok(())
    })?;

    let down = b.kernels().function(&SENGUPTA, &sv, &format!("sengupta_down_sweep_{}_{}", x.name(sum), sum.name()))?;
    let down_up = b.kernels().function(&SENGUPTA, &sv, &format!("sengupta_down_sweep_{0}_{0}", sum.name()))?;
    st.run("down-sweep", || {
        // From the top down, level d (0 is x itself) reads the scanned level d + 1.
        for d in (0..level.len()).rev() {
            let (f, a, shift, dst, len) = if d == 0 {
                (&down, x.ptr(), x.shift(), out, cap)
            } else {
                (&down_up, level[d - 1], 0, level[d - 1], lens[d - 1])
            };
            let (up, d) = (level[d], d as u32);
            let mut l = b.stream().launch_builder(f);
            l.arg(&ext).arg(&d).arg(&p).arg(&a).arg(&shift).arg(&up).arg(&top_scan).arg(&dst);
            // SAFETY: matches `sengupta_down_sweep_IN_S(Extent, u32, u64, const IN*, u32, const S*, const S*,
            // S*)`; a and dst hold len values (the same buffer above level 0: each thread touches only its
            // own slot), up ceil(len / 2) sums and top_scan `top` sums, in other buffers.
            unsafe { l.launch(ht.config(b, len)) }.map_err(driver_error("launching sengupta_down_sweep"))?;
        }
        match total {
            Some(count) => horn::total(b, &ht, v, sum, ext, x.ptr(), out, count),
            None => Ok(()),
        }
    })?;
    drop((scratch, plan));
    Ok(())
}
