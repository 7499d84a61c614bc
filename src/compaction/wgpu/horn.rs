//! Host side of shaders/compaction/horn.wgsl: Horn's stream reduction as
//! seed 003 §II describes it (Figs. 2-3), on the scan of seed 002 §2.2
//! Algorithm 2. The CUDA twin is `src/compaction/cuda/horn.rs`.
//!
//! Mark; a Hillis-Steele scan over all n flags in ceil(log2 n) dispatches,
//! one pass each, between two buffers ("prefix sum scan"); then one
//! invocation per output slot finds its source by binary search of the scan
//! ("dichotomic search"). O(n log n) work in both phases, as in the paper:
//! this is the baseline.
//!
//! Also home of what the flag-consuming family (horn, sengupta, blelloch)
//! shares on the host: the marking phase, the variants the sums and the
//! gather run under, and the Hillis-Steele passes and gather that `sengupta`
//! reuses. Running sums are u32 for every compaction (the backend indexes
//! with 32 bits) and the scan's own values for a scan.

use smart_default::SmartDefault;

use crate::compaction::wgpu::runtime::{HORN, Params, Variant};
use crate::compaction::wgpu::{Bind, Io, KeepRule, Plan, WgpuBackend, groups_for};
use crate::compaction::{Error, KeepMode, Result};

/// Tuning of horn.wgsl's map-style entry points.
#[derive(Clone, Debug, SmartDefault)]
pub struct HornTuning {
    /// Invocations per workgroup (WG); every dispatch is one invocation per
    /// item, so there is no grid-stride loop to tune.
    #[default(256)]
    pub block: u32,
}

impl HornTuning {
    pub(super) fn block(&self) -> u32 {
        self.block.clamp(32, 1024)
    }
}

/// The variant the running sums of a compaction run under: u32 values.
/// The family's scan phases read flags, never the keep rule, so one
/// compile serves every rule and element size.
pub(super) fn count_variant(b: &WgpuBackend) -> Variant {
    b.variant(4, KeepMode::Flags, None)
}

/// The variant of the gather and the scatter: the element type, no keep rule
/// (they read the marks).
pub(super) fn move_variant(b: &WgpuBackend, rule: &KeepRule) -> Variant {
    b.variant(rule.variant.elem_bytes as usize, KeepMode::Flags, None)
}

/// A scan's values are its sums: u32 or u64.
pub(super) fn check_scan(v: &Variant) -> Result<()> {
    match v.elem_bytes {
        4 | 8 => Ok(()),
        n => Err(Error::Backend(format!("scans take u32 or u64 values, not {n}-byte elements"))),
    }
}

/// What a scan reads: n values of the sum type, optionally shifted right by
/// one slot (the inclusive scan of the shifted values is the exclusive scan
/// of the values).
#[derive(Clone, Copy)]
pub(super) struct Source<'a> {
    pub buffer: &'a ::wgpu::Buffer,
    pub shifted: bool,
}

/// Exclusive scan, total to the count word: Horn's inclusive scan of the
/// input shifted right by one slot, written straight into the output.
pub fn scan(b: &WgpuBackend, v: &Variant, io: &Io, plan: &mut Plan) -> Result<()> {
    check_scan(v)?;
    let block = b.tuning.horn.block();
    let tmp = b.raw_buffer("horn's second buffer", io.cap as u64 * v.elem_bytes as u64)?;
    plan.stage("prefix sum scan");
    let x = Source { buffer: &io.input, shifted: true };
    hillis_steele(b, block, v, io, x, &io.output, &tmp, plan)?;
    total(b, block, v, io, plan)
}

/// Select, or with `split` partition: kept elements first, then the
/// rejected ones, both in input order.
pub fn compact(b: &WgpuBackend, rule: &KeepRule, io: &Io, split: bool, plan: &mut Plan) -> Result<()> {
    let block = b.tuning.horn.block();
    let words = io.cap as u64 * 4;
    let flags = b.raw_buffer("horn's flags", words)?;
    let (sums, tmp) = (b.raw_buffer("horn's sums", words)?, b.raw_buffer("horn's second buffer", words)?);
    mark(b, block, rule, io, &flags, plan)?;
    plan.stage("prefix sum scan");
    let x = Source { buffer: &flags, shifted: false };
    hillis_steele(b, block, &count_variant(b), io, x, &sums, &tmp, plan)?;
    plan.stage("dichotomic search");
    gather(b, block, &move_variant(b, rule), io, &sums, split, plan)
}

