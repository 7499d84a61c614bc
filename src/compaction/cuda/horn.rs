//! Host side of kernels/compaction/horn.cu: Horn's stream reduction as seed
//! 003 §II describes it (Figs. 2-3), on the scan of seed 002 §2.2 Algorithm 2.
//!
//! Mark; a Hillis-Steele scan over all n flags in ceil(log2 n) launches, one
//! pass each, between two buffers ("prefix sum scan"); then one thread per
//! output slot finds its source by binary search of the scan ("dichotomic
//! search"). O(n log n) work in both phases, as in the paper: this is the
//! baseline. Its CPU twin is src/compaction/cpu/horn.rs.
//!
//! Also home of what the flag-consuming family (horn, sengupta, blelloch,
//! roger) shares on the host: the sum width and the Hillis-Steele passes and
//! gather that `sengupta` reuses.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use smart_default::SmartDefault;

use crate::compaction::cuda::runtime::{HORN, KeepMode, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, Extent, Io, KeepArgs, mark, raw_ptr};
use crate::compaction::{Error, Result};

/// Tuning of the map-style kernels (`REAP_BLOCK` in horn.cu).
#[derive(Clone, Debug, SmartDefault)]
pub struct HornTuning {
    /// Threads per block.
    #[default(256)]
    pub block: u32,
    /// Grid-stride kernels launch at most this many blocks per SM.
    // Each pass is a plain map: fill the SMs several times over, loop for the rest.
    #[default(16)]
    pub blocks_per_sm: u32,
}

impl HornTuning {
    pub(super) fn variant(&self, v: &Variant) -> Variant {
        flag_variant(v).with(&[("REAP_BLOCK", self.block)])
    }

    /// Grid-stride launch over up to `cap` items.
    pub(super) fn config(&self, b: &CudaBackend, cap: u64) -> LaunchConfig {
        b.grid_stride(cap, self.block, self.blocks_per_sm)
    }
}

/// The family's kernels read flags, never the keep rule: compiling them with
/// `KeepMode::Flags` whatever the rule saves a compile per predicate.
pub(super) fn flag_variant(v: &Variant) -> Variant {
    Variant::new(v.elem_bytes as usize, KeepMode::Flags)
}

/// Width of running sums and offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sum {
    U32,
    U64,
}

impl Sum {
    /// Counts of up to n flags: u32 is exact below 2^32 elements; above, u64.
    pub(super) fn for_count(n: u64) -> Sum {
        if n <= u32::MAX as u64 { Sum::U32 } else { Sum::U64 }
    }

    /// A scan's values are the sums.
    pub(super) fn for_scan(elem_bytes: u32) -> Result<Sum> {
        match elem_bytes {
            4 => Ok(Sum::U32),
            8 => Ok(Sum::U64),
            _ => Err(Error::Backend(format!("scans take u32 or u64 values, not {elem_bytes}-byte elements"))),
        }
    }

    pub(super) fn bytes(self) -> u64 {
        match self {
            Sum::U32 => 4,
            Sum::U64 => 8,
        }
    }

    /// The suffix of the kernels stamped out for this width.
    pub(super) fn name(self) -> &'static str {
        match self {
            Sum::U32 => "u32",
            Sum::U64 => "u64",
        }
    }
}

/// What a scan reads: u32 flags, or n values of the sum type, optionally
/// shifted right by one slot (the inclusive scan of the shifted values is the
/// exclusive scan of the values).
#[derive(Clone, Copy, Debug)]
pub(super) enum Source {
    Flags(u64),
    Values(u64),
    Shifted(u64),
}

impl Source {
    pub(super) fn ptr(self) -> u64 {
        match self {
            Source::Flags(p) | Source::Values(p) | Source::Shifted(p) => p,
        }
    }
    pub(super) fn shift(self) -> u32 {
        matches!(self, Source::Shifted(_)) as u32
    }
    /// The kernel suffix of its element type.
    pub(super) fn name(self, sum: Sum) -> &'static str {
        match self {
            Source::Flags(_) => "u32",
            Source::Values(_) | Source::Shifted(_) => sum.name(),
        }
    }
}

/// Exclusive scan, total to `io.count`: Horn's inclusive scan of the input
/// shifted right by one slot, written straight into the output.
pub fn scan(b: &CudaBackend, v: &Variant, io: Io, st: &mut Stages) -> Result<()> {
    let t = &b.tuning.horn;
    let sum = Sum::for_scan(v.elem_bytes)?;
    let tmp = b.scratch(io.ext.cap * sum.bytes())?;
    st.run("prefix sum scan", || {
        hillis_steele(b, t, v, sum, io.ext, Source::Shifted(io.input), io.output, raw_ptr(&tmp))?;
        total(b, t, v, sum, io.ext, io.input, io.output, io.count)
    })?;
    drop(tmp); // freed in stream order, after the kernels
    Ok(())
}