/// Stage "mark": `flags[i]` (u32) = 1 when element i survives.
pub(super) fn mark(
    b: &WgpuBackend,
    block: u32,
    rule: &KeepRule,
    io: &Io,
    flags: &::wgpu::Buffer,
    plan: &mut Plan,
) -> Result<()> {
    let p = b.pipeline(&HORN, &rule.variant, "horn_mark", &[("WG", block)])?;
    let bind = Bind { aux2: Some(flags.clone()), ..rule.bind(io) };
    plan.stage("mark").dispatch(p, rule.params(io.params()), bind, groups_for(io.cap, block));
    Ok(())
}

/// Records Horn's scan (002 Algorithm 2): the inclusive scan of `x` (n
/// values) into `out` (n sums), one dispatch per pass, ping-ponging through
/// `tmp` (n sums). Buffers start in the order that leaves the last pass in
/// `out`. The passes are sized from `io.cap` (> 0); a shorter device length
/// (`io.len_word` of `io.words`) skips the passes it does not need (horn.wgsl).
#[allow(clippy::too_many_arguments)]
pub(super) fn hillis_steele(
    b: &WgpuBackend,
    block: u32,
    sv: &Variant,
    io: &Io,
    x: Source<'_>,
    out: &::wgpu::Buffer,
    tmp: &::wgpu::Buffer,
    plan: &mut Plan,
) -> Result<()> {
    // ceil(log2 n) passes, but at least the first, which also copies x for n = 1.
    let passes = (u32::BITS - io.cap.saturating_sub(1).leading_zeros()).max(1);
    let target = |p: u32| if (passes - 1 - p).is_multiple_of(2) { out } else { tmp };
    let groups = groups_for(io.cap, block);
    let bind = |src: &::wgpu::Buffer, dst: &::wgpu::Buffer| Bind {
        src: Some(src.clone()),
        dst: Some(dst.clone()),
        words: Some(io.words.clone()),
        ..Default::default()
    };
    let first = b.pipeline(&HORN, sv, "horn_first", &[("WG", block)])?;
    plan.dispatch(first, Params { a: x.shifted as u32, ..io.params() }, bind(x.buffer, target(0)), groups);
    let pass = b.pipeline(&HORN, sv, "horn_pass", &[("WG", block)])?;
    for p in 1..passes {
        // Each pass reads the buffer the one before wrote: two distinct buffers.
        let params = Params { a: 1 << p, b: passes, ..io.params() };
        plan.dispatch(pass.clone(), params, bind(target(p - 1), target(p)), groups);
    }
    Ok(())
}

/// Records `count = output[n - 1] + input[n - 1]`, an exclusive scan's total
/// (0 when n = 0), into `io`'s count word.
pub(super) fn total(b: &WgpuBackend, block: u32, sv: &Variant, io: &Io, plan: &mut Plan) -> Result<()> {
    let p = b.pipeline(&HORN, sv, "horn_total", &[("WG", block)])?;
    plan.dispatch(p, io.params(), io.bind(), 1);
    Ok(())
}

/// Records Horn's gather (003 §II): `sums` is the inclusive scan of the
/// flags; slot j of the output takes the (j + 1)-th kept element, and with
/// `split` the rejected ones follow. Writes the kept count to the count word.
pub(super) fn gather(
    b: &WgpuBackend,
    block: u32,
    ev: &Variant,
    io: &Io,
    sums: &::wgpu::Buffer,
    split: bool,
    plan: &mut Plan,
) -> Result<()> {
    let p = b.pipeline(&HORN, ev, "horn_gather", &[("WG", block)])?;
    let bind = Bind { aux2: Some(sums.clone()), ..io.bind() };
    plan.dispatch(p, Params { split: split as u32, ..io.params() }, bind, groups_for(io.cap, block));
    Ok(())
}