/// Select, or with `split` partition: kept elements first, then the
/// rejected ones, both in input order.
pub fn compact(b: &CudaBackend, v: &Variant, keep: KeepArgs, io: Io, split: bool, st: &mut Stages) -> Result<()> {
    let (t, ext, cap) = (&b.tuning.horn, io.ext, io.ext.cap);
    let sum = Sum::for_count(cap);
    let flags = b.scratch(cap * 4)?;
    let (sums, tmp) = (b.scratch(cap * sum.bytes())?, b.scratch(cap * sum.bytes())?);
    mark::flags(b, v, keep, ext, io.input, raw_ptr(&flags), st)?;
    st.run("prefix sum scan", || {
        hillis_steele(b, t, v, sum, ext, Source::Flags(raw_ptr(&flags)), raw_ptr(&sums), raw_ptr(&tmp))
    })?;
    st.run("dichotomic search", || gather(b, t, v, sum, ext, io.input, raw_ptr(&sums), io.output, io.count, split))?;
    drop((flags, sums, tmp));
    Ok(())
}

/// Enqueues Horn's scan (002 Algorithm 2): the inclusive scan of `x` (n
/// values) into `out` (n sums), one launch per pass, ping-ponging through
/// `tmp` (n sums). Buffers start in the order that leaves the last pass in
/// `out`. The passes are sized from the extent's capacity (cap > 0); a
/// shorter device length skips the passes it does not need (horn.cu).
#[allow(clippy::too_many_arguments)]
pub(super) fn hillis_steele(
    b: &CudaBackend,
    t: &HornTuning,
    v: &Variant,
    sum: Sum,
    ext: Extent,
    x: Source,
    out: u64,
    tmp: u64,
) -> Result<()> {
    let hv = t.variant(v);
    let cfg = t.config(b, ext.cap);
    // ceil(log2 n) passes, but at least the first, which also copies x for n = 1.
    let passes = (u64::BITS - ext.cap.saturating_sub(1).leading_zeros()).max(1);
    let target = |p: u32| if (passes - 1 - p) % 2 == 0 { out } else { tmp };

    let first = b.kernels().function(&HORN, &hv, &format!("horn_first_{}_{}", x.name(sum), sum.name()))?;
    let (src, shift, dst) = (x.ptr(), x.shift(), target(0));
    let mut l = b.stream().launch_builder(&first);
    l.arg(&ext).arg(&src).arg(&shift).arg(&dst);
    // SAFETY: matches `horn_first_IN_S(Extent, const IN*, u32, S*)`; x holds the capacity's values of IN,
    // dst as many sums.
    unsafe { l.launch(cfg) }.map_err(driver_error("launching horn_first"))?;

    let pass = b.kernels().function(&HORN, &hv, &format!("horn_pass_{}", sum.name()))?;
    for p in 1..passes {
        let (src, dst, offset) = (target(p - 1), target(p), 1u64 << p);
        let mut l = b.stream().launch_builder(&pass);
        l.arg(&ext).arg(&src).arg(&dst).arg(&offset).arg(&passes);
        // SAFETY: matches `horn_pass_S(Extent, const S*, S*, u64, u32)`; src and dst are the two distinct
        // buffers of the capacity's sums, so no element is read after being overwritten in the same launch.
        unsafe { l.launch(cfg) }.map_err(driver_error("launching horn_pass"))?;
    }
    Ok(())
}

/// Enqueues `*total = out[n - 1] + input[n - 1]`, an exclusive scan's total (0 when n = 0).
#[allow(clippy::too_many_arguments)]
pub(super) fn total(
    b: &CudaBackend,
    t: &HornTuning,
    v: &Variant,
    sum: Sum,
    ext: Extent,
    input: u64,
    out: u64,
    total: u64,
) -> Result<()> {
    let f = b.kernels().function(&HORN, &t.variant(v), &format!("horn_total_{}", sum.name()))?;
    let mut l = b.stream().launch_builder(&f);
    l.arg(&ext).arg(&input).arg(&out).arg(&total);
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: matches `horn_total_S(Extent, const S*, const S*, u64*)`; input and out hold the capacity's
    // values, of which the kernel reads only the n-th.
    unsafe { l.launch(one) }.map(drop).map_err(driver_error("launching horn_total"))
}

/// Enqueues Horn's gather (003 §II): `sums` is the inclusive scan of the
/// flags; slot j of `output` takes the (j + 1)-th kept element, and with
/// `split` the rejected ones follow. Writes the kept count to `count`.
#[allow(clippy::too_many_arguments)]
pub(super) fn gather(
    b: &CudaBackend,
    t: &HornTuning,
    v: &Variant,
    sum: Sum,
    ext: Extent,
    input: u64,
    sums: u64,
    output: u64,
    count: u64,
    split: bool,
) -> Result<()> {
    let f = b.kernels().function(&HORN, &t.variant(v), &format!("horn_gather_{}", sum.name()))?;
    let split = split as u32;
    let mut l = b.stream().launch_builder(&f);
    l.arg(&ext).arg(&input).arg(&sums).arg(&output).arg(&count).arg(&split);
    // SAFETY: matches `horn_gather_S(Extent, const Elem*, const S*, Elem*, u64*, u32)`; input, output and
    // sums hold the capacity's elements and sums, count is one u64.
    unsafe { l.launch(t.config(b, ext.cap)) }.map(drop).map_err(driver_error("launching horn_gather"))
}
